//! The controller's state machine: jobs, nodes and partitions in memory, written through to the
//! store on every change. Every operation takes `now` as an argument and returns the
//! [`Effect`]s (messages to gsnoded) that the caller sends after releasing the lock, so this
//! module does no network I/O and its rules can be unit-tested directly.

use crate::depend::{self, DepStatus, TargetState};
use crate::store::{Store, StoreError};
use gsched_proto::api::{
    ApiError, ErrorCode, JobCompleteRequest, JobFilter, JobUpdateRequest, NodeStateUpdate,
    RunningJob, SignalScope, TerminateReason, TestOnlyAnswer,
};
use gsched_proto::auth::Identity;
use gsched_proto::config::{Config, ConfiguredNodeState, PartitionState, PriorityType};
use gsched_proto::depend::DependencySpec;
use gsched_proto::hostlist;
use gsched_proto::job::{JobId, JobInfo, JobSpec, JobState, MemRequest, Reason};
use gsched_proto::node::{NodeBaseState, NodeInfo, PartitionInfo, PartitionStateInfo};
use gsched_proto::projection::{FieldSet, Projected};
use gsched_proto::users;
use gsched_sched::{
    ClusterView, NodeAlloc, NodeFilter, NodeView, PartitionView, QueuedJob, ResourceRequest,
    RunningAlloc, SchedConfig,
};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

mod active;
mod admission;
mod arrays;
mod batch;
pub use batch::{BatchResult, Submission};
mod client_opts;
pub mod epilog;
mod gpus;
pub mod health;
mod health_check;
mod het;
pub use arrays::ArrayRt;
mod gpu_fail;
mod gpu_samples;
mod ladder;
mod launch;
mod licenses;
#[cfg(test)]
pub(crate) use launch::launches;
mod limits;
mod live_usage;
pub mod monitor;
mod notices;
mod partitions;
mod payload;
mod prolog_ctld;
pub(crate) use payload::{payload_owner, Payload};
mod predict;
mod price;
pub use price::{account as price_account, calendar as price_calendar};
mod priority;
pub use priority::{assoc_of, Assoc, Usage};
pub mod resv;
mod spec_pool;
pub mod steps;
mod suspend;

/// How long a job may be missing from its node's job list after its launch was acknowledged
/// before the controller concludes the node never got it (heartbeats can cross a launch).
pub const LOST_JOB_GRACE_SECS: i64 = 20;
/// Seconds between heartbeats that nodes are told to keep.
pub const HEARTBEAT_SECS: u32 = 5;
/// How often an unacknowledged terminate request is re-sent.
const TERMINATE_RETRY_SECS: i64 = 5;
/// The "signal" of an OOM-killed job's `ExitCode=0:125` (Slurm's).
pub const OOM_EXIT_SIGNAL: i32 = 125;
/// A requeued job becomes eligible this long after its previous run ended (Slurm shows
/// reason `BeginTime` meanwhile); also the retry delay when a node still holds the
/// previous run.
pub const REQUEUE_DELAY_SECS: i64 = 1;

/// A message for a node daemon, sent after the state lock is released.
#[derive(Debug, Clone)]
pub enum Effect {
    /// Start a run that a pass placed: its request is built when it is sent
    /// ([`State::launch_requests`], `state/launch.rs`).
    Launch {
        node: String,
        job_id: JobId,
        start_time: i64,
    },
    Terminate {
        node: String,
        job_id: JobId,
        reason: TerminateReason,
        kill_wait: u32,
    },
    Signal {
        node: String,
        job_id: JobId,
        signal: i32,
        scope: SignalScope,
    },
    /// Freeze (`suspend`) or thaw a job's processes (`scontrol suspend|resume`).
    Suspend {
        node: String,
        job_id: JobId,
        suspend: bool,
    },
    /// Run `RebootProgram` on a node (`scontrol reboot`).
    Reboot { node: String, program: String },
    /// Run `HealthCheckProgram` on a node (`state/health_check.rs`).
    HealthCheck { node: String, program: String },
    /// Run the `Epilog` of an ended run on a node (`state/epilog.rs`).
    Epilog {
        node: String,
        request: gsched_proto::api::NodeEpilogRequest,
    },
    /// Run `PrologSlurmctld` for a run a pass placed, then launch it
    /// (`state/prolog_ctld.rs`).
    PrologSlurmctld {
        node: String,
        job_id: JobId,
        start_time: i64,
    },
}

/// What the store keeps per job beyond the API record.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct JobExtra {
    /// Why the controller is ending this run, once it decided to.
    pub terminate: Option<TerminateReason>,
    /// Memory (MiB) allocated on each node of `info.nodes`.
    pub alloc_mem: Vec<u64>,
    /// The run is being ended by `scontrol requeue`: back to PENDING once it is over.
    #[serde(default)]
    pub requeue: bool,
    /// The `--signal` warning of this run was sent (kept so that a restarted controller
    /// does not send it again).
    #[serde(default)]
    pub warn_signal_sent: bool,
    /// An administrator set the priority (records stored before `JobSpec::priority` kept
    /// it here; read through [`Job::priority_fixed`], cleared by the next update).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub priority_fixed: bool,
    /// One-off notices already sent for this run (`MailTypes` bits: time-limit thresholds,
    /// INVALID_DEPEND), so a restarted controller does not repeat them.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub mail_sent: u32,
    /// `bf_predict`: the runtime predicted when this run started (planning only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted_secs: Option<i64>,
    /// `MigrateBy=`: when this run is requeued off its draining node (`state/health.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub migrate_at: Option<i64>,
    /// The nodes of the last run whose `Epilog` has not answered (`state/epilog.rs`); kept
    /// when the job goes back to the queue, which it leaves only once they are free.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epilog: Option<epilog::EpilogHold>,
    /// How this run, being ended to go back to the queue, is held there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requeue_hold: Option<RequeueHold>,
}

/// How a requeued run waits in the queue, as Slurm's requeue flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequeueHold {
    /// A node's `Prolog` failed ("launch failed requeued held"; not held with
    /// `nohold_on_prolog_fail`).
    LaunchFailed,
    /// `scontrol requeuehold` ("job requeued in held state").
    Held,
    /// `scontrol requeuehold State=SpecialExit` ("job requeued in special exit state").
    SpecialExit,
    /// `RequeueExitHold=`: SPECIAL_EXIT, held as the user's (`JobHeldUser`).
    ExitHold,
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

/// Launch progress, kept in memory only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaunchState {
    /// Launch sent; no answer yet.
    InFlight,
    /// gsnoded has the job since this time (or the controller restarted at this time).
    Acked(i64),
}

#[derive(Debug, Clone)]
pub struct Job {
    /// The record, whose spec is shared with the jobs that have the same options and
    /// leaves out the name and the submit line (`state/spec_pool.rs`); [`Job::record`] is
    /// the record as it leaves memory.
    pub info: JobInfo,
    pub extra: JobExtra,
    pub launch: Option<LaunchState>,
    pub terminate_sent_at: Option<i64>,
    pub terminate_acked: bool,
    /// `SubmitLine=`, out of the shared spec (an array's tasks share one).
    pub(crate) submit_line: std::sync::Arc<str>,
}

impl Job {
    /// The record as the store keeps it and the API shows it: the spec with the job's name
    /// and submit line (copied from the shared spec when they are not in it).
    /// An administrator fixed the priority (`--priority`, `scontrol update Priority=`):
    /// priority/multifactor leaves it alone.
    pub(crate) fn priority_fixed(&self) -> bool {
        self.info.spec.priority.is_some() || self.extra.priority_fixed
    }

    pub(crate) fn record(&self) -> JobInfo {
        let mut info = self.info.clone();
        self.complete_spec(&mut info);
        info
    }

    /// Puts this job's name and submit line into `info`'s spec (a copy of its record).
    pub(crate) fn complete_spec(&self, info: &mut JobInfo) {
        if info.spec.name != info.name || info.spec.submit_line != *self.submit_line {
            let name = info.name.clone();
            let spec = &mut *info.spec;
            spec.name = name;
            spec.submit_line = self.submit_line.to_string();
        }
    }
}

/// A job's row in the store: what the commands see and what only the controller keeps.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct StoredRecord {
    pub(crate) info: JobInfo,
    #[serde(default)]
    pub(crate) extra: JobExtra,
}

/// Admin-set node state, persisted.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct NodeAdmin {
    pub drain: bool,
    pub down: bool,
    pub reason: Option<String>,
    pub reason_time: Option<i64>,
    pub reason_uid: Option<u32>,
    /// Set DOWN by the controller for not responding (`ReturnToService=1` brings it back).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub auto_down: bool,
    /// `MigrateBy=`: the drained node is emptied by this time (`state/health.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub migrate_by: Option<i64>,
    /// `scontrol reboot` asked for a reboot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reboot: Option<health::RebootState>,
}

#[derive(Debug, Clone)]
pub struct NodeRt {
    pub name: String,
    /// `name` again, shared with every pass's view of the node (no copy per pass).
    pub(crate) view_name: std::sync::Arc<str>,
    pub addr: String,
    pub port: u16,
    pub cpus: u32,
    pub mem_mb: u64,
    pub features: Vec<String>,
    pub gres: String,
    pub weight: u32,
    pub partitions: Vec<String>,
    pub admin: NodeAdmin,
    pub registered: bool,
    pub last_heard: Option<i64>,
    /// No heartbeat for longer than SlurmdTimeout.
    pub not_responding: bool,
    /// A launch could not connect; cleared when the node is heard from again.
    pub unreachable: bool,
    pub boot_time: Option<i64>,
    pub daemon_start: Option<i64>,
    pub version: Option<String>,
    /// Load samples and the like (`state/health.rs`).
    pub life: health::NodeLifeRt,
    /// The node's GPUs: as gsnoded registered them, else as its config declares them
    /// (`state/gpus.rs`).
    pub gpus: Vec<gsched_proto::gpu::GpuDevice>,
}

#[derive(Debug, Clone)]
pub struct PartRt {
    pub name: String,
    pub nodes: Vec<usize>,
    pub default: bool,
    pub max_time: Option<u32>,
    pub default_time: Option<u32>,
    pub state: PartitionStateInfo,
    /// `GpuSharing=`, `GpuOverSubscribe=`.
    pub gpu: gsched_sched::GpuRules,
}

/// The whole controller state.
pub struct State {
    pub cfg: Arc<Config>,
    store: Store,
    /// Boxed: a `Job` is several hundred bytes, and a B-tree filled in id order leaves its
    /// nodes about half empty, which would cost that much again for every job kept.
    pub jobs: BTreeMap<JobId, Box<Job>>,
    pub nodes: Vec<NodeRt>,
    /// Node name → index into `nodes`; looked up for every started job of every pass, so
    /// with a hasher for short keys rather than the default's SipHash.
    node_index: HashMap<String, usize, foldhash::fast::RandomState>,
    pub parts: Vec<PartRt>,
    next_id: JobId,
    pub start_time: i64,
    slurm_uid: Option<u32>,
    /// `AdminUsers=` resolved (gsctld refuses to start with an unknown name).
    admin_uids: Vec<u32>,
    sched_config: SchedConfig,
    /// Arrays with tasks in `jobs`, by array job id.
    pub arrays: HashMap<JobId, ArrayRt>,
    /// Fair-share usage (priority/multifactor).
    pub usage: Usage,
    /// The fair-share factors of the last pass (priority/multifactor), for priorities
    /// computed at submission before the next pass.
    fairshare: priority::Factors,
    /// Each job's state when its record was last committed (to react to transitions).
    committed_state: HashMap<JobId, JobState>,
    /// Job notices (`--mail-type`, webhooks).
    pub notices: notices::NoticeRt,
    /// `bf_predict`: runtime predictions for planning.
    predict: predict::PredictRt,
    /// Accounts, users, associations and QOS (`gsacctmgr`).
    pub acct: crate::acct::AcctDb,
    /// The invalid-job ladder's view of running jobs' progress.
    ladder: ladder::LadderRt,
    /// Reservations (`state/resv.rs`).
    pub resvs: Vec<gsched_proto::resv::ReservationInfo>,
    /// Leaf switch of each node (`topology/tree`); empty without a topology.
    pub switch_of: Vec<Option<u32>>,
    /// Time-of-use prices, deferral and learned low-load hours (`state/price.rs`).
    price: price::PriceRt,
    /// What `/metrics` measures over time (`state/monitor.rs`).
    monitor: monitor::MonitorRt,
    /// Live usage of running jobs and nodes from the heartbeats (`state/live_usage.rs`).
    live: live_usage::LiveRt,
    /// Running and completing jobs by batch node, for the heartbeats' reconciliation.
    batch_index: BatchIndex,
    /// The jobs not finished, for the passes (`state/active.rs`).
    active: active::ActiveJobs,
    /// Equal specs of jobs in memory, shared (`state/spec_pool.rs`).
    specs: spec_pool::SpecPool,
    /// The nodes as the scheduler core sees them with nothing running, against which every
    /// submission is checked ("could it ever run?"); built at the first submission and again
    /// after a node registers other GPUs (with 10,000 nodes, building it was most of a
    /// submission's time).
    empty_view: std::cell::OnceCell<Vec<NodeView>>,
    /// Jobs that may have a RUNNING step in the store (created since start-up or found at
    /// load): the others need no query of the steps table when they end.
    jobs_with_steps: std::collections::BTreeSet<JobId>,
    /// `HealthCheckProgram` rounds (`state/health_check.rs`).
    health_check: health_check::HealthCheckRt,
    /// Jobs with an `EpilogHold` (`state/epilog.rs`).
    epilog_jobs: std::collections::BTreeSet<JobId>,
    /// Jobs whose `PrologSlurmctld` runs (CONFIGURING; `state/prolog_ctld.rs`).
    prolog_ctld_jobs: std::collections::BTreeSet<JobId>,
}

/// Running and completing jobs by their batch node (indexed like `State::nodes`): a
/// heartbeat checks the jobs of its node instead of scanning every job (with 1,000 nodes
/// heartbeating and 20,000 jobs running, that scan was three quarters of gsctld's CPU).
/// Every scheduling pass rebuilds it from the running jobs of its view, which it builds
/// anyway, and adds the jobs it starts: no walk of the jobs and no node name hashed or
/// copied for it (rebuilt once a second from the job map, copying each job's node name, it
/// was a fifth of gsctld's CPU with 64,000 jobs running on 1,000 nodes). It may miss a job
/// started since the last pass, which the node's next heartbeat checks; every job it names
/// is looked up again, so a stale entry changes nothing. [`State::load`] builds the first.
#[derive(Debug, Default)]
struct BatchIndex {
    by_node: Vec<Vec<JobId>>,
}

impl BatchIndex {
    /// Starts again from the running jobs of a view (`RunningAlloc::nodes[0]` is the batch
    /// node); the lists keep their memory.
    fn rebuild(&mut self, nodes: usize, running: &[RunningAlloc]) {
        self.by_node.resize_with(nodes, Vec::new);
        for l in &mut self.by_node {
            l.clear();
        }
        for r in running {
            self.add(r.job_id, r.nodes.first().map(|a| a.node));
        }
    }

    fn add(&mut self, id: JobId, batch_node: Option<usize>) {
        if let Some(l) = batch_node.and_then(|n| self.by_node.get_mut(n)) {
            l.push(id);
        }
    }
}

/// The partitions as the controller uses them, from the config; each node's list of its
/// partitions is set again on the way (start-up, `scontrol update PartitionName=`).
fn build_parts(
    cfg: &Config,
    node_index: &HashMap<String, usize, foldhash::fast::RandomState>,
    nodes: &mut [NodeRt],
) -> Vec<PartRt> {
    for n in nodes.iter_mut() {
        n.partitions.clear();
    }
    let mut parts = Vec::new();
    for p in &cfg.partitions {
        let idx: Vec<usize> = p
            .nodes
            .iter()
            .filter_map(|n| node_index.get(n).copied())
            .collect();
        for &i in &idx {
            nodes[i].partitions.push(p.name.clone());
        }
        parts.push(PartRt {
            name: p.name.clone(),
            nodes: idx,
            default: p.default,
            max_time: p.max_time,
            default_time: p.default_time,
            gpu: gsched_sched::GpuRules {
                multiuser: p.gpu_multiuser,
                compute_pct: p.gpu_compute_pct,
            },
            state: match p.state {
                PartitionState::Up => PartitionStateInfo::Up,
                PartitionState::Down => PartitionStateInfo::Down,
                PartitionState::Drain => PartitionStateInfo::Drain,
                PartitionState::Inactive => PartitionStateInfo::Inactive,
            },
        });
    }
    if !parts.iter().any(|p| p.default) {
        if let Some(p) = parts.first_mut() {
            p.default = true;
        }
    }
    parts
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("State")
            .field("jobs", &self.jobs.len())
            .finish()
    }
}

