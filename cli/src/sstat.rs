//! `gsstat` (`sstat`): the live usage of running jobs, from the samples the nodes send with
//! their heartbeats (`/v1/jobs/usage`), with sstat's options, field names, widths and
//! parsable layouts (the column code is gsacct's).
//!
//! Granularity: gsched measures a job's usage per node (its cgroup, or its processes: the
//! batch script and the tasks of every step on that node), not per step. A line is one job;
//! sstat's per-task figures (`MaxRSS`, `MinCPU`, `AveRSS`, ...) are taken over the job's
//! nodes, each node counting as one task (`NTasks` is the number of nodes that reported;
//! the `...Task` fields give the node's index in the job's node list). `-j N.batch` and
//! `-j N.K` (a running step) print the job's line under that name; `-a` has no further
//! lines to add. As sstat, errors about jobs that do not run go to stderr and the exit
//! status stays 0; no job at all, a bad option or field, or an unreachable controller exit 1.

use crate::common::{self, Fail};
use crate::getopt::{self, HasArg, Opt, Ordering};
use crate::sacct::{self, bytes_str, cpu_time_str, JobSel, Layout};
use gsched_proto::api::{
    paths, ErrorCode, JobFilter, JobNodeUsage, JobQuery, JobUsageInfo, JobUsageQuery,
    JobUsageResponse, JobsResponse,
};
use gsched_proto::hostlist;
use gsched_proto::job::{JobInfo, JobState};
use gsched_proto::units;

use HasArg::{No, Required as Req};

pub const OPTIONS: &[Opt] = &[
    Opt::new("allsteps", Some('a'), &["allsteps"], No),
    Opt::new("helpformat", Some('e'), &["helpformat"], No),
    Opt::new("help", Some('h'), &["help"], No),
    Opt::new("pidformat", Some('i'), &["pidformat"], No),
    Opt::new("jobs", Some('j'), &["jobs"], Req),
    Opt::new("noheader", Some('n'), &["noheader"], No),
    Opt::new("noconvert", None, &["noconvert"], No),
    Opt::new("format", Some('o'), &["format", "fields"], Req),
    Opt::new("parsable", Some('p'), &["parsable"], No),
    Opt::new("parsable2", Some('P'), &["parsable2"], No),
    Opt::new("usage", None, &["usage"], No),
    Opt::new("verbose", Some('v'), &["verbose"], No),
    Opt::new("version", Some('V'), &["version"], No),
];

/// sstat's fields in its order (the first whose name starts with what was typed wins) and
/// default widths (negative: left-justified).
const FIELDS: &[(&str, i32)] = &[
    ("AveCPU", 10),
    ("AveCPUFreq", 10),
    ("AveDiskRead", 12),
    ("AveDiskWrite", 12),
    ("AvePages", 10),
    ("AveRSS", 10),
    ("AveVMSize", 10),
    ("ConsumedEnergy", 14),
    ("ConsumedEnergyRaw", 17),
    ("JobID", -12),
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
    ("MinCPU", 10),
    ("MinCPUNode", 10),
    ("MinCPUTask", 10),
    ("Nodelist", 20),
    ("NTasks", 8),
    ("Pids", 20),
    ("ReqCPUFreq", 10),
    ("ReqCPUFreqMin", 13),
    ("ReqCPUFreqMax", 13),
    ("ReqCPUFreqGov", 13),
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
];

/// sstat's default field list.
const DEFAULT_FIELDS: &str = "jobid,maxvmsize,maxvmsizenode,maxvmsizetask,avevmsize,maxrss,maxrssnode,maxrsstask,averss,maxpages,maxpagesnode,maxpagestask,avepages,mincpu,mincpunode,mincputask,avecpu,ntasks,avecpufreq,reqcpufreqmin,reqcpufreqmax,reqcpufreqgov,consumedenergy,maxdiskread,maxdiskreadnode,maxdiskreadtask,avediskread,maxdiskwrite,maxdiskwritenode,maxdiskwritetask,avediskwrite,tresusageinave,tresusageinmax,tresusageinmaxn,tresusageinmaxt,tresusageinmin,tresusageinminn,tresusageinmint,tresusageintot,tresusageoutave,tresusageoutmax,tresusageoutmaxn,tresusageoutmaxt,tresusageoutmin,tresusageoutminn,tresusageoutmint,tresusageouttot";

