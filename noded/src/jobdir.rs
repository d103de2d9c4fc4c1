//! The job folder in gsnoded's spool directory (`<SlurmdSpoolDir>/job_<id>/`): the only
//! channel between gsnoded and a job's gsstepd, and what lets jobs outlive a gsnoded restart.
//!
//! | file | written by | when |
//! |---|---|---|
//! | `launch.json` | gsnoded | before gsstepd starts: request, final environment, stdio paths |
//! | `stepd.log` | gsstepd (its stderr) | while it runs |
//! | `pids.json` | gsstepd | once the batch shell runs |
//! | `script` | gsstepd | the batch script, owned by the user, mode 0500 |
//! | `terminate.json` | gsnoded | when the controller asked to end the job |
//! | `status.json` | gsstepd (or gsnoded if gsstepd vanished) | once, when the job is over |
//!
//! Every JSON file is written atomically (temporary file, rename), so a reader sees the old
//! file or the new one, never half of one. gsnoded deletes the folder only after the
//! controller acknowledged the job's completion report.
//!
//! No file is flushed to disk when it is written: they only have to outlive a gsnoded or
//! gsstepd crash, and the page cache does that. After a crash of the whole node its jobs are
//! gone with it, the controller fails them (NODE_FAIL, requeued when allowed) and a folder
//! left half-written is set aside on the next start. A job's result is the one file worth a
//! flush, and only while the controller has not acknowledged it: gsnoded reports it within
//! milliseconds and then deletes the folder, so `status.json` is flushed
//! ([`JobDir::flush_status`]) when the first report fails, before gsnoded goes on retrying;
//! from then on it may be the only record of a job that ended before the node went down.
//! A node that loses power in the milliseconds between a job's end and the report loses the
//! result, as it would lose a running job (NODE_FAIL). (Flushing `status.json` in gsstepd
//! cost every job 0.3 ms of CPU, a tenth of the sequential submission rate.)

use gsched_proto::api::{LaunchRequest, TerminateReason};
use gsched_proto::job::{JobId, OpenMode};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

pub const LAUNCH_FILE: &str = "launch.json";
pub const PIDS_FILE: &str = "pids.json";
pub const STATUS_FILE: &str = "status.json";
pub const TERMINATE_FILE: &str = "terminate.json";
pub const SCRIPT_FILE: &str = "script";
pub const STEPD_LOG: &str = "stepd.log";
/// Says the job was killed because its MPS daemon or server died (written by gsnoded before
/// the kill, so that a restarted gsnoded reports the same).
pub const GPU_FAILURE_FILE: &str = "gpu_failure";

/// Every file a job folder may hold, for [`JobDir::remove`].
const FOLDER_FILES: [&str; 7] = [
    LAUNCH_FILE,
    PIDS_FILE,
    STATUS_FILE,
    TERMINATE_FILE,
    SCRIPT_FILE,
    STEPD_LOG,
    GPU_FAILURE_FILE,
];

const DIR_PREFIX: &str = "job_";

/// A problem with a file of a job folder. The path is always named.
#[derive(Debug, thiserror::Error)]
pub enum JobDirError {
    #[error("cannot {op} {}: {source}", path.display())]
    Io {
        op: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} is not valid: {source}", path.display())]
    Json {
        path: PathBuf,
        source: serde_json::Error,
    },
}

impl JobDirError {
    pub fn io(op: &'static str, path: &Path, source: std::io::Error) -> JobDirError {
        JobDirError::Io {
            op,
            path: path.to_path_buf(),
            source,
        }
    }
}

/// The folder of job `id` in `spool`.
pub fn job_dir(spool: &Path, id: JobId) -> PathBuf {
    spool.join(format!("{DIR_PREFIX}{id}"))
}

