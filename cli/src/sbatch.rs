//! `gsbatch` (`sbatch`): submit a batch script.
//!
//! The options come from three places, merged as Slurm does: `#SBATCH` lines of the script
//! (read like Slurm's `get_argument`: column 0 only, scanning stops at the first command,
//! several options per line, quotes, backslash escapes and trailing `#` comments, then one
//! `getopt_long` pass with prefix matching), then `SBATCH_*` environment variables, then the
//! command line; later sources win. Slurm's exit codes are kept: option errors found while
//! processing values exit 255 (Slurm's `exit(-1)`), numeric and file errors exit 1 (or
//! `$SLURM_EXIT_ERROR`).

use crate::common::{self, env_flag_on, split_list, Fail};
use crate::getopt::{self, GetoptError, HasArg, Opt, Ordering};
use gsched_proto::api::{paths, SubmitRequest, SubmitResponse};
use gsched_proto::client::ClientError;
use gsched_proto::job::{JobSpec, MemRequest, OpenMode};
use gsched_proto::units;

use HasArg::{No, Optional as Opt_, Required as Req};

/// Exit status of Slurm's `exit(-1)` after an option error.
const EXIT_OPTION: i32 = 255;

/// sbatch's options (Slurm 22.05), in Slurm's table order so that ambiguity messages list
/// the same candidates. Options gsched does not implement are parsed (so prefixes resolve as
/// in Slurm) and then refused.
pub const OPTIONS: &[Opt] = &[
    Opt::new("account", Some('A'), &["account"], Req),
    Opt::new("acctg-freq", None, &["acctg-freq"], Req),
    Opt::new("array", Some('a'), &["array"], Req),
    Opt::new("batch", None, &["batch"], Req),
    Opt::new("begin", Some('b'), &["begin"], Req),
    Opt::new("bb", None, &["bb"], Req),
    Opt::new("bbf", None, &["bbf"], Req),
    Opt::new("cluster-constraint", None, &["cluster-constraint"], Req),
    Opt::new("chdir", Some('D'), &["chdir"], Req),
    Opt::new("cluster", None, &["cluster"], Req),
    Opt::new("clusters", Some('M'), &["clusters"], Req),
    Opt::new("comment", None, &["comment"], Req),
    Opt::new("container", None, &["container"], Req),
    Opt::new("context", None, &["context"], Req),
    Opt::new("contiguous", None, &["contiguous"], No),
    Opt::new("constraint", Some('C'), &["constraint"], Req),
    Opt::new("core-spec", Some('S'), &["core-spec"], Req),
    Opt::new("cores-per-socket", None, &["cores-per-socket"], Req),
    Opt::new("cpu-freq", None, &["cpu-freq"], Req),
    Opt::new("cpus-per-gpu", None, &["cpus-per-gpu"], Req),
    Opt::new("cpus-per-task", Some('c'), &["cpus-per-task"], Req),
    Opt::new("deadline", None, &["deadline"], Req),
    Opt::new("delay-boot", None, &["delay-boot"], Req),
    Opt::new("dependency", Some('d'), &["dependency"], Req),
    Opt::new("distribution", Some('m'), &["distribution"], Req),
    Opt::new("error", Some('e'), &["error"], Req),
    Opt::new("exclude", Some('x'), &["exclude"], Req),
    Opt::new("exclusive", None, &["exclusive"], Opt_),
    Opt::new("export", None, &["export"], Req),
    Opt::new("export-file", None, &["export-file"], Req),
    Opt::new("extra-node-info", Some('B'), &["extra-node-info"], Req),
    Opt::new("get-user-env", None, &["get-user-env"], Opt_),
    Opt::new("gid", None, &["gid"], Req),
    Opt::new("gpu-bind", None, &["gpu-bind"], Req),
    Opt::new("gpu-freq", None, &["gpu-freq"], Req),
    Opt::new("gpus", Some('G'), &["gpus"], Req),
    Opt::new("gpus-per-node", None, &["gpus-per-node"], Req),
    Opt::new("gpus-per-socket", None, &["gpus-per-socket"], Req),
    Opt::new("gpus-per-task", None, &["gpus-per-task"], Req),
    Opt::new("gres", None, &["gres"], Req),
    Opt::new("gres-flags", None, &["gres-flags"], Req),
    Opt::new("help", Some('h'), &["help"], No),
    Opt::new("hint", None, &["hint"], Req),
    Opt::new("hold", Some('H'), &["hold"], No),
    Opt::new("ignore-pbs", None, &["ignore-pbs"], No),
    Opt::new("input", Some('i'), &["input"], Req),
    Opt::new("job-name", Some('J'), &["job-name"], Req),
    Opt::new("kill-on-invalid-dep", None, &["kill-on-invalid-dep"], Req),
    Opt::new("licenses", Some('L'), &["licenses"], Req),
    Opt::new("mail-type", None, &["mail-type"], Req),
    Opt::new("mail-user", None, &["mail-user"], Req),
    Opt::new("mcs-label", None, &["mcs-label"], Req),
    Opt::new("mem", None, &["mem"], Req),
    Opt::new("mem-bind", None, &["mem-bind"], Req),
    Opt::new("mem-per-cpu", None, &["mem-per-cpu"], Req),
    Opt::new("mem-per-gpu", None, &["mem-per-gpu"], Req),
    Opt::new("mincpus", None, &["mincpus"], Req),
    Opt::new("network", None, &["network"], Req),
    Opt::new("nice", None, &["nice"], Opt_),
    Opt::new("no-kill", Some('k'), &["no-kill"], Opt_),
    Opt::new("no-requeue", None, &["no-requeue"], No),
    Opt::new("nodefile", Some('F'), &["nodefile"], Req),
    Opt::new("nodelist", Some('w'), &["nodelist"], Req),
    Opt::new("nodes", Some('N'), &["nodes"], Req),
    Opt::new("ntasks", Some('n'), &["ntasks"], Req),
    Opt::new("ntasks-per-core", None, &["ntasks-per-core"], Req),
    Opt::new("ntasks-per-gpu", None, &["ntasks-per-gpu"], Req),
    Opt::new(
        "ntasks-per-node",
        None,
        &["ntasks-per-node", "tasks-per-node"],
        Req,
    ),
    Opt::new("ntasks-per-socket", None, &["ntasks-per-socket"], Req),
    Opt::new("ntasks-per-tres", None, &["ntasks-per-tres"], Req),
    Opt::new("open-mode", None, &["open-mode"], Req),
    Opt::new("output", Some('o'), &["output"], Req),
    Opt::new("overcommit", Some('O'), &["overcommit"], No),
    Opt::new("oversubscribe", Some('s'), &["oversubscribe"], No),
    Opt::new("parsable", None, &["parsable"], No),
    Opt::new("partition", Some('p'), &["partition"], Req),
    Opt::new("power", None, &["power"], Req),
    Opt::new("prefer", None, &["prefer"], Req),
    Opt::new("priority", None, &["priority"], Req),
    Opt::new("profile", None, &["profile"], Req),
    Opt::new("propagate", None, &["propagate"], Opt_),
    Opt::new("qos", Some('q'), &["qos"], Req),
    Opt::new("quiet", Some('Q'), &["quiet"], No),
    Opt::new("reboot", None, &["reboot"], No),
    Opt::new("requeue", None, &["requeue"], No),
    Opt::new("reservation", None, &["reservation"], Req),
    Opt::new("signal", None, &["signal"], Req),
    Opt::new("sockets-per-node", None, &["sockets-per-node"], Req),
    Opt::new("spread-job", None, &["spread-job"], No),
    Opt::new("switches", None, &["switches"], Req),
    Opt::new("test-only", None, &["test-only"], No),
    Opt::new("thread-spec", None, &["thread-spec"], Req),
    Opt::new("threads-per-core", None, &["threads-per-core"], Req),
    Opt::new("time", Some('t'), &["time"], Req),
    Opt::new("time-min", None, &["time-min"], Req),
    Opt::new("tmp", None, &["tmp"], Req),
    Opt::new("uid", None, &["uid"], Req),
    Opt::new("use-min-nodes", None, &["use-min-nodes"], No),
    Opt::new("verbose", Some('v'), &["verbose"], No),
    Opt::new("version", Some('V'), &["version"], No),
    Opt::new("usage", None, &["usage"], No),
    Opt::new("wait", Some('W'), &["wait"], No),
    Opt::new("wait-all-nodes", None, &["wait-all-nodes"], Req),
    Opt::new("wckey", None, &["wckey"], Req),
    Opt::new("wrap", None, &["wrap"], Req),
    // gsched extensions.
    Opt::new("urgent", None, &["urgent"], No),
    // gsched's own (not in Slurm): a share of one GPU.
    Opt::new("gpu-mem", None, &["gpu-mem"], Req),
    Opt::new("gpu-share", None, &["gpu-share"], Req),
];

/// Options gsched implements (or accepts because they are harmless: `--ignore-pbs`,
/// `--wckey` (no accounting, as Slurm with
/// `TrackWCKey=no`), `-M` naming the local cluster). Every other option is refused.
const IMPLEMENTED: &[&str] = &[
    "licenses",
    "priority",
    "nodefile",
    "wait-all-nodes",
    "propagate",
    "mail-type",
    "mail-user",
    "account",
    "nodelist",
    "exclude",
    "constraint",
    "exclusive",
    "nice",
    "begin",
    "array",
    "chdir",
    "cluster",
    "clusters",
    "comment",
    "cpus-per-task",
    "dependency",
    "error",
    "export",
    "gid",
    "help",
    "hold",
    "ignore-pbs",
    "input",
    "job-name",
    "kill-on-invalid-dep",
    "mem",
    "mem-per-cpu",
    "no-requeue",
    "nodes",
    "ntasks",
    "ntasks-per-node",
    "open-mode",
    "output",
    "parsable",
    "partition",
    "quiet",
    "requeue",
    "signal",
    "test-only",
    "time",
    "time-min",
    "uid",
    "usage",
    "verbose",
    "version",
    "wait",
    "wckey",
    "wrap",
    "qos",
    "switches",
    "urgent",
    "deadline",
    "gres",
    "gpus",
    "gpus-per-node",
    "gpus-per-task",
    "cpus-per-gpu",
    "mem-per-gpu",
    "gpu-mem",
    "gpu-share",
    "reservation",
    "get-user-env",
];

/// Options handled only in the first pass (command line); Slurm ignores them in `#SBATCH`
/// lines and the environment.
const EARLY: &[&str] = &["help", "quiet", "usage", "verbose", "version", "wrap"];

/// The `SBATCH_*` variables Slurm 22.05 reads, in its order, and the option each sets.
const ENV_VARS: &[(&str, &str)] = &[
    ("SBATCH_ACCOUNT", "account"),
    ("SBATCH_ARRAY_INX", "array"),
    ("SBATCH_ACCTG_FREQ", "acctg-freq"),
    ("SBATCH_BATCH", "batch"),
    ("SBATCH_BURST_BUFFER", "bb"),
    ("SBATCH_CLUSTER_CONSTRAINT", "cluster-constraint"),
    ("SBATCH_CLUSTERS", "clusters"),
    ("SLURM_CLUSTERS", "clusters"),
    ("SBATCH_CONTAINER", "container"),
    ("SBATCH_CONSTRAINT", "constraint"),
    ("SBATCH_CORE_SPEC", "core-spec"),
    ("SBATCH_CPU_FREQ_REQ", "cpu-freq"),
    ("SBATCH_CPUS_PER_GPU", "cpus-per-gpu"),
    ("SBATCH_DEBUG", "verbose"),
    ("SBATCH_DELAY_BOOT", "delay-boot"),
    ("SBATCH_DISTRIBUTION", "distribution"),
    ("SBATCH_EXCLUSIVE", "exclusive"),
    ("SBATCH_EXPORT", "export"),
    ("SBATCH_GET_USER_ENV", "get-user-env"),
    ("SBATCH_GRES", "gres"),
    ("SBATCH_GRES_FLAGS", "gres-flags"),
    ("SBATCH_GPUS", "gpus"),
    ("SBATCH_GPU_BIND", "gpu-bind"),
    ("SBATCH_GPU_FREQ", "gpu-freq"),
    ("SBATCH_GPUS_PER_NODE", "gpus-per-node"),
    ("SBATCH_GPUS_PER_SOCKET", "gpus-per-socket"),
    ("SBATCH_GPUS_PER_TASK", "gpus-per-task"),
    ("SLURM_HINT", "hint"),
    ("SBATCH_HINT", "hint"),
    ("SBATCH_JOB_NAME", "job-name"),
    ("SBATCH_MEM_BIND", "mem-bind"),
    ("SBATCH_MEM_PER_CPU", "mem-per-cpu"),
    ("SBATCH_MEM_PER_GPU", "mem-per-gpu"),
    ("SBATCH_MEM_PER_NODE", "mem"),
    ("SBATCH_NETWORK", "network"),
    ("SBATCH_NO_KILL", "no-kill"),
    ("SBATCH_NO_REQUEUE", "no-requeue"),
    ("SBATCH_OPEN_MODE", "open-mode"),
    ("SBATCH_OVERCOMMIT", "overcommit"),
    ("SBATCH_PARTITION", "partition"),
    ("SBATCH_POWER", "power"),
    ("SBATCH_PROFILE", "profile"),
    ("SBATCH_QOS", "qos"),
    ("SBATCH_REQ_SWITCH", "switches"),
    ("SBATCH_REQUEUE", "requeue"),
    ("SBATCH_RESERVATION", "reservation"),
    ("SBATCH_SIGNAL", "signal"),
    ("SBATCH_SPREAD_JOB", "spread-job"),
    ("SBATCH_THREAD_SPEC", "thread-spec"),
    ("SBATCH_THREADS_PER_CORE", "threads-per-core"),
    ("SBATCH_TIMELIMIT", "time"),
    ("SBATCH_USE_MIN_NODES", "use-min-nodes"),
    ("SBATCH_WAIT", "wait"),
    ("SBATCH_WAIT_ALL_NODES", "wait-all-nodes"),
    ("SBATCH_WAIT4SWITCH", "switches"),
    ("SBATCH_WCKEY", "wckey"),
    ("SBATCH_ERROR", "error"),
    ("SBATCH_INPUT", "input"),
    ("SBATCH_OUTPUT", "output"),
    // gsched's own options' variables.
    ("SBATCH_GPU_MEM", "gpu-mem"),
    ("SBATCH_GPU_SHARE", "gpu-share"),
];

