//! Reservations (`scontrol create|update|delete|show reservation`, `sinfo -T`) and the
//! switch map of `topology/tree`: what of the node lifecycle the scheduler core gets as data.
//!
//! A reservation holds whole nodes over `[start, end)`. For the ordinary queue the scheduler
//! core gets each reservation as a [`gsched_sched::Blackout`], and starts or plans no job that
//! would still run on its nodes when it begins (jobs that end before it still backfill): what
//! a maintenance reservation (`Flags=MAINT`) is for. Jobs submitted with `--reservation` by
//! its `Users=` are decided apart, one core call per active reservation over its nodes only,
//! with its end as a blackout, so they end in time. Reservations are kept in the store (one
//! row each) and forgotten once over, as Slurm does.

use super::{internal, State};
use crate::store::{Store, StoreError};
use gsched_proto::api::{ApiError, ErrorCode};
use gsched_proto::auth::Identity;
use gsched_proto::config::Config;
use gsched_proto::job::JobState;
use gsched_proto::lifecycle::TopologyPlugin;
use gsched_proto::node::NodeLifeInfo;
use gsched_proto::resv::{ReservationAction, ReservationInfo, ReservationSpec, RESV_FLAGS};
use gsched_proto::topology_conf::Topology;

/// The stored reservations.
pub(super) fn load(store: &Store) -> Result<Vec<ReservationInfo>, StoreError> {
    let mut v = Vec::new();
    for (name, rec) in store.load_reservations()? {
        match serde_json::from_str::<ReservationInfo>(&rec) {
            Ok(r) => v.push(r),
            Err(e) => tracing::error!("reservation {name}: unreadable record ({e}); skipped"),
        }
    }
    v.sort_by(|a, b| (a.start_time, &a.name).cmp(&(b.start_time, &b.name)));
    Ok(v)
}

/// Each node's leaf switch under `TopologyPlugin=topology/tree` (gsctld checked at start
/// that `topology.conf` reads); empty otherwise.
pub(super) fn switches(cfg: &Config, nodes: &[super::NodeRt]) -> Vec<Option<u32>> {
    if cfg.lifecycle.topology != TopologyPlugin::Tree {
        return Vec::new();
    }
    match Topology::load_beside(&cfg.path) {
        Ok(t) => {
            let names: Vec<String> = nodes.iter().map(|n| n.name.clone()).collect();
            t.leaf_of(&names)
        }
        Err(e) => {
            tracing::error!("{e}");
            Vec::new()
        }
    }
}

fn bad(msg: impl Into<String>) -> ApiError {
    ApiError::new(ErrorCode::BadRequest, msg)
}

impl State {
    /// The scheduler core's blackouts: every reservation not over yet.
    pub(super) fn blackouts(&self) -> Vec<gsched_sched::Blackout> {
        self.resvs
            .iter()
            .map(|r| gsched_sched::Blackout {
                nodes: r
                    .nodes
                    .iter()
                    .filter_map(|n| self.node_index.get(n).copied())
                    .collect(),
                start: r.start_time,
                end: r.end_time,
            })
            .collect()
    }

    /// `req` with the topology (`topology/tree`) for a job that may span nodes: as few leaf
    /// switches as possible, at most `--switches=N` until its wait is over.
    pub(super) fn with_topology(
        &self,
        mut req: gsched_sched::ResourceRequest,
        info: &gsched_proto::job::JobInfo,
        now: i64,
    ) -> gsched_sched::ResourceRequest {
        if self.switch_of.is_empty() {
            return req;
        }
        let spans = req.nodes.is_some_and(|n| n >= 2)
            || (req.nodes.is_none() && req.tasks.max(1) > 1)
            || info.spec.switches.is_some();
        if !spans {
            return req;
        }
        let max_switches = info
            .spec
            .switches
            .filter(|s| now < info.submit_time + i64::from(s.wait_secs))
            .map(|s| s.count);
        let mut f = req.filter.as_deref().cloned().unwrap_or_default();
        f.topology = Some(std::sync::Arc::new(gsched_sched::topology::SwitchLimit {
            leaf: self.switch_of.clone(),
            max_switches,
        }));
        req.filter = Some(std::sync::Arc::new(f));
        req
    }

