//! The backfill policies, in priority order over the queue: which jobs start now, which get
//! a reservation, and when the others are expected to start. The [`Planner`] answers the
//! questions about time and nodes; this module decides what to ask and what to hold.

use gsched_proto::job::Reason;

use crate::het::{self, Gangs};
use crate::plan::{Found, Planner};
use crate::{
    ClusterView, Decisions, Estimate, EstimateKind, LimitsLeft, Policy, QueuedJob, SchedConfig,
    Start,
};

/// Why a job cannot run in a partition at all, or `None` if it may.
pub(crate) fn partition_bar(
    job: &QueuedJob,
    view: &ClusterView,
    p: usize,
) -> Option<Option<Reason>> {
    let part = view.partitions.get(p)?;
    if !part.up {
        return Some(Some(if part.inactive {
            Reason::PartitionInactive
        } else {
            Reason::PartitionDown
        }));
    }
    match (part.max_time, job.time_limit) {
        (Some(max), Some(limit)) if limit > max => Some(Some(Reason::PartitionTimeLimit)),
        (Some(_), None) => Some(Some(Reason::PartitionTimeLimit)),
        _ => Some(None),
    }
}

/// Jobs in the order they are considered: priority, then submit time, then id.
pub(crate) fn priority_order(queue: &[QueuedJob]) -> Vec<&QueuedJob> {
    let mut order: Vec<&QueuedJob> = queue.iter().collect();
    // Ids are unique, so this order is total and an unstable sort is deterministic.
    order.sort_unstable_by(|a, b| {
        b.priority
            .cmp(&a.priority)
            .then(a.submit_time.cmp(&b.submit_time))
            .then(a.id.cmp(&b.id))
    });
    order
}

