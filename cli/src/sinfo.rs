//! `gsinfo` (`sinfo`): partitions and nodes.
//!
//! As in sinfo, each output line is a group of nodes of one partition that agree on every
//! node attribute the format shows (state, reason, features...), unless `-N` asks for one
//! line per node or `-e` for exact CPU/memory matches; every partition is listed even when
//! it has no nodes. Numbers that differ inside a group print as `min+`.

use crate::common::{self, or_null, print_field, sort_by, split_list, Fail};
use crate::format;
use crate::getopt::{self, HasArg, Opt, Ordering};
use gsched_proto::api::{paths, NodesResponse, PartitionsResponse};
use gsched_proto::hostlist;
use gsched_proto::node::{NodeBaseState, NodeInfo, PartitionInfo, PartitionStateInfo};
use gsched_proto::units;

use HasArg::{No, Required as Req};

pub const OPTIONS: &[Opt] = &[
    Opt::new("all", Some('a'), &["all"], No),
    Opt::new("dead", Some('d'), &["dead"], No),
    Opt::new("exact", Some('e'), &["exact"], No),
    Opt::new("federation", None, &["federation"], No),
    Opt::new("help", None, &["help"], No),
    Opt::new("hide", None, &["hide"], No),
    Opt::new("iterate", Some('i'), &["iterate"], Req),
    Opt::new("local", None, &["local"], No),
    Opt::new("long", Some('l'), &["long"], No),
    Opt::new("clusters", Some('M'), &["cluster", "clusters"], Req),
    Opt::new("nodes", Some('n'), &["nodes"], Req),
    Opt::new("noconvert", None, &["noconvert"], No),
    Opt::new("noheader", Some('h'), &["noheader"], No),
    Opt::new("Node", Some('N'), &["Node"], No),
    Opt::new("format", Some('o'), &["format"], Req),
    Opt::new("Format", Some('O'), &["Format"], Req),
    Opt::new("partition", Some('p'), &["partition"], Req),
    Opt::new("responding", Some('r'), &["responding"], No),
    Opt::new("list-reasons", Some('R'), &["list-reasons"], No),
    Opt::new("summarize", Some('s'), &["summarize"], No),
    Opt::new("sort", Some('S'), &["sort"], Req),
    Opt::new("states", Some('t'), &["states"], Req),
    Opt::new("reservation", Some('T'), &["reservation"], No),
    Opt::new("usage", None, &["usage"], No),
    Opt::new("verbose", Some('v'), &["verbose"], No),
    Opt::new("version", Some('V'), &["version"], No),
    Opt::new("json", None, &["json"], No),
    Opt::new("yaml", None, &["yaml"], No),
    // gsched extensions.
    Opt::new("prices", None, &["prices"], No),
    Opt::new("lowload", None, &["lowload"], No),
];

const FMT_DEFAULT: &str =
    "partition:9 ,available:.5 ,time:.10 ,nodes:.6 ,statecompact:.6 ,nodelist:0";
const FMT_LONG: &str = "partition:9 ,available:.5 ,time:.10 ,size:.10 ,root:.4 ,oversubscribe:.8 ,groups:.10 ,nodes:.6 ,statelong:.11 ,nodelist:0";
const FMT_SUMMARY: &str = "partition:9 ,available:.5 ,time:.10 ,nodeaiot:.16 ,nodelist:0";
const FMT_NODE: &str = "nodelist:0 ,nodes:.6 ,partition:.9 ,statecompact:6";
const FMT_NODE_LONG: &str = "nodelist:0 ,nodes:.6 ,partition:.9 ,statelong:.11 ,cpus:4 ,socketcorethread:.8 ,memory:.6 ,disk:.8 ,weight:.6 ,features:.8 ,reason:20";
const FMT_REASONS: &str = "reason:20 ,user:9 ,timestamp:19 ,nodelist:0";
const FMT_REASONS_LONG: &str = "reason:20 ,userlong:12 ,timestamp:19 ,statecompact:6 ,nodelist:0";

const MIN_FIELD: usize = 9;

/// A sinfo column kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum F {
    Avail,
    NodesAi,
    FeaturesAct,
    MaxCpusPerNode,
    Cpus,
    CpusAiot,
    Disk,
    Nodes,
    FreeMem,
    Reason,
    Features,
    NodesAiot,
    Groups,
    Gres,
    GresUsed,
    OverSubscribe,
    Timestamp,
    PrioJobFactor,
    Time,
    DefaultTime,
    Memory,
    AllocMem,
    PreemptMode,
    Hostnames,
    NodeList,
    NodeAddr,
    CpuLoad,
    PrioTier,
    Partition,
    Root,
    PartitionName,
    Size,
    AllocNodes,
    StateCompact,
    StateLong,
    StateComplete,
    User,
    UserLong,
    Version,
    Cluster,
    Weight,
    Sockets,
    Cores,
    Threads,
    Sct,
    Port,
    Comment,
    Extra,
    Invalid,
}

const LETTERS: &[(char, F)] = &[
    ('a', F::Avail),
    ('A', F::NodesAi),
    ('b', F::FeaturesAct),
    ('B', F::MaxCpusPerNode),
    ('c', F::Cpus),
    ('C', F::CpusAiot),
    ('d', F::Disk),
    ('D', F::Nodes),
    ('e', F::FreeMem),
    ('E', F::Reason),
    ('f', F::Features),
    ('F', F::NodesAiot),
    ('g', F::Groups),
    ('G', F::Gres),
    ('h', F::OverSubscribe),
    ('H', F::Timestamp),
    ('I', F::PrioJobFactor),
    ('l', F::Time),
    ('L', F::DefaultTime),
    ('m', F::Memory),
    ('M', F::PreemptMode),
    ('n', F::Hostnames),
    ('N', F::NodeList),
    ('o', F::NodeAddr),
    ('O', F::CpuLoad),
    ('p', F::PrioTier),
    ('P', F::Partition),
    ('r', F::Root),
    ('R', F::PartitionName),
    ('s', F::Size),
    ('S', F::AllocNodes),
    ('t', F::StateCompact),
    ('T', F::StateLong),
    ('u', F::User),
    ('U', F::UserLong),
    ('v', F::Version),
    ('V', F::Cluster),
    ('w', F::Weight),
    ('X', F::Sockets),
    ('Y', F::Cores),
    ('Z', F::Threads),
    ('z', F::Sct),
];

