//! The few raw system calls the node side needs and that have no safe wrapper, kept in one
//! module so that `unsafe` stays reviewable: `pidfd_open` (watching a gsstepd that may not be
//! our child), `kill` with any signal number (users may send real-time signals, which nix's
//! `Signal` enum cannot name), resetting ignored signals (`sigaction`), the tokio
//! registration of a pidfd, and the child set-up that runs between `fork` and `exec` in
//! gsstepd (`setgroups`/`setgid`/`setuid`, umask, output files, `chdir`).
//!
//! Everything else uses nix's safe wrappers. The crate denies `unsafe_code`; this module is the
//! single exception.
#![allow(unsafe_code)]

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sys::stat::Mode;
use nix::unistd::{Gid, Uid};
use std::ffi::CString;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::Command;

/// Opens a pidfd for `pid`: a file descriptor that becomes readable when the process exits.
/// Works for any process (child or not), and unlike a pid it cannot be recycled while open.
pub fn pidfd_open(pid: i32) -> io::Result<OwnedFd> {
    if pid <= 0 {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: pidfd_open(2) takes a pid and a flags word, touches no memory of ours, and
    // returns either a new file descriptor or -1 with errno set.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let fd = i32::try_from(fd).map_err(|_| io::Error::from_raw_os_error(libc::EBADF))?;
    // SAFETY: the kernel just returned this descriptor to us; nobody else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Reaps `pid` if it is an exited child of this process. After `reconfigure` a gsnoded
/// executed anew is still the parent of the gsstepd its previous image started, which it
/// watches as adopted processes: this takes their exit status, which nothing else waits
/// for. For a process that is not our child it does nothing (ECHILD).
pub fn reap_if_child(pid: i32) {
    if pid > 0 {
        let _ = nix::sys::wait::waitpid(
            nix::unistd::Pid::from_raw(pid),
            Some(nix::sys::wait::WaitPidFlag::WNOHANG),
        );
    }
}

/// At start-up, before this image starts any process: reaps every child that has already
/// exited (gsstepd of the previous image that ended while gsnoded was being executed anew).
pub fn reap_exited_children() {
    use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
    while let Ok(st) = waitpid(None, Some(WaitPidFlag::WNOHANG)) {
        if st == WaitStatus::StillAlive {
            break;
        }
    }
}

/// Waits (asynchronously, on the tokio reactor) until the process behind `pidfd` exits.
pub async fn wait_pidfd(pidfd: OwnedFd) -> io::Result<()> {
    // SAFETY: `register_with_interest` requires that the descriptor stays open and refers to
    // the same file for the whole life of the `AsyncFd`. The `AsyncFd` takes ownership of
    // the `OwnedFd`, which closes it only when the `AsyncFd` is dropped, and nothing else has
    // a copy of it.
    let afd = unsafe {
        tokio::io::unix::AsyncFd::register_with_interest(pidfd, tokio::io::Interest::READABLE)
    }
    .map_err(|e| e.into_parts().1)?;
    let _ready = afd.readable().await?;
    Ok(())
}

/// Highest signal number Linux knows (`SIGRTMAX`).
pub const MAX_SIGNAL: i32 = 64;

/// Sends signal `sig` (1..=64, real-time signals included) to `pid`.
pub fn send_signal(pid: i32, sig: i32) -> io::Result<()> {
    // pid <= 0 would address process groups or every process: never what we mean.
    if pid <= 0 || !(1..=MAX_SIGNAL).contains(&sig) {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: kill(2) takes two integers and touches no memory.
    let rc = unsafe { libc::kill(pid, sig) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Resets every signal this process ignores to its default action. Ignored signals survive
/// `exec`, so without this a job would inherit whatever its parents ignored (std ignores
/// SIGPIPE in every Rust program; service managers and shells add more).
pub fn reset_ignored_signals() {
    for sig in 1..=MAX_SIGNAL {
        if sig == libc::SIGKILL || sig == libc::SIGSTOP {
            continue;
        }
        // SAFETY: an all-zero `sigaction` is a valid value; sigaction(2) only reads `new`
        // and writes `old`, both valid for the call. Querying first means handlers that
        // are installed (not ignored) are left alone. Signals the C library reserves for
        // itself answer EINVAL and are skipped.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut old) != 0 {
                continue;
            }
            if old.sa_sigaction == libc::SIG_IGN {
                let mut new: libc::sigaction = std::mem::zeroed();
                new.sa_sigaction = libc::SIG_DFL;
                libc::sigemptyset(&mut new.sa_mask);
                libc::sigaction(sig, &new, std::ptr::null_mut());
            }
        }
    }
}

/// Which step of the child's set-up failed (sent to the parent through the report pipe).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildStage {
    Setgroups = 1,
    Setgid = 2,
    Setuid = 3,
    Stdin = 4,
    Stdout = 5,
    Stderr = 6,
    Redirect = 7,
    Cgroup = 8,
}

impl ChildStage {
    fn from_byte(b: u8) -> Option<ChildStage> {
        Some(match b {
            1 => ChildStage::Setgroups,
            2 => ChildStage::Setgid,
            3 => ChildStage::Setuid,
            4 => ChildStage::Stdin,
            5 => ChildStage::Stdout,
            6 => ChildStage::Stderr,
            7 => ChildStage::Redirect,
            8 => ChildStage::Cgroup,
            _ => return None,
        })
    }
}

/// Decodes what a failing child wrote into the report pipe: the stage and its errno.
pub fn decode_child_failure(bytes: &[u8]) -> Option<(ChildStage, Errno)> {
    if bytes.len() < 5 {
        return None;
    }
    let stage = ChildStage::from_byte(bytes[0])?;
    let errno = i32::from_le_bytes([bytes[1], bytes[2], bytes[3], bytes[4]]);
    Some((stage, Errno::from_raw(errno)))
}

/// The identity the job runs as (only when gsstepd runs as root).
#[derive(Debug, Clone)]
pub struct JobIdentity {
    pub uid: Uid,
    pub gid: Gid,
    /// Supplementary groups, resolved in the parent (NSS is not async-signal-safe).
    pub groups: Vec<Gid>,
}

/// Everything the child does between `fork` and `exec`, prepared in the parent so that the
/// child only makes async-signal-safe system calls (no allocation, no NSS, no locks).
#[derive(Debug)]
pub struct ChildSetup {
    /// `None`: keep the current identity (gsnoded runs without root).
    pub identity: Option<JobIdentity>,
    pub umask: Option<Mode>,
    pub work_dir: CString,
    pub stdin: CString,
    pub stdout: CString,
    /// `None`: stderr goes to the stdout file.
    pub stderr: Option<CString>,
    /// `--open-mode=append` rather than truncate.
    pub append: bool,
    /// Written to the job's stderr before the error text when `chdir(work_dir)` fails.
    pub chdir_error_prefix: Vec<u8>,
    /// Written after the error text (`: going to /tmp instead\n`).
    pub chdir_error_suffix: Vec<u8>,
    /// The `cgroup.procs` files of the job's step: the child writes `0` into each (moving
    /// itself) while still root, before anything else, so everything it runs is tracked.
    pub cgroup_procs: Vec<CString>,
    /// Write end of a close-on-exec pipe to the parent; a failing stage writes
    /// `[stage, errno as i32 little-endian]` into it.
    pub report: OwnedFd,
    /// Propagated resource limits, `(resource, soft, hard)`, set just before the exec
    /// ([`propagated_rlimits`]).
    pub rlimits: Vec<(libc::c_int, u64, u64)>,
}

impl ChildSetup {
    /// The same identity, cgroup, working directory and limits with `/dev/null` for the
    /// files (a TaskEpilog's), and a report pipe of its own (its read end is returned:
    /// keep it open until the child has started).
    pub fn quiet_copy(&self) -> io::Result<(ChildSetup, OwnedFd)> {
        let (r, w) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
        Ok((
            ChildSetup {
                identity: self.identity.clone(),
                umask: self.umask,
                work_dir: self.work_dir.clone(),
                stdin: c"/dev/null".into(),
                stdout: c"/dev/null".into(),
                stderr: None,
                append: true,
                chdir_error_prefix: Vec::new(),
                chdir_error_suffix: Vec::new(),
                cgroup_procs: self.cgroup_procs.clone(),
                report: w,
                rlimits: self.rlimits.clone(),
            },
            r,
        ))
    }
}

/// Takes the `SLURM_RLIMIT_*` variables out of a job's environment (the job never sees them,
/// as with slurmstepd) and returns the soft limits to set in the job's process: each one
/// `conf` (the node's `PropagateResourceLimits`) lists or the user asked for
/// (`--propagate`), as `(resource, soft, hard)`. A value over this process's hard limit is
/// lowered to it, or, when the user asked, not set and `warn`ed about, as slurmstepd does;
/// one equal to the current soft limit needs nothing.
pub fn propagated_rlimits(
    env: &mut Vec<(String, String)>,
    conf: &[String],
    mut warn: impl FnMut(String),
) -> Vec<(libc::c_int, u64, u64)> {
    use gsched_proto::rlimits::{current, resource};
    let mut out = Vec::new();
    for p in gsched_proto::rlimits::take_from_env(env, conf) {
        let (Some(r), Some((soft, hard))) = (resource(p.name), current(p.name)) else {
            continue;
        };
        let mut want = p.soft;
        if want > hard {
            if p.user_asked {
                let v = if want == u64::MAX {
                    "'unlimited'".to_string()
                } else {
                    want.to_string()
                };
                warn(format!(
                    "Can't propagate RLIMIT_{} of {v} from submit host: above the node's hard limit",
                    p.name
                ));
                continue;
            }
            want = hard;
        }
        if want != soft {
            out.push((r, want, hard));
        }
    }
    out
}

/// Installs the child set-up into `cmd`, in the order that works (docs/crates.md §6):
/// join the job's cgroups (as root), `setgroups`, `setgid`, `setuid`, umask, then `chdir` and the output files as the user, so
/// that files are created by the user and permissions are checked as the user. A failing
/// stage is reported through `setup.report` and aborts the spawn (std then makes `spawn`
/// return the errno).
///
/// The closure allocates nothing and only makes async-signal-safe system calls, so it is
/// sound even in a multi-threaded parent; by design only the single-threaded gsstepd uses it
/// (ARCHITECTURE.md: no fork in the daemon).
pub fn install_child_setup(cmd: &mut Command, setup: ChildSetup) {
    let mut setup = setup;
    let child = move || -> io::Result<()> { child_setup(&mut setup) };
    // SAFETY: `child_setup` runs in the forked child before exec. It only calls
    // setgroups/setgid/setuid/umask/chdir/open/dup2/write/close (nix) and setrlimit, all
    // async-signal-safe, on data prepared before the fork; it does not allocate (the paths
    // are `CString`s, which nix passes without copying), take locks or touch other threads'
    // state.
    unsafe {
        cmd.pre_exec(child);
    }
}

fn fail(report: &OwnedFd, stage: ChildStage, errno: Errno) -> io::Error {
    let e = (errno as i32).to_le_bytes();
    let msg = [stage as u8, e[0], e[1], e[2], e[3]];
    // Nothing to do if the parent is gone; the spawn fails anyway.
    let _ = nix::unistd::write(report, &msg);
    io::Error::from_raw_os_error(errno as i32)
}

fn child_setup(s: &mut ChildSetup) -> io::Result<()> {
    for f in &s.cgroup_procs {
        let fd = nix::fcntl::open(
            f.as_c_str(),
            OFlag::O_WRONLY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| fail(&s.report, ChildStage::Cgroup, e))?;
        nix::unistd::write(&fd, b"0").map_err(|e| fail(&s.report, ChildStage::Cgroup, e))?;
    }
    if let Some(id) = &s.identity {
        nix::unistd::setgroups(&id.groups)
            .map_err(|e| fail(&s.report, ChildStage::Setgroups, e))?;
        nix::unistd::setgid(id.gid).map_err(|e| fail(&s.report, ChildStage::Setgid, e))?;
        nix::unistd::setuid(id.uid).map_err(|e| fail(&s.report, ChildStage::Setuid, e))?;
    }
    if let Some(m) = s.umask {
        nix::sys::stat::umask(m);
    }
    // As the user now: chdir (a failure is not fatal, like Slurm) and the stdio files.
    let chdir_err = nix::unistd::chdir(s.work_dir.as_c_str()).err();
    let input = nix::fcntl::open(
        s.stdin.as_c_str(),
        OFlag::O_RDONLY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| fail(&s.report, ChildStage::Stdin, e))?;
    let wflags = OFlag::O_WRONLY
        | OFlag::O_CREAT
        | OFlag::O_CLOEXEC
        | if s.append {
            OFlag::O_APPEND
        } else {
            OFlag::O_TRUNC
        };
    let mode = Mode::from_bits_truncate(0o644);
    let out = nix::fcntl::open(s.stdout.as_c_str(), wflags, mode)
        .map_err(|e| fail(&s.report, ChildStage::Stdout, e))?;
    let err = match &s.stderr {
        Some(p) => Some(
            nix::fcntl::open(p.as_c_str(), wflags, mode)
                .map_err(|e| fail(&s.report, ChildStage::Stderr, e))?,
        ),
        None => None,
    };
    nix::unistd::dup2_stdin(&input).map_err(|e| fail(&s.report, ChildStage::Redirect, e))?;
    nix::unistd::dup2_stdout(&out).map_err(|e| fail(&s.report, ChildStage::Redirect, e))?;
    nix::unistd::dup2_stderr(err.as_ref().unwrap_or(&out))
        .map_err(|e| fail(&s.report, ChildStage::Redirect, e))?;
    if let Some(e) = chdir_err {
        let stderr = err.as_ref().unwrap_or(&out);
        let _ = nix::unistd::write(stderr, &s.chdir_error_prefix);
        let _ = nix::unistd::write(stderr, e.desc().as_bytes());
        let _ = nix::unistd::write(stderr, &s.chdir_error_suffix);
        let _ = nix::unistd::chdir(c"/tmp");
    }
    // The propagated resource limits, last (RLIMIT_FSIZE must not hit gsstepd's own files);
    // a refusal leaves the node's limit, as slurmstepd goes on.
    for &(r, soft, hard) in &s.rlimits {
        let lim = libc::rlimit {
            rlim_cur: soft,
            rlim_max: hard,
        };
        // SAFETY: setrlimit is async-signal-safe and reads only `lim`.
        unsafe { libc::setrlimit(r as _, &lim) };
    }
    // gsstepd blocks SIGTERM and friends for itself; the job must start with an empty mask
    // (std does not reset it), or `scancel`'s SIGTERM would be held back until SIGKILL.
    let _ = nix::sys::signal::sigprocmask(
        nix::sys::signal::SigmaskHow::SIG_SETMASK,
        Some(&nix::sys::signal::SigSet::empty()),
        None,
    );
    // `input`, `out` and `err` are close-on-exec and are closed when dropped here; the
    // duplicates on 0, 1 and 2 stay open across exec.
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_bytes_round_trip() {
        let (r, w) = nix::unistd::pipe2(OFlag::O_CLOEXEC).expect("pipe");
        let e = fail(&w, ChildStage::Stdout, Errno::EACCES);
        assert_eq!(e.raw_os_error(), Some(libc::EACCES));
        drop(w);
        let mut buf = [0u8; 16];
        let n = nix::unistd::read(&r, &mut buf).expect("read");
        assert_eq!(
            decode_child_failure(&buf[..n]),
            Some((ChildStage::Stdout, Errno::EACCES))
        );
        assert_eq!(decode_child_failure(&[9, 0, 0, 0, 0]), None);
        assert_eq!(decode_child_failure(&[1]), None);
    }

    #[test]
    fn signal_arguments_are_checked() {
        assert!(send_signal(0, 15).is_err());
        assert!(send_signal(-1, 15).is_err());
        assert!(send_signal(std::process::id() as i32, 65).is_err());
        // Signal 0 is not a signal; 1..=64 are.
        assert!(send_signal(std::process::id() as i32, 0).is_err());
    }

    #[test]
    fn pidfd_of_self_opens() {
        let fd = pidfd_open(std::process::id() as i32);
        match fd {
            Ok(_) => {}
            // Kernels before 5.3 have no pidfd_open; the daemon falls back to polling.
            Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => {}
            Err(e) => panic!("pidfd_open(self): {e}"),
        }
        assert!(pidfd_open(0).is_err());
    }
}
