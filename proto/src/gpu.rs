//! GPUs as every part of gsched sees them: what a node has ([`GpuDevice`], reported by gsnoded
//! at registration from NVML, `gres.conf` or a fake), what a job asks for ([`GpuRequest`], from
//! `--gres`, `--gpus*`, `--gpu-mem`, `--gpu-share`) and what placement gave it on one node
//! ([`GpuAlloc`], sent to gsnoded at launch).
//!
//! This file is the contract between the controller's placement and the node's enforcement;
//! the scheduler core, gsctld and gsnoded all speak these types, so they cannot drift.
//!
//! Two kinds of use never share one GPU at the same time: a GPU is either held whole by one job
//! (`--gres=gpu:N`, `--gpus*`) or shared by fractional jobs (`--gpu-mem`, `--gpu-share`,
//! `--gres=mps:N`, `--gres=shard:N`), as in Slurm, where a GPU is never allocated as gres/gpu
//! and gres/mps at once.

use serde::{Deserialize, Serialize};

/// One GPU of a node, as gsnoded found it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GpuDevice {
    /// Position on the node, 0-based: the order in which jobs see the GPUs
    /// (`CUDA_VISIBLE_DEVICES`, `SLURM_JOB_GPUS`), which is the order of `gres.conf` `File=`
    /// lines or NVML's (PCI bus) order.
    pub index: u32,
    /// The GPU type that `--gres=gpu:TYPE:N` names (`a100`; gres.conf `Type=`, or the NVML
    /// model name lower-cased with spaces as underscores). Empty = untyped.
    #[serde(default)]
    pub type_name: String,
    /// The device file whose access the job's devices cgroup grants (`/dev/nvidia0`).
    pub file: String,
    /// The device file's major and minor numbers, if known (devices cgroup rules).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub major: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minor: Option<u32>,
    /// NVML's UUID (`GPU-…`), when NVML reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// Total GPU memory in MiB (NVML, or gres.conf `Memory=`); 0 = unknown, in which case
    /// requests by GPU memory cannot be placed on this GPU.
    #[serde(default)]
    pub memory_mb: u64,
    /// CPUs close to the GPU (gres.conf `Cores=`, NVML affinity); empty = all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cores: Vec<u32>,
    /// MIG mode is enabled on the GPU (gsched then only hands it out whole).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mig: bool,
    /// gres.conf `Name=mps Count=N` for this GPU (Slurm's MPS units; `--gres=mps:K` takes
    /// K of them, i.e. K*100/N percent); 0 = not configured (100 by default when sharing).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub mps_count: u64,
    /// gres.conf `Name=shard Count=N` for this GPU; 0 = not configured.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub shard_count: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// What a job asks for in GPUs. Whole GPUs and a fraction of one are exclusive of each other
/// (the submit path rejects requests that mix them, with a clear message).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GpuRequest {
    /// `--gres=gpu:TYPE:N` / `--gpus=TYPE:N` / ...: only GPUs of this type (lower-case).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub type_name: Option<String>,
    /// Whole GPUs per node (`--gres=gpu:N`, `--gpus-per-node=N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_node: Option<u32>,
    /// Whole GPUs for the whole job (`-G/--gpus=N`), spread over its nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_job: Option<u32>,
    /// Whole GPUs per task (`--gpus-per-task=N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_task: Option<u32>,
    /// A fraction of one GPU on each node (`--gpu-mem`, `--gpu-share`, `--gres=mps:N`,
    /// `--gres=shard:N`). `None` = whole GPUs (or no GPU at all when the counts are `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share: Option<GpuShareRequest>,
    /// `--cpus-per-gpu=N`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus_per_gpu: Option<u32>,
    /// `--mem-per-gpu=SIZE` (host memory, MiB, as in Slurm).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_per_gpu_mb: Option<u64>,
}

/// A fraction of one GPU, as the user asked for it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GpuShareRequest {
    /// `--gpu-mem=SIZE`: GPU memory in MiB (enforced with `CUDA_MPS_PINNED_DEVICE_MEM_LIMIT`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_mb: Option<u64>,
    /// `--gpu-share=PERCENT` (1..=100): compute share (`CUDA_MPS_ACTIVE_THREAD_PERCENTAGE`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percent: Option<u32>,
    /// `--gres=mps:N`: Slurm's MPS units, converted per GPU with [`GpuDevice::mps_count`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mps: Option<u64>,
    /// `--gres=shard:N`: Slurm's shards (counted, not enforced, as in Slurm).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shards: Option<u64>,
}

/// One GPU given to a job on one node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GpuAlloc {
    /// [`GpuDevice::index`] on the node.
    pub index: u32,
    /// `None`: the whole GPU, exclusively. `Some`: a share of a GPU other jobs share too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share: Option<GpuShare>,
}

impl GpuAlloc {
    /// GPU `index`, whole and exclusive.
    pub fn whole(index: u32) -> GpuAlloc {
        GpuAlloc { index, share: None }
    }

    /// An MPS share of GPU `index`: `percent` of its compute and `mem_mb` of its memory.
    pub fn mps(index: u32, percent: u32, mem_mb: u64) -> GpuAlloc {
        GpuAlloc {
            index,
            share: Some(GpuShare {
                mem_mb,
                percent,
                shards: 0,
                mps: true,
            }),
        }
    }
}

/// The part of a shared GPU a job holds (what gsnoded enforces through MPS).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GpuShare {
    /// GPU memory in MiB the job may pin (`CUDA_MPS_PINNED_DEVICE_MEM_LIMIT`); 0 = no limit.
    pub mem_mb: u64,
    /// Compute share in percent (`CUDA_MPS_ACTIVE_THREAD_PERCENTAGE`), 1..=100.
    pub percent: u32,
    /// Shards held (`--gres=shard:N`): counted only, as Slurm's gres/shard; 0 otherwise.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub shards: u64,
    /// Run the job's CUDA work through the GPU's MPS daemon (false for shard-only jobs).
    pub mps: bool,
}
