//! Node health and lifecycle: failure detection, NODE_FAIL and requeue, `ReturnToService`,
//! load samples, draining with a deadline (`MigrateBy=`) and `scontrol reboot`.
//!
//! Why here and not in the node daemon: only the controller knows which run of a job a node
//! should hold. A node that stops answering is first NOT_RESPONDING (it misses heartbeats),
//! then DOWN once silent for `SlurmdTimeout` (Slurm's rule). Its jobs end NODE_FAIL at that
//! moment and the requeue-able ones (`JobRequeue=1` unless `--no-requeue`, or `--requeue`)
//! go back to the queue as a new run, which starts with a new start time. The start time is
//! the run's *epoch*: every launch carries it, every heartbeat lists `(job, start time)`, and
//! a node listing a run the controller no longer assigns to it is told to kill it (see
//! `State::reconcile`), so a node that comes back after a partition kills its stale copy
//! even while the same job id runs elsewhere, and that copy's late report is ignored.
//!
//! `MigrateBy=` (gsched's extension of `scontrol update NodeName= State=DRAIN`): no new job
//! starts on the node, and each running job is moved off by the deadline:
//! * a job with `--signal` gets its signal now (its checkpoint cue) and is requeued when it
//!   ends, or after its warning time (`@sec`), whichever comes first, but never after the
//!   deadline;
//! * a job without `--signal` that will end (by its time limit) before the deadline is left
//!   to finish; one that would overrun it is requeued at the deadline (killed there if it is
//!   not requeue-able, `--no-requeue`).
//!
//! So the node is empty by the deadline.

use super::{requeue_run, Effect, NodeAdmin, State, HEARTBEAT_SECS};
use gsched_proto::api::{ApiError, ErrorCode, TerminateReason};
use gsched_proto::auth::Identity;
use gsched_proto::job::{JobId, JobState, Reason};
use gsched_proto::resv::{NodeLoad, RebootNextState, RebootRequest};
use serde::{Deserialize, Serialize};

/// The reason Slurm gives a node it set DOWN for not answering.
pub const NOT_RESPONDING_REASON: &str = "Not responding";

/// A requested reboot, kept with the node's admin state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RebootState {
    pub asap: bool,
    pub next_state: RebootNextState,
    /// When the reboot was sent to the node (`REBOOT_ISSUED`); `None`: requested only.
    pub issued_at: Option<i64>,
}

/// What the controller knows of a node beyond its config and admin state (memory only).
#[derive(Debug, Clone, Default)]
pub struct NodeLifeRt {
    /// The last load sample.
    pub load: Option<NodeLoad>,
}

impl State {
    /// Seconds between heartbeats: a third of `SlurmdTimeout` (Slurm pings that often),
    /// at most [`HEARTBEAT_SECS`], at least 1.
    pub fn heartbeat_secs(&self) -> u32 {
        match self.cfg.slurmd_timeout {
            0 => HEARTBEAT_SECS,
            t => (t / 3).clamp(1, HEARTBEAT_SECS),
        }
    }

    /// Node liveness, at the start of every pass: NOT_RESPONDING after missed heartbeats,
    /// DOWN (and its jobs failed) after `SlurmdTimeout` of silence.
    pub(super) fn node_health(&mut self, now: i64) -> Vec<Effect> {
        let hb = i64::from(self.heartbeat_secs());
        let timeout = i64::from(self.cfg.slurmd_timeout);
        // Slurm pings every third of SlurmdTimeout and shows a node NOT_RESPONDING after a
        // failed ping: here after two thirds of it (and three missed heartbeats).
        let nr_after = if timeout > 0 {
            (3 * hb).max(2 * timeout / 3).min(timeout)
        } else {
            3 * hb
        };
        let slurm_uid = self.slurm_uid.unwrap_or(0);
        let mut down = Vec::new();
        for (i, n) in self.nodes.iter_mut().enumerate() {
            if !n.registered {
                continue;
            }
            let Some(t) = n.last_heard else { continue };
            let silent = now - t;
            n.not_responding = silent > nr_after;
            if timeout > 0 && silent > timeout && !n.admin.down {
                tracing::warn!(
                    "node {} silent for {silent}s (SlurmdTimeout={timeout}): set DOWN",
                    n.name
                );
                n.admin.down = true;
                n.admin.auto_down = true;
                n.admin.reason = Some(NOT_RESPONDING_REASON.into());
                n.admin.reason_time = Some(now);
                n.admin.reason_uid = Some(slurm_uid);
                down.push(i);
            }
        }
        let mut effects = Vec::new();
        for i in down {
            self.save_node_admin(i);
            effects.extend(self.fail_jobs_on(i, now));
        }
        effects
    }

