//! Prometheus metrics at `GET /metrics` (OpenMetrics text, `prometheus-client`).
//!
//! Gauges of what the cluster holds now (jobs by state and partition, nodes by state, CPUs and
//! memory configured and allocated) are read from the state at each scrape; counters and
//! histograms of what happened (scheduling passes and their time, jobs submitted, started and
//! backfilled, queue wait at start) are updated by the scheduling loop and the API. Label
//! sets stay bounded: states, partitions and node states, never one series per job or user.
//!
//! The endpoint needs no credential, as Prometheus scrapes without one; it shows only these
//! aggregates.

use std::collections::HashMap;
use std::sync::Mutex;

use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use gsched_proto::job::{JobId, JobState};

use crate::state::State;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct JobLabels {
    state: String,
    partition: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NodeLabels {
    state: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PartitionLabels {
    partition: String,
}

/// Every metric gsctld exports.
pub struct Metrics {
    registry: Mutex<Registry>,
    jobs: Family<JobLabels, Gauge>,
    nodes: Family<NodeLabels, Gauge>,
    partition_cpus: Family<PartitionLabels, Gauge>,
    partition_cpus_alloc: Family<PartitionLabels, Gauge>,
    cpus: Gauge,
    cpus_alloc: Gauge,
    mem: Gauge,
    mem_alloc: Gauge,
    passes: Counter,
    pass_seconds: Histogram,
    submitted: Counter,
    started: Counter,
    backfilled: Counter,
    queue_wait: Histogram,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut r = Registry::with_prefix("gsched");
        let m = Metrics {
            registry: Mutex::new(Registry::default()),
            jobs: Family::default(),
            nodes: Family::default(),
            partition_cpus: Family::default(),
            partition_cpus_alloc: Family::default(),
            cpus: Gauge::default(),
            cpus_alloc: Gauge::default(),
            mem: Gauge::default(),
            mem_alloc: Gauge::default(),
            passes: Counter::default(),
            pass_seconds: Histogram::new(
                [
                    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
                ]
                .into_iter(),
            ),
            submitted: Counter::default(),
            started: Counter::default(),
            backfilled: Counter::default(),
            queue_wait: Histogram::new(
                [
                    1.0,
                    10.0,
                    60.0,
                    300.0,
                    900.0,
                    3600.0,
                    4.0 * 3600.0,
                    12.0 * 3600.0,
                    86_400.0,
                ]
                .into_iter(),
            ),
        };
        r.register(
            "jobs",
            "Jobs known to the controller, by state and partition",
            m.jobs.clone(),
        );
        r.register(
            "nodes",
            "Nodes by state (Slurm's long state names)",
            m.nodes.clone(),
        );
        r.register(
            "partition_cpus",
            "CPUs of the partition's nodes",
            m.partition_cpus.clone(),
        );
        r.register(
            "partition_cpus_allocated",
            "CPUs of the partition's nodes allocated to jobs (of any partition)",
            m.partition_cpus_alloc.clone(),
        );
        r.register("cpus", "CPUs of all nodes", m.cpus.clone());
        r.register(
            "cpus_allocated",
            "CPUs allocated to jobs",
            m.cpus_alloc.clone(),
        );
        r.register(
            "memory_bytes",
            "Memory of all nodes (RealMemory)",
            m.mem.clone(),
        );
        r.register(
            "memory_allocated_bytes",
            "Memory allocated to jobs",
            m.mem_alloc.clone(),
        );
        r.register(
            "scheduler_passes",
            "Scheduling passes run",
            m.passes.clone(),
        );
        r.register(
            "scheduler_pass_seconds",
            "Wall time of one scheduling pass (the whole queue planned)",
            m.pass_seconds.clone(),
        );
        r.register(
            "jobs_submitted",
            "Jobs accepted (array tasks counted one by one)",
            m.submitted.clone(),
        );
        r.register(
            "jobs_started",
            "Jobs started by the scheduler",
            m.started.clone(),
        );
        r.register(
            "jobs_backfilled",
            "Jobs started while a higher-priority job of their partition kept waiting",
            m.backfilled.clone(),
        );
        r.register(
            "queue_wait_seconds",
            "Time from eligible to start, observed when a job starts",
            m.queue_wait.clone(),
        );
        *m.registry.lock().unwrap_or_else(|p| p.into_inner()) = r;
        m
    }

    /// `n` jobs were accepted.
    pub fn submitted(&self, n: u64) {
        self.submitted.inc_by(n);
    }

    /// One scheduling pass took `secs` and started `started` (read from `st` after the pass).
    /// A start counts as backfilled when a job of higher priority in its partition, eligible
    /// and not held, is still waiting after the pass.
    pub fn pass(&self, secs: f64, started: &[JobId], st: &State, now: i64) {
        self.passes.inc();
        self.pass_seconds.observe(secs);
        if started.is_empty() {
            return;
        }
        // Highest priority still waiting, per partition: one walk over the jobs.
        let mut waiting: HashMap<&str, u32> = HashMap::new();
        for o in st.jobs.values().map(|j| &j.info) {
            if o.state == JobState::Pending
                && !o.held
                && o.dependency.is_none()
                && o.eligible_time.is_none_or(|e| e <= now)
            {
                for p in &o.spec.partitions {
                    let m = waiting.entry(p.as_str()).or_insert(0);
                    *m = (*m).max(o.priority);
                }
            }
        }
        for id in started {
            let Some(job) = st.jobs.get(id) else { continue };
            let j = &job.info;
            self.started.inc();
            if let Some(start) = j.start_time {
                let from = j.eligible_time.unwrap_or(j.submit_time);
                self.queue_wait.observe((start - from).max(0) as f64);
            }
            if waiting
                .get(j.partition.as_str())
                .is_some_and(|&m| m > j.priority)
            {
                self.backfilled.inc();
            }
        }
    }

    /// The exposition text, with the gauges read from `st` now.
    pub fn render(&self, st: &State) -> String {
        self.jobs.clear();
        for job in st.jobs.values() {
            let j = &job.info;
            self.jobs
                .get_or_create(&JobLabels {
                    state: j.state.long().to_string(),
                    partition: j.partition.clone(),
                })
                .inc();
        }
        self.nodes.clear();
        self.partition_cpus.clear();
        self.partition_cpus_alloc.clear();
        let infos = st.node_infos();
        let (mut cpus, mut alloc, mut mem, mut mem_alloc) = (0i64, 0i64, 0i64, 0i64);
        for n in &infos {
            self.nodes
                .get_or_create(&NodeLabels {
                    state: n.state_long(),
                })
                .inc();
            cpus += n.cpus as i64;
            alloc += n.alloc_cpus as i64;
            mem += n.real_memory_mb as i64 * 1024 * 1024;
            mem_alloc += n.alloc_mem_mb as i64 * 1024 * 1024;
        }
        for p in &st.parts {
            let l = PartitionLabels {
                partition: p.name.clone(),
            };
            let total: i64 = p
                .nodes
                .iter()
                .filter_map(|&i| infos.get(i))
                .map(|n| n.cpus as i64)
                .sum();
            let used: i64 = p
                .nodes
                .iter()
                .filter_map(|&i| infos.get(i))
                .map(|n| n.alloc_cpus as i64)
                .sum();
            self.partition_cpus.get_or_create(&l).set(total);
            self.partition_cpus_alloc.get_or_create(&l).set(used);
        }
        self.cpus.set(cpus);
        self.cpus_alloc.set(alloc);
        self.mem.set(mem);
        self.mem_alloc.set(mem_alloc);
        let mut out = String::new();
        let reg = self.registry.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(e) = encode(&mut out, &reg) {
            tracing::error!("cannot encode metrics: {e}");
        }
        out
    }
}
