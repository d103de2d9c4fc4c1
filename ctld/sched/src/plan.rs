//! The planner of one pass: answers "can this job start now, and where?" and "when, at the
//! earliest, can it start, and where?" on the [`Timeline`], and holds what is decided.
//!
//! # Why it is fast
//!
//! A pass may look at 100,000 jobs on 10,000 nodes, so the planner never scans every node for
//! every job.
//!
//! * **Starting now** goes through a segment tree per partition over its nodes in preference
//!   order, holding the CPUs and memory free at `now`: the first node with room is found in
//!   O(log n), busy subtrees are skipped, and each candidate's whole window is then checked
//!   against the reservations on it. When no job of a given shape can start now, that stays
//!   true for the rest of the pass (the timeline only fills), so the next job of that shape is
//!   answered at once.
//! * **Planning later** (reservations, estimates) keeps, per group of similar requests (see
//!   [`GroupKey`]), a min-heap of `(time, node)` where `time` is a lower bound of the earliest
//!   time that node can take the group's per-node need for the group's length. Within a pass
//!   the timeline only fills, so a node's earliest time can only move later and a stale key
//!   stays a lower bound: a search pops the smallest key, recomputes that node's earliest time
//!   from the key on, and either uses the node (the key was right: no node left in the heap
//!   can do better) or pushes it back with the new key. Every job of a group after the first
//!   resumes where the last one stopped. A new heap starts from a copy of the heap of an
//!   easier group (less CPU, less memory, shorter), whose keys are lower bounds too.
//! * Jobs needing several nodes gather nodes from the same heap at increasing times until a
//!   placement exists. Candidate times are the heap's keys and the next breakpoints of the
//!   nodes gathered (a window's capacity only changes there), so no possible start is skipped.
//!
//! Searches are exact: a reservation is at the earliest time any placement of the job exists
//! (the property tests check it against brute force).
//!
//! # Placement
//!
//! Now, a job takes nodes first fit in preference order (weight, then config order), the
//! order [`crate::place`] uses. Later, it takes the nodes usable at its earliest time in the
//! order the search meets them: by the time they became usable, then preference order. The
//! split of tasks, memory per node and `--mem=0` follow [`crate::place`]'s rules on the nodes
//! taken. A job that may spread over nodes (`-n` without `-N`) starts now on one node if one has
//! room, else spread; it is planned later on one node if one node of the partition can take it
//! within the horizon, else spread. `-N 1` is first fit too (where [`crate::place`], and so
//! FIFO, takes the roomiest node).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

use gsched_proto::job::MemRequest;

use crate::gpu::{self, GpuUse};
use crate::place::{
    assign_gpus, capacity_cap, capacity_with, packed_first, place_caps, total_tasks,
};
use crate::timeline::Timeline;
use crate::{ClusterView, Placement, QueuedJob, ResourceRequest, SchedConfig};

/// A small multiplicative hasher with a fixed seed: the planner's maps are only looked up,
/// never iterated, and this keeps them free of per-process randomness.
#[derive(Debug, Default)]
struct FixedHasher(u64);

impl Hasher for FixedHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    fn write_u32(&mut self, v: u32) {
        self.write_u64(v as u64);
    }
    fn write_u8(&mut self, v: u8) {
        self.write_u64(v as u64);
    }
    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }
    fn write_i64(&mut self, v: i64) {
        self.write_u64(v as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

type Map<K, V> = HashMap<K, V, BuildHasherDefault<FixedHasher>>;

/// What one node must have free, over the whole window, to be of use to a search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct NodeNeed {
    cpus: u32,
    mem_mb: u64,
    /// `--mem=0`: no memory of the node may be in use.
    whole_mem: bool,
}

impl NodeNeed {
    /// The need for `tasks` tasks of `req` on one node (`None` if no node can ever give
    /// `tasks` under `--ntasks-per-node`).
    fn of(req: &ResourceRequest, tasks: u32) -> Option<NodeNeed> {
        let per = match req.ntasks_per_node {
            Some(t) if t.max(1) < tasks => return None,
            Some(t) => t.max(1),
            None => tasks.max(1),
        };
        let cpus = per.saturating_mul(req.cpus_per_task.max(1));
        let (mem_mb, whole_mem) = match req.mem {
            None => (0, false),
            Some(MemRequest::PerNode(0)) => (0, true),
            Some(MemRequest::PerNode(m)) => (m, false),
            Some(MemRequest::PerCpu(m)) => (m.saturating_mul(cpus as u64), false),
        };
        Some(NodeNeed {
            cpus,
            mem_mb,
            whole_mem,
        })
    }

    fn easier_or_equal(&self, other: &NodeNeed) -> bool {
        self.cpus <= other.cpus && self.mem_mb <= other.mem_mb && self.whole_mem <= other.whole_mem
    }
}

/// How a search judges that the nodes it gathered hold the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Kind {
    /// One node with `tasks` tasks.
    Single { tasks: u32 },
    /// Nodes with at least the need each, `total` tasks together.
    Spread { total: u32 },
    /// Exactly `n` nodes, `total` tasks together.
    Exact { n: u32, total: u32 },
}

