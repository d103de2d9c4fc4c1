//! `gsshare` (`sshare`): the fair-share tree, from the association table and usage the
//! controller keeps (`GET /v1/acct`, as gsacctmgr reads it).
//!
//! The numbers are those the controller's multifactor priority uses: Slurm's classic
//! fair-share ([`gsched_sched::classic_fairshare`]) over the accounts (with their
//! `Fairshare=` shares among their parent's children) and the user associations (shares
//! among their account's users), with each association's decayed CPU-seconds as its raw
//! usage. Rows come in sshare's order: the root, then under each account its users first and
//! then its sub-accounts, names sorted; the Account column is indented one space per level,
//! a user's row shows its account. Without `-a` or `-u` only the caller's user associations
//! are shown (with every account), `-U` keeps the user rows only, `-A` the rows of those
//! accounts. Columns, widths (`Name%W`), `-p`/`-P` and `-n` follow sshare's `print_fields`.
//!
//! Clients: snakemake's SLURM executor runs `sshare -U --format Account%256 --noheader` to
//! check the account of a workflow.

use crate::common::{self, split_list, Fail};
use crate::getopt::{self, HasArg, Opt, Ordering};
use gsched_proto::acct::{AcctResponse, ROOT_ACCOUNT};
use gsched_proto::api::paths;
use gsched_sched::{classic_fairshare, FsNode};
use std::collections::HashMap;

use HasArg::{No, Required as Req};

pub const OPTIONS: &[Opt] = &[
    Opt::new("all", Some('a'), &["all"], No),
    Opt::new("accounts", Some('A'), &["accounts"], Req),
    Opt::new("helpformat", Some('e'), &["helpformat"], No),
    Opt::new("help", Some('h'), &["help"], No),
    Opt::new("long", Some('l'), &["long"], No),
    Opt::new("partition", Some('m'), &["partition"], No),
    Opt::new("clusters", Some('M'), &["cluster", "clusters"], Req),
    Opt::new("noheader", Some('n'), &["noheader"], No),
    Opt::new("format", Some('o'), &["format"], Req),
    Opt::new("parsable", Some('p'), &["parsable"], No),
    Opt::new("parsable2", Some('P'), &["parsable2"], No),
    Opt::new("users", Some('u'), &["users"], Req),
    Opt::new("Users", Some('U'), &["Users"], No),
    Opt::new("usage", None, &["usage"], No),
    Opt::new("verbose", Some('v'), &["verbose"], No),
    Opt::new("version", Some('V'), &["version"], No),
];

/// sshare's columns in its table order (a name given is matched as a case-insensitive
/// prefix, the first match wins) with their default widths (negative: left-justified).
const FIELDS: &[(&str, i32)] = &[
    ("Account", -20),
    ("Cluster", 10),
    ("EffectvUsage", 13),
    ("FairShare", 10),
    ("GrpTRESMins", 30),
    ("GrpTRESRaw", 30),
    ("ID", 6),
    ("LevelFS", 10),
    ("NormShares", 11),
    ("NormUsage", 11),
    ("Partition", 12),
    ("RawShares", 10),
    ("RawUsage", 11),
    ("TRESRunMins", 30),
    ("User", 10),
];

const DEFAULT_FORMAT: &str = "A,User,RawShares,NormShares,RawUsage,Eff,Fairshare";
const LONG_FORMAT: &str =
    "A,User,RawShares,NormShares,RawUsage,NormUsage,Eff,Fairshare,GrpTRESMins,TRESRunMins";
const DEFAULT_FORMAT_PART: &str = "A,User,P,RawShares,NormShares,RawUsage,Eff,Fairshare";
const LONG_FORMAT_PART: &str =
    "A,User,P,RawShares,NormShares,RawUsage,NormUsage,Eff,Fairshare,GrpTRESMins,TRESRunMins";

/// One output column: a field of [`FIELDS`] and its width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column {
    pub name: &'static str,
    pub width: i32,
}

/// `|` after every field (`-p`), between fields (`-P`), or aligned columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Layout {
    #[default]
    Columns,
    Parsable,
    Parsable2,
}

/// The parsed command line.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Params {
    pub columns: Vec<Column>,
    pub layout: Layout,
    pub no_header: bool,
    /// `-a`: every user's associations.
    pub all: bool,
    /// `-u`: these users' associations.
    pub users: Option<Vec<String>>,
    /// `-U`: user rows only.
    pub users_only: bool,
    /// `-A`: rows of these accounts only.
    pub accounts: Option<Vec<String>>,
    pub clusters: Option<String>,
}

