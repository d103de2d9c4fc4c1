//! Jobs as every part of gsched sees them: what a user asked for ([`JobSpec`]), the state
//! machine ([`JobState`]), why a job waits ([`Reason`]) and the record the API returns
//! ([`JobInfo`]). The names and spellings are Slurm's, because scripts parse them.

use serde::{Deserialize, Serialize};

use crate::mail::MailTypes;
use std::fmt;

/// A job id. Ids start at 1 and are never reused by a controller.
pub type JobId = u32;

/// The life of a job. Terminal states never change again (except by requeue, later).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    PartialOrd,
    Ord,
    Default,
    schemars::JsonSchema,
)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum JobState {
    #[default]
    Pending,
    Running,
    Completing,
    Completed,
    Cancelled,
    Failed,
    Timeout,
    NodeFail,
    OutOfMemory,
    /// The job could not end before its `--deadline` and was removed (Slurm's DEADLINE).
    Deadline,
}

impl JobState {
    pub const ALL: [JobState; 10] = [
        JobState::Pending,
        JobState::Running,
        JobState::Completing,
        JobState::Completed,
        JobState::Cancelled,
        JobState::Failed,
        JobState::Timeout,
        JobState::NodeFail,
        JobState::OutOfMemory,
        JobState::Deadline,
    ];

    /// Slurm's long name (`squeue %T`, `scontrol JobState=`).
    pub fn long(self) -> &'static str {
        match self {
            JobState::Pending => "PENDING",
            JobState::Running => "RUNNING",
            JobState::Completing => "COMPLETING",
            JobState::Completed => "COMPLETED",
            JobState::Cancelled => "CANCELLED",
            JobState::Failed => "FAILED",
            JobState::Timeout => "TIMEOUT",
            JobState::NodeFail => "NODE_FAIL",
            JobState::OutOfMemory => "OUT_OF_MEMORY",
            JobState::Deadline => "DEADLINE",
        }
    }

    /// Slurm's compact name (`squeue %t`).
    pub fn compact(self) -> &'static str {
        match self {
            JobState::Pending => "PD",
            JobState::Running => "R",
            JobState::Completing => "CG",
            JobState::Completed => "CD",
            JobState::Cancelled => "CA",
            JobState::Failed => "F",
            JobState::Timeout => "TO",
            JobState::NodeFail => "NF",
            JobState::OutOfMemory => "OOM",
            JobState::Deadline => "DL",
        }
    }

    /// A finished job: it holds no resources and will not run again.
    pub fn is_terminal(self) -> bool {
        !matches!(
            self,
            JobState::Pending | JobState::Running | JobState::Completing
        )
    }

    /// Parses a long or compact state name, case-insensitively (`-t` filters).
    pub fn parse(s: &str) -> Option<JobState> {
        let up = s.trim().to_ascii_uppercase();
        JobState::ALL
            .into_iter()
            .find(|st| st.long() == up || st.compact() == up)
    }
}

impl fmt::Display for JobState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.long())
    }
}