/// The job id of a folder name (`job_42` → 42).
pub fn parse_job_dir_name(name: &str) -> Option<JobId> {
    let digits = name.strip_prefix(DIR_PREFIX)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// `launch.json`: everything gsstepd needs, resolved by gsnoded.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LaunchFile {
    /// The controller's request as received.
    pub request: LaunchRequest,
    /// This node's name.
    pub node: String,
    /// The job's final environment: the request's plus the node-specific variables. gsstepd
    /// runs the script with exactly this environment.
    pub environment: Vec<(String, String)>,
    /// Absolute stdio paths (patterns expanded, relative paths resolved against work_dir).
    pub stdout: PathBuf,
    /// Equal to `stdout` when the job gave no `-e`.
    pub stderr: PathBuf,
    pub stdin: PathBuf,
    pub open_mode: OpenMode,
    /// `KillWait`, seconds between SIGTERM and SIGKILL.
    pub kill_wait: u32,
    /// The job's cgroup and cores, when the node uses cgroups (`cgroup.conf`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<crate::cgroup::JobCgroup>,
    /// The job's user as gsnoded resolved it, so that gsstepd loads no NSS modules (as
    /// Slurm's controller sends the gids with the credential); `None`: gsstepd resolves
    /// the user itself (and says why it cannot).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<ResolvedUser>,
    /// The resource limits this node's config propagates (`PropagateResourceLimits`): the
    /// job's `SLURM_RLIMIT_*` of these (and any marked `U`, `--propagate`) become its soft
    /// limits (`gsched_proto::rlimits`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub propagate_rlimits: Vec<String>,
    /// The node's `TaskProlog` and `TaskEpilog`, run as the user around the script.
    #[serde(
        default,
        skip_serializing_if = "crate::task_script::TaskScripts::is_empty"
    )]
    pub task_scripts: crate::task_script::TaskScripts,
    /// The node's `Prolog`, which gsstepd runs before the script with `prolog_env`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prolog: Option<crate::prolog::ScriptConf>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prolog_env: Vec<(String, String)>,
}

/// A user's name and groups, from the node's NSS (passwd, `getgrouplist`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResolvedUser {
    pub name: String,
    /// Every group of the user, the primary one included.
    pub groups: Vec<u32>,
}

impl ResolvedUser {
    /// Looks `uid` up, with `gid` as its primary group; `None` when NSS does not know it.
    pub fn lookup(uid: u32, gid: u32) -> Option<ResolvedUser> {
        let entry = gsched_proto::users::user_by_uid(uid)?;
        let cname = std::ffi::CString::new(entry.name.as_bytes()).ok()?;
        let groups = nix::unistd::getgrouplist(&cname, nix::unistd::Gid::from_raw(gid)).ok()?;
        Some(ResolvedUser {
            name: entry.name,
            groups: groups.into_iter().map(|g| g.as_raw()).collect(),
        })
    }

    /// [`ResolvedUser::lookup`], remembered for a minute: reading the passwd and group
    /// databases (or asking LDAP) for every job cost more than the rest of its launch
    /// request. A change of a user's groups reaches their jobs within the minute (Slurm's
    /// controller keeps group lists for `GroupUpdateTime`, ten minutes by default). A user
    /// NSS does not know is asked again every time.
    pub fn lookup_cached(uid: u32, gid: u32) -> Option<ResolvedUser> {
        static CACHE: std::sync::OnceLock<
            gsched_proto::users::LookupCache<(u32, u32), ResolvedUser>,
        > = std::sync::OnceLock::new();
        CACHE.get_or_init(Default::default).get(
            (uid, gid),
            std::time::Instant::now(),
            |(uid, gid)| ResolvedUser::lookup(uid, gid),
        )
    }
}

/// `pids.json`: who runs the job, so that a restarted gsnoded can find it again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PidsFile {
    pub stepd_pid: i32,
    /// Field 22 of `/proc/<pid>/stat`; tells the same gsstepd from a recycled pid.
    pub stepd_start_ticks: u64,
    /// The batch shell, once started.
    pub shell_pid: Option<i32>,
    /// The shell's start ticks, so that gsnoded can still kill it (and what it started) if
    /// gsstepd vanishes.
    #[serde(default)]
    pub shell_start_ticks: Option<u64>,
}

