//! `gsacctmgr` (`sacctmgr`): show and change accounts, users, associations and QOS.
//!
//! The subset of sacctmgr that sites script: `add|create`, `modify|update`, `delete|remove`
//! and `show|list` of `account`, `user`, `qos` (and `show association`), with `where` and
//! `set`, `K=V`/`K+=V`/`K-=V`, `format=` (fields prefix-matched as sacctmgr does, `%N`
//! widths), `-n`, `-p`, `-P`, `-i`, `-s`. Listings use sacctmgr's layout (right-justified
//! columns, a dashed line under the header). Without `-i`, a change asks for confirmation
//! when standard input is a terminal and is committed at once otherwise (sacctmgr commits
//! when nobody can answer). The controller checks and stores every change; anything else
//! (other entities, commands, options) is refused with a clear message.

use crate::common::{self, Fail};
use crate::getopt::{self, HasArg, Opt, Ordering};
use gsched_proto::acct::{
    AccountDef, AcctChange, AcctChangeResponse, AcctEntity, AcctOp, AcctResponse, AssocDef, QosDef,
    UserDef,
};
use gsched_proto::api::paths;
use gsched_proto::units;
use std::io::{BufRead, IsTerminal, Write};

use HasArg::No;

pub const OPTIONS: &[Opt] = &[
    Opt::new("help", Some('h'), &["help"], No),
    Opt::new("immediate", Some('i'), &["immediate"], No),
    Opt::new("json", None, &["json"], No),
    Opt::new("noheader", Some('n'), &["noheader"], No),
    Opt::new("parsable", Some('p'), &["parsable"], No),
    Opt::new("parsable2", Some('P'), &["parsable2"], No),
    Opt::new("quiet", Some('Q'), &["quiet"], No),
    Opt::new("readonly", Some('r'), &["readonly"], No),
    Opt::new("associations", Some('s'), &["associations"], No),
    Opt::new("usage", None, &["usage"], No),
    Opt::new("verbose", Some('v'), &["verbose"], No),
    Opt::new("version", Some('V'), &["version"], No),
    Opt::new("yaml", None, &["yaml"], No),
];

/// How listings are printed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Style {
    pub no_header: bool,
    /// `-p`: `|` after every field; `-P`: `|` between fields.
    pub parsable: Option<bool>,
}

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Change(AcctChange),
    Show {
        entity: ShowEntity,
        names: Vec<String>,
        conditions: Vec<(String, String)>,
        format: Option<String>,
        with_assoc: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShowEntity {
    Account,
    User,
    Qos,
    Assoc,
}

/// Parsed command line.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    pub command: Command,
    pub style: Style,
    pub immediate: bool,
    pub quiet: bool,
    pub readonly: bool,
}

