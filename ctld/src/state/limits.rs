//! Accounts, QOS and their limits in the controller (`AccountingStorageEnforce=`).
//!
//! * At submit ([`State::check_job_acct`]): the job's account (`-A`, else the user's
//!   default account) and QOS (`-q`, else the association's default, else `normal`) are
//!   resolved and written into its spec; the partition's `AllowAccounts`/`DenyAccounts`/
//!   `AllowQos`/`DenyQos` apply always; with `associations` the user must have an association
//!   with the account (and partition), with `qos` the QOS must be one the association allows,
//!   and with `limits` `MaxSubmitJobs[PerUser]` refuse the job and a job without `-t` gets
//!   the QOS's or association's `MaxWall` as its limit; a longer limit is refused under
//!   `Flags=DenyOnLimit`, else the job waits (`QOSMaxWallDurationPerJobLimit`).
//! * In every scheduling pass ([`State::limit_slots`]): `MaxJobsPerUser`,
//!   `MaxTRESPerUser=cpu`, and the association's `MaxJobs` become counted limits of the
//!   scheduler core ([`gsched_sched::LimitSlot`]), so one pass never starts more than allowed
//!   and the jobs behind a blocked one still start.
//! * `gsacctmgr` changes ([`State::acct_change`]): administrators only (root, SlurmUser, or a
//!   user with `AdminLevel=Administrator`), committed before they take effect.

use super::*;
use gsched_proto::acct::{AcctChange, AcctResponse, QosDef};
use gsched_sched::{LimitSlot, LimitUnit};

/// What the pass needs to know about limits.
#[derive(Debug, Default)]
pub(super) struct PassLimits {
    pub slots: Vec<LimitSlot>,
    /// Per queued job: its slots.
    pub by_job: HashMap<JobId, Vec<usize>>,
    /// Jobs that cannot run under their limits at all (MaxWall), with the reason.
    pub blocked: HashMap<JobId, Reason>,
}

impl State {
    /// The table for `gsacctmgr show` and `gsprio`, with usage and the enforcement setting.
    pub fn acct_response(&self) -> AcctResponse {
        let mut r = self.acct.response();
        r.usage = self.usage.rows();
        r.enforce = self.cfg.acct_enforce.to_string();
        r
    }

    /// May `who` change the association table?
    fn acct_admin(&self, who: &Identity) -> bool {
        self.is_admin(who) || self.acct.is_admin_user(&users::cached_user_name(who.uid))
    }

    /// One `gsacctmgr add|modify|delete`: checked, stored, then in effect.
    pub fn acct_change(
        &mut self,
        change: &AcctChange,
        who: Identity,
    ) -> Result<Vec<String>, ApiError> {
        if !self.acct_admin(&who) {
            return Err(ApiError::new(
                ErrorCode::AccessDenied,
                "Access/permission denied: only root, SlurmUser or a user with AdminLevel=Administrator may change accounts, users and QOS",
            ));
        }
        let (db, writes, changed) = self.acct.apply(change)?;
        if let Some(p) = db
            .assocs
            .values()
            .filter_map(|a| a.partition.as_deref())
            .find(|p| self.partition_by_name(p).is_none())
        {
            let names: Vec<&str> = self.parts.iter().map(|x| x.name.as_str()).collect();
            return Err(ApiError::new(
                ErrorCode::InvalidPartition,
                format!(
                    "Invalid partition name specified: {p} (the partitions are {})",
                    names.join(", ")
                ),
            ));
        }
        self.store.save_acct(&writes).map_err(internal)?;
        self.acct = db;
        Ok(changed)
    }

    /// Resolves and checks a new job's account and QOS (see the module doc); `time_limit` is
    /// lowered to a `MaxWall` when the user gave no `-t`. `count` is how many jobs the
    /// submission adds (an array's tasks).
    pub(super) fn check_job_acct(
        &self,
        spec: &mut JobSpec,
        parts: &[usize],
        user: &str,
        uid: u32,
        time_limit: &mut Option<u32>,
        count: u32,
    ) -> Result<(), ApiError> {
        self.check_acct_of(spec, parts, user, uid, time_limit, count, None)
    }

