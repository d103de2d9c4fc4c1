//! Linux control groups for gsched jobs: what a job was allocated is what it gets (memory,
//! cores, devices, processes), every process it starts can be found and killed, and what it
//! used can be read when it ends.
//!
//! Why a layer of our own rather than `cgroups-rs`: that crate hard-codes v2's mount point
//! (so a v2 tree at another place, like a hybrid host's `/sys/fs/cgroup/unified`, cannot be
//! used) and pulls ~90 crates (zbus, an old nix). Everything here is plain file reads and
//! writes in a cgroup file system, which is also what makes it testable against a fake tree
//! in a temporary folder.
//!
//! Plugins, chosen by `CgroupPlugin=` in `cgroup.conf` (see [`detect`]):
//! * `cgroup/v1` ([`v1::V1`]): one hierarchy per controller under the mount point
//!   (`memory/`, `cpuset/`, `cpu/`, `cpuacct/`, `devices/`, `freezer/`, `pids/`);
//! * `cgroup/v2` ([`v2::V2`]): the unified tree at the mount point;
//! * `autodetect`: v2 when the mount point holds `cgroup.controllers`, else v1;
//! * [`fake::Fake`]: an in-memory recorder for tests of the code that drives cgroups.
//!
//! Layout (both versions): `<mount>[/<controller>]/<CgroupSubdir>/job_<id>/step_<name>`. The
//! job's limits are set on `job_<id>`; processes live in its steps (`step_batch`), because v2
//! allows processes only in leaves. gsnoded creates the cgroups at launch, gsstepd's child
//! joins the step's before it drops root and execs, and gsstepd (or gsnoded, if gsstepd is
//! gone) kills what is left, reads the OOM counter and the usage, and removes them.

pub mod bpf;
pub mod fake;
mod fsutil;
pub mod v1;
pub mod v2;

use gsched_proto::cgroup_conf::{CgroupConf, CgroupPlugin};
use gsched_proto::job::{JobId, JobUsage};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use gsched_proto::units::{format_cpu_list, parse_cpu_list};

/// Names accepted by `CgroupPlugin=`.
pub const VALID_NAMES: &[&str] = &["autodetect", "cgroup/v1", "cgroup/v2", "disabled"];

/// The step every batch job has.
pub const BATCH_STEP: &str = "batch";

/// A cgroup problem; the message names the file and says what to check.
#[derive(Debug, thiserror::Error)]
pub enum CgroupError {
    #[error("cannot {op} {}: {source}", path.display())]
    Io {
        op: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0}")]
    Unsupported(String),
    #[error("no cgroup file system at {}: {why} (check CgroupMountpoint= in cgroup.conf, or CgroupPlugin=)", path.display())]
    NoMount { path: PathBuf, why: String },
}

impl CgroupError {
    pub(crate) fn io(op: &'static str, path: &Path, source: std::io::Error) -> CgroupError {
        CgroupError::Io {
            op,
            path: path.to_path_buf(),
            source,
        }
    }
}

/// The cgroup version of a tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Version {
    V1,
    V2,
}

impl Version {
    pub fn plugin_name(self) -> &'static str {
        match self {
            Version::V1 => "cgroup/v1",
            Version::V2 => "cgroup/v2",
        }
    }
}

/// Where a node's job cgroups live. Serializable, so gsnoded can hand it to gsstepd in the
/// job folder, and both open the same tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CgroupHandle {
    pub version: Version,
    /// The mount point (v2) or the folder holding one mount per controller (v1).
    pub mount: PathBuf,
    /// The folder under each hierarchy that holds `job_<id>` (`CgroupSubdir`, expanded).
    pub subdir: String,
}

impl CgroupHandle {
    /// The implementation for this tree.
    pub fn open(&self) -> Box<dyn Cgroups> {
        match self.version {
            Version::V1 => Box::new(v1::V1::new(self.clone())),
            Version::V2 => Box::new(v2::V2::new(self.clone())),
        }
    }
}

/// One device rule (`c 195:0 rwm`), for the devices controller.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceRule {
    /// `c` or `b`.
    pub kind: char,
    pub major: u32,
    /// `None`: every minor number (`*`).
    pub minor: Option<u32>,
    /// Some of `r`, `w`, `m`.
    pub access: String,
}

impl fmt::Display for DeviceRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.minor {
            Some(m) => write!(f, "{} {}:{m} {}", self.kind, self.major, self.access),
            None => write!(f, "{} {}:* {}", self.kind, self.major, self.access),
        }
    }
}