/// One search: the per-node need and its length, how completion is judged, and the request
/// (for capacities).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct SearchKey {
    part: usize,
    len: i64,
    need: NodeNeed,
    kind: Kind,
    cpus_per_task: u32,
    ntasks_per_node: Option<u32>,
    mem: (u8, u64),
}

/// Searches share a heap when they are in the same partition, need the same CPUs on a node
/// (and `--mem=0` or not), and their lengths fall in the same band of a factor of four. The
/// heap's keys are computed for the group's *basis*, the shortest length and the least memory
/// among the pass's searches in the group, so they are lower bounds for every member; a member
/// whose own length or memory rules a node out at a time sets it aside for that search only.
///
/// Coarse groups matter: every start or reservation lands on the nodes at the front of every
/// heap, which must then re-check them when next searched, so the work per job grows with the
/// number of heaps in use. On the benchmark's queue (100,000 jobs, 10,000 nodes) grouping this
/// way takes conservative planning from 4.4 s to 0.8 s; bands of 2x give 1.3 s, separate
/// memory bands 1.6 s, and one band for all lengths is faster on round limits but 14 s when
/// every job has a limit of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct GroupKey {
    part: usize,
    cpus: u32,
    whole_mem: bool,
    len_band: u8,
}

/// Bands of a factor of four: 0 for 0, then `[1, 4)`, `[4, 16)`, ... (the half-octave
/// `band` below, four at a time).
fn len_band(secs: i64) -> u8 {
    band(secs.max(1) as u64) / 4
}

/// Half-octave bands: 0 for 0, then 1, 1.5, 2, 3, 4, 6, 8, ... times a power of two.
fn band(v: u64) -> u8 {
    if v == 0 {
        return 0;
    }
    let k = 63 - v.leading_zeros();
    let half = if k >= 1 { (v >> (k - 1)) & 1 } else { 0 };
    (2 * k + half as u32 + 1) as u8
}

/// The smallest value of half-octave band `b`.
fn band_floor(b: u8) -> u64 {
    if b == 0 {
        return 0;
    }
    let k = (b as u32 - 1) / 2;
    if (b - 1) % 2 == 1 {
        3u64 << (k - 1)
    } else {
        1u64 << k
    }
}

impl GroupKey {
    fn of(part: usize, len: i64, need: NodeNeed) -> GroupKey {
        GroupKey {
            part,
            cpus: need.cpus,
            whole_mem: need.whole_mem,
            len_band: len_band(len),
        }
    }
}

fn mem_key(m: Option<MemRequest>) -> (u8, u64) {
    match m {
        None => (0, 0),
        Some(MemRequest::PerNode(v)) => (1, v),
        Some(MemRequest::PerCpu(v)) => (2, v),
    }
}

/// Lower bounds of every node's earliest time for one need, as a min-heap of
/// `(seconds after now) << 32 | position` (8 bytes an entry: the heaps hold every node).
#[derive(Debug, Clone)]
struct Heap {
    entries: BinaryHeap<Reverse<u64>>,
    /// The need and length the keys are computed for.
    basis: (NodeNeed, i64),
    /// Searches of this heap begin at or after this; keys are lower bounds for them.
    from: i64,
}

fn pack(off: u64, pos: u32) -> Reverse<u64> {
    Reverse((off.min(u32::MAX as u64) << 32) | pos as u64)
}

fn unpack(e: Reverse<u64>) -> (u64, u32) {
    (e.0 >> 32, e.0 as u32)
}

/// What a search knows across jobs: no start before `lo`; none at all by the horizon.
#[derive(Debug, Clone, Copy)]
struct SearchState {
    lo: i64,
    never: bool,
}

/// The result of a search: when, where.
#[derive(Debug, Clone)]
pub(crate) struct Found {
    pub(crate) start: i64,
    pub(crate) placement: Placement,
}

/// Max free CPUs and memory at `now` over a partition's nodes in preference order.
#[derive(Debug, Clone)]
struct NowIndex {
    leaves: usize,
    cpus: Vec<u32>,
    mem: Vec<u64>,
    /// Free CPUs now, all nodes together.
    total_cpus: u64,
}

