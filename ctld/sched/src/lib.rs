//! gsched's scheduler core: given the cluster, the queue and the time, decide which jobs start
//! now and where, why the others wait, and when they are expected to start.
//!
//! This crate is **pure and deterministic**: no I/O, no clock, no threads, no randomness, and
//! no hash-map order reaches the output. Time is an argument (epoch seconds). The controller
//! calls [`decide`] on every event, and the trace simulator calls the very same function, so
//! every policy can be measured offline against real workloads. Keep it that way: anything
//! that needs the outside world is gathered by the caller into a [`ClusterView`] and a queue of
//! [`QueuedJob`]s.
//!
//! Jobs are always taken by priority, then submit time, then id. What happens to a job that
//! cannot start is the [`Policy`]:
//!
//! * [`Policy::Fifo`] (Slurm's `sched/builtin`, the default): it blocks every lower-priority job
//!   of its partitions, so nothing starves and nothing jumps the queue.
//! * [`Policy::Easy`]: the first `reserve` such jobs get a *reservation* (nodes, CPUs and
//!   memory from their earliest possible start for their whole time limit); lower-priority
//!   jobs start now only where they cannot touch a reservation (backfill).
//! * [`Policy::Conservative`]: every job gets a reservation, so a job never starts later than
//!   it was planned because of a job behind it.
//!
//! Under both backfill policies a job with a `--time-min` ([`QueuedJob::time_min`]) that
//! cannot start now with its full limit may start with its limit lowered, to the longest
//! whole number of minutes, no less than its minimum, that touches no reservation; the
//! [`Start`] carries the lowered limit, which becomes the job's (Slurm's backfill does this).
//!
//! Backfill plans on a timeline of every node built from the running jobs' expected
//! ends ([`ClusterView::running`]); the planner (`plan.rs`) explains how it stays fast. Every
//! waiting job that is not held gets an expected start ([`Decisions::estimates`]) when one
//! exists within [`SchedConfig::horizon_secs`]: its reservation, else a start planned in
//! priority order for the first [`SchedConfig::plan_depth`] jobs, else a lower bound (see
//! [`EstimateKind`]). [`priority`] holds Slurm's multifactor priority as pure functions for the
//! controller to compute [`QueuedJob::priority`] with.

#![forbid(unsafe_code)]

use std::sync::Arc;

use gsched_proto::job::{JobId, MemRequest, Reason};

mod backfill;
mod config;
pub mod gpu;
mod het;
mod place;
mod plan;
pub mod predict;
pub mod price;
pub mod priority;
pub mod score;
mod timeline;
pub mod topology;

pub use gpu::{GpuAmount, GpuHold, GpuNeed, GpuRules, GpuView};
pub use het::HetMember;
pub use place::{place, place_in, NodeAlloc, Placement};
pub use priority::{
    classic_fairshare, decay, multifactor_priority, FairShare, FsNode, PriorityBreakdown,
    PriorityInputs, PriorityWeights,
};

/// The end to give a running job without a time limit: later than any planning looks.
pub const UNLIMITED_END: i64 = i64::MAX / 4;

/// One node as the scheduler sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeView {
    /// Shared with the controller's node table (a pass builds a view of every node).
    pub name: std::sync::Arc<str>,
    pub cpus: u32,
    pub mem_mb: u64,
    pub alloc_cpus: u32,
    pub alloc_mem_mb: u64,
    /// Registered, responding, not drained or down: new jobs may start here.
    pub available: bool,
    /// Lower weight is preferred (Slurm's `Weight=`).
    pub weight: u32,
    /// The node's features (`Features=`), matched by `--constraint`.
    pub features: Vec<String>,
    /// Scored down for placement by this much (0: not at all); see [`score`].
    pub penalty: u32,
    /// The node's GPUs and who holds them now (see [`gpu`]).
    pub gpus: Vec<GpuView>,
}

impl NodeView {
    pub fn free_cpus(&self) -> u32 {
        self.cpus.saturating_sub(self.alloc_cpus)
    }
    pub fn free_mem_mb(&self) -> u64 {
        self.mem_mb.saturating_sub(self.alloc_mem_mb)
    }

