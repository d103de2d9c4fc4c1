//! Job notices: `--mail-type` mail and the cluster's webhooks.
//!
//! The state machine reports job transitions (a job began, ended, failed, was requeued,
//! reached part of its time limit, has a dependency that can never be satisfied); this module
//! turns each into the deliveries it asks for — mail to the job's `--mail-user` for the
//! events in its `--mail-type`, and a POST to every `WebhookName=` line whose `Events=` and
//! `Accounts=` cover it — with Slurm's subjects (`Slurm Job_id=42 Name=x Ended, Run time
//! 00:01:02, COMPLETED, ExitCode 0`) and MailProg environment. Building notices is pure and
//! tested here; delivering them happens on a few threads of their own, off the state lock, so a slow
//! mail server or webhook never holds up scheduling. Mail goes through `MailProg` (run with
//! posix_spawn by `std::process::Command`, as the controller's user: no setuid, no code
//! between fork and exec) or, with `SmtpServer=`, over SMTP ([`crate::smtp`]).
//!
//! Delivery is at most once: notices of transitions that happened just before a controller
//! crash and were not delivered yet are lost (Slurm's are too).

use gsched_proto::job::{JobInfo, JobState};
use gsched_proto::mail::{MailEvent, MailTypes};
use gsched_proto::notify_config::{NotifyConfig, Webhook, WebhookFormat};
use serde_json::json;
use std::time::Duration;

/// What happened to a job, before each target decides which event it makes of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transition {
    Begin,
    Requeue,
    /// The job (or, for a summary, the whole array) ended; `failed` as Slurm counts it
    /// (FAILED, TIMEOUT, NODE_FAIL, OUT_OF_MEMORY: not COMPLETED or CANCELLED).
    Ended {
        failed: bool,
    },
    InvalidDepend,
    /// Part of the time limit reached (an event among `Time50..Time100`).
    Time(MailEvent),
    /// A step of the invalid-job ladder (the job's `invalid` record says which).
    InvalidJob,
}

impl Transition {
    /// The event a target wanting `wanted` makes of it (Slurm: FAIL wins over END for a
    /// failed job; END otherwise).
    pub fn event_for(self, wanted: MailTypes) -> Option<MailEvent> {
        let ev = match self {
            Transition::Begin => MailEvent::Begin,
            Transition::Requeue => MailEvent::Requeue,
            Transition::InvalidDepend => MailEvent::InvalidDepend,
            Transition::Time(e) => e,
            Transition::InvalidJob => MailEvent::InvalidJob,
            Transition::Ended { failed } => {
                if failed && wanted.has(MailTypes::FAIL) {
                    return Some(MailEvent::Fail);
                }
                MailEvent::End
            }
        };
        wanted.has(ev.flag()).then_some(ev)
    }
}

/// Whether a job in `state` counts as failed for notices.
pub fn failed(state: JobState) -> bool {
    matches!(
        state,
        JobState::Failed | JobState::Timeout | JobState::NodeFail | JobState::OutOfMemory
    )
}

/// The whole of an ended array, for the one summary notice Slurm sends without
/// `ARRAY_TASKS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArraySummary {
    pub array_job_id: u32,
    pub exit_min: i32,
    pub exit_max: i32,
}

/// One thing to deliver.
#[derive(Debug, Clone, PartialEq)]
pub enum Delivery {
    Mail {
        to: String,
        subject: String,
        env: Vec<(String, String)>,
    },
    Webhook {
        name: String,
        url: String,
        body: serde_json::Value,
    },
    /// `EpilogSlurmctld`: the program(s) with the ended job's environment, as the
    /// controller's user; a failure is only logged, as in Slurm.
    Program {
        job_id: u32,
        program: crate::env::CtldProgram,
    },
}

/// Slurm's `secs2time_str` (`HH:MM:SS`, or `D-HH:MM:SS` from one day on) is scontrol's
/// duration format.
fn secs2time(secs: i64) -> String {
    gsched_proto::units::format_secs_scontrol(secs.max(0) as u64)
}

/// The parts of a notice every target shares.
struct Facts<'a> {
    cluster: &'a str,
    job: &'a JobInfo,
    summary: Option<ArraySummary>,
    now: i64,
}

