//! `cgroup.conf`: how gsnoded confines jobs with Linux control groups, in Slurm's
//! `cgroup.conf` syntax and with Slurm's keys, read from the file beside `gsched.conf`.
//!
//! Why a separate file: sites keep their Slurm `cgroup.conf`, and Slurm reads it from the
//! directory of `slurm.conf`. When the file is absent gsnoded does not use cgroups at all
//! (jobs are tracked as a child subreaper's descendants and nothing is confined), as Slurm
//! does without `proctrack/cgroup` and `task/cgroup`; a file that is present is read strictly:
//! a typo is an error, a Slurm key gsched does not implement gets one warning.

use crate::config::{io_reason, logical_lines, parse_bool, parse_u64, tokenize, Line};
use std::collections::HashSet;
use std::fmt;
use std::path::{Path, PathBuf};

/// The file name, looked up in the directory of `gsched.conf`.
pub const CGROUP_CONF: &str = "cgroup.conf";

/// Keys gsched implements (the man page `cgroup.conf(5)` documents exactly these).
pub const CGROUP_KEYS: &[&str] = &[
    "CgroupPlugin",
    "CgroupMountpoint",
    "ConstrainCores",
    "ConstrainDevices",
    "ConstrainRAMSpace",
    "ConstrainSwapSpace",
    "AllowedRAMSpace",
    "AllowedSwapSpace",
    "MaxRAMPercent",
    "MaxSwapPercent",
    "MinRAMSpace",
    "MemorySwappiness",
    "CgroupSubdir",
    "PidsLimit",
];

/// Slurm `cgroup.conf` keys gsched accepts without using them (one warning each).
pub const IGNORED_CGROUP_KEYS: &[&str] = &[
    "CgroupAutomount",
    "CgroupReleaseAgentDir",
    "EnableControllers",
    "IgnoreSystemd",
    "IgnoreSystemdOnFailure",
    "SignalChildrenProcesses",
    "SystemdTimeout",
    "AllowedKmemSpace",
    "ConstrainKmemSpace",
    "MaxKmemPercent",
    "MinKmemSpace",
    "TaskAffinity",
];

/// `CgroupPlugin=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CgroupPlugin {
    /// `autodetect` (Slurm's default): v2 when the mount point is a cgroup2 file system,
    /// else v1.
    Autodetect,
    V1,
    V2,
    /// `disabled`: no cgroups (Slurm 23.11+).
    Disabled,
}

impl CgroupPlugin {
    pub const VALID: &'static str = "autodetect, cgroup/v1, cgroup/v2, disabled";

    pub fn parse(v: &str) -> Option<CgroupPlugin> {
        Some(match v.to_ascii_lowercase().as_str() {
            "autodetect" => CgroupPlugin::Autodetect,
            "cgroup/v1" => CgroupPlugin::V1,
            "cgroup/v2" => CgroupPlugin::V2,
            "disabled" => CgroupPlugin::Disabled,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            CgroupPlugin::Autodetect => "autodetect",
            CgroupPlugin::V1 => "cgroup/v1",
            CgroupPlugin::V2 => "cgroup/v2",
            CgroupPlugin::Disabled => "disabled",
        }
    }
}

impl fmt::Display for CgroupPlugin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The parsed `cgroup.conf`; defaults are Slurm's.
#[derive(Debug, Clone, PartialEq)]
pub struct CgroupConf {
    pub path: PathBuf,
    pub plugin: CgroupPlugin,
    /// `CgroupMountpoint=`, default `/sys/fs/cgroup`.
    pub mountpoint: PathBuf,
    pub constrain_cores: bool,
    pub constrain_devices: bool,
    pub constrain_ram_space: bool,
    pub constrain_swap_space: bool,
    /// Percent of the job's memory allocation it may use (default 100).
    pub allowed_ram_space: f64,
    /// Percent of the allocation it may use in swap on top of RAM (default 0).
    pub allowed_swap_space: f64,
    /// Upper bound of a job's RAM limit, percent of the node's RealMemory (default 100).
    pub max_ram_percent: f64,
    /// Upper bound of the swap limit, percent of RealMemory (default 100).
    pub max_swap_percent: f64,
    /// Lower bound of a job's RAM limit, MiB (default 30).
    pub min_ram_space_mb: u64,
    /// `MemorySwappiness=` 0..=100, unset by default (the kernel's value is kept).
    pub memory_swappiness: Option<u64>,
    /// gsched: the folder under each hierarchy that holds the jobs' cgroups (default
    /// `gsched`; `%n` is the node name, needed when several gsnoded share one host).
    pub subdir: String,
    /// gsched: `pids.max` of each job (no limit by default).
    pub pids_limit: Option<u64>,
    pub warnings: Vec<String>,
}

impl CgroupConf {
    pub fn defaults(path: &Path) -> CgroupConf {
        CgroupConf {
            path: path.to_path_buf(),
            plugin: CgroupPlugin::Autodetect,
            mountpoint: PathBuf::from("/sys/fs/cgroup"),
            constrain_cores: false,
            constrain_devices: false,
            constrain_ram_space: false,
            constrain_swap_space: false,
            allowed_ram_space: 100.0,
            allowed_swap_space: 0.0,
            max_ram_percent: 100.0,
            max_swap_percent: 100.0,
            min_ram_space_mb: 30,
            memory_swappiness: None,
            subdir: "gsched".to_string(),
            pids_limit: None,
            warnings: Vec::new(),
        }
    }