fn internal(e: StoreError) -> ApiError {
    ApiError::new(
        ErrorCode::Internal,
        format!("the controller could not write its state store: {e}"),
    )
}

impl State {
    /// Builds the state from the config and the store (restart recovery included).
    pub fn load(cfg: Arc<Config>, mut store: Store, now: i64) -> Result<State, StoreError> {
        let acct = crate::acct::AcctDb::load(&mut store)?;
        let usage = Usage::load(&store)?;
        let mut nodes = Vec::new();
        let mut node_index = HashMap::default();
        for n in &cfg.nodes {
            node_index.insert(n.name.clone(), nodes.len());
            let admin = NodeAdmin {
                drain: matches!(n.state, ConfiguredNodeState::Drain),
                down: matches!(n.state, ConfiguredNodeState::Down),
                ..NodeAdmin::default()
            };
            nodes.push(NodeRt {
                name: n.name.clone(),
                view_name: n.name.as_str().into(),
                addr: n.addr.clone().unwrap_or_else(|| n.name.clone()),
                port: cfg.node_port(&n.name),
                cpus: n.cpus,
                mem_mb: n.real_memory_mb,
                features: n.features.clone(),
                gres: if n.gres.is_empty() {
                    "(null)".into()
                } else {
                    n.gres
                        .iter()
                        .map(|g| match &g.gtype {
                            Some(t) => format!("{}:{}:{}", g.name, t, g.count),
                            None => format!("{}:{}", g.name, g.count),
                        })
                        .collect::<Vec<_>>()
                        .join(",")
                },
                weight: n.weight,
                partitions: Vec::new(),
                admin,
                registered: false,
                last_heard: None,
                not_responding: false,
                unreachable: false,
                boot_time: None,
                daemon_start: None,
                version: None,
                life: Default::default(),
                gpus: gpus::gpus_from_config(n),
            });
        }
        let parts = build_parts(&cfg, &node_index, &mut nodes);
        for (name, rec) in store.load_nodes()? {
            if let Some(&i) = node_index.get(&name) {
                if let Ok(a) = serde_json::from_str::<NodeAdmin>(&rec) {
                    nodes[i].admin = a;
                }
            }
        }
        let mut jobs = BTreeMap::new();
        let mut specs = spec_pool::SpecPool::default();
        for row in store.load_jobs(now - cfg.min_job_age as i64)? {
            let rec: StoredRecord =
                serde_json::from_str(&row.record).map_err(|e| StoreError::Corrupt {
                    path: store.path().to_path_buf(),
                    what: format!("job {}", row.id),
                    detail: e.to_string(),
                })?;
            // Later components of a het job hold resources without a process on a node.
            let active = matches!(rec.info.state, JobState::Running | JobState::Completing)
                && rec.info.het.is_none_or(|h| h.offset == 0);
            jobs.insert(
                row.id,
                // We cannot know whether a launch sent before the restart arrived; the
                // node's next registration tells, after the grace period.
                specs.job(
                    rec.info,
                    rec.extra,
                    active.then_some(LaunchState::Acked(now)),
                ),
            );
        }
        // As slurmctld: the stored sequence, raised to `FirstJobId` when that is larger.
        let next_id = store.next_job_id()?.max(cfg.first_job_id);
        let slurm_uid = users::user_by_name(&cfg.slurm_user).map(|u| u.uid);
        let admin_uids = cfg
            .admin_users
            .iter()
            .filter_map(|n| users::resolve_user(n).map(|u| u.uid))
            .collect();
        let sched_config = SchedConfig::from_config(&cfg);
        let resvs = resv::load(&store)?;
        let switch_of = resv::switches(&cfg, &nodes);
        let jobs_with_steps = store.jobs_with_steps_in("RUNNING")?;
        let epilog_jobs = jobs
            .iter()
            .filter(|(_, j)| j.extra.epilog.is_some())
            .map(|(id, _)| *id)
            .collect();
        let mut st = State {
            sched_config,
            cfg,
            store,
            jobs,
            nodes,
            node_index,
            parts,
            next_id,
            start_time: now,
            slurm_uid,
            admin_uids,
            arrays: HashMap::new(),
            committed_state: HashMap::new(),
            notices: Default::default(),
            predict: Default::default(),
            ladder: Default::default(),
            usage,
            fairshare: HashMap::new(),
            acct,
            resvs,
            switch_of,
            price: Default::default(),
            monitor: Default::default(),
            live: Default::default(),
            batch_index: BatchIndex::default(),
            active: Default::default(),
            specs,
            empty_view: std::cell::OnceCell::new(),
            jobs_with_steps,
            health_check: Default::default(),
            epilog_jobs,
            prolog_ctld_jobs: Default::default(),
        };
        st.active.rebuild(&st.jobs, now);
        st.committed_state = st
            .jobs
            .values()
            .map(|j| (j.info.job_id, j.info.state))
            .collect();
        st.init_predictor();
        let running = st.running_allocs();
        st.batch_index.rebuild(st.nodes.len(), &running);
        st.rebuild_arrays()?;
        st.usage.adopt_finished(st.jobs.values().map(|j| &j.info));
        Ok(st)
    }