/// A parsed command line.
#[derive(Debug, Clone)]
pub struct Params {
    /// Columns, layout and header (gsacct's table code).
    pub table: sacct::Params,
    pub jobs: Vec<JobSel>,
    /// `--noconvert`: byte counts as plain numbers.
    pub noconvert: bool,
}

/// Parses the command line.
pub fn parse_args(prog: &str, args: &[String]) -> Result<common::Parsed<Params>, Fail> {
    let split = getopt::parse_split(args, OPTIONS, Ordering::Permute);
    if let Some(e) = &split.err {
        return Err(Fail::usage(prog, e, 1));
    }
    let mut table = sacct::Params {
        delimiter: "|".into(),
        ..sacct::Params::default()
    };
    let mut format = String::new();
    let mut jobs = Vec::new();
    let mut noconvert = false;
    for (id, arg) in split.opts {
        if let Some(text) = common::info_text(id, help_text, usage_text) {
            return Ok(common::Parsed::Print(text));
        }
        let val = arg.unwrap_or_default();
        match id {
            "helpformat" => return Ok(common::Parsed::Print(helpformat())),
            "pidformat" => return Err(Fail::not_supported(prog, "-i/--pidformat")),
            "jobs" => jobs.extend(sacct::parse_jobs(prog, &val)?),
            "noheader" => table.no_header = true,
            "noconvert" => noconvert = true,
            "format" => {
                format.push_str(&val);
                format.push(',');
            }
            "parsable" => table.layout = Layout::Parsable,
            "parsable2" => table.layout = Layout::Parsable2,
            // `-a`: every line is a whole job already; `-v`: nothing more to say.
            _ => {}
        }
    }
    // sstat takes one operand as a job list too.
    if let Some(op) = split.operands.first() {
        jobs.extend(sacct::parse_jobs(prog, op)?);
    }
    if split.operands.len() > 1 {
        return Err(Fail::error(
            prog,
            format!("Unknown arguments: {}", split.operands[1..].join(" ")),
        ));
    }
    if format.is_empty() {
        format = DEFAULT_FIELDS.to_string();
    }
    // sstat prefixes its field error (sacct prints it bare).
    table.columns = sacct::parse_fields_in(prog, &format, FIELDS).map_err(|f| {
        if f.lines.len() == 1 && f.lines[0].starts_with("Invalid field") {
            Fail::error(prog, &f.lines[0])
        } else {
            f
        }
    })?;
    Ok(common::Parsed::Run(Params {
        table,
        jobs,
        noconvert,
    }))
}

/// How sstat names a job or step in its errors (`%ps`).
fn step_name(sel: &JobSel) -> String {
    match sel.1 {
        Some(_) => format!("StepId={}", label(sel)),
        None => format!("JobId={}", label(sel)),
    }
}

/// The JobID a line prints: what was asked for.
fn label(sel: &JobSel) -> String {
    let ((id, task), step) = sel;
    let mut s = match task {
        Some(k) => format!("{id}_{k}"),
        None => id.to_string(),
    };
    if let Some(st) = step {
        s.push('.');
        s.push_str(st);
    }
    s
}

/// One kind of TRES figure per node, as sstat's `TRESUsage*` strings name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tres {
    Cpu,
    DiskRead,
    DiskWrite,
    GpuMem,
    GpuUtil,
    Mem,
    Vmem,
}

/// How a figure is taken over a node's run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Take {
    /// The highest (memory: the peak).
    Peak,
    /// The run's mean (memory), else the count so far.
    Mean,
}

