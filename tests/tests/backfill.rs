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
    // Counted as a backfill start in /metrics (`a` started with nothing waiting).
    let metrics = scrape_metrics(c.ctld_port());
    assert!(
        metrics.contains("\ngsched_jobs_backfilled_total 1\n"),
        "{metrics}"
    );
    c.cmd_ok("gscancel", ["-u", c.user()]);
}

fn scrape_metrics(port: u16) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
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

/// `--time-min`: a job whose full limit would delay the reservation starts now with its
/// limit lowered to what ends by then (and no lower than its minimum); one whose minimum
/// would still delay it waits. The lowered limit is the job's, in `gscontrol show job`.
#[test]
fn time_min_lowers_the_limit_to_fit_before_the_reservation() {
    let c = TestCluster::start(ClusterOpts::named("timemin").nodes(1).cpus(2));
    let a = c.submit(["-n", "1", "-t", "10", "--wrap", "sleep 1000"]);
    c.wait_state(a, JobState::Running, secs(30));
    let b = c.submit(["-n", "2", "-t", "10", "--wrap", "true"]);
    let too_long = c.submit([
        "-n",
        "1",
        "-t",
        "60",
        "--time-min",
        "15",
        "--wrap",
        "sleep 1000",
    ]);
    let fits = c.submit([
        "-n",
        "1",
        "-t",
        "60",
        "--time-min",
        "3",
        "--wrap",
        "sleep 1000",
    ]);
    let j = c.wait_state(fits, JobState::Running, secs(30));
    // `a` ends at the latest 10 minutes after its start, and `b` is reserved from then:
    // whole minutes that end by then, at least 8 whatever the seconds lost to submission.
    let start_a = c.job(a).start_time.expect("a started");
    let start = j.start_time.expect("started");
    let limit = j.time_limit.expect("a limit");
    assert!(
        (3..=10).contains(&limit) && start + limit as i64 * 60 <= start_a + 600,
        "lowered to {limit} min at {start}, a started at {start_a}: {j:?}"
    );
    assert!(limit >= 8, "lowered more than needed: {limit}");
    let jt = c.job(too_long);
    assert_eq!(jt.state, JobState::Pending, "{jt:?}");
    assert_eq!(jt.time_limit, Some(60));
    assert_eq!(c.job(b).reason, Reason::Resources);
    let show = c.cmd_ok("gscontrol", ["show", "job", &fits.to_string()]);
    assert!(
        show.contains(&format!("TimeLimit=00:{limit:02}:00 TimeMin=00:03:00")),
        "{show}"
    );
    // A minimum above the limit is refused with Slurm's words, at submission and update.
    let r = c.cmd("gsbatch", ["-t", "5", "--time-min", "10", "--wrap", "true"]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(1), "{err}");
    assert!(
        err.contains("Invalid time-min specification (exceeds job's time or other limits)"),
        "{err}"
    );
    let r = c.cmd(
        "gscontrol",
        ["update", &format!("JobId={too_long}"), "TimeMin=2:00:00"],
    );
    assert_ne!(r.status.code(), Some(0), "{r:?}");
    // With the CPU free again and a lower minimum, the other job fits too.
    c.cmd_ok("gscancel", [fits.to_string()]);
    c.wait_job(fits, secs(30), "ended", |j| j.state.is_terminal());
    c.cmd_ok(
        "gscontrol",
        ["update", &format!("JobId={too_long}"), "TimeMin=5"],
    );
    let j = c.wait_state(too_long, JobState::Running, secs(30));
    assert!(j.time_limit.is_some_and(|l| (5..60).contains(&l)), "{j:?}");
    c.cmd_ok("gscancel", ["-u", c.user()]);
}

/// `bf_predict=recent`: a job whose limit would delay the reservation, but whose kind of job
/// (same user, name and size) has always ended within seconds, backfills on its prediction;
/// without the predictor the same job waits. It still runs to its limit if it has to.
#[test]
fn predicted_runtimes_let_a_habitually_short_job_backfill() {
    for predict in [true, false] {
        let mut opts = ClusterOpts::named(if predict { "predict" } else { "nopredict" })
            .nodes(1)
            .cpus(2);
        if predict {
            opts = opts.config_line("SchedulerParameters=bf_predict=recent");
        }
        let c = TestCluster::start(opts);
        // History: two runs of `quick` that took about a second, under a 2-hour limit.
        for _ in 0..2 {
            let q = c.submit(["-J", "quick", "-n", "1", "-t", "120", "--wrap", "sleep 1"]);
            assert_eq!(c.wait_terminal(q, secs(30)).state, JobState::Completed);
        }
        // `a` holds one CPU for up to 10 minutes (no history for its name: its limit).
        let a = c.submit(["-J", "hog", "-n", "1", "-t", "10", "--wrap", "sleep 1000"]);
        c.wait_state(a, JobState::Running, secs(30));
        // `b` needs both CPUs: reserved at `a`'s end.
        let b = c.submit(["-J", "wide", "-n", "2", "-t", "10", "--wrap", "true"]);
        // Another `quick`: its 2-hour limit would delay `b`, its prediction would not.
        let q = c.submit(["-J", "quick", "-n", "1", "-t", "120", "--wrap", "sleep 1"]);
        if predict {
            let j = c.wait_terminal(q, secs(30));
            assert_eq!(j.state, JobState::Completed, "{j:?}");
            // The kill time stayed the user's limit.
            assert_eq!(j.time_limit, Some(120));
            assert_eq!(c.job(b).state, JobState::Pending);
        } else {
            let jb = c.wait_job(b, secs(10), "pending with an expected start", |j| {
                j.state == JobState::Pending && j.expected_start.is_some()
            });
            assert_eq!(jb.reason, Reason::Resources);
            std::thread::sleep(secs(3));
            let j = c.job(q);
            assert_eq!(j.state, JobState::Pending, "{j:?}");
            assert_eq!(j.reason, Reason::Priority);
        }
        c.cmd_ok("gscancel", [a.to_string(), b.to_string(), q.to_string()]);
    }
}
