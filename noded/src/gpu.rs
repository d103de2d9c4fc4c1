//! gsnoded's side of GPUs: what a job with GPUs sees (its environment), what its devices
//! cgroup denies, and which processes each job runs on the node's GPUs (sampling).
//!
//! Why here and not in the controller: which device file, which MPS pipe directory and which
//! local renumbering a GPU gets only matters on the node; the controller sends
//! [`GpuAlloc`]s (indices into the node's [`GpuDevice`] list, which gsnoded itself reported
//! at registration).

use gsched_cgroup::DeviceRule;
use gsched_gpu::{GpuBackend, Inventory};
use gsched_proto::gpu::{GpuAlloc, GpuDevice};
use gsched_proto::gpu_sample::{GpuJobSample, GpuSample};
use gsched_proto::job::JobId;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The node's GPUs, found at start-up.
#[derive(Debug, Clone, Default)]
pub struct GpuSetup {
    pub devices: Vec<GpuDevice>,
    /// For each device, its index in the backend (to sample it).
    pub backend_index: Vec<Option<u32>>,
    pub backend: Option<Arc<dyn GpuBackend>>,
    /// `GpuSampleInterval` seconds (0: off).
    pub sample_interval: u32,
}

impl GpuSetup {
    pub fn from_inventory(inv: Inventory, sample_interval: u32) -> GpuSetup {
        GpuSetup {
            devices: inv.devices,
            backend_index: inv.backend_index,
            backend: inv.backend,
            sample_interval,
        }
    }
}

/// Where the MPS control daemon of GPU `index` keeps its pipes and logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MpsDirs {
    pub pipe: PathBuf,
    pub log: PathBuf,
}

impl MpsDirs {
    /// `<spool>/mps/gpu<index>/{pipe,log}`.
    pub fn for_gpu(spool: &Path, index: u32) -> MpsDirs {
        let base = spool.join("mps").join(format!("gpu{index}"));
        MpsDirs {
            pipe: base.join("pipe"),
            log: base.join("log"),
        }
    }

    pub fn base(&self) -> &Path {
        self.pipe.parent().unwrap_or(&self.pipe)
    }
}

/// Checks a launch's GPUs against the node's: known indices, no GPU twice, whole and shared
/// not mixed, MPS on at most one GPU (a client talks to one MPS daemon).
pub fn check_allocs(allocs: &[GpuAlloc], devices: &[GpuDevice]) -> Result<(), String> {
    let mut seen = Vec::new();
    for a in allocs {
        if !devices.iter().any(|d| d.index == a.index) {
            return Err(format!(
                "GPU {} is not one of this node's {} GPU(s); the controller's view of the node is stale (restart gsnoded so that it registers again)",
                a.index,
                devices.len()
            ));
        }
        if seen.contains(&a.index) {
            return Err(format!("GPU {} is given twice", a.index));
        }
        seen.push(a.index);
        if let Some(s) = &a.share {
            if !(1..=100).contains(&s.percent) {
                return Err(format!(
                    "GPU {}: a compute share of {}% is not in 1..=100",
                    a.index, s.percent
                ));
            }
        }
    }
    let shared = allocs.iter().filter(|a| a.share.is_some()).count();
    if shared > 0 && shared < allocs.len() {
        return Err("a job holds GPUs either whole or shared, not both".into());
    }
    if allocs
        .iter()
        .filter(|a| a.share.as_ref().is_some_and(|s| s.mps))
        .count()
        > 1
    {
        return Err(
            "a job can use MPS on one GPU per node (a client talks to one MPS daemon)".into(),
        );
    }
    Ok(())
}

