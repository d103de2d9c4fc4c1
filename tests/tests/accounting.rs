//! `gsacct` (`sacct`) through the real controller: records come from the store, so finished
//! jobs stay visible after they leave `gsqueue` (MinJobAge) and across a controller restart;
//! the layouts are those clients parse (submitit, snakemake, Parsl, dask-jobqueue).

use gsched_tests::{secs, ClusterOpts, JobState, TestCluster};

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs() as i64
}

fn lines(s: &str) -> Vec<String> {
    s.lines().map(str::to_string).collect()
}

#[test]
fn finished_jobs_states_steps_and_client_layouts() {
    let c = TestCluster::start(ClusterOpts::named("acct").nodes(1).cpus(2).min_job_age(2));
    let ok = c.submit(["-J", "okjob", "--wrap", "true"]);
    let bad = c.submit(["-J", "badjob", "--wrap", "exit 3"]);
    let long = c.submit(["-J", "longjob", "--wrap", "sleep 1000"]);
    let held = c.submit(["-H", "-J", "heldjob", "--wrap", "true"]);
    let arr = c.submit([
        "--array=0-2",
        "-o",
        "/dev/null",
        "--wrap",
        "echo from-the-array",
    ]);
    c.wait_terminal(ok, secs(30));
    c.wait_terminal(bad, secs(30));
    for k in 0..3 {
        c.wait_terminal(arr + k, secs(30));
    }
    c.wait_state(long, JobState::Running, secs(30));
    c.cmd_ok("gscancel", [long.to_string()]);
    c.wait_terminal(long, secs(30));
    let uid = c.job(long).cancelled_by.expect("cancelled by someone");
    let ids = format!("{ok},{bad},{long},{held}");

    // submitit: --parsable2 with a header, steps included.
    let out = c.cmd_ok(
        "gsacct",
        ["-o", "JobID,State,ExitCode", "--parsable2", "-j", &ids],
    );
    assert_eq!(
        lines(&out),
        vec![
            "JobID|State|ExitCode".to_string(),
            format!("{ok}|COMPLETED|0:0"),
            format!("{ok}.batch|COMPLETED|0:0"),
            format!("{bad}|FAILED|3:0"),
            format!("{bad}.batch|FAILED|3:0"),
            format!("{long}|CANCELLED by {uid}|0:15"),
            format!("{long}.batch|CANCELLED|0:15"),
            format!("{held}|PENDING|0:0"),
        ],
        "{out}"
    );

    // Parsl: -X --noheader, a padded state column, ids joined by commas.
    let out = c.cmd_ok(
        "gsacct",
        [
            "-X",
            "--noheader",
            "--format=jobid,state%20",
            "--job",
            &format!("{ok},{bad}"),
        ],
    );
    assert_eq!(
        lines(&out),
        vec![
            format!("{:<12} {:>20} ", ok, "COMPLETED"),
            format!("{:<12} {:>20} ", bad, "FAILED"),
        ]
    );

    // Default columns: header, dashes, the `+` of a cut value.
    let out = c.cmd_ok("gsacct", ["-X", "-j", &long.to_string()]);
    let l = lines(&out);
    assert_eq!(
        l[0],
        "JobID           JobName  Partition    Account  AllocCPUS      State ExitCode "
    );
    assert_eq!(
        l[1],
        "------------ ---------- ---------- ---------- ---------- ---------- -------- "
    );
    assert!(
        l[2].starts_with(&format!("{long:<12}    longjob ")),
        "{out}"
    );
    assert!(l[2].contains(" CANCELLED+ "), "{out}");

    // Once MinJobAge has passed the controller forgets them; the store still answers.
    c.wait_until(secs(30), "finished jobs purged", || {
        c.cmd("gsqueue", ["-h", "-t", "all", "-j", &ok.to_string()])
            .stdout
            .is_empty()
    });
    // snakemake: by name within a window, raw ids.
    let two_days_ago = gsched_proto::units::format_timestamp(now() - 2 * 86_400);
    let out = c.cmd_ok(
        "gsacct",
        [
            "-X",
            "--parsable2",
            "--clusters",
            "all",
            "--noheader",
            "--format=JobIdRaw,State",
            "--starttime",
            &two_days_ago,
            "--endtime",
            "now",
            "--name",
            "badjob",
        ],
    );
    assert_eq!(lines(&out), vec![format!("{bad}|FAILED")]);

    // After a controller restart too.
    c.kill_ctld();
    c.start_ctld();
    let out = c.cmd_ok(
        "gsacct",
        [
            "-n",
            "-X",
            "-P",
            "-o",
            "jobname,state",
            "-j",
            &ok.to_string(),
        ],
    );
    assert_eq!(lines(&out), vec!["okjob|COMPLETED".to_string()]);

    // -B: the batch scripts, which the controller keeps apart from the records (also an
    // array task's, stored once with its first task).
    let out = c.cmd_ok("gsacct", ["-B", "-j", &ok.to_string()]);
    assert!(
        out.starts_with(&format!("Batch Script for {ok}\n")),
        "{out}"
    );
    assert!(out.contains("\ntrue\n"), "{out}");
    let out = c.cmd_ok("gsacct", ["-B", "-j", &format!("{arr}_2")]);
    assert!(out.contains("echo from-the-array"), "{out}");

    // A state selection looks at the window: completed today, not "now".
    let out = c.cmd_ok(
        "gsacct",
        [
            "-n", "-X", "-P", "-o", "jobid", "-s", "CD", "-S", "midnight",
        ],
    );
    let completed = [ok.to_string()]
        .into_iter()
        .chain((0..3).map(|k| format!("{arr}_{k}")))
        .collect::<Vec<_>>();
    assert_eq!(lines(&out), completed);
    // A job submitted held was never eligible: as slurmdbd, no window holds it, not even
    // with -s PD (bench/results/format-diff); named with -j it is listed (above).
    let out = c.cmd_ok("gsacct", ["-n", "-X", "-P", "-o", "jobid", "-s", "pd"]);
    assert_eq!(lines(&out), Vec::<String>::new());

    // Errors: unknown options and fields fail (clients rely on it), nothing is printed.
    for args in [vec!["-1"], vec!["-o", "nosuchfield"], vec!["--duplicates"]] {
        let r = c.cmd("gsacct", &args);
        assert_ne!(r.status.code(), Some(0), "{args:?}");
        assert!(r.stdout.is_empty(), "{args:?}");
    }
    c.cmd_ok("gscancel", [held.to_string()]);
}