/// Why a job is pending, or why it ended (Slurm's reason strings).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
pub enum Reason {
    #[default]
    None,
    Priority,
    Resources,
    BeginTime,
    JobHeldUser,
    JobHeldAdmin,
    PartitionDown,
    PartitionInactive,
    PartitionTimeLimit,
    PartitionNodeLimit,
    ReqNodeNotAvail,
    NodeDown,
    NonZeroExitCode,
    RaisedSignal,
    TimeLimit,
    JobLaunchFailure,
    OutOfMemory,
    Dependency,
    DependencyNeverSatisfied,
    /// An array task waits for its array's `%N` throttle.
    JobArrayTaskLimit,
    /// The user runs as many jobs of the QOS as its `MaxJobsPerUser` allows.
    QOSMaxJobsPerUserLimit,
    /// The job's time limit exceeds its QOS's `MaxWall`.
    QOSMaxWallDurationPerJobLimit,
    /// The association runs as many jobs as its `MaxJobs` allows.
    AssocMaxJobsLimit,
    /// The job's time limit exceeds its association's `MaxWall`.
    AssocMaxWallDurationPerJobLimit,
    /// The user's running jobs of the QOS hold as many CPUs as `MaxTRESPerUser=cpu=N` allows.
    QOSMaxCpuPerUserLimit,
    /// gsched's invalid-job ladder: no CPU time and no output growth for `HangMinutes`.
    Hung,
    /// gsched's invalid-job ladder: its GPUs under `IdleGpuPercent` for `IdleGpuMinutes`.
    IdleGPU,
    /// gsched: a long job deferred to a cheaper price window (`PriceWindow=`, `PriceFile=`);
    /// its expected start is the chosen time (`gsqueue --start`).
    PriceWindow,
    /// The job could not end before its `--deadline` (Slurm's `DeadLine`).
    DeadLine,
    /// gsched: requeued because the MPS daemon or server of a GPU it shared died (the job
    /// is not charged for that run).
    GpuMpsFailure,
    /// The job would run into a maintenance reservation on the nodes it could use now
    /// (Slurm's `ReqNodeNotAvail, Reserved for maintenance`).
    ReqNodeNotAvailMaint,
    /// A `--reservation` job waits for its reservation to begin.
    Reservation,
    /// Requeued and held because a node's `Prolog` failed (Slurm's state description).
    LaunchFailedRequeuedHeld,
    /// `scontrol requeuehold` (Slurm's state description).
    RequeuedHeld,
    /// `scontrol requeuehold State=SpecialExit` (Slurm's state description).
    RequeuedSpecialExit,
    /// Not enough of a license it asks for is free (`--licenses`).
    Licenses,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::None => "None",
            Reason::Priority => "Priority",
            Reason::Resources => "Resources",
            Reason::BeginTime => "BeginTime",
            Reason::JobHeldUser => "JobHeldUser",
            Reason::JobHeldAdmin => "JobHeldAdmin",
            Reason::PartitionDown => "PartitionDown",
            Reason::PartitionInactive => "PartitionInactive",
            Reason::PartitionTimeLimit => "PartitionTimeLimit",
            Reason::PartitionNodeLimit => "PartitionNodeLimit",
            Reason::ReqNodeNotAvail => "ReqNodeNotAvail",
            Reason::NodeDown => "NodeDown",
            Reason::NonZeroExitCode => "NonZeroExitCode",
            Reason::RaisedSignal => "RaisedSignal",
            Reason::TimeLimit => "TimeLimit",
            Reason::JobLaunchFailure => "JobLaunchFailure",
            Reason::OutOfMemory => "OutOfMemory",
            Reason::Dependency => "Dependency",
            Reason::DependencyNeverSatisfied => "DependencyNeverSatisfied",
            Reason::JobArrayTaskLimit => "JobArrayTaskLimit",
            Reason::QOSMaxJobsPerUserLimit => "QOSMaxJobsPerUserLimit",
            Reason::QOSMaxWallDurationPerJobLimit => "QOSMaxWallDurationPerJobLimit",
            Reason::AssocMaxJobsLimit => "AssocMaxJobsLimit",
            Reason::AssocMaxWallDurationPerJobLimit => "AssocMaxWallDurationPerJobLimit",
            Reason::QOSMaxCpuPerUserLimit => "QOSMaxCpuPerUserLimit",
            Reason::Hung => "Hung",
            Reason::IdleGPU => "IdleGPU",
            Reason::PriceWindow => "PriceWindow",
            Reason::DeadLine => "DeadLine",
            Reason::GpuMpsFailure => "GpuMpsFailure",
            Reason::ReqNodeNotAvailMaint => "ReqNodeNotAvail, Reserved for maintenance",
            Reason::Reservation => "Reservation",
            Reason::LaunchFailedRequeuedHeld => "launch failed requeued held",
            Reason::RequeuedHeld => "job requeued in held state",
            Reason::RequeuedSpecialExit => "job requeued in special exit state",
            Reason::Licenses => "Licenses",
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Memory request as sbatch takes it (`--mem` xor `--mem-per-cpu`), in MiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum MemRequest {
    /// `--mem=N`; 0 means all memory of each node.
    PerNode(u64),
    /// `--mem-per-cpu=N`.
    PerCpu(u64),
}

/// `--open-mode`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
pub enum OpenMode {
    #[default]
    Truncate,
    Append,
}

/// The largest `--nice` / `Nice=` magnitude: Slurm's `NICE_OFFSET - 3`.
pub const NICE_LIMIT: i32 = 2_147_483_645;

/// `n` as a nice value, when within ±[`NICE_LIMIT`].
pub fn nice_in_range(n: i64) -> Option<i32> {
    (n.abs() <= i64::from(NICE_LIMIT)).then_some(n as i32)
}

/// What the user submitted, after the command merged command line, `SBATCH_*` variables and
/// `#SBATCH` lines. Fields that Slurm distinguishes as "given or not" are `Option`s, because
/// the job's environment differs (e.g. `SLURM_NTASKS` only when `-n` was given).
///
/// Every field has a default when read (a projected record, `JobQuery::fields`, leaves
/// fields out).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct JobSpec {
    pub name: String,
    /// The whole batch script, starting with `#!`.
    pub script: String,
    /// Arguments after the script file (`$1...`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub argv: Vec<String>,
    /// Absolute working directory of the batch script.
    pub work_dir: String,
    /// `-o` pattern, unexpanded; `None` means `slurm-%j.out`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdout: Option<String>,
    /// `-e` pattern, unexpanded; `None` means the same file as stdout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr: Option<String>,
    /// `-i` pattern; `None` means `/dev/null`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdin: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_mode: Option<OpenMode>,
    /// The environment the job starts with (already filtered per `--export`).
    #[serde(
        default,
        skip_serializing_if = "crate::environment::Environment::is_empty"
    )]
    pub environment: crate::environment::Environment,
    /// The `--export` value as given (`SLURM_EXPORT_ENV`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub export: Option<String>,
    /// Requested partitions, in order; empty means the default partition.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub partitions: Vec<String>,
    /// Minutes; `None` = partition default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_limit: Option<u32>,
    /// `-t` given as UNLIMITED/0/INFINITE.
    #[serde(default)]
    pub time_unlimited: bool,
    /// `--time-min`, minutes: backfill may lower the limit down to this to start the job
    /// earlier (see `gsched_sched::QueuedJob::time_min`). `None` = never lowered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_min: Option<u32>,
    /// `-N`; `None` = computed (1 unless tasks need more).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<u32>,
    /// `-n`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ntasks: Option<u32>,
    /// `-c`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus_per_task: Option<u32>,
    /// `--ntasks-per-node`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ntasks_per_node: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem: Option<MemRequest>,
    /// `-H`.
    #[serde(default)]
    pub hold: bool,
    pub submit_host: String,
    /// The command line, for `SubmitLine=`.
    #[serde(default)]
    pub submit_line: String,
    /// The path of the script as the user named it (`Command=`).
    #[serde(default)]
    pub command: String,
    /// `--uid`/`--gid` (root or SlurmUser only): submit on behalf of this user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_as_uid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_as_gid: Option<u32>,
    /// `-d/--dependency` as given (`SLURM_JOB_DEPENDENCY`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dependency: Option<String>,
    /// `--kill-on-invalid-dep=yes|no`; `None` = `kill_invalid_depend` of SchedulerParameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kill_on_invalid_dep: Option<bool>,
    /// `-b/--begin`, already resolved to epoch seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub begin_time: Option<i64>,
    /// `--requeue` (`Some(true)`) / `--no-requeue` (`Some(false)`); `None` = `JobRequeue`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requeue: Option<bool>,
    /// `-a/--array` as given (`0-15:4%2`); see [`crate::array::parse`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub array: Option<String>,
    /// `--comment` (squeue `%k`, `Comment=` of `scontrol show job`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// `--signal=[B:]sig[@sec]`: warn the job before its time limit ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warn_signal: Option<WarnSignal>,
    /// `-A/--account`, lower-cased; `None` = no account (`Account=(null)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    /// `--nice[=N]`; `None` = 0. Negative only for root and SlurmUser; within ±[`NICE_LIMIT`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nice: Option<i32>,
    /// `--priority=N` (`TOP`: `u32::MAX - 2`): the job's fixed priority. The controller
    /// keeps it for operators only; from others it drops it, except 0, which holds the job
    /// (slurmctld's `validate_job_create_req`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<u32>,
    /// `-L/--licenses`: the cluster licenses the job holds while it runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub licenses: Vec<crate::licenses::License>,
    /// `-w/--nodelist` as given (a hostlist): nodes the job must be given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodelist: Option<String>,
    /// `-x/--exclude` as given (a hostlist): nodes the job must never use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude: Option<String>,
    /// `-C/--constraint` as given: a feature expression, matching OR or node counts; see
    /// [`crate::constraint`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constraint: Option<String>,
    /// `--exclusive`: whole nodes (all their CPUs; memory only as requested).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub exclusive: bool,
    /// `--mail-type`: the events the job's user is told about.
    #[serde(default, skip_serializing_if = "MailTypes::is_empty")]
    pub mail_type: MailTypes,
    /// `--mail-user`; `None` = the job's user (with `MailDomain=` appended).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mail_user: Option<String>,
    /// `-q/--qos`, lower-cased; the controller replaces it with the QOS the job runs in
    /// (its association's default, else `normal`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qos: Option<String>,
    /// GPUs: `--gres=gpu…`, `--gpus*`, `--gpu-mem`, `--gpu-share`, `--gres=mps|shard`; see
    /// [`crate::gpu`]. `None` = no GPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<crate::gpu::GpuRequest>,
    /// `--switches=N[@time]` (topology/tree): at most N leaf switches, waited for up to
    /// the time; see [`crate::resv::SwitchesSpec`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub switches: Option<crate::resv::SwitchesSpec>,
    /// `--urgent` (gsched): never deferred to a cheaper price window.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub urgent: bool,
    /// `--deadline`, epoch seconds: the job is removed (state DEADLINE, reason DeadLine) when
    /// it can no longer end by then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<i64>,
    /// `--reservation=NAME`: run in that reservation (its nodes, during its window).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reservation: Option<String>,
}