impl NowIndex {
    fn new(free: impl ExactSizeIterator<Item = (u32, u64)>) -> Self {
        let leaves = free.len().next_power_of_two().max(1);
        let mut ix = NowIndex {
            leaves,
            cpus: vec![0; 2 * leaves],
            mem: vec![0; 2 * leaves],
            total_cpus: 0,
        };
        for (i, (c, m)) in free.enumerate() {
            ix.cpus[leaves + i] = c;
            ix.mem[leaves + i] = m;
            ix.total_cpus += c as u64;
        }
        for i in (1..leaves).rev() {
            ix.cpus[i] = ix.cpus[2 * i].max(ix.cpus[2 * i + 1]);
            ix.mem[i] = ix.mem[2 * i].max(ix.mem[2 * i + 1]);
        }
        ix
    }

    fn set(&mut self, pos: usize, c: u32, m: u64) {
        let mut i = self.leaves + pos;
        self.total_cpus = self.total_cpus - self.cpus[i] as u64 + c as u64;
        self.cpus[i] = c;
        self.mem[i] = m;
        while i > 1 {
            i /= 2;
            self.cpus[i] = self.cpus[2 * i].max(self.cpus[2 * i + 1]);
            self.mem[i] = self.mem[2 * i].max(self.mem[2 * i + 1]);
        }
    }

    /// The first position at or after `from` with at least `c` CPUs and `m` MB free.
    fn next(&self, from: usize, c: u32, m: u64) -> Option<usize> {
        self.find(1, 0, self.leaves, from, c, m)
    }

    fn find(&self, i: usize, lo: usize, hi: usize, from: usize, c: u32, m: u64) -> Option<usize> {
        if hi <= from || self.cpus[i] < c || self.mem[i] < m {
            return None;
        }
        if hi - lo == 1 {
            return Some(lo);
        }
        let mid = (lo + hi) / 2;
        self.find(2 * i, lo, mid, from, c, m)
            .or_else(|| self.find(2 * i + 1, mid, hi, from, c, m))
    }
}

/// The planner of one pass: the timeline, the start-now index and the search states.
pub(crate) struct Planner<'a> {
    view: &'a ClusterView,
    tl: Timeline,
    now: i64,
    /// Last start time planned (`now` + horizon).
    latest: i64,
    /// Per partition: its usable nodes, by weight then config order, without duplicates.
    order: Vec<Vec<usize>>,
    /// Per node: `(partition, position in its order)`.
    places: Vec<Vec<(usize, usize)>>,
    now_ix: Vec<NowIndex>,
    heaps: Vec<Heap>,
    /// The group of each heap, in the order they were made (iterated: never the map).
    heap_keys: Vec<GroupKey>,
    heap_ix: Map<GroupKey, usize>,
    /// Each group's basis: shortest length, least memory.
    bases: Map<GroupKey, (i64, u64)>,
    searches: Map<SearchKey, SearchState>,
    /// Per node: GPU holds over time, running (to their expected ends) and planned.
    gpu_holds: Vec<Vec<GpuHoldAt>>,
}

/// A hold on one GPU over `[start, end)`.
#[derive(Debug, Clone)]
struct GpuHoldAt {
    start: i64,
    end: i64,
    /// Position in the node's [`crate::NodeView::gpus`].
    pos: usize,
    user: u32,
    share: Option<gsched_proto::gpu::GpuShare>,
}

impl<'a> Planner<'a> {
    /// The planner for a pass over `queue`, which it reads once to group its searches.
    pub(crate) fn new(
        view: &'a ClusterView,
        queue: &[QueuedJob],
        now: i64,
        config: &SchedConfig,
    ) -> Self {
        let order: Vec<Vec<usize>> = view
            .partitions
            .iter()
            .map(|p| {
                let mut v: Vec<usize> = p
                    .nodes
                    .iter()
                    .copied()
                    .filter(|&i| i < view.nodes.len() && view.nodes[i].available)
                    .collect();
                v.sort_by_key(|&i| crate::score::preference(&view.nodes[i], i));
                v.dedup();
                v
            })
            .collect();
        let mut places = vec![Vec::new(); view.nodes.len()];
        for (p, o) in order.iter().enumerate() {
            for (pos, &n) in o.iter().enumerate() {
                places[n].push((p, pos));
            }
        }
        let tl = Timeline::new(view, now);
        let now_ix = order
            .iter()
            .map(|o| NowIndex::new(o.iter().map(|&n| Self::free_now(view, &tl, n))))
            .collect();
        // Keys are stored as u32 seconds after now.
        let horizon = config.horizon_secs.clamp(0, u32::MAX as i64 - 1);
        let mut bases: Map<GroupKey, (i64, u64)> = Map::default();
        for job in queue {
            for &p in job
                .partitions
                .iter()
                .filter(|&&p| p < view.partitions.len())
            {
                let len = Self::planning_len(job, view, p, config);
                for (kind, tasks) in Self::kinds(&job.req) {
                    if let Some(k) = Self::search_key(p, len, &job.req, kind, tasks) {
                        let b = bases
                            .entry(GroupKey::of(p, len, k.need))
                            .or_insert((len, k.need.mem_mb));
                        *b = (b.0.min(len), b.1.min(k.need.mem_mb));
                    }
                }
            }
        }
        // GPU holds of running jobs last until their expected ends (as the timeline's CPUs);
        // holds of jobs the view does not list as running last for ever.
        let ends: std::collections::BTreeMap<gsched_proto::job::JobId, i64> = view
            .running
            .iter()
            .map(|r| (r.job_id, r.end.max(now + 1)))
            .collect();
        let gpu_holds = view
            .nodes
            .iter()
            .map(|n| {
                n.gpus
                    .iter()
                    .enumerate()
                    .flat_map(|(pos, g)| g.holds.iter().map(move |h| (pos, h)))
                    .map(|(pos, h)| GpuHoldAt {
                        start: now,
                        end: ends.get(&h.job_id).copied().unwrap_or(crate::UNLIMITED_END),
                        pos,
                        user: h.user,
                        share: h.share.clone(),
                    })
                    .collect()
            })
            .collect();
        Planner {
            gpu_holds,
            view,
            tl,
            now,
            latest: now.saturating_add(horizon),
            order,
            places,
            now_ix,
            heaps: Vec::new(),
            heap_keys: Vec::new(),
            heap_ix: Map::default(),
            bases,
            searches: Map::default(),
        }
    }