/// What a job's cgroup enforces; `None` leaves a setting alone.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JobLimits {
    /// RAM limit, bytes (`memory.limit_in_bytes` / `memory.max`).
    pub memory_bytes: Option<u64>,
    /// RAM plus swap, bytes (`memory.memsw.limit_in_bytes`; on v2 `memory.swap.max` gets
    /// the part above `memory_bytes`).
    pub memory_swap_bytes: Option<u64>,
    /// `memory.swappiness` (v1 only; v2 has no per-cgroup swappiness).
    pub swappiness: Option<u64>,
    /// The cores the job may run on (`cpuset.cpus`).
    pub cpus: Option<Vec<u32>>,
    /// Relative CPU weight, in CPUs allocated: `cpu.shares` = 1024 × n on v1,
    /// `cpu.weight` = 100 × n on v2.
    pub cpu_weight: Option<u32>,
    /// `pids.max`.
    pub pids_max: Option<u64>,
    /// Devices the job may not use (`devices.deny`); `Some(empty)` constrains nothing yet.
    pub denied_devices: Option<Vec<DeviceRule>>,
}

/// The operations gsnoded and gsstepd need on a node's job cgroups.
pub trait Cgroups: Send + Sync + fmt::Debug {
    /// `cgroup/v1`, `cgroup/v2`, ...
    fn name(&self) -> &'static str;

    /// Checks the tree at start-up and creates the `CgroupSubdir` folders: fails when a
    /// controller that `limits_wanted` needs is not available, naming it.
    fn prepare(&self, wanted: &Wanted) -> Result<(), CgroupError>;

    /// Creates `job_<id>` with its limits (an existing one is reused and its limits rewritten).
    fn create_job(&self, job: JobId, limits: &JobLimits) -> Result<(), CgroupError>;

    /// Creates `job_<id>/step_<step>` and returns the `cgroup.procs` files a process writes
    /// `0` into to join the step.
    fn create_step(&self, job: JobId, step: &str) -> Result<Vec<PathBuf>, CgroupError>;

    /// Every process in the job's cgroups.
    fn pids(&self, job: JobId) -> Vec<i32>;

    /// Kills every process of the job (`cgroup.kill` on v2; freeze, SIGKILL, thaw, repeat
    /// on v1) and waits until none is left or `limit` passed. Returns how many were killed.
    fn kill(&self, job: JobId, limit: Duration) -> Result<usize, CgroupError>;

    /// Freezes (`true`) or thaws the job.
    fn freeze(&self, job: JobId, frozen: bool) -> Result<(), CgroupError>;

    /// How many processes of the job the OOM killer ended.
    fn oom_kills(&self, job: JobId) -> u64;

    /// Peak memory and CPU time of the job.
    fn usage(&self, job: JobId) -> JobUsage;

    /// Memory the job uses now, bytes (`memory.usage_in_bytes` on v1, `memory.current` on
    /// v2); `None` without a memory controller. Read for the heartbeats' live usage.
    fn memory_current(&self, job: JobId) -> Option<u64>;

    /// Removes the job's cgroups (they must be empty); a job without cgroups is fine.
    fn remove_job(&self, job: JobId) -> Result<(), CgroupError>;

    /// The jobs that have a cgroup under `CgroupSubdir` (to remove stale ones).
    fn jobs(&self) -> Vec<JobId>;
}

/// Which controllers the configuration needs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Wanted {
    pub memory: bool,
    /// RAM + swap limits (v1 needs swap accounting: `memory.memsw.*`).
    pub swap: bool,
    pub cpuset: bool,
    pub devices: bool,
    pub pids: bool,
}

impl Wanted {
    pub fn from_conf(conf: &CgroupConf) -> Wanted {
        Wanted {
            memory: conf.constrain_ram_space || conf.constrain_swap_space,
            swap: conf.constrain_swap_space,
            cpuset: conf.constrain_cores,
            devices: conf.constrain_devices,
            pids: conf.pids_limit.is_some(),
        }
    }
}

/// The version of the tree at `mount`: v2 when it holds `cgroup.controllers`, v1 when it
/// holds per-controller hierarchies.
pub fn detect_version(mount: &Path) -> Result<Version, CgroupError> {
    if mount.join("cgroup.controllers").is_file() {
        return Ok(Version::V2);
    }
    let v1 = v1::CONTROLLERS
        .iter()
        .any(|c| mount.join(c).join("cgroup.procs").is_file());
    if v1 {
        return Ok(Version::V1);
    }
    Err(CgroupError::NoMount {
        path: mount.to_path_buf(),
        why: if mount.is_dir() {
            "neither a cgroup2 file system (no cgroup.controllers) nor a folder of v1 hierarchies"
                .to_string()
        } else {
            "no such folder".to_string()
        },
    })
}