/// Parses `--constraint` (see [`crate::constraint`] for the syntax and its meaning).
pub fn parse_constraint(s: &str) -> Result<crate::constraint::ConstraintSpec, String> {
    crate::constraint::parse(s)
}

/// `--signal=[B:]<sig>[@sec]`: the controller sends `signal` once, `before_secs` seconds
/// before the job's time limit ends (never for a job without a limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WarnSignal {
    pub signal: i32,
    /// Seconds before the end of the time limit (0..=65535; Slurm's default 60).
    pub before_secs: u32,
    /// `B:`: only the batch shell. Without it the tasks of every job step (`gsrun`) on
    /// every node get the signal, not the batch shell, as in Slurm.
    #[serde(default)]
    pub batch_only: bool,
}

impl WarnSignal {
    /// Slurm's default warning time.
    pub const DEFAULT_SECS: u32 = 60;

    /// When the signal is due for a job that started at `start` with a limit of
    /// `limit_min` minutes.
    pub fn due_at(&self, start: i64, limit_min: u32) -> i64 {
        start + i64::from(limit_min) * 60 - i64::from(self.before_secs)
    }

    /// Which processes get the signal.
    pub fn scope(&self) -> crate::api::SignalScope {
        if self.batch_only {
            crate::api::SignalScope::Batch
        } else {
            crate::api::SignalScope::Steps
        }
    }
}

