//! `SchedulerParameters=bf_predict=easy++|recent` (gsched): backfill plans with runtimes
//! predicted from the cluster's own finished jobs instead of the users' limits, so
//! `gsqueue --start` and the reservations follow what jobs are likely to do. The predictor is
//! the scheduler core's (`gsched_sched::predict`, the one `gssim --policy easy-predict`
//! measures); the kill time always stays the user's limit. A running job is planned to end at
//! its prediction until it outlives it, then at its limit (gssim's `predict-then-limit`).
//! Jobs with `--time-min` keep planning with their limit (the scheduler may lower their limit;
//! it must not lower it to a guess).
//!
//! The history is the finished jobs the controller has in memory (MinJobAge after a restart)
//! and every job that ends from then on.

use super::{JobId, JobState, State};
use gsched_proto::config::RuntimePredict;
use gsched_proto::job::JobInfo;
use gsched_sched::predict::{JobFeatures, Predictor, PredictorKind};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

/// The predictor and the time of the pass that uses it.
#[derive(Debug, Clone, Default)]
pub struct PredictRt {
    predictor: Option<Predictor>,
    /// `now` of the current scheduling pass (running jobs' planned ends depend on it).
    pub(super) pass_now: i64,
}

/// What the predictor knows of a job: its user, a stable hash of its name, its CPUs, its limit.
pub fn features(info: &JobInfo) -> JobFeatures {
    // DefaultHasher::new() has fixed keys: the same name hashes the same in every run.
    let mut h = std::collections::hash_map::DefaultHasher::new();
    info.name.hash(&mut h);
    JobFeatures {
        user: info.user_id,
        name: Some(h.finish()),
        size: info.num_cpus.max(1),
        limit_secs: info.time_limit.map(|m| i64::from(m) * 60),
    }
}

impl State {
    /// Builds the predictor the config asks for, taught by the finished jobs in memory.
    pub(super) fn init_predictor(&mut self) {
        let kind = match self.cfg.scheduler.params.bf_predict {
            RuntimePredict::Off => return,
            RuntimePredict::EasyPlusPlus => PredictorKind::EasyPlusPlus,
            RuntimePredict::Recent => PredictorKind::Recent,
        };
        let mut p = Predictor::new(kind);
        let mut done: Vec<&JobInfo> = self
            .jobs
            .values()
            .map(|j| &j.info)
            .filter(|i| i.state.is_terminal() && i.start_time.is_some() && i.end_time.is_some())
            .collect();
        done.sort_by_key(|i| (i.end_time, i.job_id));
        for i in done {
            p.observe(
                &features(i),
                i.end_time.unwrap_or(0) - i.start_time.unwrap_or(0),
            );
        }
        self.predict.predictor = Some(p);
    }

    /// A job that ran has ended: one more runtime to learn from.
    pub(super) fn learn_runtime(&mut self, id: JobId) {
        let Some(p) = self.predict.predictor.as_mut() else {
            return;
        };
        let Some(j) = self.jobs.get(&id) else { return };
        if let (true, Some(s), Some(e)) = (
            j.info.state.is_terminal() && j.info.state != JobState::Cancelled,
            j.info.start_time,
            j.info.end_time,
        ) {
            p.observe(&features(&j.info), e - s);
        }
    }

    /// Predicted runtimes (seconds) of the pending jobs `ids` that plan with one.
    pub(super) fn predictions(&self, ids: &[JobId]) -> HashMap<JobId, i64> {
        let Some(p) = &self.predict.predictor else {
            return HashMap::new();
        };
        ids.iter()
            .filter_map(|id| self.jobs.get(id))
            .filter(|j| j.info.spec.time_min.is_none())
            .filter_map(|j| Some((j.info.job_id, p.predict(&features(&j.info))?)))
            .collect()
    }

    /// Where a running job is planned to end: at its prediction until it outlives it, then
    /// at its limit.
    pub(super) fn planned_end(&self, info: &JobInfo, predicted: Option<i64>) -> i64 {
        let Some(start) = info.start_time else {
            return gsched_sched::UNLIMITED_END;
        };
        let limit_end = match info.time_limit {
            Some(m) => start + i64::from(m) * 60,
            None => gsched_sched::UNLIMITED_END,
        };
        match predicted {
            Some(p) if start + p > self.predict.pass_now && start + p < limit_end => start + p,
            _ => limit_end,
        }
    }
}

/// Planning minutes for a prediction of `secs` seconds (at least one minute).
pub fn minutes(secs: i64) -> u32 {
    ((secs + 59) / 60).clamp(1, i64::from(u32::MAX)) as u32
}