impl Tres {
    fn name(self) -> &'static str {
        match self {
            Tres::Cpu => "cpu",
            Tres::DiskRead | Tres::DiskWrite => "fs/disk",
            Tres::GpuMem => "gres/gpumem",
            Tres::GpuUtil => "gres/gpuutil",
            Tres::Mem => "mem",
            Tres::Vmem => "vmem",
        }
    }

    fn of(self, n: &JobNodeUsage, take: Take) -> Option<u64> {
        match (self, take) {
            (Tres::Cpu, _) => n.latest.cpu_usec,
            (Tres::DiskRead, _) => n.read_bytes,
            (Tres::DiskWrite, _) => n.write_bytes,
            (Tres::GpuMem, _) => n.latest.gpu_mem_mb,
            (Tres::GpuUtil, _) => n.latest.gpu_util_percent.map(u64::from),
            (Tres::Mem, Take::Peak) => n.peak_rss_bytes,
            (Tres::Mem, Take::Mean) => n.ave_rss_bytes,
            (Tres::Vmem, Take::Peak) => n.peak_vsize_bytes,
            (Tres::Vmem, Take::Mean) => n.ave_vsize_bytes,
        }
    }
}

/// What is taken over the nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Over {
    Max,
    Min,
    Ave,
    Tot,
}

/// A figure over the nodes that have it: the value and, for `Max`/`Min`, the node.
fn over(
    nodes: &[JobNodeUsage],
    f: impl Fn(&JobNodeUsage) -> Option<u64>,
    how: Over,
) -> Option<(u64, Option<&JobNodeUsage>)> {
    let vals: Vec<(u64, &JobNodeUsage)> = nodes.iter().filter_map(|n| Some((f(n)?, n))).collect();
    match how {
        Over::Max => vals
            .iter()
            .max_by_key(|(v, n)| (*v, std::cmp::Reverse(n.node_index)))
            .map(|&(v, n)| (v, Some(n))),
        Over::Min => vals
            .iter()
            .min_by_key(|(v, n)| (*v, n.node_index))
            .map(|&(v, n)| (v, Some(n))),
        Over::Ave | Over::Tot if vals.is_empty() => None,
        Over::Ave => {
            let sum: u128 = vals.iter().map(|(v, _)| u128::from(*v)).sum();
            Some(((sum / vals.len() as u128) as u64, None))
        }
        Over::Tot => Some((
            vals.iter().fold(0u64, |a, (v, _)| a.saturating_add(*v)),
            None,
        )),
    }
}

impl Params {
    fn bytes(&self, b: u64) -> String {
        if self.noconvert {
            b.to_string()
        } else {
            bytes_str(b, None)
        }
    }

    /// One TRES value as sstat prints it.
    fn tres_value(&self, t: Tres, v: u64) -> String {
        match t {
            Tres::Cpu => units::format_secs_scontrol(v / 1_000_000),
            Tres::DiskRead | Tres::DiskWrite | Tres::GpuUtil => v.to_string(),
            Tres::GpuMem => format!("{v}M"),
            Tres::Mem | Tres::Vmem => self.bytes(v),
        }
    }

