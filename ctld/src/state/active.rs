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
//!
//! A second set, kept the same way, holds the jobs that started (running, suspended or
//! completing): the walks that concern only those (time limits and terminate retries, the
//! nodes' allocations, time notices, GPU holds) do not visit the pending ones, which under a
//! deep queue are nearly all of them (10,000 held jobs: a pass took 29 ms).

use super::Job;
use gsched_proto::job::{JobId, JobState};
use std::collections::{BTreeMap, BTreeSet};

#[derive(Debug, Default)]
pub(super) struct ActiveJobs {
    ids: BTreeSet<JobId>,
    /// The started ones (a superset, as `ids`).
    started: BTreeSet<JobId>,
    /// When the set was last rebuilt from every job (epoch seconds).
    rebuilt_at: Option<i64>,
}

impl ActiveJobs {
    /// A job was created or committed in `state`.
    pub(super) fn note(&mut self, id: JobId, state: JobState) {
        if !state.is_terminal() {
            self.ids.insert(id);
        }
        if started(state) {
            self.started.insert(id);
        }
    }

    /// Whether the once-a-second rebuild is due at `now`.
    pub(super) fn rebuild_due(&self, now: i64) -> bool {
        self.rebuilt_at != Some(now)
    }

    /// Rebuilds the set from every job.
    pub(super) fn rebuild(&mut self, jobs: &BTreeMap<JobId, Box<Job>>, now: i64) {
        self.ids = jobs
            .values()
            .filter(|j| !j.info.state.is_terminal())
            .map(|j| j.info.job_id)
            .collect();
        self.started = jobs
            .values()
            .filter(|j| started(j.info.state))
            .map(|j| j.info.job_id)
            .collect();
        self.rebuilt_at = Some(now);
    }

    /// The unfinished jobs, in id order; forgets those found finished or gone.
    pub(super) fn ids(&mut self, jobs: &BTreeMap<JobId, Box<Job>>) -> Vec<JobId> {
        self.ids
            .retain(|id| jobs.get(id).is_some_and(|j| !j.info.state.is_terminal()));
        self.ids.iter().copied().collect()
    }

    /// The started jobs (running, suspended, completing), in id order; forgets the others.
    pub(super) fn started_ids(&mut self, jobs: &BTreeMap<JobId, Box<Job>>) -> Vec<JobId> {
        self.started
            .retain(|id| jobs.get(id).is_some_and(|j| started(j.info.state)));
        self.started.iter().copied().collect()
    }

    /// The started jobs, in id order (no pruning: for `&self` walks).
    pub(super) fn started_jobs<'a>(
        &'a self,
        jobs: &'a BTreeMap<JobId, Box<Job>>,
    ) -> impl Iterator<Item = &'a Job> + 'a {
        self.started
            .iter()
            .filter_map(|id| jobs.get(id).map(|b| &**b))
            .filter(|j| started(j.info.state))
    }

    /// The jobs of the set that are unfinished now, in id order (no pruning: for `&self`
    /// walks between passes).
    pub(super) fn jobs<'a>(
        &'a self,
        jobs: &'a BTreeMap<JobId, Box<Job>>,
    ) -> impl Iterator<Item = &'a Job> + 'a {
        self.ids
            .iter()
            .filter_map(|id| jobs.get(id).map(|b| &**b))
            .filter(|j| !j.info.state.is_terminal())
    }
}

/// Running (suspended included) or completing.
fn started(state: JobState) -> bool {
    matches!(state, JobState::Running | JobState::Completing)
}

#[cfg(test)]
mod tests {
    use super::super::tests::{ended, register_all, spec, state, ROOT};
    use super::super::State;
    use gsched_proto::api::JobFilter;
    use gsched_proto::job::{JobId, JobSpec, JobState};

    fn run_to_end(st: &mut State, id: JobId, t: i64) {
        let node = st.jobs[&id].info.nodes[0].clone();
        let start = st.jobs[&id].info.start_time.unwrap();
        st.complete(&ended(id, node, start, t), t).unwrap();
        assert!(st.jobs[&id].info.state.is_terminal());
    }

