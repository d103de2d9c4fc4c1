//! The association table (Slurm's accounting database, kept by gsctld in its own store):
//! accounts, users, associations (a user in an account, optionally in one partition) and
//! QOS definitions, as `gsacctmgr` shows and changes them and as the controller enforces them
//! (`AccountingStorageEnforce=`). Names are lower-cased, as Slurm's `sacctmgr` stores them.
//!
//! Changes travel as [`AcctChange`]: the command parses `sacctmgr`'s grammar and sends the
//! `where` and `set` pairs as written; the controller, which owns the types and the rules,
//! checks every key and answers Slurm's messages. A change is committed to the store before
//! the answer.

use serde::{Deserialize, Serialize};

/// The QOS every job gets unless it or its association names another; created at first start.
pub const DEFAULT_QOS: &str = "normal";
/// The account at the top of the tree; created at first start.
pub const ROOT_ACCOUNT: &str = "root";

/// A QOS (`sacctmgr add qos`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct QosDef {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// `Priority=`: the QOS factor of multifactor priority is this over the largest one.
    #[serde(default)]
    pub priority: u32,
    /// `MaxWall=` (per job), minutes.
    #[serde(default)]
    pub max_wall: Option<u32>,
    /// `MaxJobsPerUser=`: running jobs of one user in this QOS.
    #[serde(default)]
    pub max_jobs_per_user: Option<u32>,
    /// `MaxSubmitJobsPerUser=`: pending and running jobs of one user in this QOS.
    #[serde(default)]
    pub max_submit_jobs_per_user: Option<u32>,
    /// `MaxTRESPerUser=cpu=N`: CPUs one user's running jobs of this QOS may hold.
    #[serde(default)]
    pub max_cpus_per_user: Option<u32>,
    /// `Flags=DenyOnLimit`: refuse at submit a job that breaks a limit, instead of holding
    /// it pending.
    #[serde(default)]
    pub deny_on_limit: bool,
    /// `Flags=NoDefer` (gsched): jobs of this QOS are never deferred to a price window.
    #[serde(default)]
    pub no_defer: bool,
    /// `Flags=Interactive` (gsched): jobs of this QOS are exempt from the invalid-job ladder
    /// (interactive apps such as Jupyter, which idle legitimately; gsched has no salloc).
    #[serde(default)]
    pub interactive: bool,
    /// `HangMinutes=` (gsched), in seconds: the invalid-job ladder's hang threshold for this
    /// QOS's jobs, over the partition's and the cluster's; `Some(0)` turns the check off,
    /// `None` (not set) leaves it to them.
    #[serde(default)]
    pub hang_secs: Option<u64>,
    /// `IdleGpuMinutes=` (gsched), in seconds, as `hang_secs`.
    #[serde(default)]
    pub idle_gpu_secs: Option<u64>,
}

impl QosDef {
    /// Slurm's `Flags` column (gsched's own flags after Slurm's).
    pub fn flags(&self) -> String {
        let mut v = Vec::new();
        if self.deny_on_limit {
            v.push("DenyOnLimit");
        }
        if self.no_defer {
            v.push("NoDefer");
        }
        if self.interactive {
            v.push("Interactive");
        }
        v.join(",")
    }

    /// This QOS's part in the invalid-job policy.
    pub fn ladder(&self) -> crate::ladder_conf::QosLadder {
        crate::ladder_conf::QosLadder {
            interactive: self.interactive,
            hang_secs: self.hang_secs,
            idle_gpu_secs: self.idle_gpu_secs,
        }
    }
}

/// An account (`sacctmgr add account`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AccountDef {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub organization: String,
    /// `Parent=`; `None` only for `root`.
    #[serde(default)]
    pub parent: Option<String>,
    /// `Fairshare=` shares among the parent's children (default 1).
    #[serde(default = "one")]
    pub fairshare: u32,
    /// `DefaultQOS=` for jobs of this account (unless the user's association names one).
    #[serde(default)]
    pub default_qos: Option<String>,
    /// `QOS=`: the QOS its users may use; empty = the parent's (root: `normal`).
    #[serde(default)]
    pub qos: Vec<String>,
    /// `MaxJobs=`, `MaxSubmitJobs=`, `MaxWall=`: limits every user association of the
    /// account inherits unless it sets its own.
    #[serde(default)]
    pub limits: AssocLimits,
}

/// Per-association limits (`MaxJobs=`, `MaxSubmitJobs=`, `MaxWall=`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct AssocLimits {
    #[serde(default)]
    pub max_jobs: Option<u32>,
    #[serde(default)]
    pub max_submit_jobs: Option<u32>,
    /// Minutes.
    #[serde(default)]
    pub max_wall: Option<u32>,
}

/// `AdminLevel=` of a user.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
pub enum AdminLevel {
    #[default]
    None,
    Operator,
    Administrator,
}

