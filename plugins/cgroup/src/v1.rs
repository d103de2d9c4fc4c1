//! `cgroup/v1`: one hierarchy per controller, each mounted at `<mount>/<controller>`
//! (`cpu` and `cpuacct` may be one co-mounted hierarchy; it is used once).
//!
//! * memory: `memory.limit_in_bytes`, `memory.memsw.limit_in_bytes`, `memory.swappiness`;
//!   OOM kills from the `oom_kill` line of `memory.oom_control` (counted where the victim
//!   lived, so summed over the job's folders), peak from `memory.max_usage_in_bytes`, the
//!   live figure from `memory.usage_in_bytes`;
//! * cpuset: `cpuset.cpus` (and `cpuset.mems`, copied from the parent: a v1 cpuset starts
//!   empty and refuses tasks until both are set);
//! * cpu: `cpu.shares`; cpuacct: `cpuacct.stat` (user/system, in USER_HZ ticks);
//! * devices: `devices.deny`; pids: `pids.max`;
//! * freezer: `freezer.state`, which also makes killing race-free: freeze, SIGKILL every
//!   task, thaw, until the job's folders are empty (a frozen task cannot fork).

use crate::fsutil;
use crate::{
    job_dir_name, parse_job_dir_name, CgroupError, CgroupHandle, Cgroups, JobLimits, Wanted,
};
use gsched_proto::job::{JobId, JobUsage};
use gsched_proto::units::format_cpu_list;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The v1 controllers gsched uses, by the folder name of their hierarchy.
pub const CONTROLLERS: &[&str] = &[
    "cpuset", "memory", "cpu", "cpuacct", "devices", "freezer", "pids",
];

/// USER_HZ: the unit of `cpuacct.stat`.
const USER_HZ: u64 = 100;

#[derive(Debug, Clone)]
pub struct V1 {
    handle: CgroupHandle,
}

impl V1 {
    pub fn new(handle: CgroupHandle) -> V1 {
        V1 { handle }
    }

    /// The hierarchy of `controller`, if mounted.
    fn hierarchy(&self, controller: &str) -> Option<PathBuf> {
        let p = self.handle.mount.join(controller);
        p.join("cgroup.procs").is_file().then_some(p)
    }

    /// Every mounted hierarchy gsched uses, each once (co-mounted ones share a folder).
    fn hierarchies(&self) -> Vec<(&'static str, PathBuf)> {
        let mut seen = Vec::new();
        let mut out = Vec::new();
        for c in CONTROLLERS {
            if let Some(p) = self.hierarchy(c) {
                let real = std::fs::canonicalize(&p).unwrap_or_else(|_| p.clone());
                if !seen.contains(&real) {
                    seen.push(real);
                    out.push((*c, p));
                }
            }
        }
        out
    }

    fn base(&self, hierarchy: &Path) -> PathBuf {
        hierarchy.join(&self.handle.subdir)
    }

    fn job_path(&self, controller: &str, job: JobId) -> Option<PathBuf> {
        self.hierarchy(controller)
            .map(|h| self.base(&h).join(job_dir_name(job)))
    }

