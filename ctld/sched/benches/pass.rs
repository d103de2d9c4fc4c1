//! One full scheduling pass: 100,000 pending jobs on 10,000 nodes, half the cluster busy with
//! running jobs that end at various times over the next two days, for each policy.
//!
//! ```text
//! CARGO_TARGET_DIR=/work/target cargo bench -p gsched-sched --bench pass -- --quick
//! ```
//!
//! The cluster: 8,000 nodes of 32 CPUs / 192 GB and 2,000 nodes of 64 CPUs / 512 GB (weight
//! 2, so the small ones are preferred), partitions `batch` (all nodes, MaxTime 2 days) and
//! `short` (the first 2,000 nodes, MaxTime 4 hours). The queue, from a fixed seed: 60 %
//! single-task jobs of 1-16 CPUs, 20 % multi-task jobs of 2-64 tasks placed anywhere, 17 %
//! jobs of 1-8 whole nodes, 3 % of 16-64 whole nodes; memory per CPU or per node on most;
//! time limits users pick (15 minutes to a day); 5 % also submitted to `short`; 1 % held, 1 %
//! with a begin time. It asks for about 0.8 of the cluster's CPU time over the 7-day
//! horizon, so most jobs get a planned start within it.
//!
//! Policies measured: `fifo`, `easy` (one reservation) and `conservative` with the default
//! [`SchedConfig`] (so EASY and FIFO plan the first 1,000 waiting jobs and bound the others),
//! and `easy_plan_all`, EASY planning every waiting job's estimate.
//!
//! `BENCH_UNIQUE_LIMITS=1` gives every job a time limit of its own (any minute from 10 to
//! 1,440): the worst case for the planner's grouping of jobs by shape. `BENCH_STATS=1` prints
//! what each policy decides (starts, estimates, reservations) before measuring.

use std::hint::black_box;
use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion};
use gsched_proto::job::MemRequest;
use gsched_sched::{
    decide, ClusterView, EstimateKind, NodeAlloc, NodeView, PartitionView, Policy, QueuedJob,
    ResourceRequest, RunningAlloc, SchedConfig,
};

const NOW: i64 = 1_700_000_000;

/// xorshift64*: a fixed, dependency-free stream of numbers.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize]
    }
}

fn cluster(rng: &mut Rng) -> ClusterView {
    let mut v = ClusterView::default();
    for i in 0..10_000 {
        let big = i >= 8_000;
        v.nodes.push(NodeView {
            gpus: Vec::new(),
            name: format!("n{i:05}").into(),
            cpus: if big { 64 } else { 32 },
            mem_mb: if big { 512_000 } else { 192_000 },
            alloc_cpus: 0,
            alloc_mem_mb: 0,
            available: true,
            weight: if big { 2 } else { 1 },
            features: Vec::new(),
            penalty: 0,
        });
    }
    v.partitions.push(PartitionView {
        gpu: gsched_sched::GpuRules::default(),
        name: "batch".into(),
        nodes: (0..10_000).collect(),
        up: true,
        inactive: false,
        max_time: Some(2 * 24 * 60),
    });
    v.partitions.push(PartitionView {
        gpu: gsched_sched::GpuRules::default(),
        name: "short".into(),
        nodes: (0..2_000).collect(),
        up: true,
        inactive: false,
        max_time: Some(4 * 60),
    });
    // Half the cluster busy: whole-node jobs on some nodes, shared nodes on others, ending
    // at any time over the next two days.
    let total: u64 = v.nodes.iter().map(|n| n.cpus as u64).sum();
    let mut busy = 0u64;
    let mut id = 1_000_000u32;
    while busy < total / 2 {
        let end = NOW + 60 + rng.below(2 * 24 * 3600) as i64;
        let mut nodes = Vec::new();
        if rng.below(2) == 0 {
            // 1-8 whole nodes.
            let n = 1 + rng.below(8) as usize;
            let first = rng.below(10_000) as usize;
            for k in 0..n {
                let i = (first + k * 997) % 10_000;
                let nv = &mut v.nodes[i];
                if nv.alloc_cpus == 0 {
                    let a = NodeAlloc {
                        gpus: Vec::new(),
                        node: i,
                        cpus: nv.cpus,
                        mem_mb: nv.mem_mb / 2,
                        tasks: 0,
                    };
                    nv.alloc_cpus += a.cpus;
                    nv.alloc_mem_mb += a.mem_mb;
                    nodes.push(a);
                }
            }
        } else {
            // A slice of one node.
            let i = rng.below(10_000) as usize;
            let nv = &mut v.nodes[i];
            let c = (1 + rng.below(16) as u32).min(nv.cpus - nv.alloc_cpus);
            if c > 0 {
                let a = NodeAlloc {
                    gpus: Vec::new(),
                    node: i,
                    cpus: c,
                    mem_mb: c as u64 * 4000,
                    tasks: 0,
                };
                nv.alloc_cpus += a.cpus;
                nv.alloc_mem_mb += a.mem_mb;
                nodes.push(a);
            }
        }
        busy += nodes.iter().map(|a| a.cpus as u64).sum::<u64>();
        if !nodes.is_empty() {
            v.running.push(RunningAlloc {
                job_id: id,
                end,
                nodes,
            });
            id += 1;
        }
    }
    v
}