    /// The waiting jobs (reason `Resources`) that would start now but for a reservation:
    /// they fit the nodes as they are, and some node they could use is reserved before they
    /// would end. Slurm shows them `ReqNodeNotAvail, Reserved for maintenance`.
    pub(super) fn maint_blocked(
        &self,
        view: &gsched_sched::ClusterView,
        waiting: &[(gsched_proto::job::JobId, gsched_proto::job::Reason)],
        now: i64,
    ) -> Vec<gsched_proto::job::JobId> {
        if view.blackouts.is_empty() {
            return Vec::new();
        }
        let mut out = Vec::new();
        for &(id, r) in waiting {
            if r != gsched_proto::job::Reason::Resources {
                continue;
            }
            let Some(j) = self.jobs.get(&id) else {
                continue;
            };
            let req = self.request_of(&j.info.spec, j.info.user_id);
            let len = j
                .info
                .time_limit
                .map_or(gsched_sched::UNLIMITED_END, |m| i64::from(m) * 60);
            let blocked = j.info.spec.partitions.iter().any(|p| {
                let Some(part) = self.parts.iter().find(|x| &x.name == p) else {
                    return false;
                };
                gsched_sched::place(&view.nodes, &part.nodes, &req).is_some_and(|pl| {
                    pl.nodes
                        .iter()
                        .any(|a| view.blacked_out(a.node, now, now.saturating_add(len)))
                })
            });
            if blocked {
                out.push(id);
            }
        }
        out
    }

    /// `--reservation=NAME` at submission: the reservation exists and the job's user is one
    /// of its `Users=` (administrators may use any).
    pub(super) fn check_reservation(
        &self,
        spec: &gsched_proto::job::JobSpec,
        who: &Identity,
    ) -> Result<(), ApiError> {
        let Some(name) = &spec.reservation else {
            return Ok(());
        };
        let r = self.resvs.iter().find(|r| &r.name == name).ok_or_else(|| {
            ApiError::new(
                ErrorCode::ReservationInvalid,
                format!("Requested reservation is invalid: no reservation {name} (gscontrol show reservation)"),
            )
        })?;
        let uid = spec.run_as_uid.unwrap_or(who.uid);
        let user = gsched_proto::users::user_name(uid);
        if !self.is_admin(who) && !r.users.iter().any(|u| u == &user) {
            return Err(ApiError::new(
                ErrorCode::ReservationAccess,
                format!(
                    "Access denied to requested reservation: {user} is not in Users= of {name}"
                ),
            ));
        }
        Ok(())
    }

    /// Decides the `--reservation` jobs: each in its reservation while it is active, on its
    /// nodes only, ending by its end, after what the main pass started. The scheduler core
    /// is called once per reservation with a view of that reservation (its nodes as the one
    /// partition, the other reservations and its own end as blackouts); its starts and
    /// reasons join `decisions`.
    pub(super) fn reservation_decisions(
        &self,
        view: &gsched_sched::ClusterView,
        decisions: &mut gsched_sched::Decisions,
        jobs: &[gsched_proto::job::JobId],
        now: i64,
    ) {
        use gsched_proto::job::Reason;
        if jobs.is_empty() {
            return;
        }
        let mut v = view.clone();
        for s in &decisions.starts {
            for a in &s.placement.nodes {
                let n = &mut v.nodes[a.node];
                n.alloc_cpus += a.cpus;
                n.alloc_mem_mb += a.mem_mb;
            }
            v.running.push(gsched_sched::RunningAlloc {
                job_id: s.job_id,
                end: gsched_sched::UNLIMITED_END,
                nodes: s.placement.nodes.clone(),
            });
        }
        for r in &self.resvs {
            let mine: Vec<&super::Job> = jobs
                .iter()
                .filter_map(|id| self.jobs.get(id).map(|b| &**b))
                .filter(|j| j.info.spec.reservation.as_ref() == Some(&r.name))
                .collect();
            if mine.is_empty() {
                continue;
            }
            if !(r.start_time <= now && now < r.end_time) {
                decisions
                    .waiting
                    .extend(mine.iter().map(|j| (j.info.job_id, Reason::Reservation)));
                continue;
            }
            let nodes: Vec<usize> = r
                .nodes
                .iter()
                .filter_map(|n| self.node_index.get(n).copied())
                .collect();
            let mut rv = v.clone();
            rv.partitions = vec![gsched_sched::PartitionView {
                name: r.name.clone(),
                nodes: nodes.clone(),
                up: true,
                inactive: false,
                max_time: None,
                gpu: gsched_sched::GpuRules::default(),
            }];
            rv.blackouts = self
                .resvs
                .iter()
                .filter(|x| x.name != r.name)
                .map(|x| gsched_sched::Blackout {
                    nodes: x
                        .nodes
                        .iter()
                        .filter_map(|n| self.node_index.get(n).copied())
                        .collect(),
                    start: x.start_time,
                    end: x.end_time,
                })
                .chain(std::iter::once(gsched_sched::Blackout {
                    nodes: nodes.clone(),
                    start: r.end_time,
                    end: gsched_sched::UNLIMITED_END,
                }))
                .collect();
            let queue: Vec<gsched_sched::QueuedJob> = mine
                .iter()
                .map(|j| gsched_sched::QueuedJob {
                    id: j.info.job_id,
                    priority: j.info.priority,
                    submit_time: j.info.submit_time,
                    partitions: vec![0],
                    held: None,
                    begin_time: j.info.eligible_time,
                    time_limit: j.info.time_limit,
                    time_min: j.info.spec.time_min,
                    req: self.request_of(&j.info.spec, j.info.user_id),
                    limits: Vec::new(),
                    het: None,
                })
                .collect();
            let d = gsched_sched::decide(&rv, &queue, now, &self.sched_config);
            for mut s in d.starts {
                let Some(j) = self.jobs.get(&s.job_id) else {
                    continue;
                };
                let Some(p) = j
                    .info
                    .spec
                    .partitions
                    .first()
                    .and_then(|p| self.partition_by_name(p))
                    .or_else(|| self.default_partition())
                else {
                    continue;
                };
                for a in &s.placement.nodes {
                    let n = &mut v.nodes[a.node];
                    n.alloc_cpus += a.cpus;
                    n.alloc_mem_mb += a.mem_mb;
                }
                s.partition = p;
                decisions.starts.push(s);
            }
            decisions.waiting.extend(d.waiting);
        }
        // Jobs whose reservation is gone wait (Slurm keeps them pending too).
        for id in jobs {
            let Some(j) = self.jobs.get(id) else { continue };
            let name = j.info.spec.reservation.as_deref().unwrap_or("");
            if !self.resvs.iter().any(|r| r.name == name) {
                decisions.waiting.push((*id, Reason::Reservation));
            }
        }
    }