    pub(super) fn save_node_admin(&mut self, i: usize) {
        let n = &self.nodes[i];
        let rec = serde_json::to_string(&n.admin).unwrap_or_default();
        let name = n.name.clone();
        if let Err(e) = self.store.save_node(&name, &rec) {
            tracing::error!("cannot record the state of node {name}: {e}");
        }
    }

    /// A node is DOWN: every job on it ends NODE_FAIL, and goes back to the queue when it
    /// may be requeued. Jobs whose batch host is another (live) node are told to end there.
    pub(super) fn fail_jobs_on(&mut self, i: usize, now: i64) -> Vec<Effect> {
        let name = self.nodes[i].name.clone();
        let mut effects = Vec::new();
        let mut changed = Vec::new();
        for job in self.jobs.values_mut() {
            if !matches!(job.info.state, JobState::Running | JobState::Completing)
                || !job.info.nodes.contains(&name)
            {
                continue;
            }
            let id = job.info.job_id;
            if let Some(batch) = job.info.nodes.first().filter(|b| **b != name) {
                effects.push(Effect::Terminate {
                    node: batch.clone(),
                    job_id: id,
                    reason: TerminateReason::NotAssigned,
                    kill_wait: 0,
                });
            }
            job.info.end_time = Some(now);
            job.launch = None;
            if job.info.state == JobState::Completing {
                // It was being ended anyway.
                job.info.state = match job.extra.terminate {
                    Some(TerminateReason::TimeLimit) => JobState::Timeout,
                    Some(TerminateReason::Cancelled) => JobState::Cancelled,
                    _ => JobState::NodeFail,
                };
                if job.extra.requeue {
                    requeue_run(job, now);
                }
            } else {
                job.info.state = JobState::NodeFail;
                job.info.reason = Reason::NodeDown;
                if job.info.requeue && job.info.het.is_none() {
                    tracing::info!("job {id}: node {name} failed; requeued");
                    requeue_run(job, now);
                } else {
                    tracing::info!("job {id}: node {name} failed; NODE_FAIL");
                }
            }
            changed.push(id);
        }
        if let Err(e) = self.persist_many(&changed) {
            tracing::error!("cannot record the jobs of failed node {name}: {e}");
        }
        effects
    }

    /// The node answered (heartbeat) or registered: `ReturnToService` and reboots.
    pub(super) fn node_back(&mut self, i: usize, registering: bool, daemon_start: i64, now: i64) {
        let rts = self.cfg.lifecycle.return_to_service;
        let n = &mut self.nodes[i];
        let mut changed = false;
        if registering {
            if let Some(r) = n.admin.reboot.clone() {
                if r.issued_at.is_some_and(|t| daemon_start >= t) {
                    tracing::info!("node {}: rebooted", n.name);
                    let asap_drain = r.asap;
                    n.admin.reboot = None;
                    if asap_drain {
                        n.admin.drain = false;
                    }
                    match r.next_state {
                        RebootNextState::Resume => {
                            if n.admin
                                .reason
                                .as_deref()
                                .is_some_and(|x| x.starts_with("Reboot"))
                            {
                                n.admin.reason = None;
                                n.admin.reason_time = None;
                                n.admin.reason_uid = None;
                            }
                        }
                        RebootNextState::Down => {
                            n.admin.down = true;
                            n.admin.reason = Some("Reboot ASAP : reboot complete".into());
                            n.admin.reason_time = Some(now);
                        }
                    }
                    changed = true;
                }
            }
        }
        let a = &n.admin;
        if a.down && ((rts >= 1 && a.auto_down) || (rts == 2 && registering)) {
            tracing::info!(
                "node {} answers again: back in service (ReturnToService={rts})",
                n.name
            );
            let drain = n.admin.drain && !n.admin.auto_down;
            n.admin = NodeAdmin {
                drain,
                ..NodeAdmin::default()
            };
            changed = true;
        }
        if changed {
            self.save_node_admin(i);
        }
    }

    /// A load sample from a heartbeat.
    pub fn node_load(&mut self, name: &str, load: Option<NodeLoad>) {
        if let Some(&i) = self.node_index.get(name) {
            if load.is_some() {
                self.nodes[i].life.load = load;
            }
        }
    }

