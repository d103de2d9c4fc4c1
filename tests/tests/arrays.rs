//! Job arrays end to end: `--array` with a throttle, `SLURM_ARRAY_*` and `slurm-%A_%a.out`,
//! the collapsed `N_[...]` record in gsqueue, gscancel of one task and of a whole array,
//! gscontrol show job of an array, and a 10,000-task array submitted in one call.

use gsched_tests::{stdout, ClusterOpts, JobInfo, JobState, Reason, TestCluster};
use std::time::{Duration, Instant};

const T: Duration = Duration::from_secs(60);

fn tasks_of(c: &TestCluster, n: u32) -> Vec<JobInfo> {
    c.jobs()
        .into_iter()
        .filter(|j| j.array.is_some_and(|a| a.job_id == n))
        .collect()
}

#[test]
fn throttled_array_runs_with_env_and_outputs() {
    let c = TestCluster::start(ClusterOpts::named("array-run"));
    let out = c.cmd(
        "gsbatch",
        [
            "--array=1-4%2",
            "--wrap",
            "sleep 1; echo $SLURM_ARRAY_JOB_ID $SLURM_ARRAY_TASK_ID $SLURM_ARRAY_TASK_COUNT $SLURM_ARRAY_TASK_MIN $SLURM_ARRAY_TASK_MAX $SLURM_ARRAY_TASK_STEP $SLURM_JOB_ID",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let n: u32 = stdout(&out)
        .strip_prefix("Submitted batch job ")
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| panic!("{out:?}"));
    // Never more than 2 running while the array runs; a waiting task says why.
    let deadline = Instant::now() + T;
    let mut saw_limit = false;
    loop {
        let tasks = tasks_of(&c, n);
        assert_eq!(tasks.len(), 4);
        let running = tasks
            .iter()
            .filter(|j| matches!(j.state, JobState::Running | JobState::Completing))
            .count();
        assert!(running <= 2, "{running} tasks running: {tasks:?}");
        saw_limit |= tasks
            .iter()
            .any(|j| j.state == JobState::Pending && j.reason == Reason::JobArrayTaskLimit);
        if tasks.iter().all(|j| j.state.is_terminal()) {
            break;
        }
        assert!(Instant::now() < deadline, "array did not finish: {tasks:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(saw_limit, "no task was seen waiting for the throttle");
    for j in tasks_of(&c, n) {
        assert_eq!(j.state, JobState::Completed, "{j:?}");
        let k = j.array.unwrap().task_id;
        assert_eq!(j.job_id, n + k - 1, "task {k} has id {}", j.job_id);
        assert_eq!(
            c.read_work_file(&format!("slurm-{n}_{k}.out")),
            format!("{n} {k} 4 1 4 1 {}\n", j.job_id)
        );
    }
}

#[test]
fn pending_array_display_cancel_and_show() {
    let c = TestCluster::start(ClusterOpts::named("array-show"));
    let n = c.submit(["-H", "--array=0-7%4", "-J", "arr", "--wrap", "true"]);
    let q = c.cmd_ok("gsqueue", ["-h", "-o", "%i %A %F %K %T"]);
    assert_eq!(q, format!("{n}_[0-7%4] {n} {n} 0-7%4 PENDING\n"));
    let q = c.cmd_ok("gsqueue", ["-h", "-r", "-o", "%i"]);
    let want: String = (0..8).map(|k| format!("{n}_{k}\n")).collect();
    assert_eq!(q, want);
    let q = c.cmd_ok("gsqueue", ["-h", "-o", "%i %A", "-j", &format!("{n}_3")]);
    assert_eq!(q, format!("{n}_3 {}\n", n + 3));
    let s = c.cmd_ok("gscontrol", ["-o", "show", "job", &format!("{n}_5")]);
    assert!(
        s.starts_with(&format!(
            "JobId={} ArrayJobId={n} ArrayTaskId=5 ArrayTaskThrottle=4 JobName=arr ",
            n + 5
        )),
        "{s}"
    );
    // Cancel one task: the rest stay pending, shown as one record without it.
    c.cmd_ok("gscancel", [format!("{n}_2")]);
    assert_eq!(c.job(n + 2).state, JobState::Cancelled);
    let q = c.cmd_ok("gsqueue", ["-h", "-o", "%i"]);
    assert_eq!(q, format!("{n}_[0-1,3-7%4]\n"));
    let s = c.cmd_ok("gscontrol", ["-o", "show", "job", &n.to_string()]);
    assert!(
        s.contains(&format!(
            "ArrayJobId={n} ArrayTaskId=0-1,3-7%4 ArrayTaskThrottle=4"
        )),
        "{s}"
    );
    // Release one task: it runs alone.
    c.cmd_ok("gscontrol", ["release", &format!("{n}_7")]);
    let j = c.wait_terminal(n + 7, T);
    assert_eq!(j.state, JobState::Completed, "{j:?}");
    assert_eq!(c.read_work_file(&format!("slurm-{n}_7.out")), "");
    // Cancel the whole array.
    c.cmd_ok("gscancel", [n.to_string()]);
    for j in tasks_of(&c, n) {
        assert!(j.state.is_terminal(), "{j:?}");
    }
    assert_eq!(c.cmd_ok("gsqueue", ["-h"]), "");
}

#[test]
fn bad_array_specs_are_refused() {
    let c = TestCluster::start(ClusterOpts::named("array-bad"));
    for bad in ["x", "0-1001", "5-2"] {
        let out = c.cmd("gsbatch", ["--array", bad, "--wrap", "true"]);
        assert_eq!(out.status.code(), Some(1), "{bad}: {out:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "gsbatch: error: Batch job submission failed: Invalid job array specification\n",
            "{bad}"
        );
    }
}

#[test]
fn ten_thousand_tasks_submit_in_one_call() {
    let c = TestCluster::start(ClusterOpts::named("array-big").config_line("MaxArraySize=20000"));
    let t = Instant::now();
    let n = c.submit(["-H", "--array=0-9999", "--wrap", "true"]);
    let took = t.elapsed();
    assert!(took < Duration::from_secs(30), "submit took {took:?}");
    let q = c.cmd_ok("gsqueue", ["-h", "-o", "%i %T"]);
    assert_eq!(q, format!("{n}_[0-9999] PENDING\n"));
    assert_eq!(c.job(n + 9999).array.unwrap().task_id, 9999);
    c.cmd_ok("gscancel", [n.to_string()]);
    assert_eq!(c.cmd_ok("gsqueue", ["-h"]), "");
    assert_eq!(c.job(n + 5000).state, JobState::Cancelled);
}