/// Unique-prefix match of a word among `(word, value)` (sacctmgr compares at least the
/// first few letters, any case).
fn word<T: Copy>(w: &str, table: &[(&str, usize, T)]) -> Option<T> {
    let l = w.to_ascii_lowercase();
    table
        .iter()
        .find(|(name, min, _)| l.len() >= *min && name.starts_with(&l))
        .map(|(_, _, v)| *v)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verb {
    Add,
    Modify,
    Delete,
    Show,
}

const VERBS: &[(&str, usize, Verb)] = &[
    ("add", 3, Verb::Add),
    ("create", 2, Verb::Add),
    ("modify", 1, Verb::Modify),
    ("update", 1, Verb::Modify),
    ("delete", 3, Verb::Delete),
    ("remove", 3, Verb::Delete),
    ("show", 3, Verb::Show),
    ("list", 3, Verb::Show),
];

const UNSUPPORTED_VERBS: &[&str] = &[
    "archive",
    "clear",
    "dump",
    "load",
    "reconfigure",
    "shutdown",
    "ping",
];

const ENTITIES: &[(&str, usize, ShowEntity)] = &[
    ("accounts", 3, ShowEntity::Account),
    ("users", 1, ShowEntity::User),
    ("qos", 1, ShowEntity::Qos),
    ("associations", 3, ShowEntity::Assoc),
];

const UNSUPPORTED_ENTITIES: &[&str] = &[
    "clusters",
    "configuration",
    "coordinators",
    "events",
    "federations",
    "problems",
    "reservations",
    "resources",
    "runawayjobs",
    "stats",
    "transactions",
    "tres",
    "wckeys",
];

/// Parses the command line.
pub fn parse_args(prog: &str, args: &[String]) -> Result<common::Parsed<Params>, Fail> {
    let split = getopt::parse_split(args, OPTIONS, Ordering::Permute);
    if let Some(e) = &split.err {
        return Err(Fail::usage(prog, e, 1));
    }
    let mut style = Style::default();
    let mut immediate = false;
    let mut quiet = false;
    let mut readonly = false;
    let mut with_assoc = false;
    for (id, _) in &split.opts {
        if let Some(t) = common::info_text(id, help_text, usage_text) {
            return Ok(common::Parsed::Print(t));
        }
        match *id {
            "immediate" => immediate = true,
            "noheader" => style.no_header = true,
            "parsable" => style.parsable = Some(true),
            "parsable2" => style.parsable = Some(false),
            "quiet" => quiet = true,
            "readonly" => readonly = true,
            "associations" => with_assoc = true,
            "verbose" => {}
            "json" | "yaml" => return Err(Fail::not_supported(prog, &format!("--{id}"))),
            _ => {}
        }
    }
    let mut ops = split.operands.into_iter();
    let Some(verb_word) = ops.next() else {
        return Err(Fail::error(
            prog,
            "interactive mode is not supported by gsched yet; give a command, e.g. gsacctmgr show qos (see --help)",
        ));
    };
    let verb = match word(&verb_word, VERBS) {
        Some(v) => v,
        None => {
            let l = verb_word.to_ascii_lowercase();
            if UNSUPPORTED_VERBS
                .iter()
                .any(|v| v.starts_with(&l) && l.len() >= 2)
            {
                return Err(Fail::error(
                    prog,
                    format!("the command {verb_word} is not supported by gsched yet (supported: add, modify, delete, show)"),
                ));
            }
            return Err(Fail::error(prog, format!("Invalid command: {verb_word}")));
        }
    };
    let Some(entity_word) = ops.next() else {
        return Err(Fail::error(
            prog,
            "No entity given (account, user, qos or association)",
        ));
    };
    let entity = match word(&entity_word, ENTITIES) {
        Some(e) => e,
        None => {
            let l = entity_word.to_ascii_lowercase();
            if UNSUPPORTED_ENTITIES
                .iter()
                .any(|v| v.starts_with(&l) && l.len() >= 2)
            {
                return Err(Fail::error(
                    prog,
                    format!("the entity {entity_word} is not supported by gsched yet (supported: account, user, qos, association)"),
                ));
            }
            return Err(Fail::error(
                prog,
                format!(
                    "Unknown entity {entity_word} (expected account, user, qos or association)"
                ),
            ));
        }
    };
    // The rest: names, where, set, K=V, format=, withassoc.
    let mut names = Vec::new();
    let mut conditions: Vec<(String, String)> = Vec::new();
    let mut settings: Vec<(String, String, String)> = Vec::new();
    let mut format = None;
    let mut in_set = false;
    for tok in ops {
        let l = tok.to_ascii_lowercase();
        if l == "where" {
            in_set = false;
            continue;
        }
        if l == "set" {
            in_set = true;
            continue;
        }
        if l == "withassoc" {
            with_assoc = true;
            continue;
        }
        if let Some(eq) = tok.find('=') {
            let (k, v) = (&tok[..eq], &tok[eq + 1..]);
            let (k, op) = if let Some(k) = k.strip_suffix('+') {
                (k, "+=")
            } else if let Some(k) = k.strip_suffix('-') {
                (k, "-=")
            } else {
                (k, "=")
            };
            let v = v.trim_matches('"').to_string();
            if k.eq_ignore_ascii_case("format") && verb == Verb::Show {
                format = Some(v);
                continue;
            }
            if k.eq_ignore_ascii_case("cluster") || k.eq_ignore_ascii_case("clusters") {
                // One cluster: naming another is an error, naming it is a no-op.
                let cfg = common::load_config().map_err(|e| Fail::error(prog, e))?;
                if !v.eq_ignore_ascii_case(&cfg.cluster_name) {
                    return Err(Fail::error(
                        prog,
                        format!(
                            "gsched manages one cluster ({}); no cluster {v}",
                            cfg.cluster_name
                        ),
                    ));
                }
                continue;
            }
            let as_setting = match verb {
                Verb::Add => true,
                Verb::Modify => in_set,
                _ => false,
            };
            if as_setting {
                settings.push((k.to_string(), op.to_string(), v));
            } else if op != "=" {
                return Err(Fail::error(
                    prog,
                    format!("{k}{op}: only set accepts += and -="),
                ));
            } else {
                conditions.push((k.to_string(), v));
            }
        } else if verb == Verb::Modify && in_set {
            return Err(Fail::error(
                prog,
                format!("Unknown option: {tok} (expected Key=Value after set)"),
            ));
        } else {
            names.extend(tok.split(',').filter(|s| !s.is_empty()).map(str::to_string));
        }
    }
    let command = if verb == Verb::Show {
        Command::Show {
            entity,
            names,
            conditions,
            format,
            with_assoc,
        }
    } else {
        let e = match entity {
            ShowEntity::Account => AcctEntity::Account,
            ShowEntity::User => AcctEntity::User,
            ShowEntity::Qos => AcctEntity::Qos,
            ShowEntity::Assoc => {
                return Err(Fail::error(
                    prog,
                    "associations are changed through users and accounts (gsacctmgr add user NAME Account=A; modify user NAME where Account=A set ...)",
                ))
            }
        };
        if verb == Verb::Modify && settings.is_empty() {
            return Err(Fail::error(
                prog,
                "Nothing to set (modify ... set Key=Value)",
            ));
        }
        Command::Change(AcctChange {
            op: match verb {
                Verb::Add => AcctOp::Add,
                Verb::Modify => AcctOp::Modify,
                _ => AcctOp::Delete,
            },
            entity: e,
            names,
            conditions,
            settings,
        })
    };
    Ok(common::Parsed::Run(Params {
        command,
        style,
        immediate,
        quiet,
        readonly,
    }))
}

/// A sacctmgr column: its name, default width and header.
struct Col {
    name: &'static str,
    width: usize,
    header: &'static str,
}

const fn col(name: &'static str, width: usize, header: &'static str) -> Col {
    Col {
        name,
        width,
        header,
    }
}

/// The fields, in the order prefixes are tried; `(alias, canonical)` pairs resolve aliases.
const COLS: &[Col] = &[
    col("Account", 10, "Account"),
    col("AdminLevel", 9, "Admin"),
    col("Cluster", 10, "Cluster"),
    col("DefaultAccount", 10, "Def Acct"),
    col("DefaultQOS", 9, "Def QOS"),
    col("Description", 20, "Descr"),
    col("Flags", 20, "Flags"),
    col("GraceTime", 10, "GraceTime"),
    col("GrpJobs", 7, "GrpJobs"),
    col("GrpSubmit", 9, "GrpSubmit"),
    col("GrpTRES", 13, "GrpTRES"),
    col("GrpTRESMins", 13, "GrpTRESMins"),
    col("GrpTRESRunMins", 13, "GrpTRESRunMins"),
    col("GrpWall", 11, "GrpWall"),
    col("HangMinutes", 11, "HangMinutes"),
    col("IdleGpuMinutes", 14, "IdleGpuMinutes"),
    col("MaxJobs", 7, "MaxJobs"),
    col("MaxJobsPA", 9, "MaxJobsPA"),
    col("MaxJobsPU", 9, "MaxJobsPU"),
    col("MaxSubmit", 9, "MaxSubmit"),
    col("MaxSubmitPA", 11, "MaxSubmitPA"),
    col("MaxSubmitPU", 11, "MaxSubmitPU"),
    col("MaxTRES", 13, "MaxTRES"),
    col("MaxTRESMins", 13, "MaxTRESMins"),
    col("MaxTRESPA", 13, "MaxTRESPA"),
    col("MaxTRESPerNode", 14, "MaxTRESPerNode"),
    col("MaxTRESPU", 13, "MaxTRESPU"),
    col("MaxTRESRunMinsPA", 16, "MaxTRESRunMinsPA"),
    col("MaxTRESRunMinsPU", 16, "MaxTRESRunMinsPU"),
    col("MaxWall", 11, "MaxWall"),
    col("MinTRES", 13, "MinTRES"),
    col("Name", 10, "Name"),
    col("Organization", 20, "Org"),
    col("ParentName", 10, "Par Name"),
    col("Partition", 10, "Partition"),
    col("Preempt", 10, "Preempt"),
    col("PreemptExemptTime", 19, "PreemptExemptTime"),
    col("PreemptMode", 11, "PreemptMode"),
    col("Priority", 10, "Priority"),
    col("QOS", 20, "QOS"),
    col("Share", 9, "Share"),
    col("UsageFactor", 11, "UsageFactor"),
    col("UsageThres", 10, "UsageThres"),
    col("User", 10, "User"),
];

/// Names users type, in the order prefixes are tried, and the column they mean.
const ALIASES: &[(&str, &str)] = &[
    ("Account", "Account"),
    ("Acct", "Account"),
    ("AdminLevel", "AdminLevel"),
    ("Cluster", "Cluster"),
    ("Clusters", "Cluster"),
    ("DefaultAccount", "DefaultAccount"),
    ("DefaultQOS", "DefaultQOS"),
    ("Description", "Description"),
    ("FairShare", "Share"),
    ("Flags", "Flags"),
    ("GraceTime", "GraceTime"),
    ("GrpJobs", "GrpJobs"),
    ("GrpSubmitJobs", "GrpSubmit"),
    ("GrpTRES", "GrpTRES"),
    ("GrpTRESMins", "GrpTRESMins"),
    ("GrpTRESRunMins", "GrpTRESRunMins"),
    ("GrpWall", "GrpWall"),
    ("HangMinutes", "HangMinutes"),
    ("IdleGpuMinutes", "IdleGpuMinutes"),
    ("MaxJobs", "MaxJobs"),
    ("MaxJobsPerUser", "MaxJobsPU"),
    ("MaxJobsPU", "MaxJobsPU"),
    ("MaxJobsPerAccount", "MaxJobsPA"),
    ("MaxJobsPA", "MaxJobsPA"),
    ("MaxSubmitJobs", "MaxSubmit"),
    ("MaxSubmitJobsPerUser", "MaxSubmitPU"),
    ("MaxSubmitPU", "MaxSubmitPU"),
    ("MaxSubmitJobsPerAccount", "MaxSubmitPA"),
    ("MaxSubmitPA", "MaxSubmitPA"),
    ("MaxTRES", "MaxTRES"),
    ("MaxTRESPerJob", "MaxTRES"),
    ("MaxTRESMins", "MaxTRESMins"),
    ("MaxTRESPerNode", "MaxTRESPerNode"),
    ("MaxTRESPerUser", "MaxTRESPU"),
    ("MaxTRESPU", "MaxTRESPU"),
    ("MaxTRESPerAccount", "MaxTRESPA"),
    ("MaxTRESPA", "MaxTRESPA"),
    ("MaxTRESRunMinsPerAccount", "MaxTRESRunMinsPA"),
    ("MaxTRESRunMinsPerAcct", "MaxTRESRunMinsPA"),
    ("MaxTRESRunMinsPerUser", "MaxTRESRunMinsPU"),
    ("MaxTRESPerAcct", "MaxTRESPA"),
    ("MaxJobsPerAcct", "MaxJobsPA"),
    ("MaxSubmitJobsPerAcct", "MaxSubmitPA"),
    ("MaxWallDurationPerJob", "MaxWall"),
    ("MinTRES", "MinTRES"),
    ("Name", "Name"),
    ("Organization", "Organization"),
    ("ParentName", "ParentName"),
    ("Partition", "Partition"),
    ("Preempt", "Preempt"),
    ("PreemptExemptTime", "PreemptExemptTime"),
    ("PreemptMode", "PreemptMode"),
    ("Priority", "Priority"),
    ("QOS", "QOS"),
    ("QOSLevel", "QOS"),
    ("Share", "Share"),
    ("User", "User"),
    ("UsageFactor", "UsageFactor"),
    ("UsageThreshold", "UsageThres"),
];

/// One column of a listing as asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Column {
    name: &'static str,
    header: &'static str,
    width: usize,
    right: bool,
}