    /// Started jobs enter the second set when they start, without waiting for a rebuild,
    /// and leave it when they end; pending ones never enter it. A job's time limit is
    /// enforced from it.
    #[test]
    fn started_jobs_are_walked_without_the_pending_ones() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(dir.path());
        register_all(&mut st, 1000);
        let mut limited = spec(1);
        limited.time_limit = Some(1);
        let a = st.submit(limited, ROOT, 1000).unwrap();
        let mut held = spec(1);
        held.hold = true;
        let h = st.submit(held, ROOT, 1000).unwrap();
        assert!(st.active.started_ids(&st.jobs).is_empty());
        st.schedule(1001);
        assert_eq!(st.jobs[&a].info.state, JobState::Running);
        assert_eq!(st.active.started_ids(&st.jobs), vec![a]);
        assert_eq!(st.active.ids(&st.jobs), vec![a, h]);
        // Within the same second (no rebuild): the limit is found through the started set.
        st.active.rebuilt_at = Some(1000 + 61);
        st.schedule(1000 + 61);
        assert_eq!(st.jobs[&a].info.state, JobState::Completing);
        assert_eq!(st.active.started_ids(&st.jobs), vec![a]);
        run_to_end(&mut st, a, 1062);
        assert!(st.active.started_ids(&st.jobs).is_empty());
        assert_eq!(st.active.started_jobs(&st.jobs).count(), 0);
    }

    #[test]
    fn passes_walk_unfinished_jobs_and_requeued_ones_come_back() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(dir.path());
        register_all(&mut st, 1000);
        let a = st.submit(spec(1), ROOT, 1000).unwrap();
        let b = st.submit(spec(1), ROOT, 1000).unwrap();
        // Submitted jobs are in the set before any pass.
        assert_eq!(st.active.ids(&st.jobs), vec![a, b]);
        st.schedule(1001);
        assert_eq!(st.jobs[&a].info.state, JobState::Running);
        run_to_end(&mut st, a, 1002);
        // The next walk drops the finished job; the job stays queryable until MinJobAge.
        assert_eq!(st.active.ids(&st.jobs), vec![b]);
        assert!(st.jobs.contains_key(&a));
        // A requeue of the finished job puts it back without waiting for a rebuild, and it
        // starts once eligible again.
        st.requeue(&[a], ROOT, 1002).unwrap();
        assert_eq!(st.jobs[&a].info.state, JobState::Pending);
        assert!(st.active.ids(&st.jobs).contains(&a));
        let eligible = st.jobs[&a].info.eligible_time.unwrap();
        st.schedule(eligible);
        assert_eq!(st.jobs[&a].info.state, JobState::Running);
        // Old finished jobs are forgotten by the once-a-second purge.
        run_to_end(&mut st, a, eligible + 1);
        run_to_end(&mut st, b, eligible + 1);
        st.schedule(eligible + 1 + st.cfg.min_job_age as i64 + 2);
        assert!(!st.jobs.contains_key(&a) && !st.jobs.contains_key(&b));
        assert!(st.active.ids(&st.jobs).is_empty());
    }

    #[test]
    fn a_missed_transition_is_caught_by_the_rebuild_within_a_second() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(dir.path());
        register_all(&mut st, 1000);
        let a = st.submit(spec(1), ROOT, 1000).unwrap();
        st.schedule(1001);
        run_to_end(&mut st, a, 1002);
        assert!(st.active.ids(&st.jobs).is_empty());
        // A transition back to pending that bypasses the store (none should): the pass of
        // the next second rebuilds the set and starts the job.
        st.jobs.get_mut(&a).unwrap().info.state = JobState::Pending;
        st.jobs.get_mut(&a).unwrap().info.nodes.clear();
        st.jobs.get_mut(&a).unwrap().info.start_time = None;
        st.schedule(1003);
        assert_eq!(st.jobs[&a].info.state, JobState::Running);
    }

    #[test]
    fn brief_queries_leave_out_scripts_and_environments() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(dir.path());
        let a = st
            .submit(
                JobSpec {
                    environment: vec![("SECRETISH".to_string(), "x".repeat(4000))].into(),
                    ..spec(1)
                },
                ROOT,
                1000,
            )
            .unwrap();
        let all = JobFilter::default();
        let full = st.query(&all, false);
        assert_eq!(full[0].spec.environment.len(), 1);
        assert!(full[0].spec.script.contains("true"));
        let brief = st.query(&all, true);
        assert!(brief[0].spec.environment.is_empty() && brief[0].spec.script.is_empty());
        assert_eq!(brief[0].job_id, a);
        assert_eq!(brief[0].name, full[0].name);
        // Memory holds neither (state/payload.rs): a full query read them from the store.
        assert!(st.jobs[&a].info.spec.environment.is_empty());
        assert!(st.jobs[&a].info.spec.script.is_empty());
        // By id, the same.
        let one = JobFilter {
            ids: vec![a],
            ..JobFilter::default()
        };
        assert!(st.query(&one, true)[0].spec.environment.is_empty());
        assert_eq!(st.query(&one, false)[0].spec.environment.len(), 1);
    }
}
