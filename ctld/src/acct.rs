//! The association table in the controller: accounts, users, associations and QOS, loaded
//! from the store at start (on a new store, as on a new Slurm cluster: the account `root`, the
//! user `root` in it as an administrator, and the QOS `normal`), changed
//! by `gsacctmgr` through [`AcctDb::apply`], and read by submission checks and the scheduling
//! pass (`state/limits.rs`) and by priority (`state/priority.rs`).
//!
//! [`AcctDb::apply`] works on a copy and returns the store writes; the caller commits them and
//! only then keeps the copy, so a change is either stored and in effect, or neither. No I/O
//! here; the rules (names, keys, inheritance) are unit-tested directly.

use crate::store::{Store, StoreError};
use gsched_proto::acct::{
    AccountDef, AcctChange, AcctEntity, AcctOp, AcctResponse, AdminLevel, AssocDef, AssocLimits,
    QosDef, UserDef, DEFAULT_QOS, ROOT_ACCOUNT,
};
use gsched_proto::api::{ApiError, ErrorCode};
use gsched_proto::units;
use std::collections::BTreeMap;

/// Store kinds of the `acct` table.
const K_ACCOUNT: &str = "account";
const K_USER: &str = "user";
const K_ASSOC: &str = "assoc";
const K_QOS: &str = "qos";

/// A store write: kind, key, record (`None` deletes).
pub type Write = (&'static str, String, Option<String>);

/// Association key: user, account, partition (`""` = any partition).
pub type AssocKey = (String, String, String);

/// The whole table in memory.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AcctDb {
    pub accounts: BTreeMap<String, AccountDef>,
    pub users: BTreeMap<String, UserDef>,
    pub assocs: BTreeMap<AssocKey, AssocDef>,
    pub qos: BTreeMap<String, QosDef>,
}

fn bad(msg: impl Into<String>) -> ApiError {
    ApiError::new(ErrorCode::BadRequest, msg)
}

fn corrupt(store: &Store, what: &str, e: serde_json::Error) -> StoreError {
    StoreError::Corrupt {
        path: store.path().to_path_buf(),
        what: what.to_string(),
        detail: e.to_string(),
    }
}

fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

fn assoc_key_text(k: &AssocKey) -> String {
    format!("{}\u{1f}{}\u{1f}{}", k.0, k.1, k.2)
}

/// Slurm's names are case-insensitive and stored lower-case.
fn norm(s: &str) -> String {
    s.trim().to_ascii_lowercase()
}

fn parse_count(key: &str, v: &str) -> Result<Option<u32>, ApiError> {
    let t = v.trim();
    if t == "-1" || t.is_empty() {
        return Ok(None);
    }
    t.parse::<u32>().map(Some).map_err(|_| {
        bad(format!(
            "Invalid value for {key}: {v} (expected a number, or -1 to clear)"
        ))
    })
}

fn parse_wall(key: &str, v: &str) -> Result<Option<u32>, ApiError> {
    units::parse_time_minutes(v).map_err(|_| {
        bad(format!(
            "Invalid value for {key}: {v} (expected a time such as 60, 2:00:00 or 1-00:00:00, or -1 to clear)"
        ))
    })
}

/// `HangMinutes=`/`IdleGpuMinutes=` of a QOS (gsched): minutes, decimals allowed, into
/// seconds; 0 is kept (it exempts the QOS's jobs), `-1` or nothing clears the setting.
fn parse_ladder_minutes(key: &str, v: &str) -> Result<Option<u64>, ApiError> {
    let t = v.trim();
    if t == "-1" || t.is_empty() {
        return Ok(None);
    }
    gsched_proto::ladder_conf::parse_minutes(t)
        .map(|s| Some(s.unwrap_or(0)))
        .map_err(|e| bad(format!("Invalid value for {key}: {e}, or -1 to clear")))
}

fn parse_shares(v: &str) -> Result<u32, ApiError> {
    let t = v.trim();
    if t.eq_ignore_ascii_case("parent") {
        return Err(bad(
            "Fairshare=parent is not supported by gsched yet; give a number of shares",
        ));
    }
    if t == "-1" {
        return Ok(1);
    }
    t.parse::<u32>().map_err(|_| {
        bad(format!(
            "Invalid value for Fairshare: {v} (expected a number)"
        ))
    })
}

/// Applies `=`, `+=`, `-=` to a name list.
fn edit_list(list: &mut Vec<String>, op: &str, v: &str) {
    let items: Vec<String> = v.split(',').map(norm).filter(|x| !x.is_empty()).collect();
    match op {
        "+=" => {
            for i in items {
                if !list.contains(&i) {
                    list.push(i);
                }
            }
        }
        "-=" => list.retain(|x| !items.contains(x)),
        _ => *list = items,
    }
}

/// Canonical spelling of a key among `keys` (case-insensitive; Slurm also takes the
/// plural of some).
fn key_of<'a>(keys: &[&'a str], k: &str) -> Option<&'a str> {
    let mut l = k.trim().to_ascii_lowercase();
    // sacctmgr's other spellings of the same settings.
    for (alias, canon) in [
        ("maxjobspu", "maxjobsperuser"),
        ("maxsubmitpu", "maxsubmitjobsperuser"),
        ("maxsubmitjobspu", "maxsubmitjobsperuser"),
        ("maxtrespu", "maxtresperuser"),
        ("maxwalldurationperjob", "maxwall"),
        ("maxsubmit", "maxsubmitjobs"),
        ("share", "fairshare"),
        ("shares", "fairshare"),
        ("defaultqos", "defaultqos"),
        ("defqos", "defaultqos"),
        ("qoslevel", "qos"),
        ("acct", "account"),
        ("accts", "account"),
    ] {
        if l == alias {
            l = canon.to_string();
        }
    }
    keys.iter()
        .copied()
        .find(|c| c.to_ascii_lowercase() == l || format!("{}s", c.to_ascii_lowercase()) == l)
}