    /// Forgets reservations that are over.
    pub(super) fn expire_reservations(&mut self, now: i64) {
        let over: Vec<String> = self
            .resvs
            .iter()
            .filter(|r| r.end_time <= now)
            .map(|r| r.name.clone())
            .collect();
        for name in over {
            tracing::info!("reservation {name} is over");
            if let Err(e) = self.store.delete_reservation(&name) {
                tracing::error!("cannot remove reservation {name} from the store: {e}");
            }
            self.resvs.retain(|r| r.name != name);
        }
    }

    /// The lifecycle flags of node `i` for the API.
    pub(super) fn node_life_info(&self, i: usize, now: i64) -> NodeLifeInfo {
        let n = &self.nodes[i];
        NodeLifeInfo {
            reboot_requested: n
                .admin
                .reboot
                .as_ref()
                .is_some_and(|r| r.issued_at.is_none()),
            reboot_issued: n
                .admin
                .reboot
                .as_ref()
                .is_some_and(|r| r.issued_at.is_some()),
            maint: self.resvs.iter().any(|r| {
                r.flags.iter().any(|f| f == "MAINT")
                    && r.start_time <= now
                    && now < r.end_time
                    && r.nodes.contains(&n.name)
            }),
            migrate_by: n.admin.migrate_by,
            cpu_load: n.life.load.map(|l| l.load_avg),
            free_mem_mb: n
                .life
                .load
                .and_then(|l| Some(l.mem_total_mb?.saturating_sub(l.mem_used_mb?))),
        }
    }

    /// `scontrol create|update|delete reservation` (administrators only). Returns the
    /// reservation's name.
    pub fn reservation_action(
        &mut self,
        action: &ReservationAction,
        who: Identity,
        now: i64,
    ) -> Result<String, ApiError> {
        if !self.is_admin(&who) {
            return Err(ApiError::plain(ErrorCode::AccessDenied));
        }
        match action {
            ReservationAction::Delete { name } => {
                if !self.resvs.iter().any(|r| &r.name == name) {
                    return Err(ApiError::new(
                        ErrorCode::ReservationInvalid,
                        format!("Requested reservation is invalid: no reservation {name}"),
                    ));
                }
                self.store.delete_reservation(name).map_err(internal)?;
                self.resvs.retain(|r| &r.name != name);
                Ok(name.clone())
            }
            ReservationAction::Create(spec) => {
                let r = self.new_reservation(spec, &who, now)?;
                let name = r.name.clone();
                self.save_reservation(r)?;
                Ok(name)
            }
            ReservationAction::Update(spec) => {
                let name = spec
                    .name
                    .clone()
                    .ok_or_else(|| bad("ReservationName= names the reservation to update"))?;
                let old = self
                    .resvs
                    .iter()
                    .find(|r| r.name == name)
                    .cloned()
                    .ok_or_else(|| {
                        ApiError::new(
                            ErrorCode::ReservationInvalid,
                            format!("Requested reservation is invalid: no reservation {name}"),
                        )
                    })?;
                let r = self.apply(old, spec, now, false)?;
                self.save_reservation(r)?;
                Ok(name)
            }
        }
    }

