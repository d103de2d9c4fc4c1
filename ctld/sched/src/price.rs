//! Time-of-use deferral: long jobs start when their expected energy cost is lowest.
//!
//! Electricity prices swing several-fold within a day. A job whose planned runtime (the
//! `bf_predict` prediction when there is one, else its time limit: [`QueuedJob::time_limit`]
//! already holds whichever the caller chose) exceeds [`DeferRules::long_secs`] is given the
//! start `s` in `[now, submit + max_deferral]` that minimises `∫ price(t) dt` over
//! `[s, s + runtime]` (its power is a constant factor, so it does not move the minimum); a job
//! under [`DeferRules::short_secs`] starts now; a job in between follows
//! [`DeferRules::medium_defer`]. A deferred job is treated like a job with `--begin` at its
//! chosen start, except that it waits with [`Reason::PriceWindow`] and, under the backfill
//! policies, always holds a *reservation* there, so short jobs backfill in front of it only
//! where they end in time and nothing pushes it later. The choice is made again in every pass
//! (nothing is remembered): a job that missed its window because the cluster was full moves
//! to the next cheap one, and once `submit + max_deferral` has passed it runs as soon as it can.
//!
//! The core knows no clock and no time zone: the caller turns its price calendar (windows,
//! day-ahead price file, learned low-load hours) into [`PriceInterval`]s over the horizon.
//! Opt-outs (`--urgent`, QOS `NoDefer`, a user's own `--begin`) and `--deadline` arrive per job
//! in [`PriceInput::jobs`].

use std::collections::{BTreeMap, BTreeSet};

use gsched_proto::job::{JobId, Reason};

use crate::{ClusterView, Decisions, QueuedJob, SchedConfig};

/// One stretch of constant price, `[start, end)` in epoch seconds; price per kWh (any
/// currency, as long as it is the same everywhere).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PriceInterval {
    pub start: i64,
    pub end: i64,
    pub price: f64,
}

/// Prices over time: sorted, non-overlapping intervals; time outside them costs
/// `default_price`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PriceSchedule {
    pub intervals: Vec<PriceInterval>,
    pub default_price: f64,
}

impl PriceSchedule {
    /// The price at time `t`.
    pub fn price_at(&self, t: i64) -> f64 {
        let i = self.intervals.partition_point(|iv| iv.end <= t);
        match self.intervals.get(i) {
            Some(iv) if iv.start <= t => iv.price,
            _ => self.default_price,
        }
    }

    /// `∫ price(t) dt` over `[a, b)`, in price × seconds.
    pub fn integral(&self, a: i64, b: i64) -> f64 {
        if b <= a {
            return 0.0;
        }
        let mut total = 0.0;
        let mut t = a;
        let mut i = self.intervals.partition_point(|iv| iv.end <= a);
        while t < b {
            match self.intervals.get(i) {
                Some(iv) if iv.start <= t => {
                    let e = iv.end.min(b);
                    total += iv.price * (e - t) as f64;
                    t = e;
                    i += 1;
                }
                Some(iv) => {
                    let e = iv.start.min(b);
                    total += self.default_price * (e - t) as f64;
                    t = e;
                }
                None => {
                    total += self.default_price * (b - t) as f64;
                    t = b;
                }
            }
        }
        total
    }

    /// The start in `[from, latest]` that minimises the cost of `[s, s + len)`, earliest on
    /// ties, with that cost. The cost is piecewise linear in `s` with kinks only where `s` or
    /// `s + len` meets an interval boundary, so those points (and the ends) are the only
    /// candidates.
    pub fn cheapest_start(&self, from: i64, latest: i64, len: i64) -> (i64, f64) {
        let latest = latest.max(from);
        let mut cands: Vec<i64> = vec![from, latest];
        // Only boundaries in [from, latest + len] can be candidates.
        let lo = self.intervals.partition_point(|iv| iv.end < from);
        let hi = self
            .intervals
            .partition_point(|iv| iv.start <= latest.saturating_add(len));
        for iv in &self.intervals[lo..hi.max(lo)] {
            for b in [iv.start, iv.end] {
                for s in [b, b - len] {
                    if s > from && s < latest {
                        cands.push(s);
                    }
                }
            }
        }
        cands.sort_unstable();
        cands.dedup();
        let mut best = (from, self.integral(from, from + len));
        for s in cands {
            let c = self.integral(s, s + len);
            // A relative tolerance: float sums of the same prices must not look cheaper.
            if c < best.1 - 1e-9 * best.1.abs().max(1.0) {
                best = (s, c);
            }
        }
        best
    }
}

