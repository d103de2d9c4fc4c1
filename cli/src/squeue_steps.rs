//! `gsqueue -s/--steps`: the running job steps in squeue's step layout: every running batch
//! job's batch step (`N.batch`, as Slurm lists it) and the `gsrun` steps; array tasks' steps
//! are named `A_K.batch`/`A_K.N` as Slurm names them. Step
//! format letters (Slurm's `squeue -s -o`): `%i` step id, `%j` step name, `%P` partition,
//! `%u` user, `%U` uid, `%M` time used, `%l` time limit, `%S` start time, `%N` nodes,
//! `%A` number of tasks, `%b` (gres) empty; `%[.][size]` pads (`.`: right-justified).
//! Default: `%.15i %.8j %.9P %.8u %.9M %N`.

use crate::common::{self, Fail};
use gsched_proto::api::paths;
use gsched_proto::api::{JobFilter, JobQuery, JobsResponse};
use gsched_proto::client::Client;
use gsched_proto::hostlist;
use gsched_proto::job::{JobId, JobInfo, JobState};
use gsched_proto::step::{StepInfo, StepQuery, StepsResponse};
use gsched_proto::units;

/// squeue's default step format.
pub const DEFAULT_STEP_FORMAT: &str = "%.15i %.8j %.9P %.8u %.9M %N";

enum Tok {
    Lit(String),
    Field {
        letter: char,
        width: usize,
        right: bool,
    },
}

fn parse_format(f: &str) -> Result<Vec<Tok>, String> {
    let mut out = Vec::new();
    let mut lit = String::new();
    let mut it = f.chars().peekable();
    while let Some(c) = it.next() {
        if c != '%' {
            lit.push(c);
            continue;
        }
        let right = it.peek() == Some(&'.');
        if right {
            it.next();
        }
        let mut digits = String::new();
        while let Some(d) = it.peek().copied().filter(char::is_ascii_digit) {
            digits.push(d);
            it.next();
        }
        let Some(letter) = it.next() else {
            lit.push('%');
            break;
        };
        if letter == '%' {
            lit.push('%');
            continue;
        }
        if !"ijPuUMlSNAb".contains(letter) {
            return Err(format!("Invalid job step format specification: {letter}"));
        }
        if !lit.is_empty() {
            out.push(Tok::Lit(std::mem::take(&mut lit)));
        }
        out.push(Tok::Field {
            letter,
            width: digits.parse().unwrap_or(0),
            right,
        });
    }
    if !lit.is_empty() {
        out.push(Tok::Lit(lit));
    }
    Ok(out)
}

fn header(letter: char) -> &'static str {
    match letter {
        'i' => "STEPID",
        'j' => "NAME",
        'P' => "PARTITION",
        'u' => "USER",
        'U' => "UID",
        'M' => "TIME",
        'l' => "TIME_LIMIT",
        'S' => "START_TIME",
        'N' => "NODELIST",
        'A' => "TASKS",
        _ => "TRES_PER_NODE",
    }
}

/// One line of `gsqueue -s`: a batch step or a `gsrun` step.
#[derive(Debug, Clone, PartialEq)]
pub struct StepRow {
    /// The job's raw id and the step (`None`: the batch step), for sorting.
    pub job_id: JobId,
    pub step: Option<u32>,
    /// The id as shown: `N.K`, `N.batch`, `A_K.batch`.
    pub id: String,
    pub name: String,
    pub partition: String,
    pub user_id: u32,
    pub start_time: i64,
    pub time_limit: Option<u32>,
    pub nodes: Vec<String>,
    pub ntasks: u32,
}

/// The job part of a step id as squeue shows it: `A_K` for an array task, else the id.
fn shown_job_id(job_id: JobId, job: Option<&JobInfo>) -> String {
    match job.and_then(|j| j.array) {
        Some(a) => format!("{}_{}", a.job_id, a.task_id),
        None => job_id.to_string(),
    }
}

