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
//! leaves it when the set is rebuilt from every job, at most once a second (together with
//! the forgetting of jobs older than `MinJobAge`); walks skip the finished ones meanwhile.
//! The rebuild is also the safety net for any transition that does not pass through those
//! two doors: a missed job waits a second at worst.
//!
//! Under a deep queue the set is most of the map, and a walk that looked each id up in the
//! map (a descent of the tree, a cache miss per level) cost more than what it did with the
//! job: with 100,000 jobs on 1,000 virtual nodes, a pass made a dozen such walks. Walks
//! now merge the two sorted sequences when the set is more than an eighth of the map.
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
        let (mut ids, mut started_ids) = (Vec::new(), Vec::new());
        for (&id, j) in jobs {
            if !j.info.state.is_terminal() {
                ids.push(id);
            }
            if started(j.info.state) {
                started_ids.push(id);
            }
        }
        self.ids = ids.into_iter().collect();
        self.started = started_ids.into_iter().collect();
        self.rebuilt_at = Some(now);
    }

    /// The started jobs, in id order (no pruning: for `&self` walks).
    pub(super) fn started_jobs<'a>(
        &'a self,
        jobs: &'a BTreeMap<JobId, Box<Job>>,
    ) -> impl Iterator<Item = &'a Job> + 'a {
        walk(&self.started, jobs).filter(|j| started(j.info.state))
    }

    /// The jobs of the set that are unfinished now, in id order (no pruning: for `&self`
    /// walks between passes).
    pub(super) fn jobs<'a>(
        &'a self,
        jobs: &'a BTreeMap<JobId, Box<Job>>,
    ) -> impl Iterator<Item = &'a Job> + 'a {
        walk(&self.ids, jobs).filter(|j| !j.info.state.is_terminal())
    }

    /// Calls `f` on every unfinished job, in id order (no pruning).
    pub(super) fn each_mut(&self, jobs: &mut BTreeMap<JobId, Box<Job>>, f: impl FnMut(&mut Job)) {
        walk_mut(&self.ids, jobs, |s| !s.is_terminal(), f);
    }

    /// Calls `f` on every started job, in id order (no pruning).
    pub(super) fn each_started_mut(
        &self,
        jobs: &mut BTreeMap<JobId, Box<Job>>,
        f: impl FnMut(&mut Job),
    ) {
        walk_mut(&self.started, jobs, started, f);
    }
}

/// Calls `f` on the jobs of `jobs` whose ids `ids` holds and whose state `keep` accepts.
fn walk_mut(
    ids: &BTreeSet<JobId>,
    jobs: &mut BTreeMap<JobId, Box<Job>>,
    keep: impl Fn(JobState) -> bool,
    mut f: impl FnMut(&mut Job),
) {
    if merges(ids, jobs) {
        merge(ids, jobs.iter_mut())
            .filter(|j| keep(j.info.state))
            .for_each(|j| f(j));
    } else {
        for id in ids {
            if let Some(j) = jobs.get_mut(id).filter(|j| keep(j.info.state)) {
                f(j);
            }
        }
    }
}

/// Whether walking `ids` of `jobs` is cheaper as one merge of the two sorted sequences than
/// as a lookup per id: a lookup descends the tree (a cache miss per level under a deep
/// queue), a merge steps over the jobs not in the set, which costs a few nanoseconds each.
fn merges<T>(ids: &BTreeSet<JobId>, jobs: &BTreeMap<JobId, T>) -> bool {
    ids.len().saturating_mul(8) >= jobs.len()
}

/// The values of `entries` (a map's, in id order) whose ids `ids` holds: one merge of the
/// two sorted sequences, for shared and mutable walks alike.
fn merge<'a, V: 'a>(
    ids: &'a BTreeSet<JobId>,
    entries: impl Iterator<Item = (&'a JobId, V)> + 'a,
) -> impl Iterator<Item = V> + 'a {
    let mut want = ids.iter().peekable();
    entries
        .map_while(move |(id, v)| {
            while want.next_if(|w| *w < id).is_some() {}
            let w = want.peek()?;
            Some((*w == id).then_some(v))
        })
        .flatten()
}