    /// Takes what `a` gives job `job_id` of `user` on this node: CPUs, memory and GPUs.
    pub fn take(&mut self, a: &NodeAlloc, job_id: JobId, user: u32) {
        self.alloc_cpus += a.cpus;
        self.alloc_mem_mb += a.mem_mb;
        for g in &a.gpus {
            if let Some(v) = self.gpus.iter_mut().find(|v| v.device.index == g.index) {
                v.holds.push(GpuHold {
                    job_id,
                    user,
                    share: g.share.clone(),
                });
            }
        }
    }
}

/// One partition: a named set of nodes with limits.
#[derive(Debug, Clone, PartialEq)]
pub struct PartitionView {
    pub name: String,
    /// Indices into [`ClusterView::nodes`].
    pub nodes: Vec<usize>,
    /// `State=UP` or `DRAIN`: jobs may start (a drained partition takes no new jobs but
    /// runs those it has).
    pub up: bool,
    /// `State=INACTIVE` (with `up` false): pending jobs wait with reason
    /// `PartitionInactive` rather than `PartitionDown`.
    pub inactive: bool,
    /// Minutes; `None` = UNLIMITED.
    pub max_time: Option<u32>,
    /// How jobs may share the partition's GPUs (`GpuSharing=`, `GpuOverSubscribe=`).
    pub gpu: gpu::GpuRules,
}

/// A running job's resources and when they are expected back.
#[derive(Debug, Clone, PartialEq)]
pub struct RunningAlloc {
    pub job_id: JobId,
    /// Expected end, epoch seconds: start + time limit, or [`UNLIMITED_END`] for a job without
    /// one. An end already past (a job being killed) counts as one second from now.
    pub end: i64,
    /// What it holds on each node (`tasks` is not used).
    pub nodes: Vec<NodeAlloc>,
}

/// Everything the scheduler may look at about the cluster.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClusterView {
    pub nodes: Vec<NodeView>,
    pub partitions: Vec<PartitionView>,
    /// Running jobs, for planning: when their resources come back. [`NodeView::alloc_cpus`]
    /// and [`NodeView::alloc_mem_mb`] stay the truth about *now* (the sum of these and of
    /// anything else holding the node); only [`Policy::Easy`] and [`Policy::Conservative`]
    /// decisions, and the estimates, read this. A job missing here holds its share of the
    /// node's allocation for ever, as far as planning knows.
    pub running: Vec<RunningAlloc>,
    /// Counted limits (QOS `MaxJobsPerUser`, association `MaxJobs`, ...) that queued jobs
    /// name in [`QueuedJob::limits`]; each start takes from what is left.
    pub limits: Vec<LimitSlot>,
    /// Windows in which nodes take no job (maintenance reservations): nothing is started or
    /// planned on a node that would still run when its window begins.
    pub blackouts: Vec<Blackout>,
}

/// Nodes that take no job over `[start, end)` (a `Flags=MAINT` reservation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blackout {
    /// Indices into [`ClusterView::nodes`].
    pub nodes: Vec<usize>,
    pub start: i64,
    pub end: i64,
}

impl ClusterView {
    /// Whether node `i` is in a blackout at some time of `[s, e)`.
    pub fn blacked_out(&self, i: usize, s: i64, e: i64) -> bool {
        self.blackouts
            .iter()
            .any(|b| b.start < e && s < b.end && b.nodes.contains(&i))
    }
}

/// What a counted limit counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitUnit {
    /// One per job started.
    Jobs,
    /// The CPUs each job started gets.
    Cpus,
    /// What each job names of it ([`ResourceRequest::licenses`]): a license's free count.
    Count,
}

/// One counted limit (for example "jobs user bob may still start in QOS normal"): the caller
/// subtracts what already runs; a job naming it starts only while enough is left, and
/// otherwise waits with `reason` (no reservation: it waits for a limit, not for resources).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitSlot {
    pub left: u64,
    pub unit: LimitUnit,
    pub reason: Reason,
}