    /// The placement penalty of node `i` (load-aware placement, `NodeLoadThreshold=`).
    pub(super) fn node_penalty(&self, i: usize) -> u32 {
        gsched_sched::score::load_penalty(
            self.nodes[i].life.load.map(|l| l.score_pct()),
            self.cfg.lifecycle.load_threshold_pct,
        )
    }

    /// `MigrateBy=`: moves the running jobs off drained nodes with a deadline (see the
    /// module's documentation). Called by every pass.
    pub(super) fn migrations(&mut self, now: i64) -> Vec<Effect> {
        let kill_wait = self.cfg.kill_wait;
        let deadlines: Vec<(String, i64)> = self
            .nodes
            .iter()
            .filter_map(|n| n.admin.migrate_by.map(|t| (n.name.clone(), t)))
            .collect();
        let mut effects = Vec::new();
        let mut changed = Vec::new();
        for (name, deadline) in deadlines {
            let ids: Vec<JobId> = self
                .jobs
                .values()
                .filter(|j| j.info.state == JobState::Running && j.info.nodes.contains(&name))
                .map(|j| j.info.job_id)
                .collect();
            for id in ids {
                let end = {
                    let j = &self.jobs[&id];
                    self.planned_end(&j.info, None)
                };
                let job = self.jobs.get_mut(&id).expect("listed");
                let batch = job.info.nodes.first().cloned().unwrap_or_default();
                if job.extra.migrate_at.is_none() {
                    if let Some(w) = job.info.spec.warn_signal {
                        // Checkpoint cue now; requeued when it ends, or after its warning time.
                        job.extra.migrate_at = Some((now + i64::from(w.before_secs)).min(deadline));
                        job.extra.warn_signal_sent = true;
                        if job.info.requeue {
                            job.extra.requeue = true;
                        }
                        tracing::info!(
                            "job {id}: node {name} drains by {deadline}: signal {} sent, requeue by {}",
                            w.signal,
                            job.extra.migrate_at.unwrap_or(deadline)
                        );
                        effects.push(Effect::Signal {
                            node: batch.clone(),
                            job_id: id,
                            signal: w.signal,
                            scope: w.scope(),
                        });
                        changed.push(id);
                    } else if end > deadline {
                        job.extra.migrate_at = Some(deadline);
                        changed.push(id);
                    } else {
                        continue;
                    }
                }
                if job.extra.migrate_at.is_some_and(|t| t <= now) {
                    // Ended here now: requeued (elsewhere: this node is drained), or ended
                    // NODE_FAIL when it may not be requeued.
                    job.info.state = JobState::Completing;
                    job.extra.requeue = job.info.requeue;
                    let reason = if job.info.requeue {
                        TerminateReason::Cancelled
                    } else {
                        TerminateReason::NotAssigned
                    };
                    job.extra.terminate = Some(reason);
                    job.terminate_sent_at = Some(now);
                    effects.push(Effect::Terminate {
                        node: batch,
                        job_id: id,
                        reason,
                        kill_wait,
                    });
                    if !changed.contains(&id) {
                        changed.push(id);
                    }
                }
            }
        }
        if let Err(e) = self.persist_many(&changed) {
            tracing::error!("cannot record job migrations: {e}");
        }
        effects
    }

    /// `scontrol reboot`.
    pub fn reboot_nodes(
        &mut self,
        req: &RebootRequest,
        who: Identity,
        now: i64,
    ) -> Result<(), ApiError> {
        if !self.is_admin(&who) {
            return Err(ApiError::plain(ErrorCode::AccessDenied));
        }
        if self.cfg.lifecycle.reboot_program.is_none() {
            return Err(ApiError::new(
                ErrorCode::Disabled,
                "RebootProgram is not set in gsched.conf: set it to the program that reboots a node",
            ));
        }
        let mut idx = Vec::new();
        for expr in &req.names {
            let names = if expr.eq_ignore_ascii_case("ALL") {
                self.nodes.iter().map(|n| n.name.clone()).collect()
            } else {
                State::expand_nodes(expr)?
            };
            for n in names {
                match self.node_index.get(&n) {
                    Some(&i) => idx.push(i),
                    None => {
                        return Err(ApiError::new(
                            ErrorCode::InvalidNodeName,
                            format!("Invalid node name specified: {n}"),
                        ))
                    }
                }
            }
        }
        for i in idx {
            let n = &mut self.nodes[i];
            n.admin.reboot = Some(RebootState {
                asap: req.asap,
                next_state: req.next_state,
                issued_at: None,
            });
            if req.asap {
                n.admin.drain = true;
                n.admin.reason = Some(match &req.reason {
                    Some(r) => format!("Reboot ASAP : {r}"),
                    None => "Reboot ASAP".into(),
                });
                n.admin.reason_time = Some(now);
                n.admin.reason_uid = Some(who.uid);
            } else if let Some(r) = &req.reason {
                n.admin.reason = Some(format!("Reboot : {r}"));
                n.admin.reason_time = Some(now);
                n.admin.reason_uid = Some(who.uid);
            }
            self.save_node_admin(i);
        }
        Ok(())
    }

