//! Time-of-use prices in the controller: the calendar (`PriceWindow=`, `PriceFile=` re-read
//! when it changes), the deferral input of each pass, `--deadline`, the submit-time note,
//! estimated energy and cost for gsacct, and the learned low-load hours.
//!
//! The scheduler core decides (`gsched_sched::price`); this module only gathers what it needs
//! and turns the calendar, which has a time zone, into absolute price stretches.
//!
//! Learned low-load windows: every pass samples the allocated-CPU fraction of the available
//! nodes; each hour's mean is stored (`load_hours`, migration 3). The profile is the median per
//! (weekday, hour) in `PriceTimeZone` over the last 14 days; an hour of the week with at least
//! 7 days of history and a median below `LowLoadThreshold` is low-load. With
//! `LearnLowLoadWindows=yes` deferrable jobs are planned as if low-load hours cost half their
//! price, so they drift into hours the cluster is usually idle; accounting always uses the
//! real prices.

use std::collections::BTreeMap;
use std::time::SystemTime;

use gsched_proto::api::{DeferralNote, JobEnergy, LoadHour, PriceSpanInfo, PricesResponse};
use gsched_proto::config::Config;
use gsched_proto::job::{JobId, JobInfo, JobState, Reason};
use gsched_proto::price_conf::{local_weekday_hour, PriceCalendar, PriceFile, PricedSpan};
use gsched_sched::price::{
    decide_with_prices, deferral, DeferRules, PriceInput, PriceInterval, PriceJob, PriceSchedule,
};
use gsched_sched::{ClusterView, Decisions, QueuedJob};

use super::State;

const HOUR: i64 = 3600;
/// Days of utilization history the profile looks at.
const PROFILE_DAYS: i64 = 14;
/// Days of history (a full week) before any hour can be called low-load.
const MIN_DAYS: u32 = 7;

/// The controller's price state.
#[derive(Debug, Default)]
pub struct PriceRt {
    cal: Option<PriceCalendar>,
    file_mtime: Option<SystemTime>,
    /// The hour being sampled (epoch seconds of its start), the sum and count of samples.
    hour: i64,
    sum: f64,
    samples: u32,
    /// (weekday, hour) -> (median fraction, days); recomputed hourly.
    profile: BTreeMap<(u8, u8), (f64, u32)>,
    profile_at: i64,
    history_days: u32,
}

fn file_mtime(cfg: &Config) -> Option<SystemTime> {
    let f = cfg.price.price_file.as_ref()?;
    std::fs::metadata(f).and_then(|m| m.modified()).ok()
}

/// The calendar of `cfg`, with its price file read now.
pub fn calendar(cfg: &Config) -> Result<PriceCalendar, String> {
    let p = &cfg.price;
    let file = match &p.price_file {
        Some(f) => PriceFile::load(f, p.price_file_unit, &p.tz()).map_err(|e| e.to_string())?,
        None => PriceFile::default(),
    };
    Ok(PriceCalendar::new(p, file))
}

/// Estimated energy (kWh) and cost of every started job of `jobs`, at `cal`'s prices.
pub fn account(cfg: &Config, cal: &PriceCalendar, jobs: &[JobInfo], now: i64) -> Vec<JobEnergy> {
    jobs.iter()
        .filter_map(|j| {
            let start = j.start_time?;
            if j.nodes.is_empty() {
                return None;
            }
            let end = j.end_time.unwrap_or(now).max(start);
            let susp = j.suspended_secs.max(0);
            let watts = job_watts(cfg, j);
            let run = (end - start - susp).max(0);
            let kwh = watts * run as f64 / 3600.0 / 1000.0;
            // Suspended time is spread over the run: the price integral scaled to the
            // time actually run.
            let span = (end - start).max(1) as f64;
            let integral = integral(cal, start, end);
            let cost = watts / 1000.0 / 3600.0 * integral * (run as f64 / span);
            Some(JobEnergy {
                job_id: j.job_id,
                kwh,
                cost,
            })
        })
        .collect()
}

fn integral(cal: &PriceCalendar, a: i64, b: i64) -> f64 {
    if b <= a {
        return 0.0;
    }
    let s = schedule_of(&cal.intervals(a, b), cal.default_price);
    s.integral(a, b)
}

fn schedule_of(spans: &[PricedSpan], default_price: f64) -> PriceSchedule {
    PriceSchedule {
        intervals: spans
            .iter()
            .map(|s| PriceInterval {
                start: s.start,
                end: s.end,
                price: s.price,
            })
            .collect(),
        default_price,
    }
}

