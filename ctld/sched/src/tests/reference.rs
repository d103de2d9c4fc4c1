//! The scheduler core as it was before backfill (commit a9d8088): `place` and the FIFO
//! `decide`, copied verbatim (only the config argument dropped), so the property test can
//! check that `Policy::Fifo` still decides exactly the same.

use crate::ClusterView;
use crate::{Decisions, NodeAlloc, NodeView, Placement, QueuedJob, ResourceRequest, Start};
use gsched_proto::job::{MemRequest, Reason};

/// How many tasks of `req` fit on `n` as it is now, and the memory they take.
fn capacity(n: &NodeView, req: &ResourceRequest) -> u32 {
    if !n.available {
        return 0;
    }
    let cpt = req.cpus_per_task.max(1);
    let mut tasks = n.free_cpus() / cpt;
    match req.mem {
        Some(MemRequest::PerNode(0)) if n.alloc_mem_mb > 0 => return 0,
        Some(MemRequest::PerNode(m)) if m > 0 && n.free_mem_mb() < m => return 0,
        Some(MemRequest::PerCpu(m)) if m > 0 => {
            let per_task = m.saturating_mul(cpt as u64);
            tasks = tasks.min((n.free_mem_mb() / per_task).min(u32::MAX as u64) as u32);
        }
        _ => {}
    }
    if let Some(tpn) = req.ntasks_per_node {
        if tasks < tpn.max(1) {
            return 0;
        }
        tasks = tpn.max(1);
    }
    tasks
}

fn mem_for(n: &NodeView, req: &ResourceRequest, cpus: u32) -> u64 {
    match req.mem {
        Some(MemRequest::PerNode(0)) => n.mem_mb,
        Some(MemRequest::PerNode(m)) => m,
        Some(MemRequest::PerCpu(m)) => m.saturating_mul(cpus as u64),
        None => 0,
    }
}

/// Finds a placement for `req` among `candidates` (indices into `nodes`), or `None`.
///
/// Nodes are preferred by weight, then by their order in the config. With an exact node count
/// the job gets that many nodes, each with at least one task (or `--ntasks-per-node` tasks);
/// otherwise it gets as few nodes as hold all its tasks.
pub fn place(nodes: &[NodeView], candidates: &[usize], req: &ResourceRequest) -> Option<Placement> {
    let mut cands: Vec<(usize, u32)> = candidates
        .iter()
        .copied()
        .filter(|&i| i < nodes.len())
        .map(|i| (i, capacity(&nodes[i], req)))
        .filter(|&(_, c)| c > 0)
        .collect();
    cands.sort_by_key(|&(i, _)| (nodes[i].weight, i));
    cands.dedup_by_key(|c| c.0);
    let total_tasks = match (req.ntasks_per_node, req.nodes) {
        (Some(tpn), Some(n)) => req.tasks.max(tpn.max(1).saturating_mul(n)),
        _ => req.tasks.max(1),
    };
    let chosen: Vec<(usize, u32)> = match req.nodes {
        Some(n) => {
            let n = n.max(1) as usize;
            if cands.len() < n || total_tasks < n as u32 {
                return None;
            }
            // The n nodes holding the most tasks, kept in preference order.
            let mut by_cap = cands.clone();
            by_cap.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            let mut pick: Vec<(usize, u32)> = by_cap.into_iter().take(n).collect();
            pick.sort_by_key(|&(i, _)| (nodes[i].weight, i));
            pick
        }
        None => {
            // As few nodes as possible: the first node that holds every task, else the
            // roomiest nodes until the tasks fit (kept in preference order).
            if let Some(&one) = cands.iter().find(|c| c.1 >= total_tasks) {
                vec![one]
            } else {
                let mut by_cap = cands.clone();
                by_cap.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
                let mut pick = Vec::new();
                let mut cap = 0u32;
                for c in by_cap {
                    if cap >= total_tasks {
                        break;
                    }
                    cap = cap.saturating_add(c.1);
                    pick.push(c);
                }
                pick.sort_by_key(|&(i, _)| (nodes[i].weight, i));
                pick
            }
        }
    };
    let cap: u32 = chosen.iter().map(|c| c.1).fold(0, u32::saturating_add);
    if chosen.is_empty() || cap < total_tasks {
        return None;
    }
    // One task on every node first, then fill in preference order.
    let mut tasks: Vec<u32> = vec![1; chosen.len()];
    let mut left = total_tasks - chosen.len() as u32;
    for (k, &(_, c)) in chosen.iter().enumerate() {
        let more = (c - 1).min(left);
        tasks[k] += more;
        left -= more;
    }
    if left > 0 {
        return None;
    }
    let cpt = req.cpus_per_task.max(1);
    let allocs = chosen
        .iter()
        .zip(tasks)
        .map(|(&(i, _), t)| {
            let cpus = t * cpt;
            NodeAlloc {
                gpus: Vec::new(),
                node: i,
                cpus,
                mem_mb: mem_for(&nodes[i], req, cpus),
                tasks: t,
            }
        })
        .collect();
    Some(Placement { nodes: allocs })
}

/// Decides which queued jobs start at `now`, and where.
///
/// Deterministic: the same arguments always give the same decisions.
pub fn decide(view: &ClusterView, queue: &[QueuedJob], now: i64) -> Decisions {
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
                reason.get_or_insert(if part.inactive {
                    Reason::PartitionInactive
                } else {
                    Reason::PartitionDown
                });
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
                        time_limit: None,
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