/// Where an option came from (later sources win).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Source {
    Script,
    Env(&'static str),
    Cli,
}

impl Source {
    fn rank(self) -> u8 {
        match self {
            Source::Script => 0,
            Source::Env(_) => 1,
            Source::Cli => 2,
        }
    }
}

/// The options as merged so far.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Opts {
    pub job_name: Option<String>,
    pub output: Option<String>,
    pub error: Option<String>,
    pub input: Option<String>,
    /// Absolute.
    pub chdir: Option<String>,
    pub partitions: Option<Vec<String>>,
    /// `Some(None)` = UNLIMITED.
    pub time: Option<Option<u32>>,
    /// `--time-min`, minutes; 0 and UNLIMITED (no lowering at all) are `None`.
    pub time_min: Option<u32>,
    pub nodes: Option<(u32, u32)>,
    pub ntasks: Option<u32>,
    pub cpus_per_task: Option<u32>,
    pub ntasks_per_node: Option<u32>,
    /// Per source rank: (value, rank).
    pub mem: Option<(u64, u8)>,
    pub mem_per_cpu: Option<(u64, u8)>,
    pub export: Option<String>,
    pub open_mode: Option<OpenMode>,
    pub parsable: bool,
    pub hold: bool,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    pub clusters: Option<String>,
    pub ignore_pbs: bool,
    /// `-d`, as given.
    pub dependency: Option<String>,
    /// `-b`, resolved.
    pub begin: Option<i64>,
    pub kill_on_invalid_dep: Option<bool>,
    /// `--requeue` / `--no-requeue`.
    pub requeue: Option<bool>,
    /// `-a/--array`, as given.
    pub array: Option<String>,
    /// `--comment`.
    pub comment: Option<String>,
    /// `--mail-type`, parsed.
    pub mail_type: gsched_proto::mail::MailTypes,
    /// `--mail-user`.
    pub mail_user: Option<String>,
    /// Things the options asked for that were passed over, to print as warnings.
    pub warnings: Vec<String>,
    /// `--signal`, parsed.
    pub warn_signal: Option<gsched_proto::job::WarnSignal>,
    /// `-W/--wait`.
    pub wait: bool,
    /// `--test-only`.
    pub test_only: bool,
    /// `--switches=N[@time]`, parsed.
    pub switches: Option<gsched_proto::resv::SwitchesSpec>,
    /// `--reservation`.
    pub reservation: Option<String>,
    /// `-A/--account`, lower-cased.
    pub account: Option<String>,
    /// `-q/--qos`, lower-cased.
    pub qos: Option<String>,
    /// `--nice[=N]`.
    pub nice: Option<i32>,
    /// `-w/--nodelist`, as given (checked as a hostlist), or read from `--nodefile` (or a
    /// `-w` value with a `/`, which sbatch takes as a file).
    pub nodelist: Option<String>,
    /// `--priority=N|TOP` (kept by the controller for operators only, as slurmctld).
    pub priority: Option<u32>,
    /// `-L/--licenses`.
    pub licenses: Vec<gsched_proto::licenses::License>,
    /// `-x/--exclude`, as given (checked as a hostlist).
    pub exclude: Option<String>,
    /// `-C/--constraint`, as given (checked).
    pub constraint: Option<String>,
    /// `--exclusive`.
    pub exclusive: bool,
    /// `--urgent` (gsched): never deferred to a cheaper price window.
    pub urgent: bool,
    /// `--deadline`, epoch seconds.
    pub deadline: Option<i64>,
    /// `--gres`, `--gpus*`, `--cpus-per-gpu`, `--mem-per-gpu`, `--gpu-mem`, `--gpu-share`.
    pub gpu: crate::gpu_opts::GpuOpts,
    /// `--get-user-env[=timeout][S|L]`: (timeout in seconds, login shell).
    pub get_user_env: Option<(u32, bool)>,
    /// `--propagate[=rlimits]`: the resource limits to propagate whatever the config says
    /// (`gsched_proto::rlimits`).
    pub propagate: Option<Vec<&'static str>>,
}

/// Loads `user`'s login environment within `timeout` seconds, with a login shell or not.
pub type UserEnvFn = fn(&str, u32, bool) -> Result<Vec<(String, String)>, String>;

/// Slurm's default `--get-user-env` timeout, in seconds.
pub const GET_USER_ENV_TIMEOUT: u32 = 8;

/// `--get-user-env`'s value as Slurm reads it: an optional number of seconds, then `S`
/// (`su <user>`) or `L` (`su - <user>`, the default); anything else after the number is
/// ignored, as in Slurm.
pub fn parse_get_user_env(v: Option<&str>) -> (u32, bool) {
    let v = v.unwrap_or("");
    let digits: String = v.chars().take_while(char::is_ascii_digit).collect();
    let timeout = match digits.parse::<u32>() {
        Ok(t) if t > 0 => t,
        _ => GET_USER_ENV_TIMEOUT,
    };
    let login = !matches!(v[digits.len()..].chars().next(), Some('s' | 'S'));
    (timeout, login)
}

/// The login environment of `user` (`su [-] user -c env`, killed after `timeout` seconds),
/// for `--get-user-env`.
pub fn login_environment(
    user: &str,
    timeout: u32,
    login: bool,
) -> Result<Vec<(String, String)>, String> {
    use std::process::{Command, Stdio};
    let mut cmd = Command::new("su");
    if login {
        cmd.arg("-");
    }
    let mut child = cmd
        .args([user, "-c", "/usr/bin/env"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run su: {e}"))?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(timeout.into());
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("su {user} did not answer within {timeout} s"));
            }
        }
    }
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!("su {user} failed ({})", out.status));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once('='))
        .filter(|(k, _)| !k.is_empty() && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect())
}

/// Facts about the caller that option processing needs.
#[derive(Debug, Clone)]
pub struct Caller {
    pub cwd: String,
    pub uid: u32,
}

impl Opts {
    /// Applies one option. `arg` is the value (`None` for flags).
    pub fn apply(
        &mut self,
        prog: &str,
        id: &str,
        arg: Option<&str>,
        src: Source,
        caller: &Caller,
    ) -> Result<(), Fail> {
        if !IMPLEMENTED.contains(&id) {
            let from = match src {
                Source::Env(var) => format!(" (from {var})"),
                _ => String::new(),
            };
            return Err(Fail::not_supported(prog, &format!("--{id}{from}")));
        }
        if src != Source::Cli && EARLY.contains(&id) {
            return Ok(());
        }
        let val = arg.unwrap_or("");
        let opt_err = |msg: &str| Fail::error(prog, msg).with_code(EXIT_OPTION);
        match id {
            "job-name" => self.job_name = Some(val.to_string()),
            "array" => self.array = Some(val.to_string()),
            "output" => self.output = Some(val.to_string()),
            "error" => self.error = Some(val.to_string()),
            "input" => self.input = Some(val.to_string()),
            "chdir" => self.chdir = Some(absolute(&caller.cwd, val)),
            "partition" => self.partitions = Some(split_list(val)),
            "time" => match units::parse_time_limit(val) {
                Ok(t) => self.time = Some(t),
                Err(_) => return Err(opt_err("Invalid --time specification")),
            },
            "time-min" => match units::parse_time_minutes(val) {
                Ok(t) => self.time_min = t.filter(|&m| m != 0),
                Err(_) => return Err(opt_err("Invalid time-min specification")),
            },
            "nodes" => self.nodes = Some(parse_nodes(prog, val)?),
            "ntasks" => self.ntasks = Some(parse_int(prog, "--ntasks", val)?),
            "cpus-per-task" => self.cpus_per_task = Some(parse_int(prog, "--cpus-per-task", val)?),
            "ntasks-per-node" => {
                self.ntasks_per_node = Some(parse_int(prog, "--ntasks-per-node", val)?)
            }
            "mem" => match units::parse_memory_mb(val) {
                Ok(m) => self.mem = Some((m, src.rank())),
                Err(_) => return Err(opt_err("Invalid --mem specification")),
            },
            "mem-per-cpu" => match units::parse_memory_mb(val) {
                Ok(m) => self.mem_per_cpu = Some((m, src.rank())),
                Err(_) => return Err(opt_err("Invalid --mem-per-cpu specification")),
            },
            "export" => self.export = Some(val.to_string()),
            "open-mode" => {
                self.open_mode = Some(match val.chars().next() {
                    Some('a' | 'A') => OpenMode::Append,
                    Some('t' | 'T') => OpenMode::Truncate,
                    _ => return Err(opt_err("Invalid --open-mode specification")),
                })
            }
            "parsable" => self.parsable = true,
            "get-user-env" => self.get_user_env = Some(parse_get_user_env(arg)),
            "propagate" => {
                let list = arg.unwrap_or("ALL");
                self.propagate =
                    Some(gsched_proto::rlimits::parse_list(list).map_err(|_| {
                        Fail::error(prog, format!("--propagate={list} is not valid."))
                    })?);
            }
            "hold" => self.hold = true,
            "ignore-pbs" => self.ignore_pbs = true,
            "uid" => {
                if caller.uid != 0 {
                    return Err(opt_err("--uid only permitted by root user"));
                }
                self.uid = Some(
                    common::resolve_uid(val)
                        .ok_or_else(|| opt_err("Invalid --uid specification"))?,
                );
            }
            "gid" => {
                if caller.uid != 0 {
                    return Err(opt_err("--gid only permitted by root user"));
                }
                self.gid = Some(
                    crate::sys::resolve_gid(val)
                        .ok_or_else(|| opt_err("Invalid --gid specification"))?,
                );
            }
            "cluster" | "clusters" => self.clusters = Some(val.to_string()),
            "dependency" => self.dependency = Some(val.to_string()),
            "begin" => match gsched_proto::begin::parse_begin(val, crate::common::now()) {
                Ok(t) => self.begin = Some(t),
                Err(_) => return Err(opt_err("Invalid --begin specification")),
            },
            // Slurm parses --deadline with the --begin time parser.
            "deadline" => match gsched_proto::begin::parse_begin(val, crate::common::now()) {
                Ok(t) => self.deadline = Some(t),
                Err(_) => return Err(opt_err("Invalid --deadline specification")),
            },
            "urgent" => self.urgent = true,
            "kill-on-invalid-dep" => {
                self.kill_on_invalid_dep = Some(match val.to_ascii_lowercase().as_str() {
                    "yes" | "y" | "1" => true,
                    "no" | "n" | "0" => false,
                    _ => return Err(opt_err("Invalid --kill-on-invalid-dep specification")),
                })
            }
            "requeue" => self.requeue = Some(true),
            "no-requeue" => self.requeue = Some(false),
            "comment" => self.comment = Some(val.to_string()),
            "mail-type" => match gsched_proto::mail::MailTypes::parse(val) {
                // Slurm passes over words it does not know; gsched says so.
                Some(m) => {
                    self.mail_type = m;
                    for w in gsched_proto::mail::MailTypes::unknown_words(val) {
                        self.warnings
                            .push(format!("--mail-type: ignoring unknown mail type \"{w}\""));
                    }
                }
                None => return Err(opt_err("Invalid --mail-type specification")),
            },
            "mail-user" => self.mail_user = Some(val.to_string()),
            "reservation" => self.reservation = Some(val.to_string()),
            "switches" => match gsched_proto::resv::SwitchesSpec::parse(val) {
                Ok(w) => self.switches = Some(w),
                Err(e) => return Err(opt_err(&e)),
            },
            "signal" => match crate::signals::parse_warn_signal(val) {
                Ok(w) => self.warn_signal = Some(w),
                Err(crate::signals::WarnSignalError::Reservation) => {
                    return Err(Fail::not_supported(prog, "--signal with R: (reservations)"))
                }
                Err(crate::signals::WarnSignalError::Invalid) => {
                    return Err(opt_err("Invalid --signal specification"))
                }
            },
            "wait" => self.wait = true,
            "test-only" => self.test_only = true,
            "account" => self.account = Some(val.to_ascii_lowercase()),
            "qos" => self.qos = Some(val.trim().to_ascii_lowercase()).filter(|q| !q.is_empty()),
            "nice" => self.nice = Some(parse_nice(prog, arg)?),
            "nodefile" => self.nodelist = Some(read_node_file(prog, val)?),
            "nodelist" if val.contains('/') => self.nodelist = Some(read_node_file(prog, val)?),
            "priority" => self.priority = Some(parse_priority(prog, val)?),
            "licenses" => {
                self.licenses = gsched_proto::licenses::parse(val).map_err(|e| opt_err(&e))?
            }
            // gsched's nodes are ready when allocated (no power saving, no boot for a job):
            // both values start the script at once, as Slurm's 1 does once nodes booted.
            "wait-all-nodes" => match val.trim() {
                "0" | "1" => {}
                _ => {
                    return Err(opt_err(&format!(
                        "Invalid --wait-all-nodes argument: {val}"
                    )))
                }
            },
            "nodelist" | "exclude" => {
                if gsched_proto::hostlist::expand(val).is_err() {
                    return Err(opt_err(&format!("Invalid node name specified: {val}")));
                }
                if id == "nodelist" {
                    self.nodelist = Some(val.to_string());
                } else {
                    self.exclude = Some(val.to_string());
                }
            }
            "constraint" => match gsched_proto::job::parse_constraint(val) {
                Ok(_) => self.constraint = Some(val.trim().to_string()),
                Err(e) => return Err(opt_err(&e)),
            },
            "exclusive" => match arg.map(str::trim) {
                None | Some("") | Some("exclusive") => self.exclusive = true,
                Some(v @ ("user" | "mcs" | "topo")) => {
                    return Err(Fail::not_supported(prog, &format!("--exclusive={v}")))
                }
                Some(v) => return Err(opt_err(&format!("Invalid --exclusive specification: {v}"))),
            },
            "gres" => match crate::gpu_opts::parse_gres(val) {
                Ok(g) => self.gpu.gres = Some(g),
                Err(e) => return Err(opt_err(&e)),
            },
            "gpus" | "gpus-per-node" | "gpus-per-task" => {
                let c = crate::gpu_opts::parse_count(val)
                    .ok_or_else(|| opt_err(&format!("Invalid --{id} specification: {val}")))?;
                *match id {
                    "gpus" => &mut self.gpu.gpus,
                    "gpus-per-node" => &mut self.gpu.per_node,
                    _ => &mut self.gpu.per_task,
                } = Some(c);
            }
            "cpus-per-gpu" => self.gpu.cpus_per_gpu = Some(parse_int(prog, "--cpus-per-gpu", val)?),
            "mem-per-gpu" => match units::parse_memory_mb(val) {
                Ok(m) => self.gpu.mem_per_gpu = Some((m, src.rank())),
                Err(_) => return Err(opt_err("Invalid --mem-per-gpu specification")),
            },
            "gpu-mem" => match crate::gpu_opts::parse_gpu_mem(val) {
                Some(m) => self.gpu.gpu_mem = Some(m),
                None => {
                    return Err(opt_err(&format!(
                        "Invalid --gpu-mem specification: {val} (GPU memory, e.g. 40G or 512M)"
                    )))
                }
            },
            "gpu-share" => match crate::gpu_opts::parse_share(val) {
                Some(p) => self.gpu.gpu_share = Some(p),
                None => {
                    return Err(opt_err(&format!(
                        "Invalid --gpu-share specification: {val} (a percentage from 1 to 100)"
                    )))
                }
            },
            // Accepted without effect: see IMPLEMENTED.
            "wckey" => {}
            _ => {}
        }
        Ok(())
    }

