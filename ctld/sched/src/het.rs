//! Heterogeneous jobs: components that start together or not at all (gang placement across
//! partitions), as Slurm's backfill does for het jobs.
//!
//! Each component is an ordinary [`QueuedJob`] with its own partitions and request, marked
//! with a [`HetMember`]. A pass meets the het job at its first component in priority order
//! and decides for all of them there: every component must be placed at the same time,
//! each in the first of its partitions where it fits, on top of what the components before
//! it took; otherwise none starts and all wait with the same reason. Planned starts
//! (reservations, estimates) look for the earliest time at which every component fits at
//! once, trying the times at which the use of a node of their partitions changes. A het job
//! whose components are not all in the queue never starts (the controller queues all or
//! none).

use std::collections::BTreeMap;

use gsched_proto::job::{JobId, Reason};

use crate::backfill::{partition_bar, waiting_reason};
use crate::plan::Planner;
use crate::{ClusterView, Estimate, EstimateKind, QueuedJob, SchedConfig, Start};

/// Where a queued job sits in its heterogeneous job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HetMember {
    /// The het job's id (its first component's).
    pub leader: JobId,
    /// 0 for the first component.
    pub offset: u32,
    /// How many components the het job has.
    pub count: u32,
}

/// The het jobs of a queue: their components, by het job id, in offset order.
#[derive(Debug, Default)]
pub(crate) struct Gangs<'q> {
    by_leader: BTreeMap<JobId, Vec<&'q QueuedJob>>,
}

impl<'q> Gangs<'q> {
    pub(crate) fn new(queue: &'q [QueuedJob]) -> Self {
        let mut by_leader: BTreeMap<JobId, Vec<&'q QueuedJob>> = BTreeMap::new();
        for j in queue {
            if let Some(h) = j.het {
                by_leader.entry(h.leader).or_default().push(j);
            }
        }
        for v in by_leader.values_mut() {
            v.sort_by_key(|j| (j.het.map_or(0, |h| h.offset), j.id));
        }
        Gangs { by_leader }
    }

    /// The components of the het job `leader` that are queued, in offset order.
    pub(crate) fn members(&self, leader: JobId) -> &[&'q QueuedJob] {
        self.by_leader.get(&leader).map_or(&[], Vec::as_slice)
    }
}

/// Whether `members` are the whole het job: offsets `0..count`, each once.
fn complete(members: &[&QueuedJob]) -> bool {
    let Some(count) = members.first().and_then(|j| j.het).map(|h| h.count) else {
        return false;
    };
    members.len() == count as usize
        && members.iter().enumerate().all(|(k, j)| {
            j.het
                .is_some_and(|h| h.offset == k as u32 && h.count == count)
        })
}

/// A component's start, with the seconds its resources are held for.
pub(crate) type GangStart = (Start, i64);

/// Starts every component of a het job now, or says why none starts. `blocked` (FIFO)
/// marks partitions where a job of higher priority waits: no component starts there.
pub(crate) fn start_now(
    pl: &Planner,
    view: &ClusterView,
    members: &[&QueuedJob],
    now: i64,
    config: &SchedConfig,
    blocked: &[bool],
) -> Result<Vec<GangStart>, Reason> {
    if !complete(members) {
        // Not expected from the controller; waits without blocking anyone.
        return Err(Reason::None);
    }
    if let Some(r) = members.iter().find_map(|j| j.held) {
        return Err(r);
    }
    if members
        .iter()
        .any(|j| j.begin_time.is_some_and(|b| b > now))
    {
        return Err(Reason::BeginTime);
    }
    let unblocked;
    let blocked = if blocked.len() < view.partitions.len() {
        unblocked = vec![false; view.partitions.len()];
        &unblocked
    } else {
        blocked
    };
    let mut extra: Vec<(usize, u32, u64)> = Vec::new();
    let mut out = Vec::with_capacity(members.len());
    for &job in members {
        let mut bars = Vec::new();
        let mut placed = None;
        for &p in &job.partitions {
            let Some(bar) = partition_bar(job, view, p) else {
                continue;
            };
            bars.push((p, bar));
            if bar.is_some() || blocked.get(p).copied().unwrap_or(false) {
                continue;
            }
            let len = Planner::planning_len(job, view, p, config);
            if let Some(placement) = pl.fit_with(p, &job.req, len, now, &extra) {
                placed = Some((p, placement, len));
                break;
            }
        }
        let Some((p, placement, len)) = placed else {
            return Err(waiting_reason(&bars, blocked));
        };
        extra.extend(placement.nodes.iter().map(|a| (a.node, a.cpus, a.mem_mb)));
        out.push((
            Start {
                job_id: job.id,
                partition: p,
                placement,
                time_limit: None,
            },
            len,
        ));
    }
    Ok(out)
}