const NAMES: &[(&str, F)] = &[
    ("allocmem", F::AllocMem),
    ("allocnodes", F::AllocNodes),
    ("available", F::Avail),
    ("cluster", F::Cluster),
    ("comment", F::Comment),
    ("cpus", F::Cpus),
    ("cpusload", F::CpuLoad),
    ("freemem", F::FreeMem),
    ("cpusstate", F::CpusAiot),
    ("cores", F::Cores),
    ("defaulttime", F::DefaultTime),
    ("disk", F::Disk),
    ("extra", F::Extra),
    ("features", F::Features),
    ("features_act", F::FeaturesAct),
    ("groups", F::Groups),
    ("gres", F::Gres),
    ("gresused", F::GresUsed),
    ("maxcpuspernode", F::MaxCpusPerNode),
    ("memory", F::Memory),
    ("nodes", F::Nodes),
    ("nodeaddr", F::NodeAddr),
    ("nodeai", F::NodesAi),
    ("nodeaiot", F::NodesAiot),
    ("nodehost", F::Hostnames),
    ("nodelist", F::NodeList),
    ("partition", F::Partition),
    ("partitionname", F::PartitionName),
    ("port", F::Port),
    ("preemptmode", F::PreemptMode),
    ("priorityjobfactor", F::PrioJobFactor),
    ("prioritytier", F::PrioTier),
    ("reason", F::Reason),
    ("root", F::Root),
    ("oversubscribe", F::OverSubscribe),
    ("share", F::OverSubscribe),
    ("size", F::Size),
    ("statecompact", F::StateCompact),
    ("statecomplete", F::StateComplete),
    ("statelong", F::StateLong),
    ("sockets", F::Sockets),
    ("socketcorethread", F::Sct),
    ("time", F::Time),
    ("timestamp", F::Timestamp),
    ("threads", F::Threads),
    ("user", F::User),
    ("userlong", F::UserLong),
    ("version", F::Version),
    ("weight", F::Weight),
];

impl format::Kind for F {
    const INVALID: F = F::Invalid;
    const LETTERS: &'static [(char, F)] = LETTERS;
    const NAMES: &'static [(&'static str, F)] = NAMES;
    const LETTER_WHAT: &'static str = "node";
    const HASH_AUTO: bool = true;
    const ALL_UPPER_PAD: &'static str = " ";
    const NAME_ALL: bool = true;

    fn auto_width(self) -> bool {
        matches!(self, F::Partition | F::PartitionName | F::NodeList)
    }

    /// Only digits count (`partition:-5` has width 0 and suffix `-5`).
    fn name_width(spec: &str) -> (usize, &str) {
        let digits = spec.bytes().take_while(u8::is_ascii_digit).count();
        (spec[..digits].parse().unwrap_or(0), &spec[digits..])
    }
}

/// One column; `auto` means the width is computed (`%#P`, default formats).
pub type Field = format::Field<F>;

pub type Format = format::Format<F>;

/// Parses an `-o` format. `%#P`/`%#N` (as sinfo's man page writes its defaults) take the
/// computed width.
pub fn parse_format(fmt: &str) -> Format {
    format::parse(fmt)
}

/// Parses an `-O` format (`name[:[.][width][suffix]]`, default width 20; `all` is `%all`).
pub fn parse_long_format(fmt: &str) -> Format {
    format::parse_names(fmt)
}

/// A node state as sinfo's `-t` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateSel {
    Base(NodeBaseState),
    /// `allocated`: any allocated CPU (so mixed nodes too).
    Allocated,
    Drain,
    Drained,
    Draining,
    NoRespond,
    /// A Slurm state gsched nodes never have (`fail`, `maint`, `future`...).
    Never,
}

/// sinfo's `_node_state_id`: a case-insensitive prefix of a state name.
pub fn parse_node_state(s: &str) -> Option<StateSel> {
    let pre = |name: &str| name.len() >= s.len() && name[..s.len()].eq_ignore_ascii_case(s);
    // Base states in Slurm's order, long and compact names.
    let bases: [(&str, &str, StateSel); 7] = [
        ("UNKNOWN", "UNK", StateSel::Base(NodeBaseState::Unknown)),
        ("DOWN", "DOWN", StateSel::Base(NodeBaseState::Down)),
        ("IDLE", "IDLE", StateSel::Base(NodeBaseState::Idle)),
        ("ALLOCATED", "ALLOC", StateSel::Allocated),
        ("ERROR", "ERROR", StateSel::Never),
        ("MIXED", "MIX", StateSel::Base(NodeBaseState::Mixed)),
        ("FUTURE", "FUTURE", StateSel::Never),
    ];
    for (long, compact, sel) in bases {
        if pre(compact) || pre(long) {
            return Some(sel);
        }
    }
    let specials: [(&[&str], StateSel); 9] = [
        (&["PLANNED", "PLND"], StateSel::Never),
        (&["DRAIN"], StateSel::Drain),
        (&["DRAINED"], StateSel::Drained),
        (&["RESV", "RESERVED"], StateSel::Never),
        (&["PERFCTRS", "NPC"], StateSel::Never),
        (&["DRAINING", "DRNG"], StateSel::Draining),
        (&["COMPLETING", "COMP"], StateSel::Never),
        (&["NO_RESPOND"], StateSel::NoRespond),
        (
            &[
                "POWERING_DOWN",
                "POWERED_DOWN",
                "POWER_DOWN",
                "POWERING_UP",
                "FAIL",
                "MAINT",
                "REBOOT_REQUESTED",
                "REBOOT_ISSUED",
                "CLOUD",
                "POW_DN",
                "IDLE~",
            ],
            StateSel::Never,
        ),
    ];
    for (names, sel) in specials {
        if names.iter().any(|n| pre(n)) {
            return Some(sel);
        }
    }
    None
}

fn busy(n: &NodeInfo) -> bool {
    matches!(n.base, NodeBaseState::Allocated | NodeBaseState::Mixed)
}

impl StateSel {
    pub fn matches(self, n: &NodeInfo) -> bool {
        match self {
            StateSel::Base(b) => n.base == b,
            StateSel::Allocated => n.alloc_cpus > 0 || busy(n),
            StateSel::Drain => n.drain,
            StateSel::Drained => n.drain && !busy(n),
            StateSel::Draining => n.drain && busy(n),
            StateSel::NoRespond => n.not_responding,
            StateSel::Never => false,
        }
    }
}

const VALID_NODE_STATES: &str = "unknown,down,idle,allocated,error,mixed,future,drain,drained,draining,no_respond,reserved,perfctrs,cloud,completing,powering_down,powered_down,power_down,powering_up,fail,maint,reboot_requested,reboot_issued,planned";

/// `-t`: a comma (any) or `&` (all) separated list, or `all`.
pub fn parse_states(prog: &str, s: &str) -> Result<Option<(Vec<StateSel>, bool)>, Fail> {
    if s.eq_ignore_ascii_case("all") {
        return Ok(None);
    }
    let and = s.contains('&');
    let mut out = Vec::new();
    for tok in s.split([',', '&']).filter(|t| !t.is_empty()) {
        match parse_node_state(tok) {
            Some(sel) => out.push(sel),
            None => {
                return Err(Fail::errors(
                    prog,
                    &[
                        &format!("Bad state string: \"{tok}\""),
                        &format!("valid states: {VALID_NODE_STATES}"),
                    ],
                ))
            }
        }
    }
    Ok(Some((out, and)))
}

