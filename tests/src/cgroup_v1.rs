//! Cgroup v1 helpers of the integration tests that give jobs cgroups: whether the v1
//! controllers are mounted (and the tests run as root), and a `CgroupSubdir` of one test
//! that is removed, with whatever is left in it, when the test ends.

use crate::is_root;
use std::path::{Path, PathBuf};

/// Where the v1 hierarchies are mounted.
pub const V1_ROOT: &str = "/sys/fs/cgroup";

/// Why a test that needs the v1 `controllers` must skip here, if it must.
pub fn v1_missing(controllers: &[&str]) -> Option<String> {
    if !is_root() {
        return Some("skipping: cgroup tests need root".into());
    }
    for c in controllers {
        if !Path::new(V1_ROOT).join(c).join("cgroup.procs").is_file() {
            return Some(format!(
                "skipping: the cgroup v1 {c} controller is not mounted at {V1_ROOT}/{c}"
            ));
        }
    }
    None
}

/// A `CgroupSubdir` of this test only, and a guard that removes it (and kills what is left
/// in it) when the test ends, whatever happened.
pub struct Subdir {
    pub name: String,
    roots: Vec<PathBuf>,
}

impl Subdir {
    pub fn new(tag: &str, roots: Vec<PathBuf>) -> Subdir {
        Subdir {
            name: format!("gsched-it-{tag}-{}", std::process::id()),
            roots,
        }
    }

    /// The folder of job `id` on node `n1` under `root`.
    pub fn job(&self, root: &Path, id: u32) -> PathBuf {
        root.join(format!("{}_n1", self.name))
            .join(format!("job_{id}"))
    }
}

impl Drop for Subdir {
    fn drop(&mut self) {
        for r in &self.roots {
            if let Ok(rd) = std::fs::read_dir(r) {
                for e in rd.flatten() {
                    let name = e.file_name().to_string_lossy().into_owned();
                    if name.starts_with(&self.name) {
                        remove_tree(&e.path());
                    }
                }
            }
        }
    }
}

/// Removes a cgroup folder and those below it, killing the processes left in them.
pub fn remove_tree(dir: &Path) {
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                remove_tree(&e.path());
            }
        }
    }
    if let Ok(p) = std::fs::read_to_string(dir.join("cgroup.procs")) {
        for pid in p.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
    let _ = std::fs::remove_dir(dir);
}

/// The v1 hierarchies gsched uses.
pub fn v1_roots() -> Vec<PathBuf> {
    [
        "cpuset", "memory", "cpu", "cpuacct", "devices", "freezer", "pids",
    ]
    .iter()
    .map(|c| Path::new(V1_ROOT).join(c))
    .collect()
}
