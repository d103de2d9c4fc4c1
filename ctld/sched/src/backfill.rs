//! The backfill planner: every pending job, in priority order, gets the earliest start at which
//! its whole time limit fits on the [`Timeline`]; depending on the policy that start is held
//! (a reservation other jobs must not touch) or only reported (an estimate).
//!
//! # Why it is fast
//!
//! A pass may plan 100,000 jobs on 10,000 nodes, so the planner never scans every node for
//! every job. Jobs are grouped by *shape* (partition, request, planning length, earliest
//! allowed start). Each shape keeps a min-heap of `(time, node)` where `time` is a lower bound
//! of the earliest time that node could hold the shape's per-node need. Within a pass the
//! timeline only fills (starts and reservations are added, nothing is removed), so a node's
//! earliest time for a shape can only move later: a stale key is still a lower bound. A search
//! pops the smallest key, recomputes that node's real earliest time from the key onwards, and
//! either accepts it (it equals the key, so no other node can do better) or pushes it back
//! with the new key. Every job of a shape after the first therefore resumes where the last one
//! stopped, and most jobs cost a few heap operations and one walk over a few breakpoints.
//!
//! Jobs that need several nodes gather candidates from the same heap at increasing times until
//! a placement exists; candidate times are the heap's keys and the next breakpoints of the
//! nodes already gathered (a window's capacity only changes there), so no time a placement
//! could begin at is skipped.
//!
//! # Placement
//!
//! At its earliest time a job takes nodes in order of (time they became usable for it, weight,
//! config order), first fit: at `now` that is the order [`crate::place`] prefers. The
//! per-node split of tasks, memory per node and `--mem=0` follow [`crate::place`]'s rules on
//! the nodes gathered. A job that may spread (`-n` without `-N`) is put on one node if one node
//! can take it as early as any spread placement.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use gsched_proto::job::{JobId, MemRequest, Reason};

use crate::place::{capacity_with, place_caps, total_tasks};
use crate::timeline::Timeline;
use crate::{
    ClusterView, Decisions, Estimate, Placement, Policy, QueuedJob, ResourceRequest, SchedConfig,
    Start,
};

/// How a shape's per-node need and its completion are judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Need {
    /// One node holding `thr` tasks.
    Single { thr: u32 },
    /// Nodes holding at least `thr` tasks each, `total` tasks together.
    Spread { thr: u32 },
    /// Exactly `n` nodes holding at least `thr` tasks each, `total` together.
    Exact { n: u32, thr: u32 },
}

impl Need {
    fn thr(self) -> u32 {
        match self {
            Need::Single { thr } | Need::Spread { thr } | Need::Exact { thr, .. } => thr,
        }
    }
}

/// What groups jobs that search alike. Ordered, so the map of shapes iterates the same way in
/// every run (it is only looked up, but no hash order can leak this way).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct ShapeKey {
    part: usize,
    len: i64,
    /// `Some` for a job that may not start before a given time (`--begin`).
    begin: Option<i64>,
    need: Need,
    nodes: Option<u32>,
    tasks: u32,
    cpus_per_task: u32,
    ntasks_per_node: Option<u32>,
    mem: (u8, u64),
}

fn mem_key(m: Option<MemRequest>) -> (u8, u64) {
    match m {
        None => (0, 0),
        Some(MemRequest::PerNode(v)) => (1, v),
        Some(MemRequest::PerCpu(v)) => (2, v),
    }
}

/// One shape's search state, reused by every job of the shape during a pass.
#[derive(Debug)]
struct Shape {
    key: ShapeKey,
    req: ResourceRequest,
    /// `(lower bound of the node's earliest time, position in the partition's order)`.
    heap: BinaryHeap<Reverse<(i64, u32)>>,
    /// Searches begin at or after this (they only move forward).
    from: i64,
    /// The shape's earliest start is at or after this.
    lo: i64,
    /// No placement by the horizon: nothing later can change that within the pass.
    never: bool,
}

/// The result of a search: when, where.
#[derive(Debug, Clone)]
pub(crate) struct Found {
    pub(crate) start: i64,
    pub(crate) placement: Placement,
}

