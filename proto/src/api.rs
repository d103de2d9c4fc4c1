//! The one API of gsched: HTTP/1.1 with JSON bodies under `/v1/...`, spoken by the commands,
//! by gsnoded and by users' own scripts. This module holds the paths, the protocol version that
//! every request carries, and every request and response body, so that client and server cannot
//! disagree about a shape.
//!
//! Versioning: every request carries [`PROTOCOL_HEADER`] with [`PROTOCOL_VERSION`]; a server
//! accepts versions in `MIN_PROTOCOL_VERSION..=PROTOCOL_VERSION` and answers others with
//! [`ErrorCode::ProtocolVersion`]. Credentials travel in [`AUTH_HEADER`] and are checked in one
//! place on each server (see `gsched-auth`).

use crate::job::{JobId, JobInfo, JobSpec, JobState};
use crate::node::{NodeInfo, PartitionInfo};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The protocol spoken by this build.
pub const PROTOCOL_VERSION: u32 = 1;
/// The oldest protocol this build still accepts (rolling upgrades).
pub const MIN_PROTOCOL_VERSION: u32 = 1;
/// Header carrying the protocol version of a request.
pub const PROTOCOL_HEADER: &str = "x-gsched-protocol";
/// Header carrying the caller's credential.
pub const AUTH_HEADER: &str = "authorization";
/// Header naming the node a controller-to-node request is for. A real gsnoded refuses a
/// request for another node (a `NodeAddr`/`Port` mix-up); a gsnoded hosting virtual nodes
/// (`gsnoded --virtual`) routes by it, as all its nodes share one address.
pub const NODE_HEADER: &str = "x-gsched-node";
/// Largest request body a server accepts (a batch script plus its environment fits easily).
pub const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;
/// The version string every `-V` prints and the API reports.
pub const GSCHED_VERSION: &str = env!("CARGO_PKG_VERSION");
/// The Slurm release whose command contract gsched follows; `-V` prints `slurm <this>` so tools
/// that parse Slurm's version line keep working.
pub const SLURM_COMPAT_VERSION: &str = "22.05.8";

/// Paths of the controller's API.
pub mod paths {
    pub const PING: &str = "/v1/ping";
    pub const JOBS: &str = "/v1/jobs";
    pub const JOBS_QUERY: &str = "/v1/jobs/query";
    pub const JOBS_SIGNAL: &str = "/v1/jobs/signal";
    pub const JOBS_HOLD: &str = "/v1/jobs/hold";
    pub const JOBS_UPDATE: &str = "/v1/jobs/update";
    pub const JOBS_REQUEUE: &str = "/v1/jobs/requeue";
    pub const JOBS_COMPLETE: &str = "/v1/jobs/complete";
    /// Several job ends of one node in one request (gsnoded gathers the ends that come
    /// within a few milliseconds of each other).
    pub const JOBS_COMPLETE_BATCH: &str = "/v1/jobs/complete_batch";
    pub const JOBS_HISTORY: &str = "/v1/jobs/history";
    /// Live usage of running jobs (gsstat, `gscontrol show job`).
    pub const JOBS_USAGE: &str = "/v1/jobs/usage";
    /// Prometheus metrics (OpenMetrics text); the one path served without a credential.
    pub const METRICS: &str = "/metrics";
    /// The OpenAPI document of this API (served without a credential).
    pub const OPENAPI: &str = "/v1/openapi.json";
    pub const NODES: &str = "/v1/nodes";
    pub const NODES_UPDATE: &str = "/v1/nodes/update";
    pub const NODES_REGISTER: &str = "/v1/nodes/register";
    pub const NODES_HEARTBEAT: &str = "/v1/nodes/heartbeat";
    /// The nodes' recent load samples and hourly aggregates.
    pub const NODES_USAGE: &str = "/v1/nodes/usage";
    pub const PARTITIONS: &str = "/v1/partitions";
    pub const PARTITIONS_UPDATE: &str = "/v1/partitions/update";
    pub const CONFIG: &str = "/v1/config";
    /// The association table (`gsacctmgr show`, `gsprio`); changes (administrators only).
    pub const ACCT: &str = "/v1/acct";
    pub const ACCT_UPDATE: &str = "/v1/acct/update";
    /// Paths served by gsnoded.
    pub const NODE_PING: &str = "/v1/node/ping";
    pub const NODE_LAUNCH: &str = "/v1/node/launch";
    /// Several jobs for one node from one scheduling pass, in one request.
    pub const NODE_LAUNCH_BATCH: &str = "/v1/node/launch_batch";
    pub const NODE_SIGNAL: &str = "/v1/node/signal";
    pub const NODE_TERMINATE: &str = "/v1/node/terminate";
    pub const JOBS_SUSPEND: &str = "/v1/jobs/suspend";
    pub const NODE_SUSPEND: &str = "/v1/node/suspend";
    /// `GET`: the reservations (`scontrol show reservation`, `sinfo -T`).
    pub const RESERVATIONS: &str = "/v1/reservations";
    /// `POST`: create, update or delete a reservation.
    pub const RESERVATIONS_UPDATE: &str = "/v1/reservations/update";
    /// `POST`: `scontrol reboot`.
    pub const NODES_REBOOT: &str = "/v1/nodes/reboot";
    /// `POST` to gsnoded: run `RebootProgram`.
    pub const NODE_REBOOT: &str = "/v1/node/reboot";
    pub const NODE_HEALTH_CHECK: &str = "/v1/node/health_check";
    /// `POST` to gsnoded: a job ended; run the `Epilog` for its part of the node.
    pub const NODE_EPILOG: &str = "/v1/node/epilog";
    /// `POST` from gsctld (`scontrol reconfigure`): read the config again (gsnoded executes
    /// itself anew; its jobs keep running).
    pub const NODE_RECONFIGURE: &str = "/v1/node/reconfigure";
    /// `POST` (`scontrol reconfigure`): the controller and every node daemon read the
    /// config again; the controller checks it first. Administrators only.
    pub const RECONFIGURE: &str = "/v1/reconfigure";
    /// `POST` [`ShutdownRequest`] (`scontrol shutdown`): the controller, and unless told
    /// otherwise every node daemon, stop; jobs keep running. Administrators only.
    pub const SHUTDOWN: &str = "/v1/shutdown";
    /// `POST` [`SetDebugRequest`] (`scontrol setdebug`): gsctld's log level until it reads
    /// its config again. Administrators only.
    pub const SETDEBUG: &str = "/v1/setdebug";
    /// `POST` from gsctld (`scontrol shutdown`): gsnoded stops; its jobs keep running.
    pub const NODE_SHUTDOWN: &str = "/v1/node/shutdown";
    /// `POST` from gsnoded: a job's `Epilog` finished on a node (its part is free again).
    pub const NODES_EPILOG_COMPLETE: &str = "/v1/nodes/epilog_complete";
    /// Time-of-use prices of the next hours and the learned low-load hours (`gsinfo
    /// --prices`, `gsinfo --lowload`).
    pub const PRICES: &str = "/v1/prices";
    /// Job steps (`gsrun`): create, complete, list, signal (see `crate::step`).
    pub const JOBS_STEPS: &str = "/v1/jobs/steps";
    pub const JOBS_STEPS_COMPLETE: &str = "/v1/jobs/steps/complete";
    pub const JOBS_STEPS_QUERY: &str = "/v1/jobs/steps/query";
    pub const JOBS_STEPS_SIGNAL: &str = "/v1/jobs/steps/signal";
    /// gsnoded: start a step's tasks (from gsctld), signal them (from gsctld), read their
    /// output and feed their input (from the step's user).
    pub const NODE_STEP_LAUNCH: &str = "/v1/node/step_launch";
    pub const NODE_STEP_SIGNAL: &str = "/v1/node/step_signal";
    pub const NODE_STEP_IO: &str = "/v1/node/step_io";
    pub const NODE_STEP_STDIN: &str = "/v1/node/step_stdin";
}

