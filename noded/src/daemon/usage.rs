//! The live usage of every job with processes on this node, read for each heartbeat: memory
//! (now and peak), virtual size, CPU time, bytes read and written, processes, and the job's
//! GPUs. The controller keeps the recent samples for `gsstat` and `gscontrol show job`.
//!
//! A job's processes here are the descendants of its gsstepd (the batch node) and of the
//! gsstepd of each of its steps running here (every node a step reaches), plus, when the job
//! has a cgroup here, every process in it. With a cgroup, memory and CPU time are the
//! cgroup's (exact, and the peak is the kernel's); without, they are summed over the live
//! processes (CPU time includes the children they reaped). Read and write bytes are always
//! the processes' `rchar`/`wchar`, as Slurm's accounting gathers them (the cgroup's block
//! I/O counters would miss reads served from the page cache and count other things), so a
//! process that ended takes its counts with it unless a process of the job reaped it.
//!
//! The whole process table is read once per heartbeat, then each job's files.

use super::jobs::Phase;
use super::Node;
use crate::cgroup::JobCgroup;
use crate::procfs;
use gsched_proto::api::JobUsageSample;
use gsched_proto::job::JobId;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Where one job's processes are found on this node.
#[derive(Default)]
struct Roots {
    /// The live gsstepd of the batch job and of each of its steps here.
    stepds: Vec<i32>,
    cgroup: Option<JobCgroup>,
    /// The batch job's folder (GPU allocations are read from its launch.json).
    folder: Option<PathBuf>,
}

/// Sums over processes; a figure is `Some` once one process gave it.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProcSums {
    pub vsize: Option<u64>,
    pub rss: Option<u64>,
    pub read: Option<u64>,
    pub write: Option<u64>,
    pub cpu_ticks: Option<u64>,
}

impl ProcSums {
    /// Adds one process's `(vsize, rss)`, `(rchar, wchar)` and CPU ticks.
    pub fn add(&mut self, mem: Option<(u64, u64)>, io: Option<(u64, u64)>, ticks: Option<u64>) {
        fn plus(a: &mut Option<u64>, b: u64) {
            *a = Some(a.unwrap_or(0).saturating_add(b));
        }
        if let Some((v, r)) = mem {
            plus(&mut self.vsize, v);
            plus(&mut self.rss, r);
        }
        if let Some((r, w)) = io {
            plus(&mut self.read, r);
            plus(&mut self.write, w);
        }
        if let Some(t) = ticks {
            plus(&mut self.cpu_ticks, t);
        }
    }
}

/// Clock ticks per second (`_SC_CLK_TCK`).
fn clock_ticks() -> u64 {
    match nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK) {
        Ok(Some(t)) if t > 0 => t as u64,
        _ => 100,
    }
}

impl Node {
    /// The live usage of every job with processes here (blocking: reads `/proc` and the
    /// cgroup files).
    pub(crate) fn job_usage(&self) -> Vec<JobUsageSample> {
        let mut roots: BTreeMap<JobId, Roots> = BTreeMap::new();
        for (&id, j) in self.jobs().iter() {
            if let Phase::Running(s) = j.phase {
                let r = roots.entry(id).or_default();
                r.stepds.push(s.pid);
                r.cgroup = j.cgroup.clone();
                r.folder = Some(j.dir.path().to_path_buf());
            }
        }
        {
            let steps = self.steps.lock().unwrap_or_else(|p| p.into_inner());
            for (&(id, _), st) in steps.iter() {
                if procfs::is_same_live_process(st.stepd_pid, st.stepd_ticks) {
                    roots.entry(id).or_default().stepds.push(st.stepd_pid);
                }
            }
        }
        if roots.is_empty() {
            return Vec::new();
        }
        let table = procfs::process_table(std::path::Path::new("/proc")).unwrap_or_default();
        let page = procfs::page_size();
        let tick_usec = 1_000_000 / clock_ticks();
        roots
            .into_iter()
            .map(|(job_id, r)| {
                let cgroups = r.cgroup.as_ref().map(|c| c.handle.open());
                let mut pids: Vec<i32> = r
                    .stepds
                    .iter()
                    .flat_map(|&p| procfs::descendants_of(&table, p))
                    .collect();
                if let Some(cg) = &cgroups {
                    pids.extend(cg.pids(job_id));
                }
                pids.retain(|p| !r.stepds.contains(p));
                pids.sort_unstable();
                pids.dedup();
                let mut sums = ProcSums::default();
                for &p in &pids {
                    let u = procfs::read_process_usage(p, page);
                    let ticks = procfs::read_stat(p).ok().map(|s| s.cpu_ticks);
                    sums.add(u.mem, u.io, ticks);
                }
                let mut s = JobUsageSample {
                    job_id,
                    rss_bytes: sums.rss,
                    peak_rss_bytes: None,
                    vsize_bytes: sums.vsize,
                    cpu_usec: sums.cpu_ticks.map(|t| t.saturating_mul(tick_usec)),
                    read_bytes: sums.read,
                    write_bytes: sums.write,
                    processes: pids.len().try_into().unwrap_or(u32::MAX),
                    gpu_util_percent: None,
                    gpu_mem_mb: None,
                };
                if let Some(cg) = &cgroups {
                    let u = cg.usage(job_id);
                    if let Some(m) = cg.memory_current(job_id) {
                        s.rss_bytes = Some(m);
                    }
                    s.peak_rss_bytes = u.max_rss_bytes;
                    if let Some(c) = u.total_cpu_usec() {
                        s.cpu_usec = Some(c);
                    }
                }
                if let Some(folder) = &r.folder {
                    s.gpu_util_percent = self.job_gpu_util(job_id, folder);
                }
                s.gpu_mem_mb = self.job_gpu_mem_mb(job_id);
                s
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_start_empty_and_add_what_is_known() {
        let mut s = ProcSums::default();
        assert_eq!(s, ProcSums::default());
        s.add(None, None, None);
        assert_eq!(s.rss, None);
        s.add(Some((100, 10)), None, Some(3));
        s.add(Some((50, 5)), Some((7, 8)), None);
        assert_eq!(
            s,
            ProcSums {
                vsize: Some(150),
                rss: Some(15),
                read: Some(7),
                write: Some(8),
                cpu_ticks: Some(3),
            }
        );
        s.add(Some((u64::MAX, 0)), None, None);
        assert_eq!(s.vsize, Some(u64::MAX));
    }
}
