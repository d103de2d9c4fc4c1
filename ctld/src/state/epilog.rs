//! `Prolog=` and `Epilog=` on the controller's side.
//!
//! The programs run on the nodes (`gsched_noded::prolog`); the controller decides what
//! follows from them, as slurmctld does:
//!
//! * **Epilog.** When a job's run ends (its batch node's report), every node of the job is
//!   asked to run the Epilog (`node/epilog`, with the environment built here) and the job's
//!   part of each node stays allocated until that node answers (`nodes/epilog_complete`):
//!   the next job cannot start on a node whose clean-up is still running, as under Slurm's
//!   COMPLETING. The holds are the run's own ([`EpilogHold`], in the job's stored extra, so
//!   a restarted controller keeps them and asks again), so a requeued job may go back to
//!   the queue at once; it does not start again before its holds are gone. A request that
//!   got no answer is sent again every [`RESEND_SECS`] (gsnoded answers a repeated one
//!   without running the program twice); a node set DOWN drops its holds. A failed Epilog
//!   drains the node ("Epilog error").
//! * **Prolog.** gsstepd runs it before the batch script; gsnoded before a job's first step
//!   on each other node. A failure drains the node ("Prolog error") and requeues the job
//!   held ("launch failed requeued held"; not held with
//!   `SchedulerParameters=nohold_on_prolog_fail`); a job that may not be requeued
//!   (`--no-requeue`, `JobRequeue=0`) is cancelled, as slurmd's `_launch_job_fail`.
//!   With a Prolog but no Epilog, a multi-node job's other nodes are still told that it
//!   ended (they forget that its Prolog ran, so a requeued run runs it again).

use super::*;
use gsched_proto::api::{EpilogCompleteRequest, NodeEpilogRequest};

/// How long the controller waits for a node's answer before asking again.
pub(crate) const RESEND_SECS: i64 = 30;

/// The nodes of one ended run whose Epilog has not answered yet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpilogHold {
    /// The run (its start time).
    pub start_time: i64,
    pub nodes: Vec<HeldNode>,
}

/// A node's part of an ended run, held until its Epilog answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeldNode {
    pub node: String,
    pub cpus: u32,
    pub mem_mb: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<gsched_proto::gpu::GpuAlloc>,
    /// The Epilog's environment (sent again as it was).
    pub environment: Vec<(String, String)>,
    /// When the request was last sent (memory only: a restarted controller sends at once).
    #[serde(skip)]
    pub sent_at: Option<i64>,
}

impl State {
    /// The run of `id` ended (its report was recorded, the job's state is final): hold its
    /// nodes for their Epilog and ask them to run it. Called before a requeue clears the
    /// run's nodes.
    pub(super) fn epilog_begin(&mut self, id: JobId, now: i64) -> Vec<Effect> {
        let with_epilog = self.cfg.epilog.is_some();
        if !with_epilog && self.cfg.prolog.is_none() {
            return Vec::new();
        }
        let Some(job) = self.jobs.get(&id) else {
            return Vec::new();
        };
        let Some(start_time) = job.info.start_time else {
            return Vec::new();
        };
        let info = &job.info;
        let nodes: Vec<HeldNode> = info
            .nodes
            .iter()
            .enumerate()
            // Without an Epilog only the other nodes are told (their Prolog marker).
            .filter(|(k, _)| with_epilog || *k > 0)
            .map(|(k, n)| HeldNode {
                node: n.clone(),
                cpus: info.cpus_per_node.get(k).copied().unwrap_or(0),
                mem_mb: job.extra.alloc_mem.get(k).copied().unwrap_or(0),
                gpus: info.gpus.get(k).cloned().unwrap_or_default(),
                environment: crate::env::script_env(
                    &self.cfg,
                    info,
                    Some(k),
                    crate::env::ScriptContext::Epilog,
                ),
                sent_at: Some(now),
            })
            .collect();
        if nodes.is_empty() {
            return Vec::new();
        }
        let effects = nodes
            .iter()
            .map(|h| epilog_effect(id, start_time, h))
            .collect();
        let job = self.jobs.get_mut(&id).expect("looked up");
        job.extra.epilog = Some(EpilogHold { start_time, nodes });
        self.epilog_jobs.insert(id);
        effects
    }