/// Error classes; each has Slurm's wording so that commands can print what Slurm prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    BadRequest,
    ProtocolVersion,
    AuthenticationFailed,
    AccessDenied,
    InvalidJobId,
    InvalidPartition,
    NodeConfigUnavailable,
    TooManyProcessors,
    MemoryUnavailable,
    TimeLimitInvalid,
    JobAlreadyDone,
    JobNotPending,
    InvalidNodeName,
    InvalidNodeState,
    InvalidArray,
    NotFound,
    Unavailable,
    Internal,
    DependencyProblem,
    Disabled,
    InvalidFeature,
    TimeMinInvalid,
    InvalidAccount,
    InvalidQos,
    AccountingPolicy,
    JobPending,
    JobSuspended,
    JobNotSuspended,
    /// `MaxJobCount` reached; sbatch retries.
    MaxJobCount,
    /// A field of the request is larger than allowed (Slurm's ESLURM_PATHNAME_TOO_LONG).
    PathnameTooLong,
    /// The request body is larger than [`MAX_BODY_BYTES`] (HTTP 413).
    PayloadTooLarge,
    NodesBusy,
    ReservationInvalid,
    ReservationNameDup,
    InvalidGres,
    ReservationAccess,
    /// The job's user is in none of the partition's `AllowGroups=`.
    PartitionGroupDenied,
    /// Slurm's ESLURM_USER_ID_MISSING (`DisableRootJobs`).
    InvalidUserId,
    /// Slurm's ESLURMD_PROLOG_FAILED: the node's `Prolog` failed before a step's tasks.
    PrologFailed,
    /// Slurm's ESLURM_STEP_LIMIT (`MaxStepCount`).
    StepLimit,
    /// Slurm's ESLURM_BAD_TASK_COUNT (`MaxTasksPerNode`).
    BadTaskCount,
    /// Slurm's ESLURM_INVALID_LICENSES.
    InvalidLicenses,
    /// Slurm's ESLURM_PARTITION_NOT_AVAIL: the partition is `DRAIN` or `INACTIVE`.
    PartitionNotAvailable,
    /// A code this build does not know (a newer controller's): the commands print the
    /// answer's message, which has the words. Never sent.
    #[serde(other)]
    Unknown,
}

impl ErrorCode {
    /// Slurm's `slurm_strerror` text for this class.
    pub fn slurm_text(self) -> &'static str {
        match self {
            ErrorCode::BadRequest => "Invalid request",
            ErrorCode::ProtocolVersion => "Incompatible versions of client and server code",
            ErrorCode::AuthenticationFailed => "Protocol authentication error",
            ErrorCode::AccessDenied => "Access/permission denied",
            ErrorCode::InvalidJobId => "Invalid job id specified",
            ErrorCode::InvalidPartition => "Invalid partition name specified",
            ErrorCode::NodeConfigUnavailable => "Requested node configuration is not available",
            ErrorCode::TooManyProcessors => "More processors requested than permitted",
            ErrorCode::MemoryUnavailable => "Memory required by task is not available",
            ErrorCode::TimeLimitInvalid => {
                "Requested time limit is invalid (missing or exceeds some limit)"
            }
            ErrorCode::TimeMinInvalid => {
                "Invalid time-min specification (exceeds job's time or other limits)"
            }
            ErrorCode::JobAlreadyDone => "Job/step already completing or completed",
            ErrorCode::JobNotPending => "Job is no longer pending execution",
            ErrorCode::InvalidNodeName => "Invalid node name specified",
            ErrorCode::InvalidNodeState => "Invalid node state specified",
            ErrorCode::InvalidArray => crate::array::INVALID_ARRAY,
            ErrorCode::NotFound => "Not found",
            ErrorCode::Unavailable => "Service unavailable",
            ErrorCode::Internal | ErrorCode::Unknown => "Unexpected error",
            ErrorCode::DependencyProblem => "Job dependency problem",
            ErrorCode::Disabled => "Requested operation is presently disabled",
            ErrorCode::InvalidFeature => "Invalid feature specification",
            ErrorCode::InvalidAccount => {
                "Invalid account or account/partition combination specified"
            }
            ErrorCode::InvalidQos => "Invalid qos specification",
            ErrorCode::AccountingPolicy => {
                "Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)"
            }
            ErrorCode::JobPending => "Job is pending execution",
            ErrorCode::JobSuspended => "Job is already suspended",
            ErrorCode::JobNotSuspended => "Job is not suspended",
            ErrorCode::MaxJobCount => "MaxJobCount limit reached",
            ErrorCode::PathnameTooLong => {
                "Pathname of a file, directory or other parameter too long"
            }
            ErrorCode::PayloadTooLarge => "Request too large",
            ErrorCode::NodesBusy => "Requested nodes are busy",
            ErrorCode::ReservationInvalid => "Requested reservation is invalid",
            ErrorCode::ReservationNameDup => "Duplicate reservation name",
            ErrorCode::InvalidGres => "Invalid generic resource (gres) specification",
            ErrorCode::ReservationAccess => "Access denied to requested reservation",
            ErrorCode::PartitionGroupDenied => "User's group not permitted to use this partition",
            ErrorCode::InvalidUserId => "Invalid user id",
            ErrorCode::PrologFailed => "Job prolog failed",
            ErrorCode::StepLimit => "Step limit reached for this job",
            ErrorCode::BadTaskCount => "Task count specification invalid",
            ErrorCode::InvalidLicenses => "Invalid license specification",
            ErrorCode::PartitionNotAvailable => {
                "Required partition not available (inactive or drain)"
            }
        }
    }

    /// The HTTP status a server answers with.
    pub fn http_status(self) -> u16 {
        match self {
            ErrorCode::BadRequest
            | ErrorCode::InvalidPartition
            | ErrorCode::NodeConfigUnavailable
            | ErrorCode::TooManyProcessors
            | ErrorCode::MemoryUnavailable
            | ErrorCode::TimeLimitInvalid
            | ErrorCode::TimeMinInvalid
            | ErrorCode::InvalidNodeState
            | ErrorCode::DependencyProblem
            | ErrorCode::InvalidFeature
            | ErrorCode::InvalidArray
            | ErrorCode::InvalidAccount
            | ErrorCode::InvalidQos
            | ErrorCode::AccountingPolicy
            | ErrorCode::PathnameTooLong
            | ErrorCode::InvalidGres
            | ErrorCode::BadTaskCount
            | ErrorCode::InvalidLicenses
            | ErrorCode::PartitionNotAvailable => 400,
            ErrorCode::StepLimit => 409,
            ErrorCode::PayloadTooLarge => 413,
            ErrorCode::MaxJobCount => 503,
            ErrorCode::Disabled => 409,
            ErrorCode::ProtocolVersion => 426,
            ErrorCode::AuthenticationFailed => 401,
            ErrorCode::AccessDenied => 403,
            ErrorCode::InvalidJobId | ErrorCode::InvalidNodeName | ErrorCode::NotFound => 404,
            ErrorCode::JobAlreadyDone | ErrorCode::JobNotPending => 409,
            ErrorCode::JobPending | ErrorCode::JobSuspended | ErrorCode::JobNotSuspended => 409,
            ErrorCode::Unavailable => 503,
            ErrorCode::Internal | ErrorCode::Unknown | ErrorCode::PrologFailed => 500,
            ErrorCode::NodesBusy | ErrorCode::ReservationNameDup => 409,
            ErrorCode::ReservationInvalid => 400,
            ErrorCode::ReservationAccess
            | ErrorCode::PartitionGroupDenied
            | ErrorCode::InvalidUserId => 403,
        }
    }
}