    /// The jobs not finished (pending, running, suspended, completing), without walking the
    /// finished ones still in memory.
    pub fn unfinished_jobs(&self) -> impl Iterator<Item = &Job> + '_ {
        self.active.jobs(&self.jobs)
    }

    /// Root, SlurmUser, `AdminUsers` and the controller's own user may act on everything.
    pub fn is_admin(&self, who: &Identity) -> bool {
        self.is_slurm_user(who) || self.admin_uids.contains(&who.uid)
    }

    /// Root, SlurmUser and the controller's own user: who the node daemons run as. Only they
    /// may register nodes, heartbeat and report job ends (not `AdminUsers`).
    pub fn is_slurm_user(&self, who: &Identity) -> bool {
        who.uid == 0 || Some(who.uid) == self.slurm_uid || who.uid == users::current_ids().0
    }

    fn persist(&mut self, id: JobId) -> Result<(), StoreError> {
        let Some(job) = self.jobs.get(&id) else {
            return Ok(());
        };
        let rec = StoredRecord {
            info: job.record(),
            extra: job.extra.clone(),
        };
        let text = serde_json::to_string(&rec).map_err(|e| StoreError::Corrupt {
            path: self.store.path().to_path_buf(),
            what: format!("job {id}"),
            detail: e.to_string(),
        })?;
        let (state, end) = (job.info.state, job.info.end_time);
        self.store.update_job(id, state, end, &text)?;
        self.committed(&[id]);
        Ok(())
    }

    fn persist_many(&mut self, ids: &[JobId]) -> Result<(), StoreError> {
        if ids.is_empty() {
            return Ok(());
        }
        let mut rows = Vec::with_capacity(ids.len());
        for &id in ids {
            if let Some(job) = self.jobs.get(&id) {
                let rec = StoredRecord {
                    info: job.record(),
                    extra: job.extra.clone(),
                };
                let text = serde_json::to_string(&rec).unwrap_or_default();
                rows.push((id, job.info.state, job.info.end_time, text));
            }
        }
        self.store.transaction(|s| {
            for (id, st, end, text) in &rows {
                s.update_job(*id, *st, *end, text)?;
            }
            Ok(())
        })?;
        self.committed(ids);
        Ok(())
    }

    /// Called once the records of `ids` are in the store: what follows from their state
    /// transitions (bf_predict learns the runtime of a run that ended; notices go out).
    fn committed(&mut self, ids: &[JobId]) {
        for &id in ids {
            let Some(cur) = self.jobs.get(&id).map(|j| j.info.state) else {
                self.committed_state.remove(&id);
                continue;
            };
            self.active.note(id, cur);
            let prev = self.committed_state.insert(id, cur);
            if prev == Some(cur) {
                continue;
            }
            if prev.is_some_and(|p| !p.is_terminal()) && cur.is_terminal() {
                self.learn_runtime(id);
                self.meter_job_end(id);
            }
            self.announce_transition(id, prev, cur);
        }
    }

    fn partition_by_name(&self, name: &str) -> Option<usize> {
        self.parts.iter().position(|p| p.name == name)
    }

    fn default_partition(&self) -> Option<usize> {
        self.parts.iter().position(|p| p.default)
    }

    fn request_of(&self, spec: &JobSpec, uid: u32) -> ResourceRequest {
        let filter = self.node_filter(spec).ok().flatten();
        let mut req = ResourceRequest {
            licenses: self.license_request(spec),
            gpu: Self::gpu_need(spec, uid),
            nodes: spec.nodes,
            tasks: spec.total_tasks(),
            cpus_per_task: spec.cpus_per_task(),
            ntasks_per_node: spec.ntasks_per_node,
            mem: spec.mem,
            exclusive: spec.exclusive,
            filter: None,
        };
        if let Some(f) = filter {
            // Every `--nodelist` node is in the allocation with at least one task, as in
            // Slurm (the node count and task count rise to the list's size); so is every
            // node a `--constraint` count asks for.
            let counted: u32 = f.counts.iter().map(|c| c.1).fold(0, u32::saturating_add);
            let k = (f.required.len() as u32).max(counted);
            if k > 0 {
                if req.nodes.is_none() && req.tasks < k {
                    req.nodes = Some(k);
                }
                req.tasks = req.tasks.max(k);
            }
            req.filter = Some(Arc::new(f));
        }
        if spec.gpu.as_ref().is_some_and(|g| g.per_job.is_some()) && req.nodes.is_none() {
            // --gpus=N without -N: N GPUs on one node (see state/gpus.rs).
            req.nodes = Some(1);
        }
        req
    }

    /// The node filter of `--nodelist`, `--exclude` and `--constraint`, or `None` without
    /// them; an unknown node name or an unusable constraint is an error.
    fn node_filter(&self, spec: &JobSpec) -> Result<Option<NodeFilter>, ApiError> {
        if spec.nodelist.is_none() && spec.exclude.is_none() && spec.constraint.is_none() {
            return Ok(None);
        }
        let resolve = |list: &Option<String>| -> Result<Vec<usize>, ApiError> {
            let Some(l) = list.as_deref().map(str::trim).filter(|l| !l.is_empty()) else {
                return Ok(Vec::new());
            };
            let names = gsched_proto::hostlist::expand(l)
                .map_err(|_| ApiError::plain(ErrorCode::InvalidNodeName))?;
            names
                .iter()
                .map(|n| {
                    self.nodes
                        .iter()
                        .position(|x| &x.name == n)
                        .ok_or_else(|| ApiError::plain(ErrorCode::InvalidNodeName))
                })
                .collect()
        };
        let required = resolve(&spec.nodelist)?;
        let excluded = resolve(&spec.exclude)?;
        let constraint = match spec.constraint.as_deref() {
            None => None,
            Some(c) => Some(
                gsched_proto::job::parse_constraint(c)
                    .map_err(|e| ApiError::new(ErrorCode::InvalidFeature, e))?,
            ),
        };
        Ok(Some(NodeFilter::from_constraint(
            self.nodes.len(),
            |i| &self.nodes[i].features,
            &required,
            &excluded,
            constraint.as_ref(),
        )))
    }

    /// Accepts a job: validates it, stores it, and returns its id once committed.
    pub fn submit(&mut self, spec: JobSpec, who: Identity, now: i64) -> Result<JobId, ApiError> {
        self.submit_or_test(spec, who, now, false).map(|(id, _)| id)
    }

    /// Validates a job as [`State::submit`] does; with `test_only`, stores nothing and
    /// answers where and when it would start instead.
    fn submit_or_test(
        &mut self,
        spec: JobSpec,
        who: Identity,
        now: i64,
        test_only: bool,
    ) -> Result<(JobId, Option<TestOnlyAnswer>), ApiError> {
        let id = self.next_id;
        let (mut info, array) = self.prepare(spec, &who, now, id, true)?;
        self.check_job_count(
            array.as_ref().map_or(1, |a| a.indices.len()),
            array.is_some(),
        )?;
        if test_only {
            let answer = self.test_only_answer(&info, now);
            return Ok((id, Some(answer)));
        }
        let payload = payload::Payload::take(&mut info.spec).to_json()?;
        if let Some(array) = array {
            return self
                .insert_array(info, &payload, array)
                .map(|id| (id, None));
        }
        let rec = StoredRecord {
            info: info.clone(),
            extra: JobExtra::default(),
        };
        let text = serde_json::to_string(&rec)
            .map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))?;
        self.store
            .insert_job(id, JobState::Pending, info.user_id, &text, Some(&payload))
            .map_err(internal)?;
        self.next_id = id + 1;
        self.active.note(id, JobState::Pending);
        let job = self.specs.job(info, JobExtra::default(), None);
        self.jobs.insert(id, job);
        Ok((id, None))
    }

    /// Validates one job (or one component of a het job) and builds its record with id `id`;
    /// stores nothing. `batch`: the job runs the batch script (not a later het component),
    /// which must then look like one.
    pub(super) fn prepare(
        &self,
        mut spec: JobSpec,
        who: &Identity,
        now: i64,
        id: JobId,
        batch: bool,
    ) -> Result<(JobInfo, Option<gsched_proto::array::ArraySpec>), ApiError> {
        self.check_field_sizes(&spec)?;
        if batch && !spec.script.starts_with("#!") {
            return Err(ApiError::new(
                ErrorCode::BadRequest,
                "This does not look like a batch script.  The first line must start with #! followed by the path to an interpreter.",
            ));
        }
        if !spec.work_dir.starts_with('/') {
            return Err(ApiError::new(
                ErrorCode::BadRequest,
                format!(
                    "the working directory {:?} is not an absolute path",
                    spec.work_dir
                ),
            ));
        }
        let (uid, gid) = match spec.run_as_uid {
            Some(u) if u != who.uid => {
                if !self.is_admin(who) {
                    return Err(ApiError::new(
                        ErrorCode::AccessDenied,
                        "Access/permission denied: only root or SlurmUser may submit with --uid",
                    ));
                }
                let g = spec
                    .run_as_gid
                    .unwrap_or_else(|| users::user_by_uid(u).map(|e| e.gid).unwrap_or(u));
                (u, g)
            }
            _ => (
                who.uid,
                spec.run_as_gid
                    .filter(|_| self.is_admin(who))
                    .unwrap_or(who.gid),
            ),
        };
        // Partitions, in the user's order.
        let mut part_idx = Vec::new();
        if spec.partitions.is_empty() {
            match self.default_partition() {
                Some(p) => part_idx.push(p),
                None => {
                    return Err(ApiError::new(
                        ErrorCode::InvalidPartition,
                        "No partition specified or system default partition",
                    ))
                }
            }
        } else {
            for name in &spec.partitions {
                match self.partition_by_name(name) {
                    Some(p) => part_idx.push(p),
                    None => return Err(ApiError::plain(ErrorCode::InvalidPartition)),
                }
            }
        }
        if let Some(open) = self.drop_closed_partitions(&mut part_idx)? {
            spec.partitions = open;
        }
        self.check_reservation(&spec, who)?;
        check_nice(spec.nice, self.is_admin(who), "--nice")?;
        spec.account = spec
            .account
            .take()
            .map(|a| a.trim().to_ascii_lowercase())
            .filter(|a| !a.is_empty());
        let array = self.parse_array(&spec)?;
        if matches!(spec.mem, Some(MemRequest::PerCpu(0))) {
            return Err(ApiError::plain(ErrorCode::MemoryUnavailable));
        }
        let dependency = match spec.dependency.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(d) => Some(self.check_dependency(d)?),
        };
        // Nodes and features: names must exist, a constraint must match some node, and the
        // nodes required must not be excluded or lack the features.
        if let Some(f) = self.node_filter(&spec)? {
            let n = self.nodes.len();
            let no_node = |has: &Vec<bool>| !has.contains(&true);
            if spec.constraint.is_some()
                && spec.exclude.is_none()
                && (!(0..n).any(|i| f.allows(i)) || f.counts.iter().any(|c| no_node(&c.0)))
            {
                return Err(ApiError::plain(ErrorCode::InvalidFeature));
            }
            if f.required.iter().any(|&i| !f.allows(i))
                || spec.nodes.is_some_and(|k| (k as usize) < f.required.len())
                || !f
                    .required
                    .iter()
                    .all(|&i| part_idx.iter().any(|&p| self.parts[p].nodes.contains(&i)))
            {
                return Err(ApiError::plain(ErrorCode::NodeConfigUnavailable));
            }
        }
        self.check_gpus(&spec, &part_idx)?;
        self.gpu_defaults(&mut spec);
        if let Some(g) = spec.gpu.as_ref().filter(|_| spec.mem.is_none()) {
            // --mem-per-gpu: memory per node for the GPUs of a node, per CPU for GPUs per task.
            if let Some(m) = g.mem_per_gpu_mb {
                spec.mem = Some(match g.per_task {
                    Some(p) => MemRequest::PerCpu(
                        (m * u64::from(p)).div_ceil(u64::from(spec.cpus_per_task())),
                    ),
                    None => {
                        let n = g
                            .per_node
                            .or(g.per_job.map(|n| n / spec.nodes.unwrap_or(1).max(1)));
                        MemRequest::PerNode(m * u64::from(n.unwrap_or(1)))
                    }
                });
            }
        }
        // DefMemPerCPU/DefMemPerNode: a job that asks for no memory gets its (first)
        // partition's default, else the cluster's, as if it had asked for it (slurmctld sets
        // the job's memory so too: squeue %m and `show job` print it, the cgroup holds it).
        if spec.mem.is_none() {
            spec.mem = self.cfg.partitions[part_idx[0]]
                .def_mem
                .or(self.cfg.def_mem);
        }
        // MaxMemPerCPU/MaxMemPerNode: more CPUs for a job over the per-CPU limit, a refusal
        // over the per-node one (state/limits.rs).
        if let Some(limit) = self.cfg.partitions[part_idx[0]]
            .max_mem
            .or(self.cfg.max_mem)
        {
            let node_mem = part_idx
                .iter()
                .flat_map(|&p| self.parts[p].nodes.iter())
                .map(|&i| self.nodes[i].mem_mb)
                .max()
                .unwrap_or(0);
            limits::fit_max_mem(&mut spec, limit, node_mem)?;
        }
        // Could it ever run? Place it on the empty partition.
        let req = self.request_of(&spec, uid);
        let empty = self.empty_view.get_or_init(|| {
            self.nodes
                .iter()
                .map(|n| NodeView {
                    gpus: n
                        .gpus
                        .iter()
                        .map(|d| gsched_sched::GpuView {
                            device: d.clone(),
                            holds: Vec::new(),
                        })
                        .collect(),
                    name: n.view_name.clone(),
                    cpus: n.cpus,
                    mem_mb: n.mem_mb,
                    alloc_cpus: 0,
                    alloc_mem_mb: 0,
                    available: true,
                    weight: n.weight,
                    features: n.features.clone(),
                    penalty: 0,
                })
                .collect()
        });
        let fits = |req: &ResourceRequest| {
            part_idx
                .iter()
                .any(|&p| gsched_sched::place(empty, &self.parts[p].nodes, req).is_some())
        };
        if !fits(&req) {
            let no_mem = ResourceRequest {
                mem: None,
                ..req.clone()
            };
            let code = if req.mem.is_some() && fits(&no_mem) {
                ErrorCode::MemoryUnavailable
            } else {
                let total: u32 = part_idx
                    .iter()
                    .flat_map(|&p| self.parts[p].nodes.iter())
                    .map(|&i| self.nodes[i].cpus)
                    .sum();
                if req.tasks.saturating_mul(req.cpus_per_task) > total {
                    ErrorCode::TooManyProcessors
                } else {
                    ErrorCode::NodeConfigUnavailable
                }
            };
            return Err(ApiError::plain(code));
        }
        let part = part_idx[0];
        let time_limit = if spec.time_unlimited {
            None
        } else {
            spec.time_limit
                .or(self.parts[part].default_time)
                .or(self.parts[part].max_time)
        };
        let user_name = users::cached_user_name(uid);
        let mut time_limit = time_limit;
        let count = array.as_ref().map_or(1, |a| a.indices.len() as u32);
        self.check_licenses(&spec)?;
        self.check_job_acct(
            &mut spec,
            &part_idx,
            &user_name,
            uid,
            &mut time_limit,
            count,
        )?;
        check_time_min(spec.time_min, time_limit)?;
        let group_name = users::cached_group_name(gid);
        spec.partitions = part_idx
            .iter()
            .map(|&p| self.parts[p].name.clone())
            .collect();
        // --priority: an operator's is the job's fixed priority; another user's is dropped
        // unless 0, which holds the job (slurmctld's validate_job_create_req).
        if spec.priority == Some(0) {
            spec.priority = None;
            spec.hold = true;
        } else if !self.is_admin(who) {
            spec.priority = None;
        }
        let fixed_priority = spec.priority;
        let held = spec.hold;
        let mem_per_node_mb = match spec.mem {
            Some(MemRequest::PerNode(m)) => m,
            Some(MemRequest::PerCpu(m)) => m * spec.cpus_per_task() as u64,
            None => 0,
        };
        let mut info = JobInfo {
            gpus: Vec::new(),
            special_exit: false,
            epilog_running: false,
            configuring: false,
            job_id: id,
            name: spec.name.clone(),
            user_id: uid,
            group_id: gid,
            user_name,
            group_name,
            state: JobState::Pending,
            reason: if held {
                Reason::JobHeldUser
            } else {
                Reason::None
            },
            partition: self.parts[part].name.clone(),
            priority: match (held, fixed_priority) {
                (true, _) => 0,
                (false, Some(p)) => p,
                (false, None) => priority_for(id, spec.nice.unwrap_or(0)),
            },
            time_limit,
            submit_time: now,
            // As slurmctld: a job submitted held is not eligible (EligibleTime=Unknown,
            // and outside sacct's default window) until it is released.
            eligible_time: (!held).then(|| spec.begin_time.map_or(now, |b| b.max(now))),
            start_time: None,
            end_time: None,
            num_nodes: spec.nodes.unwrap_or(1),
            num_cpus: req.tasks * req.cpus_per_task,
            num_tasks: req.tasks,
            mem_per_node_mb,
            nodes: Vec::new(),
            cpus_per_node: Vec::new(),
            exit_code: 0,
            exit_signal: 0,
            cancelled_by: None,
            held,
            expected_start: None,
            sched_nodes: Vec::new(),
            dependency,
            requeue: spec.requeue.unwrap_or(self.cfg.lifecycle.job_requeue),
            restarts: 0,
            array: None,
            priority_factors: None,
            spec: spec.into(),
            het: None,
            usage: None,
            suspended_since: None,
            suspended_secs: 0,
            invalid: None,
        };
        self.priority_at_submit(&mut info, now);
        Ok((info, array))
    }

    /// Jobs matching a filter, in id order; `brief`: without their scripts, environments and
    /// arguments, which are otherwise read from the store (`state/payload.rs`).
    pub fn query(&self, filter: &JobFilter, brief: bool) -> Vec<JobInfo> {
        let payload = if brief {
            PayloadFor::Nobody
        } else {
            PayloadFor::Everyone
        };
        self.query_for(filter, payload)
    }

    /// [`State::query`] with the payloads of the jobs `payload` covers only.
    pub fn query_for(&self, filter: &JobFilter, payload: PayloadFor) -> Vec<JobInfo> {
        self.query_ids(filter)
            .iter()
            .filter_map(|id| self.jobs.get(id))
            .map(|j| self.queried(j, payload.covers(j.info.user_id)))
            .collect()
    }

    /// Whether `filter` selects `job`, which is COMPLETING while its Epilog runs.
    fn job_matches(&self, filter: &JobFilter, job: &Job) -> bool {
        filter.matches_as(&job.info, self.epilog_jobs.contains(&job.info.job_id))
    }

    /// The jobs a query's filter selects, in id order.
    fn query_ids(&self, filter: &JobFilter) -> Vec<JobId> {
        let named = filter.ids.len() + filter.array_tasks.len();
        if named > 0 && named < 64 {
            self.resolve_ids(&filter.ids, &filter.array_tasks)
                .into_iter()
                .filter(|id| {
                    self.jobs
                        .get(id)
                        .is_some_and(|j| self.job_matches(filter, j))
                })
                .collect()
        } else {
            self.jobs
                .values()
                .filter(|j| self.job_matches(filter, j))
                .map(|j| j.info.job_id)
                .collect()
        }
    }

    /// [`State::query`] with only the fields `keep` names, written as JSON (comma-separated
    /// records) to `out` straight from the records.
    /// `full`: with each job's payload read from the store (`state/payload.rs`).
    pub fn query_projected(
        &self,
        filter: &JobFilter,
        keep: &FieldSet,
        full: bool,
        out: &mut Vec<u8>,
    ) {
        let payload = if full {
            PayloadFor::Everyone
        } else {
            PayloadFor::Nobody
        };
        self.query_projected_for(filter, keep, payload, out)
    }

    /// [`State::query_projected`] with the payloads of the jobs `payload` covers only.
    pub fn query_projected_for(
        &self,
        filter: &JobFilter,
        keep: &FieldSet,
        payload: PayloadFor,
        out: &mut Vec<u8>,
    ) {
        let named = filter.ids.len() + filter.array_tasks.len();
        let ids = if named > 0 && named < 64 {
            self.query_ids(filter)
        } else {
            Vec::new()
        };
        let jobs: Box<dyn Iterator<Item = &Job>> = if named > 0 && named < 64 {
            Box::new(ids.iter().filter_map(|id| self.jobs.get(id).map(|b| &**b)))
        } else {
            Box::new(
                self.jobs
                    .values()
                    .map(|b| &**b)
                    .filter(|j| self.job_matches(filter, j)),
            )
        };
        let own_spec_fields = keep.keeps("spec.name") || keep.keeps("spec.submit_line");
        let mut first = true;
        for j in jobs {
            if !first {
                out.push(b',');
            }
            first = false;
            // The spec's name and submit line are the job's, put back when asked for.
            let copy = if payload.covers(j.info.user_id) {
                Some(self.queried(j, true))
            } else if own_spec_fields
                || self.epilog_jobs.contains(&j.info.job_id)
                || self.prolog_ctld_jobs.contains(&j.info.job_id)
            {
                let mut r = j.record();
                r.epilog_running = self.epilog_jobs.contains(&j.info.job_id);
                r.configuring = self.prolog_ctld_jobs.contains(&j.info.job_id);
                Some(r)
            } else {
                None
            };
            serde_json::to_writer(
                &mut *out,
                &Projected {
                    value: copy.as_ref().unwrap_or(&j.info),
                    keep,
                },
            )
            .expect("a job record serializes to memory");
        }
    }

    fn check_owner(&self, job: &JobInfo, who: &Identity) -> Result<(), ApiError> {
        if job.user_id == who.uid || self.is_admin(who) {
            Ok(())
        } else {
            Err(ApiError::plain(ErrorCode::AccessDenied))
        }
    }

    /// Cancels (`signal == None`) or signals the jobs a filter selects.
    pub fn signal_jobs(
        &mut self,
        filter: &JobFilter,
        signal: Option<i32>,
        scope: SignalScope,
        who: Identity,
        now: i64,
    ) -> Result<(ActionResults, Vec<Effect>), ApiError> {
        let mut ids: Vec<JobId> = if filter.ids.is_empty() && filter.array_tasks.is_empty() {
            self.jobs
                .values()
                .filter(|j| filter.matches(&j.info) && !j.info.state.is_terminal())
                .map(|j| j.info.job_id)
                .collect()
        } else {
            self.resolve_ids(&filter.ids, &filter.array_tasks)
        };
        ids.dedup();
        let mut results = Vec::new();
        let mut effects = Vec::new();
        let mut changed = Vec::new();
        for &id in &ids {
            if let Err(e) = self.check_whole_het(id, &ids) {
                results.push((id, Some(e)));
                continue;
            }
            let r = self.signal_one(id, filter, signal, scope, who, now, &mut effects);
            match r {
                Ok(true) => {
                    changed.push(id);
                    results.push((id, None));
                }
                Ok(false) => results.push((id, None)),
                Err(e) => results.push((id, Some(e))),
            }
        }
        self.persist_many(&changed).map_err(internal)?;
        Ok((results, effects))
    }

    #[allow(clippy::too_many_arguments)]
    fn signal_one(
        &mut self,
        id: JobId,
        filter: &JobFilter,
        signal: Option<i32>,
        scope: SignalScope,
        who: Identity,
        now: i64,
        effects: &mut Vec<Effect>,
    ) -> Result<bool, ApiError> {
        let kill_wait = self.cfg.kill_wait;
        let Some(job) = self.jobs.get(&id) else {
            return Err(ApiError::plain(ErrorCode::InvalidJobId));
        };
        if !filter.matches(&job.info) {
            return Err(ApiError::plain(ErrorCode::InvalidJobId));
        }
        self.check_owner(&job.info, &who)?;
        let configuring = self.prolog_ctld_jobs.contains(&id);
        let job = self.jobs.get_mut(&id).expect("checked above");
        let state = job.info.state;
        if state.is_terminal() {
            return Err(ApiError::plain(ErrorCode::JobAlreadyDone));
        }
        let node = job.info.nodes.first().cloned();
        match (signal, state) {
            // Its PrologSlurmctld runs: nothing runs on the nodes yet, so it ends here (the
            // program's end then finds it ended and launches nothing).
            (None, JobState::Running) if configuring => {
                job.info.state = JobState::Cancelled;
                job.info.end_time = Some(now);
                job.info.cancelled_by = Some(who.uid);
                job.launch = None;
                Ok(true)
            }
            (None, JobState::Pending) | (Some(9), JobState::Pending) => {
                job.info.state = JobState::Cancelled;
                // The pending reason stays (squeue %r, scontrol Reason=), as in Slurm.
                job.info.end_time = Some(now);
                job.info.start_time.get_or_insert(now);
                job.info.cancelled_by = Some(who.uid);
                Ok(true)
            }
            (Some(_), JobState::Pending) => Err(ApiError::new(
                ErrorCode::BadRequest,
                "Job is pending execution",
            )),
            (None, JobState::Running) => {
                job.info.state = JobState::Completing;
                job.info.cancelled_by = Some(who.uid);
                job.extra.terminate = Some(TerminateReason::Cancelled);
                job.terminate_sent_at = Some(now);
                if let Some(node) = node {
                    effects.push(Effect::Terminate {
                        node,
                        job_id: id,
                        reason: TerminateReason::Cancelled,
                        kill_wait,
                    });
                }
                Ok(true)
            }
            (None, _) => Ok(false), // already completing
            (Some(sig), _) => {
                if let Some(node) = node {
                    effects.push(Effect::Signal {
                        node,
                        job_id: id,
                        signal: sig,
                        scope,
                    });
                }
                Ok(false)
            }
        }
    }

    /// `scontrol hold` / `release`.
    pub fn hold(
        &mut self,
        ids: &[JobId],
        array_tasks: &[(JobId, u32)],
        names: &[String],
        release: bool,
        who: Identity,
        now: i64,
    ) -> Result<ActionResults, ApiError> {
        let mut targets: Vec<JobId> = self.resolve_ids(ids, array_tasks);
        for n in names {
            targets.extend(
                self.jobs
                    .values()
                    .filter(|j| &j.info.name == n && j.info.state == JobState::Pending)
                    .map(|j| j.info.job_id),
            );
        }
        let admin = self.is_admin(&who);
        let mut results = Vec::new();
        let mut changed = Vec::new();
        for id in targets {
            // An array named by its id: only its pending tasks are concerned.
            let via_array = !ids.contains(&id)
                && self.jobs.get(&id).is_some_and(|j| {
                    j.info.state != JobState::Pending
                        && j.info.array.is_some_and(|a| ids.contains(&a.job_id))
                });
            if via_array {
                continue;
            }
            let r = match self.jobs.get(&id) {
                None => Err(ApiError::plain(ErrorCode::InvalidJobId)),
                Some(j) => self.check_owner(&j.info, &who).and_then(|_| {
                    if j.info.state == JobState::Pending {
                        Ok(())
                    } else if j.info.state.is_terminal() {
                        Err(ApiError::plain(ErrorCode::JobAlreadyDone))
                    } else {
                        Err(ApiError::plain(ErrorCode::JobNotPending))
                    }
                }),
            };
            if let Err(e) = r {
                results.push((id, Some(e)));
                continue;
            }
            let job = self.jobs.get_mut(&id).expect("checked");
            if release {
                if job.info.held && job.info.reason == Reason::JobHeldAdmin && !admin {
                    results.push((id, Some(ApiError::plain(ErrorCode::AccessDenied))));
                    continue;
                }
                job.info.held = false;
                // As slurmctld's release: out of SPECIAL_EXIT, the last exit code cleared.
                job.info.special_exit = false;
                job.info.exit_code = 0;
                job.info.exit_signal = 0;
                // A het job's components queue with their leader's place; a fixed priority
                // (an operator's) comes back.
                job.info.priority = job.info.spec.priority.unwrap_or_else(|| {
                    priority_for(job.info.het.map_or(id, |h| h.job_id), job.info.nice())
                });
                job.info.reason = Reason::None;
                if job.info.eligible_time.is_none() {
                    let begin = job.info.spec.begin_time;
                    job.info.eligible_time = Some(begin.map_or(now, |b| b.max(now)));
                }
                // Under priority/multifactor, its priority at once, as at submission.
                if let Some((p, f)) = self.fresh_priority(&self.jobs[&id].info, now) {
                    let job = self.jobs.get_mut(&id).expect("checked");
                    job.info.priority = p;
                    job.info.priority_factors = Some(f);
                }
            } else {
                job.info.held = true;
                job.info.priority = 0;
                job.info.reason = if admin && job.info.user_id != who.uid {
                    Reason::JobHeldAdmin
                } else {
                    Reason::JobHeldUser
                };
            }
            changed.push(id);
            results.push((id, None));
        }
        self.persist_many(&changed).map_err(internal)?;
        Ok(results)
    }

    /// Validates a dependency for a new or updated job: its syntax, and that the jobs it
    /// names exist. Returns the canonical form.
    fn check_dependency(&self, text: &str) -> Result<String, ApiError> {
        let dep = DependencySpec::parse(text).map_err(|e| {
            ApiError::new(
                ErrorCode::DependencyProblem,
                format!("Job dependency problem: {e}"),
            )
        })?;
        for item in &dep.items {
            for t in &item.targets {
                if !self.jobs.contains_key(&t.job_id) {
                    return Err(ApiError::new(
                        ErrorCode::DependencyProblem,
                        format!("Job dependency problem: job {} does not exist", t.job_id),
                    ));
                }
            }
        }
        Ok(dep.to_string())
    }

    /// Evaluates the dependencies of pending jobs. Returns the jobs that must not be
    /// queued yet (with their reason), and the jobs to cancel (`kill_invalid_depend`).
    fn dependency_blocks(&mut self, now: i64) -> (HashMap<JobId, Reason>, Vec<JobId>) {
        let mut blocked = HashMap::new();
        let mut satisfied = Vec::new();
        let mut kill = Vec::new();
        let kill_default = self.cfg.scheduler.params.kill_invalid_depend;
        let jobs = &self.jobs;
        let unfinished = &self.active;
        // The waiting jobs that have a dependency, parsed.
        let deps: Vec<(&Job, DependencySpec)> = unfinished
            .jobs(jobs)
            .filter(|j| j.info.state == JobState::Pending && !j.info.held)
            .filter_map(|j| {
                let dep = DependencySpec::parse(j.info.dependency.as_deref()?).ok()?;
                Some((j, dep))
            })
            .collect();
        // Singleton: the lowest pending id of each (user, name) and every active job block
        // the others. Built only when a waiting job asks for it (a walk over every job).
        let mut singleton_owner: HashMap<(u32, &str), JobId> = HashMap::new();
        let wants_singleton = deps.iter().any(|(_, d)| {
            d.items
                .iter()
                .any(|i| i.kind == gsched_proto::depend::DepKind::Singleton)
        });
        if wants_singleton {
            for j in unfinished.jobs(jobs) {
                let active = matches!(j.info.state, JobState::Running | JobState::Completing);
                let waiting = j.info.state == JobState::Pending && !j.info.held;
                if active || waiting {
                    singleton_owner
                        .entry((j.info.user_id, j.info.name.as_str()))
                        .and_modify(|o| {
                            if active {
                                *o = 0;
                            }
                        })
                        .or_insert(if active { 0 } else { j.info.job_id });
                }
            }
        }
        for (j, dep) in deps {
            let blocked_singleton = singleton_owner
                .get(&(j.info.user_id, j.info.name.as_str()))
                .is_some_and(|&o| o != j.info.job_id);
            let target = |id: JobId| array_or_job_state(jobs, id);
            let corr = |id: JobId| corresponding_task_state(jobs, &self.arrays, id, &j.info);
            match depend::evaluate(&dep, target, corr, blocked_singleton, now) {
                DepStatus::Satisfied => satisfied.push(j.info.job_id),
                DepStatus::Pending => {
                    blocked.insert(j.info.job_id, Reason::Dependency);
                }
                DepStatus::NeverSatisfied => {
                    blocked.insert(j.info.job_id, Reason::DependencyNeverSatisfied);
                    if j.info.spec.kill_on_invalid_dep.unwrap_or(kill_default) {
                        kill.push(j.info.job_id);
                    }
                }
            }
        }
        for id in &satisfied {
            if let Some(j) = self.jobs.get_mut(id) {
                j.info.dependency = None;
            }
        }
        for (id, reason) in &blocked {
            if let Some(j) = self.jobs.get_mut(id) {
                j.info.reason = *reason;
                j.info.expected_start = None;
                j.info.sched_nodes.clear();
            }
        }
        let never: Vec<JobId> = blocked
            .iter()
            .filter(|(_, r)| **r == Reason::DependencyNeverSatisfied)
            .map(|(id, _)| *id)
            .collect();
        self.invalid_dependency_notices(&never, now);
        for id in &kill {
            if let Some(j) = self.jobs.get_mut(id) {
                j.info.state = JobState::Cancelled;
                j.info.end_time = Some(now);
                j.info.start_time.get_or_insert(now);
                blocked.remove(id);
            }
        }
        let mut changed = satisfied;
        changed.extend(kill.iter().copied());
        if let Err(e) = self.persist_many(&changed) {
            tracing::error!("cannot record dependency changes: {e}");
        }
        (blocked, kill)
    }

    /// `scontrol requeue`: a running job is ended and goes back to PENDING once its run is
    /// over; a finished batch job goes back to PENDING at once. `requeuehold` holds it
    /// there (in SPECIAL_EXIT with `State=SpecialExit`); `Incomplete` leaves jobs that are
    /// not running alone.
    pub fn requeue(
        &mut self,
        req: &gsched_proto::api::RequeueRequest,
        who: Identity,
        now: i64,
    ) -> Result<(ActionResults, Vec<Effect>), ApiError> {
        let ids = &req.ids;
        let hold = match (req.hold || req.special_exit, req.special_exit) {
            (false, _) => None,
            (true, false) => Some(RequeueHold::Held),
            (true, true) => Some(RequeueHold::SpecialExit),
        };
        let kill_wait = self.cfg.kill_wait;
        let mut results = Vec::new();
        let mut effects = Vec::new();
        let mut changed = Vec::new();
        for &id in ids {
            let skip = req.incomplete
                && self
                    .jobs
                    .get(&id)
                    .is_some_and(|j| j.info.state != JobState::Running);
            if skip {
                results.push((id, None));
                continue;
            }
            let r = match self.jobs.get(&id) {
                None => Err(ApiError::plain(ErrorCode::InvalidJobId)),
                Some(j) => self.check_owner(&j.info, &who).and_then(|_| {
                    if !j.info.requeue {
                        Err(ApiError::plain(ErrorCode::Disabled))
                    } else if j.info.het.is_some_and(|h| h.offset > 0) {
                        Err(ApiError::new(
                            ErrorCode::Disabled,
                            "a component of a heterogeneous job cannot be requeued alone: requeue the whole job (its first component's id)",
                        ))
                    } else if j.info.state == JobState::Pending {
                        Err(ApiError::new(
                            ErrorCode::JobNotPending,
                            "Job is pending execution",
                        ))
                    } else if j.info.state == JobState::Completing && !j.extra.requeue {
                        Err(ApiError::plain(ErrorCode::JobAlreadyDone))
                    } else {
                        Ok(())
                    }
                }),
            };
            if let Err(e) = r {
                results.push((id, Some(e)));
                continue;
            }
            let job = self.jobs.get_mut(&id).expect("checked");
            match job.info.state {
                JobState::Running => {
                    job.info.state = JobState::Completing;
                    job.extra.terminate = Some(TerminateReason::Cancelled);
                    job.extra.requeue = true;
                    job.extra.requeue_hold = hold;
                    job.terminate_sent_at = Some(now);
                    if let Some(node) = job.info.nodes.first() {
                        effects.push(Effect::Terminate {
                            node: node.clone(),
                            job_id: id,
                            reason: TerminateReason::Cancelled,
                            kill_wait,
                        });
                    }
                }
                JobState::Completing => {
                    if hold.is_some() {
                        job.extra.requeue_hold = hold;
                    }
                }
                _ => {
                    let code = job.info.exit_code;
                    requeue_run(job, now);
                    if let Some(kind) = hold {
                        hold_requeued(job, kind, code, false);
                    }
                }
            }
            changed.push(id);
            results.push((id, None));
        }
        self.persist_many(&changed).map_err(internal)?;
        Ok((results, effects))
    }

    /// `scontrol update JobId=N ...` for the keys beyond TimeLimit.
    pub fn update_job(
        &mut self,
        req: &JobUpdateRequest,
        who: Identity,
        now: i64,
    ) -> Result<(), ApiError> {
        let id = req.job_id;
        let admin = self.is_admin(&who);
        let job = self
            .jobs
            .get(&id)
            .ok_or_else(|| ApiError::plain(ErrorCode::InvalidJobId))?;
        self.check_owner(&job.info, &who)?;
        if job.info.state.is_terminal() {
            return Err(ApiError::plain(ErrorCode::JobAlreadyDone));
        }
        let pending = job.info.state == JobState::Pending;
        let needs_pending = req.dependency.is_some()
            || req.begin_time.is_some()
            || req.time_min.is_some()
            || req.partition.is_some()
            || req.priority.is_some()
            || req.account.is_some()
            || req.qos.is_some();
        if needs_pending && !pending {
            return Err(ApiError::plain(ErrorCode::JobNotPending));
        }
        if req.priority.is_some() && !admin {
            return Err(ApiError::new(
                ErrorCode::AccessDenied,
                "Access/permission denied: only an administrator may set a job's priority",
            ));
        }
        let dependency = match req.dependency.as_deref().map(str::trim) {
            None => None,
            Some("") => Some(None),
            Some(d) => {
                let canon = self.check_dependency(d)?;
                if DependencySpec::parse(&canon)
                    .map(|dep| {
                        dep.items
                            .iter()
                            .any(|i| i.targets.iter().any(|t| t.job_id == id))
                    })
                    .unwrap_or(false)
                {
                    return Err(ApiError::new(
                        ErrorCode::DependencyProblem,
                        "Job dependency problem: a job cannot depend on itself",
                    ));
                }
                Some(Some(canon))
            }
        };
        let partition = match &req.partition {
            None => None,
            Some(p) => match self.partition_by_name(p) {
                Some(i) => {
                    if !self.partition_takes_jobs(i) {
                        return Err(ApiError::plain(ErrorCode::PartitionNotAvailable));
                    }
                    self.check_partition_change(&job.info, i)?;
                    Some(self.parts[i].name.clone())
                }
                None => return Err(ApiError::plain(ErrorCode::InvalidPartition)),
            },
        };
        if let Some(m) = req.time_min {
            check_time_min(m, job.info.time_limit)?;
        }
        // Nice=: a new value (not a change) for a job that has not ended, as slurmctld.
        let nice = req.nice.filter(|&n| n != job.info.nice());
        check_nice(nice, admin, "Nice")?;
        let acct = if req.account.is_some() || req.qos.is_some() {
            Some(self.recheck_acct(&job.info, req.account.as_deref(), req.qos.as_deref())?)
        } else {
            None
        };
        let job = self.jobs.get_mut(&id).expect("checked");
        if let Some((account, qos, limit)) = acct {
            job.info.spec.account = account;
            job.info.spec.qos = Some(qos);
            job.info.time_limit = limit;
        }
        if let Some(m) = req.time_min {
            job.info.spec.time_min = m;
        }
        if let Some(d) = dependency {
            job.info.spec.dependency = d.clone();
            job.info.dependency = d;
            job.info.reason = Reason::None;
        }
        if let Some(b) = req.begin_time {
            job.info.eligible_time = Some(b.max(now));
            job.info.spec.begin_time = Some(b);
        }
        if let Some(n) = &req.name {
            // The spec's name is the record's (put back when the record leaves memory).
            job.info.name = n.clone();
        }
        if let Some(p) = req.priority {
            job.info.priority = p;
            // The job's fixed priority (what a release gives back); 0 is a hold. The old
            // flag of records stored before `spec.priority` is cleared.
            job.info.spec.priority = (p != 0).then_some(p);
            job.extra.priority_fixed = false;
            job.info.priority_factors = None;
            if p == 0 {
                job.info.held = true;
                job.info.reason = Reason::JobHeldAdmin;
            } else if job.info.held {
                job.info.held = false;
                job.info.reason = Reason::None;
            }
        }
        if let Some(p) = partition {
            job.info.partition = p.clone();
            job.info.spec.partitions = vec![p];
        }
        let fixed = job.priority_fixed() || job.info.priority == 0;
        let basic = self.cfg.priority.priority_type != PriorityType::Multifactor;
        if let Some(n) = nice {
            job.info.spec.nice = (n != 0).then_some(n);
            // priority/basic moves the job by the change at once (as slurmctld): its place
            // (a het job's is its leader's) less its new nice. A priority an administrator
            // set, or a hold, stays as it is.
            if basic && !fixed {
                job.info.priority = priority_for(job.info.het.map_or(id, |h| h.job_id), n);
            }
        }
        // Under priority/multifactor a pending job's priority follows what changed (nice,
        // QOS, account, partition) at once, as it does at submission.
        if !fixed && job.info.state == JobState::Pending {
            if let Some((p, f)) = self.fresh_priority(&self.jobs[&id].info, now) {
                let job = self.jobs.get_mut(&id).expect("checked");
                job.info.priority = p;
                job.info.priority_factors = Some(f);
            }
        }
        self.persist(id).map_err(internal)
    }

    /// `scontrol update JobId=N TimeLimit=...`: users may lower a limit, admins may do anything.
    pub fn update_time_limit(
        &mut self,
        id: JobId,
        limit: Option<u32>,
        who: Identity,
    ) -> Result<(), ApiError> {
        let admin = self.is_admin(&who);
        let job = self
            .jobs
            .get(&id)
            .ok_or_else(|| ApiError::plain(ErrorCode::InvalidJobId))?;
        self.check_owner(&job.info, &who)?;
        if job.info.state.is_terminal() {
            return Err(ApiError::plain(ErrorCode::JobAlreadyDone));
        }
        let raising = match (job.info.time_limit, limit) {
            (_, None) => job.info.time_limit.is_some(),
            (None, Some(_)) => false,
            (Some(old), Some(new)) => new > old,
        };
        if raising && !admin {
            return Err(ApiError::new(
                ErrorCode::AccessDenied,
                "Access/permission denied: only an administrator may increase a time limit",
            ));
        }
        check_time_min(job.info.spec.time_min, limit)?;
        let job = self.jobs.get_mut(&id).expect("checked");
        job.info.time_limit = limit;
        self.persist(id).map_err(internal)
    }

    /// `scontrol update NodeName=... State=...`.
    pub fn update_nodes(
        &mut self,
        names: &[String],
        state: NodeStateUpdate,
        reason: Option<String>,
        migrate_by: Option<i64>,
        who: Identity,
        now: i64,
    ) -> Result<Vec<Effect>, ApiError> {
        if !self.is_admin(&who) {
            return Err(ApiError::plain(ErrorCode::AccessDenied));
        }
        let mut idx = Vec::new();
        for n in names {
            match self.node_index.get(n) {
                Some(&i) => idx.push(i),
                None => {
                    return Err(ApiError::new(
                        ErrorCode::InvalidNodeName,
                        format!("Invalid node name specified: {n}"),
                    ))
                }
            }
        }
        if migrate_by.is_some() && state != NodeStateUpdate::Drain {
            return Err(ApiError::new(
                ErrorCode::InvalidNodeState,
                "MigrateBy= goes with State=DRAIN only",
            ));
        }
        let mut effects = Vec::new();
        for i in idx {
            let n = &mut self.nodes[i];
            match state {
                NodeStateUpdate::Drain | NodeStateUpdate::Down => {
                    if state == NodeStateUpdate::Drain {
                        n.admin.drain = true;
                        n.admin.migrate_by = migrate_by;
                    } else {
                        n.admin.down = true;
                        n.admin.auto_down = false;
                    }
                    n.admin.reason = reason.clone();
                    n.admin.reason_time = Some(now);
                    n.admin.reason_uid = Some(who.uid);
                }
                NodeStateUpdate::Resume | NodeStateUpdate::Idle => {
                    // A pending reboot stays requested.
                    let reboot = n.admin.reboot.take();
                    n.admin = NodeAdmin {
                        reboot,
                        ..NodeAdmin::default()
                    };
                }
            }
            let name = n.name.clone();
            let rec = serde_json::to_string(&n.admin).unwrap_or_default();
            self.store.save_node(&name, &rec).map_err(internal)?;
            if state == NodeStateUpdate::Down {
                // Slurm ends every job on a node that is set DOWN (requeueing those it may).
                effects.extend(self.fail_jobs_on(i, now));
            }
        }
        Ok(effects)
    }

    /// What the started jobs hold of each node: CPUs and memory.
    fn node_alloc(&self) -> (Vec<u32>, Vec<u64>) {
        self.node_sums(&self.running_allocs())
    }

    /// The sums over `running` of each node's CPUs and memory.
    fn node_sums(&self, running: &[RunningAlloc]) -> (Vec<u32>, Vec<u64>) {
        let mut cpus = vec![0u32; self.nodes.len()];
        let mut mem = vec![0u64; self.nodes.len()];
        for a in running.iter().flat_map(|r| &r.nodes) {
            cpus[a.node] += a.cpus;
            mem[a.node] += a.mem_mb;
        }
        (cpus, mem)
    }

    /// The started jobs as the scheduler core sees them: their nodes and planned ends.
    fn running_allocs(&self) -> Vec<RunningAlloc> {
        self.active
            .started_jobs(&self.jobs)
            .map(|j| RunningAlloc {
                job_id: j.info.job_id,
                end: self.planned_end(&j.info, j.extra.predicted_secs),
                nodes: j
                    .info
                    .nodes
                    .iter()
                    .enumerate()
                    .filter_map(|(k, n)| {
                        Some(NodeAlloc {
                            gpus: Vec::new(),
                            node: *self.node_index.get(n)?,
                            cpus: j.info.cpus_per_node.get(k).copied().unwrap_or(0),
                            mem_mb: j.extra.alloc_mem.get(k).copied().unwrap_or(0),
                            tasks: 0,
                        })
                    })
                    .collect(),
            })
            .chain(self.epilog_allocs(self.predict.pass_now))
            .collect()
    }

    fn node_available(n: &NodeRt) -> bool {
        n.registered && !n.not_responding && !n.unreachable && !n.admin.drain && !n.admin.down
    }

    /// The cluster as the scheduler core sees it: nodes with their allocations, partitions
    /// and the running jobs.
    fn cluster_view(&self) -> ClusterView {
        let running = self.running_allocs();
        let (alloc_cpus, alloc_mem) = self.node_sums(&running);
        let mut gpus = self.gpu_views();
        ClusterView {
            nodes: self
                .nodes
                .iter()
                .enumerate()
                .map(|(i, n)| NodeView {
                    gpus: std::mem::take(&mut gpus[i]),
                    name: n.view_name.clone(),
                    cpus: n.cpus,
                    mem_mb: n.mem_mb,
                    alloc_cpus: alloc_cpus[i],
                    alloc_mem_mb: alloc_mem[i],
                    available: Self::node_available(n) && self.node_life_available(i),
                    weight: n.weight,
                    features: n.features.clone(),
                    penalty: self.node_penalty(i),
                })
                .collect(),
            partitions: self
                .parts
                .iter()
                .map(|p| PartitionView {
                    gpu: p.gpu,
                    name: p.name.clone(),
                    nodes: p.nodes.clone(),
                    up: matches!(p.state, PartitionStateInfo::Up | PartitionStateInfo::Drain),
                    inactive: p.state == PartitionStateInfo::Inactive,
                    max_time: p.max_time,
                })
                .collect(),
            running,
            // Licenses first (`state/licenses.rs`); a pass adds its QOS/association limits.
            limits: self.license_slots(),
            blackouts: self.blackouts(),
        }
    }

    /// One scheduling pass: time limits, node liveness, then the scheduler core's decisions.
    pub fn schedule(&mut self, now: i64) -> Vec<Effect> {
        self.predict.pass_now = now;
        // Once a second: forget old finished jobs, rebuild the set of unfinished ones.
        if self.active.rebuild_due(now) {
            self.purge(now);
            self.active.rebuild(&self.jobs, now);
        }
        let mut effects = Vec::new();
        let mut changed = Vec::new();
        let kill_wait = self.cfg.kill_wait;
        let cfg = self.cfg.clone();
        // Node liveness, reservations that ended, drains with a deadline, reboots.
        effects.extend(self.node_health(now));
        self.expire_reservations(now);
        effects.extend(self.migrations(now));
        effects.extend(self.reboots(now));
        effects.extend(self.health_checks(now));
        // Epilog requests not answered yet; holds of nodes set DOWN dropped.
        effects.extend(self.epilog_resends(now));
        // Notices of time-limit thresholds, before the jobs at their limit are ended.
        self.time_notices(now);
        // Hung and idle-GPU jobs: flag them, take the ladder's steps that are due.
        effects.extend(self.run_ladder(now));
        // Time limits and terminate retries.
        self.active.each_started_mut(&mut self.jobs, |job| {
            match job.info.state {
                JobState::Running => {
                    let (Some(start), Some(limit)) = (job.info.start_time, job.info.time_limit)
                    else {
                        return;
                    };
                    // Time suspended does not count against the limit (Slurm): the clock
                    // stops while suspended and starts that much later.
                    if job.info.suspended_since.is_some() {
                        return;
                    }
                    let start = start + job.info.suspended_secs;
                    if let Some(e) = client_opts::warn_signal_due(job, start, limit, now) {
                        changed.push(job.info.job_id);
                        effects.push(e);
                    }
                    // OverTimeLimit: killed that much later (the limit stays what is shown
                    // and planned with, as in Slurm); looked up only past the limit.
                    let end = start + limit as i64 * 60;
                    let over = if now >= end {
                        cfg.over_time_secs(&job.info.partition)
                    } else {
                        Some(0)
                    };
                    if over.is_some_and(|o| now >= end + o) {
                        job.info.state = JobState::Completing;
                        job.extra.terminate = Some(TerminateReason::TimeLimit);
                        job.terminate_sent_at = Some(now);
                        changed.push(job.info.job_id);
                        if let Some(node) = job.info.nodes.first() {
                            effects.push(Effect::Terminate {
                                node: node.clone(),
                                job_id: job.info.job_id,
                                reason: TerminateReason::TimeLimit,
                                kill_wait,
                            });
                        }
                    }
                }
                JobState::Completing => {
                    let due = job
                        .terminate_sent_at
                        .is_none_or(|t| now - t >= TERMINATE_RETRY_SECS);
                    if !job.terminate_acked && due {
                        if let (Some(reason), Some(node)) =
                            (job.extra.terminate, job.info.nodes.first())
                        {
                            job.terminate_sent_at = Some(now);
                            effects.push(Effect::Terminate {
                                node: node.clone(),
                                job_id: job.info.job_id,
                                reason,
                                kill_wait,
                            });
                        }
                    }
                }
                _ => {}
            }
        });
        // Het job components follow their leader's end or requeue.
        let followed = self.het_follow_leaders(now);
        if let Err(e) = self.persist_many(&followed) {
            tracing::error!("cannot record het job components: {e}");
        }
        // --deadline: pending jobs that can no longer end in time are removed.
        self.deadline_pass(now);
        // Dependencies: jobs that wait for other jobs never reach the scheduler core.
        let (dep_blocked, _killed) = self.dependency_blocks(now);
        let het_blocked = self.het_blocked(&dep_blocked);
        self.update_priorities(now, &dep_blocked);
        // The scheduler core.
        let mut view = self.cluster_view();
        self.batch_index.rebuild(self.nodes.len(), &view.running);
        self.note_gpu_holds(&view);
        let throttled = self.throttled();
        let candidates: Vec<&Job> = self
            .active
            .jobs(&self.jobs)
            // Held jobs keep the reason they were held with and cost the pass nothing.
            .filter(|j| {
                j.info.state == JobState::Pending
                    && !j.info.held
                    && !dep_blocked.contains_key(&j.info.job_id)
                    // Its last run's Epilog still holds nodes.
                    && j.extra.epilog.is_none()
            })
            .filter(|j| !throttled.contains(&j.info.job_id))
            .filter(|j| {
                j.info
                    .het
                    .is_none_or(|h| !het_blocked.contains_key(&h.job_id))
            })
            .collect();
        // `--reservation` jobs are decided in their reservations (state/resv.rs).
        let (resv_jobs, candidates): (Vec<&Job>, Vec<&Job>) = candidates
            .into_iter()
            .partition(|j| j.info.spec.reservation.is_some());
        let resv_jobs: Vec<JobId> = resv_jobs.iter().map(|j| j.info.job_id).collect();
        let candidate_ids: Vec<JobId> = candidates.iter().map(|j| j.info.job_id).collect();
        let mut limits = self.limit_slots(&candidate_ids);
        // After the licenses' slots: the QOS/association limits' indices move up by them.
        let base = view.limits.len();
        view.limits.append(&mut limits.slots);
        let predicted = self.predictions(&candidate_ids);
        let queue: Vec<QueuedJob> = candidates
            .iter()
            .filter(|j| !limits.blocked.contains_key(&j.info.job_id))
            .map(|j| (j, self.het_member(&j.info)))
            .map(|(j, (het, priority))| QueuedJob {
                het,
                id: j.info.job_id,
                priority,
                submit_time: j.info.submit_time,
                partitions: j
                    .info
                    .spec
                    .partitions
                    .iter()
                    .filter_map(|p| self.parts.iter().position(|x| &x.name == p))
                    .collect(),
                held: None,
                begin_time: j.info.eligible_time,
                // bf_predict: planned with the prediction; killed at the limit all the same.
                time_limit: predicted
                    .get(&j.info.job_id)
                    .map(|&s| predict::minutes(s))
                    .or(j.info.time_limit),
                time_min: j.info.spec.time_min,
                req: self.with_topology(
                    self.request_of(&j.info.spec, j.info.user_id),
                    &j.info,
                    now,
                ),
                limits: limits
                    .by_job
                    .remove(&j.info.job_id)
                    .unwrap_or_default()
                    .into_iter()
                    .map(|i| i + base)
                    .collect(),
            })
            .collect();
        let mut decisions = self.decide_priced(&view, &queue, now);
        self.reservation_decisions(&view, &mut decisions, &resv_jobs, now);
        self.active.each_mut(&mut self.jobs, |j| {
            if j.info.state == JobState::Pending && !dep_blocked.contains_key(&j.info.job_id) {
                j.info.expected_start = None;
                j.info.sched_nodes.clear();
            }
        });
        for e in &decisions.estimates {
            let names: Vec<String> = e
                .placement
                .nodes
                .iter()
                .map(|a| self.nodes[a.node].name.clone())
                .collect();
            if let Some(j) = self.jobs.get_mut(&e.job_id) {
                j.info.expected_start = Some(e.start);
                j.info.sched_nodes = names;
            }
        }
        for id in &throttled {
            if let Some(j) = self.jobs.get_mut(id) {
                j.info.reason = Reason::JobArrayTaskLimit;
            }
        }
        for (id, reason) in &limits.blocked {
            if let Some(j) = self.jobs.get_mut(id) {
                j.info.reason = *reason;
            }
        }
        for (&leader, &reason) in &het_blocked {
            for id in self.het_ids(leader) {
                if let Some(j) = self.jobs.get_mut(&id) {
                    if j.info.state == JobState::Pending && !j.info.held {
                        j.info.reason = reason;
                        j.info.expected_start = None;
                        j.info.sched_nodes.clear();
                    }
                }
            }
        }
        let maint = self.maint_blocked(&view, &decisions.waiting, now);
        for (id, reason) in decisions.waiting {
            if let Some(j) = self.jobs.get_mut(&id) {
                j.info.reason = if maint.contains(&id) {
                    Reason::ReqNodeNotAvailMaint
                } else {
                    reason
                };
            }
        }
        // The jobs this pass starts (a het job's components included, which do not launch),
        // with what each was before, should the starts fail to be stored.
        let mut started_now: Vec<Unstart> = Vec::with_capacity(decisions.starts.len());
        for start in decisions.starts {
            let part = self.parts[start.partition].name.clone();
            let names: Vec<String> = start
                .placement
                .nodes
                .iter()
                .map(|a| self.nodes[a.node].name.clone())
                .collect();
            let Some(job) = self.jobs.get_mut(&start.job_id) else {
                continue;
            };
            self.batch_index
                .add(start.job_id, start.placement.nodes.first().map(|a| a.node));
            started_now.push(Unstart::before(start.job_id, job));
            job.info.state = JobState::Running;
            job.info.reason = Reason::None;
            self.active.note(start.job_id, JobState::Running);
            if let Some(m) = start.time_limit {
                // --time-min: backfill lowered the limit; it is the kill time from now on.
                job.info.time_limit = Some(m);
            }
            job.info.partition = part;
            job.info.start_time = Some(now);
            job.info.end_time = None;
            job.info.nodes = names;
            job.info.cpus_per_node = start.placement.nodes.iter().map(|a| a.cpus).collect();
            job.info.num_nodes = start.placement.nodes.len() as u32;
            job.info.num_cpus = job.info.cpus_per_node.iter().sum();
            job.extra.alloc_mem = start.placement.nodes.iter().map(|a| a.mem_mb).collect();
            job.info.gpus = if start.placement.nodes.iter().any(|a| !a.gpus.is_empty()) {
                start
                    .placement
                    .nodes
                    .iter()
                    .map(|a| a.gpus.clone())
                    .collect()
            } else {
                Vec::new()
            };
            job.extra.terminate = None;
            job.extra.warn_signal_sent = false;
            job.extra.mail_sent &= !notices::TIME_BITS;
            job.extra.predicted_secs = predicted.get(&start.job_id).copied();
            job.launch = Some(LaunchState::InFlight);
            job.terminate_sent_at = None;
            job.terminate_acked = false;
            changed.push(start.job_id);
            // A heterogeneous job launches once, from its leader, when every component
            // has its nodes (they all start in the same pass).
            if job.info.het.is_some_and(|h| h.offset != 0) {
                job.launch = None;
                continue;
            }
            let node = job.info.nodes[0].clone();
            effects.push(if self.cfg.prolog_slurmctld.is_some() {
                self.prolog_ctld_jobs.insert(start.job_id);
                Effect::PrologSlurmctld {
                    node,
                    job_id: start.job_id,
                    start_time: now,
                }
            } else {
                Effect::Launch {
                    node,
                    job_id: start.job_id,
                    start_time: now,
                }
            });
        }
        if let Err(e) = self.persist_many(&changed) {
            // Could not record the starts: launch nothing. Every job this pass started is
            // put back as the store still has it, a het job's components alike (they hold
            // no launch of their own); the next pass tries again.
            tracing::error!("cannot record scheduling decisions, not launching: {e}");
            for u in &started_now {
                self.prolog_ctld_jobs.remove(&u.id);
            }
            for u in started_now {
                if let Some(j) = self.jobs.get_mut(&u.id) {
                    u.restore(j);
                }
            }
            return Vec::new();
        }
        effects
    }

    /// Forgets finished jobs older than MinJobAge (they stay in the store).
    fn purge(&mut self, now: i64) {
        let age = self.cfg.min_job_age as i64;
        let before = self.jobs.len();
        self.jobs.retain(|_, j| {
            !(j.info.state.is_terminal()
                && j.info.end_time.is_some_and(|e| now - e > age)
                && j.extra.epilog.is_none())
        });
        if self.jobs.len() == before {
            // Nothing forgotten (the usual pass under a deep queue): the tables keyed by the
            // jobs' ids are as they were.
            return;
        }
        let jobs = &self.jobs;
        self.committed_state.retain(|id, _| jobs.contains_key(id));
        self.purge_arrays();
    }

    /// The answer of gsnoded to a launch.
    pub fn launch_result(
        &mut self,
        id: JobId,
        start_time: i64,
        result: Result<(), LaunchFailure>,
        now: i64,
    ) {
        let Some(job) = self.jobs.get_mut(&id) else {
            return;
        };
        if job.info.start_time != Some(start_time) || job.launch != Some(LaunchState::InFlight) {
            return;
        }
        match result {
            Ok(()) => job.launch = Some(LaunchState::Acked(now)),
            Err(LaunchFailure::Unreachable(msg)) => {
                // Nothing ran: give the job back to the queue and stop using the node.
                tracing::warn!("job {id}: node unreachable at launch ({msg}); requeued");
                let node = job.info.nodes.first().cloned();
                back_to_queue(job);
                if let Some(n) = node.and_then(|n| self.node_index.get(&n).copied()) {
                    self.nodes[n].unreachable = true;
                }
                let _ = self.persist(id);
            }
            Err(LaunchFailure::Busy(msg)) if job.info.restarts > 0 => {
                // The node still holds the previous run of this requeued job until its
                // report is acknowledged: try again shortly.
                tracing::info!("job {id}: node still holds the previous run ({msg}); retrying");
                back_to_queue(job);
                job.info.eligible_time = Some(now + REQUEUE_DELAY_SECS);
                let _ = self.persist(id);
            }
            Err(LaunchFailure::Refused(msg) | LaunchFailure::Busy(msg)) => {
                tracing::warn!("job {id}: launch refused: {msg}");
                job.info.state = JobState::Failed;
                job.info.reason = Reason::JobLaunchFailure;
                job.info.end_time = Some(now);
                job.info.exit_code = 1;
                job.launch = None;
                let _ = self.persist(id);
            }
        }
    }

    /// gsnoded reports how a job ended.
    ///
    /// A job with OOM kills ends OUT_OF_MEMORY even when its script exited 0 (a child was
    /// killed), unless it was cancelled or timed out first, as in Slurm. Returns the
    /// requests for the run's Epilogs (`state/epilog.rs`).
    pub fn complete(
        &mut self,
        req: &JobCompleteRequest,
        now: i64,
    ) -> Result<Vec<Effect>, ApiError> {
        if let Some(r) = self.complete_gpu_failure(req, now) {
            return r.map(|()| Vec::new());
        }
        let job = self
            .jobs
            .get_mut(&req.job_id)
            .ok_or_else(|| ApiError::plain(ErrorCode::InvalidJobId))?;
        if job.info.start_time != Some(req.start_time)
            || job.info.nodes.first() != Some(&req.node)
            || job.info.state.is_terminal()
        {
            // A report about another run (or a duplicate): acknowledge and ignore.
            return Ok(Vec::new());
        }
        job.info.end_time = Some(req.end_time.max(req.start_time));
        if let Some(t) = job.info.suspended_since.take() {
            job.info.suspended_secs += (req.end_time - t).max(0);
        }
        job.info.exit_code = req.exit_code;
        job.info.exit_signal = req.signal;
        job.info.usage = req.usage;
        job.launch = None;
        let terminate = job.extra.terminate.or(req.terminated_for);
        // The batch node's Prolog failed: the script never ran (slurmd's _launch_job_fail).
        let prolog_failed =
            req.prolog_error.is_some() || job.extra.requeue_hold == Some(RequeueHold::LaunchFailed);
        let (state, reason) = if req.prolog_error.is_some() && !job.info.requeue {
            job.info.exit_signal = libc::SIGKILL;
            job.info.exit_code = 0;
            (JobState::Cancelled, Reason::JobLaunchFailure)
        } else if let Some(err) = &req.launch_error {
            tracing::warn!("job {}: launch failed on {}: {err}", req.job_id, req.node);
            if req.exit_code == 0 && req.signal == 0 {
                job.info.exit_code = 1;
            }
            (JobState::Failed, Reason::JobLaunchFailure)
        } else {
            match terminate {
                Some(TerminateReason::Cancelled) => {
                    (JobState::Cancelled, ladder::cancel_reason(&job.info))
                }
                Some(TerminateReason::TimeLimit) => (JobState::Timeout, Reason::TimeLimit),
                Some(TerminateReason::NotAssigned) => (JobState::NodeFail, Reason::NodeDown),
                // The kernel's OOM killer ended a process of the job (its cgroup's counter):
                // OUT_OF_MEMORY with ExitCode 0:125, as Slurm reports it.
                None if req.oom_kills > 0 => {
                    job.info.exit_code = 0;
                    job.info.exit_signal = OOM_EXIT_SIGNAL;
                    (JobState::OutOfMemory, Reason::OutOfMemory)
                }
                None if req.signal != 0 => (JobState::Failed, Reason::RaisedSignal),
                None if req.exit_code != 0 => (JobState::Failed, Reason::NonZeroExitCode),
                None => (JobState::Completed, Reason::None),
            }
        };
        job.info.state = state;
        job.info.reason = reason;
        // RequeueExit: a batch job that ended by itself (not cancelled, timed out, killed by a
        // signal or the OOM killer) with one of these codes runs again; RequeueExitHold: the
        // same, held in SPECIAL_EXIT (RequeueExit wins, as slurmctld).
        let by_itself = terminate.is_none()
            && req.launch_error.is_none()
            && !prolog_failed
            && req.signal == 0
            && req.oom_kills == 0;
        let code = u8::try_from(req.exit_code).ok().filter(|_| by_itself);
        let requeue_exit = code.is_some_and(|c| self.cfg.requeue_exit.contains(&c));
        let exit_hold =
            !requeue_exit && code.is_some_and(|c| self.cfg.requeue_exit_hold.contains(&c));
        let requeue_prolog = prolog_failed && job.info.requeue;
        let requeue = (job.extra.requeue || requeue_exit || exit_hold)
            && req.launch_error.is_none()
            || requeue_prolog;
        let hold = if requeue_prolog {
            Some(RequeueHold::LaunchFailed)
        } else if exit_hold {
            Some(RequeueHold::ExitHold)
        } else {
            job.extra.requeue_hold
        };
        if let Some(e) = &req.prolog_error {
            tracing::error!("job {}: Prolog failed on {}: {e}", req.job_id, req.node);
            if let Some(&i) = self.node_index.get(&req.node) {
                self.drain_for_script(i, "Prolog error", now);
            }
        }
        let effects = self.epilog_begin(req.job_id, now);
        let job = self.jobs.get_mut(&req.job_id).expect("looked up");
        if requeue {
            if requeue_exit {
                tracing::info!(
                    "job {}: exit code {} is in RequeueExit; requeued",
                    req.job_id,
                    req.exit_code
                );
            }
            if exit_hold {
                tracing::info!(
                    "job {}: exit code {} is in RequeueExitHold; requeued held",
                    req.job_id,
                    req.exit_code
                );
            }
            let code = job.info.exit_code;
            requeue_run(job, now);
            if let Some(kind) = hold {
                let nohold = self.cfg.scheduler.params.nohold_on_prolog_fail;
                hold_requeued(job, kind, code, nohold);
            }
        }
        self.persist(req.job_id).map_err(internal)?;
        Ok(effects)
    }

    /// A terminate request was delivered (or the node does not hold the job at all).
    pub fn terminate_result(&mut self, id: JobId, node_has_job: bool, now: i64) {
        let Some(job) = self.jobs.get_mut(&id) else {
            return;
        };
        if job.info.state != JobState::Completing {
            return;
        }
        job.terminate_acked = true;
        if !node_has_job {
            let acked_long_ago = match job.launch {
                Some(LaunchState::Acked(t)) => now - t >= LOST_JOB_GRACE_SECS,
                Some(LaunchState::InFlight) => false,
                None => true,
            };
            if acked_long_ago {
                // No process exists anywhere: the job is over now.
                job.info.end_time = Some(now);
                job.info.exit_signal = 15;
                let (st, r) = match job.extra.terminate {
                    Some(TerminateReason::TimeLimit) => (JobState::Timeout, Reason::TimeLimit),
                    Some(TerminateReason::NotAssigned) => (JobState::NodeFail, Reason::NodeDown),
                    _ => (JobState::Cancelled, ladder::cancel_reason(&job.info)),
                };
                job.info.state = st;
                job.info.reason = r;
                job.launch = None;
                if job.extra.requeue {
                    requeue_run(job, now);
                }
                let _ = self.persist(id);
            } else {
                job.terminate_acked = false;
            }
        }
    }

    /// A node registers (start-up, or after a controller restart): reconcile its jobs.
    pub fn register(&mut self, r: &NodeReport<'_>, now: i64) -> Result<Vec<JobId>, ApiError> {
        let name = r.name;
        let i = *self.node_index.get(name).ok_or_else(|| {
            ApiError::new(
                ErrorCode::InvalidNodeName,
                format!(
                    "node {name} is not in the controller's config; add a NodeName line for it"
                ),
            )
        })?;
        let n = &mut self.nodes[i];
        if r.cpus < n.cpus || r.mem_mb < n.mem_mb {
            tracing::warn!(
                "node {name} reports CPUs={} RealMemory={}, below its configured CPUs={} RealMemory={}",
                r.cpus,
                r.mem_mb,
                n.cpus,
                n.mem_mb
            );
        }
        n.registered = true;
        n.not_responding = false;
        n.unreachable = false;
        n.last_heard = Some(now);
        n.boot_time = Some(r.boot_time);
        n.daemon_start = Some(r.daemon_start);
        n.version = Some(r.version.to_string());
        if !r.gpus.is_empty() {
            if !n.gpus.is_empty() && n.gpus.len() != r.gpus.len() {
                tracing::warn!(
                    "node {name} registers {} GPUs, its Gres= declares {}; using what it registers",
                    r.gpus.len(),
                    n.gpus.len()
                );
            }
            if n.gpus != r.gpus {
                n.gpus = r.gpus.to_vec();
                self.empty_view.take();
            }
        }
        self.node_back(i, true, r.daemon_start, now);
        Ok(self.reconcile(name, r.running, now))
    }

    /// A heartbeat; `None` when the node must register first.
    pub fn heartbeat(
        &mut self,
        name: &str,
        running: &[RunningJob],
        now: i64,
    ) -> Option<Vec<JobId>> {
        let i = *self.node_index.get(name)?;
        if !self.nodes[i].registered {
            return None;
        }
        self.nodes[i].last_heard = Some(now);
        self.nodes[i].not_responding = false;
        self.nodes[i].unreachable = false;
        self.node_back(i, false, 0, now);
        Some(self.reconcile(name, running, now))
    }

    /// Compares what a node holds with what the controller assigned to it. Returns the jobs
    /// the node must kill; requeues jobs the node never got.
    fn reconcile(&mut self, name: &str, running: &[RunningJob], now: i64) -> Vec<JobId> {
        let mut kill = Vec::new();
        for r in running {
            let assigned = self.jobs.get(&r.job_id).is_some_and(|j| {
                j.info.nodes.first().map(String::as_str) == Some(name)
                    && j.info.start_time == Some(r.start_time)
                    && (matches!(j.info.state, JobState::Running | JobState::Completing)
                        || j.info.state.is_terminal())
            });
            // A terminal job may still be in the node's list until its report is acknowledged.
            if !assigned {
                kill.push(r.job_id);
            }
        }
        let listed_runs: std::collections::HashSet<(JobId, i64)> =
            running.iter().map(|r| (r.job_id, r.start_time)).collect();
        let mut lost = Vec::new();
        let candidates = self
            .node_index
            .get(name)
            .and_then(|&i| self.batch_index.by_node.get(i))
            .map(Vec::as_slice);
        for j in candidates
            .unwrap_or_default()
            .iter()
            .filter_map(|id| self.jobs.get(id))
        {
            if !matches!(j.info.state, JobState::Running | JobState::Completing)
                || j.info.nodes.first().map(String::as_str) != Some(name)
            {
                continue;
            }
            let listed = j
                .info
                .start_time
                .is_some_and(|t| listed_runs.contains(&(j.info.job_id, t)));
            let grace_over = match j.launch {
                Some(LaunchState::Acked(t)) => now - t >= LOST_JOB_GRACE_SECS,
                _ => false,
            };
            if !listed && grace_over {
                lost.push(j.info.job_id);
            }
        }
        for id in &lost {
            if let Some(j) = self.jobs.get_mut(id) {
                if j.info.state == JobState::Completing {
                    // It was being ended anyway: it is over.
                    end_unreported(j, now);
                } else {
                    tracing::warn!("job {id}: node {name} does not have it; requeued");
                    back_to_queue(j);
                }
            }
        }
        if let Err(e) = self.persist_many(&lost) {
            tracing::error!("cannot record requeued jobs: {e}");
        }
        kill
    }

    pub fn node_infos(&self) -> Vec<NodeInfo> {
        let (cpus, mem) = self.node_alloc();
        let now_hint = self.predict.pass_now;
        let gpus = self.gpu_views();
        self.nodes
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let base = if n.admin.down {
                    NodeBaseState::Down
                } else if !n.registered {
                    NodeBaseState::Unknown
                } else if cpus[i] == 0 {
                    NodeBaseState::Idle
                } else if cpus[i] >= n.cpus {
                    NodeBaseState::Allocated
                } else {
                    NodeBaseState::Mixed
                };
                NodeInfo {
                    name: n.name.clone(),
                    addr: n.addr.clone(),
                    port: n.port,
                    cpus: n.cpus,
                    real_memory_mb: n.mem_mb,
                    alloc_cpus: cpus[i],
                    alloc_mem_mb: mem[i],
                    features: n.features.clone(),
                    gres: n.gres.clone(),
                    base,
                    drain: n.admin.drain,
                    not_responding: n.not_responding || n.unreachable,
                    reason: n.admin.reason.clone(),
                    reason_time: n.admin.reason_time,
                    reason_uid: n.admin.reason_uid,
                    partitions: n.partitions.clone(),
                    boot_time: n.boot_time,
                    slurmd_start_time: n.daemon_start,
                    version: n.version.clone(),
                    weight: n.weight,
                    life: self.node_life_info(i, now_hint),
                    gres_used: Self::gres_used(&gpus[i]),
                }
            })
            .collect()
    }

    /// The partitions hidden from `who` (Slurm's "visible partitions", reversed):
    /// `Hidden=YES` ones and those whose `AllowGroups=` it is not in; none for root,
    /// SlurmUser and `AdminUsers` (slurmctld's operators see every partition).
    pub fn hidden_partitions(&self, who: &Identity) -> Vec<String> {
        if self.is_admin(who) {
            return Vec::new();
        }
        self.cfg
            .partitions
            .iter()
            .filter(|c| c.hidden || self.check_partition_groups(&c.access, who.uid).is_err())
            .map(|c| c.name.clone())
            .collect()
    }

    /// Every partition, as `who` sees them (`PartitionInfo::unlisted`).
    pub fn partition_infos(&self, who: &Identity) -> Vec<PartitionInfo> {
        let hidden = self.hidden_partitions(who);
        self.parts
            .iter()
            .zip(&self.cfg.partitions)
            .map(|(p, c)| PartitionInfo {
                hidden: c.hidden,
                def_mem: c.def_mem,
                max_mem: c.max_mem,
                over_time_limit: c.over_time_limit.map(|o| match o {
                    Some(m) => gsched_proto::node::OverTimeLimit::Minutes(m),
                    None => gsched_proto::node::OverTimeLimit::Unlimited,
                }),
                disable_root_jobs: self.cfg.root_jobs_disabled(c),
                unlisted: hidden.contains(&c.name),
                name: p.name.clone(),
                nodes: p
                    .nodes
                    .iter()
                    .map(|&i| self.nodes[i].name.clone())
                    .collect(),
                default: p.default,
                max_time: p.max_time,
                default_time: p.default_time,
                state: p.state,
                total_cpus: p.nodes.iter().map(|&i| self.nodes[i].cpus).sum(),
                total_nodes: p.nodes.len() as u32,
                access: gsched_proto::node::PartitionAccessInfo {
                    allow_accounts: c.access.allow_accounts.clone(),
                    deny_accounts: c.access.deny_accounts.clone(),
                    allow_qos: c.access.allow_qos.clone(),
                    deny_qos: c.access.deny_qos.clone(),
                    allow_groups: c.access.allow_groups.clone(),
                },
            })
            .collect()
    }

    /// `scontrol show config` lines.
    pub fn config_entries(&self) -> Vec<(String, String)> {
        let c = &self.cfg;
        let host = match &c.ctld_host.addr {
            Some(a) => format!("{}({a})", c.ctld_host.name),
            None => c.ctld_host.name.clone(),
        };
        let slurm_user = match self.slurm_uid {
            Some(u) => format!("{}({u})", c.slurm_user),
            None => c.slurm_user.clone(),
        };
        vec![
            (
                "AccountingStorageEnforce".into(),
                c.acct_enforce.to_string(),
            ),
            ("AuthType".into(), c.auth_type.to_string()),
            ("ClusterName".into(), c.cluster_name.clone()),
            (
                "DisableRootJobs".into(),
                if c.disable_root_jobs { "Yes" } else { "No" }.into(),
            ),
            (
                "Epilog".into(),
                c.epilog.clone().unwrap_or_else(|| "(null)".into()),
            ),
            (
                "EpilogSlurmctld".into(),
                c.epilog_slurmctld
                    .clone()
                    .unwrap_or_else(|| "(null)".into()),
            ),
            ("FirstJobId".into(), c.first_job_id.to_string()),
            (
                "JobFileAppend".into(),
                u8::from(c.job_file_append).to_string(),
            ),
            ("KillWait".into(), format!("{} sec", c.kill_wait)),
            ("MaxArraySize".into(), c.max_array_size.to_string()),
            ("MaxJobCount".into(), c.max_job_count.to_string()),
            ("MaxStepCount".into(), c.max_step_count.to_string()),
            ("MaxTasksPerNode".into(), c.max_tasks_per_node.to_string()),
            (
                "MessageTimeout".into(),
                format!("{} sec", c.message_timeout),
            ),
            ("MinJobAge".into(), format!("{} sec", c.min_job_age)),
            (
                "OverTimeLimit".into(),
                c.over_time_limit
                    .map_or_else(|| "UNLIMITED".into(), |m| format!("{m} min")),
            ),
            ("PriorityType".into(), c.priority.priority_type.to_string()),
            ("PrivateData".into(), c.private_data.to_string()),
            (
                "Prolog".into(),
                c.prolog.clone().unwrap_or_else(|| "(null)".into()),
            ),
            (
                "PrologEpilogTimeout".into(),
                c.prolog_epilog_timeout.unwrap_or(65534).to_string(),
            ),
            (
                "PrologFlags".into(),
                if c.prolog_flags.serial {
                    "Serial"
                } else {
                    "(null)"
                }
                .into(),
            ),
            (
                "PrologSlurmctld".into(),
                c.prolog_slurmctld
                    .clone()
                    .unwrap_or_else(|| "(null)".into()),
            ),
            ("SchedulerType".into(), "sched/builtin".into()),
            ("SlurmUser".into(), slurm_user),
            ("SlurmctldHost[0]".into(), host),
            ("SlurmctldPort".into(), c.ctld_port.to_string()),
            ("SlurmdPort".into(), c.slurmd_port.to_string()),
            ("SlurmdSpoolDir".into(), c.slurmd_spool_dir.clone()),
            ("SlurmdTimeout".into(), format!("{} sec", c.slurmd_timeout)),
            ("SLURM_CONF".into(), c.path.display().to_string()),
            (
                "SLURM_VERSION".into(),
                gsched_proto::api::SLURM_COMPAT_VERSION.into(),
            ),
            (
                "StateSaveLocation".into(),
                c.state_save_location.display().to_string(),
            ),
            (
                "TaskEpilog".into(),
                c.task_epilog.clone().unwrap_or_else(|| "(null)".into()),
            ),
            (
                "TaskProlog".into(),
                c.task_prolog.clone().unwrap_or_else(|| "(null)".into()),
            ),
        ]
    }

    /// Address and port of a node's daemon.
    pub fn node_endpoint(&self, name: &str) -> Option<String> {
        let n = &self.nodes[*self.node_index.get(name)?];
        Some(format!("{}:{}", n.addr, n.port))
    }

    /// The registered nodes' daemon addresses, each address once (virtual nodes share
    /// one), with a node name that reaches it.
    pub fn registered_node_endpoints(&self) -> Vec<(String, String)> {
        let mut seen = std::collections::HashSet::new();
        self.nodes
            .iter()
            .filter(|n| n.registered)
            .map(|n| (n.name.clone(), format!("{}:{}", n.addr, n.port)))
            .filter(|(_, ep)| seen.insert(ep.clone()))
            .collect()
    }

    /// Expanded node names for a hostlist, for API callers.
    pub fn expand_nodes(expr: &str) -> Result<Vec<String>, ApiError> {
        hostlist::expand(expr).map_err(|e| ApiError::new(ErrorCode::InvalidNodeName, e.to_string()))
    }
}