    /// A `TRESUsageIn*`/`TRESUsageOut*` string (`cpu=00:01:02,fs/disk=...,mem=...`), in
    /// sstat's order of names; a figure no node has is left out.
    fn tres(&self, nodes: &[JobNodeUsage], out: bool, how: Over, what: char) -> String {
        let kinds: &[Tres] = if out {
            &[Tres::DiskWrite]
        } else {
            &[
                Tres::Cpu,
                Tres::DiskRead,
                Tres::GpuMem,
                Tres::GpuUtil,
                Tres::Mem,
                Tres::Vmem,
            ]
        };
        let take = match how {
            Over::Max | Over::Min => Take::Peak,
            Over::Ave | Over::Tot => Take::Mean,
        };
        kinds
            .iter()
            .filter_map(|&t| {
                let (v, n) = over(nodes, |n| t.of(n, take), how)?;
                let s = match (what, n) {
                    ('n', Some(n)) => n.node.clone(),
                    ('t', Some(n)) => n.node_index.to_string(),
                    ('v', _) => self.tres_value(t, v),
                    _ => return None,
                };
                Some(format!("{}={s}", t.name()))
            })
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The value of column `name` for a job's usage.
    fn value(&self, name: &str, label: &str, u: &JobUsageInfo) -> String {
        let nodes = &u.nodes;
        // (figure, how, what): `v` value, `n` node, `t` task (node index).
        let pick =
            |f: &dyn Fn(&JobNodeUsage) -> Option<u64>, how, what, fmt: &dyn Fn(u64) -> String| {
                match over(nodes, f, how) {
                    Some((v, n)) => match (what, n) {
                        ('v', _) => fmt(v),
                        ('n', Some(n)) => n.node.clone(),
                        ('t', Some(n)) => n.node_index.to_string(),
                        _ => String::new(),
                    },
                    None => String::new(),
                }
            };
        let bytes = |v| self.bytes(v);
        let cpu = |v| cpu_time_str(v);
        let rss = |n: &JobNodeUsage| n.peak_rss_bytes;
        let vsize = |n: &JobNodeUsage| n.peak_vsize_bytes;
        let cpu_of = |n: &JobNodeUsage| n.latest.cpu_usec;
        let read = |n: &JobNodeUsage| n.read_bytes;
        let write = |n: &JobNodeUsage| n.write_bytes;
        match name {
            "JobID" => label.to_string(),
            "MaxRSS" => pick(&rss, Over::Max, 'v', &bytes),
            "MaxRSSNode" => pick(&rss, Over::Max, 'n', &bytes),
            "MaxRSSTask" => pick(&rss, Over::Max, 't', &bytes),
            "AveRSS" => pick(&|n| n.ave_rss_bytes, Over::Ave, 'v', &bytes),
            "MaxVMSize" => pick(&vsize, Over::Max, 'v', &bytes),
            "MaxVMSizeNode" => pick(&vsize, Over::Max, 'n', &bytes),
            "MaxVMSizeTask" => pick(&vsize, Over::Max, 't', &bytes),
            "AveVMSize" => pick(&|n| n.ave_vsize_bytes, Over::Ave, 'v', &bytes),
            "MinCPU" => pick(&cpu_of, Over::Min, 'v', &cpu),
            "MinCPUNode" => pick(&cpu_of, Over::Min, 'n', &cpu),
            "MinCPUTask" => pick(&cpu_of, Over::Min, 't', &cpu),
            "AveCPU" => pick(&cpu_of, Over::Ave, 'v', &cpu),
            "MaxDiskRead" => pick(&read, Over::Max, 'v', &bytes),
            "MaxDiskReadNode" => pick(&read, Over::Max, 'n', &bytes),
            "MaxDiskReadTask" => pick(&read, Over::Max, 't', &bytes),
            "AveDiskRead" => pick(&read, Over::Ave, 'v', &bytes),
            "MaxDiskWrite" => pick(&write, Over::Max, 'v', &bytes),
            "MaxDiskWriteNode" => pick(&write, Over::Max, 'n', &bytes),
            "MaxDiskWriteTask" => pick(&write, Over::Max, 't', &bytes),
            "AveDiskWrite" => pick(&write, Over::Ave, 'v', &bytes),
            "NTasks" => nodes.len().to_string(),
            "Nodelist" => {
                let names: Vec<String> = nodes.iter().map(|n| n.node.clone()).collect();
                hostlist::compress(&names)
            }
            "TRESUsageInAve" => self.tres(nodes, false, Over::Ave, 'v'),
            "TRESUsageInMax" => self.tres(nodes, false, Over::Max, 'v'),
            "TRESUsageInMaxNode" => self.tres(nodes, false, Over::Max, 'n'),
            "TRESUsageInMaxTask" => self.tres(nodes, false, Over::Max, 't'),
            "TRESUsageInMin" => self.tres(nodes, false, Over::Min, 'v'),
            "TRESUsageInMinNode" => self.tres(nodes, false, Over::Min, 'n'),
            "TRESUsageInMinTask" => self.tres(nodes, false, Over::Min, 't'),
            "TRESUsageInTot" => self.tres(nodes, false, Over::Tot, 'v'),
            "TRESUsageOutAve" => self.tres(nodes, true, Over::Ave, 'v'),
            "TRESUsageOutMax" => self.tres(nodes, true, Over::Max, 'v'),
            "TRESUsageOutMaxNode" => self.tres(nodes, true, Over::Max, 'n'),
            "TRESUsageOutMaxTask" => self.tres(nodes, true, Over::Max, 't'),
            "TRESUsageOutMin" => self.tres(nodes, true, Over::Min, 'v'),
            "TRESUsageOutMinNode" => self.tres(nodes, true, Over::Min, 'n'),
            "TRESUsageOutMinTask" => self.tres(nodes, true, Over::Min, 't'),
            "TRESUsageOutTot" => self.tres(nodes, true, Over::Tot, 'v'),
            // Not measured by gsched (CPU frequency, pages, energy, the pid list).
            _ => String::new(),
        }
    }

    /// One output line.
    pub fn line(&self, label: &str, u: &JobUsageInfo) -> String {
        let cols = &self.table.columns;
        let mut s: String = cols
            .iter()
            .enumerate()
            .map(|(i, c)| {
                self.table
                    .cell(c, &self.value(c.name, label, u), i + 1 == cols.len())
            })
            .collect();
        s.push('\n');
        s
    }
}

/// What one `-j` entry comes to: a line, or an error for stderr.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Line(String),
    Error(String),
}