/// A job's power: its CPUs' share of each node's `Watts=`, plus its GPUs.
fn job_watts(cfg: &Config, j: &JobInfo) -> f64 {
    let mut w = 0.0;
    for (i, n) in j.nodes.iter().enumerate() {
        let node_cpus = cfg.node(n).map_or(1, |c| c.cpus.max(1));
        let used = j.cpus_per_node.get(i).copied().unwrap_or(node_cpus);
        w += cfg.price.node_watts(n, node_cpus) * used as f64 / node_cpus as f64;
    }
    w + gpu_watts(cfg, j)
}

/// The job's GPUs (`--gres=gpu[:type]:N` per node, `--gpus`), at `GpuWatts=`.
fn gpu_watts(cfg: &Config, j: &JobInfo) -> f64 {
    let Some(g) = &j.spec.gpu else { return 0.0 };
    let nodes = j.nodes.len().max(1) as f64;
    let count = match (g.per_job, g.per_node, g.per_task) {
        (Some(n), _, _) => n as f64,
        (None, Some(n), _) => n as f64 * nodes,
        (None, None, Some(n)) => n as f64 * j.spec.total_tasks().max(1) as f64,
        // A share of one GPU per node: counted as a whole one (an upper bound).
        (None, None, None) if g.share.is_some() => nodes,
        (None, None, None) => 0.0,
    };
    count * cfg.price.gpu_watts(g.type_name.as_deref())
}

impl State {
    /// The calendar, built on first use and rebuilt when the price file changes (a malformed
    /// new file keeps the old prices and says so in the log).
    fn price_calendar(&mut self) -> Option<&PriceCalendar> {
        let mtime = file_mtime(&self.cfg);
        if self.price.cal.is_none() || mtime != self.price.file_mtime {
            match calendar(&self.cfg) {
                Ok(c) => {
                    if self.price.cal.is_some() {
                        tracing::info!("price file re-read: {} hourly prices", c.file.hours.len());
                    }
                    self.price.cal = Some(c);
                }
                Err(e) => {
                    tracing::error!("price file not re-read, keeping the old prices: {e}");
                    if self.price.cal.is_none() {
                        self.price.cal =
                            Some(PriceCalendar::new(&self.cfg.price, PriceFile::default()));
                    }
                }
            }
            self.price.file_mtime = mtime;
        }
        self.price.cal.as_ref()
    }

    /// Job `id`'s estimated energy and cost as gsacct shows them ([`account`]), up to its
    /// end; `None` for a job that never ran.
    pub(super) fn job_energy(&mut self, id: JobId) -> Option<JobEnergy> {
        let j = &self.jobs.get(&id)?.info;
        let end = j.end_time.or(j.start_time)?;
        if j.nodes.is_empty() {
            return None;
        }
        self.price_calendar()?;
        let cal = self.price.cal.as_ref()?;
        let j = &self.jobs.get(&id)?.info;
        account(&self.cfg, cal, std::slice::from_ref(j), end).pop()
    }

    /// The price now, where prices are configured (`PriceWindow=`, `PriceFile=`,
    /// `DefaultPrice=`); `/metrics` exports it.
    pub fn current_price(&mut self, now: i64) -> Option<f64> {
        let p = &self.cfg.price;
        if !p.enabled() && p.default_price == 0.0 {
            return None;
        }
        self.price_calendar().map(|c| c.price_at(now))
    }

    /// The price stretches over `[from, to)`, learned low-load hours at half price when
    /// `LearnLowLoadWindows=yes`.
    fn planning_spans(&mut self, from: i64, to: i64) -> (Vec<PricedSpan>, f64) {
        let learn = self.cfg.price.learn_low_load;
        let low = if learn {
            self.low_hours(from, to)
        } else {
            Vec::new()
        };
        let Some(cal) = self.price_calendar() else {
            return (Vec::new(), 0.0);
        };
        let spans = cal.intervals(from, to);
        let default = cal.default_price;
        if low.is_empty() {
            return (spans, default);
        }
        let base = schedule_of(&spans, default);
        let cuts = spans
            .iter()
            .flat_map(|s| [s.start, s.end])
            .chain(low.iter().flat_map(|&h| [h, h + HOUR]));
        let out = gsched_proto::price_conf::spans_from_cuts(from, to, cuts, |a| {
            if low.iter().any(|&h| h <= a && a < h + HOUR) {
                Some((base.price_at(a) * 0.5, "lowload"))
            } else {
                spans
                    .iter()
                    .find(|s| s.start <= a && a < s.end)
                    .map(|s| (s.price, s.source))
            }
        });
        (out, default)
    }

