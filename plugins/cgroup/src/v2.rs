//! `cgroup/v2`: the unified tree at the mount point (which need not be `/sys/fs/cgroup`: a
//! hybrid host has it at `/sys/fs/cgroup/unified`, tests may mount one anywhere).
//!
//! Controllers are enabled down the path with `cgroup.subtree_control`; only those the
//! configuration needs are asked for, and start-up fails when the root does not offer them.
//! Processes live only in leaves (`step_*`), as v2 requires. Killing is `cgroup.kill`
//! (Linux 5.14+; else freeze, SIGKILL, repeat), freezing is `cgroup.freeze`, OOM kills are
//! the `oom_kill` of the job's `memory.events` (hierarchical), the peak is `memory.peak`
//! (the live figure `memory.current`), CPU time is `cpu.stat` (always present). Device
//! rules are an eBPF program attached to the job's cgroup ([`crate::bpf`]).

use crate::fsutil;
use crate::{
    job_dir_name, parse_job_dir_name, CgroupError, CgroupHandle, Cgroups, JobLimits, Wanted,
};
use gsched_proto::job::{JobId, JobUsage};
use gsched_proto::units::format_cpu_list;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub struct V2 {
    handle: CgroupHandle,
}

impl V2 {
    pub fn new(handle: CgroupHandle) -> V2 {
        V2 { handle }
    }

    fn base(&self) -> PathBuf {
        self.handle.mount.join(&self.handle.subdir)
    }

    fn job_path(&self, job: JobId) -> PathBuf {
        self.base().join(job_dir_name(job))
    }

    /// Controllers the root offers (`cgroup.controllers`).
    fn available(&self) -> Vec<String> {
        fsutil::read(&self.handle.mount.join("cgroup.controllers"))
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_string)
            .collect()
    }

    /// Of `want`, those the root offers.
    fn usable(&self, want: &[&str]) -> Vec<String> {
        let avail = self.available();
        want.iter()
            .filter(|c| avail.iter().any(|a| a == *c))
            .map(|c| c.to_string())
            .collect()
    }

    /// Creates every folder from the mount to `dir`, enabling the usable controllers in each
    /// parent's `cgroup.subtree_control` first.
    fn make_path(&self, dir: &Path) -> Result<(), CgroupError> {
        let enable: Vec<String> = self
            .usable(&["cpuset", "cpu", "memory", "pids"])
            .iter()
            .map(|c| format!("+{c}"))
            .collect();
        let rel = dir.strip_prefix(&self.handle.mount).unwrap_or(dir);
        let mut cur = self.handle.mount.clone();
        for part in rel.components() {
            if !enable.is_empty() {
                let sc = cur.join("cgroup.subtree_control");
                let have = fsutil::read(&sc).unwrap_or_default();
                let missing: Vec<&String> = enable
                    .iter()
                    .filter(|e| !have.split_whitespace().any(|h| h == &e[1..]))
                    .collect();
                if !missing.is_empty() {
                    let line = missing
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(" ");
                    fsutil::write(&sc, &line)?;
                }
            }
            cur.push(part);
            fsutil::mkdir(&cur)?;
        }
        Ok(())
    }
}

