//! `gsrun`: Slurm's `srun` inside an allocation. Each run is a job step (`N.0`, `N.1`, ...):
//! the controller creates it and starts its tasks on the job's nodes through their gsnoded;
//! gsrun then reads the tasks' output from each gsnoded (`node/step_io`), writes it to its own
//! stdout/stderr (with `-l` labels) or to the `-o/-e` files, and exits as srun does: the
//! highest task exit code, or `128 + signal` when a task was killed by a signal.
//!
//! Files: an `-o/-e` pattern with `%t`, `%n` or `%N` names one file per task or node and is
//! opened on the node by the task; any other pattern names one file gsrun writes itself
//! (srun's `IO_ALL`); `none` discards; a number keeps only that task's output.
//!
//! Signals: SIGINT, SIGTERM, SIGHUP and SIGQUIT given to gsrun are forwarded to the step's
//! tasks (srun forwards them). SIGUSR1 and SIGUSR2 are ignored by gsrun: `gscancel --signal`
//! and `--signal` warnings already reach the tasks through their nodes, and gsrun itself is a
//! process of the job that receives them too.

use crate::common::{self, Fail, Parsed};
use crate::getopt::{self, HasArg, Item, Opt, Ordering};
use gsched_proto::client::Client;
use gsched_proto::hostlist;
use gsched_proto::patterns::{expand_stdio, resolve_output_path, PatternContext};
use gsched_proto::step::{
    b64_decode, b64_encode, srun_exit_status, IoOffset, StepCompleteRequest, StepCreateRequest,
    StepCreateResponse, StepIoRequest, StepIoResponse, StepNode, StepSignalRequest, Stream,
    TaskEnd,
};
use std::collections::BTreeMap;
use std::io::{IsTerminal, Read, Write};
use std::time::{Duration, Instant};

use HasArg::{No, Required as Req};

/// gsrun's options: Slurm's names; what gsched does not implement is refused by getopt.
pub const OPTIONS: &[Opt] = &[
    Opt::new("ntasks", Some('n'), &["ntasks"], Req),
    Opt::new("nodes", Some('N'), &["nodes"], Req),
    Opt::new("cpus-per-task", Some('c'), &["cpus-per-task"], Req),
    Opt::new("nodelist", Some('w'), &["nodelist"], Req),
    Opt::new("label", Some('l'), &["label"], No),
    Opt::new("unbuffered", Some('u'), &["unbuffered"], No),
    Opt::new("output", Some('o'), &["output"], Req),
    Opt::new("error", Some('e'), &["error"], Req),
    Opt::new("input", Some('i'), &["input"], Req),
    Opt::new("signal", None, &["signal"], Req),
    Opt::new("overlap", None, &["overlap"], No),
    Opt::new("jobid", None, &["jobid"], Req),
    Opt::new("job-name", Some('J'), &["job-name"], Req),
    Opt::new("export", None, &["export"], Req),
    Opt::new("mpi", None, &["mpi"], Req),
    Opt::new("cpu-bind", None, &["cpu-bind", "cpu_bind"], Req),
    Opt::new("chdir", Some('D'), &["chdir"], Req),
    Opt::new("open-mode", None, &["open-mode"], Req),
    Opt::new("quiet", Some('Q'), &["quiet"], No),
    Opt::new("verbose", Some('v'), &["verbose"], No),
    Opt::new("help", Some('h'), &["help"], No),
    Opt::new("usage", None, &["usage"], No),
    Opt::new("version", Some('V'), &["version"], No),
    Opt::new("exact", None, &["exact"], No),
];

/// Where one output stream goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dest {
    /// gsrun's own stdout/stderr.
    Terminal,
    /// Discarded (`none`).
    Discard,
    /// Only task N's output, to gsrun's own stream.
    OneTask(u32),
    /// One file gsrun writes (pattern, expanded once).
    File(String),
    /// One file per task or node, opened on the node.
    PerTask(String),
}

impl Dest {
    fn parse(v: &str) -> Dest {
        if v.eq_ignore_ascii_case("none") {
            Dest::Discard
        } else if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
            v.parse().map(Dest::OneTask).unwrap_or(Dest::Discard)
        } else if v.eq_ignore_ascii_case("all") {
            Dest::Terminal
        } else if gsched_proto::patterns::pattern_is_per_task(v) {
            Dest::PerTask(v.to_string())
        } else {
            Dest::File(v.to_string())
        }
    }
}

/// What `-i` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// gsrun's stdin to every task (when it is not a terminal).
    All,
    None,
    Task(u32),
    File(String),
}

/// A parsed command line.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SrunOpts {
    pub ntasks: Option<u32>,
    pub nodes: Option<u32>,
    pub cpus_per_task: Option<u32>,
    pub nodelist: Vec<String>,
    pub label: bool,
    pub unbuffered: bool,
    pub output: Option<String>,
    pub error: Option<String>,
    pub input: Option<String>,
    pub signal: Option<gsched_proto::job::WarnSignal>,
    pub overlap: bool,
    pub jobid: Option<u32>,
    pub name: Option<String>,
    pub export: Option<String>,
    pub chdir: Option<String>,
    pub quiet: bool,
    /// `--open-mode=append` (`Some(true)`) or `truncate`, or `SLURM_OPEN_MODE` (sbatch's
    /// `--open-mode` for the job); `None`: the config's `JobFileAppend`.
    pub open_append: Option<bool>,
    pub argv: Vec<String>,
}