/// The rows of `gsqueue -s`: the batch step of every running (or suspended) batch job in
/// `jobs` (a het job's only in its first component, which runs the script), and `steps`;
/// sorted as squeue sorts steps by default (partition, then job id, then step, the batch
/// step after the numbered ones: Slurm numbers it 0xfffffffb).
pub fn rows(steps: &[StepInfo], jobs: &[JobInfo]) -> Vec<StepRow> {
    let mut out: Vec<StepRow> = Vec::new();
    for j in jobs {
        let running = matches!(j.state, JobState::Running) && j.start_time.is_some();
        if !running || j.het.is_some_and(|h| h.offset != 0) || j.nodes.is_empty() {
            continue;
        }
        out.push(StepRow {
            job_id: j.job_id,
            step: None,
            id: format!("{}.batch", shown_job_id(j.job_id, Some(j))),
            name: "batch".into(),
            partition: j.partition.clone(),
            user_id: j.user_id,
            start_time: j.start_time.unwrap_or(0),
            time_limit: j.time_limit,
            nodes: j.nodes[..1].to_vec(),
            ntasks: 1,
        });
    }
    for s in steps {
        let job = jobs.iter().find(|j| j.job_id == s.job_id);
        out.push(StepRow {
            job_id: s.job_id,
            step: Some(s.step_id),
            id: format!("{}.{}", shown_job_id(s.job_id, job), s.step_id),
            name: s.name.clone(),
            partition: s.partition.clone(),
            user_id: s.user_id,
            start_time: s.start_time,
            time_limit: s.time_limit,
            nodes: s.nodes.clone(),
            ntasks: s.ntasks,
        });
    }
    out.sort_by(|a, b| {
        (&a.partition, a.job_id, a.step.unwrap_or(u32::MAX)).cmp(&(
            &b.partition,
            b.job_id,
            b.step.unwrap_or(u32::MAX),
        ))
    });
    out
}

fn value(s: &StepRow, letter: char, now: i64) -> String {
    match letter {
        'i' => s.id.clone(),
        'j' => s.name.clone(),
        'P' => s.partition.clone(),
        'u' => gsched_proto::users::user_by_uid(s.user_id)
            .map(|u| u.name)
            .unwrap_or_else(|| s.user_id.to_string()),
        'U' => s.user_id.to_string(),
        'M' => units::format_secs_squeue((now - s.start_time).max(0) as u64),
        'l' => units::format_time_limit_squeue(s.time_limit),
        'S' => common::make_time_str(s.start_time),
        'N' => hostlist::compress(&s.nodes),
        'A' => s.ntasks.to_string(),
        _ => "N/A".into(),
    }
}

/// The text for `steps` in format `format`.
pub fn render(
    steps: &[StepRow],
    format: &str,
    header_line: bool,
    now: i64,
) -> Result<String, String> {
    let toks = parse_format(format)?;
    let line = |f: &dyn Fn(char) -> String| {
        let mut l = String::new();
        for t in &toks {
            match t {
                Tok::Lit(s) => l.push_str(s),
                Tok::Field {
                    letter,
                    width,
                    right,
                } => l.push_str(&common::print_field(&f(*letter), *width, *right, true)),
            }
        }
        l.truncate(l.trim_end().len());
        l.push('\n');
        l
    };
    let mut out = String::new();
    if header_line {
        out.push_str(&line(&|c| header(c).to_string()));
    }
    for s in steps {
        out.push_str(&line(&|c| value(s, c, now)));
    }
    Ok(out)
}

/// `scontrol show step`'s record of a running step (`-o`: on one line).
pub fn scontrol_text(s: &StepInfo, now: i64, one_liner: bool) -> String {
    let user = gsched_proto::users::user_by_uid(s.user_id)
        .map(|u| u.name)
        .unwrap_or_else(|| s.user_id.to_string());
    let sep = if one_liner { " " } else { "\n   " };
    let end = if one_liner { "\n" } else { "\n\n" };
    let nodes = s.nodes.len();
    format!(
        "StepId={} UserId={user}({}) StartTime={} TimeLimit={}{sep}\
         State={} Partition={} NodeList={}{sep}\
         Nodes={nodes} CPUs={} Tasks={} Name={} Network=(null){sep}\
         TRES=cpu={},node={nodes}{sep}\
         RunTime={} Command={}{end}",
        s.id_string(),
        s.user_id,
        common::make_time_str(s.start_time),
        units::format_time_limit_scontrol(s.time_limit),
        s.state.long(),
        s.partition,
        hostlist::compress(&s.nodes),
        s.cpus(),
        s.ntasks,
        s.name,
        s.cpus(),
        units::format_secs_scontrol((now - s.start_time).max(0) as u64),
        s.command,
    )
}

