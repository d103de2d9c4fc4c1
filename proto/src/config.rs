//! `gsched.conf`: the cluster configuration, in `slurm.conf` syntax.
//!
//! gsched is a drop-in for Slurm, so sites should be able to point it at the
//! `slurm.conf` they already have. This module reads that syntax (`Key=Value` pairs,
//! `NodeName=`/`PartitionName=` lines with `DEFAULT` entries, comments, `\` line
//! continuation, `Include`), turns it into typed settings shared by the controller, the
//! node daemon and the commands, and explains every mistake with `file:line: Key: ...`.
//!
//! Slurm settings that gsched does not implement yet are accepted with one warning each
//! (see [`IGNORED_KEYS`]), so real configs load; anything else unknown is an error, so
//! typos are caught.

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::hostlist;
use crate::units;

mod partition_update;

/// Where the config is read from when neither `-f/--config` nor `$GSCHED_CONF` is given.
pub const DEFAULT_CONFIG_PATH: &str = "/etc/gsched/gsched.conf";

/// Environment variable naming the config file.
pub const CONFIG_ENV: &str = "GSCHED_CONF";

/// How deep `Include` lines may nest.
const MAX_INCLUDE_DEPTH: usize = 16;

/// Chooses the config file: `-f/--config` wins, then `$GSCHED_CONF` (if not empty),
/// then [`DEFAULT_CONFIG_PATH`].
pub fn resolve_config_path(cli: Option<&Path>) -> PathBuf {
    resolve_config_path_from(cli, std::env::var_os(CONFIG_ENV))
}

fn resolve_config_path_from(cli: Option<&Path>, env: Option<OsString>) -> PathBuf {
    match (cli, env) {
        (Some(p), _) => p.to_path_buf(),
        (None, Some(e)) if !e.is_empty() => PathBuf::from(e),
        _ => PathBuf::from(DEFAULT_CONFIG_PATH),
    }
}

/// Slurm `slurm.conf` settings that gsched accepts but does not use yet. Each one found
/// adds a single warning to [`Config::warnings`].
pub const IGNORED_KEYS: &[&str] = &[
    "AccountingStorageBackupHost",
    "AccountingStorageExternalHost",
    "AccountingStorageHost",
    "AccountingStorageLoc",
    "AccountingStorageParameters",
    "AccountingStoragePass",
    "AccountingStoragePort",
    "AccountingStorageTRES",
    "AccountingStorageType",
    "AccountingStorageUser",
    "AccountingStoreFlags",
    "AcctGatherEnergyType",
    "AcctGatherFilesystemType",
    "AcctGatherInterconnectType",
    "AcctGatherNodeFreq",
    "AcctGatherProfileType",
    "AllowSpecResourcesUsage",
    "AuthAltParameters",
    "AuthAltTypes",
    "BackupAddr",
    "BackupController",
    "BatchStartTimeout",
    "BurstBufferType",
    "CliFilterPlugins",
    "CommunicationParameters",
    "CompleteWait",
    "CoreSpecPlugin",
    "CpuFreqDef",
    "CpuFreqGovernors",
    "CredType",
    "CryptoType",
    "DebugFlags",
    "DependencyParameters",
    "EioTimeout",
    "EnforcePartLimits",
    "EpilogMsgTime",
    "FairShareDampeningFactor",
    "FastSchedule",
    "FederationParameters",
    "GetEnvTimeout",
    "GpuFreqDef",
    "GresTypes",
    "GroupUpdateForce",
    "GroupUpdateTime",
    "HashPlugin",
    "InactiveLimit",
    "InteractiveStepOptions",
    "JobAcctGatherFrequency",
    "JobAcctGatherParams",
    "JobAcctGatherType",
    "JobCompHost",
    "JobCompLoc",
    "JobCompParams",
    "JobCompPass",
    "JobCompPort",
    "JobCompType",
    "JobCompUser",
    "JobContainerType",
    "JobSubmitPlugins",
    "KeepAliveTime",
    "KillOnBadExit",
    "LaunchParameters",
    "LogTimeFormat",
    "MaxBatchRequeue",
    "MaxDBDMsgs",
    "MaxJobId",
    "MaxNodeCount",
    "MCSParameters",
    "MCSPlugin",
    "MpiDefault",
    "MpiParams",
    "NodeFeaturesPlugins",
    "PlugStackConfig",
    "PluginDir",
    "PowerParameters",
    "PowerPlugin",
    "PreemptExemptTime",
    "PreemptMode",
    "PreemptParameters",
    "PreemptType",
    "PrEpParameters",
    "PrEpPlugins",
    "PriorityCalcPeriod",
    "PriorityFlags",
    "PriorityParameters",
    "PrioritySiteFactorParameters",
    "PrioritySiteFactorPlugin",
    "PriorityUsageResetPeriod",
    "PriorityWeightAssoc",
    "PriorityWeightTRES",
    "ProctrackType",
    "PropagatePrioProcess",
    "ReconfigFlags",
    "ResumeFailProgram",
    "ResumeProgram",
    "ResumeRate",
    "ResvEpilog",
    "ResvOverRun",
    "ResvProlog",
    "SchedulerTimeSlice",
    "ScronParameters",
    "SelectType",
    "SelectTypeParameters",
    "SlurmctldAddr",
    "SlurmctldParameters",
    "SlurmctldPrimaryOffProg",
    "SlurmctldPrimaryOnProg",
    "SlurmctldSyslogDebug",
    "SlurmctldTimeout",
    "SlurmdParameters",
    "SlurmdSyslogDebug",
    "SlurmdUser",
    "SlurmSchedLogFile",
    "SlurmSchedLogLevel",
    "SrunEpilog",
    "SrunPortRange",
    "SrunProlog",
    "SuspendExcNodes",
    "SuspendExcParts",
    "SuspendProgram",
    "SuspendRate",
    "SuspendTime",
    "SuspendTimeout",
    "SwitchParameters",
    "SwitchType",
    "TaskPlugin",
    "TaskPluginParam",
    "TCPTimeout",
    "TmpFS",
    "TopologyParam",
    "TrackWCKey",
    "TreeWidth",
    "UnkillableStepProgram",
    "UnkillableStepTimeout",
    "UsePAM",
    "VSizeFactor",
    "Waittime",
    "X11Parameters",
];

/// Slurm line types (first key of the line) that gsched skips as a whole, with a warning.
pub const IGNORED_LINE_KEYS: &[&str] = &["DownNodes", "FrontendName", "NodeSet"];

/// Slurm `NodeName=` attributes gsched accepts but does not use yet.
pub const IGNORED_NODE_KEYS: &[&str] = &[
    "Bcast",
    "CoreSpecCount",
    "CpuBind",
    "CpuSpecList",
    "MemSpecLimit",
    "NodeHostname",
    "Reason",
    "ResumeAfter",
    "TmpDisk",
    "TRESWeights",
];

/// Slurm `PartitionName=` attributes gsched accepts but does not use yet.
pub const IGNORED_PARTITION_KEYS: &[&str] = &[
    "AllocNodes",
    "Alternate",
    "CpuBind",
    "DefCpuPerGPU",
    "DefMemPerGPU",
    "ExclusiveTopo",
    "ExclusiveUser",
    "GraceTime",
    "LLN",
    "MaxCPUsPerNode",
    "MaxCPUsPerSocket",
    "MaxNodes",
    "MinNodes",
    "OverSubscribe",
    "PowerDownOnIdle",
    "PreemptMode",
    "PriorityJobFactor",
    "PriorityTier",
    "QOS",
    "ReqResv",
    "ResumeTimeout",
    "RootOnly",
    "SelectTypeParameters",
    "Shared",
    "SuspendTime",
    "SuspendTimeout",
    "TRESBillingWeights",
];

/// Slurm's default `MaxJobCount`.
pub const DEFAULT_MAX_JOB_COUNT: u32 = 10_000;

/// gsched's default `sched_min_interval` of `SchedulerParameters`, in microseconds: while
/// events come faster than this (a submission loop, many jobs ending), one pass serves them
/// all, and the jobs it starts on a node go out in one request. Slurm's default is 2 µs, but
/// Slurm also holds back the scheduling of new batch jobs by up to `batch_sched_delay` (3 s);
/// gsched schedules a job at once when the previous pass is older than this.
pub const DEFAULT_SCHED_MIN_INTERVAL_US: u32 = 10_000;

/// Slurm's default `max_script_size` of `SchedulerParameters` (4 MiB).
pub const DEFAULT_MAX_SCRIPT_SIZE: u64 = 4 * 1024 * 1024;

/// Slurm's default `max_submit_line_size` of `SchedulerParameters` (1 MiB).
pub const DEFAULT_MAX_SUBMIT_LINE_SIZE: u64 = 1024 * 1024;

/// Slurm's default `MaxArraySize` (indices 0..=1000).
pub const DEFAULT_MAX_ARRAY_SIZE: u32 = 1001;

/// Global keys gsched implements.
pub const GLOBAL_KEYS: &[&str] = &[
    "AccountingStorageEnforce",
    "AdminUsers",
    "AuthInfo",
    "AuthType",
    "ClusterName",
    "ControlAddr",
    "ControlMachine",
    "FirstJobId",
    "KillWait",
    "MailDomain",
    "MailFrom",
    "MailProg",
    "MaxArraySize",
    "MaxJobCount",
    "MessageTimeout",
    "MinJobAge",
    "PriorityDecayHalfLife",
    "PriorityFavorSmall",
    "PriorityMaxAge",
    "PriorityType",
    "PriorityWeightAge",
    "PriorityWeightFairshare",
    "PriorityWeightJobSize",
    "PriorityWeightPartition",
    "PriorityWeightQOS",
    "PrivateData",
    "SlurmctldHost",
    "SlurmctldPort",
    "SlurmdPort",
    "SlurmdSpoolDir",
    "SlurmdTimeout",
    "SlurmUser",
    "SmtpServer",
    "SchedulerParameters",
    "SchedulerType",
    "StateSaveLocation",
    "StateSyncMode",
    "HangMinutes",
    "IdleGpuMinutes",
    "IdleGpuPercent",
    "InvalidJobLadder",
    // Node lifecycle (crate::lifecycle::LIFECYCLE_KEYS).
    "JobRequeue",
    "ReturnToService",
    "RebootProgram",
    "TopologyPlugin",
    "NodeLoadThreshold",
    // Time-of-use prices (price_conf.rs).
    "DefaultPrice",
    "PriceTimeZone",
    "LongJobThreshold",
    "ShortJobThreshold",
    "MaxDeferral",
    "MediumJobRule",
    "MinDeferralSaving",
    "PriceFile",
    "PriceFileUnit",
    "GpuWatts",
    "DefaultWattsPerCPU",
    "LearnLowLoadWindows",
    "LowLoadThreshold",
    "GpuSampleInterval",
    "UsageHistoryDays",
    "DefCpuPerGPU",
    "DefMemPerGPU",
    "DefMemPerCPU",
    "DefMemPerNode",
    "OverTimeLimit",
    "DisableRootJobs",
    "MaxMemPerCPU",
    "MaxMemPerNode",
    "RequeueExit",
    "RequeueExitHold",
    "HealthCheckProgram",
    "HealthCheckInterval",
    "HealthCheckNodeState",
    "PropagateResourceLimits",
    "PropagateResourceLimitsExcept",
    "Prolog",
    "Epilog",
    "TaskProlog",
    "TaskEpilog",
    "PrologEpilogTimeout",
    "PrologFlags",
    "JobFileAppend",
    "MaxStepCount",
    "MaxTasksPerNode",
    "Licenses",
    "EpilogSlurmctld",
    "PrologSlurmctld",
    "SlurmctldDebug",
    "SlurmctldLogFile",
    "SlurmctldPidFile",
    "SlurmdDebug",
    "SlurmdLogFile",
    "SlurmdPidFile",
    "ResumeTimeout",
];

/// `NodeName=` attributes gsched implements (`Procs` and `Feature` are Slurm's old
/// spellings of `CPUs` and `Features`).
pub const NODE_KEYS: &[&str] = &[
    "NodeName",
    "NodeAddr",
    "Port",
    "CPUs",
    "Procs",
    "Boards",
    "SocketsPerBoard",
    "Sockets",
    "CoresPerSocket",
    "ThreadsPerCore",
    "RealMemory",
    "Gres",
    "Features",
    "Feature",
    "State",
    "Weight",
    "Watts",
    // gsched's own: the memory of each GPU when the node reports none (see NodeConfig).
    "GpuMemory",
];

/// `PartitionName=` attributes gsched implements.
pub const PARTITION_KEYS: &[&str] = &[
    "PartitionName",
    "Nodes",
    "Default",
    "MaxTime",
    "DefaultTime",
    "State",
    "AllowAccounts",
    "DenyAccounts",
    "AllowQos",
    "DenyQos",
    "AllowGroups",
    "Hidden",
    "DefMemPerCPU",
    "DefMemPerNode",
    "OverTimeLimit",
    "DisableRootJobs",
    "MaxMemPerCPU",
    "MaxMemPerNode",
    "HangMinutes",
    "IdleGpuMinutes",
    // gsched's own: `user` (default) or `multiuser` MPS sharing of GPUs.
    "GpuSharing",
    // gsched's own: what the compute shares of one GPU may add up to (1 to 4 GPUs' worth).
    "GpuOverSubscribe",
];

/// A config problem. The message always says where and what is accepted.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The main config file cannot be read.
    #[error("cannot read {}: {reason} (set GSCHED_CONF or pass -f/--config)", path.display())]
    Read {
        path: PathBuf,
        reason: String,
        source: std::io::Error,
    },
    /// A bad value of a known key.
    #[error("{}:{line}: {key}: {message}", file.display())]
    Value {
        file: PathBuf,
        line: usize,
        key: String,
        message: String,
    },
    /// A line that cannot be parsed, or an unknown key.
    #[error("{}:{line}: {message}", file.display())]
    Syntax {
        file: PathBuf,
        line: usize,
        message: String,
    },
    /// A required key is absent.
    #[error("{}: {key}: {message}", file.display())]
    Missing {
        file: PathBuf,
        key: String,
        message: String,
    },
}

/// The controller's host (`SlurmctldHost=name` or `SlurmctldHost=name(addr)`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CtldHost {
    pub name: String,
    pub addr: Option<String>,
}

impl CtldHost {
    /// Where to connect: the address if one was given, else the name.
    pub fn connect_addr(&self) -> &str {
        self.addr.as_deref().unwrap_or(&self.name)
    }
}

impl fmt::Display for CtldHost {
    /// As `scontrol show config` prints it: `name` or `name(addr)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.addr {
            Some(addr) => write!(f, "{}({addr})", self.name),
            None => f.write_str(&self.name),
        }
    }
}

/// `SchedulerType=`: which scheduling plugin decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchedulerType {
    /// `sched/backfill` (Slurm's default): priority order, and lower-priority jobs start early
    /// when that delays no reserved job.
    Backfill,
    /// `sched/builtin`: strict priority order.
    Builtin,
}

/// `PriorityType=`: how pending jobs are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PriorityType {
    /// `priority/basic` (Slurm's default): first in, first out, less each job's nice value.
    #[default]
    Basic,
    /// `priority/multifactor`: age, fair-share, job size, partition and QOS, weighted.
    Multifactor,
}

impl fmt::Display for PriorityType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PriorityType::Basic => "priority/basic",
            PriorityType::Multifactor => "priority/multifactor",
        })
    }
}

/// Seconds in Slurm's default `PriorityMaxAge` and `PriorityDecayHalfLife` (7-0).
pub const SEVEN_DAYS_SECS: i64 = 7 * 24 * 3600;

/// `PriorityType=`, the `PriorityWeight*` settings, `PriorityMaxAge`,
/// `PriorityDecayHalfLife` and `PriorityFavorSmall`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PriorityConfig {
    pub priority_type: PriorityType,
    pub weight_age: u32,
    pub weight_fairshare: u32,
    pub weight_job_size: u32,
    pub weight_partition: u32,
    pub weight_qos: u32,
    /// `PriorityMaxAge` in seconds (default 7 days).
    pub max_age_secs: i64,
    /// `PriorityDecayHalfLife` in seconds (default 7 days; 0 = no decay).
    pub decay_half_life_secs: i64,
    pub favor_small: bool,
}

impl Default for PriorityConfig {
    fn default() -> Self {
        PriorityConfig {
            priority_type: PriorityType::Basic,
            weight_age: 0,
            weight_fairshare: 0,
            weight_job_size: 0,
            weight_partition: 0,
            weight_qos: 0,
            max_age_secs: SEVEN_DAYS_SECS,
            decay_half_life_secs: SEVEN_DAYS_SECS,
            favor_small: false,
        }
    }
}

/// `bf_policy=` (gsched): how many pending jobs hold reservations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BackfillPolicy {
    /// EASY: the first `bf_reserve` blocked jobs hold reservations.
    #[default]
    Easy,
    /// Every pending job holds a reservation.
    Conservative,
}

/// The `SchedulerParameters=` options gsched implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SchedulerParams {
    pub bf_policy: BackfillPolicy,
    /// `bf_reserve=N` (gsched): reservations under EASY; `None` = 1.
    pub bf_reserve: Option<u32>,
    /// `bf_window=` minutes: how far ahead backfill plans.
    pub bf_window_min: Option<u32>,
    /// `bf_max_job_test=`: how many pending jobs get a fully planned start.
    pub bf_max_job_test: Option<u32>,
    /// `kill_invalid_depend`: cancel jobs whose dependency can never be satisfied.
    pub kill_invalid_depend: bool,
    /// `nohold_on_prolog_fail`: a job whose Prolog failed is requeued without a hold.
    pub nohold_on_prolog_fail: bool,
    /// `bf_predict=easy++|recent` (gsched): plan with runtimes predicted from the cluster's
    /// finished jobs instead of the users' limits (the kill time stays the limit).
    pub bf_predict: RuntimePredict,
    /// `max_script_size=` bytes; `None` = [`DEFAULT_MAX_SCRIPT_SIZE`].
    pub max_script_size: Option<u64>,
    /// `max_submit_line_size=` bytes; `None` = [`DEFAULT_MAX_SUBMIT_LINE_SIZE`].
    pub max_submit_line_size: Option<u64>,
    /// `max_array_tasks=`: tasks one array may have; `None` = `MaxArraySize`.
    pub max_array_tasks: Option<u32>,
    /// `sched_min_interval=` microseconds from the end of one scheduling pass to the start
    /// of the next; `None` = [`DEFAULT_SCHED_MIN_INTERVAL_US`].
    pub sched_min_interval_us: Option<u32>,
}

impl SchedulerParams {
    /// The largest batch script accepted, in bytes.
    pub fn max_script_size(&self) -> u64 {
        self.max_script_size.unwrap_or(DEFAULT_MAX_SCRIPT_SIZE)
    }

    /// The least time from the end of one scheduling pass to the start of the next.
    pub fn sched_min_interval(&self) -> std::time::Duration {
        std::time::Duration::from_micros(u64::from(
            self.sched_min_interval_us
                .unwrap_or(DEFAULT_SCHED_MIN_INTERVAL_US),
        ))
    }

    /// The longest submit line accepted, in bytes.
    pub fn max_submit_line_size(&self) -> u64 {
        self.max_submit_line_size
            .unwrap_or(DEFAULT_MAX_SUBMIT_LINE_SIZE)
    }
}

/// `bf_predict=` (gsched): which runtime predictor backfill plans with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RuntimePredict {
    /// The users' limits (Slurm's behaviour).
    #[default]
    Off,
    /// The average of the user's last two runtimes (Tsafrir's EASY++).
    EasyPlusPlus,
    /// The last two runtimes of the same user, job name and size, then name, then user.
    Recent,
}

/// The scheduler settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchedulerConfig {
    pub scheduler_type: SchedulerType,
    pub params: SchedulerParams,
}

