//! GPUs in the controller: each node's inventory, the GPUs running jobs hold, what a job's
//! request means for placement, and the checks at submit.
//!
//! Why it is shaped so:
//!
//! * **The inventory is what gsnoded registers** (NVML, `gres.conf`). A node that registers
//!   no GPUs (no inventory backend yet, or an older gsnoded) gets the GPUs its `Gres=gpu`
//!   line declares, with the node line's `GpuMemory=` (a gsched key) as each GPU's memory, so
//!   a site can declare GPUs in gsched.conf alone, as in slurm.conf, and the integration
//!   tests can run GPU jobs on machines without GPUs.
//! * **What a job holds is in its record** ([`JobInfo::gpus`], per node), committed with the
//!   `RUNNING` state: a restarted controller rebuilds every GPU's holders from the jobs it
//!   reloads, with nothing else to keep in step.
//! * **Requests become per-node needs** for the pure core: `--gpus=N` is N per node on one
//!   node (or N/k on each of `-N k`, which must divide), `--cpus-per-gpu` raises the CPUs per
//!   task ([`JobSpec::cpus_per_task`]) and `--mem-per-gpu` becomes the memory per node (or
//!   per CPU with `--gpus-per-task`).

use super::*;
use gsched_proto::config::NodeConfig;
use gsched_proto::gpu::{GpuAlloc, GpuDevice};
use gsched_sched::{GpuAmount, GpuHold, GpuNeed, GpuView};

/// A node's GPUs as its config declares them (see the module docs).
pub(crate) fn gpus_from_config(n: &NodeConfig) -> Vec<GpuDevice> {
    let Some(gpu) = n.gres.iter().find(|g| g.name == "gpu") else {
        return Vec::new();
    };
    let count = gpu.count.min(1024) as u32;
    let split = |name: &str| {
        n.gres
            .iter()
            .find(|g| g.name == name)
            .map_or(0, |g| g.count / u64::from(count.max(1)))
    };
    (0..count)
        .map(|i| GpuDevice {
            index: i,
            type_name: gpu.gtype.clone().unwrap_or_default().to_ascii_lowercase(),
            file: format!("/dev/nvidia{i}"),
            major: None,
            minor: None,
            uuid: None,
            memory_mb: n.gpu_memory_mb,
            cores: Vec::new(),
            mig: false,
            mps_count: split("mps"),
            shard_count: split("shard"),
        })
        .collect()
}

/// Whole GPUs per node a request needs before tasks: `--gpus-per-node`, else `--gpus`
/// spread evenly over the job's nodes.
fn per_node(g: &gsched_proto::gpu::GpuRequest, spec: &JobSpec) -> u32 {
    g.per_node
        .or_else(|| g.per_job.map(|n| n / spec.nodes.unwrap_or(1).max(1)))
        .unwrap_or(0)
}

impl State {
    /// The placement need of `spec`'s GPUs for user `uid`; `None` without GPUs.
    pub(super) fn gpu_need(spec: &JobSpec, uid: u32) -> Option<Arc<GpuNeed>> {
        let g = spec.gpu.as_ref()?;
        let amount = match &g.share {
            Some(s) => GpuAmount::Share(s.clone()),
            None => GpuAmount::Whole {
                per_node: per_node(g, spec),
                per_task: g.per_task.unwrap_or(0),
            },
        };
        Some(Arc::new(GpuNeed {
            type_name: g.type_name.clone(),
            amount,
            user: uid,
        }))
    }

    /// `DefCpuPerGPU=` and `DefMemPerGPU=` for a whole-GPU job that says nothing of its CPUs
    /// (`-c`, `--cpus-per-gpu`) or its memory (`--mem*`), as Slurm applies them.
    pub(super) fn gpu_defaults(&self, spec: &mut JobSpec) {
        let cpus_given = spec.cpus_per_task.is_some();
        let mem_given = spec.mem.is_some();
        // Only where the CPUs of each task follow (see check_gpus): a default never refuses.
        let nodes = spec.nodes.unwrap_or(1).max(1);
        let one_per_node = spec.ntasks_per_node.is_some() || spec.total_tasks() <= nodes;
        let Some(g) = spec.gpu.as_mut().filter(|g| g.share.is_none()) else {
            return;
        };
        let tasks_known = g.per_task.is_some() || one_per_node;
        if !cpus_given && g.cpus_per_gpu.is_none() && tasks_known {
            g.cpus_per_gpu = self.cfg.def_cpu_per_gpu;
        }
        if !mem_given && g.mem_per_gpu_mb.is_none() {
            g.mem_per_gpu_mb = self.cfg.def_mem_per_gpu_mb;
        }
    }