    /// The `cgroup.conf` beside `gsched_conf`: `Ok(None)` when there is none.
    pub fn load_beside(gsched_conf: &Path) -> Result<Option<CgroupConf>, CgroupConfError> {
        match crate::config::read_beside(gsched_conf, CGROUP_CONF) {
            Ok(Some((path, text))) => CgroupConf::parse(&text, &path).map(Some),
            Ok(None) => Ok(None),
            Err((path, e)) => Err(CgroupConfError::Read {
                reason: io_reason(&e),
                path,
            }),
        }
    }

    pub fn parse(text: &str, path: &Path) -> Result<CgroupConf, CgroupConfError> {
        let mut c = CgroupConf::defaults(path);
        let mut warned = HashSet::new();
        for (line, content) in logical_lines(text) {
            if content.trim().is_empty() {
                continue;
            }
            let err = |message: String| CgroupConfError::Line {
                path: path.to_path_buf(),
                line,
                message,
            };
            let pairs = match tokenize(&content).map_err(&err)? {
                Line::Include(_) => {
                    return Err(err(
                        "Include is not supported in cgroup.conf; write the settings here".into(),
                    ))
                }
                Line::Pairs(p) => p,
            };
            for (key, value) in pairs {
                if let Some(k) = IGNORED_CGROUP_KEYS
                    .iter()
                    .find(|k| k.eq_ignore_ascii_case(&key))
                {
                    if warned.insert(*k) {
                        c.warnings.push(format!(
                            "{}:{line}: {k} is a Slurm setting gsched does not use; ignored",
                            path.display()
                        ));
                    }
                    continue;
                }
                let Some(k) = CGROUP_KEYS.iter().find(|k| k.eq_ignore_ascii_case(&key)) else {
                    return Err(err(format!(
                        "unknown key {key}; valid keys: {}",
                        CGROUP_KEYS.join(", ")
                    )));
                };
                let bad = |m: String| err(format!("{k}: {m}"));
                match *k {
                    "CgroupPlugin" => {
                        c.plugin = CgroupPlugin::parse(&value).ok_or_else(|| {
                            bad(format!(
                                "unknown plugin \"{value}\"; valid names: {}",
                                CgroupPlugin::VALID
                            ))
                        })?
                    }
                    "CgroupMountpoint" => {
                        if !value.starts_with('/') {
                            return Err(bad(format!("\"{value}\" is not an absolute path")));
                        }
                        c.mountpoint = PathBuf::from(value);
                    }
                    "ConstrainCores" => c.constrain_cores = parse_bool(&value).map_err(bad)?,
                    "ConstrainDevices" => c.constrain_devices = parse_bool(&value).map_err(bad)?,
                    "ConstrainRAMSpace" => {
                        c.constrain_ram_space = parse_bool(&value).map_err(bad)?
                    }
                    "ConstrainSwapSpace" => {
                        c.constrain_swap_space = parse_bool(&value).map_err(bad)?
                    }
                    "AllowedRAMSpace" => {
                        c.allowed_ram_space = percent(&value, false).map_err(bad)?
                    }
                    "AllowedSwapSpace" => {
                        c.allowed_swap_space = percent(&value, false).map_err(bad)?
                    }
                    "MaxRAMPercent" => c.max_ram_percent = percent(&value, true).map_err(bad)?,
                    "MaxSwapPercent" => c.max_swap_percent = percent(&value, true).map_err(bad)?,
                    "MinRAMSpace" => c.min_ram_space_mb = parse_u64(&value).map_err(bad)?,
                    "MemorySwappiness" => {
                        let v = parse_u64(&value).map_err(bad)?;
                        if v > 100 {
                            return Err(bad(format!(
                                "invalid value \"{value}\" (expected 0 to 100)"
                            )));
                        }
                        c.memory_swappiness = Some(v);
                    }
                    "CgroupSubdir" => {
                        let ok = !value.is_empty()
                            && !value.starts_with('/')
                            && value
                                .split('/')
                                .all(|p| !p.is_empty() && p != "." && p != "..");
                        if !ok {
                            return Err(bad(format!(
                                "\"{value}\" is not a relative folder name (like gsched or gsched_%n)"
                            )));
                        }
                        c.subdir = value;
                    }
                    "PidsLimit" => {
                        let v = parse_u64(&value).map_err(bad)?;
                        if v == 0 {
                            return Err(bad("must be at least 1".into()));
                        }
                        c.pids_limit = Some(v);
                    }
                    _ => unreachable!("every key of CGROUP_KEYS is matched"),
                }
            }
        }
        Ok(c)
    }