/// The body of every non-2xx answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ApiError {
    pub code: ErrorCode,
    /// Slurm's wording, possibly followed by details (`...: job 12 is RUNNING`).
    pub message: String,
}

impl ApiError {
    pub fn new(code: ErrorCode, detail: impl Into<String>) -> ApiError {
        let detail = detail.into();
        let message = if detail.is_empty() {
            code.slurm_text().to_string()
        } else {
            detail
        };
        ApiError { code, message }
    }

    /// An error that carries only Slurm's standard text.
    pub fn plain(code: ErrorCode) -> ApiError {
        ApiError::new(code, "")
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ApiError {}

/// `GET /v1/ping`.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PingResponse {
    pub cluster: String,
    pub host: String,
    pub version: String,
    pub protocol: u32,
    pub start_time: i64,
    pub now: i64,
}

/// `POST /v1/jobs`: submit one batch job.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SubmitRequest {
    pub spec: JobSpec,
    /// `sbatch --test-only`: validate the job and estimate its start, store nothing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub test_only: bool,
    /// A heterogeneous job: the components after the first (`spec`, which runs the batch
    /// script). Empty for an ordinary job.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub het: Vec<JobSpec>,
}

/// Answer to a submission; sent only after the job is committed to the store.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SubmitResponse {
    pub job_id: JobId,
    /// For a `test_only` request: where and when the job would start (`job_id` is then the
    /// id the job would get; nothing was stored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_only: Option<TestOnlyAnswer>,
    /// Time-of-use deferral (gsched): the job waits for a cheaper price window; gsbatch
    /// prints it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deferral: Option<DeferralNote>,
}

/// Why and until when a submitted job is deferred to a cheaper price window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DeferralNote {
    /// The planned start, epoch seconds.
    pub start: i64,
    /// Price per kWh now and at the planned start.
    pub price_now: f64,
    pub price_then: f64,
    /// The expected cost of the run if started now and from the planned start (price ×
    /// estimated kWh).
    pub cost_now: f64,
    pub cost_then: f64,
}

/// What `sbatch --test-only` reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TestOnlyAnswer {
    /// Expected start, epoch seconds.
    pub start: i64,
    /// Processors (CPUs) the job would get.
    pub cpus: u32,
    /// The nodes it would start on (empty if the controller cannot tell).
    pub nodes: Vec<String>,
    pub partition: String,
}

/// Which jobs a query or an action applies to. Empty lists mean "no filter"; all filters AND.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct JobFilter {
    #[serde(default)]
    pub ids: Vec<JobId>,
    #[serde(default)]
    pub user_ids: Vec<u32>,
    #[serde(default)]
    pub names: Vec<String>,
    #[serde(default)]
    pub states: Vec<JobState>,
    #[serde(default)]
    pub partitions: Vec<String>,
    /// Array tasks named `N_K`: (array job id, task index). With `ids`, a job matches when
    /// either list names it; an id that is an array's job id names every task of the array.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub array_tasks: Vec<(JobId, u32)>,
    /// Het job components named `N+K`: (het job id, offset). An id in `ids` that is a het
    /// job's id names every component.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub het_components: Vec<(JobId, u32)>,
    /// Leave out the jobs of partitions hidden from the caller (`Hidden=YES`, or an
    /// `AllowGroups=` it is not in; none for root, SlurmUser and `AdminUsers`), as squeue
    /// does without `-a`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub visible_only: bool,
    /// The partitions `visible_only` leaves out (the controller fills it in).
    #[serde(skip)]
    pub hidden_partitions: Vec<String>,
}

