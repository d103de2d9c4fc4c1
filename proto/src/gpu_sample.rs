//! GPU usage samples: what gsnoded reads from NVML every `GpuSampleInterval` seconds and
//! sends with its heartbeats, and gsctld stores (a table kept 14 days) for the monitoring
//! and idle-GPU work. Per-job figures come from NVML's per-process numbers, summed over the
//! processes of each job (found through the job's cgroup or gsstepd's descendants).

use crate::job::JobId;
use serde::{Deserialize, Serialize};

/// One GPU at one moment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GpuSample {
    /// Seconds since the epoch.
    pub time: i64,
    /// [`crate::gpu::GpuDevice::index`].
    pub index: u32,
    /// Percent of time a kernel ran (NVML `utilization.gpu`).
    pub util_percent: u32,
    /// GPU memory in use, MiB.
    pub mem_used_mb: u64,
    /// What each job on the GPU used.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub jobs: Vec<GpuJobSample>,
}

/// One job's part of a [`GpuSample`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GpuJobSample {
    pub job_id: JobId,
    /// SM utilization of the job's processes, percent (NVML process utilization).
    pub util_percent: u32,
    /// GPU memory the job's processes hold, MiB.
    pub mem_used_mb: u64,
}