fn unknown_key(entity: AcctEntity, k: &str, keys: &[&str]) -> ApiError {
    bad(format!(
        "Unknown or unsupported {} option: {k} (gsched supports {})",
        entity.word().to_ascii_lowercase(),
        keys.join(", ")
    ))
}

const QOS_KEYS: &[&str] = &[
    "Name",
    "Description",
    "Priority",
    "MaxWall",
    "MaxJobsPerUser",
    "MaxSubmitJobsPerUser",
    "MaxTRESPerUser",
    "Flags",
    "HangMinutes",
    "IdleGpuMinutes",
];
const ACCOUNT_KEYS: &[&str] = &[
    "Name",
    "Description",
    "Organization",
    "Parent",
    "Fairshare",
    "DefaultQOS",
    "QOS",
    "MaxJobs",
    "MaxSubmitJobs",
    "MaxWall",
];
const USER_KEYS: &[&str] = &[
    "Name",
    "Account",
    "DefaultAccount",
    "AdminLevel",
    "Partition",
    "Fairshare",
    "DefaultQOS",
    "QOS",
    "MaxJobs",
    "MaxSubmitJobs",
    "MaxWall",
];

fn set_qos_key(q: &mut QosDef, key: &str, op: &str, v: &str) -> Result<(), ApiError> {
    match key {
        "Description" => q.description = v.to_string(),
        "Priority" => q.priority = parse_count(key, v)?.unwrap_or(0),
        "MaxWall" => q.max_wall = parse_wall(key, v)?,
        "MaxJobsPerUser" => q.max_jobs_per_user = parse_count(key, v)?,
        "MaxSubmitJobsPerUser" => q.max_submit_jobs_per_user = parse_count(key, v)?,
        "MaxTRESPerUser" => {
            let t = v.trim();
            if t == "-1" || t.is_empty() {
                q.max_cpus_per_user = None;
            } else {
                for item in t.split(',') {
                    match item.split_once('=') {
                        Some((n, c)) if n.trim().eq_ignore_ascii_case("cpu") => {
                            q.max_cpus_per_user = parse_count(key, c)?;
                        }
                        _ => {
                            return Err(bad(format!(
                                "MaxTRESPerUser={v}: gsched supports only cpu=N (or -1 to clear)"
                            )))
                        }
                    }
                }
            }
        }
        "Flags" => {
            let mut flags = Vec::new();
            if q.deny_on_limit {
                flags.push("denyonlimit".to_string());
            }
            if q.no_defer {
                flags.push("nodefer".to_string());
            }
            if q.interactive {
                flags.push("interactive".to_string());
            }
            edit_list(&mut flags, op, v);
            q.deny_on_limit = false;
            q.no_defer = false;
            q.interactive = false;
            for f in flags {
                match f.as_str() {
                    "denyonlimit" => q.deny_on_limit = true,
                    "nodefer" => q.no_defer = true,
                    "interactive" => q.interactive = true,
                    "-1" | "none" => {}
                    other => {
                        return Err(bad(format!(
                        "QOS flag {other} is not supported by gsched yet (supported: DenyOnLimit, NoDefer, Interactive)"
                    )))
                    }
                }
            }
        }
        "HangMinutes" => q.hang_secs = parse_ladder_minutes(key, v)?,
        "IdleGpuMinutes" => q.idle_gpu_secs = parse_ladder_minutes(key, v)?,
        _ => return Err(unknown_key(AcctEntity::Qos, key, QOS_KEYS)),
    }
    Ok(())
}

/// Settings an account and an association share.
fn set_limits_key(
    l: &mut AssocLimits,
    shares: &mut u32,
    default_qos: &mut Option<String>,
    qos: &mut Vec<String>,
    key: &str,
    op: &str,
    v: &str,
) -> Result<bool, ApiError> {
    match key {
        "Fairshare" => *shares = parse_shares(v)?,
        "DefaultQOS" => {
            let t = norm(v);
            *default_qos = (t != "-1" && !t.is_empty()).then_some(t);
        }
        "QOS" => edit_list(qos, op, v),
        "MaxJobs" => l.max_jobs = parse_count(key, v)?,
        "MaxSubmitJobs" => l.max_submit_jobs = parse_count(key, v)?,
        "MaxWall" => l.max_wall = parse_wall(key, v)?,
        _ => return Ok(false),
    }
    Ok(true)
}

