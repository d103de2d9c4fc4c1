//! `gsacct` (`sacct`): accounting records of jobs, finished ones of any age included, answered
//! by the controller from its own store (`/v1/jobs/history`), so no accounting database has
//! to be set up. Clients (submitit, snakemake, Parsl, Open OnDemand) parse this output: the
//! field names, widths, `+` truncation, the `-P`/`-p` layouts, `CANCELLED by <uid>` and the
//! `N.batch` step lines follow Slurm 22.05's sacct.
//!
//! Every job that started has its batch script as a step (`N.batch`), followed by the steps
//! `gsrun` ran in it (`N.0`, `N.1`, ..., from `/v1/jobs/steps/query`). `MaxRSS`, `TotalCPU`, `UserCPU` and `SystemCPU` come from the job's cgroup
//! (nodes with a `cgroup.conf`). Fields gsched does not measure (disk I/O, energy, per-task
//! usage) print empty, as sacct prints a value its accounting did not gather.

use crate::arrays;
use crate::common::{self, split_list, Fail};
use crate::getopt::{self, HasArg, Opt, Ordering};
use gsched_proto::api::{paths, HistoryQuery, JobsResponse};
use gsched_proto::begin;
use gsched_proto::hostlist;
use gsched_proto::job::{JobInfo, JobState};
use gsched_proto::step::StepInfo;
use gsched_proto::units;
use std::collections::HashMap;

use HasArg::{No, Required as Req};

pub const OPTIONS: &[Opt] = &[
    Opt::new("allusers", Some('a'), &["allusers"], No),
    Opt::new("accounts", Some('A'), &["accounts", "account"], Req),
    Opt::new("array", None, &["array"], No),
    Opt::new("brief", Some('b'), &["brief"], No),
    Opt::new("batch-script", Some('B'), &["batch-script"], No),
    Opt::new("completion", Some('c'), &["completion"], No),
    Opt::new("duplicates", Some('D'), &["duplicates"], No),
    Opt::new("delimiter", None, &["delimiter"], Req),
    Opt::new("helpformat", Some('e'), &["helpformat"], No),
    Opt::new("endtime", Some('E'), &["endtime"], Req),
    Opt::new("env-vars", None, &["env-vars"], No),
    Opt::new("file", Some('f'), &["file"], Req),
    Opt::new("flags", Some('F'), &["flags"], Req),
    Opt::new("gid", Some('g'), &["gid", "group"], Req),
    Opt::new("help", Some('h'), &["help"], No),
    Opt::new("nnodes", Some('i'), &["nnodes"], Req),
    Opt::new("ncpus", Some('I'), &["ncpus"], Req),
    Opt::new("jobs", Some('j'), &["jobs"], Req),
    Opt::new("json", None, &["json"], No),
    Opt::new("timelimit-min", Some('k'), &["timelimit-min"], Req),
    Opt::new("timelimit-max", Some('K'), &["timelimit-max"], Req),
    Opt::new("long", Some('l'), &["long"], No),
    Opt::new("allclusters", Some('L'), &["allclusters"], No),
    Opt::new("clusters", Some('M'), &["clusters", "cluster"], Req),
    Opt::new("noheader", Some('n'), &["noheader"], No),
    Opt::new("name", None, &["name"], Req),
    Opt::new("noconvert", None, &["noconvert"], No),
    Opt::new("nodelist", Some('N'), &["nodelist"], Req),
    Opt::new("format", Some('o'), &["format", "fields"], Req),
    Opt::new("parsable", Some('p'), &["parsable"], No),
    Opt::new("parsable2", Some('P'), &["parsable2"], No),
    Opt::new("qos", Some('q'), &["qos"], Req),
    Opt::new("partition", Some('r'), &["partition"], Req),
    Opt::new("reason", Some('R'), &["reason"], Req),
    Opt::new("state", Some('s'), &["state"], Req),
    Opt::new("starttime", Some('S'), &["starttime"], Req),
    Opt::new("truncate", Some('T'), &["truncate"], No),
    Opt::new("uid", Some('u'), &["uid", "user"], Req),
    Opt::new("units", None, &["units"], Req),
    Opt::new("usage", None, &["usage"], No),
    Opt::new("verbose", Some('v'), &["verbose"], No),
    Opt::new("version", Some('V'), &["version"], No),
    Opt::new("wckeys", Some('W'), &["wckeys"], Req),
    Opt::new("whole-hetjob", None, &["whole-hetjob"], HasArg::Optional),
    Opt::new("associations", Some('x'), &["associations"], Req),
    Opt::new("allocations", Some('X'), &["allocations"], No),
    Opt::new("yaml", None, &["yaml"], No),
    // gsched extensions.
    Opt::new("cost-report", None, &["cost-report"], No),
];

/// Options sacct has that gsched does not implement: refused, never ignored.
const NOT_SUPPORTED: &[&str] = &[
    "completion",
    "duplicates",
    "env-vars",
    "file",
    "flags",
    "wckeys",
    "whole-hetjob",
    "associations",
];

const DEFAULT_FIELDS: &str = "jobid,jobname,partition,account,alloccpus,state,exitcode";
const BRIEF_FIELDS: &str = "jobid,state,exitcode";
const LONG_FIELDS: &str = "jobid,jobidraw,jobname,partition,maxvmsize,maxvmsizenode,maxvmsizetask,avevmsize,maxrss,maxrssnode,maxrsstask,averss,maxpages,maxpagesnode,maxpagestask,avepages,mincpu,mincpunode,mincputask,avecpu,ntasks,alloccpus,elapsed,state,exitcode,avecpufreq,reqcpufreqmin,reqcpufreqmax,reqcpufreqgov,reqmem,consumedenergy,maxdiskread,maxdiskreadnode,maxdiskreadtask,avediskread,maxdiskwrite,maxdiskwritenode,maxdiskwritetask,avediskwrite,reqtres,alloctres,tresusageinave,tresusageinmax,tresusageinmaxn,tresusageinmaxt,tresusageinmin,tresusageinminn,tresusageinmint,tresusageintot,tresusageoutmax,tresusageoutmaxn,tresusageoutmaxt,tresusageoutave,tresusageouttot";

/// sacct's fields in its order (the first whose name starts with what the user typed wins)
/// with their default widths (negative: left-justified).
const FIELDS: &[(&str, i32)] = &[
    ("Account", 10),
    ("AdminComment", 15),
    ("AllocCPUS", 10),
    ("AllocGRES", 12),
    ("AllocNodes", 10),
    ("AllocTRES", 10),
    ("AssocID", 7),
    ("AveCPU", 10),
    ("AveCPUFreq", 10),
    ("AveDiskRead", 14),
    ("AveDiskWrite", 14),
    ("AvePages", 10),
    ("AveRSS", 10),
    ("AveVMSize", 10),
    ("BlockID", 16),
    ("Cluster", 10),
    ("Comment", 14),
    ("Constraints", 19),
    ("ConsumedEnergy", 14),
    ("ConsumedEnergyRaw", 17),
    ("CPUTime", 10),
    ("CPUTimeRAW", 10),
    ("DerivedExitCode", 15),
    ("Elapsed", 10),
    ("ElapsedRaw", 10),
    ("Eligible", 19),
    ("End", 19),
    ("ExitCode", 8),
    ("Flags", 19),
    ("GID", 6),
    ("Group", 9),
    ("JobID", -12),
    ("JobIDRaw", -12),
    ("JobName", 10),
    ("Layout", 9),
    ("MaxDiskRead", 12),
    ("MaxDiskReadNode", 15),
    ("MaxDiskReadTask", 15),
    ("MaxDiskWrite", 12),
    ("MaxDiskWriteNode", 16),
    ("MaxDiskWriteTask", 16),
    ("MaxPages", 8),
    ("MaxPagesNode", 12),
    ("MaxPagesTask", 14),
    ("MaxRSS", 10),
    ("MaxRSSNode", 10),
    ("MaxRSSTask", 10),
    ("MaxVMSize", 10),
    ("MaxVMSizeNode", 14),
    ("MaxVMSizeTask", 14),
    ("McsLabel", 12),
    ("MinCPU", 10),
    ("MinCPUNode", 10),
    ("MinCPUTask", 10),
    ("NCPUS", 10),
    ("NNodes", 8),
    ("NodeList", 15),
    ("NTasks", 8),
    ("Priority", 10),
    ("Partition", 10),
    ("QOS", 10),
    ("QOSRAW", 6),
    ("Reason", 22),
    ("ReqCPUFreq", 10),
    ("ReqCPUFreqMin", 13),
    ("ReqCPUFreqMax", 13),
    ("ReqCPUFreqGov", 13),
    ("ReqCPUS", 8),
    ("ReqGRES", 12),
    ("ReqMem", 10),
    ("ReqNodes", 8),
    ("ReqTRES", 10),
    ("Reservation", 20),
    ("ReservationId", 8),
    ("Reserved", 10),
    ("ResvCPU", 10),
    ("ResvCPURAW", 10),
    ("Start", 19),
    ("State", 10),
    ("Submit", 19),
    ("SubmitLine", 20),
    ("Suspended", 10),
    ("SystemCPU", 10),
    ("SystemComment", 15),
    ("Timelimit", 10),
    ("TimelimitRaw", 10),
    ("TotalCPU", 10),
    ("TRESUsageInAve", 14),
    ("TRESUsageInMax", 14),
    ("TRESUsageInMaxNode", 18),
    ("TRESUsageInMaxTask", 18),
    ("TRESUsageInMin", 14),
    ("TRESUsageInMinNode", 18),
    ("TRESUsageInMinTask", 18),
    ("TRESUsageInTot", 14),
    ("TRESUsageOutAve", 15),
    ("TRESUsageOutMax", 15),
    ("TRESUsageOutMaxNode", 19),
    ("TRESUsageOutMaxTask", 19),
    ("TRESUsageOutMin", 15),
    ("TRESUsageOutMinNode", 19),
    ("TRESUsageOutMinTask", 19),
    ("TRESUsageOutTot", 15),
    ("UID", 6),
    ("User", 9),
    ("UserCPU", 10),
    ("WCKey", 10),
    ("WCKeyID", 10),
    ("WorkDir", 20),
    // gsched: estimated energy and its cost (time-of-use prices).
    ("EnergyKWh", 10),
    ("Cost", 10),
];

