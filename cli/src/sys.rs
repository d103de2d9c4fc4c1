//! The few facts about the calling process the commands need from the system: the host
//! name, the umask, and group lookups by name (for `--gid`).
#![allow(unsafe_code)]

/// The short host name (up to the first dot), as Slurm records the submit host.
pub fn short_hostname() -> String {
    let full = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".to_string());
    full.split('.').next().unwrap_or(&full).to_string()
}

/// The process umask. `umask(2)` can only be read by setting it, so it is set back at once;
/// the commands call this before they start any thread (reading `/proc/self/status` instead
/// cost a submission 3% of its time).
pub fn umask() -> u32 {
    // SAFETY: umask only swaps the process's file creation mask; no memory is involved.
    let old = unsafe { libc::umask(0o077) };
    // SAFETY: as above, restoring the mask read.
    unsafe { libc::umask(old) };
    old
}

/// A group's gid by name or number (Slurm's `gid_from_string`).
pub fn resolve_gid(s: &str) -> Option<u32> {
    if let Some(g) = gsched_proto::users::group_by_name(s) {
        return Some(g);
    }
    s.parse::<u32>().ok()
}

/// Whether standard input is a terminal.
pub fn stdin_is_tty() -> bool {
    // SAFETY: isatty only inspects the descriptor number.
    unsafe { libc::isatty(0) == 1 }
}

/// The last signal gsrun caught and has not forwarded yet (0: none).
static FORWARD: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

extern "C" fn remember_signal(sig: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    FORWARD.store(sig, std::sync::atomic::Ordering::SeqCst);
}

/// gsrun: SIGINT, SIGTERM, SIGHUP and SIGQUIT are caught to be forwarded to the step's
/// tasks ([`take_forwarded_signal`]); SIGUSR1 and SIGUSR2 are ignored (they reach the tasks
/// through their nodes). `SA_RESTART`, so that the HTTP calls are not interrupted.
pub fn forward_signals_setup() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
        // SAFETY: a zeroed sigaction is valid; the handler only stores into an atomic, which
        // is async-signal-safe; sigemptyset/sigaction get valid pointers to our locals.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = remember_signal as extern "C" fn(libc::c_int) as usize;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
    for sig in [libc::SIGUSR1, libc::SIGUSR2] {
        // SAFETY: setting a signal's disposition to SIG_IGN touches no memory of ours.
        unsafe {
            libc::signal(sig, libc::SIG_IGN);
        }
    }
}

/// The signal caught since the last call, if any.
pub fn take_forwarded_signal() -> Option<i32> {
    match FORWARD.swap(0, std::sync::atomic::Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// The C library's description of a signal (`strsignal`: `Killed`, `Terminated`), as
/// Slurm's JSON dumps name signals.
pub fn signal_description(sig: i32) -> String {
    // SAFETY: strsignal returns a pointer to a NUL-terminated string that stays valid
    // until the next call; it is copied at once (the commands are single-threaded).
    let p = unsafe { libc::strsignal(sig) };
    if p.is_null() {
        return format!("Unknown signal {sig}");
    }
    // SAFETY: non-null, NUL-terminated (above).
    unsafe { std::ffi::CStr::from_ptr(p) }
        .to_string_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basics() {
        assert!(!short_hostname().contains('.'));
        // Reading the mask leaves it as it was.
        let first = umask();
        assert_eq!(first & !0o777, 0);
        assert_eq!(umask(), first);
        assert_eq!(resolve_gid("0"), Some(0));
        assert_eq!(resolve_gid("root"), Some(0));
        assert_eq!(resolve_gid("no-such-group-gsched"), None);
    }
}
