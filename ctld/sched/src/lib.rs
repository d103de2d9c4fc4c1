//! gsched's scheduler core: given the cluster, the queue and the time, decide which jobs start
//! now and where, and why the others wait.
//!
//! This crate is **pure and deterministic**: no I/O, no clock, no threads, no randomness. Time
//! is an argument. The controller calls [`decide`] on every event, and the trace simulator
//! calls the very same function, so every policy can be measured offline against real
//! workloads. Keep it that way: anything that needs the outside world is gathered by the caller
//! into a [`ClusterView`] and a queue of [`QueuedJob`]s.
//!
//! The policy here is priority order with resource matching (Slurm's `sched/builtin`): jobs are
//! taken by priority, then submit time, then id; a job that cannot start blocks lower-priority
//! jobs of the same partitions, so nothing starves. Backfill arrives as a policy of its own.

#![forbid(unsafe_code)]

use gsched_proto::job::{JobId, MemRequest, Reason};

mod place;

pub use place::{place, NodeAlloc, Placement};

/// One node as the scheduler sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeView {
    pub name: String,
    pub cpus: u32,
    pub mem_mb: u64,
    pub alloc_cpus: u32,
    pub alloc_mem_mb: u64,
    /// Registered, responding, not drained or down: new jobs may start here.
    pub available: bool,
    /// Lower weight is preferred (Slurm's `Weight=`).
    pub weight: u32,
}

impl NodeView {
    pub fn free_cpus(&self) -> u32 {
        self.cpus.saturating_sub(self.alloc_cpus)
    }
    pub fn free_mem_mb(&self) -> u64 {
        self.mem_mb.saturating_sub(self.alloc_mem_mb)
    }
}

/// One partition: a named set of nodes with limits.
#[derive(Debug, Clone, PartialEq)]
pub struct PartitionView {
    pub name: String,
    /// Indices into [`ClusterView::nodes`].
    pub nodes: Vec<usize>,
    /// `State=UP`: jobs may start.
    pub up: bool,
    /// Minutes; `None` = UNLIMITED.
    pub max_time: Option<u32>,
}

/// Everything the scheduler may look at about the cluster.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClusterView {
    pub nodes: Vec<NodeView>,
    pub partitions: Vec<PartitionView>,
}

/// What a job needs, in the terms placement works with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResourceRequest {
    /// Exact node count (`-N`); `None` = as few as needed.
    pub nodes: Option<u32>,
    pub tasks: u32,
    pub cpus_per_task: u32,
    pub ntasks_per_node: Option<u32>,
    pub mem: Option<MemRequest>,
}

/// A job waiting to start.
#[derive(Debug, Clone, PartialEq)]
pub struct QueuedJob {
    pub id: JobId,
    pub priority: u32,
    pub submit_time: i64,
    /// Indices into [`ClusterView::partitions`], in the user's order of preference.
    pub partitions: Vec<usize>,
    pub held: Option<Reason>,
    /// Not eligible before this time (`--begin`).
    pub begin_time: Option<i64>,
    /// Minutes; `None` = UNLIMITED.
    pub time_limit: Option<u32>,
    pub req: ResourceRequest,
}

/// Scheduler settings taken from the config.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SchedConfig {}

/// Start a job now on these resources.
#[derive(Debug, Clone, PartialEq)]
pub struct Start {
    pub job_id: JobId,
    /// Index of the partition it runs in.
    pub partition: usize,
    pub placement: Placement,
}

/// The outcome of one scheduling pass.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Decisions {
    pub starts: Vec<Start>,
    /// Why each job that does not start keeps waiting.
    pub waiting: Vec<(JobId, Reason)>,
}

/// Decides which queued jobs start at `now`, and where.
///
/// Deterministic: the same arguments always give the same decisions.
pub fn decide(
    view: &ClusterView,
    queue: &[QueuedJob],
    now: i64,
    _config: &SchedConfig,
) -> Decisions {
    let mut nodes = view.nodes.clone();
    let mut order: Vec<&QueuedJob> = queue.iter().collect();
    order.sort_by(|a, b| {
        b.priority
            .cmp(&a.priority)
            .then(a.submit_time.cmp(&b.submit_time))
            .then(a.id.cmp(&b.id))
    });
    let mut blocked = vec![false; view.partitions.len()];
    let mut out = Decisions::default();
    for job in order {
        if let Some(r) = job.held {
            out.waiting.push((job.id, r));
            continue;
        }
        if job.begin_time.is_some_and(|b| b > now) {
            out.waiting.push((job.id, Reason::BeginTime));
            continue;
        }
        let mut reason = None;
        let mut started = false;
        for &p in &job.partitions {
            let Some(part) = view.partitions.get(p) else {
                continue;
            };
            if !part.up {
                reason.get_or_insert(Reason::PartitionDown);
                continue;
            }
            if let (Some(max), Some(limit)) = (part.max_time, job.time_limit) {
                if limit > max {
                    reason.get_or_insert(Reason::PartitionTimeLimit);
                    continue;
                }
            } else if part.max_time.is_some() && job.time_limit.is_none() {
                reason.get_or_insert(Reason::PartitionTimeLimit);
                continue;
            }
            if blocked[p] {
                reason.get_or_insert(Reason::Priority);
                continue;
            }
            match place(&nodes, &part.nodes, &job.req) {
                Some(placement) => {
                    for a in &placement.nodes {
                        let n = &mut nodes[a.node];
                        n.alloc_cpus += a.cpus;
                        n.alloc_mem_mb += a.mem_mb;
                    }
                    out.starts.push(Start {
                        job_id: job.id,
                        partition: p,
                        placement,
                    });
                    started = true;
                    break;
                }
                None => {
                    reason = Some(match reason {
                        Some(Reason::Priority) | None => Reason::Resources,
                        Some(r) => r,
                    });
                }
            }
        }
        if !started {
            let r = reason.unwrap_or(Reason::Resources);
            if r == Reason::Resources {
                for &p in &job.partitions {
                    if let Some(b) = blocked.get_mut(p) {
                        *b = true;
                    }
                }
            }
            out.waiting.push((job.id, r));
        }
    }
    out
}

#[cfg(test)]
mod tests;
