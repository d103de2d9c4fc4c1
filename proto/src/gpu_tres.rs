//! How GPU requests and allocations are written in the commands' output, in Slurm's TRES
//! and GRES words (`TresPerNode=gres/gpu:2`, `AllocTRES=...,gres/gpu=2`, `GRES=gpu:2(IDX:0-1)`),
//! kept in one place so `gscontrol`, `gsqueue`, `gsacct` and `gsinfo` write them alike.
//!
//! gsched's own shares (`--gpu-mem`, `--gpu-share`) have no Slurm TRES; they are written
//! `gres/gpumem:SIZE` and `gres/gpushare:PERCENT` in requests, and a share held is counted as
//! `gres/mps=PERCENT` (100 per GPU, as Slurm's default MPS count) in allocations.

use crate::gpu::{GpuAlloc, GpuRequest};
use crate::job::JobInfo;

fn typed(name: &str, ty: &Option<String>, n: impl std::fmt::Display) -> String {
    match ty {
        Some(t) => format!("gres/{name}:{t}:{n}"),
        None => format!("gres/{name}:{n}"),
    }
}

impl GpuRequest {
    /// `TresPerNode` (`--gres`, `--gpus-per-node`, the shares), `None` without one.
    pub fn tres_per_node(&self) -> Option<String> {
        let mut v = Vec::new();
        if let Some(n) = self.per_node {
            v.push(typed("gpu", &self.type_name, n));
        }
        if let Some(s) = &self.share {
            if let Some(m) = s.mps {
                v.push(typed("mps", &self.type_name, m));
            }
            if let Some(n) = s.shards {
                v.push(typed("shard", &self.type_name, n));
            }
            if let Some(m) = s.mem_mb {
                v.push(format!("gres/gpumem:{}", crate::units::format_memory_mb(m)));
            }
            if let Some(p) = s.percent {
                v.push(format!("gres/gpushare:{p}"));
            }
        }
        (!v.is_empty()).then(|| v.join(","))
    }

    /// `TresPerJob` (`-G/--gpus`).
    pub fn tres_per_job(&self) -> Option<String> {
        self.per_job.map(|n| typed("gpu", &self.type_name, n))
    }

    /// `TresPerTask` (`--gpus-per-task`).
    pub fn tres_per_task(&self) -> Option<String> {
        self.per_task.map(|n| typed("gpu", &self.type_name, n))
    }
}

/// Whole GPUs, MPS percent and shards held in `allocs` (all nodes).
pub fn alloc_counts(allocs: &[Vec<GpuAlloc>]) -> (u64, u64, u64) {
    let mut whole = 0;
    let mut mps = 0;
    let mut shards = 0;
    for a in allocs.iter().flatten() {
        match &a.share {
            None => whole += 1,
            Some(s) if s.mps => mps += u64::from(s.percent),
            Some(s) => shards += s.shards,
        }
    }
    (whole, mps, shards)
}

/// The GPU part of a job's `AllocTRES` (`gres/gpu=2`, `gres/mps=50`, `gres/shard=2`, with a
/// typed copy as Slurm adds), empty without GPUs.
pub fn alloc_tres(job: &JobInfo) -> String {
    let ty = job.spec.gpu.as_ref().and_then(|g| g.type_name.clone());
    let (whole, mps, shards) = alloc_counts(&job.gpus);
    let mut v = Vec::new();
    for (name, n) in [("gpu", whole), ("mps", mps), ("shard", shards)] {
        if n > 0 {
            v.push(format!("gres/{name}={n}"));
            if let Some(t) = &ty {
                v.push(format!("gres/{name}:{t}={n}"));
            }
        }
    }
    v.join(",")
}

/// The GPU part of a job's `ReqTRES`: what it asked for in all (whole GPUs: per node times
/// nodes, `--gpus`, or per task times tasks; a share: its MPS percent or shards).
pub fn req_tres(job: &JobInfo) -> String {
    let Some(g) = &job.spec.gpu else {
        return String::new();
    };
    let nodes = u64::from(job.spec.nodes.unwrap_or(1).max(1));
    let tasks = u64::from(job.num_tasks.max(1));
    let whole = g.per_job.map(u64::from).unwrap_or(0)
        + g.per_node.map_or(0, |n| u64::from(n) * nodes)
        + g.per_task.map_or(0, |n| u64::from(n) * tasks);
    let mut v = Vec::new();
    if whole > 0 {
        v.push(format!("gres/gpu={whole}"));
    }
    if let Some(s) = &g.share {
        if let Some(n) = s.shards {
            v.push(format!("gres/shard={}", n * nodes));
        } else {
            let pct = s.percent.map(u64::from).or(s.mps).unwrap_or(0);
            if pct > 0 {
                v.push(format!("gres/mps={}", pct * nodes));
            }
        }
    }
    v.join(",")
}

/// One node's GPUs of a job as Slurm's `GRES=` writes them: `gpu:2(IDX:0-1)`,
/// `gpu:a100:1(IDX:3)`, `mps:50(IDX:1)`, `shard:2(IDX:0)`.
pub fn node_gres(allocs: &[GpuAlloc], ty: &Option<String>) -> String {
    // Slurm's index lists: runs as ranges (`0-2,5`).
    let idx = |mut v: Vec<u32>| -> String {
        v.sort_unstable();
        let mut out: Vec<String> = Vec::new();
        let mut k = 0;
        while k < v.len() {
            let mut e = k;
            while e + 1 < v.len() && v[e + 1] == v[e] + 1 {
                e += 1;
            }
            out.push(if e > k {
                format!("{}-{}", v[k], v[e])
            } else {
                v[k].to_string()
            });
            k = e + 1;
        }
        out.join(",")
    };
    let whole: Vec<u32> = allocs
        .iter()
        .filter(|a| a.share.is_none())
        .map(|a| a.index)
        .collect();
    let mut out = Vec::new();
    let t = ty.as_ref().map(|t| format!("{t}:")).unwrap_or_default();
    if !whole.is_empty() {
        out.push(format!("gpu:{t}{}(IDX:{})", whole.len(), idx(whole)));
    }
    for a in allocs {
        if let Some(s) = &a.share {
            if s.mps {
                out.push(format!("mps:{t}{}(IDX:{})", s.percent, a.index));
            } else {
                out.push(format!("shard:{t}{}(IDX:{})", s.shards, a.index));
            }
        }
    }
    out.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::{GpuShare, GpuShareRequest};

    #[test]
    fn requests_and_allocations_in_slurm_words() {
        let r = GpuRequest {
            type_name: Some("a100".into()),
            per_node: Some(2),
            ..Default::default()
        };
        assert_eq!(r.tres_per_node().as_deref(), Some("gres/gpu:a100:2"));
        assert_eq!(r.tres_per_job(), None);
        let s = GpuRequest {
            share: Some(GpuShareRequest {
                mem_mb: Some(40 * 1024),
                percent: Some(50),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(
            s.tres_per_node().as_deref(),
            Some("gres/gpumem:40G,gres/gpushare:50")
        );
        let allocs = vec![
            GpuAlloc {
                index: 0,
                share: None,
            },
            GpuAlloc {
                index: 1,
                share: None,
            },
            GpuAlloc {
                index: 3,
                share: Some(GpuShare {
                    mem_mb: 1024,
                    percent: 25,
                    shards: 0,
                    mps: true,
                }),
            },
        ];
        assert_eq!(node_gres(&allocs, &None), "gpu:2(IDX:0-1),mps:25(IDX:3)");
        assert_eq!(alloc_counts(&[allocs]), (2, 25, 0));
    }
}
