//! `gscancel` (`scancel`): cancel or signal jobs.
//!
//! Like Slurm 22.05: with only job ids, each id is cancelled (or signalled) directly and ids
//! that are unknown or already finished are ignored silently (reported with `-v`; with
//! `--signal` they still make the exit status 1). With filters (`-u`, `-n`, `-p`, `-t`,
//! `-w`, `--me`), the jobs are loaded, filtered, and the active matches are acted on; listed
//! ids that are not active jobs are reported.

use crate::common::{self, Fail};
use crate::getopt::{self, HasArg, Opt, Ordering};
use crate::signals::parse_signal;
use gsched_proto::api::{
    paths, ErrorCode, JobActionResponse, JobFilter, JobQuery, JobsResponse, SignalJobsRequest,
};
use gsched_proto::client::Client;
use gsched_proto::hostlist;
use gsched_proto::job::{JobId, JobInfo, JobState};

use HasArg::{No, Required as Req};

pub const OPTIONS: &[Opt] = &[
    Opt::new("account", Some('A'), &["account"], Req),
    Opt::new("batch", Some('b'), &["batch"], No),
    Opt::new("ctld", None, &["ctld"], No),
    Opt::new("full", Some('f'), &["full"], No),
    Opt::new("help", None, &["help"], No),
    Opt::new("hurry", Some('H'), &["hurry"], No),
    Opt::new("interactive", Some('i'), &["interactive"], No),
    Opt::new("clusters", Some('M'), &["cluster", "clusters"], Req),
    Opt::new("name", Some('n'), &["jobname", "name"], Req),
    Opt::new("me", None, &["me"], No),
    Opt::new("nodelist", Some('w'), &["nodelist"], Req),
    Opt::new("partition", Some('p'), &["partition"], Req),
    Opt::new("qos", Some('q'), &["qos"], Req),
    Opt::new("quiet", Some('Q'), &["quiet"], No),
    Opt::new("reservation", Some('R'), &["reservation"], Req),
    Opt::new("sibling", None, &["sibling"], Req),
    Opt::new("signal", Some('s'), &["signal"], Req),
    Opt::new("state", Some('t'), &["state"], Req),
    Opt::new("usage", None, &["usage"], No),
    Opt::new("user", Some('u'), &["user"], Req),
    Opt::new("verbose", Some('v'), &["verbose"], No),
    Opt::new("version", Some('V'), &["version"], No),
    Opt::new("wckey", None, &["wckey"], Req),
];

/// The parsed request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Params {
    pub ids: Vec<JobId>,
    /// Array tasks named `N_K`.
    pub tasks: Vec<(JobId, u32)>,
    pub signal: Option<i32>,
    /// `-b/--batch`: the signal goes to the batch shell only.
    pub batch: bool,
    /// `-f/--full`: the signal goes to every process of the job (batch shell, its children,
    /// the steps). With neither, only the job's steps get it, as in Slurm.
    pub full: bool,
    pub name: Option<String>,
    pub partition: Option<String>,
    /// `-A/--account`, `-q/--qos`, `-R/--reservation`.
    pub account: Option<String>,
    pub qos: Option<String>,
    pub reservation: Option<String>,
    /// `-i/--interactive`: ask before each job (the jobs are loaded first, as with filters).
    pub interactive: bool,
    /// `Some(None)`: a Slurm state gsched never uses (`PREEMPTED`, ...), or `SUSPENDED`
    /// (then `state_suspended`): matches only suspended jobs.
    pub state: Option<Option<JobState>>,
    /// `-t SUSPENDED`.
    pub state_suspended: bool,
    /// As given (name or uid), for messages.
    pub user_name: Option<String>,
    pub user_id: Option<u32>,
    pub nodelist: Option<String>,
    pub nodes: Option<Vec<String>>,
    /// -1 quiet, 0 normal, >0 verbose.
    pub verbose: i32,
    pub clusters: Option<String>,
    /// Job steps named `N.K` (gsrun steps): cancelled or signalled one by one.
    pub steps: Vec<(JobId, u32)>,
}