/// The command line.
#[derive(Debug, Clone, Default)]
pub struct Params {
    /// `-T/--reservation`: list the reservations instead.
    pub reservation: bool,
    pub format: Format,
    pub no_header: bool,
    pub long: bool,
    pub node_mode: bool,
    pub reasons: bool,
    pub exact: bool,
    pub dead: bool,
    /// `-a/--all` (or `SINFO_ALL`): partitions hidden from the user too (`Hidden=YES`, an
    /// `AllowGroups=` it is not in), and the nodes only they hold.
    pub all: bool,
    pub responding: bool,
    pub partitions: Option<Vec<String>>,
    pub nodes: Option<Vec<String>>,
    pub states: Option<(Vec<StateSel>, bool)>,
    pub sort: Option<String>,
    pub iterate: Option<u64>,
    pub verbose: u32,
    /// `--json`/`--yaml`: Slurm 22.05's data dump of the nodes and partitions.
    pub mime: Option<crate::slurm_json::Mime>,
    pub clusters: Option<String>,
    /// Partition column width is computed (default formats).
    pub part_auto: bool,
    /// Node list column width is computed (`-N`).
    pub node_auto: bool,
    /// `--prices` (gsched): the next 24 hours of prices and windows.
    pub prices: bool,
    /// `--lowload` (gsched): the learned low-load hours.
    pub lowload: bool,
}

pub type Parsed = common::Parsed<Box<Params>>;

pub fn parse_args(
    prog: &str,
    args: &[String],
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Parsed, Fail> {
    let split = getopt::parse_split(args, OPTIONS, Ordering::Permute);
    let mut p = Params {
        sort: env("SINFO_SORT"),
        partitions: env("SINFO_PARTITION").map(|v| split_list(&v)),
        clusters: env("SLURM_CLUSTERS"),
        all: env("SINFO_ALL").is_some(),
        ..Default::default()
    };
    let mut format: Option<String> = None;
    let mut long_form = false;
    let mut summarize = false;
    for (id, arg) in split.opts {
        if let Some(text) = common::info_text(id, help_text, usage_text) {
            return Ok(Parsed::Print(text));
        }
        let arg = arg.unwrap_or_default();
        match id {
            "all" => p.all = true,
            "hide" => p.all = false,
            "local" | "federation" | "noconvert" => {}
            "dead" => p.dead = true,
            "exact" => p.exact = true,
            "noheader" => p.no_header = true,
            "iterate" => match arg.trim().parse::<i64>() {
                Ok(n) if n > 0 => p.iterate = Some(n as u64),
                _ => {
                    return Err(Fail::error(
                        prog,
                        format!("Error: invalid entry for --iterate={arg}"),
                    ))
                }
            },
            "long" => p.long = true,
            "clusters" => p.clusters = Some(arg),
            "nodes" => {
                p.nodes =
                    Some(hostlist::expand(&arg).map_err(|_| {
                        Fail::error(prog, format!("'{arg}' invalid entry for --nodes"))
                    })?)
            }
            "Node" => p.node_mode = true,
            "format" => {
                format = Some(arg);
                long_form = false;
            }
            "Format" => {
                format = Some(arg);
                long_form = true;
            }
            "partition" => p.partitions = Some(split_list(&arg)),
            "responding" => p.responding = true,
            "list-reasons" => p.reasons = true,
            "summarize" => summarize = true,
            "sort" => p.sort = Some(arg),
            "states" => p.states = parse_states(prog, &arg)?,
            "reservation" => p.reservation = true,
            "verbose" => p.verbose += 1,
            "json" | "yaml" => p.mime = crate::slurm_json::Mime::from_option(id),
            "prices" => p.prices = true,
            "lowload" => p.lowload = true,
            _ => {}
        }
    }
    if let Some(e) = split.err {
        return Err(Fail::usage(prog, &e, 1));
    }
    if let Some(o) = split.operands.first() {
        return Err(Fail::raw(
            1,
            vec![
                format!("{prog}: unrecognized option '{o}'"),
                format!("Try \"{prog} --help\" for more information"),
            ],
        ));
    }
    if p.long && format.is_some() {
        return Err(Fail::raw(
            1,
            vec![format!(
                "{prog}: fatal: Options -o(--format) and -l(--long) are mutually exclusive. Please remove one and retry."
            )],
        ));
    }
    match format {
        Some(f) => {
            p.format = if long_form {
                parse_long_format(&f)
            } else {
                parse_format(&f)
            };
        }
        None => {
            let (f, long) = if summarize {
                p.part_auto = true;
                (FMT_SUMMARY.to_string(), true)
            } else if p.node_mode {
                p.part_auto = true;
                p.node_auto = true;
                (
                    if p.long { FMT_NODE_LONG } else { FMT_NODE }.to_string(),
                    true,
                )
            } else if p.reasons {
                (
                    if p.long {
                        FMT_REASONS_LONG
                    } else {
                        FMT_REASONS
                    }
                    .to_string(),
                    true,
                )
            } else if let Some(f) = env("SINFO_FORMAT") {
                (f, false)
            } else {
                p.part_auto = true;
                (
                    if p.long { FMT_LONG } else { FMT_DEFAULT }.to_string(),
                    true,
                )
            };
            p.format = if long {
                parse_long_format(&f)
            } else {
                parse_format(&f)
            };
        }
    }
    if p.reasons && p.states.is_none() {
        p.states = parse_states(prog, "down,fail,drain")?;
    }
    Ok(Parsed::Run(Box::new(p)))
}

/// One output line: a group of nodes (possibly none) of a partition.
#[derive(Debug, Clone)]
pub struct Record<'a> {
    pub part: Option<&'a PartitionInfo>,
    pub part_inx: usize,
    pub nodes: Vec<&'a NodeInfo>,
    pub alloc: u32,
    pub idle: u32,
    pub other: u32,
    pub cpus_alloc: u32,
    pub cpus_idle: u32,
    pub cpus_other: u32,
    pub cpus_total: u32,
}

impl<'a> Record<'a> {
    fn new(part: Option<&'a PartitionInfo>, part_inx: usize) -> Record<'a> {
        Record {
            part,
            part_inx,
            nodes: Vec::new(),
            alloc: 0,
            idle: 0,
            other: 0,
            cpus_alloc: 0,
            cpus_idle: 0,
            cpus_other: 0,
            cpus_total: 0,
        }
    }

    fn first(&self) -> Option<&'a NodeInfo> {
        self.nodes.first().copied()
    }

    fn add(&mut self, n: &'a NodeInfo) {
        if self.nodes.iter().any(|x| x.name == n.name) {
            return;
        }
        self.nodes.push(n);
        let down_or_drain = n.drain || n.base == NodeBaseState::Down;
        if busy(n) {
            self.alloc += 1;
        } else if down_or_drain {
            self.other += 1;
        } else {
            self.idle += 1;
        }
        self.cpus_alloc += n.alloc_cpus;
        self.cpus_total += n.cpus;
        let free = n.cpus.saturating_sub(n.alloc_cpus);
        if down_or_drain {
            self.cpus_other += free;
        } else {
            self.cpus_idle += free;
        }
    }
}