impl AdminLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            AdminLevel::None => "None",
            AdminLevel::Operator => "Operator",
            AdminLevel::Administrator => "Administrator",
        }
    }

    /// Slurm's spellings (`admin`, `oper`, `none`, case-insensitive, prefixes).
    pub fn parse(s: &str) -> Option<AdminLevel> {
        let l = s.trim().to_ascii_lowercase();
        if l.is_empty() {
            return None;
        }
        if "administrator".starts_with(&l) || l == "admin" {
            Some(AdminLevel::Administrator)
        } else if "operator".starts_with(&l) {
            Some(AdminLevel::Operator)
        } else if "none".starts_with(&l) {
            Some(AdminLevel::None)
        } else {
            None
        }
    }
}

/// A user (`sacctmgr add user`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct UserDef {
    pub name: String,
    /// The account of jobs submitted without `-A`.
    pub default_account: String,
    #[serde(default)]
    pub admin_level: AdminLevel,
}

/// An association: a user in an account (optionally in one partition only).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AssocDef {
    pub user: String,
    pub account: String,
    #[serde(default)]
    pub partition: Option<String>,
    /// `Fairshare=` shares among the account's users (default 1).
    #[serde(default = "one")]
    pub fairshare: u32,
    #[serde(default)]
    pub default_qos: Option<String>,
    /// `QOS=`: the QOS this user may use in the account; empty = the account's.
    #[serde(default)]
    pub qos: Vec<String>,
    #[serde(default)]
    pub limits: AssocLimits,
}

fn one() -> u32 {
    1
}

/// Decayed usage of one association, as stored (CPU-seconds).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct UsageRow {
    pub account: String,
    pub user: String,
    pub usage: f64,
}

/// `GET /v1/acct`: the whole table.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AcctResponse {
    pub accounts: Vec<AccountDef>,
    pub users: Vec<UserDef>,
    pub assocs: Vec<AssocDef>,
    pub qos: Vec<QosDef>,
    /// Decayed usage per association (fair-share), at the controller's last pass.
    #[serde(default)]
    pub usage: Vec<UsageRow>,
    /// `AccountingStorageEnforce=` as `scontrol show config` prints it.
    #[serde(default)]
    pub enforce: String,
}

/// What a change does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AcctOp {
    Add,
    Modify,
    Delete,
}

/// What a change applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AcctEntity {
    Account,
    User,
    Qos,
}

impl AcctEntity {
    /// Slurm's word in messages (`Account`, `User`, `QOS`).
    pub fn word(self) -> &'static str {
        match self {
            AcctEntity::Account => "Account",
            AcctEntity::User => "User",
            AcctEntity::Qos => "QOS",
        }
    }
}

/// `POST /v1/acct/update`: one `gsacctmgr add|modify|delete` command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AcctChange {
    pub op: AcctOp,
    pub entity: AcctEntity,
    /// The names given (`add account a,b`; `Name=` in `where`).
    #[serde(default)]
    pub names: Vec<String>,
    /// `where` conditions (`Account=`, `Partition=`, ...), keys as typed.
    #[serde(default)]
    pub conditions: Vec<(String, String)>,
    /// Settings (`K=V`, `K+=V`, `K-=V`): key, operator (`=`, `+=`, `-=`), value.
    #[serde(default)]
    pub settings: Vec<(String, String, String)>,
}

/// The answer to a change: what was added, modified or deleted, one line each as sacctmgr
/// lists them (`physics`, `  C = c  A = physics  U = bob`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AcctChangeResponse {
    pub changed: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admin_levels_parse_slurm_spellings() {
        assert_eq!(AdminLevel::parse("Admin"), Some(AdminLevel::Administrator));
        assert_eq!(
            AdminLevel::parse("administrator"),
            Some(AdminLevel::Administrator)
        );
        assert_eq!(AdminLevel::parse("oper"), Some(AdminLevel::Operator));
        assert_eq!(AdminLevel::parse("None"), Some(AdminLevel::None));
        assert_eq!(AdminLevel::parse("boss"), None);
    }

    #[test]
    fn qos_flags_print_in_slurms_order() {
        let q = QosDef {
            deny_on_limit: true,
            ..QosDef::default()
        };
        assert_eq!(q.flags(), "DenyOnLimit");
        assert_eq!(QosDef::default().flags(), "");
        let q = QosDef {
            deny_on_limit: true,
            interactive: true,
            ..QosDef::default()
        };
        assert_eq!(q.flags(), "DenyOnLimit,Interactive");
    }

    #[test]
    fn qos_records_stored_before_the_ladder_settings_still_load() {
        let old = r#"{"name":"jupyter","description":"","priority":10,"max_wall":null,"deny_on_limit":false,"no_defer":true}"#;
        let q: QosDef = serde_json::from_str(old).unwrap();
        assert!(q.no_defer && !q.interactive);
        assert_eq!(q.ladder(), crate::ladder_conf::QosLadder::default());
        let new = QosDef {
            name: "strict".into(),
            hang_secs: Some(0),
            idle_gpu_secs: Some(90),
            interactive: true,
            ..QosDef::default()
        };
        let back: QosDef = serde_json::from_str(&serde_json::to_string(&new).unwrap()).unwrap();
        assert_eq!(back, new);
    }
}
