//! `gsprio` (`sprio`): the factors of pending jobs' multifactor priority.
//!
//! The controller computes each pending job's priority in every scheduling pass and keeps
//! the weighted factors with the job (`priority_factors` of the jobs query, also behind
//! `PriorityFactors=` of `gscontrol show job`), so this command only reads the queue and the
//! weights of the config. As in sprio, the default columns are the job, its partition, the
//! priority, the site factor and one column per factor whose weight is not zero (the user
//! only with `-u`); `-l` shows every factor, `-n` the factors before weighting (0..1), `-w`
//! the weights, `-o` a format of sprio's letters.

use crate::common::{self, split_list, Fail};
use crate::format::{self, Kind};
use crate::getopt::{self, HasArg, Opt, Ordering};
use gsched_proto::api::{paths, JobFilter, JobQuery, JobsResponse};
use gsched_proto::config::{PriorityConfig, PriorityType};
use gsched_proto::job::{JobInfo, JobState, PriorityFactors};

use HasArg::{No, Optional as Opt_, Required as Req};

pub const OPTIONS: &[Opt] = &[
    Opt::new("noheader", Some('h'), &["noheader"], No),
    Opt::new("help", None, &["help"], No),
    Opt::new("jobs", Some('j'), &["jobs"], Opt_),
    Opt::new("long", Some('l'), &["long"], No),
    Opt::new("clusters", Some('M'), &["cluster", "clusters"], Req),
    Opt::new("norm", Some('n'), &["norm"], No),
    Opt::new("format", Some('o'), &["format"], Req),
    Opt::new("partition", Some('p'), &["partition"], Req),
    Opt::new("sort", Some('S'), &["sort"], Req),
    Opt::new("user", Some('u'), &["user", "users"], Req),
    Opt::new("usage", None, &["usage"], No),
    Opt::new("verbose", Some('v'), &["verbose"], No),
    Opt::new("version", Some('V'), &["version"], No),
    Opt::new("weights", Some('w'), &["weights"], No),
    Opt::new("federation", None, &["federation"], No),
    Opt::new("local", None, &["local"], No),
    Opt::new("sibling", None, &["sibling"], No),
];

/// A sprio column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum F {
    Invalid,
    JobId,
    PartitionName,
    User,
    Cluster,
    PriorityNorm,
    Priority,
    Site,
    AgeNorm,
    Age,
    AssocNorm,
    Assoc,
    FairshareNorm,
    Fairshare,
    JobSizeNorm,
    JobSize,
    PartitionNorm,
    Partition,
    QosNorm,
    Qos,
    Nice,
    TresNorm,
    Tres,
    QosName,
    Account,
}

const LETTERS: &[(char, F)] = &[
    ('a', F::AgeNorm),
    ('A', F::Age),
    ('b', F::AssocNorm),
    ('B', F::Assoc),
    ('c', F::Cluster),
    ('f', F::FairshareNorm),
    ('F', F::Fairshare),
    ('i', F::JobId),
    ('j', F::JobSizeNorm),
    ('J', F::JobSize),
    ('n', F::QosName),
    ('N', F::Nice),
    ('o', F::Account),
    ('p', F::PartitionNorm),
    ('P', F::Partition),
    ('q', F::QosNorm),
    ('Q', F::Qos),
    ('r', F::PartitionName),
    ('S', F::Site),
    ('t', F::TresNorm),
    ('T', F::Tres),
    ('u', F::User),
    ('y', F::PriorityNorm),
    ('Y', F::Priority),
];

impl Kind for F {
    const INVALID: F = F::Invalid;
    const LETTERS: &'static [(char, F)] = LETTERS;
    const NAMES: &'static [(&'static str, F)] = &[];
    const LETTER_WHAT: &'static str = "job";

    fn name_width(spec: &str) -> (usize, &str) {
        (0, spec)
    }
}