/// One output column: a field of [`FIELDS`] and its width.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub name: &'static str,
    pub width: i32,
}

/// How rows are separated.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Layout {
    /// Padded columns, a header and a line of dashes.
    #[default]
    Columns,
    /// `-p`: every value followed by the delimiter.
    Parsable,
    /// `-P`: values joined by the delimiter.
    Parsable2,
}

/// A parsed command line (gsstat builds one for its columns and layout).
#[derive(Debug, Clone, Default)]
pub struct Params {
    pub columns: Vec<Column>,
    pub layout: Layout,
    pub delimiter: String,
    pub no_header: bool,
    /// `-X`: no step lines.
    pub allocations: bool,
    /// `--array`: one line per pending array task.
    pub expand_arrays: bool,
    /// `-B`: print each job's batch script instead of fields.
    pub batch_script: bool,
    /// `-T`: start and end times cut to the window.
    pub truncate: bool,
    /// `--units`: the unit memory is shown in.
    pub units: Option<char>,
    /// `-j N.batch`-style step selections, by job id: only these steps print (no job line).
    pub steps_only: HashMap<(u32, Option<u32>), Vec<String>>,
    pub query: HistoryQuery,
    pub clusters: Option<String>,
    /// `--cost-report` (gsched): estimated energy and cost per user and account.
    pub cost_report: bool,
    /// `--json`/`--yaml`: Slurm 22.05's data dump of the jobs (`crate::slurm_json`).
    pub mime: Option<crate::slurm_json::Mime>,
    /// Filters sacct applies that the store query does not: `-g`, `-i`, `-I`, `-k`/`-K`,
    /// `-R`.
    pub post: PostFilter,
}

/// `-g/--gid`, `-i/--nnodes`, `-I/--ncpus`, `-k/--timelimit-min` with `-K/--timelimit-max`
/// and `-R/--reason`, applied to the jobs the controller returned.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PostFilter {
    pub gids: Option<Vec<u32>>,
    /// `(min, max)`; one number means exactly that many.
    pub nnodes: Option<(u32, u32)>,
    pub ncpus: Option<(u32, u32)>,
    /// Minutes; `-K` alone is ignored, as sacct does.
    pub timelimit: Option<(u32, Option<u32>)>,
    pub reasons: Option<Vec<String>>,
}

impl PostFilter {
    pub fn matches(&self, j: &JobInfo) -> bool {
        let within = |r: Option<(u32, u32)>, v: u32| r.is_none_or(|(lo, hi)| lo <= v && v <= hi);
        self.gids.as_ref().is_none_or(|g| g.contains(&j.group_id))
            && within(self.nnodes, j.num_nodes)
            && within(self.ncpus, j.num_cpus)
            && self.timelimit.is_none_or(|(lo, hi)| {
                let limit = j.time_limit.unwrap_or(u32::MAX);
                match hi {
                    None => limit == lo,
                    Some(hi) => lo <= limit && limit <= hi,
                }
            })
            && self
                .reasons
                .as_ref()
                .is_none_or(|r| r.iter().any(|x| x.eq_ignore_ascii_case(j.reason.as_str())))
    }
}

/// `N` or `N-M` (sacct's `get_resource_arg_range`).
fn count_range(prog: &str, what: &str, v: &str) -> Result<(u32, u32), Fail> {
    let bad = || Fail::error(prog, format!("invalid {what} range: {v}"));
    let (lo, hi) = match v.split_once('-') {
        Some((a, b)) => (a.trim(), b.trim()),
        None => (v.trim(), v.trim()),
    };
    let lo: u32 = lo.parse().map_err(|_| bad())?;
    let hi: u32 = hi.parse().map_err(|_| bad())?;
    if hi < lo {
        return Err(bad());
    }
    Ok((lo, hi))
}

/// Resolves a `-o` list into columns; unknown names are an error like sacct's.
pub fn parse_fields(prog: &str, list: &str) -> Result<Vec<Column>, Fail> {
    parse_fields_in(prog, list, FIELDS)
}

/// [`parse_fields`] over another command's field table (gsstat's).
pub(crate) fn parse_fields_in(
    prog: &str,
    list: &str,
    fields: &'static [(&'static str, i32)],
) -> Result<Vec<Column>, Fail> {
    let mut out = Vec::new();
    for tok in list.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let (name, width) = match tok.split_once('%') {
            Some((n, w)) => {
                let w: i32 = w.parse().map_err(|_| {
                    Fail::error(prog, format!("Invalid field requested: \"{tok}\""))
                })?;
                (n, Some(w))
            }
            None => (tok, None),
        };
        let Some(&(fname, fwidth)) = fields
            .iter()
            .find(|(f, _)| f.len() >= name.len() && f[..name.len()].eq_ignore_ascii_case(name))
        else {
            return Err(Fail::raw(
                1,
                vec![format!("Invalid field requested: \"{name}\"")],
            ));
        };
        if name.is_empty() {
            return Err(Fail::raw(
                1,
                vec![format!("Invalid field requested: \"{tok}\"")],
            ));
        }
        out.push(Column {
            name: fname,
            width: width.unwrap_or(fwidth),
        });
    }
    Ok(out)
}

/// The `-j` list: `N`, `N_K`, `N.batch`, `N_K.batch`.
pub(crate) type JobSel = ((u32, Option<u32>), Option<String>);

pub(crate) fn parse_jobs(prog: &str, s: &str) -> Result<Vec<JobSel>, Fail> {
    let mut out = Vec::new();
    for tok in split_list(s) {
        let (job, step) = match tok.split_once('.') {
            Some((j, st)) => (j, Some(st.to_string())),
            None => (tok.as_str(), None),
        };
        let bad = || Fail::error(prog, format!("Invalid job id: {tok}"));
        if let Some((n, k)) = gsched_proto::het::parse_component_ref(job) {
            // `N+K`: component K of het job N, whose own id is N + K.
            let id = n.checked_add(k).ok_or_else(bad)?;
            out.push(((id, None), step));
            continue;
        }
        let (id, task) = match job.split_once('_') {
            Some((a, k)) => (a, Some(k.parse::<u32>().map_err(|_| bad())?)),
            None => (job, None),
        };
        let id: u32 = id.parse().map_err(|_| bad())?;
        if id == 0 {
            return Err(bad());
        }
        if let Some(st) = &step {
            if st != "batch" && st.parse::<u32>().is_err() && st != "extern" {
                return Err(bad());
            }
        }
        out.push(((id, task), step));
    }
    Ok(out)
}

