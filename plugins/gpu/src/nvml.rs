//! `AutoDetect=nvml`: GPUs from NVML through nvml-wrapper. `libnvidia-ml.so.1` is opened
//! with dlopen when gsnoded starts (found through the usual library path, so
//! `LD_LIBRARY_PATH` can point at another one, as the tests' fake library does); a node
//! without the driver fails at start-up with a message saying what to do, never at build.

use crate::{DetectedGpu, GpuBackend, GpuError, ProcessSample, RawSample};
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::Nvml;
use std::collections::HashMap;
use std::sync::Mutex;

pub struct NvmlBackend {
    nvml: Nvml,
    /// Per GPU, the newest process-utilization timestamp seen (NVML returns newer samples).
    last_seen: Mutex<HashMap<u32, u64>>,
}

impl std::fmt::Debug for NvmlBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NvmlBackend").finish_non_exhaustive()
    }
}

fn err(e: NvmlError) -> GpuError {
    GpuError::Nvml(e.to_string())
}

impl NvmlBackend {
    /// Loads NVML (`lib`, else `libnvidia-ml.so.1` from the library path) and initializes it.
    pub fn open(lib: Option<&std::ffi::OsStr>) -> Result<NvmlBackend, GpuError> {
        let mut b = Nvml::builder();
        if let Some(l) = lib {
            b.lib_path(l);
        }
        let nvml = b
            .init()
            .map_err(|e| GpuError::NvmlUnavailable(e.to_string()))?;
        Ok(NvmlBackend {
            nvml,
            last_seen: Mutex::new(HashMap::new()),
        })
    }
}

impl GpuBackend for NvmlBackend {
    fn name(&self) -> &'static str {
        "nvml"
    }

    fn detect(&self) -> Result<Vec<DetectedGpu>, GpuError> {
        let n = self.nvml.device_count().map_err(err)?;
        let mut out = Vec::with_capacity(n as usize);
        for i in 0..n {
            let d = self.nvml.device_by_index(i).map_err(err)?;
            out.push(DetectedGpu {
                backend_index: i,
                model: d.name().map_err(err)?,
                uuid: d.uuid().ok(),
                memory_mb: d.memory_info().map(|m| m.total >> 20).unwrap_or(0),
                minor: d.minor_number().ok(),
                // NotSupported (pre-Ampere) means no MIG.
                mig: d.mig_mode().map(|m| m.current == 1).unwrap_or(false),
            });
        }
        Ok(out)
    }

    fn sample(&self, i: u32) -> Result<RawSample, GpuError> {
        let d = self.nvml.device_by_index(i).map_err(err)?;
        let util = d.utilization_rates().map(|u| u.gpu).unwrap_or(0);
        let mem = d.memory_info().map(|m| m.used >> 20).unwrap_or(0);
        let mut procs: Vec<ProcessSample> = d
            .running_compute_processes()
            .unwrap_or_default()
            .into_iter()
            .map(|p| ProcessSample {
                pid: p.pid,
                mem_used_mb: match p.used_gpu_memory {
                    nvml_wrapper::enums::device::UsedGpuMemory::Used(b) => b >> 20,
                    nvml_wrapper::enums::device::UsedGpuMemory::Unavailable => 0,
                },
                sm_percent: 0,
            })
            .collect();
        let since = self
            .last_seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&i)
            .copied();
        // NotFound when no process ran since `since`: no utilization to add.
        if let Ok(samples) = d.process_utilization_stats(since) {
            let newest = samples.iter().map(|s| s.timestamp).max();
            for s in samples {
                match procs.iter_mut().find(|p| p.pid == s.pid) {
                    Some(p) => p.sm_percent = p.sm_percent.max(s.sm_util),
                    None => procs.push(ProcessSample {
                        pid: s.pid,
                        mem_used_mb: 0,
                        sm_percent: s.sm_util,
                    }),
                }
            }
            if let Some(t) = newest {
                self.last_seen
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(i, t);
            }
        }
        Ok(RawSample {
            util_percent: util,
            mem_used_mb: mem,
            processes: procs,
        })
    }
}