    /// Creates `dir` and the folders between `hierarchy` and it; in the cpuset hierarchy
    /// each new folder gets its parent's cpus and mems.
    fn make_path(&self, controller: &str, hierarchy: &Path, dir: &Path) -> Result<(), CgroupError> {
        let rel = dir.strip_prefix(hierarchy).unwrap_or(dir);
        let mut cur = hierarchy.to_path_buf();
        for part in rel.components() {
            let parent = cur.clone();
            cur.push(part);
            if cur.is_dir() {
                continue;
            }
            fsutil::mkdir(&cur)?;
            if controller == "cpuset" {
                for f in ["cpuset.cpus", "cpuset.mems"] {
                    if let Some(v) = fsutil::read(&parent.join(f)) {
                        let v = v.trim();
                        if !v.is_empty() {
                            fsutil::write(&cur.join(f), v)?;
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Where to find the job's processes: the freezer hierarchy if mounted, else any.
    fn tracking(&self, job: JobId) -> Vec<PathBuf> {
        self.hierarchies()
            .into_iter()
            .map(|(_, h)| self.base(&h).join(job_dir_name(job)))
            .filter(|p| p.is_dir())
            .collect()
    }
}

impl Cgroups for V1 {
    fn name(&self) -> &'static str {
        "cgroup/v1"
    }

    fn prepare(&self, wanted: &Wanted) -> Result<(), CgroupError> {
        let need = [
            (
                "memory",
                wanted.memory,
                "ConstrainRAMSpace/ConstrainSwapSpace",
            ),
            ("cpuset", wanted.cpuset, "ConstrainCores"),
            ("devices", wanted.devices, "ConstrainDevices"),
            ("pids", wanted.pids, "PidsLimit"),
        ];
        for (c, on, key) in need {
            if on && self.hierarchy(c).is_none() {
                return Err(CgroupError::Unsupported(format!(
                    "{key}=yes needs the v1 {c} controller, which is not mounted at {} (mount it, or turn {key} off in cgroup.conf)",
                    self.handle.mount.join(c).display()
                )));
            }
        }
        if wanted.swap {
            if let Some(m) = self.hierarchy("memory") {
                let f = m.join("memory.memsw.limit_in_bytes");
                if !f.exists() && is_real(&m) {
                    return Err(CgroupError::Unsupported(format!(
                        "ConstrainSwapSpace=yes needs swap accounting ({} is missing: boot with swapaccount=1, or turn ConstrainSwapSpace off)",
                        f.display()
                    )));
                }
            }
        }
        let hs = self.hierarchies();
        if hs.is_empty() {
            return Err(CgroupError::NoMount {
                path: self.handle.mount.clone(),
                why: "no v1 hierarchy mounted there".into(),
            });
        }
        for (c, h) in hs {
            let base = self.base(&h);
            self.make_path(c, &h, &base)?;
        }
        Ok(())
    }

    fn create_job(&self, job: JobId, limits: &JobLimits) -> Result<(), CgroupError> {
        for (c, h) in self.hierarchies() {
            let dir = self.base(&h).join(job_dir_name(job));
            self.make_path(c, &h, &dir)?;
            let set = |file: &str, v: String| fsutil::write(&dir.join(file), &v);
            match c {
                "memory" => {
                    if let Some(s) = limits.swappiness {
                        set("memory.swappiness", s.to_string())?;
                    }
                    // memsw must stay >= the RAM limit: lift it first, then set both.
                    if let Some(ram) = limits.memory_bytes {
                        if limits.memory_swap_bytes.is_some() {
                            let memsw = dir.join("memory.memsw.limit_in_bytes");
                            if memsw.exists() {
                                let _ = fsutil::write(&memsw, "-1");
                            }
                        }
                        set("memory.limit_in_bytes", ram.to_string())?;
                    }
                    if let Some(total) = limits.memory_swap_bytes {
                        let f = dir.join("memory.memsw.limit_in_bytes");
                        if f.exists() || !is_real(&dir) {
                            set("memory.memsw.limit_in_bytes", total.to_string())?;
                        } else {
                            return Err(CgroupError::Unsupported(format!(
                                "ConstrainSwapSpace=yes needs {} (swap accounting: boot with swapaccount=1)",
                                f.display()
                            )));
                        }
                    }
                }
                "cpuset" => {
                    if let Some(cpus) = &limits.cpus {
                        set("cpuset.cpus", format_cpu_list(cpus))?;
                    }
                }
                "cpu" => {
                    if let Some(n) = limits.cpu_weight {
                        set("cpu.shares", (1024 * u64::from(n.max(1))).to_string())?;
                    }
                }
                "devices" => {
                    if let Some(rules) = &limits.denied_devices {
                        for r in rules {
                            set("devices.deny", r.to_string())?;
                        }
                    }
                }
                "pids" => {
                    if let Some(n) = limits.pids_max {
                        set("pids.max", n.to_string())?;
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn create_step(&self, job: JobId, step: &str) -> Result<Vec<PathBuf>, CgroupError> {
        let mut files = Vec::new();
        for (c, h) in self.hierarchies() {
            let dir = self
                .base(&h)
                .join(job_dir_name(job))
                .join(format!("step_{step}"));
            self.make_path(c, &h, &dir)?;
            files.push(dir.join("cgroup.procs"));
        }
        Ok(files)
    }

    fn pids(&self, job: JobId) -> Vec<i32> {
        let mut all: Vec<i32> = self
            .tracking(job)
            .iter()
            .flat_map(|d| fsutil::procs_below(d))
            .collect();
        all.sort_unstable();
        all.dedup();
        all
    }

    fn kill(&self, job: JobId, limit: Duration) -> Result<usize, CgroupError> {
        let deadline = Instant::now() + limit;
        let freezer = self.job_path("freezer", job).filter(|p| p.is_dir());
        let mut killed = 0;
        loop {
            if let Some(f) = &freezer {
                let _ = freeze_v1(f, true, Duration::from_millis(500));
            }
            let pids = self.pids(job);
            if pids.is_empty() {
                if let Some(f) = &freezer {
                    let _ = freeze_v1(f, false, Duration::from_millis(500));
                }
                return Ok(killed);
            }
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
            // Thaw before anything else: a frozen task cannot act on SIGKILL.
            if let Some(f) = &freezer {
                let _ = freeze_v1(f, false, Duration::from_millis(500));
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
        let f = self.job_path("freezer", job).ok_or_else(|| {
            CgroupError::Unsupported(format!(
                "the v1 freezer controller is not mounted at {}",
                self.handle.mount.join("freezer").display()
            ))
        })?;
        freeze_v1(&f, frozen, Duration::from_secs(5))
    }

    fn oom_kills(&self, job: JobId) -> u64 {
        let Some(dir) = self.job_path("memory", job) else {
            return 0;
        };
        fsutil::subtree(&dir)
            .iter()
            .filter_map(|d| fsutil::keyed(&d.join("memory.oom_control"), "oom_kill"))
            .sum()
    }

    fn usage(&self, job: JobId) -> JobUsage {
        let mut u = JobUsage::default();
        if let Some(d) = self.job_path("memory", job) {
            u.max_rss_bytes = fsutil::read_u64(&d.join("memory.max_usage_in_bytes"));
        }
        if let Some(d) = self.job_path("cpuacct", job) {
            let tick = 1_000_000 / USER_HZ;
            u.user_cpu_usec = fsutil::keyed(&d.join("cpuacct.stat"), "user").map(|t| t * tick);
            u.system_cpu_usec = fsutil::keyed(&d.join("cpuacct.stat"), "system").map(|t| t * tick);
        }
        u
    }

    fn memory_current(&self, job: JobId) -> Option<u64> {
        fsutil::read_u64(&self.job_path("memory", job)?.join("memory.usage_in_bytes"))
    }

    fn remove_job(&self, job: JobId) -> Result<(), CgroupError> {
        let mut first_err = None;
        for (_, h) in self.hierarchies() {
            let dir = self.base(&h).join(job_dir_name(job));
            if let Err(e) = fsutil::remove_tree(&dir) {
                first_err.get_or_insert(e);
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    fn jobs(&self) -> Vec<JobId> {
        let mut ids: Vec<JobId> = self
            .hierarchies()
            .iter()
            .filter_map(|(_, h)| std::fs::read_dir(self.base(h)).ok())
            .flat_map(|rd| {
                rd.flatten()
                    .filter_map(|e| e.file_name().to_str().and_then(parse_job_dir_name))
                    .collect::<Vec<_>>()
            })
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }
}

fn is_real(dir: &Path) -> bool {
    dir.join("cgroup.procs").exists() && dir.join("notify_on_release").exists()
}

/// Writes `freezer.state` and waits (up to `limit`) until the kernel reports it reached.
fn freeze_v1(dir: &Path, frozen: bool, limit: Duration) -> Result<(), CgroupError> {
    let want = if frozen { "FROZEN" } else { "THAWED" };
    let f = dir.join("freezer.state");
    fsutil::write(&f, want)?;
    let deadline = Instant::now() + limit;
    loop {
        match fsutil::read(&f) {
            Some(s) if s.trim() == want => return Ok(()),
            None => return Ok(()),
            Some(_) if Instant::now() >= deadline => {
                return Err(CgroupError::Unsupported(format!(
                    "{} did not reach {want} within {}s",
                    f.display(),
                    limit.as_secs()
                )))
            }
            Some(_) => std::thread::sleep(Duration::from_millis(5)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DeviceRule, Version};

    /// A fake v1 tree: a folder per controller with the root files the code reads.
    fn fake_tree() -> (tempfile::TempDir, V1) {
        let t = tempfile::tempdir().unwrap();
        for c in [
            "cpuset", "memory", "cpu", "cpuacct", "devices", "freezer", "pids",
        ] {
            let d = t.path().join(c);
            std::fs::create_dir(&d).unwrap();
            std::fs::write(d.join("cgroup.procs"), "1\n").unwrap();
        }
        std::fs::write(t.path().join("cpuset/cpuset.cpus"), "0-7\n").unwrap();
        std::fs::write(t.path().join("cpuset/cpuset.mems"), "0\n").unwrap();
        let v1 = V1::new(CgroupHandle {
            version: Version::V1,
            mount: t.path().to_path_buf(),
            subdir: "gsched/n1".into(),
        });
        (t, v1)
    }

    #[test]
    fn job_and_step_layout_and_limits() {
        let (t, v1) = fake_tree();
        v1.prepare(&Wanted {
            memory: true,
            swap: true,
            cpuset: true,
            devices: true,
            pids: true,
        })
        .unwrap();
        // Intermediate cpuset folders inherit cpus and mems.
        let base = t.path().join("cpuset/gsched/n1");
        assert_eq!(
            std::fs::read_to_string(base.join("cpuset.cpus")).unwrap(),
            "0-7"
        );
        assert_eq!(
            std::fs::read_to_string(base.join("cpuset.mems")).unwrap(),
            "0"
        );

        let limits = JobLimits {
            memory_bytes: Some(100 << 20),
            memory_swap_bytes: Some(150 << 20),
            swappiness: Some(0),
            cpus: Some(vec![2, 3, 5]),
            cpu_weight: Some(3),
            pids_max: Some(64),
            denied_devices: Some(vec![DeviceRule {
                kind: 'c',
                major: 195,
                minor: Some(1),
                access: "rwm".into(),
            }]),
        };
        v1.create_job(42, &limits).unwrap();
        let read = |p: &str| std::fs::read_to_string(t.path().join(p)).unwrap();
        assert_eq!(
            read("memory/gsched/n1/job_42/memory.limit_in_bytes"),
            "104857600"
        );
        assert_eq!(
            read("memory/gsched/n1/job_42/memory.memsw.limit_in_bytes"),
            "157286400"
        );
        assert_eq!(read("memory/gsched/n1/job_42/memory.swappiness"), "0");
        assert_eq!(read("cpuset/gsched/n1/job_42/cpuset.cpus"), "2-3,5");
        assert_eq!(read("cpuset/gsched/n1/job_42/cpuset.mems"), "0");
        assert_eq!(read("cpu/gsched/n1/job_42/cpu.shares"), "3072");
        assert_eq!(read("pids/gsched/n1/job_42/pids.max"), "64");
        assert_eq!(read("devices/gsched/n1/job_42/devices.deny"), "c 195:1 rwm");

        let files = v1.create_step(42, "batch").unwrap();
        assert_eq!(files.len(), 7);
        assert!(files.contains(
            &t.path()
                .join("memory/gsched/n1/job_42/step_batch/cgroup.procs")
        ));
        // The step's cpuset inherits the job's cores.
        assert_eq!(
            read("cpuset/gsched/n1/job_42/step_batch/cpuset.cpus"),
            "2-3,5"
        );
        assert_eq!(v1.jobs(), vec![42]);
    }

    #[test]
    fn oom_usage_pids_and_removal() {
        let (t, v1) = fake_tree();
        v1.prepare(&Wanted::default()).unwrap();
        v1.create_job(7, &JobLimits::default()).unwrap();
        v1.create_step(7, "batch").unwrap();
        let job = t.path().join("memory/gsched/n1/job_7");
        std::fs::write(
            job.join("memory.oom_control"),
            "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n",
        )
        .unwrap();
        std::fs::write(
            job.join("step_batch/memory.oom_control"),
            "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n",
        )
        .unwrap();
        std::fs::write(job.join("memory.max_usage_in_bytes"), "5242880\n").unwrap();
        assert_eq!(v1.memory_current(7), None);
        std::fs::write(job.join("memory.usage_in_bytes"), "3145728\n").unwrap();
        assert_eq!(v1.memory_current(7), Some(3 << 20));
        assert_eq!(v1.memory_current(8), None);
        std::fs::write(
            t.path().join("cpuacct/gsched/n1/job_7/cpuacct.stat"),
            "user 150\nsystem 20\n",
        )
        .unwrap();
        assert_eq!(v1.oom_kills(7), 2);
        let u = v1.usage(7);
        assert_eq!(u.max_rss_bytes, Some(5 << 20));
        assert_eq!(u.user_cpu_usec, Some(1_500_000));
        assert_eq!(u.system_cpu_usec, Some(200_000));
        assert_eq!(u.total_cpu_usec(), Some(1_700_000));
        std::fs::write(job.join("step_batch/cgroup.procs"), "").unwrap();
        assert_eq!(v1.pids(7), Vec::<i32>::new());
        // An empty job is "killed" at once, and the freezer is left thawed.
        assert_eq!(v1.kill(7, Duration::from_secs(1)).unwrap(), 0);
        assert_eq!(
            std::fs::read_to_string(t.path().join("freezer/gsched/n1/job_7/freezer.state"))
                .unwrap(),
            "THAWED"
        );
        v1.remove_job(7).unwrap();
        assert!(!job.exists());
        assert!(v1.jobs().is_empty());
        // Removing again is fine.
        v1.remove_job(7).unwrap();
    }

    #[test]
    fn missing_controller_is_named() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir(t.path().join("freezer")).unwrap();
        std::fs::write(t.path().join("freezer/cgroup.procs"), "").unwrap();
        let v1 = V1::new(CgroupHandle {
            version: Version::V1,
            mount: t.path().to_path_buf(),
            subdir: "gsched".into(),
        });
        let e = v1
            .prepare(&Wanted {
                memory: true,
                ..Wanted::default()
            })
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("ConstrainRAMSpace/ConstrainSwapSpace=yes needs the v1 memory controller"),
            "{e}"
        );
        v1.prepare(&Wanted::default()).unwrap();
    }
}