impl AcctDb {
    /// Loads the table, creating the account `root` and the QOS `normal` on a new store.
    pub fn load(store: &mut Store) -> Result<AcctDb, StoreError> {
        let mut db = AcctDb::default();
        for (k, rec) in store.load_acct(K_ACCOUNT)? {
            let a: AccountDef = serde_json::from_str(&rec)
                .map_err(|e| corrupt(store, &format!("account {k}"), e))?;
            db.accounts.insert(k, a);
        }
        for (k, rec) in store.load_acct(K_USER)? {
            let u: UserDef =
                serde_json::from_str(&rec).map_err(|e| corrupt(store, &format!("user {k}"), e))?;
            db.users.insert(k, u);
        }
        for (k, rec) in store.load_acct(K_ASSOC)? {
            let a: AssocDef = serde_json::from_str(&rec)
                .map_err(|e| corrupt(store, &format!("association {k}"), e))?;
            let key = (
                a.user.clone(),
                a.account.clone(),
                a.partition.clone().unwrap_or_default(),
            );
            db.assocs.insert(key, a);
        }
        for (k, rec) in store.load_acct(K_QOS)? {
            let q: QosDef =
                serde_json::from_str(&rec).map_err(|e| corrupt(store, &format!("qos {k}"), e))?;
            db.qos.insert(k, q);
        }
        let mut writes = Vec::new();
        if !db.accounts.contains_key(ROOT_ACCOUNT) {
            let root = AccountDef {
                name: ROOT_ACCOUNT.into(),
                description: "default root account".into(),
                organization: "root".into(),
                parent: None,
                fairshare: 1,
                ..AccountDef::default()
            };
            writes.push((K_ACCOUNT, ROOT_ACCOUNT.to_string(), Some(json(&root))));
            db.accounts.insert(ROOT_ACCOUNT.into(), root);
            // As on a new Slurm cluster: the user root, an administrator, in account root.
            if !db.users.contains_key("root") {
                let user = UserDef {
                    name: "root".into(),
                    default_account: ROOT_ACCOUNT.into(),
                    admin_level: AdminLevel::Administrator,
                };
                let assoc = AssocDef {
                    user: "root".into(),
                    account: ROOT_ACCOUNT.into(),
                    fairshare: 1,
                    ..AssocDef::default()
                };
                let key = ("root".to_string(), ROOT_ACCOUNT.to_string(), String::new());
                writes.push((K_USER, "root".to_string(), Some(json(&user))));
                writes.push((K_ASSOC, assoc_key_text(&key), Some(json(&assoc))));
                db.users.insert("root".into(), user);
                db.assocs.insert(key, assoc);
            }
        }
        if db.qos.is_empty() {
            let normal = QosDef {
                name: DEFAULT_QOS.into(),
                description: "Normal QOS default".into(),
                ..QosDef::default()
            };
            writes.push((K_QOS, DEFAULT_QOS.to_string(), Some(json(&normal))));
            db.qos.insert(DEFAULT_QOS.into(), normal);
        }
        if !writes.is_empty() {
            let w: Vec<(&str, String, Option<String>)> = writes;
            store.save_acct(&w)?;
        }
        Ok(db)
    }

    /// The table as the API returns it.
    pub fn response(&self) -> AcctResponse {
        AcctResponse {
            accounts: self.accounts.values().cloned().collect(),
            users: self.users.values().cloned().collect(),
            assocs: self.assocs.values().cloned().collect(),
            qos: self.qos.values().cloned().collect(),
            usage: Vec::new(),
            enforce: String::new(),
        }
    }

    /// Whether `user` has `AdminLevel=Administrator` (may change the table).
    pub fn is_admin_user(&self, user: &str) -> bool {
        self.users
            .get(user)
            .is_some_and(|u| u.admin_level == AdminLevel::Administrator)
    }

    /// The account chain from `account` up to `root` (the account first).
    pub fn chain(&self, account: &str) -> Vec<&AccountDef> {
        let mut out = Vec::new();
        let mut cur = self.accounts.get(account);
        while let Some(a) = cur {
            if out.len() > self.accounts.len() {
                break; // a cycle cannot be stored, but never loop
            }
            out.push(a);
            cur = a.parent.as_deref().and_then(|p| self.accounts.get(p));
        }
        out
    }

    /// The association a job of `user` in `account` and `partition` runs under: one for that
    /// partition, else one for any partition.
    pub fn assoc(&self, user: &str, account: &str, partition: &str) -> Option<&AssocDef> {
        self.assocs
            .get(&(user.into(), account.into(), partition.into()))
            .or_else(|| {
                self.assocs
                    .get(&(user.into(), account.into(), String::new()))
            })
    }

    /// The QOS a job gets without `--qos`: its association's default, else the nearest
    /// account's, else `normal`.
    pub fn default_qos(&self, assoc: Option<&AssocDef>, account: Option<&str>) -> String {
        if let Some(q) = assoc.and_then(|a| a.default_qos.clone()) {
            return q;
        }
        account
            .map(|a| self.chain(a))
            .unwrap_or_default()
            .iter()
            .find_map(|a| a.default_qos.clone())
            .unwrap_or_else(|| DEFAULT_QOS.to_string())
    }

    /// The QOS a job of this association may use: its own list, else the nearest account's,
    /// else `normal` (Slurm's root association default).
    pub fn allowed_qos(&self, assoc: Option<&AssocDef>, account: Option<&str>) -> Vec<String> {
        if let Some(a) = assoc.filter(|a| !a.qos.is_empty()) {
            return a.qos.clone();
        }
        account
            .map(|a| self.chain(a))
            .unwrap_or_default()
            .iter()
            .find(|a| !a.qos.is_empty())
            .map(|a| a.qos.clone())
            .unwrap_or_else(|| vec![DEFAULT_QOS.to_string()])
    }

    /// The association's limits, each inherited from the nearest account that sets it.
    pub fn limits(&self, assoc: Option<&AssocDef>, account: Option<&str>) -> AssocLimits {
        let mut l = assoc.map(|a| a.limits).unwrap_or_default();
        for a in account.map(|a| self.chain(a)).unwrap_or_default() {
            l.max_jobs = l.max_jobs.or(a.limits.max_jobs);
            l.max_submit_jobs = l.max_submit_jobs.or(a.limits.max_submit_jobs);
            l.max_wall = l.max_wall.or(a.limits.max_wall);
        }
        l
    }

    /// The largest QOS priority (the QOS factor's denominator).
    pub fn max_qos_priority(&self) -> u32 {
        self.qos.values().map(|q| q.priority).max().unwrap_or(0)
    }