/// The outcome of each asked job, from the jobs the controller knows (`jobs`), the running
/// steps asked about (`(job, step)`) and the usage of the running jobs.
pub fn outcomes(
    p: &Params,
    jobs: &[JobInfo],
    running_steps: &[(u32, u32)],
    usage: &[JobUsageInfo],
) -> Vec<Outcome> {
    p.jobs
        .iter()
        .map(|sel| {
            let ((id, task), step) = sel;
            let job = jobs.iter().find(|j| match task {
                Some(k) => j.array.is_some_and(|a| a.job_id == *id && a.task_id == *k),
                None => j.job_id == *id,
            });
            let Some(job) = job else {
                return Outcome::Error(format!(
                    "couldn't get steps for job {}",
                    label(&((*id, *task), None))
                ));
            };
            let not_running = || match step {
                None => Outcome::Error(format!("No steps running for job {}", job.job_id)),
                Some(_) => Outcome::Error(format!("{} not found running.", step_name(sel))),
            };
            if job.state != JobState::Running {
                return not_running();
            }
            match step.as_deref() {
                None | Some("batch") => {}
                Some(k) => {
                    let found = k
                        .parse::<u32>()
                        .is_ok_and(|k| running_steps.contains(&(job.job_id, k)));
                    if !found {
                        return not_running();
                    }
                }
            }
            match usage.iter().find(|u| u.job_id == job.job_id) {
                Some(u) => match &u.error {
                    None => Outcome::Line(p.line(&label(sel), u)),
                    Some(e)
                        if e.code == ErrorCode::JobAlreadyDone
                            || e.code == ErrorCode::JobPending =>
                    {
                        not_running()
                    }
                    Some(e) => Outcome::Error(format!(
                        "problem getting step_layout for {}: {}",
                        step_name(sel),
                        e.message
                    )),
                },
                None => not_running(),
            }
        })
        .collect()
}

fn helpformat() -> String {
    let mut out = String::new();
    for (i, (name, _)) in FIELDS.iter().enumerate() {
        if i % 4 != 0 {
            out.push(' ');
        } else if i > 0 {
            out.push('\n');
        }
        out.push_str(&format!("{name:<17}"));
    }
    out.push('\n');
    out
}

