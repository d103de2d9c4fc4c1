//! Where the state machine meets [`crate::notify`]: every committed change of a job's state
//! (see `State::committed`) that began, requeued or ended it becomes notices; the scheduling pass adds the time-limit and invalid-dependency ones. Notices are
//! made only after the change is in the store, so nobody is told about something a crash
//! could undo.
//!
//! Arrays follow Slurm: without `ARRAY_TASKS`, one BEGIN for the first task that starts and
//! one END/FAIL summary once every task has ended; with it, notices per task.

use super::{Job, JobId, JobState, State};
use crate::notify::{self, ArraySummary, Delivery, Notifier, Transition};
use gsched_proto::mail::{MailEvent, MailTypes};

/// Notice bookkeeping (in memory; one-off events are remembered in the job's record).
#[derive(Debug, Default)]
pub struct NoticeRt {
    /// Where deliveries go; without one (unit tests) they pile up in `outbox`.
    notifier: Option<Notifier>,
    pub outbox: Vec<Delivery>,
}

impl State {
    /// Sends notices through `n` from now on (the daemon; tests read `notices.outbox`).
    pub fn set_notifier(&mut self, n: Notifier) {
        self.notices.notifier = Some(n);
    }

    pub(super) fn deliver(&mut self, ds: Vec<Delivery>) {
        for d in ds {
            match &self.notices.notifier {
                Some(n) => n.send(d),
                None => self.notices.outbox.push(d),
            }
        }
    }

    /// The notices of a committed change of job `id`'s state from `prev` to `cur`.
    pub(super) fn announce_transition(&mut self, id: JobId, prev: Option<JobState>, cur: JobState) {
        let Some(job) = self.jobs.get(&id) else {
            return;
        };
        // EpilogSlurmctld: every run that ended (a job cancelled before it started had none).
        let ended = cur.is_terminal() && prev.is_some_and(|p| !p.is_terminal());
        if let Some(pattern) = self.cfg.epilog_slurmctld.as_deref() {
            if ended && job.info.start_time.is_some() {
                let d = Delivery::Program {
                    job_id: id,
                    program: crate::env::CtldProgram::for_job(
                        &self.cfg,
                        pattern,
                        &job.info,
                        crate::env::ScriptContext::EpilogSlurmctld,
                    ),
                };
                self.deliver(vec![d]);
            }
        }
        let Some(job) = self.jobs.get(&id) else {
            return;
        };
        if !notify::interested(&self.cfg.notify, &job.info) {
            return;
        }
        let active =
            |s: Option<JobState>| matches!(s, Some(JobState::Running) | Some(JobState::Completing));
        let t = match cur {
            JobState::Running if !active(prev) => Transition::Begin,
            JobState::Pending if active(prev) => Transition::Requeue,
            s if s.is_terminal() && prev.is_some_and(|p| !p.is_terminal()) => Transition::Ended {
                failed: notify::failed(s),
            },
            _ => return,
        };
        self.announce(id, t);
    }

    /// Makes and sends the notices of `t` for job `id`, by Slurm's array rules.
    fn announce(&mut self, id: JobId, t: Transition) {
        let Some(job) = self.jobs.get(&id) else {
            return;
        };
        let info = &job.info;
        let now = info
            .end_time
            .or(info.start_time)
            .unwrap_or(info.submit_time);
        let per_task = info.spec.mail_type.has(MailTypes::ARRAY_TASKS);
        let mut summary = None;
        if let (Some(a), false) = (info.array, per_task) {
            let siblings = self.array_tasks(a.job_id);
            match t {
                Transition::Begin => {
                    // Only the first task to start.
                    let started = siblings
                        .iter()
                        .filter(|j| j.info.start_time.is_some() || j.info.restarts > 0)
                        .count();
                    if started > 1 {
                        return;
                    }
                }
                Transition::Ended { .. } => {
                    if siblings.iter().any(|j| !j.info.state.is_terminal()) {
                        return;
                    }
                    let codes = siblings.iter().map(|j| j.info.exit_code);
                    summary = Some(ArraySummary {
                        array_job_id: a.job_id,
                        exit_min: codes.clone().min().unwrap_or(0),
                        exit_max: codes.max().unwrap_or(0),
                    });
                    let failed = siblings.iter().any(|j| notify::failed(j.info.state));
                    let ds = notify::deliveries(
                        &self.cfg.notify,
                        &self.cfg.cluster_name,
                        info,
                        Transition::Ended { failed },
                        summary,
                        now,
                    );
                    self.deliver(ds);
                    return;
                }
                // Requeues of single tasks are not announced without ARRAY_TASKS.
                Transition::Requeue => return,
                _ => {}
            }
        }
        let ds = notify::deliveries(
            &self.cfg.notify,
            &self.cfg.cluster_name,
            info,
            t,
            summary,
            now,
        );
        self.deliver(ds);
    }

