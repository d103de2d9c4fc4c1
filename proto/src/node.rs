//! Nodes and partitions as the API reports them. A node's state is a base state plus flags,
//! as in Slurm (`IDLE+DRAIN`, `ALLOCATED*` for not responding), so that `gsinfo` can print
//! Slurm's compact and long spellings.

use serde::{Deserialize, Serialize};

/// Base state of a node, derived from its allocations and health.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum NodeBaseState {
    /// Never registered since the controller started.
    Unknown,
    Idle,
    Mixed,
    Allocated,
    Down,
}

/// What the API returns for a node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NodeInfo {
    pub name: String,
    pub addr: String,
    pub port: u16,
    pub cpus: u32,
    pub real_memory_mb: u64,
    pub alloc_cpus: u32,
    pub alloc_mem_mb: u64,
    pub features: Vec<String>,
    pub gres: String,
    pub base: NodeBaseState,
    /// An admin asked for no new jobs (`State=DRAIN`).
    pub drain: bool,
    /// Registered, but heartbeats stopped arriving.
    pub not_responding: bool,
    pub reason: Option<String>,
    pub reason_time: Option<i64>,
    pub reason_uid: Option<u32>,
    pub partitions: Vec<String>,
    pub boot_time: Option<i64>,
    pub slurmd_start_time: Option<i64>,
    pub version: Option<String>,
    pub weight: u32,
    /// The node's GPUs in use, in Slurm's `GresUsed=` words (`gpu:a100:1(IDX:0),mps:50(IDX:1)`);
    /// empty when none are.
    #[serde(default)]
    pub gres_used: String,
    /// The node's state flags of its lifecycle (reboot, maintenance, load).
    #[serde(default)]
    pub life: NodeLifeInfo,
}

/// A node's lifecycle flags, as the API reports them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NodeLifeInfo {
    /// `scontrol reboot` asked for a reboot that was not sent yet (`REBOOT_REQUESTED`).
    #[serde(default)]
    pub reboot_requested: bool,
    /// The reboot was sent to the node; it has not registered since (`REBOOT_ISSUED`).
    #[serde(default)]
    pub reboot_issued: bool,
    /// In an active `Flags=MAINT` reservation (`MAINT`).
    #[serde(default)]
    pub maint: bool,
    /// `MigrateBy=`: epoch seconds by which the drained node is emptied.
    #[serde(default)]
    pub migrate_by: Option<i64>,
    /// The last one-minute load average reported (`CPULoad=`).
    #[serde(default)]
    pub cpu_load: Option<f64>,
    /// Memory not in use, MiB, from the last load sample (`FreeMem=`: `MemAvailable`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub free_mem_mb: Option<u64>,
}

impl NodeBaseState {
    /// Slurm's long name of the base state.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeBaseState::Unknown => "UNKNOWN",
            NodeBaseState::Idle => "IDLE",
            NodeBaseState::Mixed => "MIXED",
            NodeBaseState::Allocated => "ALLOCATED",
            NodeBaseState::Down => "DOWN",
        }
    }
}

impl NodeInfo {
    /// Slurm's long state (`scontrol show node State=`, `sinfo %T`).
    pub fn state_long(&self) -> String {
        let mut s = String::from(self.base.as_str());
        if self.drain {
            if self.base == NodeBaseState::Idle || self.base == NodeBaseState::Down {
                s = if self.base == NodeBaseState::Idle {
                    "DRAINED".into()
                } else {
                    "DOWN+DRAIN".into()
                };
            } else {
                s = "DRAINING".into();
            }
        }
        if self.not_responding {
            s.push('*');
        }
        if self.life.maint {
            s.push_str("+MAINT");
        }
        if self.life.reboot_issued {
            s.push_str("+REBOOT_ISSUED");
        } else if self.life.reboot_requested {
            s.push_str("+REBOOT_REQUESTED");
        }
        s
    }

    /// The long state as `scontrol show node` prints it (`IDLE+DRAIN`, `MIXED+DRAIN`).
    pub fn state_scontrol(&self) -> String {
        let mut s = String::from(self.base.as_str());
        if self.drain {
            s.push_str("+DRAIN");
        }
        if self.life.maint {
            s.push_str("+MAINT");
        }
        if self.not_responding {
            s.push_str("+NOT_RESPONDING");
        }
        if self.life.reboot_issued {
            s.push_str("+REBOOT_ISSUED");
        } else if self.life.reboot_requested {
            s.push_str("+REBOOT_REQUESTED");
        }
        s
    }