pub fn usage_text() -> String {
    "Usage: sstat [options] -j <job(.stepid)>\n\tUse --help for help\n".to_string()
}

pub fn help_text() -> String {
    "Usage: sstat [options] -j <job(.stepid)>\n\
     \n\
     sstat shows the live usage of running jobs (memory, CPU time, bytes read and written,\n\
     GPU), from the samples the nodes send with every heartbeat.\n\
     \n\
     gsched measures a job per node (its cgroup, or its processes: the batch script and the\n\
     tasks of every step on that node), not per step: each line is a whole job, and the\n\
     per-task figures are taken over the job's nodes, each node counting as one task\n\
     (NTasks: the nodes that reported; ...Task: the node's index in the job's node list).\n\
     -j N.batch and -j N.K (a running step) print the job's line under that name.\n\
     MaxRSS is the highest peak of one node (the cgroup's peak, else the highest sample),\n\
     AveRSS and AveVMSize the mean of the samples, AveCPU and MinCPU the CPU time so far;\n\
     disk read and write are the rchar/wchar counts of the job's processes, as Slurm's.\n\
     Pages, CPU frequency, energy and pids are not measured and print empty.\n\
     Errors about jobs that do not run go to stderr; the exit status stays 0 (as sstat's).\n\
     \n\
     \x20 -a, --allsteps          accepted (each line is a whole job already)\n\
     \x20 -e, --helpformat        list the fields -o takes\n\
     \x20 -h, --help              this text\n\
     \x20 -j, --jobs=list         the jobs: N, N_K, N.batch, N.K (also one operand)\n\
     \x20 -n, --noheader          no header lines\n\
     \x20     --noconvert         byte counts as plain numbers\n\
     \x20 -o, --format, --fields=list\n\
     \x20                         fields to print, each name[%width]\n\
     \x20 -p, --parsable          fields followed by |\n\
     \x20 -P, --parsable2         fields separated by |\n\
     \x20     --usage             the usage line\n\
     \x20 -v, --verbose           accepted\n\
     \x20 -V, --version           print the version\n\
     \x20 -i, --pidformat         not supported by gsched (refused)\n"
        .to_string()
}

pub fn main(args: Vec<String>) -> i32 {
    common::run_main(&args, "sstat", run)
}