fn queue(rng: &mut Rng, unique_limits: bool) -> Vec<QueuedJob> {
    const LIMITS: [u32; 8] = [15, 30, 60, 120, 240, 480, 720, 1440];
    (1..=100_000u32)
        .map(|id| {
            let kind = rng.below(100);
            let mut time = rng.pick(&LIMITS);
            let mem_pc = rng.pick(&[None, Some(2000u64), Some(4000)]);
            let req = if kind < 60 {
                let c = rng.pick(&[1u32, 1, 2, 4, 8, 16]);
                ResourceRequest {
                    nodes: None,
                    tasks: 1,
                    cpus_per_task: c,
                    ntasks_per_node: None,
                    mem: mem_pc.map(MemRequest::PerCpu),
                    ..Default::default()
                }
            } else if kind < 80 {
                ResourceRequest {
                    nodes: None,
                    tasks: rng.pick(&[2u32, 4, 8, 16, 32, 64]),
                    cpus_per_task: 1,
                    ntasks_per_node: None,
                    mem: mem_pc.map(MemRequest::PerCpu),
                    ..Default::default()
                }
            } else {
                let n = if kind < 97 {
                    rng.pick(&[1u32, 2, 4, 8])
                } else {
                    time = rng.pick(&[240, 480, 720]);
                    rng.pick(&[16u32, 32, 64])
                };
                ResourceRequest {
                    nodes: Some(n),
                    tasks: n * 32,
                    cpus_per_task: 1,
                    ntasks_per_node: Some(32),
                    mem: rng.pick(&[None, Some(MemRequest::PerNode(64_000))]),
                    ..Default::default()
                }
            };
            if unique_limits {
                time = 10 + rng.below(1431) as u32;
            }
            let short = time <= 240 && rng.below(20) == 0;
            let special = rng.below(100);
            QueuedJob {
                id,
                priority: 10_000 + rng.below(50_000) as u32,
                submit_time: NOW - 86_400 + id as i64,
                partitions: if short { vec![1, 0] } else { vec![0] },
                held: (special == 0).then_some(gsched_proto::job::Reason::JobHeldUser),
                begin_time: (special == 1).then(|| NOW + rng.below(86_400) as i64),
                time_limit: Some(time),
                time_min: None,
                req,
                limits: Vec::new(),
                het: None,
            }
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let unique = std::env::var_os("BENCH_UNIQUE_LIMITS").is_some();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let view = cluster(&mut rng);
    let q = queue(&mut rng, unique);
    let mut g = c.benchmark_group(if unique { "pass_unique_limits" } else { "pass" });
    g.sample_size(10);
    for (name, policy, plan_depth) in [
        ("fifo", Policy::Fifo, None),
        ("easy", Policy::EASY, None),
        ("easy_plan_all", Policy::EASY, Some(usize::MAX)),
        ("conservative", Policy::Conservative, None),
    ] {
        let mut cfg = SchedConfig {
            policy,
            ..SchedConfig::default()
        };
        if let Some(d) = plan_depth {
            cfg.plan_depth = d;
        }
        // What one pass decides, printed once (with BENCH_STATS=1) so the numbers can be
        // judged.
        if std::env::var_os("BENCH_STATS").is_none() {
            g.bench_function(name, |b| {
                b.iter(|| decide(black_box(&view), black_box(&q), NOW, black_box(&cfg)))
            });
            continue;
        }
        let t = Instant::now();
        let d = decide(&view, &q, NOW, &cfg);
        let count = |k: EstimateKind| d.estimates.iter().filter(|e| e.kind == k).count();
        eprintln!(
            "{name}: {} starts, {} waiting, {} estimates ({} reserved, {} planned, {} bounds); \
             first pass {:.0} ms",
            d.starts.len(),
            d.waiting.len(),
            d.estimates.len(),
            count(EstimateKind::Reserved),
            count(EstimateKind::Planned),
            count(EstimateKind::NotBefore),
            t.elapsed().as_secs_f64() * 1e3
        );
        g.bench_function(name, |b| {
            b.iter(|| decide(black_box(&view), black_box(&q), NOW, black_box(&cfg)))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
