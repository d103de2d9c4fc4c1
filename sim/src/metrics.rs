//! The figures of a replay, defined as in `literature.md` §0 so that they compare with
//! published ones:
//!
//! * wait = start − submit; average and p50/p95/p99 (nearest rank);
//! * bounded slowdown = max(1, (wait + run) / max(run, τ)) with τ = 10 s, averaged over jobs;
//! * utilization = Σ CPUs × run / ((last end − first submit) × CPUs of the partition);
//! * makespan = last end − first submit; jobs per hour = jobs / makespan in hours;
//! * prediction accuracy, of the lengths jobs were first planned with (the limit, or the
//!   prediction) against the runtime they had: median absolute error, fraction
//!   under-predicted, and mean accuracy min(p, r) / max(p, r) (Tsafrir's measure).
//!
//! Floats are rounded to fixed decimals so that the output is byte-stable and readable.

use serde::Serialize;

use crate::engine::{JobOutcome, Outcome};

/// τ of the bounded slowdown, seconds.
pub const BSLD_TAU: i64 = 10;

/// How well planning lengths matched runtimes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Accuracy {
    /// What the lengths were: `user` (the limits) or a predictor's name.
    pub predictor: String,
    pub median_abs_error_s: f64,
    pub underpredicted: f64,
    pub mean_accuracy: f64,
}

/// The figures of one policy on one trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Metrics {
    pub policy: String,
    pub jobs: u64,
    pub avg_wait_s: f64,
    pub p50_wait_s: i64,
    pub p95_wait_s: i64,
    pub p99_wait_s: i64,
    pub avg_bsld: f64,
    pub utilization: f64,
    pub makespan_s: i64,
    pub jobs_per_hour: f64,
    /// Jobs killed at their limit.
    pub killed: u64,
    /// Jobs refused at submission (too big, limit above MaxTime).
    pub rejected: u64,
    pub never_started: u64,
    /// Scheduling passes run.
    pub passes: u64,
    pub accuracy: Accuracy,
    /// With `--prices`: estimated energy cost of every job (price × kWh).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub energy_cost: Option<f64>,
    /// With `--prices`: the same, of the jobs whose limit exceeds LongJobThreshold.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deferrable_energy_cost: Option<f64>,
    /// With `--prices`: average wait of jobs with a limit up to ShortJobThreshold.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub short_avg_wait_s: Option<f64>,
    /// With `--prices`: average wait of the deferrable jobs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub long_avg_wait_s: Option<f64>,
}

/// Adds the cost figures of `--prices` to `m`.
pub fn add_prices(m: &mut Metrics, o: &Outcome, p: &crate::prices::SimPrices) {
    let f = p.figures(&o.jobs);
    m.energy_cost = Some(round(f.energy_cost, 2));
    m.deferrable_energy_cost = Some(round(f.deferrable_energy_cost, 2));
    m.short_avg_wait_s = Some(round(f.short_avg_wait_s, 2));
    m.long_avg_wait_s = Some(round(f.long_avg_wait_s, 2));
}

fn round(x: f64, decimals: i32) -> f64 {
    let f = 10f64.powi(decimals);
    (x * f).round() / f
}

/// The nearest-rank percentile `p` (0-100] of sorted values; 0 when empty.
pub fn percentile(sorted: &[i64], p: f64) -> i64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Bounded slowdown of one job.
pub fn bsld(j: &JobOutcome) -> f64 {
    let run = j.run();
    ((j.wait() + run) as f64 / run.max(BSLD_TAU) as f64).max(1.0)
}

/// The accuracy of the planning lengths in `jobs`.
pub fn accuracy(jobs: &[JobOutcome], predictor: &str) -> Accuracy {
    let mut errs: Vec<i64> = Vec::new();
    let mut under = 0u64;
    let mut acc = 0f64;
    for j in jobs {
        let Some(p) = j.planned else { continue };
        let r = j.run().max(1);
        errs.push((p - r).abs());
        if p < r {
            under += 1;
        }
        acc += p.min(r) as f64 / p.max(r).max(1) as f64;
    }
    errs.sort_unstable();
    let n = errs.len().max(1) as f64;
    let median = match errs.len() {
        0 => 0.0,
        l if l % 2 == 1 => errs[l / 2] as f64,
        l => (errs[l / 2 - 1] + errs[l / 2]) as f64 / 2.0,
    };
    Accuracy {
        predictor: predictor.to_string(),
        median_abs_error_s: round(median, 1),
        underpredicted: round(under as f64 / n, 4),
        mean_accuracy: round(acc / n, 4),
    }
}

