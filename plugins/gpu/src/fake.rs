//! An in-memory GPU backend for tests of the code that uses one (inventory, sampling): GPUs
//! and their current usage are set by the test.

use crate::{DetectedGpu, GpuBackend, GpuError, RawSample};
use std::sync::Mutex;

#[derive(Debug, Default)]
pub struct FakeBackend {
    pub gpus: Vec<DetectedGpu>,
    /// What `sample(i)` returns (missing: zeros).
    pub samples: Mutex<Vec<RawSample>>,
}

impl FakeBackend {
    /// `n` GPUs of one model, minor numbers 0..n.
    pub fn with_gpus(n: u32, model: &str, memory_mb: u64) -> FakeBackend {
        FakeBackend {
            gpus: (0..n)
                .map(|i| DetectedGpu {
                    backend_index: i,
                    model: model.into(),
                    uuid: Some(format!("GPU-fake-{i}")),
                    memory_mb,
                    minor: Some(i),
                    mig: false,
                })
                .collect(),
            samples: Mutex::new(Vec::new()),
        }
    }

    pub fn set_sample(&self, i: u32, s: RawSample) {
        let mut v = self.samples.lock().unwrap_or_else(|p| p.into_inner());
        if v.len() <= i as usize {
            v.resize(i as usize + 1, RawSample::default());
        }
        v[i as usize] = s;
    }
}

impl GpuBackend for FakeBackend {
    fn name(&self) -> &'static str {
        "fake"
    }

    fn detect(&self) -> Result<Vec<DetectedGpu>, GpuError> {
        Ok(self.gpus.clone())
    }

    fn sample(&self, i: u32) -> Result<RawSample, GpuError> {
        if i as usize >= self.gpus.len() {
            return Err(GpuError::Nvml(format!("no GPU {i}")));
        }
        let v = self.samples.lock().unwrap_or_else(|p| p.into_inner());
        Ok(v.get(i as usize).cloned().unwrap_or_default())
    }
}
