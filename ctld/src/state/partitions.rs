//! Partition states and `scontrol update PartitionName=`.
//!
//! A partition's `State=` decides two things, as in Slurm: whether it takes new jobs (`UP`
//! and `DOWN` do, `DRAIN` and `INACTIVE` refuse them with "Required partition not available
//! (inactive or drain)"), and whether its pending jobs may start (`UP` and `DRAIN`; in a
//! `DOWN` partition they wait with reason `PartitionDown`, in an `INACTIVE` one with
//! `PartitionInactive`). Running jobs are never touched.
//!
//! An update is checked as a whole by [`Config::with_partition_update`] and then replaces
//! the controller's config (`State::cfg`), from which the partitions, each node's list of
//! partitions and every per-partition rule (access lists, memory defaults, time limits,
//! the invalid-job ladder) are read. Nothing is stored: as in Slurm 22.05 without
//! `ReconfigFlags=KeepPartInfo`, a restart or `scontrol reconfigure` reads the config file
//! again, which the answer to the admin says.

use super::{build_parts, ApiError, ErrorCode, Identity, State};
use gsched_proto::api::PartitionUpdateRequest;
use gsched_proto::node::PartitionStateInfo;
use std::sync::Arc;

impl State {
    /// `scontrol update PartitionName=...`: admins only.
    pub fn update_partition(
        &mut self,
        req: &PartitionUpdateRequest,
        who: &Identity,
    ) -> Result<(), ApiError> {
        if !self.is_admin(who) {
            return Err(ApiError::new(
                ErrorCode::AccessDenied,
                "Access/permission denied: only root, SlurmUser or AdminUsers may update partitions",
            ));
        }
        let cfg = self
            .cfg
            .with_partition_update(&req.name, &req.settings)
            .map_err(|m| {
                let code = if m.starts_with("Invalid partition name") {
                    ErrorCode::InvalidPartition
                } else {
                    ErrorCode::BadRequest
                };
                ApiError::new(code, m)
            })?;
        self.parts = build_parts(&cfg, &self.node_index, &mut self.nodes);
        self.cfg = Arc::new(cfg);
        tracing::info!(
            "partition {} updated by uid {}: {}",
            req.name,
            who.uid,
            req.settings
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" ")
        );
        Ok(())
    }

    /// Whether partition `p` takes new jobs (`UP`, `DOWN`) or refuses them (`DRAIN`,
    /// `INACTIVE`).
    pub(super) fn partition_takes_jobs(&self, p: usize) -> bool {
        matches!(
            self.parts[p].state,
            PartitionStateInfo::Up | PartitionStateInfo::Down
        )
    }

    /// A new job's partitions without those that refuse new jobs, as slurmctld drops them
    /// from a list; none left is Slurm's ESLURM_PARTITION_NOT_AVAIL. `Some(names)` when the
    /// job's list must be rewritten.
    pub(super) fn drop_closed_partitions(
        &self,
        part_idx: &mut Vec<usize>,
    ) -> Result<Option<Vec<String>>, ApiError> {
        if part_idx.iter().all(|&p| self.partition_takes_jobs(p)) {
            return Ok(None);
        }
        part_idx.retain(|&p| self.partition_takes_jobs(p));
        if part_idx.is_empty() {
            return Err(ApiError::plain(ErrorCode::PartitionNotAvailable));
        }
        Ok(Some(
            part_idx
                .iter()
                .map(|&p| self.parts[p].name.clone())
                .collect(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{register_all, spec, state, ROOT};
    use super::*;
    use gsched_proto::job::{JobState, Reason};

    fn update(st: &mut State, name: &str, kv: &[(&str, &str)]) -> Result<(), ApiError> {
        let req = PartitionUpdateRequest {
            name: name.into(),
            settings: kv
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        };
        st.update_partition(&req, &ROOT)
    }

    #[test]
    fn partition_states_decide_what_is_taken_and_what_starts() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(dir.path());
        register_all(&mut st, 1000);
        let part = st.parts[0].name.clone();
        // DOWN: submissions are taken, nothing starts.
        update(&mut st, &part, &[("State", "DOWN")]).unwrap();
        let a = st.submit(spec(1), ROOT, 1000).unwrap();
        st.schedule(1001);
        assert_eq!(st.jobs[&a].info.state, JobState::Pending);
        assert_eq!(st.jobs[&a].info.reason, Reason::PartitionDown);
        // INACTIVE: submissions refused, pending jobs wait with their own reason.
        update(&mut st, &part, &[("State", "INACTIVE")]).unwrap();
        let e = st.submit(spec(1), ROOT, 1002).unwrap_err();
        assert_eq!(e.code, ErrorCode::PartitionNotAvailable);
        assert_eq!(
            e.to_string(),
            "Required partition not available (inactive or drain)"
        );
        st.schedule(1003);
        assert_eq!(st.jobs[&a].info.reason, Reason::PartitionInactive);
        // DRAIN: submissions refused, the pending job starts.
        update(&mut st, &part, &[("state", "drain")]).unwrap();
        assert!(st.submit(spec(1), ROOT, 1004).is_err());
        st.schedule(1005);
        assert_eq!(st.jobs[&a].info.state, JobState::Running);
        // UP again: taken and started.
        update(&mut st, &part, &[("State", "UP")]).unwrap();
        let b = st.submit(spec(1), ROOT, 1006).unwrap();
        st.schedule(1007);
        assert_eq!(st.jobs[&b].info.state, JobState::Running);
    }

    #[test]
    fn only_admins_update_and_a_bad_update_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(dir.path());
        let part = st.parts[0].name.clone();
        let user = Identity {
            uid: 4242,
            gid: 4242,
        };
        let req = PartitionUpdateRequest {
            name: part.clone(),
            settings: vec![("State".into(), "DOWN".into())],
        };
        let e = st.update_partition(&req, &user).unwrap_err();
        assert_eq!(e.code, ErrorCode::AccessDenied);
        let e = update(&mut st, &part, &[("State", "DOWN"), ("MaxTime", "soon")]).unwrap_err();
        assert_eq!(e.code, ErrorCode::BadRequest);
        assert_eq!(st.parts[0].state, PartitionStateInfo::Up);
        let e = update(&mut st, "nope", &[("State", "DOWN")]).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidPartition);
        // MaxTime applies to the next pass: a 2-hour job now waits.
        update(&mut st, &part, &[("MaxTime", "60")]).unwrap();
        assert_eq!(st.parts[0].max_time, Some(60));
        assert_eq!(st.cfg.partitions[0].max_time, Some(60));
    }
}