impl Params {
    fn has_filters(&self) -> bool {
        self.name.is_some()
            || self.partition.is_some()
            || self.account.is_some()
            || self.qos.is_some()
            || self.reservation.is_some()
            || self.interactive
            || self.state.is_some()
            || self.user_name.is_some()
            || self.nodelist.is_some()
    }
}

pub type Parsed = common::Parsed<Box<Params>>;

fn is_suspended_name(s: &str) -> bool {
    s.trim().eq_ignore_ascii_case("SUSPENDED") || s.trim().eq_ignore_ascii_case("S")
}

/// Job state names for `-t` (Slurm accepts any job state name).
fn parse_state(s: &str, from_env: bool) -> Result<Option<JobState>, Fail> {
    if let Some(st) = JobState::parse(s) {
        return Ok(Some(st));
    }
    let other = [
        "SUSPENDED",
        "S",
        "PREEMPTED",
        "PR",
        "BOOT_FAIL",
        "BF",
        "DEADLINE",
        "DL",
    ];
    if other.iter().any(|o| o.eq_ignore_ascii_case(s)) {
        return Ok(None);
    }
    let first = if from_env {
        format!("Unrecognized SCANCEL_STATE value: {s}")
    } else {
        format!("Invalid job state specified: {s}")
    };
    Err(Fail::raw(
        1,
        vec![
            first,
            "Valid job states are PENDING, RUNNING, and SUSPENDED".to_string(),
        ],
    ))
}

/// Slurm's `_xlate_job_step_ids` restricted to what gsched has: job ids, array tasks (`N_K`)
/// and het job components (`N+K`, whose id is N + K), several of them comma-joined in one
/// argument. Step ids (`N.S`) are taken apart by `parse_args` (gsrun steps).
pub fn parse_ids(prog: &str, args: &[String]) -> Result<Vec<JobId>, Fail> {
    let (ids, tasks) = parse_refs(prog, args)?;
    match tasks.first() {
        Some((n, k)) => Err(Fail::error(prog, format!("Invalid job id {n}_{k}"))),
        None => Ok(ids),
    }
}

/// Job ids, and array tasks named `N_K` as (N, K).
pub type JobRefs = (Vec<JobId>, Vec<(JobId, u32)>);

/// Job ids and array tasks (`N_K`) named on the command line.
pub fn parse_refs(prog: &str, args: &[String]) -> Result<JobRefs, Fail> {
    let mut out = Vec::new();
    let mut tasks = Vec::new();
    for a in args {
        let mut rest: &str = a;
        loop {
            let digits = rest
                .char_indices()
                .take_while(|(i, c)| c.is_ascii_digit() || (*i == 0 && (*c == '-' || *c == '+')))
                .count();
            let n: i64 = rest[..digits].parse().unwrap_or(0);
            if n <= 0 || n > i64::from(u32::MAX) {
                return Err(Fail::error(prog, format!("Invalid job id {rest}")));
            }
            let mut tail = &rest[digits..];
            if let Some(t) = tail.strip_prefix('+') {
                // `N+K`: component K of het job N, whose own id is N + K.
                let kd = t.bytes().take_while(u8::is_ascii_digit).count();
                match t[..kd]
                    .parse::<u32>()
                    .ok()
                    .and_then(|k| (n as JobId).checked_add(k))
                {
                    Some(id) if kd > 0 => out.push(id),
                    _ => return Err(Fail::error(prog, format!("Invalid job id {rest}"))),
                }
                tail = &t[kd..];
            } else if let Some(t) = tail.strip_prefix("_*") {
                // `N_*`: every task of array N, as `N`.
                out.push(n as JobId);
                tail = t;
            } else if let Some(t) = tail.strip_prefix("_[") {
                // `N_[1-3,5]`: those tasks (the brackets may hold commas).
                let Some((inner, after)) = t.split_once(']') else {
                    return Err(Fail::error(prog, format!("Invalid job id {rest}")));
                };
                match gsched_proto::array::parse(inner, None) {
                    Ok(spec) if spec.throttle.is_none() => {
                        tasks.extend(spec.indices.iter().map(|&k| (n as JobId, k)))
                    }
                    _ => return Err(Fail::error(prog, format!("Invalid job id {rest}"))),
                }
                tail = after;
            } else if let Some(t) = tail.strip_prefix('_') {
                let kd = t.bytes().take_while(u8::is_ascii_digit).count();
                match t[..kd].parse::<u32>() {
                    Ok(k) => tasks.push((n as JobId, k)),
                    Err(_) => return Err(Fail::error(prog, format!("Invalid job id {rest}"))),
                }
                tail = &t[kd..];
            } else {
                out.push(n as JobId);
            }
            if tail.is_empty() {
                break;
            }
            match tail.strip_prefix(',') {
                Some(next) if !next.is_empty() => rest = next,
                Some(_) => break,
                None => return Err(Fail::error(prog, format!("Invalid job id {rest}"))),
            }
        }
    }
    Ok((out, tasks))
}