impl JobFilter {
    /// Whether `ids`/`array_tasks`/`het_components` name this job (true when all are empty).
    pub fn names(&self, job: &JobInfo) -> bool {
        if self.ids.is_empty() && self.array_tasks.is_empty() && self.het_components.is_empty() {
            return true;
        }
        let het = job.het.is_some_and(|h| {
            self.ids.contains(&h.job_id) || self.het_components.contains(&(h.job_id, h.offset))
        });
        self.ids.contains(&job.job_id)
            || het
            || job.array.is_some_and(|a| {
                self.ids.contains(&a.job_id) || self.array_tasks.contains(&(a.job_id, a.task_id))
            })
    }

    pub fn matches(&self, job: &JobInfo) -> bool {
        self.matches_as(job, job.epilog_running)
    }

    /// [`JobFilter::matches`] for a job whose Epilog runs or not (`epilog_running`, which
    /// the controller knows apart from the record).
    pub fn matches_as(&self, job: &JobInfo, epilog_running: bool) -> bool {
        let state_ok = self.states.is_empty() || job.matches_state_as(&self.states, epilog_running);
        self.names(job)
            && (self.user_ids.is_empty() || self.user_ids.contains(&job.user_id))
            && (self.names.is_empty() || self.names.contains(&job.name))
            && state_ok
            && (self.partitions.is_empty() || self.partitions.contains(&job.partition))
            && !self.hidden_partitions.contains(&job.partition)
    }

    pub fn is_empty(&self) -> bool {
        *self == JobFilter::default()
    }
}

/// `POST /v1/jobs/history`: jobs from the controller's store, finished ones of any age
/// included (`gsacct`). Without `states`, a job is selected when it was eligible to run or
/// running at some moment of `[start, end]`; with `states`, as sacct does, a job in a final
/// state is selected when it ended within the window, a running one when it ran during it, a
/// pending one when it was eligible during it. `None` bounds are open. A job that was never
/// eligible (submitted held, not released) is selected only when both bounds are open.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HistoryQuery {
    /// Ids, users, names, partitions and states (the states as explained above).
    #[serde(default)]
    pub filter: JobFilter,
    /// `-A/--accounts`; empty = any.
    #[serde(default)]
    pub accounts: Vec<String>,
    /// `-N/--nodelist`: jobs that ran on any of these nodes; empty = any.
    #[serde(default)]
    pub nodes: Vec<String>,
    /// `-q/--qos`; empty = any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub qos: Vec<String>,
    #[serde(default)]
    pub start: Option<i64>,
    #[serde(default)]
    pub end: Option<i64>,
    /// gsched: also answer each started GPU job's usage of its GPUs over its run
    /// ([`JobsResponse::gpu_usage`], from the stored GPU samples; gseff, gsacct's
    /// `TRESUsageIn*`). Off by default: it reads the samples of every job selected.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub gpu_usage: bool,
    /// Also answer each job's batch script, environment and arguments (`gsacct -B`); the
    /// controller keeps them apart from the records and reads them only when asked.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub payloads: bool,
}

impl HistoryQuery {
    /// Whether `job` is selected (see the type's documentation).
    pub fn selects(&self, job: &JobInfo) -> bool {
        let f = &self.filter;
        let states = JobFilter {
            states: Vec::new(),
            ..f.clone()
        };
        if !states.matches(job)
            || (!self.accounts.is_empty()
                && !self.accounts.iter().any(|a| a.as_str() == job.account()))
            || (!self.nodes.is_empty() && !job.nodes.iter().any(|n| self.nodes.contains(n)))
            || (!self.qos.is_empty() && !self.qos.iter().any(|q| q.as_str() == job.qos()))
        {
            return false;
        }
        let (lo, hi) = (self.start.unwrap_or(i64::MIN), self.end.unwrap_or(i64::MAX));
        // Eligible or running at some moment of the window. A job never eligible (submitted
        // held and not released) is in no window, as in slurmdbd: only named jobs without
        // -S/-E list it.
        let active = match job.eligible_time {
            Some(eligible) => eligible <= hi && job.end_time.is_none_or(|e| e >= lo),
            None => self.start.is_none() && self.end.is_none(),
        };
        if f.states.is_empty() {
            return active;
        }
        if !f.states.contains(&job.state) {
            return false;
        }
        match job.state {
            JobState::Pending => active && job.start_time.is_none_or(|s| s >= lo),
            JobState::Running | JobState::Completing => {
                job.start_time.is_some_and(|s| s <= hi) && active
            }
            _ => job.end_time.is_some_and(|e| e >= lo && e <= hi),
        }
    }
}

/// `POST /v1/jobs/query`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct JobQuery {
    #[serde(default)]
    pub filter: JobFilter,
    /// Leave out each job's batch script and environment (`spec.script` and
    /// `spec.environment` come back empty): what a listing needs (gsqueue, gscancel), at a
    /// fraction of the size. Without it every job carries both, a few KiB each.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub brief: bool,
    /// Only these fields of each job (their JSON names; `spec.NAME` for a field of the
    /// spec, `spec` for all of it); empty = every field. The others are left out of the
    /// answer and read back as their defaults, so ask for every field you read: `gsqueue
    /// -o '%i %T'` asks for a handful and gets a tenth of the bytes. An unknown name is
    /// refused (`BadRequest`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct JobsResponse {
    /// The controller's clock when the answer was made (for elapsed times).
    pub now: i64,
    pub jobs: Vec<JobInfo>,
    /// `jobs/history` only: each started job's estimated energy and cost (gsacct
    /// `EnergyKWh`, `Cost`, `--cost-report`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub energy: Vec<JobEnergy>,
    /// `jobs/history` with [`HistoryQuery::gpu_usage`] only: one entry per GPU of a started
    /// job that has samples in the job's run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpu_usage: Vec<JobGpuUsage>,
}

/// How one job used one of its GPUs over its current run, from the samples gsnoded took
/// every `GpuSampleInterval` (gsched; gseff's GPU lines, gsacct's `gres/gpuutil` and
/// `gres/gpumem`). A whole GPU is measured as a whole; a share by the job's own processes
/// (a sample of the GPU in which they do not appear counts as 0%), as the invalid-job
/// ladder measures them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct JobGpuUsage {
    pub job_id: JobId,
    pub node: String,
    /// [`crate::gpu::GpuDevice::index`] on `node`.
    pub gpu: u32,
    /// Samples of the GPU taken during the run.
    pub samples: u32,
    /// Mean utilization over the samples, percent.
    pub util_avg: f64,
    /// Highest utilization of one sample, percent.
    pub util_max: u32,
    /// Peak GPU memory used, MiB.
    pub mem_max_mb: u64,
    /// GPU memory the job was given on this GPU (the GPU's memory, or the share's
    /// `--gpu-mem`), MiB; 0 when unknown.
    pub mem_alloc_mb: u64,
}

