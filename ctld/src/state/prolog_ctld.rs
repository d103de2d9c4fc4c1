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

use super::{end_unreported, requeue_run, Effect, State};
use gsched_proto::job::{JobId, JobState};

impl State {
    /// The program and environment for run `start_time` of job `id`, if it still waits
    /// for them.
    pub fn prolog_slurmctld_run(
        &self,
        id: JobId,
        start_time: i64,
    ) -> Option<crate::env::CtldProgram> {
        let pattern = self.cfg.prolog_slurmctld.as_deref()?;
        let job = self.jobs.get(&id)?;
        if !self.prolog_ctld_jobs.contains(&id) || job.info.start_time != Some(start_time) {
            return None;
        }
        Some(crate::env::CtldProgram::for_job(
            &self.cfg,
            pattern,
            &job.info,
            crate::env::ScriptContext::PrologSlurmctld,
        ))
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
        if job.info.start_time != Some(start_time) {
            // Requeued meanwhile: nothing to launch.
            return Vec::new();
        }
        if job.info.state == JobState::Completing {
            // Being ended meanwhile (time limit, node down, requeue), before anything of it
            // ran on the nodes: it ends here, as its nodes would report.
            end_unreported(job, now);
            let state = job.info.state;
            self.active.note(id, state);
            if let Err(e) = self.persist(id) {
                tracing::error!("job {id}: {e}");
            }
            return Vec::new();
        }
        if job.info.state != JobState::Running {
            // Cancelled or ended meanwhile: nothing to launch.
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
}

#[cfg(test)]
mod tests {
    use super::super::tests::{register_all, spec, state_conf, ROOT};
    use super::*;
    use gsched_proto::api::TerminateReason;

    fn placed(st: &mut State, now: i64) -> (JobId, i64, String) {
        let effects = st.schedule(now);
        match effects.as_slice() {
            [Effect::PrologSlurmctld {
                node,
                job_id,
                start_time,
            }] => (*job_id, *start_time, node.clone()),
            other => panic!("expected one PrologSlurmctld, got {other:?}"),
        }
    }

    #[test]
    fn the_launch_waits_for_the_program_and_a_failure_gives_the_run_back() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state_conf(
            dir.path(),
            "NodeName=n[1-2] NodeAddr=127.0.0.1 CPUs=1 RealMemory=1000\n\
             PartitionName=debug Nodes=ALL Default=YES\nPrologSlurmctld=/bin/true\n",
        );
        register_all(&mut st, 1000);
        // Success: the launch goes out; the job showed CONFIGURING until then.
        let a = st.submit(spec(1), ROOT, 1000).unwrap();
        let (id, start, node) = placed(&mut st, 1001);
        assert_eq!(id, a);
        assert!(st.prolog_ctld_jobs.contains(&a));
        assert!(st.query(&Default::default(), true)[0].is_configuring());
        let e = st.prolog_slurmctld_done(a, start, &node, Ok(()), 1002);
        assert!(matches!(e.as_slice(), [Effect::Launch { job_id, .. }] if *job_id == a));
        assert!(!st.prolog_ctld_jobs.contains(&a));
        st.jobs.get_mut(&a).unwrap().info.state = JobState::Completed;
        // Failure of a requeueable job: back to the queue, a restart counted.
        let b = st.submit(spec(1), ROOT, 1003).unwrap();
        let (_, start, node) = placed(&mut st, 1004);
        let e = st.prolog_slurmctld_done(b, start, &node, Err("exit 1".into()), 1005);
        assert!(e.is_empty());
        let j = &st.jobs[&b].info;
        assert_eq!((j.state, j.restarts), (JobState::Pending, 1));
        // Failure of one that may not be requeued: cancelled.
        st.jobs.get_mut(&b).unwrap().info.state = JobState::Cancelled;
        let mut s = spec(1);
        s.requeue = Some(false);
        let c = st.submit(s, ROOT, 1006).unwrap();
        let (_, start, node) = placed(&mut st, 1007);
        st.prolog_slurmctld_done(c, start, &node, Err("exit 1".into()), 1008);
        assert_eq!(st.jobs[&c].info.state, JobState::Cancelled);
        // Being ended meanwhile (here: a requeue request): ends without a launch.
        let d = st.submit(spec(1), ROOT, 1009).unwrap();
        let (_, start, node) = placed(&mut st, 1010);
        {
            let j = st.jobs.get_mut(&d).unwrap();
            j.info.state = JobState::Completing;
            j.extra.terminate = Some(TerminateReason::Cancelled);
            j.extra.requeue = true;
        }
        assert!(st
            .prolog_slurmctld_done(d, start, &node, Ok(()), 1011)
            .is_empty());
        assert_eq!(st.jobs[&d].info.state, JobState::Pending);
    }
}