pub type Parsed = common::Parsed<Params>;

/// Resolves a `--format` list the way sshare does; an unknown name is its error, exit 1.
pub fn parse_fields(prog: &str, list: &str) -> Result<Vec<Column>, Fail> {
    let mut out = Vec::new();
    for tok in list.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let (name, width) = match tok.split_once('%') {
            Some((n, w)) => (n, w.trim().parse::<i32>().ok().filter(|w| *w != 0)),
            None => (tok, None),
        };
        let Some(&(field, default)) = FIELDS
            .iter()
            .find(|(f, _)| f.len() >= name.len() && f[..name.len()].eq_ignore_ascii_case(name))
        else {
            return Err(Fail::error(
                prog,
                format!("Invalid field requested: \"{name}\""),
            ));
        };
        out.push(Column {
            name: field,
            width: width.unwrap_or(default),
        });
    }
    Ok(out)
}

pub fn parse_args(prog: &str, args: &[String], user: &str) -> Result<Parsed, Fail> {
    let split = getopt::parse_split(args, OPTIONS, Ordering::Permute);
    let mut p = Params::default();
    let (mut format, mut long, mut partition) = (None, false, false);
    for (id, arg) in split.opts {
        if let Some(text) = common::info_text(id, help_text, usage_text) {
            return Ok(Parsed::Print(text));
        }
        let val = arg.unwrap_or_default();
        match id {
            "all" => p.all = true,
            "accounts" => p.accounts = Some(split_list(&val)),
            "helpformat" => return Ok(Parsed::Print(helpformat())),
            "long" => long = true,
            "partition" => partition = true,
            "clusters" => p.clusters = Some(val),
            "noheader" => p.no_header = true,
            "format" => format = Some(val),
            "parsable" => p.layout = Layout::Parsable,
            "parsable2" => p.layout = Layout::Parsable2,
            "users" => p.users = Some(split_list(&val)),
            "Users" => p.users_only = true,
            _ => {}
        }
    }
    if let Some(e) = split.err {
        return Err(Fail::usage(prog, &e, 1));
    }
    if let Some(op) = split.operands.first() {
        return Err(Fail::error(prog, format!("Unknown argument: {op}")));
    }
    let list = format.unwrap_or_else(|| {
        match (long, partition) {
            (false, false) => DEFAULT_FORMAT,
            (true, false) => LONG_FORMAT,
            (false, true) => DEFAULT_FORMAT_PART,
            (true, true) => LONG_FORMAT_PART,
        }
        .to_string()
    });
    p.columns = parse_fields(prog, &list)?;
    if !p.all && p.users.is_none() {
        p.users = Some(vec![user.to_string()]);
    }
    Ok(Parsed::Run(p))
}

/// One row of the tree.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub depth: usize,
    pub account: String,
    /// `None` for an account's own row.
    pub user: Option<String>,
    pub partition: Option<String>,
    pub raw_shares: Option<u32>,
    pub norm_shares: f64,
    pub raw_usage: f64,
    pub norm_usage: f64,
    pub effectv_usage: f64,
    /// `None` for the root (Slurm prints it blank).
    pub fair_share: Option<f64>,
}