pub fn parse_args(
    prog: &str,
    args: &[String],
    env: &dyn Fn(&str) -> Option<String>,
    uid: u32,
) -> Result<Parsed, Fail> {
    let mut p = Params::default();
    // Environment first; the command line overrides it.
    let truthy = |v: &str| v.eq_ignore_ascii_case("true") || v.eq_ignore_ascii_case("t");
    common::refuse_env(prog, env, &[("SCANCEL_WCKEY", "--wckey")])?;
    if let Some(v) = env("SCANCEL_ACCOUNT") {
        p.account = Some(v);
    }
    if let Some(v) = env("SCANCEL_QOS") {
        p.qos = Some(v);
    }
    if env("SCANCEL_INTERACTIVE").is_some_and(|v| truthy(&v)) {
        p.interactive = true;
    }
    if let Some(v) = env("SCANCEL_BATCH") {
        p.batch = truthy(&v);
    }
    if let Some(v) = env("SCANCEL_FULL") {
        p.full = truthy(&v);
    }
    if let Some(v) = env("SCANCEL_NAME") {
        p.name = Some(v);
    }
    if let Some(v) = env("SCANCEL_PARTITION") {
        p.partition = Some(v);
    }
    if let Some(v) = env("SCANCEL_STATE") {
        p.state = Some(parse_state(&v, true)?);
        p.state_suspended = is_suspended_name(&v);
    }
    if let Some(v) = env("SCANCEL_USER") {
        p.user_name = Some(v);
    }
    if let Some(v) = env("SCANCEL_VERBOSE") {
        if truthy(&v) {
            p.verbose = 1;
        } else if v.eq_ignore_ascii_case("false") || v.eq_ignore_ascii_case("f") {
            p.verbose = 0;
        }
    }
    if let Some(v) = env("SLURM_CLUSTERS") {
        p.clusters = Some(v);
    }
    let split = getopt::parse_split(args, OPTIONS, Ordering::Permute);
    for (id, arg) in split.opts {
        if let Some(text) = common::info_text(id, help_text, usage_text) {
            return Ok(Parsed::Print(text));
        }
        let arg = arg.unwrap_or_default();
        match id {
            "batch" => {
                p.batch = true;
                p.full = false;
            }
            "full" => {
                p.full = true;
                p.batch = false;
            }
            "ctld" | "hurry" => {}
            "account" => p.account = Some(arg),
            "qos" => p.qos = Some(arg),
            "reservation" => p.reservation = Some(arg),
            "interactive" => p.interactive = true,
            "sibling" | "wckey" => return Err(Fail::not_supported(prog, &format!("--{id}"))),
            "clusters" => p.clusters = Some(arg),
            "me" => p.user_name = Some(uid.to_string()),
            "name" => p.name = Some(arg),
            "nodelist" => p.nodelist = Some(arg),
            "partition" => p.partition = Some(arg),
            "quiet" => p.verbose = -1,
            "signal" => match parse_signal(&arg) {
                Some(s) => p.signal = Some(s),
                None => {
                    return Err(Fail::raw(1, vec![format!("Unknown job signal: {arg}")]));
                }
            },
            "state" => {
                p.state = Some(parse_state(&arg, false)?);
                p.state_suspended = is_suspended_name(&arg);
            }
            "user" => p.user_name = Some(arg),
            "verbose" => p.verbose += 1,
            _ => {}
        }
    }
    if let Some(e) = split.err {
        return Err(Fail::usage(prog, &e, 1));
    }
    // `N.K` names a job step; the rest are jobs, array tasks and het components.
    let (steps, jobs): (Vec<&String>, Vec<&String>) = split.operands.iter().partition(|a| {
        a.split_once('.').is_some_and(|(j, s)| {
            !j.is_empty()
                && !s.is_empty()
                && j.bytes().all(|b| b.is_ascii_digit())
                && s.bytes().all(|b| b.is_ascii_digit())
        })
    });
    for st in steps {
        let (j, s) = st.split_once('.').unwrap_or_default();
        match (j.parse::<JobId>(), s.parse::<u32>()) {
            (Ok(j), Ok(s)) if j > 0 => p.steps.push((j, s)),
            _ => return Err(Fail::error(prog, format!("Invalid job id {st}"))),
        }
    }
    let jobs: Vec<String> = jobs.into_iter().cloned().collect();
    (p.ids, p.tasks) = parse_refs(prog, &jobs)?;
    if let Some(u) = &p.user_name {
        match common::resolve_uid(u) {
            Some(uid) => p.user_id = Some(uid),
            None => return Err(Fail::error(prog, format!("Invalid user name: {u}"))),
        }
    }
    if let Some(n) = &p.nodelist {
        p.nodes = Some(
            hostlist::expand(n)
                .map_err(|_| Fail::error(prog, format!("Invalid node list: {n}")))?,
        );
    }
    if p.ids.is_empty() && p.tasks.is_empty() && p.steps.is_empty() && !p.has_filters() {
        return Err(Fail::error(prog, "No job identification provided"));
    }
    Ok(Parsed::Run(Box::new(p)))
}

