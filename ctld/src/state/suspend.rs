//! `scontrol suspend|resume`: an administrator stops a running job and lets it continue
//! later (Slurm semantics). The job keeps its nodes, cores and memory while suspended, so
//! for the scheduler it is still RUNNING; the commands show SUSPENDED. Its time limit
//! clock stops meanwhile. On the node the job's processes are frozen (cgroup freezer) or
//! stopped (SIGSTOP) without cgroups, and thawed (SIGCONT) on resume.

use super::{internal, ActionResults, Effect, State};
use gsched_proto::api::{ApiError, ErrorCode};
use gsched_proto::auth::Identity;
use gsched_proto::job::{JobId, JobState};

impl State {
    /// Suspends (`resume == false`) or resumes the jobs `ids`. Only root and SlurmUser may.
    pub fn suspend(
        &mut self,
        ids: &[JobId],
        resume: bool,
        who: Identity,
        now: i64,
    ) -> Result<(ActionResults, Vec<Effect>), ApiError> {
        if !self.is_admin(&who) {
            return Err(ApiError::new(
                ErrorCode::AccessDenied,
                "Access/permission denied: only root or SlurmUser may suspend or resume jobs",
            ));
        }
        let mut results = Vec::new();
        let mut effects = Vec::new();
        let mut changed = Vec::new();
        for &id in ids {
            let Some(job) = self.jobs.get_mut(&id) else {
                results.push((id, Some(ApiError::plain(ErrorCode::InvalidJobId))));
                continue;
            };
            let info = &mut job.info;
            let refusal = match info.state {
                JobState::Pending => Some(ErrorCode::JobPending),
                JobState::Running if !resume && info.suspended_since.is_some() => {
                    Some(ErrorCode::JobSuspended)
                }
                JobState::Running if resume && info.suspended_since.is_none() => {
                    Some(ErrorCode::JobNotSuspended)
                }
                JobState::Running => None,
                _ => Some(ErrorCode::JobAlreadyDone),
            };
            if let Some(code) = refusal {
                results.push((id, Some(ApiError::plain(code))));
                continue;
            }
            if resume {
                if let Some(t) = info.suspended_since.take() {
                    info.suspended_secs += (now - t).max(0);
                }
            } else {
                info.suspended_since = Some(now);
            }
            if let Some(node) = info.nodes.first() {
                effects.push(Effect::Suspend {
                    node: node.clone(),
                    job_id: id,
                    suspend: !resume,
                });
            }
            changed.push(id);
            results.push((id, None));
        }
        self.persist_many(&changed).map_err(internal)?;
        Ok((results, effects))
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{register_all, spec, state};
    use super::*;
    use crate::state::tests::ended;
    use gsched_proto::api::{JobCompleteRequest, TerminateReason};

    const ROOT: Identity = Identity { uid: 0, gid: 0 };

    #[test]
    fn suspend_resume_and_the_time_limit_clock() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(dir.path());
        let mut s = spec(1);
        s.time_limit = Some(1);
        let a = st.submit(s, ROOT, 1000).unwrap();
        let p = st.submit(spec(1), ROOT, 1000).unwrap();
        register_all(&mut st, 1001);
        st.schedule(1002);
        st.launch_result(a, 1002, Ok(()), 1002);

        let nobody = Identity {
            uid: 4242,
            gid: 4242,
        };
        let e = st.suspend(&[a], false, nobody, 1010).unwrap_err();
        assert_eq!(e.code, ErrorCode::AccessDenied);

        let (r, eff) = st.suspend(&[a, 999], false, ROOT, 1010).unwrap();
        assert!(r[0].1.is_none(), "{r:?}");
        assert_eq!(r[1].1.as_ref().unwrap().code, ErrorCode::InvalidJobId);
        assert!(matches!(eff[..], [Effect::Suspend { suspend: true, .. }]));
        assert!(st.jobs[&a].info.is_suspended());
        assert_eq!(st.jobs[&a].info.state_long(), "SUSPENDED");
        assert_eq!(st.jobs[&a].info.state_compact(), "S");
        let (r, _) = st.suspend(&[a], false, ROOT, 1011).unwrap();
        assert_eq!(r[0].1.as_ref().unwrap().code, ErrorCode::JobSuspended);
        if st.jobs[&p].info.state == JobState::Pending {
            let (r, _) = st.suspend(&[p], false, ROOT, 1011).unwrap();
            assert_eq!(r[0].1.as_ref().unwrap().message, "Job is pending execution");
        }

        // Suspended past its 1-minute limit: not timed out.
        st.schedule(1100);
        assert_eq!(st.jobs[&a].info.state, JobState::Running);
        // Resumed after 100 s: the limit is now start + 100 + 60.
        let (r, eff) = st.suspend(&[a], true, ROOT, 1110).unwrap();
        assert!(r[0].1.is_none());
        assert!(matches!(eff[..], [Effect::Suspend { suspend: false, .. }]));
        assert_eq!(st.jobs[&a].info.suspended_secs, 100);
        let (r, _) = st.suspend(&[a], true, ROOT, 1111).unwrap();
        assert_eq!(r[0].1.as_ref().unwrap().code, ErrorCode::JobNotSuspended);
        st.schedule(1160);
        assert_eq!(st.jobs[&a].info.state, JobState::Running);
        st.schedule(1163);
        assert_eq!(st.jobs[&a].info.state, JobState::Completing);
        let done = JobCompleteRequest {
            signal: 15,
            terminated_for: Some(TerminateReason::TimeLimit),
            ..ended(a, "n1", 1002, 1165)
        };
        st.complete(&done, 1165).unwrap();
        assert_eq!(st.jobs[&a].info.state, JobState::Timeout);
        assert_eq!(st.jobs[&a].info.suspended_total(2000), 100);
    }
}
