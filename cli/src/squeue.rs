//! `gsqueue` (`squeue`): list jobs.
//!
//! The output engine follows squeue's: `-o` takes `%[.][size]type[suffix]` fields after an
//! optional prefix (`.` right-justifies, a size pads and usually truncates, `%all` prints
//! every letter), `-O` takes `Name[:[.][size][suffix]]` (no `:` means width 20, `:` without
//! digits means width 0). Values gsched does not track print what Slurm prints for an unset
//! value (`(null)`, `N/A`, `*`, `0`).

use crate::common::{self, name_or_id, or_null, print_field, sort_by, split_list, Fail};
use crate::format;
use crate::getopt::{self, HasArg, Opt, Ordering};
use gsched_proto::api::{paths, JobFilter, JobQuery, JobsResponse};
use gsched_proto::hostlist;
use gsched_proto::job::{JobInfo, JobState, MemRequest};
use gsched_proto::units;

use HasArg::{No, Optional as Opt_, Required as Req};

pub const OPTIONS: &[Opt] = &[
    Opt::new("accounts", Some('A'), &["accounts"], Req),
    Opt::new("all", Some('a'), &["all"], No),
    Opt::new("array", Some('r'), &["array"], No),
    Opt::new("array-unique", None, &["array-unique"], No),
    Opt::new("Format", Some('O'), &["Format"], Req),
    Opt::new("format", Some('o'), &["format"], Req),
    Opt::new("federation", None, &["federation"], No),
    Opt::new("help", None, &["help"], No),
    Opt::new("hide", None, &["hide"], No),
    Opt::new("iterate", Some('i'), &["iterate"], Req),
    Opt::new("jobs", Some('j'), &["jobs"], Opt_),
    Opt::new("local", None, &["local"], No),
    Opt::new("long", Some('l'), &["long"], No),
    Opt::new("licenses", Some('L'), &["licenses"], Req),
    Opt::new("clusters", Some('M'), &["cluster", "clusters"], Req),
    Opt::new("me", None, &["me"], No),
    Opt::new("name", Some('n'), &["name"], Req),
    Opt::new("noconvert", None, &["noconvert"], No),
    Opt::new("nodelist", Some('w'), &["node", "nodes", "nodelist"], Req),
    Opt::new("noheader", Some('h'), &["noheader"], No),
    Opt::new("partitions", Some('p'), &["partitions"], Req),
    Opt::new("priority", Some('P'), &["priority"], No),
    Opt::new("qos", Some('q'), &["qos"], Req),
    Opt::new("reservation", Some('R'), &["reservation"], Req),
    Opt::new("sibling", None, &["sib", "sibling"], No),
    Opt::new("sort", Some('S'), &["sort"], Req),
    Opt::new("start", None, &["start"], No),
    Opt::new("steps", Some('s'), &["steps"], Opt_),
    Opt::new("states", Some('t'), &["states"], Req),
    Opt::new("usage", None, &["usage"], No),
    Opt::new("user", Some('u'), &["user", "users"], Req),
    Opt::new("accounts", Some('U'), &[], Req),
    Opt::new("verbose", Some('v'), &["verbose"], No),
    Opt::new("version", Some('V'), &["version"], No),
    Opt::new("json", None, &["json"], No),
    Opt::new("yaml", None, &["yaml"], No),
];

const DEFAULT_FORMAT: &str = "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R";
const LONG_FORMAT: &str = "%.18i %.9P %.8j %.8u %.8T %.10M %.9l %.6D %R";
const START_FORMAT: &str = "%.18i %.9P %.8j %.8u %.2t %.19S %.6D %20Y %R";

/// One kind of job field (an `-o` letter and/or an `-O` name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum F {
    Account,
    JobId,
    TresPerNode,
    BatchHost,
    MinCpus,
    NumCpus,
    MinTmpDisk,
    NumNodes,
    EndTime,
    Dependency,
    Features,
    ArrayJobId,
    GroupName,
    GroupId,
    OverSubscribe,
    Sockets,
    JobArrayId,
    Cores,
    Name,
    Threads,
    Comment,
    ArrayTaskId,
    TimeLimit,
    TimeLeft,
    MinMemory,
    TimeUsed,
    ReqNodes,
    NodeList,
    Command,
    Contiguous,
    Priority,
    Partition,
    Qos,
    PriorityLong,
    Reason,
    ReasonList,
    SelectJobInfo,
    StartTime,
    StateCompact,
    State,
    UserName,
    UserId,
    Reservation,
    SubmitTime,
    WcKey,
    Licenses,
    ExcNodes,
    CoreSpec,
    Nice,
    SchedNodes,
    Sct,
    WorkDir,
    // -O only
    NumTasks,
    CpusPerTask,
    EligibleTime,
    ExitCode,
    StdOut,
    StdErr,
    StdIn,
    PendingTime,
    Cluster,
    BatchFlag,
    RestartCnt,
    Requeue,
    MaxCpus,
    MaxNodes,
    MinTime,
    Deadline,
    AccrueTime,
    LastSchedEval,
    DerivedEc,
    Network,
    NtPerNode,
    AllocNodes,
    AllocSid,
    /// An unknown letter or name: prints only its suffix.
    Invalid,
    // -O only: heterogeneous jobs.
    HetJobId,
    HetJobOffset,
    HetJobIdSet,
    // -O only: TRES.
    TresAlloc,
    TresPerJob,
    TresPerTask,
    CpusPerTres,
    MemPerTres,
    /// A field gsched has no value for: its header and what squeue prints when unset.
    Fixed(&'static str, &'static str),
}

/// Letter table for `-o`.
const LETTERS: &[(char, F)] = &[
    ('a', F::Account),
    ('A', F::JobId),
    ('b', F::TresPerNode),
    ('B', F::BatchHost),
    ('c', F::MinCpus),
    ('C', F::NumCpus),
    ('d', F::MinTmpDisk),
    ('D', F::NumNodes),
    ('e', F::EndTime),
    ('E', F::Dependency),
    ('f', F::Features),
    ('F', F::ArrayJobId),
    ('g', F::GroupName),
    ('G', F::GroupId),
    ('h', F::OverSubscribe),
    ('H', F::Sockets),
    ('i', F::JobArrayId),
    ('I', F::Cores),
    ('j', F::Name),
    ('J', F::Threads),
    ('k', F::Comment),
    ('K', F::ArrayTaskId),
    ('l', F::TimeLimit),
    ('L', F::TimeLeft),
    ('m', F::MinMemory),
    ('M', F::TimeUsed),
    ('n', F::ReqNodes),
    ('N', F::NodeList),
    ('o', F::Command),
    ('O', F::Contiguous),
    ('p', F::Priority),
    ('P', F::Partition),
    ('q', F::Qos),
    ('Q', F::PriorityLong),
    ('r', F::Reason),
    ('R', F::ReasonList),
    ('s', F::SelectJobInfo),
    ('S', F::StartTime),
    ('t', F::StateCompact),
    ('T', F::State),
    ('u', F::UserName),
    ('U', F::UserId),
    ('v', F::Reservation),
    ('V', F::SubmitTime),
    ('w', F::WcKey),
    ('W', F::Licenses),
    ('x', F::ExcNodes),
    ('X', F::CoreSpec),
    ('y', F::Nice),
    ('Y', F::SchedNodes),
    ('z', F::Sct),
    ('Z', F::WorkDir),
];

/// Name table for `-O` (case-insensitive).
const NAMES: &[(&str, F)] = &[
    ("account", F::Account),
    ("jobid", F::JobId),
    ("gres", F::TresPerNode),
    ("tres-per-node", F::TresPerNode),
    ("batchhost", F::BatchHost),
    ("mincpus", F::MinCpus),
    ("numcpus", F::NumCpus),
    ("mintmpdisk", F::MinTmpDisk),
    ("numnodes", F::NumNodes),
    ("endtime", F::EndTime),
    ("dependency", F::Dependency),
    ("feature", F::Features),
    ("arrayjobid", F::ArrayJobId),
    ("groupname", F::GroupName),
    ("groupid", F::GroupId),
    ("oversubscribe", F::OverSubscribe),
    ("shared", F::OverSubscribe),
    ("sockets", F::Sockets),
    ("jobarrayid", F::JobArrayId),
    ("cores", F::Cores),
    ("name", F::Name),
    ("threads", F::Threads),
    ("comment", F::Comment),
    ("arraytaskid", F::ArrayTaskId),
    ("timelimit", F::TimeLimit),
    ("timeleft", F::TimeLeft),
    ("minmemory", F::MinMemory),
    ("timeused", F::TimeUsed),
    ("reqnodes", F::ReqNodes),
    ("nodelist", F::NodeList),
    ("command", F::Command),
    ("contiguous", F::Contiguous),
    ("priority", F::Priority),
    ("partition", F::Partition),
    ("qos", F::Qos),
    ("prioritylong", F::PriorityLong),
    ("reason", F::Reason),
    ("reasonlist", F::ReasonList),
    ("selectjobinfo", F::SelectJobInfo),
    ("starttime", F::StartTime),
    ("statecompact", F::StateCompact),
    ("state", F::State),
    ("userid", F::UserId),
    ("username", F::UserName),
    ("reservation", F::Reservation),
    ("submittime", F::SubmitTime),
    ("wckey", F::WcKey),
    ("licenses", F::Licenses),
    ("excnodes", F::ExcNodes),
    ("corespec", F::CoreSpec),
    ("nice", F::Nice),
    ("schednodes", F::SchedNodes),
    ("sct", F::Sct),
    ("workdir", F::WorkDir),
    ("cpuspertask", F::CpusPerTask),
    ("cpus-per-task", F::CpusPerTask),
    ("eligibletime", F::EligibleTime),
    ("exit_code", F::ExitCode),
    ("stdout", F::StdOut),
    ("stderr", F::StdErr),
    ("stdin", F::StdIn),
    ("pendingtime", F::PendingTime),
    ("cluster", F::Cluster),
    ("batchflag", F::BatchFlag),
    ("restartcnt", F::RestartCnt),
    ("requeue", F::Requeue),
    ("maxcpus", F::MaxCpus),
    ("maxnodes", F::MaxNodes),
    ("mintime", F::MinTime),
    ("deadline", F::Deadline),
    ("accruetime", F::AccrueTime),
    ("lastschedeval", F::LastSchedEval),
    ("derivedec", F::DerivedEc),
    ("network", F::Network),
    ("ntpernode", F::NtPerNode),
    ("allocnodes", F::AllocNodes),
    ("allocsid", F::AllocSid),
    ("hetjobid", F::HetJobId),
    ("hetjoboffset", F::HetJobOffset),
    ("hetjobidset", F::HetJobIdSet),
    ("packjobid", F::HetJobId),
    ("packjoboffset", F::HetJobOffset),
    ("packjobidset", F::HetJobIdSet),
    ("tres", F::TresAlloc),
    ("tres-alloc", F::TresAlloc),
    ("tres-per-job", F::TresPerJob),
    ("tres-per-task", F::TresPerTask),
    ("cpus-per-tres", F::CpusPerTres),
    ("mem-per-tres", F::MemPerTres),
    ("tres-bind", F::Fixed("TRES_BIND", "N/A")),
    ("tres-freq", F::Fixed("TRES_FREQ", "N/A")),
    ("tres-per-socket", F::Fixed("TRES_PER_SOCKET", "N/A")),
    ("admin_comment", F::Fixed("ADMIN_COMMENT", "(null)")),
    ("system_comment", F::Fixed("SYSTEM_COMMENT", "(null)")),
    ("associd", F::Fixed("ASSOC_ID", "0")),
    ("boardspernode", F::Fixed("BOARDS_PER_NODE", "N/A")),
    ("burstbuffer", F::Fixed("BURST_BUFFER", "(null)")),
    ("burstbufferstate", F::Fixed("BURST_BUFFER_STATE", "(null)")),
    ("clusterfeature", F::Fixed("CLUSTER_FEATURES", "(null)")),
    ("container", F::Fixed("CONTAINER", "(null)")),
    ("delayboot", F::Fixed("DELAY_BOOT", "0:00")),
    ("mcslabel", F::Fixed("MCSLABEL", "(null)")),
    ("ntpercore", F::Fixed("NTASKS_PER_CORE", "N/A")),
    ("ntpersocket", F::Fixed("NTASKS_PER_SOCKET", "N/A")),
    ("ntperboard", F::Fixed("NTASKS_PER_BOARD", "N/A")),
    ("origin", F::Fixed("ORIGIN", "NA")),
    ("originraw", F::Fixed("ORIGIN_RAW", "NA")),
    ("siblingsactive", F::Fixed("ACTIVE_SIBLINGS", "NA")),
    ("siblingsactiveraw", F::Fixed("ACTIVE_SIBLINGS_RAW", "NA")),
    ("siblingsviable", F::Fixed("VIABLE_SIBLINGS", "NA")),
    ("siblingsviableraw", F::Fixed("VIALBLE_SIBLINGS_RAW", "NA")),
    ("preempttime", F::Fixed("PREEMPT_TIME", "N/A")),
    ("profile", F::Fixed("PROFILE", "NotSet")),
    ("reboot", F::Fixed("REBOOT", "0")),
    ("reqswitch", F::Fixed("REQ_SWITCH", "0")),
    ("resizetime", F::Fixed("RESIZE_TIME", "N/A")),
    ("sperboard", F::Fixed("SOCKETS_PER_BOARD", "0")),
    ("wait4switch", F::Fixed("WAIT4SWITCH", "0:00")),
];

