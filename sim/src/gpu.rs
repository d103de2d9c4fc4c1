//! `--gpu-sharing`: replays a GPU trace (the Alibaba GPU v2023 pod list) with real GPUs on
//! the nodes, through the scheduler core's GPU placement, once giving every pod whole GPUs
//! (`whole`, what Slurm's gres/gpu does) and once packing the pods that ask for part of one
//! GPU (`gpu_milli` < 1000) onto shared GPUs (`pack`, gsched's `--gpu-share`), to measure
//! what packing is worth on a real workload.
//!
//! Figures (per policy and sharing mode):
//!
//! * `gpus_busy`: the time-average fraction of GPUs held by at least one job, from the first
//!   submit to the last end;
//! * wait = start − submit, average and p95, for all pods and for the sharing-eligible ones;
//! * `share_gpu_hours`: the GPU-hours the sharing-eligible pods occupied (per GPU, the union
//!   of their runs on it: a GPU shared by three pods for an hour counts one hour), and
//!   `share_jobs_per_gpu_hour` = those pods / those hours; `jobs_per_gpu_hour` the same over
//!   all pods and every GPU-hour held.
//!
//! A pod's CPUs are its `cpu_milli` rounded up to whole CPUs, its memory its `memory_mib`; a
//! share is `gpu_milli` / 10 percent of one GPU (its memory follows the percent; the trace
//! says nothing of GPU memory). The trace has no users, so every pod is one user's and packs
//! with every other (MPS's one-user rule never binds here).

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::{bail, Result};
use gsched_proto::gpu::{GpuDevice, GpuShareRequest};
use gsched_sched::{ClusterView, GpuAmount, GpuNeed, GpuView, NodeView, PartitionView};
use serde::Serialize;

use crate::cluster::Cluster;
use crate::engine::Outcome;
use crate::metrics::percentile;
use crate::trace::{Trace, TraceGpu};

/// How pods asking for part of a GPU are given GPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuSharing {
    /// A whole GPU each, whatever they asked (gres/gpu).
    Whole,
    /// A share of one GPU, best-fit packed onto shared GPUs (gsched's `--gpu-share`), the
    /// shares of one GPU adding up to at most `compute_pct` percent of it (100: `pack`,
    /// shares are reservations; more: `pack:F`, the partition's `GpuOverSubscribe=F`).
    Pack { compute_pct: u32 },
}

impl GpuSharing {
    pub const NAMES: &'static [&'static str] = &["whole", "pack", "pack:F (F from 1 to 4)"];

    pub fn from_name(s: &str) -> Option<GpuSharing> {
        match s {
            "whole" => Some(GpuSharing::Whole),
            "pack" => Some(GpuSharing::Pack { compute_pct: 100 }),
            _ => {
                let f = s.strip_prefix("pack:")?;
                let compute_pct = gsched_proto::config::parse_oversubscribe(f)?;
                Some(GpuSharing::Pack { compute_pct })
            }
        }
    }

    pub fn name(self) -> String {
        match self {
            GpuSharing::Whole => "whole".into(),
            GpuSharing::Pack { compute_pct: 100 } => "pack".into(),
            GpuSharing::Pack { compute_pct } => {
                let f = format!("{}.{:02}", compute_pct / 100, compute_pct % 100);
                format!("pack:{}", f.trim_end_matches('0').trim_end_matches('.'))
            }
        }
    }

    /// What the compute shares of one GPU may add up to, percent.
    pub fn compute_pct(self) -> u32 {
        match self {
            GpuSharing::Whole => 100,
            GpuSharing::Pack { compute_pct } => compute_pct,
        }
    }
}

/// How fast a pod runs on a GPU whose shares add up to more than the GPU (`pack:F`): the
/// trace cannot say how busy its pods keep their GPUs, so this is a model
/// (`--oversubscribed-speed`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SharedSpeed {
    /// Every pod of an oversubscribed GPU runs at this fraction of its speed alone.
    Fixed(f64),
    /// At 100 / (the GPU's shares' sum): every pod busy up to its share all the time, the
    /// worst case.
    Proportional,
}

impl SharedSpeed {
    /// Lucid's measurements of 1,388 pairs of training jobs sharing one GPU (ASPLOS'23,
    /// `shared/traces/gpu/lucid-colocation`): each ran at 0.937 of its speed alone on
    /// average (median 0.955, 10th percentile 0.779).
    pub const MEASURED_PAIRS: SharedSpeed = SharedSpeed::Fixed(0.94);