/// Whether a job passes `-A/-n/-p/-q/-R/-t/-u/-w` (scancel's `_filter_job_records`).
/// Account and QOS names are stored lower-case, so they compare without case.
pub fn job_matches(p: &Params, job: &JobInfo) -> bool {
    if job.state.is_terminal() {
        return false;
    }
    if p.account
        .as_ref()
        .is_some_and(|a| !a.eq_ignore_ascii_case(job.account()))
    {
        return false;
    }
    if p.qos
        .as_ref()
        .is_some_and(|q| !q.eq_ignore_ascii_case(job.qos()))
    {
        return false;
    }
    if p.reservation
        .as_ref()
        .is_some_and(|r| job.spec.reservation.as_deref() != Some(r.as_str()))
    {
        return false;
    }
    if p.name.as_ref().is_some_and(|n| *n != job.name) {
        return false;
    }
    if p.partition.as_ref().is_some_and(|n| *n != job.partition) {
        return false;
    }
    if let Some(st) = p.state {
        // Slurm compares the base state: a completing job is still RUNNING there, and a
        // suspended one is SUSPENDED, not RUNNING.
        let base = if job.state == JobState::Completing {
            JobState::Running
        } else {
            job.state
        };
        let ok = if job.is_suspended() {
            p.state_suspended
        } else {
            st == Some(base)
        };
        if !ok {
            return false;
        }
    }
    if p.user_id.is_some_and(|u| u != job.user_id) {
        return false;
    }
    if let Some(nodes) = &p.nodes {
        if !job.nodes.iter().any(|n| nodes.contains(n)) {
            return false;
        }
    }
    true
}

/// scancel's `-i` question for one job (on stdout); `y`/`Y` goes on, `n`/`N` or the end of
/// the input skips the job, anything else asks again.
fn confirm(p: &Params, job: &JobInfo, input: &mut dyn std::io::BufRead) -> bool {
    let verb = if p.signal.is_none() {
        "Cancel"
    } else {
        "Signal"
    };
    loop {
        common::out(&format!(
            "{verb} job_id={} name={} partition={} [y/n]? ",
            crate::arrays::job_array_id(job, &Default::default()),
            job.name,
            job.partition
        ));
        let mut line = String::new();
        match input.read_line(&mut line) {
            Ok(0) | Err(_) => {
                common::out("\n");
                return false;
            }
            Ok(_) => match line.bytes().next() {
                Some(b'y' | b'Y') => return true,
                Some(b'n' | b'N') => return false,
                _ => {}
            },
        }
    }
}

/// The outcome of acting on jobs: stderr lines and exit status.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    pub lines: Vec<String>,
    pub code: i32,
}