    /// `POST /v1/nodes/epilog_complete`: the node's part of the run is free again; a
    /// failure drains the node.
    pub fn epilog_complete(
        &mut self,
        req: &EpilogCompleteRequest,
        now: i64,
    ) -> Result<(), ApiError> {
        let i = *self.node_index.get(&req.node).ok_or_else(|| {
            ApiError::new(
                ErrorCode::InvalidNodeName,
                format!("node {} is not in the controller's config", req.node),
            )
        })?;
        if let Some(e) = &req.error {
            tracing::error!("job {}: Epilog failed on {}: {e}", req.job_id, req.node);
            self.drain_for_script(i, "Epilog error", now);
        }
        let Some(job) = self.jobs.get_mut(&req.job_id) else {
            return Ok(());
        };
        let Some(hold) = job
            .extra
            .epilog
            .as_mut()
            .filter(|h| h.start_time == req.start_time)
        else {
            // An answer for another run, or one already counted.
            return Ok(());
        };
        hold.nodes.retain(|h| h.node != req.node);
        if hold.nodes.is_empty() {
            job.extra.epilog = None;
            self.epilog_jobs.remove(&req.job_id);
        }
        self.persist(req.job_id).map_err(internal)
    }

    /// The Epilog requests that got no answer within [`RESEND_SECS`], to nodes that are up
    /// (called by every pass); holds on nodes set DOWN are dropped.
    pub(super) fn epilog_resends(&mut self, now: i64) -> Vec<Effect> {
        if self.epilog_jobs.is_empty() {
            return Vec::new();
        }
        let mut effects = Vec::new();
        let mut changed = Vec::new();
        let ids: Vec<JobId> = self.epilog_jobs.iter().copied().collect();
        for id in ids {
            let Some(job) = self.jobs.get_mut(&id) else {
                self.epilog_jobs.remove(&id);
                continue;
            };
            let Some(hold) = job.extra.epilog.as_mut() else {
                self.epilog_jobs.remove(&id);
                continue;
            };
            let before = hold.nodes.len();
            let nodes = &self.nodes;
            let index = &self.node_index;
            hold.nodes
                .retain(|h| index.get(&h.node).is_some_and(|&i| !nodes[i].admin.down));
            if hold.nodes.len() != before {
                changed.push(id);
            }
            for h in &mut hold.nodes {
                let up = index.get(&h.node).is_some_and(|&i| {
                    nodes[i].registered && !nodes[i].not_responding && !nodes[i].unreachable
                });
                if up && h.sent_at.is_none_or(|t| now - t >= RESEND_SECS) {
                    h.sent_at = Some(now);
                    effects.push(epilog_effect(id, hold.start_time, h));
                }
            }
            if hold.nodes.is_empty() {
                job.extra.epilog = None;
                self.epilog_jobs.remove(&id);
            }
        }
        if let Err(e) = self.persist_many(&changed) {
            tracing::error!("cannot record the Epilogs of nodes set DOWN: {e}");
        }
        effects
    }

    /// What the Epilogs still hold, as the scheduler core sees running jobs: each node's
    /// part until its answer (planned to end now).
    pub(super) fn epilog_allocs(&self, now: i64) -> impl Iterator<Item = RunningAlloc> + '_ {
        self.epilog_jobs
            .iter()
            .filter_map(|id| Some((*id, self.jobs.get(id)?.extra.epilog.as_ref()?)))
            .map(move |(job_id, hold)| RunningAlloc {
                job_id,
                end: now,
                nodes: hold
                    .nodes
                    .iter()
                    .filter_map(|h| {
                        Some(NodeAlloc {
                            gpus: Vec::new(),
                            node: *self.node_index.get(&h.node)?,
                            cpus: h.cpus,
                            mem_mb: h.mem_mb,
                            tasks: 0,
                        })
                    })
                    .collect(),
            })
    }

    /// The GPUs the Epilogs still hold: (node index, job, user, allocation).
    pub(super) fn epilog_gpu_holds(
        &self,
    ) -> impl Iterator<Item = (usize, JobId, u32, &gsched_proto::gpu::GpuAlloc)> + '_ {
        self.epilog_jobs
            .iter()
            .filter_map(|id| self.jobs.get(id))
            .filter_map(|j| Some((j, j.extra.epilog.as_ref()?)))
            .flat_map(move |(j, hold)| {
                hold.nodes.iter().flat_map(move |h| {
                    let i = self.node_index.get(&h.node).copied();
                    h.gpus
                        .iter()
                        .filter_map(move |a| Some((i?, j.info.job_id, j.info.user_id, a)))
                })
            })
    }

    /// A node's Prolog failed for a job's step (its first there): drain the node, and
    /// requeue the job held (or cancel it when it may not be requeued), as slurmd's
    /// `_launch_job_fail`.
    pub fn step_prolog_failed(
        &mut self,
        node: &str,
        job_id: JobId,
        message: &str,
        now: i64,
    ) -> Vec<Effect> {
        tracing::error!("job {job_id}: Prolog failed on {node}: {message}");
        if let Some(&i) = self.node_index.get(node) {
            self.drain_for_script(i, "Prolog error", now);
        }
        let kill_wait = self.cfg.kill_wait;
        let Some(job) = self.jobs.get_mut(&job_id) else {
            return Vec::new();
        };
        if job.info.state != JobState::Running {
            return Vec::new();
        }
        job.info.state = JobState::Completing;
        job.extra.terminate = Some(TerminateReason::Cancelled);
        job.terminate_sent_at = Some(now);
        if job.info.requeue {
            job.extra.requeue = true;
            job.extra.requeue_hold = Some(RequeueHold::LaunchFailed);
        }
        let effects = job
            .info
            .nodes
            .first()
            .map(|batch| Effect::Terminate {
                node: batch.clone(),
                job_id,
                reason: TerminateReason::Cancelled,
                kill_wait,
            })
            .into_iter()
            .collect();
        if let Err(e) = self.persist(job_id) {
            tracing::error!("job {job_id}: {e}");
        }
        effects
    }

    /// Drains node `i` with `reason` (unless it is drained or down already, as slurmctld's
    /// `drain_nodes` on a Prolog or Epilog failure), recorded as SlurmUser's.
    pub(super) fn drain_for_script(&mut self, i: usize, reason: &str, now: i64) {
        let slurm_uid = self.slurm_uid.unwrap_or(0);
        let n = &mut self.nodes[i];
        if n.admin.drain || n.admin.down {
            return;
        }
        tracing::warn!("node {}: drained ({reason})", n.name);
        n.admin.drain = true;
        n.admin.reason = Some(reason.to_string());
        n.admin.reason_time = Some(now);
        n.admin.reason_uid = Some(slurm_uid);
        self.save_node_admin(i);
    }
}