/// Whose scripts, environments and arguments a job query returns with the jobs: as in
/// Slurm, a batch script is the job owner's and the administrators' to read (other users
/// get the job without it, even without `PrivateData`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayloadFor {
    Nobody,
    Everyone,
    /// The jobs of this uid.
    User(u32),
}

impl PayloadFor {
    fn covers(self, uid: u32) -> bool {
        match self {
            PayloadFor::Nobody => false,
            PayloadFor::Everyone => true,
            PayloadFor::User(u) => u == uid,
        }
    }
}

/// Per-job outcome of an action on several jobs.
pub type ActionResults = Vec<(JobId, Option<ApiError>)>;

/// What a node says about itself when it registers.
#[derive(Debug, Clone)]
pub struct NodeReport<'a> {
    pub name: &'a str,
    pub cpus: u32,
    pub mem_mb: u64,
    pub version: &'a str,
    pub boot_time: i64,
    pub daemon_start: i64,
    pub running: &'a [RunningJob],
    /// The GPUs gsnoded found (empty: none reported; the config's `Gres=` stands).
    pub gpus: &'a [gsched_proto::gpu::GpuDevice],
}

/// How a launch failed.
#[derive(Debug, Clone)]
pub enum LaunchFailure {
    /// The node could not be reached: nothing started.
    Unreachable(String),
    /// gsnoded refused the job (unknown user, not allowed...).
    Refused(String),
    /// gsnoded still holds a run of this job id (its report is not acknowledged yet).
    Busy(String),
}