/// What is left of every limit during one pass.
#[derive(Debug, Clone)]
pub(crate) struct LimitsLeft(Vec<u64>);

impl LimitsLeft {
    pub(crate) fn new(view: &ClusterView) -> LimitsLeft {
        LimitsLeft(view.limits.iter().map(|l| l.left).collect())
    }

    /// The reason of the first limit of `job` that cannot take it, if any.
    pub(crate) fn blocks(&self, job: &QueuedJob, view: &ClusterView) -> Option<Reason> {
        let cpus = u64::from(job.req.tasks.max(1)) * u64::from(job.req.cpus_per_task.max(1));
        self.short(job, view, cpus)
    }

    /// The first limit (or license) of `job` with less left than it needs.
    fn short(&self, job: &QueuedJob, view: &ClusterView, cpus: u64) -> Option<Reason> {
        let counted = job.limits.iter().find_map(|&i| {
            let l = view.limits.get(i)?;
            let need = match l.unit {
                LimitUnit::Jobs => 1,
                LimitUnit::Cpus => cpus,
                LimitUnit::Count => 0,
            };
            (self.0[i] < need).then_some(l.reason)
        });
        counted.or_else(|| {
            job.req.licenses.iter().find_map(|&(i, n)| {
                let l = view.limits.get(i)?;
                (self.0[i] < u64::from(n)).then_some(l.reason)
            })
        })
    }

    /// The reason of the first limit of `job` that cannot take it on `placement` (an
    /// exclusive job gets more CPUs than it asked for), if any.
    pub(crate) fn refuses(
        &self,
        job: &QueuedJob,
        placement: &Placement,
        view: &ClusterView,
    ) -> Option<Reason> {
        let cpus: u64 = placement.nodes.iter().map(|a| u64::from(a.cpus)).sum();
        self.short(job, view, cpus)
    }

    /// Takes a started job from every limit it names.
    pub(crate) fn take(&mut self, job: &QueuedJob, placement: &Placement, view: &ClusterView) {
        let cpus: u64 = placement.nodes.iter().map(|a| u64::from(a.cpus)).sum();
        for &i in &job.limits {
            if let Some(l) = view.limits.get(i) {
                let n = match l.unit {
                    LimitUnit::Jobs => 1,
                    LimitUnit::Cpus => cpus,
                    LimitUnit::Count => 0,
                };
                self.0[i] = self.0[i].saturating_sub(n);
            }
        }
        for &(i, n) in &job.req.licenses {
            if let Some(left) = self.0.get_mut(i) {
                *left = left.saturating_sub(u64::from(n));
            }
        }
    }
}

/// What a job needs, in the terms placement works with.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ResourceRequest {
    /// Exact node count (`-N`); `None` = as few as needed.
    pub nodes: Option<u32>,
    pub tasks: u32,
    pub cpus_per_task: u32,
    pub ntasks_per_node: Option<u32>,
    pub mem: Option<MemRequest>,
    /// `--exclusive`: whole nodes only (no other job on them; all their CPUs are the job's,
    /// memory only as requested).
    pub exclusive: bool,
    /// Which nodes the job may and must use (`--nodelist`, `--exclude`, `--constraint`);
    /// `None` = any node of the partition, none required.
    pub filter: Option<Arc<NodeFilter>>,
    /// GPUs on each node (`--gres=gpu`, `--gpus*`, `--gpu-mem`, ...); `None` = no GPU.
    pub gpu: Option<Arc<GpuNeed>>,
    /// Cluster-wide licenses (`--licenses`): (index into [`ClusterView::limits`], count).
    /// The job starts only while each has that many left, and takes them.
    pub licenses: Vec<(usize, u32)>,
}

impl ResourceRequest {
    /// Whether the request needs the per-job placement path (a node filter, whole nodes or
    /// GPUs) rather than the planner's shared searches. GPU jobs take it because the shared
    /// searches plan CPUs and memory only; the per-job path checks GPUs over the whole window.
    pub fn constrained(&self) -> bool {
        self.exclusive || self.filter.is_some() || self.gpu.is_some()
    }

