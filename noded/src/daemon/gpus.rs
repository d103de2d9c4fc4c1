//! The daemon's GPU tasks: MPS daemons started before a sharing job's gsstepd and stopped
//! after its end, a watch that kills and reports the jobs of a dead MPS daemon or server,
//! and the sampler that reads the GPUs' usage every `GpuSampleInterval` seconds for the
//! heartbeats.

use super::jobs::{job_processes, Phase};
use super::{now, Node};
use crate::jobdir::GPU_FAILURE_FILE;
use gsched_proto::api::{LaunchRequest, TerminateReason, TerminateRequest};
use gsched_proto::gpu_sample::GpuSample;
use gsched_proto::job::JobId;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// How often the MPS daemons in use are checked.
const MPS_CHECK_INTERVAL: Duration = Duration::from_secs(1);
/// Samples kept while the controller cannot be reached (older ones are dropped).
const MAX_PENDING_SAMPLES: usize = 10_000;

impl Node {
    /// Starts the MPS daemon (and the user's server) of the GPU a job shares with MPS.
    pub(crate) async fn start_mps(&self, req: &LaunchRequest) -> Result<(), String> {
        let Some(mps) = self.mps.clone() else {
            return Ok(());
        };
        let Some(alloc) = req
            .gpus
            .iter()
            .find(|a| a.share.as_ref().is_some_and(|s| s.mps))
        else {
            return Ok(());
        };
        let Some(dev) = self
            .settings
            .gpus
            .devices
            .iter()
            .find(|d| d.index == alloc.index)
            .cloned()
        else {
            return Err(format!("GPU {} is not one of this node's", alloc.index));
        };
        let (id, uid) = (req.job_id, req.uid);
        tokio::task::spawn_blocking(move || mps.job_started(&dev, id, uid))
            .await
            .map_err(|e| format!("MPS task failed: {e}"))?
    }

    /// A job ended (or its launch failed): its MPS daemon stops if it was the last user.
    pub(crate) async fn end_mps(&self, id: JobId) {
        self.job_gpus
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
        if let Some(mps) = self.mps.clone() {
            let _ = tokio::task::spawn_blocking(move || mps.job_gone(id)).await;
        }
    }

    /// After re-adoption: the MPS state of jobs that are no longer running is dropped.
    pub(crate) async fn forget_mps_of_ended_jobs(&self) {
        let Some(mps) = self.mps.clone() else {
            return;
        };
        let running: Vec<JobId> = self
            .jobs()
            .iter()
            .filter(|(_, j)| matches!(j.phase, Phase::Running(_) | Phase::Launching))
            .map(|(&id, _)| id)
            .collect();
        let _ =
            tokio::task::spawn_blocking(move || mps.retain_jobs(&|j| running.contains(&j))).await;
    }

    /// The MPS watch and the GPU sampler, as the node's GPUs need them.
    pub(crate) fn start_gpu_tasks(self: Arc<Self>) -> Vec<tokio::task::JoinHandle<()>> {
        let mut tasks = Vec::new();
        if self.mps.is_some() {
            tasks.push(tokio::spawn(self.clone().watch_mps()));
        }
        let g = &self.settings.gpus;
        if g.backend.is_some() && g.sample_interval > 0 && !g.devices.is_empty() {
            tasks.push(tokio::spawn(self.clone().sample_gpus()));
        }
        tasks
    }

    async fn watch_mps(self: Arc<Self>) {
        let Some(mps) = self.mps.clone() else { return };
        loop {
            tokio::time::sleep(MPS_CHECK_INTERVAL).await;
            let m = mps.clone();
            let failures = tokio::task::spawn_blocking(move || m.check())
                .await
                .unwrap_or_default();
            for f in failures {
                tracing::error!(
                    "{}; killing its jobs {:?} (they are requeued without being charged)",
                    f.why,
                    f.jobs
                );
                for id in f.jobs {
                    let dir = self.jobs().get(&id).map(|j| j.dir.clone());
                    if let Some(dir) = dir {
                        let why = f.why.clone();
                        let path = dir.file(GPU_FAILURE_FILE);
                        let written = tokio::task::spawn_blocking(move || {
                            crate::jobdir::write_atomic(
                                &path,
                                why.as_bytes(),
                                0o644,
                                crate::jobdir::Durability::PowerLoss,
                            )
                        })
                        .await;
                        if !matches!(written, Ok(Ok(()))) {
                            tracing::error!("job {id}: cannot record its GPU failure");
                        }
                    }
                    let req = TerminateRequest {
                        job_id: id,
                        kill_wait: 0,
                        reason: TerminateReason::NotAssigned,
                    };
                    if let Err(e) = self.terminate(req).await {
                        tracing::debug!("job {id}: {e}");
                    }
                }
            }
        }
    }

