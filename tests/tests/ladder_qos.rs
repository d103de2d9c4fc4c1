//! The invalid-job ladder's QOS settings through the real daemons (issue 11): thresholds set
//! with `gsacctmgr` on a QOS win over the partition's and the cluster's, and a QOS with
//! `Flags=Interactive` exempts its jobs altogether (gsched has no salloc: interactive apps
//! are batch jobs that idle, and sites put them in such a QOS). The cluster flags jobs
//! that make no progress for 0.1 minutes; its partition `calm` exempts its jobs. Jobs that only
//! sleep: the one in QOS `jupyter` (Interactive) and the one in QOS `patient` (`HangMinutes=0`)
//! are never flagged, while the one in QOS `strict` (`HangMinutes=0.05`) is walked down the
//! ladder although it runs in `calm`.

use gsched_tests::{current_user, secs, ClusterOpts, JobState, MailLog, TestCluster};

fn acctmgr(c: &TestCluster, args: &[&str]) -> String {
    let mut a = vec!["-i"];
    a.extend_from_slice(args);
    c.cmd_ok("gsacctmgr", &a)
}

#[test]
fn qos_thresholds_win_and_interactive_qos_is_exempt() {
    let me = current_user();
    let mail = MailLog::new();
    let c = TestCluster::start(
        ClusterOpts::named("ladder-qos")
            .nodes(1)
            .cpus(4)
            .config_line(&mail.config_line())
            .config_line("AccountingStorageEnforce=associations,qos")
            .config_line("HangMinutes=0.1")
            .config_line("InvalidJobLadder=notify:0,requeue:0.05,cancel:0.05")
            .config_line("PartitionName=calm Nodes=ALL HangMinutes=0"),
    );
    acctmgr(&c, &["add", "account", "lab"]);
    acctmgr(&c, &["add", "qos", "jupyter", "Flags=Interactive"]);
    acctmgr(&c, &["add", "qos", "patient", "HangMinutes=0"]);
    acctmgr(&c, &["add", "qos", "strict", "HangMinutes=0.5"]);
    // Changed after creation, as a site tunes it.
    acctmgr(&c, &["modify", "qos", "strict", "set", "HangMinutes=0.05"]);
    acctmgr(
        &c,
        &[
            "add",
            "user",
            &me,
            "Account=lab",
            "DefaultAccount=lab",
            "QOS=normal,jupyter,patient,strict",
        ],
    );
    // gsacctmgr shows them: the flag among the Flags, the thresholds as given.
    assert_eq!(
        c.cmd_ok(
            "gsacctmgr",
            [
                "show",
                "qos",
                "-P",
                "-n",
                "format=name,flags,hangminutes,idlegpuminutes"
            ]
        ),
        "jupyter|Interactive||\nnormal|||\npatient||0|\nstrict||0.05|\n"
    );
    let default = c.cmd_ok("gsacctmgr", ["show", "qos", "strict", "-P"]);
    let header = default.lines().next().unwrap();
    assert!(
        header.starts_with("Name|Priority|")
            && header.ends_with("|MinTRES|HangMinutes|IdleGpuMinutes"),
        "{default}"
    );

    let jupyter = c.submit(["-J", "notebook", "-q", "jupyter", "--wrap", "sleep 600"]);
    let patient = c.submit(["-J", "pipeline", "-q", "patient", "--wrap", "sleep 600"]);
    let strict = c.submit([
        "-J",
        "tight",
        "-q",
        "strict",
        "-p",
        "calm",
        "--wrap",
        "sleep 600",
    ]);
    // The strict QOS's threshold applies although the partition exempts its jobs: flagged,
    // requeued, hung again and cancelled, the reason kept in accounting.
    let j = c.wait_terminal(strict, secs(60));
    assert_eq!(j.state, JobState::Cancelled, "{j:?}");
    assert_eq!(j.restarts, 1, "{j:?}");
    let acct = c.cmd_ok(
        "gsacct",
        [
            "-X",
            "-n",
            "-P",
            "-j",
            &strict.to_string(),
            "-o",
            "JobID,QOS,State,Reason",
        ],
    );
    assert!(
        acct.starts_with(&format!("{strict}|strict|CANCELLED"))
            && acct.trim_end().ends_with("|Hung"),
        "{acct}"
    );

    // The interactive and the patient jobs slept as long (many times the cluster's 6 s)
    // and were left alone.
    for id in [jupyter, patient] {
        let j = c.job(id);
        assert_eq!(j.state, JobState::Running, "{j:?}");
        assert_eq!(j.restarts, 0, "{j:?}");
        assert_eq!(j.reason.as_str(), "None", "{j:?}");
        assert!(j.invalid.is_none(), "{j:?}");
    }
    let mails = c.wait_for(secs(20), "the strict job's ladder mails", || {
        let t = mail.read();
        (t.lines().count() >= 3).then_some(t)
    });
    assert!(mails.contains("Name=tight"), "{mails}");
    assert!(
        !mails.contains("Name=notebook") && !mails.contains("Name=pipeline"),
        "{mails}"
    );

    // Without the flag, the notebook's idling is seen (the cluster's threshold): the flag is
    // what exempted it.
    acctmgr(
        &c,
        &["modify", "qos", "jupyter", "set", "Flags-=Interactive"],
    );
    let j = c.wait_job(jupyter, secs(30), "the notebook flagged", |j| {
        j.invalid.is_some()
    });
    assert_eq!(j.invalid.unwrap().kind.reason().as_str(), "Hung", "{j:?}");
    c.cmd_ok("gscancel", [jupyter.to_string(), patient.to_string()]);
}