    /// The memory request after Slurm's rule: the highest source that sets any memory
    /// option decides, and may set only one of them.
    pub fn memory(&self, prog: &str) -> Result<Option<MemRequest>, Fail> {
        let top = [
            self.mem.map(|m| m.1),
            self.mem_per_cpu.map(|m| m.1),
            self.gpu.mem_per_gpu.map(|m| m.1),
        ]
        .into_iter()
        .flatten()
        .max();
        let Some(top) = top else { return Ok(None) };
        let node = self.mem.filter(|m| m.1 == top);
        let cpu = self.mem_per_cpu.filter(|m| m.1 == top);
        let gpu = self.gpu.mem_per_gpu.is_some_and(|m| m.1 == top);
        let two = (node.is_some() as u8 + cpu.is_some() as u8 + gpu as u8) > 1;
        match (node, cpu) {
            _ if two => {
                let msg = if top == Source::Env("").rank() {
                    "SLURM_MEM_PER_CPU, SLURM_MEM_PER_GPU, and SLURM_MEM_PER_NODE are mutually exclusive."
                } else {
                    "--mem, --mem-per-cpu, and --mem-per-gpu are mutually exclusive."
                };
                Err(Fail::raw(1, vec![format!("{prog}: fatal: {msg}")]))
            }
            (Some(m), None) => Ok(Some(MemRequest::PerNode(m.0))),
            (None, Some(m)) => Ok(Some(MemRequest::PerCpu(m.0))),
            // --mem-per-gpu decides: the controller makes it the memory per node.
            _ => Ok(None),
        }
    }
}

impl Opts {
    /// The GPU request of the options (see [`crate::gpu_opts`]); `None` without GPUs.
    pub fn gpu_request(&self, prog: &str) -> Result<Option<gsched_proto::gpu::GpuRequest>, Fail> {
        let top = [self.mem.map(|m| m.1), self.mem_per_cpu.map(|m| m.1)]
            .into_iter()
            .flatten()
            .max();
        let wins = self
            .gpu
            .mem_per_gpu
            .is_some_and(|m| top.is_none_or(|t| m.1 >= t));
        self.gpu
            .request(wins, self.cpus_per_task.is_some())
            .map_err(|e| Fail::error(prog, e).with_code(EXIT_OPTION))
    }
}

impl Opts {
    /// What the next component of a heterogeneous job starts from: the options Slurm
    /// propagates from one component to the next (its list in "Heterogeneous Job Support");
    /// partition, node and task counts, CPUs, memory and placement start afresh.
    pub fn propagated(&self) -> Opts {
        Opts {
            job_name: self.job_name.clone(),
            output: self.output.clone(),
            error: self.error.clone(),
            input: self.input.clone(),
            chdir: self.chdir.clone(),
            time: self.time,
            time_min: self.time_min,
            export: self.export.clone(),
            open_mode: self.open_mode,
            parsable: self.parsable,
            hold: self.hold,
            uid: self.uid,
            gid: self.gid,
            clusters: self.clusters.clone(),
            ignore_pbs: self.ignore_pbs,
            dependency: self.dependency.clone(),
            begin: self.begin,
            kill_on_invalid_dep: self.kill_on_invalid_dep,
            requeue: self.requeue,
            comment: self.comment.clone(),
            warn_signal: self.warn_signal,
            wait: self.wait,
            test_only: self.test_only,
            account: self.account.clone(),
            nice: self.nice,
            priority: self.priority,
            licenses: self.licenses.clone(),
            exclude: self.exclude.clone(),
            ..Opts::default()
        }
    }
}

/// `--priority`: `TOP` (the highest, Slurm's `NO_VAL - 1`) or a number below `NO_VAL`.
fn parse_priority(prog: &str, val: &str) -> Result<u32, Fail> {
    let v = val.trim();
    if v.eq_ignore_ascii_case("TOP") {
        return Ok(u32::MAX - 2);
    }
    match v.parse::<i64>() {
        Ok(p) if p < 0 => Err(Fail::error(prog, "Priority must be >= 0")),
        Ok(p) if p >= i64::from(u32::MAX - 1) => Err(Fail::error(
            prog,
            format!("Priority must be < {}", u32::MAX - 1),
        )),
        Ok(p) => Ok(p as u32),
        Err(_) => Err(Fail::error(
            prog,
            format!("Invalid --priority specification: {val} (a number or TOP)"),
        )),
    }
}

/// `--nodefile` (and `-w` with a `/`): the hosts of a file, one expression a line, `#`
/// comments, as Slurm's `slurm_read_hostfile`; returned as one hostlist.
fn read_node_file(prog: &str, path: &str) -> Result<String, Fail> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Fail::error(prog, format!("Invalid --nodefile node file {path}: {e}")))?;
    let mut hosts = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        for expr in line.split_whitespace() {
            let names = gsched_proto::hostlist::expand(expr).map_err(|_| {
                Fail::error(
                    prog,
                    format!("Invalid node name specified: {expr} (in {path})"),
                )
            })?;
            hosts.extend(names);
        }
    }
    if hosts.is_empty() {
        return Err(Fail::error(
            prog,
            format!("Invalid --nodefile node file {path}: it names no node"),
        ));
    }
    Ok(gsched_proto::hostlist::compress(&hosts))
}

/// `--nice[=N]`: 100 without a value; Slurm's range check. Negative values are checked by
/// the controller (only root and SlurmUser may use them).
fn parse_nice(prog: &str, arg: Option<&str>) -> Result<i32, Fail> {
    let Some(v) = arg else { return Ok(100) };
    match v.trim().parse::<i64>() {
        Ok(n) => gsched_proto::job::nice_in_range(n).ok_or_else(|| {
            Fail::error(
                prog,
                format!(
                    "Invalid --nice value, out of range (+/- {})",
                    gsched_proto::job::NICE_LIMIT
                ),
            )
        }),
        Err(_) => Err(Fail::error(prog, format!("Invalid --nice value \"{v}\""))),
    }
}

/// Slurm's `parse_int` for positive counts: `Invalid numeric value "x" for --ntasks.`, exit 1.
fn parse_int(prog: &str, name: &str, val: &str) -> Result<u32, Fail> {
    match val.parse::<i64>() {
        Ok(n) if n > 0 && n <= i64::from(i32::MAX) => Ok(n as u32),
        _ => Err(Fail::error(
            prog,
            format!("Invalid numeric value \"{val}\" for {name}."),
        )),
    }
}

/// `-N min[-max]` with Slurm's `k`/`m` multipliers. Returns (min, max); max 0 = not given.
pub fn parse_nodes(prog: &str, val: &str) -> Result<(u32, u32), Fail> {
    fn one(s: &str) -> Option<i64> {
        let t = s.trim_start();
        let digits = t
            .char_indices()
            .take_while(|(i, c)| c.is_ascii_digit() || (*i == 0 && (*c == '-' || *c == '+')))
            .count();
        if digits == 0 || !t[..digits].chars().any(|c| c.is_ascii_digit()) {
            return None;
        }
        let mut n: i64 = t[..digits].parse().ok()?;
        let mut rest = &t[digits..];
        if let Some(r) = rest.strip_prefix(['k', 'K']) {
            n = n.checked_mul(1024)?;
            rest = r;
        }
        if let Some(r) = rest.strip_prefix(['m', 'M']) {
            n = n.checked_mul(1024 * 1024)?;
            rest = r;
        }
        if !rest.trim().is_empty() {
            return None;
        }
        Some(n)
    }
    let bad = |s: &str| {
        Fail::error(prog, format!("\"{s}\" is not a valid node count")).with_code(EXIT_OPTION)
    };
    let (min, max) = match val.split_once('-') {
        Some((a, b)) => {
            let min = one(a).ok_or_else(|| bad(a))?.max(1);
            let max = one(b).ok_or_else(|| bad(b))?;
            (min, max)
        }
        None => {
            let n = one(val).ok_or_else(|| bad(val))?;
            if n < 0 {
                return Err(bad(val));
            }
            (n, n)
        }
    };
    if max != 0 && max < min {
        return Err(Fail::error(
            prog,
            format!("Maximum node count {max} is less than minimum node count {min}"),
        )
        .with_code(EXIT_OPTION));
    }
    let clamp = |n: i64| u32::try_from(n.max(0)).unwrap_or(u32::MAX);
    Ok((clamp(min), clamp(max)))
}

/// Slurm's `get_argument`: the next token of a directive line and how many bytes were
/// consumed, or `None` when the line has no more tokens. Quotes group, a backslash makes
/// the next character literal, an unquoted `#` starts a comment. Like Slurm, a backslash
/// does not protect a following blank (the blank still ends the token).
fn next_argument(line: &[u8]) -> Result<Option<(String, usize)>, char> {
    let mut i = 0;
    while i < line.len() && line[i].is_ascii_whitespace() {
        i += 1;
    }
    if i >= line.len() {
        return Ok(None);
    }
    let mut arg: Vec<u8> = Vec::new();
    let mut have = false;
    let mut quote: Option<u8> = None;
    let mut escape = false;
    while i < line.len() && (quote.is_some() || !line[i].is_ascii_whitespace()) && line[i] != b'\n'
    {
        let c = line[i];
        if escape {
            escape = false;
        } else if c == b'\\' {
            escape = true;
            i += 1;
            continue;
        } else if let Some(q) = quote {
            if c == q {
                quote = None;
                i += 1;
                continue;
            }
        } else if c == b'"' || c == b'\'' {
            quote = Some(c);
            have = true;
            i += 1;
            continue;
        } else if c == b'#' {
            break;
        }
        arg.push(c);
        have = true;
        i += 1;
    }
    if let Some(q) = quote {
        return Err(q as char);
    }
    if !have {
        // Only a comment (or an escape at the end of the line) is left.
        return Ok(None);
    }
    Ok(Some((String::from_utf8_lossy(&arg).into_owned(), i)))
}

/// The arguments of the `#SBATCH` (and `#SLURM`) lines of a script, in order. `file` names
/// the script in messages (Slurm uses the basename, or `stdin`). Also returns warnings to
/// print and whether `#PBS`/`#BSUB` directives were seen.
pub fn directive_args(script: &str, file: &str, prog: &str) -> Result<Directives, Fail> {
    let mut d = Directives::default();
    let mut warned = false;
    for (idx, line) in script.split('\n').enumerate() {
        let lineno = idx + 1;
        let rest = if let Some(r) = line.strip_prefix("#SBATCH") {
            r
        } else if let Some(r) = line.strip_prefix("#SLURM") {
            if !warned {
                d.warnings.push(format!(
                    "{prog}: error: Change from #SLURM to #SBATCH in your script and verify the options are valid in sbatch"
                ));
                warned = true;
            }
            r
        } else {
            if line.starts_with("#PBS") || line.starts_with("#BSUB") {
                d.foreign = true;
            }
            match line.trim_start().chars().next() {
                None | Some('#') => continue,
                Some(_) => break,
            }
        };
        let trimmed = rest.trim_start();
        let word = trimmed.split_ascii_whitespace().next().unwrap_or("");
        if word.eq_ignore_ascii_case("hetjob") || word.eq_ignore_ascii_case("packjob") {
            // The options after it are the next component's.
            d.het_args.push(Vec::new());
            continue;
        }
        if trimmed.starts_with(':') {
            return Err(Fail::raw(
                1,
                vec![format!(
                    "{prog}: fatal: {file}: line {lineno}: Unexpected `:` in [{line}]"
                )],
            ));
        }
        let bytes = rest.as_bytes();
        let mut pos = 0;
        loop {
            match next_argument(&bytes[pos..]) {
                Ok(Some((arg, used))) => {
                    match d.het_args.last_mut() {
                        Some(group) => group.push(arg),
                        None => d.args.push(arg),
                    }
                    pos += used;
                }
                Ok(None) => break,
                Err(q) => {
                    return Err(Fail::raw(
                        1,
                        vec![format!(
                            "{prog}: fatal: {file}: line {lineno}: Unmatched `{q}` in [{line}]"
                        )],
                    ))
                }
            }
        }
    }
    Ok(d)
}

/// What the `#SBATCH` scan found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Directives {
    pub args: Vec<String>,
    pub warnings: Vec<String>,
    /// `#PBS`/`#BSUB` lines (Slurm would translate them; gsched refuses).
    pub foreign: bool,
    /// The arguments of the later components of a heterogeneous job, one group after each
    /// `#SBATCH hetjob` (or `packjob`) line.
    pub het_args: Vec<Vec<String>>,
}

/// Parses directive arguments into option items; an operand is an invalid directive.
pub fn parse_directives(
    prog: &str,
    args: &[String],
) -> Result<Vec<(&'static str, Option<String>)>, Fail> {
    let split = getopt::parse_split(args, OPTIONS, Ordering::RequireOrder);
    if let Some(e) = &split.err {
        return Err(getopt_fail(prog, e));
    }
    if let Some(a) = split.operands.first() {
        return Err(Fail::error(
            prog,
            format!("Invalid directive found in batch script: {a}"),
        )
        .with_code(EXIT_OPTION));
    }
    Ok(split.opts)
}