/// The planner of one pass: the timeline and the shapes' search states.
pub(crate) struct Planner<'a> {
    view: &'a ClusterView,
    pub(crate) tl: Timeline,
    now: i64,
    /// Last start time considered (`now` + horizon).
    latest: i64,
    /// Per partition: its usable nodes, by weight then config order, without duplicates.
    order: Vec<Vec<usize>>,
    shapes: Vec<Shape>,
    index: BTreeMap<ShapeKey, usize>,
}

impl<'a> Planner<'a> {
    pub(crate) fn new(view: &'a ClusterView, now: i64, config: &SchedConfig) -> Self {
        let order = view
            .partitions
            .iter()
            .map(|p| {
                let mut v: Vec<usize> = p
                    .nodes
                    .iter()
                    .copied()
                    .filter(|&i| i < view.nodes.len() && view.nodes[i].available)
                    .collect();
                v.sort_by_key(|&i| (view.nodes[i].weight, i));
                v.dedup();
                v
            })
            .collect();
        Planner {
            view,
            tl: Timeline::new(view, now),
            now,
            latest: now.saturating_add(config.horizon_secs.max(0)),
            order,
            shapes: Vec::new(),
            index: BTreeMap::new(),
        }
    }

    /// Seconds the planner holds `job`'s resources for in partition `part`.
    pub(crate) fn planning_len(
        job: &QueuedJob,
        view: &ClusterView,
        part: usize,
        cfg: &SchedConfig,
    ) -> i64 {
        let mins = job.time_limit.or(view.partitions[part].max_time);
        match mins {
            Some(m) => (m as i64 * 60).max(1),
            None => cfg.default_limit_secs.max(1),
        }
    }

    fn shape(
        &mut self,
        part: usize,
        req: &ResourceRequest,
        need: Need,
        len: i64,
        begin: Option<i64>,
    ) -> usize {
        let key = ShapeKey {
            part,
            len,
            begin,
            need,
            nodes: req.nodes,
            tasks: req.tasks,
            cpus_per_task: req.cpus_per_task,
            ntasks_per_node: req.ntasks_per_node,
            mem: mem_key(req.mem),
        };
        if let Some(&i) = self.index.get(&key) {
            return i;
        }
        let from = begin.unwrap_or(self.now).max(self.now);
        // Every node's earliest time is at least `from`: keys in position order form a heap.
        let heap: BinaryHeap<Reverse<(i64, u32)>> = (0..self.order[part].len() as u32)
            .map(|pos| Reverse((from, pos)))
            .collect::<Vec<_>>()
            .into();
        let i = self.shapes.len();
        self.shapes.push(Shape {
            key,
            req: *req,
            heap,
            from,
            lo: from,
            never: false,
        });
        self.index.insert(key, i);
        i
    }

    /// Earliest start at or after `from` of a job with request `req` planned for `len`
    /// seconds in partition `part`, with its placement; `None` if none by the horizon.
    pub(crate) fn earliest(
        &mut self,
        part: usize,
        req: &ResourceRequest,
        len: i64,
        begin: Option<i64>,
        from: i64,
    ) -> Option<Found> {
        let total = total_tasks(req);
        match (req.nodes, req.ntasks_per_node) {
            (Some(n), tpn) if n >= 2 => {
                let need = Need::Exact {
                    n,
                    thr: tpn.unwrap_or(1).max(1),
                };
                let s = self.shape(part, req, need, len, begin);
                self.search(s, from, self.latest)
            }
            (Some(_), _) => {
                let s = self.shape(part, req, Need::Single { thr: total }, len, begin);
                self.search(s, from, self.latest)
            }
            (None, Some(tpn)) => {
                let tpn = tpn.max(1);
                let need = if tpn >= total {
                    Need::Single { thr: tpn }
                } else {
                    Need::Spread { thr: tpn }
                };
                let s = self.shape(part, req, need, len, begin);
                self.search(s, from, self.latest)
            }
            (None, None) if total <= 1 => {
                let s = self.shape(part, req, Need::Single { thr: 1 }, len, begin);
                self.search(s, from, self.latest)
            }
            (None, None) => {
                // On one node if that is as early as spreading, else spread.
                let one = self.shape(part, req, Need::Single { thr: total }, len, begin);
                let single = self.search(one, from, self.latest);
                if single.as_ref().is_some_and(|f| f.start <= from) {
                    return single;
                }
                let by = single.as_ref().map_or(self.latest, |f| f.start - 1);
                let many = self.shape(part, req, Need::Spread { thr: 1 }, len, begin);
                self.search(many, from, by).or(single)
            }
        }
    }