    /// `gscontrol update JobId=.. Account=.. QOS=..` of a pending job: the same checks as at
    /// submit with the new values (the job itself not counted twice). Returns the account,
    /// QOS and time limit the job gets.
    pub(super) fn recheck_acct(
        &self,
        j: &JobInfo,
        account: Option<&str>,
        qos: Option<&str>,
    ) -> Result<(Option<String>, String, Option<u32>), ApiError> {
        let mut spec = (*j.spec).clone();
        if let Some(a) = account {
            spec.account = Some(a.to_string()).filter(|a| !a.is_empty());
        }
        if let Some(q) = qos {
            spec.qos = Some(q.to_string()).filter(|q| !q.is_empty());
        }
        let parts: Vec<usize> = spec
            .partitions
            .iter()
            .filter_map(|p| self.partition_by_name(p))
            .collect();
        let mut limit = j.time_limit;
        self.check_acct_of(
            &mut spec,
            &parts,
            &j.user_name,
            j.user_id,
            &mut limit,
            1,
            Some(j.job_id),
        )?;
        Ok((spec.account, spec.qos.unwrap_or_default(), limit))
    }

    #[allow(clippy::too_many_arguments)]
    fn check_acct_of(
        &self,
        spec: &mut JobSpec,
        parts: &[usize],
        user: &str,
        uid: u32,
        time_limit: &mut Option<u32>,
        count: u32,
        exclude: Option<JobId>,
    ) -> Result<(), ApiError> {
        let enforce = self.cfg.acct_enforce;
        if spec.account.is_none() {
            if let Some(u) = self.acct.users.get(user) {
                spec.account = Some(u.default_account.clone());
            }
        }
        let account = spec.account.clone();
        let invalid_account = || ApiError::plain(ErrorCode::InvalidAccount);
        let part_names: Vec<&str> = parts.iter().map(|&p| self.parts[p].name.as_str()).collect();
        let assoc = account.as_deref().and_then(|a| {
            self.acct
                .assoc(user, a, part_names.first().copied().unwrap_or(""))
        });
        if enforce.associations {
            let Some(a) = account.as_deref() else {
                return Err(ApiError::new(
                    ErrorCode::InvalidAccount,
                    format!("Invalid account or account/partition combination specified: user {user} has no default account; an administrator adds one with gsacctmgr add user {user} Account=NAME"),
                ));
            };
            for p in &part_names {
                if self.acct.assoc(user, a, p).is_none() {
                    return Err(invalid_account());
                }
            }
        }
        // The QOS.
        let qos_name = match spec.qos.clone() {
            Some(q) => q,
            None => self.acct.default_qos(assoc, account.as_deref()),
        };
        let Some(qos) = self.acct.qos.get(&qos_name) else {
            return Err(ApiError::plain(ErrorCode::InvalidQos));
        };
        if enforce.qos
            && !self
                .acct
                .allowed_qos(assoc, account.as_deref())
                .contains(&qos_name)
        {
            return Err(ApiError::plain(ErrorCode::InvalidQos));
        }
        spec.qos = Some(qos_name.clone());
        // The partitions' lists (always, as in Slurm).
        for &p in parts {
            if uid == 0 && self.cfg.root_jobs_disabled(&self.cfg.partitions[p]) {
                // slurmctld: "Security violation, SUBMIT_JOB for user root disabled".
                return Err(ApiError::new(
                    ErrorCode::InvalidUserId,
                    format!(
                        "Invalid user id: DisableRootJobs refuses root's jobs in partition {}; \
                         submit as another user (--uid)",
                        self.cfg.partitions[p].name
                    ),
                ));
            }
            let access = &self.cfg.partitions[p].access;
            self.check_partition_groups(access, uid)?;
            if !access.allows_account(account.as_deref().unwrap_or("")) {
                return Err(invalid_account());
            }
            if !access.allows_qos(&qos_name) {
                return Err(ApiError::plain(ErrorCode::InvalidQos));
            }
        }
        if !enforce.limits {
            return Ok(());
        }
        let limits = self.acct.limits(assoc, account.as_deref());
        let policy = || ApiError::plain(ErrorCode::AccountingPolicy);
        // MaxWall: the default limit of a job without -t; a refusal with DenyOnLimit.
        let walls = [qos.max_wall, limits.max_wall];
        if let Some(w) = walls.iter().flatten().min().copied() {
            if spec.time_limit.is_none() && !spec.time_unlimited {
                *time_limit = Some(time_limit.map_or(w, |t| t.min(w)));
            }
            if qos.deny_on_limit && time_limit.is_none_or(|t| t > w) {
                return Err(policy());
            }
        }
        // MaxSubmitJobsPerUser (QOS) and MaxSubmitJobs (association).
        let active = |f: &dyn Fn(&JobInfo) -> bool| -> u32 {
            self.active
                .jobs(&self.jobs)
                .filter(|j| {
                    !j.info.state.is_terminal()
                        && j.info.user_id == uid
                        && Some(j.info.job_id) != exclude
                        && f(&j.info)
                })
                .count() as u32
        };
        if let Some(m) = qos.max_submit_jobs_per_user {
            if active(&|j| j.spec.qos.as_deref() == Some(qos_name.as_str())) + count > m {
                return Err(policy());
            }
        }
        if let Some(m) = limits.max_submit_jobs {
            if active(&|j| j.spec.account == account) + count > m {
                return Err(policy());
            }
        }
        Ok(())
    }

