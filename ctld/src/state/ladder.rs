//! The invalid-job ladder (see `gsched_proto::ladder_conf` for the policy): running jobs
//! that stop making progress (no CPU time, no output growth) or leave their GPUs idle are
//! flagged, and walked through notify → requeue (their resources, GPUs included, go back to
//! the cluster) → cancel, each step after its own delay while the condition lasts.
//!
//! The input is the progress counters gsnoded sends with every heartbeat; only whether they
//! moved matters. That bookkeeping is in memory: after a controller restart every job starts
//! with a clean slate, which can only delay a step, never take one early. What was done is
//! recorded on the job (`JobInfo::invalid`, persisted): the reason (`Hung`, `IdleGPU`) shows
//! in gsqueue, gscontrol and gsacct, and the ladder goes on from the last step when a
//! requeued job is flagged again.
//!
//! Thresholds are the job's QOS's (`gsacctmgr ... set HangMinutes= IdleGpuMinutes=`), else
//! its partition's, else the cluster's; a QOS with `Flags=Interactive` exempts its jobs.
//! They are read from the association table at each pass, so a change applies at once.

use super::{Effect, JobId, JobState, State};
use crate::notify::Transition;
use gsched_proto::api::{JobFilter, JobProgress, RequeueRequest};
use gsched_proto::auth::Identity;
use gsched_proto::job::{InvalidKind, InvalidMark, JobInfo, LadderStep, Reason};
use gsched_proto::ladder_conf::{PartitionLadder, QosLadder};
use std::collections::HashMap;

/// The reason a cancelled job keeps: the invalid-job ladder's when it cancelled the job.
pub(super) fn cancel_reason(info: &gsched_proto::job::JobInfo) -> Reason {
    match info.invalid {
        Some(m)
            if m.step == LadderStep::Cancel && info.start_time.is_some_and(|s| m.step_at >= s) =>
        {
            m.kind.reason()
        }
        _ => Reason::None,
    }
}

/// What the controller last saw of a running job's counters.
#[derive(Debug, Clone, Copy)]
struct Track {
    start_time: i64,
    cpu_usec: Option<u64>,
    output_bytes: Option<u64>,
    /// When the counters last moved (or were first seen).
    moved_at: i64,
    /// When the job's GPUs were last seen busy; `None` while no utilization was reported.
    gpu_busy_at: Option<i64>,
}

/// The ladder's in-memory bookkeeping.
#[derive(Debug, Default)]
pub struct LadderRt {
    tracks: HashMap<JobId, Track>,
}

impl State {
    /// Takes in the progress counters of a heartbeat.
    pub fn record_progress(&mut self, progress: &[JobProgress], now: i64) {
        if !self.ladder_enabled() {
            // Nothing would read the tracks, and nothing would forget those of ended jobs:
            // kept, they grew by one per job ever run. A policy set later starts its clocks
            // at the next heartbeat (a step comes later, never earlier).
            self.ladder.tracks = HashMap::new();
            return;
        }
        let idle_pct = self.cfg.invalid_jobs.idle_gpu_percent;
        for p in progress {
            let Some(job) = self.jobs.get(&p.job_id) else {
                continue;
            };
            if job.info.state != JobState::Running || job.info.start_time != Some(p.start_time) {
                continue;
            }
            let busy = p.gpu_util_percent.map(|u| u >= idle_pct);
            let t = self.ladder.tracks.entry(p.job_id).or_insert(Track {
                start_time: p.start_time,
                cpu_usec: p.cpu_usec,
                output_bytes: p.output_bytes,
                moved_at: now,
                gpu_busy_at: None,
            });
            if t.start_time != p.start_time {
                *t = Track {
                    start_time: p.start_time,
                    cpu_usec: p.cpu_usec,
                    output_bytes: p.output_bytes,
                    moved_at: now,
                    gpu_busy_at: None,
                };
            }
            if t.cpu_usec != p.cpu_usec || t.output_bytes != p.output_bytes {
                t.cpu_usec = p.cpu_usec;
                t.output_bytes = p.output_bytes;
                t.moved_at = now;
            }
            match busy {
                Some(true) => t.gpu_busy_at = Some(now),
                // Idle since it was first measured.
                Some(false) if t.gpu_busy_at.is_none() => t.gpu_busy_at = Some(now),
                _ => {}
            }
        }
    }

