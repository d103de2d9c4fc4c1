//! Heterogeneous jobs in the controller.
//!
//! **Ids.** A het job of n components takes a block of n consecutive ids at submit, like an
//! array: the het job's id `N` is the first component's (the leader's), component K has id
//! `N + K` and is shown as `N+K`. Every component is an ordinary job with its own partition,
//! resources, time limit and row, so the store keeps them across restarts with no extra
//! table; [`HetComponent`] in each record ties them together.
//!
//! **Queue.** The scheduler core starts all components together or none, so the pass offers
//! a het job only when every component can be offered (none held, waiting for a dependency
//! or for its begin time); otherwise all wait with the same reason. Components share the
//! leader's priority.
//!
//! **Run.** Only the leader launches: the batch script runs on the leader's first node with
//! `SLURM_HET_SIZE` and the `*_HET_GROUP_K` variables Slurm's `_set_het_job_env` sets for
//! every component (and its older `*_PACK_GROUP_K` spellings). Slurm sets `SLURM_HET_JOB_ID`
//! and `SLURM_HET_JOB_OFFSET` only for PrologSlurmctld/EpilogSlurmctld and job steps, not in
//! the batch script; gsched has neither yet, so neither sets them. The
//! other components hold their resources without a process (Slurm's steps would use them;
//! gsched has none yet). When the leader ends, every component still running ends with the
//! leader's state and exit code; when the leader goes back to the queue (node failure), so
//! do they. A component may also end alone (its own time limit, `gscancel N+K`).

use super::*;
use gsched_proto::het::HetComponent;
use gsched_sched::HetMember;