fn getopt_fail(prog: &str, e: &GetoptError) -> Fail {
    Fail::usage(prog, e, EXIT_OPTION)
}

/// Options set by `SBATCH_*` variables, in Slurm's order: (option id, value, variable).
/// A flag variable that is not "on" is skipped (Slurm resets the flag).
pub fn env_options(env: &[(String, String)]) -> Vec<(&'static str, Option<String>, &'static str)> {
    let mut out = Vec::new();
    for (var, id) in ENV_VARS {
        let Some((_, val)) = env.iter().find(|(k, _)| k == var) else {
            continue;
        };
        let opt = OPTIONS.iter().find(|o| o.id == *id).expect("known option");
        match opt.arg {
            HasArg::No => {
                if env_flag_on(val) {
                    out.push((*id, None, *var));
                }
            }
            HasArg::Optional => out.push((*id, Some(val.clone()).filter(|v| !v.is_empty()), *var)),
            HasArg::Required => out.push((*id, Some(val.clone()), *var)),
        }
    }
    out
}

/// Slurm's script sanity checks; the error lines as Slurm prints them.
pub fn check_script(body: &[u8]) -> Result<(), Vec<&'static str>> {
    if body.is_empty() {
        return Err(vec!["Batch script is empty!"]);
    }
    // Slurm tests the text up to the first NUL for whitespace.
    let upto_nul = body.split(|b| *b == 0).next().unwrap_or(&[]);
    if upto_nul.iter().all(|b| b.is_ascii_whitespace()) {
        return Err(vec!["Batch script contains only whitespace!"]);
    }
    if !body.starts_with(b"#!") {
        return Err(vec![
            "This does not look like a batch script.  The first",
            "line must start with #! followed by the path to an interpreter.",
            "For instance: #!/bin/sh",
        ]);
    }
    if body.contains(&0) {
        return Err(vec![
            "The Slurm controller does not allow scripts that",
            "contain a NULL character '\\0'.",
        ]);
    }
    if body.windows(2).any(|w| w == b"\r\n") {
        return Err(vec![
            "Batch script contains DOS line breaks (\\r\\n)",
            "instead of expected UNIX line breaks (\\n).",
        ]);
    }
    Ok(())
}

/// The script `--wrap` builds.
pub fn wrap_script(cmd: &str) -> String {
    format!("#!/bin/sh\n# This script was created by sbatch --wrap.\n\n{cmd}\n")
}