/// Parses `SchedulerParameters=a=b,c`: the implemented options, and the names of the others
/// (Slurm has dozens; they are accepted with a warning).
fn parse_scheduler_params(v: &str) -> Result<(SchedulerParams, Vec<String>), String> {
    let mut p = SchedulerParams::default();
    let mut ignored = Vec::new();
    for item in v.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let (k, val) = match item.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim())),
            None => (item, None),
        };
        let num = |what: &str| -> Result<u32, String> {
            val.and_then(|v| v.parse::<u32>().ok()).ok_or_else(|| {
                format!(
                    "{what}= needs a whole number, got \"{}\"",
                    val.unwrap_or("")
                )
            })
        };
        match k.to_ascii_lowercase().as_str() {
            "bf_policy" => {
                p.bf_policy = match val.map(str::to_ascii_lowercase).as_deref() {
                    Some("easy") => BackfillPolicy::Easy,
                    Some("conservative") => BackfillPolicy::Conservative,
                    _ => {
                        return Err(format!(
                            "bf_policy= must be easy or conservative, got \"{}\"",
                            val.unwrap_or("")
                        ))
                    }
                }
            }
            "bf_reserve" => p.bf_reserve = Some(num("bf_reserve")?.max(1)),
            "bf_window" => p.bf_window_min = Some(num("bf_window")?.max(1)),
            "bf_max_job_test" => p.bf_max_job_test = Some(num("bf_max_job_test")?.max(1)),
            "kill_invalid_depend" => p.kill_invalid_depend = true,
            "nohold_on_prolog_fail" => p.nohold_on_prolog_fail = true,
            "max_script_size" => p.max_script_size = Some(u64::from(num("max_script_size")?)),
            "max_submit_line_size" => {
                p.max_submit_line_size = Some(u64::from(num("max_submit_line_size")?))
            }
            "max_array_tasks" => p.max_array_tasks = Some(num("max_array_tasks")?),
            "sched_min_interval" => p.sched_min_interval_us = Some(num("sched_min_interval")?),
            "bf_predict" => {
                p.bf_predict = match val.map(str::to_ascii_lowercase).as_deref() {
                    Some("easy++") => RuntimePredict::EasyPlusPlus,
                    Some("recent") => RuntimePredict::Recent,
                    Some("none") | Some("off") => RuntimePredict::Off,
                    _ => {
                        return Err(format!(
                            "bf_predict= must be easy++, recent or none, got \"{}\"",
                            val.unwrap_or("")
                        ))
                    }
                }
            }
            _ => ignored.push(k.to_string()),
        }
    }
    Ok((p, ignored))
}

/// `StateSyncMode=`: when a committed change of the controller's store is on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateSync {
    /// Written to the operating system at every commit: survives any crash of gsctld (the
    /// process), not a crash of the machine itself. Slurm's own state save is periodic, so
    /// this is still stricter than Slurm.
    Normal,
    /// Also flushed to the disk (fsync) at every commit: survives power loss, at about half
    /// a millisecond per submission on a typical disk.
    Full,
}

/// `AuthType=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthType {
    Munge,
    None,
}

impl AuthType {
    /// The Slurm plugin name (`auth/munge`, `auth/none`).
    pub fn as_str(self) -> &'static str {
        match self {
            AuthType::Munge => "auth/munge",
            AuthType::None => "auth/none",
        }
    }
}

/// `PrivateData=`: what users other than root, SlurmUser and `AdminUsers` may not see of
/// other users. gsched has no accounts, users, reservations, events, cloud nodes, usage
/// reports or partition access lists, so those values hide nothing yet; `jobs` and `nodes`
/// act.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PrivateData {
    /// `jobs`: users see only their own jobs (queue, `show job`, accounting).
    pub jobs: bool,
    /// `nodes`: users may not view node information at all.
    pub nodes: bool,
    /// Every value as given, lower case, in order (for `show config`).
    pub values: Vec<String>,
}

/// Slurm's `PrivateData=` values.
pub const PRIVATE_DATA_VALUES: &[&str] = &[
    "accounts",
    "cloud",
    "events",
    "jobs",
    "nodes",
    "partitions",
    "reservations",
    "usage",
    "users",
];

impl PrivateData {
    /// Parses `jobs,nodes,...` (case-insensitive).
    pub fn parse(value: &str) -> Result<PrivateData, String> {
        let mut p = PrivateData::default();
        for v in value.split(',').map(str::trim).filter(|v| !v.is_empty()) {
            let v = v.to_ascii_lowercase();
            if !PRIVATE_DATA_VALUES.contains(&v.as_str()) {
                return Err(format!(
                    "unknown value \"{v}\"; valid values: {}",
                    PRIVATE_DATA_VALUES.join(",")
                ));
            }
            match v.as_str() {
                "jobs" => p.jobs = true,
                "nodes" => p.nodes = true,
                _ => {}
            }
            if !p.values.contains(&v) {
                p.values.push(v);
            }
        }
        Ok(p)
    }
}

impl fmt::Display for PrivateData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.values.is_empty() {
            f.write_str("none")
        } else {
            f.write_str(&self.values.join(","))
        }
    }
}

impl fmt::Display for AuthType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One generic resource of a node (`gpu:a100:4`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GresConfig {
    pub name: String,
    pub gtype: Option<String>,
    pub count: u64,
}

impl fmt::Display for GresConfig {
    /// `name[:type]:count`, as `scontrol show node` prints `Gres=`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.gtype {
            Some(t) => write!(f, "{}:{t}:{}", self.name, self.count),
            None => write!(f, "{}:{}", self.name, self.count),
        }
    }
}

/// A node's `State=` in the config (its state when the controller starts fresh).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfiguredNodeState {
    Unknown,
    Idle,
    Down,
    Drain,
    Future,
    Cloud,
}

impl ConfiguredNodeState {
    /// The upper-case Slurm name.
    pub fn as_str(self) -> &'static str {
        match self {
            ConfiguredNodeState::Unknown => "UNKNOWN",
            ConfiguredNodeState::Idle => "IDLE",
            ConfiguredNodeState::Down => "DOWN",
            ConfiguredNodeState::Drain => "DRAIN",
            ConfiguredNodeState::Future => "FUTURE",
            ConfiguredNodeState::Cloud => "CLOUD",
        }
    }
}

impl fmt::Display for ConfiguredNodeState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One compute node (a `NodeName=` expression is expanded into one entry per node).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeConfig {
    pub name: String,
    /// `NodeAddr=`; `None` means connect to the name.
    pub addr: Option<String>,
    /// `Port=`; `None` means [`Config::slurmd_port`].
    pub port: Option<u16>,
    /// `CPUs=`, else Sockets × CoresPerSocket × ThreadsPerCore, else 1.
    pub cpus: u32,
    /// `RealMemory=` in MiB, default 1.
    pub real_memory_mb: u64,
    pub gres: Vec<GresConfig>,
    pub features: Vec<String>,
    pub state: ConfiguredNodeState,
    /// `Weight=`, default 1 (lower weights are allocated first).
    pub weight: u32,
    /// gsched's `GpuMemory=` (MiB): the memory of each GPU of `Gres=gpu:...` when gsnoded
    /// registers the node without a GPU inventory; 0 = unknown (no `--gpu-mem` there).
    pub gpu_memory_mb: u64,
}

/// A partition's `State=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartitionState {
    Up,
    Down,
    Drain,
    Inactive,
}

impl PartitionState {
    /// The upper-case Slurm name.
    pub fn as_str(self) -> &'static str {
        match self {
            PartitionState::Up => "UP",
            PartitionState::Down => "DOWN",
            PartitionState::Drain => "DRAIN",
            PartitionState::Inactive => "INACTIVE",
        }
    }
}

impl fmt::Display for PartitionState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One `PartitionName=` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionConfig {
    pub name: String,
    /// Expanded node names, in config order (`Nodes=ALL` lists every node).
    pub nodes: Vec<String>,
    /// `Default=YES`. At most one partition has it.
    pub default: bool,
    /// `MaxTime=` in minutes; `None` is UNLIMITED.
    pub max_time: Option<u32>,
    /// `DefaultTime=` in minutes; `None` is NONE (jobs get `max_time`).
    pub default_time: Option<u32>,
    pub state: PartitionState,
    /// `AllowAccounts=`, `DenyAccounts=`, `AllowQos=`, `DenyQos=`, `AllowGroups=`.
    pub access: PartitionAccess,
    /// `Hidden=YES`: listed only with `-a` (gsinfo, gscontrol, gsqueue), usable all the same.
    pub hidden: bool,
    /// The partition's `DefMemPerCPU=`/`DefMemPerNode=` (see [`Config::def_mem`]).
    pub def_mem: Option<crate::job::MemRequest>,
    /// The partition's `OverTimeLimit=` (`Some(None)` = UNLIMITED); `None`: the cluster's.
    pub over_time_limit: Option<Option<u32>>,
    /// The partition's `DisableRootJobs=`; `None`: the cluster's.
    pub disable_root_jobs: Option<bool>,
    /// The partition's `MaxMemPerCPU=`/`MaxMemPerNode=` (see [`Config::max_mem`]).
    pub max_mem: Option<crate::job::MemRequest>,
    /// `HangMinutes=`, `IdleGpuMinutes=` of the partition (gsched's invalid-job policy).
    pub ladder: crate::ladder_conf::PartitionLadder,
    /// gsched's `GpuSharing=multiuser`: several users' jobs may share one GPU through MPS
    /// (default `user`: an MPS-shared GPU runs one user's jobs, as MPS serializes users).
    pub gpu_multiuser: bool,
    /// gsched's `GpuOverSubscribe=F`: the compute shares (MPS active-thread percentages) of
    /// one GPU may add up to `F` times the GPU, in percent (default 100: shares are
    /// reservations). GPU memory and shards are never oversubscribed.
    pub gpu_compute_pct: u32,
}

/// Who may use a partition: `AllowAccounts=`/`DenyAccounts=` and `AllowQos=`/`DenyQos=`
/// (names lower-cased; `None` = no such list), and `AllowGroups=` (Unix group names, as
/// written). As in Slurm, an allow list wins over a deny list of the same kind, and `ALL`
/// means no restriction.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PartitionAccess {
    pub allow_accounts: Option<Vec<String>>,
    pub deny_accounts: Option<Vec<String>>,
    pub allow_qos: Option<Vec<String>>,
    pub deny_qos: Option<Vec<String>>,
    pub allow_groups: Option<Vec<String>>,
}

impl PartitionAccess {
    /// Whether a job of `account` may use the partition.
    pub fn allows_account(&self, account: &str) -> bool {
        allowed(&self.allow_accounts, &self.deny_accounts, account)
    }

    /// Whether a job of QOS `qos` may use the partition.
    pub fn allows_qos(&self, qos: &str) -> bool {
        allowed(&self.allow_qos, &self.deny_qos, qos)
    }

    /// Whether a user in `groups` (every group it is in, by name) may use the partition;
    /// root and SlurmUser may use any partition (the caller checks that).
    pub fn allows_groups(&self, groups: &[String]) -> bool {
        self.allow_groups
            .as_ref()
            .is_none_or(|a| a.iter().any(|g| groups.contains(g)))
    }
}

fn allowed(allow: &Option<Vec<String>>, deny: &Option<Vec<String>>, name: &str) -> bool {
    match (allow, deny) {
        (Some(a), _) => a.iter().any(|x| x.eq_ignore_ascii_case(name)),
        (None, Some(d)) => !d.iter().any(|x| x.eq_ignore_ascii_case(name)),
        (None, None) => true,
    }
}

/// `AccountingStorageEnforce=`: what job submission checks against the association table
/// (`gsacctmgr`). `limits` and `qos` imply `associations`, as in Slurm; `all` is all three
/// (and `safe`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AcctEnforce {
    /// A job's user must have an association with its account (and partition, if the
    /// association names one).
    pub associations: bool,
    /// QOS and association limits (MaxWall, MaxJobsPerUser, MaxSubmitJobsPerUser...).
    pub limits: bool,
    /// A job's QOS must be one its association allows.
    pub qos: bool,
    /// `safe`: accepted; gsched has no GrpTRESMins limits it would change.
    pub safe: bool,
}

impl fmt::Display for AcctEnforce {
    /// As `scontrol show config` prints it: `associations,limits,qos` or `none`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut v = Vec::new();
        if self.associations {
            v.push("associations");
        }
        if self.limits {
            v.push("limits");
        }
        if self.qos {
            v.push("qos");
        }
        if self.safe {
            v.push("safe");
        }
        if v.is_empty() {
            f.write_str("none")
        } else {
            f.write_str(&v.join(","))
        }
    }
}

/// Parses `AccountingStorageEnforce=`; the values gsched cannot honour are named in the
/// second list (they get a warning).
fn parse_acct_enforce(v: &str) -> Result<(AcctEnforce, Vec<String>), String> {
    let mut e = AcctEnforce::default();
    let mut ignored = Vec::new();
    for item in v.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        match item.to_ascii_lowercase().as_str() {
            "0" | "none" => e = AcctEnforce::default(),
            "1" | "associations" => e.associations = true,
            "limits" => {
                e.associations = true;
                e.limits = true;
            }
            "qos" => {
                e.associations = true;
                e.qos = true;
            }
            "safe" => {
                e.associations = true;
                e.limits = true;
                e.safe = true;
            }
            "all" => {
                e = AcctEnforce {
                    associations: true,
                    limits: true,
                    qos: true,
                    safe: true,
                };
            }
            "wckeys" | "nojobs" | "nosteps" => ignored.push(item.to_string()),
            _ => {
                return Err(format!(
                    "invalid value \"{item}\" (expected associations, limits, qos, safe, all, none, wckeys, nojobs or nosteps, comma separated)"
                ))
            }
        }
    }
    Ok((e, ignored))
}

/// `SlurmctldLogFile`, `SlurmdLogFile`, `SlurmctldPidFile`, `SlurmdPidFile` (paths; a node
/// daemon's may hold `%n` and `%h`) and `SlurmctldDebug`, `SlurmdDebug` (Slurm's level
/// names, checked when read). `None`: stderr, no pid file, `info`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DaemonLogs {
    pub ctld_log_file: Option<String>,
    pub slurmd_log_file: Option<String>,
    pub ctld_pid_file: Option<String>,
    pub slurmd_pid_file: Option<String>,
    pub ctld_debug: Option<String>,
    pub slurmd_debug: Option<String>,
}

/// A Slurm debug level (`quiet` ... `debug5`, or 0-9), lower-cased (the config's
/// `SlurmctldDebug`, `scontrol setdebug`).
pub fn level_name(v: &str) -> Result<String, String> {
    const NAMES: [&str; 10] = [
        "quiet", "fatal", "error", "info", "verbose", "debug", "debug2", "debug3", "debug4",
        "debug5",
    ];
    let l = v.trim().to_ascii_lowercase();
    if NAMES.contains(&l.as_str()) {
        return Ok(l);
    }
    match l.parse::<usize>() {
        Ok(n) if n < NAMES.len() => Ok(NAMES[n].to_string()),
        _ => Err(format!(
            "unknown debug level {v:?} (quiet, fatal, error, info, verbose, debug, debug2 ... debug5, or 0-9)"
        )),
    }
}

/// Slurm's `MaxStepCount` default.
pub const DEFAULT_MAX_STEP_COUNT: u32 = 40_000;
/// Slurm's `MaxTasksPerNode` default (`MAX_TASKS_PER_NODE`).
pub const DEFAULT_MAX_TASKS_PER_NODE: u32 = 512;

/// `PrologFlags=`: gsched runs the Prolog where Slurm does by default (before the batch
/// script, and before a job's first step on its other nodes); of the flags, `Serial` is
/// implemented and the others, which change when and where it runs, are refused with what
/// to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PrologFlags {
    /// `Serial`: a node runs one Prolog or Epilog at a time.
    pub serial: bool,
}

impl PrologFlags {
    pub fn parse(v: &str) -> Result<PrologFlags, String> {
        let mut f = PrologFlags::default();
        for item in v.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            match item.to_ascii_lowercase().as_str() {
                "serial" => f.serial = true,
                "none" => {}
                "alloc" | "contain" | "x11" | "nohold" | "deferbatch" | "forcerequeueonfail"
                | "runinjob" => {
                    return Err(format!(
                        "PrologFlags={item} is not supported by gsched: the Prolog runs before \
                         the batch script and before a job's first step on each of its other \
                         nodes (Slurm's default); remove {item} (only Serial is supported)"
                    ))
                }
                _ => {
                    return Err(format!(
                        "unknown PrologFlags value {item:?} (valid: Alloc, Contain, DeferBatch, \
                         ForceRequeueOnFail, NoHold, RunInJob, Serial, X11; gsched supports Serial)"
                    ))
                }
            }
        }
        Ok(f)
    }
}

/// `HealthCheckNodeState=`: the nodes the periodic health check runs on (by their CPUs in
/// use: none, some, all), and `CYCLE` (spread the nodes over the interval). `ANY`, the
/// default, is every node that answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HealthCheckNodeState {
    pub idle: bool,
    pub mixed: bool,
    pub alloc: bool,
    /// `NONDRAINED_IDLE`: idle nodes that are not draining or drained.
    pub nondrained_idle: bool,
    pub cycle: bool,
}

impl Default for HealthCheckNodeState {
    fn default() -> Self {
        HealthCheckNodeState {
            idle: true,
            mixed: true,
            alloc: true,
            nondrained_idle: false,
            cycle: false,
        }
    }
}

impl HealthCheckNodeState {
    fn parse(v: &str) -> Result<Self, String> {
        let mut s = HealthCheckNodeState {
            idle: false,
            mixed: false,
            alloc: false,
            nondrained_idle: false,
            cycle: false,
        };
        let mut any = false;
        for w in v.split(',').map(str::trim) {
            match w.to_ascii_uppercase().as_str() {
                "ANY" => any = true,
                "IDLE" => s.idle = true,
                "MIXED" => s.mixed = true,
                "ALLOC" => s.alloc = true,
                "NONDRAINED_IDLE" => s.nondrained_idle = true,
                "CYCLE" => s.cycle = true,
                _ => {
                    return Err(format!(
                        "unknown node state {w:?} (use ALLOC, ANY, CYCLE, IDLE, MIXED, NONDRAINED_IDLE)"
                    ))
                }
            }
        }
        if any || !(s.idle || s.mixed || s.alloc || s.nondrained_idle) {
            (s.idle, s.mixed, s.alloc) = (true, true, true);
        }
        Ok(s)
    }
}

/// `RequeueExit=`: exit codes and ranges (`1-9,18`), each 0 to 255; sorted, no repeats.
fn parse_exit_codes(v: &str) -> Result<Vec<u8>, String> {
    let bad = || format!("{v:?}: give exit codes from 0 to 255 and ranges, e.g. 1-9,18");
    let mut codes = Vec::new();
    for item in v.split(',').map(str::trim).filter(|x| !x.is_empty()) {
        let (a, b) = item.split_once('-').unwrap_or((item, item));
        let a: u8 = a.trim().parse().map_err(|_| bad())?;
        let b: u8 = b.trim().parse().map_err(|_| bad())?;
        if a > b {
            return Err(bad());
        }
        codes.extend(a..=b);
    }
    codes.sort_unstable();
    codes.dedup();
    Ok(codes)
}

/// `OverTimeLimit=`: minutes (at most 65533, as Slurm) or `UNLIMITED` (`None`).
fn parse_over_time(v: &str) -> Result<Option<u32>, String> {
    if v.eq_ignore_ascii_case("UNLIMITED") || v.eq_ignore_ascii_case("INFINITE") {
        return Ok(None);
    }
    match v.trim().parse::<u32>() {
        Ok(m) if m <= 65533 => Ok(Some(m)),
        _ => Err(format!(
            "{v:?} is not a number of minutes from 0 to 65533 or UNLIMITED"
        )),
    }
}

/// `DefMemPerCPU=`/`DefMemPerNode=`: megabytes (`UNLIMITED` is 0, no default).
fn parse_mem_mb(v: &str) -> Result<u64, String> {
    if v.eq_ignore_ascii_case("UNLIMITED") {
        return Ok(0);
    }
    parse_u64(v)
}

/// One memory setting (DefMemPer*, MaxMemPer*) from its per-CPU and per-node keys: per CPU wins (slurmctld reads
/// `DefMemPerNode` only when `DefMemPerCPU` is absent); 0 is none.
fn per_cpu_or_node(per_cpu: Option<u64>, per_node: Option<u64>) -> Option<crate::job::MemRequest> {
    match (per_cpu, per_node) {
        (Some(m), _) => (m > 0).then_some(crate::job::MemRequest::PerCpu(m)),
        (None, Some(m)) => (m > 0).then_some(crate::job::MemRequest::PerNode(m)),
        (None, None) => None,
    }
}

/// `AllowGroups=`: group names as written (Unix names are case-sensitive); `ALL` is none.
fn group_list(v: &str) -> Option<Vec<String>> {
    let items: Vec<String> = v
        .split(',')
        .map(|x| x.trim().to_string())
        .filter(|x| !x.is_empty())
        .collect();
    if items.iter().any(|x| x.eq_ignore_ascii_case("all")) {
        None
    } else {
        Some(items)
    }
}

fn name_list(v: &str) -> Option<Vec<String>> {
    let items: Vec<String> = v
        .split(',')
        .map(|x| x.trim().to_ascii_lowercase())
        .filter(|x| !x.is_empty())
        .collect();
    if items.iter().any(|x| x == "all") {
        None
    } else {
        Some(items)
    }
}