/// The node attributes that separate groups for this format.
fn node_key(fmt: &Format, exact: bool, n: &NodeInfo) -> Vec<String> {
    let mut k = Vec::new();
    let mut push = |cond: bool, v: String| {
        if cond {
            k.push(v)
        }
    };
    push(fmt.has(&[F::Hostnames]), n.name.clone());
    push(fmt.has(&[F::NodeAddr]), n.addr.clone());
    push(fmt.has(&[F::Features]), n.features.join(","));
    push(fmt.has(&[F::FeaturesAct]), n.features.join(","));
    push(fmt.has(&[F::Gres]), n.gres.clone());
    push(fmt.has(&[F::GresUsed]), n.gres_used.clone());
    push(fmt.has(&[F::Reason]), n.reason.clone().unwrap_or_default());
    push(
        fmt.has(&[F::Timestamp]),
        n.reason_time.unwrap_or(0).to_string(),
    );
    push(
        fmt.has(&[F::User, F::UserLong]),
        format!("{:?}", n.reason_uid),
    );
    push(
        fmt.has(&[F::StateCompact, F::StateLong, F::StateComplete]),
        n.state_long(),
    );
    push(fmt.has(&[F::AllocMem]), n.alloc_mem_mb.to_string());
    if exact {
        push(fmt.has(&[F::Cpus, F::CpusAiot]), n.cpus.to_string());
        push(fmt.has(&[F::Memory]), n.real_memory_mb.to_string());
        push(fmt.has(&[F::Weight]), n.weight.to_string());
        push(fmt.has(&[F::Version]), format!("{:?}", n.version));
    }
    k
}

/// The partition attributes that separate groups for this format.
fn part_key(fmt: &Format, reasons: bool, p: &PartitionInfo) -> Vec<String> {
    if reasons {
        return Vec::new();
    }
    let mut k = Vec::new();
    if fmt.has(&[F::Partition, F::PartitionName]) {
        k.push(p.name.clone());
    }
    if fmt.has(&[F::Avail]) {
        k.push(p.state.as_str().to_string());
    }
    if fmt.has(&[F::Time]) {
        k.push(format!("{:?}", p.max_time));
    }
    if fmt.has(&[F::DefaultTime]) {
        k.push(format!("{:?}", p.default_time));
    }
    k
}

fn node_selected(p: &Params, n: &NodeInfo) -> bool {
    if p.nodes.as_ref().is_some_and(|l| !l.contains(&n.name)) {
        return false;
    }
    if p.dead && !n.not_responding {
        return false;
    }
    if p.responding && n.not_responding {
        return false;
    }
    if let Some((sels, and)) = &p.states {
        let ok = if *and {
            sels.iter().all(|s| s.matches(n))
        } else {
            sels.iter().any(|s| s.matches(n))
        };
        if !ok {
            return false;
        }
    }
    true
}

/// Groups nodes into output records, as sinfo's `_build_sinfo_data`.
pub fn build_records<'a>(
    p: &Params,
    parts: &'a [PartitionInfo],
    nodes: &'a [NodeInfo],
) -> Vec<Record<'a>> {
    let fmt = &p.format;
    let part_listed = |name: &str| {
        p.partitions
            .as_ref()
            .is_none_or(|l| l.iter().any(|x| x == name))
    };
    let mut recs: Vec<Record<'a>> = Vec::new();
    if !p.node_mode && !p.reasons && fmt.has(&[F::Partition, F::PartitionName]) {
        for (i, part) in parts.iter().enumerate() {
            if part_listed(&part.name) {
                recs.push(Record::new(Some(part), i));
            }
        }
    }
    for (i, part) in parts.iter().enumerate() {
        if !part_listed(&part.name) {
            continue;
        }
        for name in &part.nodes {
            let Some(n) = nodes.iter().find(|n| n.name == *name) else {
                continue;
            };
            if !node_selected(p, n) {
                continue;
            }
            let pk = part_key(fmt, p.reasons, part);
            let nk = node_key(fmt, p.exact, n);
            let found = recs.iter_mut().find(|r| {
                let same_part = p.reasons
                    || r.part_inx == i
                    || r.part.is_some_and(|rp| part_key(fmt, p.reasons, rp) == pk);
                same_part
                    && !p.node_mode
                    && (r.nodes.is_empty()
                        || r.first().is_some_and(|f| node_key(fmt, p.exact, f) == nk))
            });
            match found {
                Some(r) if !(p.node_mode) => r.add(n),
                _ => {
                    let mut r = Record::new(Some(part), i);
                    r.add(n);
                    recs.push(r);
                }
            }
        }
    }
    recs
}

/// Slurm's numeric node state, for sorting by state.
fn state_num(r: &Record) -> u32 {
    let Some(n) = r.first() else { return 0 };
    let base = match n.base {
        NodeBaseState::Unknown => 0,
        NodeBaseState::Down => 1,
        NodeBaseState::Idle => 2,
        NodeBaseState::Allocated => 3,
        NodeBaseState::Mixed => 5,
    };
    base | if n.drain { 0x200 } else { 0 } | if n.not_responding { 0x800 } else { 0 }
}

/// Sorts records by a sinfo `-S` specification (default `#P,-t`, or `N` with `-N`).
pub fn sort_records(recs: &mut [Record], spec: &str) {
    for (c, before) in common::sort_keys(spec, &[',', '#', '+', '-']) {
        let rev = before == Some('-');
        match c {
            // `#P`: the order of the partitions in the configuration.
            'P' | 'R' if before == Some('#') => sort_by(recs, rev, |r| r.part_inx),
            'P' | 'R' => sort_by(recs, rev, |r| {
                r.part.map(|p| p.name.clone()).unwrap_or_default()
            }),
            't' | 'T' => sort_by(recs, rev, state_num),
            'N' | 'n' | 'o' => sort_by(recs, rev, |r| r.nodes.first().map(|n| n.name.clone())),
            'D' => sort_by(recs, rev, |r| r.nodes.len()),
            'c' => sort_by(recs, rev, |r| r.first().map(|n| n.cpus)),
            'm' => sort_by(recs, rev, |r| r.first().map(|n| n.real_memory_mb)),
            'w' => sort_by(recs, rev, |r| r.first().map(|n| n.weight)),
            'E' => sort_by(recs, rev, |r| r.first().and_then(|n| n.reason.clone())),
            'a' => sort_by(recs, rev, |r| r.part.map(|p| p.state.as_str())),
            'l' => sort_by(recs, rev, |r| {
                r.part.map(|p| p.max_time.unwrap_or(u32::MAX))
            }),
            _ => {}
        }
    }
}

