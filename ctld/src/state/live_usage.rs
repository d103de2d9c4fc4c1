//! Live usage from the heartbeats, for `gsstat`, `gscontrol show job` and the API
//! (`jobs/usage`, `nodes/usage`).
//!
//! Per running job and node, the controller keeps the last [`USAGE_RING`] samples and, over
//! the whole run, the peaks, the means and the highest I/O counts (a few numbers, so a long
//! job costs no more than a short one). A job's samples go when the job stops running or
//! a new run of it starts (requeue), at the next heartbeat of any node. Per node it keeps
//! the last [`USAGE_RING`] load samples and the hour in progress (mean CPU load, GPU
//! utilization and memory, highest memory, bytes received and sent), which is written to the
//! store (`node_hours`, migration 7) when the first sample of the next hour arrives; hours
//! older than `UsageHistoryDays` are then pruned, with the cluster's `load_hours`. The hour
//! in progress when gsctld stops is lost. Nothing here is needed to schedule: it is
//! monitoring data, so a store failure is logged and the heartbeat still answered.

use super::State;
use gsched_proto::api::{
    ApiError, ErrorCode, JobNodeUsage, JobUsageInfo, JobUsageQuery, JobUsageSample, NodeLoadPoint,
    NodeUsageHour, NodeUsageInfo, NodeUsageQuery, UsagePoint, UsageTotals, USAGE_RING,
};
use gsched_proto::auth::Identity;
use gsched_proto::gpu_sample::GpuSample;
use gsched_proto::job::{JobId, JobState};
use gsched_proto::resv::NodeLoad;
use std::collections::{BTreeMap, HashMap, VecDeque};

const HOUR: i64 = 3600;
/// CPU use "now" is measured between the newest sample and the newest one at least this
/// many seconds older (else the oldest kept): heartbeat times are whole seconds.
const CPU_WINDOW_SECS: i64 = 30;

/// The live usage the controller keeps.
#[derive(Debug, Default)]
pub struct LiveRt {
    jobs: HashMap<JobId, JobSeries>,
    nodes: HashMap<String, NodeSeries>,
}

#[derive(Debug)]
struct JobSeries {
    /// The run the samples belong to.
    start_time: i64,
    nodes: BTreeMap<String, JobRing>,
}

/// A running mean of samples that may be missing.
#[derive(Debug, Default, Clone, Copy)]
struct Mean {
    sum: u128,
    n: u64,
}

impl Mean {
    fn add(&mut self, v: Option<u64>) {
        if let Some(v) = v {
            self.sum += u128::from(v);
            self.n += 1;
        }
    }

    fn get(self) -> Option<u64> {
        (self.n > 0).then(|| u64::try_from(self.sum / u128::from(self.n)).unwrap_or(u64::MAX))
    }
}

