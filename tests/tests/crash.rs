//! Crash consistency of the controller: gsctld is killed with SIGKILL while about 1,000
//! submissions are in flight from several clients, and started again. Every submission that
//! was acknowledged (an id came back) must exist exactly once afterwards, and every job the
//! controller holds must run exactly once (each run appends its id to one file). A
//! submission whose answer was lost in the crash may or may not exist, as with any server;
//! the clients do not retry, so that no duplicate can come from them.
//!
//! `bench/crash-consistency.sh` runs this and the same measurement on real Slurm.

use gsched_proto::api::{paths, SubmitRequest, SubmitResponse};
use gsched_proto::job::{JobSpec, JobState};
use gsched_tests::{ClusterOpts, TestCluster};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const TOTAL: usize = 1000;
const CLIENTS: usize = 8;
/// The controller is killed once this many submissions were acknowledged.
const KILL_AFTER: usize = 300;

#[test]
fn controller_killed_during_1000_submissions_loses_and_duplicates_nothing() {
    let c = TestCluster::start(
        ClusterOpts::named("crash")
            .nodes(2)
            .cpus(4)
            .min_job_age(3600),
    );
    let work = c.workdir().display().to_string();
    let spec = JobSpec {
        name: "crash".into(),
        script: "#!/bin/sh\necho $SLURM_JOB_ID >> runs.log\n".into(),
        work_dir: work,
        stdout: Some("/dev/null".into()),
        ..Default::default()
    };
    let next = AtomicUsize::new(0);
    let acked: Mutex<Vec<u32>> = Mutex::new(Vec::new());
    let failed = AtomicUsize::new(0);
    let started = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..CLIENTS {
            s.spawn(|| {
                let client = c.client();
                while next.fetch_add(1, Ordering::SeqCst) < TOTAL {
                    let req = SubmitRequest {
                        spec: spec.clone(),
                        test_only: false,
                        het: Vec::new(),
                    };
                    match client.post::<_, SubmitResponse>(paths::JOBS, &req) {
                        Ok(r) => acked.lock().unwrap().push(r.job_id),
                        Err(_) => {
                            failed.fetch_add(1, Ordering::SeqCst);
                            // The controller is down: do not spin through the rest.
                            std::thread::sleep(Duration::from_millis(20));
                        }
                    }
                }
            });
        }
        // Kill the controller in the middle of the stream, then start it again.
        let deadline = Instant::now() + Duration::from_secs(120);
        while acked.lock().unwrap().len() < KILL_AFTER && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        c.kill_ctld();
        std::thread::sleep(Duration::from_millis(300));
        c.start_ctld();
    });
    let acked = acked.into_inner().unwrap();
    let failed = failed.into_inner();
    let submit_secs = started.elapsed().as_secs_f64();
    assert!(
        acked.len() >= KILL_AFTER,
        "only {} acknowledged",
        acked.len()
    );

    // Acknowledged ids are distinct.
    let ack_set: BTreeSet<u32> = acked.iter().copied().collect();
    assert_eq!(ack_set.len(), acked.len(), "an id was acknowledged twice");

    // Every job ends; every acknowledged one exists.
    let done = c.poll(Duration::from_secs(300), || {
        c.jobs().iter().all(|j| j.state.is_terminal()).then_some(())
    });
    if done.is_none() {
        let stuck: Vec<String> = c
            .jobs()
            .iter()
            .filter(|j| !j.state.is_terminal())
            .take(20)
            .map(|j| {
                format!(
                    "{} {} {} {:?} {:?}",
                    j.job_id, j.state, j.reason, j.nodes, j.start_time
                )
            })
            .collect();
        panic!("{}", c.failure(&format!("jobs not finished: {stuck:#?}")));
    }
    let jobs = c.jobs();
    let held: BTreeMap<u32, JobState> = jobs.iter().map(|j| (j.job_id, j.state)).collect();
    let missing: Vec<&u32> = ack_set.iter().filter(|id| !held.contains_key(id)).collect();
    assert!(missing.is_empty(), "acknowledged but lost: {missing:?}");
    let not_completed: Vec<(&u32, &JobState)> = held
        .iter()
        .filter(|(_, s)| **s != JobState::Completed)
        .collect();
    assert!(not_completed.is_empty(), "{not_completed:?}");

    // Every job ran exactly once.
    let log = c.read_work_file("runs.log");
    let mut runs: BTreeMap<u32, usize> = BTreeMap::new();
    for l in log.lines() {
        let id: u32 = l
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("bad line {l:?}"));
        *runs.entry(id).or_default() += 1;
    }
    let twice: Vec<(&u32, &usize)> = runs.iter().filter(|(_, n)| **n != 1).collect();
    assert!(twice.is_empty(), "jobs that ran more than once: {twice:?}");
    let never: Vec<&u32> = held.keys().filter(|id| !runs.contains_key(id)).collect();
    assert!(never.is_empty(), "jobs that never ran: {never:?}");
    let unknown: Vec<&u32> = runs.keys().filter(|id| !held.contains_key(id)).collect();
    assert!(
        unknown.is_empty(),
        "runs of jobs the controller does not hold: {unknown:?}"
    );

    // The figures bench/crash-consistency.sh reports.
    println!(
        "CRASH-RESULT gsched attempts={TOTAL} acked={} failed={failed} stored={} acked_lost={} duplicates={} ran_twice={} submit_secs={submit_secs:.1}",
        acked.len(),
        held.len(),
        missing.len(),
        acked.len() - ack_set.len(),
        twice.len()
    );
}