    pub fn from_name(s: &str) -> Option<SharedSpeed> {
        if s == "proportional" {
            return Some(SharedSpeed::Proportional);
        }
        let f: f64 = s.parse().ok()?;
        (f > 0.0 && f <= 1.0).then_some(SharedSpeed::Fixed(f))
    }

    /// The speed of the pods of a GPU whose shares add up to `sum_pct`.
    pub fn speed(self, sum_pct: u32) -> f64 {
        if sum_pct <= 100 {
            return 1.0;
        }
        match self {
            SharedSpeed::Fixed(f) => f,
            SharedSpeed::Proportional => 100.0 / f64::from(sum_pct),
        }
    }
}

fn gpus(count: u32, model: &str) -> Vec<GpuView> {
    (0..count)
        .map(|i| GpuView {
            device: GpuDevice {
                index: i,
                type_name: model.to_string(),
                file: format!("/dev/nvidia{i}"),
                major: None,
                minor: None,
                uuid: None,
                memory_mb: 0,
                cores: Vec::new(),
                mig: false,
                mps_count: 0,
                shard_count: 0,
            },
            holds: Vec::new(),
        })
        .collect()
}

fn node(name: String, cpus: u32, mem_mb: u64, gpus: Vec<GpuView>) -> NodeView {
    NodeView {
        name: name.into(),
        cpus,
        mem_mb,
        alloc_cpus: 0,
        alloc_mem_mb: 0,
        available: true,
        weight: 1,
        features: Vec::new(),
        gpus,
        penalty: 0,
    }
}

/// The cluster of a GPU replay: `uniform` = (nodes, CPUs, memory MiB, GPUs) per node, else the
/// trace's own GPU nodes with their real CPUs.
pub fn cluster(trace: &Trace, uniform: Option<(u32, u32, u64, u32)>) -> Result<Cluster> {
    let (nodes, describe): (Vec<NodeView>, String) = match uniform {
        Some((n, cpus, mem, g)) => {
            if n == 0 || cpus == 0 || g == 0 {
                bail!("--gpu-sharing needs nodes with CPUs and GPUs (--nodes, --cpus-per-node, --gpus-per-node)");
            }
            (
                (0..n)
                    .map(|i| node(format!("n{i:05}"), cpus, mem, gpus(g, "")))
                    .collect(),
                format!("{n} nodes x {cpus} CPUs x {g} GPUs"),
            )
        }
        None => {
            if trace.nodes.is_empty() {
                bail!(
                    "the trace lists no nodes: give --nodes, --cpus-per-node and --gpus-per-node"
                );
            }
            let nodes: Vec<NodeView> = trace
                .nodes
                .iter()
                .filter(|n| n.gpus > 0)
                .map(|n| {
                    node(
                        n.name.clone(),
                        n.real_cpus.max(1),
                        n.mem_mb,
                        gpus(n.gpus, &n.gpu_model),
                    )
                })
                .collect();
            let d = format!("{} GPU nodes from the trace's node list", nodes.len());
            (nodes, d)
        }
    };
    let total_gpus: u64 = nodes.iter().map(|n| n.gpus.len() as u64).sum();
    let cpus: u64 = nodes.iter().map(|n| u64::from(n.cpus)).sum();
    let view = ClusterView {
        blackouts: Vec::new(),
        partitions: vec![PartitionView {
            name: "sim".into(),
            nodes: (0..nodes.len()).collect(),
            up: true,
            inactive: false,
            max_time: None,
            gpu: gsched_sched::GpuRules::default(),
        }],
        nodes,
        running: Vec::new(),
        limits: Vec::new(),
    };
    Ok(Cluster {
        view,
        partition: 0,
        cpus,
        config: None,
        describe: format!("{describe}, {total_gpus} GPUs"),
    })
}

/// A pod's CPUs: its `cpu_milli` rounded up, at least 1.
pub fn cpus(g: &TraceGpu) -> u32 {
    g.cpu_milli.div_ceil(1000).clamp(1, u32::MAX as u64) as u32
}

/// What a pod needs of GPUs under `mode`.
pub fn need(g: &TraceGpu, mode: GpuSharing) -> Arc<GpuNeed> {
    let amount = if matches!(mode, GpuSharing::Pack { .. }) && g.fractional() {
        GpuAmount::Share(GpuShareRequest {
            percent: Some(g.milli.div_ceil(10).clamp(1, 100)),
            ..Default::default()
        })
    } else {
        GpuAmount::Whole {
            per_node: g.count.max(1),
            per_task: 0,
        }
    };
    Arc::new(GpuNeed {
        type_name: None,
        amount,
        user: 0,
    })
}