/// `--time-min` must not exceed the job's time limit (Slurm's ESLURM_INVALID_TIME_MIN_LIMIT);
/// a job without a limit may have any minimum.
fn check_time_min(time_min: Option<u32>, limit: Option<u32>) -> Result<(), ApiError> {
    match (time_min, limit) {
        (Some(m), Some(l)) if m > l => Err(ApiError::plain(ErrorCode::TimeMinInvalid)),
        _ => Ok(()),
    }
}

fn back_to_queue(job: &mut Job) {
    job.info.state = JobState::Pending;
    job.info.reason = Reason::None;
    job.info.nodes.clear();
    job.info.cpus_per_node.clear();
    job.info.gpus.clear();
    job.info.start_time = None;
    job.info.end_time = None;
    // The last run's Epilog holds stay until the nodes answer.
    job.extra = JobExtra {
        epilog: job.extra.epilog.take(),
        ..JobExtra::default()
    };
    job.launch = None;
    job.terminate_sent_at = None;
    job.terminate_acked = false;
}

/// A requeued job waits held as `kind` says; SPECIAL_EXIT keeps `exit_code` (the last run's)
/// until released, as slurmctld.
fn hold_requeued(job: &mut Job, kind: RequeueHold, exit_code: i32, nohold_on_prolog_fail: bool) {
    let reason = match kind {
        RequeueHold::LaunchFailed if nohold_on_prolog_fail => return,
        RequeueHold::LaunchFailed => Reason::LaunchFailedRequeuedHeld,
        RequeueHold::Held => Reason::RequeuedHeld,
        RequeueHold::SpecialExit => Reason::RequeuedSpecialExit,
        RequeueHold::ExitHold => Reason::JobHeldUser,
    };
    job.info.held = true;
    job.info.priority = 0;
    job.info.reason = reason;
    if matches!(kind, RequeueHold::SpecialExit | RequeueHold::ExitHold) {
        job.info.special_exit = true;
        job.info.exit_code = exit_code;
    }
}