/// Parses `format=a,b%12,c`: an exact name first, else the first name the token starts.
fn parse_format(spec: &str) -> Result<Vec<Column>, String> {
    let mut out = Vec::new();
    for tok in spec.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let (name, width) = match tok.split_once('%') {
            Some((n, w)) => (n, Some(w)),
            None => (tok, None),
        };
        let l = name.to_ascii_lowercase();
        let canon = ALIASES
            .iter()
            .find(|(a, _)| a.to_ascii_lowercase() == l)
            .or_else(|| {
                ALIASES
                    .iter()
                    .find(|(a, _)| a.to_ascii_lowercase().starts_with(&l))
            })
            .map(|(_, c)| *c)
            .ok_or_else(|| format!("Unknown field '{name}'"))?;
        let c = COLS
            .iter()
            .find(|c| c.name == canon)
            .expect("every alias names a column");
        let (width, right) = match width {
            None => (c.width, true),
            Some(w) => {
                let n: i64 = w.parse().map_err(|_| format!("Unknown field '{tok}'"))?;
                (n.unsigned_abs() as usize, n >= 0)
            }
        };
        out.push(Column {
            name: c.name,
            header: c.header,
            width,
            right,
        });
    }
    Ok(out)
}

/// sacctmgr's QOS columns, then gsched's own (the invalid-job ladder's thresholds) at the end,
/// so that scripts reading Slurm's columns by position still find them.
const QOS_DEFAULT: &str = "Name,Prio,GraceT,Preempt,PreemptE,PreemptM,Flags%40,UsageThres,UsageFactor,GrpTRES,GrpTRESMins,GrpTRESRunMins,GrpJ,GrpS,GrpW,MaxTRES,MaxTRESPerN,MaxTRESMins,MaxW,MaxTRESPerUser,MaxJobsPerUser,MaxSubmitJobsPerUser,MaxTRESPerAcct,MaxJobsPerAcct,MaxSubmitJobsPerAcct,MinTRES,HangMinutes,IdleGpuMinutes";
const ACCOUNT_DEFAULT: &str = "Account,Descr,Org";
const ACCOUNT_WITHASSOC: &str =
    "Account,Descr,Org,Cluster,ParentName,User,Share,MaxJobs,MaxSubmit,MaxWall,QOS,DefaultQOS";
