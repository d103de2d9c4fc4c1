//! Launch requests, built when they are sent rather than when a pass starts the jobs.
//!
//! A pass that fills a large cluster starts tens of thousands of jobs at once; each launch
//! request carries the job's script and its whole environment (a few KiB). Built inside the
//! pass, every one of them was alive until its node had been sent it: 64,000 of them were
//! a peak of some 330 MB in gsctld, and glibc kept much of it afterwards. The pass now
//! records only which run goes to which node ([`Effect::Launch`]); the dispatcher builds one
//! node's requests when it sends them (a bounded number of nodes at a time), under the state
//! lock, from the job as it is then.

use super::{LaunchFailure, LaunchState, State};
use gsched_proto::api::LaunchRequest;
use gsched_proto::job::JobId;

impl State {
    /// The launch requests of `runs` (job id, start time: a pass's [`Effect::Launch`]es for
    /// one node), in their order. A run that is no longer waiting for its launch (requeued,
    /// ended, started again since) gets none: its node is not sent anything for it. A run
    /// whose script cannot be read from the store fails here with `JobLaunchFailure`
    /// instead of starting a job that would run nothing; `failed` says whether any did.
    pub fn launch_requests(
        &mut self,
        runs: &[(JobId, i64)],
        now: i64,
    ) -> (Vec<LaunchRequest>, bool) {
        let mut out = Vec::with_capacity(runs.len());
        let mut failed = false;
        for &(id, start) in runs {
            match self.launch_request(id, start) {
                Ok(Some(req)) => out.push(req),
                Ok(None) => {}
                Err(why) => {
                    failed = true;
                    self.launch_result(id, start, Err(LaunchFailure::Refused(why)), now);
                }
            }
        }
        (out, failed)
    }

    /// One run's request: the job-wide environment, and for a heterogeneous job's leader
    /// the other components' variables.
    fn launch_request(&self, id: JobId, start: i64) -> Result<Option<LaunchRequest>, String> {
        let Some(job) = self.jobs.get(&id) else {
            return Ok(None);
        };
        if job.info.start_time != Some(start) || job.launch != Some(LaunchState::InFlight) {
            return Ok(None);
        }
        let (Some(&cpus), Some(&mem_mb)) =
            (job.info.cpus_per_node.first(), job.extra.alloc_mem.first())
        else {
            return Ok(None);
        };
        let full = self.with_payload(&job.info)?;
        let info = full.as_ref().unwrap_or(&job.info);
        let mut req = crate::env::launch_request(&self.cfg, info, cpus, mem_mb);
        for (k, v) in self.het_environment(info) {
            crate::env::set(&mut req.environment, &k, v);
        }
        Ok(Some(req))
    }
}

/// The requests of a pass's launches, built as the dispatcher builds them (tests).
#[cfg(test)]
pub(crate) fn launches(st: &mut State, effects: &[super::Effect], now: i64) -> Vec<LaunchRequest> {
    let runs: Vec<(JobId, i64)> = effects
        .iter()
        .filter_map(|e| match e {
            super::Effect::Launch {
                job_id, start_time, ..
            } => Some((*job_id, *start_time)),
            _ => None,
        })
        .collect();
    st.launch_requests(&runs, now).0
}

#[cfg(test)]
mod tests {
    use super::super::tests::{register_all, spec, state, ROOT};
    use super::*;
    use gsched_proto::api::NodeStateUpdate;
    use gsched_proto::job::JobState;

    /// Between the pass that starts a job and the sending of its launch, the administrator
    /// sets its node DOWN: the job goes back to the queue (JobRequeue=1, the default), and
    /// once the node is back a later pass starts it again. The first run's launch is not
    /// sent; the second run's is. The other job, on another node, is launched with its
    /// whole environment.
    #[test]
    fn a_run_ended_before_its_launch_is_sent_is_not_sent() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(dir.path());
        register_all(&mut st, 1000);
        // Two CPUs a node, two CPUs a job: one job on each node.
        let a = st.submit(spec(2), ROOT, 1000).unwrap();
        let b = st.submit(spec(2), ROOT, 1000).unwrap();
        let effects = st.schedule(1001);
        assert_eq!(effects.len(), 2, "{effects:?}");
        let node = st.jobs[&a].info.nodes[0].clone();
        assert_ne!(st.jobs[&b].info.nodes[0], node);
        st.update_nodes(
            std::slice::from_ref(&node),
            NodeStateUpdate::Down,
            Some("bad".into()),
            None,
            ROOT,
            1002,
        )
        .unwrap();
        assert_eq!(st.jobs[&a].info.state, JobState::Pending);
        st.update_nodes(&[node], NodeStateUpdate::Resume, None, None, ROOT, 1003)
            .unwrap();
        register_all(&mut st, 1004);
        let again = st.schedule(1010);
        assert_eq!(st.jobs[&a].info.start_time, Some(1010), "{again:?}");
        let reqs = launches(&mut st, &effects, 1011);
        assert_eq!(reqs.len(), 1, "only the run still waiting is sent");
        assert_eq!(reqs[0].job_id, b);
        assert_eq!(reqs[0].start_time, 1001);
        assert_eq!(reqs[0].env("SLURM_JOB_ID"), Some(b.to_string().as_str()));
        assert_eq!(
            reqs[0].env("SLURM_JOB_NODELIST"),
            st.jobs[&b].info.nodes.first().map(String::as_str)
        );
        let reqs = launches(&mut st, &again, 1011);
        assert_eq!(reqs.len(), 1, "{again:?}");
        assert_eq!((reqs[0].job_id, reqs[0].start_time), (a, 1010));
    }
}
