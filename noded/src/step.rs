//! Job steps on a node (`gsrun`): the step folder and `gsstepd --step <folder>`, which runs
//! one node's tasks of a step.
//!
//! The step folder `<SlurmdSpoolDir>/step_<job>.<step>/` is written by gsnoded and is, like
//! the job folder, the only channel between gsnoded and the step's gsstepd:
//!
//! | file | written by | when |
//! |---|---|---|
//! | `step.json` | gsnoded | before gsstepd starts: tasks, their environments and files |
//! | `pids.json` | gsstepd | at start |
//! | `task_<rank>.out`, `task_<rank>.err` | the tasks (created by gsstepd, owned by the user) | output gsrun reads through `node/step_io` |
//! | `stdin` | gsstepd | what task 0 reads (gsrun's stdin), when given |
//! | `status.json` | gsstepd | once every task ended |
//!
//! gsstepd forks the tasks the same way as a batch script (setsid, child subreaper, join the
//! job's cgroup as root, drop to the user, chdir, open the files as the user; see
//! [`crate::sys::install_child_setup`]), waits for all of them, kills what they left, and
//! writes `status.json`. Why a gsstepd per step and not per task: the tasks of one node start
//! together and end together as far as srun is concerned, and one process waits for them.

use crate::jobdir::{read_json, write_json, Durability, JobDirError, PidsFile};
use crate::procfs;
use crate::sys::{self, ChildSetup, JobIdentity};
use gsched_proto::step::{StepLaunchRequest, TaskEnd};
use nix::errno::Errno;
use nix::sys::wait::WaitStatus;
use nix::unistd::{Gid, Pid, Uid};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::ffi::CString;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

pub const STEP_FILE: &str = "step.json";
pub const STEP_STATUS_FILE: &str = "status.json";
pub const STEP_STDIN_FILE: &str = "stdin";
/// Created by gsnoded when gsrun's input has ended.
pub const STEP_STDIN_EOF: &str = "stdin.eof";
const DIR_PREFIX: &str = "step_";

/// The folder of step `job.step` in `spool`.
pub fn step_dir(spool: &Path, job: u32, step: u32) -> PathBuf {
    spool.join(format!("{DIR_PREFIX}{job}.{step}"))
}

/// `(job, step)` of a folder name (`step_42.0`).
pub fn parse_step_dir_name(name: &str) -> Option<(u32, u32)> {
    let (j, s) = name.strip_prefix(DIR_PREFIX)?.split_once('.')?;
    let ok = |x: &str| !x.is_empty() && x.bytes().all(|b| b.is_ascii_digit());
    (ok(j) && ok(s)).then_some(())?;
    Some((j.parse().ok()?, s.parse().ok()?))
}

/// The spool files of a task's output (what gsrun streams).
pub fn task_output_file(dir: &Path, rank: u32, stderr: bool) -> PathBuf {
    dir.join(format!(
        "task_{rank}.{}",
        if stderr { "err" } else { "out" }
    ))
}

/// One task as gsstepd starts it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskFile {
    pub rank: u32,
    pub environment: Vec<(String, String)>,
    /// Where stdout and stderr go: a spool file (streamed to gsrun) or the user's file
    /// (`-o/-e` with `%t`, `%n` or `%N`). Equal paths share one open file.
    pub stdout: PathBuf,
    pub stderr: PathBuf,
}

/// `step.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StepFile {
    pub request: StepLaunchRequest,
    pub node: String,
    pub tasks: Vec<TaskFile>,
    /// The job's `cgroup.procs` files when the job has a cgroup on this node (the tasks join
    /// it, so they are confined, counted and killed with the job).
    #[serde(default)]
    pub cgroup_procs: Vec<PathBuf>,
    /// The user as gsnoded resolved it (see [`crate::jobdir::LaunchFile::user`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<crate::jobdir::ResolvedUser>,
    /// See [`crate::jobdir::LaunchFile::propagate_rlimits`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub propagate_rlimits: Vec<String>,
    /// The node's `TaskProlog` and `TaskEpilog`, run as the user around each task.
    #[serde(
        default,
        skip_serializing_if = "crate::task_script::TaskScripts::is_empty"
    )]
    pub task_scripts: crate::task_script::TaskScripts,
}

