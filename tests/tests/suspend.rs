//! `gscontrol suspend|resume`: a suspended job makes no progress and shows SUSPENDED; a
//! resumed one continues where it stopped. Through the cgroup freezer (as root with cgroup
//! v1, a `cgroup.conf` in the cluster) and with SIGSTOP/SIGCONT (no cgroups, any user).

use gsched_tests::{is_root, secs, ClusterOpts, JobState, TestCluster};
use std::path::Path;
use std::time::Duration;

/// A job that counts, five times a second, into `count` (replaced atomically).
const COUNTER: &str =
    "i=0; while :; do i=$((i+1)); echo $i > count.tmp; mv count.tmp count; sleep 0.2; done";

fn count(c: &TestCluster) -> u64 {
    std::fs::read_to_string(c.work_file("count"))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

fn exercise(c: &TestCluster) {
    let id = c.submit(["-o", "counter.out", "--wrap", COUNTER]);
    c.wait_state(id, JobState::Running, secs(20));
    c.wait_until(secs(20), "the counter to run", || count(c) >= 3);

    c.cmd_ok("gscontrol", ["suspend", &id.to_string()]);
    let q = c.cmd_ok("gsqueue", ["-h", "-t", "SUSPENDED", "-o", "%i %t %T"]);
    assert_eq!(q.trim(), format!("{id} S SUSPENDED"), "{q}");
    let q = c.cmd_ok("gsqueue", ["-h", "-t", "RUNNING", "-o", "%i"]);
    assert!(q.trim().is_empty(), "a suspended job is not RUNNING: {q}");
    let show = c.cmd_ok("gscontrol", ["show", "job", &id.to_string()]);
    assert!(show.contains("JobState=SUSPENDED"), "{show}");
    assert!(!show.contains("SuspendTime=None"), "{show}");
    // Suspending again is refused with Slurm's words.
    let again = c.cmd("gscontrol", ["suspend", &id.to_string()]);
    assert!(!again.status.success());
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(err.contains("Job is already suspended"), "{err}");

    // No progress while suspended.
    std::thread::sleep(Duration::from_millis(500));
    let frozen = count(c);
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(count(c), frozen, "the job made progress while suspended");

    c.cmd_ok("gscontrol", ["resume", &id.to_string()]);
    c.wait_until(secs(20), "the counter to continue", || {
        count(c) > frozen + 2
    });
    let j = c.job(id);
    assert_eq!(j.state, JobState::Running, "{j:?}");
    assert!(j.suspended_secs >= 1, "{j:?}");

    // Cancelling works after a suspension, and a suspended job can be cancelled too.
    c.cmd_ok("gscontrol", ["suspend", &id.to_string()]);
    c.cmd_ok("gscancel", [id.to_string()]);
    let j = c.wait_terminal(id, secs(30));
    assert_eq!(j.state, JobState::Cancelled, "{j:?}");
    let acct = c.cmd_ok(
        "gsacct",
        [
            "-j",
            &id.to_string(),
            "-X",
            "-n",
            "-P",
            "-o",
            "State,Suspended",
        ],
    );
    let (state, susp) = acct.trim().split_once('|').unwrap();
    assert!(state.starts_with("CANCELLED"), "{acct}");
    assert_ne!(susp, "00:00:00", "{acct}");
}

#[test]
fn suspend_and_resume_without_cgroups() {
    let c = TestCluster::start(ClusterOpts::named("suspend-sig").nodes(1));
    exercise(&c);
}

#[test]
fn suspend_and_resume_through_the_cgroup_freezer() {
    if !is_root() || !Path::new("/sys/fs/cgroup/freezer/cgroup.procs").is_file() {
        eprintln!("skipping: needs root and the cgroup v1 freezer at /sys/fs/cgroup/freezer");
        return;
    }
    let subdir = format!("gsched-it-suspend-{}", std::process::id());
    let c = TestCluster::start(
        ClusterOpts::named("suspend-cg")
            .nodes(1)
            .cgroup_conf(&format!(
                "CgroupPlugin=cgroup/v1\nCgroupSubdir={subdir}_%n\n"
            )),
    );
    exercise(&c);
    drop(c);
    for ctl in [
        "cpuset", "memory", "cpu", "cpuacct", "devices", "freezer", "pids",
    ] {
        let _ = std::fs::remove_dir(format!("/sys/fs/cgroup/{ctl}/{subdir}_n1"));
    }
}

#[test]
fn suspend_of_a_pending_job_is_refused() {
    let c = TestCluster::start(ClusterOpts::named("suspend-pd").nodes(1));
    let id = c.submit(["-H", "--wrap", "true"]);
    let out = c.cmd("gscontrol", ["suspend", &id.to_string()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("Job is pending execution for job {id}")),
        "{err}"
    );
    let out = c.cmd("gscontrol", ["resume", "99999"]);
    assert!(!out.status.success());
}