/// The GPU figures of one replay (see the module docs).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuMetrics {
    pub policy: String,
    pub sharing: String,
    pub jobs: u64,
    pub gpus: u64,
    pub gpus_busy: f64,
    pub avg_wait_s: f64,
    pub p95_wait_s: i64,
    pub makespan_s: i64,
    pub share_jobs: u64,
    pub share_avg_wait_s: f64,
    pub share_gpu_hours: f64,
    pub share_jobs_per_gpu_hour: f64,
    pub jobs_per_gpu_hour: f64,
    /// How much longer the sharing-eligible pods ran than their work at full speed, on
    /// average (1: not at all; above 1 only with `pack:F`, where co-tenants slow each other).
    pub share_stretch: f64,
}

fn round(x: f64, d: i32) -> f64 {
    let f = 10f64.powi(d);
    (x * f).round() / f
}

/// Total length of the union of `spans`.
fn union_len(mut spans: Vec<(i64, i64)>) -> i64 {
    spans.sort_unstable();
    let mut total = 0;
    let mut cur: Option<(i64, i64)> = None;
    for (s, e) in spans {
        match cur {
            Some((cs, ce)) if s <= ce => cur = Some((cs, ce.max(e))),
            Some((cs, ce)) => {
                total += ce - cs;
                cur = Some((s, e));
            }
            None => cur = Some((s, e)),
        }
    }
    if let Some((cs, ce)) = cur {
        total += ce - cs;
    }
    total
}

/// The figures of `o`, a replay on a cluster of `gpus` GPUs.
pub fn compute(policy: &str, mode: GpuSharing, o: &Outcome, gpus: u64) -> GpuMetrics {
    let mut all: BTreeMap<(u32, u32), Vec<(i64, i64)>> = BTreeMap::new();
    let mut shared: BTreeMap<(u32, u32), Vec<(i64, i64)>> = BTreeMap::new();
    for j in &o.jobs {
        for &(n, g) in &j.gpus {
            all.entry((n, g)).or_default().push((j.start, j.end));
            if j.fractional {
                shared.entry((n, g)).or_default().push((j.start, j.end));
            }
        }
    }
    let busy: i64 = all.into_values().map(union_len).sum();
    let share_busy: i64 = shared.into_values().map(union_len).sum();
    let first = o.jobs.iter().map(|j| j.submit).min().unwrap_or(0);
    let last = o.jobs.iter().map(|j| j.end).max().unwrap_or(0);
    let span = (last - first).max(1);
    let mut waits: Vec<i64> = o.jobs.iter().map(|j| j.wait()).collect();
    waits.sort_unstable();
    let share: Vec<i64> = o
        .jobs
        .iter()
        .filter(|j| j.fractional)
        .map(|j| j.wait())
        .collect();
    let stretches: Vec<f64> = o
        .jobs
        .iter()
        .filter(|j| j.fractional)
        .map(|j| {
            let work = j.limit.map_or(j.trace_run, |l| l.min(j.trace_run)).max(1);
            j.run() as f64 / work as f64
        })
        .collect();
    let avg = |v: &[i64]| {
        if v.is_empty() {
            0.0
        } else {
            v.iter().sum::<i64>() as f64 / v.len() as f64
        }
    };
    let per_hour = |n: usize, secs: i64| {
        if secs == 0 {
            0.0
        } else {
            n as f64 / (secs as f64 / 3600.0)
        }
    };
    GpuMetrics {
        policy: policy.to_string(),
        sharing: mode.name(),
        jobs: o.jobs.len() as u64,
        gpus,
        gpus_busy: round(busy as f64 / (span as f64 * gpus.max(1) as f64), 4),
        avg_wait_s: round(avg(&waits), 2),
        p95_wait_s: percentile(&waits, 95.0),
        makespan_s: span,
        share_jobs: share.len() as u64,
        share_avg_wait_s: round(avg(&share), 2),
        share_gpu_hours: round(share_busy as f64 / 3600.0, 2),
        share_jobs_per_gpu_hour: round(per_hour(share.len(), share_busy), 4),
        jobs_per_gpu_hour: round(per_hour(o.jobs.len(), busy), 4),
        share_stretch: if stretches.is_empty() {
            1.0
        } else {
            round(stretches.iter().sum::<f64>() / stretches.len() as f64, 4)
        },
    }
}