    /// Sends the requested reboots of nodes that run no job, and sets DOWN the nodes that
    /// did not come back within `ResumeTimeout`. Called by every pass.
    pub(super) fn reboots(&mut self, now: i64) -> Vec<Effect> {
        let Some(program) = self.cfg.lifecycle.reboot_program.clone() else {
            return Vec::new();
        };
        let timeout = i64::from(self.cfg.lifecycle.resume_timeout_secs);
        let slurm_uid = self.slurm_uid.unwrap_or(0);
        for i in 0..self.nodes.len() {
            let n = &mut self.nodes[i];
            let late = n
                .admin
                .reboot
                .as_ref()
                .and_then(|r| r.issued_at)
                .is_some_and(|t| now - t > timeout);
            if late {
                tracing::warn!(
                    "node {}: not back {timeout}s after its reboot (ResumeTimeout): set DOWN",
                    n.name
                );
                n.admin.reboot = None;
                n.admin.down = true;
                n.admin.reason = Some("reboot timed out".into());
                n.admin.reason_time = Some(now);
                n.admin.reason_uid = Some(slurm_uid);
                self.save_node_admin(i);
            }
        }
        let mut effects = Vec::new();
        if self.nodes.iter().all(|n| n.admin.reboot.is_none()) {
            // No reboot asked for (the usual pass): no walk of the running jobs.
            return effects;
        }
        let (cpus, _) = self.node_alloc();
        for (i, busy) in cpus.iter().map(|&c| c > 0).enumerate() {
            let n = &mut self.nodes[i];
            let Some(r) = n.admin.reboot.as_mut() else {
                continue;
            };
            if r.issued_at.is_some() || busy || !n.registered || n.not_responding {
                continue;
            }
            r.issued_at = Some(now);
            tracing::info!("node {}: reboot issued ({program})", n.name);
            effects.push(Effect::Reboot {
                node: n.name.clone(),
                program: program.clone(),
            });
            self.save_node_admin(i);
        }
        effects
    }