/// `status.json`: how the job ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusFile {
    pub exit_code: i32,
    /// The signal that ended the batch shell, 0 if it exited.
    pub signal: i32,
    pub start_time: i64,
    pub end_time: i64,
    /// The job could not be started (bad output file, unknown user, ...).
    pub launch_error: Option<String>,
    /// Processes of the job the OOM killer ended (its cgroup's `oom_kill` counter).
    #[serde(default)]
    pub oom_kills: u64,
    /// What the job used, read from its cgroup at the end.
    #[serde(default)]
    pub usage: Option<gsched_proto::job::JobUsage>,
    /// The node's `Prolog` failed (why): the script never ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prolog_error: Option<String>,
}

/// `terminate.json`: the controller asked to end the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TerminateFile {
    pub reason: TerminateReason,
    pub kill_wait: u32,
    /// When the request arrived (seconds since the epoch), to re-arm SIGKILL after a restart.
    pub requested_at: i64,
}

/// What a file written by [`write_atomic`] must survive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// A crash of the daemons (the page cache keeps the file): no flush.
    DaemonCrash,
    /// A crash of the node: flushed (fsync) before the rename.
    PowerLoss,
}

/// Writes `bytes` to `path` atomically: temporary file in the same folder, fsync when
/// `durability` asks for it, rename.
pub fn write_atomic(
    path: &Path,
    bytes: &[u8],
    mode: u32,
    durability: Durability,
) -> Result<(), JobDirError> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(mode)
            .open(&tmp)
            .map_err(|e| JobDirError::io("create", &tmp, e))?;
        f.write_all(bytes)
            .map_err(|e| JobDirError::io("write", &tmp, e))?;
        if durability == Durability::PowerLoss {
            f.sync_all().map_err(|e| JobDirError::io("sync", &tmp, e))?;
        }
        std::fs::rename(&tmp, path).map_err(|e| JobDirError::io("rename", path, e))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Writes a value as JSON, atomically, readable by the owner only (files may hold the job's
/// environment).
pub fn write_json<T: Serialize>(
    path: &Path,
    value: &T,
    durability: Durability,
) -> Result<(), JobDirError> {
    let bytes = serde_json::to_vec_pretty(value).map_err(|e| JobDirError::Json {
        path: path.to_path_buf(),
        source: e,
    })?;
    write_atomic(path, &bytes, 0o600, durability)
}

/// Reads a JSON file; `Ok(None)` when it does not exist.
pub fn read_json<T: DeserializeOwned>(path: &Path) -> Result<Option<T>, JobDirError> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(JobDirError::io("read", path, e)),
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| JobDirError::Json {
            path: path.to_path_buf(),
            source: e,
        })
}

/// Typed access to one job folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobDir {
    path: PathBuf,
}