/// Puts an ended run back in the queue as a new run (`scontrol requeue`).
/// A run being ended (COMPLETING) that no node will report: it ends now, in the state its
/// terminate reason gives, and goes back to the queue if it was being requeued (a node
/// that lost it, a run whose PrologSlurmctld was still running).
fn end_unreported(job: &mut Job, now: i64) {
    job.info.state = match job.extra.terminate {
        Some(TerminateReason::TimeLimit) => JobState::Timeout,
        Some(TerminateReason::Cancelled) => JobState::Cancelled,
        _ => JobState::NodeFail,
    };
    job.info.end_time = Some(now);
    job.launch = None;
    if job.extra.requeue {
        requeue_run(job, now);
    }
}

fn requeue_run(job: &mut Job, now: i64) {
    back_to_queue(job);
    job.info.restarts += 1;
    job.info.exit_code = 0;
    job.info.exit_signal = 0;
    job.info.usage = None;
    job.info.suspended_since = None;
    job.info.suspended_secs = 0;
    job.info.cancelled_by = None;
    job.info.eligible_time = Some(now + REQUEUE_DELAY_SECS);
    job.info.reason = Reason::BeginTime;
}

/// What a dependency on `id` sees: the job itself, or, when `id` is an array's job id, the
/// whole array as Slurm does (`afterok:N` waits for every task; the array counts as started
/// once every task started, as ended once every task ended, and as failed if any task did).
fn array_or_job_state(jobs: &BTreeMap<JobId, Box<Job>>, id: JobId) -> Option<TargetState> {
    let first = jobs.get(&id)?;
    let one = |t: &Job| TargetState {
        state: t.info.state,
        start_time: t.info.start_time,
        end_time: t.info.end_time,
    };
    let Some(a) = first
        .info
        .array
        .as_ref()
        .filter(|a| a.job_id == id && a.count > 1)
    else {
        return Some(one(first));
    };
    let tasks: Vec<TargetState> = (0..a.count)
        .filter_map(|k| id.checked_add(k))
        .filter_map(|tid| jobs.get(&tid).map(|b| &**b))
        .filter(|t| t.info.array.as_ref().is_some_and(|ta| ta.job_id == id))
        .map(one)
        .collect();
    let max = |f: fn(&TargetState) -> Option<i64>| tasks.iter().filter_map(f).max();
    let state = if tasks.iter().any(|t| t.state == JobState::Pending) {
        JobState::Pending
    } else if tasks.iter().any(|t| !t.state.is_terminal()) {
        JobState::Running
    } else if tasks.iter().all(|t| t.state == JobState::Completed) {
        JobState::Completed
    } else {
        JobState::Failed
    };
    Some(TargetState {
        state,
        start_time: (state != JobState::Pending)
            .then(|| max(|t| t.start_time))
            .flatten(),
        end_time: state.is_terminal().then(|| max(|t| t.end_time)).flatten(),
    })
}