/// The cgroups of node `node` as `cgroup.conf` asks: `Ok(None)` for `CgroupPlugin=disabled`.
/// Checks the tree and prepares `CgroupSubdir`, so a bad setting fails at start-up.
pub fn detect(conf: &CgroupConf, node: &str) -> Result<Option<CgroupHandle>, CgroupError> {
    let version = match conf.plugin {
        CgroupPlugin::Disabled => return Ok(None),
        CgroupPlugin::V1 => Version::V1,
        CgroupPlugin::V2 => Version::V2,
        CgroupPlugin::Autodetect => detect_version(&conf.mountpoint)?,
    };
    let found = detect_version(&conf.mountpoint)?;
    if found != version {
        return Err(CgroupError::NoMount {
            path: conf.mountpoint.clone(),
            why: format!(
                "CgroupPlugin={} but the tree there is {}",
                version.plugin_name(),
                found.plugin_name()
            ),
        });
    }
    let handle = CgroupHandle {
        version,
        mount: conf.mountpoint.clone(),
        subdir: conf.subdir_for(node),
    };
    handle.open().prepare(&Wanted::from_conf(conf))?;
    Ok(Some(handle))
}

/// The folder name of a job.
pub fn job_dir_name(job: JobId) -> String {
    format!("job_{job}")
}

/// The job of a folder name (`job_42` → 42).
pub fn parse_job_dir_name(name: &str) -> Option<JobId> {
    let d = name.strip_prefix("job_")?;
    if d.is_empty() || !d.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    d.parse().ok()
}

/// Slurm's line for a step whose tasks the OOM killer ended, with gsstepd's name in front:
/// `gsstepd: error: Detected 1 oom_kill event in StepId=5.batch. Some of the step tasks have been OOM Killed.`
pub fn oom_message(job: JobId, step: &str, kills: u64) -> String {
    format!(
        "gsstepd: error: Detected {kills} oom_kill event{} in StepId={job}.{step}. Some of the step tasks have been OOM Killed.",
        if kills == 1 { "" } else { "s" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_messages() {
        assert_eq!(job_dir_name(7), "job_7");
        assert_eq!(parse_job_dir_name("job_7"), Some(7));
        assert_eq!(parse_job_dir_name("job_x"), None);
        assert_eq!(parse_job_dir_name("step_batch"), None);
        assert_eq!(
            oom_message(5, "batch", 1),
            "gsstepd: error: Detected 1 oom_kill event in StepId=5.batch. Some of the step tasks have been OOM Killed."
        );
        assert!(oom_message(5, "batch", 2).contains("2 oom_kill events"));
        let r = DeviceRule {
            kind: 'c',
            major: 195,
            minor: None,
            access: "rwm".into(),
        };
        assert_eq!(r.to_string(), "c 195:* rwm");
    }

    #[test]
    fn version_detection_by_layout() {
        let t = tempfile::tempdir().unwrap();
        assert!(detect_version(&t.path().join("nope")).is_err());
        let e = detect_version(t.path()).unwrap_err().to_string();
        assert!(e.contains("check CgroupMountpoint="), "{e}");
        std::fs::create_dir(t.path().join("memory")).unwrap();
        std::fs::write(t.path().join("memory/cgroup.procs"), "").unwrap();
        assert_eq!(detect_version(t.path()).unwrap(), Version::V1);
        std::fs::write(t.path().join("cgroup.controllers"), "").unwrap();
        assert_eq!(detect_version(t.path()).unwrap(), Version::V2);
    }

    #[test]
    fn detect_checks_the_plugin_against_the_tree() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("cgroup.controllers"), "cpu memory\n").unwrap();
        std::fs::write(t.path().join("cgroup.subtree_control"), "").unwrap();
        let mut conf = CgroupConf::defaults(Path::new("/x/cgroup.conf"));
        conf.mountpoint = t.path().to_path_buf();
        conf.subdir = "gs_%n".into();
        let h = detect(&conf, "n1").unwrap().unwrap();
        assert_eq!(h.version, Version::V2);
        assert_eq!(h.subdir, "gs_n1");
        assert!(t.path().join("gs_n1").is_dir());
        conf.plugin = CgroupPlugin::V1;
        let e = detect(&conf, "n1").unwrap_err().to_string();
        assert!(
            e.contains("CgroupPlugin=cgroup/v1 but the tree there is cgroup/v2"),
            "{e}"
        );
        conf.plugin = CgroupPlugin::Disabled;
        assert_eq!(detect(&conf, "n1").unwrap(), None);
    }
}
