//! Placement: which nodes, and how many CPUs and how much memory on each, satisfy one job's
//! request given what is free. Used by [`crate::decide`] and by the controller to reject at
//! submit time a job that could never run (placement on empty nodes fails).

use crate::gpu::{self, GpuUse, GpuView};
use crate::{NodeView, PartitionView, ResourceRequest};
use gsched_proto::gpu::GpuAlloc;
use gsched_proto::job::MemRequest;

/// Resources given to a job on one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeAlloc {
    /// Index into the cluster's nodes.
    pub node: usize,
    pub cpus: u32,
    pub mem_mb: u64,
    pub tasks: u32,
    /// The GPUs it gets there, by index (empty for a job without GPUs).
    pub gpus: Vec<GpuAlloc>,
}

/// Where a job runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// In node order of the job (the first is the batch host).
    pub nodes: Vec<NodeAlloc>,
}

/// How many tasks of `req` fit on `n` as it is now.
fn capacity(n: &NodeView, req: &ResourceRequest, rules: gpu::GpuRules) -> u32 {
    if !n.available {
        return 0;
    }
    let gpu_cap = match &req.gpu {
        Some(need) => gpu::task_cap(&n.gpus, &gpu::uses_now(&n.gpus), need, rules),
        None => u32::MAX,
    };
    capacity_cap(n.cpus, n.mem_mb, n.alloc_cpus, n.alloc_mem_mb, req, gpu_cap)
}

/// How many tasks of `req` fit on a node of `cpus` CPUs and `mem_mb` memory of which
/// `used_cpus` and `used_mem_mb` are taken. The planner calls it with the most a node has in
/// use over a time window, which gives the tasks that fit over the whole window.
pub(crate) fn capacity_with(
    cpus: u32,
    mem_mb: u64,
    used_cpus: u32,
    used_mem_mb: u64,
    req: &ResourceRequest,
) -> u32 {
    capacity_cap(cpus, mem_mb, used_cpus, used_mem_mb, req, u32::MAX)
}