    /// Whether the cluster, a partition or a QOS asks for any step of the ladder.
    fn ladder_enabled(&self) -> bool {
        self.cfg.invalid_jobs.any_enabled(
            self.cfg.partitions.iter().map(|p| &p.ladder),
            self.acct.qos.values().map(|q| q.ladder()),
        )
    }

    /// Flags jobs and takes the steps that are due; returns what the nodes must do.
    pub(super) fn run_ladder(&mut self, now: i64) -> Vec<Effect> {
        if !self.ladder_enabled() {
            return Vec::new();
        }
        let policy = &self.cfg.invalid_jobs;
        let jobs = &self.jobs;
        self.ladder.tracks.retain(|id, t| {
            jobs.get(id)
                .is_some_and(|j| j.info.start_time == Some(t.start_time))
        });
        // (job, kind, since): jobs whose condition holds now, and since when.
        let mut flagged: Vec<(JobId, InvalidKind, i64)> = Vec::new();
        let mut cleared: Vec<JobId> = Vec::new();
        for (&id, t) in &self.ladder.tracks {
            let Some(job) = self.jobs.get(&id) else {
                continue;
            };
            if job.info.state != JobState::Running || job.info.is_suspended() {
                continue;
            }
            let (part, qos) = self.ladder_settings(&job.info);
            let hung = policy
                .hang_for(&part, &qos)
                .filter(|h| now - t.moved_at >= *h as i64)
                .map(|h| (InvalidKind::Hung, t.moved_at + h as i64));
            let idle = policy.idle_gpu_for(&part, &qos).and_then(|h| {
                let since = t.gpu_busy_at?;
                (now - since >= h as i64).then_some((InvalidKind::IdleGpu, since + h as i64))
            });
            match hung.or(idle) {
                Some((kind, since)) => flagged.push((id, kind, since)),
                None if matches!(job.info.reason, Reason::Hung | Reason::IdleGPU) => {
                    cleared.push(id)
                }
                None => {}
            }
        }
        flagged.sort_by_key(|f| f.0);
        let mut effects = Vec::new();
        let mut changed = Vec::new();
        for id in cleared {
            if let Some(j) = self.jobs.get_mut(&id) {
                j.info.reason = Reason::None;
                changed.push(id);
            }
        }
        for (id, kind, since) in flagged {
            let Some(job) = self.jobs.get_mut(&id) else {
                continue;
            };
            let start = job.info.start_time.unwrap_or(since);
            // The flag of this run: kept when already set in it, else set now (the last
            // step of an earlier run carries over).
            let mark = match job.info.invalid {
                Some(m) if m.flagged_at >= start => m,
                Some(m) => InvalidMark {
                    kind,
                    flagged_at: since,
                    ..m
                },
                None => InvalidMark {
                    kind,
                    step: LadderStep::Notify,
                    flagged_at: since,
                    step_at: since,
                },
            };
            let first_in_history = job.info.invalid.is_none();
            if job.info.reason != kind.reason() || job.info.invalid != Some(mark) {
                job.info.reason = kind.reason();
                job.info.invalid = Some(mark);
                changed.push(id);
            }
            let requeue_ok = job.info.requeue;
            let next = self
                .cfg
                .invalid_jobs
                .steps
                .iter()
                .filter(|(s, _)| first_in_history || *s > mark.step)
                .find(|(s, _)| *s != LadderStep::Requeue || requeue_ok)
                .copied();
            let Some((step, delay)) = next else {
                continue;
            };
            if now < mark.flagged_at + delay as i64 {
                continue;
            }
            if let Some(j) = self.jobs.get_mut(&id) {
                j.info.invalid = Some(InvalidMark {
                    step,
                    step_at: now,
                    ..mark
                });
            }
            tracing::info!(
                "job {id}: {} for {} s; invalid-job step {}",
                kind.reason(),
                now - mark.flagged_at + self.threshold(id, kind),
                step.as_str()
            );
            self.count_ladder_step(step, kind);
            let controller = Identity {
                uid: self.slurm_uid.unwrap_or(0),
                gid: 0,
            };
            match step {
                LadderStep::Notify => changed.push(id),
                LadderStep::Requeue => {
                    match self.requeue(&RequeueRequest::of(&[id]), controller, now) {
                        Ok((_, e)) => effects.extend(e),
                        Err(e) => tracing::error!("job {id}: invalid-job requeue failed: {e}"),
                    }
                }
                LadderStep::Cancel => {
                    let filter = JobFilter {
                        ids: vec![id],
                        ..JobFilter::default()
                    };
                    match self.signal_jobs(
                        &filter,
                        None,
                        gsched_proto::api::SignalScope::Full,
                        controller,
                        now,
                    ) {
                        Ok((_, e)) => effects.extend(e),
                        Err(e) => tracing::error!("job {id}: invalid-job cancel failed: {e}"),
                    }
                }
            }
            self.ladder.tracks.remove(&id);
            self.announce_invalid(id, now);
        }
        changed.sort_unstable();
        changed.dedup();
        if let Err(e) = self.persist_many(&changed) {
            tracing::error!("cannot record invalid-job flags: {e}");
        }
        effects
    }

