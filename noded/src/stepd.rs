//! gsstepd: the per-job helper that gsnoded starts for every batch job
//! (`gsstepd <job-folder>`).
//!
//! It exists so that `fork`, `setsid` and `setuid` never happen inside the multi-threaded
//! gsnoded (ARCHITECTURE.md), and so that a job survives a gsnoded restart. It is small,
//! single-threaded and synchronous:
//!
//! 1. `setsid`, become a child subreaper (so double-forked processes of the job stay its
//!    descendants), block the signals an admin's `kill` or a terminal would send;
//! 2. resolve the user (passwd, supplementary groups) *before* forking, write the script as
//!    the user's file (mode 0500);
//! 3. fork and, in the child, join the job's cgroup (while root), `setgroups`/`setgid`/`setuid`, umask, `chdir` and open the
//!    stdio files as the user (see [`crate::sys::install_child_setup`]), then exec the
//!    script with exactly the environment gsnoded computed;
//! 4. record its own and the shell's pid and start time in `pids.json` (gsnoded re-adopts
//!    them by these after a restart);
//! 5. wait for the batch shell, then SIGKILL whatever the job left behind and reap it (with
//!    cgroups: everything in the job's cgroup, whose OOM counter and usage are then read
//!    and which is removed; an OOM kill is announced in the job's stderr as Slurm does);
//! 6. write `status.json` atomically and exit 0.
//!
//! Any failure to start the job becomes `launch_error` in `status.json`: gsnoded reports it
//! and the controller marks the job FAILED (JobLaunchFailure).

use crate::jobdir::{JobDir, JobDirError, LaunchFile, PidsFile, StatusFile, SCRIPT_FILE};
use crate::procfs;
use crate::sys::{self, ChildSetup, ChildStage, JobIdentity};
use gsched_proto::job::OpenMode;
use nix::errno::Errno;
use nix::sys::signal::{SigSet, SigmaskHow, Signal};
use nix::sys::stat::Mode;
use nix::sys::wait::{WaitPidFlag, WaitStatus};
use nix::unistd::{Gid, Pid, Uid};
use std::ffi::CString;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// How long gsstepd keeps killing leftover processes before it gives up on unkillable ones
/// (processes stuck in uninterruptible sleep) and reports the job anyway.
const CLEANUP_LIMIT: Duration = Duration::from_secs(60);