/// The parsed configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The file it was read from.
    pub path: PathBuf,
    /// `ClusterName=`, converted to lower case like Slurm does; default `cluster`.
    pub cluster_name: String,
    /// The first `SlurmctldHost=` (or legacy `ControlMachine=`/`ControlAddr=`).
    pub ctld_host: CtldHost,
    /// `SlurmctldPort=`, default 6817.
    pub ctld_port: u16,
    /// `SlurmdPort=`, default 6818.
    pub slurmd_port: u16,
    /// `StateSaveLocation=`, default `/var/spool/gsched/ctld`.
    pub state_save_location: PathBuf,
    /// `SlurmdSpoolDir=` as written (may hold `%n`/`%h`); see [`Config::spool_dir_for`].
    pub slurmd_spool_dir: String,
    /// `KillWait=` seconds, default 30.
    pub kill_wait: u32,
    /// `MinJobAge=` seconds, default 300.
    pub min_job_age: u32,
    /// `MaxArraySize=`: array indices must be below it; default 1001 (0 disables arrays).
    pub max_array_size: u32,
    /// `FirstJobId=`: the id of the first job (default 1); the controller numbers from the
    /// larger of it and the next id it has stored, as slurmctld does.
    pub first_job_id: u32,
    /// `SlurmdTimeout=` seconds, default 300.
    pub slurmd_timeout: u32,
    /// `MaxJobCount=`: jobs the controller holds at once (pending, running, and finished
    /// ones within `MinJobAge`); default 10,000 as in Slurm. A submission past it is refused
    /// with "MaxJobCount limit reached" and gsbatch retries, as sbatch does.
    pub max_job_count: u32,
    /// `MessageTimeout=` seconds, default 10: how long a daemon waits for a client that has
    /// opened a connection to send its request (or the rest of it) before dropping it.
    pub message_timeout: u32,
    /// gsched: `GpuSampleInterval=` seconds between GPU usage samples on the nodes
    /// (default 30; 0 turns sampling off).
    pub gpu_sample_interval: u32,
    /// gsched: `UsageHistoryDays=`: days the controller keeps the nodes' hourly usage (and
    /// the cluster's hourly utilization) in its store; default and minimum 14.
    pub usage_history_days: u32,
    /// `DefCpuPerGPU=`: CPUs per GPU of a whole-GPU job that gives neither `-c` nor
    /// `--cpus-per-gpu`; `None` = not set.
    pub def_cpu_per_gpu: Option<u32>,
    /// `DefMemPerGPU=` (MiB): memory per GPU of a whole-GPU job that asks for no memory.
    pub def_mem_per_gpu_mb: Option<u64>,
    /// `DefMemPerCPU=` or `DefMemPerNode=` (MiB; the first wins when both are set, as in
    /// slurmctld): the memory of a job that asks for none, as if it had given
    /// `--mem-per-cpu`/`--mem`; a partition's own setting comes first. `None`: not set (or 0).
    pub def_mem: Option<crate::job::MemRequest>,
    /// `MaxMemPerCPU=` or `MaxMemPerNode=` (MiB; per CPU wins when both are set): the most
    /// memory a job may ask for; a partition's own setting comes first. `None`: no limit.
    pub max_mem: Option<crate::job::MemRequest>,
    /// `HealthCheckProgram=` (an absolute path), run as root on the nodes every
    /// `HealthCheckInterval=` seconds and when a node daemon starts; `None`, or an interval
    /// of 0 (the default): never.
    pub health_check_program: Option<String>,
    pub health_check_interval: u32,
    /// `HealthCheckNodeState=`: which nodes the periodic check runs on.
    pub health_check_node_state: HealthCheckNodeState,
    /// `Prolog=`: the program (or glob pattern of programs) the node daemon runs as root
    /// before a job's first process on a node: before the batch script, and on the job's
    /// other nodes before its first step there. A failure drains the node ("Prolog error")
    /// and requeues the job held.
    pub prolog: Option<String>,
    /// `Epilog=`: run as root on every node of a job when it ends; the node's part of the
    /// job stays allocated until it finished. A failure drains the node ("Epilog error").
    pub epilog: Option<String>,
    /// `EpilogSlurmctld=`: run by the controller (as its own user) when a job ends; a
    /// failure is only logged, as in Slurm.
    pub epilog_slurmctld: Option<String>,
    /// `PrologSlurmctld=`: run by the controller (as its own user) when a job has been
    /// given its nodes, before it is launched (the job is CONFIGURING meanwhile); a
    /// failure requeues the job (or cancels it when it may not be requeued), as in Slurm.
    pub prolog_slurmctld: Option<String>,
    /// `TaskProlog=`: run as the job's user before each task (the batch script, every
    /// task of a step), in the task's process; its output's `export NAME=value`, `unset
    /// NAME` and `print text` lines change the task's environment and output. A failure
    /// ends the task with its exit status.
    pub task_prolog: Option<String>,
    /// `TaskEpilog=`: run as the job's user after each task ends; a failure is logged.
    pub task_epilog: Option<String>,
    /// `PrologEpilogTimeout=` seconds; `None`: wait indefinitely (Slurm's default). A
    /// program past it is killed and counts as failed.
    pub prolog_epilog_timeout: Option<u32>,
    /// `PrologFlags=`.
    pub prolog_flags: PrologFlags,
    /// `JobFileAppend=1`: a job's output files are appended to unless it asks
    /// `--open-mode=truncate` (Slurm's default, 0, truncates them).
    pub job_file_append: bool,
    /// `MaxStepCount=`: the most steps a job may create (Slurm's default 40000).
    pub max_step_count: u32,
    /// `MaxTasksPerNode=`: the most tasks a step may start on one node (default 512).
    pub max_tasks_per_node: u32,
    /// `Licenses=`: the cluster's licenses and how many of each (`--licenses`).
    pub licenses: Vec<crate::licenses::License>,
    /// The daemons' log files, pid files and levels.
    pub daemon_logs: DaemonLogs,
    /// The resource limits a submission propagates to its job (`PropagateResourceLimits=`,
    /// default ALL, or every limit but `PropagateResourceLimitsExcept=`'s), by
    /// [`crate::rlimits::NAMES`].
    pub propagate_rlimits: Vec<String>,
    /// `RequeueExit=`: exit codes (0-255) with which a batch job that ended by itself goes
    /// back to the queue (`SLURM_RESTART_COUNT` counts the runs), as slurmctld does.
    pub requeue_exit: Vec<u8>,
    /// `RequeueExitHold=`: exit codes with which such a job goes back to the queue held in
    /// the SPECIAL_EXIT state (`RequeueExit` wins for a code in both, as in slurmctld).
    pub requeue_exit_hold: Vec<u8>,
    /// `OverTimeLimit=`: minutes a job may run past its time limit before it is killed (the
    /// limit stays what backfill plans with); `None` = UNLIMITED. Default 0.
    pub over_time_limit: Option<u32>,
    /// `DisableRootJobs=YES`: root's jobs are refused (partitions may say otherwise).
    pub disable_root_jobs: bool,
    /// `AuthType=`, default `auth/munge`.
    pub auth_type: AuthType,
    /// `AuthInfo=` as written.
    pub auth_info: Option<String>,
    /// `SlurmUser=`, default `root`.
    pub slurm_user: String,
    /// `PrivateData=`, default nothing private (as in Slurm).
    pub private_data: PrivateData,
    /// `AdminUsers=` (gsched): user names that may act on every job and node, like root and
    /// SlurmUser (Slurm's operators and administrators, which Slurm keeps in its accounting
    /// database as `AdminLevel`).
    pub admin_users: Vec<String>,
    /// `StateSyncMode=` (gsched): how the controller's store reaches the disk.
    pub state_sync: StateSync,
    /// `SchedulerType=` and `SchedulerParameters=`.
    pub scheduler: SchedulerConfig,
    /// `PriorityType=` and the multifactor settings.
    pub priority: PriorityConfig,
    /// `AccountingStorageEnforce=`.
    pub acct_enforce: AcctEnforce,
    pub nodes: Vec<NodeConfig>,
    pub partitions: Vec<PartitionConfig>,
    /// `MailProg=`, `MailDomain=`, `SmtpServer=`, `MailFrom=`, `WebhookName=` lines.
    pub notify: crate::notify_config::NotifyConfig,
    /// The invalid-job policy (`HangMinutes=`, `IdleGpuMinutes=`, `InvalidJobLadder=`).
    pub invalid_jobs: crate::ladder_conf::InvalidJobPolicy,
    /// `JobRequeue=`, `ReturnToService=`, `RebootProgram=`, `TopologyPlugin=`,
    /// `NodeLoadThreshold=`.
    pub lifecycle: crate::lifecycle::LifecycleConfig,
    /// Time-of-use prices: `PriceWindow=` lines, `DefaultPrice=`, `PriceFile=`, thresholds,
    /// `Watts=` of nodes and `GpuWatts=`.
    pub price: crate::price_conf::PriceConfig,
    /// Human-readable warnings (ignored Slurm settings and the like), one per setting.
    pub warnings: Vec<String>,
}

impl Config {
    /// Reads and parses a config file (and the files it includes).
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Read {
            path: path.to_path_buf(),
            reason: io_reason(&e),
            source: e,
        })?;
        Config::parse(&text, path)
    }

    /// Parses config text; `path` names it in messages and anchors relative `Include`s.
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let mut parser = Parser::new(path);
        parser.parse_text(text, path, 0)?;
        parser.finish()
    }

    /// The node called `name`.
    pub fn node(&self, name: &str) -> Option<&NodeConfig> {
        self.nodes.iter().find(|n| n.name == name)
    }

    /// The partition called `name`.
    pub fn partition(&self, name: &str) -> Option<&PartitionConfig> {
        self.partitions.iter().find(|p| p.name == name)
    }

    /// Seconds a job of `partition` may run past its time limit (`OverTimeLimit`, the
    /// partition's else the cluster's); `None`: without end.
    pub fn over_time_secs(&self, partition: &str) -> Option<i64> {
        self.partition(partition)
            .and_then(|p| p.over_time_limit)
            .unwrap_or(self.over_time_limit)
            .map(|m| i64::from(m) * 60)
    }

    /// Whether `DisableRootJobs` (the partition's, else the cluster's) refuses root's jobs.
    pub fn root_jobs_disabled(&self, p: &PartitionConfig) -> bool {
        p.disable_root_jobs.unwrap_or(self.disable_root_jobs)
    }

    /// The partition with `Default=YES`, else the first one.
    pub fn default_partition(&self) -> Option<&PartitionConfig> {
        self.partitions
            .iter()
            .find(|p| p.default)
            .or_else(|| self.partitions.first())
    }

    /// Where to reach a node's daemon: its `NodeAddr=`, else its name; `None` for an
    /// unknown node.
    pub fn node_addr(&self, name: &str) -> Option<&str> {
        self.node(name)
            .map(|n| n.addr.as_deref().unwrap_or(&n.name))
    }

    /// A node's daemon port: its `Port=`, else `SlurmdPort`.
    pub fn node_port(&self, name: &str) -> u16 {
        self.node(name)
            .and_then(|n| n.port)
            .unwrap_or(self.slurmd_port)
    }

    /// `SlurmdSpoolDir` for one node, with `%n` and `%h` replaced by the node name.
    pub fn spool_dir_for(&self, node: &str) -> PathBuf {
        PathBuf::from(
            self.slurmd_spool_dir
                .replace("%n", node)
                .replace("%h", node),
        )
    }
}

/// The text of the file `name` in the folder of the config file `gsched_conf` (where
/// `cgroup.conf`, `gres.conf` and `topology.conf` live): `Ok(None)` when there is no such
/// file; a failure to read it comes with the file's path.
pub fn read_beside(
    gsched_conf: &Path,
    name: &str,
) -> Result<Option<(PathBuf, String)>, (PathBuf, std::io::Error)> {
    let path = gsched_conf.parent().unwrap_or(Path::new(".")).join(name);
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(Some((path, text))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err((path, e)),
    }
}

/// `io::Error` text without the ` (os error N)` tail.
pub(crate) fn io_reason(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// Where a value came from.
#[derive(Debug, Clone)]
struct Loc {
    file: PathBuf,
    line: usize,
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file.display(), self.line)
    }
}

fn value_err(loc: &Loc, key: &str, message: impl Into<String>) -> ConfigError {
    ConfigError::Value {
        file: loc.file.clone(),
        line: loc.line,
        key: key.to_string(),
        message: message.into(),
    }
}

fn syntax_err(loc: &Loc, message: impl Into<String>) -> ConfigError {
    ConfigError::Syntax {
        file: loc.file.clone(),
        line: loc.line,
        message: message.into(),
    }
}

/// The canonical spelling of `key` in `table`, ignoring case.
pub(crate) fn canonical(table: &[&'static str], key: &str) -> Option<&'static str> {
    table.iter().copied().find(|k| k.eq_ignore_ascii_case(key))
}

/// Joins physical lines into logical ones: strips `#` comments (`\#` is a literal
/// `#`) and joins lines ending in `\`. Yields (first line number, text).
pub(crate) fn logical_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (idx, raw) in text.split('\n').enumerate() {
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        let mut line = String::with_capacity(raw.len());
        let mut chars = raw.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' if chars.peek() == Some(&'#') => {
                    line.push('#');
                    chars.next();
                }
                '#' => break,
                _ => line.push(c),
            }
        }
        let (start, mut acc) = current.take().unwrap_or((idx + 1, String::new()));
        let trimmed = line.trim_end();
        if let Some(body) = trimmed.strip_suffix('\\') {
            acc.push_str(body);
            acc.push(' ');
            current = Some((start, acc));
        } else {
            acc.push_str(&line);
            out.push((start, acc));
        }
    }
    if let Some(last) = current {
        out.push(last);
    }
    out
}

/// One logical line, tokenized.
pub(crate) enum Line {
    Include(String),
    Pairs(Vec<(String, String)>),
}

/// Splits a logical line into `Key=Value` pairs (values may be double-quoted; spaces
/// around `=` are allowed when there is one before it), or an `Include path` line.
pub(crate) fn tokenize(text: &str) -> Result<Line, String> {
    let trimmed = text.trim();
    if trimmed.eq_ignore_ascii_case("include") {
        return Ok(Line::Include(String::new()));
    }
    if let Some((word, rest)) = trimmed.split_once(char::is_whitespace) {
        if word.eq_ignore_ascii_case("include") && !rest.trim_start().starts_with('=') {
            let path = rest.trim();
            let path = path
                .strip_prefix('"')
                .and_then(|p| p.strip_suffix('"'))
                .unwrap_or(path);
            return Ok(Line::Include(path.to_string()));
        }
    }
    let chars: Vec<char> = trimmed.chars().collect();
    let mut pairs = Vec::new();
    let mut i = 0;
    let skip_ws = |i: &mut usize| {
        let start = *i;
        while *i < chars.len() && chars[*i].is_whitespace() {
            *i += 1;
        }
        *i > start
    };
    loop {
        skip_ws(&mut i);
        if i >= chars.len() {
            break;
        }
        let key_start = i;
        while i < chars.len() && !chars[i].is_whitespace() && chars[i] != '=' {
            i += 1;
        }
        let key: String = chars[key_start..i].iter().collect();
        let spaced = skip_ws(&mut i);
        if key.is_empty() || chars.get(i) != Some(&'=') {
            let mut end = i;
            while end < chars.len() && !chars[end].is_whitespace() {
                end += 1;
            }
            let token: String = chars[key_start..end.max(key_start)].iter().collect();
            let token = if token.is_empty() { key } else { token };
            return Err(format!(
                "expected Key=Value, found \"{token}\" (keys and values are separated by '=')"
            ));
        }
        i += 1;
        if spaced {
            skip_ws(&mut i);
        }
        let mut value = String::new();
        let mut quoted = false;
        while i < chars.len() && (quoted || !chars[i].is_whitespace()) {
            if chars[i] == '"' {
                quoted = !quoted;
            } else {
                value.push(chars[i]);
            }
            i += 1;
        }
        if quoted {
            return Err(format!("{key}: unterminated double quote in the value"));
        }
        pairs.push((key, value));
    }
    Ok(Line::Pairs(pairs))
}

const WHOLE: &str = "expected a whole number";
const TIME_FORMS: &str = "expected minutes, M:S, H:M:S, D-H, D-H:M, D-H:M:S, UNLIMITED or INFINITE";

/// The shortest (and default) `UsageHistoryDays=`: the issue's two weeks, which the learned
/// low-load windows read.
pub const MIN_USAGE_HISTORY_DAYS: u32 = 14;

fn parse_u32(v: &str) -> Result<u32, String> {
    if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
        v.parse::<u32>()
            .map_err(|_| format!("invalid value \"{v}\" ({WHOLE} up to {})", u32::MAX))
    } else {
        Err(format!("invalid value \"{v}\" ({WHOLE})"))
    }
}

pub(crate) fn parse_u64(v: &str) -> Result<u64, String> {
    if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
        v.parse::<u64>()
            .map_err(|_| format!("invalid value \"{v}\" ({WHOLE} up to {})", u64::MAX))
    } else {
        Err(format!("invalid value \"{v}\" ({WHOLE})"))
    }
}

fn parse_port(v: &str) -> Result<u16, String> {
    if v.contains('-') {
        return Err(format!(
            "invalid value \"{v}\": port ranges are not supported (give one port number)"
        ));
    }
    match v.parse::<u16>() {
        Ok(p) if p > 0 && v.bytes().all(|b| b.is_ascii_digit()) => Ok(p),
        _ => Err(format!(
            "invalid value \"{v}\" (expected a port number from 1 to 65535)"
        )),
    }
}

pub(crate) fn parse_bool(v: &str) -> Result<bool, String> {
    match v.to_ascii_uppercase().as_str() {
        "YES" | "TRUE" | "1" => Ok(true),
        "NO" | "FALSE" | "0" => Ok(false),
        _ => Err(format!("invalid value \"{v}\" (expected YES or NO)")),
    }
}

/// A time in Slurm's formats, in seconds; UNLIMITED/INFINITE are refused (`what` names them).
fn parse_time_secs(v: &str) -> Result<i64, String> {
    match units::parse_time_minutes(v) {
        Ok(Some(m)) => Ok(m as i64 * 60),
        _ => Err(format!(
            "invalid value \"{v}\" (expected minutes, M:S, H:M:S, D-H, D-H:M or D-H:M:S)"
        )),
    }
}

fn parse_nonempty(v: &str) -> Result<String, String> {
    if v.is_empty() {
        Err("the value is empty".to_string())
    } else {
        Ok(v.to_string())
    }
}

fn parse_max_time(v: &str) -> Result<Option<u32>, String> {
    units::parse_time_minutes(v).map_err(|_| format!("invalid value \"{v}\" ({TIME_FORMS})"))
}

fn parse_default_time(v: &str) -> Result<Option<u32>, String> {
    if v.eq_ignore_ascii_case("NONE") {
        return Ok(None);
    }
    units::parse_time_minutes(v)
        .map_err(|_| format!("invalid value \"{v}\" ({TIME_FORMS} or NONE)"))
}

fn parse_ctld_host(v: &str) -> Result<CtldHost, String> {
    let bad = || {
        format!(
            "invalid value \"{v}\" (expected a host name, or name(address) as in head(10.0.0.1))"
        )
    };
    let (name, addr) = match v.split_once('(') {
        None => (v, None),
        Some((name, rest)) => {
            let addr = rest.strip_suffix(')').ok_or_else(bad)?;
            if addr.is_empty() || addr.contains(['(', ')']) {
                return Err(bad());
            }
            (name, Some(addr.to_string()))
        }
    };
    if name.is_empty() || name.contains(')') {
        return Err(bad());
    }
    Ok(CtldHost {
        name: name.to_string(),
        addr,
    })
}

/// A GRES count: a whole number with an optional K, M, G or T (powers of 1024) suffix.
fn parse_gres_count(s: &str) -> Option<u64> {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let n: u64 = s[..digits].parse().ok()?;
    let shift = match &s[digits..] {
        "" => 0,
        "k" | "K" => 10,
        "m" | "M" => 20,
        "g" | "G" => 30,
        "t" | "T" => 40,
        _ => return None,
    };
    n.checked_mul(1u64 << shift)
}