    async fn sample_gpus(self: Arc<Self>) {
        let interval = Duration::from_secs(self.settings.gpus.sample_interval.into());
        loop {
            tokio::time::sleep(interval).await;
            let node = self.clone();
            let samples = tokio::task::spawn_blocking(move || node.sample_once())
                .await
                .unwrap_or_default();
            {
                let mut latest = self.gpu_latest.lock().unwrap_or_else(|p| p.into_inner());
                for s in &samples {
                    latest.insert(s.index, s.clone());
                }
            }
            let mut pending = self.gpu_samples.lock().unwrap_or_else(|p| p.into_inner());
            pending.extend(samples);
            let over = pending.len().saturating_sub(MAX_PENDING_SAMPLES);
            pending.drain(..over);
        }
    }

    /// One sample of every GPU, with each job's part (blocking).
    fn sample_once(&self) -> Vec<GpuSample> {
        let g = &self.settings.gpus;
        let Some(backend) = &g.backend else {
            return Vec::new();
        };
        let running: Vec<(JobId, super::jobs::Stepd, Option<crate::cgroup::JobCgroup>)> = self
            .jobs()
            .iter()
            .filter_map(|(&id, j)| match j.phase {
                Phase::Running(s) => Some((id, s, j.cgroup.clone())),
                _ => None,
            })
            .collect();
        let mut job_of_pid = HashMap::new();
        for (id, stepd, cg) in running {
            for p in job_processes(id, stepd, cg.as_ref()) {
                job_of_pid.insert(p as u32, id);
            }
        }
        let t = now();
        let mut out = Vec::new();
        for (d, bi) in g.devices.iter().zip(&g.backend_index) {
            let Some(bi) = bi else { continue };
            match backend.sample(*bi) {
                Ok(raw) => out.push(crate::gpu::attribute(t, d.index, &raw, &job_of_pid)),
                Err(e) => tracing::debug!("GPU {}: no sample: {e}", d.index),
            }
        }
        out
    }

    /// The utilization of a running job's GPUs for the invalid-job ladder: the highest of its
    /// GPUs' newest samples (for a shared GPU, the job's own processes' share). `None` for a
    /// job without GPUs, or before the first sample (blocking: may read launch.json).
    pub(crate) fn job_gpu_util(&self, id: JobId, folder: &std::path::Path) -> Option<u32> {
        self.settings.gpus.backend.as_ref()?;
        let gpus = {
            let mut cache = self.job_gpus.lock().unwrap_or_else(|p| p.into_inner());
            cache
                .entry(id)
                .or_insert_with(|| {
                    crate::jobdir::JobDir::new(folder)
                        .read_launch()
                        .ok()
                        .flatten()
                        .map(|l| l.request.gpus)
                        .unwrap_or_default()
                })
                .clone()
        };
        let latest = self.gpu_latest.lock().unwrap_or_else(|p| p.into_inner());
        crate::gpu::job_utilization(id, &gpus, &latest)
    }

    /// GPU memory a job's processes hold on this node, MiB, from the GPUs' newest samples;
    /// `None` without GPUs or when no sample names the job.
    pub(crate) fn job_gpu_mem_mb(&self, id: JobId) -> Option<u64> {
        self.settings.gpus.backend.as_ref()?;
        let latest = self.gpu_latest.lock().unwrap_or_else(|p| p.into_inner());
        latest
            .values()
            .flat_map(|s| s.jobs.iter())
            .filter(|j| j.job_id == id)
            .map(|j| j.mem_used_mb)
            .reduce(|a, b| a.saturating_add(b))
    }

    /// The samples for the next heartbeat.
    pub(crate) fn take_gpu_samples(&self) -> Vec<GpuSample> {
        std::mem::take(&mut *self.gpu_samples.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Samples a failed heartbeat did not deliver go back in front of newer ones.
    pub(crate) fn put_back_gpu_samples(&self, mut sent: Vec<GpuSample>) {
        if sent.is_empty() {
            return;
        }
        let mut pending = self.gpu_samples.lock().unwrap_or_else(|p| p.into_inner());
        sent.append(&mut pending);
        let over = sent.len().saturating_sub(MAX_PENDING_SAMPLES);
        sent.drain(..over);
        *pending = sent;
    }
}