/// `gsqueue -s [step_list]`: `only` are `N.K` names to keep (empty: every running step);
/// `users` and `jobs` filter as for jobs.
pub fn run(
    prog: &str,
    client: &Client,
    only: &[String],
    users: &[u32],
    jobs: &[u32],
    format: Option<&str>,
    no_header: bool,
) -> Result<i32, Fail> {
    let q = StepQuery {
        job_ids: jobs.to_vec(),
        running_only: true,
    };
    let fail = |e: gsched_proto::client::ClientError| {
        Fail::error(
            prog,
            format!(
                "slurm_get_job_steps error: {}",
                common::client_error_text(&e)
            ),
        )
    };
    let r: StepsResponse = client.post(paths::JOBS_STEPS_QUERY, &q).map_err(fail)?;
    let jq = JobQuery {
        brief: true,
        fields: Vec::new(),
        filter: JobFilter {
            ids: jobs.to_vec(),
            user_ids: users.to_vec(),
            states: vec![JobState::Running],
            ..JobFilter::default()
        },
    };
    let jr: JobsResponse = client.post(paths::JOBS_QUERY, &jq).map_err(fail)?;
    let steps: Vec<StepInfo> = r
        .steps
        .into_iter()
        .filter(|s| users.is_empty() || users.contains(&s.user_id))
        .collect();
    let steps: Vec<StepRow> = rows(&steps, &jr.jobs)
        .into_iter()
        .filter(|s| {
            let raw = match s.step {
                Some(k) => format!("{}.{k}", s.job_id),
                None => format!("{}.batch", s.job_id),
            };
            only.is_empty() || only.iter().any(|o| *o == s.id || *o == raw)
        })
        .collect();
    let text = render(
        &steps,
        format.unwrap_or(DEFAULT_STEP_FORMAT),
        !no_header,
        r.now,
    )
    .map_err(|e| Fail::error(prog, e))?;
    common::out(&text);
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gsched_proto::job::JobState;

    #[test]
    fn steps_render_in_squeues_layout() {
        let s = StepInfo {
            job_id: 12,
            step_id: 0,
            name: "hostname".into(),
            user_id: 0,
            state: JobState::Running,
            nodes: vec!["n1".into(), "n2".into()],
            tasks_per_node: vec![2, 2],
            ntasks: 4,
            cpus_per_task: 1,
            partition: "debug".into(),
            start_time: 100,
            end_time: None,
            exit_code: 0,
            signal: 0,
            command: "hostname".into(),
            cancelled_by: None,
            time_limit: Some(10),
            usage: None,
        };
        let out = render(
            &rows(std::slice::from_ref(&s), &[]),
            "%.15i %.8j %.9P %.9M %N %A",
            true,
            165,
        )
        .unwrap();
        assert_eq!(
            out,
            "         STEPID     NAME PARTITION      TIME NODELIST TASKS\n\
             \x20          12.0 hostname     debug      1:05 n[1-2] 4\n"
        );
        assert!(render(&rows(std::slice::from_ref(&s), &[]), "%z", false, 0).is_err());
        let t = scontrol_text(&s, 165, false);
        let lines: Vec<&str> = t.lines().collect();
        assert!(
            lines[0].starts_with("StepId=12.0 UserId=root(0) StartTime="),
            "{t}"
        );
        assert!(lines[0].ends_with(" TimeLimit=00:10:00"), "{t}");
        assert_eq!(lines[1], "   State=RUNNING Partition=debug NodeList=n[1-2]");
        assert_eq!(
            lines[2],
            "   Nodes=2 CPUs=4 Tasks=4 Name=hostname Network=(null)"
        );
        assert_eq!(lines[3], "   TRES=cpu=4,node=2");
        assert_eq!(lines[4], "   RunTime=00:01:05 Command=hostname");
        assert!(!scontrol_text(&s, 165, true).contains("\n   "));
    }

    /// Slurm 22.05's `squeue -s` (bench/results/format-diff): running batch jobs show their
    /// batch step, array tasks as `A_K.batch`, numbered steps before the batch step, pending
    /// jobs and het components other than the first none.
    #[test]
    fn batch_steps_are_listed_like_slurms() {
        use crate::squeue::tests::job;
        let mut run = job(1004, JobState::Running);
        run.user_id = 0;
        run.start_time = Some(100);
        let mut task = job(1009, JobState::Running);
        task.user_id = 0;
        task.start_time = Some(100);
        task.array = Some(gsched_proto::array::ArrayTask {
            job_id: 1008,
            task_id: 1,
            count: 4,
            min: 0,
            max: 3,
            step: 1,
            throttle: Some(2),
        });
        let pending = job(1010, JobState::Pending);
        let step = StepInfo {
            job_id: 1004,
            step_id: 0,
            name: "hostname".into(),
            user_id: 0,
            state: JobState::Running,
            nodes: vec!["node01".into()],
            tasks_per_node: vec![1],
            ntasks: 1,
            cpus_per_task: 1,
            partition: "debug".into(),
            start_time: 130,
            end_time: None,
            exit_code: 0,
            signal: 0,
            command: "hostname".into(),
            cancelled_by: None,
            time_limit: Some(30),
            usage: None,
        };
        let r = rows(&[step], &[task, pending, run]);
        let out = render(&r, DEFAULT_STEP_FORMAT, true, 165).unwrap();
        assert_eq!(
            out,
            "         STEPID     NAME PARTITION     USER      TIME NODELIST\n\
             \x20        1004.0 hostname     debug     root      0:35 node01\n\
             \x20    1004.batch    batch     debug     root      1:05 node01\n\
             \x20  1008_1.batch    batch     debug     root      1:05 node01\n"
        );
    }
}
