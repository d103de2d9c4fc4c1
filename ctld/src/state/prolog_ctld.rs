//! `PrologSlurmctld=`: a program the controller runs, as its own user, for every run a pass
//! placed, before the run is launched (slurmctld's `prolog_slurmctld`).
//!
//! The pass records the run as usual (RUNNING, its nodes held) but, with the setting, asks
//! for [`Effect::PrologSlurmctld`] instead of the launch; the job shows as CONFIGURING
//! (`CF`) meanwhile. The dispatcher runs the program off the state lock (with
//! `PrologEpilogTimeout`) and reports to [`State::prolog_slurmctld_done`]: on success the
//! launch goes out; on failure the run is given back to the queue if the job may be
//! requeued (Slurm's `job_requeue`), else it is cancelled, as slurmctld does. A job
//! cancelled meanwhile is not launched. A controller that stops while the program runs
//! does not launch the run either: after the restart, its node does not have it, and the
//! run is requeued like any lost launch (`LOST_JOB_GRACE_SECS`). While the program runs the
//! run's launch is in flight, which a heartbeat never judges lost.

use super::{requeue_run, Effect, State};
use gsched_proto::job::{JobId, JobState};

/// What the dispatcher needs to run the program for a run (read under the lock).
pub struct PrologRun {
    pub conf: gsched_proto::site_program::ScriptConf,
    pub env: Vec<(String, String)>,
    pub scratch: std::path::PathBuf,
}

impl State {
    /// The program and environment for run `start_time` of job `id`, if it still waits
    /// for them.
    pub fn prolog_slurmctld_run(&self, id: JobId, start_time: i64) -> Option<PrologRun> {
        let pattern = self.cfg.prolog_slurmctld.as_deref()?;
        let job = self.jobs.get(&id)?;
        if !self.prolog_ctld_jobs.contains(&id) || job.info.start_time != Some(start_time) {
            return None;
        }
        Some(PrologRun {
            conf: gsched_proto::site_program::ScriptConf::new(
                pattern,
                &self.cfg,
                &self.cfg.state_save_location,
            ),
            env: crate::env::script_env(
                &self.cfg,
                &job.info,
                None,
                crate::env::ScriptContext::PrologSlurmctld,
            ),
            scratch: self.cfg.state_save_location.clone(),
        })
    }

    /// The program for run `start_time` of job `id` ended with `result`: the launch, or
    /// the run given back (requeued, or cancelled when the job may not be requeued).
    pub fn prolog_slurmctld_done(
        &mut self,
        id: JobId,
        start_time: i64,
        node: &str,
        result: Result<(), String>,
        now: i64,
    ) -> Vec<Effect> {
        if !self.prolog_ctld_jobs.remove(&id) {
            return Vec::new();
        }
        let Some(job) = self.jobs.get_mut(&id) else {
            return Vec::new();
        };
        if job.info.start_time != Some(start_time) || job.info.state != JobState::Running {
            // Cancelled, requeued or ended meanwhile: nothing to launch.
            return Vec::new();
        }
        match result {
            Ok(()) => vec![Effect::Launch {
                node: node.to_string(),
                job_id: id,
                start_time,
            }],
            Err(e) => {
                tracing::error!("job {id}: {e}");
                if job.info.requeue {
                    tracing::info!("job {id}: PrologSlurmctld failed; requeued");
                    requeue_run(job, now);
                } else {
                    tracing::info!("job {id}: PrologSlurmctld failed, job killed");
                    job.info.state = JobState::Cancelled;
                    job.info.end_time = Some(now);
                    job.launch = None;
                }
                self.active.note(id, self.jobs[&id].info.state);
                if let Err(e) = self.persist(id) {
                    tracing::error!("job {id}: {e}");
                }
                Vec::new()
            }
        }
    }

    /// Whether job `id`'s PrologSlurmctld runs (it shows as CONFIGURING).
    pub fn prolog_slurmctld_running(&self, id: JobId) -> bool {
        self.prolog_ctld_jobs.contains(&id)
    }
}