impl State {
    /// Accepts a heterogeneous job: `specs[0]` runs the batch script, each component is
    /// validated like a job of its own, and all are stored in one transaction.
    pub fn submit_het(
        &mut self,
        specs: Vec<JobSpec>,
        who: Identity,
        now: i64,
    ) -> Result<JobId, ApiError> {
        if specs.iter().any(|s| s.array.is_some()) {
            // Slurm: job arrays of heterogeneous jobs are not supported.
            return Err(ApiError::new(
                ErrorCode::InvalidArray,
                format!(
                    "{}: a heterogeneous job cannot be a job array",
                    gsched_proto::array::INVALID_ARRAY
                ),
            ));
        }
        self.check_job_count(specs.len(), false)?;
        if specs.iter().any(|s| s.gpu.is_some()) {
            return Err(ApiError::new(
                ErrorCode::BadRequest,
                "GPUs in heterogeneous jobs are not supported by gsched yet: submit the GPU part as a job of its own",
            ));
        }
        let base = self.next_id;
        let count = specs.len() as u32;
        let last = base
            .checked_add(count)
            .ok_or_else(|| ApiError::new(ErrorCode::Internal, "job ids exhausted"))?;
        let mut infos = Vec::with_capacity(specs.len());
        for (k, spec) in specs.into_iter().enumerate() {
            let (mut info, _) = self.prepare(spec, &who, now, base + k as u32, k == 0)?;
            info.het = Some(HetComponent {
                job_id: base,
                offset: k as u32,
                count,
            });
            infos.push(info);
        }
        // One priority for the whole het job: the leader's.
        let (prio, held) = (infos[0].priority, infos[0].held);
        for info in &mut infos {
            if !info.held && !held {
                info.priority = prio;
            }
        }
        let mut payloads = Vec::with_capacity(infos.len());
        for info in &mut infos {
            payloads.push((
                info.job_id,
                payload::Payload::take(&mut info.spec).to_json()?,
            ));
        }
        let mut rows = Vec::with_capacity(infos.len());
        for info in &infos {
            let rec = StoredRecord {
                info: info.clone(),
                extra: JobExtra::default(),
            };
            let text = serde_json::to_string(&rec)
                .map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))?;
            rows.push((info.job_id, JobState::Pending, info.user_id, text));
        }
        let payloads: Vec<(JobId, &str)> =
            payloads.iter().map(|(id, p)| (*id, p.as_str())).collect();
        self.store
            .insert_jobs(&rows, &payloads, last)
            .map_err(internal)?;
        self.next_id = last;
        for info in infos {
            self.active.note(info.job_id, JobState::Pending);
            let id = info.job_id;
            let job = self.specs.job(info, JobExtra::default(), None);
            self.jobs.insert(id, job);
        }
        Ok(base)
    }

    /// A pending het job is cancelled whole or not at all (Slurm): `id` may be acted on
    /// only if `ids` names every component of its het job.
    pub(super) fn check_whole_het(&self, id: JobId, ids: &[JobId]) -> Result<(), ApiError> {
        let Some(j) = self.jobs.get(&id) else {
            return Ok(());
        };
        match j.info.het {
            Some(h)
                if j.info.state == JobState::Pending
                    && !(0..h.count).all(|k| ids.contains(&h.component_id(k))) =>
            {
                Err(ApiError::new(
                    ErrorCode::BadRequest,
                    format!(
                        "job {} is a component of pending heterogeneous job {}: cancel the whole job ({}) while it is pending",
                        h.name(),
                        h.job_id,
                        h.job_id
                    ),
                ))
            }
            _ => Ok(()),
        }
    }

    /// The ids of every component of the het job `leader` (just `leader` if it is none).
    pub fn het_ids(&self, leader: JobId) -> Vec<JobId> {
        match self.jobs.get(&leader).and_then(|j| j.info.het) {
            Some(h) if h.job_id == leader => (0..h.count).map(|k| h.component_id(k)).collect(),
            _ => vec![leader],
        }
    }

    /// Het jobs that cannot be offered to the scheduler core this pass, with the reason all
    /// their waiting components show: some component is not pending, is held, waits for a
    /// dependency or is missing.
    pub(super) fn het_blocked(
        &self,
        dep_blocked: &HashMap<JobId, Reason>,
    ) -> HashMap<JobId, Reason> {
        let mut out = HashMap::new();
        for j in self.active.jobs(&self.jobs) {
            let Some(h) = j.info.het.filter(|h| h.offset == 0) else {
                continue;
            };
            if j.info.state != JobState::Pending {
                continue;
            }
            let mut reason = None;
            for k in 0..h.count {
                let r = match self.jobs.get(&h.component_id(k)) {
                    None => Some(Reason::None),
                    Some(c) if c.info.state != JobState::Pending => Some(Reason::None),
                    Some(c) if c.info.held => Some(c.info.reason),
                    Some(c) => dep_blocked.get(&c.info.job_id).copied(),
                };
                if r.is_some() {
                    reason = r;
                    break;
                }
            }
            if let Some(r) = reason {
                out.insert(h.job_id, r);
            }
        }
        out
    }

    /// What the scheduler core needs to know of a queued job's het job, and the priority it
    /// is queued with (the leader's for every component).
    pub(super) fn het_member(&self, info: &JobInfo) -> (Option<HetMember>, u32) {
        match info.het {
            None => (None, info.priority),
            Some(h) => (
                Some(HetMember {
                    leader: h.job_id,
                    offset: h.offset,
                    count: h.count,
                }),
                self.jobs
                    .get(&h.job_id)
                    .map_or(info.priority, |l| l.info.priority),
            ),
        }
    }

    /// Ends or requeues the running components whose leader ended or went back to the
    /// queue. Returns the jobs changed (to persist).
    pub(super) fn het_follow_leaders(&mut self, now: i64) -> Vec<JobId> {
        let mut follow: Vec<(JobId, JobInfo)> = Vec::new();
        for j in self.active.started_jobs(&self.jobs) {
            let Some(h) = j.info.het.filter(|h| h.offset > 0) else {
                continue;
            };
            match self.jobs.get(&h.job_id) {
                Some(l) if l.info.state.is_terminal() || l.info.state == JobState::Pending => {
                    follow.push((j.info.job_id, l.info.clone()));
                }
                _ => {}
            }
        }
        let mut changed = Vec::new();
        for (id, leader) in follow {
            let Some(j) = self.jobs.get_mut(&id) else {
                continue;
            };
            if leader.state == JobState::Pending {
                back_to_queue(j);
            } else {
                j.info.state = leader.state;
                j.info.reason = leader.reason;
                j.info.exit_code = leader.exit_code;
                j.info.exit_signal = leader.exit_signal;
                j.info.cancelled_by = leader.cancelled_by;
                j.info.end_time = Some(leader.end_time.unwrap_or(now));
                j.launch = None;
            }
            changed.push(id);
        }
        changed
    }

    /// The leader's environment additions: `SLURM_HET_SIZE` and, for every component K,
    /// the `*_HET_GROUP_K` variables (and Slurm's older `*_PACK_GROUP_K` spellings).
    pub(super) fn het_environment(&self, leader: &JobInfo) -> Vec<(String, String)> {
        let Some(h) = leader.het else {
            return Vec::new();
        };
        let mut env = Vec::new();
        for k in 0..h.count {
            let Some(c) = self.jobs.get(&h.component_id(k)) else {
                continue;
            };
            let c = &c.info;
            let mut vars: Vec<(&str, String)> = Vec::new();
            if let Some(a) = &c.spec.account {
                vars.push(("SLURM_JOB_ACCOUNT", a.clone()));
            }
            vars.push((
                "SLURM_JOB_CPUS_PER_NODE",
                crate::env::run_length(&c.cpus_per_node),
            ));
            vars.push(("SLURM_JOB_ID", c.job_id.to_string()));
            vars.push(("SLURM_JOB_NAME", c.name.clone()));
            vars.push(("SLURM_JOB_NODELIST", hostlist::compress(&c.nodes)));
            vars.push(("SLURM_JOB_NUM_NODES", c.nodes.len().to_string()));
            vars.push(("SLURM_JOB_PARTITION", c.partition.clone()));
            match c.spec.mem {
                Some(MemRequest::PerCpu(m)) => vars.push(("SLURM_MEM_PER_CPU", m.to_string())),
                Some(MemRequest::PerNode(m)) if m > 0 => {
                    vars.push(("SLURM_MEM_PER_NODE", m.to_string()))
                }
                _ => {}
            }
            let cpt = c.spec.cpus_per_task();
            let tasks: Vec<u32> = c.cpus_per_node.iter().map(|n| n / cpt).collect();
            vars.push(("SLURM_TASKS_PER_NODE", crate::env::run_length(&tasks)));
            for (name, value) in vars {
                env.push((format!("{name}_PACK_GROUP_{k}"), value.clone()));
                env.push((format!("{name}_HET_GROUP_{k}"), value));
            }
        }
        env.push(("SLURM_PACK_SIZE".into(), h.count.to_string()));
        env.push(("SLURM_HET_SIZE".into(), h.count.to_string()));
        env
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{register_all, spec, state, ROOT};
    use super::*;
    use crate::state::tests::ended;
    use gsched_proto::api::RunningJob;

    /// A pass whose starts cannot be written (another process holds the store's write
    /// lock) launches nothing and leaves every component of the het job pending, not only
    /// the leader; once the store takes writes again, the next pass starts them.
    #[test]
    fn a_pass_whose_starts_cannot_be_stored_leaves_every_component_pending() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(dir.path());
        register_all(&mut st, 1000);
        let n = st.submit_het(vec![spec(2), spec(2)], ROOT, 1000).unwrap();
        let other =
            rusqlite::Connection::open(dir.path().join("s").join(crate::store::DB_FILE)).unwrap();
        other.execute_batch("BEGIN EXCLUSIVE").unwrap();
        // (The store waits its busy timeout, 5 s, before it gives up.)
        let effects = st.schedule(1001);
        assert!(effects.is_empty(), "{effects:?}");
        for id in [n, n + 1] {
            let j = &st.jobs[&id];
            assert_eq!(j.info.state, JobState::Pending, "job {id}");
            assert!(
                j.info.nodes.is_empty() && j.info.start_time.is_none(),
                "job {id}"
            );
        }
        other.execute_batch("ROLLBACK").unwrap();
        let effects = st.schedule(1002);
        assert_eq!(super::launches(&mut st, &effects, 1002).len(), 1);
        for id in [n, n + 1] {
            assert_eq!(st.jobs[&id].info.state, JobState::Running, "job {id}");
        }
    }

    #[test]
    fn leader_launches_alone_components_survive_restart_and_follow_the_leader() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(dir.path());
        register_all(&mut st, 1000);
        // Two components of 2 tasks on nodes of 2 CPUs: one node each.
        let second = JobSpec {
            script: String::new(),
            ..spec(2)
        };
        let n = st.submit_het(vec![spec(2), second], ROOT, 1000).unwrap();
        assert_eq!(st.jobs[&(n + 1)].info.het.map(|h| h.offset), Some(1));
        let effects = st.schedule(1000);
        let launches = super::launches(&mut st, &effects, 1000);
        assert_eq!(launches.len(), 1, "only the leader launches");
        assert_eq!(launches[0].job_id, n);
        let (leader_node, other_node) = (
            st.jobs[&n].info.nodes[0].clone(),
            st.jobs[&(n + 1)].info.nodes[0].clone(),
        );
        assert_ne!(leader_node, other_node);
        let env = |k: &str| launches[0].env(k).map(str::to_string);
        assert_eq!(env("SLURM_HET_SIZE").as_deref(), Some("2"));
        assert_eq!(env("SLURM_JOB_ID_HET_GROUP_1"), Some((n + 1).to_string()));
        assert_eq!(
            env("SLURM_JOB_NODELIST_HET_GROUP_1"),
            Some(other_node.clone())
        );
        assert_eq!(
            env("SLURM_JOB_NODELIST_PACK_GROUP_0"),
            Some(leader_node.clone())
        );
        st.launch_result(n, 1000, Ok(()), 1000);

        // A restarted controller: the component without a process is not "lost" on its node.
        drop(st);
        let mut st = state(dir.path());
        register_all(&mut st, 1001);
        let running = [RunningJob {
            job_id: n,
            start_time: 1000,
        }];
        st.heartbeat(&leader_node, &running, 1100).unwrap();
        st.heartbeat(&other_node, &[], 1100).unwrap();
        st.schedule(1100);
        assert_eq!(st.jobs[&n].info.state, JobState::Running);
        assert_eq!(st.jobs[&(n + 1)].info.state, JobState::Running);

        // The batch script fails: every component ends as the leader did.
        let done = JobCompleteRequest {
            exit_code: 3,
            ..ended(n, leader_node, 1000, 1200)
        };
        st.complete(&done, 1200).unwrap();
        st.schedule(1201);
        let c = &st.jobs[&(n + 1)].info;
        assert_eq!(
            (c.state, c.exit_code, c.end_time),
            (JobState::Failed, 3, Some(1200))
        );
        // ... and stays so after a restart.
        drop(st);
        let st = state(dir.path());
        assert_eq!(st.jobs[&(n + 1)].info.state, JobState::Failed);
    }

    #[test]
    fn het_job_waits_whole_for_a_held_or_blocked_component() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(dir.path());
        register_all(&mut st, 1000);
        let held = JobSpec {
            hold: true,
            script: String::new(),
            ..spec(1)
        };
        let n = st.submit_het(vec![spec(1), held], ROOT, 1000).unwrap();
        // A later job, to tell places apart.
        let later = st.submit(spec(1), ROOT, 1000).unwrap();
        st.schedule(1000);
        // The leader alone would fit: it waits with its held component's reason.
        let l = &st.jobs[&n].info;
        assert_eq!(
            (l.state, l.reason),
            (JobState::Pending, Reason::JobHeldUser)
        );
        // Released, the component queues with its leader's place, ahead of the later job.
        st.hold(&[n + 1], &[], &[], true, ROOT, 1001).unwrap();
        let prio = |id: JobId| st.jobs[&id].info.priority;
        assert_eq!(prio(n + 1), prio(n));
        assert!(prio(n) > prio(later));
        // Arrays of het jobs are refused.
        let arr = JobSpec {
            array: Some("1-2".into()),
            ..spec(1)
        };
        let e = st.submit_het(vec![arr, spec(1)], ROOT, 1000).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArray);
    }
}