impl format::Kind for F {
    const INVALID: F = F::Invalid;
    const LETTERS: &'static [(char, F)] = LETTERS;
    const NAMES: &'static [(&'static str, F)] = NAMES;
    const LETTER_WHAT: &'static str = "job";

    fn by_name(name: &str) -> Option<F> {
        format::lookup(NAMES, name).or_else(|| {
            // numtasks is matched on its first 7 letters, as in squeue.
            (name.len() >= 7 && name[..7].eq_ignore_ascii_case("numtask")).then_some(F::NumTasks)
        })
    }

    /// C's `strtol`: a sign is read, a negative width is 0.
    fn name_width(spec: &str) -> (usize, &str) {
        let (w, rest) = strtol_prefix(spec);
        (w.max(0) as usize, rest)
    }
}

/// One output column.
pub type Field = format::Field<F>;

/// A parsed output format: a prefix and the columns.
pub type Format = format::Format<F>;

/// Parses an `-o` format like squeue's `parse_format`.
pub fn parse_format(fmt: &str) -> Format {
    format::parse(fmt)
}

/// Parses an `-O` format like squeue's `parse_long_format`.
pub fn parse_long_format(fmt: &str) -> Format {
    format::parse_names(fmt)
}

/// C's `strtol` on a prefix: optional blanks and sign, then digits.
fn strtol_prefix(s: &str) -> (i64, &str) {
    let t = s.trim_start();
    let b = t.as_bytes();
    let mut i = 0;
    let neg = if !b.is_empty() && (b[0] == b'-' || b[0] == b'+') {
        i = 1;
        b[0] == b'-'
    } else {
        false
    };
    let start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    if i == start {
        return (0, s);
    }
    let n: i64 = t[start..i].parse().unwrap_or(i64::MAX);
    (if neg { -n } else { n }, &t[i..])
}

/// What a rendering needs besides the job.
#[derive(Debug, Clone)]
pub struct RenderCtx {
    pub now: i64,
    pub cluster: String,
    /// `--noconvert`: memory in MiB without units.
    pub noconvert: bool,
    /// Collapsed array records: `ArrayTaskId` text by job id (see [`crate::arrays`]).
    pub ranges: std::collections::HashMap<u32, String>,
}

fn header(kind: F) -> (&'static str, bool) {
    let h = match kind {
        F::Account => "ACCOUNT",
        F::JobId | F::JobArrayId => "JOBID",
        F::TresPerNode => "TRES_PER_NODE",
        F::BatchHost => "EXEC_HOST",
        F::MinCpus => "MIN_CPUS",
        F::NumCpus => "CPUS",
        F::MinTmpDisk => "MIN_TMP_DISK",
        F::NumNodes => "NODES",
        F::EndTime => "END_TIME",
        F::Dependency => "DEPENDENCY",
        F::Features => "FEATURES",
        F::ArrayJobId => "ARRAY_JOB_ID",
        F::GroupName | F::GroupId => "GROUP",
        F::OverSubscribe => "OVER_SUBSCRIBE",
        F::Sockets => "SOCKETS_PER_NODE",
        F::Cores => "CORES_PER_SOCKET",
        F::Name => "NAME",
        F::Threads => "THREADS_PER_CORE",
        F::Comment => "COMMENT",
        F::ArrayTaskId => "ARRAY_TASK_ID",
        F::TimeLimit => "TIME_LIMIT",
        F::TimeLeft => "TIME_LEFT",
        F::MinMemory => "MIN_MEMORY",
        F::TimeUsed => "TIME",
        F::ReqNodes => "REQ_NODES",
        F::NodeList => return ("NODELIST", false),
        F::Command => "COMMAND",
        F::Contiguous => "CONTIGUOUS",
        F::Priority | F::PriorityLong => "PRIORITY",
        F::Partition => "PARTITION",
        F::Qos => "QOS",
        F::Reason => "REASON",
        F::ReasonList => return ("NODELIST(REASON)", false),
        F::SelectJobInfo => "",
        F::StartTime => "START_TIME",
        F::StateCompact => "ST",
        F::State => "STATE",
        F::UserName => "USER",
        F::UserId => "UID",
        F::Reservation => "RESERVATION",
        F::SubmitTime => "SUBMIT_TIME",
        F::WcKey => "WCKEY",
        F::Licenses => "LICENSES",
        F::ExcNodes => "EXC_NODES",
        F::CoreSpec => "CORE_SPEC",
        F::Nice => "NICE",
        F::SchedNodes => return ("SCHEDNODES", false),
        F::Sct => "S:C:T",
        F::WorkDir => "WORK_DIR",
        F::NumTasks => "TASKS",
        F::CpusPerTask => "CPUS_PER_TASK",
        F::EligibleTime => "ELIGIBLE_TIME",
        F::ExitCode => "EXIT_CODE",
        F::StdOut => "STDOUT",
        F::StdErr => "STDERR",
        F::StdIn => "STDIN",
        F::PendingTime => "PENDING_TIME",
        F::Cluster => "CLUSTER",
        F::BatchFlag => "BATCH_FLAG",
        F::RestartCnt => "RESTART_COUNT",
        F::Requeue => "REQUEUE",
        F::MaxCpus => "MAX_CPUS",
        F::MaxNodes => "MAX_NODES",
        F::MinTime => "TIME_MIN",
        F::Deadline => "DEADLINE",
        F::AccrueTime => "ACCRUE_TIME",
        F::LastSchedEval => "LAST_SCHED_EVAL",
        F::DerivedEc => "DERIVED_EC",
        F::Network => "NETWORK",
        F::NtPerNode => "NTASKS_PER_NODE",
        F::AllocNodes => "ALLOC_NODES",
        F::AllocSid => "ALLOC_SID",
        F::Invalid => "",
        F::HetJobId => "HET_JOB_ID",
        F::HetJobOffset => "HET_JOB_OFFSET",
        F::HetJobIdSet => "HET_JOB_ID_SET",
        F::TresAlloc => "TRES_ALLOC",
        F::TresPerJob => "TRES_PER_JOB",
        F::TresPerTask => "TRES_PER_TASK",
        F::CpusPerTres => "CPUS_PER_TRES",
        F::MemPerTres => "MEM_PER_TRES",
        F::Fixed(h, _) => h,
    };
    (h, true)
}

/// squeue's `_print_secs`: `M:SS`, `H:MM:SS`, `D-HH:MM:SS`, `INVALID` when negative or
/// over a year.
fn secs(t: i64) -> String {
    if t < 0 {
        "INVALID".to_string()
    } else {
        units::format_secs_squeue(t as u64)
    }
}

/// squeue's `_print_time`: a date, or `N/A` for none.
fn date(t: Option<i64>) -> String {
    match t {
        Some(t) if t != 0 => units::format_timestamp(t),
        _ => "N/A".to_string(),
    }
}

fn is_running(job: &JobInfo) -> bool {
    matches!(job.state, JobState::Running | JobState::Completing)
}

/// Memory as `%m` prints it.
fn min_memory(job: &JobInfo, noconvert: bool) -> String {
    let mb = match job.spec.mem {
        Some(MemRequest::PerNode(m)) | Some(MemRequest::PerCpu(m)) => m,
        None => job.mem_per_node_mb,
    };
    if noconvert {
        format!("{mb}M")
    } else {
        units::format_memory_mb(mb)
    }
}

/// `tres-alloc`: the allocated TRES of a job that has nodes, else the requested ones.
fn tres_alloc(job: &JobInfo) -> String {
    let (nodes, gres) = if job.nodes.is_empty() {
        (
            job.spec.nodes.unwrap_or(job.num_nodes.max(1)),
            gsched_proto::gpu_tres::req_tres(job),
        )
    } else {
        (job.num_nodes, gsched_proto::gpu_tres::alloc_tres(job))
    };
    let mut t = crate::scontrol::tres(job.num_cpus, job.mem_per_node_mb * u64::from(nodes), nodes);
    if !gres.is_empty() {
        t.push(',');
        t.push_str(&gres);
    }
    t
}

/// The expected or actual end time (`%e`).
fn end_time(job: &JobInfo, now: i64) -> String {
    match job.state {
        JobState::Pending => date(job.end_time),
        JobState::Running | JobState::Completing => match (job.time_limit, job.start_time) {
            (None, _) => "NONE".to_string(),
            (Some(m), Some(s)) => date(Some(s + i64::from(m) * 60)),
            (Some(_), None) => "N/A".to_string(),
        },
        _ => {
            if job.time_limit.is_none() && job.end_time.is_some_and(|e| e > now) {
                "NONE".to_string()
            } else {
                date(job.end_time)
            }
        }
    }
}

fn stdio_path(job: &JobInfo, p: &Option<String>) -> String {
    match p {
        Some(p) => p.clone(),
        None => match &job.array {
            Some(a) => format!("{}/slurm-{}_{}.out", job.spec.work_dir, a.job_id, a.task_id),
            None => format!("{}/slurm-{}.out", job.spec.work_dir, job.job_id),
        },
    }
}