    /// The partition's and the QOS's own settings for a job (defaults when either is gone).
    fn ladder_settings(&self, info: &JobInfo) -> (PartitionLadder, QosLadder) {
        let part = self
            .cfg
            .partition(&info.partition)
            .map(|p| p.ladder)
            .unwrap_or_default();
        let qos = self
            .acct
            .qos
            .get(info.qos())
            .map(|q| q.ladder())
            .unwrap_or_default();
        (part, qos)
    }

    /// The threshold (seconds) after which `kind` flagged job `id`, for the log.
    fn threshold(&self, id: JobId, kind: InvalidKind) -> i64 {
        let Some(job) = self.jobs.get(&id) else {
            return 0;
        };
        let (part, qos) = self.ladder_settings(&job.info);
        let p = &self.cfg.invalid_jobs;
        match kind {
            InvalidKind::Hung => p.hang_for(&part, &qos),
            InvalidKind::IdleGpu => p.idle_gpu_for(&part, &qos),
        }
        .unwrap_or(0) as i64
    }

    fn announce_invalid(&mut self, id: JobId, now: i64) {
        let Some(job) = self.jobs.get(&id) else {
            return;
        };
        let ds = crate::notify::deliveries(
            &self.cfg.notify,
            &self.cfg.cluster_name,
            &job.info,
            Transition::InvalidJob,
            None,
            now,
        );
        self.deliver(ds);
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{register_all, spec, ROOT};
    use super::*;
    use gsched_proto::acct::{AcctChange, AcctEntity, AcctOp};

    /// Hung after a minute cluster-wide; the partition `calm` exempts its jobs.
    fn state(dir: &std::path::Path) -> State {
        super::super::tests::state_conf(
            dir,
            "HangMinutes=1\n\
             NodeName=n[1-2] NodeAddr=127.0.0.1 CPUs=2 RealMemory=1000\n\
             PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE\n\
             PartitionName=calm Nodes=ALL HangMinutes=0\n",
        )
    }

    fn qos(st: &mut State, op: AcctOp, name: &str, set: &[(&str, &str)]) {
        let c = AcctChange {
            op,
            entity: AcctEntity::Qos,
            names: vec![name.into()],
            conditions: Vec::new(),
            settings: set
                .iter()
                .map(|(k, v)| (k.to_string(), "=".into(), v.to_string()))
                .collect(),
        };
        st.acct_change(&c, ROOT).unwrap();
    }

    fn submit(st: &mut State, partition: &str, qos: &str) -> JobId {
        let mut s = spec(1);
        s.partitions = vec![partition.into()];
        s.qos = Some(qos.into());
        st.submit(s, ROOT, 1000).unwrap()
    }

    /// Every running job reports the same counters: no progress.
    fn still(st: &mut State, now: i64) {
        let progress: Vec<JobProgress> = st
            .jobs
            .values()
            .filter(|j| j.info.state == JobState::Running)
            .map(|j| JobProgress {
                job_id: j.info.job_id,
                start_time: j.info.start_time.unwrap(),
                cpu_usec: Some(5),
                output_bytes: Some(0),
                gpu_util_percent: None,
            })
            .collect();
        st.record_progress(&progress, now);
    }

    fn reason(st: &State, id: JobId) -> Reason {
        st.jobs[&id].info.reason
    }

    #[test]
    fn without_a_policy_progress_is_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = super::super::tests::state(dir.path());
        register_all(&mut st, 1000);
        st.submit(spec(1), ROOT, 1000).unwrap();
        st.schedule(1000);
        still(&mut st, 1010);
        assert!(st.ladder.tracks.is_empty(), "{:?}", st.ladder.tracks);
        // With a QOS that asks for the ladder, it is.
        qos(&mut st, AcctOp::Add, "strict", &[("HangMinutes", "1")]);
        still(&mut st, 1020);
        assert_eq!(st.ladder.tracks.len(), 1);
    }