/// The earliest time, after now and no earlier than `floor(p)` for any partition `p` a
/// component may use, at which every component of a het job fits at once; the components'
/// estimates (of `kind`) and lengths. Unless `kind` is [`EstimateKind::NotBefore`], their
/// resources are held from then on.
pub(crate) fn earliest(
    pl: &mut Planner,
    view: &ClusterView,
    members: &[&QueuedJob],
    now: i64,
    config: &SchedConfig,
    floor: &dyn Fn(usize) -> i64,
    kind: EstimateKind,
) -> Option<Vec<Estimate>> {
    if !complete(members) || members.iter().any(|j| j.held.is_some()) {
        return None;
    }
    // Each component's open partitions, in its order.
    let mut open: Vec<Vec<usize>> = Vec::with_capacity(members.len());
    for &job in members {
        let ps: Vec<usize> = job
            .partitions
            .iter()
            .copied()
            .filter(|&p| partition_bar(job, view, p) == Some(None))
            .collect();
        if ps.is_empty() {
            return None;
        }
        open.push(ps);
    }
    let mut all_parts: Vec<usize> = open.iter().flatten().copied().collect();
    all_parts.sort_unstable();
    all_parts.dedup();
    let begin = members
        .iter()
        .filter_map(|j| j.begin_time)
        .max()
        .unwrap_or(now);
    let mut t = all_parts
        .iter()
        .map(|&p| floor(p))
        .max()
        .unwrap_or(now)
        .max(begin)
        .max(now + 1);
    // No earlier than any component could start alone (the planner's fast, exact search, on
    // a copy of its state): this skips ahead, and a component that can never start ends
    // the search at once.
    for (&job, parts) in members.iter().zip(&open) {
        let alone = parts
            .iter()
            .filter_map(|&p| {
                let len = Planner::planning_len(job, view, p, config);
                pl.earliest(p, &job.req, len, t, true).map(|f| f.start)
            })
            .min()?;
        t = t.max(alone);
    }
    while t <= pl.latest() {
        if let Some(found) = fit_all(pl, view, members, &open, t, config) {
            let mut out = Vec::with_capacity(found.len());
            for (job, (p, placement, len)) in members.iter().zip(found) {
                if kind != EstimateKind::NotBefore {
                    pl.commit(&placement, t, len, 0);
                }
                out.push(Estimate {
                    job_id: job.id,
                    start: t,
                    partition: p,
                    placement,
                    kind,
                });
            }
            return Some(out);
        }
        t = pl.next_change_in(&all_parts, t)?;
    }
    None
}

/// Every component placed at `t`, each on top of the ones before it, or `None`.
fn fit_all(
    pl: &Planner,
    view: &ClusterView,
    members: &[&QueuedJob],
    open: &[Vec<usize>],
    t: i64,
    config: &SchedConfig,
) -> Option<Vec<(usize, crate::Placement, i64)>> {
    let mut extra: Vec<(usize, u32, u64)> = Vec::new();
    let mut out = Vec::with_capacity(members.len());
    for (&job, parts) in members.iter().zip(open) {
        let found = parts.iter().find_map(|&p| {
            let len = Planner::planning_len(job, view, p, config);
            pl.fit_with(p, &job.req, len, t, &extra)
                .map(|pm| (p, pm, len))
        })?;
        extra.extend(found.1.nodes.iter().map(|a| (a.node, a.cpus, a.mem_mb)));
        out.push(found);
    }
    Some(out)
}