/// sinfo's `_print_secs`: squeue's form without its one-year limit (sinfo never prints
/// `INVALID`). Beyond a year both forms are `D-HH:MM:SS`, which scontrol's gives.
fn secs(t: u64) -> String {
    if t > 365 * 86_400 {
        units::format_secs_scontrol(t)
    } else {
        units::format_secs_squeue(t)
    }
}

fn min_max<T: Ord + Copy + ToString>(vals: impl Iterator<Item = T>) -> String {
    let v: Vec<T> = vals.collect();
    match (v.iter().min(), v.iter().max()) {
        (Some(a), Some(b)) if a == b => a.to_string(),
        (Some(a), Some(_)) => format!("{}+", a.to_string()),
        _ => "0".to_string(),
    }
}

fn header(kind: F) -> (&'static str, bool) {
    let h = match kind {
        F::Avail => "AVAIL",
        F::NodesAi => "NODES(A/I)",
        F::FeaturesAct => "ACTIVE_FEATURES",
        F::MaxCpusPerNode => "MAX_CPUS_PER_NODE",
        F::Cpus => "CPUS",
        F::CpusAiot => "CPUS(A/I/O/T)",
        F::Disk => "TMP_DISK",
        F::Nodes => "NODES",
        F::FreeMem => "FREE_MEM",
        F::Reason => "REASON",
        F::Features => "AVAIL_FEATURES",
        F::NodesAiot => "NODES(A/I/O/T)",
        F::Groups => "GROUPS",
        F::Gres => "GRES",
        F::GresUsed => "GRES_USED",
        F::OverSubscribe => "OVERSUBSCRIBE",
        F::Timestamp => "TIMESTAMP",
        F::PrioJobFactor => "PRIO_JOB_FACTOR",
        F::Time => "TIMELIMIT",
        F::DefaultTime => "DEFAULTTIME",
        F::Memory => "MEMORY",
        F::AllocMem => "ALLOCMEM",
        F::PreemptMode => "PREEMPT_MODE",
        F::Hostnames => return ("HOSTNAMES", false),
        F::NodeList => return ("NODELIST", false),
        F::NodeAddr => return ("NODE_ADDR", false),
        F::CpuLoad => "CPU_LOAD",
        F::PrioTier => "PRIO_TIER",
        F::Partition | F::PartitionName => "PARTITION",
        F::Root => "ROOT",
        F::Size => "JOB_SIZE",
        F::AllocNodes => "ALLOCNODES",
        F::StateCompact | F::StateLong => "STATE",
        F::StateComplete => "STATECOMPLETE",
        F::User | F::UserLong => "USER",
        F::Version => "VERSION",
        F::Cluster => "CLUSTER",
        F::Weight => "WEIGHT",
        F::Sockets => "SOCKETS",
        F::Cores => "CORES",
        F::Threads => "THREADS",
        F::Sct => "S:C:T",
        F::Port => "PORT",
        F::Comment => "COMMENT",
        F::Extra => "EXTRA",
        F::Invalid => "",
    };
    (h, true)
}

fn user_short(uid: Option<u32>) -> String {
    match uid {
        None => "Unknown".to_string(),
        Some(u) => match gsched_proto::users::user_by_uid(u) {
            Some(e) => e.name,
            None => format!("Unk({u})"),
        },
    }
}

fn user_long(uid: Option<u32>) -> String {
    match uid {
        None => "Unknown".to_string(),
        Some(u) => match gsched_proto::users::user_by_uid(u) {
            Some(e) => format!("{}({u})", e.name),
            None => format!("Unk({u})"),
        },
    }
}

/// A record's value for a column and whether it is cut when right-justified.
fn value(kind: F, r: &Record, cluster: &str, slurmd_port: u16) -> String {
    let first = r.first();
    let part = r.part;
    let names: Vec<&str> = r.nodes.iter().map(|n| n.name.as_str()).collect();
    let na = || "n/a".to_string();
    match kind {
        F::Avail => part
            .map(|p| match p.state {
                PartitionStateInfo::Up => "up",
                PartitionStateInfo::Down => "down",
                PartitionStateInfo::Drain => "drain",
                PartitionStateInfo::Inactive => "inactive",
            })
            .map(str::to_string)
            .unwrap_or_else(na),
        F::NodesAi => format!("{}/{}", r.alloc, r.idle),
        F::NodesAiot => format!("{}/{}/{}/{}", r.alloc, r.idle, r.other, r.nodes.len()),
        F::CpusAiot => format!(
            "{}/{}/{}/{}",
            r.cpus_alloc, r.cpus_idle, r.cpus_other, r.cpus_total
        ),
        F::FeaturesAct | F::Features => {
            or_null(&first.map(|n| n.features.join(",")).unwrap_or_default()).to_string()
        }
        F::MaxCpusPerNode => "UNLIMITED".to_string(),
        F::Cpus => min_max(r.nodes.iter().map(|n| n.cpus)),
        F::Disk => "0".to_string(),
        F::Nodes => r.nodes.len().to_string(),
        F::FreeMem | F::CpuLoad => "N/A".to_string(),
        F::Reason => match first.and_then(|n| n.reason.clone()) {
            Some(s) if !s.is_empty() && !s.starts_with("(null)") => s,
            _ => "none".to_string(),
        },
        F::Groups => part
            .map(|x| {
                x.access
                    .allow_groups
                    .as_ref()
                    .map_or_else(|| "all".to_string(), |g| g.join(","))
            })
            .unwrap_or_else(na),
        F::AllocNodes => part.map(|_| "all".to_string()).unwrap_or_else(na),
        F::Gres => or_null(first.map(|n| n.gres.as_str()).unwrap_or("")).to_string(),
        F::GresUsed => or_null(first.map(|n| n.gres_used.as_str()).unwrap_or("")).to_string(),
        F::OverSubscribe => "NO".to_string(),
        F::Timestamp => match first.and_then(|n| n.reason_time) {
            Some(t) if t != 0 => units::format_timestamp(t),
            _ => "Unknown".to_string(),
        },
        F::PrioJobFactor | F::PrioTier => "1".to_string(),
        F::Time => match part {
            None => na(),
            Some(p) => match p.max_time {
                None => "infinite".to_string(),
                Some(m) => secs(u64::from(m) * 60),
            },
        },
        F::DefaultTime => match part.and_then(|p| p.default_time) {
            None => na(),
            Some(m) => secs(u64::from(m) * 60),
        },
        F::Memory => min_max(r.nodes.iter().map(|n| n.real_memory_mb)),
        F::AllocMem => first.map(|n| n.alloc_mem_mb).unwrap_or(0).to_string(),
        F::PreemptMode => "OFF".to_string(),
        F::Hostnames | F::NodeList => hostlist::compress_sorted(&names),
        F::NodeAddr => {
            let addrs: Vec<&str> = r.nodes.iter().map(|n| n.addr.as_str()).collect();
            hostlist::compress(&addrs)
        }
        F::Partition => match part {
            None => na(),
            Some(p) => {
                if p.default {
                    format!("{}*", p.name)
                } else {
                    p.name.clone()
                }
            }
        },
        F::PartitionName => part.map(|p| p.name.clone()).unwrap_or_else(na),
        F::Root => part.map(|_| "no".to_string()).unwrap_or_else(na),
        F::Size => part.map(|_| "1-infinite".to_string()).unwrap_or_else(na),
        F::StateCompact => match first {
            None => na(),
            Some(n) => n.state_compact(),
        },
        F::StateLong => match first {
            None => na(),
            Some(n) => n.state_long().to_lowercase(),
        },
        F::StateComplete => match first {
            None => na(),
            Some(n) => n.state_scontrol().to_lowercase(),
        },
        F::User => user_short(first.and_then(|n| n.reason_uid)),
        F::UserLong => user_long(first.and_then(|n| n.reason_uid)),
        F::Version => first
            .and_then(|n| n.version.clone())
            .unwrap_or_else(|| "N/A".to_string()),
        F::Cluster => cluster.to_string(),
        F::Weight => min_max(r.nodes.iter().map(|n| n.weight)),
        // gsched knows only CPU counts; Slurm then reports CPUs sockets of one core.
        F::Sockets => min_max(r.nodes.iter().map(|n| n.cpus)),
        F::Cores | F::Threads => "1".to_string(),
        F::Sct => format!("{}:1:1", min_max(r.nodes.iter().map(|n| n.cpus))),
        F::Port => first.map(|n| n.port).unwrap_or(slurmd_port).to_string(),
        F::Comment | F::Extra => "(null)".to_string(),
        F::Invalid => String::new(),
    }
}