    fn array_tasks(&self, array_job_id: JobId) -> Vec<&Job> {
        let n = self
            .arrays
            .get(&array_job_id)
            .map(|a| a.indices.len() as u32)
            .unwrap_or(1);
        (array_job_id..array_job_id.saturating_add(n))
            .filter_map(|i| self.jobs.get(&i).map(|b| &**b))
            .filter(|j| j.info.array.is_some_and(|a| a.job_id == array_job_id))
            .collect()
    }

    /// The scheduling pass's time-limit notices for running jobs (TIME_LIMIT_50/80/90 and
    /// TIME_LIMIT), each sent once per run (remembered in the job's record, so a restarted
    /// controller does not repeat it).
    pub(super) fn time_notices(&mut self, now: i64) {
        let hooks = self
            .cfg
            .notify
            .webhooks
            .iter()
            .any(|h| h.events.0 & TIME_BITS != 0);
        let mut todo: Vec<(JobId, MailEvent)> = Vec::new();
        for job in self.active.started_jobs(&self.jobs) {
            let id = &job.info.job_id;
            if job.info.state != JobState::Running
                || (job.info.spec.mail_type.0 & TIME_BITS == 0 && !hooks)
            {
                continue;
            }
            let (Some(start), Some(limit)) = (job.info.start_time, job.info.time_limit) else {
                continue;
            };
            for ev in notify::time_events_due(start, limit, now, job.extra.mail_sent) {
                todo.push((*id, ev));
            }
        }
        self.send_once(
            todo.into_iter()
                .map(|(id, ev)| (id, Transition::Time(ev), ev.flag())),
            now,
        );
    }

    /// INVALID_DEPEND notices for jobs whose dependency was just found unsatisfiable (before
    /// `--kill-on-invalid-dep` cancels them), once per job.
    pub(super) fn invalid_dependency_notices(&mut self, ids: &[JobId], now: i64) {
        let hooks = self
            .cfg
            .notify
            .webhooks
            .iter()
            .any(|h| h.events.has(MailTypes::INVALID_DEPEND));
        let todo: Vec<JobId> = ids
            .iter()
            .copied()
            .filter(|id| {
                self.jobs.get(id).is_some_and(|j| {
                    j.extra.mail_sent & MailTypes::INVALID_DEPEND == 0
                        && (j.info.spec.mail_type.has(MailTypes::INVALID_DEPEND) || hooks)
                })
            })
            .collect();
        self.send_once(
            todo.into_iter()
                .map(|id| (id, Transition::InvalidDepend, MailTypes::INVALID_DEPEND)),
            now,
        );
    }

    /// Sends one-off notices and records their bits in the jobs' records.
    fn send_once(&mut self, todo: impl Iterator<Item = (JobId, Transition, u32)>, now: i64) {
        let mut changed = Vec::new();
        for (id, t, bit) in todo {
            let Some(j) = self.jobs.get_mut(&id) else {
                continue;
            };
            j.extra.mail_sent |= bit;
            changed.push(id);
            let Some(job) = self.jobs.get(&id) else {
                continue;
            };
            let ds = notify::deliveries(
                &self.cfg.notify,
                &self.cfg.cluster_name,
                &job.info,
                t,
                None,
                now,
            );
            self.deliver(ds);
        }
        changed.dedup();
        if let Err(e) = self.persist_many(&changed) {
            tracing::error!("cannot record sent notices: {e}");
        }
    }
}

/// The time-limit bits, cleared when a job starts a new run.
pub(super) const TIME_BITS: u32 =
    MailTypes::TIME100 | MailTypes::TIME90 | MailTypes::TIME80 | MailTypes::TIME50;