/// Which jobs may be deferred, and how far.
#[derive(Debug, Clone, PartialEq)]
pub struct DeferRules {
    /// Jobs planned to run longer than this are deferred (`LongJobThreshold=`, default 2 h).
    pub long_secs: i64,
    /// Jobs planned to run at most this long start now (`ShortJobThreshold=`, default 30 min).
    pub short_secs: i64,
    /// Jobs in between are deferred like long ones (`MediumJobRule=defer`) or start now
    /// (`MediumJobRule=now`, the default).
    pub medium_defer: bool,
    /// No deferral past `submit + max_deferral_secs` (`MaxDeferral=`, default 1 day).
    pub max_deferral_secs: i64,
    /// Defer only when it saves at least this fraction of the cost of starting now
    /// (`MinDeferralSaving=`, default 0.05): a cheaper minute later is not worth the wait.
    pub min_saving: f64,
}

impl Default for DeferRules {
    fn default() -> Self {
        DeferRules {
            long_secs: 2 * 3600,
            short_secs: 30 * 60,
            medium_defer: false,
            max_deferral_secs: 24 * 3600,
            min_saving: 0.05,
        }
    }
}

/// Per-job facts the deferral needs beyond [`QueuedJob`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PriceJob {
    /// `--urgent`, a QOS with `NoDefer`, or a `--begin` the user gave: never deferred.
    pub opt_out: bool,
    /// `--deadline`, epoch seconds: the job must be planned to end by then.
    pub deadline: Option<i64>,
}

/// Everything [`decide_with_prices`] needs besides what [`crate::decide`] takes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PriceInput {
    pub schedule: PriceSchedule,
    pub rules: DeferRules,
    /// Jobs absent here may be deferred and have no deadline.
    pub jobs: BTreeMap<JobId, PriceJob>,
}

/// A job the policy defers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Deferral {
    pub job_id: JobId,
    /// The chosen start, epoch seconds.
    pub start: i64,
    /// Price per kWh now and at the chosen start.
    pub price_now: f64,
    pub price_then: f64,
    /// Mean price over the job's runtime if started now, and from the chosen start.
    pub mean_now: f64,
    pub mean_then: f64,
}

/// The seconds `job` is planned to run: its [`QueuedJob::time_limit`] (already the
/// prediction when the caller has one), else `default_limit_secs`.
pub fn planned_secs(job: &QueuedJob, config: &SchedConfig) -> i64 {
    job.time_limit
        .map_or(config.default_limit_secs, |m| m as i64 * 60)
        .max(1)
}

/// Whether and until when `job` is deferred at `now`; `None`: it may start now.
pub fn deferral(
    job: &QueuedJob,
    now: i64,
    config: &SchedConfig,
    input: &PriceInput,
) -> Option<Deferral> {
    let facts = input.jobs.get(&job.id).copied().unwrap_or_default();
    if facts.opt_out || job.het.is_some() || job.held.is_some() {
        return None;
    }
    if job.begin_time.is_some_and(|b| b > now) {
        // The user's --begin wins.
        return None;
    }
    let r = &input.rules;
    let len = planned_secs(job, config);
    let deferrable = len > r.long_secs || (len > r.short_secs && r.medium_defer);
    if !deferrable {
        return None;
    }
    let mut latest = job.submit_time.saturating_add(r.max_deferral_secs);
    if let Some(d) = facts.deadline {
        latest = latest.min(d.saturating_sub(len));
    }
    latest = latest.min(now.saturating_add(config.horizon_secs));
    if latest <= now {
        return None;
    }
    let sched = &input.schedule;
    let (start, cost) = sched.cheapest_start(now, latest, len);
    let cost_now = sched.integral(now, now + len);
    if start <= now || cost > cost_now - r.min_saving * cost_now.abs() {
        return None;
    }
    Some(Deferral {
        job_id: job.id,
        start,
        price_now: sched.price_at(now),
        price_then: sched.price_at(start),
        mean_now: cost_now / len as f64,
        mean_then: cost / len as f64,
    })
}

/// Every deferral of the queue at `now`, in queue order.
pub fn deferrals(
    queue: &[QueuedJob],
    now: i64,
    config: &SchedConfig,
    input: &PriceInput,
) -> Vec<Deferral> {
    queue
        .iter()
        .filter_map(|j| deferral(j, now, config, input))
        .collect()
}