impl JobDir {
    pub fn new(path: impl Into<PathBuf>) -> JobDir {
        JobDir { path: path.into() }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    pub fn read_launch(&self) -> Result<Option<LaunchFile>, JobDirError> {
        read_json(&self.file(LAUNCH_FILE))
    }

    pub fn write_launch(&self, l: &LaunchFile) -> Result<(), JobDirError> {
        write_json(&self.file(LAUNCH_FILE), l, Durability::DaemonCrash)
    }

    pub fn read_pids(&self) -> Result<Option<PidsFile>, JobDirError> {
        read_json(&self.file(PIDS_FILE))
    }

    pub fn write_pids(&self, p: &PidsFile) -> Result<(), JobDirError> {
        write_json(&self.file(PIDS_FILE), p, Durability::DaemonCrash)
    }

    pub fn read_status(&self) -> Result<Option<StatusFile>, JobDirError> {
        read_json(&self.file(STATUS_FILE))
    }

    pub fn write_status(&self, s: &StatusFile) -> Result<(), JobDirError> {
        write_json(&self.file(STATUS_FILE), s, Durability::DaemonCrash)
    }

    /// Flushes `status.json` and the folder's entry for it to disk, for a result the
    /// controller has not acknowledged yet (see the module's documentation). Nothing to do
    /// when there is no `status.json`.
    pub fn flush_status(&self) -> Result<(), JobDirError> {
        let path = self.file(STATUS_FILE);
        match std::fs::File::open(&path) {
            Ok(f) => f
                .sync_all()
                .map_err(|e| JobDirError::io("sync", &path, e))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(JobDirError::io("open", &path, e)),
        }
        let folder = self.path();
        std::fs::File::open(folder)
            .and_then(|d| d.sync_all())
            .map_err(|e| JobDirError::io("sync", folder, e))
    }

    pub fn read_terminate(&self) -> Result<Option<TerminateFile>, JobDirError> {
        read_json(&self.file(TERMINATE_FILE))
    }

    pub fn write_terminate(&self, t: &TerminateFile) -> Result<(), JobDirError> {
        write_json(&self.file(TERMINATE_FILE), t, Durability::DaemonCrash)
    }

    /// Deletes the folder: its known files by name, then the folder (one system call per
    /// file, where a recursive removal lists and inspects every entry first); whatever else
    /// is in it (a temporary file left by a crash) through a recursive removal.
    pub fn remove(&self) -> Result<(), JobDirError> {
        for name in FOLDER_FILES {
            let path = self.file(name);
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(JobDirError::io("remove", &path, e)),
            }
        }
        std::fs::remove_dir(&self.path)
            .or_else(|e| match e.kind() {
                std::io::ErrorKind::NotFound => Ok(()),
                _ => std::fs::remove_dir_all(&self.path),
            })
            .map_err(|e| JobDirError::io("remove", &self.path, e))
    }