/// A field's value for a job and whether it is cut to the width when right-justified.
pub fn value(kind: F, job: &JobInfo, ctx: &RenderCtx) -> (String, bool) {
    let nodes = || hostlist::compress_sorted(&job.nodes);
    let v = match kind {
        F::Dependency => job
            .dependency
            .clone()
            .unwrap_or_else(|| "(null)".to_string()),
        F::Comment => job
            .spec
            .comment
            .clone()
            .unwrap_or_else(|| "(null)".to_string()),
        F::Account => job.account().to_string(),
        F::Nice => job.nice().to_string(),
        F::Features => job
            .spec
            .constraint
            .clone()
            .unwrap_or_else(|| "(null)".to_string()),
        F::Qos => job.qos().to_string(),
        F::Reservation => job
            .spec
            .reservation
            .clone()
            .unwrap_or_else(|| "(null)".to_string()),
        F::Licenses if !job.spec.licenses.is_empty() => {
            gsched_proto::licenses::format(&job.spec.licenses)
        }
        F::WcKey | F::Licenses | F::Network => "(null)".to_string(),
        F::JobId => job.job_id.to_string(),
        F::JobArrayId => crate::arrays::job_array_id(job, &ctx.ranges),
        F::ArrayJobId => job.array_job_id().to_string(),
        F::ArrayTaskId => crate::arrays::array_task_id(job, &ctx.ranges),
        F::TresPerNode => job
            .spec
            .gpu
            .as_ref()
            .and_then(|g| g.tres_per_node())
            .unwrap_or_else(|| "N/A".to_string()),
        F::CoreSpec => "N/A".to_string(),
        F::BatchHost => {
            if is_running(job) {
                job.nodes.first().cloned().unwrap_or_else(|| "n/a".into())
            } else {
                "n/a".to_string()
            }
        }
        F::MinCpus => {
            (job.spec.cpus_per_task() * job.spec.ntasks_per_node.unwrap_or(1).max(1)).to_string()
        }
        F::NumCpus => job.num_cpus.to_string(),
        F::MinTmpDisk => "0".to_string(),
        F::NumNodes => job.num_nodes.to_string(),
        F::EndTime => end_time(job, ctx.now),
        F::GroupName => or_null(&name_or_id(&job.group_name, job.group_id)).to_string(),
        F::GroupId => job.group_id.to_string(),
        F::OverSubscribe => if job.spec.exclusive { "NO" } else { "OK" }.to_string(),
        F::Sockets | F::Cores | F::Threads => "*".to_string(),
        F::Name => job.name.clone(),
        F::TimeLimit => {
            return (units::format_time_limit_squeue(job.time_limit), false);
        }
        F::TimeLeft => {
            return (
                match job.time_limit {
                    None => "UNLIMITED".to_string(),
                    Some(m) => secs(i64::from(m) * 60 - job.run_time(ctx.now)),
                },
                job.time_limit.is_none(),
            )
        }
        F::MinMemory => min_memory(job, ctx.noconvert),
        F::TimeUsed => return (secs(job.run_time(ctx.now)), false),
        F::ReqNodes => job.spec.nodelist.clone().unwrap_or_default(),
        F::ExcNodes => job.spec.exclude.clone().unwrap_or_default(),
        F::NodeList => return (nodes(), false),
        F::Command => or_null(&job.spec.command).to_string(),
        F::Contiguous | F::AllocSid => "0".to_string(),
        F::RestartCnt => job.restarts.to_string(),
        F::Requeue => u8::from(job.requeue).to_string(),
        F::DerivedEc => ((job.exit_code << 8) | (job.exit_signal & 0x7f)).to_string(),
        F::TresAlloc => tres_alloc(job),
        F::TresPerJob | F::TresPerTask | F::CpusPerTres | F::MemPerTres => {
            let g = job.spec.gpu.as_ref();
            match kind {
                F::TresPerJob => g.and_then(|g| g.tres_per_job()),
                F::TresPerTask => g.and_then(|g| g.tres_per_task()),
                F::CpusPerTres => g.and_then(|g| g.cpus_per_gpu.map(|c| format!("gres:gpu:{c}"))),
                _ => g.and_then(|g| g.mem_per_gpu_mb.map(|m| format!("gres:gpu:{m}"))),
            }
            .unwrap_or_else(|| "N/A".to_string())
        }
        F::Fixed(_, v) => v.to_string(),
        F::HetJobId | F::HetJobOffset | F::HetJobIdSet => match job.het {
            None => "N/A".to_string(),
            Some(h) => match kind {
                F::HetJobId => h.job_id.to_string(),
                F::HetJobOffset => h.offset.to_string(),
                _ => h.id_set(),
            },
        },
        F::Priority => format!("{:16.14}", f64::from(job.priority) / f64::from(u32::MAX)),
        F::PriorityLong => job.priority.to_string(),
        F::Partition => job.partition.clone(),
        F::Reason => job.reason.as_str().to_string(),
        F::ReasonList => {
            let show_reason = job.state != JobState::Completing
                && matches!(
                    job.state,
                    JobState::Pending
                        | JobState::Timeout
                        | JobState::OutOfMemory
                        | JobState::Deadline
                        | JobState::Failed
                );
            if show_reason {
                format!("({})", job.reason.as_str())
            } else {
                return (nodes(), false);
            }
        }
        F::SelectJobInfo => String::new(),
        F::StartTime => date(job.start_time.or(job.expected_start)),
        F::StateCompact => job.state_compact().to_string(),
        F::State => job.state_long().to_string(),
        F::UserName => name_or_id(&job.user_name, job.user_id),
        F::UserId => job.user_id.to_string(),
        F::SubmitTime => date(Some(job.submit_time)),
        F::SchedNodes if !job.sched_nodes.is_empty() => hostlist::compress_sorted(&job.sched_nodes),
        F::SchedNodes => return ("(null)".to_string(), false),
        F::Sct => "*:*:*".to_string(),
        F::WorkDir => job.spec.work_dir.clone(),
        F::NumTasks => job.num_tasks.to_string(),
        F::CpusPerTask => match job.spec.cpus_per_task {
            Some(c) => c.to_string(),
            None => "N/A".to_string(),
        },
        F::EligibleTime => date(job.eligible_time),
        F::ExitCode => ((job.exit_code << 8) | (job.exit_signal & 0x7f)).to_string(),
        F::StdOut => stdio_path(job, &job.spec.stdout),
        F::StdErr => match &job.spec.stderr {
            Some(p) => p.clone(),
            None => stdio_path(job, &job.spec.stdout),
        },
        F::StdIn => job.spec.stdin.clone().unwrap_or_else(|| "/dev/null".into()),
        F::PendingTime => match job.start_time {
            Some(s) if s < ctx.now => (s - job.submit_time).to_string(),
            _ => (ctx.now - job.submit_time).to_string(),
        },
        F::Cluster => ctx.cluster.clone(),
        F::BatchFlag => "1".to_string(),
        F::MaxCpus => job.num_cpus.to_string(),
        F::MaxNodes => job.num_nodes.to_string(),
        F::MinTime => secs(i64::from(job.spec.time_min.unwrap_or(0)) * 60),
        F::Deadline => date(job.spec.deadline),
        F::AccrueTime => date(job.eligible_time),
        F::LastSchedEval => date(
            job.start_time
                .or(job.eligible_time)
                .or(Some(job.submit_time)),
        ),
        F::NtPerNode => match job.spec.ntasks_per_node {
            Some(n) => n.to_string(),
            None => "N/A".to_string(),
        },
        F::AllocNodes => job.spec.submit_host.clone(),
        F::Invalid => String::new(),
    };
    (v, true)
}

/// The job fields (`JobQuery::fields`) a format field reads; `None` = the whole record.
fn fields_of(kind: F) -> Option<&'static [&'static str]> {
    const RUN: &[&str] = &["start_time", "end_time"];
    Some(match kind {
        F::Dependency => &["dependency"],
        F::Comment => &["spec.comment"],
        F::Account => &["spec.account"],
        F::Nice => &["spec.nice"],
        F::Features => &["spec.constraint"],
        F::Qos => &["spec.qos"],
        F::Reservation => &["spec.reservation"],
        F::Licenses => &["spec.licenses"],
        F::TresPerNode | F::TresPerJob | F::TresPerTask | F::CpusPerTres | F::MemPerTres => {
            &["spec.gpu"]
        }
        F::BatchHost | F::NodeList => &["nodes"],
        F::MinCpus => &["spec"],
        F::NumCpus | F::MaxCpus => &["num_cpus"],
        F::NumNodes | F::MaxNodes => &["num_nodes"],
        F::EndTime => &["time_limit", "start_time", "end_time"],
        F::GroupName => &["group_name", "group_id"],
        F::GroupId => &["group_id"],
        F::OverSubscribe => &["spec.exclusive"],
        F::Name => &["name"],
        F::TimeLimit => &["time_limit"],
        F::TimeLeft => &["time_limit", "start_time", "end_time"],
        F::MinMemory => &["spec.mem", "mem_per_node_mb"],
        F::TimeUsed => RUN,
        F::ReqNodes => &["spec.nodelist"],
        F::ExcNodes => &["spec.exclude"],
        F::Command => &["spec.command"],
        F::RestartCnt => &["restarts"],
        F::Requeue => &["requeue"],
        F::DerivedEc | F::ExitCode => &["exit_code", "exit_signal"],
        F::TresAlloc => return None,
        F::Priority | F::PriorityLong => &["priority"],
        F::Partition => &["partition"],
        F::Reason => &["reason"],
        F::ReasonList => &["reason", "nodes"],
        F::StartTime => &["start_time", "expected_start"],
        F::UserName => &["user_name", "user_id"],
        F::UserId => &["user_id"],
        F::SubmitTime => &["submit_time"],
        F::SchedNodes => &["sched_nodes"],
        F::WorkDir => &["spec.work_dir"],
        F::NumTasks => &["num_tasks"],
        F::CpusPerTask => &["spec.cpus_per_task"],
        F::EligibleTime | F::AccrueTime => &["eligible_time"],
        F::StdOut => &["spec.stdout", "spec.work_dir"],
        F::StdErr => &["spec.stderr", "spec.stdout", "spec.work_dir"],
        F::StdIn => &["spec.stdin"],
        F::PendingTime => &["start_time", "submit_time"],
        F::MinTime => &["spec.time_min"],
        F::Deadline => &["spec.deadline"],
        F::LastSchedEval => &["start_time", "eligible_time", "submit_time"],
        F::NtPerNode => &["spec.ntasks_per_node"],
        F::AllocNodes => &["spec.submit_host"],
        // Read from the id, state, array and het fields every listing asks for, or from
        // nothing.
        F::JobId
        | F::JobArrayId
        | F::ArrayJobId
        | F::ArrayTaskId
        | F::HetJobId
        | F::HetJobOffset
        | F::HetJobIdSet
        | F::StateCompact
        | F::State
        | F::MinTmpDisk
        | F::Sockets
        | F::Cores
        | F::Threads
        | F::Contiguous
        | F::SelectJobInfo
        | F::WcKey
        | F::CoreSpec
        | F::Sct
        | F::Cluster
        | F::BatchFlag
        | F::Network
        | F::AllocSid
        | F::Invalid
        | F::Fixed(..) => &[],
    })
}