fn positive(prog: &str, what: &str, v: &str) -> Result<u32, Fail> {
    match v.trim().parse::<u32>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(Fail::error(prog, format!("Invalid {what}: {v}"))),
    }
}

pub fn usage_text() -> String {
    "Usage: srun [-N nnodes] [-n ntasks] [-c ncpus] [-w hosts] [-l] [-u] [-o out] [-e err]\n\
     \x20           [-i in] [-J jobname] [--jobid=id] [--overlap] [--signal=[R:]num[@time]]\n\
     \x20           [--export=env_vars|NONE] [--mpi=none] [-D path] executable [args...]\n"
        .to_string()
}

pub fn help_text() -> String {
    "Usage: srun [OPTIONS(0)... [executable(0) [args(0)...]]]\n\
     Parallel run options:\n\
     \x20 -c, --cpus-per-task=ncpus   number of cpus required per task\n\
     \x20 -D, --chdir=path            change remote current working directory\n\
     \x20 -e, --error=err             location of stderr redirection\n\
     \x20     --exact                 accepted (gsched does not share out CPUs between steps)\n\
     \x20     --export=env_vars|NONE  environment passed to the tasks (default ALL)\n\
     \x20 -i, --input=in              location of stdin redirection (none, a task id, a file)\n\
     \x20 -J, --job-name=jobname      name of the step\n\
     \x20     --jobid=id              run under already allocated job\n\
     \x20 -l, --label                 prepend task number to lines of stdout/err\n\
     \x20     --mpi=none              MPI plugin (gsched: none only)\n\
     \x20 -n, --ntasks=ntasks         number of tasks to run\n\
     \x20 -N, --nodes=N               number of nodes on which to run (N = min[-max])\n\
     \x20 -o, --output=out            location of stdout redirection\n\
     \x20     --open-mode={append|truncate} output file open mode (default: the\n\
     \x20                             job's, SLURM_OPEN_MODE, else truncate)\n\
     \x20     --overlap               share CPUs with other steps\n\
     \x20 -Q, --quiet                 quiet mode (suppress informational messages)\n\
     \x20     --signal=[R:]num[@time] send signal when time limit within time seconds\n\
     \x20 -u, --unbuffered            do not line-buffer stdout/err\n\
     \x20 -w, --nodelist=hosts...     request a specific list of hosts\n\
     \x20     --cpu-bind=quiet|none   task binding (gsched does not bind tasks)\n\
     \n\
     Help options:\n\
     \x20 -h, --help                  show this help message\n\
     \x20     --usage                 display brief usage message\n\
     \n\
     Other options:\n\
     \x20 -V, --version               output version information and exit\n"
        .to_string()
}