/// The figures of `o` on a partition of `cpus` CPUs.
pub fn compute(policy: &str, predictor: &str, o: &Outcome, cpus: u64) -> Metrics {
    let jobs = &o.jobs;
    let n = jobs.len();
    let mut waits: Vec<i64> = jobs.iter().map(JobOutcome::wait).collect();
    waits.sort_unstable();
    let first = jobs.iter().map(|j| j.submit).min().unwrap_or(0);
    let last = jobs.iter().map(|j| j.end).max().unwrap_or(0);
    let makespan = (last - first).max(0);
    let work: f64 = jobs.iter().map(|j| j.cpus as f64 * j.run() as f64).sum();
    let nf = n.max(1) as f64;
    Metrics {
        policy: policy.to_string(),
        jobs: n as u64,
        avg_wait_s: round(waits.iter().map(|&w| w as f64).sum::<f64>() / nf, 2),
        p50_wait_s: percentile(&waits, 50.0),
        p95_wait_s: percentile(&waits, 95.0),
        p99_wait_s: percentile(&waits, 99.0),
        avg_bsld: round(jobs.iter().map(bsld).sum::<f64>() / nf, 2),
        utilization: if makespan > 0 && cpus > 0 {
            round(work / (makespan as f64 * cpus as f64), 4)
        } else {
            0.0
        },
        makespan_s: makespan,
        jobs_per_hour: if makespan > 0 {
            round(n as f64 * 3600.0 / makespan as f64, 2)
        } else {
            0.0
        },
        killed: jobs.iter().filter(|j| j.killed).count() as u64,
        rejected: o.rejected.values().sum(),
        never_started: o.never_started,
        passes: o.passes,
        accuracy: accuracy(jobs, predictor),
        energy_cost: None,
        deferrable_energy_cost: None,
        short_avg_wait_s: None,
        long_avg_wait_s: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn j(submit: i64, start: i64, end: i64, cpus: u64, planned: i64) -> JobOutcome {
        JobOutcome {
            submit,
            start,
            end,
            cpus,
            trace_run: end - start,
            limit: Some(planned),
            planned: Some(planned),
            killed: false,
        }
    }

    #[test]
    fn percentiles_by_nearest_rank() {
        let v: Vec<i64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50.0), 50);
        assert_eq!(percentile(&v, 95.0), 95);
        assert_eq!(percentile(&v, 99.0), 99);
        assert_eq!(percentile(&[7], 99.0), 7);
        assert_eq!(percentile(&[], 50.0), 0);
        assert_eq!(percentile(&[1, 2, 3], 50.0), 2);
    }

    /// Hand-computed: 4 CPUs; job a waits 0 and runs 100 s on 2 CPUs; b waits 100 s and runs
    /// 5 s on 4 CPUs (bsld (100+5)/10 = 10.5); c waits 20 s and runs 40 s on 2 CPUs (bsld 1.5).
    #[test]
    fn hand_computed_case() {
        let o = Outcome {
            jobs: vec![
                j(0, 0, 100, 2, 100),
                j(0, 100, 105, 4, 50),
                j(10, 30, 70, 2, 20),
            ],
            ..Outcome::default()
        };
        let m = compute("easy", "user", &o, 4);
        assert_eq!(m.jobs, 3);
        assert_eq!(m.avg_wait_s, 40.0);
        assert_eq!((m.p50_wait_s, m.p95_wait_s), (20, 100));
        assert_eq!(m.avg_bsld, round((1.0 + 10.5 + 1.5) / 3.0, 2));
        assert_eq!(m.makespan_s, 105);
        // Work: 200 + 20 + 80 = 300 CPU-s over 105 s x 4 CPUs.
        assert_eq!(m.utilization, round(300.0 / 420.0, 4));
        assert_eq!(m.jobs_per_hour, round(3.0 * 3600.0 / 105.0, 2));
        // Planned 100/50/20 against runs 100/5/40: errors 0, 45, 20; one under-predicted.
        assert_eq!(m.accuracy.median_abs_error_s, 20.0);
        assert_eq!(m.accuracy.underpredicted, round(1.0 / 3.0, 4));
        assert_eq!(m.accuracy.mean_accuracy, round((1.0 + 0.1 + 0.5) / 3.0, 4));
    }

    #[test]
    fn short_jobs_are_bounded_by_tau() {
        // 1 s of run after 9 s of wait: (9 + 1) / 10 = 1, not 10.
        assert_eq!(bsld(&j(0, 9, 10, 1, 1)), 1.0);
        assert_eq!(bsld(&j(0, 0, 1, 1, 1)), 1.0);
        assert_eq!(bsld(&j(0, 90, 100, 1, 10)), 10.0);
    }
}