/// The table of GPU figures, aligned, one row per replay.
pub fn table(heading: &[String], rows: &[GpuMetrics]) -> String {
    let head = [
        "policy",
        "sharing",
        "jobs",
        "gpus",
        "gpus_busy",
        "avg_wait_s",
        "p95_wait_s",
        "makespan_s",
        "share_jobs",
        "share_avg_wait_s",
        "share_gpu_hours",
        "share_jobs_per_gpu_hour",
        "jobs_per_gpu_hour",
        "share_stretch",
    ];
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.policy.clone(),
                r.sharing.clone(),
                r.jobs.to_string(),
                r.gpus.to_string(),
                format!("{:.4}", r.gpus_busy),
                format!("{:.2}", r.avg_wait_s),
                r.p95_wait_s.to_string(),
                r.makespan_s.to_string(),
                r.share_jobs.to_string(),
                format!("{:.2}", r.share_avg_wait_s),
                format!("{:.2}", r.share_gpu_hours),
                format!("{:.4}", r.share_jobs_per_gpu_hour),
                format!("{:.4}", r.jobs_per_gpu_hour),
                format!("{:.4}", r.share_stretch),
            ]
        })
        .collect();
    let width: Vec<usize> = (0..head.len())
        .map(|c| {
            cells
                .iter()
                .map(|r| r[c].len())
                .chain([head[c].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for h in heading {
        out.push_str(h);
        out.push('\n');
    }
    let line = |v: Vec<String>| -> String {
        let s: Vec<String> = v
            .iter()
            .enumerate()
            .map(|(c, x)| {
                if c < 2 {
                    format!("{x:<w$}", w = width[c])
                } else {
                    format!("{x:>w$}", w = width[c])
                }
            })
            .collect();
        s.join("  ").trim_end().to_string() + "\n"
    };
    out.push_str(&line(head.iter().map(|s| s.to_string()).collect()));
    for r in cells {
        out.push_str(&line(r));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn union_of_runs() {
        assert_eq!(union_len(vec![(0, 10), (5, 20), (30, 40)]), 30);
        assert_eq!(union_len(vec![]), 0);
    }

    #[test]
    fn pods_become_whole_gpus_or_shares() {
        let part = TraceGpu {
            count: 1,
            milli: 455,
            cpu_milli: 6500,
        };
        assert_eq!(cpus(&part), 7);
        assert_eq!(
            need(&part, GpuSharing::Whole).amount,
            GpuAmount::Whole {
                per_node: 1,
                per_task: 0
            }
        );
        match &need(&part, GpuSharing::Pack { compute_pct: 100 }).amount {
            GpuAmount::Share(s) => assert_eq!(s.percent, Some(46)),
            a => panic!("{a:?}"),
        }
        let two = TraceGpu {
            count: 2,
            milli: 1000,
            cpu_milli: 0,
        };
        assert_eq!(
            need(&two, GpuSharing::Pack { compute_pct: 100 }).amount,
            GpuAmount::Whole {
                per_node: 2,
                per_task: 0
            }
        );
    }
}

#[cfg(test)]
mod replay_tests {
    use super::*;
    use crate::engine::{simulate, RunningPlan, Settings};
    use crate::trace::TraceJob;
    use gsched_sched::{Policy, SchedConfig};

    fn pod(submit: i64, run: i64, count: u32, milli: u32) -> TraceJob {
        TraceJob {
            trace_id: 0,
            submit,
            run,
            limit: Some(run),
            tasks: 1,
            cpus_per_task: 1,
            mem_mb: Some(1024),
            one_node: true,
            user: 0,
            name: None,
            gpu: Some(TraceGpu {
                count,
                milli,
                cpu_milli: 4000,
            }),
        }
    }

    fn replay(mode: GpuSharing, policy: Policy) -> Outcome {
        let t = Trace::default();
        let c = cluster(&t, Some((1, 32, 64 * 1024, 2))).unwrap();
        let jobs = vec![
            pod(0, 100, 1, 300),
            pod(0, 100, 1, 300),
            pod(0, 100, 1, 300),
            pod(0, 100, 1, 1000),
            pod(1, 100, 1, 1000),
        ];
        let s = Settings {
            sched: SchedConfig {
                policy,
                ..SchedConfig::default()
            },
            predictor: None,
            running_plan: RunningPlan::default(),
            kill_at_limit: true,
            gpu: Some(mode),
            shared_speed: SharedSpeed::MEASURED_PAIRS,
            prices: None,
        };
        simulate(&c, &jobs, &s)
    }

    fn replay_jobs(jobs: &[TraceJob], mode: GpuSharing, speed: SharedSpeed) -> Outcome {
        let t = Trace::default();
        let c = cluster(&t, Some((1, 32, 64 * 1024, 1))).unwrap();
        let s = Settings {
            sched: SchedConfig::default(),
            predictor: None,
            running_plan: RunningPlan::default(),
            kill_at_limit: true,
            gpu: Some(mode),
            shared_speed: speed,
            prices: None,
        };
        simulate(&c, jobs, &s)
    }

    /// One GPU, 60% pods: packed as reservations they run one after the other; with the GPU
    /// oversubscribed twice, together, slowed while they share it and re-timed when a
    /// co-tenant comes or goes.
    #[test]
    fn oversubscribed_pods_share_and_slow_down() {
        let ends = |o: &Outcome| o.jobs.iter().map(|j| (j.start, j.end)).collect::<Vec<_>>();
        let three = vec![
            pod(0, 100, 1, 600),
            pod(0, 100, 1, 600),
            pod(0, 100, 1, 600),
        ];
        let half = SharedSpeed::Fixed(0.5);
        let o = replay_jobs(&three, GpuSharing::Pack { compute_pct: 100 }, half);
        assert_eq!(ends(&o), vec![(0, 100), (100, 200), (200, 300)]);
        let twice = GpuSharing::Pack { compute_pct: 200 };
        let o = replay_jobs(&three, twice, half);
        assert_eq!(ends(&o), vec![(0, 200), (0, 200), (0, 200)]);
        let m = compute("easy", twice, &o, 1);
        assert_eq!(
            (m.share_gpu_hours, m.share_stretch, m.sharing.as_str()),
            (0.06, 2.0, "pack:2")
        );
        // 180%: proportional speed 100/180.
        let o = replay_jobs(&three, twice, SharedSpeed::Proportional);
        assert_eq!(ends(&o), vec![(0, 180), (0, 180), (0, 180)]);
        // The first runs alone for 50 s, then both at half speed until it ends at 150; the
        // second, 50 s of work done by then, runs alone again and ends at 200.
        let o = replay_jobs(&[pod(0, 100, 1, 600), pod(50, 100, 1, 600)], twice, half);
        assert_eq!(ends(&o), vec![(0, 150), (50, 200)]);
        assert_eq!(
            SharedSpeed::from_name("0.94"),
            Some(SharedSpeed::Fixed(0.94))
        );
        assert_eq!(SharedSpeed::from_name("1.5"), None);
        assert_eq!(
            GpuSharing::from_name("pack:1.5"),
            Some(GpuSharing::Pack { compute_pct: 150 })
        );
        assert_eq!(GpuSharing::Pack { compute_pct: 150 }.name(), "pack:1.5");
        assert_eq!(GpuSharing::from_name("pack:9"), None);
    }

    /// Three 30% pods and two whole-GPU pods on one node of 2 GPUs: packed, the 30% pods
    /// share one GPU and everything runs at once (one GPU-hour of sharing per 100 s); whole,
    /// they queue for the two GPUs.
    #[test]
    fn packing_runs_shares_together() {
        for policy in [Policy::Fifo, Policy::EASY] {
            let p = replay(GpuSharing::Pack { compute_pct: 100 }, policy);
            let starts: Vec<i64> = p.jobs.iter().map(|j| j.start).collect();
            assert_eq!(starts, vec![0, 0, 0, 0, 100], "{policy:?}");
            let g: Vec<(u32, u32)> = p.jobs[..3].iter().map(|j| j.gpus[0]).collect();
            assert!(g.iter().all(|x| *x == g[0]), "{g:?}");
            let m = compute("easy", GpuSharing::Pack { compute_pct: 100 }, &p, 2);
            assert_eq!((m.share_jobs, m.share_gpu_hours), (3, 0.03));
            let w = replay(GpuSharing::Whole, policy);
            let starts: Vec<i64> = w.jobs.iter().map(|j| j.start).collect();
            assert_eq!(starts, vec![0, 0, 100, 100, 200], "{policy:?}");
            let m = compute("easy", GpuSharing::Whole, &w, 2);
            assert_eq!(m.share_gpu_hours, 0.08);
        }
    }
}