const USER_DEFAULT: &str = "User,DefaultAccount,Admin";
const USER_WITHASSOC: &str =
    "User,DefaultAccount,Admin,Cluster,Account,Partition,Share,MaxJobs,MaxSubmit,MaxWall,QOS,DefaultQOS";
const ASSOC_DEFAULT: &str = "Cluster,Account,User,Partition,Share,Priority,GrpJobs,GrpTRES,GrpSubmit,GrpWall,GrpTRESMins,MaxJobs,MaxTRES,MaxTRESPerNode,MaxSubmit,MaxWall,MaxTRESMins,QOS,DefaultQOS,GrpTRESRunMins";

/// A listing row: the value of each column by canonical name.
type Row = Vec<(&'static str, String)>;

fn wall(m: Option<u32>) -> String {
    m.map(|m| units::format_secs_scontrol(u64::from(m) * 60))
        .unwrap_or_default()
}

fn num(n: Option<u32>) -> String {
    n.map(|n| n.to_string()).unwrap_or_default()
}

fn qos_row(q: &QosDef) -> Row {
    vec![
        ("Name", q.name.clone()),
        ("Description", q.description.clone()),
        ("Priority", q.priority.to_string()),
        ("GraceTime", "00:00:00".into()),
        ("PreemptMode", "cluster".into()),
        ("Flags", q.flags()),
        ("UsageFactor", "1.000000".into()),
        ("MaxWall", wall(q.max_wall)),
        (
            "MaxTRESPU",
            q.max_cpus_per_user
                .map(|c| format!("cpu={c}"))
                .unwrap_or_default(),
        ),
        ("MaxJobsPU", num(q.max_jobs_per_user)),
        ("MaxSubmitPU", num(q.max_submit_jobs_per_user)),
        ("HangMinutes", ladder_minutes(q.hang_secs)),
        ("IdleGpuMinutes", ladder_minutes(q.idle_gpu_secs)),
    ]
}

/// A QOS's invalid-job threshold as set (minutes; `0` exempts; empty when not set).
fn ladder_minutes(secs: Option<u64>) -> String {
    secs.map(gsched_proto::ladder_conf::format_minutes)
        .unwrap_or_default()
}

fn sorted(v: &[String]) -> String {
    let mut v = v.to_vec();
    v.sort();
    v.join(",")
}

/// The effective QOS list of an association or account (own, else the nearest account's).
fn effective_qos(t: &AcctResponse, own: &[String], account: &str) -> String {
    if !own.is_empty() {
        return sorted(own);
    }
    let mut cur = t.accounts.iter().find(|a| a.name == account);
    let mut hops = 0;
    while let Some(a) = cur {
        if !a.qos.is_empty() {
            return sorted(&a.qos);
        }
        hops += 1;
        if hops > t.accounts.len() {
            break;
        }
        cur = a
            .parent
            .as_deref()
            .and_then(|p| t.accounts.iter().find(|x| x.name == p));
    }
    gsched_proto::acct::DEFAULT_QOS.to_string()
}

fn account_row(t: &AcctResponse, a: &AccountDef, cluster: &str) -> Row {
    vec![
        ("Account", a.name.clone()),
        ("Description", a.description.clone()),
        ("Organization", a.organization.clone()),
        ("Cluster", cluster.to_string()),
        ("ParentName", a.parent.clone().unwrap_or_default()),
        ("Share", a.fairshare.to_string()),
        ("MaxJobs", num(a.limits.max_jobs)),
        ("MaxSubmit", num(a.limits.max_submit_jobs)),
        ("MaxWall", wall(a.limits.max_wall)),
        ("QOS", effective_qos(t, &a.qos, &a.name)),
        ("DefaultQOS", a.default_qos.clone().unwrap_or_default()),
    ]
}

fn user_row(u: &UserDef) -> Row {
    vec![
        ("User", u.name.clone()),
        ("DefaultAccount", u.default_account.clone()),
        ("AdminLevel", u.admin_level.as_str().to_string()),
    ]
}

fn assoc_row(t: &AcctResponse, a: &AssocDef, cluster: &str) -> Row {
    vec![
        ("Cluster", cluster.to_string()),
        ("Account", a.account.clone()),
        ("User", a.user.clone()),
        ("Partition", a.partition.clone().unwrap_or_default()),
        ("Share", a.fairshare.to_string()),
        ("MaxJobs", num(a.limits.max_jobs)),
        ("MaxSubmit", num(a.limits.max_submit_jobs)),
        ("MaxWall", wall(a.limits.max_wall)),
        ("QOS", effective_qos(t, &a.qos, &a.account)),
        ("DefaultQOS", a.default_qos.clone().unwrap_or_default()),
    ]
}

/// Accounts in tree order (each followed by its sub-accounts), from `root`.
fn tree_order(t: &AcctResponse) -> Vec<&AccountDef> {
    let mut out = Vec::new();
    let mut stack: Vec<&AccountDef> = t.accounts.iter().filter(|a| a.parent.is_none()).collect();
    stack.reverse();
    while let Some(a) = stack.pop() {
        out.push(a);
        let mut kids: Vec<&AccountDef> = t
            .accounts
            .iter()
            .filter(|c| c.parent.as_deref() == Some(a.name.as_str()))
            .collect();
        kids.sort_by(|x, y| y.name.cmp(&x.name));
        stack.extend(kids);
    }
    out
}

fn cond<'a>(conds: &'a [(String, String)], key: &str) -> Option<Vec<String>> {
    let vals: Vec<String> = conds
        .iter()
        .filter(|(k, _)| {
            let k = k.to_ascii_lowercase();
            k == key || k == format!("{key}s")
        })
        .flat_map(|(_, v): &'a (String, String)| {
            v.split(',').map(|s| s.trim().to_ascii_lowercase())
        })
        .collect();
    (!vals.is_empty()).then_some(vals)
}