    /// The search of one shape, at or after `from`, for a start no later than `by`.
    fn search(&mut self, s: usize, from: i64, by: i64) -> Option<Found> {
        if from < self.shapes[s].from {
            // Searches of a shape only move forward; a caller going back gets a fresh state.
            // (Not expected: `from` is now, a begin time, or a growing floor.)
            let key = self.shapes[s].key;
            let req = self.shapes[s].req;
            self.index.remove(&key);
            let s = self.shape(key.part, &req, key.need, key.len, key.begin);
            let heap = (0..self.order[key.part].len() as u32)
                .map(|pos| Reverse((from, pos)))
                .collect::<Vec<_>>();
            let sh = &mut self.shapes[s];
            sh.heap = heap.into();
            sh.from = from;
            sh.lo = from;
            return self.search(s, from, by);
        }
        let sh = &mut self.shapes[s];
        if sh.never || sh.lo > by {
            return None;
        }
        sh.from = from;
        let start = from.max(sh.lo);
        let view = self.view;
        let order = &self.order[sh.key.part];
        let lines = &self.tl.lines;
        let req = sh.req;
        let len = sh.key.len;
        let need = sh.key.need;
        let thr = need.thr();
        let total = total_tasks(&req);
        let fits = |node: usize| {
            let n = &view.nodes[node];
            move |c: u32, m: u64| capacity_with(n.cpus, n.mem_mb, c, m, &req) >= thr
        };
        let cap_at = |node: usize, t: i64| {
            let n = &view.nodes[node];
            let (c, m) = lines[node].peak(t, t.saturating_add(len));
            capacity_with(n.cpus, n.mem_mb, c, m, &req)
        };

        // Nodes taken out of the heap during this search, with their lower bound for later.
        let mut taken: Vec<(i64, u32)> = Vec::new();
        // Taken nodes not usable at `t`: the time from which they might be.
        let mut waiting: BinaryHeap<Reverse<(i64, u32)>> = BinaryHeap::new();
        // Taken nodes usable at `t`, in the order they were found, with their capacity.
        let mut usable: Vec<(u32, u32)> = Vec::new();
        let mut t = start;
        let result = loop {
            if t > by {
                break None;
            }
            // Re-check nodes usable at the previous time.
            let mut k = 0;
            while k < usable.len() {
                let (pos, _) = usable[k];
                let node = order[pos as usize];
                match lines[node].earliest(t, len, self.latest, fits(node)) {
                    Some(e) if e == t => {
                        usable[k].1 = cap_at(node, t);
                        k += 1;
                    }
                    Some(e) => {
                        waiting.push(Reverse((e, pos)));
                        usable.remove(k);
                    }
                    None => {
                        usable.remove(k);
                    }
                }
            }
            let mut done = satisfied(need, total, &usable);
            // Nodes waiting for `t`.
            while !done {
                let Some(&Reverse((e, pos))) = waiting.peek() else {
                    break;
                };
                if e > t {
                    break;
                }
                waiting.pop();
                let node = order[pos as usize];
                match lines[node].earliest(t, len, self.latest, fits(node)) {
                    Some(e) if e == t => {
                        usable.push((pos, cap_at(node, t)));
                        done = satisfied(need, total, &usable);
                    }
                    Some(e) => waiting.push(Reverse((e, pos))),
                    None => {}
                }
            }
            // Fresh nodes from the heap whose lower bound is at or before `t`.
            while !done {
                let Some(&Reverse((key, pos))) = sh.heap.peek() else {
                    break;
                };
                if key > t {
                    break;
                }
                sh.heap.pop();
                let node = order[pos as usize];
                let Some(lb) = lines[node].earliest(key.max(from), len, self.latest, fits(node))
                else {
                    continue;
                };
                taken.push((lb, pos));
                let e = if lb >= t {
                    Some(lb)
                } else {
                    lines[node].earliest(t, len, self.latest, fits(node))
                };
                match e {
                    Some(e) if e == t => {
                        usable.push((pos, cap_at(node, t)));
                        done = satisfied(need, total, &usable);
                    }
                    Some(e) => waiting.push(Reverse((e, pos))),
                    None => {}
                }
            }
            if done {
                let mut cands: Vec<(u32, u32)> = usable.clone();
                if let Need::Single { .. } = need {
                    cands.truncate(1);
                }
                // In preference order, as `place` expects.
                cands.sort_unstable();
                let cands: Vec<(usize, u32)> = cands
                    .iter()
                    .map(|&(pos, c)| (order[pos as usize], c))
                    .collect();
                // `satisfied` holds exactly when `place_caps` succeeds.
                let placed = place_caps(&cands, &req, |i| view.nodes[i].mem_mb);
                debug_assert!(placed.is_some(), "satisfied but not placed: {req:?}");
                break placed.map(|p| Found {
                    start: t,
                    placement: p,
                });
            }
            // The next time anything can change: a node's lower bound, a waiting node's
            // time, or a change in a usable node's capacity.
            let mut next = i64::MAX;
            if let Some(&Reverse((key, _))) = sh.heap.peek() {
                next = next.min(key);
            }
            if let Some(&Reverse((e, _))) = waiting.peek() {
                next = next.min(e);
            }
            for &(pos, _) in &usable {
                if let Some(c) = lines[order[pos as usize]].next_change(t) {
                    next = next.min(c);
                }
            }
            if next == i64::MAX {
                break None;
            }
            debug_assert!(next > t);
            t = next;
        };
        for e in taken {
            sh.heap.push(Reverse(e));
        }
        match &result {
            Some(f) => sh.lo = f.start,
            None if by >= self.latest => sh.never = true,
            None => sh.lo = sh.lo.max(by.saturating_add(1)),
        }
        result
    }

