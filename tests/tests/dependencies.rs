//! Dependencies (`-d`), `--begin` and requeue through the commands against real daemons:
//! an afterok chain, afternotok never satisfied, afterany, `?` any-of, aftercorr, singleton, a
//! deferred start, `gscontrol requeue` of a running job and its refusal for `--no-requeue`.

use gsched_tests::{secs, ClusterOpts, JobState, Reason, TestCluster};

fn cluster(name: &str) -> TestCluster {
    TestCluster::start(ClusterOpts::named(name).nodes(1).cpus(4))
}

fn show_job(c: &TestCluster, id: u32) -> String {
    c.cmd_ok(
        "gscontrol",
        ["show".to_string(), "job".into(), id.to_string()],
    )
}

#[test]
fn afterok_chain_starts_after_success() {
    let c = cluster("dep-ok");
    let a = c.submit(["--wrap", "sleep 2"]);
    let b = c.submit([
        format!("--dependency=afterok:{a}"),
        "-o".into(),
        "b.out".into(),
        "--wrap".into(),
        "echo dep=$SLURM_JOB_DEPENDENCY".into(),
    ]);
    let j = c.wait_job(b, secs(10), "pending for Dependency", |j| {
        j.state == JobState::Pending && j.reason == Reason::Dependency
    });
    assert_eq!(
        j.dependency.as_deref(),
        Some(format!("afterok:{a}").as_str())
    );
    let show = show_job(&c, b);
    assert!(
        show.contains(&format!("Reason=Dependency Dependency=afterok:{a}")),
        "{show}"
    );
    let q = c.cmd_ok(
        "gsqueue",
        [
            "-h".to_string(),
            "-j".into(),
            b.to_string(),
            "-o".into(),
            "%E".into(),
        ],
    );
    assert_eq!(q.trim(), format!("afterok:{a}"));
    let ja = c.wait_state(a, JobState::Completed, secs(30));
    let jb = c.wait_state(b, JobState::Completed, secs(30));
    assert!(jb.start_time.unwrap() >= ja.end_time.unwrap());
    assert_eq!(jb.dependency, None);
    assert!(show_job(&c, b).contains("Dependency=(null)"));
    c.wait_file_contains("b.out", &format!("dep=afterok:{a}"), secs(10));
}

#[test]
fn afternotok_is_never_satisfied_after_success() {
    let c = cluster("dep-notok");
    let a = c.submit(["--wrap", "true"]);
    let b = c.submit([
        format!("--dependency=afternotok:{a}"),
        "--wrap".into(),
        "true".into(),
    ]);
    c.wait_state(a, JobState::Completed, secs(30));
    c.wait_job(b, secs(15), "pending, DependencyNeverSatisfied", |j| {
        j.state == JobState::Pending && j.reason == Reason::DependencyNeverSatisfied
    });
    let q = c.cmd_ok(
        "gsqueue",
        [
            "-h".to_string(),
            "-j".into(),
            b.to_string(),
            "-o".into(),
            "%r".into(),
        ],
    );
    assert_eq!(q.trim(), "DependencyNeverSatisfied");
    // With --kill-on-invalid-dep=yes the job is cancelled instead.
    let k = c.submit([
        format!("--dependency=afternotok:{a}"),
        "--kill-on-invalid-dep=yes".into(),
        "--wrap".into(),
        "true".into(),
    ]);
    c.wait_state(k, JobState::Cancelled, secs(15));
    c.cmd_ok("gscancel", [b.to_string()]);
}

#[test]
fn afterany_and_any_of() {
    let c = cluster("dep-any");
    let fail = c.submit(["--wrap", "exit 3"]);
    let slow = c.submit(["--wrap", "sleep 1000"]);
    let any = c.submit([
        format!("--dependency=afterany:{fail}"),
        "--wrap".into(),
        "true".into(),
    ]);
    // afterok of the slow job OR afternotok of the failed one: the second is satisfied.
    let either = c.submit([
        format!("--dependency=afterok:{slow}?afternotok:{fail}"),
        "--wrap".into(),
        "true".into(),
    ]);
    // Both: waits for the slow job.
    let both = c.submit([
        format!("--dependency=afterok:{slow},afternotok:{fail}"),
        "--wrap".into(),
        "true".into(),
    ]);
    c.wait_state(fail, JobState::Failed, secs(30));
    c.wait_state(any, JobState::Completed, secs(30));
    c.wait_state(either, JobState::Completed, secs(30));
    let j = c.job(both);
    assert_eq!((j.state, j.reason), (JobState::Pending, Reason::Dependency));
    c.cmd_ok("gscancel", [slow.to_string()]);
    c.wait_job(both, secs(30), "never satisfiable", |j| {
        j.reason == Reason::DependencyNeverSatisfied
    });
    c.cmd_ok("gscancel", [both.to_string()]);
}