    /// `CgroupSubdir` for one node (`%n` and `%h` replaced by the node name).
    pub fn subdir_for(&self, node: &str) -> String {
        self.subdir.replace("%n", node).replace("%h", node)
    }

    /// The RAM limit (bytes) of a job allocated `alloc_mb` MiB on a node of `real_mb` MiB:
    /// `AllowedRAMSpace` percent of the allocation, at most `MaxRAMPercent` of the node, at
    /// least `MinRAMSpace`, as Slurm computes it.
    pub fn ram_limit_bytes(&self, alloc_mb: u64, real_mb: u64) -> u64 {
        let mib = 1024.0 * 1024.0;
        let alloc = if alloc_mb == 0 { real_mb } else { alloc_mb } as f64;
        let mut limit = alloc * self.allowed_ram_space / 100.0;
        if real_mb > 0 {
            limit = limit.min(real_mb as f64 * self.max_ram_percent / 100.0);
        }
        let limit = limit.max(self.min_ram_space_mb as f64);
        (limit * mib) as u64
    }

    /// The swap a job may use on top of its RAM limit (bytes).
    pub fn swap_limit_bytes(&self, alloc_mb: u64, real_mb: u64) -> u64 {
        let mib = 1024.0 * 1024.0;
        let alloc = if alloc_mb == 0 { real_mb } else { alloc_mb } as f64;
        let mut limit = alloc * self.allowed_swap_space / 100.0;
        if real_mb > 0 {
            limit = limit.min(real_mb as f64 * self.max_swap_percent / 100.0);
        }
        (limit * mib) as u64
    }
}

fn percent(v: &str, cap: bool) -> Result<f64, String> {
    let p: f64 = v
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("invalid value \"{v}\" (expected a percentage)"))?;
    if !p.is_finite() || p < 0.0 || (cap && p > 100.0) {
        return Err(format!(
            "invalid value \"{v}\" (expected a percentage from 0{})",
            if cap { " to 100" } else { "" }
        ));
    }
    Ok(p)
}