/// Renders the records (header unless `-h`).
pub fn render(p: &Params, recs: &[Record], cluster: &str, slurmd_port: u16) -> String {
    let part_width = recs
        .iter()
        .filter_map(|r| r.part)
        .map(|p| p.name.len() + usize::from(p.default))
        .fold(MIN_FIELD, usize::max);
    let node_width = recs
        .iter()
        .map(|r| {
            let names: Vec<&str> = r.nodes.iter().map(|n| n.name.as_str()).collect();
            hostlist::compress_sorted(&names).len()
        })
        .fold(MIN_FIELD, usize::max);
    let width_of = |f: &Field| -> usize {
        match f.kind {
            F::Partition | F::PartitionName if p.part_auto || f.auto => part_width,
            F::NodeList | F::Hostnames if p.node_auto || f.auto => node_width,
            _ => f.width,
        }
    };
    let mut s = String::new();
    if !p.no_header {
        s.push_str(&p.format.line(|f| {
            let (h, cut) = header(f.kind);
            print_field(h, width_of(f), f.right, cut)
        }));
    }
    for r in recs {
        s.push_str(&p.format.line(|f| {
            let mut v = value(f.kind, r, cluster, slurmd_port);
            let w = width_of(f);
            // A default partition keeps its '*' even when the name is cut.
            if f.kind == F::Partition && w > 0 && v.len() > w && v.ends_with('*') {
                v = format!("{}*", &v[..w - 1]);
            }
            print_field(&v, w, f.right, true)
        }));
    }
    s
}

/// The whole listing for one query.
pub fn listing(
    p: &Params,
    parts: &[PartitionInfo],
    nodes: &[NodeInfo],
    cluster: &str,
    slurmd_port: u16,
) -> String {
    let (shown_parts, shown_nodes);
    let (parts, nodes) = if p.all || !parts.iter().any(|x| x.unlisted) {
        (parts, nodes)
    } else {
        let hidden: Vec<&str> = parts
            .iter()
            .filter(|x| x.unlisted)
            .map(|x| x.name.as_str())
            .collect();
        shown_parts = parts
            .iter()
            .filter(|x| !x.unlisted)
            .cloned()
            .collect::<Vec<_>>();
        shown_nodes = nodes
            .iter()
            .filter(|n| {
                n.partitions.is_empty()
                    || n.partitions.iter().any(|x| !hidden.contains(&x.as_str()))
            })
            .map(|n| {
                let mut n = n.clone();
                n.partitions.retain(|x| !hidden.contains(&x.as_str()));
                n
            })
            .collect::<Vec<_>>();
        (&shown_parts[..], &shown_nodes[..])
    };
    if let Some(m) = p.mime {
        // -p and -n narrow the dump (Slurm 22.05 dumps everything; later releases filter).
        let parts: Vec<PartitionInfo> = parts
            .iter()
            .filter(|x| p.partitions.as_ref().is_none_or(|l| l.contains(&x.name)))
            .cloned()
            .collect();
        let nodes: Vec<NodeInfo> = nodes
            .iter()
            .filter(|n| p.nodes.as_ref().is_none_or(|l| l.contains(&n.name)))
            .filter(|n| {
                p.partitions
                    .as_ref()
                    .is_none_or(|l| n.partitions.iter().any(|x| l.contains(x)))
            })
            .cloned()
            .collect();
        return m.render(&crate::slurm_json::nodes_and_partitions(&nodes, &parts));
    }
    let mut recs = build_records(p, parts, nodes);
    let default_sort = if p.node_mode { "N" } else { "#P,-t" };
    sort_records(&mut recs, p.sort.as_deref().unwrap_or(default_sort));
    render(p, &recs, cluster, slurmd_port)
}

/// `sinfo -T`: one line per reservation, in Slurm's layout (the name column as wide as the
/// longest name, at least 9).
pub fn reservation_listing(
    r: &gsched_proto::resv::ReservationsResponse,
    no_header: bool,
) -> String {
    let w = r
        .reservations
        .iter()
        .map(|x| x.name.len())
        .max()
        .unwrap_or(0)
        .max(9);
    let mut s = String::new();
    let mut line = |a: &str, b: &str, c: &str, d: &str, e: &str, f: &str| {
        s.push_str(&format!(
            "{a:<w$}  {b:>8}  {c:>19}  {d:>19}  {e:>11}  {f}\n"
        ));
    };
    if !no_header {
        line(
            "RESV_NAME",
            "STATE",
            "START_TIME",
            "END_TIME",
            "DURATION",
            "NODELIST",
        );
    }
    for x in &r.reservations {
        line(
            &x.name,
            x.state(r.now),
            &common::make_time_str(x.start_time),
            &common::make_time_str(x.end_time),
            &gsched_proto::units::format_secs_scontrol((x.end_time - x.start_time).max(0) as u64),
            &hostlist::compress(&x.nodes),
        );
    }
    s
}

/// `gsinfo` entry point.
pub fn main(args: Vec<String>) -> i32 {
    common::run_main(&args, "sinfo", run)
}