/// The line `-v` prints for each job acted on.
fn verbose_line(prog: &str, p: &Params, id: JobId) -> String {
    match p.signal {
        None => format!("{prog}: Terminating job {id}"),
        Some(s) => format!("{prog}: Signal {s} to job {id}"),
    }
}

/// Turns the controller's per-job results into messages and an exit status.
pub fn judge(prog: &str, p: &Params, resp: &JobActionResponse) -> Outcome {
    let mut o = Outcome::default();
    for r in &resp.results {
        let Some(e) = &r.error else { continue };
        let gone = matches!(e.code, ErrorCode::InvalidJobId | ErrorCode::JobAlreadyDone);
        if p.verbose > 0 || (!gone && p.verbose >= 0) {
            o.lines.push(format!(
                "{prog}: error: Kill job error on job id {}: {}",
                r.job_id, e.message
            ));
        }
        if !gone || p.signal.is_some() {
            o.code = 1;
        }
    }
    o
}

/// Sends the signal/cancel request for `ids`.
fn act(
    prog: &str,
    client: &Client,
    p: &Params,
    ids: Vec<JobId>,
    tasks: Vec<(JobId, u32)>,
) -> Outcome {
    let mut o = Outcome::default();
    if ids.is_empty() && tasks.is_empty() {
        return o;
    }
    if p.verbose > 0 {
        for id in &ids {
            o.lines.push(verbose_line(prog, p, *id));
        }
        for (n, k) in &tasks {
            o.lines.push(
                verbose_line(prog, p, *n).replace(&format!("job {n}"), &format!("job {n}_{k}")),
            );
        }
    }
    let req = SignalJobsRequest {
        filter: JobFilter {
            ids: ids.clone(),
            array_tasks: tasks,
            ..Default::default()
        },
        signal: p.signal,
        batch_only: p.batch,
        full: p.full,
    };
    match client.post::<_, JobActionResponse>(paths::JOBS_SIGNAL, &req) {
        Ok(resp) => {
            let j = judge(prog, p, &resp);
            o.lines.extend(j.lines);
            o.code = j.code;
        }
        Err(e) => {
            let text = common::client_error_text(&e);
            if p.verbose >= 0 {
                for id in &ids {
                    o.lines.push(format!(
                        "{prog}: error: Kill job error on job id {id}: {text}"
                    ));
                }
            }
            o.code = 1;
        }
    }
    o
}

/// Selects the jobs to act on when filters are given; reports listed ids that are not
/// active jobs.
pub fn select(prog: &str, p: &Params, jobs: &[JobInfo]) -> (Vec<JobId>, Outcome) {
    let mut o = Outcome::default();
    for id in &p.ids {
        let active = jobs.iter().any(|j| {
            (j.job_id == *id || j.array.is_some_and(|a| a.job_id == *id)) && !j.state.is_terminal()
        });
        if !active {
            o.code = 1;
            if p.verbose >= 0 {
                o.lines.push(format!(
                    "{prog}: error: Kill job error on job id {id}: Invalid job id specified"
                ));
            }
        }
    }
    let named = JobFilter {
        ids: p.ids.clone(),
        array_tasks: p.tasks.clone(),
        ..Default::default()
    };
    let chosen: Vec<JobId> = jobs
        .iter()
        .filter(|j| named.names(j))
        .filter(|j| job_matches(p, j))
        .map(|j| j.job_id)
        .collect();
    if chosen.is_empty() && p.verbose > 0 {
        let mut m = String::new();
        if let Some(n) = &p.name {
            m.push_str(&format!("job_name={n} "));
        }
        if let Some(n) = &p.nodelist {
            m.push_str(&format!("nodelist={n} "));
        }
        if let Some(n) = &p.partition {
            m.push_str(&format!("partition={n} "));
        }
        if let Some(s) = p.state {
            let name = s.map(JobState::long).unwrap_or("SUSPENDED");
            m.push_str(&format!("state={name} "));
        }
        if let Some(u) = &p.user_name {
            m.push_str(&format!("user_name={u} "));
        }
        if !m.is_empty() {
            o.lines.push(format!(
                "{prog}: error: No active jobs match ALL job filters, including: {m}"
            ));
        }
    }
    (chosen, o)
}