impl Cgroups for V2 {
    fn name(&self) -> &'static str {
        "cgroup/v2"
    }

    fn prepare(&self, wanted: &Wanted) -> Result<(), CgroupError> {
        let avail = self.available();
        let need = [
            (
                "memory",
                wanted.memory,
                "ConstrainRAMSpace/ConstrainSwapSpace",
            ),
            ("cpuset", wanted.cpuset, "ConstrainCores"),
            ("pids", wanted.pids, "PidsLimit"),
        ];
        for (c, on, key) in need {
            if on && !avail.iter().any(|a| a == c) {
                return Err(CgroupError::Unsupported(format!(
                    "{key}=yes needs the {c} controller, which {} does not offer (its cgroup.controllers: {:?}); enable it there or turn {key} off in cgroup.conf",
                    self.handle.mount.display(),
                    avail.join(" ")
                )));
            }
        }
        self.make_path(&self.base())
    }

    fn create_job(&self, job: JobId, limits: &JobLimits) -> Result<(), CgroupError> {
        let dir = self.job_path(job);
        self.make_path(&dir)?;
        let set = |file: &str, v: String| fsutil::write(&dir.join(file), &v);
        if let Some(ram) = limits.memory_bytes {
            set("memory.max", ram.to_string())?;
        }
        if let Some(total) = limits.memory_swap_bytes {
            let ram = limits.memory_bytes.unwrap_or(total);
            set("memory.swap.max", total.saturating_sub(ram).to_string())?;
        }
        // v2 has no per-cgroup swappiness; Slurm ignores MemorySwappiness there too.
        if let Some(cpus) = &limits.cpus {
            set("cpuset.cpus", format_cpu_list(cpus))?;
        }
        if let Some(n) = limits.cpu_weight {
            if self.usable(&["cpu"]).is_empty() {
                // Without the cpu controller there is no weight to set; cores still bound.
            } else {
                set(
                    "cpu.weight",
                    (100 * u64::from(n.max(1))).min(10_000).to_string(),
                )?;
            }
        }
        if let Some(n) = limits.pids_max {
            set("pids.max", n.to_string())?;
        }
        if let Some(rules) = &limits.denied_devices {
            if !rules.is_empty() {
                crate::bpf::attach(&dir, rules).map_err(|e| {
                    CgroupError::Unsupported(format!(
                        "ConstrainDevices on cgroup/v2 denies devices with an eBPF program: {e} (gsnoded needs root; or use CgroupPlugin=cgroup/v1, or turn ConstrainDevices off)"
                    ))
                })?;
            }
        }
        Ok(())
    }

    fn create_step(&self, job: JobId, step: &str) -> Result<Vec<PathBuf>, CgroupError> {
        let dir = self.job_path(job).join(format!("step_{step}"));
        self.make_path(&dir)?;
        Ok(vec![dir.join("cgroup.procs")])
    }

    fn pids(&self, job: JobId) -> Vec<i32> {
        fsutil::procs_below(&self.job_path(job))
    }

    fn kill(&self, job: JobId, limit: Duration) -> Result<usize, CgroupError> {
        let dir = self.job_path(job);
        if !dir.is_dir() {
            return Ok(0);
        }
        let deadline = Instant::now() + limit;
        let mut killed = 0;
        let has_kill = dir.join("cgroup.kill").exists();
        loop {
            let pids = self.pids(job);
            if pids.is_empty() {
                return Ok(killed);
            }
            if has_kill {
                fsutil::write(&dir.join("cgroup.kill"), "1")?;
                killed = killed.max(pids.len());
            } else {
                let _ = fsutil::write(&dir.join("cgroup.freeze"), "1");
                for p in &pids {
                    if nix::sys::signal::kill(
                        nix::unistd::Pid::from_raw(*p),
                        nix::sys::signal::Signal::SIGKILL,
                    )
                    .is_ok()
                    {
                        killed += 1;
                    }
                }
                let _ = fsutil::write(&dir.join("cgroup.freeze"), "0");
            }
            if Instant::now() >= deadline {
                return Err(CgroupError::Unsupported(format!(
                    "processes {pids:?} of job {job} survive SIGKILL after {}s",
                    limit.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn freeze(&self, job: JobId, frozen: bool) -> Result<(), CgroupError> {
        let dir = self.job_path(job);
        fsutil::write(&dir.join("cgroup.freeze"), if frozen { "1" } else { "0" })?;
        // Wait for `frozen` in cgroup.events (a fake tree has none: done).
        let events = dir.join("cgroup.events");
        let want = if frozen { 1 } else { 0 };
        let deadline = Instant::now() + Duration::from_secs(5);
        while let Some(v) = fsutil::keyed(&events, "frozen") {
            if v == want || Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(())
    }

    fn oom_kills(&self, job: JobId) -> u64 {
        fsutil::keyed(&self.job_path(job).join("memory.events"), "oom_kill").unwrap_or(0)
    }

    fn usage(&self, job: JobId) -> JobUsage {
        let dir = self.job_path(job);
        JobUsage {
            max_rss_bytes: fsutil::read_u64(&dir.join("memory.peak")),
            user_cpu_usec: fsutil::keyed(&dir.join("cpu.stat"), "user_usec"),
            system_cpu_usec: fsutil::keyed(&dir.join("cpu.stat"), "system_usec"),
        }
    }

    fn memory_current(&self, job: JobId) -> Option<u64> {
        fsutil::read_u64(&self.job_path(job).join("memory.current"))
    }

    fn remove_job(&self, job: JobId) -> Result<(), CgroupError> {
        fsutil::remove_tree(&self.job_path(job))
    }

    fn jobs(&self) -> Vec<JobId> {
        let mut ids: Vec<JobId> = std::fs::read_dir(self.base())
            .map(|rd| {
                rd.flatten()
                    .filter_map(|e| e.file_name().to_str().and_then(parse_job_dir_name))
                    .collect()
            })
            .unwrap_or_default();
        ids.sort_unstable();
        ids
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DeviceRule, Version};

    fn fake_tree(controllers: &str) -> (tempfile::TempDir, V2) {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("cgroup.controllers"), controllers).unwrap();
        std::fs::write(t.path().join("cgroup.subtree_control"), "").unwrap();
        let v2 = V2::new(CgroupHandle {
            version: Version::V2,
            mount: t.path().to_path_buf(),
            subdir: "gsched".into(),
        });
        (t, v2)
    }

    #[test]
    fn limits_and_controllers_down_the_path() {
        let (t, v2) = fake_tree("cpuset cpu io memory hugetlb pids\n");
        v2.prepare(&Wanted {
            memory: true,
            swap: true,
            cpuset: true,
            devices: false,
            pids: true,
        })
        .unwrap();
        let read = |p: &str| std::fs::read_to_string(t.path().join(p)).unwrap();
        assert_eq!(read("cgroup.subtree_control"), "+cpuset +cpu +memory +pids");
        let limits = JobLimits {
            memory_bytes: Some(100 << 20),
            memory_swap_bytes: Some(150 << 20),
            swappiness: Some(10),
            cpus: Some(vec![0, 1]),
            cpu_weight: Some(2),
            pids_max: Some(10),
            denied_devices: Some(Vec::new()),
        };
        v2.create_job(3, &limits).unwrap();
        assert_eq!(
            read("gsched/cgroup.subtree_control"),
            "+cpuset +cpu +memory +pids"
        );
        assert_eq!(read("gsched/job_3/memory.max"), "104857600");
        assert_eq!(read("gsched/job_3/memory.swap.max"), "52428800");
        assert_eq!(read("gsched/job_3/cpuset.cpus"), "0-1");
        assert_eq!(read("gsched/job_3/cpu.weight"), "200");
        assert_eq!(read("gsched/job_3/pids.max"), "10");
        assert!(!t.path().join("gsched/job_3/memory.swappiness").exists());
        let files = v2.create_step(3, "batch").unwrap();
        assert_eq!(
            files,
            vec![t.path().join("gsched/job_3/step_batch/cgroup.procs")]
        );
        assert_eq!(
            read("gsched/job_3/cgroup.subtree_control"),
            "+cpuset +cpu +memory +pids"
        );

        let denied = JobLimits {
            denied_devices: Some(vec![DeviceRule {
                kind: 'c',
                major: 195,
                minor: None,
                access: "rwm".into(),
            }]),
            ..JobLimits::default()
        };
        // A fake tree is no cgroup: the program cannot be attached there, and says so.
        let e = v2.create_job(4, &denied).unwrap_err().to_string();
        assert!(
            e.contains("ConstrainDevices on cgroup/v2 denies devices with an eBPF program"),
            "{e}"
        );
    }

    #[test]
    fn missing_controller_fails_at_start_up() {
        // Like this machine's /sys/fs/cgroup/unified: only hugetlb.
        let (_t, v2) = fake_tree("hugetlb\n");
        let e = v2
            .prepare(&Wanted {
                memory: true,
                ..Wanted::default()
            })
            .unwrap_err()
            .to_string();
        assert!(e.contains("needs the memory controller"), "{e}");
        // Tracking only: fine, and no controller is enabled.
        v2.prepare(&Wanted::default()).unwrap();
    }

    #[test]
    fn oom_usage_freeze_and_removal() {
        let (t, v2) = fake_tree("memory\n");
        v2.prepare(&Wanted::default()).unwrap();
        v2.create_job(9, &JobLimits::default()).unwrap();
        v2.create_step(9, "batch").unwrap();
        let job = t.path().join("gsched/job_9");
        std::fs::write(
            job.join("memory.events"),
            "low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\noom_group_kill 0\n",
        )
        .unwrap();
        std::fs::write(job.join("memory.peak"), "1048576\n").unwrap();
        std::fs::write(job.join("memory.current"), "524288\n").unwrap();
        assert_eq!(v2.memory_current(9), Some(512 << 10));
        std::fs::write(
            job.join("cpu.stat"),
            "usage_usec 3000\nuser_usec 2000\nsystem_usec 1000\n",
        )
        .unwrap();
        assert_eq!(v2.oom_kills(9), 1);
        let u = v2.usage(9);
        assert_eq!(u.max_rss_bytes, Some(1 << 20));
        assert_eq!(u.total_cpu_usec(), Some(3000));
        v2.freeze(9, true).unwrap();
        assert_eq!(
            std::fs::read_to_string(job.join("cgroup.freeze")).unwrap(),
            "1"
        );
        v2.freeze(9, false).unwrap();
        assert_eq!(v2.kill(9, Duration::from_secs(1)).unwrap(), 0);
        assert_eq!(v2.jobs(), vec![9]);
        v2.remove_job(9).unwrap();
        assert!(!job.exists());
        assert!(v2.jobs().is_empty());
    }
}
