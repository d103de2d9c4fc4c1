//! The ids of the jobs that are not finished (pending, running, suspended, completing), so
//! that a scheduling pass walks those and not every job in memory.
//!
//! Why: finished jobs stay in memory for `MinJobAge` (300 s by default) so that `gsqueue` and
//! `gscontrol show job` still see them, and under a stream of short jobs they are most of the
//! map: 1,000 trivial jobs leave 4,000 finished ones behind within a few minutes of a
//! benchmark. A pass runs on every submission and every job end, and each of its walks over
//! all of them (time limits, candidates, estimates, the forgetting of old jobs) cost more than
//! the decisions themselves (profile of 300 trivial jobs end to end: a quarter of gsctld's CPU).
//!
//! The set may hold more than the unfinished jobs, never fewer: a job enters it when it is
//! created and whenever its record is committed in an unfinished state (a requeue), and
//! leaves it only when a walk finds it finished. As a safety net for any transition that
//! does not pass through those two doors, the set is rebuilt from every job at most once a
//! second (together with the forgetting of jobs older than `MinJobAge`), so a missed job
//! waits a second at worst.

use super::Job;
use gsched_proto::job::{JobId, JobState};
use std::collections::{BTreeMap, BTreeSet};

#[derive(Debug, Default)]
pub(super) struct ActiveJobs {
    ids: BTreeSet<JobId>,
    /// When the set was last rebuilt from every job (epoch seconds).
    rebuilt_at: Option<i64>,
}

impl ActiveJobs {
    /// A job was created or committed in `state`.
    pub(super) fn note(&mut self, id: JobId, state: JobState) {
        if !state.is_terminal() {
            self.ids.insert(id);
        }
    }

    /// Whether the once-a-second rebuild is due at `now`.
    pub(super) fn rebuild_due(&self, now: i64) -> bool {
        self.rebuilt_at != Some(now)
    }

    /// Rebuilds the set from every job.
    pub(super) fn rebuild(&mut self, jobs: &BTreeMap<JobId, Job>, now: i64) {
        self.ids = jobs
            .values()
            .filter(|j| !j.info.state.is_terminal())
            .map(|j| j.info.job_id)
            .collect();
        self.rebuilt_at = Some(now);
    }

    /// The unfinished jobs, in id order; forgets those found finished or gone.
    pub(super) fn ids(&mut self, jobs: &BTreeMap<JobId, Job>) -> Vec<JobId> {
        self.ids
            .retain(|id| jobs.get(id).is_some_and(|j| !j.info.state.is_terminal()));
        self.ids.iter().copied().collect()
    }

    /// The jobs of the set that are unfinished now, in id order (no pruning: for `&self`
    /// walks between passes).
    pub(super) fn jobs<'a>(
        &'a self,
        jobs: &'a BTreeMap<JobId, Job>,
    ) -> impl Iterator<Item = &'a Job> + 'a {
        self.ids
            .iter()
            .filter_map(|id| jobs.get(id))
            .filter(|j| !j.info.state.is_terminal())
    }
}