/// The whole tree in sshare's order, with Slurm's classic fair-share numbers.
pub fn tree(t: &AcctResponse) -> Vec<Row> {
    // Nodes: accounts (parents first), then user associations.
    let mut nodes = vec![FsNode {
        parent: None,
        shares: 1,
        usage: 0.0,
    }];
    let mut index: HashMap<String, usize> = HashMap::from([(ROOT_ACCOUNT.to_string(), 0)]);
    let mut accounts: Vec<(usize, String, usize, u32)> = Vec::new(); // (node, name, parent node, shares)
    let mut frontier = vec![ROOT_ACCOUNT.to_string()];
    while let Some(parent) = frontier.pop() {
        let pi = index[&parent];
        let mut children: Vec<_> = t
            .accounts
            .iter()
            .filter(|a| a.parent.as_deref() == Some(parent.as_str()) && a.name != ROOT_ACCOUNT)
            .collect();
        children.sort_by(|a, b| a.name.cmp(&b.name));
        for a in children {
            if index.contains_key(&a.name) {
                continue;
            }
            index.insert(a.name.clone(), nodes.len());
            accounts.push((nodes.len(), a.name.clone(), pi, a.fairshare));
            nodes.push(FsNode {
                parent: Some(pi),
                shares: a.fairshare,
                usage: 0.0,
            });
            frontier.push(a.name.clone());
        }
    }
    let usage_of = |account: &str, user: &str| -> f64 {
        t.usage
            .iter()
            .filter(|u| u.account == account && u.user == user)
            .map(|u| u.usage)
            .sum()
    };
    let mut assocs: Vec<(usize, &gsched_proto::acct::AssocDef, usize)> = Vec::new();
    let mut sorted: Vec<_> = t.assocs.iter().collect();
    sorted.sort_by(|a, b| (&a.account, &a.user).cmp(&(&b.account, &b.user)));
    for a in sorted {
        let Some(&pi) = index.get(&a.account) else {
            continue;
        };
        assocs.push((nodes.len(), a, pi));
        nodes.push(FsNode {
            parent: Some(pi),
            shares: a.fairshare,
            usage: usage_of(&a.account, &a.user),
        });
    }
    let fs = classic_fairshare(&nodes);
    // Raw usage of every node: its own plus its subtree's (children come after parents).
    let mut raw: Vec<f64> = nodes.iter().map(|n| n.usage.max(0.0)).collect();
    for i in (1..nodes.len()).rev() {
        if let Some(p) = nodes[i].parent {
            let v = raw[i];
            raw[p] += v;
        }
    }
    // Depth-first: an account's users, then its sub-accounts.
    let mut out = Vec::new();
    out.push(Row {
        depth: 0,
        account: ROOT_ACCOUNT.to_string(),
        user: None,
        partition: None,
        raw_shares: None,
        norm_shares: 0.0,
        raw_usage: raw[0],
        norm_usage: fs[0].usage_norm,
        effectv_usage: 1.0,
        fair_share: None,
    });
    struct Walk<'a> {
        accounts: &'a [(usize, String, usize, u32)],
        assocs: &'a [(usize, &'a gsched_proto::acct::AssocDef, usize)],
        fs: &'a [gsched_sched::FairShare],
        raw: &'a [f64],
    }
    impl Walk<'_> {
        fn walk(&self, node: usize, depth: usize, name: &str, out: &mut Vec<Row>) {
            let (fs, raw) = (self.fs, self.raw);
            for (i, a, _) in self.assocs.iter().filter(|(_, _, p)| *p == node) {
                out.push(Row {
                    depth: depth + 1,
                    account: name.to_string(),
                    user: Some(a.user.clone()),
                    partition: a.partition.clone(),
                    raw_shares: Some(a.fairshare),
                    norm_shares: fs[*i].shares_norm,
                    raw_usage: raw[*i],
                    norm_usage: fs[*i].usage_norm,
                    effectv_usage: fs[*i].usage_efctv,
                    fair_share: Some(fs[*i].factor),
                });
            }
            for (i, child, _, shares) in self.accounts.iter().filter(|(_, _, p, _)| *p == node) {
                out.push(Row {
                    depth: depth + 1,
                    account: child.clone(),
                    user: None,
                    partition: None,
                    raw_shares: Some(*shares),
                    norm_shares: fs[*i].shares_norm,
                    raw_usage: raw[*i],
                    norm_usage: fs[*i].usage_norm,
                    effectv_usage: fs[*i].usage_efctv,
                    fair_share: Some(fs[*i].factor),
                });
                self.walk(*i, depth + 1, child, out);
            }
        }
    }
    Walk {
        accounts: &accounts,
        assocs: &assocs,
        fs: &fs,
        raw: &raw,
    }
    .walk(0, 0, ROOT_ACCOUNT, &mut out);
    out
}

/// The rows the options select.
pub fn select(p: &Params, rows: Vec<Row>) -> Vec<Row> {
    rows.into_iter()
        .filter(|r| match &r.user {
            Some(u) => p.users.as_ref().is_none_or(|l| l.iter().any(|x| x == u)),
            None => !p.users_only,
        })
        .filter(|r| {
            p.accounts
                .as_ref()
                .is_none_or(|l| l.iter().any(|a| a.eq_ignore_ascii_case(&r.account)))
        })
        .collect()
}

/// `print_fields_double`: `%f` with sshare's width, blank when unset.
fn double(v: Option<f64>) -> Option<String> {
    v.map(|v| format!("{v:.6}"))
}

impl Params {
    fn cell(&self, c: &Column, value: Option<&str>, last: bool) -> String {
        let v = value.unwrap_or("");
        match self.layout {
            Layout::Parsable2 if last => v.to_string(),
            Layout::Parsable | Layout::Parsable2 => format!("{v}|"),
            Layout::Columns => {
                let w = c.width.unsigned_abs() as usize;
                let mut v = v.to_string();
                if v.chars().count() > w {
                    v = v.chars().take(w.saturating_sub(1)).collect::<String>() + "+";
                }
                if c.width < 0 {
                    format!("{v:<w$} ")
                } else {
                    format!("{v:>w$} ")
                }
            }
        }
    }