    fn free_now(view: &ClusterView, tl: &Timeline, node: usize) -> (u32, u64) {
        let n = &view.nodes[node];
        let (c, m) = tl.lines[node].first();
        (n.cpus.saturating_sub(c), n.mem_mb.saturating_sub(m))
    }

    /// Seconds the planner holds `job`'s resources for in partition `part`.
    pub(crate) fn planning_len(
        job: &QueuedJob,
        view: &ClusterView,
        part: usize,
        cfg: &SchedConfig,
    ) -> i64 {
        match job.time_limit.or(view.partitions[part].max_time) {
            Some(m) => (m as i64 * 60).max(1),
            None => cfg.default_limit_secs.max(1),
        }
    }

    /// The searches to try for `req`, in order.
    fn kinds(req: &ResourceRequest) -> Vec<(Kind, u32)> {
        let total = total_tasks(req);
        match (req.nodes, req.ntasks_per_node) {
            (Some(n), _) if n >= 2 && total < n => Vec::new(),
            (Some(n), tpn) if n >= 2 => vec![(Kind::Exact { n, total }, tpn.unwrap_or(1))],
            (Some(_), _) => vec![(Kind::Single { tasks: total }, total)],
            (None, Some(tpn)) if tpn.max(1) >= total => {
                vec![(Kind::Single { tasks: total }, total)]
            }
            (None, Some(tpn)) => vec![(Kind::Spread { total }, tpn.max(1))],
            (None, None) if total <= 1 => vec![(Kind::Single { tasks: 1 }, 1)],
            (None, None) => vec![
                (Kind::Single { tasks: total }, total),
                (Kind::Spread { total }, 1),
            ],
        }
    }

    fn search_key(
        part: usize,
        len: i64,
        req: &ResourceRequest,
        kind: Kind,
        tasks: u32,
    ) -> Option<SearchKey> {
        Some(SearchKey {
            part,
            len,
            need: NodeNeed::of(req, tasks)?,
            kind,
            cpus_per_task: req.cpus_per_task,
            ntasks_per_node: req.ntasks_per_node,
            mem: mem_key(req.mem),
        })
    }

    /// Whether node `node` can take `need` over `[t, t + len)`, and the tasks of `req` it
    /// can take then.
    fn usable_at(
        &self,
        node: usize,
        need: NodeNeed,
        req: &ResourceRequest,
        t: i64,
        len: i64,
    ) -> Option<u32> {
        let n = &self.view.nodes[node];
        let (c, m) = self.tl.lines[node].peak(t, t.saturating_add(len));
        fits(n.cpus, n.mem_mb, need)(c, m).then(|| capacity_with(n.cpus, n.mem_mb, c, m, req))
    }

    /// Where `req` can start now in partition `part` for `len` seconds without touching
    /// anything held later, if anywhere.
    pub(crate) fn start_now(
        &mut self,
        part: usize,
        req: &ResourceRequest,
        len: i64,
    ) -> Option<Placement> {
        if req.constrained() {
            return self.constrained_at(part, req, len, self.now);
        }
        for (kind, tasks) in Self::kinds(req) {
            let Some(key) = Self::search_key(part, len, req, kind, tasks) else {
                continue;
            };
            if self
                .searches
                .get(&key)
                .is_some_and(|s| s.never || s.lo > self.now)
            {
                continue;
            }
            if let Some(p) = self.gather_now(part, req, len, kind, key.need) {
                return Some(p);
            }
            let st = self.searches.entry(key).or_insert(SearchState {
                lo: self.now,
                never: false,
            });
            st.lo = st.lo.max(self.now + 1);
        }
        None
    }