fn header(k: F) -> &'static str {
    match k {
        F::Invalid => "",
        F::JobId => "JOBID",
        F::PartitionName | F::PartitionNorm | F::Partition => "PARTITION",
        F::User => "USER",
        F::Cluster => "CLUSTER",
        F::PriorityNorm | F::Priority => "PRIORITY",
        F::Site => "SITE",
        F::AgeNorm | F::Age => "AGE",
        F::AssocNorm | F::Assoc => "ASSOC",
        F::FairshareNorm | F::Fairshare => "FAIRSHARE",
        F::JobSizeNorm | F::JobSize => "JOBSIZE",
        F::QosNorm | F::Qos => "QOS",
        F::Nice => "NICE",
        F::TresNorm | F::Tres => "TRES",
        F::QosName => "QOSNAME",
        F::Account => "ACCOUNT",
    }
}

/// Parsed command line.
#[derive(Debug, Clone, Default)]
pub struct Params {
    pub no_header: bool,
    pub jobs: Option<Vec<u32>>,
    pub long: bool,
    pub norm: bool,
    pub format: Option<String>,
    pub partitions: Option<Vec<String>>,
    pub users: Option<Vec<String>>,
    pub weights: bool,
    pub clusters: Option<String>,
}

pub fn parse_args(
    prog: &str,
    args: &[String],
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<common::Parsed<Params>, Fail> {
    let split = getopt::parse_split(args, OPTIONS, Ordering::Permute);
    if let Some(e) = &split.err {
        return Err(Fail::usage(prog, e, 1));
    }
    let mut p = Params::default();
    let mut operands = split.operands.into_iter();
    for (id, arg) in split.opts {
        if let Some(t) = common::info_text(id, help_text, usage_text) {
            return Ok(common::Parsed::Print(t));
        }
        let arg_given = arg.is_some();
        let val = arg.unwrap_or_default();
        match id {
            "noheader" => p.no_header = true,
            "jobs" => {
                // `-j 1,2` as sprio takes it: the list may follow as the next word.
                let val = match arg_given {
                    true => val,
                    false => operands.next().unwrap_or_default(),
                };
                let mut ids = Vec::new();
                for s in split_list(&val) {
                    ids.push(
                        s.trim()
                            .parse::<u32>()
                            .map_err(|_| Fail::error(prog, format!("Invalid job id: {s}")))?,
                    );
                }
                p.jobs = Some(ids);
            }
            "long" => p.long = true,
            "norm" => p.norm = true,
            "format" => p.format = Some(val),
            "partition" => p.partitions = Some(split_list(&val)),
            "user" => p.users = Some(split_list(&val)),
            "weights" => p.weights = true,
            "clusters" => p.clusters = Some(val),
            "sort" | "sibling" => return Err(Fail::not_supported(prog, &format!("--{id}"))),
            _ => {}
        }
    }
    if let Some(o) = operands.next() {
        return Err(Fail::error(prog, format!("Unrecognized option: {o}")));
    }
    if p.long && p.format.is_some() {
        return Err(Fail::raw(
            1,
            vec![format!(
                "{prog}: fatal: Options -o(--format) and -l(--long) are mutually exclusive. Please remove one and retry."
            )],
        ));
    }
    if p.format.is_none() && !p.long {
        p.format = env("SPRIO_FORMAT");
    }
    Ok(common::Parsed::Run(p))
}

/// sprio's default format for these weights.
fn default_format(p: &Params, w: &PriorityConfig) -> String {
    let (norm, long) = (p.norm, p.long);
    if long {
        return if norm {
            "%.15i %9r %.8u %10y %10a %10b %10f %10j %10p %10q %20t".into()
        } else {
            "%.15i %9r %.8u %.10Y %.10S %.10A %.10B %.10F %.10J %.10P %.10Q %.11N %.20T".into()
        };
    }
    let mut f = String::from("%.15i %9r");
    if p.users.is_some() {
        f.push_str(" %.8u");
    }
    let cols: [(u32, &str, &str); 5] = [
        (w.weight_age, " %10a", " %.10A"),
        (w.weight_fairshare, " %10f", " %.10F"),
        (w.weight_job_size, " %10j", " %.10J"),
        (w.weight_partition, " %10p", " %.10P"),
        (w.weight_qos, " %10q", " %.10Q"),
    ];
    f.push_str(if norm { " %10y" } else { " %.10Y %.10S" });
    for (weight, n, wtd) in cols {
        if weight != 0 {
            f.push_str(if norm { n } else { wtd });
        }
    }
    f
}

fn norm(v: f64, weight: u32) -> f64 {
    if weight == 0 {
        0.0
    } else {
        v / f64::from(weight)
    }
}

/// One cell of a job line.
fn value(k: F, j: &JobInfo, f: &PriorityFactors, w: &PriorityConfig, cluster: &str) -> String {
    let n7 = |v: f64| format!("{v:.7}");
    let n0 = |v: f64| format!("{v:.0}");
    match k {
        F::Invalid => String::new(),
        F::JobId => j.display_id(),
        F::PartitionName => j.partition.clone(),
        F::User => j.user_name.clone(),
        F::Cluster => cluster.to_string(),
        F::PriorityNorm => format!("{:16.14}", f64::from(j.priority) / f64::from(u32::MAX)),
        F::Priority => j.priority.to_string(),
        F::Site => "0".into(),
        F::AgeNorm => n7(norm(f.age, w.weight_age)),
        F::Age => n0(f.age),
        F::AssocNorm => n7(0.0),
        F::Assoc => "0".into(),
        F::FairshareNorm => n7(norm(f.fairshare, w.weight_fairshare)),
        F::Fairshare => n0(f.fairshare),
        F::JobSizeNorm => n7(norm(f.job_size, w.weight_job_size)),
        F::JobSize => n0(f.job_size),
        F::PartitionNorm => n7(norm(f.partition, w.weight_partition)),
        F::Partition => n0(f.partition),
        F::QosNorm => n7(norm(f.qos, w.weight_qos)),
        F::Qos => n0(f.qos),
        F::Nice => f.nice.to_string(),
        F::TresNorm | F::Tres => String::new(),
        F::QosName => j.qos().to_string(),
        F::Account => j.account().to_string(),
    }
}

/// The `-w` line: the weights under the factor columns.
fn weight_value(k: F, w: &PriorityConfig) -> String {
    match k {
        F::JobId => "Weights".into(),
        F::Site => "1".into(),
        F::Age | F::AgeNorm => w.weight_age.to_string(),
        F::Fairshare | F::FairshareNorm => w.weight_fairshare.to_string(),
        F::JobSize | F::JobSizeNorm => w.weight_job_size.to_string(),
        F::Partition | F::PartitionNorm => w.weight_partition.to_string(),
        F::Qos | F::QosNorm => w.weight_qos.to_string(),
        _ => String::new(),
    }
}

/// The whole output for `jobs` (already filtered to what the user asked).
pub fn listing(p: &Params, jobs: &[JobInfo], w: &PriorityConfig, cluster: &str) -> String {
    let fmt_text = p.format.clone().unwrap_or_else(|| default_format(p, w));
    let fmt = format::parse::<F>(&fmt_text);
    let mut s = String::new();
    for e in &fmt.errors {
        s.push_str(&format!("{e}\n"));
    }
    let cell = |f: &format::Field<F>, v: &str| common::print_field(v, f.width, f.right, true);
    if !p.no_header {
        s.push_str(&fmt.line(|f| cell(f, header(f.kind))));
    }
    if p.weights {
        s.push_str(&fmt.line(|f| cell(f, &weight_value(f.kind, w))));
        return s;
    }
    for j in jobs {
        // A priority set by an administrator: every factor 0, as sprio shows it.
        let fac = j.priority_factors.unwrap_or_default();
        s.push_str(&fmt.line(|f| cell(f, &value(f.kind, j, &fac, w, cluster))));
    }
    s
}

/// Pending jobs that are not held, that the filters select.
pub fn select(p: &Params, jobs: Vec<JobInfo>) -> Vec<JobInfo> {
    jobs.into_iter()
        .filter(|j| j.state == JobState::Pending && !j.held && j.priority > 0)
        .filter(|j| {
            p.jobs
                .as_ref()
                .is_none_or(|ids| ids.contains(&j.job_id) || ids.contains(&j.array_job_id()))
        })
        .filter(|j| {
            p.users.as_ref().is_none_or(|u| {
                u.iter()
                    .any(|x| x == &j.user_name || *x == j.user_id.to_string())
            })
        })
        .filter(|j| {
            p.partitions
                .as_ref()
                .is_none_or(|ps| ps.contains(&j.partition))
        })
        .collect()
}

/// `gsprio` entry point.
pub fn main(args: Vec<String>) -> i32 {
    common::run_main(&args, "sprio", run)
}

fn run(prog: &str, args: &[String]) -> Result<i32, Fail> {
    let Some(p) = parse_args(prog, args, &common::env_var)?.or_print() else {
        return Ok(0);
    };
    let (cfg, client) = common::connect(prog, p.clusters.as_deref())?;
    if cfg.priority.priority_type != PriorityType::Multifactor {
        return Err(Fail::raw(
            1,
            vec![format!(
                "You are not running a supported priority plugin\n({}).\nOnly 'priority/multifactor' is supported.",
                cfg.priority.priority_type
            )],
        ));
    }
    let jobs = if p.weights {
        Vec::new()
    } else {
        let r: JobsResponse = client
            .post(
                paths::JOBS_QUERY,
                &JobQuery {
                    brief: true,
                    fields: Vec::new(),
                    filter: JobFilter {
                        states: vec![JobState::Pending],
                        ..JobFilter::default()
                    },
                },
            )
            .map_err(|e| {
                Fail::raw(
                    1,
                    vec![format!(
                        "Couldn't get priority factors from controller: {}",
                        common::client_error_text(&e)
                    )],
                )
            })?;
        select(&p, r.jobs)
    };
    if p.jobs.is_some() && jobs.is_empty() && !p.weights {
        common::out("Unable to find jobs matching user/id(s) specified\n");
        return Ok(0);
    }
    common::out(&listing(&p, &jobs, &cfg.priority, &cfg.cluster_name));
    Ok(0)
}

pub fn usage_text() -> String {
    "Usage: sprio [-j jid[s]] [-u user_name[s]] [-o format] [-p partitions]\n\
     \x20    [--federation] [--local] [--usage] [-hlnvVw]\n"
        .to_string()
}

pub fn help_text() -> String {
    "Usage: sprio [OPTIONS]\n\
     \x20 -h, --noheader                  no headers on output\n\
     \x20 -j, --jobs                      comma separated list of jobs\n\
     \x20                                 to view, default is all\n\
     \x20 -l, --long                      long report\n\
     \x20 -M, --cluster=cluster_name      cluster to issue commands to (only the\n\
     \x20                                 local cluster here)\n\
     \x20 -n, --norm                      display normalized values\n\
     \x20 -o, --format=format             format specification\n\
     \x20 -p, --partition=partition_name  comma separated list of partitions\n\
     \x20 -u, --user=user_name            comma separated list of users to view\n\
     \x20 -v, --verbose                   verbosity level\n\
     \x20 -V, --version                   output version information and exit\n\
     \x20 -w, --weights                   show the weights for each priority factor\n\
     \n\
     Not supported by gsched yet: -S/--sort, --sibling.\n\
     \n\
     Help options:\n\
     \x20 --help                          show this help message\n\
     \x20 --usage                         display a brief summary of sprio options\n"
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use gsched_proto::job::Reason;

    fn job(id: u32, prio: u32, f: PriorityFactors) -> JobInfo {
        JobInfo {
            special_exit: false,
            epilog_running: false,
            configuring: false,
            gpus: Vec::new(),
            job_id: id,
            name: "j".into(),
            user_id: 1001,
            group_id: 1001,
            user_name: "alice".into(),
            group_name: "alice".into(),
            state: JobState::Pending,
            reason: Reason::Priority,
            partition: "debug".into(),
            priority: prio,
            time_limit: None,
            submit_time: 0,
            eligible_time: Some(0),
            start_time: None,
            end_time: None,
            num_nodes: 1,
            num_cpus: 1,
            num_tasks: 1,
            mem_per_node_mb: 0,
            nodes: Vec::new(),
            cpus_per_node: Vec::new(),
            exit_code: 0,
            exit_signal: 0,
            cancelled_by: None,
            held: false,
            expected_start: None,
            sched_nodes: Vec::new(),
            dependency: None,
            requeue: true,
            restarts: 0,
            array: None,
            priority_factors: Some(f),
            het: None,
            usage: None,
            suspended_since: None,
            suspended_secs: 0,
            invalid: None,
            spec: Default::default(),
        }
    }

    fn params(args: &[&str]) -> Params {
        let a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        match parse_args("sprio", &a, &|_| None).unwrap() {
            common::Parsed::Run(p) => p,
            common::Parsed::Print(_) => panic!(),
        }
    }

    fn weights() -> PriorityConfig {
        PriorityConfig {
            priority_type: PriorityType::Multifactor,
            weight_age: 1000,
            weight_fairshare: 10_000,
            weight_qos: 2000,
            ..PriorityConfig::default()
        }
    }

    #[test]
    fn default_long_normalized_and_weights() {
        let f = PriorityFactors {
            age: 250.0,
            fairshare: 5000.0,
            job_size: 0.0,
            partition: 0.0,
            qos: 2000.0,
            nice: 0,
        };
        let jobs = vec![job(7, 7250, f)];
        let w = weights();
        // Only the factors with a weight; no user column without -u.
        assert_eq!(
            listing(&params(&[]), &jobs, &w, "c"),
            "          JOBID PARTITION   PRIORITY       SITE        AGE  FAIRSHARE        QOS\n\
             \x20             7 debug           7250          0        250       5000       2000\n"
        );
        assert_eq!(
            listing(&params(&["-n", "-u", "alice", "-h"]), &jobs, &w, "c"),
            "              7 debug        alice 0.00000168 0.2500000  0.5000000  1.0000000 \n"
        );
        assert_eq!(
            listing(&params(&["-w"]), &[], &w, "c"),
            "          JOBID PARTITION   PRIORITY       SITE        AGE  FAIRSHARE        QOS\n\
             \x20       Weights                               1       1000      10000       2000\n"
        );
        let long = listing(&params(&["-l"]), &jobs, &w, "c");
        assert!(long.starts_with(
            "          JOBID PARTITION     USER   PRIORITY       SITE        AGE      ASSOC  FAIRSHARE    JOBSIZE  PARTITION        QOS        NICE"
        ), "{long}");
        assert_eq!(
            listing(&params(&["-h", "-o", "%i|%Q|%N"]), &jobs, &w, "c"),
            "7|2000|0\n"
        );
    }

    #[test]
    fn filters() {
        let f = PriorityFactors::default();
        let mut a = job(1, 1, f);
        a.user_name = "bob".into();
        let b = job(2, 1, f);
        let mut held = job(3, 0, f);
        held.held = true;
        let sel = select(
            &params(&["-u", "alice"]),
            vec![a.clone(), b.clone(), held.clone()],
        );
        assert_eq!(sel.iter().map(|j| j.job_id).collect::<Vec<_>>(), vec![2]);
        let sel = select(&params(&["-j", "1,3"]), vec![a, b, held]);
        assert_eq!(sel.iter().map(|j| j.job_id).collect::<Vec<_>>(), vec![1]);
        assert!(parse_args("sprio", &["-S".into(), "y".into()], &|_| None).is_err());
        assert!(parse_args("sprio", &["-l".into(), "-o".into(), "%i".into()], &|_| None).is_err());
        let env = |k: &str| (k == "SPRIO_FORMAT").then(|| "%i %n %o".to_string());
        let Ok(common::Parsed::Run(p)) = parse_args("sprio", &[], &env) else {
            panic!()
        };
        let mut j = job(4, 9, PriorityFactors::default());
        j.spec.qos = Some("high".into());
        j.spec.account = Some("physics".into());
        // An administrator's priority: shown with zero factors.
        j.priority_factors = None;
        assert_eq!(
            listing(&p, &[j], &weights(), "c"),
            "JOBID QOSNAME ACCOUNT\n4 high physics\n"
        );
    }
}