    fn save_reservation(&mut self, r: ReservationInfo) -> Result<(), ApiError> {
        let rec = serde_json::to_string(&r).unwrap_or_default();
        self.store
            .save_reservation(&r.name, &rec)
            .map_err(internal)?;
        self.resvs.retain(|x| x.name != r.name);
        self.resvs.push(r);
        self.resvs
            .sort_by(|a, b| (a.start_time, &a.name).cmp(&(b.start_time, &b.name)));
        Ok(())
    }

    fn new_reservation(
        &self,
        spec: &ReservationSpec,
        who: &Identity,
        now: i64,
    ) -> Result<ReservationInfo, ApiError> {
        if spec.start_time.is_none() {
            return Err(bad(
                "StartTime= is required (now, now+1hour, or YYYY-MM-DDTHH:MM[:SS])",
            ));
        }
        if spec.end_time.is_none() && spec.duration_min.is_none() {
            return Err(bad("Duration= or EndTime= is required"));
        }
        if spec.nodes.is_none() {
            return Err(bad(
                "Nodes= is required (gsched reserves whole nodes: Nodes=n[1-4] or Nodes=ALL)",
            ));
        }
        if spec.users.as_ref().is_none_or(|u| u.is_empty()) {
            return Err(bad("Users= is required (the users the reservation is for)"));
        }
        let name = match &spec.name {
            Some(n) => {
                if self.resvs.iter().any(|r| &r.name == n) {
                    return Err(ApiError::plain(ErrorCode::ReservationNameDup));
                }
                n.clone()
            }
            None => {
                // Slurm's default name: the first user, an underscore and a number.
                let user = spec
                    .users
                    .as_ref()
                    .and_then(|u| u.first().cloned())
                    .unwrap_or_else(|| who.uid.to_string());
                (1..)
                    .map(|k| format!("{user}_{k}"))
                    .find(|n| !self.resvs.iter().any(|r| &r.name == n))
                    .expect("some name is free")
            }
        };
        let base = ReservationInfo {
            name,
            start_time: 0,
            end_time: 0,
            nodes: Vec::new(),
            flags: Vec::new(),
            users: Vec::new(),
            cpus: 0,
        };
        self.apply(base, spec, now, true)
    }

