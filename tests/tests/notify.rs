//! `--mail-type` notices and webhooks through the real controller: a MailProg (a script
//! recording its arguments and environment) gets Slurm's subjects for BEGIN, END and FAIL,
//! one summary for a whole array, and a webhook receiver on loopback gets the JSON of the
//! events its `Events=` names. A second test sends mail over SMTP to a real server (aiosmtpd)
//! and checks the Slack and WeCom webhook formats.

use gsched_tests::{secs, webhook_receiver as receiver, ClusterOpts, JobState, TestCluster};

#[test]
fn mail_and_webhook_notices() {
    let (port, hooks) = receiver();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("mail.log");
    let prog = dir.path().join("mailprog");
    std::fs::write(
        &prog,
        format!(
            "#!/bin/sh\necho \"$1|$2|$3|$SLURM_JOB_MAIL_TYPE|$SLURM_JOB_STATE\" >> {}\n",
            log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&prog, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let c = TestCluster::start(
        ClusterOpts::named("notify")
            .nodes(1)
            .config_line(&format!("MailProg={}", prog.display()))
            .config_line("MailDomain=example.org")
            .config_line(&format!(
                "WebhookName=ops URL=http://127.0.0.1:{port}/hook Events=FAIL"
            )),
    );
    let ok = c.submit(["-J", "good", "--mail-type=BEGIN,END", "--wrap", "true"]);
    assert_eq!(c.wait_terminal(ok, secs(30)).state, JobState::Completed);
    let bad = c.submit([
        "-J",
        "bad",
        "--mail-type=FAIL",
        "--mail-user=ops@lab",
        "--wrap",
        "exit 3",
    ]);
    assert_eq!(c.wait_terminal(bad, secs(30)).state, JobState::Failed);
    let arr = c.submit([
        "-J",
        "arr",
        "-a",
        "0-2",
        "--mail-type=END",
        "--wrap",
        "true",
    ]);
    for k in 0..3 {
        c.wait_terminal(arr + k, secs(30));
    }
    let user = c.user().to_string();
    let lines = c.wait_for(secs(20), "four mails", || {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        (text.lines().count() >= 4).then_some(text)
    });
    let has = |needle: &str| lines.lines().any(|l| l.starts_with(needle));
    assert!(
        has(&format!(
            "-s|Slurm Job_id={ok} Name=good Began, Queued time 00:00:0"
        )),
        "{lines}"
    );
    assert!(
        lines.contains(&format!("|{user}@example.org|Began|RUNNING")),
        "{lines}"
    );
    assert!(
        has(&format!(
            "-s|Slurm Job_id={ok} Name=good Ended, Run time 00:00:0"
        )),
        "{lines}"
    );
    assert!(lines.contains(", COMPLETED, ExitCode 0|"), "{lines}");
    assert!(
        lines.contains(&format!("Slurm Job_id={bad} Name=bad Failed, Run time ")),
        "{lines}"
    );
    assert!(
        lines.contains(", FAILED, ExitCode 3|ops@lab|Failed|FAILED"),
        "{lines}"
    );
    // One summary for the whole array, no mail per task.
    assert!(
        lines.contains(&format!(
            "Slurm Array Summary Job_id={arr}_* ({arr}) Name=arr Ended, COMPLETED, ExitCode [0-0]"
        )),
        "{lines}"
    );
    assert_eq!(lines.lines().count(), 4, "{lines}");
    // The webhook wants FAIL only: the failed job, as JSON.
    let got = c.wait_for(secs(20), "the webhook", || {
        let g = hooks.lock().unwrap();
        (!g.is_empty()).then(|| g.clone())
    });
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["event"], "FAIL");
    assert_eq!(got[0]["job_id"], bad);
    assert_eq!(got[0]["exit_code"], 3);
    assert_eq!(got[0]["state"], "FAILED");
    // Shown by gscontrol as Slurm's optional mail line.
    let show = c.cmd_ok(
        "gscontrol",
        ["show".to_string(), "job".into(), bad.to_string()],
    );
    assert!(
        show.contains("   MailUser=ops@lab MailType=FAIL\n"),
        "{show}"
    );
    // A bad --mail-type is refused like Slurm's.
    let o = c.cmd("gsbatch", ["--mail-type=SOMETIMES", "--wrap", "true"]);
    assert_ne!(o.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("error: Invalid --mail-type specification"),
        "{o:?}"
    );
    // Like Slurm, an unknown word beside valid ones is passed over (with a warning here).
    let o = c.cmd(
        "gsbatch",
        ["-H", "--mail-type=END,SOMETIMES", "--wrap", "true"],
    );
    assert!(o.status.success(), "{o:?}");
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("warning: --mail-type: ignoring unknown mail type \"SOMETIMES\""),
        "{o:?}"
    );
}