impl JobSpec {
    /// Total tasks: `-n`, else `--ntasks-per-node` × nodes, else one per node.
    pub fn total_tasks(&self) -> u32 {
        if let Some(n) = self.ntasks {
            return n.max(1);
        }
        let nodes = self.nodes.unwrap_or(1).max(1);
        match self.ntasks_per_node {
            Some(t) => t.max(1).saturating_mul(nodes),
            None => nodes,
        }
    }

    /// `-c`, else what `--cpus-per-gpu` gives each task (the GPUs of a task, or of a node
    /// over its tasks per node), else 1.
    pub fn cpus_per_task(&self) -> u32 {
        if let Some(c) = self.cpus_per_task {
            return c.max(1);
        }
        let from_gpus = self.gpu.as_ref().and_then(|g| {
            let c = g.cpus_per_gpu?;
            if let Some(p) = g.per_task {
                return Some(p.saturating_mul(c));
            }
            let nodes = self.nodes.unwrap_or(1).max(1);
            let per_node = g.per_node.or(g.per_job.map(|n| n / nodes))?;
            let tpn = match self.ntasks_per_node {
                Some(t) => t.max(1),
                None if self.total_tasks() <= nodes => 1,
                // Refused at submit: the tasks of each node are not known.
                None => return None,
            };
            Some(per_node.saturating_mul(c).div_ceil(tpn))
        });
        from_gpus.unwrap_or(1).max(1)
    }
}