/// What `aftercorr:id` sees for `job`: the task of array `id` with the same index as `job`,
/// `None` when `job` is not an array task or that array has no such task (then the target
/// is judged as a whole, as Slurm does).
fn corresponding_task_state(
    jobs: &BTreeMap<JobId, Box<Job>>,
    arrays: &HashMap<JobId, ArrayRt>,
    id: JobId,
    job: &JobInfo,
) -> Option<TargetState> {
    let k = job.array?.task_id;
    let a = arrays.get(&id)?;
    let pos = a.indices.binary_search(&k).ok()?;
    let t = jobs.get(&id.checked_add(pos as u32)?)?;
    t.info
        .array
        .filter(|ta| ta.job_id == id && ta.task_id == k)
        .map(|_| TargetState {
            state: t.info.state,
            start_time: t.info.start_time,
            end_time: t.info.end_time,
        })
}

/// A nice value given at submission (`--nice`) or later (`Nice=`): within Slurm's range, and
/// negative only for an administrator.
fn check_nice(nice: Option<i32>, admin: bool, what: &str) -> Result<(), ApiError> {
    let Some(n) = nice else { return Ok(()) };
    if gsched_proto::job::nice_in_range(n.into()).is_none() {
        return Err(ApiError::new(
            ErrorCode::BadRequest,
            format!(
                "Invalid {what} value, out of range (+/- {})",
                gsched_proto::job::NICE_LIMIT
            ),
        ));
    }
    if n < 0 && !admin {
        return Err(ApiError::new(
            ErrorCode::AccessDenied,
            format!("Access/permission denied: only root or SlurmUser may set a negative {what}"),
        ));
    }
    Ok(())
}

/// What a start changes in a pending job, kept until the pass's starts are stored: a pass
/// whose commit fails puts each job back as it was (the store still has it so), its
/// partition and time limit included (a start may choose among `--partition`s and lower a
/// `--time-min` job's limit). The run itself (nodes, CPUs, memory, GPUs, start time, launch)
/// goes back to a pending job's nothing. A few words per job, not a copy of the record: one
/// pass may start tens of thousands of jobs.
struct Unstart {
    id: JobId,
    partition: String,
    time_limit: Option<u32>,
    end_time: Option<i64>,
    reason: Reason,
    num_nodes: u32,
    num_cpus: u32,
    terminate: Option<TerminateReason>,
    warn_signal_sent: bool,
    mail_sent: u32,
    predicted_secs: Option<i64>,
    terminate_sent_at: Option<i64>,
    terminate_acked: bool,
}

impl Unstart {
    fn before(id: JobId, j: &Job) -> Unstart {
        Unstart {
            id,
            partition: j.info.partition.clone(),
            time_limit: j.info.time_limit,
            end_time: j.info.end_time,
            reason: j.info.reason,
            num_nodes: j.info.num_nodes,
            num_cpus: j.info.num_cpus,
            terminate: j.extra.terminate,
            warn_signal_sent: j.extra.warn_signal_sent,
            mail_sent: j.extra.mail_sent,
            predicted_secs: j.extra.predicted_secs,
            terminate_sent_at: j.terminate_sent_at,
            terminate_acked: j.terminate_acked,
        }
    }

    fn restore(self, j: &mut Job) {
        j.info.state = JobState::Pending;
        j.info.partition = self.partition;
        j.info.time_limit = self.time_limit;
        j.info.start_time = None;
        j.info.end_time = self.end_time;
        j.info.reason = self.reason;
        j.info.nodes.clear();
        j.info.cpus_per_node.clear();
        j.info.gpus.clear();
        j.info.num_nodes = self.num_nodes;
        j.info.num_cpus = self.num_cpus;
        j.extra.alloc_mem.clear();
        j.extra.terminate = self.terminate;
        j.extra.warn_signal_sent = self.warn_signal_sent;
        j.extra.mail_sent = self.mail_sent;
        j.extra.predicted_secs = self.predicted_secs;
        j.launch = None;
        j.terminate_sent_at = self.terminate_sent_at;
        j.terminate_acked = self.terminate_acked;
    }
}

/// FIFO priority like Slurm's priority/basic: older jobs rank higher, and a job's `--nice`
/// moves it down by as much (up, when negative, as Slurm's `lowest_prio - 1 - nice`); never
/// below 1, which is still above a hold's 0.
fn priority_for(id: JobId, nice: i32) -> u32 {
    let p = i64::from(u32::MAX / 2) - i64::from(id) - i64::from(nice);
    p.clamp(1, i64::from(u32::MAX)) as u32
}

#[cfg(test)]
pub(crate) mod tests {
    use super::launch::launches;
    use super::*;
    use gsched_proto::config::Config;

    pub(crate) const ROOT: Identity = Identity { uid: 0, gid: 0 };

    pub(crate) fn state(dir: &std::path::Path) -> State {
        state_conf(
            dir,
            "NodeName=n[1-2] NodeAddr=127.0.0.1 CPUs=2 RealMemory=1000\n\
             PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE\n",
        )
    }

    /// A controller's state from a config: the cluster, the controller, `auth/none` and the
    /// store and spool folders under `dir`, then `rest` (nodes, partitions, settings).
    pub(crate) fn state_conf(dir: &std::path::Path, rest: &str) -> State {
        let text = format!(
            "ClusterName=t\nSlurmctldHost=h(127.0.0.1)\nAuthType=auth/none\n\
             StateSaveLocation={d}/s\nSlurmdSpoolDir={d}/sp\n{rest}",
            d = dir.display()
        );
        let cfg = Arc::new(Config::parse(&text, &dir.join("gsched.conf")).unwrap());
        let store = Store::open(&cfg.state_save_location, false).unwrap();
        State::load(cfg, store, 1000).unwrap()
    }

    pub(crate) fn spec(tasks: u32) -> JobSpec {
        JobSpec {
            name: "j".into(),
            script: "#!/bin/sh\ntrue\n".into(),
            work_dir: "/tmp".into(),
            ntasks: Some(tasks),
            ..JobSpec::default()
        }
    }

    /// A node's report that run `start` of job `id` ended at `end` with exit code 0; tests
    /// change the fields they need with `..ended(...)`.
    pub(crate) fn ended(
        id: JobId,
        node: impl Into<String>,
        start: i64,
        end: i64,
    ) -> JobCompleteRequest {
        JobCompleteRequest {
            job_id: id,
            node: node.into(),
            start_time: start,
            exit_code: 0,
            signal: 0,
            end_time: end,
            launch_error: None,
            terminated_for: None,
            oom_kills: 0,
            usage: None,
            gpu_failure: None,
            prolog_error: None,
        }
    }