    /// `AllowGroups=`: a job of user `uid` may use the partition when the user is in one of
    /// its groups (primary or supplementary, as NSS says on the controller), or is root or
    /// SlurmUser. A uid NSS does not know is in no group (refused, as slurmctld does).
    pub(super) fn check_partition_groups(
        &self,
        access: &gsched_proto::config::PartitionAccess,
        uid: u32,
    ) -> Result<(), ApiError> {
        if access.allow_groups.is_none() || uid == 0 || Some(uid) == self.slurm_uid {
            return Ok(());
        }
        let groups = gsched_proto::users::cached_group_names_of(uid).unwrap_or_default();
        if access.allows_groups(&groups) {
            Ok(())
        } else {
            Err(ApiError::plain(ErrorCode::PartitionGroupDenied))
        }
    }

    /// `gscontrol update JobId=.. Partition=`: the new partition must admit the job's account
    /// and QOS, and with `associations` the user needs an association there.
    pub(super) fn check_partition_change(&self, j: &JobInfo, p: usize) -> Result<(), ApiError> {
        let access = &self.cfg.partitions[p].access;
        self.check_partition_groups(access, j.user_id)?;
        if j.user_id == 0 && self.cfg.root_jobs_disabled(&self.cfg.partitions[p]) {
            return Err(ApiError::plain(ErrorCode::InvalidUserId));
        }
        let account = j.spec.account.as_deref().unwrap_or("");
        if !access.allows_account(account) {
            return Err(ApiError::plain(ErrorCode::InvalidAccount));
        }
        if !access.allows_qos(j.qos()) {
            return Err(ApiError::plain(ErrorCode::InvalidQos));
        }
        if self.cfg.acct_enforce.associations
            && self
                .acct
                .assoc(&j.user_name, account, &self.parts[p].name)
                .is_none()
        {
            return Err(ApiError::plain(ErrorCode::InvalidAccount));
        }
        Ok(())
    }