fn parse_states(prog: &str, s: &str) -> Result<Vec<JobState>, Fail> {
    let mut out = Vec::new();
    for tok in split_list(s) {
        match JobState::parse(&tok) {
            Some(st) => out.push(st),
            None => {
                return Err(Fail::error(prog, format!("Invalid state: {tok}")));
            }
        }
    }
    Ok(out)
}

/// Parses the command line (`env` gives `SACCT_FORMAT`), for the calling `uid` at `now`.
pub fn parse_args(
    prog: &str,
    args: &[String],
    env: &dyn Fn(&str) -> Option<String>,
    uid: u32,
    now: i64,
) -> Result<common::Parsed<Params>, Fail> {
    let split = getopt::parse_split(args, OPTIONS, Ordering::Permute);
    if let Some(e) = &split.err {
        return Err(Fail::usage(prog, e, 1));
    }
    let mut format: Option<String> = env("SACCT_FORMAT").filter(|f| !f.trim().is_empty());
    let mut brief = false;
    let mut long = false;
    let mut layout = Layout::Columns;
    let mut delimiter: Option<String> = None;
    let mut p = Params {
        columns: Vec::new(),
        layout,
        delimiter: "|".into(),
        no_header: false,
        allocations: false,
        expand_arrays: false,
        batch_script: false,
        truncate: false,
        units: None,
        steps_only: HashMap::new(),
        query: HistoryQuery::default(),
        clusters: None,
        cost_report: false,
        mime: None,
        post: PostFilter::default(),
    };
    let mut all_users = false;
    let mut users: Option<Vec<u32>> = None;
    let mut jobs: Vec<JobSel> = Vec::new();
    let mut start: Option<i64> = None;
    let mut end: Option<i64> = None;
    let mut timelimit: [Option<u32>; 2] = [None, None];
    for (id, arg) in split.opts {
        if let Some(text) = common::info_text(id, help_text, usage_text) {
            return Ok(common::Parsed::Print(text));
        }
        if NOT_SUPPORTED.contains(&id) {
            return Err(Fail::not_supported(prog, &format!("--{id}")));
        }
        let val = arg.unwrap_or_default();
        let time = |v: &str| {
            begin::parse_past(v, now)
                .map_err(|_| Fail::error(prog, format!("Invalid time specification: {v}")))
        };
        match id {
            "allusers" => all_users = true,
            "accounts" => p.query.accounts = split_list(&val),
            "qos" => {
                p.query.qos = split_list(&val)
                    .into_iter()
                    .map(|q| q.to_ascii_lowercase())
                    .collect()
            }
            "array" => p.expand_arrays = true,
            "brief" => brief = true,
            "batch-script" => p.batch_script = true,
            "delimiter" => delimiter = Some(val),
            "helpformat" => return Ok(common::Parsed::Print(helpformat())),
            "endtime" => end = Some(time(&val)?),
            "jobs" => jobs.extend(parse_jobs(prog, &val)?),
            "long" => long = true,
            "allclusters" => p.clusters = Some("all".into()),
            "clusters" => p.clusters = Some(val),
            "noheader" => p.no_header = true,
            "name" => p.query.filter.names = split_list(&val),
            "noconvert" => p.units = None,
            "nodelist" => {
                p.query.nodes = hostlist::expand(&val)
                    .map_err(|e| Fail::error(prog, format!("Invalid node list {val}: {e}")))?
            }
            "format" => format = Some(val),
            "parsable" => layout = Layout::Parsable,
            "parsable2" => layout = Layout::Parsable2,
            "partition" => p.query.filter.partitions = split_list(&val),
            "state" => p.query.filter.states = parse_states(prog, &val)?,
            "starttime" => start = Some(time(&val)?),
            "truncate" => p.truncate = true,
            "uid" => {
                let mut list = Vec::new();
                for u in split_list(&val) {
                    match common::resolve_uid(&u) {
                        Some(id) => list.push(id),
                        None => return Err(Fail::error(prog, format!("Invalid user id: {u}"))),
                    }
                }
                users = Some(list);
            }
            "units" => {
                let u = val.trim().to_ascii_uppercase();
                match u.as_str() {
                    "K" | "M" | "G" | "T" | "P" => p.units = u.chars().next(),
                    _ => {
                        return Err(Fail::error(
                            prog,
                            format!("Invalid unit: {val} (expected K, M, G, T or P)"),
                        ))
                    }
                }
            }
            "verbose" => {}
            "allocations" => p.allocations = true,
            "cost-report" => p.cost_report = true,
            "json" | "yaml" => p.mime = crate::slurm_json::Mime::from_option(id),
            "gid" => {
                let mut list = Vec::new();
                for g in split_list(&val) {
                    match crate::sys::resolve_gid(&g) {
                        Some(id) => list.push(id),
                        None => return Err(Fail::error(prog, format!("Invalid group id: {g}"))),
                    }
                }
                p.post.gids = Some(list);
            }
            "nnodes" => p.post.nnodes = Some(count_range(prog, "node", &val)?),
            "ncpus" => p.post.ncpus = Some(count_range(prog, "cpu", &val)?),
            "timelimit-min" | "timelimit-max" => {
                let m = units::parse_time_limit(&val)
                    .map_err(|_| Fail::error(prog, format!("Invalid time limit: {val}")))?
                    .unwrap_or(u32::MAX);
                timelimit[usize::from(id == "timelimit-max")] = Some(m);
            }
            "reason" => p.post.reasons = Some(split_list(&val)),
            _ => {}
        }
    }
    if let Some(op) = split.operands.first() {
        return Err(Fail::raw(
            1,
            vec![
                format!(
                    "{prog}: error: Unknown arguments: {}",
                    split.operands.join(" ")
                ),
                format!("Try \"{prog} --help\" for more information ({op})"),
            ],
        ));
    }
    p.post.timelimit = timelimit[0].map(|lo| (lo, timelimit[1]));
    p.layout = layout;
    if let Some(d) = delimiter {
        p.delimiter = d;
    }
    let list = if brief {
        BRIEF_FIELDS.to_string()
    } else if long {
        LONG_FIELDS.to_string()
    } else {
        format.unwrap_or_else(|| DEFAULT_FIELDS.to_string())
    };
    p.columns = parse_fields(prog, &list)?;
    // Whose jobs: the named users, everyone's with -a (and for root), else the caller's.
    p.query.filter.user_ids = match users {
        Some(u) => u,
        None if all_users || uid == 0 => Vec::new(),
        None => vec![uid],
    };
    for ((id, task), step) in &jobs {
        match task {
            Some(k) => p.query.filter.array_tasks.push((*id, *k)),
            None => p.query.filter.ids.push(*id),
        }
        if let Some(st) = step {
            p.steps_only
                .entry((*id, *task))
                .or_default()
                .push(st.clone());
        }
    }
    // sacct's window: -S defaults to today's midnight, unless jobs are named (then from the
    // start of time) or states asked for (then now); -E defaults to now.
    let states = !p.query.filter.states.is_empty();
    p.query.start = match start {
        Some(s) => Some(s),
        None if !jobs.is_empty() => None,
        None if states => Some(end.unwrap_or(now)),
        None => {
            Some(begin::parse_past("midnight", now).map_err(|e| Fail::error(prog, e.to_string()))?)
        }
    };
    p.query.end = match end {
        Some(e) => Some(e),
        None if !jobs.is_empty() && start.is_none() => None,
        None => Some(now),
    };
    if let (Some(s), Some(e)) = (p.query.start, p.query.end) {
        if s > e {
            return Err(Fail::error(
                prog,
                "Start time (-S) requested is after end time (-E).",
            ));
        }
    }
    Ok(common::Parsed::Run(p))
}

/// One output row: a job, its batch step, or one of its `gsrun` steps.
struct Row<'a> {
    job: &'a JobInfo,
    /// The controller's estimate of the job's energy and cost (gsched).
    energy: Option<&'a gsched_proto::api::JobEnergy>,
    /// The collapsed index set of a pending array record (`N_[1-3]`).
    range: Option<&'a String>,
    /// A step line (the batch step, or with `step` a gsrun step).
    batch: bool,
    step: Option<&'a StepInfo>,
}