/// [`crate::decide`] with time-of-use deferral: deferred jobs wait with
/// [`Reason::PriceWindow`] and (under backfill) hold a reservation from their chosen start;
/// the other jobs are decided exactly as [`crate::decide`] would.
pub fn decide_with_prices(
    view: &ClusterView,
    queue: &[QueuedJob],
    now: i64,
    config: &SchedConfig,
    input: &PriceInput,
) -> Decisions {
    let mut defs = deferrals(queue, now, config, input);
    if defs.is_empty() {
        return crate::decide(view, queue, now, config);
    }
    let out = decide_deferring(view, queue, now, config, &defs);
    // Capacity: a deferred job whose reservation the cluster pushed past its chosen start
    // may land in dear hours. Where its planned cost there saves too little against starting
    // now, it is not deferred after all (decided once more without it).
    let by_id: BTreeMap<JobId, &QueuedJob> = queue.iter().map(|j| (j.id, j)).collect();
    let sched = &input.schedule;
    let pushed: BTreeSet<JobId> = out
        .estimates
        .iter()
        .filter_map(|e| {
            let d = defs.iter().find(|d| d.job_id == e.job_id)?;
            if e.start <= d.start {
                return None;
            }
            let len = planned_secs(by_id.get(&e.job_id)?, config);
            let then = sched.integral(e.start, e.start + len);
            let now_cost = d.mean_now * len as f64;
            (then > now_cost - input.rules.min_saving * now_cost.abs()).then_some(e.job_id)
        })
        .collect();
    if pushed.is_empty() {
        return out;
    }
    defs.retain(|d| !pushed.contains(&d.job_id));
    if defs.is_empty() {
        return crate::decide(view, queue, now, config);
    }
    decide_deferring(view, queue, now, config, &defs)
}