    /// The counted limits of this pass over the pending jobs `queued`, and the jobs that
    /// wait for a `MaxWall`. Empty unless `AccountingStorageEnforce` has `limits`.
    pub(super) fn limit_slots(&self, queued: &[JobId]) -> PassLimits {
        let mut out = PassLimits::default();
        if !self.cfg.acct_enforce.limits {
            return out;
        }
        // What runs now, per (qos, user) and per (account, user).
        let mut qos_jobs: HashMap<(&str, u32), (u64, u64)> = HashMap::new();
        let mut assoc_jobs: HashMap<(&str, u32), u64> = HashMap::new();
        for j in self.active.started_jobs(&self.jobs) {
            let e = qos_jobs.entry((j.info.qos(), j.info.user_id)).or_default();
            e.0 += 1;
            e.1 += u64::from(j.info.num_cpus);
            *assoc_jobs
                .entry((j.info.spec.account.as_deref().unwrap_or(""), j.info.user_id))
                .or_default() += 1;
        }
        let mut index: HashMap<(u8, String, u32), usize> = HashMap::new();
        let mut slot = |out: &mut PassLimits, key: (u8, String, u32), s: LimitSlot| -> usize {
            *index.entry(key).or_insert_with(|| {
                out.slots.push(s);
                out.slots.len() - 1
            })
        };
        for id in queued {
            let Some(j) = self.jobs.get(id).map(|j| &j.info) else {
                continue;
            };
            let Some(q): Option<&QosDef> = self.acct.qos.get(j.qos()) else {
                continue;
            };
            let account = j.spec.account.as_deref();
            let assoc = account.and_then(|a| self.acct.assoc(&j.user_name, a, &j.partition));
            let limits = self.acct.limits(assoc, account);
            let over = |w: Option<u32>| w.is_some_and(|w| j.time_limit.is_none_or(|t| t > w));
            if over(q.max_wall) {
                out.blocked
                    .insert(*id, Reason::QOSMaxWallDurationPerJobLimit);
                continue;
            }
            if over(limits.max_wall) {
                out.blocked
                    .insert(*id, Reason::AssocMaxWallDurationPerJobLimit);
                continue;
            }
            let running = qos_jobs
                .get(&(j.qos(), j.user_id))
                .copied()
                .unwrap_or((0, 0));
            let mut mine = Vec::new();
            if let Some(m) = q.max_jobs_per_user {
                mine.push(slot(
                    &mut out,
                    (0, q.name.clone(), j.user_id),
                    LimitSlot {
                        left: u64::from(m).saturating_sub(running.0),
                        unit: LimitUnit::Jobs,
                        reason: Reason::QOSMaxJobsPerUserLimit,
                    },
                ));
            }
            if let Some(m) = q.max_cpus_per_user {
                mine.push(slot(
                    &mut out,
                    (1, q.name.clone(), j.user_id),
                    LimitSlot {
                        left: u64::from(m).saturating_sub(running.1),
                        unit: LimitUnit::Cpus,
                        reason: Reason::QOSMaxCpuPerUserLimit,
                    },
                ));
            }
            if let Some(m) = limits.max_jobs {
                let a = account.unwrap_or("");
                let n = assoc_jobs.get(&(a, j.user_id)).copied().unwrap_or(0);
                mine.push(slot(
                    &mut out,
                    (2, a.to_string(), j.user_id),
                    LimitSlot {
                        left: u64::from(m).saturating_sub(n),
                        unit: LimitUnit::Jobs,
                        reason: Reason::AssocMaxJobsLimit,
                    },
                ));
            }
            if !mine.is_empty() {
                out.by_job.insert(*id, mine);
            }
        }
        out
    }
}