#[derive(Debug, thiserror::Error)]
pub enum CgroupConfError {
    #[error("cannot read {}: {reason}", path.display())]
    Read { path: PathBuf, reason: String },
    #[error("{}:{line}: {message}", path.display())]
    Line {
        path: PathBuf,
        line: usize,
        message: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(t: &str) -> Result<CgroupConf, String> {
        CgroupConf::parse(t, Path::new("/etc/gsched/cgroup.conf")).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_are_slurms() {
        let c = parse("").unwrap();
        assert_eq!(c.plugin, CgroupPlugin::Autodetect);
        assert_eq!(c.mountpoint, PathBuf::from("/sys/fs/cgroup"));
        assert!(!c.constrain_ram_space && !c.constrain_cores && !c.constrain_devices);
        assert_eq!(c.allowed_ram_space, 100.0);
        assert_eq!(c.allowed_swap_space, 0.0);
        assert_eq!(c.min_ram_space_mb, 30);
        assert_eq!(c.subdir_for("n1"), "gsched");
    }

    #[test]
    fn keys_values_and_errors() {
        let c = parse(
            "# site settings\nCgroupPlugin=cgroup/v1\ncgroupmountpoint=/mnt/cg\n\
             ConstrainRAMSpace=yes ConstrainCores=YES\nAllowedRAMSpace=110 AllowedSwapSpace=10\n\
             MemorySwappiness=0\nCgroupSubdir=gsched_%n\nPidsLimit=64\nIgnoreSystemd=yes\n",
        )
        .unwrap();
        assert_eq!(c.plugin, CgroupPlugin::V1);
        assert_eq!(c.mountpoint, PathBuf::from("/mnt/cg"));
        assert!(c.constrain_ram_space && c.constrain_cores);
        assert_eq!(c.memory_swappiness, Some(0));
        assert_eq!(c.subdir_for("n2"), "gsched_n2");
        assert_eq!(c.pids_limit, Some(64));
        assert_eq!(c.warnings.len(), 1, "{:?}", c.warnings);
        assert!(c.warnings[0].contains("IgnoreSystemd"), "{:?}", c.warnings);

        let e = parse("CgroupPlugin=cgroup/v3\n").unwrap_err();
        assert!(e.contains(":1: CgroupPlugin: unknown plugin \"cgroup/v3\"; valid names: autodetect, cgroup/v1, cgroup/v2, disabled"), "{e}");
        let e = parse("\nConstrainRamSpace=perhaps\n").unwrap_err();
        assert!(
            e.contains(":2: ConstrainRAMSpace: invalid value \"perhaps\""),
            "{e}"
        );
        let e = parse("ConstrainRAM=yes\n").unwrap_err();
        assert!(
            e.contains("unknown key ConstrainRAM; valid keys: CgroupPlugin"),
            "{e}"
        );
        assert!(parse("MemorySwappiness=101").is_err());
        assert!(parse("MaxRAMPercent=120").is_err());
        assert!(parse("CgroupMountpoint=relative").is_err());
        assert!(parse("CgroupSubdir=../up").is_err());
        assert!(parse("PidsLimit=0").is_err());
    }

    #[test]
    fn limits_follow_slurms_arithmetic() {
        let mut c = parse("").unwrap();
        assert_eq!(c.ram_limit_bytes(100, 1000), 100 << 20);
        c.allowed_ram_space = 150.0;
        assert_eq!(c.ram_limit_bytes(100, 1000), 150 << 20);
        c.max_ram_percent = 10.0;
        assert_eq!(c.ram_limit_bytes(500, 1000), 100 << 20);
        // MinRAMSpace is the floor.
        assert_eq!(c.ram_limit_bytes(1, 1000), 30 << 20);
        // No --mem: the whole node.
        let c = parse("").unwrap();
        assert_eq!(c.ram_limit_bytes(0, 1000), 1000 << 20);
        assert_eq!(c.swap_limit_bytes(100, 1000), 0);
        let c = parse("AllowedSwapSpace=50").unwrap();
        assert_eq!(c.swap_limit_bytes(100, 1000), 50 << 20);
    }

    #[test]
    fn missing_file_means_no_cgroups() {
        let t = tempfile::tempdir().unwrap();
        let conf = t.path().join("gsched.conf");
        assert_eq!(CgroupConf::load_beside(&conf).unwrap(), None);
        std::fs::write(t.path().join(CGROUP_CONF), "ConstrainCores=yes\n").unwrap();
        let c = CgroupConf::load_beside(&conf).unwrap().unwrap();
        assert!(c.constrain_cores);
    }
}
