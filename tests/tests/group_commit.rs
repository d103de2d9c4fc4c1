//! Group commit durability (issue 12): 8 clients run `gsbatch` in parallel against a
//! controller with `StateSyncMode=FULL`, so that concurrent submissions share commits, and
//! gsctld is killed with SIGKILL midway and started again. Every id a gsbatch printed must
//! exist afterwards, no id may be printed twice, and every job the controller holds must run
//! exactly once (each run appends its id to one file). A submission whose answer was lost in
//! the crash may or may not exist; gsbatch does not retry, so no duplicate comes from it.

use gsched_tests::crash_check::{check_after_crash, restart_ctld_when};
use gsched_tests::{ClusterOpts, TestCluster};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const TOTAL: usize = 400;
const CLIENTS: usize = 8;
/// The controller is killed once this many submissions were acknowledged.
const KILL_AFTER: usize = 120;

#[test]
fn kill_9_during_concurrent_gsbatch_loses_no_acknowledged_job() {
    let c = TestCluster::start(
        ClusterOpts::named("groupcommit")
            .nodes(2)
            .cpus(4)
            .min_job_age(3600)
            .config_line("StateSyncMode=FULL"),
    );
    c.write_script("job.sh", "#!/bin/sh\necho $SLURM_JOB_ID >> runs.log\n");
    let next = AtomicUsize::new(0);
    let acked: Mutex<Vec<u32>> = Mutex::new(Vec::new());
    let refused = AtomicUsize::new(0);
    let odd: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let started = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..CLIENTS {
            s.spawn(|| {
                while next.fetch_add(1, Ordering::SeqCst) < TOTAL {
                    let out = c.cmd("gsbatch", ["--parsable", "-o", "/dev/null", "job.sh"]);
                    let stdout = String::from_utf8_lossy(&out.stdout);
                    match stdout.trim().parse::<u32>() {
                        Ok(id) if out.status.success() => acked.lock().unwrap().push(id),
                        _ if out.status.success() => odd.lock().unwrap().push(format!(
                            "exit 0 without an id: {stdout:?} {:?}",
                            String::from_utf8_lossy(&out.stderr)
                        )),
                        _ => {
                            // An id printed by a failing gsbatch would be a lie.
                            if !stdout.trim().is_empty() {
                                odd.lock()
                                    .unwrap()
                                    .push(format!("failed but printed {stdout:?}"));
                            }
                            refused.fetch_add(1, Ordering::SeqCst);
                            // The controller is down: do not run through the rest.
                            std::thread::sleep(Duration::from_millis(20));
                        }
                    }
                }
            });
        }
        restart_ctld_when(&c, Duration::from_secs(300), || {
            acked.lock().unwrap().len() >= KILL_AFTER
        });
    });
    let acked = acked.into_inner().unwrap();
    let odd = odd.into_inner().unwrap();
    assert!(odd.is_empty(), "{odd:#?}");
    assert!(
        acked.len() >= KILL_AFTER,
        "{}",
        c.failure(&format!("only {} acknowledged", acked.len()))
    );
    let refused = refused.into_inner();
    assert!(
        acked.len() < TOTAL,
        "every submission was acknowledged: the kill came too late to test anything"
    );

    // Every acknowledged job exists, completed and ran exactly once.
    let held = check_after_crash(&c, &acked).held;
    println!(
        "GROUP-COMMIT-RESULT attempts={TOTAL} acked={} refused={refused} stored={} secs={:.1}",
        acked.len(),
        held.len(),
        started.elapsed().as_secs_f64()
    );
}
