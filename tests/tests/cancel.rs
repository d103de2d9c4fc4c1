//! Cancelling a job ends every process it started, also those that left its process group
//! and session (double fork + setsid), and the time limit ends a job with TIMEOUT after
//! SIGTERM reached its script.

use gsched_tests::{procs, secs, unique_marker, ClusterOpts, JobState, TestCluster};

#[test]
fn cancel_kills_double_forked_processes() {
    let c = TestCluster::start(ClusterOpts::named("cancel"));
    let m = unique_marker("gsmark");
    // Three sleepers, each with the marker in its argv[0]: one double-forked into its own
    // session, one plain background child, one in the foreground of the batch shell.
    let script = format!(
        "#!/bin/bash\n\
         (setsid bash -c 'exec -a {m}-escaped sleep 1000' &)\n\
         bash -c 'exec -a {m}-background sleep 1000' &\n\
         echo started\n\
         bash -c 'exec -a {m}-foreground sleep 1000'\n\
         echo not-reached\n"
    );
    c.write_script("forker.sh", &script);
    let id = c.submit(["-o", "forker-%j.out", "forker.sh"]);
    c.wait_state(id, JobState::Running, secs(30));
    c.wait_until(secs(30), "the job's three sleepers to run", || {
        procs::find_by_cmdline(&m).len() == 3
    });

    c.cmd_ok("gscancel", [id.to_string()]);
    let j = c.wait_state(id, JobState::Cancelled, secs(30));
    assert!(j.end_time.is_some(), "{j:?}");

    // The job is over only when all its processes are: KillWait (2 s) plus a margin.
    let left = c.poll(secs(5), || {
        let p = procs::find_by_cmdline(&m);
        p.is_empty().then_some(())
    });
    if left.is_none() {
        let p = procs::find_by_cmdline(&m);
        panic!(
            "{}",
            c.failure(&format!("processes of cancelled job {id} survive: {p:#?}"))
        );
    }
    assert!(!c
        .read_work_file(&format!("forker-{id}.out"))
        .contains("not-reached"));

    // gscancel of a finished job is silently accepted (exit 0), as scancel does.
    let out = c.cmd("gscancel", [id.to_string()]);
    assert!(out.status.success(), "{out:?}");
}

/// `-t 1` is the smallest limit (one minute), so this test takes a bit over a minute.
#[test]
fn time_limit_ends_job_with_timeout() {
    let c = TestCluster::start(ClusterOpts::named("timeout").nodes(1));
    let script = "#!/bin/bash\n\
                  trap 'echo caught SIGTERM; exit 0' TERM\n\
                  echo started\n\
                  sleep 1000 &\n\
                  wait\n\
                  echo not-reached\n";
    c.write_script("limited.sh", script);
    let id = c.submit(["-t", "1", "-o", "limited-%j.out", "limited.sh"]);
    let j = c.job(id);
    assert_eq!(j.time_limit, Some(1), "{j:?}");
    c.wait_file_contains(&format!("limited-{id}.out"), "started", secs(30));

    let j = c.wait_terminal(id, secs(150));
    assert_eq!(j.state, JobState::Timeout, "{j:?}");
    let ran = j.end_time.unwrap_or(0) - j.start_time.unwrap_or(0);
    assert!(
        (60..=100).contains(&ran),
        "ran {ran} s with a 1 minute limit: {j:?}"
    );
    let out = c.read_work_file(&format!("limited-{id}.out"));
    assert!(
        out.starts_with("started\n") && out.contains("caught SIGTERM\n"),
        "the script's TERM trap must run before the kill: {out:?}"
    );
    let show = c.cmd_ok("gscontrol", ["show", "job", &id.to_string()]);
    assert!(show.contains("JobState=TIMEOUT"), "{show}");
}