pub(crate) fn elapsed(
    j: &JobInfo,
    now: i64,
    window: (Option<i64>, Option<i64>),
    truncate: bool,
) -> i64 {
    match j.start_time {
        None => 0,
        Some(s) => {
            let e = j.end_time.unwrap_or(now);
            if truncate {
                let s = window.0.map_or(s, |w| s.max(w));
                let e = window.1.map_or(e, |w| e.min(w));
                (e - s).max(0)
            } else {
                // Time suspended is not elapsed time (Slurm).
                (e - s - j.suspended_total(e)).max(0)
            }
        }
    }
}

fn mem_str(mb: u64, units: Option<char>) -> String {
    match units {
        None => units::format_memory_mb(mb),
        Some(u) => {
            let kb = mb as f64 * 1024.0;
            let (div, suffix) = match u {
                'K' => (1.0, 'K'),
                'M' => (1024.0, 'M'),
                'G' => (1024.0 * 1024.0, 'G'),
                'T' => (1024.0 * 1024.0 * 1024.0, 'T'),
                _ => (1024.0 * 1024.0 * 1024.0 * 1024.0, 'P'),
            };
            let v = kb / div;
            if v.fract() == 0.0 {
                format!("{}{suffix}", v as u64)
            } else {
                format!("{v:.2}{suffix}")
            }
        }
    }
}

/// A byte count as sacct prints `MaxRSS`: divided by 1024 while it divides exactly
/// (`4530176` → `4424K`), or in the `--units` unit.
pub(crate) fn bytes_str(bytes: u64, units: Option<char>) -> String {
    match units {
        None => {
            let mut v = bytes;
            let mut i = 0;
            let suffixes = ["", "K", "M", "G", "T", "P"];
            while v >= 1024 && v % 1024 == 0 && i + 1 < suffixes.len() {
                v /= 1024;
                i += 1;
            }
            format!("{v}{}", suffixes[i])
        }
        Some(u) => {
            let kb = bytes as f64 / 1024.0;
            let div = match u {
                'K' => 1.0,
                'M' => 1024.0,
                'G' => 1024.0 * 1024.0,
                'T' => 1024.0 * 1024.0 * 1024.0,
                _ => 1024.0 * 1024.0 * 1024.0 * 1024.0,
            };
            let v = kb / div;
            if v.fract() == 0.0 {
                format!("{}{u}", v as u64)
            } else {
                format!("{v:.2}{u}")
            }
        }
    }
}