/// A job's spec, shared until written (copy on write): a record read without its spec
/// (a projected listing) shares one empty spec instead of allocating its own, an array
/// task shares its array's, and a copy of a record shares the original's until one of them
/// changes it. Reads and writes go through `Deref`/`DerefMut` as to a [`JobSpec`]; JSON and
/// schema are the spec's own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SharedSpec(std::sync::Arc<JobSpec>);

impl SharedSpec {
    pub fn new(spec: JobSpec) -> SharedSpec {
        SharedSpec(std::sync::Arc::new(spec))
    }

    /// Shares `spec` (an array's).
    pub fn shared(spec: &std::sync::Arc<JobSpec>) -> SharedSpec {
        SharedSpec(spec.clone())
    }

    /// The shared spec itself (to share it further, or to tell whether two are one).
    pub fn as_arc(&self) -> &std::sync::Arc<JobSpec> {
        &self.0
    }

    /// The spec, copied only when it is shared.
    pub fn into_inner(self) -> JobSpec {
        std::sync::Arc::unwrap_or_clone(self.0)
    }
}

impl Default for SharedSpec {
    fn default() -> SharedSpec {
        static EMPTY: std::sync::OnceLock<std::sync::Arc<JobSpec>> = std::sync::OnceLock::new();
        SharedSpec(EMPTY.get_or_init(Default::default).clone())
    }
}

impl From<JobSpec> for SharedSpec {
    fn from(spec: JobSpec) -> SharedSpec {
        SharedSpec::new(spec)
    }
}

impl std::ops::Deref for SharedSpec {
    type Target = JobSpec;
    fn deref(&self) -> &JobSpec {
        &self.0
    }
}

impl std::ops::DerefMut for SharedSpec {
    fn deref_mut(&mut self) -> &mut JobSpec {
        std::sync::Arc::make_mut(&mut self.0)
    }
}

impl schemars::JsonSchema for SharedSpec {
    fn schema_name() -> String {
        JobSpec::schema_name()
    }
    fn schema_id() -> std::borrow::Cow<'static, str> {
        JobSpec::schema_id()
    }
    fn json_schema(g: &mut schemars::gen::SchemaGenerator) -> schemars::schema::Schema {
        JobSpec::json_schema(g)
    }
}

