//! Heterogeneous jobs (`sbatch ... : ...`, `#SBATCH hetjob`): one job made of components
//! with their own partitions and resources, started together. Every component is a job of
//! its own with its own id; the ids of a het job are consecutive, the first (the *leader*,
//! whose id is the het job's id `N`) runs the batch script, and component `K` is shown as
//! `N+K` (squeue, sacct), as Slurm does. Naming `N` names every component; `N+K` one.

use crate::job::JobId;
use serde::{Deserialize, Serialize};

/// Where one job sits in its heterogeneous job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HetComponent {
    /// The leader's id (`HetJobId=`, `SLURM_HET_JOB_ID`... the het job's id).
    pub job_id: JobId,
    /// 0 for the leader (`HetJobOffset=`).
    pub offset: u32,
    /// How many components the het job has (`SLURM_HET_SIZE`).
    pub count: u32,
}

impl HetComponent {
    /// `N+K`.
    pub fn name(&self) -> String {
        format!("{}+{}", self.job_id, self.offset)
    }

    /// `HetJobIdSet=`: the ids of every component, as a range (`12-14`) or one id.
    pub fn id_set(&self) -> String {
        let last = self.job_id + self.count.saturating_sub(1);
        if last == self.job_id {
            self.job_id.to_string()
        } else {
            format!("{}-{last}", self.job_id)
        }
    }

    /// The id of component `k` of this het job.
    pub fn component_id(&self, k: u32) -> JobId {
        self.job_id + k
    }
}

/// Parses `N+K` (a het job component); `None` for anything else.
pub fn parse_component_ref(s: &str) -> Option<(JobId, u32)> {
    let (n, k) = s.split_once('+')?;
    let ok = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    if !ok(n) || !ok(k) {
        return None;
    }
    let n: JobId = n.parse().ok().filter(|&n| n > 0)?;
    Some((n, k.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_sets_and_refs() {
        let c = HetComponent {
            job_id: 12,
            offset: 1,
            count: 3,
        };
        assert_eq!(c.name(), "12+1");
        assert_eq!(c.id_set(), "12-14");
        assert_eq!(c.component_id(2), 14);
        let one = HetComponent { count: 1, ..c };
        assert_eq!(one.id_set(), "12");
        assert_eq!(parse_component_ref("12+1"), Some((12, 1)));
        for bad in ["12", "+1", "12+", "0+1", "a+1", "12+1+2", "12_1"] {
            assert_eq!(parse_component_ref(bad), None, "{bad}");
        }
    }
}