#[test]
fn unknown_target_is_refused() {
    let c = cluster("dep-bad");
    let out = c.cmd("gsbatch", ["--dependency=afterok:9999", "--wrap", "true"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Job dependency problem"), "{err}");
    let out = c.cmd("gsbatch", ["--dependency=aftercorr:9999", "--wrap", "true"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
}

#[test]
fn aftercorr_task_waits_for_the_same_task() {
    let c = cluster("dep-corr");
    // Task 1 fails, task 2 sleeps, task 3 succeeds at once; the array has no task 4.
    let a = c.submit([
        "--array=1-3",
        "--wrap",
        "case $SLURM_ARRAY_TASK_ID in 1) exit 5;; 2) sleep 3;; esac",
    ]);
    let b = c.submit([
        "--array=1-4".to_string(),
        format!("--dependency=aftercorr:{a}"),
        "-o".into(),
        "corr-%a.out".into(),
        "--wrap".into(),
        "echo task=$SLURM_ARRAY_TASK_ID".into(),
    ]);
    let task = |arr: u32, k: u32| {
        c.jobs()
            .into_iter()
            .find(|j| j.array.is_some_and(|t| t.job_id == arr && t.task_id == k))
            .unwrap_or_else(|| panic!("no task {arr}_{k}"))
    };
    // Task 3 runs once task 3 of the first array completed, while task 2 still waits.
    let t3 = task(b, 3).job_id;
    c.wait_state(t3, JobState::Completed, secs(30));
    c.wait_file_contains("corr-3.out", "task=3", secs(10));
    let t2 = task(b, 2);
    let a2 = task(a, 2);
    if a2.state == JobState::Running {
        assert_eq!(
            (t2.state, t2.reason),
            (JobState::Pending, Reason::Dependency)
        );
    }
    // Task 1 of the first array failed: task 1 never runs.
    c.wait_job(task(b, 1).job_id, secs(30), "never satisfiable", |j| {
        j.state == JobState::Pending && j.reason == Reason::DependencyNeverSatisfied
    });
    let a2 = c.wait_state(a2.job_id, JobState::Completed, secs(30));
    let t2 = c.wait_state(t2.job_id, JobState::Completed, secs(30));
    assert!(t2.start_time.unwrap() >= a2.end_time.unwrap());
    // No task 4 in the first array: the array as a whole decides, as afterok (it had a
    // failed task, so never).
    c.wait_job(task(b, 4).job_id, secs(30), "never satisfiable", |j| {
        j.state == JobState::Pending && j.reason == Reason::DependencyNeverSatisfied
    });
    c.cmd_ok("gscancel", [b.to_string()]);
}

#[test]
fn singleton_waits_for_same_name() {
    let c = cluster("dep-single");
    let a = c.submit(["-J", "solo", "--wrap", "sleep 2"]);
    c.wait_state(a, JobState::Running, secs(30));
    let b = c.submit(["-J", "solo", "--dependency=singleton", "--wrap", "true"]);
    let other = c.submit(["-J", "other", "--dependency=singleton", "--wrap", "true"]);
    c.wait_job(b, secs(10), "pending for Dependency", |j| {
        j.state == JobState::Pending && j.reason == Reason::Dependency
    });
    c.wait_state(other, JobState::Completed, secs(30));
    let ja = c.wait_state(a, JobState::Completed, secs(30));
    let jb = c.wait_state(b, JobState::Completed, secs(30));
    assert!(jb.start_time.unwrap() >= ja.end_time.unwrap());
}

#[test]
fn begin_defers_the_start() {
    let c = cluster("begin");
    let id = c.submit(["--begin=now+3", "--wrap", "true"]);
    let j = c.wait_job(id, secs(10), "pending for BeginTime", |j| {
        j.state == JobState::Pending && j.reason == Reason::BeginTime
    });
    let eligible = j.eligible_time.unwrap();
    assert!(eligible >= j.submit_time + 3, "{j:?}");
    let done = c.wait_state(id, JobState::Completed, secs(30));
    assert!(done.start_time.unwrap() >= eligible);
    // Invalid values are refused by gsbatch.
    let out = c.cmd("gsbatch", ["--begin=now+5fortnights", "--wrap", "true"]);
    assert!(!out.status.success(), "{out:?}");
    // gscontrol update StartTime= defers a pending job.
    let h = c.submit(["--begin=now+1hour", "--wrap", "true"]);
    c.cmd_ok(
        "gscontrol",
        [
            "update".to_string(),
            format!("JobId={h}"),
            "StartTime=now".into(),
        ],
    );
    c.wait_state(h, JobState::Completed, secs(30));
}

#[test]
fn requeue_running_job_runs_it_again() {
    let c = cluster("requeue");
    let id = c.submit([
        "-o",
        "rq.out",
        "--wrap",
        "echo restart=${SLURM_RESTART_COUNT:-0}; sleep 1000",
    ]);
    c.wait_state(id, JobState::Running, secs(30));
    c.wait_file_contains("rq.out", "restart=0", secs(15));
    c.cmd_ok("gscontrol", ["requeue".to_string(), id.to_string()]);
    c.wait_job(id, secs(30), "running again", |j| {
        j.state == JobState::Running && j.restarts == 1
    });
    c.wait_file_contains("rq.out", "restart=1", secs(15));
    let show = show_job(&c, id);
    assert!(show.contains("Requeue=1 Restarts=1"), "{show}");
    c.cmd_ok("gscancel", [id.to_string()]);
    c.wait_state(id, JobState::Cancelled, secs(30));
    // A finished job can be requeued too.
    c.cmd_ok("gscontrol", ["requeue".to_string(), id.to_string()]);
    c.wait_job(id, secs(30), "running a third time", |j| {
        j.state == JobState::Running && j.restarts == 2
    });
    c.cmd_ok("gscancel", [id.to_string()]);
    c.wait_terminal(id, secs(30));
}

#[test]
fn no_requeue_jobs_are_refused() {
    let c = cluster("norequeue");
    let id = c.submit(["--no-requeue", "--wrap", "sleep 1000"]);
    c.wait_state(id, JobState::Running, secs(30));
    assert!(show_job(&c, id).contains("Requeue=0 Restarts=0"));
    let out = c.cmd("gscontrol", ["requeue".to_string(), id.to_string()]);
    assert!(!out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Requested operation is presently disabled"),
        "{err}"
    );
    assert_eq!(c.job(id).state, JobState::Running);
    c.cmd_ok("gscancel", [id.to_string()]);
    c.wait_terminal(id, secs(30));
}

#[test]
fn update_dependency_name_and_priority() {
    let c = cluster("dep-update");
    let a = c.submit(["--wrap", "sleep 1000"]);
    let b = c.submit([
        format!("--dependency=afterok:{a}"),
        "--wrap".into(),
        "true".into(),
    ]);
    c.wait_job(b, secs(10), "pending for Dependency", |j| {
        j.reason == Reason::Dependency
    });
    c.cmd_ok(
        "gscontrol",
        [
            "update".to_string(),
            format!("JobId={b}"),
            "Name=renamed".into(),
            "Dependency=".into(),
        ],
    );
    let jb = c.wait_state(b, JobState::Completed, secs(30));
    assert_eq!(jb.name, "renamed");
    let p = c.submit(["-H", "--wrap", "true"]);
    c.cmd_ok(
        "gscontrol",
        [
            "update".to_string(),
            format!("JobId={p}"),
            "Priority=1000".into(),
        ],
    );
    c.wait_state(p, JobState::Completed, secs(30));
    c.cmd_ok("gscancel", [a.to_string()]);
}

/// `afterok:N` on an array waits for every task, as in Slurm; one failed task makes it
/// never satisfied.
#[test]
fn dependency_on_an_array_waits_for_every_task() {
    let c = cluster("dep-array");
    let a = c.submit([
        "--array=0-2",
        "-o",
        "/dev/null",
        "--wrap",
        "sleep $((SLURM_ARRAY_TASK_ID + 1))",
    ]);
    let b = c.submit([
        format!("--dependency=afterok:{a}"),
        "--wrap".into(),
        "true".into(),
    ]);
    // The first task ends after 1 s; the dependent job must still wait for the others.
    c.wait_state(a, JobState::Completed, secs(30));
    assert_eq!(c.job(b).state, JobState::Pending);
    let last = c.wait_state(a + 2, JobState::Completed, secs(30));
    let jb = c.wait_state(b, JobState::Completed, secs(30));
    assert!(jb.start_time.unwrap() >= last.end_time.unwrap(), "{jb:?}");

    let f = c.submit([
        "--array=0-1",
        "-o",
        "/dev/null",
        "--wrap",
        "exit $SLURM_ARRAY_TASK_ID",
    ]);
    let g = c.submit([
        format!("--dependency=afterok:{f}"),
        "--wrap".into(),
        "true".into(),
    ]);
    c.wait_job(g, secs(30), "never satisfied", |j| {
        j.reason == Reason::DependencyNeverSatisfied
    });
    c.cmd_ok("gscancel", [g.to_string()]);
}