impl Facts<'_> {
    /// `, Queued time T` / `, Run time T` (Slurm's `_set_job_time`), and its variable.
    fn time_part(&self, ev: MailEvent) -> Option<(String, &'static str, String)> {
        let j = self.job;
        match ev {
            MailEvent::Begin => {
                let t = secs2time(j.start_time? - j.submit_time);
                Some((format!(", Queued time {t}"), "SLURM_JOB_QUEUED_TIME", t))
            }
            MailEvent::End | MailEvent::Fail | MailEvent::Requeue => {
                let t = secs2time(j.end_time? - j.start_time?);
                Some((format!(", Run time {t}"), "SLURM_JOB_RUN_TIME", t))
            }
            MailEvent::Time100
            | MailEvent::Time90
            | MailEvent::Time80
            | MailEvent::Time50
            | MailEvent::InvalidJob => {
                let t = secs2time(self.now - j.start_time?);
                Some((format!(", Run time {t}"), "SLURM_JOB_RUN_TIME", t))
            }
            MailEvent::InvalidDepend => None,
        }
    }

    /// `, Hung, step requeue` for a step of the invalid-job ladder.
    fn invalid_part(&self, ev: MailEvent) -> String {
        match (ev, &self.job.invalid) {
            (MailEvent::InvalidJob, Some(m)) => {
                format!(", {}, step {}", m.kind.reason(), m.step.as_str())
            }
            _ => String::new(),
        }
    }

    /// `, STATE, ExitCode N` for END and FAIL (Slurm's `_set_job_term_info`).
    fn term_part(&self, ev: MailEvent) -> String {
        if !matches!(ev, MailEvent::End | MailEvent::Fail) {
            return String::new();
        }
        let j = self.job;
        if let Some(s) = self.summary {
            let state = if s.exit_min == 0 && s.exit_max > 0 {
                "Mixed"
            } else {
                j.state.long()
            };
            return format!(", {state}, ExitCode [{}-{}]", s.exit_min, s.exit_max);
        }
        if j.exit_signal == 0 {
            format!(", {}, ExitCode {}", j.state.long(), j.exit_code)
        } else {
            format!(", {}", j.state.long())
        }
    }

    fn subject(&self, ev: MailEvent) -> String {
        let j = self.job;
        let time = self.time_part(ev).map(|t| t.0).unwrap_or_default();
        let term = self.term_part(ev) + &self.invalid_part(ev);
        match (self.summary, &j.array) {
            (Some(s), _) => format!(
                "Slurm Array Summary Job_id={}_* ({}) Name={} {}{term}",
                s.array_job_id,
                s.array_job_id,
                j.name,
                ev.words()
            ),
            (None, Some(a)) => format!(
                "Slurm Array Task Job_id={}_{} ({}) Name={} {}{time}{term}",
                a.job_id,
                a.task_id,
                j.job_id,
                j.name,
                ev.words()
            ),
            (None, None) => format!(
                "Slurm Job_id={} Name={} {}{time}{term}",
                j.job_id,
                j.name,
                ev.words()
            ),
        }
    }

    /// MailProg's environment (Slurm's `_build_mail_env` and friends).
    fn env(&self, ev: MailEvent) -> Vec<(String, String)> {
        let j = self.job;
        let mut env = vec![
            ("SLURM_CLUSTER_NAME".to_string(), self.cluster.to_string()),
            ("SLURM_JOB_ID".into(), j.job_id.to_string()),
            ("SLURM_JOB_NAME".into(), j.name.clone()),
            ("SLURM_JOB_USER".into(), j.user_name.clone()),
            ("SLURM_JOB_UID".into(), j.user_id.to_string()),
            ("SLURM_JOB_GID".into(), j.group_id.to_string()),
            ("SLURM_JOB_PARTITION".into(), j.partition.clone()),
            ("SLURM_JOB_STATE".into(), j.state.long().to_string()),
            ("SLURM_JOB_MAIL_TYPE".into(), ev.words().to_string()),
            ("SLURM_JOB_WORK_DIR".into(), j.spec.work_dir.clone()),
        ];
        if let Some(a) = &j.spec.account {
            env.push(("SLURM_JOB_ACCOUNT".into(), a.clone()));
        }
        if !j.nodes.is_empty() {
            env.push((
                "SLURM_JOB_NODELIST".into(),
                gsched_proto::hostlist::compress(&j.nodes),
            ));
        }
        if let Some(a) = &j.array {
            env.push(("SLURM_ARRAY_JOB_ID".into(), a.job_id.to_string()));
            env.push(("SLURM_ARRAY_TASK_ID".into(), a.task_id.to_string()));
        }
        if let Some((_, var, t)) = self.time_part(ev) {
            env.push((var.to_string(), t));
        }
        if matches!(ev, MailEvent::End | MailEvent::Fail) {
            match self.summary {
                Some(s) => {
                    env.push(("SLURM_JOB_EXIT_CODE_MIN".into(), s.exit_min.to_string()));
                    env.push(("SLURM_JOB_EXIT_CODE_MAX".into(), s.exit_max.to_string()));
                }
                None => {
                    let code = if j.exit_signal == 0 { j.exit_code } else { 0 };
                    env.push(("SLURM_JOB_EXIT_CODE_MAX".into(), code.to_string()));
                }
            }
        }
        env
    }

    fn body(&self, ev: MailEvent, hook: &Webhook) -> serde_json::Value {
        let subject = self.subject(ev);
        match hook.format {
            WebhookFormat::Slack => json!({ "text": subject }),
            WebhookFormat::WeCom => json!({ "msgtype": "text", "text": { "content": subject } }),
            WebhookFormat::Generic => {
                let j = self.job;
                json!({
                    "cluster": self.cluster,
                    "event": ev,
                    "subject": subject,
                    "job_id": j.job_id,
                    "array_job_id": self.summary.map(|s| s.array_job_id).or(j.array.as_ref().map(|a| a.job_id)),
                    "array_task_id": if self.summary.is_some() { None } else { j.array.as_ref().map(|a| a.task_id) },
                    "name": j.name,
                    "user": j.user_name,
                    "uid": j.user_id,
                    "account": j.spec.account,
                    "partition": j.partition,
                    "state": j.state.long(),
                    "exit_code": if j.exit_signal == 0 { Some(j.exit_code) } else { None },
                    "signal": if j.exit_signal == 0 { None } else { Some(j.exit_signal) },
                    "nodes": gsched_proto::hostlist::compress(&j.nodes),
                    "submit_time": j.submit_time,
                    "start_time": j.start_time,
                    "end_time": j.end_time,
                    "queued_seconds": j.start_time.map(|s| s - j.submit_time),
                    "run_seconds": j.start_time.map(|s| j.end_time.unwrap_or(self.now) - s),
                    "invalid": j.invalid.filter(|_| ev == MailEvent::InvalidJob).map(|m| json!({
                        "reason": m.kind.reason().as_str(),
                        "step": m.step.as_str(),
                        "flagged_at": m.flagged_at,
                    })),
                })
            }
        }
    }
}

