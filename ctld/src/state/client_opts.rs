//! Controller side of sbatch options that real clients pass: `--signal` (a warning signal
//! before the time limit) and `--test-only` (where and when a job would start, nothing
//! stored). `--comment` needs nothing here: it lives in the spec.

use super::*;

/// The `--signal` warning of a running job, if it is due at `now` and was not sent yet:
/// marks it sent (the caller persists the job) and returns the message for its batch host.
///
/// Slurm checks warnings about once a minute; gsched sends the signal on the first
/// scheduling pass at or after `limit − sec` (passes run every second). Without `B:` the
/// signal reaches the job's steps (their tasks on every node), not the batch shell, as in
/// Slurm.
pub(super) fn warn_signal_due(job: &mut Job, start: i64, limit: u32, now: i64) -> Option<Effect> {
    let w = job.info.spec.warn_signal?;
    if job.extra.warn_signal_sent || now < w.due_at(start, limit) {
        return None;
    }
    job.extra.warn_signal_sent = true;
    let node = job.info.nodes.first()?.clone();
    Some(Effect::Signal {
        node,
        job_id: job.info.job_id,
        signal: w.signal,
        scope: w.scope(),
    })
}

impl State {
    /// `sbatch --test-only`: one scheduling decision with the job added to the queue (the
    /// queue being the pending jobs that are neither held nor waiting for a dependency);
    /// nothing is changed. Without an answer from the planner, the job is reported to start
    /// at `now` in its first partition.
    pub(super) fn test_only_answer(&self, info: &JobInfo, now: i64) -> TestOnlyAnswer {
        let view = self.cluster_view();
        let part_of = |names: &[String]| -> Vec<usize> {
            names
                .iter()
                .filter_map(|p| self.parts.iter().position(|x| &x.name == p))
                .collect()
        };
        let queued = |j: &JobInfo| QueuedJob {
            id: j.job_id,
            priority: j.priority,
            submit_time: j.submit_time,
            partitions: part_of(&j.spec.partitions),
            held: None,
            begin_time: j.eligible_time,
            time_limit: j.time_limit,
            time_min: j.spec.time_min,
            req: self.request_of(&j.spec, j.user_id),
            // Limits are not simulated: the estimate is where resources would allow it.
            limits: Vec::new(),
            het: self.het_member(j).0,
        };
        let mut queue: Vec<QueuedJob> = self
            .jobs
            .values()
            .filter(|j| {
                j.info.state == JobState::Pending && !j.info.held && j.info.dependency.is_none()
            })
            .map(|j| queued(&j.info))
            .collect();
        queue.push(queued(info));
        let decisions = gsched_sched::decide(&view, &queue, now, &self.sched_config);
        let found = decisions
            .starts
            .iter()
            .find(|s| s.job_id == info.job_id)
            .map(|s| (now, s.partition, &s.placement))
            .or_else(|| {
                decisions
                    .estimates
                    .iter()
                    .find(|e| e.job_id == info.job_id)
                    .map(|e| (e.start.max(now), e.partition, &e.placement))
            });
        match found {
            Some((start, part, placement)) => TestOnlyAnswer {
                start,
                cpus: placement.nodes.iter().map(|a| a.cpus).sum(),
                nodes: placement
                    .nodes
                    .iter()
                    .map(|a| self.nodes[a.node].name.clone())
                    .collect(),
                partition: self.parts[part].name.clone(),
            },
            None => TestOnlyAnswer {
                start: info.eligible_time.unwrap_or(now).max(now),
                cpus: info.num_cpus,
                nodes: Vec::new(),
                partition: info.partition.clone(),
            },
        }
    }

    /// Validates a job as [`State::submit`] does and answers where and when it would start;
    /// stores nothing, so the next submission gets the same id.
    pub fn test_submit(
        &mut self,
        spec: JobSpec,
        who: Identity,
        now: i64,
    ) -> Result<(JobId, TestOnlyAnswer), ApiError> {
        let (id, answer) = self.submit_or_test(spec, who, now, true)?;
        let answer = answer.expect("test_only answers");
        Ok((id, answer))
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{register_all, spec, state, ROOT};
    use super::*;
    use gsched_proto::job::WarnSignal;

    fn who() -> Identity {
        ROOT
    }

    #[test]
    fn warn_signal_is_sent_once_before_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(dir.path());
        register_all(&mut st, 1000);
        let s = JobSpec {
            time_limit: Some(1),
            warn_signal: Some(WarnSignal {
                signal: 10,
                before_secs: 55,
                batch_only: true,
            }),
            ..spec(1)
        };
        let id = st.submit(s, who(), 1000).unwrap();
        st.schedule(1000);
        assert_eq!(st.jobs[&id].info.state, JobState::Running);
        let signals = |eff: &[Effect]| {
            eff.iter()
                .filter(|e| matches!(e, Effect::Signal { job_id, signal: 10, scope: SignalScope::Batch, .. } if *job_id == id))
                .count()
        };
        assert_eq!(signals(&st.schedule(1004)), 0);
        assert_eq!(signals(&st.schedule(1005)), 1);
        assert_eq!(signals(&st.schedule(1006)), 0);
        assert!(st.jobs[&id].extra.warn_signal_sent);

        // A restarted controller remembers that the warning went out.
        drop(st);
        let mut st = state(dir.path());
        register_all(&mut st, 1007);
        assert!(st.jobs[&id].extra.warn_signal_sent);
        assert_eq!(signals(&st.schedule(1008)), 0);
    }

    #[test]
    fn test_only_stores_nothing_and_estimates() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(dir.path());
        register_all(&mut st, 1000);
        let (id, ans) = st.test_submit(spec(1), who(), 1000).unwrap();
        assert_eq!(ans.start, 1000);
        assert_eq!(ans.cpus, 1);
        assert_eq!(ans.nodes.len(), 1);
        assert!(st.jobs.is_empty());
        assert_eq!(st.submit(spec(1), who(), 1000).unwrap(), id);
        // Impossible jobs are refused as a real submission would be.
        assert!(st.test_submit(spec(100_000), who(), 1000).is_err());
    }
}
