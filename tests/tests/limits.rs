//! Limits on what clients may send (issue 9): oversize scripts and fields, `MaxJobCount`
//! (with gsbatch retrying as sbatch does), `max_array_tasks`, and clients that open a
//! connection and send nothing (`MessageTimeout`). Every refusal leaves the store as it was.
//! And the cluster's `Licenses=`, which jobs wait for and hold.

use gsched_tests::{secs, stderr, ClusterOpts, JobState, TestCluster};
use std::io::{Read, Write};
use std::time::Instant;

#[test]
fn oversize_scripts_and_fields_are_refused_with_slurms_message() {
    let c = TestCluster::start(
        ClusterOpts::named("lim-fields")
            .nodes(1)
            .config_line("SchedulerParameters=max_script_size=2000,max_array_tasks=5"),
    );
    let dir = c.dir().join("scripts");
    std::fs::create_dir_all(&dir).unwrap();
    let big = dir.join("big.sh");
    std::fs::write(&big, format!("#!/bin/sh\n#{}\ntrue\n", "x".repeat(3000))).unwrap();
    let out = c.cmd("gsbatch", [big.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("Batch job submission failed: Pathname of a file, directory or other parameter too long")
            && err.contains("script is")
            && err.contains("max_script_size"),
        "{err}"
    );
    // A script under the limit is accepted.
    let small = dir.join("small.sh");
    std::fs::write(&small, format!("#!/bin/sh\n#{}\ntrue\n", "x".repeat(1000))).unwrap();
    let ok = c.submit([small.to_str().unwrap()]);

    let long_name = "n".repeat(1025);
    let out = c.cmd("gsbatch", ["-J", &long_name, "--wrap", "true"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("job name is 1025 bytes, at most 1024"),
        "{}",
        stderr(&out)
    );
    let out = c.cmd(
        "gsbatch",
        ["--comment", &"c".repeat(2000), "--wrap", "true"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("comment is 2000 bytes"),
        "{}",
        stderr(&out)
    );
    let out = c.cmd("gsbatch", ["-a", "0-5", "--wrap", "true"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(
            "Invalid job array specification (6 tasks; SchedulerParameters=max_array_tasks=5)"
        ),
        "{}",
        stderr(&out)
    );
    // Nothing of the refused submissions was stored: only the accepted job exists, and the
    // next id follows it.
    let ids: Vec<_> = c.jobs().iter().map(|j| j.job_id).collect();
    assert_eq!(ids, vec![ok]);
    assert_eq!(c.submit(["-a", "0-4", "--wrap", "true"]), ok + 1);
}

#[test]
fn max_job_count_refuses_and_gsbatch_retries_until_room() {
    let c = TestCluster::start(
        ClusterOpts::named("lim-count")
            .nodes(1)
            .min_job_age(1)
            .config_line("MaxJobCount=2"),
    );
    let a = c.submit(["-H", "--wrap", "true"]);
    let _b = c.submit(["-H", "--wrap", "true"]);
    // The third submission waits: gsbatch says so once and retries.
    let mut third = c.command("gsbatch");
    third
        .args(["--parsable", "--wrap", "true"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = third.spawn().unwrap();
    std::thread::sleep(secs(2));
    assert_eq!(c.jobs().len(), 2, "nothing stored while the queue is full");
    // Room is made: one job ends and is forgotten after MinJobAge.
    c.cmd_ok("gscancel", [a.to_string()]);
    let started = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(
        err.matches("Slurm job queue full, sleeping and retrying")
            .count(),
        1,
        "{err}"
    );
    let id: u32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    assert!(started.elapsed() < secs(60));
    assert_eq!(c.wait_terminal(id, secs(30)).state, JobState::Completed);
}

#[test]
fn silent_clients_are_dropped_after_message_timeout() {
    let c = TestCluster::start(
        ClusterOpts::named("lim-slow")
            .nodes(1)
            .config_line("MessageTimeout=2"),
    );
    let started = Instant::now();
    // A client that sends half a request head and then nothing.
    let mut s = std::net::TcpStream::connect(("127.0.0.1", c.ctld_port())).unwrap();
    s.set_read_timeout(Some(secs(20))).unwrap();
    s.write_all(b"POST /v1/jobs HTTP/1.1\r\nHost: t\r\n")
        .unwrap();
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    let waited = started.elapsed();
    assert!(
        waited >= secs(1) && waited < secs(15),
        "dropped after {waited:?}"
    );
    // A silent connection to a node daemon is dropped the same way.
    let port = c.node_port(0);
    let started = Instant::now();
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(secs(20))).unwrap();
    let _ = s.read_to_end(&mut buf);
    assert!(started.elapsed() < secs(15), "{:?}", started.elapsed());
    // Meanwhile and afterwards, well-behaved clients are served.
    let id = c.submit(["--wrap", "true"]);
    assert_eq!(c.wait_terminal(id, secs(30)).state, JobState::Completed);
}

/// `Licenses=`: a job asking for more of a license than is free waits with the reason
/// `Licenses` and starts when the holder ends; `gscontrol show licenses` counts what runs,
/// `gsqueue -L` selects by license and `%W` prints them; unknown licenses are refused.
#[test]
fn licenses_are_held_by_running_jobs_and_waited_for() {
    let c = TestCluster::start(
        ClusterOpts::named("licenses")
            .nodes(1)
            .cpus(4)
            .config_line("Licenses=matlab:2,fluent"),
    );
    let a = c.submit(["-L", "matlab:2", "--wrap", "sleep 3"]);
    c.wait_state(a, JobState::Running, secs(30));
    let b = c.submit(["-L", "matlab", "--wrap", "true"]);
    let other = c.submit(["-L", "fluent", "--wrap", "sleep 30"]);
    c.wait_state(other, JobState::Running, secs(30));
    let waiting = c.wait_job(b, secs(30), "waiting for licenses", |j| {
        j.reason.as_str() == "Licenses"
    });
    assert_eq!(waiting.state, JobState::Pending);
    let lic = c.cmd_ok("gscontrol", ["show", "licenses", "-o"]);
    assert_eq!(
        lic,
        "LicenseName=fluent Total=1 Used=1 Free=0 Reserved=0 Remote=no\n\
         LicenseName=matlab Total=2 Used=2 Free=0 Reserved=0 Remote=no\n"
    );
    let listed = c.cmd_ok(
        "gsqueue",
        ["-h", "-S", "i", "-L", "matlab", "-o", "%i %W %r"],
    );
    assert_eq!(
        listed,
        format!("{a} matlab:2 None\n{b} matlab:1 Licenses\n")
    );
    // The holder ends: b starts.
    assert_eq!(c.wait_terminal(b, secs(60)).state, JobState::Completed);
    let out = c.cmd("gsbatch", ["-L", "ansys", "--wrap", "true"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("Invalid license specification: the cluster has no license ansys"),
        "{}",
        stderr(&out)
    );
    let out = c.cmd("gsbatch", ["-L", "matlab:x", "--wrap", "true"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("is no count"), "{}", stderr(&out));
    c.cmd_ok("gscancel", [other.to_string()]);
}