fn run(prog: &str, args: &[String]) -> Result<i32, Fail> {
    let Some(p) = parse_args(prog, args, &common::env_var)?.or_print() else {
        return Ok(0);
    };
    for e in &p.format.errors {
        if e.starts_with("Invalid node") {
            common::err_line(e);
        } else {
            common::err_line(&format!("{prog}: error: {e}"));
        }
    }
    let (cfg, client) = common::connect(prog, p.clusters.as_deref())?;
    if p.prices || p.lowload {
        let r: gsched_proto::api::PricesResponse = client
            .get(paths::PRICES)
            .map_err(|e| Fail::error(prog, common::client_error_text(&e)))?;
        if let Some(m) = p.mime {
            let v = serde_json::to_value(&r).unwrap_or_default();
            common::out(&m.render(&crate::slurm_json::Data::from_json(&v)));
            return Ok(0);
        }
        if p.prices {
            common::out(&crate::prices::render_prices(&r));
        }
        if p.lowload {
            common::out(&crate::prices::render_lowload(&r));
        }
        return Ok(0);
    }
    let mut code = 0;
    if p.reservation {
        return match client.get::<gsched_proto::resv::ReservationsResponse>(paths::RESERVATIONS) {
            Ok(r) => {
                common::out(&reservation_listing(&r, p.no_header));
                Ok(0)
            }
            Err(e) => {
                common::err_line(&format!(
                    "slurm_load_reservations: {}",
                    common::client_error_text(&e)
                ));
                Ok(1)
            }
        };
    }
    let dated = !p.no_header && (p.iterate.is_some() || p.verbose > 0 || p.long);
    common::repeat(p.iterate, dated, || {
        let parts = client.get::<PartitionsResponse>(paths::PARTITIONS);
        let nodes = client.get::<NodesResponse>(paths::NODES);
        match (parts, nodes) {
            (Ok(parts), Ok(nodes)) => common::out(&listing(
                &p,
                &parts.partitions,
                &nodes.nodes,
                &cfg.cluster_name,
                cfg.slurmd_port,
            )),
            (Err(e), _) => {
                common::err_line(&format!(
                    "slurm_load_partitions: {}",
                    common::client_error_text(&e)
                ));
                code = 1;
            }
            (_, Err(e)) => {
                common::err_line(&format!(
                    "slurm_load_node: {}",
                    common::client_error_text(&e)
                ));
                code = 1;
            }
        }
        Ok(())
    })?;
    Ok(code)
}

pub fn usage_text() -> String {
    "Usage: sinfo [-adelNRrsTv] [-i seconds] [-t states] [-p partition] [-n nodes]\n\
     \x20            [-S fields] [-o format] [-O Format] [--federation] [--local]\n\
     \x20            [--json|--yaml]\n"
        .to_string()
}

