//! Job steps (`gsrun`, Slurm's `srun` inside an allocation): the controller numbers them
//! (`N.0`, `N.1`, ...), lays their tasks out over the job's nodes, records them in the store
//! (table `steps`), and says which nodes must start or signal which tasks. The calls to the
//! nodes are made by the server (`crate::steps_api`) outside the state lock.
//!
//! Steps are kept only in the store: a running job has few, and every question about them
//! (create, complete, list, signal) is rare next to scheduling, so no copy in memory has to
//! be kept in step with the rows. A step still `RUNNING` when its job has ended (gsrun was
//! killed with the job, or its report was lost) is closed as `CANCELLED` the next time its
//! job's steps are looked at, and when the job's completion arrives.

use super::{internal, State};
use gsched_proto::api::{ApiError, ErrorCode};
use gsched_proto::auth::Identity;
use gsched_proto::hostlist;
use gsched_proto::job::{JobId, JobState};
use gsched_proto::step::{
    block_layout, NodeStepSignalRequest, StepCompleteRequest, StepCreateRequest,
    StepCreateResponse, StepInfo, StepLaunchRequest, StepNode, StepQuery, StepSignalRequest,
    StepTask,
};

/// A message for one node's daemon: its `host:port` and the request.
pub type ToNode<T> = (String, T);

fn set(env: &mut Vec<(String, String)>, k: &str, v: impl Into<String>) {
    let v = v.into();
    match env.iter_mut().find(|(key, _)| key == k) {
        Some(e) => e.1 = v,
        None => env.push((k.to_string(), v)),
    }
}

/// Slurm's compressed tasks-per-node form: `2(x3),1`.
pub fn tasks_per_node_string(per: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < per.len() {
        let mut j = i;
        while j + 1 < per.len() && per[j + 1] == per[i] {
            j += 1;
        }
        let n = j - i + 1;
        out.push(if n > 1 {
            format!("{}(x{n})", per[i])
        } else {
            per[i].to_string()
        });
        i = j + 1;
    }
    out.join(",")
}

impl State {
    fn load_step_records(
        &self,
        job_ids: &[JobId],
        state: Option<&str>,
    ) -> Result<Vec<StepInfo>, ApiError> {
        let rows = self.store.load_steps(job_ids, state).map_err(internal)?;
        rows.iter()
            .map(|r| {
                serde_json::from_str::<StepInfo>(r).map_err(|e| {
                    ApiError::new(ErrorCode::Internal, format!("corrupt step record: {e}"))
                })
            })
            .collect()
    }