    /// The last non-empty line of `stepd.log` (for error messages), if any.
    pub fn last_log_line(&self) -> Option<String> {
        let text = std::fs::read(self.file(STEPD_LOG)).ok()?;
        let text = String::from_utf8_lossy(&text);
        text.lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(|l| l.trim().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn request() -> LaunchRequest {
        LaunchRequest {
            job_id: 42,
            start_time: 1_767_225_600,
            name: "test".into(),
            uid: 1000,
            gid: 1000,
            user_name: "alice".into(),
            script: "#!/bin/sh\necho hi\n".into(),
            argv: vec!["a".into()],
            work_dir: "/home/alice".into(),
            stdout: None,
            stderr: None,
            stdin: None,
            open_mode: None,
            environment: vec![("A".into(), "1".into())],
            cpus: 2,
            mem_mb: 100,
            node_index: 0,
            time_limit: Some(5),
            gpus: Vec::new(),
            prolog_env: Vec::new(),
        }
    }

    #[test]
    fn folder_names() {
        assert_eq!(
            job_dir(Path::new("/spool"), 42),
            PathBuf::from("/spool/job_42")
        );
        assert_eq!(parse_job_dir_name("job_42"), Some(42));
        assert_eq!(parse_job_dir_name("job_"), None);
        assert_eq!(parse_job_dir_name("job_4x"), None);
        assert_eq!(parse_job_dir_name("job_+4"), None);
        assert_eq!(parse_job_dir_name("jobs_4"), None);
        assert_eq!(parse_job_dir_name("job_99999999999"), None);
    }

    #[test]
    fn files_round_trip() {
        let t = tempfile::tempdir().unwrap();
        let d = JobDir::new(t.path());
        assert_eq!(d.read_pids().unwrap(), None);
        assert_eq!(d.read_status().unwrap(), None);

        let pids = PidsFile {
            stepd_pid: 7,
            stepd_start_ticks: 99,
            shell_pid: Some(8),
            shell_start_ticks: Some(100),
        };
        d.write_pids(&pids).unwrap();
        assert_eq!(d.read_pids().unwrap(), Some(pids));

        let status = StatusFile {
            exit_code: 3,
            signal: 0,
            start_time: 10,
            end_time: 20,
            launch_error: Some("x".into()),
            oom_kills: 1,
            usage: Some(gsched_proto::job::JobUsage {
                max_rss_bytes: Some(1 << 20),
                user_cpu_usec: Some(5),
                system_cpu_usec: None,
            }),
            prolog_error: Some("y".into()),
        };
        d.flush_status().unwrap(); // nothing to flush yet
        d.write_status(&status).unwrap();
        d.flush_status().unwrap();
        assert_eq!(d.read_status().unwrap(), Some(status));
        let gone = JobDir::new(t.path().join("gone"));
        assert!(gone.flush_status().is_ok(), "no status.json: nothing to do");

        let term = TerminateFile {
            reason: TerminateReason::TimeLimit,
            kill_wait: 30,
            requested_at: 5,
        };
        d.write_terminate(&term).unwrap();
        assert_eq!(d.read_terminate().unwrap(), Some(term));

        let launch = LaunchFile {
            request: request(),
            node: "n1".into(),
            environment: vec![("A".into(), "1".into()), ("B".into(), "2".into())],
            stdout: "/home/alice/slurm-42.out".into(),
            stderr: "/home/alice/slurm-42.out".into(),
            stdin: "/dev/null".into(),
            open_mode: OpenMode::Append,
            kill_wait: 30,
            cgroup: None,
            user: Some(ResolvedUser {
                name: "alice".into(),
                groups: vec![1000, 27],
            }),
            propagate_rlimits: vec!["CORE".into()],
            prolog: Some(crate::prolog::ScriptConf {
                pattern: "/etc/gsched/prolog.d/*".into(),
                timeout_secs: Some(60),
                serial_lock: None,
            }),
            prolog_env: vec![("SLURM_JOB_ID".into(), "42".into())],
            task_scripts: crate::task_script::TaskScripts {
                prolog: Some("/etc/gsched/task-prolog".into()),
                epilog: None,
            },
        };
        d.write_launch(&launch).unwrap();
        let back = d.read_launch().unwrap().unwrap();
        assert_eq!(
            serde_json::to_value(&back).unwrap(),
            serde_json::to_value(&launch).unwrap()
        );

        // Private files, no temporary left behind.
        let mode = std::fs::metadata(d.file(LAUNCH_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let names: Vec<String> = std::fs::read_dir(t.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
    }

    #[test]
    fn corrupt_file_names_its_path() {
        let t = tempfile::tempdir().unwrap();
        let d = JobDir::new(t.path());
        std::fs::write(d.file(STATUS_FILE), b"{not json").unwrap();
        let e = d.read_status().unwrap_err().to_string();
        assert!(e.contains("status.json is not valid"), "{e}");
    }

    #[test]
    fn last_log_line() {
        let t = tempfile::tempdir().unwrap();
        let d = JobDir::new(t.path());
        assert_eq!(d.last_log_line(), None);
        std::fs::write(d.file(STEPD_LOG), "one\ntwo\n\n").unwrap();
        assert_eq!(d.last_log_line().as_deref(), Some("two"));
    }

    #[test]
    fn remove_deletes_the_known_files_and_anything_else() {
        let t = tempfile::tempdir().unwrap();
        let d = JobDir::new(t.path().join("job_7"));
        std::fs::create_dir(d.path()).unwrap();
        d.write_status(&StatusFile {
            exit_code: 0,
            signal: 0,
            start_time: 1,
            end_time: 2,
            launch_error: None,
            oom_kills: 0,
            usage: None,
            prolog_error: None,
        })
        .unwrap();
        std::fs::write(d.file(STEPD_LOG), "").unwrap();
        d.remove().unwrap();
        assert!(!d.path().exists());
        // A file it does not know of (a crash's temporary file) does not keep the folder.
        std::fs::create_dir(d.path()).unwrap();
        std::fs::write(d.file(SCRIPT_FILE), "#!/bin/sh\n").unwrap();
        std::fs::write(d.file(".status.json.tmp"), "{").unwrap();
        d.remove().unwrap();
        assert!(!d.path().exists());
        // Gone already: nothing to do.
        d.remove().unwrap();
    }
}
