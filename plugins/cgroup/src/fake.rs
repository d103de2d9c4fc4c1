//! An in-memory [`Cgroups`] for tests of the code that drives cgroups (gsnoded's launch and
//! clean-up): it records the jobs, their limits and what was asked of them, and reports the
//! OOM kills and usage a test sets.

use crate::{CgroupError, Cgroups, JobLimits, Wanted};
use gsched_proto::job::{JobId, JobUsage};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

#[derive(Debug, Default, Clone, PartialEq)]
pub struct FakeJob {
    pub limits: JobLimits,
    pub steps: Vec<String>,
    pub frozen: bool,
    pub killed: u32,
    pub oom_kills: u64,
    pub usage: JobUsage,
    /// What `memory_current` reports.
    pub memory_current: Option<u64>,
}

#[derive(Debug, Default)]
pub struct Fake {
    pub jobs: Mutex<BTreeMap<JobId, FakeJob>>,
    /// A failure `create_job` returns (to test launch failures).
    pub fail_create: Mutex<Option<String>>,
}

impl Fake {
    pub fn job(&self, id: JobId) -> Option<FakeJob> {
        self.lock().get(&id).cloned()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<JobId, FakeJob>> {
        self.jobs.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn with<T>(&self, id: JobId, f: impl FnOnce(&mut FakeJob) -> T) -> Result<T, CgroupError> {
        self.lock()
            .get_mut(&id)
            .map(f)
            .ok_or_else(|| CgroupError::Unsupported(format!("fake: no cgroup for job {id}")))
    }
}

impl Cgroups for Fake {
    fn name(&self) -> &'static str {
        "cgroup/fake"
    }

    fn prepare(&self, _wanted: &Wanted) -> Result<(), CgroupError> {
        Ok(())
    }

    fn create_job(&self, job: JobId, limits: &JobLimits) -> Result<(), CgroupError> {
        if let Some(m) = self
            .fail_create
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
        {
            return Err(CgroupError::Unsupported(m));
        }
        self.lock().entry(job).or_default().limits = limits.clone();
        Ok(())
    }

    fn create_step(&self, job: JobId, step: &str) -> Result<Vec<PathBuf>, CgroupError> {
        self.with(job, |j| j.steps.push(step.to_string()))?;
        Ok(vec![PathBuf::from(format!(
            "/fake/job_{job}/step_{step}/cgroup.procs"
        ))])
    }

    fn pids(&self, _job: JobId) -> Vec<i32> {
        Vec::new()
    }

    fn kill(&self, job: JobId, _limit: Duration) -> Result<usize, CgroupError> {
        self.with(job, |j| j.killed += 1)?;
        Ok(0)
    }

    fn freeze(&self, job: JobId, frozen: bool) -> Result<(), CgroupError> {
        self.with(job, |j| j.frozen = frozen)
    }

    fn oom_kills(&self, job: JobId) -> u64 {
        self.job(job).map_or(0, |j| j.oom_kills)
    }

    fn usage(&self, job: JobId) -> JobUsage {
        self.job(job).map(|j| j.usage).unwrap_or_default()
    }

    fn memory_current(&self, job: JobId) -> Option<u64> {
        self.job(job)?.memory_current
    }

    fn remove_job(&self, job: JobId) -> Result<(), CgroupError> {
        self.lock().remove(&job);
        Ok(())
    }

    fn jobs(&self) -> Vec<JobId> {
        self.lock().keys().copied().collect()
    }
}