/// A job's estimated energy and its cost at the prices of the hours it ran (gsched): its
/// share of each node's `Watts=` (by CPUs) plus its GPUs' `GpuWatts=`, times the run time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct JobEnergy {
    pub job_id: JobId,
    pub kwh: f64,
    pub cost: f64,
}

/// `POST /v1/jobs/signal`: cancel (no signal) or signal jobs.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SignalJobsRequest {
    pub filter: JobFilter,
    /// `None` cancels; `Some(sig)` only delivers the signal.
    pub signal: Option<i32>,
    /// Deliver only to the batch shell (`scancel -b`).
    #[serde(default)]
    pub batch_only: bool,
    /// Deliver to every process of the job: the batch shell, its children and the steps'
    /// tasks (`scancel -f`). With neither flag only the tasks of the job's steps (gsrun)
    /// get the signal, as in Slurm.
    #[serde(default)]
    pub full: bool,
}

impl SignalJobsRequest {
    pub fn scope(&self) -> SignalScope {
        SignalScope::from_flags(self.batch_only, self.full)
    }
}

/// Which processes of a running job a signal reaches: Slurm's default (the job's steps,
/// not the batch shell), `scancel -b` and `--signal=B:` (the batch shell only), `scancel -f`
/// (everything).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SignalScope {
    #[default]
    Steps,
    Batch,
    Full,
}

impl SignalScope {
    /// From the requests' two flags (`batch_only` wins, as `scancel -b -f` keeps the last
    /// given in Slurm; the command resolves that before sending).
    pub fn from_flags(batch_only: bool, full: bool) -> SignalScope {
        if batch_only {
            SignalScope::Batch
        } else if full {
            SignalScope::Full
        } else {
            SignalScope::Steps
        }
    }

    /// The `(batch_only, full)` flags of a request.
    pub fn flags(self) -> (bool, bool) {
        (self == SignalScope::Batch, self == SignalScope::Full)
    }
}

/// The outcome for one job of an action on several.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct JobActionResult {
    pub job_id: JobId,
    pub error: Option<ApiError>,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct JobActionResponse {
    pub results: Vec<JobActionResult>,
}

/// `POST /v1/jobs/suspend`: `scontrol suspend|resume` (root and SlurmUser only).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SuspendRequest {
    pub ids: Vec<JobId>,
    /// `false`: suspend; `true`: resume.
    pub resume: bool,
}

/// `POST /v1/node/suspend`: freeze (or thaw) every process of a job.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NodeSuspendRequest {
    pub job_id: JobId,
    pub suspend: bool,
}

/// `POST /v1/jobs/hold`: hold (`release = false`) or release jobs.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HoldRequest {
    pub ids: Vec<JobId>,
    /// Array tasks named `N_K`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub array_tasks: Vec<(JobId, u32)>,
    #[serde(default)]
    pub names: Vec<String>,
    pub release: bool,
}

/// `POST /v1/jobs/update`: `scontrol update JobId=...`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct JobUpdateRequest {
    pub job_id: JobId,
    /// New limit in minutes; `Some(None)` = UNLIMITED.
    #[serde(default)]
    pub time_limit: Option<Option<u32>>,
    /// `Dependency=`; an empty string removes the dependency.
    #[serde(default)]
    pub dependency: Option<String>,
    /// `StartTime=`/`BeginTime=`, resolved to epoch seconds (pending jobs only).
    #[serde(default)]
    pub begin_time: Option<i64>,
    /// `Name=`/`JobName=`.
    #[serde(default)]
    pub name: Option<String>,
    /// `Priority=` (administrators only).
    #[serde(default)]
    pub priority: Option<u32>,
    /// `Partition=` (pending jobs only).
    #[serde(default)]
    pub partition: Option<String>,
    /// `TimeMin=` in minutes (pending jobs only); `Some(None)` removes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_min: Option<Option<u32>>,
    /// `Account=` (pending jobs only; checked as at submit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    /// `QOS=` (pending jobs only; checked as at submit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qos: Option<String>,
    /// `Nice=`: the job's new nice value (not a change to it), within
    /// ±[`crate::job::NICE_LIMIT`]; negative only for administrators (jobs not yet ended).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nice: Option<i32>,
}

impl JobUpdateRequest {
    /// Whether it changes anything beyond the time limit (which has a call of its own in
    /// the controller, `TimeLimit=` being the one key that running jobs take from users).
    pub fn has_other_changes(&self) -> bool {
        let JobUpdateRequest {
            job_id: _,
            time_limit: _,
            dependency,
            begin_time,
            name,
            priority,
            partition,
            time_min,
            account,
            qos,
            nice,
        } = self;
        dependency.is_some()
            || begin_time.is_some()
            || name.is_some()
            || priority.is_some()
            || partition.is_some()
            || time_min.is_some()
            || account.is_some()
            || qos.is_some()
            || nice.is_some()
    }
}

impl RequeueRequest {
    /// A plain `scontrol requeue` of `ids`.
    pub fn of(ids: &[JobId]) -> RequeueRequest {
        RequeueRequest {
            ids: ids.to_vec(),
            ..Default::default()
        }
    }
}

/// One license of the cluster and how much of it running jobs hold (`scontrol show
/// licenses`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LicenseInfo {
    pub name: String,
    pub total: u32,
    pub used: u32,
}

/// `POST /v1/jobs/requeue`: `scontrol requeue`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RequeueRequest {
    pub ids: Vec<JobId>,
    /// `scontrol requeuehold`: held once back in the queue.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hold: bool,
    /// `requeuehold State=SpecialExit`: held in the SPECIAL_EXIT state.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub special_exit: bool,
    /// `requeue Incomplete`: only running (or suspended) jobs; the others are left alone.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub incomplete: bool,
}