    /// The first node, in preference order, that takes all of `req` now for `len` seconds:
    /// [`crate::place`]'s choice for a request without `-N` when one node has room. `None`
    /// if `req` is not such a request or no node has room.
    pub(crate) fn first_fit_now(
        &mut self,
        part: usize,
        req: &ResourceRequest,
        len: i64,
    ) -> Option<Placement> {
        if req.nodes.is_some() || req.constrained() {
            return None;
        }
        let total = total_tasks(req);
        let kind = Kind::Single { tasks: total };
        let key = Self::search_key(part, len, req, kind, total)?;
        if self
            .searches
            .get(&key)
            .is_some_and(|s| s.never || s.lo > self.now)
        {
            return None;
        }
        let found = self.gather_now(part, req, len, kind, key.need);
        if found.is_none() {
            let st = self.searches.entry(key).or_insert(SearchState {
                lo: self.now,
                never: false,
            });
            st.lo = st.lo.max(self.now + 1);
        }
        found
    }

    fn gather_now(
        &self,
        part: usize,
        req: &ResourceRequest,
        len: i64,
        kind: Kind,
        need: NodeNeed,
    ) -> Option<Placement> {
        let ix = &self.now_ix[part];
        let order = &self.order[part];
        if let Kind::Spread { total } = kind {
            if ix.total_cpus < (total as u64).saturating_mul(req.cpus_per_task.max(1) as u64) {
                return None;
            }
        }
        let mut usable: Vec<(u32, u32)> = Vec::new();
        let mut pos = 0;
        while let Some(p) = ix.next(pos, need.cpus, need.mem_mb) {
            pos = p + 1;
            let node = order[p];
            let Some(cap) = self.usable_at(node, need, req, self.now, len) else {
                continue;
            };
            usable.push((p as u32, cap));
            if satisfied(kind, &usable) {
                let cands: Vec<(usize, u32)> = usable
                    .iter()
                    .map(|&(p, c)| (order[p as usize], c))
                    .collect();
                let placed = place_caps(&cands, req, |i| {
                    (self.view.nodes[i].cpus, self.view.nodes[i].mem_mb)
                });
                debug_assert!(placed.is_some(), "satisfied but not placed: {req:?}");
                return placed;
            }
        }
        None
    }

    /// Earliest start at or after `from` (after now) of `req` planned for `len` seconds in
    /// partition `part`, with its placement; `None` if none by the horizon. `begin` marks a
    /// job with its own earliest time (`--begin`): its search runs on a copy, so it leaves
    /// the shared heaps as they are.
    pub(crate) fn earliest(
        &mut self,
        part: usize,
        req: &ResourceRequest,
        len: i64,
        from: i64,
        begin: bool,
    ) -> Option<Found> {
        let from = from.max(self.now + 1);
        if req.constrained() {
            return self.constrained_earliest(part, req, len, from);
        }
        for (kind, tasks) in Self::kinds(req) {
            let Some(key) = Self::search_key(part, len, req, kind, tasks) else {
                continue;
            };
            let group = GroupKey::of(part, len, key.need);
            let found = if begin {
                let mut heap = self.heap_copy(group, from);
                let mut st = SearchState {
                    lo: from,
                    never: false,
                };
                self.search(&mut heap, &mut st, key, req, from)
            } else {
                let h = self.heap(group, from);
                let empty = Heap {
                    entries: BinaryHeap::new(),
                    basis: self.heaps[h].basis,
                    from,
                };
                let mut heap = std::mem::replace(&mut self.heaps[h], empty);
                let mut st = self.searches.get(&key).copied().unwrap_or(SearchState {
                    lo: self.now,
                    never: false,
                });
                let f = self.search(&mut heap, &mut st, key, req, from);
                self.heaps[h] = heap;
                self.searches.insert(key, st);
                f
            };
            if found.is_some() {
                return found;
            }
        }
        None
    }

    /// The index of the shared heap of `group`, made if missing.
    fn heap(&mut self, group: GroupKey, from: i64) -> usize {
        if let Some(&h) = self.heap_ix.get(&group) {
            if self.heaps[h].from <= from {
                return h;
            }
            // Not expected (searches of a heap only move forward): start it again.
            self.heaps[h] = self.fresh_heap(group, from);
            return h;
        }
        let heap = self.heap_copy(group, from);
        self.heaps.push(heap);
        self.heap_keys.push(group);
        self.heap_ix.insert(group, self.heaps.len() - 1);
        self.heaps.len() - 1
    }

