//! The controller-crash tests' shared parts (`tests/tests/crash.rs`, `group_commit.rs`): kill
//! gsctld in the middle of a stream of submissions, then check the promise of the
//! architecture: no acknowledged job lost, no id acknowledged twice, every job run exactly
//! once. The jobs must append their id to the work file `runs.log`.

use crate::{JobState, TestCluster};
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// Waits until `ready()` (at most `patience`), then kills gsctld with SIGKILL and starts it
/// again at once.
pub fn restart_ctld_when(c: &TestCluster, patience: Duration, ready: impl Fn() -> bool) {
    let deadline = Instant::now() + patience;
    while !ready() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    c.kill_ctld();
    std::thread::sleep(Duration::from_millis(300));
    c.start_ctld();
}

/// What [`check_after_crash`] found (it panics on every broken promise).
pub struct AfterCrash {
    /// Every job the controller holds, with its final state.
    pub held: BTreeMap<u32, JobState>,
}

/// Waits until every job has ended, then checks that every id in `acked` is distinct,
/// exists and COMPLETED, and that `runs.log` names every held job exactly once and no other.
pub fn check_after_crash(c: &TestCluster, acked: &[u32]) -> AfterCrash {
    let ack_set: BTreeSet<u32> = acked.iter().copied().collect();
    assert_eq!(ack_set.len(), acked.len(), "an id was acknowledged twice");
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
    let held: BTreeMap<u32, JobState> = c.jobs().iter().map(|j| (j.job_id, j.state)).collect();
    let lost: Vec<&u32> = ack_set.iter().filter(|id| !held.contains_key(id)).collect();
    assert!(lost.is_empty(), "acknowledged but lost: {lost:?}");
    let not_completed: Vec<_> = held
        .iter()
        .filter(|(_, s)| **s != JobState::Completed)
        .collect();
    assert!(not_completed.is_empty(), "{not_completed:?}");

    let mut runs: BTreeMap<u32, usize> = BTreeMap::new();
    for l in c.read_work_file("runs.log").lines() {
        let id: u32 = l
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("bad line {l:?}"));
        *runs.entry(id).or_default() += 1;
    }
    let twice: Vec<_> = runs.iter().filter(|(_, n)| **n != 1).collect();
    assert!(twice.is_empty(), "jobs that ran more than once: {twice:?}");
    let never: Vec<&u32> = held.keys().filter(|id| !runs.contains_key(id)).collect();
    assert!(never.is_empty(), "jobs that never ran: {never:?}");
    let unknown: Vec<&u32> = runs.keys().filter(|id| !held.contains_key(id)).collect();
    assert!(
        unknown.is_empty(),
        "runs of jobs the controller does not hold: {unknown:?}"
    );
    AfterCrash { held }
}