    /// Holds `placement`'s resources over `[start, start + len)`.
    pub(crate) fn commit(&mut self, placement: &Placement, start: i64, len: i64) {
        let end = start.saturating_add(len);
        for a in &placement.nodes {
            self.tl.add(a.node, start, end, a.cpus, a.mem_mb);
        }
    }
}

/// Whether the usable nodes gathered so far hold the job.
fn satisfied(need: Need, total: u32, usable: &[(u32, u32)]) -> bool {
    match need {
        Need::Single { thr } => usable.first().is_some_and(|u| u.1 >= thr),
        Need::Spread { .. } => usable.iter().map(|u| u.1).fold(0u32, u32::saturating_add) >= total,
        Need::Exact { n, .. } => {
            let n = n as usize;
            if usable.len() < n || (total as usize) < n {
                return false;
            }
            let mut caps: Vec<u32> = usable.iter().map(|u| u.1).collect();
            caps.sort_unstable_by(|a, b| b.cmp(a));
            caps[..n].iter().fold(0u32, |a, &c| a.saturating_add(c)) >= total
        }
    }
}

/// Why a job cannot run in a partition at all, or `None` if it may.
pub(crate) fn partition_bar(
    job: &QueuedJob,
    view: &ClusterView,
    p: usize,
) -> Option<Option<Reason>> {
    let part = view.partitions.get(p)?;
    if !part.up {
        return Some(Some(Reason::PartitionDown));
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
    order.sort_by(|a, b| {
        b.priority
            .cmp(&a.priority)
            .then(a.submit_time.cmp(&b.submit_time))
            .then(a.id.cmp(&b.id))
    });
    order
}

/// EASY and conservative backfill (see [`Policy`]).
///
/// Pass 1 decides, in priority order: a job whose earliest start is now starts; one that
/// cannot gets its reason and, for conservative or the first `reserve` eligible jobs of EASY,
/// a reservation. Pass 2 (EASY only) plans the other waiting jobs, again in priority order, on
/// the timeline pass 1 left (every start and reservation known), each held for the ones after
/// it, for their estimates: a lower-priority job backfilled in pass 1 can no longer make an
/// estimate wrong.
pub(crate) fn decide_backfill(
    view: &ClusterView,
    queue: &[QueuedJob],
    now: i64,
    config: &SchedConfig,
) -> Decisions {
    let reserve = match config.policy {
        Policy::Easy { reserve } => reserve,
        Policy::Conservative => usize::MAX,
        Policy::Fifo => 0,
    };
    let mut pl = Planner::new(view, now, config);
    let mut blocked = vec![false; view.partitions.len()];
    let mut reserved = 0usize;
    let mut out = Decisions::default();
    let mut later: Vec<&QueuedJob> = Vec::new();
    let mut estimates: BTreeMap<JobId, Estimate> = BTreeMap::new();
    let order = priority_order(queue);
    for &job in &order {
        if let Some(r) = job.held {
            out.waiting.push((job.id, r));
            continue;
        }
        let begin = job.begin_time.filter(|&b| b > now);
        let mut bars: Vec<(usize, Option<Reason>)> = Vec::new();
        let mut best: Option<(usize, Found, i64)> = None;
        let mut started = false;
        for &p in &job.partitions {
            let Some(bar) = partition_bar(job, view, p) else {
                continue;
            };
            bars.push((p, bar));
            if bar.is_some() {
                continue;
            }
            let len = Planner::planning_len(job, view, p, config);
            let Some(f) = pl.earliest(p, &job.req, len, begin, begin.unwrap_or(now)) else {
                continue;
            };
            if f.start == now && begin.is_none() {
                pl.commit(&f.placement, now, len);
                out.starts.push(Start {
                    job_id: job.id,
                    partition: p,
                    placement: f.placement,
                });
                started = true;
                break;
            }
            if best.as_ref().is_none_or(|b| f.start < b.1.start) {
                best = Some((p, f, len));
            }
        }
        if started {
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
        let Some((p, f, len)) = best else {
            continue;
        };
        let hold = match config.policy {
            Policy::Conservative => true,
            _ => begin.is_none() && reserved < reserve,
        };
        if hold {
            pl.commit(&f.placement, f.start, len);
            reserved += 1;
            estimates.insert(
                job.id,
                Estimate {
                    job_id: job.id,
                    start: f.start,
                    partition: p,
                    placement: f.placement,
                    reserved: true,
                },
            );
        } else {
            later.push(job);
        }
    }
    for job in later {
        if let Some(e) = plan_estimate(&mut pl, job, view, now, config, None) {
            estimates.insert(job.id, e);
        }
    }
    // In priority order, like the rest.
    out.estimates = order
        .iter()
        .filter_map(|j| estimates.remove(&j.id))
        .collect();
    out
}

/// Plans `job` at its earliest start (not before `floor[p]` in partition `p`, when given) in
/// any of its partitions, holds its resources for the jobs planned after it, and returns the
/// estimate.
fn plan_estimate(
    pl: &mut Planner,
    job: &QueuedJob,
    view: &ClusterView,
    now: i64,
    config: &SchedConfig,
    floor: Option<&[i64]>,
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
        if let Some(f) = pl.earliest(p, &job.req, len, begin, from) {
            if best.as_ref().is_none_or(|b| f.start < b.1.start) {
                best = Some((p, f, len));
            }
        }
    }
    let (p, f, len) = best?;
    pl.commit(&f.placement, f.start, len);
    Some(Estimate {
        job_id: job.id,
        start: f.start,
        partition: p,
        placement: f.placement,
        reserved: false,
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

/// Start estimates for the jobs FIFO leaves waiting: each is planned, in priority order, at
/// its earliest start no earlier than that of any job before it that waits in one of its
/// partitions (FIFO never starts a job before the one blocking it), and its resources are held
/// for the jobs after it.
pub(crate) fn fifo_estimates(
    view: &ClusterView,
    queue: &[QueuedJob],
    now: i64,
    config: &SchedConfig,
    d: &Decisions,
) -> Vec<Estimate> {
    let mut pl = Planner::new(view, now, config);
    let by_id: BTreeMap<JobId, &QueuedJob> = queue.iter().map(|j| (j.id, j)).collect();
    for s in &d.starts {
        if let Some(job) = by_id.get(&s.job_id) {
            let len = Planner::planning_len(job, view, s.partition, config);
            pl.commit(&s.placement, now, len);
        }
    }
    let waiting: BTreeMap<JobId, Reason> = d.waiting.iter().copied().collect();
    let mut floor = vec![now; view.partitions.len()];
    let mut out = Vec::new();
    for job in priority_order(queue) {
        let Some(&reason) = waiting.get(&job.id) else {
            continue;
        };
        if job.held.is_some() {
            continue;
        }
        let e = plan_estimate(&mut pl, job, view, now, config, Some(&floor));
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