/// The aiosmtpd sink, stopped when dropped.
struct SmtpSink(std::process::Child);

impl Drop for SmtpSink {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Mail over SMTP (`SmtpServer=`, gsched's own client) reaches a real SMTP server, Debian's
/// python3-aiosmtpd storing into a Maildir, with Slurm's subject, the `--mail-user` recipient
/// and `MailFrom`; Slack and WeCom webhooks get their formats' JSON.
#[test]
fn smtp_mail_reaches_a_real_server_and_chat_webhooks_their_formats() {
    let python = "/usr/bin/python3";
    let has_aiosmtpd = std::process::Command::new(python)
        .args(["-c", "import aiosmtpd"])
        .status()
        .is_ok_and(|s| s.success());
    if !has_aiosmtpd {
        eprintln!(
            "skipping: {python} cannot import aiosmtpd; install python3-aiosmtpd (.ci/run does)"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let maildir = dir.path().join("Maildir");
    let port = gsched_tests::ports::free_port();
    let sink = SmtpSink(
        std::process::Command::new(python)
            .args(["-m", "aiosmtpd", "-n", "-l", &format!("127.0.0.1:{port}")])
            .args(["-c", "aiosmtpd.handlers.Mailbox"])
            .arg(&maildir)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let t0 = std::time::Instant::now();
    while !gsched_tests::ports::is_listening(port) {
        assert!(t0.elapsed() < secs(20), "aiosmtpd did not listen on {port}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let (slack_port, slack) = receiver();
    let (wecom_port, wecom) = receiver();
    let c = TestCluster::start(
        ClusterOpts::named("smtp")
            .nodes(1)
            .config_line(&format!("SmtpServer=127.0.0.1:{port}"))
            .config_line("MailFrom=gsched@test.example")
            .config_line(&format!(
                "WebhookName=chat URL=http://127.0.0.1:{slack_port}/slack Format=slack Events=END"
            ))
            .config_line(&format!(
                "WebhookName=wx URL=http://127.0.0.1:{wecom_port}/wecom Format=wecom Events=END"
            )),
    );
    let id = c.submit([
        "-J",
        "mailme",
        "--mail-type=END",
        "--mail-user=alice@example.org",
        "--wrap",
        "true",
    ]);
    assert_eq!(c.wait_terminal(id, secs(30)).state, JobState::Completed);
    let subject = format!("Slurm Job_id={id} Name=mailme Ended");
    let mail = c.wait_for(secs(30), "the mail in the Maildir", || {
        let new = std::fs::read_dir(maildir.join("new")).ok()?;
        new.flatten()
            .filter_map(|e| std::fs::read_to_string(e.path()).ok())
            .find(|m| m.contains(&subject))
    });
    let header = |name: &str| {
        mail.lines()
            .find(|l| l.to_ascii_lowercase().starts_with(&format!("{name}:")))
            .map(|l| l[name.len() + 1..].trim().to_string())
            .unwrap_or_default()
    };
    assert!(header("subject").starts_with(&subject), "{mail}");
    assert!(header("subject").contains("COMPLETED"), "{mail}");
    assert!(header("to").contains("alice@example.org"), "{mail}");
    assert!(header("from").contains("gsched@test.example"), "{mail}");
    let got = |hooks: &std::sync::Arc<std::sync::Mutex<Vec<serde_json::Value>>>| {
        c.wait_for(secs(20), "a webhook", || {
            hooks.lock().unwrap().first().cloned()
        })
    };
    let s = got(&slack);
    assert!(
        s["text"].as_str().unwrap_or("").starts_with(&subject),
        "{s}"
    );
    let w = got(&wecom);
    assert_eq!(w["msgtype"], "text", "{w}");
    assert!(
        w["text"]["content"]
            .as_str()
            .unwrap_or("")
            .starts_with(&subject),
        "{w}"
    );
    drop(sink);
}
