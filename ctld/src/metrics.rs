//! Prometheus metrics at `GET /metrics` (OpenMetrics text, `prometheus-client`).
//!
//! Gauges of what the cluster holds now (jobs by state and partition, nodes by state, CPUs and
//! memory configured and allocated, CPUs in use by the nodes' load, GPUs configured and
//! allocated per node, each GPU's newest utilization and memory sample, running jobs flagged
//! by the invalid-job ladder, the current price) are read from the state at each scrape;
//! counters and histograms of what happened (scheduling passes and their time, jobs
//! submitted, started and backfilled, queue wait at start) are updated by the scheduling loop
//! and the API, and those the state measures itself (GPU-seconds allocated and used, ladder
//! steps, estimated energy and cost of ended jobs: `state/monitor.rs`) are brought up to the
//! state's totals at each scrape. Label sets stay bounded: states, partitions, node states,
//! nodes, GPU indices and types, ladder steps and reasons, never one series per job or user.
//! The list of families is documented in gsched(7), which `tests/tests/metrics.rs` checks.
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
use std::sync::atomic::AtomicU64;

use gsched_proto::config::Config;
use gsched_proto::job::{InvalidKind, JobId, JobState, Reason};

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

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NodeNameLabels {
    node: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NodeGpuTypeLabels {
    node: String,
    r#type: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GpuAllocLabels {
    node: String,
    /// `exclusive`: held whole by one job; `shared`: held by shares (MPS, shards).
    mode: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GpuLabels {
    node: String,
    gpu: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LadderLabels {
    step: String,
    reason: String,
}

type GaugeF = Gauge<f64, AtomicU64>;
type CounterF = Counter<f64, AtomicU64>;

/// Brings a counter up to a total kept elsewhere (totals only grow).
fn sync_f(c: &CounterF, total: f64) {
    let d = total - c.get();
    if d > 0.0 {
        c.inc_by(d);
    }
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
    launch_requests: Counter,
    end_requests: Counter,
    submitted: Counter,
    started: Counter,
    backfilled: Counter,
    queue_wait: Histogram,
    cpus_used: GaugeF,
    node_cpus_used: Family<NodeNameLabels, GaugeF>,
    mem_used: Gauge,
    node_mem_used: Family<NodeNameLabels, Gauge>,
    gpus: Family<NodeGpuTypeLabels, Gauge>,
    gpus_alloc: Family<GpuAllocLabels, Gauge>,
    gpu_mem: Family<GpuLabels, Gauge>,
    gpu_util: Family<GpuLabels, Gauge>,
    gpu_mem_used: Family<GpuLabels, Gauge>,
    gpu_alloc_secs: CounterF,
    gpu_used_secs: CounterF,
    invalid: Family<ReasonLabels, Gauge>,
    ladder: Family<LadderLabels, Counter>,
    energy: CounterF,
    cost: CounterF,
    /// Registered only where prices are configured.
    price: Option<GaugeF>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// The metrics of a cluster without prices (no `gsched_price`).
    pub fn new() -> Metrics {
        Self::build(false)
    }

    /// The metrics of `cfg`'s cluster: `gsched_price` where prices are configured.
    pub fn for_config(cfg: &Config) -> Metrics {
        Self::build(cfg.price.enabled() || cfg.price.default_price != 0.0)
    }

    fn build(with_price: bool) -> Metrics {
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
            launch_requests: Counter::default(),
            end_requests: Counter::default(),
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
            cpus_used: GaugeF::default(),
            node_cpus_used: Family::default(),
            mem_used: Gauge::default(),
            node_mem_used: Family::default(),
            gpus: Family::default(),
            gpus_alloc: Family::default(),
            gpu_mem: Family::default(),
            gpu_util: Family::default(),
            gpu_mem_used: Family::default(),
            gpu_alloc_secs: CounterF::default(),
            gpu_used_secs: CounterF::default(),
            invalid: Family::default(),
            ladder: Family::default(),
            energy: CounterF::default(),
            cost: CounterF::default(),
            price: with_price.then(GaugeF::default),
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
            "node_launch_requests",
            "Requests that started jobs on nodes: one per node and scheduling pass (compare with gsched_jobs_started_total)",
            m.launch_requests.clone(),
        );
        r.register(
            "job_end_requests",
            "Requests by which nodes reported job ends: the ends of a node within a few milliseconds share one",
            m.end_requests.clone(),
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
        r.register(
            "cpus_used",
            "CPUs in use by the nodes' load: each responding node's one-minute load average, capped at its CPUs, summed (compare with gsched_cpus_allocated)",
            m.cpus_used.clone(),
        );
        r.register(
            "node_cpus_used",
            "CPUs in use on the node by its load: its one-minute load average capped at its CPUs",
            m.node_cpus_used.clone(),
        );
        r.register(
            "memory_used_bytes",
            "Memory in use on the nodes (MemTotal - MemAvailable of each responding node's newest sample), summed (compare with gsched_memory_allocated_bytes)",
            m.mem_used.clone(),
        );
        r.register(
            "node_memory_used_bytes",
            "Memory in use on the node: MemTotal - MemAvailable of its newest sample",
            m.node_mem_used.clone(),
        );
        r.register(
            "gpus",
            "GPUs of the node (as its gsnoded registered them, else its Gres=), by type",
            m.gpus.clone(),
        );
        r.register(
            "gpus_allocated",
            "GPUs of the node held by running jobs: mode=exclusive held whole by one job, mode=shared held by shares (MPS, shards)",
            m.gpus_alloc.clone(),
        );
        r.register(
            "gpu_memory_bytes",
            "Memory of each GPU (NVML, gres.conf or GpuMemory=); left out where unknown",
            m.gpu_mem.clone(),
        );
        r.register(
            "gpu_utilization_percent",
            "Utilization of each GPU in its newest sample (NVML utilization.gpu, every GpuSampleInterval); left out when the sample is stale",
            m.gpu_util.clone(),
        );
        r.register(
            "gpu_memory_used_bytes",
            "GPU memory in use in each GPU's newest sample; left out when the sample is stale",
            m.gpu_mem_used.clone(),
        );
        r.register(
            "gpu_allocated_seconds",
            "GPU-seconds of sampled GPUs while jobs held them (rate() is the number of allocated GPUs that are sampled)",
            m.gpu_alloc_secs.clone(),
        );
        r.register(
            "gpu_used_seconds",
            "GPU-seconds of sampled GPUs held by jobs, weighted by their sampled utilization (rate() is the GPUs' worth of work done; divided by gsched_gpu_allocated_seconds the mean utilization of allocated GPUs)",
            m.gpu_used_secs.clone(),
        );
        r.register(
            "jobs_invalid",
            "Running jobs flagged by the invalid-job ladder now, by reason (Hung, IdleGPU)",
            m.invalid.clone(),
        );
        r.register(
            "invalid_job_actions",
            "Steps the invalid-job ladder took, by step (notify, requeue, cancel) and reason (Hung, IdleGPU)",
            m.ladder.clone(),
        );
        r.register(
            "energy_joules",
            "Estimated energy of the jobs that ended (gsacct's EnergyKWh: Watts= share of CPUs plus GpuWatts=, times run time), in joules",
            m.energy.clone(),
        );
        r.register(
            "cost",
            "Estimated cost of the jobs that ended (gsacct's Cost: their energy at the prices of the hours they ran), in the price calendar's currency",
            m.cost.clone(),
        );
        if let Some(p) = &m.price {
            r.register(
                "price",
                "Price of one kWh now, from PriceWindow=, PriceFile= and DefaultPrice=",
                p.clone(),
            );
        }
        *m.registry.lock().unwrap_or_else(|p| p.into_inner()) = r;
        m
    }

    /// A request to start jobs went to a node.
    pub fn launch_request(&self) {
        self.launch_requests.inc();
    }

    /// A node reported job ends.
    pub fn end_request(&self) {
        self.end_requests.inc();
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
        for o in st.unfinished_jobs().map(|j| &j.info) {
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

    /// The GPU gauges: inventory and holds per node, and each GPU's newest sample.
    fn render_gpus(&self, st: &State, now: i64) {
        self.gpus.clear();
        self.gpus_alloc.clear();
        self.gpu_mem.clear();
        self.gpu_util.clear();
        self.gpu_mem_used.clear();
        let views = st.gpu_views();
        for (n, gpus) in st.nodes.iter().zip(&views) {
            if gpus.is_empty() {
                continue;
            }
            let (mut exclusive, mut shared) = (0, 0);
            for g in gpus {
                self.gpus
                    .get_or_create(&NodeGpuTypeLabels {
                        node: n.name.clone(),
                        r#type: g.device.type_name.clone(),
                    })
                    .inc();
                if g.holds.iter().any(|h| h.share.is_none()) {
                    exclusive += 1;
                } else if !g.holds.is_empty() {
                    shared += 1;
                }
                if g.device.memory_mb > 0 {
                    self.gpu_mem
                        .get_or_create(&GpuLabels {
                            node: n.name.clone(),
                            gpu: g.device.index.to_string(),
                        })
                        .set(g.device.memory_mb as i64 * 1024 * 1024);
                }
            }
            for (mode, v) in [("exclusive", exclusive), ("shared", shared)] {
                self.gpus_alloc
                    .get_or_create(&GpuAllocLabels {
                        node: n.name.clone(),
                        mode: mode.into(),
                    })
                    .set(v);
            }
        }
        // A sample is stale once two sampling intervals and a few heartbeats went by.
        let stale = 2 * i64::from(st.cfg.gpu_sample_interval) + 3 * i64::from(st.heartbeat_secs());
        for (&(i, gpu), s) in st.monitor().gpu_latest() {
            let Some(n) = st.nodes.get(i) else { continue };
            if now - s.time > stale || n.not_responding || n.admin.down {
                continue;
            }
            let l = GpuLabels {
                node: n.name.clone(),
                gpu: gpu.to_string(),
            };
            self.gpu_util
                .get_or_create(&l)
                .set(i64::from(s.util_percent));
            self.gpu_mem_used
                .get_or_create(&l)
                .set(s.mem_used_mb as i64 * 1024 * 1024);
        }
    }

    /// Flagged jobs, the state's own counters, and the price.
    fn render_monitor(&self, st: &mut State, now: i64) {
        let (mut hung, mut idle) = (0, 0);
        for j in st.jobs.values() {
            if j.info.state == JobState::Running {
                match j.info.reason {
                    Reason::Hung => hung += 1,
                    Reason::IdleGPU => idle += 1,
                    _ => {}
                }
            }
        }
        for (kind, v) in [(InvalidKind::Hung, hung), (InvalidKind::IdleGpu, idle)] {
            self.invalid
                .get_or_create(&ReasonLabels {
                    reason: kind.reason().as_str().to_string(),
                })
                .set(v);
        }
        let m = st.monitor();
        for (step, kind, n) in m.ladder_steps() {
            let c = self.ladder.get_or_create(&LadderLabels {
                step: step.as_str().to_string(),
                reason: kind.reason().as_str().to_string(),
            });
            let d = n.saturating_sub(c.get());
            if d > 0 {
                c.inc_by(d);
            }
        }
        sync_f(&self.gpu_alloc_secs, m.gpu_allocated_secs);
        sync_f(&self.gpu_used_secs, m.gpu_used_secs);
        sync_f(&self.energy, m.energy_kwh * 3.6e6);
        sync_f(&self.cost, m.cost);
        if let Some(p) = &self.price {
            if let Some(v) = st.current_price(now) {
                p.set(v);
            }
        }
    }

    /// The exposition text, with the gauges read from `st` at `now`.
    pub fn render(&self, st: &mut State, now: i64) -> String {
        self.render_gpus(st, now);
        self.render_monitor(st, now);
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
        self.node_cpus_used.clear();
        let mut used = 0.0;
        for (node, u) in st.cpus_used() {
            used += u;
            self.node_cpus_used
                .get_or_create(&NodeNameLabels {
                    node: node.to_string(),
                })
                .set(u);
        }
        self.cpus_used.set(used);
        self.node_mem_used.clear();
        let mut mem_used = 0i64;
        for (node, b) in st.memory_used() {
            let b = i64::try_from(b).unwrap_or(i64::MAX);
            mem_used = mem_used.saturating_add(b);
            self.node_mem_used
                .get_or_create(&NodeNameLabels {
                    node: node.to_string(),
                })
                .set(b);
        }
        self.mem_used.set(mem_used);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::tests::{register_all, state};
    use gsched_proto::job::LadderStep;

    fn value(text: &str, name: &str) -> Option<f64> {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
    }

    #[test]
    fn counters_follow_the_states_totals_without_double_counting() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(dir.path());
        register_all(&mut st, 1000);
        st.count_ladder_step_for_test(LadderStep::Requeue, InvalidKind::IdleGpu, 2);
        let m = Metrics::new();
        for _ in 0..2 {
            let text = m.render(&mut st, 1000);
            assert_eq!(
                value(
                    &text,
                    "gsched_invalid_job_actions_total{step=\"requeue\",reason=\"IdleGPU\"}"
                ),
                Some(2.0),
                "{text}"
            );
            assert_eq!(
                value(
                    &text,
                    "gsched_invalid_job_actions_total{step=\"cancel\",reason=\"Hung\"}"
                ),
                Some(0.0)
            );
            assert_eq!(
                value(&text, "gsched_jobs_invalid{reason=\"IdleGPU\"}"),
                Some(0.0)
            );
            assert!(!text.contains("gsched_price"), "{text}");
            assert!(text.contains("# HELP gsched_energy_joules Estimated energy"));
        }
    }
}