/// The GPU variables of a job's environment (Slurm's names, plus MPS's):
/// * `SLURM_JOB_GPUS`: the physical indices;
/// * `CUDA_VISIBLE_DEVICES` and `GPU_DEVICE_ORDINAL`: `0..n-1` when the devices cgroup hides
///   the other GPUs (`constrained`, as Slurm with `ConstrainDevices=yes`), else the physical
///   indices; `0` under MPS (the daemon sees only its GPU);
/// * `CUDA_DEVICE_ORDER=PCI_BUS_ID`, `SLURM_GPUS_ON_NODE`, `SLURM_SHARDS_ON_NODE`;
/// * for an MPS share: `CUDA_MPS_PIPE_DIRECTORY`, `CUDA_MPS_LOG_DIRECTORY`,
///   `CUDA_MPS_ACTIVE_THREAD_PERCENTAGE` and `CUDA_MPS_PINNED_DEVICE_MEM_LIMIT` (`0=NM`).
///
/// Empty for a job without GPUs.
pub fn environment(allocs: &[GpuAlloc], constrained: bool, spool: &Path) -> Vec<(String, String)> {
    if allocs.is_empty() {
        return Vec::new();
    }
    let mut sorted: Vec<&GpuAlloc> = allocs.iter().collect();
    sorted.sort_by_key(|a| a.index);
    let join = |v: Vec<String>| v.join(",");
    let physical = join(sorted.iter().map(|a| a.index.to_string()).collect());
    let mps = sorted
        .iter()
        .find_map(|a| a.share.as_ref().filter(|s| s.mps).map(|s| (a.index, s)));
    let visible = if mps.is_some() {
        "0".to_string()
    } else if constrained {
        join((0..sorted.len()).map(|i| i.to_string()).collect())
    } else {
        physical.clone()
    };
    let mut env = vec![
        ("CUDA_DEVICE_ORDER".to_string(), "PCI_BUS_ID".to_string()),
        ("CUDA_VISIBLE_DEVICES".to_string(), visible.clone()),
        ("GPU_DEVICE_ORDINAL".to_string(), visible),
        ("SLURM_JOB_GPUS".to_string(), physical),
        ("SLURM_GPUS_ON_NODE".to_string(), sorted.len().to_string()),
    ];
    let shards: u64 = sorted
        .iter()
        .filter_map(|a| a.share.as_ref())
        .map(|s| s.shards)
        .sum();
    if shards > 0 {
        env.push(("SLURM_SHARDS_ON_NODE".into(), shards.to_string()));
    }
    if let Some((index, share)) = mps {
        let dirs = MpsDirs::for_gpu(spool, index);
        env.push((
            "CUDA_MPS_PIPE_DIRECTORY".into(),
            dirs.pipe.display().to_string(),
        ));
        env.push((
            "CUDA_MPS_LOG_DIRECTORY".into(),
            dirs.log.display().to_string(),
        ));
        env.push((
            "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE".into(),
            share.percent.to_string(),
        ));
        if share.mem_mb > 0 {
            env.push((
                "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT".into(),
                format!("0={}M", share.mem_mb),
            ));
        }
    }
    env
}

/// The devices cgroup rules of a job: every GPU device file of the node that the job was not
/// given is denied (read, write, mknod); a job without GPUs can open none of them.
pub fn denied_devices(devices: &[GpuDevice], allocs: &[GpuAlloc]) -> Vec<DeviceRule> {
    let mut rules: Vec<DeviceRule> = devices
        .iter()
        .filter(|d| !allocs.iter().any(|a| a.index == d.index))
        .filter_map(|d| {
            Some(DeviceRule {
                kind: 'c',
                major: d.major?,
                minor: Some(d.minor?),
                access: "rwm".into(),
            })
        })
        .collect();
    rules.dedup();
    rules
}

/// Turns one round of backend samples into per-GPU samples with per-job figures, given each
/// job's processes.
pub fn attribute(
    time: i64,
    index: u32,
    raw: &gsched_gpu::RawSample,
    job_of_pid: &HashMap<u32, JobId>,
) -> GpuSample {
    let mut jobs: Vec<GpuJobSample> = Vec::new();
    for p in &raw.processes {
        let Some(&job_id) = job_of_pid.get(&p.pid) else {
            continue;
        };
        match jobs.iter_mut().find(|j| j.job_id == job_id) {
            Some(j) => {
                j.mem_used_mb += p.mem_used_mb;
                j.util_percent = (j.util_percent + p.sm_percent).min(100);
            }
            None => jobs.push(GpuJobSample {
                job_id,
                util_percent: p.sm_percent.min(100),
                mem_used_mb: p.mem_used_mb,
            }),
        }
    }
    jobs.sort_by_key(|j| j.job_id);
    GpuSample {
        time,
        index,
        util_percent: raw.util_percent,
        mem_used_mb: raw.mem_used_mb,
        jobs,
    }
}