/// The jobs of `jobs` whose ids `ids` holds, in id order.
fn walk<'a>(
    ids: &'a BTreeSet<JobId>,
    jobs: &'a BTreeMap<JobId, Box<Job>>,
) -> Box<dyn Iterator<Item = &'a Job> + 'a> {
    if merges(ids, jobs) {
        Box::new(merge(ids, jobs.iter()).map(|b| &**b))
    } else {
        Box::new(ids.iter().filter_map(|id| jobs.get(id).map(|b| &**b)))
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
    use gsched_proto::api::{JobFilter, SignalScope};
    use gsched_proto::job::{JobId, JobSpec, JobState};

    /// The jobs a walk of the unfinished ones visits.
    fn unfinished(st: &State) -> Vec<JobId> {
        st.active.jobs(&st.jobs).map(|j| j.info.job_id).collect()
    }

    /// The jobs a walk of the started ones visits.
    fn started(st: &State) -> Vec<JobId> {
        st.active
            .started_jobs(&st.jobs)
            .map(|j| j.info.job_id)
            .collect()
    }

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
        assert!(started(&st).is_empty());
        st.schedule(1001);
        assert_eq!(st.jobs[&a].info.state, JobState::Running);
        assert_eq!(started(&st), vec![a]);
        assert_eq!(unfinished(&st), vec![a, h]);
        // Within the same second (no rebuild): the limit is found through the started set.
        st.active.rebuilt_at = Some(1000 + 61);
        st.schedule(1000 + 61);
        assert_eq!(st.jobs[&a].info.state, JobState::Completing);
        assert_eq!(started(&st), vec![a]);
        run_to_end(&mut st, a, 1062);
        assert!(started(&st).is_empty());
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
        assert_eq!(unfinished(&st), vec![a, b]);
        st.schedule(1001);
        assert_eq!(st.jobs[&a].info.state, JobState::Running);
        run_to_end(&mut st, a, 1002);
        // Walks leave the finished job out; it stays queryable until MinJobAge.
        assert_eq!(unfinished(&st), vec![b]);
        assert!(st.jobs.contains_key(&a));
        // A requeue of the finished job puts it back without waiting for a rebuild, and it
        // starts once eligible again.
        st.requeue(&gsched_proto::api::RequeueRequest::of(&[a]), ROOT, 1002)
            .unwrap();
        assert_eq!(st.jobs[&a].info.state, JobState::Pending);
        assert!(unfinished(&st).contains(&a));
        let eligible = st.jobs[&a].info.eligible_time.unwrap();
        st.schedule(eligible);
        assert_eq!(st.jobs[&a].info.state, JobState::Running);
        // Old finished jobs are forgotten by the once-a-second purge.
        run_to_end(&mut st, a, eligible + 1);
        run_to_end(&mut st, b, eligible + 1);
        st.schedule(eligible + 1 + st.cfg.min_job_age as i64 + 2);
        assert!(!st.jobs.contains_key(&a) && !st.jobs.contains_key(&b));
        assert!(unfinished(&st).is_empty());
    }

    #[test]
    fn a_missed_transition_is_caught_by_the_rebuild_within_a_second() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(dir.path());
        register_all(&mut st, 1000);
        let a = st.submit(spec(1), ROOT, 1000).unwrap();
        st.schedule(1001);
        run_to_end(&mut st, a, 1002);
        assert!(unfinished(&st).is_empty());
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

    /// A walk merges the set with the map when the set is a large part of it and looks each
    /// id up otherwise; both give the same jobs, in id order, finished ones left out.
    #[test]
    fn merged_and_looked_up_walks_agree() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(dir.path());
        register_all(&mut st, 1000);
        let ids: Vec<JobId> = (0..40)
            .map(|_| st.submit(spec(1), ROOT, 1000).unwrap())
            .collect();
        // Cancelled while pending (None: no signal, the whole job), all but four.
        let kept = [ids[3], ids[17], ids[18], ids[39]];
        let gone = JobFilter {
            ids: ids
                .iter()
                .copied()
                .filter(|id| !kept.contains(id))
                .collect(),
            ..Default::default()
        };
        st.signal_jobs(&gone, None, SignalScope::Full, ROOT, 1001)
            .unwrap();
        let unfinished: Vec<JobId> = ids
            .iter()
            .copied()
            .filter(|id| !st.jobs[id].info.state.is_terminal())
            .collect();
        assert!(unfinished.len() * 8 < st.jobs.len(), "{unfinished:?}");
        // The set still holds all 40 (no rebuild yet): merged.
        assert!(super::merges(&st.active.ids, &st.jobs));
        let merged: Vec<JobId> = st.active.jobs(&st.jobs).map(|j| j.info.job_id).collect();
        let mut visited = Vec::new();
        st.active
            .each_mut(&mut st.jobs, |j| visited.push(j.info.job_id));
        assert_eq!(merged, unfinished);
        assert_eq!(visited, unfinished);
        // Rebuilt, it holds the unfinished ones only: looked up.
        st.active.rebuild(&st.jobs, 1003);
        assert!(!super::merges(&st.active.ids, &st.jobs));
        let looked_up: Vec<JobId> = st.active.jobs(&st.jobs).map(|j| j.info.job_id).collect();
        let mut visited = Vec::new();
        st.active
            .each_mut(&mut st.jobs, |j| visited.push(j.info.job_id));
        assert_eq!(looked_up, unfinished);
        assert_eq!(visited, unfinished);
    }
}
