//! Jobs that gsnoded killed because the MPS daemon or server of a GPU they shared died
//! (`gpu_failure` in the completion report): that was not the job's fault, so the job goes
//! back to the queue (PENDING, Reason `GpuMpsFailure`) and the run is not charged: the
//! fair-share usage counted for it is taken back, and its usage record is dropped.
//!
//! A job that was being cancelled or had hit its time limit when the failure came ends as
//! it would have (the normal completion path).

use super::priority::assoc_of;
use super::{requeue_run, State};
use gsched_proto::api::{ApiError, JobCompleteRequest, TerminateReason};
use gsched_proto::job::Reason;

impl State {
    /// Handles a report with `gpu_failure`; `None` hands it to the normal completion path.
    pub(super) fn complete_gpu_failure(
        &mut self,
        req: &JobCompleteRequest,
        now: i64,
    ) -> Option<Result<(), ApiError>> {
        let why = req.gpu_failure.as_deref()?;
        let job = self.jobs.get_mut(&req.job_id)?;
        if job.info.start_time != Some(req.start_time)
            || job.info.nodes.first() != Some(&req.node)
            || job.info.state.is_terminal()
            || matches!(
                job.extra.terminate,
                Some(TerminateReason::Cancelled | TerminateReason::TimeLimit)
            )
        {
            return None;
        }
        // Take back the fair-share usage counted for this run.
        if let Some(until) = self.usage.counted_until.remove(&req.job_id) {
            let cpus: u32 = job.info.cpus_per_node.iter().sum();
            let cpus = if cpus == 0 { job.info.num_cpus } else { cpus };
            let charged = f64::from(cpus) * (until - req.start_time).max(0) as f64;
            if let Some(u) = self.usage.by_assoc.get_mut(&assoc_of(&job.info)) {
                *u = (*u - charged).max(0.0);
            }
        }
        tracing::warn!(
            "job {}: {why} on {}; requeued without being charged",
            req.job_id,
            req.node
        );
        requeue_run(job, now);
        job.info.reason = Reason::GpuMpsFailure;
        Some(self.persist(req.job_id).map_err(super::internal))
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{register_all, spec, ROOT};
    use super::*;

    use gsched_proto::job::JobState;

    fn state(dir: &std::path::Path) -> State {
        super::super::tests::state_conf(
            dir,
            "PriorityType=priority/multifactor\n\
             NodeName=n[1-2] NodeAddr=127.0.0.1 CPUs=2 RealMemory=1000\n\
             PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE\n",
        )
    }

    fn report(id: u32, start: i64, end: i64, failure: Option<&str>) -> JobCompleteRequest {
        JobCompleteRequest {
            signal: 9,
            terminated_for: Some(TerminateReason::NotAssigned),
            gpu_failure: failure.map(Into::into),
            ..crate::state::tests::ended(id, "n1", start, end)
        }
    }

    #[test]
    fn an_mps_failure_requeues_without_charging() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(dir.path());
        let a = st.submit(spec(2), ROOT, 1000).unwrap();
        register_all(&mut st, 1001);
        st.schedule(1002);
        st.launch_result(a, 1002, Ok(()), 1002);
        assert_eq!(st.jobs[&a].info.state, JobState::Running);
        // A pass 100 s later counts 2 CPUs × 98 s.
        st.schedule(1100);
        let key = assoc_of(&st.jobs[&a].info);
        assert!(st.usage.by_assoc[&key] > 150.0, "{:?}", st.usage.by_assoc);
        let r = report(a, 1002, 1100, Some("the MPS control daemon of GPU 0 died"));
        st.complete(&r, 1100).unwrap();
        let j = &st.jobs[&a].info;
        assert_eq!(j.state, JobState::Pending);
        assert_eq!(j.reason, Reason::GpuMpsFailure);
        assert_eq!(j.reason.as_str(), "GpuMpsFailure");
        assert_eq!(j.restarts, 1);
        assert!(j.nodes.is_empty() && j.start_time.is_none());
        assert!(st.usage.by_assoc[&key] < 1.0, "{:?}", st.usage.by_assoc);
        // It runs again (the nodes heard from lately, or they would count as not responding).
        register_all(&mut st, 1199);
        st.schedule(1200);
        assert_eq!(st.jobs[&a].info.state, JobState::Running);
        // A report of the old run is ignored.
        st.complete(&report(a, 1002, 1201, Some("x")), 1201)
            .unwrap();
        assert_eq!(st.jobs[&a].info.state, JobState::Running);
    }

    #[test]
    fn without_gpu_failure_the_kill_is_a_node_failure() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(dir.path());
        let a = st.submit(spec(1), ROOT, 1000).unwrap();
        register_all(&mut st, 1001);
        st.schedule(1002);
        st.launch_result(a, 1002, Ok(()), 1002);
        st.complete(&report(a, 1002, 1010, None), 1010).unwrap();
        assert_eq!(st.jobs[&a].info.state, JobState::NodeFail);
    }
}