/// [`capacity_with`] with at most `gpu_cap` tasks (what the node's GPUs can take).
pub(crate) fn capacity_cap(
    cpus: u32,
    mem_mb: u64,
    used_cpus: u32,
    used_mem_mb: u64,
    req: &ResourceRequest,
    gpu_cap: u32,
) -> u32 {
    if gpu_cap == 0 || req.exclusive && (used_cpus > 0 || used_mem_mb > 0) {
        return 0;
    }
    let free_cpus = cpus.saturating_sub(used_cpus);
    let free_mem = mem_mb.saturating_sub(used_mem_mb);
    let cpt = req.cpus_per_task.max(1);
    let mut tasks = (free_cpus / cpt).min(gpu_cap);
    match req.mem {
        Some(MemRequest::PerNode(0)) if used_mem_mb > 0 => return 0,
        Some(MemRequest::PerNode(m)) if m > 0 && free_mem < m => return 0,
        Some(MemRequest::PerCpu(m)) if m > 0 => {
            let per_task = m.saturating_mul(cpt as u64);
            tasks = tasks.min((free_mem / per_task).min(u32::MAX as u64) as u32);
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

/// The tasks one job places in total (`-n`, raised to `-N` x `--ntasks-per-node`).
pub(crate) fn total_tasks(req: &ResourceRequest) -> u32 {
    match (req.ntasks_per_node, req.nodes) {
        (Some(tpn), Some(n)) => req.tasks.max(tpn.max(1).saturating_mul(n)),
        _ => req.tasks.max(1),
    }
}

fn mem_for(node_mem_mb: u64, req: &ResourceRequest, cpus: u32) -> u64 {
    match req.mem {
        Some(MemRequest::PerNode(0)) => node_mem_mb,
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
///
/// GPUs are placed as in a partition without `GpuSharing=multiuser` (see [`place_in`]).
pub fn place(nodes: &[NodeView], candidates: &[usize], req: &ResourceRequest) -> Option<Placement> {
    place_gpus(nodes, candidates, req, gpu::GpuRules::default())
}

/// [`place`] on the nodes of partition `part`, GPUs shared as the partition allows.
pub fn place_in(
    nodes: &[NodeView],
    part: &PartitionView,
    req: &ResourceRequest,
) -> Option<Placement> {
    place_gpus(nodes, &part.nodes, req, part.gpu)
}

pub(crate) fn place_gpus(
    nodes: &[NodeView],
    candidates: &[usize],
    req: &ResourceRequest,
    rules: gpu::GpuRules,
) -> Option<Placement> {
    let mut cands: Vec<(usize, u32)> = candidates
        .iter()
        .copied()
        .filter(|&i| i < nodes.len() && req.allows(i))
        .map(|i| (i, capacity(&nodes[i], req, rules)))
        .filter(|&(_, c)| c > 0)
        .collect();
    cands.sort_by_key(|&(i, _)| crate::score::preference(&nodes[i], i));
    cands.dedup_by_key(|c| c.0);
    let cands = packed_first(cands, req, |i| {
        let need = req.gpu.as_deref()?;
        gpu::pack_key(&nodes[i].gpus, &gpu::uses_now(&nodes[i].gpus), need, rules)
    });
    let mut p = place_caps(&cands, req, |i| (nodes[i].cpus, nodes[i].mem_mb))?;
    assign_gpus(&mut p, req, rules, |i| {
        (&nodes[i].gpus[..], gpu::uses_now(&nodes[i].gpus))
    })?;
    Some(p)
}

/// For a one-node request of a GPU share: only the node where the share packs best
/// ([`gpu::pack_key`]; ties by preference order), so that shares fill the GPUs already shared
/// anywhere in the partition before a free GPU is opened. Other requests: `cands` unchanged.
pub(crate) fn packed_first(
    cands: Vec<(usize, u32)>,
    req: &ResourceRequest,
    key: impl Fn(usize) -> Option<(bool, i64, u64)>,
) -> Vec<(usize, u32)> {
    let share = req
        .gpu
        .as_ref()
        .is_some_and(|g| matches!(g.amount, gpu::GpuAmount::Share(_)));
    let one_node = req.nodes.is_none_or(|n| n <= 1)
        && req
            .filter
            .as_ref()
            .is_none_or(|f| f.required.is_empty() && f.counts.is_empty());
    if !share || !one_node {
        return cands;
    }
    let total = total_tasks(req);
    let best = cands
        .iter()
        .enumerate()
        .filter(|(_, c)| c.1 >= total)
        .filter_map(|(pos, &c)| key(c.0).map(|k| (k, pos, c)))
        .min_by_key(|&(k, pos, _)| (k, pos))
        .map(|(_, _, c)| c);
    match best {
        Some(c) => vec![c],
        None => cands,
    }
}

/// Gives each node of `p` the GPUs `req` needs there, `gpus(i)` being node `i`'s GPUs and
/// what is in use on them; `None` if a node lacks them (the capacities said they were there,
/// so this does not happen).
pub(crate) fn assign_gpus<'a>(
    p: &mut Placement,
    req: &ResourceRequest,
    rules: gpu::GpuRules,
    gpus: impl Fn(usize) -> (&'a [GpuView], Vec<GpuUse>),
) -> Option<()> {
    let Some(need) = &req.gpu else {
        return Some(());
    };
    for a in &mut p.nodes {
        let (g, u) = gpus(a.node);
        a.gpus = gpu::assign(g, &u, need, a.tasks, rules)?;
    }
    Some(())
}

/// The placement rules of [`place`] over candidates already known: `cands` holds
/// `(node, tasks that fit)` in order of preference, without duplicates or zero capacities;
/// `node_res` gives a node's CPUs (for `--exclusive`) and memory (for `--mem=0`). Every
/// node the request requires (`--nodelist`) must be among `cands`, and is chosen.
pub(crate) fn place_caps(
    cands: &[(usize, u32)],
    req: &ResourceRequest,
    node_res: impl Fn(usize) -> (u32, u64),
) -> Option<Placement> {
    let Some(f) = req.filter.as_deref() else {
        return place_required(cands, req, &[], &node_res);
    };
    if let Some(t) = f.topology.as_deref() {
        // Over as few leaf switches as possible (topology.rs), then the rules below.
        return t.place_with(cands, |sub| place_filtered(sub, req, f, &node_res));
    }
    place_filtered(cands, req, f, &node_res)
}

/// [`place_caps`] with the filter `f` (matching OR, node counts, required nodes).
fn place_filtered(
    cands: &[(usize, u32)],
    req: &ResourceRequest,
    f: &crate::NodeFilter,
    node_res: &impl Fn(usize) -> (u32, u64),
) -> Option<Placement> {
    if !f.alternatives.is_empty() {
        // Matching OR: the first alternative, in order, whose nodes hold the job.
        return f.alternatives.iter().find_map(|alt| {
            let sub: Vec<(usize, u32)> = cands
                .iter()
                .copied()
                .filter(|&(i, _)| alt.get(i).copied().unwrap_or(false))
                .collect();
            place_with_counts(&sub, req, f, node_res)
        });
    }
    place_with_counts(cands, req, f, node_res)
}

/// [`place_required`] after choosing, for every node count term of `f`, the first nodes in
/// preference order that satisfy it (distinct nodes per term; `--nodelist` nodes count).
fn place_with_counts(
    cands: &[(usize, u32)],
    req: &ResourceRequest,
    f: &crate::NodeFilter,
    node_res: &impl Fn(usize) -> (u32, u64),
) -> Option<Placement> {
    if f.counts.is_empty() {
        return place_required(cands, req, &f.required, node_res);
    }
    let mut picked: Vec<usize> = f.required.clone();
    let mut used = vec![false; picked.len()];
    for (has, n) in &f.counts {
        let sat = |i: usize| has.get(i).copied().unwrap_or(false);
        // Required nodes count for the first term they satisfy.
        let mut got = 0u32;
        for (k, &i) in picked.iter().enumerate() {
            if got < *n && k < used.len() && !used[k] && sat(i) {
                used[k] = true;
                got += 1;
            }
        }
        for &(i, _) in cands {
            if got >= *n {
                break;
            }
            if sat(i) && !picked.contains(&i) {
                picked.push(i);
                got += 1;
            }
        }
        if got < *n {
            return None;
        }
    }
    if req.nodes.is_some_and(|n| (picked.len() as u32) > n.max(1)) {
        return None;
    }
    picked.sort_unstable();
    picked.dedup();
    place_required(cands, req, &picked, node_res)
}

/// The placement rules of [`place`] with `required` nodes (sorted) that must be chosen.
fn place_required(
    cands: &[(usize, u32)],
    req: &ResourceRequest,
    required: &[usize],
    node_res: &impl Fn(usize) -> (u32, u64),
) -> Option<Placement> {
    let total_tasks = total_tasks(req);
    let chosen: Vec<(usize, u32)> = if required.is_empty() {
        choose(cands, req, total_tasks)?
    } else {
        choose_with_required(cands, req, total_tasks, required)?
    };
    let cap: u32 = chosen.iter().map(|c| c.1).fold(0, u32::saturating_add);
    if chosen.is_empty() || cap < total_tasks || total_tasks < chosen.len() as u32 {
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
            let (node_cpus, node_mem) = node_res(i);
            let cpus = t * cpt;
            NodeAlloc {
                node: i,
                cpus: if req.exclusive {
                    node_cpus.max(cpus)
                } else {
                    cpus
                },
                mem_mb: mem_for(node_mem, req, cpus),
                tasks: t,
                gpus: Vec::new(),
            }
        })
        .collect();
    Some(Placement { nodes: allocs })
}

/// The nodes for a request with required nodes: all of them, then (with `-N` larger, or
/// when they cannot hold every task) the roomiest others; in preference order.
fn choose_with_required(
    cands: &[(usize, u32)],
    req: &ResourceRequest,
    total_tasks: u32,
    required: &[usize],
) -> Option<Vec<(usize, u32)>> {
    let mut pick: Vec<(usize, usize, u32)> = Vec::new();
    let mut rest: Vec<(usize, usize, u32)> = Vec::new();
    for (k, &(i, c)) in cands.iter().enumerate() {
        if required.binary_search(&i).is_ok() {
            pick.push((k, i, c));
        } else {
            rest.push((k, i, c));
        }
    }
    if pick.len() != required.len() {
        return None;
    }
    rest.sort_by(|a, b| b.2.cmp(&a.2).then(a.1.cmp(&b.1)));
    match req.nodes {
        Some(n) => {
            let n = (n.max(1) as usize).max(required.len());
            if pick.len() + rest.len() < n {
                return None;
            }
            let more = n - pick.len();
            pick.extend(rest.into_iter().take(more));
        }
        None => {
            let mut cap: u32 = pick.iter().map(|c| c.2).fold(0, u32::saturating_add);
            for c in rest {
                if cap >= total_tasks {
                    break;
                }
                cap = cap.saturating_add(c.2);
                pick.push(c);
            }
        }
    }
    pick.sort_by_key(|&(k, _, _)| k);
    Some(pick.into_iter().map(|(_, i, c)| (i, c)).collect())
}

/// The nodes for a request without required nodes (see [`place`]).
fn choose(
    cands: &[(usize, u32)],
    req: &ResourceRequest,
    total_tasks: u32,
) -> Option<Vec<(usize, u32)>> {
    let chosen: Vec<(usize, u32)> = match req.nodes {
        Some(n) => {
            let n = n.max(1) as usize;
            if cands.len() < n || total_tasks < n as u32 {
                return None;
            }
            // The n nodes holding the most tasks, kept in preference order.
            let mut by_cap: Vec<(usize, usize, u32)> = cands
                .iter()
                .enumerate()
                .map(|(k, &(i, c))| (k, i, c))
                .collect();
            by_cap.sort_by(|a, b| b.2.cmp(&a.2).then(a.1.cmp(&b.1)));
            let mut pick: Vec<(usize, usize, u32)> = by_cap.into_iter().take(n).collect();
            pick.sort_by_key(|&(k, _, _)| k);
            pick.into_iter().map(|(_, i, c)| (i, c)).collect()
        }
        None => {
            // As few nodes as possible: the first node that holds every task, else the
            // roomiest nodes until the tasks fit (kept in preference order).
            if let Some(&one) = cands.iter().find(|c| c.1 >= total_tasks) {
                vec![one]
            } else {
                let mut by_cap: Vec<(usize, usize, u32)> = cands
                    .iter()
                    .enumerate()
                    .map(|(k, &(i, c))| (k, i, c))
                    .collect();
                by_cap.sort_by(|a, b| b.2.cmp(&a.2).then(a.1.cmp(&b.1)));
                let mut pick = Vec::new();
                let mut cap = 0u32;
                for c in by_cap {
                    if cap >= total_tasks {
                        break;
                    }
                    cap = cap.saturating_add(c.2);
                    pick.push(c);
                }
                pick.sort_by_key(|&(k, _, _)| k);
                pick.into_iter().map(|(_, i, c)| (i, c)).collect()
            }
        }
    };
    Some(chosen)
}