/// The job record the API returns (`gsqueue`, `gscontrol show job`). Every field has a
/// default when read: a projected record (`JobQuery::fields`) leaves fields out.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct JobInfo {
    pub job_id: JobId,
    pub name: String,
    pub user_id: u32,
    pub group_id: u32,
    pub user_name: String,
    pub group_name: String,
    pub state: JobState,
    pub reason: Reason,
    /// The partition the job runs or will run in.
    pub partition: String,
    pub priority: u32,
    /// Resolved limit in minutes; `None` = UNLIMITED.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_limit: Option<u32>,
    pub submit_time: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eligible_time: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_time: Option<i64>,
    /// Number of nodes requested (pending) or allocated (running/finished).
    pub num_nodes: u32,
    /// CPUs requested (pending) or allocated.
    pub num_cpus: u32,
    pub num_tasks: u32,
    /// Memory per node in MiB (requested, or resolved from `--mem-per-cpu`).
    pub mem_per_node_mb: u64,
    /// Allocated nodes in order; empty while pending.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<String>,
    /// CPUs allocated on each node of `nodes`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpus_per_node: Vec<u32>,
    /// Exit code of the batch script (0..=255).
    pub exit_code: i32,
    /// Signal that ended the batch script, 0 if none.
    pub exit_signal: i32,
    /// Uid that cancelled the job (`CANCELLED by N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancelled_by: Option<u32>,
    pub held: bool,
    /// For a pending job: when the scheduler expects it to start (`squeue --start`,
    /// `StartTime=`), if it can tell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_start: Option<i64>,
    /// For a pending job: the nodes it is expected to start on (`%Y`, `SchedNodes`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sched_nodes: Vec<String>,
    /// The dependency still to be satisfied (`Dependency=`, squeue `%E`); `None` once
    /// satisfied or when there was none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dependency: Option<String>,
    /// Whether the job may be requeued (`Requeue=`).
    #[serde(default = "yes")]
    pub requeue: bool,
    /// How many times the job was requeued (`Restarts=`, `SLURM_RESTART_COUNT`).
    #[serde(default)]
    pub restarts: u32,
    /// For an array task: its array and index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub array: Option<crate::array::ArrayTask>,
    /// Under `PriorityType=priority/multifactor`: the weighted factors of the pending job's
    /// last computed priority (`PriorityFactors=` in `gscontrol show job`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_factors: Option<PriorityFactors>,
    pub spec: SharedSpec,
    /// For a component of a heterogeneous job: its het job and offset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub het: Option<crate::het::HetComponent>,
    /// What the finished job used, measured by its cgroup (`MaxRSS`, `TotalCPU`); `None`
    /// when the node does not use cgroups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<JobUsage>,
    /// A running job suspended by `scontrol suspend`: since when. Its state stays RUNNING
    /// for the scheduler (it keeps its resources, as in Slurm); commands show SUSPENDED.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspended_since: Option<i64>,
    /// Seconds spent suspended in earlier suspensions of this run (they do not count
    /// against the time limit; sacct `Suspended`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub suspended_secs: i64,
    /// The invalid-job ladder's record: why the job was flagged and the last step taken
    /// (kept across requeues, so that a job flagged again goes on to the next step).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid: Option<InvalidMark>,
    /// The GPUs of this run on each node of `nodes` (empty lists without GPUs); kept with
    /// the record, so a restarted controller knows which GPUs are held.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<Vec<crate::gpu::GpuAlloc>>,
    /// Requeued held in Slurm's SPECIAL_EXIT state (`RequeueExitHold=`, `scontrol
    /// requeuehold State=SpecialExit`): a held pending job shown as `SPECIAL_EXIT`/`SE`
    /// until released, which keeps the exit code of its last run until then.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub special_exit: bool,
    /// The job ended and a node's `Epilog` still runs for it: Slurm's COMPLETING flag on an
    /// ended job, shown as `COMPLETING`/`CG` until every node answered. Set by the
    /// controller when it answers a query, not stored.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub epilog_running: bool,
    /// The job has its nodes and the controller's `PrologSlurmctld` runs before its launch:
    /// Slurm's CONFIGURING flag on a running job (`CONFIGURING`/`CF`). Set by the controller
    /// when it answers a query, not stored.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub configuring: bool,
}

