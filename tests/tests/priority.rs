//! Multifactor priority through the real controller: on a 1-CPU node, the job of an account
//! without usage starts before an earlier job of an account that just used the node, because
//! of the fair-share factor. `-A`, `--nice`, `SLURM_JOB_ACCOUNT`, `gsqueue %a %y` and
//! `gscontrol show job` (Account=, Nice=, PriorityFactors=) along the way.

use gsched_tests::{secs, ClusterOpts, JobState};

#[test]
fn fair_share_decides_which_pending_job_starts_first() {
    let c = gsched_tests::TestCluster::start(
        ClusterOpts::named("prio")
            .nodes(1)
            .cpus(1)
            .config_line("PriorityType=priority/multifactor")
            .config_line("PriorityWeightFairshare=10000")
            .config_line("PriorityWeightAge=10"),
    );
    // The heavy account holds the only CPU for a few seconds.
    let x = c.submit(["-A", "Heavy", "-o", "x.out", "--wrap", "sleep 3"]);
    c.wait_state(x, JobState::Running, secs(30));
    // Then submits first; the light account later, even with a small --nice.
    let y = c.submit([
        "-A",
        "heavy",
        "-o",
        "y.out",
        "--wrap",
        "echo $SLURM_JOB_ACCOUNT; sleep 1",
    ]);
    let z = c.submit([
        "--account=light",
        "--nice=1",
        "-o",
        "z.out",
        "--wrap",
        "echo $SLURM_JOB_ACCOUNT; sleep 1",
    ]);
    let q = c.cmd_ok("gsqueue", ["-h", "-t", "PD", "-o", "%i %a %y"]);
    assert!(q.contains(&format!("{y} heavy 0")), "{q}");
    assert!(q.contains(&format!("{z} light 1")), "{q}");
    let show = c.cmd_ok(
        "gscontrol",
        ["show".to_string(), "job".into(), z.to_string()],
    );
    assert!(show.contains("Nice=1 Account=light QOS=normal"), "{show}");
    assert!(show.contains("PriorityFactors=age:"), "{show}");
    let jy = c.wait_terminal(y, secs(60));
    let jz = c.wait_terminal(z, secs(60));
    assert_eq!(jy.state, JobState::Completed, "{jy:?}");
    assert_eq!(jz.state, JobState::Completed, "{jz:?}");
    // The light account's job ran first, although submitted later.
    let (sy, sz) = (jy.start_time.unwrap(), jz.start_time.unwrap());
    assert!(sz < sy, "z started at {sz}, y at {sy}");
    // Its priority came from a larger fair-share factor.
    let (fy, fz) = (
        jy.priority_factors.expect("y factors"),
        jz.priority_factors.expect("z factors"),
    );
    assert!(fz.fairshare > fy.fairshare, "{fz:?} {fy:?}");
    assert_eq!(fz.nice, 1);
    assert_eq!(c.read_work_file("y.out").trim(), "heavy");
    assert_eq!(c.read_work_file("z.out").trim(), "light");
}