/// `gscancel` entry point.
pub fn main(args: Vec<String>) -> i32 {
    common::run_main(&args, "scancel", run)
}

fn run(prog: &str, args: &[String]) -> Result<i32, Fail> {
    let Some(p) = parse_args(prog, args, &common::env_var, common::current_uid())?.or_print()
    else {
        return Ok(0);
    };
    let (_, client) = common::connect(prog, p.clusters.as_deref())?;
    let mut step_code = 0;
    for &(job_id, step_id) in &p.steps {
        let req = gsched_proto::step::StepSignalRequest {
            job_id,
            step_id,
            signal: p.signal,
        };
        if let Err(e) = client.post::<_, gsched_proto::api::Ack>(paths::JOBS_STEPS_SIGNAL, &req) {
            step_code = 1;
            if p.verbose >= 0 {
                common::err_line(&format!(
                    "{prog}: error: Kill job error on job id {job_id}.{step_id}: {}",
                    common::client_error_text(&e)
                ));
            }
        }
    }
    if !p.steps.is_empty() && p.ids.is_empty() && p.tasks.is_empty() && !p.has_filters() {
        return Ok(step_code);
    }
    let outcome = if !p.has_filters() {
        act(prog, &client, &p, p.ids.clone(), p.tasks.clone())
    } else {
        let filter = JobFilter {
            ids: p.ids.clone(),
            array_tasks: p.tasks.clone(),
            user_ids: p.user_id.into_iter().collect(),
            ..Default::default()
        };
        let resp: JobsResponse = client
            .post(
                paths::JOBS_QUERY,
                &JobQuery {
                    filter,
                    brief: true,
                    fields: Vec::new(),
                },
            )
            .map_err(|e| {
                Fail::raw(
                    1,
                    vec![format!(
                        "slurm_load_jobs error: {}",
                        common::client_error_text(&e)
                    )],
                )
            })?;
        let (mut ids, mut o) = select(prog, &p, &resp.jobs);
        if p.interactive {
            let mut stdin = std::io::stdin().lock();
            ids.retain(|id| match resp.jobs.iter().find(|j| j.job_id == *id) {
                Some(j) => confirm(&p, j, &mut stdin),
                None => false,
            });
        }
        let a = act(prog, &client, &p, ids, Vec::new());
        o.lines.extend(a.lines);
        o.code = o.code.max(a.code);
        o
    };
    for l in &outcome.lines {
        common::err_line(l);
    }
    Ok(outcome.code.max(step_code))
}

pub fn usage_text() -> String {
    "Usage: scancel [-A account] [--batch] [--full] [--interactive] [-n job_name]\n\
     \x20              [-p partition] [-Q] [-q qos] [-R reservation] [-s signal | integer]\n\
     \x20              [-t PENDING | RUNNING | SUSPENDED] [--usage] [-u user_name]\n\
     \x20              [--hurry] [-V] [-v] [-w hosts...] [--wckey=wckey]\n\
     \x20              [job_id[_array_id][.step_id]]\n"
        .to_string()
}

