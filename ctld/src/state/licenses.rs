//! Licenses (`Licenses=`, `--licenses`): cluster-wide counters. At submit a job's licenses
//! must exist and fit the totals ("Invalid license specification"); in each pass every
//! license is a counted limit of the scheduler core ([`gsched_sched::LimitUnit::Count`], at
//! the front of the view's limits), whose free count is the total less what started jobs
//! hold, so one pass never hands out more than there is and a job short of one waits with
//! the reason `Licenses`.

use super::*;
use gsched_sched::{LimitSlot, LimitUnit};

impl State {
    /// Refuses a job naming a license the cluster does not have, or more than it has.
    pub(super) fn check_licenses(&self, spec: &JobSpec) -> Result<(), ApiError> {
        for (name, n) in &spec.licenses {
            match self.cfg.licenses.iter().find(|(l, _)| l == name) {
                None => {
                    return Err(ApiError::new(
                        ErrorCode::InvalidLicenses,
                        format!(
                            "Invalid license specification: the cluster has no license {name} ({})",
                            self.license_names()
                        ),
                    ))
                }
                Some((_, total)) if n > total => {
                    return Err(ApiError::new(
                        ErrorCode::InvalidLicenses,
                        format!(
                            "Invalid license specification: {n} of {name} asked for, the cluster has {total}"
                        ),
                    ))
                }
                Some(_) => {}
            }
        }
        Ok(())
    }

    fn license_names(&self) -> String {
        if self.cfg.licenses.is_empty() {
            "no Licenses= in the config".into()
        } else {
            let names: Vec<&str> = self.cfg.licenses.iter().map(|(n, _)| n.as_str()).collect();
            format!("it has {}", names.join(", "))
        }
    }

    /// A job's licenses as the core sees them: (limit index, count).
    pub(super) fn license_request(&self, spec: &JobSpec) -> Vec<(usize, u32)> {
        spec.licenses
            .iter()
            .filter_map(|(name, n)| {
                let i = self.cfg.licenses.iter().position(|(l, _)| l == name)?;
                Some((i, *n))
            })
            .collect()
    }

    /// How many of each license the started jobs hold, in config order.
    fn licenses_used(&self) -> Vec<u64> {
        let mut used = vec![0u64; self.cfg.licenses.len()];
        if used.is_empty() {
            return used;
        }
        for j in self.active.started_jobs(&self.jobs) {
            for (i, n) in self.license_request(&j.info.spec) {
                used[i] += u64::from(n);
            }
        }
        used
    }

    /// The licenses' free counts as counted limits, one per configured license.
    pub(super) fn license_slots(&self) -> Vec<LimitSlot> {
        self.cfg
            .licenses
            .iter()
            .zip(self.licenses_used())
            .map(|((_, total), used)| LimitSlot {
                left: u64::from(*total).saturating_sub(used),
                unit: LimitUnit::Count,
                reason: Reason::Licenses,
            })
            .collect()
    }

    /// `scontrol show licenses`: each license's total and use.
    pub fn license_infos(&self) -> Vec<gsched_proto::api::LicenseInfo> {
        self.cfg
            .licenses
            .iter()
            .zip(self.licenses_used())
            .map(|((name, total), used)| gsched_proto::api::LicenseInfo {
                name: name.clone(),
                total: *total,
                used: used.min(u64::from(*total)) as u32,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::launch::launches;
    use super::super::tests::*;
    use super::*;

    /// Two licenses of `matlab`: jobs asking 2, 1 and 1 start one by one as they free, the
    /// waiting ones with the reason `Licenses`; unknown names and too many are refused.
    #[test]
    fn jobs_wait_for_licenses_and_hold_them_while_they_run() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state_conf(
            dir.path(),
            "Licenses=matlab:2,fluent\nNodeName=n[1-2] NodeAddr=127.0.0.1 CPUs=2 RealMemory=1000\n\
             PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE\n",
        );
        register_all(&mut st, 1000);
        let with = |l: &str| JobSpec {
            licenses: gsched_proto::licenses::parse(l).unwrap(),
            ..spec(1)
        };
        let e = st.submit(with("ansys"), ROOT, 1000).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidLicenses);
        assert!(
            e.message
                .contains("no license ansys (it has matlab, fluent)"),
            "{e}"
        );
        let e = st.submit(with("matlab:3"), ROOT, 1000).unwrap_err();
        assert!(
            e.message
                .contains("3 of matlab asked for, the cluster has 2"),
            "{e}"
        );
        let a = st.submit(with("matlab:2"), ROOT, 1000).unwrap();
        let b = st.submit(with("matlab,fluent"), ROOT, 1000).unwrap();
        let c = st.submit(with("matlab"), ROOT, 1000).unwrap();
        let free = st.submit(spec(1), ROOT, 1000).unwrap();
        let started = |st: &mut State, now| -> Vec<JobId> {
            let effects = st.schedule(now);
            launches(st, &effects, now)
                .iter()
                .map(|l| l.job_id)
                .collect()
        };
        assert_eq!(started(&mut st, 1001), vec![a, free]);
        assert_eq!(st.jobs[&b].info.reason, Reason::Licenses);
        assert_eq!(st.jobs[&c].info.reason, Reason::Licenses);
        let infos = st.license_infos();
        assert_eq!((infos[0].used, infos[1].used), (2, 0));
        st.complete(
            &ended(a, st.jobs[&a].info.nodes[0].clone(), 1001, 1005),
            1005,
        )
        .unwrap();
        // Both fit now: one each.
        assert_eq!(started(&mut st, 1006), vec![b, c]);
        let infos = st.license_infos();
        assert_eq!((infos[0].used, infos[1].used), (2, 1));
    }
}