    fn value(&self, c: &Column, r: &Row, cluster: &str) -> Option<String> {
        match c.name {
            "Account" => Some(format!("{}{}", " ".repeat(r.depth), r.account)),
            "Cluster" => Some(cluster.to_string()),
            "EffectvUsage" => double(Some(r.effectv_usage)),
            "FairShare" => double(r.fair_share),
            "NormShares" => double(Some(r.norm_shares)),
            "NormUsage" => double(Some(r.norm_usage)),
            "Partition" => r.partition.clone(),
            "RawShares" => r.raw_shares.map(|s| s.to_string()),
            "RawUsage" => Some((r.raw_usage.max(0.0).round() as u64).to_string()),
            "User" => r.user.clone(),
            // Not tracked by gsched: association ids, fair-tree LevelFS, TRES minutes.
            _ => None,
        }
    }

    /// The header (unless `-n`) and the rows.
    pub fn render(&self, rows: &[Row], cluster: &str) -> String {
        let n = self.columns.len();
        let mut out = String::new();
        if !self.no_header {
            for (i, c) in self.columns.iter().enumerate() {
                out.push_str(&self.cell(c, Some(c.name), i + 1 == n));
            }
            out.push('\n');
            if self.layout == Layout::Columns {
                for c in &self.columns {
                    out.push_str(&"-".repeat(c.width.unsigned_abs() as usize));
                    out.push(' ');
                }
                out.push('\n');
            }
        }
        for r in rows {
            for (i, c) in self.columns.iter().enumerate() {
                let v = self.value(c, r, cluster);
                out.push_str(&self.cell(c, v.as_deref(), i + 1 == n));
            }
            out.push('\n');
        }
        out
    }
}

fn helpformat() -> String {
    let mut out = String::new();
    for (i, (name, _)) in FIELDS.iter().enumerate() {
        out.push_str(&format!("{name:<15}"));
        if i % 5 == 4 {
            out.push('\n');
        }
    }
    if FIELDS.len() % 5 != 0 {
        out.push('\n');
    }
    out
}

pub fn usage_text() -> String {
    "Usage: sshare [-a] [-A accounts] [-e] [-l] [-m] [-M cluster] [-n] [-o format] [-p] [-P]\n\
     \x20             [-u users] [-U] [-v] [-V]\n"
        .to_string()
}

pub fn help_text() -> String {
    "Usage: sshare [OPTION]\n\
     \x20 -a or --all              list all users\n\
     \x20 -A or --accounts=        display specific accounts (comma separated list)\n\
     \x20 -e or --helpformat       Print a list of fields that can be specified with the\n\
     \x20                          '--format' option\n\
     \x20 -l or --long             include normalized usage in output\n\
     \x20 -m or --partition        print the partition part of the association\n\
     \x20 -M or --cluster=name     cluster to issue commands to (only the local cluster)\n\
     \x20 -n or --noheader         omit header from output\n\
     \x20 -o or --format=          Comma separated list of fields (Name%width)\n\
     \x20 -p or --parsable         '|' delimited output with a trailing '|'\n\
     \x20 -P or --parsable2        '|' delimited output without a trailing '|'\n\
     \x20 -u or --users=           display specific users (comma separated list)\n\
     \x20 -U or --Users            display only user information\n\
     \x20 -v or --verbose          display more information\n\
     \x20 -V or --version          display tool version number\n\
     \x20     --help               display this usage description\n\
     \x20     --usage              display this usage description\n\
     \n\
     The numbers are Slurm's classic fair-share over gsacctmgr's accounts and\n\
     associations and the decayed usage the controller keeps; GrpTRESMins,\n\
     GrpTRESRaw, TRESRunMins, LevelFS and ID print empty.\n"
        .to_string()
}

/// `gsshare` entry point.
pub fn main(args: Vec<String>) -> i32 {
    common::run_main(&args, "sshare", run)
}

