//! The gsched test harness: real `gsctld` and `gsnoded` processes on free loopback ports in a
//! fresh temporary directory, the real commands run against them, and a teardown that leaves
//! nothing behind (daemons, job processes, files), also when a test panics.
//!
//! ```no_run
//! use gsched_tests::{ClusterOpts, TestCluster, JobState, secs};
//!
//! let c = TestCluster::start(ClusterOpts::named("example"));
//! let id = c.submit(["--wrap", "echo hello"]);
//! let job = c.wait_terminal(id, secs(30));
//! assert_eq!(job.state, JobState::Completed);
//! assert_eq!(c.read_work_file(&format!("slurm-{id}.out")), "hello\n");
//! ```
//!
//! The binaries come from the test executable's profile directory (`target/<profile>/`) or
//! `$GSCHED_BIN_DIR`; `cargo test` does not build them, so run the tests with `make test`.
//! Waits poll with short sleeps against a deadline (no fixed sleeps); on timeout they panic
//! with what was awaited and the tail of every daemon log. `GSCHED_KEEP_TEST_DIR=1` keeps a
//! cluster's directory; `GSCHED_TEST_TIMEOUT_SCALE=N` stretches every timeout.

pub mod bins;
pub mod cgroup_v1;
pub mod cluster;
pub mod crash_check;
pub mod gpu_fakes;
pub mod munge;
pub mod ports;
pub mod procs;

pub use cluster::{current_user, scaled, tail, ClusterOpts, TestCluster, DEFAULT_TIMEOUT};
pub use gsched_proto::job::{JobId, JobInfo, JobState, Reason};
use std::io::{BufRead, Read, Write};

use std::process::Output;
use std::time::Duration;

/// `Duration::from_secs(n)`, for brevity in tests.
pub fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// Whether the tests run as root.
pub fn is_root() -> bool {
    nix::unistd::getuid().is_root()
}

/// A unique marker for process command lines and file names of one test.
pub fn unique_marker(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "{prefix}{}x{}x{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed),
        nanos
    )
}

/// stdout of a command as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// stderr of a command as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The lines of a command's stderr with the program-name prefix (`gsbatch: `, Slurm's own
/// `sbatch: `, or either with a directory in front, as getopt prints argv[0]) removed, so
/// tests can compare Slurm's exact wording whichever name the command was invoked by. Lines
/// without such a prefix are kept as they are.
pub fn stderr_lines(o: &Output, prog: &str) -> Vec<String> {
    let slurm_name = prog.strip_prefix("gs").map(|s| format!("s{s}"));
    let is_prog = |p: &str| {
        let base = p.rsplit('/').next().unwrap_or(p);
        !p.contains(' ') && (base == prog || slurm_name.as_deref() == Some(base))
    };
    stderr(o)
        .lines()
        .map(|l| match l.split_once(": ") {
            Some((p, rest)) if is_prog(p) => rest.to_string(),
            _ => l.to_string(),
        })
        .collect()
}

/// The user `name`'s uid and gid, if the user exists.
pub fn user_ids(name: &str) -> Option<(u32, u32)> {
    gsched_proto::users::user_by_name(name).map(|u| (u.uid, u.gid))
}

/// A tiny HTTP server on loopback that keeps every POST body that is JSON (a webhook
/// receiver for notice tests): its port and what it got.
pub fn webhook_receiver() -> (
    u16,
    std::sync::Arc<std::sync::Mutex<Vec<serde_json::Value>>>,
) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let got = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let g = got.clone();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            let mut r = std::io::BufReader::new(s.try_clone().unwrap());
            let mut len = 0usize;
            loop {
                let mut line = String::new();
                if r.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; len];
            let _ = r.read_exact(&mut body);
            if let Ok(v) = serde_json::from_slice(&body) {
                g.lock().unwrap().push(v);
            }
            let mut w = s;
            let _ =
                w.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
        }
    });
    (port, got)
}

/// A `MailProg=` for tests: a script that appends one line `RECIPIENT|SUBJECT` per mail to a
/// log file (Slurm calls MailProg with `-s SUBJECT RECIPIENT`).
pub struct MailLog {
    dir: tempfile::TempDir,
}

impl Default for MailLog {
    fn default() -> Self {
        Self::new()
    }
}

impl MailLog {
    pub fn new() -> MailLog {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("cannot create a temporary directory");
        let prog = dir.path().join("mailprog");
        std::fs::write(
            &prog,
            format!(
                "#!/bin/sh\necho \"$3|$2\" >> {}\n",
                dir.path().join("mail.log").display()
            ),
        )
        .expect("cannot write the MailProg script");
        std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o755))
            .expect("cannot make the MailProg script executable");
        MailLog { dir }
    }

    /// The `MailProg=...` line for the cluster's config.
    pub fn config_line(&self) -> String {
        format!("MailProg={}", self.dir.path().join("mailprog").display())
    }

    /// The mails so far, one line each.
    pub fn read(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("mail.log")).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    fn output(stderr: &str) -> Output {
        Output {
            status: std::process::ExitStatus::from_raw(256),
            stdout: Vec::new(),
            stderr: stderr.as_bytes().to_vec(),
        }
    }

    #[test]
    fn stderr_prefixes_are_stripped() {
        let o = output(
            "gsbatch: error: a\nsbatch: error: b\n/x/y/gsbatch: unrecognized option '--q'\n\
             Try \"gsbatch --help\"\nother prog: x\n",
        );
        assert_eq!(
            stderr_lines(&o, "gsbatch"),
            vec![
                "error: a",
                "error: b",
                "unrecognized option '--q'",
                "Try \"gsbatch --help\"",
                "other prog: x"
            ]
        );
    }

    #[test]
    fn markers_are_unique() {
        assert_ne!(unique_marker("m"), unique_marker("m"));
        assert!(unique_marker("abc").starts_with("abc"));
    }

    #[test]
    fn root_exists() {
        assert_eq!(user_ids("root"), Some((0, 0)));
    }
}
