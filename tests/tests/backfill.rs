//! Backfill through the real controller: a short job starts in the gap before a reserved
//! job, a long one that would delay the reservation waits, and pending jobs show their
//! expected start in `gsqueue --start` and `gscontrol show job`. With `sched/builtin` the
//! short job waits behind the blocked one, as Slurm's builtin scheduler does.

use gsched_tests::{secs, ClusterOpts, JobState, Reason, TestCluster};

fn scenario(c: &TestCluster) -> (u32, u32, u32, u32) {
    // One node with 2 CPUs. `a` holds one CPU for up to 10 minutes.
    let a = c.submit(["-n", "1", "-t", "10", "--wrap", "sleep 1000"]);
    c.wait_state(a, JobState::Running, secs(30));
    // `b` needs both CPUs: it can start only when `a` ends (at the latest in 10 minutes).
    let b = c.submit(["-n", "2", "-t", "10", "--wrap", "true"]);
    // `long` fits the free CPU now but would still run when `b` is due.
    let long = c.submit(["-n", "1", "-t", "30", "--wrap", "sleep 1000"]);
    // `short` fits the free CPU and ends before `b` is due.
    let short = c.submit(["-n", "1", "-t", "5", "--wrap", "sleep 1000"]);
    (a, b, long, short)
}

#[test]
fn easy_backfill_fills_the_gap_without_delaying_the_reservation() {
    let c = TestCluster::start(ClusterOpts::named("backfill").nodes(1).cpus(2));
    let (a, b, long, short) = scenario(&c);
    c.wait_state(short, JobState::Running, secs(30));
    let start_a = c.job(a).start_time.expect("a started");
    let jb = c.wait_job(b, secs(10), "pending with an expected start", |j| {
        j.state == JobState::Pending && j.expected_start.is_some()
    });
    assert_eq!(jb.reason, Reason::Resources);
    assert_eq!(jb.expected_start, Some(start_a + 600), "{jb:?}");
    let jl = c.job(long);
    assert_eq!(jl.state, JobState::Pending, "{jl:?}");
    assert_eq!(jl.reason, Reason::Priority);
    // Shown by the commands, in Slurm's layouts.
    let show = c.cmd_ok(
        "gscontrol",
        ["show".to_string(), "job".into(), b.to_string()],
    );
    let want = gsched_proto::units::format_timestamp(start_a + 600);
    assert!(show.contains(&format!("StartTime={want}")), "{show}");
    let q = c.cmd_ok("gsqueue", ["--start", "-h", "-o", "%i %S"]);
    assert!(q.contains(&format!("{b} {want}")), "{q}");
    c.cmd_ok("gscancel", ["-u", c.user()]);
}

#[test]
fn builtin_scheduler_keeps_strict_priority_order() {
    let c = TestCluster::start(
        ClusterOpts::named("builtin")
            .nodes(1)
            .cpus(2)
            .config_line("SchedulerType=sched/builtin"),
    );
    let (_a, b, long, short) = scenario(&c);
    c.wait_job(short, secs(10), "waiting behind the blocked job", |j| {
        j.state == JobState::Pending && j.reason == Reason::Priority
    });
    assert_eq!(c.job(b).reason, Reason::Resources);
    assert_eq!(c.job(long).state, JobState::Pending);
    c.cmd_ok("gscancel", ["-u", c.user()]);
}
