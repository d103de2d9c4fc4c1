//! A private `munged` for one test cluster: its own key, socket, pid, log and seed files in
//! the cluster's directory, so tests use real MUNGE credentials without touching (or needing)
//! the host's munged, and two clusters never accept each other's credentials.
//!
//! The test clusters use `AuthType=auth/munge` whenever munged (and its `munge` tool) is installed
//! (`GSCHED_TEST_AUTH=none` forces `auth/none`, `GSCHED_TEST_AUTH=munge` makes a missing
//! MUNGE a failure instead of a fallback).

use std::fs::{self, OpenOptions};
use std::io::Read as _;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `none`, `munge` or unset (auto).
pub const AUTH_ENV: &str = "GSCHED_TEST_AUTH";

/// An installed program: on `PATH`, else in the system's program directories (munged lives
/// in an sbin directory that an ordinary user's `PATH` may lack).
fn program_path(name: &str) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    dirs.extend(["/usr/sbin", "/usr/local/sbin", "/sbin", "/usr/bin"].map(PathBuf::from));
    dirs.into_iter().map(|d| d.join(name)).find(|p| p.is_file())
}

/// The munged binary, if installed.
pub fn munged_path() -> Option<PathBuf> {
    program_path("munged")
}

/// `None` when the tests can use MUNGE here, else why not.
pub fn unavailable() -> Option<String> {
    if munged_path().is_none() {
        return Some("munged is not installed (apt-get install munge)".into());
    }
    if program_path("munge").is_none() {
        return Some("the munge command is not installed (apt-get install munge)".into());
    }
    None
}

/// Whether test clusters should run with auth/munge (panics when `GSCHED_TEST_AUTH=munge`
/// asks for it and it is unavailable).
pub fn wanted() -> bool {
    match std::env::var(AUTH_ENV).as_deref().map(str::trim) {
        Ok("none") => false,
        Ok("munge") => {
            if let Some(why) = unavailable() {
                panic!("{AUTH_ENV}=munge, but MUNGE cannot be used: {why}");
            }
            true
        }
        _ => unavailable().is_none(),
    }
}

/// A running private munged, stopped when dropped.
#[derive(Debug)]
pub struct PrivateMunged {
    dir: PathBuf,
    socket: PathBuf,
    child: Option<Child>,
}

impl PrivateMunged {
    /// Starts munged with a fresh key under `dir` (created; every directory above it must be
    /// searchable by all, as munged demands of its socket's path) and waits for its socket.
    pub fn start(dir: &Path) -> Result<PrivateMunged, String> {
        let munged = munged_path().ok_or("munged is not installed")?;
        let run = dir.join("run");
        fs::create_dir_all(&run).map_err(|e| format!("{}: {e}", run.display()))?;
        fs::set_permissions(dir, fs::Permissions::from_mode(0o711)).map_err(|e| e.to_string())?;
        fs::set_permissions(&run, fs::Permissions::from_mode(0o755)).map_err(|e| e.to_string())?;
        let key = dir.join("munge.key");
        let mut bytes = vec![0u8; 1024];
        fs::File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut bytes))
            .map_err(|e| format!("cannot read /dev/urandom: {e}"))?;
        fs::write(&key, &bytes).map_err(|e| format!("{}: {e}", key.display()))?;
        fs::set_permissions(&key, fs::Permissions::from_mode(0o600)).map_err(|e| e.to_string())?;
        let mut m = PrivateMunged {
            dir: dir.to_path_buf(),
            socket: run.join("munge.socket"),
            child: None,
        };
        m.spawn(&munged)?;
        Ok(m)
    }

    /// Starts munged again (after [`PrivateMunged::stop`]) with the same key and socket.
    pub fn restart(&mut self) -> Result<(), String> {
        self.stop();
        let munged = munged_path().ok_or("munged is not installed")?;
        self.spawn(&munged)
    }

    /// Stops munged (its key and folder stay, for [`PrivateMunged::restart`]).
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(c.id() as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
            let deadline = Instant::now() + Duration::from_secs(3);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = c.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Runs munged on the folder's key and waits for its socket.
    fn spawn(&mut self, munged: &Path) -> Result<(), String> {
        let dir = self.dir.clone();
        let run = dir.join("run");
        let key = dir.join("munge.key");
        let log = dir.join("munged.log");
        // A socket left by a munged that did not clean up would pass for the new one's.
        let _ = fs::remove_file(&self.socket);
        // In the foreground munged logs to stderr (appended: a restart keeps the first log).
        let err = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .map_err(|e| format!("{}: {e}", log.display()))?;
        let child = Command::new(munged)
            .arg("--foreground")
            .arg(format!("--key-file={}", key.display()))
            .arg(format!("--socket={}", self.socket.display()))
            .arg(format!("--pid-file={}", run.join("munged.pid").display()))
            .arg(format!("--seed-file={}", dir.join("munged.seed").display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(err)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", munged.display()))?;
        self.child = Some(child);
        let deadline = Instant::now() + crate::scaled(Duration::from_secs(10));
        while !self.socket.exists() {
            if let Some(Ok(Some(st))) = self.child.as_mut().map(|c| c.try_wait()) {
                self.child = None;
                return Err(format!(
                    "munged exited with {st}: {}",
                    crate::tail(&log, 10)
                ));
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "munged did not create {} in time: {}",
                    self.socket.display(),
                    crate::tail(&log, 10)
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(())
    }

    /// munged's socket (`AuthInfo=socket=...`, `munge -S ...`).
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// munged's log.
    pub fn log(&self) -> PathBuf {
        self.dir.join("munged.log")
    }

    /// `munge -S <socket>` with the given extra arguments, run as `uid` when given; returns
    /// the credential it prints (panics when it fails).
    pub fn munge_cli(&self, args: &[&str], uid: Option<(u32, u32)>) -> String {
        let mut c = Command::new("munge");
        c.arg("-S")
            .arg(&self.socket)
            .args(args)
            .stdin(Stdio::null());
        if let Some((u, g)) = uid {
            std::os::unix::process::CommandExt::uid(&mut c, u);
            std::os::unix::process::CommandExt::gid(&mut c, g);
        }
        let out = c
            .output()
            .unwrap_or_else(|e| panic!("cannot run munge: {e}"));
        assert!(
            out.status.success(),
            "munge {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }
}

impl Drop for PrivateMunged {
    fn drop(&mut self) {
        self.stop();
    }
}