    /// The basis of `group`: from the queue, or the least its bands allow.
    fn basis(&self, group: GroupKey) -> (NodeNeed, i64) {
        let (len, mem_mb) = self
            .bases
            .get(&group)
            .copied()
            .unwrap_or((band_floor(group.len_band * 4) as i64, 0));
        let need = NodeNeed {
            cpus: group.cpus,
            mem_mb,
            whole_mem: group.whole_mem,
        };
        (need, len)
    }

    /// A heap for `group`: a copy of the heap of the closest easier basis (its keys are lower
    /// bounds for this one too), or every node at `from`.
    fn heap_copy(&self, group: GroupKey, from: i64) -> Heap {
        let basis = self.basis(group);
        let easier = self
            .heaps
            .iter()
            .enumerate()
            .filter(|&(h, heap)| {
                self.heap_keys[h].part == group.part
                    && heap.basis.1 <= basis.1
                    && heap.basis.0.easier_or_equal(&basis.0)
                    && heap.from <= from
            })
            .max_by_key(|&(h, heap)| {
                let (need, len) = heap.basis;
                (need.cpus, need.mem_mb, len, need.whole_mem, Reverse(h))
            })
            .map(|(h, _)| h);
        match easier {
            Some(h) => Heap {
                entries: self.heaps[h].entries.clone(),
                basis,
                from,
            },
            None => self.fresh_heap(group, from),
        }
    }

    fn fresh_heap(&self, group: GroupKey, from: i64) -> Heap {
        let off = (from - self.now) as u64;
        // Equal keys in position order already form a heap.
        let v: Vec<Reverse<u64>> = (0..self.order[group.part].len() as u32)
            .map(|pos| pack(off, pos))
            .collect();
        Heap {
            entries: BinaryHeap::from(v),
            basis: self.basis(group),
            from,
        }
    }