/// CPU time as sacct prints `TotalCPU`/`UserCPU`/`SystemCPU`: `MM:SS.mmm` under an hour,
/// `HH:MM:SS` under a day, else `D-HH:MM:SS`.
pub(crate) fn cpu_time_str(usec: u64) -> String {
    let secs = usec / 1_000_000;
    let (d, h, m, s) = (secs / 86_400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    if d > 0 {
        format!("{d}-{h:02}:{m:02}:{s:02}")
    } else if h > 0 {
        format!("{h:02}:{m:02}:{s:02}")
    } else {
        format!("{m:02}:{s:02}.{:03}", usec % 1_000_000 / 1000)
    }
}

/// Slurm's TRES string: `billing=N,cpu=N,mem=M,node=K`.
fn tres(cpus: u32, mem_mb: u64, nodes: u32, units: Option<char>) -> String {
    let mut s = format!("billing={cpus},cpu={cpus}");
    if mem_mb > 0 {
        s.push_str(&format!(",mem={}", mem_str(mem_mb, units)));
    }
    s.push_str(&format!(",node={nodes}"));
    s
}

/// A step's TRES string: `cpu=N,mem=M,node=K`, without billing (sacct's step lines).
fn step_tres(cpus: u32, mem_mb: u64, nodes: u32, units: Option<char>) -> String {
    let t = tres(cpus, mem_mb, nodes, units);
    match t.split_once(',') {
        Some((_billing, rest)) => rest.to_string(),
        None => t,
    }
}

/// A TRES string with its GPU part appended (Slurm lists `gres/...` after the others).
fn with_gres(tres: String, gres: String) -> String {
    if gres.is_empty() {
        tres
    } else {
        format!("{tres},{gres}")
    }
}

fn date(t: Option<i64>) -> String {
    common::opt_time_str(t)
}

/// Whether the job ran: it got nodes. A job cancelled while pending has start and end times
/// (both the cancel time, as in Slurm) but no nodes, no batch step, `Start=None` and
/// `NodeList=None assigned`, as sacct shows it.
pub(crate) fn ran(j: &JobInfo) -> bool {
    j.start_time.is_some() && j.state != JobState::Pending && !j.nodes.is_empty()
}

/// The state a batch step ends in: the script's own outcome; a job cancelled or timed out
/// shows its step `CANCELLED` (the script was killed), as sacct does.
pub(crate) fn step_state(j: &JobInfo) -> String {
    if j.is_suspended() {
        return "SUSPENDED".into();
    }
    match j.state {
        JobState::Timeout | JobState::Cancelled => "CANCELLED".into(),
        JobState::Completing => "RUNNING".into(),
        s => s.long().into(),
    }
}

impl Params {
    /// The fields of a `gsrun` step line that differ from the batch step's.
    fn step_value(&self, col: &Column, row: &Row, s: &StepInfo, now: i64) -> Option<String> {
        let el = (s.end_time.unwrap_or(now) - s.start_time).max(0);
        let cpus = s.cpus();
        let nnodes = s.nodes.len() as u32;
        Some(match col.name {
            "JobID" => {
                let j = row.job;
                let base = match j.array {
                    Some(a) => format!("{}_{}", a.job_id, a.task_id),
                    None => match j.het {
                        Some(h) => h.name(),
                        None => j.job_id.to_string(),
                    },
                };
                format!("{base}.{}", s.step_id)
            }
            "JobIDRaw" => s.id_string(),
            "JobName" => s.name.clone(),
            "State" => match (s.state, s.cancelled_by) {
                (JobState::Cancelled, Some(uid)) => format!("CANCELLED by {uid}"),
                (st, _) => st.long().to_string(),
            },
            "ExitCode" => format!("{}:{}", s.exit_code, s.signal),
            "DerivedExitCode" => String::new(),
            "Start" => date(Some(s.start_time)),
            "End" => date(s.end_time),
            "Elapsed" => units::format_secs_scontrol(el as u64),
            "ElapsedRaw" => el.to_string(),
            "NodeList" => hostlist::compress(&s.nodes),
            "NNodes" | "AllocNodes" => nnodes.to_string(),
            "NTasks" => s.ntasks.to_string(),
            "AllocCPUS" | "NCPUS" | "ReqCPUS" => cpus.to_string(),
            "AllocTRES" => step_tres(cpus, 0, nnodes, self.units),
            "CPUTime" => units::format_secs_scontrol((el * cpus as i64) as u64),
            "CPUTimeRAW" => (el * cpus as i64).to_string(),
            "MaxRSS" => s
                .usage
                .and_then(|u| u.max_rss_bytes)
                .map(|b| bytes_str(b, self.units))
                .unwrap_or_default(),
            "MaxRSSNode" | "MaxRSSTask" => String::new(),
            "TotalCPU" => s
                .usage
                .and_then(|u| u.total_cpu_usec())
                .map(cpu_time_str)
                .unwrap_or_default(),
            "UserCPU" => s
                .usage
                .and_then(|u| u.user_cpu_usec)
                .map(cpu_time_str)
                .unwrap_or_default(),
            "SystemCPU" => s
                .usage
                .and_then(|u| u.system_cpu_usec)
                .map(cpu_time_str)
                .unwrap_or_default(),
            "SubmitLine" => s.command.clone(),
            _ => return None,
        })
    }

    fn value(&self, col: &Column, row: &Row, now: i64, cluster: &str) -> String {
        if let Some(s) = row.step {
            if let Some(v) = self.step_value(col, row, s, now) {
                return v;
            }
        }
        let j = row.job;
        let started = ran(j);
        let window = (self.query.start, self.query.end);
        let el = elapsed(j, now, window, self.truncate);
        let alloc_cpus = if row.batch {
            j.cpus_per_node.first().copied().unwrap_or(j.num_cpus)
        } else {
            j.num_cpus
        };
        let alloc_nodes = if row.batch { 1 } else { j.num_nodes };
        match col.name {
            "Account" => j.spec.account.clone().unwrap_or_default(),
            "QOS" => j.spec.qos.clone().unwrap_or_default(),
            "AllocCPUS" | "NCPUS" => {
                if started || !row.batch {
                    alloc_cpus.to_string()
                } else {
                    "0".into()
                }
            }
            "AllocNodes" => {
                if started {
                    alloc_nodes.to_string()
                } else {
                    "0".into()
                }
            }
            "AllocTRES" => {
                if !started {
                    return String::new();
                }
                let mem = j.mem_per_node_mb * alloc_nodes as u64;
                let t = if row.batch {
                    step_tres(alloc_cpus, mem, alloc_nodes, self.units)
                } else {
                    tres(alloc_cpus, mem, alloc_nodes, self.units)
                };
                with_gres(t, gsched_proto::gpu_tres::alloc_tres(j))
            }
            // No --cpu-freq: the job line says Unknown, the batch step 0 (Slurm 22.05).
            "ReqCPUFreq" | "ReqCPUFreqMin" | "ReqCPUFreqMax" | "ReqCPUFreqGov" => {
                if row.batch && row.step.is_none() {
                    "0".into()
                } else {
                    "Unknown".into()
                }
            }
            // Not measured (no energy plugin): 0 on step lines, as sacct shows it.
            "AveCPUFreq" | "ConsumedEnergy" | "ConsumedEnergyRaw" if row.batch => "0".into(),
            "Cluster" => cluster.to_string(),
            "Comment" => j.spec.comment.clone().unwrap_or_default(),
            "Constraints" => j.spec.constraint.clone().unwrap_or_default(),
            "CPUTime" => units::format_secs_scontrol((el * alloc_cpus as i64) as u64),
            "CPUTimeRAW" => (el * alloc_cpus as i64).to_string(),
            "DerivedExitCode" if row.batch => String::new(),
            "DerivedExitCode" | "ExitCode" => j.exit_code_string(),
            "Elapsed" => units::format_secs_scontrol(el as u64),
            // gsched: estimated from Watts=/GpuWatts= and the price calendar (the job line
            // only; the batch step's share is the job's).
            "EnergyKWh" if !row.batch => row
                .energy
                .map_or(String::new(), |e| format!("{:.3}", e.kwh)),
            "Cost" if !row.batch => row
                .energy
                .map_or(String::new(), |e| format!("{:.2}", e.cost)),
            "ElapsedRaw" => el.to_string(),
            // Unknown for a job never eligible (submitted held), as sacct.
            "Eligible" => date(j.eligible_time),
            "End" => {
                let e = j.end_time;
                match (e, self.truncate, self.query.end) {
                    (Some(e), true, Some(w)) => date(Some(e.min(w))),
                    _ => date(e),
                }
            }
            "GID" => j.group_id.to_string(),
            "Group" => j.group_name.clone(),
            "JobID" => {
                let base = match (row.range, j.array) {
                    (Some(r), Some(a)) => format!("{}_[{r}]", a.job_id),
                    (None, Some(a)) => format!("{}_{}", a.job_id, a.task_id),
                    _ => match j.het {
                        Some(h) => h.name(),
                        None => j.job_id.to_string(),
                    },
                };
                if row.batch {
                    format!("{base}.batch")
                } else {
                    base
                }
            }
            "JobIDRaw" => {
                if row.batch {
                    format!("{}.batch", j.job_id)
                } else {
                    j.job_id.to_string()
                }
            }
            "JobName" => {
                if row.batch {
                    "batch".into()
                } else {
                    j.name.clone()
                }
            }
            "NNodes" => {
                if row.batch {
                    "1".into()
                } else {
                    j.num_nodes.to_string()
                }
            }
            "NodeList" => {
                if !started {
                    "None assigned".into()
                } else if row.batch {
                    j.nodes.first().cloned().unwrap_or_default()
                } else {
                    hostlist::compress(&j.nodes)
                }
            }
            "NTasks" => {
                if row.batch {
                    "1".into()
                } else {
                    String::new()
                }
            }
            "Priority" if !row.batch => j.priority.to_string(),
            "Partition" if !row.batch => j.partition.clone(),
            "Reason" if !row.batch => j.reason.as_str().to_string(),
            "ReqCPUS" => {
                if row.batch {
                    alloc_cpus.to_string()
                } else {
                    (j.num_tasks.max(1) * j.spec.cpus_per_task()).to_string()
                }
            }
            "ReqMem" if !row.batch => mem_str(j.mem_per_node_mb, self.units),
            "ReqNodes" if !row.batch => j.spec.nodes.unwrap_or(j.num_nodes).to_string(),
            "ReqTRES" if !row.batch => with_gres(
                tres(
                    j.num_tasks.max(1) * j.spec.cpus_per_task(),
                    j.mem_per_node_mb * j.spec.nodes.unwrap_or(1) as u64,
                    j.spec.nodes.unwrap_or(1),
                    self.units,
                ),
                gsched_proto::gpu_tres::req_tres(j),
            ),
            "Restarts" => j.restarts.to_string(),
            "Start" => match (
                j.start_time.filter(|_| started),
                self.truncate,
                self.query.start,
            ) {
                (Some(s), true, Some(w)) => date(Some(s.max(w))),
                // Ended without running (cancelled while pending).
                (None, _, _) if j.state.is_terminal() => "None".into(),
                (s, _, _) => date(s),
            },
            "State" => {
                if row.batch {
                    step_state(j)
                } else {
                    match (j.state, j.cancelled_by) {
                        (JobState::Cancelled, Some(uid)) => format!("CANCELLED by {uid}"),
                        _ => j.state_long().to_string(),
                    }
                }
            }
            "Submit" => date(Some(j.submit_time)),
            "SubmitLine" if !row.batch => j.spec.submit_line.clone(),
            "Suspended" => units::format_secs_scontrol(j.suspended_total(now) as u64),
            // Measured by the job's cgroup (nodes with cgroup.conf): memory on the step
            // line, CPU times on both, as sacct shows them.
            "MaxRSS" if row.batch => j
                .usage
                .and_then(|u| u.max_rss_bytes)
                .map(|b| bytes_str(b, self.units))
                .unwrap_or_default(),
            "MaxRSSNode" if row.batch && j.usage.is_some_and(|u| u.max_rss_bytes.is_some()) => {
                j.nodes.first().cloned().unwrap_or_default()
            }
            "MaxRSSTask" if row.batch && j.usage.is_some_and(|u| u.max_rss_bytes.is_some()) => {
                "0".into()
            }
            "TotalCPU" => j
                .usage
                .and_then(|u| u.total_cpu_usec())
                .map(cpu_time_str)
                .unwrap_or_default(),
            "UserCPU" => j
                .usage
                .and_then(|u| u.user_cpu_usec)
                .map(cpu_time_str)
                .unwrap_or_default(),
            "SystemCPU" => j
                .usage
                .and_then(|u| u.system_cpu_usec)
                .map(cpu_time_str)
                .unwrap_or_default(),
            "Timelimit" if !row.batch => units::format_time_limit_scontrol(j.time_limit),
            "TimelimitRaw" if !row.batch => j
                .time_limit
                .map_or("UNLIMITED".to_string(), |m| m.to_string()),
            "UID" => j.user_id.to_string(),
            "User" if !row.batch => j.user_name.clone(),
            "WorkDir" if !row.batch => j.spec.work_dir.clone(),
            // Not measured by gsched, or empty on a step line, as in sacct.
            _ => String::new(),
        }
    }

    pub(crate) fn cell(&self, col: &Column, v: &str, last: bool) -> String {
        match self.layout {
            Layout::Parsable2 if last => v.to_string(),
            Layout::Parsable | Layout::Parsable2 => format!("{v}{}", self.delimiter),
            Layout::Columns => {
                let w = col.width.unsigned_abs() as usize;
                let mut v: String = v.to_string();
                if v.chars().count() > w && w > 0 {
                    v = v.chars().take(w - 1).collect();
                    v.push('+');
                }
                let s = common::print_field(&v, w, col.width > 0, true);
                format!("{s} ")
            }
        }
    }

    pub(crate) fn header(&self) -> String {
        let mut out = String::new();
        let n = self.columns.len();
        for (i, c) in self.columns.iter().enumerate() {
            let name = match self.layout {
                Layout::Columns => {
                    let w = c.width.unsigned_abs() as usize;
                    let n: String = c.name.chars().take(w).collect();
                    format!("{} ", common::print_field(&n, w, c.width > 0, true))
                }
                _ => self.cell(c, c.name, i + 1 == n),
            };
            out.push_str(&name);
        }
        out.push('\n');
        if self.layout == Layout::Columns {
            for c in &self.columns {
                let w = c.width.unsigned_abs() as usize;
                out.push_str(&"-".repeat(w));
                out.push(' ');
            }
            out.push('\n');
        }
        out
    }
}

/// The whole output for the jobs the controller returned (no gsrun steps).
pub fn render(p: &Params, resp: &JobsResponse, cluster: &str) -> String {
    render_with_steps(p, resp, &[], cluster)
}

/// The jobs of an answer in id order, array tasks collapsed into their array's line unless
/// `--array` (with the index ranges of the collapsed ones).
fn listed_jobs(
    p: &Params,
    resp: &JobsResponse,
) -> (Vec<JobInfo>, HashMap<gsched_proto::job::JobId, String>) {
    let mut jobs = resp.jobs.clone();
    jobs.sort_by_key(|j| j.job_id);
    if p.expand_arrays {
        (jobs, HashMap::new())
    } else {
        arrays::collapse(jobs)
    }
}
/// The whole output for the jobs the controller returned and their `gsrun` steps.
pub fn render_with_steps(
    p: &Params,
    resp: &JobsResponse,
    steps: &[StepInfo],
    cluster: &str,
) -> String {
    let (jobs, ranges) = listed_jobs(p, resp);
    let steps_of = steps;
    let mut out = String::new();
    if p.batch_script {
        for j in &jobs {
            out.push_str(&format!(
                "Batch Script for {}\n--------------------------------------------------------------------------------\n{}",
                j.job_id, j.spec.script
            ));
            if !j.spec.script.ends_with('\n') {
                out.push('\n');
            }
            out.push('\n');
        }
        return out;
    }
    if !p.no_header {
        out.push_str(&p.header());
    }
    let n = p.columns.len();
    for j in &jobs {
        let key = match j.array {
            Some(a) if p.steps_only.contains_key(&(a.job_id, Some(a.task_id))) => {
                (a.job_id, Some(a.task_id))
            }
            Some(a) if p.steps_only.contains_key(&(a.job_id, None)) => (a.job_id, None),
            _ => (j.job_id, None),
        };
        let only_steps = p.steps_only.get(&key);
        let range = ranges.get(&j.job_id);
        // Only the first component of a het job runs the batch script (has a batch step).
        let started = ran(j) && j.het.is_none_or(|h| h.offset == 0);
        let mut rows = Vec::new();
        match only_steps {
            Some(steps) => {
                if started && steps.iter().any(|s| s == "batch") {
                    rows.push(Row {
                        job: j,
                        energy: resp.energy.iter().find(|e| e.job_id == j.job_id),
                        range,
                        batch: true,
                        step: None,
                    });
                }
                for s in job_steps(steps_of, j) {
                    if steps.iter().any(|x| *x == s.step_id.to_string()) {
                        rows.push(Row {
                            job: j,
                            energy: None,
                            range,
                            batch: true,
                            step: Some(s),
                        });
                    }
                }
            }
            None => {
                rows.push(Row {
                    job: j,
                    energy: resp.energy.iter().find(|e| e.job_id == j.job_id),
                    range,
                    batch: false,
                    step: None,
                });
                if started && !p.allocations {
                    rows.push(Row {
                        job: j,
                        energy: resp.energy.iter().find(|e| e.job_id == j.job_id),
                        range,
                        batch: true,
                        step: None,
                    });
                    for s in job_steps(steps_of, j) {
                        rows.push(Row {
                            job: j,
                            energy: None,
                            range,
                            batch: true,
                            step: Some(s),
                        });
                    }
                }
            }
        }
        for row in rows {
            for (i, c) in p.columns.iter().enumerate() {
                let v = tres_usage_in(c.name, &row, resp, p.units)
                    .unwrap_or_else(|| p.value(c, &row, resp.now, cluster));
                out.push_str(&p.cell(c, &v, i + 1 == n));
            }
            out.push('\n');
        }
    }
    out
}

/// `TRESUsageInAve`, `TRESUsageInMax` and `TRESUsageInTot` of a batch step line, in sacct's
/// sorted `name=value` list: the job's CPU time (`cpu`) and peak memory (`mem`) from its
/// cgroup and, from the GPU samples, its GPUs' peak memory (`gres/gpumem`, summed over them)
/// and utilization (`gres/gpuutil`: the mean over the GPUs with `Ave`, their sum with `Tot`,
/// the highest sample with `Max`). The batch step is one task, so its total, mean and
/// maximum over tasks are the same for CPU and memory. `None` for other columns and lines.
fn tres_usage_in(col: &str, row: &Row, resp: &JobsResponse, units: Option<char>) -> Option<String> {
    if !matches!(col, "TRESUsageInAve" | "TRESUsageInMax" | "TRESUsageInTot")
        || !row.batch
        || row.step.is_some()
    {
        return None;
    }
    let j = row.job;
    let mut parts = Vec::new();
    let usage = j.usage.unwrap_or_default();
    if let Some(cpu) = usage.total_cpu_usec() {
        parts.push(format!(
            "cpu={}",
            units::format_secs_scontrol((cpu + 500_000) / 1_000_000)
        ));
    }
    let gpus: Vec<&gsched_proto::api::JobGpuUsage> = resp
        .gpu_usage
        .iter()
        .filter(|g| g.job_id == j.job_id && g.samples > 0)
        .collect();
    if !gpus.is_empty() {
        let mem: u64 = gpus.iter().map(|g| g.mem_max_mb).sum();
        let sum: f64 = gpus.iter().map(|g| g.util_avg).sum();
        let util = match col {
            "TRESUsageInMax" => gpus.iter().map(|g| g.util_max).max().unwrap_or(0) as f64,
            "TRESUsageInTot" => sum,
            _ => sum / gpus.len() as f64,
        };
        parts.push(format!("gres/gpumem={mem}M"));
        parts.push(format!("gres/gpuutil={}", util.round() as u64));
    }
    if let Some(rss) = usage.max_rss_bytes {
        parts.push(format!("mem={}", bytes_str(rss, units)));
    }
    Some(parts.join(","))
}

/// The `gsrun` steps of job `j`, in step order (none for a collapsed array record).
fn job_steps<'a>(steps: &'a [StepInfo], j: &JobInfo) -> impl Iterator<Item = &'a StepInfo> {
    let id = j.job_id;
    steps.iter().filter(move |s| s.job_id == id)
}