    /// Applies one `gsacctmgr` change to a copy of the table. Returns the new table, the
    /// store writes that make it durable, and what changed (for the command to list).
    pub fn apply(&self, c: &AcctChange) -> Result<(AcctDb, Vec<Write>, Vec<String>), ApiError> {
        let mut db = self.clone();
        let mut changed = Vec::new();
        match (c.op, c.entity) {
            (AcctOp::Add, AcctEntity::Qos) => db.add_qos(c, &mut changed)?,
            (AcctOp::Add, AcctEntity::Account) => db.add_account(c, &mut changed)?,
            (AcctOp::Add, AcctEntity::User) => db.add_user(c, &mut changed)?,
            (AcctOp::Modify, AcctEntity::Qos) => db.modify_qos(c, &mut changed)?,
            (AcctOp::Modify, AcctEntity::Account) => db.modify_account(c, &mut changed)?,
            (AcctOp::Modify, AcctEntity::User) => db.modify_user(c, &mut changed)?,
            (AcctOp::Delete, AcctEntity::Qos) => db.delete_qos(c, &mut changed)?,
            (AcctOp::Delete, AcctEntity::Account) => db.delete_account(c, &mut changed)?,
            (AcctOp::Delete, AcctEntity::User) => db.delete_user(c, &mut changed)?,
        }
        db.check_refs()?;
        let writes = self.diff(&db);
        Ok((db, writes, changed))
    }

    /// Store writes that turn `self` into `new`.
    fn diff(&self, new: &AcctDb) -> Vec<Write> {
        let mut w: Vec<Write> = Vec::new();
        fn side<K: Ord + Clone, V: PartialEq + serde::Serialize>(
            w: &mut Vec<Write>,
            kind: &'static str,
            old: &BTreeMap<K, V>,
            new: &BTreeMap<K, V>,
            key: impl Fn(&K) -> String,
        ) {
            for (k, v) in new {
                if old.get(k) != Some(v) {
                    w.push((kind, key(k), Some(json(v))));
                }
            }
            for k in old.keys() {
                if !new.contains_key(k) {
                    w.push((kind, key(k), None));
                }
            }
        }
        side(&mut w, K_ACCOUNT, &self.accounts, &new.accounts, |k| {
            k.clone()
        });
        side(&mut w, K_USER, &self.users, &new.users, |k| k.clone());
        side(&mut w, K_ASSOC, &self.assocs, &new.assocs, assoc_key_text);
        side(&mut w, K_QOS, &self.qos, &new.qos, |k| k.clone());
        w
    }

    /// Every QOS named anywhere exists, every parent and default account exists.
    fn check_refs(&self) -> Result<(), ApiError> {
        let qos_ok = |q: &str| self.qos.contains_key(q);
        for a in self.accounts.values() {
            for q in a.default_qos.iter().chain(&a.qos) {
                if !qos_ok(q) {
                    return Err(ApiError::new(
                        ErrorCode::InvalidQos,
                        format!(
                            "Invalid qos specification: {q} does not exist (gsacctmgr add qos {q})"
                        ),
                    ));
                }
            }
        }
        for a in self.assocs.values() {
            for q in a.default_qos.iter().chain(&a.qos) {
                if !qos_ok(q) {
                    return Err(ApiError::new(
                        ErrorCode::InvalidQos,
                        format!(
                            "Invalid qos specification: {q} does not exist (gsacctmgr add qos {q})"
                        ),
                    ));
                }
            }
            if let Some(d) = &a.default_qos {
                if !self.allowed_qos(Some(a), Some(&a.account)).contains(d) {
                    return Err(bad(format!(
                        "DefaultQOS {d} of user {} in account {} is not among its allowed QOS ({}); add it with QOS+={d}",
                        a.user,
                        a.account,
                        self.allowed_qos(Some(a), Some(&a.account)).join(",")
                    )));
                }
            }
        }
        Ok(())
    }

    fn names(c: &AcctChange) -> Vec<String> {
        let mut n: Vec<String> = c.names.iter().map(|x| norm(x)).collect();
        for (k, v) in &c.conditions {
            if k.eq_ignore_ascii_case("name") || k.eq_ignore_ascii_case("names") {
                n.extend(v.split(',').map(norm));
            }
        }
        n.retain(|x| !x.is_empty());
        n.dedup();
        n
    }

    fn add_qos(&mut self, c: &AcctChange, changed: &mut Vec<String>) -> Result<(), ApiError> {
        let names = Self::names(c);
        if names.is_empty() {
            return Err(bad("Need name of qos to add."));
        }
        for name in names {
            if self.qos.contains_key(&name) {
                continue;
            }
            let mut q = QosDef {
                name: name.clone(),
                description: name.clone(),
                ..QosDef::default()
            };
            for (k, op, v) in &c.settings {
                let key =
                    key_of(QOS_KEYS, k).ok_or_else(|| unknown_key(AcctEntity::Qos, k, QOS_KEYS))?;
                set_qos_key(&mut q, key, op, v)?;
            }
            self.qos.insert(name.clone(), q);
            changed.push(name);
        }
        Ok(())
    }

    fn modify_qos(&mut self, c: &AcctChange, changed: &mut Vec<String>) -> Result<(), ApiError> {
        for (k, _) in &c.conditions {
            if !k.eq_ignore_ascii_case("name") && !k.eq_ignore_ascii_case("names") {
                return Err(unknown_key(AcctEntity::Qos, k, &["Name"]));
            }
        }
        let names = Self::names(c);
        let targets: Vec<String> = if names.is_empty() {
            self.qos.keys().cloned().collect()
        } else {
            names
        };
        for name in targets {
            let Some(q) = self.qos.get_mut(&name) else {
                continue;
            };
            for (k, op, v) in &c.settings {
                let key =
                    key_of(QOS_KEYS, k).ok_or_else(|| unknown_key(AcctEntity::Qos, k, QOS_KEYS))?;
                if key == "Name" {
                    return Err(bad("a QOS cannot be renamed; add a new one"));
                }
                set_qos_key(q, key, op, v)?;
            }
            changed.push(name);
        }
        Ok(())
    }

