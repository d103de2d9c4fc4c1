//! Runtime prediction from history, for planning only.
//!
//! Users' time limits are poor runtime estimates (most jobs end long before their limit), and
//! backfill plans with whatever length it is given: reservations that assume every running job
//! uses its whole limit start too late and leave holes. Tsafrir, Etsion and Feitelson (TPDS
//! 2007, "EASY++") showed that planning with *predicted* runtimes, while still killing jobs
//! only at their limit, makes backfill better: the user sees the same contract, the plan is
//! closer to what happens.
//!
//! This module is pure (no clock, no I/O, deterministic: `BTreeMap`s only) so that the trace
//! simulator and the controller use the same predictor. The caller feeds it finished jobs
//! with [`Predictor::observe`] and asks for a job's length with [`Predictor::predict`]; when a
//! running job outlives its prediction the caller asks [`Predictor::extend`] for a new one
//! (the job's planned end moves, its kill time does not).
//!
//! Kinds ([`PredictorKind`]):
//!
//! * `user` — the user's limit (what plain EASY plans with).
//! * `easy++` — Tsafrir's rule: the average of the same user's last two runtimes, capped at the
//!   limit; the limit while the user has no history.
//! * `recent` — the same average over the last two runs of the most specific history that
//!   exists: the same user, job name (executable) *and* size, else user and name, else user
//!   (easy++), else the limit. An unknown name is a value of its own, so traces without names
//!   still match on user and size. Jobs of one user with one name and size are usually
//!   repeats of the same work, so their runtimes are much closer to each other than to the
//!   user's other jobs. (Adding the limit to the key, or predicting with the last runtime
//!   or the larger of the last two, did worse on at least one of SDSC-SP2, CTC-SP2 and HPC2N
//!   in gssim: see `docs/results.md`.)
//!
//! Underprediction is corrected as Tsafrir's "incremental" scheme does: the prediction grows
//! by the next step of 1 min, 5 min, 15 min, 30 min, 1 h, 2 h, 5 h, 10 h, 20 h, 50 h, 100 h
//! beyond the time the job has run, never beyond its limit.

use std::collections::BTreeMap;

/// What the predictor knows of a job when it is asked about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobFeatures {
    pub user: u32,
    /// The job's name or executable, hashed or as a number (SWF field 14); `None` = unknown.
    pub name: Option<u64>,
    /// CPUs (or processors) requested.
    pub size: u32,
    /// The time limit in seconds (the user's estimate); `None` = unlimited.
    pub limit_secs: Option<i64>,
}

/// Which prediction rule to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PredictorKind {
    /// The user's limit.
    UserLimit,
    /// The average of the user's last two runtimes (Tsafrir's EASY++).
    EasyPlusPlus,
    /// The last two runtimes of the same user, name and size, falling back as described in
    /// the module documentation.
    Recent,
}

impl PredictorKind {
    pub const NAMES: &'static [&'static str] = &["user", "easy++", "recent"];

    /// The kind called `name` (one of [`PredictorKind::NAMES`]).
    pub fn from_name(name: &str) -> Option<PredictorKind> {
        match name {
            "user" => Some(PredictorKind::UserLimit),
            "easy++" => Some(PredictorKind::EasyPlusPlus),
            "recent" => Some(PredictorKind::Recent),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            PredictorKind::UserLimit => "user",
            PredictorKind::EasyPlusPlus => "easy++",
            PredictorKind::Recent => "recent",
        }
    }
}

/// The last two runtimes seen for one key.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct LastTwo {
    last: Option<i64>,
    before: Option<i64>,
}

impl LastTwo {
    fn push(&mut self, run: i64) {
        self.before = self.last;
        self.last = Some(run);
    }

    /// The average of the two (or the one) runtimes seen, rounded up.
    fn average(&self) -> Option<i64> {
        match (self.last, self.before) {
            (Some(a), Some(b)) => Some((a + b + 1) / 2),
            (Some(a), None) => Some(a),
            _ => None,
        }
    }
}

/// Steps of the incremental correction, seconds.
const STEPS: [i64; 11] = [
    60,
    5 * 60,
    15 * 60,
    30 * 60,
    3600,
    2 * 3600,
    5 * 3600,
    10 * 3600,
    20 * 3600,
    50 * 3600,
    100 * 3600,
];

/// A runtime predictor: history in, predicted lengths out.
#[derive(Debug, Clone)]
pub struct Predictor {
    kind: PredictorKind,
    by_user: BTreeMap<u32, LastTwo>,
    by_name: BTreeMap<(u32, Option<u64>), LastTwo>,
    by_size: BTreeMap<(u32, Option<u64>, u32), LastTwo>,
}

impl Predictor {
    pub fn new(kind: PredictorKind) -> Predictor {
        Predictor {
            kind,
            by_user: BTreeMap::new(),
            by_name: BTreeMap::new(),
            by_size: BTreeMap::new(),
        }
    }

    pub fn kind(&self) -> PredictorKind {
        self.kind
    }

    /// Records that a job with `f` ran for `runtime` seconds (killed jobs included: their
    /// runtime is their limit, which is what the next one may need too).
    pub fn observe(&mut self, f: &JobFeatures, runtime: i64) {
        let run = runtime.max(1);
        self.by_user.entry(f.user).or_default().push(run);
        self.by_name.entry((f.user, f.name)).or_default().push(run);
        self.by_size
            .entry((f.user, f.name, f.size))
            .or_default()
            .push(run);
    }