/// `POST /v1/jobs/complete`: gsnoded reports how a job's batch script ended.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct JobCompleteRequest {
    pub job_id: JobId,
    pub node: String,
    /// The run this report belongs to (the start time the controller assigned).
    pub start_time: i64,
    pub exit_code: i32,
    pub signal: i32,
    pub end_time: i64,
    /// The job could not be started at all (bad working directory, unknown user...).
    pub launch_error: Option<String>,
    /// Set when gsnoded ended the job because of a terminate request.
    pub terminated_for: Option<TerminateReason>,
    /// How many processes of the job the kernel's OOM killer ended (from its cgroup's
    /// `oom_kill` counter); non-zero makes the job OUT_OF_MEMORY.
    #[serde(default)]
    pub oom_kills: u64,
    /// What the job used, read from its cgroup.
    #[serde(default)]
    pub usage: Option<crate::job::JobUsage>,
    /// gsnoded killed the job because the MPS daemon or server of a GPU it shared died: not
    /// the job's fault, so the controller requeues it without charging it. The text says what
    /// failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_failure: Option<String>,
    /// The node's `Prolog` failed (what it said), so the script never ran: the controller
    /// drains the node ("Prolog error") and requeues the job held, as Slurm.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prolog_error: Option<String>,
}

/// `POST /v1/node/epilog` (from gsctld): the job's run ended; once its processes on this
/// node are gone, run `Epilog` with `environment` and answer with
/// `/v1/nodes/epilog_complete`. Sent again at registration while the controller waits.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NodeEpilogRequest {
    pub job_id: JobId,
    /// The run (its start time).
    pub start_time: i64,
    /// The Epilog's environment, as Slurm's slurmd sets it (`SLURM_JOB_*`,
    /// `SLURM_SCRIPT_CONTEXT=epilog_slurmd`, the exit codes); gsnoded adds `SLURM_CONF`.
    pub environment: Vec<(String, String)>,
}

/// `POST /v1/nodes/epilog_complete` (from gsnoded).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EpilogCompleteRequest {
    pub node: String,
    pub job_id: JobId,
    pub start_time: i64,
    /// The Epilog failed or timed out (what it said): the node is drained ("Epilog error").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Ack {
    pub ok: bool,
}

/// `POST /v1/jobs/complete_batch`: gsnoded reports several job ends at once (each as
/// `/v1/jobs/complete` would).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct JobCompleteBatch {
    pub reports: Vec<JobCompleteRequest>,
}

/// `POST /v1/node/launch_batch`: gsctld starts several jobs on one node at once (each as
/// `/v1/node/launch` would), the jobs one scheduling pass placed there.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LaunchBatch {
    pub jobs: Vec<LaunchRequest>,
}

/// The answer to a batch request: one entry per job of the request, in its order.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BatchResponse {
    pub results: Vec<BatchResult>,
}

/// What became of one job of a batch request: `error` is what the single request would
/// have answered with, absent when it succeeded.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BatchResult {
    pub job_id: JobId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ApiError>,
}

impl BatchResponse {
    /// The outcome of job `id`, the `i`-th of the request (`None` when the answer does not
    /// hold it there: lost).
    pub fn outcome(&self, i: usize, id: JobId) -> Option<Result<(), &ApiError>> {
        self.results
            .get(i)
            .filter(|r| r.job_id == id)
            .map(|r| r.error.as_ref().map_or(Ok(()), Err))
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NodesResponse {
    pub now: i64,
    pub nodes: Vec<NodeInfo>,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PartitionsResponse {
    pub partitions: Vec<PartitionInfo>,
}

/// `scontrol update NodeName=... State=...`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum NodeStateUpdate {
    Drain,
    Resume,
    Down,
    Idle,
}

/// `POST /v1/nodes/update`.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NodeUpdateRequest {
    pub names: Vec<String>,
    pub state: NodeStateUpdate,
    pub reason: Option<String>,
    /// `MigrateBy=` (gsched, with `State=DRAIN`): epoch seconds by which the node must be
    /// empty; running jobs are checkpointed (`--signal`) and requeued elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub migrate_by: Option<i64>,
}

/// `POST /v1/partitions/update`: `scontrol update PartitionName=<name> Key=Value ...`, the
/// keys and values of a `PartitionName=` config line (see gsched.conf(5)). Admins only; the
/// change lasts until the controller reads its config again (restart, `reconfigure`).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PartitionUpdateRequest {
    pub name: String,
    /// (`Key`, `Value`) in the order given; applied together or not at all.
    pub settings: Vec<(String, String)>,
}

/// `POST /v1/setdebug`.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SetDebugRequest {
    /// A Slurm level: `quiet`, `fatal`, `error`, `info`, `verbose`, `debug`, `debug2` ...
    /// `debug5`, or its number 0 to 9.
    pub level: String,
}

/// `POST /v1/shutdown`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ShutdownRequest {
    /// `scontrol shutdown slurmctld|controller`: the node daemons stay up.
    #[serde(default)]
    pub controller_only: bool,
}

/// `GET /v1/config`: `scontrol show config` lines, in order.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ConfigResponse {
    pub now: i64,
    pub entries: Vec<(String, String)>,
    /// The cluster's licenses and their use (`scontrol show licenses`).
    #[serde(default)]
    pub licenses: Vec<LicenseInfo>,
}

/// `POST /v1/nodes/register`: a gsnoded starting (or re-registering after a controller
/// restart) tells what it has and which jobs it still runs.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RegisterRequest {
    pub name: String,
    pub cpus: u32,
    pub real_memory_mb: u64,
    pub version: String,
    pub boot_time: i64,
    pub start_time: i64,
    /// Jobs whose processes are still alive here.
    pub running: Vec<RunningJob>,
    /// The node's GPUs (NVML, gres.conf or the fake backend), in index order.
    #[serde(default)]
    pub gpus: Vec<crate::gpu::GpuDevice>,
}

/// A job gsnoded is running, identified by id and the start time the controller assigned
/// (a requeued job is a different run).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunningJob {
    pub job_id: JobId,
    pub start_time: i64,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RegisterResponse {
    /// Jobs the node runs that the controller no longer assigns to it: kill them.
    pub kill: Vec<JobId>,
    pub heartbeat_interval_secs: u32,
}

/// `POST /v1/nodes/heartbeat`.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HeartbeatRequest {
    pub name: String,
    pub running: Vec<RunningJob>,
    /// GPU usage sampled since the last heartbeat (`GpuSampleInterval`); empty without GPUs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpu_samples: Vec<crate::gpu_sample::GpuSample>,
    /// The node's measured CPU load (load-aware placement); `None` from older daemons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<crate::resv::NodeLoad>,
    /// What each running job did lately (the invalid-job ladder's input).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub progress: Vec<JobProgress>,
    /// The live usage of every job with processes on the node (the batch node's jobs and
    /// the nodes running their steps); empty from older daemons.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub usage: Vec<JobUsageSample>,
}