/// The recipient of a job's mail: `--mail-user`, else the user (at `MailDomain`).
pub fn recipient(cfg: &NotifyConfig, job: &JobInfo) -> String {
    match &job.spec.mail_user {
        Some(u) if !u.is_empty() => u.clone(),
        _ => match &cfg.mail_domain {
            Some(d) => format!("{}@{d}", job.user_name),
            None => job.user_name.clone(),
        },
    }
}

/// Everything `t` of `job` asks to deliver. `mail_types` is what the job asked for (the
/// first task's for an array summary).
pub fn deliveries(
    cfg: &NotifyConfig,
    cluster: &str,
    job: &JobInfo,
    t: Transition,
    summary: Option<ArraySummary>,
    now: i64,
) -> Vec<Delivery> {
    let facts = Facts {
        cluster,
        job,
        summary,
        now,
    };
    let mut out = Vec::new();
    // The invalid-job ladder's steps are mailed whatever --mail-type says: they are the
    // site's warnings to the user.
    let mail_event = match t {
        Transition::InvalidJob => Some(MailEvent::InvalidJob),
        _ => t.event_for(job.spec.mail_type),
    };
    if let Some(ev) = mail_event {
        out.push(Delivery::Mail {
            to: recipient(cfg, job),
            subject: facts.subject(ev),
            env: facts.env(ev),
        });
    }
    for hook in &cfg.webhooks {
        if !hook.covers(job.spec.account.as_deref()) {
            continue;
        }
        if let Some(ev) = t.event_for(hook.events) {
            out.push(Delivery::Webhook {
                name: hook.name.clone(),
                url: hook.url.clone(),
                body: facts.body(ev, hook),
            });
        }
    }
    out
}

/// Whether anyone could want notices of `job` (so the state machine can skip the work).
pub fn interested(cfg: &NotifyConfig, job: &JobInfo) -> bool {
    !job.spec.mail_type.is_empty()
        || cfg
            .webhooks
            .iter()
            .any(|h| h.covers(job.spec.account.as_deref()))
}