/// The job fields a `-S` key sorts by; `None` = the whole record.
fn sort_fields(key: char) -> Option<&'static [&'static str]> {
    Some(match key {
        'P' => &["partition"],
        'p' | 'Q' => &["priority"],
        'j' => &["name"],
        'u' => &["user_name"],
        'U' => &["user_id"],
        'g' => &["group_name"],
        'G' => &["group_id"],
        'D' => &["num_nodes"],
        'C' => &["num_cpus"],
        'l' => &["time_limit"],
        'L' => &["time_limit", "start_time", "end_time"],
        'M' => &["start_time", "end_time"],
        'm' => &["mem_per_node_mb"],
        'S' => &["start_time", "expected_start"],
        'V' => &["submit_time"],
        'e' => &["end_time"],
        'N' | 'B' => &["nodes"],
        'r' => &["reason"],
        't' | 'T' | 'i' | 'A' | 'F' => &[],
        _ => return None,
    })
}

/// What squeue asks the controller for: the fields its filters, sort and format read
/// (a tenth of a whole record for the default format), or `None` for the whole record
/// (`--json`/`--yaml`, and the fields whose inputs are many).
pub fn query_fields(p: &Params) -> Option<Vec<&'static str>> {
    if p.mime.is_some() {
        return None;
    }
    // Ids, arrays and het jobs (`-j`, array collapsing, `%i`), and the state (the default
    // filter, `-t`, SUSPENDED).
    let mut out: Vec<&'static str> = vec![
        "job_id",
        "array",
        "het",
        "state",
        "suspended_since",
        "special_exit",
        "epilog_running",
        "configuring",
    ];
    let f = &p.filters;
    for (given, field) in [
        (f.users.is_some(), "user_id"),
        (f.partitions.is_some(), "partition"),
        (f.names.is_some(), "name"),
        (f.nodes.is_some(), "nodes"),
        (f.accounts.is_some(), "spec.account"),
        (f.qos.is_some(), "spec.qos"),
        (f.reservations.is_some(), "spec.reservation"),
        (f.licenses.is_some(), "spec.licenses"),
    ] {
        if given {
            out.push(field);
        }
    }
    for (c, _) in common::sort_keys(&p.sort, &[',', '+', '-']) {
        out.extend(sort_fields(c)?);
    }
    for field in &p.format.fields {
        out.extend(fields_of(field.kind)?);
    }
    out.sort_unstable();
    out.dedup();
    Some(out)
}

/// The header line (with its newline).
pub fn render_header(fmt: &Format) -> String {
    fmt.line(|f| {
        let (h, cut) = header(f.kind);
        print_field(h, f.width, f.right, cut)
    })
}

/// One job's line (with its newline).
pub fn render_job(fmt: &Format, job: &JobInfo, ctx: &RenderCtx) -> String {
    fmt.line(|f| {
        let (v, cut) = value(f.kind, job, ctx);
        print_field(&v, f.width, f.right, cut)
    })
}

/// Slurm's numeric job state order, for `-S T`.
fn state_rank(s: JobState) -> u32 {
    match s {
        JobState::Pending => 0,
        JobState::Running => 1,
        JobState::Completed => 3,
        JobState::Cancelled => 4,
        JobState::Failed => 5,
        JobState::Timeout => 6,
        JobState::NodeFail => 7,
        JobState::Deadline => 10,
        JobState::OutOfMemory => 11,
        JobState::Completing => 0x8000 | 1,
    }
}

/// Sorts jobs by a squeue `-S` specification (applied from the last key to the first, each
/// sort stable, starting from id order).
pub fn sort_jobs(jobs: &mut [&JobInfo], spec: &str, now: i64) -> Result<(), String> {
    jobs.sort_by_key(|j| j.job_id);
    for (c, before) in common::sort_keys(spec, &[',', '+', '-']) {
        let rev = before == Some('-');
        match c {
            'P' => sort_by(jobs, rev, |j| j.partition.clone()),
            't' => sort_by(jobs, rev, |j| j.state_compact()),
            'T' => sort_by(jobs, rev, |j| state_rank(j.state)),
            'p' | 'Q' => sort_by(jobs, rev, |j| j.priority),
            'i' | 'A' | 'F' => sort_by(jobs, rev, |j| j.job_id),
            'j' => sort_by(jobs, rev, |j| j.name.clone()),
            'u' => sort_by(jobs, rev, |j| j.user_name.clone()),
            'U' => sort_by(jobs, rev, |j| j.user_id),
            'g' => sort_by(jobs, rev, |j| j.group_name.clone()),
            'G' => sort_by(jobs, rev, |j| j.group_id),
            'D' => sort_by(jobs, rev, |j| j.num_nodes),
            'C' => sort_by(jobs, rev, |j| j.num_cpus),
            'l' => sort_by(jobs, rev, |j| j.time_limit.unwrap_or(u32::MAX)),
            'L' => sort_by(jobs, rev, |j| {
                j.time_limit
                    .map(|m| i64::from(m) * 60 - j.run_time(now))
                    .unwrap_or(i64::MAX)
            }),
            'M' => sort_by(jobs, rev, |j| j.run_time(now)),
            'm' => sort_by(jobs, rev, |j| j.mem_per_node_mb),
            // As squeue 22.05 (bench/results/format-diff): no start time sorts after every
            // known one, a pending job's past estimate counts as now.
            'S' => sort_by(jobs, rev, |j| match j.start_time.or(j.expected_start) {
                None => i64::MAX,
                Some(t) if j.state == JobState::Pending && t < now => now,
                Some(t) => t,
            }),
            'V' => sort_by(jobs, rev, |j| j.submit_time),
            'e' => sort_by(jobs, rev, |j| j.end_time.unwrap_or(0)),
            'N' => sort_by(jobs, rev, |j| j.nodes.clone()),
            'B' => sort_by(jobs, rev, |j| j.nodes.first().cloned()),
            'r' => sort_by(jobs, rev, |j| j.reason.as_str()),
            'c' | 'f' | 'h' | 'n' | 'O' | 'b' | 'd' | 'H' | 'I' | 'J' | 'z' | 'v' => {}
            other => return Err(format!("Invalid sort specification: {other}")),
        }
    }
    Ok(())
}

/// Slurm job state names accepted by `-t` that are no [`JobState`]: SUSPENDED (a flag of a
/// running job, see `Filters::suspended`), SPECIAL_EXIT (one of a pending job,
/// `Filters::special_exit`) and states gsched never uses (they match nothing).
const OTHER_STATES: &[&str] = &[
    "SUSPENDED",
    "S",
    "PREEMPTED",
    "PR",
    "BOOT_FAIL",
    "BF",
    "DEADLINE",
    "DL",
    "CONFIGURING",
    "CF",
    "RESIZING",
    "RS",
    "RESV_DEL_HOLD",
    "RD",
    "REQUEUED",
    "RQ",
    "REQUEUE_FED",
    "RF",
    "REQUEUE_HOLD",
    "RH",
    "REVOKED",
    "RV",
    "SIGNALING",
    "SI",
    "SPECIAL_EXIT",
    "SE",
    "STAGE_OUT",
    "SO",
    "STOPPED",
    "ST",
];

const VALID_STATES: &str = "PENDING,RUNNING,SUSPENDED,COMPLETED,CANCELLED,FAILED,TIMEOUT,NODE_FAIL,PREEMPTED,BOOT_FAIL,DEADLINE,OUT_OF_MEMORY,COMPLETING,CONFIGURING,RESIZING,RESV_DEL_HOLD,REQUEUED,REQUEUE_FED,REQUEUE_HOLD,REVOKED,SIGNALING,SPECIAL_EXIT,STAGE_OUT,STOPPED";

/// Whether a `-t` list names a state by its long or compact name.
fn names_state(s: &str, long: &str, compact: &str) -> bool {
    split_list(s)
        .iter()
        .any(|t| t.trim().eq_ignore_ascii_case(long) || t.trim().eq_ignore_ascii_case(compact))
}

/// The state filter of `-t`: `None` = all states.
pub fn parse_states(prog: &str, s: &str) -> Result<Option<Vec<JobState>>, Fail> {
    if s.eq_ignore_ascii_case("all") {
        return Ok(None);
    }
    let mut out = Vec::new();
    for tok in split_list(s) {
        if let Some(st) = JobState::parse(&tok) {
            out.push(st);
        } else if OTHER_STATES
            .iter()
            .any(|o| o.eq_ignore_ascii_case(tok.trim()))
        {
            // Valid in Slurm; no gsched job is ever in it.
        } else {
            return Err(Fail::errors(
                prog,
                &[
                    &format!("Invalid job state specified: {tok}"),
                    &format!("Valid job states include: {VALID_STATES}"),
                ],
            ));
        }
    }
    Ok(Some(out))
}

/// squeue's `-j` list: numbers (`N` or `N_K`); anything else not starting with a positive
/// number is an error.
pub fn parse_job_list(prog: &str, s: &str) -> Result<Vec<(u32, Option<u32>)>, Fail> {
    let mut out = Vec::new();
    for tok in split_list(s) {
        let (n, rest) = strtol_prefix(&tok);
        if n <= 0 || n > i64::from(u32::MAX) {
            return Err(Fail::error(prog, format!("Invalid job id: {tok}")));
        }
        if let Some(r) = rest.strip_prefix('+') {
            // `N+K`: component K of het job N, whose own id is N + K.
            let k = strtol_prefix(r).0.max(0) as u32;
            out.push(((n as u32).saturating_add(k), None));
            continue;
        }
        let task = rest
            .strip_prefix('_')
            .map(|r| strtol_prefix(r).0.max(0) as u32);
        out.push((n as u32, task));
    }
    Ok(out)
}

/// Which jobs to show.
#[derive(Debug, Clone, Default)]
pub struct Filters {
    /// (job id, array task): `N` names a job or a whole array, `N_K` one array task.
    pub jobs: Option<Vec<(u32, Option<u32>)>>,
    /// `None` = default (non-finished); `Some(None)` = all; `Some(Some(list))`.
    pub states: Option<Option<Vec<JobState>>>,
    /// `SUSPENDED` (or `S`) is in the `-t` list.
    pub suspended: bool,
    /// `SPECIAL_EXIT` (or `SE`) is in the `-t` list: a flag of a pending job, which a
    /// `PENDING` filter does not select (squeue matches flags and base states apart).
    pub special_exit: bool,
    /// `CONFIGURING` (or `CF`) is in the `-t` list: a flag of a running job whose
    /// PrologSlurmctld runs (a `RUNNING` filter selects it too).
    pub configuring: bool,
    pub users: Option<Vec<u32>>,
    pub partitions: Option<Vec<String>>,
    pub names: Option<Vec<String>>,
    pub nodes: Option<Vec<String>>,
    /// `-A/--account`, lower-cased.
    pub accounts: Option<Vec<String>>,
    /// `-q/--qos`, lower-cased.
    pub qos: Option<Vec<String>>,
    /// `-R/--reservation`.
    pub reservations: Option<Vec<String>>,
    /// `-L/--licenses`: jobs that hold or ask for any of these licenses.
    pub licenses: Option<Vec<String>>,
}