pub fn help_text() -> String {
    "Usage: sinfo [OPTIONS]\n\
     \x20 -a, --all                  show all partitions (including hidden and those\n\
     \x20                            not accessible)\n\
     \x20 -d, --dead                 show only non-responding nodes\n\
     \x20 -e, --exact                group nodes only on exact match of configuration\n\
     \x20     --federation           Report federated information if a member of one\n\
     \x20 -h, --noheader             no headers on output\n\
     \x20 --hide                     do not show hidden or non-accessible partitions\n\
     \x20 -i, --iterate=seconds      specify an iteration period\n\
     \x20     --json                 Produce JSON output\n\
     \x20     --local                show only local cluster in a federation.\n\
     \x20                            Overrides --federation.\n\
     \x20 -l, --long                 long output - displays more information\n\
     \x20     --lowload              (gsched) learned low-load hours of the week\n\
     \x20 -M, --clusters=names       clusters to issue commands to (only the local\n\
     \x20                            cluster here).\n\
     \x20 -n, --nodes=NODES          report on specific node(s)\n\
     \x20 --noconvert                don't convert units from their original type\n\
     \x20                            (e.g. 2048M won't be converted to 2G).\n\
     \x20 -N, --Node                 Node-centric format\n\
     \x20 -o, --format=format        format specification\n\
     \x20 -O, --Format=format        long format specification\n\
     \x20 -p, --partition=PARTITION  report on specific partition\n\
     \x20 -r, --responding           report only responding nodes\n\
     \x20     --prices               (gsched) prices and price windows of the next 24 h\n\
     \x20 -R, --list-reasons         list reason nodes are down or drained\n\
     \x20 -s, --summarize            report state summary only\n\
     \x20 -S, --sort=fields          comma separated list of fields to sort on\n\
     \x20 -t, --states=node_state    specify the what states of nodes to view\n\
     \x20 -v, --verbose              verbosity level\n\
     \x20 -T, --reservation          show only reservation information\n\
     \x20 -V, --version              output version information and exit\n\
     \x20     --yaml                 Produce YAML output\n\
     \n\
     Help options:\n\
     \x20 --help                     show this help message\n\
     \x20 --usage                    display brief usage message\n"
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn node(name: &str, base: NodeBaseState, drain: bool) -> NodeInfo {
        NodeInfo {
            gres_used: String::new(),
            name: name.into(),
            addr: name.into(),
            port: 6818,
            cpus: 4,
            real_memory_mb: 8000,
            alloc_cpus: match base {
                NodeBaseState::Allocated => 4,
                NodeBaseState::Mixed => 2,
                _ => 0,
            },
            alloc_mem_mb: 0,
            features: vec![],
            gres: String::new(),
            base,
            drain,
            not_responding: false,
            reason: drain.then(|| "maintenance".to_string()),
            reason_time: drain.then_some(1_700_000_000),
            reason_uid: drain.then_some(0),
            partitions: vec!["debug".into()],
            boot_time: None,
            slurmd_start_time: None,
            version: Some("0.1.0".into()),
            weight: 1,
            life: Default::default(),
        }
    }

    fn part(name: &str, nodes: &[&str], default: bool) -> PartitionInfo {
        PartitionInfo {
            name: name.into(),
            nodes: nodes.iter().map(|s| s.to_string()).collect(),
            default,
            max_time: None,
            default_time: None,
            state: PartitionStateInfo::Up,
            total_cpus: 4 * nodes.len() as u32,
            total_nodes: nodes.len() as u32,
            ..Default::default()
        }
    }

    fn params(args: &[&str]) -> Params {
        let a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        match parse_args("sinfo", &a, &|_| None).unwrap() {
            Parsed::Run(p) => *p,
            Parsed::Print(_) => panic!(),
        }
    }

    fn cluster() -> (Vec<PartitionInfo>, Vec<NodeInfo>) {
        let nodes = vec![
            node("n1", NodeBaseState::Idle, false),
            node("n2", NodeBaseState::Idle, false),
            node("n3", NodeBaseState::Allocated, false),
            node("n4", NodeBaseState::Idle, true),
            node("n5", NodeBaseState::Mixed, false),
        ];
        let mut long = part("long", &["n3", "n4", "n5"], false);
        long.max_time = Some(2 * 24 * 60 + 90);
        long.state = PartitionStateInfo::Inactive;
        let parts = vec![
            part("debug", &["n1", "n2", "n3", "n4", "n5"], true),
            long,
            part("empty", &[], false),
        ];
        (parts, nodes)
    }

    #[test]
    fn default_listing_snapshot() {
        let (parts, nodes) = cluster();
        let out = listing(&params(&[]), &parts, &nodes, "c", 6818);
        assert_eq!(
            out,
            "PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\n\
             debug*       up   infinite      1  drain n4\n\
             debug*       up   infinite      1    mix n5\n\
             debug*       up   infinite      1  alloc n3\n\
             debug*       up   infinite      2   idle n[1-2]\n\
             long      inact 2-01:30:00      1  drain n4\n\
             long      inact 2-01:30:00      1    mix n5\n\
             long      inact 2-01:30:00      1  alloc n3\n\
             empty        up   infinite      0    n/a \n"
        );
    }

    #[test]
    fn summary_node_and_reason_views() {
        let (parts, nodes) = cluster();
        let out = listing(&params(&["-s"]), &parts, &nodes, "c", 6818);
        assert_eq!(
            out,
            "PARTITION AVAIL  TIMELIMIT   NODES(A/I/O/T) NODELIST\n\
             debug*       up   infinite          2/2/1/5 n[1-5]\n\
             long      inact 2-01:30:00          2/0/1/3 n[3-5]\n\
             empty        up   infinite          0/0/0/0 \n"
        );
        let out = listing(&params(&["-N", "-p", "long"]), &parts, &nodes, "c", 6818);
        assert_eq!(
            out,
            "NODELIST   NODES PARTITION STATE \n\
             n3             1      long alloc \n\
             n4             1      long drain \n\
             n5             1      long mix   \n"
        );
        let out = listing(&params(&["-R"]), &parts, &nodes, "c", 6818);
        let when = units::format_timestamp(1_700_000_000);
        assert_eq!(
            out,
            format!(
                "REASON               USER      TIMESTAMP           NODELIST\n\
                 maintenance          root      {when} n4\n"
            )
        );
    }

    #[test]
    fn formats_and_filters() {
        let (parts, nodes) = cluster();
        let out = listing(
            &params(&["-h", "-o", "%P %c %m %C %t %N", "-t", "idle"]),
            &parts,
            &nodes,
            "c",
            6818,
        );
        // "idle" matches idle nodes, including the drained one (base state IDLE), as in Slurm.
        assert_eq!(
            out,
            "debug* 4 8000 0/0/4/4 drain n4\n\
             debug* 4 8000 0/8/0/8 idle n[1-2]\n\
             long 4 8000 0/0/4/4 drain n4\n\
             empty 0 0 0/0/0/0 n/a \n"
        );
        let out = listing(
            &params(&["-h", "-o", "%R", "-p", "debug"]),
            &parts,
            &nodes,
            "c",
            6818,
        );
        assert_eq!(out, "debug\n");
        let out = listing(
            &params(&["-h", "-o", "%#P|%N", "-t", "alloc"]),
            &parts,
            &nodes,
            "c",
            6818,
        );
        assert_eq!(out, "debug*   |n[3,5]\nlong     |n[3,5]\nempty    |\n");
        let out = listing(
            &params(&["-h", "-O", "partition:8,nodeaiot:.12"]),
            &parts[..1],
            &nodes,
            "c",
            6818,
        );
        assert_eq!(out, "debug*       2/2/1/5\n");
    }

    #[test]
    fn long_listing_defaults() {
        let (parts, nodes) = cluster();
        let out = listing(&params(&["-l", "-p", "empty"]), &parts, &nodes, "c", 6818);
        assert_eq!(
            out,
            "PARTITION AVAIL  TIMELIMIT   JOB_SIZE ROOT OVERSUBS     GROUPS  NODES       STATE NODELIST\n\
             empty        up   infinite 1-infinite   no       NO        all      0         n/a \n"
        );
    }

    #[test]
    fn times_past_a_year_are_printed() {
        assert_eq!(secs(0), "0:00");
        assert_eq!(secs(3600), "1:00:00");
        assert_eq!(secs(365 * 86_400), "365-00:00:00");
        assert_eq!(secs(400 * 86_400 + 61), "400-00:01:01");
        assert_eq!(secs(u64::from(u32::MAX) * 60), "2982616-04:15:00");
    }

    #[test]
    fn state_names() {
        assert_eq!(
            parse_node_state("idle"),
            Some(StateSel::Base(NodeBaseState::Idle))
        );
        assert_eq!(parse_node_state("ALLOC"), Some(StateSel::Allocated));
        assert_eq!(parse_node_state("drain"), Some(StateSel::Drain));
        assert_eq!(parse_node_state("DRNG"), Some(StateSel::Draining));
        assert_eq!(
            parse_node_state("mix"),
            Some(StateSel::Base(NodeBaseState::Mixed))
        );
        assert_eq!(parse_node_state("fail"), Some(StateSel::Never));
        assert_eq!(parse_node_state("bogus"), None);
        let e =
            parse_args("sinfo", &["-t".to_string(), "bogus".to_string()], &|_| None).unwrap_err();
        assert_eq!(e.lines[0], "sinfo: error: Bad state string: \"bogus\"");
        assert_eq!(e.code, 1);
    }

    #[test]
    fn command_line() {
        let a = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(
            matches!(parse_args("sinfo", &a(&["-V"]), &|_| None).unwrap(), Parsed::Print(s) if s == "slurm 22.05.8\n")
        );
        let e = parse_args("sinfo", &a(&["--foo"]), &|_| None).unwrap_err();
        assert_eq!(e.lines[0], "sinfo: unrecognized option '--foo'");
        let Parsed::Run(p) = parse_args("sinfo", &a(&["--yaml"]), &|_| None).unwrap() else {
            panic!()
        };
        assert_eq!(p.mime, Some(crate::slurm_json::Mime::Yaml));
        let Parsed::Run(p) = parse_args("sinfo", &a(&["-T"]), &|_| None).unwrap() else {
            panic!()
        };
        assert!(p.reservation);
        let env = |k: &str| (k == "SINFO_FORMAT").then(|| "%P".to_string());
        let Parsed::Run(p) = parse_args("sinfo", &[], &env).unwrap() else {
            panic!()
        };
        assert_eq!(p.format, parse_format("%P"));
    }

    #[test]
    fn reservation_listing_is_slurms_layout() {
        let r = gsched_proto::resv::ReservationsResponse {
            now: 1_000,
            reservations: vec![gsched_proto::resv::ReservationInfo {
                name: "maint".into(),
                start_time: 500,
                end_time: 500 + 3600,
                nodes: vec!["n1".into(), "n2".into()],
                flags: vec!["MAINT".into()],
                users: vec!["root".into()],
                cpus: 4,
            }],
        };
        let text = reservation_listing(&r, false);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "RESV_NAME     STATE           START_TIME             END_TIME     DURATION  NODELIST"
        );
        assert!(lines[1].starts_with("maint        ACTIVE  "), "{text}");
        assert!(lines[1].ends_with("     01:00:00  n[1-2]"), "{text}");
        assert_eq!(reservation_listing(&r, true).lines().count(), 1);
    }
}