    /// The user GPU shares are held for (0 for a job without GPUs).
    pub fn gpu_user(&self) -> u32 {
        self.gpu.as_ref().map_or(0, |g| g.user)
    }

    /// Whether the job may use node `i`.
    pub fn allows(&self, i: usize) -> bool {
        self.filter.as_ref().is_none_or(|f| f.allows(i))
    }

    /// The nodes the job must get (`--nodelist`), sorted.
    pub fn required(&self) -> &[usize] {
        self.filter.as_ref().map_or(&[], |f| &f.required)
    }
}

/// A per-node feature expression of `--constraint`: one feature, `a&b` (all), `a|b` (any),
/// or any expression with parentheses ([`gsched_proto::constraint::NodeExpr`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FeatureExpr {
    All(Vec<String>),
    Any(Vec<String>),
    Tree(gsched_proto::constraint::NodeExpr),
}

impl FeatureExpr {
    /// Whether a node with `features` satisfies the expression.
    pub fn matches(&self, features: &[String]) -> bool {
        let has = |f: &String| features.iter().any(|x| x == f);
        match self {
            FeatureExpr::All(v) => v.iter().all(has),
            FeatureExpr::Any(v) => v.iter().any(has),
            FeatureExpr::Tree(e) => e.matches(features),
        }
    }
}

/// Which nodes one job may use and which it must use.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NodeFilter {
    /// Per node index: whether the job may use it; `None` = every node.
    pub allowed: Option<Vec<bool>>,
    /// Node indices the job must be given (`--nodelist`), sorted, without duplicates.
    pub required: Vec<usize>,
    /// Matching OR (`--constraint=[a|b]`): per alternative, which nodes satisfy it; all the
    /// nodes of a placement satisfy the same alternative, the first in this order that has
    /// a placement. Empty: no such constraint.
    pub alternatives: Vec<Vec<bool>>,
    /// Node counts (`--constraint=[a*2&b*1]`): per term, which nodes satisfy it and how many
    /// of the placement's nodes (distinct per term) must. Empty: no counts.
    pub counts: Vec<(Vec<bool>, u32)>,
    /// Topology (`topology/tree`): the nodes' leaf switches and the job's `--switches`
    /// limit; placement spans as few switches as it can. `None`: no topology.
    pub topology: Option<Arc<topology::SwitchLimit>>,
}

impl NodeFilter {
    /// The filter for `required` nodes (which must get into the allocation), `excluded`
    /// nodes (never used) and an optional feature expression, over `nodes`. Required nodes
    /// are allowed unless excluded or lacking the features (then no placement exists).
    pub fn new(
        nodes: &[NodeView],
        required: &[usize],
        excluded: &[usize],
        features: Option<&FeatureExpr>,
    ) -> NodeFilter {
        let mut req: Vec<usize> = required.to_vec();
        req.sort_unstable();
        req.dedup();
        let allowed = if excluded.is_empty() && features.is_none() {
            None
        } else {
            Some(
                nodes
                    .iter()
                    .enumerate()
                    .map(|(i, n)| {
                        !excluded.contains(&i) && features.is_none_or(|f| f.matches(&n.features))
                    })
                    .collect(),
            )
        };
        NodeFilter {
            allowed,
            required: req,
            ..NodeFilter::default()
        }
    }