/// One decision with `defs` applied: deferred jobs get their start as `begin_time`, hold a
/// reservation there, and wait with [`Reason::PriceWindow`].
fn decide_deferring(
    view: &ClusterView,
    queue: &[QueuedJob],
    now: i64,
    config: &SchedConfig,
    defs: &[Deferral],
) -> Decisions {
    let at: BTreeMap<JobId, i64> = defs.iter().map(|d| (d.job_id, d.start)).collect();
    let shifted: Vec<QueuedJob> = queue
        .iter()
        .map(|j| match at.get(&j.id) {
            Some(&s) => QueuedJob {
                begin_time: Some(s),
                ..j.clone()
            },
            None => j.clone(),
        })
        .collect();
    let deferred: BTreeSet<JobId> = at.keys().copied().collect();
    let mut out = crate::decide_inner(view, &shifted, now, config, &deferred);
    for (id, r) in &mut out.waiting {
        if *r == Reason::BeginTime && deferred.contains(id) {
            *r = Reason::PriceWindow;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EstimateKind, NodeView, PartitionView, Policy, ResourceRequest, SchedConfig};

    const H: i64 = 3600;
    // Monday 2026-11-30 00:00 UTC.
    const MON: i64 = 1_764_460_800;

    fn sched() -> PriceSchedule {
        // 0.30 by default; 01:00-06:00 at 0.10 every day for three days.
        PriceSchedule {
            intervals: (0..3)
                .map(|d| PriceInterval {
                    start: MON + d * 24 * H + H,
                    end: MON + d * 24 * H + 6 * H,
                    price: 0.10,
                })
                .collect(),
            default_price: 0.30,
        }
    }

    fn view() -> ClusterView {
        ClusterView {
            nodes: vec![NodeView {
                name: "n1".into(),
                cpus: 4,
                mem_mb: 1000,
                alloc_cpus: 0,
                alloc_mem_mb: 0,
                available: true,
                weight: 1,
                features: Vec::new(),
                penalty: 0,
                gpus: Vec::new(),
            }],
            partitions: vec![PartitionView {
                name: "p".into(),
                nodes: vec![0],
                up: true,
                inactive: false,
                max_time: None,
                gpu: crate::GpuRules::default(),
            }],
            running: Vec::new(),
            limits: Vec::new(),
            blackouts: Vec::new(),
        }
    }

    fn job(id: JobId, cpus: u32, minutes: u32, submit: i64) -> QueuedJob {
        QueuedJob {
            id,
            priority: 100 - id,
            submit_time: submit,
            partitions: vec![0],
            held: None,
            begin_time: None,
            time_limit: Some(minutes),
            time_min: None,
            req: ResourceRequest {
                tasks: 1,
                cpus_per_task: cpus,
                ..Default::default()
            },
            limits: Vec::new(),
            het: None,
        }
    }

    fn input() -> PriceInput {
        PriceInput {
            schedule: sched(),
            rules: DeferRules::default(),
            jobs: BTreeMap::new(),
        }
    }

    #[test]
    fn prices_and_integrals_respect_window_boundaries() {
        let s = sched();
        assert_eq!(s.price_at(MON + H - 1), 0.30);
        assert_eq!(s.price_at(MON + H), 0.10);
        assert_eq!(s.price_at(MON + 6 * H - 1), 0.10);
        assert_eq!(s.price_at(MON + 6 * H), 0.30);
        // Half an hour either side of 01:00.
        let c = s.integral(MON + H - 1800, MON + H + 1800);
        assert!((c - (0.30 * 1800.0 + 0.10 * 1800.0)).abs() < 1e-9);
        assert_eq!(s.integral(MON, MON), 0.0);
    }

    #[test]
    fn long_job_moves_to_the_window_short_job_does_not() {
        let cfg = SchedConfig::default();
        let now = MON + 20 * H; // Monday 20:00
        let long = job(1, 1, 4 * 60, now);
        let d = deferral(&long, now, &cfg, &input()).expect("deferred");
        // A 4 h job fits the 5 h window anywhere from 01:00 to 02:00: the earliest wins.
        assert_eq!(d.start, MON + 24 * H + H);
        assert_eq!(d.price_now, 0.30);
        assert_eq!(d.price_then, 0.10);
        let short = job(2, 1, 20, now);
        assert!(deferral(&short, now, &cfg, &input()).is_none());
        // Medium (1 h): now by default, deferred with medium_defer.
        let medium = job(3, 1, 60, now);
        assert!(deferral(&medium, now, &cfg, &input()).is_none());
        let mut inp = input();
        inp.rules.medium_defer = true;
        assert_eq!(
            deferral(&medium, now, &cfg, &inp).unwrap().start,
            MON + 24 * H + H
        );
    }

    #[test]
    fn job_inside_the_window_starts_now() {
        let cfg = SchedConfig::default();
        let now = MON + 24 * H + 2 * H; // Tuesday 02:00, inside 01-06
        assert!(deferral(&job(1, 1, 3 * 60, now), now, &cfg, &input()).is_none());
    }

    #[test]
    fn a_long_job_that_spills_out_starts_where_most_of_it_is_cheap() {
        // 8 h job: the best start puts the whole 5 h window inside its run; any start in
        // [01:00 - 3h, 01:00] costs the same, and the earliest of them wins.
        let cfg = SchedConfig::default();
        let now = MON + 12 * H;
        let d = deferral(&job(1, 1, 8 * 60, now), now, &cfg, &input()).unwrap();
        assert_eq!(d.start, MON + 24 * H - 2 * H);
        assert!(d.mean_then < d.mean_now);
    }

    #[test]
    fn no_window_within_max_deferral_means_now() {
        let cfg = SchedConfig::default();
        let now = MON + 7 * H; // Monday 07:00: next window Tuesday 01:00, 18 h away
        let mut inp = input();
        inp.rules.max_deferral_secs = 6 * H;
        assert!(deferral(&job(1, 1, 3 * 60, now), now, &cfg, &inp).is_none());
        // MaxDeferral counts from submission, not from now.
        inp.rules.max_deferral_secs = 24 * H;
        let submitted_long_ago = job(2, 1, 3 * 60, now - 10 * H);
        assert!(deferral(&submitted_long_ago, now, &cfg, &inp).is_none());
        let fresh = job(3, 1, 3 * 60, now);
        assert_eq!(
            deferral(&fresh, now, &cfg, &inp).unwrap().start,
            MON + 25 * H
        );
    }

    #[test]
    fn opt_outs_deadline_and_begin() {
        let cfg = SchedConfig::default();
        let now = MON + 20 * H;
        let mut inp = input();
        inp.jobs.insert(
            1,
            PriceJob {
                opt_out: true,
                deadline: None,
            },
        );
        assert!(deferral(&job(1, 1, 3 * 60, now), now, &cfg, &inp).is_none());
        // A deadline before the window's end: only starts ending by 02:00 Tuesday count.
        inp.jobs.insert(
            2,
            PriceJob {
                opt_out: false,
                deadline: Some(MON + 26 * H),
            },
        );
        let d = deferral(&job(2, 1, 3 * 60, now), now, &cfg, &inp).unwrap();
        assert_eq!(d.start, MON + 23 * H);
        // A --begin later than now is the user's choice.
        let mut b = job(3, 1, 3 * 60, now);
        b.begin_time = Some(now + 60);
        assert!(deferral(&b, now, &cfg, &inp).is_none());
    }

    #[test]
    fn negative_prices_and_file_gaps() {
        // Hourly file prices with a gap at 02:00 (default price there).
        let s = PriceSchedule {
            intervals: vec![
                PriceInterval {
                    start: MON,
                    end: MON + H,
                    price: 0.5,
                },
                PriceInterval {
                    start: MON + H,
                    end: MON + 2 * H,
                    price: -0.1,
                },
                PriceInterval {
                    start: MON + 3 * H,
                    end: MON + 4 * H,
                    price: 0.2,
                },
            ],
            default_price: 0.3,
        };
        assert_eq!(s.price_at(MON + 2 * H + 5), 0.3);
        let (start, cost) = s.cheapest_start(MON, MON + 3 * H, H);
        assert_eq!(start, MON + H);
        assert!((cost - (-0.1 * 3600.0)).abs() < 1e-9);
    }

    #[test]
    fn deferred_job_waits_with_price_window_and_holds_a_reservation() {
        let now = MON + 20 * H;
        let q = vec![
            job(1, 4, 4 * 60, now),
            job(2, 4, 20, now + 1),
            job(3, 4, 6 * 60, now + 2),
        ];
        for policy in [Policy::Fifo, Policy::EASY, Policy::Conservative] {
            let cfg = SchedConfig {
                policy,
                ..SchedConfig::default()
            };
            let d = decide_with_prices(&view(), &q, now, &cfg, &input());
            assert_eq!(d.starts.len(), 1, "{policy:?}");
            assert_eq!(d.starts[0].job_id, 2);
            assert!(
                d.waiting.contains(&(1, Reason::PriceWindow)),
                "{policy:?}: {d:?}"
            );
            let e1 = d.estimates.iter().find(|e| e.job_id == 1).unwrap();
            assert_eq!(e1.start, MON + 25 * H, "{policy:?}");
            if policy != Policy::Fifo {
                assert_eq!(e1.kind, EstimateKind::Reserved, "{policy:?}");
                // Job 3 also wants the window but job 1 holds the node: it goes after.
                let e3 = d.estimates.iter().find(|e| e.job_id == 3).unwrap();
                assert!(e3.start >= MON + 29 * H, "{policy:?}: {e3:?}");
            }
        }
        // Without prices the same queue starts job 1 at once.
        let d = crate::decide(&view(), &q, now, &SchedConfig::default());
        assert_eq!(d.starts[0].job_id, 1);
    }

    #[test]
    fn the_plan_is_remade_every_pass() {
        // At the window's start the deferred job starts.
        let cfg = SchedConfig::default();
        let submit = MON + 20 * H;
        let q = vec![job(1, 4, 4 * 60, submit)];
        let at = MON + 25 * H;
        let d = decide_with_prices(&view(), &q, at, &cfg, &input());
        assert_eq!(d.starts.len(), 1);
        // Cluster full at the window: the job moves on to the next night's window.
        let mut v = view();
        v.nodes[0].alloc_cpus = 4;
        v.running.push(crate::RunningAlloc {
            job_id: 9,
            end: at + 6 * H,
            nodes: vec![crate::NodeAlloc {
                node: 0,
                cpus: 4,
                mem_mb: 0,
                tasks: 1,
                gpus: Vec::new(),
            }],
        });
        let later = at + 6 * H; // Tuesday 07:00
        let d = decide_with_prices(&v, &q, later, &cfg, &input());
        // Deferral ends at submit + 24h = Tuesday 20:00, before Wednesday's window: so now.
        assert!(d.waiting.contains(&(1, Reason::Resources)), "{d:?}");
    }

    #[test]
    fn a_deferral_the_cluster_would_push_into_dear_hours_is_dropped() {
        // A 3-hour window at 0.1 from Tuesday 00:00; two 3-hour jobs that each need the whole
        // node. The first takes the window; the second would be pushed to 03:00, where it
        // costs as much as now, so it starts now (and ends before the first's reservation).
        let now = MON + 20 * H;
        let inp = PriceInput {
            schedule: PriceSchedule {
                intervals: vec![PriceInterval {
                    start: MON + 24 * H,
                    end: MON + 27 * H,
                    price: 0.1,
                }],
                default_price: 0.3,
            },
            ..input()
        };
        let q = vec![job(1, 4, 180, now), job(2, 4, 180, now + 1)];
        let cfg = SchedConfig {
            policy: Policy::EASY,
            ..SchedConfig::default()
        };
        let d = decide_with_prices(&view(), &q, now, &cfg, &inp);
        assert!(d.waiting.contains(&(1, Reason::PriceWindow)), "{d:?}");
        assert_eq!(d.estimates[0].start, MON + 24 * H);
        assert_eq!(d.starts.len(), 1, "{d:?}");
        assert_eq!(d.starts[0].job_id, 2);
    }
}