impl Filters {
    pub fn matches(&self, job: &JobInfo) -> bool {
        if let Some(ids) = &self.jobs {
            if !ids.iter().any(|&(id, task)| match task {
                None => {
                    id == job.job_id
                        || job.array.is_some_and(|a| a.job_id == id)
                        || job.het.is_some_and(|h| h.job_id == id)
                }
                Some(k) => job.array.is_some_and(|a| (a.job_id, a.task_id) == (id, k)),
            }) {
                return false;
            }
        }
        match &self.states {
            None => {
                if job.state.is_terminal() && !job.is_completing_epilog() {
                    return false;
                }
            }
            Some(None) => {}
            Some(Some(list)) => {
                let ok = if job.is_suspended() {
                    self.suspended
                } else if job.is_special_exit() {
                    self.special_exit
                } else {
                    job.matches_state(list) || (self.configuring && job.is_configuring())
                };
                if !ok {
                    return false;
                }
            }
        }
        if let Some(n) = &self.nodes {
            if !job.nodes.iter().any(|x| n.contains(x)) {
                return false;
            }
        }
        if let Some(u) = &self.users {
            if !u.contains(&job.user_id) {
                return false;
            }
        }
        if let Some(names) = &self.names {
            if !names.iter().any(|n| n.eq_ignore_ascii_case(&job.name)) {
                return false;
            }
        }
        if let Some(a) = &self.accounts {
            if !a.iter().any(|x| x.eq_ignore_ascii_case(job.account())) {
                return false;
            }
        }
        if let Some(q) = &self.qos {
            if !q.iter().any(|x| x.eq_ignore_ascii_case(job.qos())) {
                return false;
            }
        }
        if let Some(r) = &self.reservations {
            if !r.iter().any(|x| job.spec.reservation.as_deref() == Some(x)) {
                return false;
            }
        }
        if let Some(l) = &self.licenses {
            if !job.spec.licenses.iter().any(|(name, _)| l.contains(name)) {
                return false;
            }
        }
        if let Some(parts) = &self.partitions {
            if !job
                .partition
                .split(',')
                .any(|p| parts.iter().any(|q| q == p))
            {
                return false;
            }
        }
        true
    }
}

/// A comma list, lower-cased (account and QOS names are stored lower-case).
fn lower_list(v: &str) -> Vec<String> {
    split_list(v)
        .into_iter()
        .map(|x| x.trim().to_ascii_lowercase())
        .collect()
}

/// Everything the command line asked for.
#[derive(Debug, Clone, Default)]
pub struct Params {
    pub filters: Filters,
    pub format: Format,
    pub sort: String,
    pub no_header: bool,
    pub long: bool,
    pub verbose: u32,
    pub iterate: Option<u64>,
    /// `--json`/`--yaml`: Slurm 22.05's data dump of the jobs (`crate::slurm_json`).
    pub mime: Option<crate::slurm_json::Mime>,
    pub noconvert: bool,
    pub clusters: Option<String>,
    pub warnings: Vec<String>,
    /// `-r/--array`: one line per array task instead of one per array's pending tasks.
    pub expand_arrays: bool,
    /// `-s/--steps[=list]`: list running job steps instead of jobs (`crate::squeue_steps`),
    /// with the `-o` format as given.
    pub steps: Option<Vec<String>>,
    pub step_format: Option<String>,
    /// `-a/--all`: the jobs of partitions hidden from the user too (`Hidden=YES`, an
    /// `AllowGroups=` it is not in); `--hide` is the default.
    pub all: bool,
}

/// What the command decided.
pub type Parsed = common::Parsed<Box<Params>>;

/// Parses squeue's command line and environment.
pub fn parse_args(
    prog: &str,
    args: &[String],
    env: &dyn Fn(&str) -> Option<String>,
    uid: u32,
) -> Result<Parsed, Fail> {
    let split = getopt::parse_split(args, OPTIONS, Ordering::Permute);
    let mut p = Params::default();
    let mut format: Option<String> = None;
    let mut format_long: Option<String> = None;
    let mut override_env = false;
    let mut job_flag = false;
    let mut start = false;
    let mut sort = env("SQUEUE_SORT");
    // SQUEUE_ALL: as -a (whatever its value, as squeue reads it); --hide undoes it.
    p.all = env("SQUEUE_ALL").is_some();
    for (id, arg) in split.opts {
        if let Some(text) = common::info_text(id, help_text, usage_text) {
            return Ok(Parsed::Print(text));
        }
        let val = arg.clone().unwrap_or_default();
        match id {
            "all" => p.all = true,
            "hide" => p.all = false,
            "local" | "federation" | "sibling" | "array-unique" | "priority" => {}
            "array" => p.expand_arrays = true,
            "noheader" => p.no_header = true,
            "iterate" => {
                let n: i64 = strtol_prefix(&val).0;
                if n <= 0 {
                    return Err(Fail::error(prog, format!("--iterate={val}")));
                }
                p.iterate = Some(n as u64);
            }
            "jobs" => {
                if let Some(a) = &arg {
                    p.filters.jobs = Some(parse_job_list(prog, a)?);
                }
                job_flag = true;
            }
            "long" => {
                p.long = true;
                override_env = true;
            }
            "clusters" => p.clusters = Some(val),
            "me" => p.filters.users = Some(vec![uid]),
            "name" => p.filters.names = Some(split_list(&val)),
            "noconvert" => p.noconvert = true,
            "nodelist" => {
                let hosts = hostlist::expand(&val).map_err(|_| {
                    Fail::error(prog, format!("'{val}' invalid entry for --nodelist"))
                })?;
                p.filters.nodes = Some(hosts);
            }
            "Format" => {
                if format.is_some() {
                    return Err(Fail::error(
                        prog,
                        "-O (--Format) is incompatible with -o (--format)",
                    ));
                }
                format_long = Some(val);
                override_env = true;
            }
            "format" => {
                if format_long.is_some() {
                    return Err(Fail::error(
                        prog,
                        "-o (--format) is incompatible with -O (--Format)",
                    ));
                }
                p.step_format = Some(val.clone());
                format = Some(val);
                override_env = true;
            }
            "partitions" => p.filters.partitions = Some(split_list(&val)),
            "sort" => sort = Some(val),
            "start" => {
                start = true;
                override_env = true;
            }
            "states" => {
                p.filters.states = Some(parse_states(prog, &val)?);
                p.filters.suspended = names_state(&val, "SUSPENDED", "S");
                p.filters.special_exit = names_state(&val, "SPECIAL_EXIT", "SE");
                p.filters.configuring = names_state(&val, "CONFIGURING", "CF");
            }
            "user" => p.filters.users = Some(parse_users(prog, &val, &mut p.warnings)),
            "verbose" => p.verbose += 1,
            "json" | "yaml" => p.mime = crate::slurm_json::Mime::from_option(id),
            "accounts" => p.filters.accounts = Some(lower_list(&val)),
            "qos" => p.filters.qos = Some(lower_list(&val)),
            "steps" => p.steps = Some(split_list(&val)),
            "reservation" => p.filters.reservations = Some(split_list(&val)),
            "licenses" => p.filters.licenses = Some(split_list(&val)),
            _ => {}
        }
    }
    if let Some(e) = split.err {
        return Err(Fail::usage(prog, &e, 1));
    }
    if p.long && format.is_some() {
        return Err(Fail::raw(
            1,
            vec![format!(
                "{prog}: fatal: Options -o(--format) and -l(--long) are mutually exclusive. Please remove one and retry."
            )],
        ));
    }
    if !override_env {
        if let Some(f) = env("SQUEUE_FORMAT") {
            format = Some(f);
        } else if let Some(f) = env("SQUEUE_FORMAT2") {
            format_long = Some(f);
        }
    }
    let unrecognized = |o: &str| {
        Fail::raw(
            1,
            vec![
                format!("{prog}: error: Unrecognized option: {o}"),
                usage_text().trim_end().to_string(),
            ],
        )
    };
    let mut operands = split.operands.into_iter();
    if let Some(o) = operands.next() {
        if !job_flag {
            return Err(unrecognized(&o));
        }
        p.filters.jobs = Some(parse_job_list(prog, &o)?);
        if let Some(o) = operands.next() {
            return Err(unrecognized(&o));
        }
    }
    if p.filters.licenses.is_none() {
        if let Some(v) = env("SQUEUE_LICENSES") {
            p.filters.licenses = Some(split_list(&v));
        }
    }
    if p.filters.accounts.is_none() {
        if let Some(v) = env("SQUEUE_ACCOUNT") {
            p.filters.accounts = Some(lower_list(&v));
        }
    }
    if p.filters.qos.is_none() {
        if let Some(v) = env("SQUEUE_QOS") {
            p.filters.qos = Some(lower_list(&v));
        }
    }
    if p.filters.names.is_none() {
        if let Some(v) = env("SQUEUE_NAMES") {
            p.filters.names = Some(split_list(&v));
        }
    }
    if p.filters.partitions.is_none() {
        if let Some(v) = env("SQUEUE_PARTITION") {
            p.filters.partitions = Some(split_list(&v));
        }
    }
    if p.filters.states.is_none() {
        if let Some(v) = env("SQUEUE_STATES") {
            p.filters.states = Some(parse_states(prog, &v)?);
            p.filters.suspended = names_state(&v, "SUSPENDED", "S");
            p.filters.special_exit = names_state(&v, "SPECIAL_EXIT", "SE");
            p.filters.configuring = names_state(&v, "CONFIGURING", "CF");
        }
    }
    if p.filters.users.is_none() {
        if let Some(v) = env("SQUEUE_USERS") {
            p.filters.users = Some(parse_users(prog, &v, &mut p.warnings));
        }
    }
    if start {
        if format.is_none() && format_long.is_none() {
            format = Some(START_FORMAT.to_string());
        }
        if sort.is_none() {
            sort = Some("S".to_string());
        }
        if p.filters.states.is_none() {
            p.filters.states = Some(Some(vec![JobState::Pending]));
        }
    }
    p.format = match (format, format_long) {
        (Some(f), _) => parse_format(&f),
        (None, Some(f)) => parse_long_format(&f),
        (None, None) => parse_format(if p.long { LONG_FORMAT } else { DEFAULT_FORMAT }),
    };
    p.sort = sort.unwrap_or_else(|| "P,t,-p".to_string());
    Ok(Parsed::Run(Box::new(p)))
}

fn parse_users(prog: &str, s: &str, warnings: &mut Vec<String>) -> Vec<u32> {
    let mut out = Vec::new();
    for u in split_list(s) {
        match common::resolve_uid(&u) {
            Some(uid) => out.push(uid),
            None => warnings.push(format!("{prog}: error: Invalid user: {u}")),
        }
    }
    out
}