fn run(prog: &str, args: &[String]) -> Result<i32, Fail> {
    let Some(p) = parse_args(prog, args)?.or_print() else {
        return Ok(0);
    };
    if p.jobs.is_empty() {
        return Err(Fail::error(prog, "You didn't give me any jobs to stat."));
    }
    let (_cfg, client) = common::connect(prog, None)?;
    let api_err =
        |e: gsched_proto::client::ClientError| Fail::error(prog, common::client_error_text(&e));
    let mut filter = JobFilter::default();
    for ((id, task), _) in &p.jobs {
        match task {
            Some(k) => filter.array_tasks.push((*id, *k)),
            None => filter.ids.push(*id),
        }
    }
    let jobs: JobsResponse = client
        .post(
            paths::JOBS_QUERY,
            &JobQuery {
                filter,
                brief: true,
                fields: Vec::new(),
            },
        )
        .map_err(api_err)?;
    let running: Vec<u32> = jobs
        .jobs
        .iter()
        .filter(|j| j.state == JobState::Running)
        .map(|j| j.job_id)
        .collect();
    let wants_steps = p
        .jobs
        .iter()
        .any(|(_, s)| s.as_deref().is_some_and(|s| s.parse::<u32>().is_ok()));
    let running_steps: Vec<(u32, u32)> = if wants_steps && !running.is_empty() {
        let q = gsched_proto::step::StepQuery {
            job_ids: running.clone(),
            running_only: true,
        };
        client
            .post::<_, gsched_proto::step::StepsResponse>(paths::JOBS_STEPS_QUERY, &q)
            .map_err(api_err)?
            .steps
            .iter()
            .map(|s| (s.job_id, s.step_id))
            .collect()
    } else {
        Vec::new()
    };
    let usage = if running.is_empty() {
        Vec::new()
    } else {
        let q = JobUsageQuery {
            job_ids: running,
            series: false,
        };
        client
            .post::<_, JobUsageResponse>(paths::JOBS_USAGE, &q)
            .map_err(api_err)?
            .jobs
    };
    if !p.table.no_header {
        common::out(&p.table.header());
    }
    for o in outcomes(&p, &jobs.jobs, &running_steps, &usage) {
        match o {
            Outcome::Line(l) => common::out(&l),
            Outcome::Error(e) => common::err_line(&format!("{prog}: error: {e}")),
        }
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gsched_proto::api::{ApiError, JobUsageSample};

    fn parse(args: &[&str]) -> Result<Params, Fail> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        match parse_args("sstat", &args)? {
            common::Parsed::Run(p) => Ok(p),
            common::Parsed::Print(t) => panic!("printed {t}"),
        }
    }

    fn node(name: &str, index: u32, peak: u64, cpu: u64, read: u64) -> JobNodeUsage {
        JobNodeUsage {
            node: name.into(),
            node_index: index,
            samples: 3,
            time: 100,
            latest: JobUsageSample {
                job_id: 7,
                rss_bytes: Some(peak / 2),
                cpu_usec: Some(cpu),
                processes: 2,
                ..JobUsageSample::default()
            },
            peak_rss_bytes: Some(peak),
            peak_vsize_bytes: Some(peak * 4),
            ave_rss_bytes: Some(peak / 2),
            ave_vsize_bytes: Some(peak * 2),
            cpu_util_percent: Some(50.0),
            read_bytes: Some(read),
            write_bytes: Some(5095),
            series: Vec::new(),
        }
    }

    fn usage() -> JobUsageInfo {
        JobUsageInfo {
            job_id: 7,
            error: None,
            start_time: 0,
            cpus: 2,
            nodes: vec![
                node("n1", 0, 200 << 20, 61_500_000, 1 << 20),
                node("n2", 1, 100 << 20, 1_500_000, 3 << 20),
            ],
            total: Default::default(),
        }
    }

    use crate::squeue::tests::job;

    #[test]
    fn options_and_fields() {
        let p = parse(&[
            "-j",
            "7.batch,8",
            "-P",
            "-o",
            "jobid,maxrss",
            "--fields=avecpu",
        ])
        .unwrap();
        assert_eq!(p.jobs.len(), 2);
        assert_eq!(p.table.layout, Layout::Parsable2);
        let names: Vec<_> = p.table.columns.iter().map(|c| c.name).collect();
        assert_eq!(names, vec!["JobID", "MaxRSS", "AveCPU"]);
        // Defaults: sstat's long list; an operand is a job list.
        let p = parse(&["9"]).unwrap();
        assert_eq!(p.jobs, vec![((9, None), None)]);
        assert_eq!(p.table.columns.len(), 47);
        assert_eq!(p.table.columns[0].name, "JobID");
        let e = parse(&["-j", "7", "-o", "bogus"]).unwrap_err();
        assert_eq!(
            e.lines,
            vec!["sstat: error: Invalid field requested: \"bogus\""]
        );
        let e = parse(&["--bogus"]).unwrap_err();
        assert_eq!(e.code, 1);
        assert!(e.lines[1].contains("--help"), "{e:?}");
        let e = parse(&["-i", "-j", "7"]).unwrap_err();
        assert!(e.lines[0].contains("--pidformat"), "{e:?}");
        assert!(parse(&["-j", "x"]).is_err());
        assert!(parse(&["1", "2"]).is_err());
        let args = vec!["-e".to_string()];
        match parse_args("sstat", &args).unwrap() {
            common::Parsed::Print(t) => {
                assert!(
                    t.starts_with("AveCPU            AveCPUFreq        AveDiskRead"),
                    "{t}"
                );
                assert!(t.contains("\nMaxPages          MaxPagesNode "), "{t}");
            }
            common::Parsed::Run(_) => panic!("no help"),
        }
    }

    #[test]
    fn values_over_nodes() {
        let p = parse(&[
            "-j",
            "7",
            "-P",
            "-o",
            "JobID,MaxRSS,MaxRSSNode,MaxRSSTask,AveRSS,MinCPU,MinCPUNode,AveCPU,MaxDiskRead,MaxDiskReadTask,AveDiskWrite,NTasks,Nodelist,MaxVMSize,ConsumedEnergy",
        ])
        .unwrap();
        let l = p.line("7", &usage());
        assert_eq!(
            l,
            "7|200M|n1|0|75M|00:01.500|n2|00:31.500|3M|1|5095|2|n[1-2]|800M|\n"
        );
        let p = parse(&["-j", "7", "-P", "--noconvert", "-o", "maxrss"]).unwrap();
        assert_eq!(p.line("7", &usage()), format!("{}\n", 200u64 << 20));
        // No sample yet: the line with what is known.
        let none = JobUsageInfo {
            nodes: vec![],
            ..usage()
        };
        let p = parse(&["-j", "7", "-p", "-o", "jobid,maxrss,ntasks"]).unwrap();
        assert_eq!(p.line("7.batch", &none), "7.batch||0|\n");
    }

    #[test]
    fn tres_strings() {
        let p = parse(&[
            "-j",
            "7",
            "-P",
            "-o",
            "TRESUsageInMax,TRESUsageInMaxNode,TRESUsageInMinTask,TRESUsageInTot,TRESUsageOutAve",
        ])
        .unwrap();
        let l = p.line("7", &usage());
        let f: Vec<&str> = l.trim_end().split('|').collect();
        assert_eq!(f[0], "cpu=00:01:01,fs/disk=3145728,mem=200M,vmem=800M");
        assert_eq!(f[1], "cpu=n1,fs/disk=n2,mem=n1,vmem=n1");
        assert_eq!(f[2], "cpu=1,fs/disk=0,mem=1,vmem=1");
        assert_eq!(f[3], "cpu=00:01:03,fs/disk=4194304,mem=150M,vmem=600M");
        assert_eq!(f[4], "fs/disk=5095");
    }

    #[test]
    fn columns_and_header_are_saccts() {
        let p = parse(&["-j", "7", "-o", "jobid,maxrss,ntasks"]).unwrap();
        assert_eq!(
            p.table.header(),
            "JobID            MaxRSS   NTasks \n------------ ---------- -------- \n"
        );
        assert_eq!(
            p.line("7.batch", &usage()),
            "7.batch            200M        2 \n"
        );
    }

    #[test]
    fn outcomes_follow_sstat() {
        let p = parse(&[
            "-P",
            "-o",
            "jobid,ntasks",
            "-j",
            "7,7.batch,7.3,7.4,8,8.batch,9,10",
        ])
        .unwrap();
        let jobs = vec![
            job(7, JobState::Running),
            job(8, JobState::Completed),
            job(10, JobState::Running),
        ];
        let denied = JobUsageInfo {
            job_id: 10,
            error: Some(ApiError::plain(ErrorCode::AccessDenied)),
            ..JobUsageInfo::default()
        };
        let o = outcomes(&p, &jobs, &[(7, 3)], &[usage(), denied]);
        assert_eq!(
            o,
            vec![
                Outcome::Line("7|2\n".into()),
                Outcome::Line("7.batch|2\n".into()),
                Outcome::Line("7.3|2\n".into()),
                Outcome::Error("StepId=7.4 not found running.".into()),
                Outcome::Error("No steps running for job 8".into()),
                Outcome::Error("StepId=8.batch not found running.".into()),
                Outcome::Error("couldn't get steps for job 9".into()),
                Outcome::Error(
                    "problem getting step_layout for JobId=10: Access/permission denied".into()
                ),
            ]
        );
    }
}