/// A running job's progress counters as gsnoded read them for a heartbeat. The controller
/// looks only at whether they moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct JobProgress {
    pub job_id: JobId,
    pub start_time: i64,
    /// CPU time of the job's processes so far, microseconds (its cgroup, else the live
    /// processes of the job); `None` when it cannot be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_usec: Option<u64>,
    /// Bytes in the job's output files (stdout and stderr); `None` when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_bytes: Option<u64>,
    /// Utilization of the job's GPUs (the highest of them), percent; `None` for a job
    /// without GPUs or where it cannot be measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_util_percent: Option<u32>,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HeartbeatResponse {
    /// `false` when the controller does not know this node as registered: register again.
    pub registered: bool,
    pub kill: Vec<JobId>,
}

/// `POST /v1/node/launch`: the controller hands a job to gsnoded. Idempotent per
/// `(job_id, start_time)`.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LaunchRequest {
    pub job_id: JobId,
    pub start_time: i64,
    pub name: String,
    pub uid: u32,
    pub gid: u32,
    pub user_name: String,
    pub script: String,
    pub argv: Vec<String>,
    pub work_dir: String,
    pub stdout: Option<String>,
    pub stderr: Option<String>,
    pub stdin: Option<String>,
    pub open_mode: Option<crate::job::OpenMode>,
    /// The job's environment with the job-wide `SLURM_*` variables already set;
    /// gsnoded adds the node-specific ones (`SLURMD_NODENAME`, `SLURM_CPUS_ON_NODE`, ...).
    pub environment: Vec<(String, String)>,
    /// CPUs and memory (MiB) allocated on this node.
    pub cpus: u32,
    pub mem_mb: u64,
    /// Index of this node in the job's node list.
    pub node_index: u32,
    pub time_limit: Option<u32>,
    /// GPUs given to the job on this node (empty: none, and no GPU device is accessible).
    #[serde(default)]
    pub gpus: Vec<crate::gpu::GpuAlloc>,
    /// The `Prolog`'s environment on this node (`SLURM_SCRIPT_CONTEXT=prolog_slurmd`); empty
    /// when the controller has no `Prolog` configured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prolog_env: Vec<(String, String)>,
}

impl LaunchRequest {
    /// The value of `key` in the job's environment (the last one, as a shell would see it).
    pub fn env(&self, key: &str) -> Option<&str> {
        self.environment
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// `POST /v1/node/signal`: deliver a signal to a job's processes (which ones:
/// [`SignalScope`]).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NodeSignalRequest {
    pub job_id: JobId,
    pub signal: i32,
    pub batch_only: bool,
    #[serde(default)]
    pub full: bool,
}

impl NodeSignalRequest {
    pub fn scope(&self) -> SignalScope {
        SignalScope::from_flags(self.batch_only, self.full)
    }
}

/// Why the controller ends a running job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TerminateReason {
    Cancelled,
    TimeLimit,
    /// The controller no longer assigns this job to the node (fencing).
    NotAssigned,
}

/// `POST /v1/node/terminate`: SIGCONT+SIGTERM to every process of the job, SIGKILL after
/// `kill_wait` seconds.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TerminateRequest {
    pub job_id: JobId,
    pub kill_wait: u32,
    pub reason: TerminateReason,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_code_from_a_newer_controller_keeps_its_message() {
        let e: ApiError =
            serde_json::from_str(r#"{"code":"something_new","message":"What to do next"}"#)
                .unwrap();
        assert_eq!(e.code, ErrorCode::Unknown);
        assert_eq!(e.to_string(), "What to do next");
    }

    #[test]
    fn error_text_is_slurms_unless_detailed() {
        assert_eq!(
            ApiError::plain(ErrorCode::InvalidJobId).to_string(),
            "Invalid job id specified"
        );
        assert_eq!(ApiError::new(ErrorCode::BadRequest, "x").to_string(), "x");
    }

    #[test]
    fn error_round_trips_json() {
        let e = ApiError::plain(ErrorCode::AccessDenied);
        let s = serde_json::to_string(&e).unwrap();
        assert_eq!(serde_json::from_str::<ApiError>(&s).unwrap(), e);
    }
}

/// `GET /v1/prices`: the price calendar from now on, and the learned low-load hours.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PricesResponse {
    pub now: i64,
    /// Whether time-of-use deferral is on (price windows, a price file or learned windows).
    pub enabled: bool,
    /// `PriceTimeZone` (IANA name) the windows are in.
    pub time_zone: String,
    pub default_price: f64,
    /// The next 24 hours, in order; time not covered costs `default_price`.
    pub spans: Vec<PriceSpanInfo>,
    /// `LearnLowLoadWindows=yes`.
    pub learn_low_load: bool,
    pub low_load_threshold: f64,
    /// Days of utilization history the profile is made from (at most 14).
    pub history_days: u32,
    /// Per hour of the week with history: the median allocated-CPU fraction.
    pub load_profile: Vec<LoadHour>,
}

/// One stretch of constant price.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PriceSpanInfo {
    pub start: i64,
    pub end: i64,
    pub price: f64,
    /// A window's name, `file` (PriceFile), `lowload` (a learned low-load hour, planned at
    /// half price) or `default`.
    pub source: String,
}

/// The utilization of one hour of the week.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LoadHour {
    /// 0 = Monday, in `PriceTimeZone`.
    pub weekday: u8,
    pub hour: u8,
    pub median: f64,
    /// How many samples (one per week of history) the median is over.
    pub samples: u32,
    /// Below the threshold, with at least 7 days of history in all.
    pub low: bool,
}

/// One job's live usage on one node, read by gsnoded for a heartbeat. Every field but the
/// job id may be missing (older daemons, a file that cannot be read); the controller keeps
/// the last [`USAGE_RING`] samples per job and node while the job runs.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct JobUsageSample {
    pub job_id: JobId,
    /// Resident memory now, bytes: the job's cgroup (`memory.usage_in_bytes` on v1,
    /// `memory.current` on v2), else the RSS summed over the job's processes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss_bytes: Option<u64>,
    /// Peak resident memory so far, bytes, where the node measures it (the cgroup's
    /// `memory.max_usage_in_bytes` / `memory.peak`); the controller also keeps the highest
    /// `rss_bytes` it was sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_rss_bytes: Option<u64>,
    /// Virtual memory summed over the job's processes, bytes (`/proc/<pid>/statm`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vsize_bytes: Option<u64>,
    /// CPU time of the job so far, microseconds (its cgroup, else its processes and the
    /// children they reaped).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_usec: Option<u64>,
    /// Bytes the job's processes read and wrote (`rchar`/`wchar` of `/proc/<pid>/io`,
    /// what Slurm's sstat reports as disk read/write), summed over the live processes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_bytes: Option<u64>,
    /// Processes of the job on the node.
    #[serde(default)]
    pub processes: u32,
    /// Utilization of the job's GPUs on the node (the busiest), percent; `None` without GPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_util_percent: Option<u32>,
    /// GPU memory the job's processes hold on the node, MiB; `None` without GPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_mem_mb: Option<u64>,
}