/// The full output for one listing (header unless `-h`, then the jobs).
pub fn render(p: &Params, resp: JobsResponse, cluster: &str) -> Result<String, String> {
    let mut jobs = resp.jobs;
    jobs.retain(|j| p.filters.matches(j));
    let mut ranges = Default::default();
    if !p.expand_arrays {
        (jobs, ranges) = crate::arrays::collapse(jobs);
    }
    // Sorted by reference: a record is large and each key is a stable sort of its own.
    let mut jobs: Vec<&JobInfo> = jobs.iter().collect();
    sort_jobs(&mut jobs, &p.sort, resp.now)?;
    if let Some(m) = p.mime {
        let jobs: Vec<JobInfo> = jobs.into_iter().cloned().collect();
        return Ok(m.render(&crate::slurm_json::jobs(&jobs, &ranges, cluster)));
    }
    let ctx = RenderCtx {
        now: resp.now,
        cluster: cluster.to_string(),
        noconvert: p.noconvert,
        ranges,
    };
    let mut s = String::new();
    if !p.no_header {
        s.push_str(&render_header(&p.format));
    }
    for j in &jobs {
        s.push_str(&render_job(&p.format, j, &ctx));
    }
    Ok(s)
}

/// `gsqueue` entry point.
pub fn main(args: Vec<String>) -> i32 {
    common::run_main(&args, "squeue", run)
}

fn run(prog: &str, args: &[String]) -> Result<i32, Fail> {
    let Some(p) = parse_args(prog, args, &common::env_var, common::current_uid())?.or_print()
    else {
        return Ok(0);
    };
    for w in p.warnings.iter().chain(p.format.errors.iter()) {
        if w.starts_with(prog) {
            common::err_line(w);
        } else {
            common::err_line(&format!("{prog}: error: {w}"));
        }
    }
    let (cfg, client) = common::connect(prog, p.clusters.as_deref())?;
    if let Some(only) = &p.steps {
        let jobs: Vec<u32> = p.filters.jobs.iter().flatten().map(|&(id, _)| id).collect();
        let users = p.filters.users.clone().unwrap_or_default();
        return crate::squeue_steps::run(
            prog,
            &client,
            only,
            &users,
            &jobs,
            p.step_format.as_deref(),
            p.no_header,
        );
    }
    let mut filter = JobFilter::default();
    if let Some(ids) = &p.filters.jobs {
        filter.ids = ids
            .iter()
            .filter(|(_, k)| k.is_none())
            .map(|(id, _)| *id)
            .collect();
        filter.array_tasks = ids.iter().filter_map(|&(id, k)| Some((id, k?))).collect();
    }
    // What the controller can narrow by itself, so that finished jobs still in memory
    // (MinJobAge) and other users' jobs do not travel: the default states (unfinished) and
    // `-u`, when no job is named (a named job must come back to tell "unknown id" from
    // "filtered out"). The filters of `render` still apply in full.
    if p.filters.jobs.is_none() {
        filter.visible_only = !p.all;
        match &p.filters.states {
            None => {
                filter.states = JobState::ALL
                    .into_iter()
                    .filter(|s| !s.is_terminal())
                    .collect();
            }
            Some(None) => {}
            Some(Some(list)) => {
                filter.states = list.clone();
                // A suspended job is a running one with a flag.
                if p.filters.suspended && !list.contains(&JobState::Running) {
                    filter.states.push(JobState::Running);
                }
                // And a SPECIAL_EXIT one a pending one.
                if p.filters.special_exit && !list.contains(&JobState::Pending) {
                    filter.states.push(JobState::Pending);
                }
            }
        }
        if let Some(u) = &p.filters.users {
            filter.user_ids = u.clone();
        }
    }
    let single = p
        .filters
        .jobs
        .as_ref()
        .filter(|ids| ids.len() == 1)
        .map(|ids| ids[0]);
    let fields: Vec<String> = query_fields(&p)
        .unwrap_or_default()
        .into_iter()
        .map(String::from)
        .collect();
    let mut code = 0;
    let dated = !p.no_header && (p.iterate.is_some() || p.verbose > 0 || p.long);
    common::repeat(p.iterate, dated, || {
        let resp: Result<JobsResponse, _> = client.post(
            paths::JOBS_QUERY,
            &JobQuery {
                filter: filter.clone(),
                brief: true,
                fields: fields.clone(),
            },
        );
        match resp {
            Ok(r) => {
                if single.is_some() && !r.jobs.iter().any(|j| filter.names(j)) {
                    common::err_line("slurm_load_jobs error: Invalid job id specified");
                    code = 1;
                }
                if code == 0 || p.iterate.is_some() {
                    let text =
                        render(&p, r, &cfg.cluster_name).map_err(|e| Fail::error(prog, e))?;
                    if code == 0 {
                        common::out(&text);
                    }
                }
            }
            Err(e) => {
                common::err_line(&format!(
                    "slurm_load_jobs error: {}",
                    common::client_error_text(&e)
                ));
                code = 1;
            }
        }
        Ok(())
    })?;
    Ok(code)
}

pub fn usage_text() -> String {
    "Usage: squeue [-A account] [--clusters names] [-i seconds] [--job jobid]\n\
     \x20             [-n name] [-o format] [--only-job-state] [-p partitions]\n\
     \x20             [--qos qos] [--reservation reservation] [--sort fields] [--start]\n\
     \x20             [--step step_id] [-t states] [-u user_name] [--usage]\n\
     \x20             [-L licenses] [-w nodes] [--federation] [--local] [--sibling]\n\
     \x20             [--json] [--yaml]\n\
     \x20             [-ahjlrsv]\n"
        .to_string()
}