    /// Every node's GPUs with the holds of the jobs running or completing on them.
    pub(crate) fn gpu_views(&self) -> Vec<Vec<GpuView>> {
        let mut views: Vec<Vec<GpuView>> = self
            .nodes
            .iter()
            .map(|n| {
                n.gpus
                    .iter()
                    .map(|d| GpuView {
                        device: d.clone(),
                        holds: Vec::new(),
                    })
                    .collect()
            })
            .collect();
        for j in self.active.started_jobs(&self.jobs) {
            for (k, allocs) in j.info.gpus.iter().enumerate() {
                let Some(&i) = j.info.nodes.get(k).and_then(|n| self.node_index.get(n)) else {
                    continue;
                };
                for a in allocs {
                    if let Some(v) = views[i].iter_mut().find(|v| v.device.index == a.index) {
                        v.holds.push(GpuHold {
                            job_id: j.info.job_id,
                            user: j.info.user_id,
                            share: a.share.clone(),
                        });
                    }
                }
            }
        }
        for (i, job_id, user, a) in self.epilog_gpu_holds() {
            if let Some(v) = views[i].iter_mut().find(|v| v.device.index == a.index) {
                v.holds.push(GpuHold {
                    job_id,
                    user,
                    share: a.share.clone(),
                });
            }
        }
        views
    }

    /// The memory of every node's GPUs, MiB, by (node, index) (gseff's and gsacct's GPU
    /// memory against the allocation).
    pub fn gpu_memory_mb(&self) -> std::collections::HashMap<(String, u32), u64> {
        self.nodes
            .iter()
            .flat_map(|n| {
                n.gpus
                    .iter()
                    .map(|d| ((n.name.clone(), d.index), d.memory_mb))
            })
            .collect()
    }

    /// A node's GPUs in use, in Slurm's `GresUsed=` words.
    pub(crate) fn gres_used(views: &[GpuView]) -> String {
        let allocs: Vec<GpuAlloc> = views
            .iter()
            .flat_map(|v| {
                v.holds.iter().map(|h| GpuAlloc {
                    index: v.device.index,
                    share: h.share.clone(),
                })
            })
            .collect();
        let ty = views
            .first()
            .map(|v| v.device.type_name.clone())
            .filter(|t| !t.is_empty() && views.iter().all(|v| &v.device.type_name == t));
        gsched_proto::gpu_tres::node_gres(&merge_shares(allocs), &ty)
    }