/// Splits a `--export` value on commas outside quotes; a token quoted as a whole loses its
/// quotes (Slurm's `find_quote_token`).
fn export_tokens(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let (mut sq, mut dq) = (false, false);
    for c in s.chars() {
        match c {
            '\'' => {
                sq = !sq;
                cur.push(c)
            }
            '"' => {
                dq = !dq;
                cur.push(c)
            }
            ',' if !sq && !dq => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out.into_iter()
        .filter(|t| !t.is_empty())
        .map(|t| {
            let b = t.as_bytes();
            if t.len() >= 2
                && ((b[0] == b'\'' && b[t.len() - 1] == b'\'')
                    || (b[0] == b'"' && b[t.len() - 1] == b'"'))
            {
                t[1..t.len() - 1].to_string()
            } else {
                t
            }
        })
        .collect()
}

/// `rel` below `dir` (`dir/rel`, without a doubled `/`).
fn join(dir: &str, rel: &str) -> String {
    format!("{}/{rel}", dir.trim_end_matches('/'))
}

/// A path as given when absolute, else below `dir`.
fn absolute(dir: &str, path: &str) -> String {
    if path.starts_with('/') {
        path.to_string()
    } else {
        join(dir, path)
    }
}

pub(crate) fn env_set(env: &mut Vec<(String, String)>, k: &str, v: &str) {
    match env.iter_mut().find(|(ek, _)| ek == k) {
        Some(e) => e.1 = v.to_string(),
        None => env.push((k.to_string(), v.to_string())),
    }
}

/// The job's environment for a `--export` value, from the submit environment `env`.
///
/// * none or `ALL`: everything;
/// * `NONE`, `NIL`: only variables whose names start with `SLURM`;
/// * `[ALL,]VAR[,VAR=val]...`: the named variables (or all with `ALL`), then every
///   `SLURM_*` variable.
pub fn export_environment(export: Option<&str>, env: &[(String, String)]) -> Vec<(String, String)> {
    match export {
        None => env.to_vec(),
        Some(e) if e.eq_ignore_ascii_case("ALL") => env.to_vec(),
        Some(e) if e.eq_ignore_ascii_case("NONE") || e.eq_ignore_ascii_case("NIL") => env
            .iter()
            .filter(|(k, _)| k.starts_with("SLURM"))
            .cloned()
            .collect(),
        Some(e) => {
            let mut out: Vec<(String, String)> = Vec::new();
            for tok in export_tokens(e) {
                if tok.eq_ignore_ascii_case("ALL") {
                    for (k, v) in env {
                        env_set(&mut out, k, v);
                    }
                } else if let Some((k, v)) = tok.split_once('=') {
                    env_set(&mut out, k, v);
                } else if let Some((k, v)) = env.iter().find(|(k, _)| *k == tok) {
                    env_set(&mut out, k, v);
                }
            }
            for (k, v) in env.iter().filter(|(k, _)| k.starts_with("SLURM_")) {
                env_set(&mut out, k, v);
            }
            out
        }
    }
}

/// Where the script comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScriptSource {
    Wrap(String),
    /// A file as named on the command line (`/dev/stdin` included).
    File(String),
    Stdin,
}

/// Everything `build` needs besides the options.
#[derive(Debug, Clone)]
pub struct Context {
    pub prog: String,
    pub argv: Vec<String>,
    pub caller: Caller,
    pub env: Vec<(String, String)>,
    /// Full host name (`SLURM_SUBMIT_HOST`); the short one goes to `submit_host`.
    pub hostname: String,
    pub umask: Option<u32>,
    /// This process's soft resource limits, by `gsched_proto::rlimits::NAMES`.
    pub rlimits: Vec<(&'static str, u64)>,
    /// The limits the config propagates (`PropagateResourceLimits`); `--propagate` wins.
    pub propagate_conf: Vec<String>,
    /// Loads a user's login environment (`--get-user-env`); [`login_environment`] in the
    /// command, a stand-in in tests.
    pub user_env: UserEnvFn,
}

/// The first pass over the command line: options in order, the script and its arguments.
#[derive(Debug, Clone, Default)]
pub struct CommandLine {
    pub items: Vec<(&'static str, Option<String>)>,
    pub operands: Vec<String>,
    pub wrap: Option<String>,
    pub quiet: bool,
    pub verbose: u32,
    /// The options of the later components of a heterogeneous job (`... : ...`).
    pub het_items: Vec<Vec<(&'static str, Option<String>)>>,
}

/// What the first pass decided.
#[derive(Debug)]
pub enum FirstPass {
    /// Print this on stdout and exit 0 (`--help`, `--usage`, `-V`).
    Print(String),
    Go(CommandLine),
}

pub fn first_pass(prog: &str, args: &[String]) -> Result<FirstPass, Fail> {
    // The options come first: the first operand (the script) ends them. A lone `:` ends
    // the options of one component of a heterogeneous job; the next component's follow.
    let mut cl = CommandLine::default();
    let mut groups = Vec::new();
    let mut rest: Vec<String> = args.to_vec();
    loop {
        let split = getopt::parse_split(&rest, OPTIONS, Ordering::RequireOrder);
        for (id, arg) in &split.opts {
            if let Some(text) = common::info_text(id, help_text, usage_text) {
                return Ok(FirstPass::Print(text));
            }
            match *id {
                "wrap" => cl.wrap = arg.clone(),
                "quiet" => cl.quiet = true,
                "verbose" => cl.verbose += 1,
                _ => {}
            }
        }
        if let Some(e) = &split.err {
            return Err(getopt_fail(prog, e));
        }
        groups.push(split.opts);
        match split.operands.split_first() {
            Some((colon, next)) if colon == ":" => rest = next.to_vec(),
            _ => {
                cl.operands = split.operands;
                break;
            }
        }
    }
    cl.items = groups.remove(0);
    cl.het_items = groups;
    Ok(FirstPass::Go(cl))
}

/// Builds the job from the script text and all option sources.
pub fn build(
    ctx: &Context,
    cl: &CommandLine,
    source: &ScriptSource,
    script: &str,
    local_cluster: Option<&str>,
) -> Result<Built, Fail> {
    let prog = ctx.prog.as_str();
    let file_label = match source {
        ScriptSource::File(p) => common::basename(p).to_string(),
        _ => "stdin".to_string(),
    };
    let mut warnings = Vec::new();
    let dirs = directive_args(script, &file_label, prog)?;
    warnings.extend(dirs.warnings.iter().cloned());
    // One set of options per component of a heterogeneous job (one for an ordinary job):
    // the component's `#SBATCH` lines, then the environment, then its command line, over
    // what the previous component propagates.
    let script_groups: Vec<&Vec<String>> =
        std::iter::once(&dirs.args).chain(&dirs.het_args).collect();
    let n_components = script_groups.len().max(1 + cl.het_items.len());
    let mut components: Vec<Opts> = Vec::with_capacity(n_components);
    for k in 0..n_components {
        let mut opts = match components.last() {
            Some(prev) => prev.propagated(),
            None => Opts::default(),
        };
        if let Some(args) = script_groups.get(k) {
            for (id, arg) in &parse_directives(prog, args)? {
                opts.apply(prog, id, arg.as_deref(), Source::Script, &ctx.caller)?;
            }
        }
        for (id, arg, var) in env_options(&ctx.env) {
            opts.apply(prog, id, arg.as_deref(), Source::Env(var), &ctx.caller)?;
        }
        let items = if k == 0 {
            Some(&cl.items)
        } else {
            cl.het_items.get(k - 1)
        };
        for (id, arg) in items.into_iter().flatten() {
            opts.apply(prog, id, arg.as_deref(), Source::Cli, &ctx.caller)?;
        }
        components.push(opts);
    }
    let opts = components[0].clone();
    for w in components.iter().flat_map(|o| &o.warnings) {
        let w = format!("{prog}: warning: {w}");
        if !warnings.contains(&w) {
            warnings.push(w);
        }
    }
    if dirs.foreign && !opts.ignore_pbs {
        return Err(Fail::error(
            prog,
            "#PBS/#BSUB directives are not supported by gsched yet; convert them to #SBATCH or use --ignore-pbs",
        ));
    }
    if cl.quiet && cl.verbose > 0 {
        return Err(Fail::error(
            prog,
            "don't specify both --verbose (-v) and --quiet (-Q)",
        ));
    }
    if let (Some(c), Some(local)) = (&opts.clusters, local_cluster) {
        common::check_clusters(prog, c, local)?;
    }
    let mem = opts.memory(prog)?;
    let gpu = opts.gpu_request(prog)?;

    let work_dir = opts.chdir.clone().unwrap_or_else(|| ctx.caller.cwd.clone());
    let full = |p: &Option<String>| p.as_ref().map(|p| absolute(&work_dir, p));
    let (name_default, command, argv) = match source {
        ScriptSource::Wrap(_) => ("wrap".to_string(), String::new(), Vec::new()),
        ScriptSource::Stdin => ("sbatch".to_string(), String::new(), Vec::new()),
        ScriptSource::File(p) => {
            let base = common::basename(p).to_string();
            let abs = if p.starts_with('/') {
                p.clone()
            } else {
                join(&ctx.caller.cwd, p.trim_start_matches("./"))
            };
            (base, abs, cl.operands.iter().skip(1).cloned().collect())
        }
    };
    let name = opts.job_name.clone().unwrap_or(name_default);

    let mut nodes = opts.nodes.map(|n| n.0);
    if let (Some(n), Some(t)) = (nodes, opts.ntasks) {
        if t < n {
            warnings.push(format!(
                "{prog}: Warning: can't run {t} processes on {n} nodes, setting nnodes to {t}"
            ));
            nodes = Some(t);
        }
    }

    // sbatch puts these in its own environment before the job's is built.
    let mut env = ctx.env.clone();
    // --get-user-env: the user's login environment under the submission's (whose values
    // win). As Slurm's man page says, it takes effect only when root submits (su needs
    // no password then); for others it changes nothing.
    if let (Some((timeout, login)), 0) = (opts.get_user_env, ctx.caller.uid) {
        let user = gsched_proto::users::user_name(opts.uid.unwrap_or(0));
        match (ctx.user_env)(&user, timeout, login) {
            Ok(login_env) => {
                for (k, v) in login_env {
                    if !env.iter().any(|(e, _)| *e == k) {
                        env.push((k, v));
                    }
                }
            }
            Err(e) => warnings.push(format!(
                "{prog}: error: Unable to get user's local environment ({e}), running only with passed environment"
            )),
        }
    }
    env_set(&mut env, "SLURM_SUBMIT_DIR", &ctx.caller.cwd);
    env_set(&mut env, "SLURM_SUBMIT_HOST", &ctx.hostname);
    if !env.iter().any(|(k, _)| k == "SLURM_UMASK") {
        if let Some(m) = ctx.umask {
            env_set(
                &mut env,
                "SLURM_UMASK",
                &format!("0{:o}{:o}{:o}", (m >> 6) & 7, (m >> 3) & 7, m & 7),
            );
        }
    }
    // The resource limits to propagate (PropagateResourceLimits, or --propagate's, marked
    // with a leading U as sbatch does), set as the job's soft limits on the node.
    let (names, user_asked) = match &opts.propagate {
        Some(l) => (l.clone(), true),
        None => (
            ctx.propagate_conf.iter().map(String::as_str).collect(),
            false,
        ),
    };
    for (k, v) in gsched_proto::rlimits::submission_env(&ctx.rlimits, &names, user_asked) {
        env_set(&mut env, &k, &v);
    }
    env_set(&mut env, "SLURM_JOB_NAME", &name);
    if let Some(m) = opts.open_mode {
        env_set(
            &mut env,
            "SLURM_OPEN_MODE",
            if m == OpenMode::Append { "a" } else { "t" },
        );
    }
    if let Some(e) = &opts.export {
        if !e.eq_ignore_ascii_case("ALL") && !env.iter().any(|(k, _)| k == "SLURM_EXPORT_ENV") {
            env_set(&mut env, "SLURM_EXPORT_ENV", e);
        }
    }
    let environment = export_environment(opts.export.as_deref(), &env);

    let (time_limit, time_unlimited) = match opts.time {
        None => (None, false),
        Some(None) => (None, true),
        Some(Some(m)) => (Some(m), false),
    };
    // The controller checks the indices against MaxArraySize; the syntax is checked here
    // with the same words (Slurm's ESLURM_INVALID_ARRAY).
    if let Some(a) = &opts.array {
        if gsched_proto::array::parse(a, None).is_err() {
            return Err(Fail::error(
                prog,
                format!(
                    "Batch job submission failed: {}",
                    gsched_proto::array::INVALID_ARRAY
                ),
            ));
        }
    }
    let spec = JobSpec {
        array: opts.array.clone(),
        name,
        script: script.to_string(),
        argv,
        work_dir: work_dir.clone(),
        stdout: full(&opts.output),
        stderr: full(&opts.error),
        stdin: full(&opts.input),
        open_mode: opts.open_mode,
        environment: environment.into(),
        export: opts.export.clone(),
        partitions: opts.partitions.clone().unwrap_or_default(),
        time_limit,
        time_unlimited,
        time_min: opts.time_min,
        nodes,
        ntasks: opts.ntasks,
        cpus_per_task: opts.cpus_per_task,
        ntasks_per_node: opts.ntasks_per_node,
        mem,
        hold: opts.hold,
        submit_host: ctx.hostname.split('.').next().unwrap_or("").to_string(),
        submit_line: ctx.argv.join(" "),
        command,
        run_as_uid: opts.uid,
        run_as_gid: opts.gid,
        dependency: opts.dependency.clone(),
        kill_on_invalid_dep: opts.kill_on_invalid_dep,
        begin_time: opts.begin,
        requeue: opts.requeue,
        comment: opts.comment.clone(),
        warn_signal: opts.warn_signal,
        switches: opts.switches,
        reservation: opts.reservation.clone(),
        account: opts.account.clone(),
        nice: opts.nice,
        priority: opts.priority,
        licenses: opts.licenses.clone(),
        nodelist: opts.nodelist.clone(),
        exclude: opts.exclude.clone(),
        constraint: opts.constraint.clone(),
        exclusive: opts.exclusive,
        mail_type: opts.mail_type,
        mail_user: opts.mail_user.clone(),
        qos: opts.qos.clone(),
        gpu,
        urgent: opts.urgent,
        deadline: opts.deadline,
    };
    // The later components of a heterogeneous job: their own resources; the script, its
    // arguments and environment are the first component's (it runs the batch script).
    let mut het = Vec::new();
    for o in components.iter().skip(1) {
        let (time_limit, time_unlimited) = match o.time {
            None => (None, false),
            Some(None) => (None, true),
            Some(Some(m)) => (Some(m), false),
        };
        let mut nodes = o.nodes.map(|n| n.0);
        if let (Some(n), Some(t)) = (nodes, o.ntasks) {
            if t < n {
                warnings.push(format!(
                    "{prog}: Warning: can't run {t} processes on {n} nodes, setting nnodes to {t}"
                ));
                nodes = Some(t);
            }
        }
        het.push(JobSpec {
            array: o.array.clone(),
            name: o.job_name.clone().unwrap_or_else(|| spec.name.clone()),
            script: String::new(),
            argv: Vec::new(),
            environment: Default::default(),
            partitions: o.partitions.clone().unwrap_or_default(),
            time_limit,
            time_unlimited,
            time_min: o.time_min,
            nodes,
            ntasks: o.ntasks,
            cpus_per_task: o.cpus_per_task,
            ntasks_per_node: o.ntasks_per_node,
            mem: {
                if o.gpu.any() {
                    return Err(Fail::not_supported(
                        prog,
                        "--gres/--gpus* in a heterogeneous job's later components",
                    ));
                }
                o.memory(prog)?
            },
            hold: o.hold,
            dependency: o.dependency.clone(),
            kill_on_invalid_dep: o.kill_on_invalid_dep,
            begin_time: o.begin,
            requeue: o.requeue,
            comment: o.comment.clone(),
            warn_signal: o.warn_signal,
            switches: o.switches,
            reservation: o.reservation.clone(),
            account: o.account.clone(),
            nice: o.nice,
            priority: o.priority,
            licenses: o.licenses.clone(),
            nodelist: o.nodelist.clone(),
            exclude: o.exclude.clone(),
            constraint: o.constraint.clone(),
            exclusive: o.exclusive,
            ..spec.clone()
        });
    }
    Ok(Built {
        het,
        spec,
        wait: opts.wait,
        test_only: opts.test_only,
        parsable: opts.parsable,
        clusters: opts.clusters.clone(),
        warnings,
    })
}

/// A job ready to submit and how to report it.
#[derive(Debug, Clone)]
pub struct Built {
    pub spec: JobSpec,
    /// The later components of a heterogeneous job (empty for an ordinary job).
    pub het: Vec<JobSpec>,
    /// `-W/--wait`: wait for the job to end, exit with its exit code.
    pub wait: bool,
    /// `--test-only`: validate and estimate the start, submit nothing.
    pub test_only: bool,
    pub parsable: bool,
    /// `-M` as given: Slurm then names the cluster in its answer.
    pub clusters: Option<String>,
    pub warnings: Vec<String>,
}

/// The line printed after a successful submission (`None` with `-Q`).
pub fn success_line(
    job_id: u32,
    parsable: bool,
    quiet: bool,
    cluster: Option<&str>,
) -> Option<String> {
    if quiet {
        return None;
    }
    Some(match (parsable, cluster) {
        (false, None) => format!("Submitted batch job {job_id}\n"),
        (false, Some(c)) => format!("Submitted batch job {job_id} on cluster {c}\n"),
        (true, None) => format!("{job_id}\n"),
        (true, Some(c)) => format!("{job_id};{c}\n"),
    })
}

/// The one line gsbatch prints (to stderr) when the controller defers the job to a cheaper
/// price window: when, the price now and then, and how to opt out.
pub fn deferral_line(prog: &str, job_id: u32, d: &gsched_proto::api::DeferralNote) -> String {
    format!(
        "{prog}: job {job_id} deferred to a cheaper price window: expected start {} at {:.4}/kWh (now {:.4}/kWh; estimated cost {:.2} instead of {:.2}); use --urgent to start as soon as possible",
        units::format_timestamp(d.start),
        d.price_then,
        d.price_now,
        d.cost_then,
        d.cost_now
    )
}

/// `gsbatch` entry point.
pub fn main(args: Vec<String>) -> i32 {
    common::run_main(&args, "sbatch", |prog, rest| {
        let mut error_exit = 1;
        if let Ok(v) = std::env::var("SLURM_EXIT_ERROR") {
            match v.trim().parse::<i32>() {
                Ok(0) | Err(_) => {
                    common::err_line(&format!("{prog}: error: SLURM_EXIT_ERROR has zero value"))
                }
                Ok(n) => error_exit = n,
            }
        }
        run(prog, &args, rest, error_exit).map_err(|f| {
            if f.code == 1 {
                f.with_code(error_exit)
            } else {
                f
            }
        })
    })
}

/// `args` is the whole command line (the job's `SubmitLine`), `rest` what follows argv[0].
fn run(prog: &str, args: &[String], rest: &[String], error_exit: i32) -> Result<i32, Fail> {
    let cl = match first_pass(prog, rest)? {
        FirstPass::Print(s) => {
            common::out(&s);
            return Ok(0);
        }
        FirstPass::Go(cl) => cl,
    };
    let source = match (&cl.wrap, cl.operands.first()) {
        (Some(_), Some(_)) => {
            return Err(Fail::error(
                prog,
                "Script arguments not permitted with --wrap option",
            ))
        }
        (Some(w), None) => ScriptSource::Wrap(w.clone()),
        (None, Some(f)) if f == "-" => ScriptSource::Stdin,
        (None, Some(f)) => ScriptSource::File(f.clone()),
        (None, None) => ScriptSource::Stdin,
    };
    let script = match &source {
        ScriptSource::Wrap(w) => wrap_script(w),
        ScriptSource::File(_) | ScriptSource::Stdin => {
            let body = match &source {
                ScriptSource::File(p) => std::fs::read(p)
                    .map_err(|_| Fail::error(prog, format!("Unable to open file {p}")))?,
                _ => {
                    let mut b = Vec::new();
                    std::io::Read::read_to_end(&mut std::io::stdin().lock(), &mut b).map_err(
                        |e| {
                            Fail::error(
                                prog,
                                format!("Unable to read the batch script from standard input: {e}"),
                            )
                        },
                    )?;
                    b
                }
            };
            if let Err(lines) = check_script(&body) {
                return Err(Fail::errors(prog, &lines));
            }
            String::from_utf8_lossy(&body).into_owned()
        }
    };
    // The config before the options' values, as sbatch reads slurm.conf first: it says
    // which resource limits to propagate.
    let cfg = common::load_config().map_err(|e| Fail::error(prog, e))?;
    let cwd = std::env::current_dir()
        .map(|p| p.to_string_lossy().into_owned())
        .or_else(|_| std::env::var("PWD"))
        .map_err(|e| Fail::error(prog, format!("getcwd failed: {e}")))?;
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| crate::sys::short_hostname());
    let ctx = Context {
        prog: prog.to_string(),
        argv: args.to_vec(),
        caller: Caller {
            cwd,
            uid: common::current_uid(),
        },
        env: std::env::vars_os()
            .map(|(k, v)| {
                (
                    k.to_string_lossy().into_owned(),
                    v.to_string_lossy().into_owned(),
                )
            })
            .collect(),
        hostname,
        umask: Some(crate::sys::umask()),
        rlimits: gsched_proto::rlimits::soft_limits(),
        propagate_conf: cfg.propagate_rlimits.clone(),
        user_env: login_environment,
    };
    let built = build(&ctx, &cl, &source, &script, None)?;
    if let Some(c) = &built.clusters {
        common::check_clusters(prog, c, &cfg.cluster_name)?;
    }
    let cluster = built.clusters.as_ref().map(|_| cfg.cluster_name.clone());
    for w in &built.warnings {
        common::err_line(w);
    }
    let client = common::client_for(&cfg).map_err(|e| Fail::error(prog, e))?;
    let req = SubmitRequest {
        spec: built.spec.clone(),
        test_only: built.test_only,
        het: built.het.clone(),
    };
    // As sbatch: while the controller holds MaxJobCount jobs, retry with growing sleeps
    // (1 s, 2 s, ... for 15 retries), saying so once.
    let mut retries = 0u64;
    let resp: Result<SubmitResponse, ClientError> = loop {
        let resp = client.post(paths::JOBS, &req);
        match &resp {
            Err(ClientError::Api(e))
                if e.code == gsched_proto::api::ErrorCode::MaxJobCount
                    && retries < SUBMIT_RETRIES =>
            {
                if retries == 0 {
                    common::err_line(&format!(
                        "{prog}: error: Slurm job queue full, sleeping and retrying"
                    ));
                }
                retries += 1;
                std::thread::sleep(std::time::Duration::from_secs(retries));
            }
            _ => break resp,
        }
    };
    match resp {
        Ok(r) if built.test_only => {
            let Some(a) = &r.test_only else {
                return Err(Fail::error(
                    prog,
                    "allocation failure: the controller did not answer the --test-only request",
                ));
            };
            common::err_line(&test_only_line(prog, r.job_id, a));
            Ok(0)
        }
        Ok(r) => {
            if let Some(line) = success_line(r.job_id, built.parsable, cl.quiet, cluster.as_deref())
            {
                common::out(&line);
            }
            if let (Some(d), false) = (&r.deferral, cl.quiet) {
                common::err_line(&deferral_line(prog, r.job_id, d));
            }
            if built.wait {
                return crate::sbatch_wait::wait_for_job(prog, &client, r.job_id)
                    .map_err(|f| f.with_code(error_exit));
            }
            Ok(0)
        }
        Err(e) if built.test_only => Err(Fail::error(
            prog,
            format!("allocation failure: {}", common::client_error_text(&e)),
        )
        .with_code(error_exit)),
        Err(e) => Err(Fail::error(
            prog,
            format!(
                "Batch job submission failed: {}",
                common::client_error_text(&e)
            ),
        )
        .with_code(error_exit)),
    }
}

/// How many times sbatch retries a submission refused for `MaxJobCount` (Slurm's
/// `MAX_RETRIES`).
const SUBMIT_RETRIES: u64 = 15;

/// The line `--test-only` prints on stderr (Slurm's `info()`):
/// `sbatch: Job N to start at T using C processors on nodes L in partition P`.
pub fn test_only_line(prog: &str, job_id: u32, a: &gsched_proto::api::TestOnlyAnswer) -> String {
    let nodes = if a.nodes.is_empty() {
        "(null)".to_string()
    } else {
        gsched_proto::hostlist::compress(&a.nodes)
    };
    format!(
        "{prog}: Job {job_id} to start at {} using {} processors on nodes {nodes} in partition {}",
        gsched_proto::units::format_timestamp(a.start),
        a.cpus,
        a.partition
    )
}

pub fn usage_text() -> String {
    "Usage: sbatch [-N nnodes] [-n ntasks] [-c ncpus] [-p partition] [--hold]\n\
     \x20             [--parsable] [-t minutes] [-D path] [--input file] [--output file]\n\
     \x20             [--error file] [--open-mode=append|truncate] [-J jobname]\n\
     \x20             [--mem=MB | --mem-per-cpu=MB] [--ntasks-per-node=n]\n\
     \x20             [--gres=list] [--gpus=n] [--gpu-mem=SIZE] [--gpu-share=PERCENT]\n\
     \x20             [--export[=names]] [--gid=group] [--uid=user] [--clusters=name]\n\
     \x20             [--comment=name] [--signal=[B:]num[@time]] [--wait] [--test-only]\n\
     \x20             [--quiet] [--verbose] [--wrap=command]\n\
     \x20             executable [args...]\n"
        .to_string()
}

pub fn help_text() -> String {
    "Usage: sbatch [OPTIONS(0)...] [ : [OPTIONS(N)...]] script(0) [args(0)...]\n\
     \n\
     A heterogeneous job: components separated by \":\" on the command line or by\n\
     \"#SBATCH hetjob\" lines in the script, each with its own resources; they start\n\
     together and the script runs in the first.\n\
     \n\
     Parallel run options:\n\
     \x20 -c, --cpus-per-task=ncpus   number of cpus required per task\n\
     \x20     --comment=name          arbitrary comment\n\
     \x20 -D, --chdir=directory       set working directory for batch script\n\
     \x20 -e, --error=err             file for batch script's standard error\n\
     \x20     --export[=names]        specify environment variables to export\n\
     \x20     --get-user-env[=t][S|L] add the user's login environment (su [-] user,\n\
     \x20                             t seconds at most; user root only, as in Slurm)\n\
     \x20     --gid=group_id          group ID to run job as (user root only)\n\
     \x20 -H, --hold                  submit job in held state\n\
     \x20     --ignore-pbs            ignore #PBS and #BSUB options in the batch script\n\
     \x20 -i, --input=in              file for batch script's standard input\n\
     \x20 -J, --job-name=jobname      name of job\n\
     \x20 -L, --licenses=names        required license, comma separated (name[:count])\n\
     \x20 -M, --clusters=names        comma separated list of clusters to issue\n\
     \x20                             commands to (only the local cluster here)\n\
     \x20 -n, --ntasks=ntasks         number of tasks to run\n\
     \x20     --no-requeue            if set, do not permit the job to be requeued\n\
     \x20     --ntasks-per-node=n     number of tasks to invoke on each node\n\
     \x20 -N, --nodes=N               number of nodes on which to run (N = min[-max])\n\
     \x20 -F, --nodefile=filename     request the hosts listed in a file (as -w)\n\
     \x20     --open-mode={append|truncate} output file open mode\n\
     \x20 -o, --output=out            file for batch script's standard output\n\
     \x20 -p, --partition=partition   partition requested\n\
     \x20     --priority=value        set the priority of the job to value (a number or\n\
     \x20                             TOP; operators only, 0 holds the job)\n\
     \x20     --parsable              outputs only the jobid and cluster name (if present),\n\
     \x20                             separated by semicolon, only on successful submission.\n\
     \x20     --propagate[=rlimits]   propagate all [or specific list of] rlimits\n\
     \x20                             (the submission's soft limits become the job's)\n\
     \x20 -q, --qos=qos               quality of service\n\
     \x20 -Q, --quiet                 quiet mode (suppress informational messages)\n\
     \x20     --reservation=name      allocate resources from named reservation\n\
     \x20     --signal=[B:]num[@time] send signal when time limit within time seconds\n\
     \x20                             (without B: the tasks of the job's steps, not the\n\
     \x20                             batch shell)\n\
     \x20     --switches=max-switches{@max-time-to-wait}\n\
     \x20                             optimum switches and max time to wait for optimum\n\
     \x20 -t, --time=minutes          time limit\n\
     \x20     --deadline=time         remove the job if no ending is possible before\n\
     \x20                             this deadline (start > (deadline - time[-min]))\n\
     \x20     --urgent                (gsched) never defer the job to a cheaper price\n\
     \x20                             window (see gsched.conf(5), PriceWindow)\n\
     \x20     --uid=user_id           user ID to run job as (user root only)\n\
     \x20     --test-only             validate the job and estimate its start, submit nothing\n\
     \x20 -v, --verbose               verbose mode (multiple -v's increase verbosity)\n\
     \x20 -W, --wait                  wait for completion of submitted job\n\
     \x20     --wait-all-nodes=0|1    start once all nodes are ready (gsched's nodes are\n\
     \x20                             ready when allocated: both start at once)\n\
     \x20     --wckey=wckey           wckey to run job under (accepted, not tracked)\n\
     \x20     --wrap[=command string] wrap command string in a sh script and submit\n\
     \n\
     Constraint options:\n\
     \x20     --mem=MB                minimum amount of real memory\n\
     \x20     --mem-per-cpu=MB        maximum amount of real memory per allocated\n\
     \x20                             cpu required by the job.\n\
     \x20                             --mem >= --mem-per-cpu if --mem is specified.\n\
     \n\
     GPU scheduling options (a job asks for whole GPUs or for a share of one GPU per node):\n\
     \x20     --cpus-per-gpu=n        number of CPUs required per allocated GPU\n\
     \x20 -G, --gpus=[type:]n         count of whole GPUs required for the job (placed\n\
     \x20                             as n per node: with -N, n must divide evenly)\n\
     \x20     --gpus-per-node=[type:]n number of whole GPUs required per allocated node\n\
     \x20     --gpus-per-task=[type:]n number of whole GPUs required per task\n\
     \x20     --gres=list             required generic resources: gpu[:type][:n] (whole\n\
     \x20                             GPUs), mps[:type]:n (n of a GPU's MPS count, 100\n\
     \x20                             unless gres.conf says; a share of one GPU),\n\
     \x20                             shard[:type]:n (n of a GPU's shards, counted only)\n\
     \x20     --mem-per-gpu=MB        real (host) memory required per allocated GPU\n\
     \x20     --gpu-mem=SIZE          gsched: a share of one GPU with SIZE of its memory\n\
     \x20                             (e.g. 40G; the same fraction of its compute unless\n\
     \x20                             --gpu-share says), enforced through CUDA MPS\n\
     \x20     --gpu-share=PERCENT     gsched: a share of one GPU with PERCENT of its\n\
     \x20                             compute (and of its memory unless --gpu-mem says).\n\
     \x20                             One user's shares are packed onto shared GPUs;\n\
     \x20                             users share a GPU only in GpuSharing=multiuser\n\
     \x20                             partitions.\n\
     \n\
     Other Slurm options are recognized but refused: gsched does not implement them yet.\n\
     \n\
     Help options:\n\
     \x20 -h, --help                  show this help message\n\
     \x20     --usage                 display brief usage message\n\
     \n\
     Other options:\n\
     \x20 -V, --version               output version information and exit\n\
     \n"
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(line: &str) -> Vec<String> {
        let b = line.as_bytes();
        let mut pos = 0;
        let mut out = Vec::new();
        while let Some((a, used)) = next_argument(&b[pos..]).unwrap() {
            out.push(a);
            pos += used;
        }
        out
    }

    #[test]
    fn tokenizer_quotes_escapes_comments() {
        assert_eq!(toks(" -N 1 -n 4"), vec!["-N", "1", "-n", "4"]);
        assert_eq!(toks(" --job-name='my job'"), vec!["--job-name=my job"]);
        assert_eq!(toks(" -J \"a b\" # a comment"), vec!["-J", "a b"]);
        assert_eq!(toks(" --comment=a#b"), vec!["--comment=a"]);
        assert_eq!(toks(" --comment='a#b'"), vec!["--comment=a#b"]);
        assert_eq!(toks(" -J a\\#b"), vec!["-J", "a#b"]);
        assert_eq!(toks(" -J a\\\"b"), vec!["-J", "a\"b"]);
        // Slurm quirk: an escaped blank still ends the token.
        assert_eq!(toks(" -J a\\ b"), vec!["-J", "a", "b"]);
        assert_eq!(toks(" ''"), vec![""]);
        assert_eq!(toks("   # only a comment"), Vec::<String>::new());
        assert_eq!(next_argument(b" -J 'open"), Ok(Some(("-J".into(), 3))));
        assert_eq!(next_argument(b" 'open"), Err('\''));
    }

    #[test]
    fn directive_scan_rules() {
        let script = "#!/bin/bash\n\
                      #SBATCH -N 2 -n 4\n\
                      \n\
                      ### a comment\n\
                      \x20 #SBATCH --ignored-indented\n\
                      #SBATCH --job-name=\"x y\" # trailing\n\
                      #SLURM -p debug\n\
                      echo hi\n\
                      #SBATCH -t 5\n";
        let d = directive_args(script, "job.sh", "sbatch").unwrap();
        assert_eq!(
            d.args,
            vec!["-N", "2", "-n", "4", "--job-name=x y", "-p", "debug"]
        );
        assert_eq!(d.warnings.len(), 1);
        assert!(!d.foreign);
        let e = directive_args("#!/bin/sh\n#SBATCH -J 'x\n", "job.sh", "sbatch").unwrap_err();
        assert_eq!(
            e.lines,
            vec!["sbatch: fatal: job.sh: line 2: Unmatched `'` in [#SBATCH -J 'x]"]
        );
        assert!(
            directive_args("#!/bin/sh\n#PBS -l x\n", "f", "sbatch")
                .unwrap()
                .foreign
        );
    }

    #[test]
    fn directive_getopt_prefix_and_invalid() {
        let args: Vec<String> = ["--part=debug", "--ntasks-per-n", "2", "-J", "-N"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let items = parse_directives("sbatch", &args).unwrap();
        assert_eq!(
            items,
            vec![
                ("partition", Some("debug".to_string())),
                ("ntasks-per-node", Some("2".to_string())),
                ("job-name", Some("-N".to_string())),
            ]
        );
        let e = parse_directives("sbatch", &["foo".to_string()]).unwrap_err();
        assert_eq!(e.code, 255);
        assert_eq!(
            e.lines,
            vec!["sbatch: error: Invalid directive found in batch script: foo"]
        );
        let e = parse_directives("sbatch", &["--foo".to_string()]).unwrap_err();
        assert_eq!(e.code, 255);
        assert_eq!(
            e.lines,
            vec![
                "sbatch: unrecognized option '--foo'",
                "Try \"sbatch --help\" for more information"
            ]
        );
        // --par is ambiguous in Slurm too (parsable, partition).
        assert!(parse_directives("sbatch", &["--par=x".to_string()]).is_err());
    }

    fn ctx(env: &[(&str, &str)]) -> Context {
        Context {
            prog: "sbatch".into(),
            argv: vec!["sbatch".into(), "job.sh".into()],
            caller: Caller {
                cwd: "/home/u".into(),
                uid: 1000,
            },
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            hostname: "login1.example.org".into(),
            umask: Some(0o022),
            rlimits: vec![("CORE", 0), ("NOFILE", 1024), ("STACK", u64::MAX)],
            propagate_conf: vec!["CORE".into(), "STACK".into()],
            user_env: |user, timeout, login| {
                Ok(vec![
                    ("LOGIN_USER".into(), format!("{user}/{timeout}/{login}")),
                    ("HOME".into(), "/from/login".into()),
                ])
            },
        }
    }

    fn cli(args: &[&str]) -> CommandLine {
        let a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        match first_pass("sbatch", &a).unwrap() {
            FirstPass::Go(cl) => cl,
            FirstPass::Print(_) => panic!("print"),
        }
    }

    #[test]
    fn het_components_from_script_and_command_line() {
        let src = ScriptSource::File("job.sh".into());
        let script = "#!/bin/sh\n#SBATCH -J pipe -p cpu -n 4 -A Lab -t 30 -C fast\n#SBATCH hetjob\n#SBATCH -p gpu -c 2\n#SBATCH packjob\n#SBATCH -p small --mem-per-cpu=10\necho\n";
        let b = build(&ctx(&[]), &cli(&["job.sh"]), &src, script, None).unwrap();
        assert_eq!(b.spec.partitions, vec!["cpu".to_string()]);
        assert_eq!(b.spec.ntasks, Some(4));
        assert_eq!(b.het.len(), 2);
        let (g, s) = (&b.het[0], &b.het[1]);
        assert_eq!(g.partitions, vec!["gpu".to_string()]);
        assert_eq!(s.partitions, vec!["small".to_string()]);
        // Propagated: name, account, time; reset: tasks, constraint, memory.
        assert_eq!(
            (g.name.as_str(), g.account.as_deref()),
            ("pipe", Some("lab"))
        );
        assert_eq!((g.time_limit, s.time_limit), (Some(30), Some(30)));
        assert_eq!(
            (g.ntasks, g.cpus_per_task, g.constraint.as_deref()),
            (None, Some(2), None)
        );
        assert_eq!(s.cpus_per_task, None);
        assert_eq!(s.mem, Some(MemRequest::PerCpu(10)));
        // Only the first component carries the script.
        assert!(g.script.is_empty() && g.environment.is_empty());
        // The command line: ':' separates components, and a component's options there
        // override its #SBATCH lines.
        let cl = cli(&["-p", "a", ":", "-p", "b", "-n", "3", "job.sh", "x"]);
        assert_eq!(cl.het_items.len(), 1);
        let b = build(&ctx(&[]), &cl, &src, script, None).unwrap();
        assert_eq!(b.spec.partitions, vec!["a".to_string()]);
        assert_eq!(b.het[0].partitions, vec!["b".to_string()]);
        assert_eq!(b.het[0].ntasks, Some(3));
        assert_eq!(b.het[1].partitions, vec!["small".to_string()]);
        assert_eq!(b.spec.argv, vec!["x".to_string()]);
        // An ordinary job has no components.
        let b = build(&ctx(&[]), &cli(&["job.sh"]), &src, SCRIPT, None).unwrap();
        assert!(b.het.is_empty());
    }

    const SCRIPT: &str = "#!/bin/sh\n#SBATCH -J from_script -p script_part -t 10 -o out.%j\n#SBATCH --mem=1G\necho\n";

    #[test]
    fn account_and_nice() {
        let src = ScriptSource::File("job.sh".into());
        let script = "#!/bin/sh\n#SBATCH -A Physics --nice=5\necho\n";
        let b = build(&ctx(&[]), &cli(&["job.sh"]), &src, script, None).unwrap();
        assert_eq!(b.spec.account.as_deref(), Some("physics"));
        assert_eq!(b.spec.nice, Some(5));
        let env = ctx(&[("SBATCH_ACCOUNT", "Chem")]);
        let b = build(&env, &cli(&["job.sh"]), &src, script, None).unwrap();
        assert_eq!(b.spec.account.as_deref(), Some("chem"));
        let b = build(
            &env,
            &cli(&["--account=bio", "--nice", "job.sh"]),
            &src,
            script,
            None,
        )
        .unwrap();
        assert_eq!(b.spec.account.as_deref(), Some("bio"));
        assert_eq!(b.spec.nice, Some(100));
        let b = build(
            &ctx(&[]),
            &cli(&["--nice=-10", "job.sh"]),
            &src,
            SCRIPT,
            None,
        )
        .unwrap();
        assert_eq!(b.spec.nice, Some(-10));
        let b = build(&ctx(&[]), &cli(&["job.sh"]), &src, SCRIPT, None).unwrap();
        assert_eq!((b.spec.account, b.spec.nice), (None, None));
        let e = build(
            &ctx(&[]),
            &cli(&["--nice=3000000000", "job.sh"]),
            &src,
            SCRIPT,
            None,
        )
        .unwrap_err();
        assert_eq!(
            e.lines,
            vec!["sbatch: error: Invalid --nice value, out of range (+/- 2147483645)"]
        );
    }

    #[test]
    fn priority_nodefile_and_wait_all_nodes() {
        let src = ScriptSource::File("job.sh".into());
        let run = |args: &[&str]| build(&ctx(&[]), &cli(args), &src, SCRIPT, None);
        assert_eq!(
            run(&["--priority=TOP", "job.sh"]).unwrap().spec.priority,
            Some(u32::MAX - 2)
        );
        assert_eq!(
            run(&["--priority", "7", "job.sh"]).unwrap().spec.priority,
            Some(7)
        );
        assert_eq!(run(&["job.sh"]).unwrap().spec.priority, None);
        for (bad, msg) in [
            ("-1", "sbatch: error: Priority must be >= 0"),
            ("4294967294", "sbatch: error: Priority must be < 4294967294"),
            (
                "high",
                "sbatch: error: Invalid --priority specification: high (a number or TOP)",
            ),
        ] {
            let e = run(&[&format!("--priority={bad}"), "job.sh"]).unwrap_err();
            assert_eq!(e.lines, vec![msg]);
        }
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("hosts");
        std::fs::write(&file, "# our nodes\nn3 n1\nn[4-5] # the new ones\n\n").unwrap();
        let f = file.display().to_string();
        let b = run(&["--nodefile", &f, "job.sh"]).unwrap();
        assert_eq!(b.spec.nodelist.as_deref(), Some("n[1,3-5]"));
        // -w with a '/' is a file too, as sbatch.
        let b = run(&["-w", &f, "job.sh"]).unwrap();
        assert_eq!(b.spec.nodelist.as_deref(), Some("n[1,3-5]"));
        let missing = dir.path().join("none").display().to_string();
        let e = run(&["-F", &missing, "job.sh"]).unwrap_err();
        assert!(
            e.lines[0].contains("Invalid --nodefile node file"),
            "{:?}",
            e.lines
        );
        run(&["--wait-all-nodes=1", "job.sh"]).unwrap();
        let e = run(&["--wait-all-nodes=2", "job.sh"]).unwrap_err();
        assert_eq!(
            e.lines,
            vec!["sbatch: error: Invalid --wait-all-nodes argument: 2"]
        );
    }

    #[test]
    fn array_from_cli_env_and_script() {
        let src = ScriptSource::File("job.sh".into());
        let script = "#!/bin/sh\n#SBATCH -a 0-3\necho\n";
        let b = build(&ctx(&[]), &cli(&["job.sh"]), &src, script, None).unwrap();
        assert_eq!(b.spec.array.as_deref(), Some("0-3"));
        let env = ctx(&[("SBATCH_ARRAY_INX", "0,6,16-32")]);
        let b = build(&env, &cli(&["job.sh"]), &src, script, None).unwrap();
        assert_eq!(b.spec.array.as_deref(), Some("0,6,16-32"));
        let b = build(
            &env,
            &cli(&["--array=0-15:4%2", "job.sh"]),
            &src,
            script,
            None,
        )
        .unwrap();
        assert_eq!(b.spec.array.as_deref(), Some("0-15:4%2"));
        let b = build(&ctx(&[]), &cli(&["job.sh"]), &src, SCRIPT, None).unwrap();
        assert_eq!(b.spec.array, None);
        for bad in ["x", "3-1", "0-15:0", "1,,2", "0-7%"] {
            let e = build(&ctx(&[]), &cli(&["-a", bad, "job.sh"]), &src, script, None).unwrap_err();
            assert_eq!(
                e.lines,
                vec!["sbatch: error: Batch job submission failed: Invalid job array specification"],
                "{bad}"
            );
            assert_eq!(e.code, 1);
        }
    }

    #[test]
    fn client_options_comment_signal_wait_test_only() {
        use gsched_proto::job::WarnSignal;
        let src = ScriptSource::File("job.sh".into());
        let script = "#!/bin/sh\n#SBATCH --comment='rule a' --signal=B:USR2@30\necho\n";
        let b = build(&ctx(&[]), &cli(&["job.sh"]), &src, script, None).unwrap();
        assert_eq!(b.spec.comment.as_deref(), Some("rule a"));
        let usr2_30_batch = WarnSignal {
            signal: 12,
            before_secs: 30,
            batch_only: true,
        };
        assert_eq!(b.spec.warn_signal, Some(usr2_30_batch));
        assert!(!b.wait && !b.test_only);
        // SBATCH_SIGNAL beats the script, the command line beats both (submitit, Nextflow).
        let env = ctx(&[("SBATCH_SIGNAL", "SIGUSR1@90"), ("SBATCH_WAIT", "1")]);
        let b = build(&env, &cli(&["job.sh"]), &src, script, None).unwrap();
        let w = b.spec.warn_signal.unwrap();
        assert_eq!((w.signal, w.before_secs, w.batch_only), (10, 90, false));
        assert!(b.wait);
        let b = build(
            &env,
            &cli(&["--signal", "USR2@90", "-W", "--test-only", "job.sh"]),
            &src,
            script,
            None,
        )
        .unwrap();
        let w = b.spec.warn_signal.unwrap();
        assert_eq!((w.signal, w.before_secs, w.batch_only), (12, 90, false));
        assert!(b.wait && b.test_only);
        let b = build(
            &ctx(&[]),
            &cli(&["--signal=10", "job.sh"]),
            &src,
            "#!/bin/sh\n",
            None,
        )
        .unwrap();
        assert_eq!(b.spec.warn_signal.unwrap().before_secs, 60);
        assert_eq!(b.spec.comment, None);
        for bad in ["USR1@x", "BOGUS", "USR1@70000", "0"] {
            let e = build(
                &ctx(&[]),
                &cli(&[&format!("--signal={bad}"), "job.sh"]),
                &src,
                "#!/bin/sh\n",
                None,
            )
            .unwrap_err();
            assert_eq!(
                e.lines,
                vec!["sbatch: error: Invalid --signal specification"],
                "{bad}"
            );
            assert_eq!(e.code, 255);
        }
        let e = build(
            &ctx(&[]),
            &cli(&["--signal=R:USR1@60", "job.sh"]),
            &src,
            "#!/bin/sh\n",
            None,
        )
        .unwrap_err();
        assert_eq!(
            e.lines,
            vec!["sbatch: error: option --signal with R: (reservations) is not supported by gsched yet"]
        );
        assert_eq!(e.code, 1);
    }

    #[test]
    fn test_only_line_as_slurm() {
        let a = gsched_proto::api::TestOnlyAnswer {
            start: 0,
            cpus: 4,
            nodes: vec!["n1".into(), "n2".into()],
            partition: "debug".into(),
        };
        let line = test_only_line("sbatch", 7, &a);
        assert!(line.starts_with("sbatch: Job 7 to start at "), "{line}");
        assert!(
            line.ends_with(" using 4 processors on nodes n[1-2] in partition debug"),
            "{line}"
        );
    }

    #[test]
    fn precedence_cli_over_env_over_script() {
        let src = ScriptSource::File("job.sh".into());
        let b = build(&ctx(&[]), &cli(&["job.sh"]), &src, SCRIPT, Some("cluster")).unwrap();
        assert_eq!(b.spec.name, "from_script");
        assert_eq!(b.spec.partitions, vec!["script_part"]);
        assert_eq!(b.spec.time_limit, Some(10));
        assert_eq!(b.spec.stdout.as_deref(), Some("/home/u/out.%j"));
        assert_eq!(b.spec.mem, Some(MemRequest::PerNode(1024)));

        let env = [
            ("SBATCH_JOB_NAME", "from_env"),
            ("SBATCH_PARTITION", "a,b"),
            ("SBATCH_MEM_PER_CPU", "100"),
        ];
        let b = build(&ctx(&env), &cli(&["job.sh"]), &src, SCRIPT, Some("cluster")).unwrap();
        assert_eq!(b.spec.name, "from_env");
        assert_eq!(b.spec.partitions, vec!["a", "b"]);
        assert_eq!(b.spec.mem, Some(MemRequest::PerCpu(100)));

        let b = build(
            &ctx(&env),
            &cli(&[
                "-J",
                "from_cli",
                "--time=1-0",
                "--mem",
                "2G",
                "job.sh",
                "arg1",
            ]),
            &src,
            SCRIPT,
            Some("cluster"),
        )
        .unwrap();
        assert_eq!(b.spec.name, "from_cli");
        assert_eq!(b.spec.time_limit, Some(1440));
        assert_eq!(b.spec.mem, Some(MemRequest::PerNode(2048)));
        assert_eq!(b.spec.argv, vec!["arg1"]);
        assert_eq!(b.spec.command, "/home/u/job.sh");
        assert_eq!(b.spec.work_dir, "/home/u");
        assert_eq!(b.spec.submit_host, "login1");
    }

    #[test]
    fn defaults_and_names() {
        let plain = "#!/bin/sh\necho\n";
        let b = build(
            &ctx(&[]),
            &cli(&["dir/job.sh"]),
            &ScriptSource::File("dir/job.sh".into()),
            plain,
            Some("c"),
        )
        .unwrap();
        assert_eq!(b.spec.name, "job.sh");
        assert_eq!(b.spec.command, "/home/u/dir/job.sh");
        let b = build(&ctx(&[]), &cli(&[]), &ScriptSource::Stdin, plain, Some("c")).unwrap();
        assert_eq!(b.spec.name, "sbatch");
        assert_eq!(b.spec.command, "");
        let w = wrap_script("hostname");
        assert_eq!(
            w,
            "#!/bin/sh\n# This script was created by sbatch --wrap.\n\nhostname\n"
        );
        let b = build(
            &ctx(&[]),
            &cli(&["--wrap=hostname"]),
            &ScriptSource::Wrap("hostname".into()),
            &w,
            Some("c"),
        )
        .unwrap();
        assert_eq!(b.spec.name, "wrap");
        assert_eq!(b.spec.time_limit, None);
        assert!(!b.spec.time_unlimited);
        let b = build(
            &ctx(&[]),
            &cli(&["-t", "UNLIMITED", "-D", "sub", "-e", "/abs/err", "x"]),
            &ScriptSource::File("x".into()),
            plain,
            Some("c"),
        )
        .unwrap();
        assert!(b.spec.time_unlimited);
        assert_eq!(b.spec.work_dir, "/home/u/sub");
        assert_eq!(b.spec.stderr.as_deref(), Some("/abs/err"));
    }

    #[test]
    fn option_errors() {
        let src = ScriptSource::File("x".into());
        let plain = "#!/bin/sh\necho\n";
        let e = build(
            &ctx(&[]),
            &cli(&["-t", "bogus", "x"]),
            &src,
            plain,
            Some("c"),
        )
        .unwrap_err();
        assert_eq!(e.lines, vec!["sbatch: error: Invalid --time specification"]);
        assert_eq!(e.code, 255);
        let e = build(
            &ctx(&[]),
            &cli(&["--mem=1G", "--mem-per-cpu=1G", "x"]),
            &src,
            plain,
            Some("c"),
        )
        .unwrap_err();
        assert_eq!(
            e.lines,
            vec!["sbatch: fatal: --mem, --mem-per-cpu, and --mem-per-gpu are mutually exclusive."]
        );
        let e = build(
            &ctx(&[]),
            &cli(&["--gpu-bind=closest", "x"]),
            &src,
            plain,
            Some("c"),
        )
        .unwrap_err();
        assert_eq!(
            e.lines,
            vec!["sbatch: error: option --gpu-bind is not supported by gsched yet"]
        );
        assert_eq!(e.code, 1);
        let e = build(
            &ctx(&[("SBATCH_PROFILE", "all")]),
            &cli(&["x"]),
            &src,
            plain,
            Some("c"),
        )
        .unwrap_err();
        assert_eq!(
            e.lines,
            vec!["sbatch: error: option --profile (from SBATCH_PROFILE) is not supported by gsched yet"]
        );
        // --reservation: SBATCH_RESERVATION.
        let b = build(
            &ctx(&[("SBATCH_RESERVATION", "maint")]),
            &cli(&["x"]),
            &src,
            plain,
            Some("c"),
        )
        .unwrap();
        assert_eq!(b.spec.reservation.as_deref(), Some("maint"));
        // --qos: SBATCH_QOS, overridden by the command line; lower-cased.
        let b = build(
            &ctx(&[("SBATCH_QOS", "High")]),
            &cli(&["x"]),
            &src,
            plain,
            Some("c"),
        )
        .unwrap();
        assert_eq!(b.spec.qos.as_deref(), Some("high"));
        let b = build(
            &ctx(&[("SBATCH_QOS", "High")]),
            &cli(&["-q", "low", "x"]),
            &src,
            plain,
            Some("c"),
        )
        .unwrap();
        assert_eq!(b.spec.qos.as_deref(), Some("low"));
        // A flag variable that is off is a reset, not a request.
        assert!(build(
            &ctx(&[("SBATCH_WAIT", "0")]),
            &cli(&["x"]),
            &src,
            plain,
            Some("c")
        )
        .is_ok());
        let e = build(
            &ctx(&[]),
            &cli(&["--uid=root", "x"]),
            &src,
            plain,
            Some("c"),
        )
        .unwrap_err();
        assert_eq!(
            e.lines,
            vec!["sbatch: error: --uid only permitted by root user"]
        );
        let e = build(&ctx(&[]), &cli(&["-n", "x1", "x"]), &src, plain, Some("c")).unwrap_err();
        assert_eq!(
            e.lines,
            vec!["sbatch: error: Invalid numeric value \"x1\" for --ntasks."]
        );
        assert_eq!(e.code, 1);
        let e = build(&ctx(&[]), &cli(&["-N", "3-2", "x"]), &src, plain, Some("c")).unwrap_err();
        assert_eq!(
            e.lines,
            vec!["sbatch: error: Maximum node count 2 is less than minimum node count 3"]
        );
        let e = build(
            &ctx(&[]),
            &cli(&["-M", "other", "x"]),
            &src,
            plain,
            Some("c"),
        )
        .unwrap_err();
        assert!(e.lines[0].contains("'other' can't be reached now"));
        let b = build(
            &ctx(&[]),
            &cli(&["-M", "c", "--parsable", "x"]),
            &src,
            plain,
            Some("c"),
        )
        .unwrap();
        assert_eq!(
            success_line(7, b.parsable, false, b.clusters.as_deref()).unwrap(),
            "7;c\n"
        );
    }

    #[test]
    fn gpu_options_from_script_env_and_command_line() {
        let src = ScriptSource::File("job.sh".into());
        let script = "#!/bin/sh\n#SBATCH --gres=gpu:A100:2 --cpus-per-gpu=4\necho\n";
        let b = build(&ctx(&[]), &cli(&["job.sh"]), &src, script, None).unwrap();
        let g = b.spec.gpu.unwrap();
        assert_eq!(
            (g.type_name.as_deref(), g.per_node, g.cpus_per_gpu),
            (Some("a100"), Some(2), Some(4))
        );
        // SBATCH_* forms; the command line wins over the environment.
        let env = ctx(&[("SBATCH_GPUS_PER_NODE", "3"), ("SBATCH_MEM_PER_GPU", "8G")]);
        let plain = "#!/bin/sh\necho\n";
        let b = build(&env, &cli(&["job.sh"]), &src, plain, None).unwrap();
        let g = b.spec.gpu.unwrap();
        assert_eq!((g.per_node, g.mem_per_gpu_mb), (Some(3), Some(8192)));
        assert_eq!(b.spec.mem, None);
        let b = build(
            &env,
            &cli(&["--gpus-per-node=1", "job.sh"]),
            &src,
            plain,
            None,
        )
        .unwrap();
        assert_eq!(b.spec.gpu.unwrap().per_node, Some(1));
        // --mem on the command line beats SBATCH_MEM_PER_GPU (the highest source decides).
        let b = build(&env, &cli(&["--mem=1G", "job.sh"]), &src, plain, None).unwrap();
        assert_eq!(b.spec.mem, Some(MemRequest::PerNode(1024)));
        assert_eq!(b.spec.gpu.unwrap().mem_per_gpu_mb, None);
        // A share: gsched's own options and their variables.
        let env = ctx(&[("SBATCH_GPU_SHARE", "25")]);
        let b = build(&env, &cli(&["--gpu-mem=20G", "job.sh"]), &src, plain, None).unwrap();
        let sh = b.spec.gpu.unwrap().share.unwrap();
        assert_eq!((sh.mem_mb, sh.percent), (Some(20 * 1024), Some(25)));
        let b = build(
            &ctx(&[]),
            &cli(&["--gres=mps:50", "job.sh"]),
            &src,
            plain,
            None,
        )
        .unwrap();
        assert_eq!(b.spec.gpu.unwrap().share.unwrap().mps, Some(50));
    }

    #[test]
    fn gpu_option_errors() {
        let src = ScriptSource::File("job.sh".into());
        let plain = "#!/bin/sh\necho\n";
        let err = |args: &[&str]| {
            let mut a = args.to_vec();
            a.push("job.sh");
            build(&ctx(&[]), &cli(&a), &src, plain, None).unwrap_err()
        };
        let e = err(&["--gres=gpu:1", "--gpu-mem=10G"]);
        assert_eq!(e.code, 255);
        assert_eq!(
            e.lines,
            vec!["sbatch: error: --gres=gpu (whole GPUs) and --gpu-mem (a share of one GPU) cannot be combined: ask for whole GPUs or for a share"]
        );
        assert_eq!(
            err(&["--gres=gpu:x:y:z"]).lines,
            vec!["sbatch: error: Invalid generic resource (gres) specification"]
        );
        assert_eq!(
            err(&["--gpus=1", "--cpus-per-gpu=2", "-c", "4"]).lines,
            vec!["sbatch: error: --cpus-per-gpu is mutually exclusive with --cpus-per-task"]
        );
        assert_eq!(
            err(&["--gpu-share=150"]).lines,
            vec!["sbatch: error: Invalid --gpu-share specification: 150 (a percentage from 1 to 100)"]
        );
        assert_eq!(
            err(&["--gpus-per-task=a:b:c"]).lines,
            vec!["sbatch: error: Invalid --gpus-per-task specification: a:b:c"]
        );
        assert_eq!(
            err(&["--mem=1G", "--mem-per-gpu=1G", "--gpus=1"]).lines,
            vec!["sbatch: fatal: --mem, --mem-per-cpu, and --mem-per-gpu are mutually exclusive."]
        );
        assert_eq!(
            err(&["--cpus-per-gpu=2"]).lines,
            vec!["sbatch: error: --cpus-per-gpu needs GPUs: add --gres=gpu:N or --gpus-per-node=N"]
        );
    }

    #[test]
    fn memory_precedence() {
        let src = ScriptSource::File("x".into());
        // Script sets both: error even if the command line says nothing about memory.
        let s = "#!/bin/sh\n#SBATCH --mem=1G --mem-per-cpu=10\necho\n";
        assert!(build(&ctx(&[]), &cli(&["x"]), &src, s, Some("c")).is_err());
        // The command line overrides the script's choice of kind.
        let s = "#!/bin/sh\n#SBATCH --mem=1G\necho\n";
        let b = build(
            &ctx(&[]),
            &cli(&["--mem-per-cpu=10", "x"]),
            &src,
            s,
            Some("c"),
        )
        .unwrap();
        assert_eq!(b.spec.mem, Some(MemRequest::PerCpu(10)));
        let e = build(
            &ctx(&[("SBATCH_MEM_PER_NODE", "1"), ("SBATCH_MEM_PER_CPU", "1")]),
            &cli(&["x"]),
            &src,
            "#!/bin/sh\n",
            Some("c"),
        )
        .unwrap_err();
        assert!(e.lines[0].contains("SLURM_MEM_PER_CPU, SLURM_MEM_PER_GPU, and SLURM_MEM_PER_NODE"));
    }

    #[test]
    fn nodes_and_tasks() {
        assert_eq!(parse_nodes("s", "2").unwrap(), (2, 2));
        assert_eq!(parse_nodes("s", "2-4").unwrap(), (2, 4));
        assert_eq!(parse_nodes("s", "1k").unwrap(), (1024, 1024));
        assert!(parse_nodes("s", "x").is_err());
        let src = ScriptSource::File("x".into());
        let b = build(
            &ctx(&[]),
            &cli(&["-N", "3", "-n", "2", "x"]),
            &src,
            "#!/bin/sh\n",
            Some("c"),
        )
        .unwrap();
        assert_eq!(b.spec.nodes, Some(2));
        assert_eq!(
            b.warnings,
            vec!["sbatch: Warning: can't run 2 processes on 3 nodes, setting nnodes to 2"]
        );
        let b = build(
            &ctx(&[]),
            &cli(&["--tasks-per-node=4", "-c", "2", "x"]),
            &src,
            "#!/bin/sh\n",
            Some("c"),
        )
        .unwrap();
        assert_eq!(b.spec.ntasks_per_node, Some(4));
        assert_eq!(b.spec.cpus_per_task, Some(2));
    }

    fn envv(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn export_filtering() {
        let env = envv(&[
            ("HOME", "/h"),
            ("PATH", "/bin"),
            ("SLURM_X", "1"),
            ("SLURMD_Y", "2"),
            ("A", "a"),
        ]);
        assert_eq!(export_environment(None, &env), env);
        assert_eq!(export_environment(Some("all"), &env), env);
        assert_eq!(
            export_environment(Some("NONE"), &env),
            envv(&[("SLURM_X", "1"), ("SLURMD_Y", "2")])
        );
        assert_eq!(
            export_environment(Some("NIL"), &env),
            export_environment(Some("NONE"), &env)
        );
        assert_eq!(
            export_environment(Some("PATH,B=b,MISSING"), &env),
            envv(&[("PATH", "/bin"), ("B", "b"), ("SLURM_X", "1")])
        );
        assert_eq!(
            export_environment(Some("ALL,A=override,C=\"x,y\""), &env),
            envv(&[
                ("HOME", "/h"),
                ("PATH", "/bin"),
                ("SLURM_X", "1"),
                ("SLURMD_Y", "2"),
                ("A", "override"),
                ("C", "\"x,y\"")
            ])
        );
        assert_eq!(export_tokens("'A=1,2',B"), vec!["A=1,2", "B"]);
    }

    #[test]
    fn export_sets_spec_and_slurm_vars() {
        let src = ScriptSource::File("x".into());
        let b = build(
            &ctx(&[("HOME", "/h"), ("SBATCH_EXPORT", "NONE")]),
            &cli(&["x"]),
            &src,
            "#!/bin/sh\n",
            Some("c"),
        )
        .unwrap();
        assert_eq!(b.spec.export.as_deref(), Some("NONE"));
        let keys: Vec<&str> = b.spec.environment.iter().map(|(k, _)| k).collect();
        assert!(!keys.contains(&"HOME"));
        assert!(keys.contains(&"SLURM_SUBMIT_DIR"));
        assert!(b.spec.environment.has("SLURM_UMASK", "0022"));
        assert!(b.spec.environment.has("SLURM_EXPORT_ENV", "NONE"));
        assert!(b
            .spec
            .environment
            .has("SLURM_SUBMIT_HOST", "login1.example.org"));
    }

    #[test]
    fn resource_limits_propagate_as_the_config_or_propagate_says() {
        let src = ScriptSource::File("x".into());
        let env_of = |args: &[&str]| {
            let b = build(&ctx(&[]), &cli(args), &src, "#!/bin/sh\n", None).unwrap();
            let mut v: Vec<(String, String)> = b
                .spec
                .environment
                .iter()
                .filter(|(k, _)| k.starts_with("SLURM_RLIMIT_"))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            v.sort();
            v
        };
        let pair = |k: &str, v: &str| (k.to_string(), v.to_string());
        // The config's (CORE, STACK), with --export=NONE too.
        assert_eq!(
            env_of(&["--export=NONE", "x"]),
            vec![
                pair("SLURM_RLIMIT_CORE", "0"),
                pair("SLURM_RLIMIT_STACK", "18446744073709551615")
            ]
        );
        assert_eq!(
            env_of(&["--propagate=NOFILE", "x"]),
            vec![pair("SLURM_RLIMIT_NOFILE", "U1024")]
        );
        assert_eq!(env_of(&["--propagate", "x"]).len(), 3);
        assert!(env_of(&["--propagate=NONE", "x"]).is_empty());
        let e = build(&ctx(&[]), &cli(&["--propagate=FOO", "x"]), &src, "", None).unwrap_err();
        assert_eq!(
            e.lines,
            vec!["sbatch: error: --propagate=FOO is not valid."]
        );
    }

    #[test]
    fn get_user_env_only_for_root() {
        assert_eq!(parse_get_user_env(None), (GET_USER_ENV_TIMEOUT, true));
        assert_eq!(parse_get_user_env(Some("L")), (GET_USER_ENV_TIMEOUT, true));
        assert_eq!(parse_get_user_env(Some("10S")), (10, false));
        assert_eq!(parse_get_user_env(Some("20x")), (20, true));
        let src = ScriptSource::File("x".into());
        let script = "#!/bin/sh\n#SBATCH --get-user-env=10S\n";
        let env_of = |uid: u32| {
            let mut c = ctx(&[("HOME", "/h")]);
            c.caller.uid = uid;
            build(&c, &cli(&["x"]), &src, script, Some("c"))
                .unwrap()
                .spec
                .environment
        };
        // Root: the login environment under the submission's (HOME stays /h).
        let env = env_of(0);
        assert!(env.has("LOGIN_USER", "root/10/false"));
        assert!(env.has("HOME", "/h"));
        // Anyone else: no effect, as in Slurm.
        let env = env_of(1000);
        assert!(!env.iter().any(|(k, _)| k == "LOGIN_USER"));
    }

    #[test]
    fn script_sanity() {
        assert_eq!(check_script(b""), Err(vec!["Batch script is empty!"]));
        assert_eq!(
            check_script(b" \n\t"),
            Err(vec!["Batch script contains only whitespace!"])
        );
        assert_eq!(check_script(b"echo hi\n").unwrap_err().len(), 3);
        assert_eq!(
            check_script(b"#!/bin/sh\n\0").unwrap_err()[1],
            "contain a NULL character '\\0'."
        );
        assert_eq!(
            check_script(b"#!/bin/sh\r\necho\r\n").unwrap_err()[0],
            "Batch script contains DOS line breaks (\\r\\n)"
        );
        assert!(check_script(b"#!/bin/sh\necho\n").is_ok());
    }

    #[test]
    fn first_pass_help_version_and_errors() {
        let a = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(
            matches!(first_pass("sbatch", &a(&["-V"])).unwrap(), FirstPass::Print(s) if s == "slurm 22.05.8\n")
        );
        assert!(matches!(
            first_pass("sbatch", &a(&["--help", "--foo"])).unwrap(),
            FirstPass::Print(_)
        ));
        let e = first_pass("sbatch", &a(&["--foo"])).unwrap_err();
        assert_eq!(e.lines[0], "sbatch: unrecognized option '--foo'");
        assert_eq!(e.lines[1], "Try \"sbatch --help\" for more information");
        // Options after the script belong to the script.
        let cl = cli(&["-N1", "job.sh", "-N", "2"]);
        assert_eq!(cl.operands, vec!["job.sh", "-N", "2"]);
        assert_eq!(
            success_line(5, false, false, None).unwrap(),
            "Submitted batch job 5\n"
        );
        assert_eq!(success_line(5, true, false, None).unwrap(), "5\n");
        assert_eq!(success_line(5, true, true, None), None);
    }

    #[test]
    fn early_options_ignored_in_script() {
        let src = ScriptSource::File("x".into());
        let s = "#!/bin/sh\n#SBATCH --help --wrap=foo -Q\n";
        let b = build(&ctx(&[]), &cli(&["x"]), &src, s, Some("c")).unwrap();
        assert_eq!(b.spec.name, "x");
    }
}