/// Why the invalid-job ladder flagged a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum InvalidKind {
    /// No CPU time and no output growth for `HangMinutes`.
    Hung,
    /// Its GPUs under `IdleGpuPercent` for `IdleGpuMinutes`.
    IdleGpu,
}

impl InvalidKind {
    /// The reason a flagged job shows.
    pub fn reason(self) -> Reason {
        match self {
            InvalidKind::Hung => Reason::Hung,
            InvalidKind::IdleGpu => Reason::IdleGPU,
        }
    }
}

/// The steps of the invalid-job ladder, in order.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum LadderStep {
    /// The user was told.
    Notify,
    /// The job was requeued: its resources (GPUs included) went back to the cluster.
    Requeue,
    /// The job was cancelled.
    Cancel,
}

impl LadderStep {
    pub fn as_str(self) -> &'static str {
        match self {
            LadderStep::Notify => "notify",
            LadderStep::Requeue => "requeue",
            LadderStep::Cancel => "cancel",
        }
    }
}

/// The invalid-job ladder's record on a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct InvalidMark {
    pub kind: InvalidKind,
    /// The last step taken.
    pub step: LadderStep,
    /// When the condition was first seen in this run (epoch seconds).
    pub flagged_at: i64,
    /// When the last step was taken.
    pub step_at: i64,
}

fn is_zero(v: &i64) -> bool {
    *v == 0
}

/// A job's resource use, read from its cgroup when it ended.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct JobUsage {
    /// Peak memory of the job's cgroup in bytes (`memory.max_usage_in_bytes` on v1,
    /// `memory.peak` on v2); `None` without a memory controller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rss_bytes: Option<u64>,
    /// CPU time in user and system mode, microseconds; `None` without CPU accounting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_cpu_usec: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_cpu_usec: Option<u64>,
}

impl JobUsage {
    /// User plus system CPU time (`TotalCPU`), microseconds.
    pub fn total_cpu_usec(&self) -> Option<u64> {
        match (self.user_cpu_usec, self.system_cpu_usec) {
            (None, None) => None,
            (u, s) => Some(u.unwrap_or(0) + s.unwrap_or(0)),
        }
    }
}

/// The weighted parts of a multifactor priority (what Slurm's `sprio` shows).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PriorityFactors {
    pub age: f64,
    pub fairshare: f64,
    pub job_size: f64,
    pub partition: f64,
    pub qos: f64,
    /// Subtracted from the sum.
    pub nice: i32,
}

impl JobInfo {
    /// Suspended by `scontrol suspend` (and not yet resumed or ended).
    pub fn is_suspended(&self) -> bool {
        self.state == JobState::Running && self.suspended_since.is_some()
    }

    /// A pending job requeued in Slurm's SPECIAL_EXIT state.
    pub fn is_special_exit(&self) -> bool {
        self.special_exit && self.state == JobState::Pending
    }

    /// A running job whose `PrologSlurmctld` runs ([`JobInfo::configuring`]).
    pub fn is_configuring(&self) -> bool {
        self.configuring && self.state == JobState::Running
    }

    /// An ended job whose node Epilog still runs ([`JobInfo::epilog_running`]).
    pub fn is_completing_epilog(&self) -> bool {
        self.epilog_running && self.state.is_terminal()
    }

    /// The state a state filter compares, as squeue does: `COMPLETING` while the Epilog of
    /// an ended job runs (its base state matches as well).
    pub fn matches_state(&self, states: &[JobState]) -> bool {
        self.matches_state_as(states, self.epilog_running)
    }