pub fn help_text() -> String {
    "Usage: scancel [OPTIONS] [job_id[_array_id][.step_id]]\n\
     \x20 -A, --account=account           act only on jobs charging this account\n\
     \x20 -b, --batch                     signal batch shell for specified job\n\
     \x20 -f, --full                      signal batch shell and all steps for specified job\n\
     \x20 -H, --hurry                     avoid burst buffer stage out\n\
     \x20 -i, --interactive               require response from user for each job\n\
     \x20 -M, --clusters                  clusters to issue commands to (only the local\n\
     \x20                                 cluster here).\n\
     \x20     --me                        act only on jobs of the invoking user\n\
     \x20 -n, --name=job_name             act only on jobs with this name\n\
     \x20 -p, --partition=partition       act only on jobs in this partition\n\
     \x20 -Q, --quiet                     disable warnings\n\
     \x20 -q, --qos=qos                   act only on jobs with this quality of service\n\
     \x20 -R, --reservation=reservation   act only on jobs with this reservation\n\
     \x20 -s, --signal=name | integer     signal to send to job, default is SIGKILL;\n\
     \x20                                 without -b or -f only the job's steps get it\n\
     \x20 -t, --state=states              act only on jobs in this state.  Valid job\n\
     \x20                                 states are PENDING, RUNNING and SUSPENDED\n\
     \x20 -u, --user=user_name            act only on jobs of this user\n\
     \x20 -V, --version                   output version information and exit\n\
     \x20 -v, --verbose                   verbosity level\n\
     \x20 -w, --nodelist                  act only on jobs on these nodes\n\
     \n\
     Not supported by gsched yet: --sibling, --wckey.\n\
     \n\
     Help options:\n\
     \x20 --help                          show this help message\n\
     \x20 --usage                         display brief usage message\n"
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::squeue::tests::job;
    use gsched_proto::api::{ApiError, JobActionResult};

    fn parse(args: &[&str]) -> Result<Parsed, Fail> {
        let a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        parse_args("scancel", &a, &|_| None, 1000)
    }

    fn run_params(args: &[&str]) -> Params {
        match parse(args).unwrap() {
            Parsed::Run(p) => *p,
            Parsed::Print(_) => panic!(),
        }
    }

    #[test]
    fn id_parsing() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            parse_ids("scancel", &s(&["12", "13,14"])).unwrap(),
            vec![12, 13, 14]
        );
        assert_eq!(
            parse_refs("scancel", &s(&["12_3,14", "15_0"])).unwrap(),
            (vec![14], vec![(12, 3), (15, 0)])
        );
        // `N+K` names het job component K, id N + K.
        assert_eq!(
            parse_refs("scancel", &s(&["12+1,20+0"])).unwrap(),
            (vec![13, 20], vec![])
        );
        // Ranges of array tasks and `N_*`.
        assert_eq!(
            parse_refs("scancel", &s(&["12_[1-3,5],14_*", "15_[0]"])).unwrap(),
            (vec![14], vec![(12, 1), (12, 2), (12, 3), (12, 5), (15, 0)])
        );
        for bad in [
            "12_x",
            "12_",
            "12+",
            "12+x",
            "12_[1-",
            "12_[a]",
            "12_[1-3%2]",
        ] {
            assert!(parse_refs("scancel", &s(&[bad])).is_err(), "{bad}");
        }
        for bad in ["INVALID", "0", "12_3", "12.0", "12x", "-5"] {
            let e = parse_ids("scancel", &s(&[bad])).unwrap_err();
            assert_eq!(
                e.lines,
                vec![format!("scancel: error: Invalid job id {bad}")]
            );
            assert_eq!(e.code, 1);
        }
        let e = parse_ids("scancel", &s(&["12,abc"])).unwrap_err();
        assert_eq!(e.lines, vec!["scancel: error: Invalid job id abc"]);
    }

    #[test]
    fn options() {
        let p = run_params(&["12", "--signal", "SIGUSR1", "-b"]);
        assert_eq!(p.ids, vec![12]);
        assert_eq!(p.signal, Some(10));
        assert!(p.batch);
        let e = parse(&["-s", "FOO", "1"]).unwrap_err();
        assert_eq!(e.lines, vec!["Unknown job signal: FOO"]);
        let e = parse(&[]).unwrap_err();
        assert_eq!(
            e.lines,
            vec!["scancel: error: No job identification provided"]
        );
        let e = parse(&["-t", "bogus"]).unwrap_err();
        assert_eq!(e.lines[0], "Invalid job state specified: bogus");
        let p = run_params(&["-i", "1"]);
        assert!(p.interactive && p.has_filters());
        let p = run_params(&["-A", "Physics", "-q", "high", "-R", "maint"]);
        let mut j = job(1, JobState::Running);
        j.spec.account = Some("physics".into());
        j.spec.qos = Some("high".into());
        j.spec.reservation = Some("maint".into());
        assert!(job_matches(&p, &j));
        j.spec.reservation = None;
        assert!(!job_matches(&p, &j));
        let p = run_params(&["-s", "USR1", "-b", "-f", "1"]);
        assert!(p.full && !p.batch);
        let p = run_params(&["-s", "USR1", "-f", "-b", "1"]);
        assert!(!p.full && p.batch);
        let p = run_params(&["--me"]);
        assert_eq!(p.user_id, Some(1000));
        let p = run_params(&["-u", "root", "-t", "pd", "-n", "x"]);
        assert_eq!(p.user_id, Some(0));
        assert_eq!(p.state, Some(Some(JobState::Pending)));
        let p = run_params(&["-t", "SUSPENDED"]);
        assert_eq!(p.state, Some(None));
        assert!(!job_matches(&p, &job(1, JobState::Running)));
        let e = parse(&["-u", "no-such-user-gsched"]).unwrap_err();
        assert_eq!(
            e.lines,
            vec!["scancel: error: Invalid user name: no-such-user-gsched"]
        );
        assert!(matches!(parse(&["-V"]).unwrap(), Parsed::Print(s) if s == "slurm 22.05.8\n"));
        let e = parse(&["--bogus"]).unwrap_err();
        assert_eq!(e.lines[1], "Try \"scancel --help\" for more information");
    }

    fn resp(v: &[(u32, Option<ErrorCode>)]) -> JobActionResponse {
        JobActionResponse {
            results: v
                .iter()
                .map(|(id, e)| JobActionResult {
                    job_id: *id,
                    error: e.map(ApiError::plain),
                })
                .collect(),
        }
    }

    #[test]
    fn judging_results() {
        let p = run_params(&["1", "2", "3"]);
        let r = resp(&[
            (1, None),
            (2, Some(ErrorCode::JobAlreadyDone)),
            (3, Some(ErrorCode::InvalidJobId)),
        ]);
        assert_eq!(judge("scancel", &p, &r), Outcome::default());
        let pv = run_params(&["-v", "1", "2"]);
        let o = judge("scancel", &pv, &r);
        assert_eq!(o.code, 0);
        assert_eq!(
            o.lines,
            vec![
                "scancel: error: Kill job error on job id 2: Job/step already completing or completed",
                "scancel: error: Kill job error on job id 3: Invalid job id specified"
            ]
        );
        let denied = resp(&[(4, Some(ErrorCode::AccessDenied))]);
        let o = judge("scancel", &p, &denied);
        assert_eq!(o.code, 1);
        assert_eq!(
            o.lines,
            vec!["scancel: error: Kill job error on job id 4: Access/permission denied"]
        );
        let pq = run_params(&["-Q", "4"]);
        assert_eq!(
            judge("scancel", &pq, &denied),
            Outcome {
                lines: vec![],
                code: 1
            }
        );
        let ps = run_params(&["-s", "USR1", "2"]);
        assert_eq!(judge("scancel", &ps, &r).code, 1);
        assert_eq!(
            verbose_line("scancel", &ps, 2),
            "scancel: Signal 10 to job 2"
        );
        assert_eq!(verbose_line("scancel", &p, 2), "scancel: Terminating job 2");
    }

    #[test]
    fn selecting_with_filters() {
        let mut a = job(1, JobState::Running);
        a.name = "x".into();
        let b = job(2, JobState::Pending);
        let c = job(3, JobState::Completed);
        let jobs = vec![a, b, c];
        let p = run_params(&["-n", "x"]);
        assert_eq!(select("scancel", &p, &jobs).0, vec![1]);
        let p = run_params(&["-t", "PENDING"]);
        assert_eq!(select("scancel", &p, &jobs).0, vec![2]);
        let p = run_params(&["-p", "debug", "2", "3", "9"]);
        let (ids, o) = select("scancel", &p, &jobs);
        assert_eq!(ids, vec![2]);
        assert_eq!(o.code, 1);
        assert_eq!(
            o.lines,
            vec![
                "scancel: error: Kill job error on job id 3: Invalid job id specified",
                "scancel: error: Kill job error on job id 9: Invalid job id specified"
            ]
        );
        let p = run_params(&["-v", "-n", "nope"]);
        let (ids, o) = select("scancel", &p, &jobs);
        assert!(ids.is_empty());
        assert_eq!(
            o.lines,
            vec!["scancel: error: No active jobs match ALL job filters, including: job_name=nope "]
        );
        let p = run_params(&["-w", "node02"]);
        assert_eq!(select("scancel", &p, &jobs).0, vec![1]);
    }
}