    /// The filter for `required` nodes, `excluded` nodes and a `--constraint` over `n` nodes
    /// whose features `features(i)` gives: the nodes the constraint lets the job use at all,
    /// its matching-OR alternatives and its node counts, each as a per-node mask.
    pub fn from_constraint<'a>(
        n: usize,
        features: impl Fn(usize) -> &'a [String],
        required: &[usize],
        excluded: &[usize],
        constraint: Option<&gsched_proto::constraint::ConstraintSpec>,
    ) -> NodeFilter {
        use gsched_proto::constraint::{ConstraintSpec, NodeExpr};
        let mask = |e: &NodeExpr| -> Vec<bool> { (0..n).map(|i| e.matches(features(i))).collect() };
        let (ok, alternatives, counts): (Option<Vec<bool>>, Vec<Vec<bool>>, _) = match constraint {
            None => (None, Vec::new(), Vec::new()),
            Some(ConstraintSpec::Each(e)) => (Some(mask(e)), Vec::new(), Vec::new()),
            Some(ConstraintSpec::MatchingOr(alts)) => {
                let alts: Vec<Vec<bool>> = alts.iter().map(mask).collect();
                let any = (0..n).map(|i| alts.iter().any(|a| a[i])).collect();
                (Some(any), alts, Vec::new())
            }
            Some(ConstraintSpec::Counts { each, counts }) => (
                each.as_ref().map(mask),
                Vec::new(),
                counts.iter().map(|(e, k)| (mask(e), *k)).collect(),
            ),
        };
        let mut req: Vec<usize> = required.to_vec();
        req.sort_unstable();
        req.dedup();
        let allowed = (!excluded.is_empty() || ok.is_some()).then(|| {
            (0..n)
                .map(|i| !excluded.contains(&i) && ok.as_ref().is_none_or(|m| m[i]))
                .collect()
        });
        NodeFilter {
            allowed,
            required: req,
            alternatives,
            counts,
            topology: None,
        }
    }

    pub fn allows(&self, i: usize) -> bool {
        self.allowed
            .as_ref()
            .is_none_or(|a| a.get(i).copied().unwrap_or(false))
    }
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
    /// `--time-min`, minutes: under backfill the job may start now with its limit lowered to
    /// no less than this where its full limit would delay a reservation (as Slurm's backfill
    /// does). `None` = the limit is never lowered.
    pub time_min: Option<u32>,
    pub req: ResourceRequest,
    /// Indices into [`ClusterView::limits`] of the counted limits this job is subject to.
    pub limits: Vec<usize>,
    /// A component of a heterogeneous job: it starts with all the other components of its
    /// het job or not at all (see `het.rs`). `None` for an ordinary job.
    pub het: Option<HetMember>,
}

/// What happens to jobs that cannot start now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Policy {
    /// Priority order; a job that cannot start blocks lower-priority jobs of its partitions.
    #[default]
    Fifo,
    /// EASY backfill: reservations for the first `reserve` jobs that cannot start (usually 1:
    /// [`Policy::EASY`]); lower-priority jobs start only where they delay no reservation.
    Easy { reserve: usize },
    /// Conservative backfill: a reservation for every job.
    Conservative,
}

impl Policy {
    /// EASY with one reservation.
    pub const EASY: Policy = Policy::Easy { reserve: 1 };
}

/// Scheduler settings taken from the config.
#[derive(Debug, Clone, PartialEq)]
pub struct SchedConfig {
    pub policy: Policy,
    /// Seconds a job without a time limit, in a partition without `MaxTime`, is planned for
    /// (default 365 days, as Slurm plans such jobs).
    pub default_limit_secs: i64,
    /// How far ahead starts are planned: no reservation or estimate begins later than
    /// `now + horizon_secs` (default 7 days).
    pub horizon_secs: i64,
    /// Under FIFO and EASY, how many waiting jobs without a reservation get a
    /// [`EstimateKind::Planned`] start, in priority order; the jobs after them get a
    /// [`EstimateKind::NotBefore`] bound (default 1,000; conservative plans every job). On the
    /// benchmark's 100,000 jobs and 10,000 nodes planning costs about 9 µs a job, a bound about
    /// 0.6 µs: planning every job makes an EASY pass about 0.9 s instead of 0.12 s.
    pub plan_depth: usize,
    /// Compute [`Decisions::estimates`] under [`Policy::Fifo`] (default true).
    pub fifo_estimates: bool,
}

