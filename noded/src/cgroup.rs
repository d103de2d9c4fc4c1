//! gsnoded's side of cgroup enforcement (`cgroup.conf`, see [`gsched_cgroup`]): which cores
//! each job gets, the limits of its cgroup, and the record of both in the job folder.
//!
//! Why a core allocator here and not in the controller: the controller counts CPUs per node;
//! which physical cores a job gets only matters on the node. Assignments are written into
//! each job's `launch.json` (the [`JobCgroup`] record), and a restarted gsnoded rebuilds the
//! allocator from the folders it re-adopts, so no two running jobs share a core (the
//! partitions do not oversubscribe; `OverSubscribe=` is not implemented). The one exception
//! is a launch that arrives while a job the controller already counts as ended is still
//! being cleaned up: it shares the least-used cores for that moment, with a warning, rather
//! than failing.

use gsched_cgroup::{CgroupHandle, Cgroups, JobLimits};
use gsched_proto::api::LaunchRequest;
use gsched_proto::cgroup_conf::CgroupConf;
use gsched_proto::job::JobId;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// How this node uses cgroups (from `cgroup.conf`, checked at start-up).
#[derive(Debug, Clone)]
pub struct CgroupSetup {
    pub handle: CgroupHandle,
    pub conf: CgroupConf,
    /// The node's `RealMemory` (MiB), for `MaxRAMPercent`.
    pub real_memory_mb: u64,
    /// Physical CPU ids, in order, that logical core `i` of this node maps to (the node's
    /// `CPUs` spread over the CPUs this host offers).
    pub cpu_map: Vec<u32>,
}

impl CgroupSetup {
    /// `cpus` logical cores mapped onto `online` (the host's CPUs). A node configured with
    /// more CPUs than the host has (several test nodes on one host) wraps around; the
    /// caller warns.
    pub fn map_cpus(cpus: u32, online: &[u32]) -> Vec<u32> {
        if online.is_empty() {
            return Vec::new();
        }
        (0..cpus as usize)
            .map(|i| online[i % online.len()])
            .collect()
    }

    /// The limits of a job's cgroup.
    pub fn limits(&self, req: &LaunchRequest, cores: &[u32]) -> JobLimits {
        let c = &self.conf;
        let ram = c.ram_limit_bytes(req.mem_mb, self.real_memory_mb);
        let mut phys: Vec<u32> = cores
            .iter()
            .filter_map(|&i| self.cpu_map.get(i as usize).copied())
            .collect();
        phys.sort_unstable();
        phys.dedup();
        JobLimits {
            memory_bytes: (c.constrain_ram_space || c.constrain_swap_space).then_some(ram),
            memory_swap_bytes: c
                .constrain_swap_space
                .then(|| ram + c.swap_limit_bytes(req.mem_mb, self.real_memory_mb)),
            swappiness: c.memory_swappiness.filter(|_| c.constrain_ram_space),
            cpus: (c.constrain_cores && !phys.is_empty()).then_some(phys),
            cpu_weight: c.constrain_cores.then_some(req.cpus.max(1)),
            pids_max: c.pids_limit,
            // No GRES devices are configured yet: constrained, nothing denied. GPU
            // isolation fills this list with the devices of GPUs the job was not given.
            denied_devices: c.constrain_devices.then(Vec::new),
        }
    }
}

/// Creates a job's cgroup with its limits and its batch step; on failure removes what was
/// made, so a refused launch leaves nothing behind. Returns the step's `cgroup.procs` files.
pub fn create_for_job(
    cg: &dyn Cgroups,
    id: JobId,
    limits: &JobLimits,
) -> Result<Vec<PathBuf>, gsched_cgroup::CgroupError> {
    let r = cg
        .create_job(id, limits)
        .and_then(|()| cg.create_step(id, gsched_cgroup::BATCH_STEP));
    if r.is_err() {
        let _ = cg.remove_job(id);
    }
    r
}

/// What ending a job's cgroup found.
#[derive(Debug)]
pub struct Ended {
    pub killed: Result<usize, gsched_cgroup::CgroupError>,
    pub oom_kills: u64,
    pub usage: gsched_proto::job::JobUsage,
}