    fn delete_qos(&mut self, c: &AcctChange, changed: &mut Vec<String>) -> Result<(), ApiError> {
        for name in Self::names(c) {
            if name == DEFAULT_QOS {
                return Err(bad(format!(
                    "the QOS {DEFAULT_QOS} is the default of every job and cannot be deleted"
                )));
            }
            if self.qos.remove(&name).is_some() {
                for a in self.accounts.values_mut() {
                    a.qos.retain(|q| q != &name);
                    if a.default_qos.as_deref() == Some(&name) {
                        a.default_qos = None;
                    }
                }
                for a in self.assocs.values_mut() {
                    a.qos.retain(|q| q != &name);
                    if a.default_qos.as_deref() == Some(&name) {
                        a.default_qos = None;
                    }
                }
                changed.push(name);
            }
        }
        Ok(())
    }

    fn apply_account_setting(
        &mut self,
        name: &str,
        k: &str,
        op: &str,
        v: &str,
    ) -> Result<(), ApiError> {
        let key = key_of(ACCOUNT_KEYS, k)
            .ok_or_else(|| unknown_key(AcctEntity::Account, k, ACCOUNT_KEYS))?;
        if key == "Parent" {
            let p = norm(v);
            if !self.accounts.contains_key(&p) {
                return Err(ApiError::new(
                    ErrorCode::InvalidAccount,
                    format!("Parent account {p} doesn't exist (gsacctmgr add account {p})"),
                ));
            }
            if name == ROOT_ACCOUNT || p == name || self.chain(&p).iter().any(|a| a.name == name) {
                return Err(bad(format!(
                    "account {name} cannot have {p} as parent (it would make a loop)"
                )));
            }
        }
        let a = self.accounts.get_mut(name).expect("caller checked");
        match key {
            "Name" => return Err(bad("an account cannot be renamed; add a new one")),
            "Description" => a.description = v.to_string(),
            "Organization" => a.organization = v.to_string(),
            "Parent" => a.parent = Some(norm(v)),
            _ => {
                set_limits_key(
                    &mut a.limits,
                    &mut a.fairshare,
                    &mut a.default_qos,
                    &mut a.qos,
                    key,
                    op,
                    v,
                )?;
            }
        }
        Ok(())
    }

    fn add_account(&mut self, c: &AcctChange, changed: &mut Vec<String>) -> Result<(), ApiError> {
        let names = Self::names(c);
        if names.is_empty() {
            return Err(bad("Need name of account to add."));
        }
        for name in names {
            if self.accounts.contains_key(&name) {
                continue;
            }
            self.accounts.insert(
                name.clone(),
                AccountDef {
                    name: name.clone(),
                    description: name.clone(),
                    organization: name.clone(),
                    parent: Some(ROOT_ACCOUNT.into()),
                    fairshare: 1,
                    ..AccountDef::default()
                },
            );
            for (k, op, v) in &c.settings {
                self.apply_account_setting(&name, k, op, v)?;
            }
            changed.push(name);
        }
        Ok(())
    }

    fn modify_account(
        &mut self,
        c: &AcctChange,
        changed: &mut Vec<String>,
    ) -> Result<(), ApiError> {
        let mut parent = None;
        for (k, v) in &c.conditions {
            match key_of(&["Name", "Parent"], k) {
                Some("Name") => {}
                Some(_) => parent = Some(norm(v)),
                None => return Err(unknown_key(AcctEntity::Account, k, &["Name", "Parent"])),
            }
        }
        let names = Self::names(c);
        let targets: Vec<String> = self
            .accounts
            .values()
            .filter(|a| names.is_empty() || names.contains(&a.name))
            .filter(|a| parent.is_none() || a.parent == parent)
            .map(|a| a.name.clone())
            .collect();
        for name in targets {
            for (k, op, v) in &c.settings {
                self.apply_account_setting(&name, k, op, v)?;
            }
            changed.push(name);
        }
        Ok(())
    }

    fn delete_account(
        &mut self,
        c: &AcctChange,
        changed: &mut Vec<String>,
    ) -> Result<(), ApiError> {
        for name in Self::names(c) {
            if !self.accounts.contains_key(&name) {
                continue;
            }
            if name == ROOT_ACCOUNT {
                return Err(bad("the root account cannot be deleted"));
            }
            if let Some(child) = self
                .accounts
                .values()
                .find(|a| a.parent.as_deref() == Some(&name))
            {
                return Err(bad(format!(
                    "account {name} still has the sub-account {}; delete or move it first",
                    child.name
                )));
            }
            if let Some(a) = self.assocs.values().find(|a| a.account == name) {
                return Err(bad(format!(
                    "account {name} still has users ({}); delete them first: gsacctmgr delete user {} account={name}",
                    a.user, a.user
                )));
            }
            self.accounts.remove(&name);
            changed.push(name);
        }
        Ok(())
    }