/// A job's GPU utilization from the newest sample of each GPU: the highest over its GPUs, a
/// whole GPU counting as a whole and a shared one by the job's own processes. `None` without
/// GPUs or samples.
pub fn job_utilization(
    job: JobId,
    allocs: &[GpuAlloc],
    latest: &std::collections::BTreeMap<u32, GpuSample>,
) -> Option<u32> {
    allocs
        .iter()
        .filter_map(|a| {
            let s = latest.get(&a.index)?;
            Some(match a.share {
                None => s.util_percent,
                Some(_) => s
                    .jobs
                    .iter()
                    .find(|j| j.job_id == job)
                    .map_or(0, |j| j.util_percent),
            })
        })
        .max()
}

#[cfg(test)]
mod tests {
    use super::*;
    use gsched_proto::gpu::GpuShare;

    fn dev(i: u32) -> GpuDevice {
        GpuDevice {
            index: i,
            type_name: "a100".into(),
            file: format!("/dev/nvidia{i}"),
            major: Some(195),
            minor: Some(i),
            uuid: None,
            memory_mb: 81920,
            cores: vec![],
            mig: false,
            mps_count: 0,
            shard_count: 0,
        }
    }

    fn get<'a>(env: &'a [(String, String)], k: &str) -> Option<&'a str> {
        env.iter().find(|(x, _)| x == k).map(|(_, v)| v.as_str())
    }

    #[test]
    fn whole_gpus_env() {
        let spool = Path::new("/var/spool/gsched/n1");
        let env = environment(&[GpuAlloc::whole(3), GpuAlloc::whole(1)], true, spool);
        assert_eq!(get(&env, "SLURM_JOB_GPUS"), Some("1,3"));
        assert_eq!(get(&env, "CUDA_VISIBLE_DEVICES"), Some("0,1"));
        assert_eq!(get(&env, "GPU_DEVICE_ORDINAL"), Some("0,1"));
        assert_eq!(get(&env, "SLURM_GPUS_ON_NODE"), Some("2"));
        assert_eq!(get(&env, "CUDA_DEVICE_ORDER"), Some("PCI_BUS_ID"));
        assert_eq!(get(&env, "CUDA_MPS_PIPE_DIRECTORY"), None);
        // Without the devices cgroup every GPU is visible: physical indices.
        let env = environment(&[GpuAlloc::whole(3), GpuAlloc::whole(1)], false, spool);
        assert_eq!(get(&env, "CUDA_VISIBLE_DEVICES"), Some("1,3"));
        assert!(environment(&[], true, spool).is_empty());
    }

    #[test]
    fn mps_env() {
        let env = environment(&[GpuAlloc::mps(2, 25, 20480)], true, Path::new("/s"));
        assert_eq!(get(&env, "CUDA_VISIBLE_DEVICES"), Some("0"));
        assert_eq!(get(&env, "SLURM_JOB_GPUS"), Some("2"));
        assert_eq!(
            get(&env, "CUDA_MPS_PIPE_DIRECTORY"),
            Some("/s/mps/gpu2/pipe")
        );
        assert_eq!(get(&env, "CUDA_MPS_LOG_DIRECTORY"), Some("/s/mps/gpu2/log"));
        assert_eq!(get(&env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), Some("25"));
        assert_eq!(
            get(&env, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"),
            Some("0=20480M")
        );
        let env = environment(&[GpuAlloc::mps(0, 100, 0)], true, Path::new("/s"));
        assert_eq!(get(&env, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), None);
        let shard = GpuAlloc {
            index: 1,
            share: Some(GpuShare {
                mem_mb: 0,
                percent: 100,
                shards: 3,
                mps: false,
            }),
        };
        let env = environment(&[shard], true, Path::new("/s"));
        assert_eq!(get(&env, "SLURM_SHARDS_ON_NODE"), Some("3"));
        assert_eq!(get(&env, "CUDA_VISIBLE_DEVICES"), Some("0"));
        assert_eq!(get(&env, "CUDA_MPS_PIPE_DIRECTORY"), None);
    }

    #[test]
    fn device_rules_deny_the_other_gpus() {
        let devs = [dev(0), dev(1), dev(2)];
        let r = denied_devices(&devs, &[GpuAlloc::whole(1)]);
        let s: Vec<String> = r.iter().map(|r| r.to_string()).collect();
        assert_eq!(s, ["c 195:0 rwm", "c 195:2 rwm"]);
        assert_eq!(denied_devices(&devs, &[]).len(), 3);
        assert!(denied_devices(
            &devs,
            &[GpuAlloc::whole(0), GpuAlloc::whole(1), GpuAlloc::whole(2)]
        )
        .is_empty());
    }

    #[test]
    fn bad_allocations_are_refused() {
        let devs = [dev(0), dev(1)];
        assert!(check_allocs(&[GpuAlloc::whole(0), GpuAlloc::whole(1)], &devs).is_ok());
        let e = check_allocs(&[GpuAlloc::whole(5)], &devs).unwrap_err();
        assert!(
            e.contains("GPU 5 is not one of this node's 2 GPU(s)"),
            "{e}"
        );
        assert!(
            check_allocs(&[GpuAlloc::whole(0), GpuAlloc::whole(0)], &devs)
                .unwrap_err()
                .contains("twice")
        );
        assert!(
            check_allocs(&[GpuAlloc::whole(0), GpuAlloc::mps(1, 50, 0)], &devs)
                .unwrap_err()
                .contains("either whole or shared")
        );
        assert!(
            check_allocs(&[GpuAlloc::mps(0, 50, 0), GpuAlloc::mps(1, 50, 0)], &devs)
                .unwrap_err()
                .contains("MPS on one GPU")
        );
        assert!(check_allocs(&[GpuAlloc::mps(0, 0, 0)], &devs)
            .unwrap_err()
            .contains("0%"));
    }

    #[test]
    fn job_utilization_is_the_busiest_gpu() {
        let sample = |index, util, jobs: Vec<GpuJobSample>| GpuSample {
            time: 1,
            index,
            util_percent: util,
            mem_used_mb: 0,
            jobs,
        };
        let latest = std::collections::BTreeMap::from([
            (0, sample(0, 10, vec![])),
            (1, sample(1, 70, vec![])),
            (
                2,
                sample(
                    2,
                    90,
                    vec![GpuJobSample {
                        job_id: 5,
                        util_percent: 4,
                        mem_used_mb: 0,
                    }],
                ),
            ),
        ]);
        assert_eq!(
            job_utilization(5, &[GpuAlloc::whole(0), GpuAlloc::whole(1)], &latest),
            Some(70)
        );
        // On a shared GPU only the job's own processes count.
        assert_eq!(
            job_utilization(5, &[GpuAlloc::mps(2, 50, 0)], &latest),
            Some(4)
        );
        assert_eq!(
            job_utilization(6, &[GpuAlloc::mps(2, 50, 0)], &latest),
            Some(0)
        );
        assert_eq!(job_utilization(5, &[], &latest), None);
        assert_eq!(job_utilization(5, &[GpuAlloc::whole(3)], &latest), None);
    }

    #[test]
    fn samples_are_attributed_to_jobs() {
        let raw = gsched_gpu::RawSample {
            util_percent: 80,
            mem_used_mb: 3000,
            processes: vec![
                gsched_gpu::ProcessSample {
                    pid: 10,
                    mem_used_mb: 1000,
                    sm_percent: 30,
                },
                gsched_gpu::ProcessSample {
                    pid: 11,
                    mem_used_mb: 500,
                    sm_percent: 20,
                },
                gsched_gpu::ProcessSample {
                    pid: 99,
                    mem_used_mb: 1500,
                    sm_percent: 30,
                },
            ],
        };
        let map = HashMap::from([(10, 7), (11, 7)]);
        let s = attribute(5, 1, &raw, &map);
        assert_eq!((s.index, s.util_percent, s.mem_used_mb), (1, 80, 3000));
        assert_eq!(
            s.jobs,
            [GpuJobSample {
                job_id: 7,
                util_percent: 50,
                mem_used_mb: 1500
            }]
        );
    }
}
