//! `scontrol reconfigure` and SIGHUP: a daemon reads its config again by executing itself
//! anew, in place (feature `server`).
//!
//! Why a fresh image rather than swapping settings in a running daemon: every setting then
//! takes effect exactly as at start-up, through the same code, with nothing derived from the
//! old config left behind; the queue is in the store and the jobs are in their own
//! processes, so both daemons already recover all of it at every start. What a restart
//! would lose is avoided: the process keeps its pid (a pid file, systemd and monitoring
//! see the same daemon), and the listening socket is handed to the new image
//! ([`LISTEN_FD_ENV`]), so a client that connects meanwhile waits in the socket's backlog
//! instead of being refused. The caller checks the new config before asking for the
//! re-execution ([`request`]); a config that does not load leaves the daemon as it was.

#![allow(unsafe_code)] // taking over the inherited socket's descriptor; each block says why

use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// The environment variable that passes the listening socket's descriptor to the new image.
pub const LISTEN_FD_ENV: &str = "GSCHED_LISTEN_FD";

static REQUESTED: AtomicBool = AtomicBool::new(false);
static STOP: AtomicBool = AtomicBool::new(false);

fn notify() -> &'static tokio::sync::Notify {
    static N: OnceLock<tokio::sync::Notify> = OnceLock::new();
    N.get_or_init(tokio::sync::Notify::new)
}

/// Asks the daemon to stop serving (in-flight requests finish) and execute itself anew.
pub fn request() {
    REQUESTED.store(true, Ordering::SeqCst);
    notify().notify_one();
}

/// Asks the daemon to stop serving (in-flight requests finish) and exit, as on SIGTERM
/// (`scontrol shutdown`).
pub fn request_stop() {
    STOP.store(true, Ordering::SeqCst);
    notify().notify_one();
}

/// Whether [`request`] was called: the daemon's server stopped to be executed anew.
pub fn is_requested() -> bool {
    REQUESTED.load(Ordering::SeqCst) && !STOP.load(Ordering::SeqCst)
}

/// Completes when [`request`] or [`request_stop`] is called (part of the server's shutdown
/// future).
pub async fn requested() {
    if REQUESTED.load(Ordering::SeqCst) || STOP.load(Ordering::SeqCst) {
        return;
    }
    notify().notified().await;
}

/// The listening socket handed over by this daemon's previous image, if it listens on one
/// of `addrs`; a socket on another address (the config moved the port) is closed, and the
/// caller binds the new one. Call once, at start-up, before other threads exist.
pub fn inherited_listener(addrs: &[SocketAddr]) -> Option<std::net::TcpListener> {
    let fd: RawFd = std::env::var(LISTEN_FD_ENV).ok()?.trim().parse().ok()?;
    // Not passed on to anything this daemon starts (jobs, helpers, programs).
    std::env::remove_var(LISTEN_FD_ENV);
    if fd < 3 {
        return None;
    }
    // Is `fd` an open socket that listens? Checked before ownership is taken, so a stray
    // variable naming some other descriptor changes nothing.
    if !is_listening_socket(fd) {
        return None;
    }
    // SAFETY: `fd` is an open listening socket (checked above) that this process inherited
    // from its previous image through LISTEN_FD_ENV, and nothing else in this process owns
    // it: the variable is read once, here, and removed.
    let listener = unsafe { std::net::TcpListener::from_raw_fd(fd) };
    if !listener.local_addr().is_ok_and(|a| addrs.contains(&a)) {
        return None;
    }
    let _ = nix::fcntl::fcntl(
        &listener,
        nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC),
    );
    listener.set_nonblocking(true).ok()?;
    Some(listener)
}

/// Whether `fd` is an open socket in the listening state (`SO_ACCEPTCONN`).
fn is_listening_socket(fd: RawFd) -> bool {
    let mut on: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `on`, a c_int that lives across the
    // call; a descriptor that is not an open socket makes it fail (ENOTSOCK, EBADF).
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_ACCEPTCONN,
            (&mut on as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    rc == 0 && on != 0
}

/// Executes this program anew with the same arguments and environment, handing it
/// `listener`. Returns only on failure.
pub fn exec_self(listener: Option<std::net::TcpListener>) -> std::io::Error {
    use std::os::unix::process::CommandExt;
    let mut args = std::env::args_os();
    let arg0 = args.next().unwrap_or_default();
    // The program by its path, so that the process keeps its name (`/proc/<pid>/comm`,
    // which `pgrep`, `ps -C` and scripts match, is the executed file's name: `exe` for
    // /proc/self/exe); /proc/self/exe when the file was removed meanwhile.
    let program = std::env::current_exe()
        .ok()
        .filter(|p| !p.to_string_lossy().ends_with(" (deleted)") && p.is_file())
        .unwrap_or_else(|| std::path::PathBuf::from("/proc/self/exe"));
    let mut cmd = std::process::Command::new(program);
    cmd.arg0(arg0).args(args);
    if let Some(l) = &listener {
        let fd = l.as_raw_fd();
        if let Err(e) = nix::fcntl::fcntl(
            l,
            nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::empty()),
        ) {
            return std::io::Error::other(format!("cannot hand the listening socket over: {e}"));
        }
        cmd.env(LISTEN_FD_ENV, fd.to_string());
    }
    let e = cmd.exec();
    drop(listener);
    e
}