/// The rows of a `show`.
fn rows(
    t: &AcctResponse,
    entity: ShowEntity,
    names: &[String],
    conditions: &[(String, String)],
    with_assoc: bool,
    cluster: &str,
) -> Result<Vec<Row>, String> {
    let mut names: Vec<String> = names.iter().map(|n| n.to_ascii_lowercase()).collect();
    names.extend(cond(conditions, "name").unwrap_or_default());
    let known = [
        "name",
        "names",
        "account",
        "accounts",
        "user",
        "users",
        "partition",
        "partitions",
        "parent",
    ];
    if let Some((k, _)) = conditions
        .iter()
        .find(|(k, _)| !known.contains(&k.to_ascii_lowercase().as_str()))
    {
        return Err(format!(
            "Unknown condition: {k} (gsched selects by Name, Account, User, Partition)"
        ));
    }
    let named = |n: &str| names.is_empty() || names.iter().any(|x| x == n);
    let accounts = cond(conditions, "account");
    let users = cond(conditions, "user");
    let parts = cond(conditions, "partition");
    let in_list =
        |l: &Option<Vec<String>>, v: &str| l.as_ref().is_none_or(|l| l.iter().any(|x| x == v));
    let assoc_ok = |a: &AssocDef| {
        in_list(&accounts, &a.account)
            && in_list(&users, &a.user)
            && in_list(&parts, a.partition.as_deref().unwrap_or(""))
    };
    let mut out = Vec::new();
    match entity {
        ShowEntity::Qos => {
            for q in t.qos.iter().filter(|q| named(&q.name)) {
                out.push(qos_row(q));
            }
        }
        ShowEntity::Account => {
            for a in tree_order(t).into_iter().filter(|a| named(&a.name)) {
                out.push(account_row(t, a, cluster));
                if with_assoc {
                    for s in t
                        .assocs
                        .iter()
                        .filter(|s| s.account == a.name && assoc_ok(s))
                    {
                        let mut r = account_row(t, a, cluster);
                        r.extend(assoc_row(t, s, cluster));
                        r.retain(|(k, _)| *k != "ParentName");
                        out.push(dedup(r));
                    }
                }
            }
        }
        ShowEntity::User => {
            for u in t.users.iter().filter(|u| named(&u.name)) {
                if with_assoc {
                    for s in t.assocs.iter().filter(|s| s.user == u.name && assoc_ok(s)) {
                        let mut r = user_row(u);
                        r.extend(assoc_row(t, s, cluster));
                        out.push(dedup(r));
                    }
                } else if t.assocs.iter().any(|s| s.user == u.name && assoc_ok(s)) {
                    out.push(user_row(u));
                }
            }
        }
        ShowEntity::Assoc => {
            for a in tree_order(t) {
                let acct_row_ok = users.is_none() && parts.is_none() && in_list(&accounts, &a.name);
                if acct_row_ok {
                    let mut r = account_row(t, a, cluster);
                    r.push(("User", String::new()));
                    out.push(dedup(r));
                }
                for s in t
                    .assocs
                    .iter()
                    .filter(|s| s.account == a.name && assoc_ok(s))
                {
                    out.push(assoc_row(t, s, cluster));
                }
            }
        }
    }
    Ok(out)
}

/// Keeps the last value of each column.
fn dedup(r: Row) -> Row {
    let mut out: Row = Vec::new();
    for (k, v) in r {
        if let Some(e) = out.iter_mut().find(|(x, _)| *x == k) {
            e.1 = v;
        } else {
            out.push((k, v));
        }
    }
    out
}

/// sacctmgr's `print_fields`: right-justified (or left with a negative width), a value too
/// long for its column cut and ended with `+`; `-p`/`-P` separate with `|`.
fn render(cols: &[Column], rows: &[Row], style: Style) -> String {
    let mut s = String::new();
    let cell = |c: &Column, v: &str| -> String {
        let len = v.chars().count();
        let v = if len > c.width {
            let mut t: String = v.chars().take(c.width.saturating_sub(1)).collect();
            t.push('+');
            t
        } else {
            v.to_string()
        };
        common::print_field(&v, c.width, c.right, true)
    };
    let line = |vals: Vec<String>| -> String {
        match style.parsable {
            Some(true) => vals.iter().map(|v| format!("{v}|")).collect::<String>() + "\n",
            Some(false) => vals.join("|") + "\n",
            None => vals.iter().map(|v| format!("{v} ")).collect::<String>() + "\n",
        }
    };
    let plain = style.parsable.is_none();
    if !style.no_header {
        s.push_str(&line(
            cols.iter()
                .map(|c| {
                    if plain {
                        cell(c, c.header)
                    } else {
                        c.header.to_string()
                    }
                })
                .collect(),
        ));
        if plain {
            s.push_str(&line(cols.iter().map(|c| "-".repeat(c.width)).collect()));
        }
    }
    for r in rows {
        s.push_str(&line(
            cols.iter()
                .map(|c| {
                    let v = r
                        .iter()
                        .find(|(k, _)| *k == c.name)
                        .map(|(_, v)| v.as_str())
                        .unwrap_or("");
                    if plain {
                        cell(c, v)
                    } else {
                        v.to_string()
                    }
                })
                .collect(),
        ));
    }
    s
}