    /// The search proper, on `heap` (lower bounds), at or after `from`.
    fn search(
        &self,
        heap: &mut Heap,
        st: &mut SearchState,
        key: SearchKey,
        req: &ResourceRequest,
        from: i64,
    ) -> Option<Found> {
        if st.never {
            return None;
        }
        let by = self.latest;
        let now = self.now;
        let order = &self.order[key.part];
        let lines = &self.tl.lines;
        let view = self.view;
        let need = key.need;
        let len = key.len;
        let kind = key.kind;
        let (basis_need, basis_len) = heap.basis;
        let at_basis = heap.basis == (need, len);
        heap.from = heap.from.max(from);
        let mut t = from.max(st.lo);
        // This search's earliest time on a node, and the heap's (for its keys).
        let earliest = |node: usize, at: i64| {
            let n = &view.nodes[node];
            lines[node].earliest(at, len, by, fits(n.cpus, n.mem_mb, need))
        };
        let earliest_basis = |node: usize, at: i64| {
            let n = &view.nodes[node];
            lines[node].earliest(at, basis_len, by, fits(n.cpus, n.mem_mb, basis_need))
        };
        let cap_at = |node: usize, at: i64| {
            let n = &view.nodes[node];
            let (c, m) = lines[node].peak(at, at.saturating_add(len));
            capacity_with(n.cpus, n.mem_mb, c, m, req)
        };
        // Nodes taken out of the heap, with their lower bound to put back.
        let mut taken: Vec<(i64, u32)> = Vec::new();
        // Taken nodes not usable at `t`: from when they might be.
        let mut waiting: BinaryHeap<Reverse<(i64, u32)>> = BinaryHeap::new();
        // Taken nodes usable at `t`, with their capacity then.
        let mut usable: Vec<(u32, u32)> = Vec::new();
        let result = loop {
            if t > by {
                break None;
            }
            let mut k = 0;
            while k < usable.len() {
                let (pos, _) = usable[k];
                let node = order[pos as usize];
                match earliest(node, t) {
                    Some(e) if e == t => {
                        usable[k].1 = cap_at(node, t);
                        k += 1;
                    }
                    other => {
                        if let Some(e) = other {
                            waiting.push(Reverse((e, pos)));
                        }
                        usable.swap_remove(k);
                    }
                }
            }
            let mut done = satisfied(kind, &usable);
            while !done {
                let Some(&Reverse((e, pos))) = waiting.peek() else {
                    break;
                };
                if e > t {
                    break;
                }
                waiting.pop();
                let node = order[pos as usize];
                match earliest(node, t) {
                    Some(e) if e == t => {
                        usable.push((pos, cap_at(node, t)));
                        done = satisfied(kind, &usable);
                    }
                    Some(e) => waiting.push(Reverse((e, pos))),
                    None => {}
                }
            }
            while !done {
                let Some(&top) = heap.entries.peek() else {
                    break;
                };
                let (off, pos) = unpack(top);
                let key_t = now + off as i64;
                if key_t > t {
                    break;
                }
                let node = order[pos as usize];
                let Some(lb) = earliest_basis(node, key_t.max(from)) else {
                    heap.entries.pop();
                    continue;
                };
                if lb > t {
                    // Stale: put it back where it belongs, without taking it.
                    let mut top = heap.entries.peek_mut().expect("peeked");
                    *top = pack((lb - now) as u64, pos);
                    continue;
                }
                heap.entries.pop();
                taken.push((lb, pos));
                // A member of the group whose own length or memory binds keeps the node
                // aside for this search only: the heap keeps the basis's bound.
                let e = if lb == t && at_basis {
                    Some(t)
                } else {
                    earliest(node, t)
                };
                match e {
                    Some(e) if e == t => {
                        usable.push((pos, cap_at(node, t)));
                        done = satisfied(kind, &usable);
                    }
                    Some(e) => waiting.push(Reverse((e, pos))),
                    None => {}
                }
            }
            if done {
                usable.sort_unstable();
                let cands: Vec<(usize, u32)> = usable
                    .iter()
                    .map(|&(pos, c)| (order[pos as usize], c))
                    .collect();
                // `satisfied` holds exactly when `place_caps` succeeds.
                let placed =
                    place_caps(&cands, req, |i| (view.nodes[i].cpus, view.nodes[i].mem_mb));
                debug_assert!(placed.is_some(), "satisfied but not placed: {req:?}");
                break placed.map(|p| Found {
                    start: t,
                    placement: p,
                });
            }
            // The next time anything can change: a node's lower bound, a waiting node's
            // time, or a change in a usable node's capacity.
            let mut next = i64::MAX;
            if let Some(&top) = heap.entries.peek() {
                next = next.min(now + unpack(top).0 as i64);
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
        for (lb, pos) in taken {
            heap.entries.push(pack((lb - now) as u64, pos));
        }
        match &result {
            Some(f) => st.lo = f.start,
            None => st.never = true,
        }
        result
    }

    /// Where a constrained request (node filter, `--exclusive`) fits over `[t, t + len)` in
    /// partition `part`, given everything held: [`place_caps`] over the allowed nodes with
    /// the tasks each takes over the whole window.
    fn constrained_at(
        &self,
        part: usize,
        req: &ResourceRequest,
        len: i64,
        t: i64,
    ) -> Option<Placement> {
        let view = self.view;
        let rules = view.partitions[part].gpu;
        let end = t.saturating_add(len);
        let cands: Vec<(usize, u32)> = self.order[part]
            .iter()
            .copied()
            .filter(|&i| req.allows(i))
            .filter_map(|i| {
                let n = &view.nodes[i];
                let (c, m) = self.tl.lines[i].peak(t, end);
                let gpu_cap = match &req.gpu {
                    Some(need) => gpu::task_cap(&n.gpus, &self.gpu_uses(i, t, end), need, rules),
                    None => u32::MAX,
                };
                let cap = capacity_cap(n.cpus, n.mem_mb, c, m, req, gpu_cap);
                (cap > 0).then_some((i, cap))
            })
            .collect();
        let cands = packed_first(cands, req, |i| {
            let need = req.gpu.as_deref()?;
            gpu::pack_key(&view.nodes[i].gpus, &self.gpu_uses(i, t, end), need, rules)
        });
        let mut p = place_caps(&cands, req, |i| (view.nodes[i].cpus, view.nodes[i].mem_mb))?;
        assign_gpus(&mut p, req, rules, |i| {
            (&view.nodes[i].gpus[..], self.gpu_uses(i, t, end))
        })?;
        Some(p)
    }

    /// What is in use on each GPU of `node` at any time in `[s, e)`: every hold that meets
    /// the window counts, which is never less than the truth at any instant of it.
    fn gpu_uses(&self, node: usize, s: i64, e: i64) -> Vec<GpuUse> {
        let mut uses = vec![
            GpuUse {
                window_end: Some(e),
                ..GpuUse::default()
            };
            self.view.nodes[node].gpus.len()
        ];
        for h in &self.gpu_holds[node] {
            if h.start < e && h.end > s {
                let u = &mut uses[h.pos];
                u.add(h.user, h.share.as_ref());
                u.until = u.until.max(h.end);
            }
        }
        uses
    }

    /// The earliest start at or after `from` of a constrained request: tried at `from` and
    /// at every later change of an allowed node's use, up to the horizon. Slower than the
    /// shared searches, but only such jobs pay for it.
    fn constrained_earliest(
        &self,
        part: usize,
        req: &ResourceRequest,
        len: i64,
        from: i64,
    ) -> Option<Found> {
        let mut t = from;
        while t <= self.latest {
            if let Some(p) = self.constrained_at(part, req, len, t) {
                return Some(Found {
                    start: t,
                    placement: p,
                });
            }
            t = self.order[part]
                .iter()
                .filter(|&&i| req.allows(i))
                .filter_map(|&i| self.tl.lines[i].next_change(t))
                .min()?;
        }
        None
    }

    /// Where `req` fits over `[t, t + len)` in partition `part` given everything held and,
    /// on top, `extra` (node, CPUs, memory) taken by the components of the same
    /// heterogeneous job already placed at `t`: [`place_caps`] over the allowed nodes with
    /// the tasks each takes over the whole window. Adding `extra` to the window's peak is
    /// exact at `t` and never less than the truth later, so a placement found never
    /// over-allocates.
    pub(crate) fn fit_with(
        &self,
        part: usize,
        req: &ResourceRequest,
        len: i64,
        t: i64,
        extra: &[(usize, u32, u64)],
    ) -> Option<Placement> {
        let view = self.view;
        let cands: Vec<(usize, u32)> = self.order[part]
            .iter()
            .copied()
            .filter(|&i| req.allows(i))
            .filter_map(|i| {
                let n = &view.nodes[i];
                let (mut c, mut m) = self.tl.lines[i].peak(t, t.saturating_add(len));
                for &(node, ec, em) in extra {
                    if node == i {
                        c = c.saturating_add(ec);
                        m = m.saturating_add(em);
                    }
                }
                let cap = capacity_with(n.cpus, n.mem_mb, c, m, req);
                (cap > 0).then_some((i, cap))
            })
            .collect();
        place_caps(&cands, req, |i| (view.nodes[i].cpus, view.nodes[i].mem_mb))
    }

    /// The first time after `t` at which the use of any node of `parts` changes, if any
    /// (the candidate start times of a heterogeneous job).
    pub(crate) fn next_change_in(&self, parts: &[usize], t: i64) -> Option<i64> {
        parts
            .iter()
            .filter_map(|&p| self.order.get(p))
            .flatten()
            .filter_map(|&i| self.tl.lines[i].next_change(t))
            .min()
    }

    /// The planning horizon: nothing is planned to start later.
    pub(crate) fn latest(&self) -> i64 {
        self.latest
    }

    /// Holds `placement`'s resources over `[start, start + len)`; its GPUs for `user`.
    pub(crate) fn commit(&mut self, placement: &Placement, start: i64, len: i64, user: u32) {
        let end = start.saturating_add(len);
        for a in &placement.nodes {
            self.tl.add(a.node, start, end, a.cpus, a.mem_mb);
            for g in &a.gpus {
                let gpus = &self.view.nodes[a.node].gpus;
                if let Some(pos) = gpus.iter().position(|v| v.device.index == g.index) {
                    self.gpu_holds[a.node].push(GpuHoldAt {
                        start,
                        end,
                        pos,
                        user,
                        share: g.share.clone(),
                    });
                }
            }
            if start <= self.now {
                let (c, m) = Self::free_now(self.view, &self.tl, a.node);
                for &(p, pos) in &self.places[a.node] {
                    self.now_ix[p].set(pos, c, m);
                }
            }
        }
    }
}

/// Whether a node of `cpus` CPUs and `mem_mb` memory with the given use still takes `need`.
fn fits(cpus: u32, mem_mb: u64, need: NodeNeed) -> impl Fn(u32, u64) -> bool {
    move |c: u32, m: u64| {
        cpus.saturating_sub(c) >= need.cpus
            && mem_mb.saturating_sub(m) >= need.mem_mb
            && (!need.whole_mem || m == 0)
    }
}

/// Whether the usable nodes gathered so far, `(position, tasks they take)`, hold the job;
/// exactly when [`place_caps`] succeeds on them.
fn satisfied(kind: Kind, usable: &[(u32, u32)]) -> bool {
    match kind {
        Kind::Single { tasks } => usable.iter().any(|u| u.1 >= tasks),
        Kind::Spread { total } => {
            usable.iter().map(|u| u.1).fold(0u32, u32::saturating_add) >= total
        }
        Kind::Exact { n, total } => {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_octave_bands() {
        let got: Vec<u8> = [0u64, 1, 2, 3, 4, 5, 6, 7, 8, 11, 12, 3600, 4095]
            .iter()
            .map(|&v| band(v))
            .collect();
        assert_eq!(got, vec![0, 1, 3, 4, 5, 5, 6, 6, 7, 7, 8, 24, 24]);
        assert_eq!(
            [1i64, 3, 4, 15, 16, 3600, 86_400].map(len_band),
            [0, 1, 1, 2, 2, 6, 8]
        );
        for b in 0..10u8 {
            let f = band_floor(b * 4).max(1) as i64;
            assert_eq!(len_band(f), b, "{b}");
        }
        for v in [1u64, 2, 3, 5, 6, 7, 100, 3600, 86_400, u32::MAX as u64] {
            let b = band(v);
            assert!(band_floor(b) <= v, "{v}");
            assert_eq!(band(band_floor(b)), b, "{v}");
        }
    }
}