/// Parses a command line (without argv[0]); `env` gives srun's input variables
/// (`SLURM_NTASKS`, `SLURM_CPUS_PER_TASK`, `SLURM_JOB_ID`).
pub fn parse(
    prog: &str,
    args: &[String],
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Parsed<SrunOpts>, Fail> {
    // Options end at the command (srun's getopt string starts with `+`).
    let items = getopt::parse(args, OPTIONS, Ordering::RequireOrder)
        .map_err(|e| Fail::usage(prog, &e, 1))?;
    let mut o = SrunOpts::default();
    let mut open_mode = None;
    for item in items {
        let (id, arg) = match item {
            Item::Opt { id, arg, .. } => (id, arg.unwrap_or_default()),
            Item::Operand(s) => {
                o.argv.push(s);
                continue;
            }
        };
        if let Some(t) = common::info_text(id, help_text, usage_text) {
            return Ok(Parsed::Print(t));
        }
        match id {
            "ntasks" => o.ntasks = Some(positive(prog, "number of tasks", &arg)?),
            "nodes" => {
                // `min[-max]`: gsched gives a step exactly `min` nodes.
                let min = arg.split('-').next().unwrap_or("");
                o.nodes = Some(positive(prog, "node count specification", min)?);
            }
            "cpus-per-task" => {
                o.cpus_per_task = Some(positive(prog, "--cpus-per-task argument", &arg)?)
            }
            "nodelist" => {
                if arg.contains('/') {
                    return Err(Fail::error(
                        prog,
                        "a node list file for -w is not supported by gsched; give the node names",
                    ));
                }
                o.nodelist = hostlist::expand(&arg)
                    .map_err(|e| Fail::error(prog, format!("Invalid node list {arg}: {e}")))?;
            }
            "label" => o.label = true,
            "unbuffered" => o.unbuffered = true,
            "output" => o.output = Some(arg),
            "error" => o.error = Some(arg),
            "input" => o.input = Some(arg),
            "signal" => {
                // srun's form is `[R:]sig[@time]`; `R:` (reservations) is not supported.
                let w = crate::signals::parse_warn_signal(&arg).map_err(|e| match e {
                    crate::signals::WarnSignalError::Reservation => Fail::error(
                        prog,
                        "--signal=R: (signal at reservation end) is not supported by gsched",
                    ),
                    crate::signals::WarnSignalError::Invalid => {
                        Fail::error(prog, "Invalid --signal specification")
                    }
                })?;
                if w.batch_only {
                    return Err(Fail::error(prog, "Invalid --signal specification"));
                }
                o.signal = Some(w);
            }
            "overlap" | "exact" => o.overlap |= id == "overlap",
            "jobid" => o.jobid = Some(positive(prog, "job id", &arg)?),
            "job-name" => o.name = Some(arg),
            "export" => o.export = Some(arg),
            "mpi" if !arg.eq_ignore_ascii_case("none") => {
                return Err(Fail::error(
                    prog,
                    format!("MPI plugin {arg} is not supported by gsched: tasks are started without an MPI plugin; use --mpi=none (PMI-less launchers such as mpirun inside the allocation work)"),
                ));
            }
            "cpu-bind" => {
                for tok in arg.split(',') {
                    if !["q", "quiet", "v", "verbose", "none", "no"]
                        .iter()
                        .any(|k| tok.eq_ignore_ascii_case(k))
                    {
                        return Err(Fail::error(
                            prog,
                            format!("--cpu-bind={arg}: gsched does not bind tasks to CPUs; only quiet, verbose and none are accepted"),
                        ));
                    }
                }
            }
            "chdir" => o.chdir = Some(arg),
            "open-mode" => {
                open_mode = Some(
                    parse_open_mode(&arg)
                        .ok_or_else(|| Fail::error(prog, "Invalid --open-mode specification"))?,
                )
            }
            "quiet" => o.quiet = true,
            "verbose" => {}
            _ => {}
        }
    }
    if o.argv.is_empty() {
        return Err(Fail::error(prog, "No command given to execute."));
    }
    // Input variables (lower precedence than the command line).
    if o.ntasks.is_none() && o.nodes.is_none() && o.nodelist.is_empty() {
        if let Some(v) = env("SLURM_NTASKS").filter(|v| !v.is_empty()) {
            o.ntasks = Some(positive(prog, "SLURM_NTASKS", &v)?);
        }
    }
    if o.cpus_per_task.is_none() {
        if let Some(v) = env("SLURM_CPUS_PER_TASK").filter(|v| !v.is_empty()) {
            o.cpus_per_task = Some(positive(prog, "SLURM_CPUS_PER_TASK", &v)?);
        }
    }
    o.open_append = open_mode.or_else(|| env("SLURM_OPEN_MODE").and_then(|v| parse_open_mode(&v)));
    if o.jobid.is_none() {
        if let Some(v) = env("SLURM_JOB_ID").or_else(|| env("SLURM_JOBID")) {
            o.jobid = Some(positive(prog, "SLURM_JOB_ID", &v)?);
        }
    }
    Ok(Parsed::Run(o))
}

/// `append`/`a` → true, `truncate`/`t` → false (Slurm reads the first letter).
fn parse_open_mode(v: &str) -> Option<bool> {
    match v.chars().next() {
        Some('a' | 'A') => Some(true),
        Some('t' | 'T') => Some(false),
        _ => None,
    }
}

/// Width of `-l` labels: the digits of the highest task id (Slurm pads with blanks).
pub fn label_width(ntasks: u32) -> usize {
    ntasks.saturating_sub(1).max(1).to_string().len()
}

/// Turns tasks' output chunks into what gsrun writes: complete lines (unless unbuffered),
/// each prefixed with the task's label under `-l`.
#[derive(Debug, Default)]
pub struct Labeller {
    label: Option<usize>,
    unbuffered: bool,
    /// Per (rank, stream): a partial line (buffered mode) or whether the next byte starts a
    /// line (unbuffered mode).
    partial: BTreeMap<(u32, u8), Vec<u8>>,
    at_start: BTreeMap<(u32, u8), bool>,
}

impl Labeller {
    pub fn new(label: Option<usize>, unbuffered: bool) -> Labeller {
        Labeller {
            label,
            unbuffered,
            ..Labeller::default()
        }
    }

    fn prefix(&self, rank: u32, out: &mut Vec<u8>) {
        if let Some(w) = self.label {
            out.extend_from_slice(format!("{rank:>w$}: ").as_bytes());
        }
    }

    /// The bytes to write now for `data` of `rank`'s stream `s`.
    pub fn feed(&mut self, rank: u32, s: u8, data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        if self.unbuffered {
            for &b in data {
                let start = self.at_start.entry((rank, s)).or_insert(true);
                if *start {
                    *start = false;
                    self.prefix(rank, &mut out);
                }
                out.push(b);
                if b == b'\n' {
                    self.at_start.insert((rank, s), true);
                }
            }
            return out;
        }
        let mut buf = self.partial.remove(&(rank, s)).unwrap_or_default();
        buf.extend_from_slice(data);
        let mut start = 0;
        while let Some(nl) = buf[start..].iter().position(|&b| b == b'\n') {
            self.prefix(rank, &mut out);
            out.extend_from_slice(&buf[start..start + nl + 1]);
            start += nl + 1;
        }
        if start < buf.len() {
            self.partial.insert((rank, s), buf[start..].to_vec());
        }
        out
    }

    /// What is left of `rank`'s stream `s` (a last line without a newline).
    pub fn finish(&mut self, rank: u32, s: u8) -> Vec<u8> {
        let mut out = Vec::new();
        if let Some(rest) = self.partial.remove(&(rank, s)) {
            if !rest.is_empty() {
                self.prefix(rank, &mut out);
                out.extend_from_slice(&rest);
            }
        }
        out
    }
}

/// `strsignal`'s words for the signals tasks usually die of.
pub fn signal_text(sig: i32) -> String {
    match sig {
        1 => "Hangup".into(),
        2 => "Interrupt".into(),
        3 => "Quit".into(),
        4 => "Illegal instruction".into(),
        6 => "Aborted".into(),
        7 => "Bus error".into(),
        8 => "Floating point exception".into(),
        9 => "Killed".into(),
        10 => "User defined signal 1".into(),
        11 => "Segmentation fault".into(),
        12 => "User defined signal 2".into(),
        13 => "Broken pipe".into(),
        14 => "Alarm clock".into(),
        15 => "Terminated".into(),
        24 => "CPU time limit exceeded".into(),
        n => format!("Signal {n}"),
    }
}

/// srun's end-of-step lines for one node: `<node>: task 0: Exited with exit code 3`,
/// consecutive tasks with the same outcome together (`tasks 0-1: Killed`).
pub fn task_end_lines(prog: &str, node: &str, ends: &[TaskEnd]) -> Vec<String> {
    let mut ends: Vec<TaskEnd> = ends
        .iter()
        .copied()
        .filter(|e| e.exit_code != 0 || e.signal != 0)
        .collect();
    ends.sort_by_key(|e| e.rank);
    let mut lines = Vec::new();
    let mut i = 0;
    while i < ends.len() {
        let mut j = i;
        while j + 1 < ends.len()
            && ends[j + 1].rank == ends[j].rank + 1
            && (ends[j + 1].exit_code, ends[j + 1].signal) == (ends[i].exit_code, ends[i].signal)
        {
            j += 1;
        }
        let tasks = if i == j {
            format!("task {}", ends[i].rank)
        } else {
            format!("tasks {}-{}", ends[i].rank, ends[j].rank)
        };
        let what = if ends[i].signal != 0 {
            signal_text(ends[i].signal)
        } else {
            format!("Exited with exit code {}", ends[i].exit_code)
        };
        lines.push(format!("{prog}: error: {node}: {tasks}: {what}"));
        i = j + 1;
    }
    lines
}

pub fn main(args: Vec<String>) -> i32 {
    common::run_main(&args, "gsrun", |prog, rest| {
        let Some(o) = parse(prog, rest, &common::env_var)?.or_print() else {
            return Ok(0);
        };
        run(prog, o)
    })
}

/// A stream's sink.
enum Sink {
    Stdout,
    Stderr,
    Null,
    File(std::fs::File),
}

impl Sink {
    fn write(&mut self, b: &[u8]) {
        if b.is_empty() {
            return;
        }
        let _ = match self {
            Sink::Stdout => {
                let mut o = std::io::stdout().lock();
                o.write_all(b).and_then(|_| o.flush())
            }
            Sink::Stderr => {
                let mut o = std::io::stderr().lock();
                o.write_all(b).and_then(|_| o.flush())
            }
            Sink::Null => Ok(()),
            Sink::File(f) => f.write_all(b),
        };
    }
}

/// Where the tasks' input comes from (`-i`): `None` is `/dev/null`; `Some((source, rank))`
/// streams the source to every task or only to task `rank`.
type InputSource = Option<(Box<dyn Read + Send>, Option<u32>)>;

fn input_source(prog: &str, o: &SrunOpts) -> Result<InputSource, Fail> {
    let stdin = |rank| -> InputSource {
        // A terminal is not forwarded (gsched has no --pty): the tasks read /dev/null.
        if std::io::stdin().is_terminal() {
            None
        } else {
            Some((Box::new(std::io::stdin()), rank))
        }
    };
    Ok(match o.input.as_deref() {
        None => stdin(None),
        Some(v) if v.eq_ignore_ascii_case("all") => stdin(None),
        Some(v) if v.eq_ignore_ascii_case("none") => None,
        Some(v) if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) => {
            stdin(Some(v.parse().unwrap_or(0)))
        }
        Some(path) => {
            if gsched_proto::patterns::pattern_is_per_task(path) {
                return Err(Fail::error(
                    prog,
                    "per-task input files (-i with %t/%n/%N) are not supported by gsched",
                ));
            }
            let f = std::fs::File::open(path)
                .map_err(|e| Fail::error(prog, format!("Could not open stdin file: {e}")))?;
            Some((Box::new(f), None))
        }
    })
}

