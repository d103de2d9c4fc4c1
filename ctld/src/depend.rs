//! Evaluation of job dependencies: a pure function of the dependency, what is known about
//! its target jobs, and `now`. The state machine calls it for every pending job that still
//! has a dependency, before it builds the scheduler core's queue.

use gsched_proto::depend::{DepKind, DependencySpec};
use gsched_proto::job::{JobId, JobState};

/// What a dependency needs to know about one target job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TargetState {
    pub state: JobState,
    pub start_time: Option<i64>,
    pub end_time: Option<i64>,
}

/// The outcome of evaluating a dependency.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DepStatus {
    Satisfied,
    Pending,
    NeverSatisfied,
}

/// Evaluates `dep` at `now`. `target` returns the state of a job id, `None` when the
/// controller no longer knows it (purged after MinJobAge: it ended long ago, and Slurm then
/// treats the dependency as satisfied). `corr` serves `aftercorr`: the state of the task of
/// the array named by a job id that has the same index as the job being evaluated, `None`
/// when there is no such task (the job is not an array task, the target is not an array or
/// has no task of that index); Slurm then judges the target as a whole, like `afterok`.
/// `singleton_blocked` tells whether another job of the same name and user runs or waits
/// ahead of this one.
pub fn evaluate(
    dep: &DependencySpec,
    target: impl Fn(JobId) -> Option<TargetState>,
    corr: impl Fn(JobId) -> Option<TargetState>,
    singleton_blocked: bool,
    now: i64,
) -> DepStatus {
    let item_status = |kind: DepKind, id: JobId, delay_min: u32| -> DepStatus {
        let delay = i64::from(delay_min) * 60;
        let found = match kind {
            DepKind::AfterCorr => corr(id).or_else(|| target(id)),
            _ => target(id),
        };
        let Some(t) = found else {
            return DepStatus::Satisfied;
        };
        let ended = t.state.is_terminal();
        let after = |at: Option<i64>| {
            if at.is_none_or(|a| now >= a + delay) {
                DepStatus::Satisfied
            } else {
                DepStatus::Pending
            }
        };
        match kind {
            DepKind::After => match t.state {
                JobState::Pending => DepStatus::Pending,
                _ if ended && t.start_time.is_none() => after(t.end_time),
                _ => after(t.start_time),
            },
            DepKind::AfterAny if ended => after(t.end_time),
            // Task K after task K: satisfied when it completed, never when it failed.
            DepKind::AfterOk | DepKind::AfterCorr if ended => {
                if t.state == JobState::Completed {
                    after(t.end_time)
                } else {
                    DepStatus::NeverSatisfied
                }
            }
            DepKind::AfterNotOk if ended => {
                if t.state == JobState::Completed {
                    DepStatus::NeverSatisfied
                } else {
                    after(t.end_time)
                }
            }
            _ => DepStatus::Pending,
        }
    };
    let statuses = dep.items.iter().map(|item| {
        if item.kind == DepKind::Singleton {
            return if singleton_blocked {
                DepStatus::Pending
            } else {
                DepStatus::Satisfied
            };
        }
        combine(
            false,
            item.targets
                .iter()
                .map(|t| item_status(item.kind, t.job_id, t.delay_min)),
        )
    });
    combine(dep.any, statuses)
}