/// Why gsstepd could not do its own work (as opposed to a job that failed to start, which is
/// reported in `status.json`).
#[derive(Debug, thiserror::Error)]
pub enum StepdError {
    #[error(transparent)]
    JobDir(#[from] JobDirError),
    #[error("cannot read this process's start time from /proc: {0}")]
    Proc(std::io::Error),
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

fn log(msg: &str) {
    // stderr is the job folder's stepd.log; nothing sensible to do if it is gone.
    let _ = writeln!(std::io::stderr(), "gsstepd[{}]: {msg}", std::process::id());
}

/// A job that could not be started.
fn launch_failure(start_time: i64, message: String) -> StatusFile {
    log(&format!("error: {message}"));
    StatusFile {
        exit_code: 1,
        signal: 0,
        start_time,
        end_time: now(),
        launch_error: Some(message),
        oom_kills: 0,
        usage: None,
        prolog_error: None,
    }
}

/// Runs the job of `folder` to its end and writes `status.json`. Errors are gsstepd's own
/// failures (folder unwritable, /proc unreadable); the caller exits non-zero and gsnoded
/// reports the job as failed.
pub fn run(folder: &Path) -> Result<StatusFile, StepdError> {
    let dir = JobDir::new(folder);
    // Our own session: the job is not tied to gsnoded's terminal or process group.
    if let Err(e) = nix::unistd::setsid() {
        log(&format!("warning: setsid: {e}"));
    }
    if let Err(e) = nix::sys::prctl::set_child_subreaper(true) {
        log(&format!(
            "warning: cannot become a child subreaper ({e}): processes the job double-forks \
             may escape the clean-up"
        ));
    }
    block_daemon_signals();
    sys::reset_ignored_signals();
    let me = std::process::id() as i32;
    let ticks = procfs::read_stat(me).map_err(StepdError::Proc)?.start_ticks;
    // Written once, when the batch shell runs (a restarted gsnoded finds a gsstepd that has
    // not written it yet by its command line): a second version replacing the first cost
    // every job a disk write, which ext4 starts at once when a file is renamed over another.
    let mut pids = PidsFile {
        stepd_pid: me,
        stepd_start_ticks: ticks,
        shell_pid: None,
        shell_start_ticks: None,
    };

    let start_time = now();
    let status = match dir.read_launch() {
        Ok(Some(launch)) => run_job(&dir, &launch, &mut pids, start_time),
        Ok(None) => launch_failure(
            start_time,
            format!(
                "{} is missing",
                dir.file(crate::jobdir::LAUNCH_FILE).display()
            ),
        ),
        Err(e) => launch_failure(start_time, e.to_string()),
    };
    // No line for a job that went as planned: gsnoded logs its start and end. stepd.log only
    // gets warnings and errors, so that for most jobs it stays empty (a written one costs the
    // file system a block to reserve and free again).
    dir.write_status(&status)?;
    Ok(status)
}

/// gsstepd must outlive the job: the signals an interactive `kill` or a hang-up would send
/// are blocked (std resets the mask in the child, so the job gets them normally).
pub(crate) fn block_daemon_signals() {
    let mut set = SigSet::empty();
    for s in [
        Signal::SIGHUP,
        Signal::SIGINT,
        Signal::SIGQUIT,
        Signal::SIGTERM,
        Signal::SIGPIPE,
    ] {
        set.add(s);
    }
    if let Err(e) = nix::sys::signal::sigprocmask(SigmaskHow::SIG_BLOCK, Some(&set), None) {
        log(&format!("warning: cannot block signals: {e}"));
    }
}

fn run_job(dir: &JobDir, launch: &LaunchFile, pids: &mut PidsFile, start_time: i64) -> StatusFile {
    let req = &launch.request;
    match dir.read_terminate() {
        Ok(Some(t)) => {
            log(&format!(
                "terminated ({:?}) before the script started",
                t.reason
            ));
            return StatusFile {
                exit_code: 0,
                signal: libc::SIGTERM,
                start_time,
                end_time: now(),
                launch_error: None,
                oom_kills: 0,
                usage: None,
                prolog_error: None,
            };
        }
        Ok(None) => {}
        Err(e) => log(&format!("warning: {e}")),
    }
    // The node's Prolog, as root, before anything of the job runs (Slurm's slurmd runs it
    // before the batch step). A failure: the script never runs; the controller drains the
    // node and requeues the job.
    if let Some(prolog) = &launch.prolog {
        let ran = crate::prolog::run(
            prolog,
            crate::prolog::Context::Prolog,
            &launch.prolog_env,
            dir.path(),
        );
        if let Err(e) = ran {
            log(&format!("error: {e}"));
            return StatusFile {
                exit_code: 1,
                signal: 0,
                start_time,
                end_time: now(),
                launch_error: None,
                oom_kills: 0,
                usage: None,
                prolog_error: Some(e),
            };
        }
    }
    let prepared = match prepare(dir, launch) {
        Ok(p) => p,
        Err(msg) => return launch_failure(start_time, msg),
    };
    let Prepared {
        script,
        setup,
        report,
        user,
        environment,
    } = prepared;

    // The TaskEpilog's set-up: the same user, cgroup and folder, quiet files.
    let epilog_setup = match launch.task_scripts.epilog {
        Some(_) => match setup.quiet_copy() {
            Ok(s) => Some(s),
            Err(e) => return launch_failure(start_time, format!("cannot create a pipe: {e}")),
        },
        None => None,
    };
    // Through gsstepd's task mode when the node has a TaskProlog (`crate::task_script`).
    let own_path = std::env::current_exe().ok();
    let mut cmd = match crate::task_script::task_command(
        &launch.task_scripts,
        own_path.as_deref(),
        script.as_os_str(),
        &req.argv,
    ) {
        Ok(c) => c,
        Err(msg) => return launch_failure(start_time, msg),
    };
    cmd.env_clear()
        .envs(
            environment
                .as_ref()
                .unwrap_or(&launch.environment)
                .iter()
                .map(|(k, v)| (k, v)),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    sys::install_child_setup(&mut cmd, setup);
    let start_time = now();
    let spawned = cmd.spawn();
    // Dropping the command closes our copy of the report pipe's write end, so reading it
    // below ends once the child has exec'ed or exited.
    drop(cmd);
    let child = match spawned {
        Ok(c) => c,
        Err(e) => {
            let mut buf = Vec::new();
            let _ = std::fs::File::from(report).read_to_end(&mut buf);
            let msg = describe_spawn_failure(&buf, &e, launch, &script, &user);
            return launch_failure(start_time, msg);
        }
    };
    drop(report);
    let shell = child.id() as i32;
    pids.shell_pid = Some(shell);
    pids.shell_start_ticks = procfs::start_ticks(shell);
    if let Err(e) = dir.write_pids(pids) {
        log(&format!(
            "warning: {e} (batch-only signals will not reach the shell)"
        ));
    }
    let (exit_code, signal) = wait_for_shell(shell);
    // In the job's cgroup still, before what the job left is killed.
    let env = environment.as_ref().unwrap_or(&launch.environment);
    if let Err(e) = crate::task_script::run_epilog(&launch.task_scripts, epilog_setup, env) {
        log(&format!("error: {e}"));
    }
    let end_time = now();
    let (oom_kills, usage) = match &launch.cgroup {
        Some(cg) => end_cgroup(launch, cg),
        None => (0, None),
    };
    kill_leftovers();
    StatusFile {
        exit_code,
        signal,
        start_time,
        end_time,
        launch_error: None,
        oom_kills,
        usage,
        prolog_error: None,
    }
}

/// The job's shell is gone: kill everything left in its cgroup (double-forked daemons
/// included), then read the OOM counter and the usage, tell the user about OOM kills as
/// Slurm does (in the job's stderr), and remove the cgroup.
fn end_cgroup(
    launch: &LaunchFile,
    cg: &crate::cgroup::JobCgroup,
) -> (u64, Option<gsched_proto::job::JobUsage>) {
    let id = launch.request.job_id;
    let cgroups = cg.handle.open();
    // Reap what the kill ended (so the folders empty) before reading and removing.
    let end = crate::cgroup::end_job(&*cgroups, id, CLEANUP_LIMIT, kill_leftovers);
    match end.killed {
        Ok(0) => {}
        Ok(n) => log(&format!(
            "killed {n} leftover process(es) in the job's cgroup"
        )),
        Err(e) => log(&format!("error: {e}")),
    }
    let (oom, usage) = (end.oom_kills, end.usage);
    if oom > 0 {
        let line = gsched_cgroup::oom_message(id, gsched_cgroup::BATCH_STEP, oom);
        log(&line);
        let written = std::fs::OpenOptions::new()
            .append(true)
            .open(&launch.stderr)
            .and_then(|mut f| writeln!(f, "{line}"));
        if let Err(e) = written {
            log(&format!(
                "warning: cannot write to {}: {e}",
                launch.stderr.display()
            ));
        }
    }
    if let Err(e) = cgroups.remove_job(id) {
        log(&format!("warning: {e} (gsnoded removes it later)"));
    }
    (oom, Some(usage))
}

struct Prepared {
    script: PathBuf,
    setup: ChildSetup,
    /// Read end of the child's report pipe.
    report: std::os::fd::OwnedFd,
    /// The user's name, for messages.
    user: String,
    /// The job's environment without its `SLURM_RLIMIT_*` variables, when it had any
    /// (`None`: the launch's as it is).
    environment: Option<Vec<(String, String)>>,
}

fn cstring(what: &str, bytes: &[u8]) -> Result<CString, String> {
    CString::new(bytes).map_err(|_| format!("{what} contains a NUL byte"))
}

/// Resolves the user and writes the script, in the parent (NSS is not fork-safe).
fn prepare(dir: &JobDir, launch: &LaunchFile) -> Result<Prepared, String> {
    let req = &launch.request;
    let is_root = nix::unistd::geteuid().is_root();
    let (identity, user) = if let Some(u) = launch.user.as_ref().filter(|_| is_root) {
        (
            Some(JobIdentity {
                uid: Uid::from_raw(req.uid),
                gid: Gid::from_raw(req.gid),
                groups: u.groups.iter().map(|&g| Gid::from_raw(g)).collect(),
            }),
            u.name.clone(),
        )
    } else if is_root {
        let entry = gsched_proto::users::user_by_uid(req.uid).ok_or_else(|| {
            format!(
                "Invalid user id {}: the user does not exist on node {} (check NSS/LDAP there)",
                req.uid, launch.node
            )
        })?;
        let cname = cstring("the user name", entry.name.as_bytes())?;
        let gid = Gid::from_raw(req.gid);
        let groups = nix::unistd::getgrouplist(&cname, gid).map_err(|e| {
            format!(
                "cannot get the groups of user {} on node {}: {e}",
                entry.name, launch.node
            )
        })?;
        (
            Some(JobIdentity {
                uid: Uid::from_raw(req.uid),
                gid,
                groups,
            }),
            entry.name,
        )
    } else {
        let own = nix::unistd::getuid().as_raw();
        if req.uid != own {
            return Err(format!(
                "gsstepd runs as uid {own} without root and cannot run a job of uid {}",
                req.uid
            ));
        }
        (None, req.user_name.clone())
    };

    let script = dir.file(SCRIPT_FILE);
    write_script(&script, &req.script, is_root.then_some((req.uid, req.gid)))
        .map_err(|e| format!("cannot write the batch script {}: {e}", script.display()))?;

    let umask = launch
        .environment
        .iter()
        .rev()
        .find(|(k, _)| k == "SLURM_UMASK")
        .and_then(|(_, v)| u32::from_str_radix(v.trim(), 8).ok())
        .map(|m| Mode::from_bits_truncate(m & 0o777));
    let (report_r, report_w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
        .map_err(|e| format!("cannot create a pipe: {e}"))?;
    let stderr = if launch.stderr == launch.stdout {
        None
    } else {
        Some(cstring(
            "the error file name",
            launch.stderr.as_os_str().as_bytes(),
        )?)
    };
    // Propagated resource limits (most jobs carry some: PropagateResourceLimits=ALL is
    // the default); the copy of the environment only when there are any.
    let (environment, rlimits) = if launch
        .environment
        .iter()
        .any(|(k, _)| k.starts_with("SLURM_RLIMIT_"))
    {
        let mut env = launch.environment.clone();
        let r = sys::propagated_rlimits(&mut env, &launch.propagate_rlimits, |m| {
            log(&format!("error: {m}"))
        });
        (Some(env), r)
    } else {
        (None, Vec::new())
    };
    let cgroup_procs = match &launch.cgroup {
        Some(cg) => cg
            .procs
            .iter()
            .map(|p| cstring("a cgroup path", p.as_os_str().as_bytes()))
            .collect::<Result<Vec<_>, _>>()?,
        None => Vec::new(),
    };
    let setup = ChildSetup {
        cgroup_procs,
        identity,
        umask,
        work_dir: cstring("the working directory", req.work_dir.as_bytes())?,
        stdin: cstring("the input file name", launch.stdin.as_os_str().as_bytes())?,
        stdout: cstring("the output file name", launch.stdout.as_os_str().as_bytes())?,
        stderr,
        append: launch.open_mode == OpenMode::Append,
        chdir_error_prefix: format!("gsstepd: error: couldn't chdir to `{}': ", req.work_dir)
            .into_bytes(),
        chdir_error_suffix: b": going to /tmp instead\n".to_vec(),
        report: report_w,
        rlimits,
    };
    Ok(Prepared {
        script,
        setup,
        report: report_r,
        user,
        environment,
    })
}

/// Writes the script as the job user's file, mode 0500 (readable and executable by the user
/// only). `owner` is `Some((uid, gid))` when running as root.
fn write_script(path: &Path, text: &str, owner: Option<(u32, u32)>) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    // Not flushed: the shell reads it at once, and a node crash ends the job anyway.
    f.write_all(text.as_bytes())?;
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::fchown(&f, Some(uid), Some(gid))?;
    }
    f.set_permissions(std::fs::Permissions::from_mode(0o500))?;
    Ok(())
}

fn describe_spawn_failure(
    report: &[u8],
    err: &std::io::Error,
    launch: &LaunchFile,
    script: &Path,
    user: &str,
) -> String {
    let req = &launch.request;
    match sys::decode_child_failure(report) {
        Some((stage, errno)) => {
            let e = errno.desc();
            match stage {
                ChildStage::Setgroups | ChildStage::Setgid | ChildStage::Setuid => format!(
                    "cannot switch to user {user} (uid {} gid {}): {}: {e}",
                    req.uid,
                    req.gid,
                    match stage {
                        ChildStage::Setgroups => "setgroups",
                        ChildStage::Setgid => "setgid",
                        _ => "setuid",
                    }
                ),
                ChildStage::Stdin => {
                    format!("Could not open stdin file {}: {e}", launch.stdin.display())
                }
                ChildStage::Stdout => {
                    format!(
                        "Could not open stdout file {}: {e}",
                        launch.stdout.display()
                    )
                }
                ChildStage::Stderr => {
                    format!(
                        "Could not open stderr file {}: {e}",
                        launch.stderr.display()
                    )
                }
                ChildStage::Redirect => format!("cannot redirect the job's stdio: {e}"),
                ChildStage::Cgroup => format!(
                    "cannot join the job's cgroup ({}): {e}",
                    launch
                        .cgroup
                        .as_ref()
                        .map(|c| c
                            .procs
                            .iter()
                            .map(|p| p.display().to_string())
                            .collect::<Vec<_>>()
                            .join(", "))
                        .unwrap_or_default()
                ),
            }
        }
        None if launch.task_scripts.prolog.is_some() => {
            let e = Errno::from_raw(err.raw_os_error().unwrap_or(0));
            let exe = std::env::current_exe().unwrap_or_default();
            format!(
                "execve(): {} (runs the TaskProlog as the job's user): {} (gsstepd and the \
                 folders above it must be executable by every job user, as when installed \
                 under /usr)",
                exe.display(),
                e.desc()
            )
        }
        None => {
            let hint = if err.raw_os_error() == Some(libc::EACCES) {
                " (the spool directory must be searchable by the job's user)"
            } else if err.raw_os_error() == Some(libc::ENOENT) {
                " (is the interpreter in the script's #! line installed on this node?)"
            } else {
                ""
            };
            let e = Errno::from_raw(err.raw_os_error().unwrap_or(0));
            format!("execve(): {}: {}{hint}", script.display(), e.desc())
        }
    }
}

/// Waits for the batch shell, reaping any other (re-parented) process that ends meanwhile.
/// Returns `(exit_code, signal)`.
fn wait_for_shell(shell: i32) -> (i32, i32) {
    let any = Pid::from_raw(-1);
    loop {
        match nix::sys::wait::waitpid(any, None) {
            Ok(WaitStatus::Exited(pid, code)) if pid.as_raw() == shell => return (code, 0),
            Ok(WaitStatus::Signaled(pid, sig, _)) if pid.as_raw() == shell => {
                return (0, sig as i32)
            }
            Ok(_) | Err(Errno::EINTR) => {}
            Err(e) => {
                // ECHILD cannot happen while the shell is our child; do not spin.
                log(&format!("error: waiting for the batch shell: {e}"));
                return (1, 0);
            }
        }
    }
}

/// SIGKILLs every remaining descendant and reaps until nothing is left. As a child
/// subreaper, every orphan of the job ends up as our child, so "no children" means "nothing
/// of the job is left".
pub(crate) fn kill_leftovers() {
    let me = std::process::id() as i32;
    let deadline = Instant::now() + CLEANUP_LIMIT;
    let mut killed = 0usize;
    loop {
        // No child left means no descendant left: the usual case, a job whose processes all
        // ended with its shell, costs no walk over /proc.
        if !reap_children() {
            break;
        }
        let left = procfs::descendants(me);
        for &p in &left {
            if sys::send_signal(p, libc::SIGKILL).is_ok() {
                killed += 1;
            }
        }
        if !reap_children() {
            break;
        }
        if Instant::now() >= deadline {
            log(&format!(
                "error: processes {left:?} of the job survive SIGKILL after {}s; giving up",
                CLEANUP_LIMIT.as_secs()
            ));
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    if killed > 0 {
        log(&format!("killed {killed} leftover process(es) of the job"));
    }
}

/// Reaps every child that has ended; true while some child is still alive.
fn reap_children() -> bool {
    loop {
        match nix::sys::wait::waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) => return true,
            Ok(_) | Err(Errno::EINTR) => {}
            Err(Errno::ECHILD) => return false,
            Err(e) => {
                log(&format!("error: reaping leftovers: {e}"));
                return false;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_is_private_and_executable() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("script");
        write_script(&p, "#!/bin/sh\nexit 0\n", None).unwrap();
        let m = std::fs::metadata(&p).unwrap();
        assert_eq!(m.permissions().mode() & 0o777, 0o500);
        // Rewriting replaces the read-only file.
        write_script(&p, "#!/bin/sh\nexit 1\n", None).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "#!/bin/sh\nexit 1\n");
    }
}