/// Kills everything left in a job's cgroup, then reads its OOM counter and usage (the
/// numbers outlive the processes). `reap` runs between the kill and the read (gsstepd
/// reaps its children there); the caller removes the cgroup afterwards.
pub fn end_job(
    cg: &dyn Cgroups,
    id: JobId,
    limit: std::time::Duration,
    reap: impl FnOnce(),
) -> Ended {
    let killed = cg.kill(id, limit);
    reap();
    Ended {
        killed,
        oom_kills: cg.oom_kills(id),
        usage: cg.usage(id),
    }
}

/// The online CPUs of this host (`/sys/devices/system/cpu/online`), or 0..n-1 from
/// `available_parallelism` when that cannot be read.
pub fn online_cpus() -> Vec<u32> {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| gsched_cgroup::parse_cpu_list(&s))
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| {
            let n = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
            (0..n).collect()
        })
}

/// A job's cgroup, as recorded in its `launch.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobCgroup {
    pub handle: CgroupHandle,
    /// The step's `cgroup.procs` files (one per v1 hierarchy), which gsstepd's child joins.
    pub procs: Vec<PathBuf>,
    /// Logical cores of this node given to the job.
    pub cores: Vec<u32>,
}

/// Which logical cores of the node each running job holds.
#[derive(Debug, Clone, Default)]
pub struct CoreAllocator {
    cores: u32,
    held: BTreeMap<JobId, Vec<u32>>,
}

impl CoreAllocator {
    pub fn new(cores: u32) -> CoreAllocator {
        CoreAllocator {
            cores,
            held: BTreeMap::new(),
        }
    }

    /// Gives job `id` the `n` lowest free cores (again the same ones if it has some).
    ///
    /// The controller never places more CPUs on a node than it has, so a shortage means the
    /// node still holds a job the controller already counts as ended (its clean-up is in
    /// flight). Failing the new job for that would be worse than a moment of sharing: the
    /// least-used cores are added, and `Err` carries the warning with the cores.
    pub fn allocate(&mut self, id: JobId, n: u32) -> Result<Vec<u32>, (Vec<u32>, String)> {
        if let Some(c) = self.held.get(&id) {
            return Ok(c.clone());
        }
        let mut load = vec![0u32; self.cores as usize];
        for c in self.held.values().flatten() {
            if let Some(l) = load.get_mut(*c as usize) {
                *l += 1;
            }
        }
        let n = (n.max(1) as usize).min(self.cores.max(1) as usize);
        let mut order: Vec<u32> = (0..self.cores).collect();
        // Stable: free cores first, lowest number first.
        order.sort_by_key(|&c| load[c as usize]);
        let mut mine: Vec<u32> = order.into_iter().take(n).collect();
        mine.sort_unstable();
        let shared: Vec<u32> = mine
            .iter()
            .copied()
            .filter(|&c| load[c as usize] > 0)
            .collect();
        self.held.insert(id, mine.clone());
        if shared.is_empty() {
            Ok(mine)
        } else {
            let msg = format!(
                "job {id} needs {n} core(s) but only {} of the node's {} are free (held by jobs {:?}); it shares cores {shared:?}",
                n - shared.len(),
                self.cores,
                self.held.keys().filter(|&&k| k != id).collect::<Vec<_>>()
            );
            Err((mine, msg))
        }
    }

    /// Records the cores a re-adopted job holds.
    pub fn restore(&mut self, id: JobId, cores: Vec<u32>) {
        self.held.insert(id, cores);
    }

    pub fn release(&mut self, id: JobId) {
        self.held.remove(&id);
    }