fn run(prog: &str, args: &[String]) -> Result<i32, Fail> {
    let user = gsched_proto::users::user_name(common::current_uid());
    let Some(p) = parse_args(prog, args, &user)?.or_print() else {
        return Ok(0);
    };
    let (cfg, client) = common::connect(prog, p.clusters.as_deref())?;
    let t: AcctResponse = client
        .get(paths::ACCT)
        .map_err(|e| Fail::error(prog, common::client_error_text(&e)))?;
    let rows = select(&p, tree(&t));
    common::out(&p.render(&rows, &cfg.cluster_name));
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gsched_proto::acct::{AccountDef, AssocDef, UsageRow};

    fn account(name: &str, parent: &str, fairshare: u32) -> AccountDef {
        AccountDef {
            name: name.into(),
            parent: (name != ROOT_ACCOUNT).then(|| parent.to_string()),
            fairshare,
            ..Default::default()
        }
    }

    fn assoc(user: &str, account: &str) -> AssocDef {
        AssocDef {
            user: user.into(),
            account: account.into(),
            fairshare: 1,
            ..Default::default()
        }
    }

    fn table() -> AcctResponse {
        AcctResponse {
            accounts: vec![
                account("root", "", 1),
                account("physics", "root", 1),
                account("chem", "root", 1),
            ],
            assocs: vec![
                assoc("root", "root"),
                assoc("alice", "physics"),
                assoc("bob", "chem"),
            ],
            usage: vec![UsageRow {
                account: "physics".into(),
                user: "alice".into(),
                usage: 1000.0,
            }],
            ..Default::default()
        }
    }

    fn parse(args: &[&str], user: &str) -> Params {
        let a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        match parse_args("sshare", &a, user).unwrap() {
            Parsed::Run(p) => p,
            Parsed::Print(_) => panic!("printed"),
        }
    }

    #[test]
    fn tree_order_and_numbers() {
        let rows = tree(&table());
        let names: Vec<(usize, &str, Option<&str>)> = rows
            .iter()
            .map(|r| (r.depth, r.account.as_str(), r.user.as_deref()))
            .collect();
        assert_eq!(
            names,
            [
                (0, "root", None),
                (1, "root", Some("root")),
                (1, "chem", None),
                (2, "chem", Some("bob")),
                (1, "physics", None),
                (2, "physics", Some("alice")),
            ]
        );
        assert_eq!(rows[0].raw_usage, 1000.0);
        assert_eq!(rows[4].raw_usage, 1000.0);
        // Three children of root with one share each.
        assert!((rows[4].norm_shares - 1.0 / 3.0).abs() < 1e-9);
        // The account that used everything ranks below the idle ones.
        assert!(rows[5].fair_share.unwrap() < rows[3].fair_share.unwrap());
    }

    #[test]
    fn default_layout_and_selection() {
        let p = parse(&["-a"], "x");
        let out = p.render(&select(&p, tree(&table())), "c");
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[0],
            "Account                    User  RawShares  NormShares    RawUsage  EffectvUsage  FairShare "
        );
        assert!(lines[1].starts_with("-------------------- ---------- "));
        assert!(lines[2].starts_with("root                 "), "{out}");
        assert!(
            lines[7].starts_with("  physics                 alice          1 "),
            "{out}"
        );
        // Without -a: the caller's associations and every account.
        let p = parse(&[], "alice");
        let rows = select(&p, tree(&table()));
        assert_eq!(rows.iter().filter(|r| r.user.is_some()).count(), 1);
        // snakemake: `sshare -U --format Account%256 --noheader` as the user.
        let p = parse(&["-U", "--format", "Account%256", "--noheader"], "alice");
        let out = p.render(&select(&p, tree(&table())), "c");
        assert_eq!(out.lines().count(), 1);
        assert_eq!(out.trim(), "physics");
        assert_eq!(out.trim_end_matches('\n').len(), 257);
        // Parsable forms, -A, unknown fields.
        let p = parse(
            &["-P", "-n", "-a", "-A", "chem", "-o", "acc,user,raws"],
            "x",
        );
        assert_eq!(
            p.render(&select(&p, tree(&table())), "c"),
            " chem||1\n  chem|bob|1\n"
        );
        let p = parse(&["-p", "-u", "bob", "-U", "-o", "User,Cluster"], "x");
        assert_eq!(
            p.render(&select(&p, tree(&table())), "c"),
            "User|Cluster|\nbob|c|\n"
        );
        let a: Vec<String> = vec!["-o".into(), "bogus".into()];
        let e = parse_args("sshare", &a, "x").unwrap_err();
        assert_eq!(
            e.lines,
            vec!["sshare: error: Invalid field requested: \"bogus\""]
        );
        assert!(matches!(
            parse_args("sshare", &["-V".to_string()], "x").unwrap(),
            Parsed::Print(s) if s == "slurm 22.05.8\n"
        ));
    }
}