    #[test]
    fn qos_settings_win_over_partition_and_cluster_and_interactive_exempts() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(dir.path());
        qos(&mut st, AcctOp::Add, "strict", &[("HangMinutes", "0.5")]);
        qos(&mut st, AcctOp::Add, "patient", &[("HangMinutes", "0")]);
        qos(
            &mut st,
            AcctOp::Add,
            "jupyter",
            &[("Flags", "Interactive"), ("HangMinutes", "0.1")],
        );
        let plain = submit(&mut st, "debug", "normal");
        let strict = submit(&mut st, "calm", "strict");
        let patient = submit(&mut st, "debug", "patient");
        let jupyter = submit(&mut st, "debug", "jupyter");
        register_all(&mut st, 1001);
        st.schedule(1002);
        for id in [plain, strict, patient, jupyter] {
            assert_eq!(st.jobs[&id].info.state, JobState::Running);
            st.launch_result(id, 1002, Ok(()), 1002);
        }
        still(&mut st, 1003);
        // After 30 s: the strict QOS's threshold, although its partition says 0.
        still(&mut st, 1033);
        st.run_ladder(1033);
        assert_eq!(reason(&st, strict), Reason::Hung);
        assert_eq!(st.jobs[&strict].info.invalid.unwrap().flagged_at, 1033);
        for id in [plain, patient, jupyter] {
            assert_eq!(reason(&st, id), Reason::None, "job {id}");
        }
        // After a minute: the cluster's, for the job whose QOS sets nothing; the QOS with 0
        // and the interactive one (whose own 0.1 does not count) stay exempt.
        still(&mut st, 1063);
        st.run_ladder(1063);
        assert_eq!(reason(&st, plain), Reason::Hung);
        assert_eq!(reason(&st, patient), Reason::None);
        assert_eq!(reason(&st, jupyter), Reason::None);
        // A change of the QOS applies at once: without Interactive its own 0.1 minutes hold,
        // and with it again the flag goes.
        // (A step taken restarts the job's clock: `still` before each pass.)
        qos(&mut st, AcctOp::Modify, "jupyter", &[("Flags", "-1")]);
        still(&mut st, 1064);
        st.run_ladder(1064);
        assert_eq!(reason(&st, jupyter), Reason::Hung);
        qos(
            &mut st,
            AcctOp::Modify,
            "jupyter",
            &[("Flags", "Interactive")],
        );
        still(&mut st, 1065);
        st.run_ladder(1065);
        assert_eq!(reason(&st, jupyter), Reason::None);
        // Clearing the strict QOS's setting gives the partition's exemption back.
        qos(&mut st, AcctOp::Modify, "strict", &[("HangMinutes", "-1")]);
        still(&mut st, 1066);
        st.run_ladder(1066);
        assert_eq!(reason(&st, strict), Reason::None);
    }

    #[test]
    fn a_qos_alone_turns_the_ladder_on() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = super::super::tests::state_conf(
            dir.path(),
            "NodeName=n[1-2] NodeAddr=127.0.0.1 CPUs=2 RealMemory=1000\n\
             PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE\n",
        );
        qos(&mut st, AcctOp::Add, "strict", &[("HangMinutes", "0.5")]);
        let plain = submit(&mut st, "debug", "normal");
        let strict = submit(&mut st, "debug", "strict");
        register_all(&mut st, 1001);
        st.schedule(1002);
        for id in [plain, strict] {
            st.launch_result(id, 1002, Ok(()), 1002);
        }
        still(&mut st, 1003);
        still(&mut st, 1100);
        st.run_ladder(1100);
        assert_eq!(reason(&st, strict), Reason::Hung);
        assert_eq!(reason(&st, plain), Reason::None);
    }
}