/// How many samples the controller keeps per running job and node, and per node: with
/// heartbeats every 5 s (the most), the last 10 minutes. Older samples are dropped; a job's
/// samples go when the job ends.
pub const USAGE_RING: usize = 120;

/// `POST /v1/jobs/usage`: the live usage of running jobs (gsstat, `gscontrol show job`).
/// Only the jobs' owners and administrators see it, as with Slurm's sstat.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct JobUsageQuery {
    pub job_ids: Vec<JobId>,
    /// Also return the kept samples (`JobNodeUsage::series`).
    #[serde(default)]
    pub series: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct JobUsageResponse {
    pub now: i64,
    /// One entry per asked id, in the order asked.
    pub jobs: Vec<JobUsageInfo>,
}

/// One job's usage: per node, and summed over its nodes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct JobUsageInfo {
    pub job_id: JobId,
    /// Why there is no usage: `invalid_job_id` (unknown), `job_already_done` or
    /// `job_pending` (not running), `access_denied` (neither the owner nor an admin).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ApiError>,
    /// The run's start time; CPU use is averaged from it.
    #[serde(default)]
    pub start_time: i64,
    /// CPUs allocated to the job, on all its nodes.
    #[serde(default)]
    pub cpus: u32,
    /// Per node that sent samples, in the order of the job's node list.
    #[serde(default)]
    pub nodes: Vec<JobNodeUsage>,
    /// Summed over the nodes (peaks: the sum of the nodes' peaks, an upper bound).
    #[serde(default)]
    pub total: UsageTotals,
}

/// A job's usage summed over its nodes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct UsageTotals {
    /// Resident memory now, bytes.
    pub rss_bytes: Option<u64>,
    /// The highest peak of one node and that node (sstat's `MaxRSS`/`MaxRSSNode`).
    pub max_rss_bytes: Option<u64>,
    pub max_rss_node: Option<String>,
    /// Average resident memory over the run (each node's mean of its samples, summed).
    pub ave_rss_bytes: Option<u64>,
    pub cpu_usec: Option<u64>,
    /// CPU time over elapsed time since the start: the CPUs kept busy on average.
    pub ave_cpus_used: Option<f64>,
    /// CPU use lately (the nodes' `cpu_util_percent`; before their second sample, since the
    /// start) as a percent of the job's allocated CPUs.
    pub cpu_util_percent: Option<f64>,
    pub read_bytes: Option<u64>,
    pub write_bytes: Option<u64>,
    pub processes: u32,
    /// The busiest GPU of the job, percent; GPU memory summed, MiB.
    pub gpu_util_percent: Option<u32>,
    pub gpu_mem_mb: Option<u64>,
}

/// A job's usage on one node.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct JobNodeUsage {
    pub node: String,
    /// Index of the node in the job's node list (sstat's task fields).
    pub node_index: u32,
    /// Samples received for this run, and the time of the newest.
    pub samples: u64,
    pub time: i64,
    /// The newest sample.
    pub latest: JobUsageSample,
    /// Highest resident memory and virtual size seen (or measured by the node's cgroup).
    pub peak_rss_bytes: Option<u64>,
    pub peak_vsize_bytes: Option<u64>,
    /// Means over every sample of the run.
    pub ave_rss_bytes: Option<u64>,
    pub ave_vsize_bytes: Option<u64>,
    /// CPU use over the last 30 s or so (between the newest sample and the newest one at
    /// least 30 s older, else the oldest kept), percent of one CPU; `None` before the
    /// second sample.
    pub cpu_util_percent: Option<f64>,
    /// Bytes read and written: the highest counts seen (they only fall when processes end).
    pub read_bytes: Option<u64>,
    pub write_bytes: Option<u64>,
    /// The kept samples, oldest first, when asked for (`JobUsageQuery::series`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub series: Vec<UsagePoint>,
}

/// One kept sample and when the controller received it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct UsagePoint {
    pub time: i64,
    pub sample: JobUsageSample,
}

/// `POST /v1/nodes/usage`: the nodes' recent load samples and their hourly aggregates from
/// the store. Refused to ordinary users under `PrivateData=nodes`, as the node listing is.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NodeUsageQuery {
    /// Node names (hostlists allowed); empty: every node.
    #[serde(default)]
    pub nodes: Vec<String>,
    /// Also return the kept samples (`NodeUsageInfo::series`).
    #[serde(default)]
    pub series: bool,
    /// Hours of stored aggregates to return (0: none).
    #[serde(default)]
    pub hours: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NodeUsageResponse {
    pub now: i64,
    pub nodes: Vec<NodeUsageInfo>,
}

/// One node's load: the newest sample, the kept ones, and stored hours.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NodeUsageInfo {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest: Option<NodeLoadPoint>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub series: Vec<NodeLoadPoint>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hours: Vec<NodeUsageHour>,
}

/// A node's load sample and when the controller received it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NodeLoadPoint {
    pub time: i64,
    pub load: crate::resv::NodeLoad,
}

/// One node's hour, as stored (kept `UsageHistoryDays`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NodeUsageHour {
    /// Epoch seconds of the hour's start.
    pub hour: i64,
    /// Heartbeat samples the hour is made of.
    pub samples: u32,
    /// Mean CPU load, percent of the node's CPUs.
    pub cpu_load_pct: f64,
    /// Mean utilization of the node's GPUs (GPU samples of the hour); `None` without GPUs.
    pub gpu_util_pct: Option<f64>,
    /// Mean and highest memory in use, MiB, and the node's memory.
    pub mem_used_mb: Option<f64>,
    pub mem_used_max_mb: Option<u64>,
    pub mem_total_mb: Option<u64>,
    /// Bytes received and sent in the hour (non-loopback interfaces).
    pub net_rx_bytes: Option<u64>,
    pub net_tx_bytes: Option<u64>,
}