    fn save_step(&mut self, s: &StepInfo) -> Result<(), ApiError> {
        let rec = serde_json::to_string(s)
            .map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))?;
        self.store
            .save_step(s.job_id, s.step_id, s.state.long(), &rec)
            .map_err(internal)
    }

    /// `POST /v1/jobs/steps`: records a new step of a running job (committed before the
    /// answer) and returns the launch requests for its nodes.
    pub fn create_step(
        &mut self,
        req: &StepCreateRequest,
        who: &Identity,
        now: i64,
    ) -> Result<(StepCreateResponse, Vec<ToNode<StepLaunchRequest>>), ApiError> {
        let job = self
            .jobs
            .get(&req.job_id)
            .map(|j| j.info.clone())
            .ok_or_else(|| ApiError::plain(ErrorCode::InvalidJobId))?;
        self.check_owner(&job, who)?;
        match job.state {
            JobState::Running if job.suspended_since.is_none() => {}
            JobState::Running => return Err(ApiError::plain(ErrorCode::JobSuspended)),
            JobState::Pending => return Err(ApiError::plain(ErrorCode::JobPending)),
            _ => return Err(ApiError::plain(ErrorCode::JobAlreadyDone)),
        }
        if req.argv.is_empty() {
            return Err(ApiError::new(
                ErrorCode::BadRequest,
                "a step needs a command to run",
            ));
        }
        let cpt = req.cpus_per_task.unwrap_or(1).max(1);
        // The job's nodes, narrowed by -w, then by -N.
        let mut idx: Vec<usize> = (0..job.nodes.len()).collect();
        if !req.nodelist.is_empty() {
            for n in &req.nodelist {
                if !job.nodes.contains(n) {
                    return Err(ApiError::new(
                        ErrorCode::NodeConfigUnavailable,
                        format!(
                            "Requested node configuration is not available: node {n} is not in job {}'s allocation ({})",
                            job.job_id,
                            hostlist::compress(&job.nodes)
                        ),
                    ));
                }
            }
            idx.retain(|&i| req.nodelist.contains(&job.nodes[i]));
        }
        if let Some(n) = req.nodes {
            if n == 0 || n as usize > idx.len() {
                return Err(ApiError::new(
                    ErrorCode::NodeConfigUnavailable,
                    format!(
                        "Requested node configuration is not available: {n} node(s) asked for, job {} has {}{}",
                        job.job_id,
                        idx.len(),
                        if req.nodelist.is_empty() { "" } else { " of those named with -w" }
                    ),
                ));
            }
            if req.nodelist.len() > n as usize {
                return Err(ApiError::new(
                    ErrorCode::NodeConfigUnavailable,
                    format!(
                        "Requested node configuration is not available: -w names {} nodes but -N asks for {n}",
                        req.nodelist.len()
                    ),
                ));
            }
            idx.truncate(n as usize);
        }
        let ntasks = req.ntasks.unwrap_or(idx.len() as u32).max(1);
        if (ntasks as usize) < idx.len() {
            idx.truncate(ntasks as usize);
        }
        let cpus: Vec<u32> = idx
            .iter()
            .map(|&i| job.cpus_per_node.get(i).copied().unwrap_or(1))
            .collect();
        let total: u32 = cpus.iter().sum();
        if !req.overlap && ntasks.saturating_mul(cpt) > total {
            return Err(ApiError::new(
                ErrorCode::TooManyProcessors,
                format!(
                    "More processors requested than permitted: {ntasks} task(s) of {cpt} CPU(s) in job {}, which has {total} CPU(s) on the step's nodes",
                    job.job_id
                ),
            ));
        }
        let per = block_layout(ntasks, &cpus, cpt)
            .ok_or_else(|| ApiError::new(ErrorCode::BadRequest, "fewer tasks than nodes"))?;
        // MaxTasksPerNode, as slurmctld's step_create: tasks over nodes times the limit.
        let max_tasks = (idx.len() as u32).saturating_mul(self.cfg.max_tasks_per_node);
        if ntasks > max_tasks {
            return Err(ApiError::new(
                ErrorCode::BadTaskCount,
                format!(
                    "Task count specification invalid: {ntasks} task(s) on {} node(s), MaxTasksPerNode={}",
                    idx.len(),
                    self.cfg.max_tasks_per_node
                ),
            ));
        }
        let nodes: Vec<String> = idx.iter().map(|&i| job.nodes[i].clone()).collect();
        let step_id = self.store.next_step_id(job.job_id).map_err(internal)?;
        if step_id >= self.cfg.max_step_count {
            return Err(ApiError::new(
                ErrorCode::StepLimit,
                format!(
                    "Step limit reached for this job: MaxStepCount={}",
                    self.cfg.max_step_count
                ),
            ));
        }
        let name = req.name.clone().unwrap_or_else(|| {
            let cmd = &req.argv[0];
            cmd.rsplit('/').next().unwrap_or(cmd).to_string()
        });
        let step = StepInfo {
            job_id: job.job_id,
            step_id,
            name: name.clone(),
            user_id: job.user_id,
            state: JobState::Running,
            nodes: nodes.clone(),
            tasks_per_node: per.clone(),
            ntasks,
            cpus_per_task: cpt,
            partition: job.partition.clone(),
            start_time: now,
            end_time: None,
            exit_code: 0,
            signal: 0,
            command: req.argv.join(" "),
            cancelled_by: None,
            time_limit: job.time_limit,
            usage: None,
        };
        // Step-wide variables, as srun sets them.
        let mut env = req.environment.clone();
        let nodelist = hostlist::compress(&nodes);
        let tpn = tasks_per_node_string(&per);
        for (k, v) in [
            ("SLURM_JOB_ID", job.job_id.to_string()),
            ("SLURM_JOBID", job.job_id.to_string()),
            ("SLURM_STEP_ID", step_id.to_string()),
            ("SLURM_STEPID", step_id.to_string()),
            ("SLURM_STEP_NODELIST", nodelist.clone()),
            ("SLURM_STEP_NUM_NODES", nodes.len().to_string()),
            ("SLURM_STEP_NUM_TASKS", ntasks.to_string()),
            ("SLURM_STEP_TASKS_PER_NODE", tpn.clone()),
            ("SLURM_NODELIST", nodelist),
            ("SLURM_NNODES", nodes.len().to_string()),
            ("SLURM_NTASKS", ntasks.to_string()),
            ("SLURM_NPROCS", ntasks.to_string()),
            ("SLURM_TASKS_PER_NODE", tpn),
            ("SLURM_CPUS_PER_TASK", cpt.to_string()),
        ] {
            set(&mut env, k, v);
        }
        let mut launches = Vec::new();
        let mut step_nodes = Vec::new();
        let mut rank = 0u32;
        for (node_id, (node, &n)) in nodes.iter().zip(&per).enumerate() {
            let endpoint = self.node_endpoint(node).ok_or_else(|| {
                ApiError::new(ErrorCode::InvalidNodeName, format!("unknown node {node}"))
            })?;
            let tasks: Vec<StepTask> = (0..n)
                .map(|l| StepTask {
                    rank: rank + l,
                    local_id: l,
                })
                .collect();
            rank += n;
            step_nodes.push(StepNode {
                name: node.clone(),
                endpoint: endpoint.clone(),
                tasks: tasks.iter().map(|t| t.rank).collect(),
            });
            launches.push((
                endpoint,
                StepLaunchRequest {
                    job_id: job.job_id,
                    step_id,
                    uid: job.user_id,
                    gid: job.group_id,
                    user_name: job.user_name.clone(),
                    job_name: job.name.clone(),
                    argv: req.argv.clone(),
                    work_dir: req.work_dir.clone(),
                    environment: env.clone(),
                    node_id: node_id as u32,
                    tasks,
                    stdout: req.stdout.clone(),
                    stderr: req.stderr.clone(),
                    stdin: req.stdin,
                    stdin_rank: req.stdin_rank,
                    array: job.array.map(|a| (a.job_id, a.task_id)),
                    open_append: req.open_append,
                    // For the job's first step on its other nodes (the batch node ran the
                    // Prolog before the script).
                    prolog_env: match job.nodes.iter().position(|n| n == node) {
                        Some(k) if k > 0 && self.cfg.prolog.is_some() => crate::env::script_env(
                            &self.cfg,
                            &job,
                            Some(k),
                            crate::env::ScriptContext::Prolog,
                        ),
                        _ => Vec::new(),
                    },
                },
            ));
        }
        self.save_step(&step)?;
        self.jobs_with_steps.insert(step.job_id);
        Ok((
            StepCreateResponse {
                step,
                nodes: step_nodes,
            },
            launches,
        ))
    }

    fn running_step(&self, job_id: JobId, step_id: u32) -> Result<StepInfo, ApiError> {
        self.load_step_records(&[job_id], None)?
            .into_iter()
            .find(|s| s.step_id == step_id)
            .ok_or_else(|| {
                ApiError::new(
                    ErrorCode::InvalidJobId,
                    format!("Invalid job id specified: no step {job_id}.{step_id}"),
                )
            })
    }

    /// A step whose launch failed on some node: `FAILED`, with the reason logged.
    pub fn step_launch_failed(&mut self, job_id: JobId, step_id: u32, now: i64) {
        if let Ok(mut s) = self.running_step(job_id, step_id) {
            s.state = JobState::Failed;
            s.exit_code = 1;
            s.end_time = Some(now);
            if let Err(e) = self.save_step(&s) {
                tracing::error!("step {job_id}.{step_id}: {e}");
            }
        }
    }

    /// `POST /v1/jobs/steps/complete` (from gsrun).
    pub fn complete_step(
        &mut self,
        req: &StepCompleteRequest,
        who: &Identity,
        now: i64,
    ) -> Result<(), ApiError> {
        let mut s = self.running_step(req.job_id, req.step_id)?;
        if s.user_id != who.uid && !self.is_admin(who) {
            return Err(ApiError::plain(ErrorCode::AccessDenied));
        }
        if s.state.is_terminal() {
            return Ok(());
        }
        let job_ending = self
            .jobs
            .get(&req.job_id)
            .is_none_or(|j| j.extra.terminate.is_some() || j.info.state.is_terminal());
        s.exit_code = req.exit_code;
        s.signal = req.signal;
        s.end_time = Some(now);
        s.usage = req.usage;
        s.state = if s.cancelled_by.is_some() || (job_ending && req.signal != 0) {
            JobState::Cancelled
        } else if req.exit_code != 0 || req.signal != 0 {
            JobState::Failed
        } else {
            JobState::Completed
        };
        self.save_step(&s)
    }

    /// Closes the running steps of jobs that have ended (`CANCELLED`, ended with the job).
    /// Returns the closed steps.
    pub fn close_steps_of_ended_jobs(&mut self, job_ids: &[JobId], now: i64) -> Vec<StepInfo> {
        // Only jobs that may have a running step are looked up in the store (most batch
        // jobs have none; asking the store cost every job's end a query).
        let candidates: Vec<JobId> = if job_ids.is_empty() {
            self.jobs_with_steps.iter().copied().collect()
        } else {
            job_ids.to_vec()
        }
        .into_iter()
        .filter(|id| {
            self.jobs_with_steps.contains(id)
                && self.jobs.get(id).is_none_or(|j| j.info.state.is_terminal())
        })
        .collect();
        if candidates.is_empty() {
            return Vec::new();
        }
        let Ok(running) = self.load_step_records(&candidates, Some("RUNNING")) else {
            return Vec::new();
        };
        for id in &candidates {
            self.jobs_with_steps.remove(id);
        }
        let mut closed = Vec::new();
        for mut s in running {
            let end = self
                .jobs
                .get(&s.job_id)
                .and_then(|j| j.info.end_time)
                .unwrap_or(now);
            s.state = JobState::Cancelled;
            s.end_time = Some(end.max(s.start_time));
            if s.signal == 0 {
                s.signal = libc::SIGKILL;
            }
            if let Err(e) = self.save_step(&s) {
                tracing::error!("step {}: {e}", s.id_string());
                // Tried again at the job's next query.
                self.jobs_with_steps.insert(s.job_id);
                continue;
            }
            closed.push(s);
        }
        closed
    }

    /// `POST /v1/jobs/steps/query`.
    pub fn query_steps(
        &mut self,
        q: &StepQuery,
        who: &Identity,
        now: i64,
    ) -> Result<Vec<StepInfo>, ApiError> {
        self.close_steps_of_ended_jobs(&q.job_ids, now);
        let steps = self.load_step_records(
            &q.job_ids,
            if q.running_only {
                Some("RUNNING")
            } else {
                None
            },
        )?;
        let private = self.cfg.private_data.jobs && !self.is_admin(who);
        Ok(steps
            .into_iter()
            .filter(|s| !private || s.user_id == who.uid)
            .collect())
    }

    /// `POST /v1/jobs/steps/signal`: `gscancel N.K` and `gscancel --signal=SIG N.K`.
    pub fn signal_step(
        &mut self,
        req: &StepSignalRequest,
        who: &Identity,
        now: i64,
    ) -> Result<Vec<ToNode<NodeStepSignalRequest>>, ApiError> {
        self.close_steps_of_ended_jobs(&[req.job_id], now);
        let mut s = self.running_step(req.job_id, req.step_id)?;
        if s.user_id != who.uid && !self.is_admin(who) {
            return Err(ApiError::plain(ErrorCode::AccessDenied));
        }
        if s.state.is_terminal() {
            return Err(ApiError::plain(ErrorCode::JobAlreadyDone));
        }
        let msg = NodeStepSignalRequest {
            job_id: s.job_id,
            step_id: Some(s.step_id),
            signal: req.signal.unwrap_or(15),
            terminate: req.signal.is_none(),
            kill_wait: self.cfg.kill_wait,
        };
        if req.signal.is_none() {
            s.cancelled_by = Some(who.uid);
            self.save_step(&s)?;
        }
        Ok(s.nodes
            .iter()
            .filter_map(|n| Some((self.node_endpoint(n)?, msg.clone())))
            .collect())
    }

    /// The daemons of a job's nodes other than the batch node (which handles its own steps
    /// with the job): where a signal or terminate of the whole job must also go.
    pub fn other_step_nodes(&self, job_id: JobId) -> Vec<String> {
        self.jobs
            .get(&job_id)
            .map(|j| {
                j.info
                    .nodes
                    .iter()
                    .skip(1)
                    .filter_map(|n| self.node_endpoint(n))
                    .collect()
            })
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_per_node_is_compressed_like_slurm() {
        assert_eq!(tasks_per_node_string(&[2, 2, 2, 1]), "2(x3),1");
        assert_eq!(tasks_per_node_string(&[1]), "1");
        assert_eq!(tasks_per_node_string(&[1, 2, 1]), "1,2,1");
    }
}