    /// The GPU checks of a submission, with the words Slurm uses where it has them: a
    /// request no GPU of the job's partitions can ever take is refused now, not left
    /// pending for ever.
    pub(super) fn check_gpus(&self, spec: &JobSpec, parts: &[usize]) -> Result<(), ApiError> {
        let Some(g) = &spec.gpu else {
            return Ok(());
        };
        let gpus: Vec<&GpuDevice> = parts
            .iter()
            .flat_map(|&p| self.parts[p].nodes.iter())
            .flat_map(|&i| self.nodes[i].gpus.iter())
            .collect();
        let part_names = || {
            parts
                .iter()
                .map(|&p| self.parts[p].name.as_str())
                .collect::<Vec<_>>()
                .join(",")
        };
        if gpus.is_empty() {
            return Err(ApiError::new(
                ErrorCode::InvalidGres,
                format!(
                    "Invalid generic resource (gres) specification: no node of partition {} has GPUs",
                    part_names()
                ),
            ));
        }
        if let Some(t) = &g.type_name {
            if !gpus.iter().any(|d| d.type_name.eq_ignore_ascii_case(t)) {
                let mut types: Vec<&str> = gpus.iter().map(|d| d.type_name.as_str()).collect();
                types.sort_unstable();
                types.dedup();
                return Err(ApiError::new(
                    ErrorCode::InvalidGres,
                    format!(
                        "Invalid generic resource (gres) specification: partition {} has no GPU of type {t} (types: {})",
                        part_names(),
                        types.join(",")
                    ),
                ));
            }
        }
        if let Some(n) = g.per_job {
            let k = spec.nodes.unwrap_or(1).max(1);
            if n % k != 0 {
                return Err(ApiError::new(
                    ErrorCode::NodeConfigUnavailable,
                    format!(
                        "Requested node configuration is not available: gsched places --gpus={n} evenly over the job's {k} nodes; use --gpus-per-node"
                    ),
                ));
            }
        }
        if g.cpus_per_gpu.is_some() && g.per_task.is_none() {
            let nodes = spec.nodes.unwrap_or(1).max(1);
            if spec.ntasks_per_node.is_none() && spec.total_tasks() > nodes {
                return Err(ApiError::new(
                    ErrorCode::BadRequest,
                    "--cpus-per-gpu with several tasks per node needs --gpus-per-task or --ntasks-per-node (gsched cannot tell the tasks of each node apart otherwise)",
                ));
            }
        }
        if let Some(s) = &g.share {
            let typed = |d: &&&GpuDevice| {
                g.type_name
                    .as_ref()
                    .is_none_or(|t| d.type_name.eq_ignore_ascii_case(t))
            };
            if let Some(m) = s.mem_mb {
                let largest = gpus.iter().filter(typed).map(|d| d.memory_mb).max();
                if largest.is_none_or(|l| l < m) {
                    return Err(ApiError::new(
                        ErrorCode::NodeConfigUnavailable,
                        format!(
                            "Requested node configuration is not available: --gpu-mem={} is more than any GPU of partition {} has (largest: {})",
                            gsched_proto::units::format_memory_mb(m),
                            part_names(),
                            match largest {
                                Some(l) if l > 0 => gsched_proto::units::format_memory_mb(l),
                                _ => "unknown; set GpuMemory= on the node line".into(),
                            }
                        ),
                    ));
                }
            }
            if s.shards.is_some() && !gpus.iter().filter(typed).any(|d| d.shard_count > 0) {
                return Err(ApiError::new(
                    ErrorCode::InvalidGres,
                    format!(
                        "Invalid generic resource (gres) specification: no GPU of partition {} is configured with shards (Gres=shard:N)",
                        part_names()
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// The shares of one GPU summed into one (for `GresUsed=`: `mps:75(IDX:1)`, not one entry
/// per job).
fn merge_shares(allocs: Vec<GpuAlloc>) -> Vec<GpuAlloc> {
    let mut out: Vec<GpuAlloc> = Vec::new();
    for a in allocs {
        match (
            &a.share,
            out.iter_mut()
                .find(|o| o.index == a.index && o.share.is_some()),
        ) {
            (Some(s), Some(o)) => {
                if let Some(os) = o.share.as_mut() {
                    os.percent += s.percent;
                    os.shards += s.shards;
                    os.mem_mb += s.mem_mb;
                }
            }
            _ => out.push(a),
        }
    }
    out.sort_by_key(|a| a.index);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use gsched_proto::config::{ConfiguredNodeState, GresConfig};
    use gsched_proto::gpu::GpuShare;

    #[test]
    fn config_gres_stands_in_for_an_inventory() {
        let gres = |name: &str, gtype: Option<&str>, count| GresConfig {
            name: name.into(),
            gtype: gtype.map(String::from),
            count,
        };
        let n = NodeConfig {
            name: "g1".into(),
            addr: None,
            port: None,
            cpus: 8,
            real_memory_mb: 1000,
            gres: vec![gres("gpu", Some("A100"), 2), gres("mps", None, 400)],
            features: Vec::new(),
            state: ConfiguredNodeState::Unknown,
            weight: 1,
            gpu_memory_mb: 80 * 1024,
        };
        let g = gpus_from_config(&n);
        assert_eq!(g.len(), 2);
        assert_eq!(
            (g[1].index, g[1].type_name.as_str(), g[1].file.as_str()),
            (1, "a100", "/dev/nvidia1")
        );
        assert_eq!(
            (g[0].memory_mb, g[0].mps_count, g[0].shard_count),
            (81920, 200, 0)
        );
        let none = NodeConfig {
            gres: vec![gres("mps", None, 100)],
            ..n
        };
        assert!(gpus_from_config(&none).is_empty());
    }

    /// An untyped-memory A100 at position `i`.
    fn device(i: u32) -> GpuDevice {
        GpuDevice {
            index: i,
            type_name: "a100".into(),
            file: String::new(),
            major: None,
            minor: None,
            uuid: None,
            memory_mb: 0,
            cores: Vec::new(),
            mig: false,
            mps_count: 0,
            shard_count: 0,
        }
    }

    #[test]
    fn gres_used_sums_the_shares_of_a_gpu() {
        let share = |pct| {
            Some(GpuShare {
                mem_mb: 0,
                percent: pct,
                shards: 0,
                mps: true,
            })
        };
        let hold = |job_id, share| GpuHold {
            job_id,
            user: 1,
            share,
        };
        let views = vec![
            GpuView {
                device: device(0),
                holds: vec![hold(1, None)],
            },
            GpuView {
                device: device(1),
                holds: vec![hold(2, share(25)), hold(3, share(50))],
            },
            GpuView {
                device: device(2),
                holds: Vec::new(),
            },
        ];
        assert_eq!(
            State::gres_used(&views),
            "gpu:a100:1(IDX:0),mps:a100:75(IDX:1)"
        );
        assert_eq!(State::gres_used(&views[2..]), "");
    }

    /// Submissions are checked against a view of the empty cluster kept between them; a
    /// node that registers GPUs it was not configured with makes it new.
    #[test]
    fn gpus_registered_later_are_in_the_submission_check() {
        use super::super::tests::{register_all, register_node, spec, state, ROOT};
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(dir.path());
        register_all(&mut st, 1000);
        st.submit(spec(1), ROOT, 1000).unwrap();
        let gpu_job = || JobSpec {
            gpu: Some(gsched_proto::gpu::GpuRequest {
                per_node: Some(2),
                ..Default::default()
            }),
            ..spec(1)
        };
        assert!(st.submit(gpu_job(), ROOT, 1000).is_err(), "no GPUs yet");
        let gpus: Vec<GpuDevice> = (0..2).map(device).collect();
        register_node(&mut st, "n1", &gpus, 1001);
        let got = st.submit(gpu_job(), ROOT, 1001);
        assert!(got.is_ok(), "{got:?}");
    }
}