fn parse_gres(v: &str) -> Result<Vec<GresConfig>, String> {
    let forms = "expected name[:type][:count] items separated by commas, e.g. gpu:a100:4,mps:400";
    if v.is_empty() || v.eq_ignore_ascii_case("(null)") || v.eq_ignore_ascii_case("NONE") {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for item in v.split(',') {
        let bad = || format!("invalid value \"{v}\": bad item \"{item}\" ({forms})");
        let parts: Vec<&str> = item.split(':').collect();
        let word_ok = |w: &str| {
            !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        };
        let count_like = |w: &str| w.bytes().next().is_some_and(|b| b.is_ascii_digit());
        let (name, gtype, count) = match parts.as_slice() {
            [name] => (*name, None, 1),
            [name, x] if count_like(x) => (*name, None, parse_gres_count(x).ok_or_else(bad)?),
            [name, t] => (*name, Some(*t), 1),
            [name, t, c] => (*name, Some(*t), parse_gres_count(c).ok_or_else(bad)?),
            _ => return Err(bad()),
        };
        if !word_ok(name) || !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
            return Err(bad());
        }
        if gtype.is_some_and(|t| !word_ok(t)) {
            return Err(bad());
        }
        out.push(GresConfig {
            name: name.to_string(),
            gtype: gtype.map(str::to_string),
            count,
        });
    }
    Ok(out)
}

fn parse_features(v: &str) -> Vec<String> {
    v.split(',')
        .map(str::trim)
        .filter(|f| !f.is_empty())
        .map(str::to_string)
        .collect()
}

fn parse_node_state(v: &str) -> Result<ConfiguredNodeState, String> {
    Ok(match v.to_ascii_uppercase().as_str() {
        "UNKNOWN" => ConfiguredNodeState::Unknown,
        "IDLE" => ConfiguredNodeState::Idle,
        "DOWN" => ConfiguredNodeState::Down,
        "DRAIN" => ConfiguredNodeState::Drain,
        "FUTURE" => ConfiguredNodeState::Future,
        "CLOUD" => ConfiguredNodeState::Cloud,
        _ => {
            return Err(format!(
                "invalid value \"{v}\" (expected UNKNOWN, IDLE, DOWN, DRAIN, FUTURE or CLOUD)"
            ))
        }
    })
}

fn parse_partition_state(v: &str) -> Result<PartitionState, String> {
    Ok(match v.to_ascii_uppercase().as_str() {
        "UP" => PartitionState::Up,
        "DOWN" => PartitionState::Down,
        "DRAIN" => PartitionState::Drain,
        "INACTIVE" => PartitionState::Inactive,
        _ => {
            return Err(format!(
                "invalid value \"{v}\" (expected UP, DOWN, DRAIN or INACTIVE)"
            ))
        }
    })
}

/// Ports of a `Port=` value: `N`, `N-M` or `[N-M,...]`, expanded like a hostlist.
fn parse_port_list(v: &str) -> Result<Vec<u16>, String> {
    let bad = || {
        format!("invalid value \"{v}\" (expected a port number from 1 to 65535, or a range such as 17001-17004)")
    };
    let expr = if v.contains('[') {
        v.to_string()
    } else if v.contains('-') {
        format!("[{v}]")
    } else {
        v.to_string()
    };
    let items = hostlist::expand(&expr).map_err(|_| bad())?;
    if items.len() > usize::from(u16::MAX) {
        return Err(bad());
    }
    items
        .iter()
        .map(|p| match p.parse::<u16>() {
            Ok(n) if n > 0 && p.bytes().all(|b| b.is_ascii_digit()) => Ok(n),
            _ => Err(bad()),
        })
        .collect()
}

/// Attributes of one `NodeName=` line (or the accumulated `NodeName=DEFAULT` lines).
#[derive(Debug, Clone, Default)]
struct NodeAttrs {
    addr: Option<(Vec<String>, Loc)>,
    port: Option<(Vec<u16>, Loc)>,
    cpus: Option<u32>,
    boards: Option<u32>,
    sockets_per_board: Option<u32>,
    sockets: Option<u32>,
    cores_per_socket: Option<u32>,
    threads_per_core: Option<u32>,
    real_memory: Option<u64>,
    gres: Option<Vec<GresConfig>>,
    features: Option<Vec<String>>,
    state: Option<ConfiguredNodeState>,
    weight: Option<u32>,
    gpu_memory: Option<u64>,
}

impl NodeAttrs {
    /// These attributes, with unset ones taken from `defaults`.
    fn over(self, defaults: &NodeAttrs) -> NodeAttrs {
        let d = defaults.clone();
        NodeAttrs {
            addr: self.addr.or(d.addr),
            port: self.port.or(d.port),
            cpus: self.cpus.or(d.cpus),
            boards: self.boards.or(d.boards),
            sockets_per_board: self.sockets_per_board.or(d.sockets_per_board),
            sockets: self.sockets.or(d.sockets),
            cores_per_socket: self.cores_per_socket.or(d.cores_per_socket),
            threads_per_core: self.threads_per_core.or(d.threads_per_core),
            real_memory: self.real_memory.or(d.real_memory),
            gres: self.gres.or(d.gres),
            features: self.features.or(d.features),
            state: self.state.or(d.state),
            weight: self.weight.or(d.weight),
            gpu_memory: self.gpu_memory.or(d.gpu_memory),
        }
    }

    /// CPUs= if given, else the product of the topology attributes, else 1.
    fn cpu_count(&self) -> Option<u32> {
        if let Some(c) = self.cpus {
            return Some(c);
        }
        let sockets = match (self.sockets, self.boards, self.sockets_per_board) {
            (Some(s), _, _) => s,
            (None, b, Some(spb)) => b.unwrap_or(1).checked_mul(spb)?,
            (None, _, None) => 1,
        };
        sockets
            .checked_mul(self.cores_per_socket.unwrap_or(1))?
            .checked_mul(self.threads_per_core.unwrap_or(1))
    }
}

/// Attributes of one `PartitionName=` line (or the accumulated DEFAULT lines).
#[derive(Debug, Clone, Default)]
struct PartAttrs {
    nodes: Option<(String, Loc)>,
    default: Option<bool>,
    max_time: Option<Option<u32>>,
    default_time: Option<Option<u32>>,
    state: Option<PartitionState>,
    allow_accounts: Option<Option<Vec<String>>>,
    deny_accounts: Option<Option<Vec<String>>>,
    allow_qos: Option<Option<Vec<String>>>,
    deny_qos: Option<Option<Vec<String>>>,
    allow_groups: Option<Option<Vec<String>>>,
    hidden: Option<bool>,
    def_mem_per_cpu: Option<u64>,
    def_mem_per_node: Option<u64>,
    over_time_limit: Option<Option<u32>>,
    disable_root_jobs: Option<bool>,
    max_mem_per_cpu: Option<u64>,
    max_mem_per_node: Option<u64>,
    ladder: crate::ladder_conf::PartitionLadder,
    gpu_multiuser: Option<bool>,
    gpu_compute_pct: Option<u32>,
}

impl PartAttrs {
    /// One key of a partition line (`canon`, as [`PARTITION_KEYS`] spells it, but not
    /// `PartitionName`); the message of a bad value (the caller names the key and place).
    /// Shared by the config file and `scontrol update PartitionName=`.
    fn set(&mut self, canon: &str, value: &str, loc: &Loc) -> Result<(), String> {
        match canon {
                "Nodes" => self.nodes = Some((value.to_string(), loc.clone())),
                "Default" => self.default = Some(parse_bool(value)?),
                "MaxTime" => self.max_time = Some(parse_max_time(value)?),
                "DefaultTime" => self.default_time = Some(parse_default_time(value)?),
                "State" => self.state = Some(parse_partition_state(value)?),
                "AllowAccounts" => self.allow_accounts = Some(name_list(value)),
                "DenyAccounts" => self.deny_accounts = Some(name_list(value)),
                "AllowQos" => self.allow_qos = Some(name_list(value)),
                "DenyQos" => self.deny_qos = Some(name_list(value)),
                "AllowGroups" => self.allow_groups = Some(group_list(value)),
                "Hidden" => self.hidden = Some(parse_bool(value)?),
                "DefMemPerCPU" => {
                    self.def_mem_per_cpu = Some(parse_mem_mb(value)?)
                }
                "DefMemPerNode" => {
                    self.def_mem_per_node = Some(parse_mem_mb(value)?)
                }
                "OverTimeLimit" => {
                    self.over_time_limit = Some(parse_over_time(value)?)
                }
                "DisableRootJobs" => {
                    self.disable_root_jobs = Some(parse_bool(value)?)
                }
                "MaxMemPerCPU" => {
                    self.max_mem_per_cpu = Some(parse_mem_mb(value)?)
                }
                "MaxMemPerNode" => {
                    self.max_mem_per_node = Some(parse_mem_mb(value)?)
                }
                "HangMinutes" => {
                    self.ladder.hang_secs =
                        Some(crate::ladder_conf::parse_minutes(value)?)
                }
                "IdleGpuMinutes" => {
                    self.ladder.idle_gpu_secs =
                        Some(crate::ladder_conf::parse_minutes(value)?)
                }
                "GpuSharing" => {
                    self.gpu_multiuser = Some(match value.to_ascii_lowercase().as_str() {
                        "user" => false,
                        "multiuser" => true,
                        _ => {
                            return Err(format!(
                                "invalid value \"{value}\" (expected user or multiuser)"
                            ))
                        }
                    })
                }
                "GpuOverSubscribe" => {
                    self.gpu_compute_pct = Some(parse_oversubscribe(value).ok_or_else(|| {
                        format!(
                            "invalid value \"{value}\" (expected how many GPUs' worth of compute the shares of one GPU may add up to, from 1 to 4, e.g. 2 or 1.5)"
                        )
                    })?)
                }
            other => return Err(format!("invalid key \"{other}\"")),
        }
        Ok(())
    }

    fn over(self, defaults: &PartAttrs) -> PartAttrs {
        let d = defaults.clone();
        PartAttrs {
            nodes: self.nodes.or(d.nodes),
            default: self.default.or(d.default),
            max_time: self.max_time.or(d.max_time),
            default_time: self.default_time.or(d.default_time),
            state: self.state.or(d.state),
            allow_accounts: self.allow_accounts.or(d.allow_accounts),
            deny_accounts: self.deny_accounts.or(d.deny_accounts),
            allow_qos: self.allow_qos.or(d.allow_qos),
            deny_qos: self.deny_qos.or(d.deny_qos),
            allow_groups: self.allow_groups.or(d.allow_groups),
            hidden: self.hidden.or(d.hidden),
            def_mem_per_cpu: self.def_mem_per_cpu.or(d.def_mem_per_cpu),
            def_mem_per_node: self.def_mem_per_node.or(d.def_mem_per_node),
            over_time_limit: self.over_time_limit.or(d.over_time_limit),
            disable_root_jobs: self.disable_root_jobs.or(d.disable_root_jobs),
            max_mem_per_cpu: self.max_mem_per_cpu.or(d.max_mem_per_cpu),
            max_mem_per_node: self.max_mem_per_node.or(d.max_mem_per_node),
            ladder: crate::ladder_conf::PartitionLadder {
                hang_secs: self.ladder.hang_secs.or(d.ladder.hang_secs),
                idle_gpu_secs: self.ladder.idle_gpu_secs.or(d.ladder.idle_gpu_secs),
            },
            gpu_multiuser: self.gpu_multiuser.or(d.gpu_multiuser),
            gpu_compute_pct: self.gpu_compute_pct.or(d.gpu_compute_pct),
        }
    }
}

/// `GpuOverSubscribe=`: a factor from 1 to 4 with at most two decimals, as a percentage.
pub fn parse_oversubscribe(v: &str) -> Option<u32> {
    let (int, frac) = v.split_once('.').unwrap_or((v, "0"));
    if int.is_empty()
        || frac.is_empty()
        || frac.len() > 2
        || !(int.chars().chain(frac.chars())).all(|c| c.is_ascii_digit())
    {
        return None;
    }
    let int: u32 = int.parse().ok()?;
    let frac: u32 = format!("{frac:0<2}").parse().ok()?;
    let pct = int.checked_mul(100)?.checked_add(frac)?;
    (100..=400).contains(&pct).then_some(pct)
}

/// Global settings as read, each with where it was set.
#[derive(Debug, Default)]
struct Globals {
    cluster_name: Option<String>,
    ctld_host: Option<(CtldHost, Loc)>,
    control_machine: Option<(String, Loc)>,
    control_addr: Option<(String, Loc)>,
    ctld_port: Option<u16>,
    slurmd_port: Option<u16>,
    state_save_location: Option<String>,
    slurmd_spool_dir: Option<String>,
    kill_wait: Option<u32>,
    min_job_age: Option<u32>,
    max_array_size: Option<u32>,
    first_job_id: Option<u32>,
    def_cpu_per_gpu: Option<u32>,
    def_mem_per_gpu: Option<u64>,
    def_mem_per_cpu: Option<u64>,
    def_mem_per_node: Option<u64>,
    max_mem_per_cpu: Option<u64>,
    max_mem_per_node: Option<u64>,
    over_time_limit: Option<Option<u32>>,
    disable_root_jobs: Option<bool>,
    requeue_exit: Option<Vec<u8>>,
    requeue_exit_hold: Option<Vec<u8>>,
    propagate_rlimits: Option<(Vec<&'static str>, Loc)>,
    propagate_rlimits_except: Option<(Vec<&'static str>, Loc)>,
    health_check_program: Option<String>,
    health_check_interval: Option<u32>,
    health_check_node_state: Option<HealthCheckNodeState>,
    prolog: Option<String>,
    epilog: Option<String>,
    epilog_slurmctld: Option<String>,
    prolog_slurmctld: Option<String>,
    task_prolog: Option<String>,
    task_epilog: Option<String>,
    prolog_epilog_timeout: Option<u32>,
    prolog_flags: Option<PrologFlags>,
    job_file_append: Option<bool>,
    max_step_count: Option<u32>,
    max_tasks_per_node: Option<u32>,
    licenses: Option<Vec<crate::licenses::License>>,
    daemon_logs: DaemonLogs,
    slurmd_timeout: Option<u32>,
    max_job_count: Option<u32>,
    message_timeout: Option<u32>,
    gpu_sample_interval: Option<u32>,
    usage_history_days: Option<u32>,
    auth_type: Option<AuthType>,
    auth_info: Option<String>,
    slurm_user: Option<String>,
    private_data: Option<PrivateData>,
    admin_users: Option<Vec<String>>,
    state_sync: Option<StateSync>,
    scheduler_type: Option<SchedulerType>,
    scheduler_params: Option<SchedulerParams>,
    priority: PriorityConfig,
    acct_enforce: AcctEnforce,
}

struct Parser {
    root: PathBuf,
    globals: Globals,
    /// Where each global key was first set (for "set twice" warnings).
    set_at: HashMap<&'static str, Loc>,
    node_defaults: NodeAttrs,
    part_defaults: PartAttrs,
    nodes: Vec<NodeConfig>,
    node_loc: HashMap<String, Loc>,
    partitions: Vec<(String, PartAttrs, Loc)>,
    warnings: Vec<String>,
    warned: HashSet<String>,
    notify: crate::notify_config::NotifyConfig,
    invalid_jobs: crate::ladder_conf::InvalidJobPolicy,
    lifecycle: crate::lifecycle::LifecycleConfig,
    price: crate::price_conf::PriceConfig,
    /// `Watts=` of `NodeName=DEFAULT`.
    default_watts: Option<u32>,
}

impl Parser {
    fn new(root: &Path) -> Parser {
        Parser {
            root: root.to_path_buf(),
            globals: Globals::default(),
            set_at: HashMap::new(),
            node_defaults: NodeAttrs::default(),
            part_defaults: PartAttrs::default(),
            nodes: Vec::new(),
            node_loc: HashMap::new(),
            partitions: Vec::new(),
            warnings: Vec::new(),
            warned: HashSet::new(),
            notify: Default::default(),
            invalid_jobs: Default::default(),
            lifecycle: Default::default(),
            price: Default::default(),
            default_watts: None,
        }
    }

    /// Adds a warning unless one with the same `dedup` key was already given.
    fn warn(&mut self, dedup: String, message: String) {
        if self.warned.insert(dedup) {
            self.warnings.push(message);
        }
    }

    fn warn_ignored(&mut self, loc: &Loc, context: &str, key: &str) {
        let what = if context.is_empty() {
            key.to_string()
        } else {
            format!("{key} on {context} lines")
        };
        self.warn(
            format!("{context}/{key}"),
            format!("{loc}: {what} is a Slurm setting gsched does not use yet; ignored"),
        );
    }

    fn parse_text(&mut self, text: &str, file: &Path, depth: usize) -> Result<(), ConfigError> {
        for (line, content) in logical_lines(text) {
            let loc = Loc {
                file: file.to_path_buf(),
                line,
            };
            if content.trim().is_empty() {
                continue;
            }
            match tokenize(&content).map_err(|m| syntax_err(&loc, m))? {
                Line::Include(target) => self.include(&target, &loc, depth)?,
                Line::Pairs(pairs) => self.pairs(&pairs, &loc)?,
            }
        }
        Ok(())
    }

    fn include(&mut self, target: &str, loc: &Loc, depth: usize) -> Result<(), ConfigError> {
        if target.is_empty() {
            return Err(value_err(loc, "Include", "no file name given"));
        }
        if depth >= MAX_INCLUDE_DEPTH {
            return Err(value_err(
                loc,
                "Include",
                format!(
                    "includes are nested more than {MAX_INCLUDE_DEPTH} deep (does a file include itself?)"
                ),
            ));
        }
        let base = loc.file.parent().unwrap_or(Path::new(""));
        let path = base.join(target);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            value_err(
                loc,
                "Include",
                format!("cannot read {}: {}", path.display(), io_reason(&e)),
            )
        })?;
        self.parse_text(&text, &path, depth + 1)
    }

    fn pairs(&mut self, pairs: &[(String, String)], loc: &Loc) -> Result<(), ConfigError> {
        let Some((first, _)) = pairs.first() else {
            return Ok(());
        };
        if first.eq_ignore_ascii_case("NodeName") {
            return self.node_line(pairs, loc);
        }
        if first.eq_ignore_ascii_case("PartitionName") {
            return self.partition_line(pairs, loc);
        }
        if first.eq_ignore_ascii_case("WebhookName") {
            return self
                .notify
                .webhook_line(pairs)
                .map_err(|m| syntax_err(loc, m));
        }
        if first.eq_ignore_ascii_case("PriceWindow") {
            return self
                .price
                .window_line(pairs, &loc.file, loc.line)
                .map_err(|m| syntax_err(loc, m));
        }
        if let Some(key) = canonical(IGNORED_LINE_KEYS, first) {
            self.warn_ignored(loc, "", key);
            return Ok(());
        }
        for (key, value) in pairs {
            self.global(key, value, loc)?;
        }
        Ok(())
    }