fn epilog_effect(job_id: JobId, start_time: i64, h: &HeldNode) -> Effect {
    Effect::Epilog {
        node: h.node.clone(),
        request: NodeEpilogRequest {
            job_id,
            start_time,
            environment: h.environment.clone(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::super::launch::launches;
    use super::super::tests::*;
    use super::*;

    const CONF: &str = "Epilog=/etc/gsched/epilog\nPrologEpilogTimeout=60\n\
        NodeName=n[1-2] NodeAddr=127.0.0.1 CPUs=2 RealMemory=1000\n\
        PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE\n";

    fn whole_nodes(n: u32) -> JobSpec {
        JobSpec {
            nodes: Some(n),
            ..spec(2 * n)
        }
    }

    fn start(st: &mut State, now: i64) -> Vec<JobId> {
        let effects = st.schedule(now);
        let started: Vec<JobId> = launches(st, &effects, now)
            .iter()
            .map(|l| l.job_id)
            .collect();
        for id in &started {
            st.launch_result(*id, now, Ok(()), now);
        }
        started
    }

    fn epilogs(effects: &[Effect]) -> Vec<(String, &NodeEpilogRequest)> {
        effects
            .iter()
            .filter_map(|e| match e {
                Effect::Epilog { node, request } => Some((node.clone(), request)),
                _ => None,
            })
            .collect()
    }

    /// The run's nodes stay allocated until each one's Epilog answers; the next job starts
    /// on the node that answered, a failed Epilog drains its node, and a restarted
    /// controller keeps the holds and asks again.
    #[test]
    fn nodes_are_held_until_their_epilog_answers() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state_conf(dir.path(), CONF);
        register_all(&mut st, 1000);
        let a = st.submit(whole_nodes(2), ROOT, 1000).unwrap();
        assert_eq!(start(&mut st, 1000), vec![a]);
        let b = st.submit(whole_nodes(1), ROOT, 1001).unwrap();
        let mut report = ended(a, "n1", 1000, 1010);
        report.exit_code = 3;
        let effects = st.complete(&report, 1010).unwrap();
        let asked = epilogs(&effects);
        assert_eq!(
            asked.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
            ["n1", "n2"]
        );
        let env = &asked[1].1.environment;
        let var = |k: &str| {
            env.iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(var("SLURMD_NODENAME"), Some("n2"));
        assert_eq!(var("SLURM_SCRIPT_CONTEXT"), Some("epilog_slurmd"));
        assert_eq!(var("SLURM_JOB_EXIT_CODE2"), Some("3:0"));
        assert_eq!(var("SLURM_JOB_EXIT_CODE"), Some("768"));
        assert_eq!(var("SLURM_NODELIST"), Some("n[1-2]"));
        assert_eq!(st.jobs[&a].info.state, JobState::Failed);
        // Both nodes are still taken.
        assert!(start(&mut st, 1011).is_empty());
        assert_eq!(st.jobs[&b].info.state, JobState::Pending);

        // n2's Epilog failed: drained; n1's is still running. Nothing starts.
        let done = |node: &str, error: Option<&str>| EpilogCompleteRequest {
            node: node.into(),
            job_id: a,
            start_time: 1000,
            error: error.map(String::from),
        };
        st.epilog_complete(
            &done("n2", Some("Epilog /etc/gsched/epilog: exit status 1")),
            1012,
        )
        .unwrap();
        assert!(st.nodes[1].admin.drain);
        assert_eq!(st.nodes[1].admin.reason.as_deref(), Some("Epilog error"));
        assert!(start(&mut st, 1013).is_empty());

        // A restart keeps n1's hold, and the first pass asks n1 again (not n2).
        drop(st);
        let mut st = state_conf(dir.path(), CONF);
        register_all(&mut st, 1014);
        let again = st.schedule(1014);
        let asked: Vec<String> = epilogs(&again).into_iter().map(|(n, _)| n).collect();
        assert_eq!(asked, ["n1"]);
        assert!(start(&mut st, 1015).is_empty());
        // Not asked again before RESEND_SECS.
        assert!(epilogs(&st.schedule(1016)).is_empty());
        assert_eq!(epilogs(&st.schedule(1014 + RESEND_SECS)).len(), 1);

        // n1 answers (twice: the second is ignored); b starts there.
        st.epilog_complete(&done("n1", None), 1050).unwrap();
        st.epilog_complete(&done("n1", None), 1050).unwrap();
        assert!(st.jobs[&a].extra.epilog.is_none());
        assert_eq!(start(&mut st, 1051), vec![b]);
        assert_eq!(st.jobs[&b].info.nodes, ["n1"]);
    }

    /// A requeued job goes back to the queue at once but starts again only once its last
    /// run's Epilogs answered; a node set DOWN drops its holds.
    #[test]
    fn a_requeued_job_waits_for_its_last_runs_epilog() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state_conf(dir.path(), &format!("RequeueExit=7\nJobRequeue=1\n{CONF}"));
        register_all(&mut st, 1000);
        let a = st.submit(whole_nodes(1), ROOT, 1000).unwrap();
        assert_eq!(start(&mut st, 1000), vec![a]);
        let node = st.jobs[&a].info.nodes[0].clone();
        let mut report = ended(a, &node, 1000, 1010);
        report.exit_code = 7;
        let effects = st.complete(&report, 1010).unwrap();
        assert_eq!(epilogs(&effects).len(), 1);
        assert_eq!(st.jobs[&a].info.state, JobState::Pending);
        // Well past the requeue delay, the other node free: it still waits.
        assert!(start(&mut st, 1100).is_empty());
        // Its node goes DOWN (silent past SlurmdTimeout): the hold goes with it.
        let i = st.node_index[&node];
        st.nodes[i].admin.down = true;
        assert_eq!(start(&mut st, 1101), vec![a]);
        assert_ne!(st.jobs[&a].info.nodes[0], node);
    }

    /// The batch node's Prolog failed: the node is drained ("Prolog error") and the job
    /// requeued held with Slurm's reason; without requeue it is cancelled.
    #[test]
    fn a_failed_prolog_drains_the_node_and_requeues_the_job_held() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state_conf(
            dir.path(),
            "Prolog=/etc/gsched/prolog\nJobRequeue=1\n\
             NodeName=n[1-2] NodeAddr=127.0.0.1 CPUs=2 RealMemory=1000\n\
             PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE\n",
        );
        register_all(&mut st, 1000);
        let a = st.submit(whole_nodes(1), ROOT, 1000).unwrap();
        let b = st
            .submit(
                JobSpec {
                    requeue: Some(false),
                    ..whole_nodes(1)
                },
                ROOT,
                1000,
            )
            .unwrap();
        assert_eq!(start(&mut st, 1000), vec![a, b]);
        for id in [a, b] {
            let node = st.jobs[&id].info.nodes[0].clone();
            let mut report = ended(id, &node, 1000, 1001);
            report.exit_code = 1;
            report.prolog_error = Some("Prolog /etc/gsched/prolog: exit status 1".into());
            // A Prolog alone asks no single-node Epilog.
            assert!(epilogs(&st.complete(&report, 1001).unwrap()).is_empty());
            let i = st.node_index[&node];
            assert!(st.nodes[i].admin.drain);
            assert_eq!(st.nodes[i].admin.reason.as_deref(), Some("Prolog error"));
        }
        let ai = &st.jobs[&a].info;
        assert_eq!(
            (ai.state, ai.held, ai.reason),
            (JobState::Pending, true, Reason::LaunchFailedRequeuedHeld)
        );
        assert_eq!(ai.restarts, 1);
        let bi = &st.jobs[&b].info;
        assert_eq!(
            (bi.state, bi.reason),
            (JobState::Cancelled, Reason::JobLaunchFailure)
        );
    }
}