impl Default for SchedConfig {
    fn default() -> Self {
        SchedConfig {
            policy: Policy::Fifo,
            default_limit_secs: 365 * 24 * 3600,
            horizon_secs: 7 * 24 * 3600,
            plan_depth: 1000,
            fifo_estimates: true,
        }
    }
}

/// How much an [`Estimate`] promises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EstimateKind {
    /// A reservation: the resources are held for the job from its start for its whole time
    /// limit, and no lower-priority job may use them. The job starts then at the latest if
    /// running jobs end by their limits (EASY's first `reserve` waiting jobs; every job under
    /// conservative).
    Reserved,
    /// Planned in priority order with everything before it held: when the job starts if
    /// jobs run to their limits, nothing new arrives and nothing is backfilled ahead of it.
    Planned,
    /// A lower bound, for the jobs beyond [`SchedConfig::plan_depth`]: the earliest start
    /// given what runs, starts, is reserved or planned, but not the other bounded jobs.
    NotBefore,
}

/// When and where a waiting job is expected to start.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    pub job_id: JobId,
    /// Epoch seconds.
    pub start: i64,
    /// Index of the partition it is planned in.
    pub partition: usize,
    pub placement: Placement,
    pub kind: EstimateKind,
}

/// Start a job now on these resources.
#[derive(Debug, Clone, PartialEq)]
pub struct Start {
    pub job_id: JobId,
    /// Index of the partition it runs in.
    pub partition: usize,
    pub placement: Placement,
    /// `Some(m)`: the job starts with its time limit lowered to `m` minutes (its
    /// [`QueuedJob::time_min`] let it fit before a reservation); the caller records the new
    /// limit, which is the job's kill time from now on. `None`: the limit is unchanged.
    pub time_limit: Option<u32>,
}

/// The outcome of one scheduling pass.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Decisions {
    pub starts: Vec<Start>,
    /// Why each job that does not start keeps waiting.
    pub waiting: Vec<(JobId, Reason)>,
    /// Expected starts of waiting jobs (not held; within the horizon), in priority order.
    pub estimates: Vec<Estimate>,
}

/// Decides which queued jobs start at `now`, and where; why the others wait and when they
/// are expected to start.
///
/// Deterministic: the same arguments always give the same decisions, whatever the order of
/// `queue` (job ids being unique) and of [`ClusterView::running`].
pub fn decide(
    view: &ClusterView,
    queue: &[QueuedJob],
    now: i64,
    config: &SchedConfig,
) -> Decisions {
    decide_inner(view, queue, now, config, &Default::default())
}

/// [`decide`], where the jobs in `deferred` (time-of-use deferral, `price.rs`: their
/// `begin_time` is their chosen start) always hold a reservation under backfill.
pub(crate) fn decide_inner(
    view: &ClusterView,
    queue: &[QueuedJob],
    now: i64,
    config: &SchedConfig,
    deferred: &std::collections::BTreeSet<JobId>,
) -> Decisions {
    // Nothing to decide: no plan of the nodes is needed (with 10,000 nodes registering and
    // every registration waking the controller's pass, building it was most of the work).
    if queue.is_empty() {
        return Decisions::default();
    }
    match config.policy {
        Policy::Fifo => decide_fifo(view, queue, now, config),
        Policy::Easy { .. } | Policy::Conservative => {
            backfill::decide_backfill(view, queue, now, config, deferred)
        }
    }
}