fn max_opt(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

fn sum_opt(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.saturating_add(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

/// One job's samples from one node.
#[derive(Debug, Default)]
struct JobRing {
    ring: VecDeque<UsagePoint>,
    samples: u64,
    peak_rss: Option<u64>,
    peak_vsize: Option<u64>,
    rss: Mean,
    vsize: Mean,
    read: Option<u64>,
    write: Option<u64>,
}

impl JobRing {
    fn push(&mut self, time: i64, s: JobUsageSample) {
        self.samples += 1;
        self.peak_rss = max_opt(max_opt(self.peak_rss, s.peak_rss_bytes), s.rss_bytes);
        self.peak_vsize = max_opt(self.peak_vsize, s.vsize_bytes);
        self.rss.add(s.rss_bytes);
        self.vsize.add(s.vsize_bytes);
        self.read = max_opt(self.read, s.read_bytes);
        self.write = max_opt(self.write, s.write_bytes);
        if self.ring.len() >= USAGE_RING {
            self.ring.pop_front();
        }
        self.ring.push_back(UsagePoint { time, sample: s });
    }

    /// CPU use lately, percent of one CPU (see [`CPU_WINDOW_SECS`]).
    fn cpu_util(&self) -> Option<f64> {
        let new = self.ring.back()?;
        let old = self
            .ring
            .iter()
            .rev()
            .find(|p| p.time <= new.time - CPU_WINDOW_SECS)
            .or_else(|| self.ring.front())?;
        let dt = new.time - old.time;
        let used = new.sample.cpu_usec?.checked_sub(old.sample.cpu_usec?)?;
        (dt > 0).then(|| used as f64 * 100.0 / (dt as f64 * 1e6))
    }

    fn info(&self, node: &str, node_index: u32, series: bool) -> JobNodeUsage {
        let latest = self.ring.back();
        JobNodeUsage {
            node: node.to_string(),
            node_index,
            samples: self.samples,
            time: latest.map_or(0, |p| p.time),
            latest: latest.map(|p| p.sample).unwrap_or_default(),
            peak_rss_bytes: self.peak_rss,
            peak_vsize_bytes: self.peak_vsize,
            ave_rss_bytes: self.rss.get(),
            ave_vsize_bytes: self.vsize.get(),
            cpu_util_percent: self.cpu_util(),
            read_bytes: self.read,
            write_bytes: self.write,
            series: if series {
                self.ring.iter().copied().collect()
            } else {
                Vec::new()
            },
        }
    }
}

/// A job's usage summed over its nodes.
fn totals(nodes: &[JobNodeUsage], start_time: i64, cpus: u32) -> UsageTotals {
    let mut t = UsageTotals::default();
    let mut util: Option<f64> = None;
    let mut newest = 0;
    for n in nodes {
        let l = &n.latest;
        t.rss_bytes = sum_opt(t.rss_bytes, l.rss_bytes);
        if n.peak_rss_bytes.is_some() && n.peak_rss_bytes > t.max_rss_bytes {
            t.max_rss_bytes = n.peak_rss_bytes;
            t.max_rss_node = Some(n.node.clone());
        }
        t.ave_rss_bytes = sum_opt(t.ave_rss_bytes, n.ave_rss_bytes);
        t.cpu_usec = sum_opt(t.cpu_usec, l.cpu_usec);
        if let Some(u) = n.cpu_util_percent {
            util = Some(util.unwrap_or(0.0) + u);
        }
        t.read_bytes = sum_opt(t.read_bytes, n.read_bytes);
        t.write_bytes = sum_opt(t.write_bytes, n.write_bytes);
        t.processes = t.processes.saturating_add(l.processes);
        t.gpu_util_percent = t.gpu_util_percent.max(l.gpu_util_percent);
        t.gpu_mem_mb = sum_opt(t.gpu_mem_mb, l.gpu_mem_mb);
        newest = newest.max(n.time);
    }
    let elapsed = newest - start_time;
    t.ave_cpus_used = t
        .cpu_usec
        .filter(|_| elapsed > 0)
        .map(|c| c as f64 / 1e6 / elapsed as f64);
    // Before a node's second sample there is no recent rate: the average since the start.
    t.cpu_util_percent = util
        .map(|u| u / f64::from(cpus.max(1)))
        .or_else(|| t.ave_cpus_used.map(|c| c * 100.0 / f64::from(cpus.max(1))));
    t
}

/// The difference of a counter since its last value (a counter that went back was reset:
/// a reboot, so all of it is new); `None` without a value, 0 for the first.
fn delta(last: &mut Option<u64>, now: Option<u64>) -> Option<u64> {
    let n = now?;
    let d = match *last {
        Some(l) if n >= l => n - l,
        Some(_) => n,
        None => 0,
    };
    *last = Some(n);
    Some(d)
}

/// A node's hour in progress.
#[derive(Debug, Default, Clone)]
struct HourAcc {
    hour: i64,
    samples: u32,
    cpu_sum: f64,
    gpu_sum: f64,
    gpu_n: u32,
    mem_sum: f64,
    mem_n: u32,
    mem_max: Option<u64>,
    mem_total: Option<u64>,
    rx: Option<u64>,
    tx: Option<u64>,
    /// The counters' last values (carried over to the next hour).
    last_rx: Option<u64>,
    last_tx: Option<u64>,
}

impl HourAcc {
    /// Adds a sample received at `now` (with `gpu`, the mean GPU utilization of the
    /// heartbeat's GPU samples); returns the previous hour once a sample of a later one
    /// arrives.
    fn add(&mut self, now: i64, l: &NodeLoad, gpu: Option<f64>) -> Option<NodeUsageHour> {
        let hour = now - now.rem_euclid(HOUR);
        let mut done = None;
        if hour != self.hour {
            if self.samples > 0 {
                done = self.current();
            }
            *self = HourAcc {
                hour,
                last_rx: self.last_rx,
                last_tx: self.last_tx,
                ..HourAcc::default()
            };
        }
        self.samples += 1;
        self.cpu_sum += f64::from(l.cpu_load_pct);
        if let Some(g) = gpu {
            self.gpu_sum += g;
            self.gpu_n += 1;
        }
        if let Some(used) = l.mem_used_mb {
            self.mem_sum += used as f64;
            self.mem_n += 1;
            self.mem_max = max_opt(self.mem_max, Some(used));
        }
        self.mem_total = l.mem_total_mb.or(self.mem_total);
        if let Some(d) = delta(&mut self.last_rx, l.net_rx_bytes) {
            self.rx = Some(self.rx.unwrap_or(0).saturating_add(d));
        }
        if let Some(d) = delta(&mut self.last_tx, l.net_tx_bytes) {
            self.tx = Some(self.tx.unwrap_or(0).saturating_add(d));
        }
        done
    }

    /// The hour so far.
    fn current(&self) -> Option<NodeUsageHour> {
        (self.samples > 0).then(|| NodeUsageHour {
            hour: self.hour,
            samples: self.samples,
            cpu_load_pct: self.cpu_sum / f64::from(self.samples),
            gpu_util_pct: (self.gpu_n > 0).then(|| self.gpu_sum / f64::from(self.gpu_n)),
            mem_used_mb: (self.mem_n > 0).then(|| self.mem_sum / f64::from(self.mem_n)),
            mem_used_max_mb: self.mem_max,
            mem_total_mb: self.mem_total,
            net_rx_bytes: self.rx,
            net_tx_bytes: self.tx,
        })
    }
}

/// A node's load samples.
#[derive(Debug, Default)]
struct NodeSeries {
    ring: VecDeque<NodeLoadPoint>,
    hour: HourAcc,
}

impl State {
    /// Takes in a registered node's heartbeat: its load and its jobs' usage samples.
    pub fn record_usage(
        &mut self,
        node: &str,
        load: Option<NodeLoad>,
        usage: &[JobUsageSample],
        gpu: &[GpuSample],
        now: i64,
    ) {
        for s in usage {
            let Some(j) = self.jobs.get(&s.job_id) else {
                continue;
            };
            if j.info.state != JobState::Running || !j.info.nodes.iter().any(|n| n == node) {
                continue;
            }
            let start_time = j.info.start_time.unwrap_or(0);
            let series = self.live.jobs.entry(s.job_id).or_insert_with(|| JobSeries {
                start_time,
                nodes: BTreeMap::new(),
            });
            if series.start_time != start_time {
                *series = JobSeries {
                    start_time,
                    nodes: BTreeMap::new(),
                };
            }
            series
                .nodes
                .entry(node.to_string())
                .or_default()
                .push(now, *s);
        }
        let jobs = &self.jobs;
        self.live.jobs.retain(|id, s| {
            jobs.get(id).is_some_and(|j| {
                j.info.state == JobState::Running && j.info.start_time == Some(s.start_time)
            })
        });
        let Some(load) = load else {
            return;
        };
        let ns = self.live.nodes.entry(node.to_string()).or_default();
        if ns.ring.len() >= USAGE_RING {
            ns.ring.pop_front();
        }
        ns.ring.push_back(NodeLoadPoint { time: now, load });
        let gpu_util = (!gpu.is_empty())
            .then(|| gpu.iter().map(|g| f64::from(g.util_percent)).sum::<f64>() / gpu.len() as f64);
        if let Some(done) = ns.hour.add(now, &load, gpu_util) {
            let keep_since = now - i64::from(self.cfg.usage_history_days) * 24 * HOUR;
            if let Err(e) = self
                .store
                .save_node_hours(&[(node.to_string(), done)], keep_since)
            {
                tracing::error!("cannot store the hourly usage of node {node}: {e}");
            }
        }
    }

    /// `POST /v1/jobs/usage`: each asked job's live usage, for its owner and administrators.
    pub fn job_usage(&self, q: &JobUsageQuery, who: &Identity) -> Vec<JobUsageInfo> {
        q.job_ids
            .iter()
            .map(|&job_id| {
                let fail = |code| JobUsageInfo {
                    job_id,
                    error: Some(ApiError::plain(code)),
                    ..JobUsageInfo::default()
                };
                let Some(j) = self.jobs.get(&job_id) else {
                    return fail(ErrorCode::InvalidJobId);
                };
                if j.info.user_id != who.uid && !self.is_admin(who) {
                    return fail(ErrorCode::AccessDenied);
                }
                match j.info.state {
                    JobState::Running => {}
                    JobState::Pending => return fail(ErrorCode::JobPending),
                    _ => return fail(ErrorCode::JobAlreadyDone),
                }
                let start_time = j.info.start_time.unwrap_or(0);
                let nodes: Vec<JobNodeUsage> = self
                    .live
                    .jobs
                    .get(&job_id)
                    .filter(|s| s.start_time == start_time)
                    .map(|s| {
                        j.info
                            .nodes
                            .iter()
                            .enumerate()
                            .filter_map(|(i, n)| {
                                let ring = s.nodes.get(n)?;
                                Some(ring.info(n, i.try_into().unwrap_or(u32::MAX), q.series))
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                JobUsageInfo {
                    job_id,
                    error: None,
                    start_time,
                    cpus: j.info.num_cpus,
                    total: totals(&nodes, start_time, j.info.num_cpus),
                    nodes,
                }
            })
            .collect()
    }

    /// `POST /v1/nodes/usage`: the nodes' newest and kept load samples, and their stored
    /// hours from `q.hours` ago on, followed by the hour in progress.
    pub fn node_usage(&self, q: &NodeUsageQuery, now: i64) -> Result<Vec<NodeUsageInfo>, ApiError> {
        let mut names = Vec::new();
        for n in &q.nodes {
            for name in State::expand_nodes(n)? {
                if !self.node_index.contains_key(&name) {
                    return Err(ApiError::new(
                        ErrorCode::InvalidNodeName,
                        format!("Node {name} not found"),
                    ));
                }
                names.push(name);
            }
        }
        let stored = if q.hours > 0 {
            let since = now - now.rem_euclid(HOUR) - i64::from(q.hours) * HOUR;
            self.store.node_hours(&names, since).map_err(|e| {
                ApiError::new(
                    ErrorCode::Internal,
                    format!("cannot read the hourly usage: {e}"),
                )
            })?
        } else {
            Vec::new()
        };
        Ok(self
            .nodes
            .iter()
            .filter(|n| names.is_empty() || names.contains(&n.name))
            .map(|n| {
                let live = self.live.nodes.get(&n.name);
                let mut hours: Vec<NodeUsageHour> = stored
                    .iter()
                    .filter(|(name, _)| *name == n.name)
                    .map(|(_, h)| h.clone())
                    .collect();
                if q.hours > 0 {
                    if let Some(h) = live.and_then(|l| l.hour.current()) {
                        hours.retain(|s| s.hour != h.hour);
                        hours.push(h);
                    }
                }
                NodeUsageInfo {
                    name: n.name.clone(),
                    latest: live.and_then(|l| l.ring.back().copied()),
                    series: match live {
                        Some(l) if q.series => l.ring.iter().copied().collect(),
                        _ => Vec::new(),
                    },
                    hours,
                }
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{register_all, spec, state, ROOT};
    use super::*;

    fn sample(job_id: JobId, rss: u64, cpu: u64) -> JobUsageSample {
        JobUsageSample {
            job_id,
            rss_bytes: Some(rss),
            cpu_usec: Some(cpu),
            read_bytes: Some(rss / 2),
            write_bytes: Some(10),
            processes: 2,
            ..JobUsageSample::default()
        }
    }

    #[test]
    fn rings_are_bounded_and_keep_peaks_and_means() {
        let mut r = JobRing::default();
        for i in 0..(USAGE_RING as u64 + 30) {
            r.push(1000 + i as i64, sample(1, 100 + i, i * 500_000));
        }
        assert_eq!(r.ring.len(), USAGE_RING);
        assert_eq!(r.samples, USAGE_RING as u64 + 30);
        let n = USAGE_RING as u64 + 30;
        assert_eq!(r.peak_rss, Some(100 + n - 1));
        // The mean is over every sample of the run, not only the kept ones.
        assert_eq!(r.rss.get(), Some(100 + (n - 1) / 2));
        // Half a CPU second per second: 50% of one CPU.
        let u = r.cpu_util().unwrap();
        assert!((u - 50.0).abs() < 1e-9, "{u}");
        // The node's cgroup peak counts when higher.
        r.push(
            2000,
            JobUsageSample {
                peak_rss_bytes: Some(1 << 30),
                ..sample(1, 5, 0)
            },
        );
        assert_eq!(r.peak_rss, Some(1 << 30));
        // CPU time that went back (a new process tree) gives no rate.
        assert_eq!(r.cpu_util(), None);
        let info = r.info("n1", 0, true);
        assert_eq!(info.series.len(), USAGE_RING);
        assert_eq!(info.read_bytes, Some((100 + n - 1) / 2));
        assert!(r.info("n1", 0, false).series.is_empty());
    }

    #[test]
    fn totals_over_nodes() {
        let node = |name: &str, peak, cpu, time| JobNodeUsage {
            node: name.into(),
            time,
            latest: sample(1, 10, cpu),
            peak_rss_bytes: Some(peak),
            ave_rss_bytes: Some(5),
            cpu_util_percent: Some(100.0),
            read_bytes: Some(1),
            write_bytes: None,
            ..JobNodeUsage::default()
        };
        let t = totals(
            &[node("a", 7, 2_000_000, 1010), node("b", 9, 4_000_000, 1012)],
            1000,
            4,
        );
        assert_eq!(t.rss_bytes, Some(20));
        assert_eq!(
            (t.max_rss_bytes, t.max_rss_node.as_deref()),
            (Some(9), Some("b"))
        );
        assert_eq!(t.ave_rss_bytes, Some(10));
        assert_eq!(t.cpu_usec, Some(6_000_000));
        assert_eq!(t.ave_cpus_used, Some(0.5));
        assert_eq!(t.cpu_util_percent, Some(50.0));
        assert_eq!((t.read_bytes, t.write_bytes), (Some(2), None));
        assert_eq!(t.processes, 4);
        assert_eq!(totals(&[], 1000, 1), UsageTotals::default());
        // One sample per node: CPU use since the start.
        let mut first = node("a", 7, 2_000_000, 1010);
        first.cpu_util_percent = None;
        let t = totals(&[first], 1000, 2);
        assert_eq!(t.cpu_util_percent, Some(10.0));
    }

    #[test]
    fn hours_close_when_the_next_begins() {
        let mut h = HourAcc::default();
        let load = |cpu, used, rx| NodeLoad {
            cpu_load_pct: cpu,
            mem_total_mb: Some(1000),
            mem_used_mb: Some(used),
            net_rx_bytes: Some(rx),
            net_tx_bytes: None,
            ..NodeLoad::default()
        };
        assert_eq!(h.add(7200, &load(10, 100, 5000), Some(50.0)), None);
        assert_eq!(h.add(7300, &load(30, 300, 6000), None), None);
        // A reboot reset the counter: all of it is new.
        assert_eq!(h.add(7400, &load(20, 200, 500), None), None);
        let done = h.add(10_800, &load(0, 0, 700), None).unwrap();
        assert_eq!(
            done,
            NodeUsageHour {
                hour: 7200,
                samples: 3,
                cpu_load_pct: 20.0,
                gpu_util_pct: Some(50.0),
                mem_used_mb: Some(200.0),
                mem_used_max_mb: Some(300),
                mem_total_mb: Some(1000),
                net_rx_bytes: Some(1500),
                net_tx_bytes: None,
            }
        );
        // The counter carries over: the next hour starts from the last value.
        let now = h.current().unwrap();
        assert_eq!(
            (now.hour, now.samples, now.net_rx_bytes),
            (10_800, 1, Some(200))
        );
    }

    #[test]
    fn heartbeats_feed_jobs_and_nodes_and_ended_jobs_go() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(dir.path());
        register_all(&mut st, 1000);
        let id = st.submit(spec(1), ROOT, 1000).unwrap();
        st.schedule(1001);
        assert_eq!(st.jobs[&id].info.state, JobState::Running);
        // Owned by an ordinary user from here on.
        let owner = Identity {
            uid: 4242,
            gid: 4242,
        };
        st.jobs.get_mut(&id).unwrap().info.user_id = owner.uid;
        let node = st.jobs[&id].info.nodes[0].clone();
        let load = NodeLoad {
            cpu_load_pct: 12,
            mem_total_mb: Some(4000),
            mem_used_mb: Some(1000),
            ..NodeLoad::default()
        };
        st.record_usage(
            &node,
            Some(load),
            &[sample(id, 150 << 20, 1_000_000)],
            &[],
            1002,
        );
        st.record_usage(
            &node,
            Some(load),
            &[sample(id, 200 << 20, 3_000_000)],
            &[],
            1004,
        );
        // A sample of a job that is not running there is ignored.
        st.record_usage("nowhere", None, &[sample(id, 1, 1)], &[], 1004);
        let q = JobUsageQuery {
            job_ids: vec![id, 999],
            series: false,
        };
        let got = st.job_usage(&q, &owner);
        assert_eq!(got.len(), 2);
        let u = &got[0];
        assert_eq!(u.error, None);
        assert_eq!(u.nodes.len(), 1);
        assert_eq!(u.nodes[0].samples, 2);
        assert_eq!(u.total.max_rss_bytes, Some(200 << 20));
        assert_eq!(u.total.rss_bytes, Some(200 << 20));
        assert_eq!(u.total.ave_rss_bytes, Some(175 << 20));
        assert_eq!(u.nodes[0].cpu_util_percent, Some(100.0));
        assert_eq!(
            got[1].error.as_ref().map(|e| e.code),
            Some(ErrorCode::InvalidJobId)
        );
        // Someone else's job: refused.
        let other = Identity {
            uid: 4343,
            gid: 4343,
        };
        assert_eq!(
            st.job_usage(&q, &other)[0].error.as_ref().map(|e| e.code),
            Some(ErrorCode::AccessDenied)
        );
        // The node's load is kept, and its hour in progress shown.
        let nodes = st
            .node_usage(
                &NodeUsageQuery {
                    nodes: vec![node.clone()],
                    series: true,
                    hours: 24,
                },
                1005,
            )
            .unwrap();
        assert_eq!(nodes.len(), 1);
        assert_eq!(nodes[0].series.len(), 2);
        assert_eq!(nodes[0].latest.unwrap().load.mem_used_mb, Some(1000));
        assert_eq!(nodes[0].hours.len(), 1);
        assert_eq!(nodes[0].hours[0].samples, 2);
        assert!(st
            .node_usage(
                &NodeUsageQuery {
                    nodes: vec!["nosuch".into()],
                    ..NodeUsageQuery::default()
                },
                1005
            )
            .is_err());
        // The next hour's first sample writes the hour to the store.
        st.record_usage(&node, Some(load), &[], &[], 3600 + 10);
        let stored = st.store.node_hours(&[], 0).unwrap();
        assert_eq!(stored.len(), 1);
        assert_eq!((stored[0].1.hour, stored[0].1.samples), (0, 2));
        // Once the job ends, its samples go.
        st.jobs.get_mut(&id).unwrap().info.state = JobState::Completed;
        st.record_usage(&node, None, &[], &[], 3620);
        assert!(st.live.jobs.is_empty());
        assert_eq!(
            st.job_usage(&q, &owner)[0].error.as_ref().map(|e| e.code),
            Some(ErrorCode::JobAlreadyDone)
        );
    }
}