fn helpformat() -> String {
    let mut out = String::new();
    for (i, (name, _)) in FIELDS.iter().enumerate() {
        out.push_str(&format!("{name:<20}"));
        if i % 4 == 3 {
            out.push('\n');
        }
    }
    if FIELDS.len() % 4 != 0 {
        out.push('\n');
    }
    out
}

pub fn usage_text() -> String {
    "Usage: sacct [-abBcDeEFghjlLnNoprsStTuvVxX] [-A account] [-E end] [-j job[.step]] \
     [-M clusters] [-N nodes] [-o fields] [-r partition] [-S start] [-s states] [-u users] \
     [--delimiter=X] [--name=names] [--units=[KMGTP]] [--array] [--noconvert]\n"
        .to_string()
}

pub fn help_text() -> String {
    "Usage: sacct [OPTIONS]\n\
     \n\
     sacct reports the accounting records of jobs, finished ones included, from gsched's\n\
     own store.\n\
     \n\
     \x20 -a, --allusers          all users' jobs (root sees everyone's by default)\n\
     \x20 -A, --accounts=list     only jobs of these accounts\n\
     \x20     --array             one line per pending array task\n\
     \x20 -b, --brief             jobid,state,exitcode\n\
     \x20 -B, --batch-script      print the jobs' batch scripts\n\
     \x20     --delimiter=X       separator with -p/-P (default |)\n\
     \x20 -e, --helpformat        list the fields -o takes\n\
     \x20 -g, --gid, --group=list only jobs of these groups\n\
     \x20 -i, --nnodes=N[-M]      only jobs that ran on this many nodes\n\
     \x20 -I, --ncpus=N[-M]       only jobs that ran on this many CPUs\n\
     \x20 -E, --endtime=time     jobs active before this time (default now)\n\
     \x20 -j, --jobs=list         these jobs (N, N_K, N.batch); from the start of time\n\
     \x20     --json              Slurm's JSON dump of the jobs and their steps\n\
     \x20 -k, --timelimit-min=t   only jobs with this time limit (with -K: at least)\n\
     \x20 -K, --timelimit-max=t   with -k: only jobs with at most this time limit\n\
     \x20 -l, --long              many fields\n\
     \x20 -M, --clusters=name     this cluster (or all)\n\
     \x20 -n, --noheader          no header lines\n\
     \x20     --name=list         only jobs with these names\n\
     \x20 -N, --nodelist=hosts    only jobs that ran on these nodes\n\
     \x20 -o, --format=fields     fields to print, each name[%width]\n\
     \x20 -p, --parsable          fields followed by |\n\
     \x20 -q, --qos=list          only jobs of these QOS\n\
     \x20 -P, --parsable2         fields separated by |\n\
     \x20 -r, --partition=list    only jobs of these partitions\n\
     \x20 -R, --reason=list       only jobs with these reasons\n\
     \x20 -s, --state=list        only jobs in these states (within the window)\n\
     \x20 -S, --starttime=time    jobs active after this time (default: today 00:00)\n\
     \x20 -T, --truncate          cut start and end times to the window\n\
     \x20 -u, --uid, --user=list  these users' jobs\n\
     \x20     --units=[KMGTP]     memory in this unit\n\
     \x20 -X, --allocations       no step lines\n\
     \x20     --yaml              Slurm's YAML dump of the jobs and their steps\n\
     \x20     --cost-report       (gsched) estimated energy (kWh) and cost per user and\n\
     \x20                         account, from Watts=, GpuWatts= and the price calendar\n\
     \x20 -V, --version           print the version\n\
     \x20 -h, --help, --usage     this text\n"
        .to_string()
}