/// Priority order with resource matching, placement at `now` only; then the estimates.
///
/// The decisions are exactly those of [`place`] on the nodes as each start leaves them. A
/// request without `-N` that one node can hold goes to the first such node in preference
/// order, which the planner's index finds without looking at every node; the others (spread
/// over nodes, `-N`) go through [`place`] itself.
fn decide_fifo(
    view: &ClusterView,
    queue: &[QueuedJob],
    now: i64,
    config: &SchedConfig,
) -> Decisions {
    let mut pl = plan::Planner::new(view, queue, now, config);
    let mut nodes = view.nodes.clone();
    let mut blocked = vec![false; view.partitions.len()];
    let mut out = Decisions::default();
    let order = backfill::priority_order(queue);
    let gangs = het::Gangs::new(queue);
    // Het job components decided with their first component: why each waits (`None`: starts).
    let mut gang_done: std::collections::BTreeMap<JobId, Option<Reason>> = Default::default();
    // Why each job (by its place in `order`) waits; `None` if it starts.
    let mut reasons: Vec<Option<Reason>> = Vec::with_capacity(order.len());
    let mut left = LimitsLeft::new(view);
    for &job in &order {
        if let Some(h) = job.het {
            if !gang_done.contains_key(&job.id) {
                let members = gangs.members(h.leader);
                match het::start_now(&pl, view, members, now, config, &blocked) {
                    Ok(starts) => {
                        for (start, len) in starts {
                            for a in &start.placement.nodes {
                                nodes[a.node].take(a, start.job_id, 0);
                            }
                            pl.commit(&start.placement, now, len, 0);
                            gang_done.insert(start.job_id, None);
                            out.starts.push(start);
                        }
                    }
                    Err(r) => {
                        for m in members {
                            if r == Reason::Resources {
                                for &p in &m.partitions {
                                    if let Some(b) = blocked.get_mut(p) {
                                        *b = true;
                                    }
                                }
                            }
                            out.waiting.push((m.id, r));
                            gang_done.insert(m.id, Some(r));
                        }
                    }
                }
            }
            reasons.push(gang_done.get(&job.id).copied().flatten());
            continue;
        }
        if let Some(r) = job.held {
            out.waiting.push((job.id, r));
            reasons.push(Some(r));
            continue;
        }
        if job.begin_time.is_some_and(|b| b > now) {
            out.waiting.push((job.id, Reason::BeginTime));
            reasons.push(Some(Reason::BeginTime));
            continue;
        }
        if let Some(r) = left.blocks(job, view) {
            out.waiting.push((job.id, r));
            reasons.push(Some(r));
            continue;
        }
        let mut bars = Vec::new();
        let mut started = false;
        let mut limited = None;
        let total = place::total_tasks(&job.req);
        let one_node = total <= 1 || job.req.ntasks_per_node.is_some_and(|t| t.max(1) >= total);
        for &p in &job.partitions {
            let Some(bar) = backfill::partition_bar(job, view, p) else {
                continue;
            };
            bars.push((p, bar));
            if bar.is_some() || blocked[p] {
                continue;
            }
            let len = plan::Planner::planning_len(job, view, p, config);
            let placement = match pl.first_fit_now(p, &job.req, len) {
                Some(placement) => Some(placement),
                None if job.req.nodes.is_none() && one_node && !job.req.constrained() => None,
                None => {
                    // Nodes whose maintenance window begins before the job would end are
                    // not candidates (the planner's timeline knows them already).
                    let cands: Vec<usize> = view.partitions[p]
                        .nodes
                        .iter()
                        .copied()
                        .filter(|&i| !view.blacked_out(i, now, now.saturating_add(len)))
                        .collect();
                    place::place_gpus(&nodes, &cands, &job.req, view.partitions[p].gpu)
                }
            };
            if let Some(placement) = placement {
                if let Some(r) = left.refuses(job, &placement, view) {
                    limited = Some(r);
                    break;
                }
                for a in &placement.nodes {
                    nodes[a.node].take(a, job.id, job.req.gpu_user());
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
        if started {
            reasons.push(None);
        } else if let Some(r) = limited {
            out.waiting.push((job.id, r));
            reasons.push(Some(r));
        } else {
            let r = backfill::waiting_reason(&bars, &blocked);
            if r == Reason::Resources {
                for &p in &job.partitions {
                    if let Some(b) = blocked.get_mut(p) {
                        *b = true;
                    }
                }
            }
            out.waiting.push((job.id, r));
            reasons.push(Some(r));
        }
    }
    if config.fifo_estimates {
        out.estimates =
            backfill::fifo_estimates(&mut pl, view, &order, &reasons, &gangs, now, config);
    }
    out
}

#[cfg(test)]
mod tests;