    fn add_user(&mut self, c: &AcctChange, changed: &mut Vec<String>) -> Result<(), ApiError> {
        let names = Self::names(c);
        if names.is_empty() {
            return Err(bad("Need name of user to add."));
        }
        let mut accounts = Vec::new();
        let mut partitions = Vec::new();
        let mut default_account = None;
        let mut admin = None;
        let mut assoc_settings = Vec::new();
        let all = c
            .conditions
            .iter()
            .map(|(k, v)| (k.as_str(), "=", v.as_str()))
            .chain(
                c.settings
                    .iter()
                    .map(|(k, o, v)| (k.as_str(), o.as_str(), v.as_str())),
            );
        for (k, op, v) in all {
            match key_of(USER_KEYS, k) {
                Some("Name") => {}
                Some("Account") => {
                    accounts.extend(v.split(',').map(norm).filter(|x| !x.is_empty()))
                }
                Some("Partition") => {
                    partitions.extend(v.split(',').map(norm).filter(|x| !x.is_empty()))
                }
                Some("DefaultAccount") => default_account = Some(norm(v)),
                Some("AdminLevel") => {
                    admin = Some(AdminLevel::parse(v).ok_or_else(|| {
                        bad(format!(
                            "Invalid AdminLevel {v} (expected None, Operator or Administrator)"
                        ))
                    })?)
                }
                Some(key) => assoc_settings.push((key, op, v)),
                None => return Err(unknown_key(AcctEntity::User, k, USER_KEYS)),
            }
        }
        if accounts.is_empty() {
            if let Some(d) = &default_account {
                accounts.push(d.clone());
            }
        }
        if accounts.is_empty() {
            return Err(bad(
                "Need name of account to add user to (Account=NAME or DefaultAccount=NAME).",
            ));
        }
        for a in &accounts {
            if !self.accounts.contains_key(a) {
                return Err(ApiError::new(
                    ErrorCode::InvalidAccount,
                    format!(
                        "The account {a} doesn't exist. Add it first: gsacctmgr add account {a}"
                    ),
                ));
            }
        }
        if let Some(d) = &default_account {
            if !accounts.contains(d)
                && !names
                    .iter()
                    .all(|u| self.assocs.keys().any(|k| &k.0 == u && &k.1 == d))
            {
                return Err(bad(format!(
                    "DefaultAccount {d} must be one of the user's accounts ({})",
                    accounts.join(",")
                )));
            }
        }
        if partitions.is_empty() {
            partitions.push(String::new());
        }
        for user in names {
            if !self.users.contains_key(&user) {
                self.users.insert(
                    user.clone(),
                    UserDef {
                        name: user.clone(),
                        default_account: default_account
                            .clone()
                            .unwrap_or_else(|| accounts[0].clone()),
                        admin_level: admin.unwrap_or_default(),
                    },
                );
            } else {
                let u = self.users.get_mut(&user).expect("present");
                if let Some(d) = &default_account {
                    u.default_account = d.clone();
                }
                if let Some(a) = admin {
                    u.admin_level = a;
                }
            }
            for acct in &accounts {
                for part in &partitions {
                    let key = (user.clone(), acct.clone(), part.clone());
                    if self.assocs.contains_key(&key) {
                        continue;
                    }
                    let mut a = AssocDef {
                        user: user.clone(),
                        account: acct.clone(),
                        partition: (!part.is_empty()).then(|| part.clone()),
                        fairshare: 1,
                        ..AssocDef::default()
                    };
                    for (key, op, v) in &assoc_settings {
                        if !set_limits_key(
                            &mut a.limits,
                            &mut a.fairshare,
                            &mut a.default_qos,
                            &mut a.qos,
                            key,
                            op,
                            v,
                        )? {
                            return Err(unknown_key(AcctEntity::User, key, USER_KEYS));
                        }
                    }
                    self.assocs.insert(key, a);
                    changed.push(format!(
                        "U = {user:<9} A = {acct:<10}{}",
                        if part.is_empty() {
                            String::new()
                        } else {
                            format!(" P = {part}")
                        }
                    ));
                }
            }
        }
        Ok(())
    }

    /// `where` of `modify|delete user`: names, accounts, partitions.
    #[allow(clippy::type_complexity)]
    fn user_where(c: &AcctChange) -> Result<(Vec<String>, Vec<String>, Vec<String>), ApiError> {
        let mut accounts = Vec::new();
        let mut partitions = Vec::new();
        for (k, v) in &c.conditions {
            match key_of(&["Name", "Account", "Partition", "DefaultAccount"], k) {
                Some("Name") => {}
                Some("Account") => accounts.extend(v.split(',').map(norm)),
                Some("Partition") => partitions.extend(v.split(',').map(norm)),
                Some(_) => {
                    return Err(bad(
                        "DefaultAccount is not a condition gsched supports; select users by Name, Account or Partition",
                    ))
                }
                None => {
                    return Err(unknown_key(
                        AcctEntity::User,
                        k,
                        &["Name", "Account", "Partition"],
                    ))
                }
            }
        }
        Ok((Self::names(c), accounts, partitions))
    }

    fn modify_user(&mut self, c: &AcctChange, changed: &mut Vec<String>) -> Result<(), ApiError> {
        let (names, accounts, partitions) = Self::user_where(c)?;
        let users: Vec<String> = self
            .users
            .keys()
            .filter(|u| names.is_empty() || names.contains(u))
            .cloned()
            .collect();
        for (k, op, v) in &c.settings {
            let key =
                key_of(USER_KEYS, k).ok_or_else(|| unknown_key(AcctEntity::User, k, USER_KEYS))?;
            match key {
                "Name" | "Account" | "Partition" => {
                    return Err(bad(format!(
                        "{key} cannot be set; add an association instead: gsacctmgr add user NAME Account=A"
                    )))
                }
                "DefaultAccount" => {
                    let d = norm(v);
                    for u in &users {
                        if !self.assocs.keys().any(|k| &k.0 == u && k.1 == d) {
                            return Err(ApiError::new(
                                ErrorCode::InvalidAccount,
                                format!("user {u} has no association with account {d}; add one first: gsacctmgr add user {u} Account={d}"),
                            ));
                        }
                        self.users.get_mut(u).expect("listed").default_account = d.clone();
                        changed.push(u.clone());
                    }
                }
                "AdminLevel" => {
                    let a = AdminLevel::parse(v).ok_or_else(|| {
                        bad(format!("Invalid AdminLevel {v} (expected None, Operator or Administrator)"))
                    })?;
                    for u in &users {
                        self.users.get_mut(u).expect("listed").admin_level = a;
                        changed.push(u.clone());
                    }
                }
                _ => {
                    for (key_t, a) in self.assocs.iter_mut() {
                        if !users.contains(&key_t.0)
                            || (!accounts.is_empty() && !accounts.contains(&key_t.1))
                            || (!partitions.is_empty() && !partitions.contains(&key_t.2))
                        {
                            continue;
                        }
                        set_limits_key(
                            &mut a.limits,
                            &mut a.fairshare,
                            &mut a.default_qos,
                            &mut a.qos,
                            key,
                            op,
                            v,
                        )?;
                        changed.push(format!("U = {:<9} A = {:<10}", key_t.0, key_t.1));
                    }
                }
            }
        }
        changed.sort();
        changed.dedup();
        Ok(())
    }

