//! `--mail-type` notices and webhooks through the real controller: a MailProg (a script
//! recording its arguments and environment) gets Slurm's subjects for BEGIN, END and FAIL,
//! one summary for a whole array, and a webhook receiver on loopback gets the JSON of the
//! events its `Events=` names.

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