/// The time-limit events due for a job running since `start` with a limit of
/// `limit_min` minutes at `now` that have not been sent (`sent` bits), as Slurm checks
/// them: TIME_LIMIT at the limit, TIME_LIMIT_90 with 10% left, and so on.
pub fn time_events_due(start: i64, limit_min: u32, now: i64, sent: u32) -> Vec<MailEvent> {
    let limit = i64::from(limit_min) * 60;
    let end = start + limit;
    [
        (MailEvent::Time100, 0.0),
        (MailEvent::Time90, 0.1),
        (MailEvent::Time80, 0.2),
        (MailEvent::Time50, 0.5),
    ]
    .into_iter()
    .filter(|(ev, left)| sent & ev.flag() == 0 && now as f64 + limit as f64 * left >= end as f64)
    .map(|(ev, _)| ev)
    .collect()
}

// ---------------------------------------------------------------------------- delivery

/// Sends deliveries from a thread of its own.
#[derive(Clone)]
pub struct Notifier {
    tx: std::sync::mpsc::Sender<Delivery>,
}

impl std::fmt::Debug for Notifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Notifier")
    }
}

impl Notifier {
    /// Starts the delivery threads: a few, so that one slow webhook or mail server does not
    /// hold up the rest, and a burst (10,000 array tasks with ARRAY_TASKS) queues instead of
    /// starting a thread per notice.
    pub fn spawn(cfg: NotifyConfig) -> Notifier {
        let (tx, rx) = std::sync::mpsc::channel::<Delivery>();
        let rx = std::sync::Arc::new(std::sync::Mutex::new(rx));
        let cfg = std::sync::Arc::new(cfg);
        for i in 0..DELIVERY_THREADS {
            let (rx, cfg) = (rx.clone(), cfg.clone());
            let spawned = std::thread::Builder::new()
                .name(format!("notices-{i}"))
                .spawn(move || loop {
                    let next = rx.lock().unwrap_or_else(|p| p.into_inner()).recv();
                    match next {
                        Ok(d) => deliver(&cfg, &d),
                        Err(_) => return,
                    }
                });
            if let Err(e) = spawned {
                tracing::error!("cannot start a notice delivery thread: {e}");
            }
        }
        Notifier { tx }
    }

    pub fn send(&self, d: Delivery) {
        if self.tx.send(d).is_err() {
            tracing::error!("the notice delivery thread is gone; a notice was dropped");
        }
    }
}

/// How many notices are delivered at once.
const DELIVERY_THREADS: usize = 4;
/// How long MailProg may run.
const MAIL_PROG_TIMEOUT: Duration = Duration::from_secs(60);
const WEBHOOK_ATTEMPTS: u32 = 3;

fn deliver(cfg: &NotifyConfig, d: &Delivery) {
    match d {
        Delivery::Mail { to, subject, env } => {
            let r = match &cfg.smtp_server {
                Some((host, port)) => {
                    let from = cfg
                        .mail_from
                        .clone()
                        .unwrap_or_else(|| format!("gsched@{}", crate::smtp::hostname()));
                    let body = env
                        .iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect::<Vec<_>>()
                        .join("\n");
                    crate::smtp::send(host, *port, &from, to, subject, &body)
                        .map_err(|e| format!("SMTP {host}:{port}: {e}"))
                }
                None => run_mail_prog(cfg.mail_prog(), to, subject, env),
            };
            match r {
                Ok(()) => tracing::debug!("mail to {to}: {subject}"),
                Err(e) => tracing::error!("cannot mail {to} ({subject}): {e}"),
            }
        }
        Delivery::Program { job_id, program } => match program.run() {
            Ok(()) => tracing::debug!("job {job_id}: EpilogSlurmctld done"),
            Err(e) => tracing::error!("job {job_id}: {e}"),
        },
        Delivery::Webhook { name, url, body } => {
            let mut last = String::new();
            for attempt in 1..=WEBHOOK_ATTEMPTS {
                match post_json(url, body) {
                    Ok(()) => {
                        tracing::debug!("webhook {name}: delivered");
                        return;
                    }
                    Err(e) => last = e,
                }
                if attempt < WEBHOOK_ATTEMPTS {
                    std::thread::sleep(Duration::from_secs(u64::from(attempt) * 2));
                }
            }
            tracing::error!("webhook {name} ({url}) failed {WEBHOOK_ATTEMPTS} times: {last}");
        }
    }
}

