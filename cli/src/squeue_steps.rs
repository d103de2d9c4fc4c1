//! `gsqueue -s/--steps`: the running job steps (`gsrun`) in squeue's step layout. Step
//! format letters (Slurm's `squeue -s -o`): `%i` step id, `%j` step name, `%P` partition,
//! `%u` user, `%U` uid, `%M` time used, `%l` time limit, `%S` start time, `%N` nodes,
//! `%A` number of tasks, `%b` (gres) empty; `%[.][size]` pads (`.`: right-justified).
//! Default: `%.15i %.8j %.9P %.8u %.9M %N`.

use crate::common::{self, Fail};
use gsched_proto::api::paths;
use gsched_proto::client::Client;
use gsched_proto::hostlist;
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

fn value(s: &StepInfo, letter: char, now: i64) -> String {
    match letter {
        'i' => s.id_string(),
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
    steps: &[StepInfo],
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
    let r: StepsResponse = client.post(paths::JOBS_STEPS_QUERY, &q).map_err(|e| {
        Fail::error(
            prog,
            format!(
                "slurm_get_job_steps error: {}",
                common::client_error_text(&e)
            ),
        )
    })?;
    let steps: Vec<StepInfo> = r
        .steps
        .into_iter()
        .filter(|s| users.is_empty() || users.contains(&s.user_id))
        .filter(|s| only.is_empty() || only.iter().any(|o| *o == s.id_string()))
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
            std::slice::from_ref(&s),
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
        assert!(render(std::slice::from_ref(&s), "%z", false, 0).is_err());
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
}