/// Reads the input on a thread of its own (it may never end: a pipe left open), handing
/// chunks to the polling loop; `None` is the end.
/// Most input bytes sent to a node in one request, and held by gsrun before it reads more.
const INPUT_CHUNK: u64 = 1 << 20;
const INPUT_HELD_MAX: usize = 4 << 20;

fn spawn_reader(mut src: Box<dyn Read + Send>) -> std::sync::mpsc::Receiver<Option<Vec<u8>>> {
    let (tx, rx) = std::sync::mpsc::sync_channel(16);
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match src.read(&mut buf) {
                Ok(0) | Err(_) => {
                    let _ = tx.send(None);
                    return;
                }
                Ok(n) => {
                    if tx.send(Some(buf[..n].to_vec())).is_err() {
                        return;
                    }
                }
            }
        }
    });
    rx
}

fn run(prog: &str, o: SrunOpts) -> Result<i32, Fail> {
    let Some(job_id) = o.jobid else {
        return Err(Fail::error(
            prog,
            "gsrun runs job steps inside an allocation: run it from a batch job (SLURM_JOB_ID is set there) or give --jobid=<running job>; gsched does not create an allocation for gsrun, submit one with gsbatch",
        ));
    };
    let (cfg, client) = common::connect(prog, None)?;
    let auth = gsched_auth::from_config(&cfg).map_err(|e| Fail::error(prog, e.to_string()))?;
    let open_append = o.open_append.unwrap_or(cfg.job_file_append);
    let cwd = match &o.chdir {
        Some(d) => d.clone(),
        None => std::env::current_dir()
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_else(|_| "/".to_string()),
    };
    let mut env: Vec<(String, String)> = std::env::vars().collect();
    // As srun: the soft resource limits the config propagates (PropagateResourceLimits),
    // set on the tasks by the node.
    let names: Vec<&str> = cfg.propagate_rlimits.iter().map(String::as_str).collect();
    let soft = gsched_proto::rlimits::soft_limits();
    for (k, v) in gsched_proto::rlimits::submission_env(&soft, &names, false) {
        crate::sbatch::env_set(&mut env, &k, &v);
    }
    let environment = crate::sbatch::export_environment(o.export.as_deref(), &env);
    let out_dest = o.output.as_deref().map_or(Dest::Terminal, Dest::parse);
    let err_dest = match o.error.as_deref() {
        Some(e) => Dest::parse(e),
        // srun: without -e, stderr goes where -o sends stdout.
        None => out_dest.clone(),
    };
    let pattern = |d: &Dest| match d {
        Dest::PerTask(p) => Some(p.clone()),
        _ => None,
    };
    let input = input_source(prog, &o)?;
    let stdin_rank = input.as_ref().and_then(|(_, r)| *r);
    let req = StepCreateRequest {
        job_id,
        name: o.name.clone(),
        ntasks: o.ntasks,
        nodes: o.nodes,
        nodelist: o.nodelist.clone(),
        cpus_per_task: o.cpus_per_task,
        overlap: o.overlap,
        argv: o.argv.clone(),
        environment,
        work_dir: cwd.clone(),
        stdout: pattern(&out_dest),
        stderr: if o.error.is_some() {
            pattern(&err_dest)
        } else {
            None
        },
        stdin: input.is_some(),
        stdin_rank,
        open_append,
    };
    let created: StepCreateResponse = client
        .post(gsched_proto::api::paths::JOBS_STEPS, &req)
        .map_err(|e| {
            Fail::error(
                prog,
                format!(
                    "Unable to create step for job {job_id}: {}",
                    common::client_error_text(&e)
                ),
            )
        })?;
    let step = &created.step;
    let user = gsched_proto::users::user_by_uid(step.user_id)
        .map(|u| u.name)
        .unwrap_or_else(|| step.user_id.to_string());
    let ctx = PatternContext {
        job_id,
        array_job_id: None,
        array_task_id: None,
        step: Some(step.step_id),
        user: &user,
        job_name: &step.name,
        node: step.nodes.first().map(String::as_str).unwrap_or(""),
        node_index: 0,
        task_id: 0,
        restart_count: 0,
    };
    let open = |d: &Dest, terminal: Sink| -> Result<Sink, Fail> {
        Ok(match d {
            Dest::Terminal | Dest::OneTask(_) => terminal,
            Dest::Discard | Dest::PerTask(_) => Sink::Null,
            Dest::File(p) => {
                let path = resolve_output_path(&expand_stdio(p, &ctx), std::path::Path::new(&cwd));
                let mut opts = std::fs::OpenOptions::new();
                opts.create(true);
                if open_append {
                    opts.append(true);
                } else {
                    opts.write(true).truncate(true);
                }
                Sink::File(opts.open(&path).map_err(|e| {
                    Fail::error(
                        prog,
                        format!("Could not open stdout file {}: {e}", path.display()),
                    )
                })?)
            }
        })
    };
    let mut out_sink = open(&out_dest, Sink::Stdout)?;
    let same_file = o.error.is_none() || o.error == o.output;
    let mut err_sink = if same_file && matches!(out_dest, Dest::File(_)) {
        Sink::Null // written through out_sink below
    } else {
        open(&err_dest, Sink::Stderr)?
    };
    let err_to_out = same_file && matches!(out_dest, Dest::File(_));
    let keep = |d: &Dest, rank: u32| match d {
        Dest::OneTask(n) => *n == rank,
        _ => true,
    };

    crate::sys::forward_signals_setup();
    let mut lab = Labeller::new(o.label.then(|| label_width(step.ntasks)), o.unbuffered);
    let node_clients: Vec<(StepNode, Client)> = created
        .nodes
        .iter()
        .map(|n| {
            (
                n.clone(),
                Client::new(n.endpoint.clone(), auth.clone()).with_timeout(Duration::from_secs(30)),
            )
        })
        .collect();
    let mut offsets: Vec<BTreeMap<(u32, u8), u64>> = vec![BTreeMap::new(); node_clients.len()];
    let mut ended: Vec<Option<(Vec<TaskEnd>, Option<String>)>> = vec![None; node_clients.len()];
    let warn_at = o.signal.and_then(|w| {
        let q: gsched_proto::api::JobsResponse = client
            .post(
                gsched_proto::api::paths::JOBS_QUERY,
                &gsched_proto::api::JobQuery {
                    brief: true,
                    fields: Vec::new(),
                    filter: gsched_proto::api::JobFilter {
                        ids: vec![job_id],
                        ..Default::default()
                    },
                },
            )
            .ok()?;
        let j = q.jobs.into_iter().find(|j| j.job_id == job_id)?;
        let at = w.due_at(j.start_time?, j.time_limit?);
        Some((at, w.signal))
    });
    let mut warned = false;
    // The input: read on its own thread, sent to the nodes of the reading tasks.
    let input_rx = input.map(|(src, _)| spawn_reader(src));
    let input_nodes: Vec<usize> = (0..node_clients.len())
        .filter(|&i| stdin_rank.is_none_or(|r| node_clients[i].0.tasks.contains(&r)))
        .collect();
    let mut input_buf: Vec<u8> = Vec::new();
    let mut input_base: u64 = 0;
    let mut input_eof = input_rx.is_none();
    let mut input_sent: Vec<(u64, bool)> = vec![(0, false); node_clients.len()];
    let mut delay = Duration::from_millis(20);
    let mut failures = 0u32;
    let started = Instant::now();
    let signal_step = |sig: Option<i32>| {
        let _ = client.post::<_, gsched_proto::api::Ack>(
            gsched_proto::api::paths::JOBS_STEPS_SIGNAL,
            &StepSignalRequest {
                job_id,
                step_id: step.step_id,
                signal: sig,
            },
        );
    };
    while ended.iter().any(Option::is_none) {
        if let Some(sig) = crate::sys::take_forwarded_signal() {
            signal_step(Some(sig));
        }
        if let Some((at, sig)) = warn_at {
            if !warned && common::now() >= at {
                warned = true;
                signal_step(Some(sig));
            }
        }
        let mut got = false;
        if let Some(rx) = &input_rx {
            // Take more input only while little is waiting (the reader blocks meanwhile).
            while input_buf.len() < INPUT_HELD_MAX {
                match rx.try_recv() {
                    Ok(Some(b)) => input_buf.extend_from_slice(&b),
                    Ok(None) => input_eof = true,
                    Err(_) => break,
                }
            }
        }
        if input_rx.is_some() {
            let total = input_base + input_buf.len() as u64;
            for &i in &input_nodes {
                let (sent, eof_sent) = input_sent[i];
                if ended[i].is_some() || (sent == total && (eof_sent || !input_eof)) {
                    continue;
                }
                // At most INPUT_CHUNK per request (request bodies are limited).
                let end = total.min(sent + INPUT_CHUNK);
                let from = (sent - input_base) as usize;
                let to = (end - input_base) as usize;
                let eof = input_eof && end == total;
                let req = gsched_proto::step::StepStdinRequest {
                    job_id,
                    step_id: step.step_id,
                    offset: sent,
                    data_b64: b64_encode(&input_buf[from..to]),
                    eof,
                };
                let r = node_clients[i].1.post::<_, gsched_proto::api::Ack>(
                    gsched_proto::api::paths::NODE_STEP_STDIN,
                    &req,
                );
                if r.is_ok() {
                    input_sent[i] = (end, eof);
                    got = true;
                }
            }
            // Forget what every node still reading has received.
            let done = input_nodes
                .iter()
                .filter(|&&i| ended[i].is_none())
                .map(|&i| input_sent[i].0)
                .min()
                .unwrap_or(total);
            let drop_n = (done.saturating_sub(input_base) as usize).min(input_buf.len());
            input_buf.drain(..drop_n);
            input_base += drop_n as u64;
        }
        for (i, (node, c)) in node_clients.iter().enumerate() {
            if ended[i].is_some() {
                continue;
            }
            let req = StepIoRequest {
                job_id,
                step_id: step.step_id,
                offsets: offsets[i]
                    .iter()
                    .map(|(&(rank, s), &offset)| IoOffset {
                        rank,
                        stream: if s == 1 {
                            Stream::Stdout
                        } else {
                            Stream::Stderr
                        },
                        offset,
                    })
                    .collect(),
            };
            let resp: StepIoResponse = match c.post(gsched_proto::api::paths::NODE_STEP_IO, &req) {
                Ok(r) => r,
                Err(e) => {
                    failures += 1;
                    if failures > 600 {
                        return Err(Fail::error(
                            prog,
                            format!(
                                "lost contact with node {}: {}",
                                node.name,
                                common::client_error_text(&e)
                            ),
                        ));
                    }
                    continue;
                }
            };
            failures = 0;
            for ch in resp.chunks {
                let data = b64_decode(&ch.data_b64).unwrap_or_default();
                let s = if ch.stream == Stream::Stdout {
                    1u8
                } else {
                    2u8
                };
                *offsets[i].entry((ch.rank, s)).or_insert(0) = ch.offset + data.len() as u64;
                got |= !data.is_empty();
                let bytes = lab.feed(ch.rank, s, &data);
                if s == 1 {
                    if keep(&out_dest, ch.rank) {
                        out_sink.write(&bytes);
                    }
                } else if err_to_out {
                    out_sink.write(&bytes);
                } else if keep(&err_dest, ch.rank) {
                    err_sink.write(&bytes);
                }
            }
            if let Some(ends) = resp.ended {
                for &rank in &node.tasks {
                    let b = lab.finish(rank, 1);
                    if keep(&out_dest, rank) {
                        out_sink.write(&b);
                    }
                    let b = lab.finish(rank, 2);
                    if err_to_out {
                        out_sink.write(&b);
                    } else if keep(&err_dest, rank) {
                        err_sink.write(&b);
                    }
                }
                ended[i] = Some((ends, resp.launch_error));
                got = true;
            }
        }
        if got {
            delay = Duration::from_millis(20);
        } else {
            std::thread::sleep(delay);
            let cap = if started.elapsed() < Duration::from_secs(5) {
                100
            } else {
                500
            };
            delay = (delay * 2).min(Duration::from_millis(cap));
        }
    }
    let mut all = Vec::new();
    for ((node, _), e) in node_clients.iter().zip(&ended) {
        let Some((ends, launch_error)) = e else {
            continue;
        };
        if let Some(m) = launch_error {
            common::err_line(&format!("{prog}: error: {}: {m}", node.name));
        }
        for l in task_end_lines(prog, &node.name, ends) {
            common::err_line(&l);
        }
        all.extend(ends.iter().map(|t| (t.exit_code, t.signal)));
    }
    let exit_code = all.iter().map(|&(e, _)| e).max().unwrap_or(0);
    let signal = all.iter().map(|&(_, s)| s).max().unwrap_or(0);
    let _ = client.post::<_, gsched_proto::api::Ack>(
        gsched_proto::api::paths::JOBS_STEPS_COMPLETE,
        &StepCompleteRequest {
            job_id,
            step_id: step.step_id,
            exit_code,
            signal,
            usage: None,
        },
    );
    Ok(srun_exit_status(&all))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    fn run_opts(args: &[&str], vars: &[(&str, &str)]) -> Result<SrunOpts, Fail> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        match parse("srun", &args, &env(vars))? {
            Parsed::Run(o) => Ok(o),
            Parsed::Print(_) => panic!("printed"),
        }
    }

    #[test]
    fn options_stop_at_the_command() {
        let o = run_opts(
            &["-n", "4", "-l", "hostname", "-n", "x"],
            &[("SLURM_JOB_ID", "7")],
        )
        .unwrap();
        assert_eq!(o.ntasks, Some(4));
        assert!(o.label);
        assert_eq!(o.argv, ["hostname", "-n", "x"]);
        assert_eq!(o.jobid, Some(7));
    }

    #[test]
    fn slurm_input_variables_fill_in() {
        let o = run_opts(
            &["true"],
            &[("SLURM_NTASKS", "3"), ("SLURM_CPUS_PER_TASK", "2")],
        )
        .unwrap();
        assert_eq!((o.ntasks, o.cpus_per_task), (Some(3), Some(2)));
        // -N or -w on the command line: the allocation's task count does not apply.
        let o = run_opts(&["-N1", "true"], &[("SLURM_NTASKS", "3")]).unwrap();
        assert_eq!(o.ntasks, None);
        let o = run_opts(
            &["--jobid=9", "-c1", "true"],
            &[("SLURM_JOB_ID", "7"), ("SLURM_CPUS_PER_TASK", "2")],
        )
        .unwrap();
        assert_eq!((o.jobid, o.cpus_per_task), (Some(9), Some(1)));
    }

    #[test]
    fn client_options_are_accepted() {
        // submitit, snakemake's jobstep plugin, Parsl, Ray.
        let o = run_opts(
            &[
                "--unbuffered",
                "--output",
                "/x/%j_%t_log.out",
                "--error",
                "/x/%j_%t_log.err",
                "python",
                "-u",
            ],
            &[],
        )
        .unwrap();
        assert!(o.unbuffered);
        assert_eq!(
            Dest::parse(o.output.as_deref().unwrap()),
            Dest::PerTask("/x/%j_%t_log.out".into())
        );
        run_opts(
            &[
                "-n1",
                "--cpu-bind=q",
                "--cpus-per-task=2",
                "--signal=USR2@90",
                "sh",
                "-s",
            ],
            &[],
        )
        .unwrap();
        let o = run_opts(&["--nodes=1", "--ntasks=1", "-w", "n[1]", "hostname"], &[]).unwrap();
        assert_eq!(o.nodelist, ["n1"]);
        assert_eq!(o.open_append, None, "the config's JobFileAppend decides");
        // The job's --open-mode reaches srun through SLURM_OPEN_MODE; the option wins.
        let o = run_opts(&["true"], &[("SLURM_OPEN_MODE", "a")]).unwrap();
        assert_eq!(o.open_append, Some(true));
        let o = run_opts(
            &["--open-mode=truncate", "true"],
            &[("SLURM_OPEN_MODE", "a")],
        )
        .unwrap();
        assert_eq!(o.open_append, Some(false));
        assert!(run_opts(&["--open-mode=x", "true"], &[]).is_err());
        run_opts(
            &["--mpi=none", "--overlap", "--export=ALL", "-J", "x", "true"],
            &[],
        )
        .unwrap();
    }

    #[test]
    fn bad_options_fail_clearly() {
        let e = run_opts(&["--mpi=pmix", "true"], &[]).unwrap_err();
        assert!(e.lines[0].contains("--mpi=none"), "{e:?}");
        let e = run_opts(&["-n", "0", "true"], &[]).unwrap_err();
        assert_eq!(e.lines, ["srun: error: Invalid number of tasks: 0"]);
        let e = run_opts(&["-n4"], &[]).unwrap_err();
        assert_eq!(e.lines, ["srun: error: No command given to execute."]);
        let e = run_opts(&["--signal=B:USR1", "true"], &[]).unwrap_err();
        assert_eq!(e.lines, ["srun: error: Invalid --signal specification"]);
        let e = run_opts(&["--cpu-bind=cores", "true"], &[]).unwrap_err();
        assert!(e.lines[0].contains("does not bind"), "{e:?}");
        let e = run_opts(&["--bogus", "true"], &[]).unwrap_err();
        assert_eq!(e.lines[0], "srun: unrecognized option '--bogus'");
    }

    #[test]
    fn destinations() {
        assert_eq!(Dest::parse("none"), Dest::Discard);
        assert_eq!(Dest::parse("2"), Dest::OneTask(2));
        assert_eq!(Dest::parse("out-%j.txt"), Dest::File("out-%j.txt".into()));
        assert_eq!(
            Dest::parse("out-%3t.txt"),
            Dest::PerTask("out-%3t.txt".into())
        );
        assert_eq!(Dest::parse("%N.log"), Dest::PerTask("%N.log".into()));
        assert!(!gsched_proto::patterns::pattern_is_per_task("100%%t"));
    }

    #[test]
    fn labels_prefix_complete_lines() {
        assert_eq!(label_width(1), 1);
        assert_eq!(label_width(10), 1);
        assert_eq!(label_width(11), 2);
        let mut l = Labeller::new(Some(2), false);
        assert_eq!(l.feed(3, 1, b"a\nb"), b" 3: a\n");
        assert_eq!(l.feed(3, 1, b"c\n"), b" 3: bc\n");
        assert_eq!(l.feed(3, 1, b"tail"), b"");
        assert_eq!(l.finish(3, 1), b" 3: tail");
        let mut l = Labeller::new(None, false);
        assert_eq!(l.feed(0, 1, b"x\ny"), b"x\n");
        assert_eq!(l.finish(0, 1), b"y");
        let mut u = Labeller::new(Some(1), true);
        assert_eq!(u.feed(1, 2, b"ab"), b"1: ab");
        assert_eq!(u.feed(1, 2, b"c\nd"), b"c\n1: d");
    }

    #[test]
    fn end_lines_group_tasks_like_srun() {
        let e = |rank, exit_code, signal| TaskEnd {
            rank,
            exit_code,
            signal,
        };
        let lines = task_end_lines(
            "srun",
            "n1",
            &[e(0, 3, 0), e(1, 3, 0), e(2, 0, 0), e(3, 0, 9)],
        );
        assert_eq!(
            lines,
            [
                "srun: error: n1: tasks 0-1: Exited with exit code 3",
                "srun: error: n1: task 3: Killed"
            ]
        );
        assert!(task_end_lines("srun", "n1", &[e(0, 0, 0)]).is_empty());
    }
}