    /// Whether node `i` may take new jobs as far as its lifecycle goes (a reboot under way).
    pub(super) fn node_life_available(&self, i: usize) -> bool {
        self.nodes[i]
            .admin
            .reboot
            .as_ref()
            .is_none_or(|r| r.issued_at.is_none())
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{spec, ROOT};
    use super::super::{NodeReport, State};
    use super::*;
    use crate::state::tests::ended;

    use gsched_proto::api::{NodeStateUpdate, RunningJob};

    fn state(dir: &std::path::Path, extra: &str) -> State {
        super::super::tests::state_conf(
            dir,
            &format!(
                "SlurmdTimeout=300\nRebootProgram=/bin/true\n{extra}\
                 NodeName=n[1-2] NodeAddr=127.0.0.1 CPUs=2 RealMemory=1000\n\
                 PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE\n"
            ),
        )
    }

    fn register(st: &mut State, name: &str, daemon_start: i64, running: &[RunningJob], now: i64) {
        let r = NodeReport {
            name,
            cpus: 2,
            mem_mb: 1000,
            version: "x",
            boot_time: 0,
            daemon_start,
            running,
            gpus: &[],
        };
        st.register(&r, now).unwrap();
    }

    fn started(st: &mut State, id: u32, now: i64) -> (String, i64) {
        st.schedule(now);
        let j = &st.jobs[&id].info;
        assert_eq!(j.state, JobState::Running, "{j:?}");
        let run = (j.nodes[0].clone(), j.start_time.unwrap());
        st.launch_result(id, run.1, Ok(()), now);
        run
    }

    #[test]
    fn a_silent_node_goes_down_its_job_is_requeued_and_the_stale_copy_fenced() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(dir.path(), "");
        assert_eq!(st.heartbeat_secs(), 5);
        let a = st.submit(spec(2), ROOT, 1000).unwrap();
        register(&mut st, "n1", 0, &[], 1000);
        let (node, t0) = started(&mut st, a, 1000);
        assert_eq!(node, "n1");
        register(&mut st, "n2", 0, &[], 1000);
        // n2 keeps answering; n1 is silent.
        st.heartbeat("n2", &[], 1140);
        st.schedule(1201);
        assert!(st.nodes[0].not_responding && !st.nodes[0].admin.down);
        assert_eq!(st.jobs[&a].info.state, JobState::Running);
        st.heartbeat("n2", &[], 1290);
        st.schedule(1301);
        assert!(st.nodes[0].admin.down && st.nodes[0].admin.auto_down);
        assert_eq!(
            st.nodes[0].admin.reason.as_deref(),
            Some(NOT_RESPONDING_REASON)
        );
        let j = &st.jobs[&a].info;
        assert_eq!((j.state, j.restarts), (JobState::Pending, 1), "{j:?}");
        // It runs again on n2, with a new start time (the run's epoch).
        let (node, t1) = started(&mut st, a, 1302);
        assert_eq!(node, "n2");
        assert_ne!(t0, t1);
        // n1 is heard from again with the old run: it must kill it; ReturnToService=0
        // keeps it DOWN.
        let stale = [RunningJob {
            job_id: a,
            start_time: t0,
        }];
        assert_eq!(st.heartbeat("n1", &stale, 1303), Some(vec![a]));
        assert!(st.nodes[0].admin.down);
        // The stale copy's report is ignored: the job still runs on n2.
        let report = gsched_proto::api::JobCompleteRequest {
            signal: 9,
            terminated_for: Some(TerminateReason::NotAssigned),
            ..ended(a, "n1", t0, 1304)
        };
        st.complete(&report, 1304).unwrap();
        assert_eq!(st.jobs[&a].info.state, JobState::Running);
        // RESUME brings it back.
        st.update_nodes(
            &["n1".into()],
            NodeStateUpdate::Resume,
            None,
            None,
            ROOT,
            1305,
        )
        .unwrap();
        assert!(!st.nodes[0].admin.down);
    }