    pub fn held(&self, id: JobId) -> Option<&[u32]> {
        self.held.get(&id).map(Vec::as_slice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gsched_cgroup::Version;
    use std::path::Path;

    fn req(cpus: u32, mem_mb: u64) -> LaunchRequest {
        serde_json::from_value(serde_json::json!({
            "job_id": 1, "start_time": 1, "name": "j", "uid": 0, "gid": 0, "user_name": "root",
            "script": "", "argv": [], "work_dir": "/", "stdout": null, "stderr": null,
            "stdin": null, "open_mode": null, "environment": [], "cpus": cpus,
            "mem_mb": mem_mb, "node_index": 0, "time_limit": null
        }))
        .unwrap()
    }

    #[test]
    fn cores_are_never_shared_and_come_back() {
        let mut a = CoreAllocator::new(4);
        assert_eq!(a.allocate(1, 2).unwrap(), vec![0, 1]);
        assert_eq!(a.allocate(2, 1).unwrap(), vec![2]);
        // Asking again (a repeated launch) gives the same cores.
        assert_eq!(a.allocate(1, 2).unwrap(), vec![0, 1]);
        // A shortage (a job still cleaning up): the free core plus the least-used one.
        let (cores, e) = a.allocate(3, 2).unwrap_err();
        assert_eq!(cores, vec![0, 3]);
        assert!(
            e.contains("needs 2 core(s) but only 1 of the node's 4 are free"),
            "{e}"
        );
        assert!(e.contains("it shares cores [0]"), "{e}");
        a.release(3);
        a.release(1);
        assert_eq!(a.allocate(3, 2).unwrap(), vec![0, 1]);
        // After a restart: restored assignments are respected.
        let mut b = CoreAllocator::new(4);
        b.restore(7, vec![1, 3]);
        assert_eq!(b.allocate(8, 2).unwrap(), vec![0, 2]);
        assert_eq!(b.held(7), Some(&[1, 3][..]));
    }

    #[test]
    fn creation_cleans_up_after_a_failure_and_the_end_reads_after_the_kill() {
        use gsched_cgroup::fake::Fake;
        let fake = Fake::default();
        let procs = create_for_job(&fake, 5, &JobLimits::default()).unwrap();
        assert_eq!(
            procs,
            vec![PathBuf::from("/fake/job_5/step_batch/cgroup.procs")]
        );
        assert_eq!(fake.job(5).unwrap().steps, vec!["batch".to_string()]);

        *fake.fail_create.lock().unwrap() = Some("no memory controller".into());
        let e = create_for_job(&fake, 6, &JobLimits::default()).unwrap_err();
        assert!(e.to_string().contains("no memory controller"), "{e}");
        assert_eq!(fake.job(6), None);

        fake.jobs.lock().unwrap().get_mut(&5).unwrap().oom_kills = 2;
        let mut reaped = false;
        let end = end_job(&fake, 5, std::time::Duration::from_secs(1), || {
            // The kill came first.
            assert_eq!(fake.job(5).unwrap().killed, 1);
            reaped = true;
        });
        assert!(reaped);
        assert_eq!(end.oom_kills, 2);
        assert!(end.killed.is_ok());
        // A job without a cgroup: the kill fails, nothing else breaks.
        let end = end_job(&fake, 77, std::time::Duration::from_secs(1), || {});
        assert!(end.killed.is_err());
        assert_eq!(end.oom_kills, 0);
    }

    #[test]
    fn limits_from_cgroup_conf() {
        let conf = CgroupConf::parse(
            "ConstrainRAMSpace=yes\nConstrainCores=yes\nConstrainSwapSpace=yes\nAllowedSwapSpace=50\nMemorySwappiness=5\nConstrainDevices=yes\nPidsLimit=100\n",
            Path::new("/c/cgroup.conf"),
        )
        .unwrap();
        let s = CgroupSetup {
            handle: CgroupHandle {
                version: Version::V1,
                mount: "/sys/fs/cgroup".into(),
                subdir: "gsched".into(),
            },
            conf,
            real_memory_mb: 1000,
            cpu_map: CgroupSetup::map_cpus(4, &[0, 1]),
        };
        assert_eq!(s.cpu_map, vec![0, 1, 0, 1]);
        let l = s.limits(&req(2, 100), &[1, 2]);
        assert_eq!(l.memory_bytes, Some(100 << 20));
        assert_eq!(l.memory_swap_bytes, Some(150 << 20));
        assert_eq!(l.swappiness, Some(5));
        assert_eq!(l.cpus, Some(vec![0, 1]));
        assert_eq!(l.cpu_weight, Some(2));
        assert_eq!(l.pids_max, Some(100));
        assert_eq!(l.denied_devices, Some(vec![]));
        // Nothing constrained: tracking only.
        let s = CgroupSetup {
            conf: CgroupConf::defaults(Path::new("/c/cgroup.conf")),
            ..s
        };
        assert_eq!(s.limits(&req(1, 100), &[0]), JobLimits::default());
    }
}