/// The listing of one `show` over the table.
#[allow(clippy::too_many_arguments)]
pub fn show(
    t: &AcctResponse,
    entity: ShowEntity,
    names: &[String],
    conditions: &[(String, String)],
    format: Option<&str>,
    with_assoc: bool,
    style: Style,
    cluster: &str,
) -> Result<String, String> {
    let default = match (entity, with_assoc) {
        (ShowEntity::Qos, _) => QOS_DEFAULT,
        (ShowEntity::Account, false) => ACCOUNT_DEFAULT,
        (ShowEntity::Account, true) => ACCOUNT_WITHASSOC,
        (ShowEntity::User, false) => USER_DEFAULT,
        (ShowEntity::User, true) => USER_WITHASSOC,
        (ShowEntity::Assoc, _) => ASSOC_DEFAULT,
    };
    let cols = parse_format(format.unwrap_or(default))?;
    let rows = rows(t, entity, names, conditions, with_assoc, cluster)?;
    Ok(render(&cols, &rows, style))
}

/// What a successful change prints.
pub fn change_report(c: &AcctChange, changed: &[String]) -> (String, i32) {
    if changed.is_empty() {
        return match c.op {
            AcctOp::Add => (" Nothing new added.\n".into(), 0),
            AcctOp::Modify => ("  Nothing modified\n".into(), 1),
            AcctOp::Delete => (" Nothing deleted\n".to_string(), 1),
        };
    }
    let head = match (c.op, c.entity) {
        (AcctOp::Add, AcctEntity::Account) => " Adding Account(s)",
        (AcctOp::Add, AcctEntity::User) => " Adding User(s)\n Associations =",
        (AcctOp::Add, AcctEntity::Qos) => " Adding QOS(s)",
        (AcctOp::Modify, AcctEntity::Account) => " Modified account associations...",
        (AcctOp::Modify, AcctEntity::User) => " Modified user associations...",
        (AcctOp::Modify, AcctEntity::Qos) => " Modified qos...",
        (AcctOp::Delete, AcctEntity::Account) => " Deleting accounts...",
        (AcctOp::Delete, AcctEntity::User) => " Deleting users...",
        (AcctOp::Delete, AcctEntity::Qos) => " Deleting QOS(s)...",
    };
    let mut s = format!("{head}\n");
    for l in changed {
        s.push_str(&format!("  {l}\n"));
    }
    (s, 0)
}

/// `gsacctmgr` entry point.
pub fn main(args: Vec<String>) -> i32 {
    common::run_main(&args, "sacctmgr", run)
}

fn run(prog: &str, args: &[String]) -> Result<i32, Fail> {
    let Some(p) = parse_args(prog, args)?.or_print() else {
        return Ok(0);
    };
    let (cfg, client) = common::connect(prog, None)?;
    match &p.command {
        Command::Show {
            entity,
            names,
            conditions,
            format,
            with_assoc,
        } => {
            let t: AcctResponse = client
                .get(paths::ACCT)
                .map_err(|e| Fail::error(prog, common::client_error_text(&e)))?;
            let out = show(
                &t,
                *entity,
                names,
                conditions,
                format.as_deref(),
                *with_assoc,
                p.style,
                &cfg.cluster_name,
            )
            .map_err(|e| Fail::raw(1, vec![e]))?;
            common::out(&out);
            Ok(0)
        }
        Command::Change(c) => {
            if p.readonly {
                return Err(Fail::error(
                    prog,
                    "Can't run this command in readonly mode.",
                ));
            }
            if !p.immediate && std::io::stdin().is_terminal() && !confirm() {
                common::out(" Changes Discarded\n");
                return Ok(0);
            }
            let r: AcctChangeResponse = client
                .post(paths::ACCT_UPDATE, c)
                .map_err(|e| Fail::error(prog, common::client_error_text(&e)))?;
            let (text, code) = change_report(c, &r.changed);
            if !p.quiet {
                common::out(&text);
            }
            Ok(code)
        }
    }
}

/// sacctmgr's commit question, on a terminal.
fn confirm() -> bool {
    let mut o = std::io::stdout().lock();
    let _ = write!(
        o,
        "Would you like to commit changes? (You have 30 seconds to decide)\n(N/y): "
    );
    let _ = o.flush();
    let mut line = String::new();
    let _ = std::io::stdin().lock().read_line(&mut line);
    matches!(line.trim(), "y" | "Y" | "yes" | "Yes")
}

pub fn usage_text() -> String {
    "Usage: sacctmgr [-hinpPQrsvV] [command [entity] [specs]]\n".to_string()
}