/// `MailProg -s SUBJECT RECIPIENT`, with the job's variables, killed after a minute.
fn run_mail_prog(
    prog: &str,
    to: &str,
    subject: &str,
    env: &[(String, String)],
) -> Result<(), String> {
    let mut child = std::process::Command::new(prog)
        .arg("-s")
        .arg(subject)
        .arg(to)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run MailProg {prog}: {e} (set MailProg= or SmtpServer=)"))?;
    let deadline = std::time::Instant::now() + MAIL_PROG_TIMEOUT;
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => {
                let mut err = String::new();
                if let Some(mut e) = child.stderr.take() {
                    use std::io::Read;
                    let _ = e.read_to_string(&mut err);
                }
                return Err(format!("MailProg {prog} {status}: {}", err.trim()));
            }
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(50))
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "MailProg {prog} ran longer than {}s; killed",
                    MAIL_PROG_TIMEOUT.as_secs()
                ));
            }
            Err(e) => return Err(format!("waiting for MailProg {prog}: {e}")),
        }
    }
}

fn post_json(url: &str, body: &serde_json::Value) -> Result<(), String> {
    let agent = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(10))
        .user_agent(concat!("gsched/", env!("CARGO_PKG_VERSION")))
        .build();
    match agent.post(url).send_json(body.clone()) {
        Ok(_) => Ok(()),
        Err(ureq::Error::Status(code, resp)) => Err(format!(
            "HTTP {code}: {}",
            resp.into_string().unwrap_or_default().trim()
        )),
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gsched_proto::array::ArrayTask;
    use gsched_proto::job::{JobSpec, Reason};

    fn job(state: JobState) -> JobInfo {
        JobInfo {
            special_exit: false,
            epilog_running: false,
            configuring: false,
            gpus: Vec::new(),
            job_id: 42,
            name: "train".into(),
            user_id: 1000,
            group_id: 1000,
            user_name: "ada".into(),
            group_name: "ada".into(),
            state,
            reason: Reason::None,
            partition: "gpu".into(),
            priority: 1,
            time_limit: Some(10),
            submit_time: 1000,
            eligible_time: Some(1000),
            start_time: Some(1005),
            end_time: Some(1005 + 3723),
            num_nodes: 1,
            num_cpus: 1,
            num_tasks: 1,
            mem_per_node_mb: 100,
            nodes: vec!["n1".into()],
            cpus_per_node: vec![1],
            exit_code: 0,
            exit_signal: 0,
            cancelled_by: None,
            held: false,
            expected_start: None,
            sched_nodes: vec![],
            dependency: None,
            requeue: true,
            restarts: 0,
            array: None,
            priority_factors: None,
            het: None,
            usage: None,
            suspended_since: None,
            suspended_secs: 0,
            invalid: None,
            spec: gsched_proto::job::SharedSpec::new(JobSpec {
                mail_type: MailTypes::parse("ALL").unwrap(),
                account: Some("ml".into()),
                ..Default::default()
            }),
        }
    }

    fn subjects(d: &[Delivery]) -> Vec<String> {
        d.iter()
            .filter_map(|d| match d {
                Delivery::Mail { subject, .. } => Some(subject.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn subjects_are_slurms() {
        let cfg = NotifyConfig {
            mail_domain: Some("example.org".into()),
            ..Default::default()
        };
        let j = job(JobState::Completed);
        let d = deliveries(&cfg, "c", &j, Transition::Begin, None, 0);
        assert_eq!(
            subjects(&d),
            ["Slurm Job_id=42 Name=train Began, Queued time 00:00:05"]
        );
        let Delivery::Mail { to, env, .. } = &d[0] else {
            panic!()
        };
        assert_eq!(to, "ada@example.org");
        assert!(env.contains(&("SLURM_JOB_QUEUED_TIME".into(), "00:00:05".into())));
        let d = deliveries(&cfg, "c", &j, Transition::Ended { failed: false }, None, 0);
        assert_eq!(
            subjects(&d),
            ["Slurm Job_id=42 Name=train Ended, Run time 01:02:03, COMPLETED, ExitCode 0"]
        );
        let mut f = job(JobState::Failed);
        f.exit_code = 3;
        f.end_time = Some(1005 + 86_400 + 61);
        let d = deliveries(&cfg, "c", &f, Transition::Ended { failed: true }, None, 0);
        assert_eq!(
            subjects(&d),
            ["Slurm Job_id=42 Name=train Failed, Run time 1-00:01:01, FAILED, ExitCode 3"]
        );
        // Only END asked: a failed job is reported as Ended.
        f.spec.mail_type = MailTypes::parse("END").unwrap();
        let d = deliveries(&cfg, "c", &f, Transition::Ended { failed: true }, None, 0);
        assert!(subjects(&d)[0].contains(" Ended, "), "{d:?}");
        // A signal: no exit code.
        let mut s = job(JobState::Cancelled);
        s.exit_signal = 9;
        let d = deliveries(&cfg, "c", &s, Transition::Ended { failed: false }, None, 0);
        assert!(subjects(&d)[0].ends_with("Ended, Run time 01:02:03, CANCELLED"));
        // Not asked: nothing.
        s.spec.mail_type = MailTypes::parse("FAIL").unwrap();
        assert!(deliveries(&cfg, "c", &s, Transition::Ended { failed: false }, None, 0).is_empty());
    }

    #[test]
    fn arrays_tasks_and_summaries() {
        let cfg = NotifyConfig::default();
        let mut t = job(JobState::Completed);
        t.job_id = 44;
        t.array = Some(ArrayTask {
            job_id: 42,
            task_id: 2,
            count: 3,
            min: 0,
            max: 2,
            step: 1,
            throttle: None,
        });
        let d = deliveries(&cfg, "c", &t, Transition::Ended { failed: false }, None, 0);
        assert_eq!(
            subjects(&d),
            ["Slurm Array Task Job_id=42_2 (44) Name=train Ended, Run time 01:02:03, COMPLETED, ExitCode 0"]
        );
        let summary = ArraySummary {
            array_job_id: 42,
            exit_min: 0,
            exit_max: 2,
        };
        let d = deliveries(
            &cfg,
            "c",
            &t,
            Transition::Ended { failed: true },
            Some(summary),
            0,
        );
        assert_eq!(
            subjects(&d),
            ["Slurm Array Summary Job_id=42_* (42) Name=train Failed, Mixed, ExitCode [0-2]"]
        );
    }

    #[test]
    fn webhooks_follow_their_events_and_accounts() {
        let mut cfg = NotifyConfig::default();
        cfg.webhook_line(&[
            ("WebhookName".into(), "ops".into()),
            ("URL".into(), "http://h/a".into()),
            ("Format".into(), "slack".into()),
            ("Events".into(), "FAIL".into()),
        ])
        .unwrap();
        cfg.webhook_line(&[
            ("WebhookName".into(), "bio".into()),
            ("URL".into(), "http://h/b".into()),
            ("Accounts".into(), "bio".into()),
        ])
        .unwrap();
        let mut j = job(JobState::Failed);
        j.spec.mail_type = MailTypes(0);
        let d = deliveries(&cfg, "c", &j, Transition::Ended { failed: true }, None, 0);
        assert_eq!(d.len(), 1, "{d:?}");
        let Delivery::Webhook { name, body, .. } = &d[0] else {
            panic!()
        };
        assert_eq!(name, "ops");
        assert_eq!(
            body["text"],
            "Slurm Job_id=42 Name=train Failed, Run time 01:02:03, FAILED, ExitCode 0"
        );
        j.spec.account = Some("bio".into());
        let d = deliveries(&cfg, "c", &j, Transition::Ended { failed: true }, None, 7);
        let Delivery::Webhook { name, body, .. } = &d[1] else {
            panic!()
        };
        assert_eq!(name, "bio");
        assert_eq!(body["event"], "FAIL");
        assert_eq!(body["account"], "bio");
        assert_eq!(body["run_seconds"], 3723);
        assert!(!interested(&NotifyConfig::default(), &j));
    }

    #[test]
    fn time_limit_thresholds() {
        // 10 minutes from t=0.
        assert!(time_events_due(0, 10, 299, 0).is_empty());
        assert_eq!(time_events_due(0, 10, 300, 0), [MailEvent::Time50]);
        assert_eq!(
            time_events_due(0, 10, 540, MailTypes::TIME50),
            [MailEvent::Time90, MailEvent::Time80]
        );
        assert_eq!(
            time_events_due(0, 10, 600, 0),
            [
                MailEvent::Time100,
                MailEvent::Time90,
                MailEvent::Time80,
                MailEvent::Time50
            ]
        );
    }
}