    /// The predicted runtime in seconds of a job with `f`, at least 1 and never above its
    /// limit; `None` when the job has no limit and no history to go by.
    pub fn predict(&self, f: &JobFeatures) -> Option<i64> {
        let history = match self.kind {
            PredictorKind::UserLimit => None,
            PredictorKind::EasyPlusPlus => self.by_user.get(&f.user).and_then(LastTwo::average),
            PredictorKind::Recent => self
                .by_size
                .get(&(f.user, f.name, f.size))
                .and_then(LastTwo::average)
                .or_else(|| {
                    self.by_name
                        .get(&(f.user, f.name))
                        .and_then(LastTwo::average)
                })
                .or_else(|| self.by_user.get(&f.user).and_then(LastTwo::average)),
        };
        match (history, f.limit_secs) {
            (Some(h), Some(l)) => Some(h.min(l).max(1)),
            (Some(h), None) => Some(h.max(1)),
            (None, l) => l.map(|l| l.max(1)),
        }
    }

    /// A new prediction for a job with `f` that has run `elapsed` seconds and outlived its
    /// prediction `corrections` times before: `elapsed` plus the `corrections`-th step (1 min,
    /// 5 min, 15 min, ...), capped at the limit, always beyond `elapsed`.
    pub fn extend(f: &JobFeatures, elapsed: i64, corrections: u32) -> i64 {
        let step = STEPS[(corrections as usize).min(STEPS.len() - 1)];
        let next = elapsed + step;
        match f.limit_secs {
            Some(l) => next.min(l.max(elapsed + 1)),
            None => next,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(user: u32, name: Option<u64>, size: u32, limit: Option<i64>) -> JobFeatures {
        JobFeatures {
            user,
            name,
            size,
            limit_secs: limit,
        }
    }

    #[test]
    fn easypp_averages_the_users_last_two_runs_capped_at_the_limit() {
        let mut p = Predictor::new(PredictorKind::EasyPlusPlus);
        let j = job(7, None, 4, Some(3600));
        assert_eq!(p.predict(&j), Some(3600), "no history: the limit");
        p.observe(&j, 100);
        assert_eq!(p.predict(&j), Some(100));
        p.observe(&j, 301);
        assert_eq!(p.predict(&j), Some(201));
        p.observe(&j, 5000);
        // Last two: 301 and 5000 → 2651.
        assert_eq!(p.predict(&j), Some(2651));
        p.observe(&j, 9000);
        assert_eq!(p.predict(&j), Some(3600), "capped at the limit");
        assert_eq!(
            p.predict(&job(8, None, 4, Some(50))),
            Some(50),
            "another user"
        );
        assert_eq!(p.predict(&job(8, None, 4, None)), None);
    }

    #[test]
    fn user_limit_ignores_history() {
        let mut p = Predictor::new(PredictorKind::UserLimit);
        let j = job(1, Some(3), 1, Some(600));
        p.observe(&j, 10);
        assert_eq!(p.predict(&j), Some(600));
    }

    #[test]
    fn recent_prefers_the_most_specific_history() {
        let mut p = Predictor::new(PredictorKind::Recent);
        p.observe(&job(1, Some(10), 8, Some(9000)), 1000);
        p.observe(&job(1, Some(10), 16, Some(9000)), 2000);
        p.observe(&job(1, Some(20), 8, Some(9000)), 50);
        // Same user, name and size.
        assert_eq!(p.predict(&job(1, Some(10), 8, Some(9000))), Some(1000));
        // Same user and name, new size: the name's last two.
        assert_eq!(p.predict(&job(1, Some(10), 32, Some(9000))), Some(1500));
        // New name: the user's last two (2000, 50).
        assert_eq!(p.predict(&job(1, Some(30), 8, Some(9000))), Some(1025));
        assert_eq!(p.predict(&job(1, None, 8, Some(9000))), Some(1025));
        assert_eq!(p.predict(&job(2, Some(10), 8, Some(9000))), Some(9000));
        // Capped at the limit.
        assert_eq!(p.predict(&job(1, Some(10), 8, Some(600))), Some(600));
        // Without names, sizes still tell jobs apart.
        p.observe(&job(5, None, 4, Some(3600)), 100);
        p.observe(&job(5, None, 64, Some(86400)), 50_000);
        assert_eq!(p.predict(&job(5, None, 4, Some(3600))), Some(100));
        assert_eq!(p.predict(&job(5, None, 64, Some(86400))), Some(50_000));
    }

    #[test]
    fn extension_grows_by_steps_and_stops_at_the_limit() {
        let j = job(1, None, 1, Some(4 * 3600));
        assert_eq!(Predictor::extend(&j, 600, 0), 660);
        assert_eq!(Predictor::extend(&j, 660, 1), 960);
        assert_eq!(Predictor::extend(&j, 960, 2), 1860);
        assert_eq!(Predictor::extend(&j, 14_000, 3), 4 * 3600);
        assert_eq!(Predictor::extend(&j, 100, 40), 4 * 3600);
        let unlimited = job(1, None, 1, None);
        assert_eq!(Predictor::extend(&unlimited, 10, 0), 70);
        assert_eq!(Predictor::extend(&unlimited, 10, 99), 10 + 100 * 3600);
        // Always beyond what has run.
        for e in [1, 59, 61, 7200, 14_399, 14_400, 20_000] {
            assert!(Predictor::extend(&j, e, 0) > e);
        }
    }
}