/// EASY and conservative backfill (see [`Policy`]).
///
/// Pass 1 decides, in priority order: a job that fits now without touching a reservation
/// starts; one that cannot gets its reason and, under conservative or for EASY's first
/// `reserve` eligible waiting jobs, a reservation at its earliest start. Pass 2 (EASY) gives the
/// other waiting jobs their estimates on the timeline pass 1 left, with every start and
/// reservation known, so a job backfilled in pass 1 cannot make an estimate wrong.
pub(crate) fn decide_backfill(
    view: &ClusterView,
    queue: &[QueuedJob],
    now: i64,
    config: &SchedConfig,
    deferred: &std::collections::BTreeSet<gsched_proto::job::JobId>,
) -> Decisions {
    let reserve = match config.policy {
        Policy::Easy { reserve } => reserve,
        Policy::Conservative => usize::MAX,
        Policy::Fifo => 0,
    };
    let mut pl = Planner::new(view, queue, now, config);
    let mut blocked = vec![false; view.partitions.len()];
    let mut reserved = 0usize;
    let mut out = Decisions::default();
    // Jobs left for pass 2, with their place in priority order; estimates by that place.
    let mut later: Vec<(usize, &QueuedJob)> = Vec::new();
    let order = priority_order(queue);
    let gangs = Gangs::new(queue);
    let mut gang_seen: std::collections::BTreeSet<u32> = Default::default();
    let mut estimates: Vec<Option<Estimate>> = vec![None; order.len()];
    let mut left = LimitsLeft::new(view);
    // Het jobs' estimates (one per component), by the place of their first component.
    let mut gang_estimates: std::collections::BTreeMap<usize, Vec<Estimate>> = Default::default();
    for (at, &job) in order.iter().enumerate() {
        if let Some(h) = job.het {
            // The whole het job, at its first component in priority order.
            if !gang_seen.insert(h.leader) {
                continue;
            }
            let members = gangs.members(h.leader);
            let r = match het::start_now(&pl, view, members, now, config, &[]) {
                Ok(starts) => {
                    for (start, len) in starts {
                        pl.commit(&start.placement, now, len, 0);
                        out.starts.push(start);
                    }
                    continue;
                }
                Err(r) => r,
            };
            let parts = || members.iter().flat_map(|m| m.partitions.iter().copied());
            let r = match r {
                Reason::Resources if parts().any(|p| blocked.get(p) == Some(&true)) => {
                    Reason::Priority
                }
                r => r,
            };
            if r == Reason::Resources {
                for p in parts() {
                    if let Some(b) = blocked.get_mut(p) {
                        *b = true;
                    }
                }
            }
            for m in members {
                out.waiting.push((m.id, r));
            }
            if members.iter().any(|m| m.held.is_some()) {
                continue;
            }
            let hold = match config.policy {
                Policy::Conservative => true,
                _ => r != Reason::BeginTime && reserved < reserve,
            };
            if !hold {
                later.push((at, job));
                continue;
            }
            if let Some(es) = het::earliest(
                &mut pl,
                view,
                members,
                now,
                config,
                &|_| now,
                EstimateKind::Reserved,
            ) {
                reserved += 1;
                gang_estimates.insert(at, es);
            }
            continue;
        }
        if let Some(r) = job.held {
            out.waiting.push((job.id, r));
            continue;
        }
        let begin = job.begin_time.filter(|&b| b > now);
        if begin.is_none() {
            if let Some(r) = left.blocks(job, view) {
                // Waiting for a limit, not for resources: no reservation, no estimate.
                out.waiting.push((job.id, r));
                continue;
            }
        }
        let mut bars: Vec<(usize, Option<Reason>)> = Vec::new();
        let mut started = false;
        let mut limited = None;
        for &p in &job.partitions {
            let Some(bar) = partition_bar(job, view, p) else {
                continue;
            };
            bars.push((p, bar));
            if bar.is_some() || begin.is_some() {
                continue;
            }
            let len = Planner::planning_len(job, view, p, config);
            if let Some(placement) = pl.start_now(p, &job.req, len) {
                if let Some(r) = left.refuses(job, &placement, view) {
                    limited = Some(r);
                    break;
                }
                left.take(job, &placement, view);
                pl.commit(&placement, now, len, job.req.gpu_user());
                out.starts.push(Start {
                    job_id: job.id,
                    partition: p,
                    placement,
                    time_limit: None,
                });
                started = true;
                break;
            }
        }
        if !started && begin.is_none() && limited.is_none() {
            if let Some(start) = start_shortened(&mut pl, job, view, &bars, config) {
                if let Some(r) = left.refuses(job, &start.placement, view) {
                    limited = Some(r);
                } else {
                    left.take(job, &start.placement, view);
                    let len = start.time_limit.map_or(1, |m| m as i64 * 60);
                    pl.commit(&start.placement, now, len, job.req.gpu_user());
                    out.starts.push(start);
                    started = true;
                }
            }
        }
        if started {
            continue;
        }
        if let Some(r) = limited {
            // It fits but its limit cannot take what it would get: no reservation.
            out.waiting.push((job.id, r));
            continue;
        }
        let reason = if begin.is_some() {
            Reason::BeginTime
        } else {
            let r = waiting_reason(&bars, &blocked);
            if r == Reason::Resources {
                for &p in &job.partitions {
                    if let Some(b) = blocked.get_mut(p) {
                        *b = true;
                    }
                }
            }
            r
        };
        out.waiting.push((job.id, reason));
        let hold = match config.policy {
            Policy::Conservative => true,
            // A job deferred to a price window holds its start (price.rs).
            _ if deferred.contains(&job.id) => true,
            _ => begin.is_none() && reserved < reserve,
        };
        if !hold {
            later.push((at, job));
            continue;
        }
        if let Some(e) = estimate(
            &mut pl,
            job,
            view,
            now,
            config,
            None,
            EstimateKind::Reserved,
        ) {
            if !deferred.contains(&job.id) {
                reserved += 1;
            }
            estimates[at] = Some(e);
        }
    }
    for (k, (at, job)) in later.into_iter().enumerate() {
        let kind = if k < config.plan_depth {
            EstimateKind::Planned
        } else {
            EstimateKind::NotBefore
        };
        match job.het {
            Some(h) => {
                let members = gangs.members(h.leader);
                if let Some(es) = het::earliest(&mut pl, view, members, now, config, &|_| now, kind)
                {
                    gang_estimates.insert(at, es);
                }
            }
            None => estimates[at] = estimate(&mut pl, job, view, now, config, None, kind),
        }
    }
    // In priority order, like the rest.
    if gang_estimates.is_empty() {
        out.estimates = estimates.into_iter().flatten().collect();
    } else {
        for (at, e) in estimates.into_iter().enumerate() {
            match gang_estimates.remove(&at) {
                Some(es) => out.estimates.extend(es),
                None => out.estimates.extend(e),
            }
        }
    }
    out
}

/// `--time-min`: a start now for `job` with its time limit lowered as little as possible, to
/// no less than [`QueuedJob::time_min`], where its full limit would touch a reservation or a
/// running job's resources before they come back; in the first of its open partitions (`bars`)
/// where one exists. Whole minutes, like every limit; the longest that fits is found by
/// bisection, a shorter hold never conflicting where a longer one does not.
fn start_shortened(
    pl: &mut Planner,
    job: &QueuedJob,
    view: &ClusterView,
    bars: &[(usize, Option<Reason>)],
    config: &SchedConfig,
) -> Option<Start> {
    let min = job.time_min?.max(1);
    for &(p, bar) in bars {
        if bar.is_some() {
            continue;
        }
        let full = Planner::planning_len(job, view, p, config) / 60;
        let full = u32::try_from(full).unwrap_or(u32::MAX);
        if min >= full {
            continue;
        }
        let Some(mut placement) = pl.start_now(p, &job.req, min as i64 * 60) else {
            continue;
        };
        // Invariant: `lo` fits (with `placement`), `hi` does not.
        let (mut lo, mut hi) = (min, full);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            match pl.start_now(p, &job.req, mid as i64 * 60) {
                Some(pm) => {
                    lo = mid;
                    placement = pm;
                }
                None => hi = mid,
            }
        }
        return Some(Start {
            job_id: job.id,
            partition: p,
            placement,
            time_limit: Some(lo),
        });
    }
    None
}