/// `MaxMemPerCPU=`/`MaxMemPerNode=` against a job's memory, as slurmctld's
/// `_valid_pn_min_mem` at submission: over a per-CPU limit, the job's CPUs per task are
/// multiplied (and its memory per CPU divided) until it fits; over a per-node limit it is
/// refused ("Memory required by task is not available"). Across forms, the memory per CPU
/// times the CPUs a node gets is held to a per-node limit, and a per-node request over a
/// per-CPU limit takes the CPUs it needs per task when its nodes run one task each (Slurm
/// raises the job's minimum CPUs per node otherwise, which gsched has no request for: such a
/// job is refused with what to ask instead). `node_mem`: the most memory of a node of the
/// job's partitions, what `--mem=0` (all of a node's memory) asks for.
pub(super) fn fit_max_mem(
    spec: &mut JobSpec,
    limit: MemRequest,
    node_mem: u64,
) -> Result<(), ApiError> {
    let unavailable = || ApiError::plain(ErrorCode::MemoryUnavailable);
    let Some(mem) = spec.mem else {
        return Ok(());
    };
    let nodes = spec.nodes.unwrap_or(1).max(1);
    let tasks_per_node = spec
        .ntasks_per_node
        .unwrap_or(1)
        .max(spec.total_tasks().div_ceil(nodes));
    match (mem, limit) {
        (MemRequest::PerCpu(m), MemRequest::PerCpu(l)) => {
            if m > l {
                let ratio = m.div_ceil(l);
                let ratio = u32::try_from(ratio).map_err(|_| unavailable())?;
                let cpt = spec.cpus_per_task.unwrap_or(1).max(1);
                spec.cpus_per_task = Some(cpt.checked_mul(ratio).ok_or_else(unavailable)?);
                spec.mem = Some(MemRequest::PerCpu(m.div_ceil(u64::from(ratio))));
            }
        }
        (MemRequest::PerNode(m), MemRequest::PerNode(l)) => {
            let m = if m == 0 { node_mem } else { m };
            if m > l {
                return Err(unavailable());
            }
        }
        (MemRequest::PerCpu(m), MemRequest::PerNode(l)) => {
            let cpus = u64::from(tasks_per_node) * u64::from(spec.cpus_per_task());
            if m.saturating_mul(cpus) > l {
                return Err(unavailable());
            }
        }
        (MemRequest::PerNode(m), MemRequest::PerCpu(l)) => {
            let m = if m == 0 { node_mem } else { m };
            let need = u32::try_from(m.div_ceil(l)).map_err(|_| unavailable())?;
            let have = tasks_per_node.saturating_mul(spec.cpus_per_task());
            if need > have {
                if tasks_per_node != 1 {
                    return Err(ApiError::new(
                        ErrorCode::MemoryUnavailable,
                        format!(
                            "Memory required by task is not available: --mem={m}M is more than \
                             MaxMemPerCPU={l}M times the {have} CPUs a node gets; ask for \
                             --mem-per-cpu, or for more CPUs per task (-c)"
                        ),
                    ));
                }
                spec.cpus_per_task = Some(need);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::tests::{register_all, spec, ROOT};
    use super::*;

    #[test]
    fn max_mem_raises_cpus_or_refuses_as_slurmctld() {
        let job = |mem: MemRequest, tasks: u32, cpt: Option<u32>| JobSpec {
            mem: Some(mem),
            cpus_per_task: cpt,
            ..spec(tasks)
        };
        let (cpu, node) = (MemRequest::PerCpu, MemRequest::PerNode);
        // Per CPU over a per-CPU limit: CPUs per task times ceil(ratio), memory divided.
        let mut j = job(cpu(2500), 1, Some(2));
        fit_max_mem(&mut j, cpu(1000), 8000).unwrap();
        assert_eq!((j.cpus_per_task, j.mem), (Some(6), Some(cpu(834))));
        let mut j = job(cpu(900), 1, None);
        fit_max_mem(&mut j, cpu(1000), 8000).unwrap();
        assert_eq!((j.cpus_per_task, j.mem), (None, Some(cpu(900))));
        // Per node over a per-node limit: refused; --mem=0 is the whole node.
        let e = fit_max_mem(&mut job(node(3000), 1, None), node(2000), 8000).unwrap_err();
        assert_eq!(e.code, ErrorCode::MemoryUnavailable);
        assert!(fit_max_mem(&mut job(node(0), 1, None), node(2000), 8000).is_err());
        assert!(fit_max_mem(&mut job(node(0), 1, None), node(8000), 8000).is_ok());
        // Per CPU against a per-node limit: times the CPUs of a node (4 tasks on one node).
        assert!(fit_max_mem(&mut job(cpu(600), 4, None), node(2000), 8000).is_err());
        assert!(fit_max_mem(&mut job(cpu(500), 4, None), node(2000), 8000).is_ok());
        // Per node against a per-CPU limit: a one-task job takes the CPUs it needs...
        let mut j = job(node(3500), 1, None);
        fit_max_mem(&mut j, cpu(1000), 8000).unwrap();
        assert_eq!((j.cpus_per_task, j.mem), (Some(4), Some(node(3500))));
        // ...a job with several tasks on a node already may have enough...
        let mut j = job(node(3500), 4, None);
        fit_max_mem(&mut j, cpu(1000), 8000).unwrap();
        assert_eq!(j.cpus_per_task, None);
        // ...or is told what to ask for.
        let e = fit_max_mem(&mut job(node(5000), 4, None), cpu(1000), 8000).unwrap_err();
        assert!(e.message.contains("--mem-per-cpu"), "{}", e.message);
        // No memory asked: nothing to check.
        let mut j = spec(1);
        fit_max_mem(&mut j, cpu(1), 8000).unwrap();
        assert_eq!(j.mem, None);
    }
    use gsched_proto::acct::{AcctEntity, AcctOp};

    fn state(dir: &std::path::Path, extra: &str) -> State {
        super::super::tests::state_conf(
            dir,
            &format!(
                "{extra}\
                 NodeName=n[1-2] NodeAddr=127.0.0.1 CPUs=2 RealMemory=1000\n\
                 PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE\n"
            ),
        )
    }

    fn change(st: &mut State, op: AcctOp, entity: AcctEntity, name: &str, set: &[(&str, &str)]) {
        let c = AcctChange {
            op,
            entity,
            names: vec![name.into()],
            conditions: Vec::new(),
            settings: set
                .iter()
                .map(|(k, v)| (k.to_string(), "=".into(), v.to_string()))
                .collect(),
        };
        st.acct_change(&c, ROOT).unwrap();
    }

    /// A user other than root (root is in account root from the start).
    const ALICE: Identity = Identity {
        uid: 1001,
        gid: 1001,
    };

    fn me() -> String {
        users::user_name(ALICE.uid)
    }

    #[test]
    fn associations_qos_and_limits_at_submit_and_in_the_pass() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(
            dir.path(),
            "AccountingStorageEnforce=associations,limits,qos\n",
        );
        // root is in account root, as on a new Slurm cluster; no association with an account
        // that does not exist: Slurm's refusal.
        let j = st.submit(spec(1), ROOT, 1000).unwrap();
        assert_eq!(st.jobs[&j].info.account(), "root");
        let mut s0 = spec(1);
        s0.account = Some("physics".into());
        let e = st.submit(s0, ROOT, 1000).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidAccount);
        st.signal_jobs(
            &JobFilter {
                ids: vec![j],
                ..JobFilter::default()
            },
            None,
            SignalScope::Full,
            ROOT,
            1000,
        )
        .unwrap();
        change(&mut st, AcctOp::Add, AcctEntity::Account, "physics", &[]);
        change(
            &mut st,
            AcctOp::Add,
            AcctEntity::User,
            &me(),
            &[("Account", "physics")],
        );
        change(
            &mut st,
            AcctOp::Add,
            AcctEntity::Qos,
            "small",
            &[
                ("MaxJobsPerUser", "1"),
                ("MaxSubmitJobsPerUser", "3"),
                ("MaxWall", "10"),
            ],
        );
        // Default account and QOS filled in.
        let a = st.submit(spec(1), ALICE, 1000).unwrap();
        let j = &st.jobs[&a].info;
        assert_eq!((j.account(), j.qos()), ("physics", "normal"));
        // A QOS the association does not allow.
        let mut s = spec(1);
        s.qos = Some("small".into());
        assert_eq!(
            st.submit(s.clone(), ALICE, 1000).unwrap_err().code,
            ErrorCode::InvalidQos
        );
        let mut s2 = spec(1);
        s2.qos = Some("nope".into());
        assert_eq!(
            st.submit(s2, ALICE, 1000).unwrap_err().code,
            ErrorCode::InvalidQos
        );
        let c = AcctChange {
            op: AcctOp::Modify,
            entity: AcctEntity::User,
            names: vec![me()],
            conditions: Vec::new(),
            settings: vec![("QOS".into(), "+=".into(), "small,normal".into())],
        };
        st.acct_change(&c, ROOT).unwrap();
        // Without -t the job gets MaxWall as its limit.
        let b = st.submit(s.clone(), ALICE, 1000).unwrap();
        assert_eq!(st.jobs[&b].info.time_limit, Some(10));
        let c1 = st.submit(s.clone(), ALICE, 1000).unwrap();
        let mut long = s.clone();
        long.time_limit = Some(20);
        let d = st.submit(long, ALICE, 1000).unwrap();
        // MaxSubmitJobsPerUser=3: the fourth job of the QOS is refused.
        let e = st.submit(s.clone(), ALICE, 1000).unwrap_err();
        assert_eq!(e.code, ErrorCode::AccountingPolicy);
        assert_eq!(
            e.to_string(),
            "Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)"
        );
        register_all(&mut st, 1000);
        st.schedule(1000);
        // MaxJobsPerUser=1: one of b, c1 runs, the other waits; d waits for MaxWall.
        assert_eq!(st.jobs[&a].info.state, JobState::Running);
        assert_eq!(st.jobs[&b].info.state, JobState::Running);
        assert_eq!(st.jobs[&c1].info.state, JobState::Pending);
        assert_eq!(st.jobs[&c1].info.reason, Reason::QOSMaxJobsPerUserLimit);
        assert_eq!(
            st.jobs[&d].info.reason,
            Reason::QOSMaxWallDurationPerJobLimit
        );
        // Flags=DenyOnLimit: the long job is refused instead.
        change(
            &mut st,
            AcctOp::Modify,
            AcctEntity::Qos,
            "small",
            &[("Flags", "DenyOnLimit")],
        );
        let mut long = s;
        long.time_limit = Some(20);
        assert_eq!(
            st.submit(long, ALICE, 1000).unwrap_err().code,
            ErrorCode::AccountingPolicy
        );
    }

    #[test]
    fn partition_account_and_qos_lists() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(
            dir.path(),
            "PartitionName=DEFAULT AllowAccounts=physics DenyQos=high\n",
        );
        change(&mut st, AcctOp::Add, AcctEntity::Qos, "high", &[]);
        let mut s = spec(1);
        assert_eq!(
            st.submit(s.clone(), ROOT, 1000).unwrap_err().code,
            ErrorCode::InvalidAccount
        );
        s.account = Some("physics".into());
        st.submit(s.clone(), ROOT, 1000).unwrap();
        s.qos = Some("high".into());
        assert_eq!(
            st.submit(s, ROOT, 1000).unwrap_err().code,
            ErrorCode::InvalidQos
        );
    }

    #[test]
    fn qos_and_account_updates_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(dir.path(), "AccountingStorageEnforce=associations,qos\n");
        change(&mut st, AcctOp::Add, AcctEntity::Account, "physics", &[]);
        change(&mut st, AcctOp::Add, AcctEntity::Account, "chem", &[]);
        change(&mut st, AcctOp::Add, AcctEntity::Qos, "high", &[]);
        change(
            &mut st,
            AcctOp::Add,
            AcctEntity::User,
            &me(),
            &[("Account", "physics"), ("QOS", "normal,high")],
        );
        let id = st.submit(spec(1), ALICE, 1000).unwrap();
        let up = |qos: Option<&str>, account: Option<&str>| JobUpdateRequest {
            job_id: id,
            qos: qos.map(String::from),
            account: account.map(String::from),
            ..JobUpdateRequest::default()
        };
        st.update_job(&up(Some("high"), None), ROOT, 1001).unwrap();
        assert_eq!(st.jobs[&id].info.qos(), "high");
        // No association with chem; an unknown QOS.
        let e = st
            .update_job(&up(None, Some("chem")), ROOT, 1001)
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidAccount);
        let e = st
            .update_job(&up(Some("nope"), None), ROOT, 1001)
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidQos);
        assert_eq!(
            (st.jobs[&id].info.account(), st.jobs[&id].info.qos()),
            ("physics", "high")
        );
    }

    #[test]
    fn partition_change_is_checked() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(
            dir.path(),
            "PartitionName=private Nodes=ALL AllowAccounts=physics\n",
        );
        let id = st.submit(spec(1), ROOT, 1000).unwrap();
        let req = JobUpdateRequest {
            job_id: id,
            partition: Some("private".into()),
            ..JobUpdateRequest::default()
        };
        assert_eq!(
            st.update_job(&req, ROOT, 1001).unwrap_err().code,
            ErrorCode::InvalidAccount
        );
        assert_eq!(st.jobs[&id].info.partition, "debug");
    }

    #[test]
    fn partition_associations_name_real_partitions() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(dir.path(), "AccountingStorageEnforce=associations\n");
        change(&mut st, AcctOp::Add, AcctEntity::Account, "physics", &[]);
        let c = AcctChange {
            op: AcctOp::Add,
            entity: AcctEntity::User,
            names: vec![me()],
            conditions: Vec::new(),
            settings: vec![
                ("Account".into(), "=".into(), "physics".into()),
                ("Partition".into(), "=".into(), "gpu".into()),
            ],
        };
        let e = st.acct_change(&c, ROOT).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidPartition);
        assert!(!st.acct.users.contains_key(&me()));
        // An association for one partition admits jobs there only.
        let mut c = c;
        c.settings[1].2 = "debug".into();
        st.acct_change(&c, ROOT).unwrap();
        st.submit(spec(1), ALICE, 1000).unwrap();
    }

    #[test]
    fn only_administrators_change_the_table() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(dir.path(), "");
        let who = Identity {
            uid: 4242,
            gid: 4242,
        };
        let c = AcctChange {
            op: AcctOp::Add,
            entity: AcctEntity::Account,
            names: vec!["x".into()],
            conditions: Vec::new(),
            settings: Vec::new(),
        };
        assert_eq!(
            st.acct_change(&c, who).unwrap_err().code,
            ErrorCode::AccessDenied
        );
        assert!(!st.acct.accounts.contains_key("x"));
    }
}