    fn delete_user(&mut self, c: &AcctChange, changed: &mut Vec<String>) -> Result<(), ApiError> {
        let (names, accounts, partitions) = Self::user_where(c)?;
        if names.is_empty() {
            return Err(bad("Need name of user to delete."));
        }
        let doomed: Vec<AssocKey> = self
            .assocs
            .keys()
            .filter(|k| {
                names.contains(&k.0)
                    && (accounts.is_empty() || accounts.contains(&k.1))
                    && (partitions.is_empty() || partitions.contains(&k.2))
            })
            .cloned()
            .collect();
        for k in &doomed {
            self.assocs.remove(k);
            changed.push(format!("U = {:<9} A = {:<10}", k.0, k.1));
        }
        for u in &names {
            let left: Vec<String> = self
                .assocs
                .keys()
                .filter(|k| &k.0 == u)
                .map(|k| k.1.clone())
                .collect();
            if left.is_empty() {
                if self.users.remove(u).is_some() && doomed.is_empty() {
                    changed.push(u.clone());
                }
            } else if let Some(user) = self.users.get_mut(u) {
                if !left.contains(&user.default_account) {
                    user.default_account = left[0].clone();
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(op: AcctOp, entity: AcctEntity, names: &[&str], set: &[(&str, &str)]) -> AcctChange {
        AcctChange {
            op,
            entity,
            names: names.iter().map(|s| s.to_string()).collect(),
            conditions: Vec::new(),
            settings: set
                .iter()
                .map(|(k, v)| (k.to_string(), "=".to_string(), v.to_string()))
                .collect(),
        }
    }

    fn fresh() -> AcctDb {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path(), false).unwrap();
        AcctDb::load(&mut store).unwrap()
    }

    fn apply(db: &mut AcctDb, c: AcctChange) -> Vec<String> {
        let (new, _, changed) = db.apply(&c).unwrap();
        *db = new;
        changed
    }

    #[test]
    fn new_store_has_root_and_normal_and_changes_persist() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path(), false).unwrap();
        let db = AcctDb::load(&mut store).unwrap();
        assert!(db.accounts.contains_key("root"));
        assert!(db.qos.contains_key("normal"));
        assert_eq!(db.users["root"].default_account, "root");
        assert!(db.is_admin_user("root"));
        assert!(db.assoc("root", "root", "debug").is_some());
        let (new, writes, changed) = db
            .apply(&change(
                AcctOp::Add,
                AcctEntity::Account,
                &["Physics"],
                &[("Fairshare", "40")],
            ))
            .unwrap();
        assert_eq!(changed, vec!["physics"]);
        store.save_acct(&writes).unwrap();
        let reloaded = AcctDb::load(&mut store).unwrap();
        assert_eq!(reloaded, new);
        assert_eq!(reloaded.accounts["physics"].fairshare, 40);
        assert_eq!(reloaded.accounts["physics"].parent.as_deref(), Some("root"));
    }

    #[test]
    fn qos_ladder_settings_parse_clear_and_persist() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path(), false).unwrap();
        let mut db = AcctDb::load(&mut store).unwrap();
        let (new, writes, _) = db
            .apply(&change(
                AcctOp::Add,
                AcctEntity::Qos,
                &["jupyter", "strict"],
                &[("Flags", "Interactive"), ("hangminutes", "0.05")],
            ))
            .unwrap();
        store.save_acct(&writes).unwrap();
        db = new;
        let q = &db.qos["jupyter"];
        assert!(q.interactive && !q.no_defer);
        assert_eq!(q.hang_secs, Some(3));
        assert_eq!(q.idle_gpu_secs, None);
        assert_eq!(q.flags(), "Interactive");
        // 0 is kept (it exempts), -1 and an empty value clear back to "not set".
        apply(
            &mut db,
            change(
                AcctOp::Modify,
                AcctEntity::Qos,
                &["strict"],
                &[("IdleGpuMinutes", "0"), ("HangMinutes", "2.5")],
            ),
        );
        assert_eq!(
            (db.qos["strict"].hang_secs, db.qos["strict"].idle_gpu_secs),
            (Some(150), Some(0))
        );
        apply(
            &mut db,
            change(
                AcctOp::Modify,
                AcctEntity::Qos,
                &["strict"],
                &[("IdleGpuMinutes", "-1"), ("HangMinutes", "")],
            ),
        );
        assert_eq!(
            (db.qos["strict"].hang_secs, db.qos["strict"].idle_gpu_secs),
            (None, None)
        );
        // Flags: += and -= keep the other flags.
        let mut c = change(AcctOp::Modify, AcctEntity::Qos, &["jupyter"], &[]);
        c.settings
            .push(("Flags".into(), "+=".into(), "NoDefer".into()));
        apply(&mut db, c);
        assert_eq!(db.qos["jupyter"].flags(), "NoDefer,Interactive");
        let mut c = change(AcctOp::Modify, AcctEntity::Qos, &["jupyter"], &[]);
        c.settings
            .push(("Flags".into(), "-=".into(), "interactive".into()));
        apply(&mut db, c);
        assert_eq!(db.qos["jupyter"].flags(), "NoDefer");
        // Bad values are refused with the key named; nothing changes.
        for (k, v) in [
            ("HangMinutes", "soon"),
            ("HangMinutes", "-2"),
            ("IdleGpuMinutes", "1e9"),
        ] {
            let e = db
                .apply(&change(
                    AcctOp::Modify,
                    AcctEntity::Qos,
                    &["strict"],
                    &[(k, v)],
                ))
                .unwrap_err();
            assert!(
                e.message.contains(&format!("Invalid value for {k}")),
                "{e:?}"
            );
            assert!(e.message.contains("-1 to clear"), "{e:?}");
        }
        // What was stored loads back.
        let reloaded = AcctDb::load(&mut store).unwrap();
        assert!(reloaded.qos["jupyter"].interactive);
        assert_eq!(reloaded.qos["jupyter"].hang_secs, Some(3));
    }

    #[test]
    fn users_associations_and_qos_rules() {
        let mut db = fresh();
        apply(
            &mut db,
            change(AcctOp::Add, AcctEntity::Account, &["physics", "chem"], &[]),
        );
        // An unknown account is refused with Slurm's words.
        let e = db
            .apply(&change(
                AcctOp::Add,
                AcctEntity::User,
                &["bob"],
                &[("Account", "bio")],
            ))
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidAccount);
        let c = apply(
            &mut db,
            change(
                AcctOp::Add,
                AcctEntity::User,
                &["bob"],
                &[("Account", "physics,chem")],
            ),
        );
        assert_eq!(c.len(), 2);
        assert_eq!(db.users["bob"].default_account, "physics");
        assert!(db.assoc("bob", "chem", "debug").is_some());
        // QOS: unknown names are refused, then allowed once added.
        let e = db
            .apply(&change(
                AcctOp::Modify,
                AcctEntity::User,
                &["bob"],
                &[("QOS", "high")],
            ))
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidQos);
        apply(
            &mut db,
            change(
                AcctOp::Add,
                AcctEntity::Qos,
                &["high"],
                &[
                    ("Priority", "100"),
                    ("MaxJobsPerUser", "2"),
                    ("MaxWall", "1:00:00"),
                    ("Flags", "DenyOnLimit"),
                ],
            ),
        );
        apply(
            &mut db,
            change(
                AcctOp::Modify,
                AcctEntity::Qos,
                &["high"],
                &[("MaxJobsPU", "2")],
            ),
        );
        let q = &db.qos["high"];
        assert_eq!(
            (q.priority, q.max_jobs_per_user, q.max_wall, q.deny_on_limit),
            (100, Some(2), Some(60), true)
        );
        let mut c = change(AcctOp::Modify, AcctEntity::User, &["bob"], &[]);
        c.conditions.push(("Account".into(), "physics".into()));
        c.settings.push(("QOS".into(), "+=".into(), "high".into()));
        apply(&mut db, c);
        let a = db.assoc("bob", "physics", "").unwrap();
        assert_eq!(a.qos, vec!["high"]);
        assert_eq!(db.allowed_qos(Some(a), Some("physics")), vec!["high"]);
        // chem inherits root's default: normal only.
        let chem = db.assoc("bob", "chem", "").unwrap();
        assert_eq!(db.allowed_qos(Some(chem), Some("chem")), vec!["normal"]);
        assert_eq!(db.default_qos(Some(chem), Some("chem")), "normal");
        // Limits inherit from the account.
        apply(
            &mut db,
            change(
                AcctOp::Modify,
                AcctEntity::Account,
                &["chem"],
                &[("MaxJobs", "3")],
            ),
        );
        let chem = db.assoc("bob", "chem", "").unwrap();
        assert_eq!(db.limits(Some(chem), Some("chem")).max_jobs, Some(3));
        // Unsupported keys and flags are refused, not ignored.
        assert!(db
            .apply(&change(
                AcctOp::Modify,
                AcctEntity::Qos,
                &["high"],
                &[("GrpTRES", "cpu=4")]
            ))
            .is_err());
        assert!(db
            .apply(&change(
                AcctOp::Modify,
                AcctEntity::Qos,
                &["high"],
                &[("Flags", "NoReserve")]
            ))
            .is_err());
        // Accounts with users cannot be deleted; users can, then the account.
        assert!(db
            .apply(&change(AcctOp::Delete, AcctEntity::Account, &["chem"], &[]))
            .is_err());
        let mut d = change(AcctOp::Delete, AcctEntity::User, &["bob"], &[]);
        d.conditions.push(("Account".into(), "chem".into()));
        apply(&mut db, d);
        assert!(db.users.contains_key("bob"));
        apply(
            &mut db,
            change(AcctOp::Delete, AcctEntity::Account, &["chem"], &[]),
        );
        assert!(!db.accounts.contains_key("chem"));
        // Deleting a QOS removes it from every list; normal stays.
        apply(
            &mut db,
            change(AcctOp::Delete, AcctEntity::Qos, &["high"], &[]),
        );
        assert!(db.assoc("bob", "physics", "").unwrap().qos.is_empty());
        assert!(db
            .apply(&change(AcctOp::Delete, AcctEntity::Qos, &["normal"], &[]))
            .is_err());
        // No parent loops.
        apply(
            &mut db,
            change(
                AcctOp::Add,
                AcctEntity::Account,
                &["theory"],
                &[("Parent", "physics")],
            ),
        );
        assert!(db
            .apply(&change(
                AcctOp::Modify,
                AcctEntity::Account,
                &["physics"],
                &[("Parent", "theory")]
            ))
            .is_err());
    }
}