/// `job`'s earliest start (not before `floor[p]` in partition `p`, when given) in any of its
/// partitions; unless it is only a [`EstimateKind::NotBefore`] bound, its resources are held
/// from then on for the jobs after it.
fn estimate(
    pl: &mut Planner,
    job: &QueuedJob,
    view: &ClusterView,
    now: i64,
    config: &SchedConfig,
    floor: Option<&[i64]>,
    kind: EstimateKind,
) -> Option<Estimate> {
    let begin = job.begin_time.filter(|&b| b > now);
    let mut best: Option<(usize, Found, i64)> = None;
    for &p in &job.partitions {
        if partition_bar(job, view, p) != Some(None) {
            continue;
        }
        let from = floor.map_or(now, |f| f[p]).max(begin.unwrap_or(now));
        if from == i64::MAX {
            continue;
        }
        let len = Planner::planning_len(job, view, p, config);
        if let Some(f) = pl.earliest(p, &job.req, len, from, begin.is_some()) {
            if best.as_ref().is_none_or(|b| f.start < b.1.start) {
                best = Some((p, f, len));
            }
        }
    }
    let (p, f, len) = best?;
    if kind != EstimateKind::NotBefore {
        pl.commit(&f.placement, f.start, len, job.req.gpu_user());
    }
    Some(Estimate {
        job_id: job.id,
        start: f.start,
        partition: p,
        placement: f.placement,
        kind,
    })
}

/// Slurm's pending reason for a job that does not start, from its partitions' bars (in the
/// user's order) and which partitions already have a job waiting for resources: the first
/// such job of a partition waits for `Resources`, the ones after it for `Priority`.
pub(crate) fn waiting_reason(bars: &[(usize, Option<Reason>)], blocked: &[bool]) -> Reason {
    let mut reason: Option<Reason> = None;
    for &(p, bar) in bars {
        match bar {
            Some(r) => {
                reason.get_or_insert(r);
            }
            None if blocked[p] => {
                reason.get_or_insert(Reason::Priority);
            }
            None => {
                reason = Some(match reason {
                    Some(Reason::Priority) | None => Reason::Resources,
                    Some(r) => r,
                });
            }
        }
    }
    reason.unwrap_or(Reason::Resources)
}

/// Whether a job waits for a counted limit ([`crate::LimitSlot`]) rather than resources.
fn is_limit(r: Reason) -> bool {
    matches!(
        r,
        Reason::QOSMaxJobsPerUserLimit
            | Reason::AssocMaxJobsLimit
            | Reason::QOSMaxCpuPerUserLimit
            | Reason::QOSMaxWallDurationPerJobLimit
            | Reason::AssocMaxWallDurationPerJobLimit
            | Reason::Licenses
    )
}

/// Start estimates for the jobs FIFO leaves waiting: each is planned, in priority order, at
/// its earliest start no earlier than that of any job before it that waits in one of its
/// partitions (FIFO never starts a job before the one blocking it), and its resources are held
/// for the jobs after it; beyond [`SchedConfig::plan_depth`] jobs, the same bound without
/// holding anything ([`EstimateKind::NotBefore`]).
pub(crate) fn fifo_estimates(
    pl: &mut Planner,
    view: &ClusterView,
    order: &[&QueuedJob],
    reasons: &[Option<Reason>],
    gangs: &Gangs,
    now: i64,
    config: &SchedConfig,
) -> Vec<Estimate> {
    let mut floor = vec![now; view.partitions.len()];
    let mut out = Vec::new();
    let mut considered = 0usize;
    let mut gang_seen: std::collections::BTreeSet<u32> = Default::default();
    for (&job, &reason) in order.iter().zip(reasons) {
        let Some(reason) = reason else {
            continue;
        };
        if job.held.is_some() || is_limit(reason) {
            continue;
        }
        considered += 1;
        let kind = if considered <= config.plan_depth {
            EstimateKind::Planned
        } else {
            EstimateKind::NotBefore
        };
        if let Some(h) = job.het {
            // The whole het job once, at its first component.
            if !gang_seen.insert(h.leader) {
                continue;
            }
            let members = gangs.members(h.leader);
            let es = het::earliest(pl, view, members, now, config, &|p| floor[p], kind);
            if matches!(reason, Reason::Resources | Reason::Priority) {
                let at = es
                    .as_ref()
                    .and_then(|e| e.first())
                    .map_or(i64::MAX, |e| e.start);
                for p in members.iter().flat_map(|m| m.partitions.iter()) {
                    if let Some(f) = floor.get_mut(*p) {
                        *f = (*f).max(at);
                    }
                }
            }
            out.extend(es.into_iter().flatten());
            continue;
        }
        let e = estimate(pl, job, view, now, config, Some(&floor), kind);
        if matches!(reason, Reason::Resources | Reason::Priority) {
            let at = e.as_ref().map_or(i64::MAX, |e| e.start);
            for &p in &job.partitions {
                if let Some(f) = floor.get_mut(p) {
                    *f = (*f).max(at);
                }
            }
        }
        out.extend(e);
    }
    out
}