/// All (`any == false`) or any (`any == true`) of several outcomes.
fn combine(any: bool, statuses: impl Iterator<Item = DepStatus>) -> DepStatus {
    let (mut sat, mut never, mut n) = (0, 0, 0);
    for s in statuses {
        n += 1;
        match s {
            DepStatus::Satisfied => sat += 1,
            DepStatus::NeverSatisfied => never += 1,
            DepStatus::Pending => {}
        }
    }
    if any {
        if sat > 0 {
            DepStatus::Satisfied
        } else if never == n {
            DepStatus::NeverSatisfied
        } else {
            DepStatus::Pending
        }
    } else if never > 0 {
        DepStatus::NeverSatisfied
    } else if sat == n {
        DepStatus::Satisfied
    } else {
        DepStatus::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn st(state: JobState, start: Option<i64>, end: Option<i64>) -> TargetState {
        TargetState {
            state,
            start_time: start,
            end_time: end,
        }
    }

    fn eval(dep: &str, jobs: &[(JobId, TargetState)], singleton: bool, now: i64) -> DepStatus {
        let map: HashMap<JobId, TargetState> = jobs.iter().copied().collect();
        let d = DependencySpec::parse(dep).unwrap();
        evaluate(&d, |id| map.get(&id).copied(), |_| None, singleton, now)
    }

    use DepStatus::*;
    use JobState::{Cancelled, Completed, Failed, Running, Timeout};

    #[test]
    fn afterok_afternotok_afterany() {
        let pending = st(JobState::Pending, None, None);
        let running = st(Running, Some(10), None);
        let ok = st(Completed, Some(10), Some(20));
        let failed = st(Failed, Some(10), Some(20));
        let cancelled = st(Cancelled, None, Some(20));
        for (dep, target, want) in [
            ("afterok:1", pending, Pending),
            ("afterok:1", running, Pending),
            ("afterok:1", ok, Satisfied),
            ("afterok:1", failed, NeverSatisfied),
            ("afterok:1", cancelled, NeverSatisfied),
            ("afternotok:1", running, Pending),
            ("afternotok:1", ok, NeverSatisfied),
            ("afternotok:1", failed, Satisfied),
            ("afternotok:1", st(Timeout, Some(1), Some(2)), Satisfied),
            ("afterany:1", running, Pending),
            ("afterany:1", ok, Satisfied),
            ("afterany:1", failed, Satisfied),
            ("1", cancelled, Satisfied),
            ("after:1", pending, Pending),
            ("after:1", running, Satisfied),
            ("after:1", cancelled, Satisfied),
        ] {
            assert_eq!(
                eval(dep, &[(1, target)], false, 100),
                want,
                "{dep} {target:?}"
            );
        }
    }

    #[test]
    fn delays_and_purged_targets() {
        let running = st(Running, Some(100), None);
        assert_eq!(eval("after:1+2", &[(1, running)], false, 219), Pending);
        assert_eq!(eval("after:1+2", &[(1, running)], false, 220), Satisfied);
        let ok = st(Completed, Some(10), Some(100));
        assert_eq!(eval("afterok:1+1", &[(1, ok)], false, 159), Pending);
        assert_eq!(eval("afterok:1+1", &[(1, ok)], false, 160), Satisfied);
        // Unknown (purged) targets ended long ago.
        assert_eq!(eval("afterok:9", &[], false, 100), Satisfied);
    }

    #[test]
    fn all_and_any() {
        let ok = st(Completed, Some(1), Some(2));
        let failed = st(Failed, Some(1), Some(2));
        let running = st(Running, Some(1), None);
        let jobs = [(1, ok), (2, failed), (3, running)];
        assert_eq!(eval("afterok:1:3", &jobs, false, 10), Pending);
        assert_eq!(eval("afterok:1,afterany:2", &jobs, false, 10), Satisfied);
        assert_eq!(
            eval("afterok:1,afterok:2", &jobs, false, 10),
            NeverSatisfied
        );
        assert_eq!(eval("afterok:1:2", &jobs, false, 10), NeverSatisfied);
        assert_eq!(eval("afterok:2?afterok:1", &jobs, false, 10), Satisfied);
        assert_eq!(eval("afterok:2?afterok:3", &jobs, false, 10), Pending);
        assert_eq!(
            eval("afterok:2?afternotok:1", &jobs, false, 10),
            NeverSatisfied
        );
    }

    #[test]
    fn aftercorr_follows_the_same_index() {
        let ok = st(Completed, Some(1), Some(2));
        let failed = st(Failed, Some(1), Some(2));
        let running = st(Running, Some(1), None);
        let dep = DependencySpec::parse("aftercorr:10").unwrap();
        // The whole array (job 10) failed, but the task of our index decides.
        let whole = |_: JobId| Some(failed);
        for (task, want) in [
            (ok, Satisfied),
            (failed, NeverSatisfied),
            (running, Pending),
        ] {
            assert_eq!(evaluate(&dep, whole, |_| Some(task), false, 10), want);
        }
        // No task of our index: the target as a whole, like afterok.
        assert_eq!(evaluate(&dep, whole, |_| None, false, 10), NeverSatisfied);
        assert_eq!(evaluate(&dep, |_| Some(ok), |_| None, false, 10), Satisfied);
        assert_eq!(
            evaluate(&dep, |_| Some(running), |_| None, false, 10),
            Pending
        );
        // Purged everywhere: satisfied.
        assert_eq!(evaluate(&dep, |_| None, |_| None, false, 10), Satisfied);
    }

    #[test]
    fn singleton() {
        assert_eq!(eval("singleton", &[], true, 10), Pending);
        assert_eq!(eval("singleton", &[], false, 10), Satisfied);
        let ok = st(Completed, Some(1), Some(2));
        assert_eq!(eval("afterok:1,singleton", &[(1, ok)], true, 10), Pending);
        assert_eq!(eval("afterok:1?singleton", &[(1, ok)], true, 10), Satisfied);
    }
}