    /// The deferral input of a pass at `now` for `queue`; `None` when prices are off.
    fn price_input(&mut self, now: i64, queue: &[QueuedJob]) -> Option<PriceInput> {
        let p = self.cfg.price.clone();
        if !p.enabled() {
            return None;
        }
        let to = now + p.max_deferral_secs + 7 * 24 * HOUR;
        let (spans, default) = self.planning_spans(now, to);
        let mut jobs = BTreeMap::new();
        for q in queue {
            let Some(j) = self.jobs.get(&q.id) else {
                continue;
            };
            let spec = &j.info.spec;
            let no_defer_qos = self.acct.qos.get(j.info.qos()).is_some_and(|d| d.no_defer);
            let opt_out = spec.urgent || no_defer_qos || spec.begin_time.is_some();
            if opt_out || spec.deadline.is_some() {
                jobs.insert(
                    q.id,
                    PriceJob {
                        opt_out,
                        deadline: spec.deadline,
                    },
                );
            }
        }
        Some(PriceInput {
            schedule: schedule_of(&spans, default),
            rules: DeferRules {
                long_secs: p.long_secs,
                short_secs: p.short_secs,
                medium_defer: p.medium_rule == gsched_proto::price_conf::MediumJobRule::Defer,
                max_deferral_secs: p.max_deferral_secs,
                min_saving: p.min_saving,
            },
            jobs,
        })
    }

    /// The scheduling pass's call of the core, with time-of-use deferral when prices are on;
    /// also samples the cluster's utilization.
    pub(super) fn decide_priced(
        &mut self,
        view: &ClusterView,
        queue: &[QueuedJob],
        now: i64,
    ) -> Decisions {
        self.sample_load(view, now);
        match self.price_input(now, queue) {
            Some(input) => decide_with_prices(view, queue, now, &self.sched_config, &input),
            None => gsched_sched::decide(view, queue, now, &self.sched_config),
        }
    }

    /// What gsbatch prints for job `id` just submitted: when it will start and why, if the
    /// policy defers it.
    pub fn deferral_note(&mut self, id: JobId, now: i64) -> Option<DeferralNote> {
        let j = self.jobs.get(&id)?;
        if j.info.state != JobState::Pending || j.info.held || j.info.het.is_some() {
            return None;
        }
        let q = QueuedJob {
            id,
            priority: 0,
            submit_time: j.info.submit_time,
            partitions: Vec::new(),
            held: None,
            begin_time: j.info.spec.begin_time,
            time_limit: j.info.time_limit,
            time_min: j.info.spec.time_min,
            req: Default::default(),
            limits: Vec::new(),
            het: None,
        };
        let cpus = j.info.num_cpus.max(1) as f64;
        let input = self.price_input(now, std::slice::from_ref(&q))?;
        let d = deferral(&q, now, &self.sched_config, &input)?;
        // Mean power per CPU over the cluster: the nodes are not chosen yet.
        let (w, c) = self.cfg.nodes.iter().fold((0.0, 0u64), |(w, c), n| {
            (
                w + self.cfg.price.node_watts(&n.name, n.cpus),
                c + n.cpus as u64,
            )
        });
        let kw = cpus * w / (c.max(1) as f64) / 1000.0;
        let hours = gsched_sched::price::planned_secs(&q, &self.sched_config) as f64 / 3600.0;
        Some(DeferralNote {
            start: d.start,
            price_now: d.price_now,
            price_then: d.price_then,
            cost_now: d.mean_now * kw * hours,
            cost_then: d.mean_then * kw * hours,
        })
    }

    /// `--deadline`: pending jobs that can no longer end in time are removed (state
    /// DEADLINE, reason DeadLine), as Slurm does when `start > deadline - time[-min]`.
    pub(super) fn deadline_pass(&mut self, now: i64) {
        let mut gone = Vec::new();
        self.active.each_mut(&mut self.jobs, |j| {
            if j.info.state != JobState::Pending {
                return;
            }
            let Some(deadline) = j.info.spec.deadline else {
                return;
            };
            let min = j.info.spec.time_min.or(j.info.time_limit).unwrap_or(0) as i64 * 60;
            if now + min > deadline {
                j.info.state = JobState::Deadline;
                j.info.reason = Reason::DeadLine;
                j.info.end_time = Some(now);
                j.info.start_time.get_or_insert(now);
                j.info.expected_start = None;
                gone.push(j.info.job_id);
            }
        });
        if let Err(e) = self.persist_many(&gone) {
            tracing::error!("cannot record jobs past their deadline: {e}");
        }
    }