pub fn main(args: Vec<String>) -> i32 {
    common::run_main(&args, "sacct", run)
}

fn run(prog: &str, args: &[String]) -> Result<i32, Fail> {
    let Some(p) = parse_args(
        prog,
        args,
        &common::env_var,
        common::current_uid(),
        common::now(),
    )?
    .or_print() else {
        return Ok(0);
    };
    let (cfg, client) = common::connect(prog, p.clusters.as_deref())?;
    // The GPU samples are read only for the fields that show them.
    let query = HistoryQuery {
        gpu_usage: p.columns.iter().any(|c| c.name.starts_with("TRESUsageIn")),
        payloads: p.batch_script,
        ..p.query.clone()
    };
    let mut resp: JobsResponse = client
        .post(paths::JOBS_HISTORY, &query)
        .map_err(|e| Fail::error(prog, common::client_error_text(&e)))?;
    resp.jobs.retain(|j| p.post.matches(j));
    if p.cost_report {
        common::out(&crate::prices::render_cost_report(&resp));
        return Ok(0);
    }
    // The gsrun steps of the jobs shown (a controller without steps answers an error: none).
    let steps = if p.allocations || p.batch_script || resp.jobs.is_empty() {
        Vec::new()
    } else {
        let q = gsched_proto::step::StepQuery {
            job_ids: resp.jobs.iter().map(|j| j.job_id).collect(),
            running_only: false,
        };
        client
            .post::<_, gsched_proto::step::StepsResponse>(paths::JOBS_STEPS_QUERY, &q)
            .map(|r| r.steps)
            .unwrap_or_default()
    };
    match p.mime {
        Some(m) => common::out(&m.render(&json_jobs(&p, &resp, &steps, &cfg.cluster_name))),
        None => common::out(&render_with_steps(&p, &resp, &steps, &cfg.cluster_name)),
    }
    Ok(0)
}