    fn global(&mut self, key: &str, value: &str, loc: &Loc) -> Result<(), ConfigError> {
        let Some(canon) = canonical(GLOBAL_KEYS, key) else {
            if let Some(k) = canonical(IGNORED_KEYS, key) {
                self.warn_ignored(loc, "", k);
                return Ok(());
            }
            let line_start = ["NodeName", "PartitionName", "WebhookName", "PriceWindow"]
                .into_iter()
                .chain(IGNORED_LINE_KEYS.iter().copied())
                .find(|k| k.eq_ignore_ascii_case(key));
            if let Some(k) = line_start {
                return Err(value_err(
                    loc,
                    k,
                    format!("{k}= must be the first key on its line"),
                ));
            }
            return Err(syntax_err(
                loc,
                format!(
                    "unknown key \"{key}\" (not a Slurm or gsched setting; check the spelling)"
                ),
            ));
        };
        let err = |m: String| value_err(loc, canon, m);
        if canon != "SlurmctldHost" {
            if let Some(first) = self.set_at.get(canon) {
                let message = format!(
                    "{loc}: {canon} is set more than once (first at {first}); the last value wins"
                );
                self.warn(format!("twice/{canon}"), message);
            } else {
                self.set_at.insert(canon, loc.clone());
            }
        }
        if canon == "SlurmctldHost" {
            let host = parse_ctld_host(value).map_err(err)?;
            if self.globals.ctld_host.is_none() {
                self.globals.ctld_host = Some((host, loc.clone()));
            } else {
                let message = format!(
                    "{loc}: SlurmctldHost: backup controllers are not supported yet; \"{value}\" is ignored"
                );
                self.warn(format!("backup/{value}"), message);
            }
            return Ok(());
        }
        if matches!(canon, "MailProg" | "MailDomain" | "MailFrom" | "SmtpServer") {
            return self.notify.global(canon, value).map_err(err);
        }
        if crate::ladder_conf::InvalidJobPolicy::GLOBAL_KEYS.contains(&canon) {
            return self.invalid_jobs.global(canon, value).map_err(err);
        }
        if crate::lifecycle::LIFECYCLE_KEYS.contains(&canon) {
            return self.lifecycle.global(canon, value).map_err(err);
        }
        if crate::price_conf::PRICE_GLOBAL_KEYS.contains(&canon) {
            return self.price.global(canon, value).map_err(err);
        }
        let g = &mut self.globals;
        match canon {
            "ClusterName" => {
                g.cluster_name = Some(parse_nonempty(value).map_err(err)?.to_lowercase());
            }
            "ControlMachine" => {
                g.control_machine = Some((parse_nonempty(value).map_err(err)?, loc.clone()));
            }
            "ControlAddr" => {
                g.control_addr = Some((parse_nonempty(value).map_err(err)?, loc.clone()));
            }
            "SlurmctldPort" => g.ctld_port = Some(parse_port(value).map_err(err)?),
            "SlurmdPort" => g.slurmd_port = Some(parse_port(value).map_err(err)?),
            "StateSaveLocation" => {
                g.state_save_location = Some(parse_nonempty(value).map_err(err)?);
            }
            "SlurmdSpoolDir" => g.slurmd_spool_dir = Some(parse_nonempty(value).map_err(err)?),
            "KillWait" => g.kill_wait = Some(parse_u32(value).map_err(err)?),
            "MinJobAge" => g.min_job_age = Some(parse_u32(value).map_err(err)?),
            "MaxArraySize" => g.max_array_size = Some(parse_u32(value).map_err(err)?),
            "FirstJobId" => {
                let v = parse_u32(value).map_err(err)?;
                if v == 0 {
                    return Err(err("must be larger than 0".to_string()));
                }
                g.first_job_id = Some(v);
            }
            "DefCpuPerGPU" => g.def_cpu_per_gpu = Some(parse_u32(value).map_err(err)?),
            "DefMemPerGPU" => g.def_mem_per_gpu = Some(parse_u64(value).map_err(err)?),
            "DefMemPerCPU" => g.def_mem_per_cpu = Some(parse_mem_mb(value).map_err(err)?),
            "OverTimeLimit" => g.over_time_limit = Some(parse_over_time(value).map_err(err)?),
            "RequeueExit" => g.requeue_exit = Some(parse_exit_codes(value).map_err(err)?),
            "RequeueExitHold" => g.requeue_exit_hold = Some(parse_exit_codes(value).map_err(err)?),
            "PropagateResourceLimits" => {
                g.propagate_rlimits =
                    Some((crate::rlimits::parse_list(value).map_err(err)?, loc.clone()))
            }
            "PropagateResourceLimitsExcept" => {
                g.propagate_rlimits_except =
                    Some((crate::rlimits::parse_list(value).map_err(err)?, loc.clone()))
            }
            "HealthCheckProgram" => {
                if !value.starts_with('/') {
                    return Err(err(format!(
                        "{value:?} is not an absolute path (give the program's full path)"
                    )));
                }
                g.health_check_program = Some(value.to_string());
            }
            "HealthCheckInterval" => g.health_check_interval = Some(parse_u32(value).map_err(err)?),
            "TaskProlog" | "TaskEpilog" => {
                if !value.starts_with('/') {
                    return Err(err(format!(
                        "{value:?} is not an absolute path (give the program's full path)"
                    )));
                }
                *if canon == "TaskProlog" {
                    &mut g.task_prolog
                } else {
                    &mut g.task_epilog
                } = Some(value.to_string());
            }
            "Prolog" | "Epilog" | "EpilogSlurmctld" | "PrologSlurmctld" => {
                if !value.starts_with('/') {
                    return Err(err(format!(
                        "{value:?} is not an absolute path (give the program's full path, or a \
                         glob pattern such as /etc/gsched/{}.d/*)",
                        canon.to_ascii_lowercase()
                    )));
                }
                *match canon {
                    "Prolog" => &mut g.prolog,
                    "Epilog" => &mut g.epilog,
                    "PrologSlurmctld" => &mut g.prolog_slurmctld,
                    _ => &mut g.epilog_slurmctld,
                } = Some(value.to_string());
            }
            "PrologEpilogTimeout" => g.prolog_epilog_timeout = Some(parse_u32(value).map_err(err)?),
            "PrologFlags" => g.prolog_flags = Some(PrologFlags::parse(value).map_err(err)?),
            "JobFileAppend" => g.job_file_append = Some(parse_bool(value).map_err(err)?),
            "SlurmctldDebug" | "SlurmdDebug" => {
                let level = level_name(value).map_err(err)?;
                if canon == "SlurmctldDebug" {
                    g.daemon_logs.ctld_debug = Some(level);
                } else {
                    g.daemon_logs.slurmd_debug = Some(level);
                }
            }
            "SlurmctldLogFile" | "SlurmdLogFile" | "SlurmctldPidFile" | "SlurmdPidFile" => {
                if !value.starts_with('/') {
                    return Err(err(format!(
                        "{value:?} is not an absolute path (give the file's full path)"
                    )));
                }
                let l = &mut g.daemon_logs;
                *match canon {
                    "SlurmctldLogFile" => &mut l.ctld_log_file,
                    "SlurmdLogFile" => &mut l.slurmd_log_file,
                    "SlurmctldPidFile" => &mut l.ctld_pid_file,
                    _ => &mut l.slurmd_pid_file,
                } = Some(value.to_string());
            }
            "Licenses" => {
                let text = value.replace(' ', "");
                let list = crate::licenses::parse(&text).map_err(err)?;
                let mut seen = std::collections::HashSet::new();
                if let Some((dup, _)) = text
                    .split(',')
                    .map(|i| i.split([':', '*']).next().unwrap_or(i))
                    .map(|n| (n, ()))
                    .find(|(n, _)| !seen.insert(*n))
                {
                    return Err(err(format!("license {dup} is listed twice")));
                }
                g.licenses = Some(list);
            }
            "MaxStepCount" => g.max_step_count = Some(parse_u32(value).map_err(err)?),
            "MaxTasksPerNode" => {
                let v = parse_u32(value).map_err(err)?;
                if v == 0 || v > 65533 {
                    return Err(err("must be between 1 and 65533".to_string()));
                }
                g.max_tasks_per_node = Some(v);
            }
            "HealthCheckNodeState" => {
                g.health_check_node_state = Some(HealthCheckNodeState::parse(value).map_err(err)?)
            }
            "MaxMemPerCPU" => g.max_mem_per_cpu = Some(parse_mem_mb(value).map_err(err)?),
            "MaxMemPerNode" => g.max_mem_per_node = Some(parse_mem_mb(value).map_err(err)?),
            "DisableRootJobs" => g.disable_root_jobs = Some(parse_bool(value).map_err(err)?),
            "DefMemPerNode" => g.def_mem_per_node = Some(parse_mem_mb(value).map_err(err)?),
            "SlurmdTimeout" => g.slurmd_timeout = Some(parse_u32(value).map_err(err)?),
            "MaxJobCount" => g.max_job_count = Some(parse_u32(value).map_err(err)?.max(1)),
            "MessageTimeout" => {
                g.message_timeout = Some(parse_u32(value).map_err(err)?.clamp(1, 3600))
            }
            "GpuSampleInterval" => g.gpu_sample_interval = Some(parse_u32(value).map_err(err)?),
            "UsageHistoryDays" => {
                let d = parse_u32(value).map_err(err)?;
                if d < MIN_USAGE_HISTORY_DAYS {
                    return Err(err(format!(
                        "{d} is too short: the hourly usage is kept at least {MIN_USAGE_HISTORY_DAYS} days"
                    )));
                }
                g.usage_history_days = Some(d);
            }
            "AuthType" => {
                g.auth_type = Some(match value.to_ascii_lowercase().as_str() {
                    "auth/munge" => AuthType::Munge,
                    "auth/none" => AuthType::None,
                    _ => {
                        return Err(err(format!(
                            "invalid value \"{value}\" (expected auth/munge or auth/none)"
                        )))
                    }
                });
            }
            "AuthInfo" => g.auth_info = Some(value.to_string()),
            "SlurmUser" => g.slurm_user = Some(parse_nonempty(value).map_err(err)?),
            "PrivateData" => g.private_data = Some(PrivateData::parse(value).map_err(err)?),
            "AdminUsers" => {
                g.admin_users = Some(
                    value
                        .split(',')
                        .map(str::trim)
                        .filter(|u| !u.is_empty())
                        .map(String::from)
                        .collect(),
                );
            }
            "SchedulerType" => {
                g.scheduler_type = Some(match value.to_ascii_lowercase().as_str() {
                    "sched/backfill" => SchedulerType::Backfill,
                    "sched/builtin" => SchedulerType::Builtin,
                    _ => {
                        return Err(err(format!(
                            "unknown scheduler plugin \"{value}\"; valid names: sched/backfill, sched/builtin"
                        )))
                    }
                });
            }
            "PriorityType" => {
                g.priority.priority_type = match value.to_ascii_lowercase().as_str() {
                    "priority/basic" => PriorityType::Basic,
                    "priority/multifactor" => PriorityType::Multifactor,
                    _ => {
                        return Err(err(format!(
                            "unknown priority plugin \"{value}\"; valid names: priority/basic, priority/multifactor"
                        )))
                    }
                };
            }
            "PriorityWeightAge" => g.priority.weight_age = parse_u32(value).map_err(err)?,
            "PriorityWeightFairshare" => {
                g.priority.weight_fairshare = parse_u32(value).map_err(err)?;
            }
            "PriorityWeightJobSize" => {
                g.priority.weight_job_size = parse_u32(value).map_err(err)?;
            }
            "PriorityWeightPartition" => {
                g.priority.weight_partition = parse_u32(value).map_err(err)?;
            }
            "PriorityWeightQOS" => g.priority.weight_qos = parse_u32(value).map_err(err)?,
            "AccountingStorageEnforce" => {
                let (e, ignored) = parse_acct_enforce(value).map_err(err)?;
                for v in ignored {
                    let message = format!(
                        "{loc}: AccountingStorageEnforce value {v} is a Slurm setting gsched does not use yet; ignored"
                    );
                    self.warn(format!("enforce/{v}"), message);
                }
                self.globals.acct_enforce = e;
            }
            "PriorityMaxAge" => g.priority.max_age_secs = parse_time_secs(value).map_err(err)?,
            "PriorityDecayHalfLife" => {
                g.priority.decay_half_life_secs = parse_time_secs(value).map_err(err)?;
            }
            "PriorityFavorSmall" => g.priority.favor_small = parse_bool(value).map_err(err)?,
            "SchedulerParameters" => {
                let (params, ignored) = parse_scheduler_params(value).map_err(err)?;
                for p in ignored {
                    let message = format!(
                        "{loc}: SchedulerParameters option {p} is a Slurm setting gsched does not use yet; ignored"
                    );
                    self.warn(format!("schedparam/{p}"), message);
                }
                self.globals.scheduler_params = Some(params);
            }
            "StateSyncMode" => {
                g.state_sync = Some(match value.to_ascii_uppercase().as_str() {
                    "NORMAL" => StateSync::Normal,
                    "FULL" => StateSync::Full,
                    _ => {
                        return Err(err(format!(
                            "invalid value \"{value}\" (expected NORMAL or FULL)"
                        )))
                    }
                });
            }
            _ => {
                return Err(syntax_err(
                    loc,
                    format!(
                        "unknown key \"{key}\" (not a Slurm or gsched setting; check the spelling)"
                    ),
                ))
            }
        }
        Ok(())
    }

    fn node_line(&mut self, pairs: &[(String, String)], loc: &Loc) -> Result<(), ConfigError> {
        let mut attrs = NodeAttrs::default();
        let mut names_expr = "";
        let mut watts: Option<u32> = None;
        for (i, (key, value)) in pairs.iter().enumerate() {
            let Some(canon) = canonical(NODE_KEYS, key) else {
                if let Some(k) = canonical(IGNORED_NODE_KEYS, key) {
                    self.warn_ignored(loc, "NodeName", k);
                    continue;
                }
                return Err(syntax_err(
                    loc,
                    format!(
                        "unknown key \"{key}\" on a NodeName line (not a Slurm or gsched node setting; check the spelling)"
                    ),
                ));
            };
            let err = |m: String| value_err(loc, canon, m);
            match canon {
                "NodeName" if i == 0 => names_expr = value,
                "NodeName" => {
                    return Err(err("NodeName= must be the first key on its line".into()))
                }
                "NodeAddr" => {
                    let addrs = hostlist::expand(value).map_err(|e| err(e.to_string()))?;
                    attrs.addr = Some((addrs, loc.clone()));
                }
                "Port" => attrs.port = Some((parse_port_list(value).map_err(err)?, loc.clone())),
                "CPUs" | "Procs" => attrs.cpus = Some(parse_u32(value).map_err(err)?),
                "Boards" => attrs.boards = Some(parse_u32(value).map_err(err)?),
                "SocketsPerBoard" => attrs.sockets_per_board = Some(parse_u32(value).map_err(err)?),
                "Sockets" => attrs.sockets = Some(parse_u32(value).map_err(err)?),
                "CoresPerSocket" => attrs.cores_per_socket = Some(parse_u32(value).map_err(err)?),
                "ThreadsPerCore" => attrs.threads_per_core = Some(parse_u32(value).map_err(err)?),
                "RealMemory" => attrs.real_memory = Some(parse_u64(value).map_err(err)?),
                "Gres" => attrs.gres = Some(parse_gres(value).map_err(err)?),
                "Features" | "Feature" => attrs.features = Some(parse_features(value)),
                "State" => attrs.state = Some(parse_node_state(value).map_err(err)?),
                "Weight" => attrs.weight = Some(parse_u32(value).map_err(err)?),
                "Watts" => watts = Some(parse_u32(value).map_err(err)?),
                "GpuMemory" => {
                    attrs.gpu_memory =
                        Some(crate::units::parse_memory_mb(value).map_err(|e| err(e.to_string()))?)
                }
                _ => return Err(err(format!("invalid key \"{key}\""))),
            }
        }
        if names_expr.eq_ignore_ascii_case("DEFAULT") {
            if watts.is_some() {
                self.default_watts = watts;
            }
            self.node_defaults = attrs.over(&self.node_defaults);
            return Ok(());
        }
        let names =
            hostlist::expand(names_expr).map_err(|e| value_err(loc, "NodeName", e.to_string()))?;
        if let Some(w) = watts.or(self.default_watts) {
            for n in &names {
                self.price.node_watts.insert(n.clone(), w);
            }
        }
        let attrs = attrs.over(&self.node_defaults);
        let cpus = attrs.cpu_count().ok_or_else(|| {
            value_err(
                loc,
                "CPUs",
                "Sockets x CoresPerSocket x ThreadsPerCore is too large",
            )
        })?;
        let count = names.len();
        let per_node = |what: &str, have: usize, at: &Loc| -> Result<(), ConfigError> {
            if have == 1 || have == count {
                Ok(())
            } else {
                Err(value_err(
                    at,
                    what,
                    format!(
                        "{have} values for {count} nodes in \"{names_expr}\" (give one per node, or one for all)"
                    ),
                ))
            }
        };
        if let Some((addrs, at)) = &attrs.addr {
            per_node("NodeAddr", addrs.len(), at)?;
        }
        if let Some((ports, at)) = &attrs.port {
            per_node("Port", ports.len(), at)?;
        }
        for (i, name) in names.into_iter().enumerate() {
            if name.eq_ignore_ascii_case("DEFAULT") {
                return Err(value_err(
                    loc,
                    "NodeName",
                    "DEFAULT cannot be part of a node list",
                ));
            }
            if let Some(first) = self.node_loc.get(&name) {
                return Err(value_err(
                    loc,
                    "NodeName",
                    format!("node \"{name}\" is already defined at {first}"),
                ));
            }
            let pick = |list: &[String]| list.get(i).or(list.first()).cloned();
            let addr = attrs.addr.as_ref().and_then(|(a, _)| pick(a));
            let port = attrs
                .port
                .as_ref()
                .and_then(|(p, _)| p.get(i).or(p.first()).copied());
            self.node_loc.insert(name.clone(), loc.clone());
            self.nodes.push(NodeConfig {
                name,
                addr,
                port,
                cpus,
                real_memory_mb: attrs.real_memory.unwrap_or(1),
                gres: attrs.gres.clone().unwrap_or_default(),
                features: attrs.features.clone().unwrap_or_default(),
                state: attrs.state.unwrap_or(ConfiguredNodeState::Unknown),
                weight: attrs.weight.unwrap_or(1),
                gpu_memory_mb: attrs.gpu_memory.unwrap_or(0),
            });
        }
        Ok(())
    }

    fn partition_line(&mut self, pairs: &[(String, String)], loc: &Loc) -> Result<(), ConfigError> {
        let mut attrs = PartAttrs::default();
        let mut name = "";
        for (i, (key, value)) in pairs.iter().enumerate() {
            let Some(canon) = canonical(PARTITION_KEYS, key) else {
                if let Some(k) = canonical(IGNORED_PARTITION_KEYS, key) {
                    self.warn_ignored(loc, "PartitionName", k);
                    continue;
                }
                return Err(syntax_err(
                    loc,
                    format!(
                        "unknown key \"{key}\" on a PartitionName line (not a Slurm or gsched partition setting; check the spelling)"
                    ),
                ));
            };
            let err = |m: String| value_err(loc, canon, m);
            match canon {
                "PartitionName" if i == 0 => name = value,
                "PartitionName" => {
                    return Err(err(
                        "PartitionName= must be the first key on its line".into()
                    ))
                }
                canon => attrs.set(canon, value, loc).map_err(err)?,
            }
        }
        if name.eq_ignore_ascii_case("DEFAULT") {
            self.part_defaults = attrs.over(&self.part_defaults);
            return Ok(());
        }
        if name.is_empty()
            || name
                .chars()
                .any(|c| c.is_whitespace() || matches!(c, ',' | '[' | ']' | '=' | '"'))
        {
            return Err(value_err(
                loc,
                "PartitionName",
                format!(
                    "invalid value \"{name}\" (expected a name without spaces, commas or brackets)"
                ),
            ));
        }
        if let Some((_, _, first)) = self.partitions.iter().find(|(n, _, _)| n == name) {
            return Err(value_err(
                loc,
                "PartitionName",
                format!("partition \"{name}\" is already defined at {first}"),
            ));
        }
        let attrs = attrs.over(&self.part_defaults);
        self.partitions.push((name.to_string(), attrs, loc.clone()));
        Ok(())
    }