    /// Adds a utilization sample; stores the mean of an hour once it is over.
    fn sample_load(&mut self, view: &ClusterView, now: i64) {
        let (mut cpus, mut alloc) = (0u64, 0u64);
        for n in view.nodes.iter().filter(|n| n.available) {
            cpus += n.cpus as u64;
            alloc += n.alloc_cpus.min(n.cpus) as u64;
        }
        if cpus == 0 {
            return;
        }
        let hour = now - now.rem_euclid(HOUR);
        if hour != self.price.hour {
            if self.price.samples > 0 {
                let mean = self.price.sum / self.price.samples as f64;
                if let Err(e) = self.store.save_load_hour(self.price.hour, mean) {
                    tracing::error!("cannot record the cluster's utilization: {e}");
                }
            }
            self.price.hour = hour;
            self.price.sum = 0.0;
            self.price.samples = 0;
        }
        self.price.sum += alloc as f64 / cpus as f64;
        self.price.samples += 1;
    }

    /// The (weekday, hour) profile of the last 14 days, recomputed at most hourly.
    fn load_profile(&mut self, now: i64) {
        if self.price.profile_at != 0 && now - self.price.profile_at < HOUR {
            return;
        }
        self.price.profile_at = now;
        let rows = match self.store.load_load_hours(now - PROFILE_DAYS * 24 * HOUR) {
            Ok(r) => r,
            Err(e) => {
                tracing::error!("cannot read the utilization history: {e}");
                return;
            }
        };
        let tz = self.cfg.price.tz();
        let mut by: BTreeMap<(u8, u8), Vec<f64>> = BTreeMap::new();
        let mut days = std::collections::BTreeSet::new();
        for (t, f) in rows {
            let (wd, h) = local_weekday_hour(t, &tz);
            by.entry((wd as u8, h as u8)).or_default().push(f);
            days.insert(t.div_euclid(24 * HOUR));
        }
        self.price.history_days = days.len() as u32;
        self.price.profile = by
            .into_iter()
            .map(|(k, mut v)| {
                v.sort_by(|a, b| a.total_cmp(b));
                let m = if v.len() % 2 == 1 {
                    v[v.len() / 2]
                } else {
                    (v[v.len() / 2 - 1] + v[v.len() / 2]) / 2.0
                };
                (k, (m, v.len() as u32))
            })
            .collect();
    }

    /// Whether an hour of the week is low-load.
    fn is_low(&self, key: (u8, u8)) -> bool {
        self.price.history_days >= MIN_DAYS
            && self
                .price
                .profile
                .get(&key)
                .is_some_and(|&(m, _)| m < self.cfg.price.low_load_threshold)
    }

    /// The starts of the low-load hours in `[from, to)`.
    fn low_hours(&mut self, from: i64, to: i64) -> Vec<i64> {
        self.load_profile(from);
        let tz = self.cfg.price.tz();
        let mut out = Vec::new();
        let mut h = from - from.rem_euclid(HOUR);
        while h < to {
            let (wd, hr) = local_weekday_hour(h, &tz);
            if self.is_low((wd as u8, hr as u8)) {
                out.push(h);
            }
            h += HOUR;
        }
        out
    }

    /// `GET /v1/prices`.
    pub fn prices_response(&mut self, now: i64) -> PricesResponse {
        let (spans, default) = self.planning_spans(now, now + 24 * HOUR);
        let mut out = Vec::new();
        let mut t = now;
        for s in &spans {
            if s.start > t {
                out.push(PriceSpanInfo {
                    start: t,
                    end: s.start,
                    price: default,
                    source: "default".into(),
                });
            }
            let source = match s.source {
                "window" => self
                    .price
                    .cal
                    .as_ref()
                    .and_then(|c| c.window_at(s.start))
                    .unwrap_or("window")
                    .to_string(),
                other => other.to_string(),
            };
            out.push(PriceSpanInfo {
                start: s.start,
                end: s.end,
                price: s.price,
                source,
            });
            t = s.end;
        }
        if t < now + 24 * HOUR {
            out.push(PriceSpanInfo {
                start: t,
                end: now + 24 * HOUR,
                price: default,
                source: "default".into(),
            });
        }
        self.load_profile(now);
        let load_profile = self
            .price
            .profile
            .iter()
            .map(|(&(wd, h), &(m, days))| LoadHour {
                weekday: wd,
                hour: h,
                median: m,
                samples: days,
                low: self.is_low((wd, h)),
            })
            .collect();
        let p = &self.cfg.price;
        PricesResponse {
            now,
            enabled: p.enabled(),
            time_zone: p
                .tz()
                .iana_name()
                .map_or_else(|| "system".to_string(), str::to_string),
            default_price: default,
            spans: out,
            learn_low_load: p.learn_low_load,
            low_load_threshold: p.low_load_threshold,
            history_days: self.price.history_days.min(PROFILE_DAYS as u32),
            load_profile,
        }
    }
}