/// `sacct --json`/`--yaml`: the selected jobs (arrays' pending tasks collapsed unless
/// `--array`) with their steps (none with `-X`), as the dbv0.0.38 plugin dumps them.
pub fn json_jobs(
    p: &Params,
    resp: &JobsResponse,
    steps: &[StepInfo],
    cluster: &str,
) -> crate::slurm_json::Data {
    let (jobs, ranges) = listed_jobs(p, resp);
    let records = jobs
        .iter()
        .map(|j| {
            let own: Vec<&StepInfo> = job_steps(steps, j).collect();
            crate::slurm_json::db_job(
                j,
                ranges.get(&j.job_id).map(String::as_str),
                &own,
                !p.allocations,
                cluster,
                resp.now,
            )
        })
        .collect();
    crate::slurm_json::response(true, "jobs", records)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str], uid: u32) -> Result<Params, Fail> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        match parse_args("sacct", &args, &|_| None, uid, 1_800_000_000)? {
            common::Parsed::Run(p) => Ok(p),
            common::Parsed::Print(_) => panic!("printed"),
        }
    }

    #[test]
    fn fields_match_by_prefix_in_any_case() {
        let c = parse_fields("sacct", "jobid,JOBIDRAW,state%20,exit,nodel%-30,alloc").unwrap();
        let names: Vec<_> = c.iter().map(|c| (c.name, c.width)).collect();
        assert_eq!(
            names,
            vec![
                ("JobID", -12),
                ("JobIDRaw", -12),
                ("State", 20),
                ("ExitCode", 8),
                ("NodeList", -30),
                ("AllocCPUS", 10)
            ]
        );
        let e = parse_fields("sacct", "jobid,bogus").unwrap_err();
        assert_eq!(e.lines, vec!["Invalid field requested: \"bogus\""]);
        assert_eq!(e.code, 1);
    }

    #[test]
    fn users_window_and_jobs() {
        let p = parse(&[], 1000).unwrap();
        assert_eq!(p.query.filter.user_ids, vec![1000]);
        assert!(p.query.start.unwrap() <= 1_800_000_000);
        assert_eq!(p.query.end, Some(1_800_000_000));
        let p = parse(&[], 0).unwrap();
        assert!(p.query.filter.user_ids.is_empty());
        let p = parse(&["-j", "12,13_4", "-j", "14.batch"], 1000).unwrap();
        assert_eq!(p.query.filter.ids, vec![12, 14]);
        assert_eq!(p.query.filter.array_tasks, vec![(13, 4)]);
        assert_eq!(p.query.start, None);
        assert_eq!(p.query.end, None);
        assert!(p.steps_only.contains_key(&(14, None)));
        let p = parse(&["-s", "cd,CANCELLED"], 1000).unwrap();
        assert_eq!(p.query.start, Some(1_800_000_000));
        assert_eq!(
            p.query.filter.states,
            vec![JobState::Completed, JobState::Cancelled]
        );
        assert!(parse(&["-j", "x"], 0).is_err());
        assert!(parse(&["-S", "now", "-E", "now-1hour"], 0).is_err());
        let e = parse(&["--duplicates"], 0).unwrap_err();
        assert_eq!(e.code, 1);
        let p = parse(&["--json"], 0).unwrap();
        assert_eq!(p.mime, Some(crate::slurm_json::Mime::Json));
        // Filters the store query does not know.
        let p = parse(
            &[
                "-i", "2", "-I", "1-4", "-k", "10", "-K", "1:00:00", "-R", "None",
            ],
            0,
        )
        .unwrap();
        let mut j = crate::squeue::tests::job(1, JobState::Completed);
        j.num_nodes = 2;
        j.num_cpus = 4;
        j.time_limit = Some(30);
        assert!(p.post.matches(&j));
        j.num_cpus = 5;
        assert!(!p.post.matches(&j));
        j.num_cpus = 4;
        j.time_limit = Some(61);
        assert!(!p.post.matches(&j));
        let p = parse(&["-k", "30"], 0).unwrap();
        j.time_limit = Some(30);
        assert!(p.post.matches(&j));
        j.time_limit = Some(31);
        assert!(!p.post.matches(&j));
        let p = parse(&["-g", "0"], 0).unwrap();
        assert_eq!(p.post.gids, Some(vec![0]));
        assert!(parse(&["-i", "3-2"], 0).is_err());
        let e = parse(&["-1"], 0).unwrap_err();
        assert_ne!(e.code, 0);
        let e = parse(&["extra"], 0).unwrap_err();
        assert_ne!(e.code, 0);
    }

    #[test]
    fn cells_truncate_with_plus_and_parsable_layouts() {
        let mut p = parse(&[], 0).unwrap();
        let c = Column {
            name: "State",
            width: 10,
        };
        assert_eq!(p.cell(&c, "CANCELLED by 0", false), "CANCELLED+ ");
        assert_eq!(p.cell(&c, "RUNNING", false), "   RUNNING ");
        let left = Column {
            name: "JobID",
            width: -12,
        };
        assert_eq!(p.cell(&left, "42", false), "42           ");
        p.layout = Layout::Parsable2;
        assert_eq!(p.cell(&c, "CANCELLED by 0", false), "CANCELLED by 0|");
        assert_eq!(p.cell(&c, "CANCELLED by 0", true), "CANCELLED by 0");
        p.layout = Layout::Parsable;
        assert_eq!(p.cell(&c, "X", true), "X|");
    }

    /// Slurm 22.05's sacct for a job cancelled while pending and a held one
    /// (bench/results/format-diff): no batch step, `Start=None` once ended, `Unknown` while
    /// pending, no nodes, no allocated TRES, `Eligible=Unknown` when never eligible.
    #[test]
    fn jobs_that_never_ran() {
        use crate::squeue::tests::job;
        let mut cancelled = job(1003, JobState::Cancelled);
        cancelled.num_nodes = 1;
        cancelled.num_cpus = 1;
        cancelled.nodes.clear();
        cancelled.start_time = Some(1_000_050);
        cancelled.end_time = Some(1_000_050);
        cancelled.eligible_time = None;
        cancelled.cancelled_by = Some(0);
        let mut held = job(1005, JobState::Pending);
        held.num_nodes = 1;
        held.num_cpus = 1;
        held.eligible_time = None;
        let mut ok = job(1001, JobState::Completed);
        ok.num_nodes = 1;
        ok.num_cpus = 1;
        ok.nodes.truncate(1);
        ok.end_time = Some(1_000_160);
        let resp = JobsResponse {
            now: 1_000_200,
            jobs: vec![ok, cancelled, held],
            energy: Vec::new(),
            gpu_usage: Vec::new(),
        };
        let p = parse(
            &[
                "-P",
                "-n",
                "-j",
                "1001,1003,1005",
                "-o",
                "JobID,State,Start,End,Elapsed,AllocCPUS,AllocNodes,AllocTRES,NodeList,Eligible",
            ],
            0,
        )
        .unwrap();
        let out = render(&p, &resp, "c");
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 4, "{out}");
        // The job that ran: its batch step, its node.
        assert!(lines[0].starts_with("1001|COMPLETED|") && lines[0].contains("|node01|"));
        assert!(lines[1].starts_with("1001.batch|COMPLETED|"), "{out}");
        // A step's TRES has no billing.
        assert!(lines[1].contains("|cpu=4,mem=4G,node=1|node01|"), "{out}");
        assert!(
            lines[0].contains("|billing=1,cpu=1,mem=4G,node=1|node01|"),
            "{out}"
        );
        assert_eq!(
            lines[2],
            format!(
                "1003|CANCELLED by 0|None|{}|00:00:00|1|0||None assigned|Unknown",
                common::make_time_str(1_000_050)
            )
        );
        assert_eq!(
            lines[3],
            "1005|PENDING|Unknown|Unknown|00:00:00|1|0||None assigned|Unknown"
        );
    }

    /// The placeholders Slurm 22.05 prints for what is not measured (`sacct -l`).
    #[test]
    fn unmeasured_fields_are_saccts() {
        use crate::squeue::tests::job;
        let mut ok = job(1001, JobState::Completed);
        ok.end_time = Some(1_000_160);
        let resp = JobsResponse {
            now: 1_000_200,
            jobs: vec![ok],
            energy: Vec::new(),
            gpu_usage: Vec::new(),
        };
        let p = parse(
            &[
                "-P",
                "-n",
                "-j",
                "1001",
                "-o",
                "JobID,ReqCPUFreqMin,ReqCPUFreqMax,ReqCPUFreqGov,AveCPUFreq,ConsumedEnergy",
            ],
            0,
        )
        .unwrap();
        assert_eq!(
            render(&p, &resp, "c"),
            "1001|Unknown|Unknown|Unknown||\n1001.batch|0|0|0|0|0\n"
        );
    }

    #[test]
    fn usage_formats_are_saccts() {
        assert_eq!(bytes_str(4_530_176, None), "4424K");
        assert_eq!(bytes_str(100 << 20, None), "100M");
        assert_eq!(bytes_str(1000, None), "1000");
        assert_eq!(bytes_str(0, None), "0");
        assert_eq!(bytes_str(100 << 20, Some('G')), "0.10G");
        assert_eq!(bytes_str(100 << 20, Some('K')), "102400K");
        assert_eq!(cpu_time_str(1_500_000), "00:01.500");
        assert_eq!(cpu_time_str(61_002_000), "01:01.002");
        assert_eq!(cpu_time_str(3_723_000_000), "01:02:03");
        assert_eq!(cpu_time_str(90_061_000_000), "1-01:01:01");
    }

    #[test]
    fn tres_usage_in_on_the_batch_line() {
        let text = serde_json::json!({
            "job_id": 42, "name": "x", "user_id": 1000, "group_id": 1000,
            "user_name": "alice", "group_name": "lab", "state": "COMPLETED", "reason": "None",
            "partition": "debug", "priority": 1, "time_limit": 60, "submit_time": 0,
            "eligible_time": 0, "start_time": 100, "end_time": 700, "num_nodes": 1,
            "num_cpus": 4, "num_tasks": 1, "mem_per_node_mb": 4096, "nodes": ["n1"],
            "cpus_per_node": [4], "exit_code": 0, "exit_signal": 0, "cancelled_by": null,
            "held": false, "spec": gsched_proto::job::JobSpec::default(),
            "usage": {"max_rss_bytes": 4_530_176, "user_cpu_usec": 65_000_000, "system_cpu_usec": 400_000},
        });
        let job: JobInfo = serde_json::from_value(text).unwrap();
        let g = |gpu, util_avg, util_max, mem_max_mb| gsched_proto::api::JobGpuUsage {
            job_id: 42,
            node: "n1".into(),
            gpu,
            samples: 10,
            util_avg,
            util_max,
            mem_max_mb,
            mem_alloc_mb: 81920,
        };
        let resp = JobsResponse {
            now: 800,
            jobs: vec![job.clone()],
            energy: Vec::new(),
            gpu_usage: vec![g(0, 40.0, 90, 1000), g(1, 20.4, 60, 500)],
        };
        let row = |batch| Row {
            job: &job,
            energy: None,
            range: None,
            batch,
            step: None,
        };
        let v = |col, batch| tres_usage_in(col, &row(batch), &resp, None);
        assert_eq!(
            v("TRESUsageInMax", true).unwrap(),
            "cpu=00:01:05,gres/gpumem=1500M,gres/gpuutil=90,mem=4424K"
        );
        assert_eq!(
            v("TRESUsageInAve", true).unwrap(),
            "cpu=00:01:05,gres/gpumem=1500M,gres/gpuutil=30,mem=4424K"
        );
        assert_eq!(
            v("TRESUsageInTot", true).unwrap(),
            "cpu=00:01:05,gres/gpumem=1500M,gres/gpuutil=60,mem=4424K"
        );
        // The job line and other fields are left to the rest of the table.
        assert_eq!(v("TRESUsageInMax", false), None);
        assert_eq!(v("MaxRSS", true), None);
        // A CPU job without cgroup figures: an empty list.
        let cpu = JobsResponse {
            gpu_usage: Vec::new(),
            ..resp.clone()
        };
        let mut bare = job.clone();
        bare.usage = None;
        let r = Row {
            job: &bare,
            ..row(true)
        };
        assert_eq!(tres_usage_in("TRESUsageInTot", &r, &cpu, None).unwrap(), "");
    }
}