    /// Slurm's compact state (`sinfo %t`): `idle`, `mix`, `alloc`, `drain`, `drng`, `down`, `unk`,
    /// with `*` when not responding.
    pub fn state_compact(&self) -> String {
        if self.life.reboot_issued {
            // Slurm's sinfo: `boot^` while the reboot is under way.
            return if self.not_responding {
                "boot^*".into()
            } else {
                "boot^".into()
            };
        }
        if self.life.maint && !self.drain && self.base != NodeBaseState::Down {
            let mut s = String::from("maint");
            if self.not_responding {
                s.push('*');
            }
            return s;
        }
        let mut s = String::from(match (self.base, self.drain) {
            (NodeBaseState::Down, _) => "down",
            (NodeBaseState::Idle, true) | (NodeBaseState::Unknown, true) => "drain",
            (_, true) => "drng",
            (NodeBaseState::Unknown, false) => "unk",
            (NodeBaseState::Idle, false) => "idle",
            (NodeBaseState::Mixed, false) => "mix",
            (NodeBaseState::Allocated, false) => "alloc",
        });
        if self.life.reboot_requested {
            // Slurm's sinfo: `@` marks a node pending reboot.
            s.push('@');
        }
        if self.not_responding {
            s.push('*');
        }
        s
    }
}

/// Partition availability (`State=` on a PartitionName line).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum PartitionStateInfo {
    #[default]
    Up,
    Down,
    Drain,
    Inactive,
}

impl PartitionStateInfo {
    pub fn as_str(self) -> &'static str {
        match self {
            PartitionStateInfo::Up => "UP",
            PartitionStateInfo::Down => "DOWN",
            PartitionStateInfo::Drain => "DRAIN",
            PartitionStateInfo::Inactive => "INACTIVE",
        }
    }
}

/// What the API returns for a partition.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PartitionInfo {
    pub name: String,
    pub nodes: Vec<String>,
    pub default: bool,
    /// Minutes; `None` = UNLIMITED.
    pub max_time: Option<u32>,
    /// Minutes; `None` = NONE.
    pub default_time: Option<u32>,
    pub state: PartitionStateInfo,
    pub total_cpus: u32,
    pub total_nodes: u32,
    /// `AllowAccounts`/`DenyAccounts`/`AllowQos`/`DenyQos` (`None` = no such list).
    #[serde(default)]
    pub access: PartitionAccessInfo,
    /// `Hidden=YES`.
    #[serde(default)]
    pub hidden: bool,
    /// The partition's own `DefMemPerCPU=`/`DefMemPerNode=` (not the cluster's).
    #[serde(default)]
    pub def_mem: Option<crate::job::MemRequest>,
    /// The partition's own `MaxMemPerCPU=`/`MaxMemPerNode=` (not the cluster's).
    #[serde(default)]
    pub max_mem: Option<crate::job::MemRequest>,
    /// The partition's own `OverTimeLimit=` (`None`: not set).
    #[serde(default)]
    pub over_time_limit: Option<OverTimeLimit>,
    /// Whether root's jobs are refused (`DisableRootJobs`, the partition's or the cluster's).
    #[serde(default)]
    pub disable_root_jobs: bool,
    /// Hidden from the caller: `Hidden=YES`, or an `AllowGroups=` it is not in (never for
    /// root, SlurmUser and `AdminUsers`). gsinfo, gscontrol and gsqueue leave such
    /// partitions (and gsqueue their jobs) out unless `-a`, as Slurm's commands do.
    #[serde(default)]
    pub unlisted: bool,
}

/// A partition's `OverTimeLimit=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OverTimeLimit {
    Minutes(u32),
    Unlimited,
}

/// Who may use a partition, as `scontrol show partition` prints it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PartitionAccessInfo {
    pub allow_accounts: Option<Vec<String>>,
    pub deny_accounts: Option<Vec<String>>,
    pub allow_qos: Option<Vec<String>>,
    pub deny_qos: Option<Vec<String>>,
    /// `AllowGroups=` (`None`: ALL).
    #[serde(default)]
    pub allow_groups: Option<Vec<String>>,
}

impl PartitionAccessInfo {
    /// scontrol's `AllowGroups=` value.
    pub fn allow_groups_item(&self) -> String {
        self.allow_groups
            .as_ref()
            .map_or_else(|| "ALL".to_string(), |g| g.join(","))
    }

    /// scontrol's `AllowAccounts=ALL` or `DenyAccounts=a,b` (an allow list wins), and the
    /// same for QOS: the two `Key=Value` items.
    pub fn scontrol_items(&self) -> (String, String) {
        fn one(allow: &Option<Vec<String>>, deny: &Option<Vec<String>>, what: &str) -> String {
            match (allow, deny) {
                (Some(a), _) => format!("Allow{what}={}", a.join(",")),
                (None, Some(d)) => format!("Deny{what}={}", d.join(",")),
                (None, None) => format!("Allow{what}=ALL"),
            }
        }
        (
            one(&self.allow_accounts, &self.deny_accounts, "Accounts"),
            one(&self.allow_qos, &self.deny_qos, "Qos"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_access_items() {
        let mut a = PartitionAccessInfo::default();
        assert_eq!(
            a.scontrol_items(),
            ("AllowAccounts=ALL".to_string(), "AllowQos=ALL".to_string())
        );
        a.deny_accounts = Some(vec!["x".into(), "y".into()]);
        a.allow_qos = Some(vec!["high".into()]);
        a.deny_qos = Some(vec!["low".into()]);
        assert_eq!(
            a.scontrol_items(),
            ("DenyAccounts=x,y".to_string(), "AllowQos=high".to_string())
        );
    }
}