    pub(crate) fn register_all(st: &mut State, now: i64) {
        for n in ["n1", "n2"] {
            register_node(st, n, &[], now);
        }
    }

    /// Node `name` (2 CPUs, 1000 MB, no jobs) registers with `gpus`.
    pub(crate) fn register_node(
        st: &mut State,
        name: &str,
        gpus: &[gsched_proto::gpu::GpuDevice],
        now: i64,
    ) {
        let r = NodeReport {
            gpus,
            name,
            cpus: 2,
            mem_mb: 1000,
            version: "x",
            boot_time: 0,
            daemon_start: 0,
            running: &[],
        };
        st.register(&r, now).unwrap();
    }

    /// Heartbeats from both nodes at `now`, each reporting the jobs the controller runs there
    /// (a node silent for long is not responding, then DOWN).
    pub(crate) fn heartbeat_all(st: &mut State, now: i64) {
        for n in ["n1", "n2"] {
            let running: Vec<RunningJob> = st
                .jobs
                .values()
                .filter(|j| {
                    matches!(j.info.state, JobState::Running | JobState::Completing)
                        && j.info.nodes.iter().any(|x| x == n)
                })
                .map(|j| RunningJob {
                    job_id: j.info.job_id,
                    start_time: j.info.start_time.unwrap_or(0),
                })
                .collect();
            st.heartbeat(n, &running, now);
        }
    }

    #[test]
    fn submit_schedule_complete() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(dir.path());
        let a = st.submit(spec(2), ROOT, 1000).unwrap();
        let b = st.submit(spec(2), ROOT, 1000).unwrap();
        let c = st.submit(spec(1), ROOT, 1000).unwrap();
        // No node registered yet: nothing starts.
        assert!(st.schedule(1001).is_empty());
        register_all(&mut st, 1001);
        let eff = st.schedule(1002);
        assert_eq!(eff.len(), 2);
        assert_eq!(st.jobs[&a].info.nodes, vec!["n1"]);
        assert_eq!(st.jobs[&b].info.nodes, vec!["n2"]);
        assert_eq!(st.jobs[&c].info.reason, Reason::Resources);
        st.launch_result(a, 1002, Ok(()), 1002);
        let done = JobCompleteRequest {
            exit_code: 3,
            ..ended(a, "n1", 1002, 1010)
        };
        st.complete(&done, 1010).unwrap();
        assert_eq!(st.jobs[&a].info.state, JobState::Failed);
        assert_eq!(st.jobs[&a].info.exit_code_string(), "3:0");
        st.schedule(1011);
        assert_eq!(st.jobs[&c].info.state, JobState::Running);
    }

    #[test]
    fn oom_killed_job_ends_out_of_memory_with_its_usage() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(dir.path());
        let a = st.submit(spec(1), ROOT, 1000).unwrap();
        register_all(&mut st, 1001);
        st.schedule(1002);
        st.launch_result(a, 1002, Ok(()), 1002);
        let usage = gsched_proto::job::JobUsage {
            max_rss_bytes: Some(100 << 20),
            user_cpu_usec: Some(1_500_000),
            system_cpu_usec: Some(20_000),
        };
        let done = JobCompleteRequest {
            signal: 9,
            oom_kills: 1,
            usage: Some(usage),
            ..ended(a, "n1", 1002, 1010)
        };
        st.complete(&done, 1010).unwrap();
        let info = &st.jobs[&a].info;
        assert_eq!(info.state, JobState::OutOfMemory);
        assert_eq!(info.reason, Reason::OutOfMemory);
        assert_eq!((info.exit_code, info.exit_signal), (0, 125));
        assert_eq!(info.usage, Some(usage));
        // Stored: a restarted controller still knows.
        drop(st);
        let st = state(dir.path());
        assert_eq!(st.jobs[&a].info.state, JobState::OutOfMemory);
        assert_eq!(st.jobs[&a].info.usage, Some(usage));
    }

    #[test]
    fn impossible_jobs_are_refused_at_submit() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(dir.path());
        let e = st.submit(spec(5), ROOT, 1).unwrap_err();
        assert_eq!(e.code, ErrorCode::TooManyProcessors);
        let mut s = spec(1);
        s.mem = Some(MemRequest::PerNode(5000));
        assert_eq!(
            st.submit(s, ROOT, 1).unwrap_err().code,
            ErrorCode::MemoryUnavailable
        );
        let mut s = spec(1);
        s.partitions = vec!["nope".into()];
        assert_eq!(
            st.submit(s, ROOT, 1).unwrap_err().to_string(),
            "Invalid partition name specified"
        );
        let mut s = spec(1);
        s.script = "echo hi".into();
        assert!(st.submit(s, ROOT, 1).is_err());
    }

    #[test]
    fn restart_keeps_jobs_and_ids() {
        let dir = tempfile::tempdir().unwrap();
        let a;
        {
            let mut st = state(dir.path());
            a = st.submit(spec(1), ROOT, 1000).unwrap();
            register_all(&mut st, 1000);
            st.schedule(1000);
            assert_eq!(st.jobs[&a].info.state, JobState::Running);
        }
        let mut st = state(dir.path());
        assert_eq!(st.jobs[&a].info.state, JobState::Running);
        assert_eq!(st.submit(spec(1), ROOT, 1001).unwrap(), a + 1);
        // The node comes back still running the job: nothing to kill, nothing lost.
        let running = [RunningJob {
            job_id: a,
            start_time: 1000,
        }];
        let r = NodeReport {
            gpus: &[],
            name: "n1",
            cpus: 2,
            mem_mb: 1000,
            version: "x",
            boot_time: 0,
            daemon_start: 0,
            running: &running,
        };
        assert!(st.register(&r, 1100).unwrap().is_empty());
        assert_eq!(st.jobs[&a].info.state, JobState::Running);
    }

    #[test]
    fn lost_jobs_are_requeued_and_strays_killed() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(dir.path());
        let a = st.submit(spec(1), ROOT, 1000).unwrap();
        register_all(&mut st, 1000);
        st.schedule(1000);
        st.launch_result(a, 1000, Ok(()), 1000);
        // Within the grace period a missing job is not judged.
        assert_eq!(st.heartbeat("n1", &[], 1005), Some(vec![]));
        assert_eq!(st.jobs[&a].info.state, JobState::Running);
        let stray = [RunningJob {
            job_id: 99,
            start_time: 5,
        }];
        let kill = st
            .heartbeat("n1", &stray, 1000 + LOST_JOB_GRACE_SECS)
            .unwrap();
        assert_eq!(kill, vec![99]);
        assert_eq!(st.jobs[&a].info.state, JobState::Pending);
    }

    #[test]
    fn lost_jobs_are_found_through_each_pass_and_before_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b);
        {
            let mut st = state(dir.path());
            a = st.submit(spec(1), ROOT, 1000).unwrap();
            b = st.submit(spec(1), ROOT, 1000).unwrap();
            register_all(&mut st, 1000);
            st.schedule(1000);
            st.launch_result(a, 1000, Ok(()), 1000);
            st.launch_result(b, 1000, Ok(()), 1000);
            // A later pass indexes the jobs from its view (they started in an earlier one).
            heartbeat_all(&mut st, 1010);
            st.schedule(1010);
            let node_of_a = st.jobs[&a].info.nodes[0].clone();
            // b may be on the same node: it still runs there.
            let still: Vec<RunningJob> = (st.jobs[&b].info.nodes[0] == node_of_a)
                .then_some(RunningJob {
                    job_id: b,
                    start_time: 1000,
                })
                .into_iter()
                .collect();
            let t = 1000 + LOST_JOB_GRACE_SECS;
            assert_eq!(st.heartbeat(&node_of_a, &still, t), Some(vec![]));
            assert_eq!(st.jobs[&a].info.state, JobState::Pending);
            assert_eq!(st.jobs[&b].info.state, JobState::Running);
            // The next pass starts a again: the index holds each started job once.
            heartbeat_all(&mut st, t);
            st.schedule(t);
            assert_eq!(st.jobs[&a].info.state, JobState::Running);
            let mut indexed: Vec<JobId> = st.batch_index.by_node.concat();
            indexed.sort_unstable();
            assert_eq!(indexed, vec![a, b]);
        }
        // A restarted controller (at 1000), before its first pass: b's node registers
        // without it.
        let mut st = state(dir.path());
        let j = &st.jobs[&b].info;
        assert_eq!(j.state, JobState::Running);
        let node_of_b = j.nodes[0].clone();
        register_node(&mut st, &node_of_b, &[], 1000 + LOST_JOB_GRACE_SECS);
        assert_eq!(st.jobs[&b].info.state, JobState::Pending);
    }

    #[test]
    fn cancel_pending_and_running() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(dir.path());
        register_all(&mut st, 1000);
        let a = st.submit(spec(2), ROOT, 1000).unwrap();
        let b = st.submit(spec(2), ROOT, 1000).unwrap();
        let c = st.submit(spec(2), ROOT, 1000).unwrap();
        st.schedule(1000);
        let f = JobFilter {
            ids: vec![a, c],
            ..JobFilter::default()
        };
        let (res, eff) = st
            .signal_jobs(&f, None, SignalScope::Full, ROOT, 1001)
            .unwrap();
        assert!(res.iter().all(|r| r.1.is_none()));
        assert_eq!(eff.len(), 1);
        assert_eq!(st.jobs[&a].info.state, JobState::Completing);
        assert_eq!(st.jobs[&c].info.state, JobState::Cancelled);
        assert_eq!(st.jobs[&b].info.state, JobState::Running);
        // Someone else may not cancel root's job.
        let other = Identity {
            uid: 4242,
            gid: 4242,
        };
        let f = JobFilter {
            ids: vec![b],
            ..JobFilter::default()
        };
        let (res, _) = st
            .signal_jobs(&f, None, SignalScope::Full, other, 1002)
            .unwrap();
        assert_eq!(res[0].1.as_ref().unwrap().code, ErrorCode::AccessDenied);
    }

    #[test]
    fn a_pass_whose_starts_cannot_be_stored_puts_partition_and_time_limit_back() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state_conf(
            dir.path(),
            "NodeName=n[1-3] NodeAddr=127.0.0.1 CPUs=2 RealMemory=1000\n\
             PartitionName=a Nodes=n1 Default=YES MaxTime=INFINITE\n\
             PartitionName=b Nodes=n[2-3] MaxTime=INFINITE\n",
        );
        for n in ["n1", "n2", "n3"] {
            register_node(&mut st, n, &[], 1000);
        }
        let job = |tasks: u32, parts: &[&str], minutes: u32| JobSpec {
            partitions: parts.iter().map(|p| p.to_string()).collect(),
            time_limit: Some(minutes),
            ..spec(tasks)
        };
        // n1 (partition a) full for an hour, n2 half full for an hour.
        let x = st.submit(job(2, &["a"], 60), ROOT, 1000).unwrap();
        let r = st.submit(job(1, &["b"], 60), ROOT, 1000).unwrap();
        let effects = st.schedule(1000);
        for l in launches(&mut st, &effects, 1000) {
            st.launch_result(l.job_id, 1000, Ok(()), 1000);
        }
        assert_eq!(st.jobs[&x].info.state, JobState::Running);
        assert_eq!(st.jobs[&r].info.state, JobState::Running);
        // p waits for r's end; c (--time-min) fits before it with a lower limit; m may
        // run in a or b and fits in b.
        let p = st.submit(job(4, &["b"], 60), ROOT, 1001).unwrap();
        let c = st
            .submit(
                JobSpec {
                    time_min: Some(30),
                    ..job(1, &["b"], 120)
                },
                ROOT,
                1001,
            )
            .unwrap();
        let m = st.submit(job(1, &["a", "b"], 10), ROOT, 1001).unwrap();
        let before = |st: &State, id: JobId| {
            let i = &st.jobs[&id].info;
            (i.state, i.partition.clone(), i.time_limit, i.num_cpus)
        };
        let (c0, m0) = (before(&st, c), before(&st, m));
        assert_eq!(m0.1, "a");

        let other =
            rusqlite::Connection::open(dir.path().join("s").join(crate::store::DB_FILE)).unwrap();
        other.execute_batch("BEGIN EXCLUSIVE").unwrap();
        // (The store waits its busy timeout, 5 s, before it gives up.)
        assert!(st.schedule(1002).is_empty());
        assert_eq!(before(&st, c), c0);
        assert_eq!(before(&st, m), m0);
        assert!(st.jobs[&c].info.nodes.is_empty() && st.jobs[&c].info.start_time.is_none());
        other.execute_batch("ROLLBACK").unwrap();

        // The same pass again, stored: what the failed one had changed.
        let effects = st.schedule(1003);
        assert_eq!(launches(&mut st, &effects, 1003).len(), 2);
        assert_eq!(st.jobs[&p].info.state, JobState::Pending);
        let (ci, mi) = (&st.jobs[&c].info, &st.jobs[&m].info);
        assert_eq!((ci.state, mi.state), (JobState::Running, JobState::Running));
        assert!(ci.time_limit.unwrap() < 120, "{:?}", ci.time_limit);
        assert_eq!(mi.partition, "b");
    }

    /// `--priority` from an operator is the job's fixed priority, which a hold and release
    /// give back and multifactor leaves alone; `Priority=` by update replaces it.
    #[test]
    fn an_operators_priority_is_fixed_through_hold_and_release() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state_conf(
            dir.path(),
            "PriorityType=priority/multifactor
PriorityWeightAge=1000
             NodeName=n1 NodeAddr=127.0.0.1 CPUs=2 RealMemory=1000
             PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE
",
        );
        let a = st
            .submit(
                JobSpec {
                    priority: Some(7),
                    begin_time: Some(5000),
                    ..spec(1)
                },
                ROOT,
                1000,
            )
            .unwrap();
        assert_eq!(st.jobs[&a].info.priority, 7);
        st.schedule(2000);
        assert_eq!(st.jobs[&a].info.priority, 7, "multifactor left it alone");
        st.hold(&[a], &[], &[], false, ROOT, 2001).unwrap();
        assert_eq!(st.jobs[&a].info.priority, 0);
        st.hold(&[a], &[], &[], true, ROOT, 2002).unwrap();
        assert_eq!(st.jobs[&a].info.priority, 7, "the release gave it back");
        let req = JobUpdateRequest {
            job_id: a,
            priority: Some(9),
            ..Default::default()
        };
        st.update_job(&req, ROOT, 2003).unwrap();
        st.hold(&[a], &[], &[], false, ROOT, 2004).unwrap();
        st.hold(&[a], &[], &[], true, ROOT, 2005).unwrap();
        assert_eq!(st.jobs[&a].info.priority, 9);
    }

    #[test]
    fn over_time_limit_delays_the_kill_and_a_partition_may_lift_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state_conf(
            dir.path(),
            "OverTimeLimit=2\nNodeName=n[1-2] NodeAddr=127.0.0.1 CPUs=2 RealMemory=1000\n\
             PartitionName=debug Nodes=ALL Default=YES\n\
             PartitionName=free Nodes=ALL OverTimeLimit=UNLIMITED\n",
        );
        register_all(&mut st, 1000);
        let job = |parts: &[&str]| JobSpec {
            partitions: parts.iter().map(|p| p.to_string()).collect(),
            time_limit: Some(1),
            ..spec(1)
        };
        let a = st.submit(job(&["debug"]), ROOT, 1000).unwrap();
        let b = st.submit(job(&["free"]), ROOT, 1000).unwrap();
        let effects = st.schedule(1000);
        for l in launches(&mut st, &effects, 1000) {
            st.launch_result(l.job_id, 1000, Ok(()), 1000);
        }
        let killed = |effects: &[Effect]| -> Vec<JobId> {
            effects
                .iter()
                .filter_map(|e| match e {
                    Effect::Terminate {
                        job_id,
                        reason: TerminateReason::TimeLimit,
                        ..
                    } => Some(*job_id),
                    _ => None,
                })
                .collect()
        };
        // At the limit, and until two minutes past it, both run.
        for t in [1060, 1179] {
            assert!(killed(&st.schedule(t)).is_empty(), "at {t}");
            assert_eq!(st.jobs[&a].info.state, JobState::Running);
        }
        assert_eq!(killed(&st.schedule(1180)), vec![a]);
        assert_eq!(st.jobs[&a].info.state, JobState::Completing);
        // The limit shown is still the job's own.
        assert_eq!(st.jobs[&a].info.time_limit, Some(1));
        // (Before the nodes miss their heartbeats, SlurmdTimeout=300.)
        assert!(!killed(&st.schedule(1290)).contains(&b));
        assert_eq!(st.jobs[&b].info.state, JobState::Running);
    }
}