pub fn help_text() -> String {
    "Usage: sacctmgr [OPTIONS] COMMAND ENTITY [SPECS]\n\
     \n\
     gsched's sacctmgr: accounts, users, associations and QOS, kept by the controller.\n\
     \n\
     \x20 -h, --help         this text\n\
     \x20 -i, --immediate    commit changes without asking\n\
     \x20 -n, --noheader     no header lines\n\
     \x20 -p, --parsable     fields followed by |\n\
     \x20 -P, --parsable2    fields separated by |\n\
     \x20 -Q, --quiet        print no messages but errors\n\
     \x20 -r, --readonly     refuse changes\n\
     \x20 -s, --associations list users and accounts with their associations\n\
     \x20 -v, --verbose      more messages\n\
     \x20 -V, --version      print the version\n\
     \n\
     Commands:\n\
     \x20 add|create ENTITY NAME[,NAME] [Key=Value ...]\n\
     \x20 modify|update ENTITY [where] Key=Value ... set Key=Value|Key+=V|Key-=V ...\n\
     \x20 delete|remove ENTITY [where] NAME|Key=Value ...\n\
     \x20 show|list ENTITY [NAME] [where Key=Value ...] [format=Field[%width],...] [withassoc]\n\
     \n\
     Entities and keys:\n\
     \x20 account: Description, Organization, Parent, Fairshare, DefaultQOS, QOS,\n\
     \x20          MaxJobs, MaxSubmitJobs, MaxWall\n\
     \x20 user:    Account, DefaultAccount, AdminLevel, Partition, Fairshare,\n\
     \x20          DefaultQOS, QOS, MaxJobs, MaxSubmitJobs, MaxWall\n\
     \x20 qos:     Description, Priority, MaxWall, MaxJobsPerUser, MaxSubmitJobsPerUser,\n\
     \x20          MaxTRESPerUser=cpu=N, Flags=DenyOnLimit|NoDefer|Interactive,\n\
     \x20          HangMinutes, IdleGpuMinutes\n\
     \x20 association (show only)\n\
     \n\
     Changes need root, SlurmUser or AdminLevel=Administrator. A limit of -1 clears it.\n\
     \n\
     QOS settings of gsched's own (not in Slurm's sacctmgr):\n\
     \x20 Flags=NoDefer       jobs of the QOS are never deferred to a cheaper price window\n\
     \x20 Flags=Interactive   jobs of the QOS are exempt from the invalid-job ladder\n\
     \x20                     (gsched.conf(5), INVALID JOBS). gsched has no interactive\n\
     \x20                     allocations (no salloc): interactive apps (Jupyter, Open\n\
     \x20                     OnDemand) are batch jobs that idle legitimately, and this\n\
     \x20                     flag is how a site exempts them\n\
     \x20 HangMinutes=M       the ladder's thresholds for the QOS's jobs, in minutes\n\
     \x20 IdleGpuMinutes=M    (decimals allowed), over the partition's and the cluster's;\n\
     \x20                     0 exempts the QOS's jobs, -1 clears the setting\n\
     show qos lists them in the columns Flags, HangMinutes and IdleGpuMinutes, the last\n\
     two after sacctmgr's own columns.\n"
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use gsched_proto::acct::AssocLimits;

    fn parse(args: &[&str]) -> Result<common::Parsed<Params>, Fail> {
        let a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        parse_args("sacctmgr", &a)
    }

    fn change(args: &[&str]) -> AcctChange {
        match parse(args).unwrap() {
            common::Parsed::Run(Params {
                command: Command::Change(c),
                ..
            }) => c,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn grammar() {
        let c = change(&[
            "-i",
            "add",
            "account",
            "physics",
            "Description=Physics dept",
            "Fairshare=40",
        ]);
        assert_eq!((c.op, c.entity), (AcctOp::Add, AcctEntity::Account));
        assert_eq!(c.names, vec!["physics"]);
        assert_eq!(c.settings[1], ("Fairshare".into(), "=".into(), "40".into()));
        let c = change(&[
            "modify",
            "user",
            "where",
            "name=bob",
            "account=physics",
            "set",
            "qos+=high",
            "MaxJobs=-1",
        ]);
        assert_eq!((c.op, c.entity), (AcctOp::Modify, AcctEntity::User));
        assert_eq!(
            c.conditions,
            vec![
                ("name".into(), "bob".into()),
                ("account".into(), "physics".into())
            ]
        );
        assert_eq!(c.settings[0], ("qos".into(), "+=".into(), "high".into()));
        let c = change(&["cr", "qos", "high", "Priority=100"]);
        assert_eq!((c.op, c.entity), (AcctOp::Add, AcctEntity::Qos));
        let c = change(&["remove", "user", "bob", "account=chem"]);
        assert_eq!(c.op, AcctOp::Delete);
        assert_eq!(c.conditions, vec![("account".into(), "chem".into())]);
        // Refusals are clear.
        let e = parse(&["dump", "x"]).unwrap_err();
        assert!(e.lines[0].contains("not supported by gsched yet"), "{e:?}");
        let e = parse(&["show", "wckey"]).unwrap_err();
        assert!(e.lines[0].contains("not supported by gsched yet"), "{e:?}");
        assert!(parse(&["frobnicate", "qos"]).is_err());
        assert!(parse(&["modify", "qos", "normal"]).is_err());
        assert!(parse(&["--json", "show", "qos"]).is_err());
        let e = parse(&[]).unwrap_err();
        assert!(
            e.lines[0].contains("interactive mode is not supported"),
            "{e:?}"
        );
    }

    fn table() -> AcctResponse {
        AcctResponse {
            accounts: vec![
                AccountDef {
                    name: "root".into(),
                    description: "default root account".into(),
                    organization: "root".into(),
                    parent: None,
                    fairshare: 1,
                    ..AccountDef::default()
                },
                AccountDef {
                    name: "physics".into(),
                    description: "physics".into(),
                    organization: "physics".into(),
                    parent: Some("root".into()),
                    fairshare: 40,
                    qos: vec!["normal".into(), "high".into()],
                    ..AccountDef::default()
                },
            ],
            users: vec![UserDef {
                name: "bob".into(),
                default_account: "physics".into(),
                admin_level: gsched_proto::acct::AdminLevel::None,
            }],
            assocs: vec![AssocDef {
                user: "bob".into(),
                account: "physics".into(),
                partition: None,
                fairshare: 1,
                default_qos: None,
                qos: Vec::new(),
                limits: AssocLimits {
                    max_jobs: Some(4),
                    ..AssocLimits::default()
                },
            }],
            qos: vec![
                QosDef {
                    name: "high".into(),
                    priority: 100,
                    max_wall: Some(120),
                    max_jobs_per_user: Some(2),
                    deny_on_limit: true,
                    ..QosDef::default()
                },
                QosDef {
                    name: "normal".into(),
                    ..QosDef::default()
                },
            ],
            usage: Vec::new(),
            enforce: String::new(),
        }
    }

    #[test]
    fn listings_in_sacctmgr_layout() {
        let t = table();
        let s =
            |e, f: Option<&str>, style| show(&t, e, &[], &[], f, false, style, "gstest").unwrap();
        assert_eq!(
            s(
                ShowEntity::Qos,
                Some("name,prio,maxw,maxjobspu,flags"),
                Style::default()
            ),
            format!(
                "      Name   Priority     MaxWall MaxJobsPU                Flags \n\
             ---------- ---------- ----------- --------- -------------------- \n\
             \x20     high        100    02:00:00         2          DenyOnLimit \n\
             \x20   normal          0{}\n",
                " ".repeat(44)
            )
        );
        assert_eq!(
            s(
                ShowEntity::Assoc,
                Some("account,user,share,maxjobs,qos"),
                Style {
                    no_header: true,
                    parsable: Some(false)
                }
            ),
            "root||1||normal\nphysics||40||high,normal\nphysics|bob|1|4|high,normal\n"
        );
        assert_eq!(
            s(
                ShowEntity::User,
                None,
                Style {
                    no_header: false,
                    parsable: Some(true)
                }
            ),
            "User|Def Acct|Admin|\nbob|physics|None|\n"
        );
        // With associations (snakemake's `sacctmgr -n -s list user NAME format=account%256`).
        let w = show(
            &t,
            ShowEntity::User,
            &["bob".into()],
            &[],
            Some("account%-12"),
            true,
            Style {
                no_header: true,
                parsable: None,
            },
            "gstest",
        )
        .unwrap();
        assert_eq!(w, "physics      \n");
        // A long value is cut with '+'; an unknown field is an error.
        assert!(s(ShowEntity::Account, Some("descr%5"), Style::default()).contains("defa+"));
        assert_eq!(
            show(
                &t,
                ShowEntity::Qos,
                &[],
                &[],
                Some("bogus"),
                false,
                Style::default(),
                "c"
            )
            .unwrap_err(),
            "Unknown field 'bogus'"
        );
    }

    #[test]
    fn qos_ladder_settings_travel_and_show() {
        // The settings go to the controller as written (it checks them), clearing included.
        let c = change(&[
            "-i",
            "modify",
            "qos",
            "where",
            "name=jupyter",
            "set",
            "Flags+=Interactive",
            "HangMinutes=-1",
            "IdleGpuMinutes=",
        ]);
        assert_eq!((c.op, c.entity), (AcctOp::Modify, AcctEntity::Qos));
        assert_eq!(
            c.settings,
            vec![
                ("Flags".into(), "+=".into(), "Interactive".into()),
                ("HangMinutes".into(), "=".into(), "-1".into()),
                ("IdleGpuMinutes".into(), "=".into(), "".into()),
            ]
        );
        let c = change(&["add", "qos", "strict", "HangMinutes=0.05"]);
        assert_eq!(
            c.settings,
            vec![("HangMinutes".into(), "=".into(), "0.05".into())]
        );
        // Shown in minutes as given, 0 for an exemption, empty when not set.
        let mut t = table();
        t.qos = vec![
            QosDef {
                name: "jupyter".into(),
                interactive: true,
                no_defer: true,
                ..QosDef::default()
            },
            QosDef {
                name: "patient".into(),
                hang_secs: Some(0),
                idle_gpu_secs: Some(5400),
                ..QosDef::default()
            },
            QosDef {
                name: "strict".into(),
                hang_secs: Some(3),
                ..QosDef::default()
            },
        ];
        let p = Style {
            no_header: false,
            parsable: Some(false),
        };
        let show_qos = |f: Option<&str>, style| {
            show(&t, ShowEntity::Qos, &[], &[], f, false, style, "c").unwrap()
        };
        assert_eq!(
            show_qos(Some("name,flags,hang,idlegpu"), p),
            "Name|Flags|HangMinutes|IdleGpuMinutes\n\
             jupyter|NoDefer,Interactive||\n\
             patient||0|90\n\
             strict||0.05|\n"
        );
        // The default listing: sacctmgr's columns, then gsched's two at the end.
        let all = show_qos(None, p);
        let header: Vec<&str> = all.lines().next().unwrap().split('|').collect();
        assert_eq!(header.len(), 28, "{header:?}");
        assert_eq!(header[6], "Flags");
        assert_eq!(header[25], "MinTRES");
        assert_eq!(&header[26..], ["HangMinutes", "IdleGpuMinutes"]);
        assert!(
            all.lines()
                .any(|l| l.starts_with("strict|") && l.ends_with("|0.05|")),
            "{all}"
        );
        // The fixed-width layout pads them like the others.
        assert_eq!(
            show_qos(Some("name,hangminutes,idlegpuminutes"), Style::default()),
            "      Name HangMinutes IdleGpuMinutes \n\
             ---------- ----------- -------------- \n\
             \x20  jupyter                            \n\
             \x20  patient           0             90 \n\
             \x20   strict        0.05                \n"
        );
    }

    #[test]
    fn change_reports() {
        let c = change(&["add", "qos", "high"]);
        assert_eq!(
            change_report(&c, &["high".into()]),
            (" Adding QOS(s)\n  high\n".to_string(), 0)
        );
        assert_eq!(change_report(&c, &[]).1, 0);
        let m = change(&["modify", "qos", "high", "set", "priority=1"]);
        assert_eq!(
            change_report(&m, &[]),
            ("  Nothing modified\n".to_string(), 1)
        );
    }
}