pub fn help_text() -> String {
    "Usage: squeue [OPTIONS]\n\
     \x20 -A, --account=account(s)        comma separated list of accounts\n\
     \x20                                 to view, default is all accounts\n\
     \x20 -a, --all                       display jobs in hidden partitions\n\
     \x20     --federation                Report federated information if a member\n\
     \x20                                 of one\n\
     \x20 -h, --noheader                  no headers on output\n\
     \x20     --hide                      do not display jobs in hidden partitions\n\
     \x20 -i, --iterate=seconds           specify an interation period\n\
     \x20 -j, --job=job(s)                comma separated list of jobs IDs\n\
     \x20                                 to view, default is all\n\
     \x20     --json                      Produce JSON output\n\
     \x20     --local                     Report information only about jobs on the\n\
     \x20                                 local cluster. Overrides --federation.\n\
     \x20 -l, --long                      long report\n\
     \x20 -L, --licenses=(license names)  comma separated list of license names to view\n\
     \x20 -M, --clusters=cluster_name     cluster to issue commands to (only the\n\
     \x20                                 local cluster here)\n\
     \x20     --me                        equivalent to --user=<my username>\n\
     \x20 -n, --name=job_name(s)          comma separated list of job names to view\n\
     \x20     --noconvert                 don't convert units from their original type\n\
     \x20                                 (e.g. 2048M won't be converted to 2G).\n\
     \x20 -o, --format=format             format specification\n\
     \x20 -O, --Format=format             format specification\n\
     \x20 -p, --partition=partition(s)    comma separated list of partitions\n\
     \x20                                 to view, default is all partitions\n\
     \x20 -P, --priority                  report jobs by priority\n\
     \x20 -q, --qos=qos(s)                comma separated list of qos's\n\
     \x20                                 to view, default is all qos's\n\
     \x20 -r, --array                     display one job array element per line\n\
     \x20 -R, --reservation=name          reservation to view, default is all\n\
     \x20     --sibling                   Report information about all sibling jobs\n\
     \x20                                 on a federated cluster. Implies --federation.\n\
     \x20 -s, --steps=step(s)             comma separated list of job steps\n\
     \x20                                 to view, default is all\n\
     \x20 -S, --sort=fields               comma separated list of fields to sort on\n\
     \x20     --start                     print expected start times of pending jobs\n\
     \x20 -t, --states=states             comma separated list of states to view,\n\
     \x20                                 default is pending and running,\n\
     \x20                                 '--states=all' reports all states\n\
     \x20 -u, --user=user_name(s)         comma separated list of users to view\n\
     \x20 -v, --verbose                   verbosity level\n\
     \x20 -V, --version                   output version information and exit\n\
     \x20 -w, --nodelist=hostlist         list of nodes to view, default is\n\
     \x20                                 all nodes\n\
     \x20     --yaml                      Produce YAML output\n\
     \n\
     Help options:\n\
     \x20 --help                          show this help message\n\
     \x20 --usage                         display a brief summary of squeue options\n"
        .to_string()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use gsched_proto::job::{JobSpec, Reason};

    pub(crate) fn job(id: u32, state: JobState) -> JobInfo {
        JobInfo {
            special_exit: false,
            epilog_running: false,
            configuring: false,
            gpus: Vec::new(),
            job_id: id,
            name: "job.sh".into(),
            user_id: 1000,
            group_id: 1000,
            user_name: "alice".into(),
            group_name: "users".into(),
            state,
            reason: if state == JobState::Pending {
                Reason::Priority
            } else {
                Reason::None
            },
            partition: "debug".into(),
            priority: 4294901760,
            time_limit: Some(30),
            submit_time: 1_000_000,
            eligible_time: Some(1_000_000),
            start_time: if state == JobState::Pending {
                None
            } else {
                Some(1_000_100)
            },
            end_time: None,
            num_nodes: 2,
            num_cpus: 8,
            num_tasks: 2,
            mem_per_node_mb: 4096,
            nodes: if state == JobState::Pending {
                vec![]
            } else {
                vec!["node01".into(), "node02".into()]
            },
            cpus_per_node: vec![4, 4],
            exit_code: 0,
            exit_signal: 0,
            cancelled_by: None,
            held: false,
            expected_start: None,
            sched_nodes: Vec::new(),
            dependency: None,
            requeue: true,
            restarts: 0,
            array: None,
            priority_factors: None,
            het: None,
            usage: None,
            suspended_since: None,
            suspended_secs: 0,
            invalid: None,
            spec: gsched_proto::job::SharedSpec::new(JobSpec {
                name: "job.sh".into(),
                work_dir: "/home/alice".into(),
                command: "/home/alice/job.sh".into(),
                mem: Some(MemRequest::PerNode(4096)),
                ..Default::default()
            }),
        }
    }

    fn ctx() -> RenderCtx {
        RenderCtx {
            now: 1_003_761,
            cluster: "cluster".into(),
            noconvert: false,
            ranges: Default::default(),
        }
    }

    /// Jobs with every field a format, sort or filter reads set to something other than
    /// its default: pending, running, suspended, finished, array tasks, het components.
    fn rich_jobs() -> Vec<JobInfo> {
        use gsched_proto::array::ArrayTask;
        use gsched_proto::gpu::GpuRequest;
        use gsched_proto::het::HetComponent;
        let mut out = Vec::new();
        for (i, state) in [
            JobState::Pending,
            JobState::Running,
            JobState::Running,
            JobState::Completed,
            JobState::Failed,
            JobState::Pending,
            JobState::Pending,
            JobState::Pending,
            JobState::Running,
            JobState::Completing,
        ]
        .into_iter()
        .enumerate()
        {
            let i = i as u32;
            let mut j = job(100 + i, state);
            j.name = format!("name{}", i % 3);
            j.user_id = 1000 + i % 2;
            j.user_name = format!("user{}", i % 2);
            j.group_id = 2000 + i % 3;
            j.group_name = format!("group{}", i % 3);
            j.partition = if i % 2 == 0 { "debug" } else { "gpu" }.into();
            j.priority = 1000 * (i % 4) + 7;
            j.time_limit = if i == 4 { None } else { Some(30 + i) };
            j.submit_time = 1_000_000 + i64::from(i);
            j.eligible_time = Some(1_000_010 + i64::from(i));
            j.num_nodes = 1 + i % 3;
            j.num_cpus = 2 + i;
            j.num_tasks = 1 + i % 2;
            j.mem_per_node_mb = 1024 * u64::from(i + 1);
            j.exit_code = i32::try_from(i).unwrap();
            j.exit_signal = i32::try_from(i % 2).unwrap() * 9;
            j.restarts = i % 2;
            j.requeue = i % 2 == 0;
            j.dependency = (i == 0).then(|| "afterok:5".to_string());
            j.reason = match state {
                JobState::Pending => [Reason::Priority, Reason::Resources][i as usize % 2],
                JobState::Failed => Reason::NonZeroExitCode,
                _ => Reason::None,
            };
            if state == JobState::Pending {
                j.expected_start = Some(1_005_000 + i64::from(i));
                j.sched_nodes = vec!["node09".into()];
            } else {
                j.start_time = Some(1_000_100 + i64::from(i));
                j.nodes = vec![format!("node0{}", i % 4), "node07".into()];
            }
            if state.is_terminal() {
                j.end_time = Some(1_002_000 + i64::from(i));
            }
            if i == 2 {
                j.suspended_since = Some(1_001_000);
                j.suspended_secs = 50;
            }
            if (5..=7).contains(&i) {
                j.array = Some(ArrayTask {
                    job_id: 105,
                    task_id: i - 5,
                    count: 3,
                    min: 0,
                    max: 2,
                    step: 1,
                    throttle: Some(2),
                });
            }
            if i >= 8 {
                j.het = Some(HetComponent {
                    job_id: 108,
                    offset: i - 8,
                    count: 2,
                });
            }
            let sp = &mut j.spec;
            sp.comment = Some(format!("comment{i}"));
            sp.account = Some(format!("acct{}", i % 2));
            sp.qos = Some(format!("qos{}", i % 2));
            sp.nice = Some(i32::try_from(i).unwrap() - 3);
            sp.constraint = Some("fast".into());
            sp.reservation = Some(format!("resv{}", i % 2));
            sp.nodelist = Some("node01".into());
            sp.exclude = Some("node05".into());
            sp.exclusive = i % 2 == 1;
            sp.cpus_per_task = (i % 3 != 0).then_some(i);
            sp.ntasks_per_node = (i % 2 == 0).then_some(2);
            sp.work_dir = format!("/home/dir{i}");
            sp.stdout = (i % 2 == 0).then(|| format!("/out/{i}"));
            sp.stderr = (i % 3 == 0).then(|| format!("/err/{i}"));
            sp.stdin = (i % 2 == 1).then(|| format!("/in/{i}"));
            sp.time_min = Some(5 + i);
            sp.deadline = Some(2_000_000 + i64::from(i));
            sp.submit_host = format!("login{i}");
            sp.command = format!("/bin/cmd{i}");
            sp.mem = match i % 3 {
                0 => Some(MemRequest::PerNode(512 * u64::from(i + 1))),
                1 => Some(MemRequest::PerCpu(100)),
                _ => None,
            };
            sp.gpu = (i % 2 == 1).then(|| GpuRequest {
                per_node: Some(i),
                per_task: Some(1),
                cpus_per_gpu: Some(2),
                mem_per_gpu_mb: Some(4096),
                ..Default::default()
            });
            out.push(j);
        }
        out
    }

    /// The jobs as the controller sends them when asked for `fields` only.
    fn projected(jobs: &[JobInfo], fields: &[&str]) -> Vec<JobInfo> {
        use gsched_proto::projection::{FieldSet, Projected};
        let keep = FieldSet::for_jobs(fields).expect("known fields");
        jobs.iter()
            .map(|j| {
                let text = serde_json::to_string(&Projected {
                    value: j,
                    keep: &keep,
                })
                .unwrap();
                serde_json::from_str(&text).unwrap()
            })
            .collect()
    }

    fn render_both(args: &[&str]) -> Option<(String, String, Vec<&'static str>)> {
        let Parsed::Run(p) = parse(args).unwrap() else {
            panic!("{args:?}")
        };
        let fields = query_fields(&p)?;
        let full = rich_jobs();
        let resp = |jobs| JobsResponse {
            now: 1_003_761,
            jobs,
            energy: Vec::new(),
            gpu_usage: Vec::new(),
        };
        let a = render(&p, resp(full.clone()), "c").unwrap();
        let b = render(&p, resp(projected(&full, &fields)), "c").unwrap();
        Some((a, b, fields))
    }

    /// Every format letter, `-O` name and sort key, and every filter: the output from the
    /// fields squeue asks for is the output from the whole records.
    #[test]
    fn the_fields_asked_for_give_the_same_output() {
        let mut whole = Vec::new();
        let mut cases: Vec<Vec<String>> = Vec::new();
        for (c, _) in LETTERS {
            cases.push(vec![
                "-t".into(),
                "all".into(),
                "-o".into(),
                format!("%{c} %i"),
            ]);
            cases.push(vec!["-o".into(), format!("%{c}"), "-r".into()]);
        }
        for (n, _) in NAMES {
            cases.push(vec![
                "-t".into(),
                "all".into(),
                "-O".into(),
                format!("{n},jobid"),
            ]);
        }
        for k in "PtTpQiAFjuUgGDClLMmSVeNBr".chars() {
            for sign in ["", "-"] {
                cases.push(vec![
                    "-t".into(),
                    "all".into(),
                    "-S".into(),
                    format!("{sign}{k}"),
                    "-o".into(),
                    "%i".into(),
                ]);
            }
        }
        for f in [
            ["-u", "1001"],
            ["-p", "gpu"],
            ["-n", "name1"],
            ["-w", "node01"],
            ["-A", "acct1"],
            ["-q", "qos0"],
            ["-R", "resv1"],
            ["-t", "S"],
            ["-t", "PD,CD"],
            ["-j", "105"],
            ["-j", "108"],
            ["-j", "106_1"],
        ] {
            cases.push(vec![f[0].into(), f[1].into()]);
            cases.push(vec![f[0].into(), f[1].into(), "--start".into()]);
            cases.push(vec![f[0].into(), f[1].into(), "-l".into()]);
        }
        let mut narrowed = 0;
        for case in &cases {
            let args: Vec<&str> = case.iter().map(String::as_str).collect();
            match render_both(&args) {
                None => whole.push(case.join(" ")),
                Some((a, b, fields)) => {
                    assert_eq!(a, b, "squeue {case:?} asking for {fields:?}");
                    assert!(!a.is_empty());
                    narrowed += 1;
                }
            }
        }
        // The whole record only for tres and tres-alloc (many inputs).
        assert!(whole.iter().all(|c| c.contains("-O tres")), "{whole:?}");
        assert!(narrowed > 150, "{narrowed}");
    }

    #[test]
    fn the_default_listing_asks_for_a_few_fields() {
        let Parsed::Run(p) = parse(&["-h", "-o", "%i %T"]).unwrap() else {
            panic!()
        };
        assert_eq!(
            query_fields(&p).unwrap(),
            [
                "array",
                "configuring",
                "epilog_running",
                "het",
                "job_id",
                "partition",
                "priority",
                "special_exit",
                "state",
                "suspended_since"
            ]
        );
        let Parsed::Run(p) = parse(&["--json"]).unwrap() else {
            panic!()
        };
        assert_eq!(query_fields(&p), None);
    }

    #[test]
    fn default_format_snapshot() {
        let f = parse_format(DEFAULT_FORMAT);
        assert!(f.errors.is_empty());
        assert_eq!(
            render_header(&f),
            "             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)\n"
        );
        assert_eq!(
            render_job(&f, &job(42, JobState::Running), &ctx()),
            "                42     debug   job.sh    alice  R    1:01:01      2 node[01-02]\n"
        );
        assert_eq!(
            render_job(&f, &job(43, JobState::Pending), &ctx()),
            "                43     debug   job.sh    alice PD       0:00      2 (Priority)\n"
        );
    }

    #[test]
    fn long_format_snapshot() {
        let f = parse_format(LONG_FORMAT);
        assert_eq!(
            render_header(&f),
            "             JOBID PARTITION     NAME     USER    STATE       TIME TIME_LIMI  NODES NODELIST(REASON)\n"
        );
        assert_eq!(
            render_job(&f, &job(42, JobState::Running), &ctx()),
            "                42     debug   job.sh    alice  RUNNING    1:01:01     30:00      2 node[01-02]\n"
        );
    }

    #[test]
    fn widths_truncation_prefix_suffix() {
        let mut j = job(7, JobState::Running);
        j.name = "a_rather_long_name".into();
        let f = parse_format("pre%5j|%.5j|%j|%3i%.3T.");
        assert_eq!(f.prefix, "pre");
        assert_eq!(
            render_job(&f, &j, &ctx()),
            "prea_rat|a_rat|a_rather_long_name|7  RUN.\n"
        );
        // Times and node lists are not cut when right-justified.
        let f = parse_format("%.2M|%.3N|%3N");
        assert_eq!(render_job(&f, &j, &ctx()), "1:01:01|node[01-02]|nod\n");
        // Unknown letters are reported and printed literally.
        let f = parse_format("%i %!x");
        assert_eq!(f.errors, vec!["Invalid job format specification: !"]);
        assert_eq!(render_job(&f, &j, &ctx()), "7 %!x\n");
        // Text without % is all prefix.
        assert_eq!(render_job(&parse_format("hello"), &j, &ctx()), "hello\n");
    }

    #[test]
    fn null_values_and_misc_fields() {
        let j = job(7, JobState::Running);
        let f = parse_format(
            "%a|%E|%k|%q|%v|%b|%X|%H|%z|%y|%O|%d|%h|%F|%K|%B|%C|%D|%m|%c|%o|%Z|%Q|%U|%G|%g|%Y",
        );
        assert_eq!(
            render_job(&f, &j, &ctx()),
            "(null)|(null)|(null)|(null)|(null)|N/A|N/A|*|*:*:*|0|0|0|OK|7|N/A|node01|8|2|4G|1|/home/alice/job.sh|/home/alice|4294901760|1000|1000|users|(null)\n"
        );
        let f = parse_format("%p");
        assert_eq!(render_job(&f, &j, &ctx()), "0.99998474144376\n");
        let f = parse_format("%l|%L|%S|%e");
        let s = render_job(&f, &j, &ctx());
        assert!(s.starts_with("30:00|INVALID|"), "{s}");
        assert!(s.contains(&units::format_timestamp(1_000_100)));
        assert!(s.ends_with(&format!("{}\n", units::format_timestamp(1_000_100 + 1800))));
        let p = job(8, JobState::Pending);
        assert_eq!(
            render_job(&parse_format("%S|%e|%B|%M"), &p, &ctx()),
            "N/A|N/A|n/a|0:00\n"
        );
        let mut u = job(9, JobState::Running);
        u.time_limit = None;
        assert_eq!(
            render_job(&parse_format("%l|%L|%e"), &u, &ctx()),
            "UNLIMITED|UNLIMITED|NONE\n"
        );
        let mut f = job(10, JobState::Failed);
        f.reason = Reason::NonZeroExitCode;
        assert_eq!(
            render_job(&parse_format("%R"), &f, &ctx()),
            "(NonZeroExitCode)\n"
        );
        let c = job(11, JobState::Completed);
        assert_eq!(
            render_job(&parse_format("%R|%t"), &c, &ctx()),
            "node[01-02]|CD\n"
        );
    }

    #[test]
    fn all_format_prints_every_letter() {
        let f = parse_format("%all");
        assert!(f.errors.is_empty());
        assert_eq!(f.fields.len(), 52);
        assert!(render_header(&f).starts_with("ACCOUNT|TRES_PER_NODE|MIN_CPUS|"));
    }

    #[test]
    fn long_format_option() {
        let f = parse_long_format("JobID,name:10,state:.8|,Partition:\x1f,bogus:5");
        assert_eq!(f.errors, vec!["Invalid job format specification: bogus"]);
        assert_eq!(f.fields[0].width, 20);
        assert_eq!(f.fields[2].suffix, "|");
        assert!(f.fields[2].right);
        assert_eq!(f.fields[3].width, 0);
        assert_eq!(f.fields[3].suffix, "\x1f");
        let j = job(5, JobState::Pending);
        assert_eq!(
            render_header(&f),
            "JOBID               NAME         STATE|PARTITION\x1f\n"
        );
        assert_eq!(
            render_job(&f, &j, &ctx()),
            "5                   job.sh     PENDING|debug\x1f\n"
        );
        let f = parse_long_format("numtasks,NumTask:4");
        assert_eq!(f.fields.len(), 2);
        assert_eq!(f.fields[1].kind, F::NumTasks);
        // Open OnDemand's tres-alloc, and fields with gsched values or Slurm's unset ones.
        let f = parse_long_format(
            "tres-alloc:|,requeue:|,restartcnt:|,mintime:|,reservation:|,mcslabel:|,profile:|,tres-bind:|,packjobid:",
        );
        assert!(f.errors.is_empty(), "{:?}", f.errors);
        assert_eq!(
            render_header(&f),
            "TRES_ALLOC|REQUEUE|RESTART_COUNT|TIME_MIN|RESERVATION|MCSLABEL|PROFILE|TRES_BIND|HET_JOB_ID\n"
        );
        let mut r = job(6, JobState::Running);
        r.restarts = 2;
        r.spec.time_min = Some(90);
        r.spec.reservation = Some("maint".into());
        r.nodes = vec!["n1".into()];
        assert_eq!(
            render_job(&f, &r, &ctx()),
            "cpu=8,mem=8G,node=2,billing=8|1|2|1:30:00|maint|(null)|NotSet|N/A|N/A\n"
        );
    }

    #[test]
    fn default_sort_partition_state_priority() {
        let mut a = job(1, JobState::Running);
        a.partition = "b".into();
        let mut b = job(2, JobState::Pending);
        b.partition = "a".into();
        b.priority = 10;
        let mut c = job(3, JobState::Pending);
        c.partition = "a".into();
        c.priority = 20;
        let mut d = job(4, JobState::Running);
        d.partition = "a".into();
        let owned = [a, b, c, d];
        let mut jobs: Vec<&JobInfo> = owned.iter().collect();
        sort_jobs(&mut jobs, "P,t,-p", 0).unwrap();
        let ids: Vec<u32> = jobs.iter().map(|j| j.job_id).collect();
        assert_eq!(ids, vec![3, 2, 4, 1]);
        sort_jobs(&mut jobs, "-i", 0).unwrap();
        assert_eq!(jobs[0].job_id, 4);
        assert_eq!(
            sort_jobs(&mut jobs, "Z", 0).unwrap_err(),
            "Invalid sort specification: Z"
        );
    }

    /// `squeue --start` of Slurm 22.05 (bench/results/format-diff): jobs with an expected
    /// start first, those without (N/A) after them in id order; a past estimate counts as now.
    #[test]
    fn start_sort_puts_unknown_start_times_last() {
        let held = job(1005, JobState::Pending);
        let mut big = job(1007, JobState::Pending);
        big.expected_start = Some(5_000);
        let arr = job(1008, JobState::Pending);
        let mut late = job(1009, JobState::Pending);
        late.expected_start = Some(4_000);
        let mut past = job(1010, JobState::Pending);
        past.expected_start = Some(1_000);
        let owned = [arr, big, held, late, past];
        let mut jobs: Vec<&JobInfo> = owned.iter().collect();
        sort_jobs(&mut jobs, "S", 2_000).unwrap();
        let ids: Vec<u32> = jobs.iter().map(|j| j.job_id).collect();
        assert_eq!(ids, vec![1010, 1009, 1007, 1005, 1008]);
    }

    #[test]
    fn filters() {
        let mut f = Filters::default();
        assert!(f.matches(&job(1, JobState::Pending)));
        assert!(!f.matches(&job(1, JobState::Completed)));
        f.states = Some(None);
        assert!(f.matches(&job(1, JobState::Completed)));
        f.names = Some(vec!["JOB.SH".into()]);
        assert!(f.matches(&job(1, JobState::Running)));
        f.partitions = Some(vec!["other".into()]);
        assert!(!f.matches(&job(1, JobState::Running)));
        f.partitions = None;
        f.jobs = Some(vec![(1, Some(3))]);
        assert!(!f.matches(&job(1, JobState::Running)));
        f.jobs = Some(vec![(1, None)]);
        assert!(f.matches(&job(1, JobState::Running)));
    }

    fn parse(args: &[&str]) -> Result<Parsed, Fail> {
        let a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        parse_args("squeue", &a, &|_| None, 1000)
    }

    #[test]
    fn command_line() {
        let Parsed::Run(p) = parse(&["-h", "-t", "pd,R", "-j", "123"]).unwrap() else {
            panic!()
        };
        assert_eq!(
            p.filters.states,
            Some(Some(vec![JobState::Pending, JobState::Running]))
        );
        assert!(p.no_header);
        let e = parse(&["-t", "bogus"]).unwrap_err();
        assert_eq!(
            e.lines[0],
            "squeue: error: Invalid job state specified: bogus"
        );
        let e = parse(&["--foo"]).unwrap_err();
        assert_eq!(
            e.lines,
            vec![
                "squeue: unrecognized option '--foo'",
                "Try \"squeue --help\" for more information"
            ]
        );
        let Parsed::Run(p) = parse(&["-j", "5,6", "-u", "1000", "--me"]).unwrap() else {
            panic!()
        };
        assert_eq!(p.filters.jobs, Some(vec![(5, None), (6, None)]));
        assert_eq!(p.filters.users, Some(vec![1000]));
        let Parsed::Run(p) = parse(&["-j", "77"]).unwrap() else {
            panic!()
        };
        assert_eq!(p.filters.jobs, Some(vec![(77, None)]));
        let Parsed::Run(p) = parse(&["--jobs=77_3"]).unwrap() else {
            panic!()
        };
        assert_eq!(p.filters.jobs, Some(vec![(77, Some(3))]));
        assert!(parse(&["-j", "0"]).is_err());
        let Parsed::Run(p) = parse(&["-t", "all", "-l"]).unwrap() else {
            panic!()
        };
        assert_eq!(p.filters.states, Some(None));
        assert_eq!(p.format, parse_format(LONG_FORMAT));
        assert!(matches!(parse(&["-V"]).unwrap(), Parsed::Print(s) if s == "slurm 22.05.8\n"));
        let Parsed::Run(p) = parse(&["-A", "Physics,chem", "-q", "high"]).unwrap() else {
            panic!()
        };
        assert_eq!(
            p.filters.accounts,
            Some(vec!["physics".to_string(), "chem".to_string()])
        );
        assert_eq!(p.filters.qos, Some(vec!["high".to_string()]));
        let Parsed::Run(p) = parse(&["-L", "matlab,fluent", "-o", "%i %W"]).unwrap() else {
            panic!()
        };
        assert_eq!(
            p.filters.licenses,
            Some(vec!["matlab".to_string(), "fluent".to_string()])
        );
        let mut j = job(7, JobState::Pending);
        assert!(!p.filters.matches(&j));
        j.spec.licenses = vec![("fluent".into(), 2)];
        assert!(p.filters.matches(&j));
        assert_eq!(render_job(&p.format, &j, &ctx()), "7 fluent:2\n");
        assert!(query_fields(&p).unwrap().contains(&"spec.licenses"));
        assert!(parse(&["-o", "%i", "-l"]).is_err());
        let e = parse(&["1", "2"]).unwrap_err();
        assert_eq!(e.lines[0], "squeue: error: Unrecognized option: 1");
    }

    #[test]
    fn env_formats() {
        let a: Vec<String> = vec![];
        let env = |k: &str| match k {
            "SQUEUE_FORMAT" => Some("%i".to_string()),
            "SQUEUE_SORT" => Some("-i".to_string()),
            "SQUEUE_STATES" => Some("all".to_string()),
            _ => None,
        };
        let Parsed::Run(p) = parse_args("squeue", &a, &env, 0).unwrap() else {
            panic!()
        };
        assert_eq!(p.format, parse_format("%i"));
        assert_eq!(p.sort, "-i");
        assert_eq!(p.filters.states, Some(None));
        // -o on the command line beats SQUEUE_FORMAT.
        let a: Vec<String> = vec!["-o".into(), "%j".into()];
        let Parsed::Run(p) = parse_args("squeue", &a, &env, 0).unwrap() else {
            panic!()
        };
        assert_eq!(p.format, parse_format("%j"));
    }

    #[test]
    fn render_filters_sorts_and_json() {
        let resp = JobsResponse {
            now: 1_003_761,
            jobs: vec![
                job(2, JobState::Running),
                job(1, JobState::Pending),
                job(3, JobState::Completed),
            ],
            energy: Vec::new(),
            gpu_usage: Vec::new(),
        };
        let Parsed::Run(p) = parse(&["-h", "-o", "%i %t"]).unwrap() else {
            panic!()
        };
        assert_eq!(render(&p, resp.clone(), "c").unwrap(), "1 PD\n2 R\n");
        let Parsed::Run(p) = parse(&["--json", "-t", "all"]).unwrap() else {
            panic!()
        };
        let out = render(&p, resp.clone(), "c").unwrap();
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["jobs"].as_array().unwrap().len(), 3);
        let pending = v["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|j| j["job_id"] == 1)
            .unwrap();
        assert_eq!(pending["job_state"], "PENDING");
        assert_eq!(pending["state_reason"], "Priority");
        // Filters apply (Slurm 22.05 dumps every job; later releases filter).
        let Parsed::Run(p) = parse(&["--yaml"]).unwrap() else {
            panic!()
        };
        let out = render(&p, resp.clone(), "c").unwrap();
        assert!(out.starts_with("---\nmeta:\n"), "{out}");
        assert_eq!(out.matches("\n    job_id: ").count(), 2, "{out}");
    }
}