    /// [`JobInfo::matches_state`] for a job whose Epilog runs or not (`epilog_running`,
    /// which the controller knows apart from the record).
    pub fn matches_state_as(&self, states: &[JobState], epilog_running: bool) -> bool {
        states.contains(&self.state)
            || (epilog_running
                && self.state.is_terminal()
                && states.contains(&JobState::Completing))
    }

    /// The state as Slurm's commands print it: `SUSPENDED` for a suspended job,
    /// `SPECIAL_EXIT` for one requeued so, `COMPLETING` while its Epilog runs.
    pub fn state_long(&self) -> &'static str {
        if self.is_suspended() {
            "SUSPENDED"
        } else if self.is_special_exit() {
            "SPECIAL_EXIT"
        } else if self.is_completing_epilog() {
            JobState::Completing.long()
        } else if self.is_configuring() {
            "CONFIGURING"
        } else {
            self.state.long()
        }
    }

    /// The compact state (`squeue %t`): `S` for a suspended job, `CG` while its Epilog
    /// runs.
    pub fn state_compact(&self) -> &'static str {
        if self.is_suspended() {
            "S"
        } else if self.is_special_exit() {
            "SE"
        } else if self.is_completing_epilog() {
            JobState::Completing.compact()
        } else if self.is_configuring() {
            "CF"
        } else {
            self.state.compact()
        }
    }

    /// Seconds suspended in this run, up to `now`.
    pub fn suspended_total(&self, now: i64) -> i64 {
        self.suspended_secs + self.suspended_since.map_or(0, |t| (now - t).max(0))
    }

    /// `-A`, or `(null)` as Slurm prints a job without account.
    pub fn account(&self) -> &str {
        self.spec.account.as_deref().unwrap_or("(null)")
    }

    /// The job's QOS, or `(null)` for a job stored before QOS existed.
    pub fn qos(&self) -> &str {
        self.spec.qos.as_deref().unwrap_or("(null)")
    }

    /// `--nice`, 0 when not given.
    pub fn nice(&self) -> i32 {
        self.spec.nice.unwrap_or(0)
    }
}

fn yes() -> bool {
    true
}

impl JobInfo {
    /// How users name the job: `N_K` for an array task, `N+K` for a het job component,
    /// else `N`.
    pub fn display_id(&self) -> String {
        match (&self.array, &self.het) {
            (Some(a), _) => a.name(),
            (None, Some(h)) => h.name(),
            (None, None) => self.job_id.to_string(),
        }
    }

    /// The array's job id for an array task, else the job id.
    pub fn array_job_id(&self) -> JobId {
        self.array.map_or(self.job_id, |a| a.job_id)
    }

    /// `ExitCode=code:signal` as scontrol and sacct print it.
    pub fn exit_code_string(&self) -> String {
        format!("{}:{}", self.exit_code, self.exit_signal)
    }

    /// Elapsed run time in seconds at `now`.
    pub fn run_time(&self, now: i64) -> i64 {
        match (self.start_time, self.end_time) {
            (Some(s), Some(e)) => (e - s).max(0),
            (Some(s), None) => (now - s).max(0),
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_parse_both_spellings() {
        for st in JobState::ALL {
            assert_eq!(JobState::parse(st.long()), Some(st));
            assert_eq!(JobState::parse(&st.compact().to_lowercase()), Some(st));
        }
        assert_eq!(JobState::parse("bogus"), None);
    }

    #[test]
    fn total_tasks_follows_sbatch() {
        let mut s = JobSpec::default();
        assert_eq!(s.total_tasks(), 1);
        s.nodes = Some(3);
        assert_eq!(s.total_tasks(), 3);
        s.ntasks_per_node = Some(2);
        assert_eq!(s.total_tasks(), 6);
        s.ntasks = Some(4);
        assert_eq!(s.total_tasks(), 4);
    }
}