    fn finish(mut self) -> Result<Config, ConfigError> {
        let root = self.root.clone();
        let g = std::mem::take(&mut self.globals);
        let propagate_rlimits: Vec<String> =
            match (&g.propagate_rlimits, &g.propagate_rlimits_except) {
                (Some(_), Some((_, at))) => {
                    return Err(value_err(
                        at,
                        "PropagateResourceLimitsExcept",
                        "PropagateResourceLimits is set too; give one of the two",
                    ))
                }
                (Some((list, _)), None) => list.iter().map(|n| n.to_string()).collect(),
                (None, Some((except, _))) => crate::rlimits::NAMES
                    .iter()
                    .filter(|n| !except.contains(n))
                    .map(|n| n.to_string())
                    .collect(),
                (None, None) => crate::rlimits::NAMES
                    .iter()
                    .map(|n| n.to_string())
                    .collect(),
            };
        let ctld_host = match (g.ctld_host, g.control_machine, g.control_addr) {
            (Some(_), Some((_, at)), _) => {
                return Err(value_err(
                    &at,
                    "ControlMachine",
                    "cannot be combined with SlurmctldHost (ControlMachine is the old name; keep only SlurmctldHost)",
                ))
            }
            (Some(_), None, Some((_, at))) => {
                return Err(value_err(
                    &at,
                    "ControlAddr",
                    "cannot be combined with SlurmctldHost (write SlurmctldHost=name(address) instead)",
                ))
            }
            (Some((host, _)), None, None) => host,
            (None, Some((name, _)), addr) => CtldHost {
                name,
                addr: addr.map(|(a, _)| a),
            },
            (None, None, Some((_, at))) => {
                return Err(value_err(
                    &at,
                    "ControlAddr",
                    "needs ControlMachine (better: write SlurmctldHost=name(address))",
                ))
            }
            (None, None, None) => {
                return Err(ConfigError::Missing {
                    file: root,
                    key: "SlurmctldHost".to_string(),
                    message: "missing (set SlurmctldHost=<host name> or SlurmctldHost=<host name>(<address>))".to_string(),
                })
            }
        };

        let all_nodes: Vec<String> = self.nodes.iter().map(|n| n.name.clone()).collect();
        let mut partitions = Vec::with_capacity(self.partitions.len());
        let mut default_locs = Vec::new();
        for (name, attrs, loc) in std::mem::take(&mut self.partitions) {
            let nodes = match &attrs.nodes {
                None => Vec::new(),
                Some((expr, _)) if expr.is_empty() => Vec::new(),
                Some((expr, _)) if expr.eq_ignore_ascii_case("ALL") => all_nodes.clone(),
                Some((expr, at)) => {
                    let listed = hostlist::expand(expr)
                        .map_err(|e| value_err(at, "Nodes", e.to_string()))?;
                    let mut seen = HashSet::new();
                    let mut nodes = Vec::with_capacity(listed.len());
                    for n in listed {
                        if !self.node_loc.contains_key(&n) {
                            return Err(value_err(
                                at,
                                "Nodes",
                                format!("node \"{n}\" of partition {name} is not defined by any NodeName line"),
                            ));
                        }
                        if seen.insert(n.clone()) {
                            nodes.push(n);
                        }
                    }
                    nodes
                }
            };
            let default = attrs.default.unwrap_or(false);
            if default {
                default_locs.push((partitions.len(), loc.clone()));
            }
            partitions.push(PartitionConfig {
                name,
                nodes,
                default,
                max_time: attrs.max_time.unwrap_or(None),
                default_time: attrs.default_time.unwrap_or(None),
                state: attrs.state.unwrap_or(PartitionState::Up),
                access: PartitionAccess {
                    allow_accounts: attrs.allow_accounts.unwrap_or(None),
                    deny_accounts: attrs.deny_accounts.unwrap_or(None),
                    allow_qos: attrs.allow_qos.unwrap_or(None),
                    deny_qos: attrs.deny_qos.unwrap_or(None),
                    allow_groups: attrs.allow_groups.unwrap_or(None),
                },
                hidden: attrs.hidden.unwrap_or(false),
                def_mem: per_cpu_or_node(attrs.def_mem_per_cpu, attrs.def_mem_per_node),
                over_time_limit: attrs.over_time_limit,
                disable_root_jobs: attrs.disable_root_jobs,
                max_mem: per_cpu_or_node(attrs.max_mem_per_cpu, attrs.max_mem_per_node),
                ladder: attrs.ladder,
                gpu_multiuser: attrs.gpu_multiuser.unwrap_or(false),
                gpu_compute_pct: attrs.gpu_compute_pct.unwrap_or(100),
            });
        }
        if let Some(((last, last_loc), earlier)) = default_locs.split_last() {
            for (i, _) in earlier {
                if let Some(p) = partitions.get_mut(*i) {
                    p.default = false;
                }
            }
            if !earlier.is_empty() {
                let name = partitions.get(*last).map_or("", |p| p.name.as_str());
                let message = format!(
                    "{last_loc}: Default: several partitions have Default=YES; the last one ({name}) is the default"
                );
                self.warn("several-defaults".to_string(), message);
            }
        }

        self.price.finish().map_err(|m| ConfigError::Missing {
            file: root.clone(),
            key: "LongJobThreshold".into(),
            message: m,
        })?;
        if let Some(f) = self.price.price_file.clone() {
            // Relative to the config file, like Include; checked now so a bad file fails at
            // start-up with its line (gsctld re-reads it when it changes).
            let f = root.parent().unwrap_or(Path::new("")).join(f);
            crate::price_conf::PriceFile::load(&f, self.price.price_file_unit, &self.price.tz())
                .map_err(|e| ConfigError::Syntax {
                    file: e.file,
                    line: e.line,
                    message: format!("PriceFile: {}", e.message),
                })?;
            self.price.price_file = Some(f);
        }
        Ok(Config {
            path: root,
            cluster_name: g.cluster_name.unwrap_or_else(|| "cluster".to_string()),
            ctld_host,
            ctld_port: g.ctld_port.unwrap_or(6817),
            slurmd_port: g.slurmd_port.unwrap_or(6818),
            state_save_location: PathBuf::from(
                g.state_save_location
                    .unwrap_or_else(|| "/var/spool/gsched/ctld".to_string()),
            ),
            slurmd_spool_dir: g
                .slurmd_spool_dir
                .unwrap_or_else(|| "/var/spool/gsched/d".to_string()),
            kill_wait: g.kill_wait.unwrap_or(30),
            min_job_age: g.min_job_age.unwrap_or(300),
            max_array_size: g.max_array_size.unwrap_or(DEFAULT_MAX_ARRAY_SIZE),
            first_job_id: g.first_job_id.unwrap_or(1),
            def_cpu_per_gpu: g.def_cpu_per_gpu.filter(|&c| c > 0),
            def_mem_per_gpu_mb: g.def_mem_per_gpu.filter(|&m| m > 0),
            def_mem: per_cpu_or_node(g.def_mem_per_cpu, g.def_mem_per_node),
            max_mem: per_cpu_or_node(g.max_mem_per_cpu, g.max_mem_per_node),
            over_time_limit: g.over_time_limit.unwrap_or(Some(0)),
            requeue_exit: g.requeue_exit.unwrap_or_default(),
            requeue_exit_hold: g.requeue_exit_hold.unwrap_or_default(),
            propagate_rlimits,
            health_check_program: g.health_check_program,
            health_check_interval: g.health_check_interval.unwrap_or(0),
            health_check_node_state: g.health_check_node_state.unwrap_or_default(),
            prolog: g.prolog,
            epilog: g.epilog,
            epilog_slurmctld: g.epilog_slurmctld,
            prolog_slurmctld: g.prolog_slurmctld,
            task_prolog: g.task_prolog,
            task_epilog: g.task_epilog,
            // Slurm's "wait indefinitely" is 65534 (NO_VAL16) or unset.
            prolog_epilog_timeout: g.prolog_epilog_timeout.filter(|&t| t < 65534),
            prolog_flags: g.prolog_flags.unwrap_or_default(),
            job_file_append: g.job_file_append.unwrap_or(false),
            max_step_count: g.max_step_count.unwrap_or(DEFAULT_MAX_STEP_COUNT),
            max_tasks_per_node: g.max_tasks_per_node.unwrap_or(DEFAULT_MAX_TASKS_PER_NODE),
            licenses: g.licenses.unwrap_or_default(),
            daemon_logs: g.daemon_logs,
            disable_root_jobs: g.disable_root_jobs.unwrap_or(false),
            slurmd_timeout: g.slurmd_timeout.unwrap_or(300),
            max_job_count: g.max_job_count.unwrap_or(DEFAULT_MAX_JOB_COUNT),
            message_timeout: g.message_timeout.unwrap_or(10),
            gpu_sample_interval: g.gpu_sample_interval.unwrap_or(30),
            usage_history_days: g.usage_history_days.unwrap_or(MIN_USAGE_HISTORY_DAYS),
            auth_type: g.auth_type.unwrap_or(AuthType::Munge),
            auth_info: g.auth_info,
            slurm_user: g.slurm_user.unwrap_or_else(|| "root".to_string()),
            private_data: g.private_data.unwrap_or_default(),
            admin_users: g.admin_users.unwrap_or_default(),
            state_sync: g.state_sync.unwrap_or(StateSync::Normal),
            scheduler: SchedulerConfig {
                scheduler_type: g.scheduler_type.unwrap_or(SchedulerType::Backfill),
                params: g.scheduler_params.unwrap_or_default(),
            },
            priority: g.priority,
            acct_enforce: g.acct_enforce,
            nodes: self.nodes,
            partitions,
            notify: self.notify,
            invalid_jobs: self.invalid_jobs,
            lifecycle: self.lifecycle,
            price: self.price,
            warnings: self.warnings,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATH: &str = "/etc/gsched/gsched.conf";

    fn parse(text: &str) -> Config {
        match Config::parse(text, Path::new(PATH)) {
            Ok(c) => c,
            Err(e) => panic!("parse failed: {e}\n{text}"),
        }
    }

    fn parse_err(text: &str) -> String {
        match Config::parse(text, Path::new(PATH)) {
            Ok(c) => panic!("should fail:\n{text}\ngot {c:?}"),
            Err(e) => e.to_string(),
        }
    }

    const MIN: &str = "SlurmctldHost=head\n";

    #[test]
    fn propagated_resource_limits() {
        let all: Vec<String> = crate::rlimits::NAMES
            .iter()
            .map(|n| n.to_string())
            .collect();
        assert_eq!(parse(MIN).propagate_rlimits, all);
        let c = parse(&format!("{MIN}PropagateResourceLimits=NOFILE,CORE\n"));
        assert_eq!(c.propagate_rlimits, vec!["CORE", "NOFILE"]);
        let c = parse(&format!("{MIN}PropagateResourceLimitsExcept=MEMLOCK\n"));
        assert_eq!(c.propagate_rlimits.len(), 9);
        assert!(!c.propagate_rlimits.contains(&"MEMLOCK".to_string()));
        assert!(parse(&format!("{MIN}PropagateResourceLimits=NONE\n"))
            .propagate_rlimits
            .is_empty());
        assert!(parse_err(&format!(
            "{MIN}PropagateResourceLimits=ALL\nPropagateResourceLimitsExcept=CORE\n"
        ))
        .contains("give one of the two"));
        assert!(parse_err(&format!("{MIN}PropagateResourceLimits=FOO\n")).contains("Bad rlimit"));
    }

    #[test]
    fn requeue_exit_codes() {
        let c = parse(&format!(
            "{MIN}RequeueExit=18,1-3,2\nRequeueExitHold=100-101\n"
        ));
        assert_eq!(c.requeue_exit, vec![1, 2, 3, 18]);
        assert_eq!(c.requeue_exit_hold, vec![100, 101]);
        assert!(parse(MIN).requeue_exit.is_empty());
        for bad in ["256", "3-1", "x", "-1"] {
            assert!(
                parse_err(&format!("{MIN}RequeueExit={bad}\n")).contains("RequeueExit"),
                "{bad}"
            );
        }
    }

    #[test]
    fn prolog_epilog_and_their_flags() {
        let c = parse(&format!(
            "{MIN}Prolog=/etc/gsched/prolog.d/*\nEpilog=/usr/sbin/epilog\n\
             TaskProlog=/usr/sbin/task-prolog\n\
             PrologEpilogTimeout=65534\nPrologFlags=serial\n\
             SchedulerParameters=nohold_on_prolog_fail\n"
        ));
        assert_eq!(c.prolog.as_deref(), Some("/etc/gsched/prolog.d/*"));
        assert_eq!(c.task_prolog.as_deref(), Some("/usr/sbin/task-prolog"));
        assert_eq!(c.task_epilog, None);
        assert_eq!(c.epilog.as_deref(), Some("/usr/sbin/epilog"));
        assert_eq!(
            c.prolog_epilog_timeout, None,
            "65534 is Slurm's 'indefinitely'"
        );
        assert!(c.prolog_flags.serial);
        assert!(c.scheduler.params.nohold_on_prolog_fail);
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
        let c = parse(&format!(
            "{MIN}PrologEpilogTimeout=30\nJobFileAppend=1\nMaxStepCount=9\nMaxTasksPerNode=4\n"
        ));
        assert!(c.job_file_append);
        assert_eq!((c.max_step_count, c.max_tasks_per_node), (9, 4));
        let d = parse(MIN);
        assert!(!d.job_file_append);
        assert_eq!((d.max_step_count, d.max_tasks_per_node), (40_000, 512));
        assert!(parse_err(&format!("{MIN}MaxTasksPerNode=0\n")).contains("between 1"));
        let l = parse(&format!("{MIN}Licenses=matlab:5,fluent\n"));
        assert_eq!(l.licenses, vec![("matlab".into(), 5), ("fluent".into(), 1)]);
        assert!(parse_err(&format!("{MIN}Licenses=a:1,a:2\n")).contains("listed twice"));
        assert!(parse_err(&format!("{MIN}Licenses=a@db:1\n")).contains("remote licenses"));
        let d = parse(&format!(
            "{MIN}SlurmctldDebug=debug2\nSlurmdDebug=3\nSlurmdLogFile=/var/log/gsched/%n.log\n"
        ));
        assert_eq!(d.daemon_logs.ctld_debug.as_deref(), Some("debug2"));
        assert_eq!(d.daemon_logs.slurmd_debug.as_deref(), Some("info"));
        assert_eq!(
            d.daemon_logs.slurmd_log_file.as_deref(),
            Some("/var/log/gsched/%n.log")
        );
        assert!(parse_err(&format!("{MIN}SlurmdDebug=loud\n")).contains("unknown debug level"));
        assert!(parse_err(&format!("{MIN}SlurmctldPidFile=x.pid\n")).contains("absolute"));
        assert_eq!((c.prolog, c.prolog_epilog_timeout), (None, Some(30)));
        let e = parse_err(&format!("{MIN}PrologFlags=Serial,Contain\n"));
        assert!(e.contains("PrologFlags=Contain is not supported"), "{e}");
        assert!(parse_err(&format!("{MIN}PrologFlags=Sometimes\n")).contains("unknown"));
        assert!(parse_err(&format!("{MIN}Epilog=epilog.sh\n")).contains("absolute path"));
        let e = parse(&format!("{MIN}EpilogSlurmctld=/usr/sbin/jobstats\n"));
        assert_eq!(e.epilog_slurmctld.as_deref(), Some("/usr/sbin/jobstats"));
    }

    #[test]
    fn over_time_limit_and_disable_root_jobs() {
        let c = parse(&format!(
            "{MIN}OverTimeLimit=3\nDisableRootJobs=YES\nNodeName=n1 CPUs=2\n\
             PartitionName=a Nodes=n1\nPartitionName=b Nodes=n1 OverTimeLimit=UNLIMITED DisableRootJobs=NO\n"
        ));
        assert_eq!(c.over_time_secs("a"), Some(180));
        assert_eq!(c.over_time_secs("b"), None);
        assert!(c.root_jobs_disabled(c.partition("a").unwrap()));
        assert!(!c.root_jobs_disabled(c.partition("b").unwrap()));
        let plain = parse(&format!("{MIN}NodeName=n1\nPartitionName=a Nodes=n1\n"));
        assert_eq!(plain.over_time_secs("a"), Some(0));
        assert!(!plain.root_jobs_disabled(plain.partition("a").unwrap()));
        assert!(parse_err(&format!("{MIN}OverTimeLimit=65534\n")).contains("65533"));
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    }

    #[test]
    fn memory_defaults() {
        use crate::job::MemRequest;
        let c = parse(&format!(
            "{MIN}DefMemPerNode=500\nDefMemPerCPU=100\nNodeName=n1 CPUs=2\n\
             PartitionName=a Nodes=n1 DefMemPerNode=300\nPartitionName=b Nodes=n1\n\
             PartitionName=c Nodes=n1 DefMemPerCPU=UNLIMITED\n"
        ));
        // Per CPU wins over per node at one level, as slurmctld reads them.
        assert_eq!(c.def_mem, Some(MemRequest::PerCpu(100)));
        assert_eq!(c.max_mem, None);
        let m = parse(&format!(
            "{MIN}MaxMemPerNode=900\nNodeName=n1\nPartitionName=a Nodes=n1 MaxMemPerCPU=50\n"
        ));
        assert_eq!(m.max_mem, Some(MemRequest::PerNode(900)));
        assert_eq!(
            m.partition("a").unwrap().max_mem,
            Some(MemRequest::PerCpu(50))
        );
        assert_eq!(
            c.partition("a").unwrap().def_mem,
            Some(MemRequest::PerNode(300))
        );
        assert_eq!(c.partition("b").unwrap().def_mem, None);
        assert_eq!(c.partition("c").unwrap().def_mem, None);
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
        assert!(parse_err(&format!("{MIN}DefMemPerCPU=lots\n")).contains("DefMemPerCPU"));
    }

    #[test]
    fn allow_groups_and_hidden() {
        let c = parse(&format!(
            "{MIN}NodeName=n1 CPUs=2\nPartitionName=DEFAULT Hidden=YES\n\
             PartitionName=a Nodes=n1 AllowGroups=Staff,gpu\n\
             PartitionName=b Nodes=n1 AllowGroups=ALL Hidden=NO\n"
        ));
        let (a, b) = (c.partition("a").unwrap(), c.partition("b").unwrap());
        assert_eq!(
            a.access.allow_groups,
            Some(vec!["Staff".to_string(), "gpu".to_string()])
        );
        assert!(a.hidden && !b.hidden);
        assert_eq!(b.access.allow_groups, None);
        assert!(a.access.allows_groups(&["users".into(), "Staff".into()]));
        assert!(
            !a.access.allows_groups(&["staff".into()]),
            "group names keep their case"
        );
        assert!(b.access.allows_groups(&[]));
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
        assert!(parse_err(&format!(
            "{MIN}NodeName=n1\nPartitionName=a Nodes=n1 Hidden=maybe\n"
        ))
        .contains("Hidden"));
    }

    const REALISTIC: &str = r#"# slurm.conf file generated by configurator.html.
# Put this file on all nodes of your cluster.
ClusterName=GSCluster
SlurmctldHost=head(10.0.0.1)
#SlurmctldHost=
MpiDefault=none
ProctrackType=proctrack/cgroup
ReturnToService=1
SlurmctldPidFile=/var/run/slurmctld.pid
SlurmctldPort=6817
SlurmdPidFile=/var/run/slurmd.pid
SlurmdPort=6818
SlurmdSpoolDir=/var/spool/slurmd/%n
SlurmUser=slurm
StateSaveLocation=/var/spool/slurmctld
SwitchType=switch/none
TaskPlugin=task/affinity,task/cgroup
AuthType=auth/munge
#
# TIMERS
InactiveLimit=0
KillWait=45
MinJobAge=600
SlurmctldTimeout=120
SlurmdTimeout=200
Waittime=0
#
# SCHEDULING
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu
#
# LOGGING AND ACCOUNTING
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherFrequency=30
JobAcctGatherType=jobacct_gather/none
SlurmctldDebug=info
SlurmctldLogFile=/var/log/slurmctld.log
SlurmdDebug=info
SlurmdLogFile=/var/log/slurmd.log
#
# COMPUTE NODES
NodeName=n[01-04] CPUs=8 RealMemory=16000 State=UNKNOWN
NodeName=gpu[1-2] NodeAddr=10.0.1.[1-2] Sockets=2 CoresPerSocket=16 ThreadsPerCore=2 \
    RealMemory=512000 Gres=gpu:a100:4,mps:400 Features=a100,nvlink Weight=10
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes=gpu[1-2] MaxTime=2-00:00:00 DefaultTime=1:00:00
"#;

    #[test]
    fn realistic_config() {
        let c = parse(REALISTIC);
        assert_eq!(c.cluster_name, "gscluster");
        assert_eq!(
            c.ctld_host,
            CtldHost {
                name: "head".into(),
                addr: Some("10.0.0.1".into())
            }
        );
        assert_eq!(c.ctld_host.connect_addr(), "10.0.0.1");
        assert_eq!(c.ctld_host.to_string(), "head(10.0.0.1)");
        assert_eq!((c.ctld_port, c.slurmd_port), (6817, 6818));
        assert_eq!(c.state_save_location, PathBuf::from("/var/spool/slurmctld"));
        assert_eq!(
            c.spool_dir_for("n01"),
            PathBuf::from("/var/spool/slurmd/n01")
        );
        assert_eq!(
            (c.kill_wait, c.min_job_age, c.slurmd_timeout),
            (45, 600, 200)
        );
        assert_eq!(c.max_array_size, DEFAULT_MAX_ARRAY_SIZE);
        assert_eq!(c.auth_type, AuthType::Munge);
        assert_eq!(c.slurm_user, "slurm");
        let names: Vec<&str> = c.nodes.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["n01", "n02", "n03", "n04", "gpu1", "gpu2"]);
        let n1 = c.node("n01").cloned();
        assert_eq!(
            n1,
            Some(NodeConfig {
                name: "n01".into(),
                addr: None,
                port: None,
                cpus: 8,
                real_memory_mb: 16000,
                gres: vec![],
                features: vec![],
                state: ConfiguredNodeState::Unknown,
                weight: 1,
                gpu_memory_mb: 0,
            })
        );
        let g2 = c.node("gpu2").cloned();
        assert_eq!(
            g2,
            Some(NodeConfig {
                name: "gpu2".into(),
                addr: Some("10.0.1.2".into()),
                port: None,
                cpus: 64,
                real_memory_mb: 512000,
                gres: vec![
                    GresConfig {
                        name: "gpu".into(),
                        gtype: Some("a100".into()),
                        count: 4
                    },
                    GresConfig {
                        name: "mps".into(),
                        gtype: None,
                        count: 400
                    },
                ],
                features: vec!["a100".into(), "nvlink".into()],
                state: ConfiguredNodeState::Unknown,
                weight: 10,
                gpu_memory_mb: 0,
            })
        );
        assert_eq!(c.node_addr("gpu1"), Some("10.0.1.1"));
        assert_eq!(c.node_addr("n03"), Some("n03"));
        assert_eq!(c.node_addr("nope"), None);
        assert_eq!(c.node_port("n03"), 6818);
        assert_eq!(c.partitions.len(), 2);
        let debug = &c.partitions[0];
        assert_eq!(debug.nodes.len(), 6);
        assert!(debug.default);
        assert_eq!(debug.max_time, None);
        assert_eq!(debug.default_time, None);
        assert_eq!(debug.state, PartitionState::Up);
        let gpu = c.partition("gpu").cloned();
        assert_eq!(
            gpu,
            Some(PartitionConfig {
                name: "gpu".into(),
                nodes: vec!["gpu1".into(), "gpu2".into()],
                default: false,
                max_time: Some(2880),
                default_time: Some(60),
                state: PartitionState::Up,
                access: PartitionAccess::default(),
                hidden: false,
                def_mem: None,
                over_time_limit: None,
                disable_root_jobs: None,
                max_mem: None,
                ladder: Default::default(),
                gpu_multiuser: false,
                gpu_compute_pct: 100,
            })
        );
        assert_eq!(
            c.default_partition().map(|p| p.name.as_str()),
            Some("debug")
        );
        // One warning per ignored key, with file and line.
        assert!(c.warnings.contains(&format!(
            "{PATH}:30: SelectType is a Slurm setting gsched does not use yet; ignored"
        )));
        // SlurmctldDebug is read now (the daemons' level): no warning.
        assert_eq!(
            c.warnings
                .iter()
                .filter(|w| w.contains("SlurmctldDebug"))
                .count(),
            0
        );
        assert_eq!(c.daemon_logs.ctld_debug.as_deref(), Some("info"));
        assert_eq!(c.warnings.len(), 14, "{:#?}", c.warnings);
    }

    #[test]
    fn priority_settings() {
        let c = parse(MIN);
        assert_eq!(c.priority, PriorityConfig::default());
        assert_eq!(c.priority.priority_type, PriorityType::Basic);
        assert_eq!(c.priority.max_age_secs, 7 * 86_400);
        assert_eq!(c.priority.decay_half_life_secs, 7 * 86_400);
        let c = parse(&format!(
            "{MIN}PriorityType=priority/multifactor\nPriorityWeightAge=1000\nPriorityWeightFairshare=10000\n\
             PriorityWeightJobSize=500\nPriorityWeightPartition=200\nPriorityWeightQOS=300\n\
             PriorityMaxAge=1-0\nPriorityDecayHalfLife=2:00:00\nPriorityFavorSmall=YES\n"
        ));
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
        assert_eq!(
            c.priority,
            PriorityConfig {
                priority_type: PriorityType::Multifactor,
                weight_age: 1000,
                weight_fairshare: 10_000,
                weight_job_size: 500,
                weight_partition: 200,
                weight_qos: 300,
                max_age_secs: 86_400,
                decay_half_life_secs: 7200,
                favor_small: true,
            }
        );
        assert_eq!(c.priority.priority_type.to_string(), "priority/multifactor");
        // Minutes, as Slurm reads a bare number; 0 disables decay.
        let c = parse(&format!(
            "{MIN}PriorityDecayHalfLife=0\nPriorityMaxAge=90\n"
        ));
        assert_eq!(c.priority.decay_half_life_secs, 0);
        assert_eq!(c.priority.max_age_secs, 5400);
        let e = parse_err(&format!("{MIN}PriorityType=priority/fancy\n"));
        assert!(
            e.contains("valid names: priority/basic, priority/multifactor"),
            "{e}"
        );
        let e = parse_err(&format!("{MIN}PriorityWeightAge=-5\n"));
        assert!(e.contains("PriorityWeightAge"), "{e}");
        let e = parse_err(&format!("{MIN}PriorityMaxAge=forever\n"));
        assert!(e.contains("PriorityMaxAge"), "{e}");
        let e = parse_err(&format!("{MIN}PriorityFavorSmall=maybe\n"));
        assert!(e.contains("expected YES or NO"), "{e}");
        // Still-ignored priority keys only warn.
        let c = parse(&format!("{MIN}PriorityFlags=SMALL_RELATIVE_TO_TIME\n"));
        assert!(c.warnings.iter().any(|w| w.contains("PriorityFlags")));
    }

    #[test]
    fn gpu_keys() {
        let c = parse(&format!(
            "{MIN}DefCpuPerGPU=4\nDefMemPerGPU=2048\nNodeName=g1 CPUs=8 Gres=gpu:a100:2 GpuMemory=80G\nPartitionName=gpu Nodes=g1 GpuSharing=multiuser\nPartitionName=one Nodes=g1 GpuSharing=USER\n"
        ));
        assert_eq!(
            (c.def_cpu_per_gpu, c.def_mem_per_gpu_mb),
            (Some(4), Some(2048))
        );
        assert_eq!(c.node("g1").unwrap().gpu_memory_mb, 80 * 1024);
        assert!(c.partition("gpu").unwrap().gpu_multiuser);
        assert!(!c.partition("one").unwrap().gpu_multiuser);
        assert_eq!(c.partition("one").unwrap().gpu_compute_pct, 100);
        let e = parse_err(&format!(
            "{MIN}NodeName=g1 CPUs=8\nPartitionName=p Nodes=g1 GpuSharing=all\n"
        ));
        assert!(e.contains("expected user or multiuser"), "{e}");
        let over = |v: &str| {
            parse(&format!(
                "{MIN}NodeName=g1 CPUs=8\nPartitionName=DEFAULT GpuOverSubscribe={v}\nPartitionName=p Nodes=g1\n"
            ))
            .partition("p")
            .unwrap()
            .gpu_compute_pct
        };
        assert_eq!(
            (over("2"), over("1.5"), over("1.25"), over("4")),
            (200, 150, 125, 400)
        );
        for bad in ["0.5", "5", "2.125", "two", "", "1.", "-2"] {
            let e = parse_err(&format!(
                "{MIN}NodeName=g1 CPUs=8\nPartitionName=p Nodes=g1 GpuOverSubscribe={bad}\n"
            ));
            assert!(
                e.contains("GpuOverSubscribe") && e.contains("from 1 to 4"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn usage_history_days() {
        assert_eq!(parse(MIN).usage_history_days, 14);
        let c = parse(&format!("{MIN}UsageHistoryDays=30\n"));
        assert_eq!(c.usage_history_days, 30);
        let e = parse_err(&format!("{MIN}UsageHistoryDays=7\n"));
        assert!(e.contains("UsageHistoryDays: 7 is too short"), "{e}");
        let e = parse_err(&format!("{MIN}UsageHistoryDays=two\n"));
        assert!(e.contains("UsageHistoryDays"), "{e}");
    }

    #[test]
    fn scheduler_settings() {
        let c = parse(MIN);
        assert_eq!(c.scheduler.scheduler_type, SchedulerType::Backfill);
        assert_eq!(c.scheduler.params, SchedulerParams::default());
        let c = parse(&format!(
            "{MIN}SchedulerType=sched/builtin\nSchedulerParameters=bf_policy=conservative,bf_window=60,bf_max_job_test=500,bf_continue\n"
        ));
        assert_eq!(c.scheduler.scheduler_type, SchedulerType::Builtin);
        assert_eq!(c.scheduler.params.bf_policy, BackfillPolicy::Conservative);
        assert_eq!(c.scheduler.params.bf_window_min, Some(60));
        assert_eq!(c.scheduler.params.bf_max_job_test, Some(500));
        assert!(
            c.warnings.iter().any(|w| w.contains("bf_continue")),
            "{:?}",
            c.warnings
        );
        let c = Config::parse(&format!("{MIN}MaxArraySize=20001\n"), Path::new(PATH)).unwrap();
        assert_eq!(c.max_array_size, 20001);
        let e = Config::parse(&format!("{MIN}SchedulerType=sched/wiki\n"), Path::new(PATH))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("valid names: sched/backfill, sched/builtin"),
            "{e}"
        );
        let e = Config::parse(
            &format!("{MIN}SchedulerParameters=bf_policy=greedy\n"),
            Path::new(PATH),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("bf_policy= must be easy or conservative"), "{e}");
        // sched_min_interval: microseconds between passes (gsched's default 10 ms; 0: none).
        let d = SchedulerParams::default();
        assert_eq!(
            d.sched_min_interval(),
            std::time::Duration::from_micros(u64::from(DEFAULT_SCHED_MIN_INTERVAL_US))
        );
        for (v, us) in [("0", 0), ("2", 2), ("2000000", 2_000_000)] {
            let c = parse(&format!(
                "{MIN}SchedulerParameters=sched_min_interval={v}\n"
            ));
            assert_eq!(
                c.scheduler.params.sched_min_interval(),
                std::time::Duration::from_micros(us)
            );
            assert!(
                c.warnings.iter().all(|w| !w.contains("sched_min_interval")),
                "{:?}",
                c.warnings
            );
        }
        let e = parse_err(&format!(
            "{MIN}SchedulerParameters=sched_min_interval=5ms\n"
        ));
        assert!(
            e.contains("sched_min_interval= needs a whole number"),
            "{e}"
        );
    }

    #[test]
    fn first_job_id() {
        assert_eq!(parse(MIN).first_job_id, 1);
        let c = parse(&format!("{MIN}FirstJobId=1000\n"));
        assert_eq!(c.first_job_id, 1000);
        assert!(
            c.warnings.iter().all(|w| !w.contains("FirstJobId")),
            "{:?}",
            c.warnings
        );
        let e = parse_err(&format!("{MIN}FirstJobId=0\n"));
        assert!(
            e.contains("FirstJobId") && e.contains("larger than 0"),
            "{e}"
        );
        let e = parse_err(&format!("{MIN}FirstJobId=abc\n"));
        assert!(e.contains("FirstJobId"), "{e}");
    }

    #[test]
    fn defaults() {
        let c = parse(MIN);
        assert_eq!(c.cluster_name, "cluster");
        assert_eq!(c.ctld_host.connect_addr(), "head");
        assert_eq!(c.ctld_host.to_string(), "head");
        assert_eq!((c.ctld_port, c.slurmd_port), (6817, 6818));
        assert_eq!(
            c.state_save_location,
            PathBuf::from("/var/spool/gsched/ctld")
        );
        assert_eq!(c.slurmd_spool_dir, "/var/spool/gsched/d");
        assert_eq!(c.spool_dir_for("x"), PathBuf::from("/var/spool/gsched/d"));
        assert_eq!(
            (c.kill_wait, c.min_job_age, c.slurmd_timeout),
            (30, 300, 300)
        );
        assert_eq!(c.auth_type, AuthType::Munge);
        assert_eq!(c.auth_info, None);
        assert_eq!(c.slurm_user, "root");
        assert!(c.nodes.is_empty());
        assert!(c.partitions.is_empty());
        assert!(c.warnings.is_empty());
        assert_eq!(c.default_partition(), None);
        assert_eq!(c.path, PathBuf::from(PATH));
    }

    #[test]
    fn node_defaults() {
        let c = parse(&format!(
            "{MIN}NodeName=DEFAULT CPUs=4 RealMemory=1000 State=IDLE\n\
             NodeName=a[1-2]\n\
             NodeName=DEFAULT RealMemory=2000 Gres=gpu:2\n\
             NodeName=b1 CPUs=16\n\
             NodeName=b2 Gres= State=DOWN\n"
        ));
        let summary: Vec<(&str, u32, u64, usize, ConfiguredNodeState)> = c
            .nodes
            .iter()
            .map(|n| {
                (
                    n.name.as_str(),
                    n.cpus,
                    n.real_memory_mb,
                    n.gres.len(),
                    n.state,
                )
            })
            .collect();
        use ConfiguredNodeState::*;
        assert_eq!(
            summary,
            [
                ("a1", 4, 1000, 0, Idle),
                ("a2", 4, 1000, 0, Idle),
                ("b1", 16, 2000, 1, Idle),
                ("b2", 4, 2000, 0, Down),
            ]
        );
        let plain = parse(&format!("{MIN}NodeName=x\n"));
        let x = &plain.nodes[0];
        assert_eq!(
            (x.cpus, x.real_memory_mb, x.weight, x.state),
            (1, 1, 1, Unknown)
        );
    }

    #[test]
    fn partition_defaults() {
        let c = parse(&format!(
            "{MIN}NodeName=n[1-3]\n\
             PartitionName=DEFAULT Nodes=n[1-2] MaxTime=60 State=DOWN\n\
             PartitionName=a\n\
             PartitionName=b Nodes=n3 State=UP DefaultTime=NONE\n\
             PartitionName=c Nodes= MaxTime=UNLIMITED DefaultTime=30 Default=yes\n"
        ));
        type Row<'a> = (
            &'a str,
            Vec<&'a str>,
            Option<u32>,
            Option<u32>,
            PartitionState,
            bool,
        );
        let p: Vec<Row<'_>> = c
            .partitions
            .iter()
            .map(|p| {
                (
                    p.name.as_str(),
                    p.nodes.iter().map(String::as_str).collect(),
                    p.max_time,
                    p.default_time,
                    p.state,
                    p.default,
                )
            })
            .collect();
        use PartitionState::*;
        assert_eq!(
            p,
            [
                ("a", vec!["n1", "n2"], Some(60), None, Down, false),
                ("b", vec!["n3"], Some(60), None, Up, false),
                ("c", vec![], None, Some(30), Down, true),
            ]
        );
        assert_eq!(c.default_partition().map(|p| p.name.as_str()), Some("c"));
    }

    #[test]
    fn first_partition_is_default_without_default_yes() {
        let c = parse(&format!("{MIN}PartitionName=x\nPartitionName=y\n"));
        assert_eq!(c.default_partition().map(|p| p.name.as_str()), Some("x"));
    }

    #[test]
    fn last_default_yes_wins() {
        let c = parse(&format!(
            "{MIN}PartitionName=x Default=YES\nPartitionName=y Default=YES\n"
        ));
        assert_eq!(c.default_partition().map(|p| p.name.as_str()), Some("y"));
        assert_eq!(c.partitions.iter().filter(|p| p.default).count(), 1);
        assert_eq!(
            c.warnings,
            [format!("{PATH}:3: Default: several partitions have Default=YES; the last one (y) is the default")]
        );
    }

    #[test]
    fn partition_node_list_is_deduplicated_and_checked() {
        let c = parse(&format!(
            "{MIN}NodeName=n[1-3]\nPartitionName=p Nodes=n[1-2],n1,n3\n"
        ));
        assert_eq!(c.partitions[0].nodes, ["n1", "n2", "n3"]);
        // Partitions may come before the nodes they use.
        let c = parse(&format!(
            "{MIN}PartitionName=p Nodes=n[1-2]\nNodeName=n[1-2]\n"
        ));
        assert_eq!(c.partitions[0].nodes, ["n1", "n2"]);
    }

    #[test]
    fn node_addr_and_port_expand_pairwise() {
        let c = parse(&format!(
            "{MIN}NodeName=n[1-3] NodeAddr=127.0.0.1 Port=17001-17003\n\
             NodeName=m[1-2] NodeAddr=10.0.0.[1-2] Port=[18001-18002]\n\
             NodeName=k[1-2] Port=19000\n"
        ));
        let got: Vec<(&str, Option<&str>, Option<u16>)> = c
            .nodes
            .iter()
            .map(|n| (n.name.as_str(), n.addr.as_deref(), n.port))
            .collect();
        assert_eq!(
            got,
            [
                ("n1", Some("127.0.0.1"), Some(17001)),
                ("n2", Some("127.0.0.1"), Some(17002)),
                ("n3", Some("127.0.0.1"), Some(17003)),
                ("m1", Some("10.0.0.1"), Some(18001)),
                ("m2", Some("10.0.0.2"), Some(18002)),
                ("k1", None, Some(19000)),
                ("k2", None, Some(19000)),
            ]
        );
        assert_eq!(c.node_port("n2"), 17002);
        assert_eq!(c.node_addr("n2"), Some("127.0.0.1"));
        assert_eq!(c.node_port("unknown"), 6818);
    }

    #[test]
    fn cpus_from_topology() {
        let c = parse(&format!(
            "{MIN}NodeName=a Sockets=2 CoresPerSocket=8 ThreadsPerCore=2\n\
             NodeName=b CoresPerSocket=4\n\
             NodeName=c Boards=2 SocketsPerBoard=2 CoresPerSocket=3\n\
             NodeName=d CPUs=6 Sockets=2 CoresPerSocket=8\n\
             NodeName=e Procs=12\n"
        ));
        let cpus: Vec<u32> = c.nodes.iter().map(|n| n.cpus).collect();
        assert_eq!(cpus, [32, 4, 12, 6, 12]);
        assert!(parse_err(&format!(
            "{MIN}NodeName=a Sockets=65536 CoresPerSocket=65536 ThreadsPerCore=2\n"
        ))
        .contains(":2: CPUs: "));
    }

    #[test]
    fn gres_forms() {
        let g =
            |s: &str| parse_gres(s).map(|v| v.iter().map(ToString::to_string).collect::<Vec<_>>());
        assert_eq!(g("gpu"), Ok(vec!["gpu:1".to_string()]));
        assert_eq!(g("gpu:2"), Ok(vec!["gpu:2".to_string()]));
        assert_eq!(g("gpu:a100"), Ok(vec!["gpu:a100:1".to_string()]));
        assert_eq!(
            g("gpu:a100:4,mps:400"),
            Ok(vec!["gpu:a100:4".to_string(), "mps:400".to_string()])
        );
        assert_eq!(g("mps:1K"), Ok(vec!["mps:1024".to_string()]));
        assert_eq!(g("gpu:0"), Ok(vec!["gpu:0".to_string()]));
        assert_eq!(g(""), Ok(vec![]));
        assert_eq!(g("(null)"), Ok(vec![]));
        for bad in [
            "gpu:a:1:2",
            "gpu:2x",
            ":2",
            "gpu,",
            "gpu::2",
            "1gpu",
            "gpu:2(S:0-1)",
            "gpu:a100:x",
            "gpu:99999999999999999999",
            "gpu:17179869184T",
        ] {
            match g(bad) {
                Ok(v) => panic!("{bad:?} should fail, got {v:?}"),
                Err(e) => assert!(e.contains(&format!("\"{bad}\"")), "{e}"),
            }
        }
    }

    #[test]
    fn syntax_features() {
        let c = parse(
            "# comment line\n\
             \n\
             slurmctldhost=head   # trailing comment\n\
             CLUSTERNAME = \"My Cluster\"\n\
             AuthInfo=\"socket=/run/munge/munge.socket.2\"\n\
             SlurmUser=gs\\#user\n\
             NodeName=n1 \\\n\
             \x20 CPUs=4 \\\n\
             \x20 RealMemory=100\n\
             nodename=n2 cpus=2 features=\"a,b\"\r\n\
             partitionname=p nodes=n[1-2] default=YES\n\
             SlurmdPort=7000 SlurmctldPort=7001 KillWait=5\n",
        );
        assert_eq!(c.ctld_host.name, "head");
        assert_eq!(c.cluster_name, "my cluster");
        assert_eq!(
            c.auth_info.as_deref(),
            Some("socket=/run/munge/munge.socket.2")
        );
        assert_eq!(c.slurm_user, "gs#user");
        assert_eq!(c.nodes[0].cpus, 4);
        assert_eq!(c.nodes[0].real_memory_mb, 100);
        assert_eq!(c.nodes[1].features, ["a", "b"]);
        assert_eq!(c.partitions[0].nodes, ["n1", "n2"]);
        assert_eq!((c.slurmd_port, c.ctld_port, c.kill_wait), (7000, 7001, 5));
    }

    #[test]
    fn errors_after_a_continuation_report_the_first_line() {
        let e = parse_err(&format!("{MIN}NodeName=n1 \\\n CPUs=eight\n"));
        assert_eq!(
            e,
            format!("{PATH}:2: CPUs: invalid value \"eight\" (expected a whole number)")
        );
    }

    #[test]
    fn legacy_control_machine() {
        let c = parse("ControlMachine=head\nControlAddr=10.1.1.1\n");
        assert_eq!(
            c.ctld_host,
            CtldHost {
                name: "head".into(),
                addr: Some("10.1.1.1".into())
            }
        );
        let c = parse("ControlMachine=head\n");
        assert_eq!(c.ctld_host.connect_addr(), "head");
    }

    #[test]
    fn backup_controllers_warn() {
        let c = parse("SlurmctldHost=a\nSlurmctldHost=b(10.0.0.2)\n");
        assert_eq!(c.ctld_host.name, "a");
        assert_eq!(
            c.warnings,
            [format!(
                "{PATH}:2: SlurmctldHost: backup controllers are not supported yet; \"b(10.0.0.2)\" is ignored"
            )]
        );
    }

    #[test]
    fn private_data_and_admin_users() {
        let c = parse(&format!(
            "{MIN}PrivateData=Jobs,usage,jobs\nAdminUsers=alice,bob\n"
        ));
        assert!(c.private_data.jobs && !c.private_data.nodes);
        assert_eq!(c.private_data.to_string(), "jobs,usage");
        assert_eq!(c.admin_users, vec!["alice", "bob"]);
        let c = parse(MIN);
        assert_eq!(c.private_data, PrivateData::default());
        assert_eq!(c.private_data.to_string(), "none");
        assert!(c.admin_users.is_empty());
        assert_eq!(
            parse_err(&format!("{MIN}PrivateData=jobs,secrets\n")),
            format!(
                "{PATH}:2: PrivateData: unknown value \"secrets\"; valid values: \
                 accounts,cloud,events,jobs,nodes,partitions,reservations,usage,users"
            )
        );
    }

    proptest::proptest! {
        #[test]
        fn private_data_round_trips(
            vals in proptest::sample::subsequence(PRIVATE_DATA_VALUES.to_vec(), 0..=9),
            upper in proptest::bool::ANY,
        ) {
            let text = vals.join(",");
            let text = if upper { text.to_ascii_uppercase() } else { text };
            let p = PrivateData::parse(&text).unwrap();
            proptest::prop_assert_eq!(p.jobs, vals.contains(&"jobs"));
            proptest::prop_assert_eq!(p.nodes, vals.contains(&"nodes"));
            let shown = p.to_string();
            let again = PrivateData::parse(if shown == "none" { "" } else { &shown }).unwrap();
            proptest::prop_assert_eq!(again, p);
        }
    }

    #[test]
    fn auth_types() {
        let c = parse(&format!("{MIN}AuthType=auth/none\n"));
        assert_eq!(c.auth_type, AuthType::None);
        assert_eq!(c.auth_type.to_string(), "auth/none");
        assert_eq!(AuthType::Munge.to_string(), "auth/munge");
        assert_eq!(
            parse_err(&format!("{MIN}AuthType=auth/jwt\n")),
            format!(
                "{PATH}:2: AuthType: invalid value \"auth/jwt\" (expected auth/munge or auth/none)"
            )
        );
    }

    #[test]
    fn warnings_are_deduplicated() {
        let c = parse(&format!(
            "{MIN}SelectType=select/cons_tres\nselecttype=select/linear\n\
             NodeName=a Sockets=1 TmpDisk=10\nNodeName=b TmpDisk=20\n\
             PartitionName=p MaxNodes=1 OverSubscribe=NO\nPartitionName=q MaxNodes=2\n\
             DownNodes=a State=DOWN Reason=x\nDownNodes=b\n\
             KillWait=1\nKillWait=2\nKillWait=3\n"
        ));
        assert_eq!(
            c.warnings,
            [
                format!("{PATH}:2: SelectType is a Slurm setting gsched does not use yet; ignored"),
                format!("{PATH}:4: TmpDisk on NodeName lines is a Slurm setting gsched does not use yet; ignored"),
                format!("{PATH}:6: MaxNodes on PartitionName lines is a Slurm setting gsched does not use yet; ignored"),
                format!("{PATH}:6: OverSubscribe on PartitionName lines is a Slurm setting gsched does not use yet; ignored"),
                format!("{PATH}:8: DownNodes is a Slurm setting gsched does not use yet; ignored"),
                format!("{PATH}:11: KillWait is set more than once (first at {PATH}:10); the last value wins"),
            ]
        );
        assert_eq!(c.kill_wait, 3);
    }

    #[test]
    fn error_messages() {
        let cases: Vec<(String, String)> = vec![
            (format!("{MIN}NodeName=n1 CPUs=eight\n"), "2: CPUs: invalid value \"eight\" (expected a whole number)".into()),
            (format!("{MIN}NodeName=n1 CPUs=-1\n"), "2: CPUs: invalid value \"-1\" (expected a whole number)".into()),
            (format!("{MIN}NodeName=n1 CPUs=99999999999\n"), "2: CPUs: invalid value \"99999999999\" (expected a whole number up to 4294967295)".into()),
            (format!("{MIN}Foo=1\n"), "2: unknown key \"Foo\" (not a Slurm or gsched setting; check the spelling)".into()),
            (format!("{MIN}NodeName=n1 Foo=1\n"), "2: unknown key \"Foo\" on a NodeName line (not a Slurm or gsched node setting; check the spelling)".into()),
            (format!("{MIN}PartitionName=p Foo=1\n"), "2: unknown key \"Foo\" on a PartitionName line (not a Slurm or gsched partition setting; check the spelling)".into()),
            (format!("{MIN}CPUs=4\n"), "2: unknown key \"CPUs\"".into()),
            (format!("{MIN}ClusterName=x NodeName=n1\n"), "2: NodeName: NodeName= must be the first key on its line".into()),
            (format!("{MIN}NodeName=n1 NodeName=n2\n"), "2: NodeName: NodeName= must be the first key on its line".into()),
            (format!("{MIN}PartitionName=p PartitionName=q\n"), "2: PartitionName: PartitionName= must be the first key on its line".into()),
            (format!("{MIN}SlurmctldPort=6817-6818\n"), "2: SlurmctldPort: invalid value \"6817-6818\": port ranges are not supported (give one port number)".into()),
            (format!("{MIN}SlurmdPort=0\n"), "2: SlurmdPort: invalid value \"0\" (expected a port number from 1 to 65535)".into()),
            (format!("{MIN}SlurmdPort=70000\n"), "2: SlurmdPort: invalid value \"70000\"".into()),
            (format!("{MIN}SlurmdPort=+80\n"), "2: SlurmdPort: invalid value \"+80\"".into()),
            (format!("{MIN}KillWait=\n"), "2: KillWait: invalid value \"\" (expected a whole number)".into()),
            (format!("{MIN}MinJobAge=5m\n"), "2: MinJobAge: invalid value \"5m\"".into()),
            (format!("{MIN}SlurmdTimeout=x\n"), "2: SlurmdTimeout: invalid value \"x\"".into()),
            (format!("{MIN}SlurmUser=\n"), "2: SlurmUser: the value is empty".into()),
            (format!("{MIN}ClusterName=\n"), "2: ClusterName: the value is empty".into()),
            (format!("{MIN}StateSaveLocation=\n"), "2: StateSaveLocation: the value is empty".into()),
            (format!("{MIN}SlurmdSpoolDir=\n"), "2: SlurmdSpoolDir: the value is empty".into()),
            ("SlurmctldHost=\n".into(), "1: SlurmctldHost: invalid value \"\"".into()),
            ("SlurmctldHost=a(b\n".into(), "1: SlurmctldHost: invalid value \"a(b\" (expected a host name, or name(address) as in head(10.0.0.1))".into()),
            ("SlurmctldHost=(b)\n".into(), "1: SlurmctldHost: invalid value \"(b)\"".into()),
            ("SlurmctldHost=a()\n".into(), "1: SlurmctldHost: invalid value \"a()\"".into()),
            ("SlurmctldHost=a\nControlMachine=b\n".into(), "2: ControlMachine: cannot be combined with SlurmctldHost".into()),
            ("SlurmctldHost=a\nControlAddr=b\n".into(), "2: ControlAddr: cannot be combined with SlurmctldHost".into()),
            ("ControlAddr=b\n".into(), "1: ControlAddr: needs ControlMachine".into()),
            (format!("{MIN}NodeName=n[1-\n"), "2: NodeName: invalid hostlist \"n[1-\": unbalanced or nested brackets".into()),
            (format!("{MIN}NodeName=\n"), "2: NodeName: invalid hostlist \"\": the expression is empty".into()),
            (format!("{MIN}NodeName=n[5-3]\n"), "2: NodeName: invalid hostlist \"n[5-3]\": range \"5-3\" is reversed".into()),
            (format!("{MIN}NodeName=n1\nNodeName=n[0-2]\n"), format!("3: NodeName: node \"n1\" is already defined at {PATH}:2")),
            (format!("{MIN}NodeName=n[1-3] NodeAddr=10.0.0.[1-2]\n"), "2: NodeAddr: 2 values for 3 nodes in \"n[1-3]\" (give one per node, or one for all)".into()),
            (format!("{MIN}NodeName=n[1-3] Port=1-2\n"), "2: Port: 2 values for 3 nodes".into()),
            (format!("{MIN}NodeName=n1 Port=x\n"), "2: Port: invalid value \"x\" (expected a port number from 1 to 65535, or a range such as 17001-17004)".into()),
            (format!("{MIN}NodeName=n1 Port=0\n"), "2: Port: invalid value \"0\"".into()),
            (format!("{MIN}NodeName=n1 Port=65530-65540\n"), "2: Port: invalid value \"65530-65540\"".into()),
            (format!("{MIN}NodeName=n1 Port=1-99999999\n"), "2: Port: invalid value \"1-99999999\"".into()),
            (format!("{MIN}NodeName=n1 RealMemory=16G\n"), "2: RealMemory: invalid value \"16G\" (expected a whole number)".into()),
            (format!("{MIN}NodeName=n1 State=BROKEN\n"), "2: State: invalid value \"BROKEN\" (expected UNKNOWN, IDLE, DOWN, DRAIN, FUTURE or CLOUD)".into()),
            (format!("{MIN}NodeName=n1 Gres=gpu:x:y\n"), "2: Gres: invalid value \"gpu:x:y\": bad item \"gpu:x:y\"".into()),
            (format!("{MIN}NodeName=n1 Weight=heavy\n"), "2: Weight: invalid value \"heavy\"".into()),
            (format!("{MIN}NodeName=DEFAULT CPUs=x\n"), "2: CPUs: invalid value \"x\"".into()),
            (format!("{MIN}NodeName=DEFAULT,n1\n"), "2: NodeName: DEFAULT cannot be part of a node list".into()),
            (format!("{MIN}PartitionName=p State=OPEN\n"), "2: State: invalid value \"OPEN\" (expected UP, DOWN, DRAIN or INACTIVE)".into()),
            (format!("{MIN}PartitionName=p Default=maybe\n"), "2: Default: invalid value \"maybe\" (expected YES or NO)".into()),
            (format!("{MIN}PartitionName=p MaxTime=1h\n"), "2: MaxTime: invalid value \"1h\" (expected minutes, M:S, H:M:S, D-H, D-H:M, D-H:M:S, UNLIMITED or INFINITE)".into()),
            (format!("{MIN}PartitionName=p DefaultTime=x\n"), "2: DefaultTime: invalid value \"x\" (expected minutes, M:S, H:M:S, D-H, D-H:M, D-H:M:S, UNLIMITED or INFINITE or NONE)".into()),
            (format!("{MIN}PartitionName=p\nPartitionName=p\n"), format!("3: PartitionName: partition \"p\" is already defined at {PATH}:2")),
            (format!("{MIN}PartitionName=\n"), "2: PartitionName: invalid value \"\"".into()),
            (format!("{MIN}PartitionName=a,b\n"), "2: PartitionName: invalid value \"a,b\"".into()),
            (format!("{MIN}NodeName=n1\nPartitionName=p Nodes=n[1-2]\n"), "3: Nodes: node \"n2\" of partition p is not defined by any NodeName line".into()),
            (format!("{MIN}PartitionName=p Nodes=n[\n"), "2: Nodes: invalid hostlist \"n[\"".into()),
            (format!("{MIN}ClusterName=\"x\n"), "2: ClusterName: unterminated double quote in the value".into()),
            (format!("{MIN}justaword\n"), "2: expected Key=Value, found \"justaword\" (keys and values are separated by '=')".into()),
            (format!("{MIN}=value\n"), "2: expected Key=Value, found \"=value\"".into()),
            (format!("{MIN}KillWait=1 stray\n"), "2: expected Key=Value, found \"stray\"".into()),
            (format!("{MIN}Include\n"), "2: Include: no file name given".into()),
        ];
        for (text, want) in cases {
            let got = parse_err(&text);
            let want = format!("{PATH}:{want}");
            assert!(
                got.starts_with(&want),
                "\n got: {got}\nwant: {want}\ntext: {text}"
            );
        }
    }

    #[test]
    fn missing_controller() {
        assert_eq!(
            parse_err("ClusterName=x\n"),
            format!("{PATH}: SlurmctldHost: missing (set SlurmctldHost=<host name> or SlurmctldHost=<host name>(<address>))")
        );
    }

    /// The keys each settings module handles must all be in `GLOBAL_KEYS`, which is where a
    /// key is recognised (and how the man page and migration guide tests find it).
    #[test]
    fn module_key_lists_are_in_global_keys() {
        for list in [
            crate::price_conf::PRICE_GLOBAL_KEYS,
            crate::lifecycle::LIFECYCLE_KEYS,
            crate::ladder_conf::InvalidJobPolicy::GLOBAL_KEYS,
        ] {
            for k in list {
                assert_eq!(
                    canonical(GLOBAL_KEYS, k),
                    Some(*k),
                    "{k} is not in GLOBAL_KEYS"
                );
            }
        }
    }

    #[test]
    fn ignored_lists_exclude_implemented_keys() {
        for k in IGNORED_KEYS.iter().chain(IGNORED_LINE_KEYS) {
            assert!(canonical(GLOBAL_KEYS, k).is_none(), "{k}");
            assert!(
                !k.eq_ignore_ascii_case("NodeName") && !k.eq_ignore_ascii_case("PartitionName")
            );
        }
        for k in IGNORED_NODE_KEYS {
            assert!(canonical(NODE_KEYS, k).is_none(), "{k}");
        }
        for k in IGNORED_PARTITION_KEYS {
            assert!(canonical(PARTITION_KEYS, k).is_none(), "{k}");
        }
        for list in [
            IGNORED_KEYS,
            IGNORED_NODE_KEYS,
            IGNORED_PARTITION_KEYS,
            GLOBAL_KEYS,
        ] {
            let mut seen = HashSet::new();
            for k in list {
                assert!(seen.insert(k.to_ascii_lowercase()), "duplicate {k}");
            }
        }
        for required in [
            "AccountingStorageType",
            "AccountingStorageHost",
            "AccountingStoragePort",
            "AccountingStorageEnforce",
            "JobAcctGatherType",
            "JobAcctGatherFrequency",
            "JobCompType",
            "SelectType",
            "SelectTypeParameters",
            "ProctrackType",
            "TaskPlugin",
            "TaskPluginParam",
            "MpiDefault",
            "ReturnToService",
            "SwitchType",
            "PriorityType",
            "PriorityWeightAge",
            "PriorityWeightFairshare",
            "PriorityWeightJobSize",
            "PriorityWeightPartition",
            "PriorityWeightQOS",
            "PriorityMaxAge",
            "PriorityDecayHalfLife",
            "PriorityFavorSmall",
            "GresTypes",
            "MaxJobCount",
            "DefMemPerCPU",
            "DefMemPerNode",
            "MaxMemPerCPU",
            "MaxMemPerNode",
            "InactiveLimit",
            "Waittime",
            "JobRequeue",
            "SlurmctldTimeout",
            "MessageTimeout",
            "FirstJobId",
            "MailProg",
            "PluginDir",
            "Prolog",
            "Epilog",
            "PrologFlags",
            "TmpFS",
            "UsePAM",
            "CryptoType",
            "CredType",
            "LaunchParameters",
            "SlurmdParameters",
            "SlurmdUser",
            "CoreSpecPlugin",
            "TopologyPlugin",
            "PropagateResourceLimits",
            "PropagateResourceLimitsExcept",
            "HealthCheckProgram",
            "HealthCheckInterval",
            "FastSchedule",
            "OverTimeLimit",
            "KillOnBadExit",
            "SlurmctldParameters",
            "DebugFlags",
            "EnforcePartLimits",
            "JobSubmitPlugins",
            "PreemptType",
            "PreemptMode",
        ] {
            // Accepted: implemented, or ignored with a warning.
            assert!(
                canonical(IGNORED_KEYS, required).is_some()
                    || canonical(GLOBAL_KEYS, required).is_some(),
                "{required}"
            );
        }
    }

    #[test]
    fn includes() {
        let dir = match tempfile::tempdir() {
            Ok(d) => d,
            Err(e) => panic!("tempdir: {e}"),
        };
        let write = |name: &str, text: &str| {
            if let Err(e) =
                std::fs::create_dir_all(dir.path().join(name).parent().unwrap_or(dir.path()))
            {
                panic!("mkdir: {e}");
            }
            if let Err(e) = std::fs::write(dir.path().join(name), text) {
                panic!("write {name}: {e}");
            }
        };
        write(
            "gsched.conf",
            "SlurmctldHost=head\nInclude nodes.conf\ninclude \"sub/parts.conf\"\n",
        );
        write("nodes.conf", "NodeName=n[1-2] CPUs=2\nSelectType=x\n");
        write(
            "sub/parts.conf",
            "PartitionName=p Nodes=ALL\nInclude more.conf\n",
        );
        write("sub/more.conf", "KillWait=7\n");
        let main = dir.path().join("gsched.conf");
        let c = match Config::load(&main) {
            Ok(c) => c,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(c.nodes.len(), 2);
        assert_eq!(c.partitions[0].nodes, ["n1", "n2"]);
        assert_eq!(c.kill_wait, 7);
        assert_eq!(c.path, main);
        assert_eq!(
            c.warnings,
            [format!(
                "{}:2: SelectType is a Slurm setting gsched does not use yet; ignored",
                dir.path().join("nodes.conf").display()
            )]
        );

        // Errors in an included file name that file.
        write("bad.conf", "SlurmctldHost=head\n\nInclude broken.conf\n");
        write("broken.conf", "# nothing\nNodeName=n1 CPUs=x\n");
        let err = Config::load(&dir.path().join("bad.conf"))
            .map(|_| ())
            .map_err(|e| e.to_string());
        assert_eq!(
            err,
            Err(format!(
                "{}:2: CPUs: invalid value \"x\" (expected a whole number)",
                dir.path().join("broken.conf").display()
            ))
        );

        // A missing include.
        write("missing.conf", "SlurmctldHost=head\nInclude nope.conf\n");
        let err = Config::load(&dir.path().join("missing.conf"))
            .map(|_| ())
            .map_err(|e| e.to_string());
        assert_eq!(
            err,
            Err(format!(
                "{}:2: Include: cannot read {}: No such file or directory",
                dir.path().join("missing.conf").display(),
                dir.path().join("nope.conf").display()
            ))
        );

        // A file including itself.
        write("loop.conf", "SlurmctldHost=head\nInclude loop.conf\n");
        let err = Config::load(&dir.path().join("loop.conf"))
            .map(|_| ())
            .map_err(|e| e.to_string());
        assert!(
            err.as_ref()
                .is_err_and(|e| e.contains("Include: includes are nested more than 16 deep")),
            "{err:?}"
        );
    }

    #[test]
    fn missing_file() {
        let err = Config::load(Path::new("/nonexistent/x/gsched.conf"))
            .map(|_| ())
            .map_err(|e| e.to_string());
        assert_eq!(
            err,
            Err("cannot read /nonexistent/x/gsched.conf: No such file or directory (set GSCHED_CONF or pass -f/--config)".to_string())
        );
    }

    #[test]
    fn config_path_resolution() {
        let cli = Path::new("/cli.conf");
        assert_eq!(
            resolve_config_path_from(Some(cli), Some("/env.conf".into())),
            PathBuf::from("/cli.conf")
        );
        assert_eq!(
            resolve_config_path_from(None, Some("/env.conf".into())),
            PathBuf::from("/env.conf")
        );
        assert_eq!(
            resolve_config_path_from(None, Some("".into())),
            PathBuf::from(DEFAULT_CONFIG_PATH)
        );
        assert_eq!(
            resolve_config_path_from(None, None),
            PathBuf::from(DEFAULT_CONFIG_PATH)
        );
        assert_eq!(resolve_config_path(Some(cli)), PathBuf::from("/cli.conf"));
    }

    #[test]
    fn logical_line_numbers() {
        let lines = logical_lines("a=1\n# c\nb=2 \\\n  c=3\nd=\\#4 # x\n\\\n");
        assert_eq!(
            lines,
            [
                (1, "a=1".to_string()),
                (2, String::new()),
                (3, "b=2    c=3".to_string()),
                (5, "d=#4 ".to_string()),
                (6, " ".to_string()),
            ]
        );
    }

    #[test]
    fn display_names() {
        assert_eq!(ConfiguredNodeState::Drain.to_string(), "DRAIN");
        assert_eq!(PartitionState::Inactive.to_string(), "INACTIVE");
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #[test]
            fn parse_never_panics(text in "[A-Za-z=\\[\\]0-9 #\\\\\"\n,:()-]{0,120}") {
                let _ = Config::parse(&text, Path::new("x.conf"));
            }

            #[test]
            fn node_lines_never_panic(
                key in prop::sample::select(NODE_KEYS.to_vec()),
                value in "[a-z0-9\\[\\]\\-,:()]{0,20}",
            ) {
                let text = format!("SlurmctldHost=h\nNodeName=n[1-2] {key}={value}\n");
                let _ = Config::parse(&text, Path::new("x.conf"));
            }
        }
    }
}