    /// `r` with the values of `spec`, checked.
    fn apply(
        &self,
        mut r: ReservationInfo,
        spec: &ReservationSpec,
        now: i64,
        creating: bool,
    ) -> Result<ReservationInfo, ApiError> {
        let duration = r.end_time - r.start_time;
        if let Some(s) = spec.start_time {
            if s < now - 60 && (creating || s != r.start_time) {
                return Err(ApiError::new(
                    ErrorCode::ReservationInvalid,
                    "Requested reservation is invalid: StartTime= is in the past",
                ));
            }
            r.start_time = s.max(now.min(s));
            if !creating && spec.end_time.is_none() && spec.duration_min.is_none() {
                r.end_time = r.start_time + duration;
            }
        }
        match (spec.end_time, spec.duration_min) {
            (Some(_), Some(_)) => return Err(bad("give Duration= or EndTime=, not both")),
            (Some(e), None) => r.end_time = e,
            (None, Some(d)) => r.end_time = r.start_time + i64::from(d) * 60,
            (None, None) => {}
        }
        if r.end_time <= r.start_time {
            return Err(ApiError::new(
                ErrorCode::ReservationInvalid,
                "Requested reservation is invalid: it must end after it starts",
            ));
        }
        if let Some(expr) = &spec.nodes {
            let names = if expr.eq_ignore_ascii_case("ALL") {
                self.nodes.iter().map(|n| n.name.clone()).collect()
            } else {
                State::expand_nodes(expr)?
            };
            let mut idx = Vec::new();
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
            idx.sort_unstable();
            idx.dedup();
            if idx.is_empty() {
                return Err(bad("Nodes= names no node"));
            }
            r.nodes = idx.iter().map(|&i| self.nodes[i].name.clone()).collect();
            r.cpus = idx.iter().map(|&i| self.nodes[i].cpus).sum();
        }
        if let Some(flags) = &spec.flags {
            let mut v = Vec::new();
            for f in flags {
                let up = f.trim().to_ascii_uppercase();
                if !RESV_FLAGS.contains(&up.as_str()) {
                    return Err(bad(format!(
                        "reservation flag {f} is not supported by gsched (supported: {})",
                        RESV_FLAGS.join(", ")
                    )));
                }
                if !v.contains(&up) {
                    v.push(up);
                }
            }
            r.flags = v;
        }
        if let Some(users) = &spec.users {
            for u in users {
                if gsched_proto::users::resolve_user(u).is_none() {
                    return Err(ApiError::new(
                        ErrorCode::BadRequest,
                        format!("Invalid user id: {u} is not a user on this host"),
                    ));
                }
            }
            r.users = users.clone();
        }
        // Slurm refuses a reservation over nodes whose jobs would still run when it
        // begins, unless IGNORE_JOBS.
        if !r.flags.iter().any(|f| f == "IGNORE_JOBS") {
            let busy = self.jobs.values().find(|j| {
                matches!(j.info.state, JobState::Running | JobState::Completing)
                    && j.info.nodes.iter().any(|n| r.nodes.contains(n))
                    && self.planned_end(&j.info, None) > r.start_time
            });
            if let Some(j) = busy {
                return Err(ApiError::new(
                    ErrorCode::NodesBusy,
                    format!(
                        "Requested nodes are busy: job {} runs on them past the start (wait for it, or add Flags=IGNORE_JOBS)",
                        j.info.job_id
                    ),
                ));
            }
        }
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{register_all, spec, state, ROOT};
    use super::*;

    fn create(name: &str, start: i64, flags: &[&str]) -> ReservationAction {
        ReservationAction::Create(ReservationSpec {
            name: Some(name.into()),
            start_time: Some(start),
            end_time: None,
            duration_min: Some(60),
            nodes: Some("n1".into()),
            flags: Some(flags.iter().map(|f| f.to_string()).collect()),
            users: Some(vec!["root".into()]),
        })
    }

    #[test]
    fn reservations_are_checked_stored_and_block_jobs() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(dir.path());
        register_all(&mut st, 1000);
        let a = st.submit(spec(2), ROOT, 1000).unwrap();
        st.schedule(1000);
        let busy_node = st.jobs[&a].info.nodes[0].clone();
        assert_eq!(busy_node, "n1");
        // A job without a time limit runs on n1 past any start: refused, unless IGNORE_JOBS.
        let e = st
            .reservation_action(&create("m", 2000, &["MAINT"]), ROOT, 1001)
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::NodesBusy, "{e}");
        let e = st
            .reservation_action(&create("m", 2000, &["MAINT", "WEEKLY"]), ROOT, 1001)
            .unwrap_err();
        assert!(e.message.contains("flag WEEKLY is not supported"), "{e}");
        let name = st
            .reservation_action(&create("m", 2000, &["maint", "ignore_jobs"]), ROOT, 1001)
            .unwrap();
        assert_eq!(name, "m");
        assert_eq!(st.resvs[0].flags, vec!["MAINT", "IGNORE_JOBS"]);
        assert_eq!(st.resvs[0].end_time, 2000 + 3600);
        let e = st
            .reservation_action(&create("m", 3000, &[]), ROOT, 1001)
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::ReservationNameDup);
        // Stored: a restarted controller has it.
        drop(st);
        let mut st = state(dir.path());
        assert_eq!(st.resvs.len(), 1);
        // n2 is free but its jobs would run into nothing; n1's blackout is in the view.
        assert_eq!(st.blackouts()[0].nodes, vec![0]);
        // Over: forgotten.
        st.expire_reservations(2000 + 3600);
        assert!(st.resvs.is_empty());
        let e = st
            .reservation_action(&ReservationAction::Delete { name: "m".into() }, ROOT, 1002)
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::ReservationInvalid);
        // --reservation: it must exist, and the user must be one of its Users=.
        st.reservation_action(&create("r", 1100, &["IGNORE_JOBS"]), ROOT, 1003)
            .unwrap();
        let in_r = gsched_proto::job::JobSpec {
            reservation: Some("r".into()),
            ..spec(1)
        };
        let stranger = Identity {
            uid: 4242,
            gid: 4242,
        };
        let e = st.check_reservation(&in_r, &stranger).unwrap_err();
        assert_eq!(e.code, ErrorCode::ReservationAccess, "{e}");
        st.check_reservation(&in_r, &ROOT).unwrap();
        let gone = gsched_proto::job::JobSpec {
            reservation: Some("gone".into()),
            ..spec(1)
        };
        assert_eq!(
            st.check_reservation(&gone, &ROOT).unwrap_err().code,
            ErrorCode::ReservationInvalid
        );
    }
}