/// `status.json` of a step on one node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepStatus {
    pub ends: Vec<TaskEnd>,
    pub start_time: i64,
    pub end_time: i64,
    pub launch_error: Option<String>,
}

pub fn read_step(dir: &Path) -> Result<Option<StepFile>, JobDirError> {
    read_json(&dir.join(STEP_FILE))
}

pub fn read_status(dir: &Path) -> Result<Option<StepStatus>, JobDirError> {
    read_json(&dir.join(STEP_STATUS_FILE))
}

pub fn read_pids(dir: &Path) -> Result<Option<PidsFile>, JobDirError> {
    read_json(&dir.join(crate::jobdir::PIDS_FILE))
}

/// The per-task environment: the step's plus `SLURM_PROCID`, `SLURM_LOCALID`,
/// `SLURM_NODEID`, `SLURM_GTIDS`, `SLURMD_NODENAME`.
pub fn task_environment(
    req: &StepLaunchRequest,
    rank: u32,
    local_id: u32,
    node: &str,
    config_path: &Path,
) -> Vec<(String, String)> {
    let mut env = req.environment.clone();
    let gtids = req
        .tasks
        .iter()
        .map(|t| t.rank.to_string())
        .collect::<Vec<_>>()
        .join(",");
    for (k, v) in [
        ("SLURM_PROCID", rank.to_string()),
        ("SLURM_LOCALID", local_id.to_string()),
        ("SLURM_NODEID", req.node_id.to_string()),
        ("SLURM_GTIDS", gtids),
        ("SLURMD_NODENAME", node.to_string()),
        ("SLURM_TOPOLOGY_ADDR", node.to_string()),
        ("SLURM_CONF", config_path.to_string_lossy().into_owned()),
    ] {
        crate::env::set_var(&mut env, k, v);
    }
    env
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

fn log(msg: &str) {
    let _ = writeln!(std::io::stderr(), "gsstepd[{}]: {msg}", std::process::id());
}

fn cstring(what: &str, bytes: &[u8]) -> Result<CString, String> {
    CString::new(bytes).map_err(|_| format!("{what} contains a NUL byte"))
}

/// Runs the tasks of the step folder `dir` (`gsstepd --step <dir>`) and writes
/// `status.json`. Errors are gsstepd's own (folder unwritable).
pub fn run(dir: &Path) -> Result<StepStatus, JobDirError> {
    if let Err(e) = nix::unistd::setsid() {
        log(&format!("warning: setsid: {e}"));
    }
    if let Err(e) = nix::sys::prctl::set_child_subreaper(true) {
        log(&format!("warning: cannot become a child subreaper: {e}"));
    }
    crate::stepd::block_daemon_signals();
    sys::reset_ignored_signals();
    let me = std::process::id() as i32;
    let ticks = procfs::start_ticks(me).unwrap_or(0);
    write_json(
        &dir.join(crate::jobdir::PIDS_FILE),
        &PidsFile {
            stepd_pid: me,
            stepd_start_ticks: ticks,
            shell_pid: None,
            shell_start_ticks: None,
        },
        Durability::DaemonCrash,
    )?;
    let start = now();
    let status = match read_step(dir) {
        Ok(Some(step)) => run_tasks(dir, &step, start),
        Ok(None) => failed(
            start,
            format!("{} is missing", dir.join(STEP_FILE).display()),
            &[],
        ),
        Err(e) => failed(start, e.to_string(), &[]),
    };
    write_json(&dir.join(STEP_STATUS_FILE), &status, Durability::PowerLoss)?;
    log(&format!("step ended: {:?}", status.ends));
    Ok(status)
}

fn failed(start: i64, msg: String, ranks: &[u32]) -> StepStatus {
    log(&format!("error: {msg}"));
    StepStatus {
        ends: ranks
            .iter()
            .map(|&rank| TaskEnd {
                rank,
                exit_code: 1,
                signal: 0,
            })
            .collect(),
        start_time: start,
        end_time: now(),
        launch_error: Some(msg),
    }
}

/// Resolves the user (as root) or checks that it is ours (without root).
fn identity(req: &StepLaunchRequest, node: &str) -> Result<Option<JobIdentity>, String> {
    if !nix::unistd::geteuid().is_root() {
        let own = nix::unistd::getuid().as_raw();
        return if own == req.uid {
            Ok(None)
        } else {
            Err(format!(
                "gsstepd runs as uid {own} without root and cannot run a step of uid {}",
                req.uid
            ))
        };
    }
    let entry = gsched_proto::users::user_by_uid(req.uid).ok_or_else(|| {
        format!(
            "Invalid user id {}: the user does not exist on node {node}",
            req.uid
        )
    })?;
    let cname = cstring("the user name", entry.name.as_bytes())?;
    let gid = Gid::from_raw(req.gid);
    let groups = nix::unistd::getgrouplist(&cname, gid)
        .map_err(|e| format!("cannot get the groups of user {}: {e}", entry.name))?;
    Ok(Some(JobIdentity {
        uid: Uid::from_raw(req.uid),
        gid,
        groups,
    }))
}

/// Creates an empty spool file for the user (mode 0600, owned by them when we are root).
fn create_user_file(path: &Path, owner: Option<(u32, u32)>, data: &[u8]) -> std::io::Result<()> {
    let _ = std::fs::remove_file(path);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(data)?;
    if let Some((u, g)) = owner {
        std::os::unix::fs::fchown(&f, Some(u), Some(g))?;
    }
    Ok(())
}

fn run_tasks(dir: &Path, step: &StepFile, start: i64) -> StepStatus {
    let req = &step.request;
    let ranks: Vec<u32> = step.tasks.iter().map(|t| t.rank).collect();
    log(&format!(
        "step {}.{} for uid {} on {}: tasks {ranks:?}",
        req.job_id, req.step_id, req.uid, step.node
    ));
    let resolved = step
        .user
        .as_ref()
        .filter(|_| nix::unistd::geteuid().is_root());
    let ident = match resolved {
        Some(u) => Ok(Some(JobIdentity {
            uid: Uid::from_raw(req.uid),
            gid: Gid::from_raw(req.gid),
            groups: u.groups.iter().map(|&g| Gid::from_raw(g)).collect(),
        })),
        None => identity(req, &step.node),
    };
    let ident = match ident {
        Ok(i) => i,
        Err(m) => return failed(start, m, &ranks),
    };
    let owner = ident.as_ref().map(|i| (i.uid.as_raw(), i.gid.as_raw()));
    // Spool files the tasks write (and gsrun reads), and task 0's input.
    for t in &step.tasks {
        for p in [&t.stdout, &t.stderr] {
            if p.starts_with(dir) && !p.exists() {
                if let Err(e) = create_user_file(p, owner, b"") {
                    return failed(start, format!("cannot create {}: {e}", p.display()), &ranks);
                }
            }
        }
    }
    // Input: gsnoded appends what gsrun streams to `stdin` (and creates `stdin.eof` at its
    // end); each reading task gets a FIFO of its own that gsstepd feeds from that file.
    let mut feeds: Vec<Feed> = Vec::new();
    if req.stdin {
        for t in step
            .tasks
            .iter()
            .filter(|t| req.stdin_rank.is_none_or(|r| r == t.rank))
        {
            match Feed::create(dir, t.rank, owner) {
                Ok(f) => feeds.push(f),
                Err(e) => return failed(start, e, &ranks),
            }
        }
    }
    let umask = req
        .environment
        .iter()
        .rev()
        .find(|(k, _)| k == "SLURM_UMASK")
        .and_then(|(_, v)| u32::from_str_radix(v.trim(), 8).ok())
        .map(|m| nix::sys::stat::Mode::from_bits_truncate(m & 0o777));
    // Task pid → its rank, and its TaskEpilog's set-up and environment.
    let mut running: BTreeMap<i32, (u32, TaskEpilog)> = BTreeMap::new();
    let own_path = std::env::current_exe().ok();
    let mut ends: Vec<TaskEnd> = Vec::new();
    for t in &step.tasks {
        let input = feeds
            .iter()
            .find(|f| f.rank == t.rank)
            .map(|f| f.path.clone());
        match spawn_task(
            req,
            step,
            t,
            ident.clone(),
            umask,
            input.as_deref(),
            own_path.as_deref(),
        ) {
            Ok((pid, epilog)) => {
                running.insert(pid, (t.rank, epilog));
            }
            Err(msg) => {
                // As slurmstepd: the message in the task's stderr, exit code 2.
                let _ = std::fs::OpenOptions::new()
                    .append(true)
                    .open(&t.stderr)
                    .and_then(|mut f| writeln!(f, "gsstepd: error: {msg}"));
                log(&format!("task {}: {msg}", t.rank));
                ends.push(TaskEnd {
                    rank: t.rank,
                    exit_code: 2,
                    signal: 0,
                });
            }
        }
    }
    let mut input = Input::new(dir.join(STEP_STDIN_FILE), dir.join(STEP_STDIN_EOF));
    while !running.is_empty() {
        // While input is fed, wait in short slices; otherwise block in waitpid.
        let flags = if feeds.is_empty() {
            None
        } else {
            input.feed(&mut feeds);
            Some(nix::sys::wait::WaitPidFlag::WNOHANG)
        };
        match nix::sys::wait::waitpid(Pid::from_raw(-1), flags) {
            Ok(WaitStatus::StillAlive) => std::thread::sleep(Duration::from_millis(20)),
            Ok(WaitStatus::Exited(pid, code)) => {
                if let Some((rank, epilog)) = running.remove(&pid.as_raw()) {
                    run_task_epilog(&step.task_scripts, rank, epilog);
                    ends.push(TaskEnd {
                        rank,
                        exit_code: code,
                        signal: 0,
                    });
                }
            }
            Ok(WaitStatus::Signaled(pid, sig, _)) => {
                if let Some((rank, epilog)) = running.remove(&pid.as_raw()) {
                    run_task_epilog(&step.task_scripts, rank, epilog);
                    ends.push(TaskEnd {
                        rank,
                        exit_code: 0,
                        signal: sig as i32,
                    });
                }
            }
            Ok(_) | Err(Errno::EINTR) => {}
            Err(e) => {
                log(&format!("error: waiting for the tasks: {e}"));
                break;
            }
        }
    }
    crate::stepd::kill_leftovers();
    ends.sort_by_key(|e| e.rank);
    StepStatus {
        ends,
        start_time: start,
        end_time: now(),
        launch_error: None,
    }
}

/// A task's TaskEpilog: its set-up (with the report pipe's read end) and environment.
type TaskEpilog = Option<((ChildSetup, std::os::fd::OwnedFd), Vec<(String, String)>)>;

fn run_task_epilog(scripts: &crate::task_script::TaskScripts, rank: u32, epilog: TaskEpilog) {
    if let Some((setup, env)) = epilog {
        if let Err(e) = crate::task_script::run_epilog(scripts, Some(setup), &env) {
            log(&format!("task {rank}: error: {e}"));
        }
    }
}

fn spawn_task(
    req: &StepLaunchRequest,
    step: &StepFile,
    t: &TaskFile,
    identity: Option<JobIdentity>,
    umask: Option<nix::sys::stat::Mode>,
    input: Option<&Path>,
    own_path: Option<&Path>,
) -> Result<(i32, TaskEpilog), String> {
    let (report_r, report_w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
        .map_err(|e| format!("cannot create a pipe: {e}"))?;
    let stdin: &Path = input.unwrap_or(Path::new("/dev/null"));
    let cgroup_procs = step
        .cgroup_procs
        .iter()
        .map(|p| cstring("a cgroup path", p.as_os_str().as_bytes()))
        .collect::<Result<Vec<_>, _>>()?;
    // Propagated resource limits, as for a batch job (`crate::sys::propagated_rlimits`).
    let mut environment = t.environment.clone();
    let rlimits = sys::propagated_rlimits(&mut environment, &step.propagate_rlimits, |m| {
        eprintln!("gsstepd: error: task {}: {m}", t.rank)
    });
    let setup = ChildSetup {
        identity,
        umask,
        work_dir: cstring("the working directory", req.work_dir.as_bytes())?,
        stdin: cstring("the input file", stdin.as_os_str().as_bytes())?,
        stdout: cstring("the output file", t.stdout.as_os_str().as_bytes())?,
        stderr: if t.stderr == t.stdout {
            None
        } else {
            Some(cstring("the error file", t.stderr.as_os_str().as_bytes())?)
        },
        // Spool files were just created empty; the user's per-task files are truncated as
        // srun's default --open-mode does, or appended to with `--open-mode=append`.
        append: req.open_append,
        chdir_error_prefix: format!("gsstepd: error: couldn't chdir to `{}': ", req.work_dir)
            .into_bytes(),
        chdir_error_suffix: b": going to /tmp instead\n".to_vec(),
        cgroup_procs,
        report: report_w,
        rlimits,
    };
    let epilog = match step.task_scripts.epilog {
        Some(_) => Some((
            setup
                .quiet_copy()
                .map_err(|e| format!("cannot create a pipe: {e}"))?,
            environment.clone(),
        )),
        None => None,
    };
    // Through gsstepd's task mode when the node has a TaskProlog (`crate::task_script`).
    let mut cmd = crate::task_script::task_command(
        &step.task_scripts,
        own_path,
        std::ffi::OsStr::new(&req.argv[0]),
        &req.argv[1..],
    )?;
    cmd.env_clear()
        .envs(environment.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    sys::install_child_setup(&mut cmd, setup);
    let spawned = cmd.spawn();
    drop(cmd);
    match spawned {
        Ok(child) => Ok((child.id() as i32, epilog)),
        Err(e) => {
            let mut buf = Vec::new();
            let _ = std::io::Read::read_to_end(&mut std::fs::File::from(report_r), &mut buf);
            Err(match sys::decode_child_failure(&buf) {
                Some((stage, errno)) => format!("task {}: {stage:?}: {}", t.rank, errno.desc()),
                None => format!(
                    "execve(): {}: {}",
                    req.argv[0],
                    Errno::from_raw(e.raw_os_error().unwrap_or(0)).desc()
                ),
            })
        }
    }
}

/// One reading task's FIFO: gsstepd holds it open read-write (so opening it for reading
/// never blocks and the reader sees the end only when gsstepd closes it), non-blocking.
struct Feed {
    rank: u32,
    path: PathBuf,
    fd: Option<std::os::fd::OwnedFd>,
    /// Bytes read from the input file but not yet taken by this task.
    pending: Vec<u8>,
}

impl Feed {
    fn create(dir: &Path, rank: u32, owner: Option<(u32, u32)>) -> Result<Feed, String> {
        let path = dir.join(format!("stdin_{rank}"));
        let _ = std::fs::remove_file(&path);
        nix::unistd::mkfifo(&path, nix::sys::stat::Mode::from_bits_truncate(0o600))
            .map_err(|e| format!("cannot create the input FIFO {}: {e}", path.display()))?;
        if let Some((u, g)) = owner {
            nix::unistd::chown(&path, Some(Uid::from_raw(u)), Some(Gid::from_raw(g)))
                .map_err(|e| format!("cannot give {} to the user: {e}", path.display()))?;
        }
        let fd = nix::fcntl::open(
            &path,
            nix::fcntl::OFlag::O_RDWR
                | nix::fcntl::OFlag::O_NONBLOCK
                | nix::fcntl::OFlag::O_CLOEXEC,
            nix::sys::stat::Mode::empty(),
        )
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        Ok(Feed {
            rank,
            path,
            fd: Some(fd),
            pending: Vec::new(),
        })
    }
}

/// The input file gsnoded appends to, read as it grows.
struct Input {
    path: PathBuf,
    eof_marker: PathBuf,
    offset: u64,
}

impl Input {
    fn new(path: PathBuf, eof_marker: PathBuf) -> Input {
        Input {
            path,
            eof_marker,
            offset: 0,
        }
    }

    /// Moves new input into the FIFOs as far as they take it; closes them at the end.
    fn feed(&mut self, feeds: &mut [Feed]) {
        use std::io::{Read as _, Seek as _};
        // The marker first: input written before it is then surely in the file.
        let ended = self.eof_marker.exists();
        let mut fresh = Vec::new();
        if let Ok(mut f) = std::fs::File::open(&self.path) {
            if f.seek(std::io::SeekFrom::Start(self.offset)).is_ok() {
                let _ = f.take(1 << 20).read_to_end(&mut fresh);
            }
        }
        self.offset += fresh.len() as u64;
        let all_read = fresh.is_empty();
        for fd in feeds.iter_mut() {
            let Some(out) = fd.fd.as_ref() else { continue };
            fd.pending.extend_from_slice(&fresh);
            while !fd.pending.is_empty() {
                match nix::unistd::write(out, &fd.pending) {
                    Ok(n) => {
                        fd.pending.drain(..n);
                    }
                    Err(Errno::EAGAIN) | Err(Errno::EINTR) => break,
                    // The task closed its input (or ended): drop what it did not take.
                    Err(_) => {
                        fd.pending.clear();
                        fd.fd = None;
                        break;
                    }
                }
            }
            if ended && all_read && fd.pending.is_empty() {
                fd.fd = None;
            }
        }
    }
}

/// Every process of a step: the descendants of its gsstepd.
pub fn step_processes(stepd_pid: i32, stepd_ticks: u64) -> Vec<i32> {
    if procfs::is_same_live_process(stepd_pid, stepd_ticks) {
        procfs::descendants(stepd_pid)
    } else {
        Vec::new()
    }
}

/// How long a finished step's folder stays after gsrun read its end.
pub const STEP_DIR_LINGER: Duration = Duration::from_secs(30);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_task_patterns_are_recognised() {
        assert!(gsched_proto::patterns::pattern_is_per_task("out-%t.log"));
        assert!(gsched_proto::patterns::pattern_is_per_task("%j_%4t.out"));
        assert!(gsched_proto::patterns::pattern_is_per_task("%N.out"));
        assert!(gsched_proto::patterns::pattern_is_per_task("node%n"));
        assert!(!gsched_proto::patterns::pattern_is_per_task("out-%j.log"));
        assert!(!gsched_proto::patterns::pattern_is_per_task("100%%t"));
        assert!(!gsched_proto::patterns::pattern_is_per_task("a\\%t"));
        assert!(!gsched_proto::patterns::pattern_is_per_task("plain"));
    }

    #[test]
    fn step_dir_names_round_trip() {
        let d = step_dir(Path::new("/s"), 42, 3);
        assert_eq!(d, Path::new("/s/step_42.3"));
        assert_eq!(parse_step_dir_name("step_42.3"), Some((42, 3)));
        assert_eq!(parse_step_dir_name("step_42"), None);
        assert_eq!(parse_step_dir_name("step_.1"), None);
        assert_eq!(parse_step_dir_name("job_42"), None);
    }
}