    #[test]
    fn return_to_service_and_job_requeue() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(dir.path(), "ReturnToService=1\nJobRequeue=0\n");
        let a = st.submit(spec(1), ROOT, 1000).unwrap();
        let b = st.submit(
            gsched_proto::job::JobSpec {
                requeue: Some(true),
                ..spec(1)
            },
            ROOT,
            1000,
        );
        let b = b.unwrap();
        register(&mut st, "n1", 0, &[], 1000);
        started(&mut st, a, 1000);
        assert_eq!(st.jobs[&b].info.nodes, vec!["n1".to_string()]);
        st.schedule(1301);
        // JobRequeue=0: only the --requeue job goes back to the queue.
        assert_eq!(st.jobs[&a].info.state, JobState::NodeFail);
        assert_eq!(st.jobs[&b].info.state, JobState::Pending);
        assert!(st.nodes[0].admin.down);
        // ReturnToService=1: answering again is enough.
        st.heartbeat("n1", &[], 1302);
        assert!(!st.nodes[0].admin.down);
        // An administrator's DOWN is not lifted by RTS=1, only by RTS=2 at registration.
        st.update_nodes(
            &["n1".into()],
            NodeStateUpdate::Down,
            Some("bad".into()),
            None,
            ROOT,
            1303,
        )
        .unwrap();
        st.heartbeat("n1", &[], 1304);
        register(&mut st, "n1", 1304, &[], 1305);
        assert!(st.nodes[0].admin.down);
    }

    #[test]
    fn reboot_waits_for_the_node_to_empty_and_ends_at_registration() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(dir.path(), "");
        let a = st.submit(spec(1), ROOT, 1000).unwrap();
        register(&mut st, "n1", 0, &[], 1000);
        started(&mut st, a, 1000);
        let req = RebootRequest {
            names: vec!["n1".into()],
            asap: true,
            next_state: RebootNextState::Resume,
            reason: Some("kernel".into()),
        };
        let nobody = Identity {
            uid: 4242,
            gid: 4242,
        };
        assert!(st.reboot_nodes(&req, nobody, 1001).is_err());
        st.reboot_nodes(&req, ROOT, 1001).unwrap();
        assert!(st.nodes[0].admin.drain);
        assert_eq!(
            st.nodes[0].admin.reason.as_deref(),
            Some("Reboot ASAP : kernel")
        );
        // Busy: not yet.
        let e = st.schedule(1002);
        assert!(!e.iter().any(|e| matches!(e, Effect::Reboot { .. })));
        let t = st.jobs[&a].info.start_time.unwrap();
        let done = ended(a, "n1", t, 1003);
        st.complete(&done, 1003).unwrap();
        let e = st.schedule(1004);
        assert!(e
            .iter()
            .any(|e| matches!(e, Effect::Reboot { node, program } if node == "n1" && program == "/bin/true")));
        assert!(st.node_infos()[0].life.reboot_issued);
        // A registration of the daemon from before the reboot does not count.
        register(&mut st, "n1", 900, &[], 1005);
        assert!(st.nodes[0].admin.reboot.is_some());
        register(&mut st, "n1", 1010, &[], 1011);
        assert!(st.nodes[0].admin.reboot.is_none());
        assert!(!st.nodes[0].admin.drain);
        // A node that does not come back within ResumeTimeout (60 s) is set DOWN.
        let req = RebootRequest {
            names: vec!["n1".into()],
            asap: false,
            next_state: RebootNextState::Resume,
            reason: None,
        };
        st.reboot_nodes(&req, ROOT, 1012).unwrap();
        st.schedule(1013);
        assert!(st.node_infos()[0].life.reboot_issued);
        st.heartbeat("n1", &[], 1070);
        st.schedule(1074);
        assert!(st.nodes[0].admin.down);
        assert_eq!(
            st.nodes[0].admin.reason.as_deref(),
            Some("reboot timed out")
        );
    }

    #[test]
    fn migrate_by_signals_checkpointing_jobs_and_requeues_overrunning_ones() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(dir.path(), "");
        let ckpt = st
            .submit(
                gsched_proto::job::JobSpec {
                    warn_signal: Some(gsched_proto::job::WarnSignal {
                        signal: 10,
                        before_secs: 60,
                        batch_only: true,
                    }),
                    time_limit: Some(600),
                    ..spec(1)
                },
                ROOT,
                1000,
            )
            .unwrap();
        let short = st
            .submit(
                gsched_proto::job::JobSpec {
                    time_limit: Some(2),
                    ..spec(1)
                },
                ROOT,
                1000,
            )
            .unwrap();
        register(&mut st, "n1", 0, &[], 1000);
        started(&mut st, ckpt, 1000);
        assert_eq!(st.jobs[&short].info.state, JobState::Running);
        let long = st
            .submit(
                gsched_proto::job::JobSpec {
                    time_limit: Some(600),
                    ..spec(1)
                },
                ROOT,
                1001,
            )
            .unwrap();
        register(&mut st, "n2", 0, &[], 1001);
        st.schedule(1001);
        assert_eq!(st.jobs[&long].info.nodes, vec!["n2".to_string()]);
        // Drain n2 (the long job) and n1 by 1000 + 200 s (within SlurmdTimeout of the
        // registrations, so that the nodes stay up).
        let by = 1000 + 200;
        st.update_nodes(
            &["n1".into(), "n2".into()],
            NodeStateUpdate::Drain,
            Some("maint".into()),
            Some(by),
            ROOT,
            1002,
        )
        .unwrap();
        let e = st.schedule(1003);
        // The checkpointing job gets its signal now, and is to be requeued after 60 s.
        assert!(e
            .iter()
            .any(|e| matches!(e, Effect::Signal { job_id, signal: 10, .. } if *job_id == ckpt)));
        assert_eq!(st.jobs[&ckpt].extra.migrate_at, Some(1063));
        // The 2-minute job ends before the deadline: left alone. The long one would not.
        assert_eq!(st.jobs[&short].extra.migrate_at, None);
        assert_eq!(st.jobs[&long].extra.migrate_at, Some(by));
        let e = st.schedule(1063);
        assert!(e
            .iter()
            .any(|e| matches!(e, Effect::Terminate { job_id, .. } if *job_id == ckpt)));
        assert!(st.jobs[&ckpt].extra.requeue);
        let e = st.schedule(by);
        assert!(e
            .iter()
            .any(|e| matches!(e, Effect::Terminate { job_id, .. } if *job_id == long)));
        // MigrateBy= only goes with DRAIN.
        assert!(st
            .update_nodes(
                &["n1".into()],
                NodeStateUpdate::Down,
                None,
                Some(by),
                ROOT,
                1004
            )
            .is_err());
    }
}
