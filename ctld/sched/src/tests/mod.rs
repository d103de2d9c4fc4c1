use super::*;
use proptest::prelude::*;

mod reference;

fn node(name: &str, cpus: u32, mem: u64) -> NodeView {
    NodeView {
        gpus: Vec::new(),
        name: name.into(),
        cpus,
        mem_mb: mem,
        alloc_cpus: 0,
        alloc_mem_mb: 0,
        available: true,
        weight: 1,
        features: Vec::new(),
        penalty: 0,
    }
}

fn cluster(n: usize, cpus: u32, mem: u64) -> ClusterView {
    ClusterView {
        nodes: (0..n)
            .map(|i| node(&format!("n{}", i + 1), cpus, mem))
            .collect(),
        partitions: vec![PartitionView {
            gpu: crate::gpu::GpuRules::default(),
            name: "debug".into(),
            nodes: (0..n).collect(),
            up: true,
            inactive: false,
            max_time: None,
        }],
        running: Vec::new(),
        limits: Vec::new(),
        blackouts: Vec::new(),
    }
}

fn job(id: JobId, tasks: u32, cpt: u32) -> QueuedJob {
    QueuedJob {
        id,
        priority: 100,
        submit_time: id as i64,
        partitions: vec![0],
        held: None,
        begin_time: None,
        time_limit: Some(10),
        time_min: None,
        req: ResourceRequest {
            nodes: None,
            tasks,
            cpus_per_task: cpt,
            ntasks_per_node: None,
            mem: None,
            ..Default::default()
        },
        limits: Vec::new(),
        het: None,
    }
}

/// A one-line rendering of decisions, for snapshot-style assertions.
fn render(view: &ClusterView, d: &Decisions) -> String {
    let mut s = String::new();
    for st in &d.starts {
        let nodes: Vec<String> = st
            .placement
            .nodes
            .iter()
            .map(|a| format!("{}:{}c/{}m", view.nodes[a.node].name, a.cpus, a.mem_mb))
            .collect();
        s.push_str(&format!("start {} on {}; ", st.job_id, nodes.join(",")));
    }
    for (id, r) in &d.waiting {
        s.push_str(&format!("wait {id} {r}; "));
    }
    s
}

#[test]
fn fifo_fills_nodes_then_blocks() {
    let v = cluster(2, 4, 1000);
    let q = vec![job(1, 3, 1), job(2, 4, 1), job(3, 2, 1), job(4, 1, 1)];
    let d = decide(&v, &q, 0, &SchedConfig::default());
    assert_eq!(
        render(&v, &d),
        "start 1 on n1:3c/0m; start 2 on n2:4c/0m; wait 3 Resources; wait 4 Priority; "
    );
}

#[test]
fn held_and_begin_time_wait_without_blocking() {
    let v = cluster(1, 2, 1000);
    let mut a = job(1, 1, 1);
    a.held = Some(Reason::JobHeldUser);
    let mut b = job(2, 1, 1);
    b.begin_time = Some(100);
    let c = job(3, 2, 1);
    let d = decide(&v, &[a, b, c], 50, &SchedConfig::default());
    assert_eq!(
        render(&v, &d),
        "start 3 on n1:2c/0m; wait 1 JobHeldUser; wait 2 BeginTime; "
    );
}

#[test]
fn exact_node_count_and_memory() {
    let v = cluster(3, 4, 1000);
    let mut j = job(1, 4, 1);
    j.req.nodes = Some(2);
    j.req.mem = Some(MemRequest::PerCpu(100));
    let d = decide(&v, &[j], 0, &SchedConfig::default());
    assert_eq!(render(&v, &d), "start 1 on n1:3c/300m,n2:1c/100m; ");
    let mut k = job(2, 1, 1);
    k.req.mem = Some(MemRequest::PerNode(2000));
    let d = decide(&v, &[k], 0, &SchedConfig::default());
    assert_eq!(render(&v, &d), "wait 2 Resources; ");
}

#[test]
fn partition_limits_give_reasons() {
    let mut v = cluster(1, 4, 1000);
    v.partitions[0].max_time = Some(5);
    let d = decide(&v, &[job(1, 1, 1)], 0, &SchedConfig::default());
    assert_eq!(render(&v, &d), "wait 1 PartitionTimeLimit; ");
    v.partitions[0].up = false;
    let d = decide(&v, &[job(1, 1, 1)], 0, &SchedConfig::default());
    assert_eq!(render(&v, &d), "wait 1 PartitionDown; ");
}

#[test]
fn unavailable_nodes_are_skipped() {
    let mut v = cluster(2, 2, 1000);
    v.nodes[0].available = false;
    let d = decide(&v, &[job(1, 2, 1)], 0, &SchedConfig::default());
    assert_eq!(render(&v, &d), "start 1 on n2:2c/0m; ");
}

#[test]
fn priority_order_wins_over_submit_order() {
    let v = cluster(1, 1, 1000);
    let a = job(1, 1, 1);
    let mut b = job(2, 1, 1);
    b.priority = 200;
    let d = decide(&v, &[a, b], 0, &SchedConfig::default());
    assert_eq!(render(&v, &d), "start 2 on n1:1c/0m; wait 1 Resources; ");
}

#[test]
fn fifo_estimates_can_be_turned_off() {
    let v = cluster(1, 1, 1000);
    let q = vec![job(1, 1, 1), job(2, 1, 1)];
    let d = decide(&v, &q, 0, &SchedConfig::default());
    assert_eq!(d.estimates.len(), 1);
    assert_eq!((d.estimates[0].job_id, d.estimates[0].start), (2, 600));
    let cfg = SchedConfig {
        fifo_estimates: false,
        ..SchedConfig::default()
    };
    assert!(decide(&v, &q, 0, &cfg).estimates.is_empty());
}

#[test]
fn past_due_running_job_frees_one_second_from_now() {
    let mut v = cluster(1, 2, 1000);
    v.nodes[0].alloc_cpus = 2;
    v.running.push(RunningAlloc {
        job_id: 9,
        end: 50,
        nodes: vec![NodeAlloc {
            gpus: Vec::new(),
            node: 0,
            cpus: 2,
            mem_mb: 0,
            tasks: 0,
        }],
    });
    let cfg = SchedConfig {
        policy: Policy::EASY,
        ..SchedConfig::default()
    };
    let d = decide(&v, &[job(1, 2, 1)], 100, &cfg);
    assert!(d.starts.is_empty());
    assert_eq!(
        (d.estimates[0].start, d.estimates[0].kind),
        (101, EstimateKind::Reserved)
    );
}

#[test]
fn horizon_bounds_estimates() {
    let mut v = cluster(1, 2, 1000);
    v.nodes[0].alloc_cpus = 2;
    v.running.push(RunningAlloc {
        job_id: 9,
        end: 10_000,
        nodes: vec![NodeAlloc {
            gpus: Vec::new(),
            node: 0,
            cpus: 2,
            mem_mb: 0,
            tasks: 0,
        }],
    });
    let mut cfg = SchedConfig {
        policy: Policy::Conservative,
        horizon_secs: 9_999,
        ..SchedConfig::default()
    };
    let d = decide(&v, &[job(1, 1, 1)], 0, &cfg);
    assert!(d.estimates.is_empty());
    assert_eq!(d.waiting, vec![(1, Reason::Resources)]);
    cfg.horizon_secs = 10_000;
    let d = decide(&v, &[job(1, 1, 1)], 0, &cfg);
    assert_eq!(d.estimates[0].start, 10_000);
}

#[test]
fn easy_reserves_only_the_first_jobs() {
    // One 1-CPU node busy until 100: three waiting jobs, EASY with 2 reservations.
    let mut v = cluster(1, 1, 1000);
    v.nodes[0].alloc_cpus = 1;
    v.running.push(RunningAlloc {
        job_id: 9,
        end: 100,
        nodes: vec![NodeAlloc {
            gpus: Vec::new(),
            node: 0,
            cpus: 1,
            mem_mb: 0,
            tasks: 0,
        }],
    });
    let q = vec![job(1, 1, 1), job(2, 1, 1), job(3, 1, 1)];
    let cfg = SchedConfig {
        policy: Policy::Easy { reserve: 2 },
        ..SchedConfig::default()
    };
    let d = decide(&v, &q, 0, &cfg);
    let got: Vec<(JobId, i64, EstimateKind)> = d
        .estimates
        .iter()
        .map(|e| (e.job_id, e.start, e.kind))
        .collect();
    use EstimateKind::*;
    assert_eq!(
        got,
        vec![(1, 100, Reserved), (2, 700, Reserved), (3, 1300, Planned)]
    );
}

// ---- Property tests ----------------------------------------------------------------------

const NOW: i64 = 1000;

/// A random small cluster with running jobs, and a random queue.
#[derive(Debug, Clone)]
struct Case {
    view: ClusterView,
    queue: Vec<QueuedJob>,
}

fn arb_case() -> impl Strategy<Value = Case> {
    let nodes = prop::collection::vec(
        (1u32..16, 256u64..8192, prop::bool::weighted(0.15), 0u32..3),
        1..6,
    );
    let running = prop::collection::vec(
        (
            prop::collection::vec((0usize..6, 1u32..8, 0u64..1500), 1..3),
            prop_oneof![
                4 => (1i64..6000).prop_map(|d| NOW + d),
                1 => Just(UNLIMITED_END),
                1 => (0i64..500).prop_map(|d| NOW - d),
            ],
        ),
        0..6,
    );
    let parts = prop::collection::vec(
        (
            prop::collection::vec(0usize..6, 1..6),
            prop::bool::weighted(0.15),
            prop::option::weighted(0.2, 30u32..200),
        ),
        1..3,
    );
    let jobs = prop::collection::vec(
        (
            (
                1u32..7,
                1u32..3,
                prop::option::weighted(0.3, 1u32..4),
                prop::option::of(1u32..4),
            ),
            (
                prop::option::of(0u64..600),
                any::<bool>(),
                prop::option::weighted(0.9, 1u32..120),
            ),
            (
                0u32..3,
                prop::collection::vec(0usize..3, 1..3),
                prop::option::of(0i64..3000),
                0u8..12,
            ),
        ),
        0..16,
    );
    (nodes, running, parts, jobs).prop_map(|(nodes, running, parts, jobs)| {
        let mut v = ClusterView::default();
        for (i, (cpus, mem, down, w)) in nodes.iter().enumerate() {
            let mut n = node(&format!("n{i}"), *cpus, *mem);
            n.available = !(*down && i > 0);
            n.weight = *w;
            v.nodes.push(n);
        }
        for (k, (allocs, end)) in running.iter().enumerate() {
            let mut nodes = Vec::new();
            for &(n, c, m) in allocs {
                let n = n % v.nodes.len();
                if nodes.iter().any(|a: &NodeAlloc| a.node == n) {
                    continue;
                }
                let nv = &mut v.nodes[n];
                let c = c.min(nv.cpus - nv.alloc_cpus);
                let m = m.min(nv.mem_mb - nv.alloc_mem_mb);
                nv.alloc_cpus += c;
                nv.alloc_mem_mb += m;
                nodes.push(NodeAlloc {
                    gpus: Vec::new(),
                    node: n,
                    cpus: c,
                    mem_mb: m,
                    tasks: 0,
                });
            }
            v.running.push(RunningAlloc {
                job_id: 900 + k as u32,
                end: *end,
                nodes,
            });
        }
        for (i, (nodes, down, max)) in parts.iter().enumerate() {
            v.partitions.push(PartitionView {
                gpu: crate::gpu::GpuRules::default(),
                name: format!("p{i}"),
                nodes: nodes.iter().map(|&n| n % (v.nodes.len() + 1)).collect(),
                up: !(*down && i > 0),
                inactive: false,
                max_time: *max,
            });
        }
        let np = v.partitions.len();
        let queue = jobs
            .iter()
            .enumerate()
            .map(
                |(i, ((tasks, cpt, n, tpn), (mem, per_cpu, limit), (prio, parts, begin, misc)))| {
                    let mut j = job(i as u32 + 1, *tasks, *cpt);
                    j.priority = *prio;
                    j.req.nodes = *n;
                    j.req.ntasks_per_node = tpn.filter(|_| misc % 3 == 0);
                    j.req.mem = mem.map(|m| {
                        if *per_cpu {
                            MemRequest::PerCpu(m / 4)
                        } else {
                            MemRequest::PerNode(m)
                        }
                    });
                    j.time_limit = *limit;
                    j.partitions = parts.iter().map(|&p| p % (np + 1)).collect();
                    j.begin_time = begin.map(|b| NOW - 1000 + b);
                    if *misc == 11 {
                        j.held = Some(Reason::JobHeldUser);
                    }
                    if *misc % 4 == 1 {
                        j.time_min = Some(limit.map_or(20, |l| (l / 3).max(1)));
                    }
                    j
                },
            )
            .collect();
        Case { view: v, queue }
    })
}

fn policies() -> [Policy; 5] {
    [
        Policy::Fifo,
        Policy::Easy { reserve: 0 },
        Policy::Easy { reserve: 1 },
        Policy::Easy { reserve: 3 },
        Policy::Conservative,
    ]
}

fn config(policy: Policy) -> SchedConfig {
    SchedConfig {
        policy,
        default_limit_secs: 5000,
        horizon_secs: 20_000,
        plan_depth: 4,
        fifo_estimates: true,
    }
}

/// Seconds a job is planned for in partition `p` (what the planner must use).
fn len_of(j: &QueuedJob, v: &ClusterView, p: usize, cfg: &SchedConfig) -> i64 {
    match j.time_limit.or(v.partitions[p].max_time) {
        Some(m) => m as i64 * 60,
        None => cfg.default_limit_secs,
    }
}

/// Seconds a started job holds its resources: its limit, or the lowered one (`--time-min`),
/// which must lie between its minimum and its limit.
fn start_len(j: &QueuedJob, s: &Start, v: &ClusterView, cfg: &SchedConfig) -> i64 {
    let full = len_of(j, v, s.partition, cfg);
    match s.time_limit {
        None => full,
        Some(m) => {
            let len = m as i64 * 60;
            assert!(cfg.policy != Policy::Fifo, "FIFO lowered a limit");
            assert!(m >= j.time_min.expect("lowered without --time-min").max(1));
            assert!(len < full, "lowered to {len} s, not below {full} s");
            len
        }
    }
}

/// One interval of use on one node.
#[derive(Debug, Clone, Copy)]
struct Use {
    node: usize,
    start: i64,
    end: i64,
    cpus: u32,
    mem: u64,
}

/// Brute-force usage: what the view holds at `t` (running jobs give back at their end, a
/// past end counting as one second from now) plus the intervals covering `t`.
fn used_at(v: &ClusterView, uses: &[Use], node: usize, t: i64) -> (u64, u64) {
    let n = &v.nodes[node];
    let mut c = n.alloc_cpus as u64;
    let mut m = n.alloc_mem_mb;
    for r in &v.running {
        let end = if r.end >= UNLIMITED_END {
            i64::MAX
        } else {
            r.end.max(NOW + 1)
        };
        if end <= t {
            for a in r.nodes.iter().filter(|a| a.node == node) {
                c -= a.cpus as u64;
                m -= a.mem_mb;
            }
        }
    }
    for u in uses
        .iter()
        .filter(|u| u.node == node && u.start <= t && t < u.end)
    {
        c += u.cpus as u64;
        m += u.mem;
    }
    (c, m)
}

/// Every time at which usage may change.
fn breakpoints(v: &ClusterView, uses: &[Use]) -> Vec<i64> {
    let mut ts = vec![NOW];
    for r in &v.running {
        ts.push(r.end.max(NOW + 1));
    }
    for u in uses {
        ts.push(u.start);
        ts.push(u.end);
    }
    ts.retain(|t| (NOW..UNLIMITED_END).contains(t));
    ts.sort_unstable();
    ts.dedup();
    ts
}

fn uses_of(p: &Placement, start: i64, len: i64) -> impl Iterator<Item = Use> + '_ {
    p.nodes.iter().map(move |a| Use {
        node: a.node,
        start,
        end: start + len,
        cpus: a.cpus,
        mem: a.mem_mb,
    })
}

/// Whether some placement of `j` in partition `p` exists over `[t, t + len)` given `uses`,
/// found by the reference `place` on nodes loaded with their peak use over the window.
fn placeable(v: &ClusterView, uses: &[Use], j: &QueuedJob, p: usize, t: i64, len: i64) -> bool {
    let pts = breakpoints(v, uses);
    let nodes: Vec<NodeView> = v
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let mut peak = used_at(v, uses, i, t);
            for &b in pts.iter().filter(|&&b| b > t && b < t + len) {
                let u = used_at(v, uses, i, b);
                peak = (peak.0.max(u.0), peak.1.max(u.1));
            }
            NodeView {
                alloc_cpus: peak.0.min(u32::MAX as u64) as u32,
                alloc_mem_mb: peak.1,
                ..n.clone()
            }
        })
        .collect();
    reference::place(&nodes, &v.partitions[p].nodes, &j.req).is_some()
}

fn bar_free(j: &QueuedJob, v: &ClusterView, p: usize) -> bool {
    backfill::partition_bar(j, v, p) == Some(None)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// (a) Whatever the queue and policy, starts never give a node more CPUs or memory than it
    /// has, and every started job gets what it asked for.
    #[test]
    fn never_over_allocates(case in arb_case()) {
        let (v, q) = (&case.view, &case.queue);
        for policy in policies() {
            let d = decide(v, q, NOW, &config(policy));
            let mut cpus: Vec<u32> = v.nodes.iter().map(|n| n.alloc_cpus).collect();
            let mut mem: Vec<u64> = v.nodes.iter().map(|n| n.alloc_mem_mb).collect();
            for s in &d.starts {
                let j = q.iter().find(|j| j.id == s.job_id).unwrap();
                let tasks: u32 = s.placement.nodes.iter().map(|a| a.tasks).sum();
                prop_assert!(tasks >= j.req.tasks);
                if let Some(n) = j.req.nodes { prop_assert_eq!(s.placement.nodes.len(), n as usize); }
                prop_assert!(j.held.is_none() && j.begin_time.is_none_or(|b| b <= NOW));
                for a in &s.placement.nodes {
                    prop_assert!(v.nodes[a.node].available);
                    prop_assert!(v.partitions[s.partition].nodes.contains(&a.node));
                    cpus[a.node] += a.cpus;
                    mem[a.node] += a.mem_mb;
                }
            }
            for (i, n) in v.nodes.iter().enumerate() {
                prop_assert!(cpus[i] <= n.cpus, "{:?}: node {} cpus", policy, i);
                prop_assert!(mem[i] <= n.mem_mb, "{:?}: node {} mem", policy, i);
            }
            prop_assert_eq!(d.starts.len() + d.waiting.len(), q.len());
        }
    }

    /// (a') With maintenance windows (blackouts), no start and no planned start puts a job
    /// on a node over a window it would still run into, under every policy.
    #[test]
    fn never_runs_into_a_blackout(
        case in arb_case(),
        windows in prop::collection::vec((prop::collection::vec(0usize..6, 1..3), 0i64..4000, 1i64..4000), 1..3),
    ) {
        let mut v = case.view.clone();
        for (nodes, start, dur) in &windows {
            let nodes: Vec<usize> = nodes.iter().map(|n| n % v.nodes.len()).collect();
            v.blackouts.push(Blackout { nodes, start: NOW + start, end: NOW + start + dur });
        }
        let q = &case.queue;
        for policy in policies() {
            let cfg = config(policy);
            let d = decide(&v, q, NOW, &cfg);
            for s in &d.starts {
                let j = q.iter().find(|j| j.id == s.job_id).unwrap();
                let len = s.time_limit.map_or_else(|| len_of(j, &v, s.partition, &cfg), |m| m as i64 * 60);
                for a in &s.placement.nodes {
                    prop_assert!(!v.blacked_out(a.node, NOW, NOW + len),
                        "{:?}: job {} started on node {} into a blackout", policy, j.id, a.node);
                }
            }
            for e in &d.estimates {
                let j = q.iter().find(|j| j.id == e.job_id).unwrap();
                if e.kind == EstimateKind::NotBefore { continue; }
                let len = len_of(j, &v, e.partition, &cfg);
                for a in &e.placement.nodes {
                    prop_assert!(!v.blacked_out(a.node, e.start, e.start + len),
                        "{:?}: job {} planned on node {} into a blackout", policy, j.id, a.node);
                }
            }
        }
    }

    /// (b) The same input gives the same output, whatever the order of the queue and of the
    /// running jobs.
    #[test]
    fn deterministic(case in arb_case(), seed in any::<u64>()) {
        let (v, q) = (&case.view, &case.queue);
        let mut q2 = q.clone();
        let mut v2 = v.clone();
        // A cheap deterministic shuffle.
        let mut x = seed | 1;
        for i in (1..q2.len()).rev() {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            q2.swap(i, (x % (i as u64 + 1)) as usize);
        }
        v2.running.reverse();
        for policy in policies() {
            let c = config(policy);
            let d = decide(v, q, NOW, &c);
            prop_assert_eq!(&d, &decide(v, q, NOW, &c));
            prop_assert_eq!(&d, &decide(&v2, &q2, NOW, &c));
        }
    }

    /// (c) Backfilled jobs never delay a reservation: with every started job running to its
    /// limit, every running job to its expected end, every reservation and every estimate
    /// holding its resources, no node is ever over-allocated at any time; so each reserved
    /// job's resources are free over its whole window. Estimates start within the horizon, not
    /// before the job may begin, and conservative holds every one.
    #[test]
    fn backfill_never_delays_a_reservation(case in arb_case()) {
        let (v, q) = (&case.view, &case.queue);
        for policy in policies() {
            let cfg = config(policy);
            let d = decide(v, q, NOW, &cfg);
            let mut uses: Vec<Use> = Vec::new();
            for s in &d.starts {
                let j = q.iter().find(|j| j.id == s.job_id).unwrap();
                uses.extend(uses_of(&s.placement, NOW, start_len(j, s, v, &cfg)));
            }
            for e in &d.estimates {
                let j = q.iter().find(|j| j.id == e.job_id).unwrap();
                prop_assert!(e.start > NOW || (e.start == NOW && policy == Policy::Fifo));
                prop_assert!(e.start >= j.begin_time.unwrap_or(NOW));
                prop_assert!(e.start <= NOW + cfg.horizon_secs);
                prop_assert!(j.held.is_none() && bar_free(j, v, e.partition));
                match (policy, e.kind) {
                    (Policy::Fifo, EstimateKind::Reserved) => prop_assert!(false, "FIFO reserves"),
                    (Policy::Conservative, k) => prop_assert_eq!(k, EstimateKind::Reserved),
                    _ => {}
                }
                if e.kind != EstimateKind::NotBefore {
                    uses.extend(uses_of(&e.placement, e.start, len_of(j, v, e.partition, &cfg)));
                }
            }
            for t in breakpoints(v, &uses) {
                for (i, n) in v.nodes.iter().enumerate() {
                    let (c, m) = used_at(v, &uses, i, t);
                    prop_assert!(c <= n.cpus as u64, "{:?}: node {} at {}: {} cpus", policy, i, t, c);
                    prop_assert!(m <= n.mem_mb, "{:?}: node {} at {}: {} MB", policy, i, t, m);
                }
            }
            if let Policy::Easy { reserve } = policy {
                let held = d.estimates.iter().filter(|e| e.kind == EstimateKind::Reserved).count();
                prop_assert!(held <= reserve);
            }
            // Bounds come after every planned estimate, and each fits on what is held.
            let kinds: Vec<EstimateKind> = d.estimates.iter().map(|e| e.kind).filter(|&k| k != EstimateKind::Reserved).collect();
            let planned = kinds.iter().filter(|&&k| k == EstimateKind::Planned).count();
            prop_assert!(planned <= cfg.plan_depth);
            prop_assert!(kinds[planned..].iter().all(|&k| k == EstimateKind::NotBefore));
            for e in d.estimates.iter().filter(|e| e.kind == EstimateKind::NotBefore) {
                let j = q.iter().find(|j| j.id == e.job_id).unwrap();
                let mut with = uses.clone();
                with.extend(uses_of(&e.placement, e.start, len_of(j, v, e.partition, &cfg)));
                for t in breakpoints(v, &with) {
                    for a in &e.placement.nodes {
                        let (c, m) = used_at(v, &with, a.node, t);
                        prop_assert!(c <= v.nodes[a.node].cpus as u64 && m <= v.nodes[a.node].mem_mb);
                    }
                }
            }
        }
    }

    /// Reservations are at the earliest possible time: given what was running and what the
    /// jobs before it in priority order started or reserved, no placement of a reserved job
    /// existed at any earlier time; and conservative leaves a job without an estimate only
    /// when no placement exists within the horizon.
    #[test]
    fn reservations_are_earliest(case in arb_case()) {
        let (v, q) = (&case.view, &case.queue);
        for policy in [Policy::Easy { reserve: 2 }, Policy::Conservative] {
            let cfg = config(policy);
            let d = decide(v, q, NOW, &cfg);
            let mut before: Vec<Use> = Vec::new();
            for j in backfill::priority_order(q) {
                if j.held.is_some() {
                    continue;
                }
                let from = j.begin_time.unwrap_or(NOW).max(NOW);
                if let Some(s) = d.starts.iter().find(|s| s.job_id == j.id) {
                    before.extend(uses_of(&s.placement, NOW, start_len(j, s, v, &cfg)));
                    continue;
                }
                let est = d.estimates.iter().find(|e| e.job_id == j.id && e.kind == EstimateKind::Reserved);
                let until = match est {
                    Some(e) => e.start - 1,
                    None if policy == Policy::Conservative => NOW + cfg.horizon_secs,
                    None => continue,
                };
                // In each partition, a job that may spread is planned on one node when one node
                // of the partition can take it within the horizon, else spread.
                let spreadable = j.req.nodes.is_none() && j.req.ntasks_per_node.is_none() && j.req.tasks > 1;
                let mut single = j.clone();
                single.req.nodes = Some(1);
                let mut ts = breakpoints(v, &before);
                ts.push(from);
                ts.retain(|&t| t >= from);
                for &p in j.partitions.iter().filter(|&&p| bar_free(j, v, p)) {
                    let len = len_of(j, v, p, &cfg);
                    let jj = if spreadable
                        && ts.iter().any(|&t| t <= NOW + cfg.horizon_secs && placeable(v, &before, &single, p, t, len))
                    {
                        &single
                    } else {
                        j
                    };
                    for &t in ts.iter().filter(|&&t| t <= until) {
                        prop_assert!(
                            !placeable(v, &before, jj, p, t, len),
                            "{:?}: job {} could start at {} in {}, planned {:?}", policy, j.id, t, p, est.map(|e| e.start)
                        );
                    }
                }
                if let Some(e) = est {
                    before.extend(uses_of(&e.placement, e.start, len_of(j, v, e.partition, &cfg)));
                }
            }
        }
    }

    /// (d) `Policy::Fifo` decides exactly what the scheduler decided before backfill existed.
    #[test]
    fn fifo_is_unchanged(case in arb_case()) {
        let (v, q) = (&case.view, &case.queue);
        let old = reference::decide(v, q, NOW);
        let new = decide(v, q, NOW, &SchedConfig::default());
        prop_assert_eq!(&old.starts, &new.starts);
        prop_assert_eq!(&old.waiting, &new.waiting);
    }

    /// With nothing reserved and nothing waiting for resources, EASY and conservative start
    /// the same jobs as FIFO on an idle cluster of single-task jobs.
    #[test]
    fn placement_matches_fifo_when_everything_fits(
        n in 1usize..5,
        jobs in prop::collection::vec((1u32..4, prop::option::of(0u64..500)), 0..6),
    ) {
        let v = cluster(n, 16, 4096);
        let q: Vec<QueuedJob> = jobs.iter().enumerate().map(|(i, (c, m))| {
            let mut j = job(i as u32 + 1, 1, *c);
            j.req.mem = m.map(MemRequest::PerNode);
            j
        }).collect();
        let fifo = decide(&v, &q, NOW, &SchedConfig::default());
        prop_assume!(fifo.waiting.is_empty());
        for policy in [Policy::EASY, Policy::Conservative] {
            let d = decide(&v, &q, NOW, &config(policy));
            prop_assert_eq!(&d.starts, &fifo.starts);
        }
    }

    /// Counted limits (QOS MaxJobsPerUser, MaxTRESPerUser=cpu): whatever the queue and
    /// policy, one pass never starts more than a limit has left, and a job waiting for a
    /// limit gets no estimate.
    #[test]
    fn counted_limits_are_never_exceeded(case in arb_case(), jobs_left in 0u64..3, cpus_left in 0u64..8) {
        let mut v = case.view.clone();
        v.limits = vec![
            LimitSlot { left: jobs_left, unit: LimitUnit::Jobs, reason: Reason::QOSMaxJobsPerUserLimit },
            LimitSlot { left: cpus_left, unit: LimitUnit::Cpus, reason: Reason::QOSMaxCpuPerUserLimit },
        ];
        let q: Vec<QueuedJob> = case.queue.iter().cloned().map(|mut j| {
            if j.id % 2 == 0 { j.limits.push(0); }
            if j.id % 2 == 1 { j.limits.push(1); }
            // Whole nodes: more CPUs than asked, which the CPU limit must see.
            if j.id % 4 == 1 { j.req.exclusive = true; }
            j
        }).collect();
        for policy in policies() {
            let d = decide(&v, &q, NOW, &config(policy));
            let (mut jobs, mut cpus) = (0u64, 0u64);
            for s in &d.starts {
                let j = q.iter().find(|j| j.id == s.job_id).unwrap();
                if j.limits.contains(&0) { jobs += 1; }
                if j.limits.contains(&1) {
                    cpus += s.placement.nodes.iter().map(|a| u64::from(a.cpus)).sum::<u64>();
                }
            }
            prop_assert!(jobs <= jobs_left, "{:?}: {} jobs of {}", policy, jobs, jobs_left);
            prop_assert!(cpus <= cpus_left, "{:?}: {} cpus of {}", policy, cpus, cpus_left);
            for (id, r) in &d.waiting {
                if matches!(r, Reason::QOSMaxJobsPerUserLimit | Reason::QOSMaxCpuPerUserLimit) {
                    prop_assert!(d.estimates.iter().all(|e| e.job_id != *id));
                }
            }
            prop_assert_eq!(d.starts.len() + d.waiting.len(), q.len());
        }
    }
}

/// `--nodelist`, `--exclude`, `--constraint` and `--exclusive` in placement: required nodes
/// are in the allocation, excluded or featureless nodes never are, and an exclusive job takes
/// whole idle nodes.
#[test]
fn node_filters_and_exclusive_placement() {
    let mut v = cluster(3, 4, 1000);
    v.nodes[2].features = vec!["fast".into()];
    let mut j = job(1, 1, 1);
    j.req.filter = Some(std::sync::Arc::new(NodeFilter::new(
        &v.nodes,
        &[1],
        &[],
        None,
    )));
    let d = decide(&v, &[j.clone()], 0, &SchedConfig::default());
    assert_eq!(d.starts[0].placement.nodes[0].node, 1);
    j.req.filter = Some(std::sync::Arc::new(NodeFilter::new(
        &v.nodes,
        &[],
        &[0, 1],
        None,
    )));
    let d = decide(&v, &[j.clone()], 0, &SchedConfig::default());
    assert_eq!(d.starts[0].placement.nodes[0].node, 2);
    let fast = FeatureExpr::All(vec!["fast".into()]);
    j.req.filter = Some(std::sync::Arc::new(NodeFilter::new(
        &v.nodes,
        &[],
        &[],
        Some(&fast),
    )));
    let d = decide(&v, &[j.clone()], 0, &SchedConfig::default());
    assert_eq!(d.starts[0].placement.nodes[0].node, 2);
    // Required but excluded: no placement at all.
    j.req.filter = Some(std::sync::Arc::new(NodeFilter::new(
        &v.nodes,
        &[0],
        &[0],
        None,
    )));
    assert!(place(&v.nodes, &[0, 1, 2], &j.req).is_none());
    // Exclusive: all 4 CPUs of an idle node, never a busy one.
    v.nodes[0].alloc_cpus = 1;
    let mut e = job(2, 1, 1);
    e.req.exclusive = true;
    let d = decide(&v, &[e], 0, &SchedConfig::default());
    let a = d.starts[0].placement.nodes[0].clone();
    assert_ne!(a.node, 0);
    assert_eq!(a.cpus, 4);
}

/// Groups the queue of `case` into het jobs of the given sizes (the rest stay ordinary);
/// with `drop_one`, the last component of the first het job of two or more is left out of
/// the queue, so that het job is incomplete.
fn with_het_jobs(
    case: &Case,
    sizes: &[usize],
    drop_one: bool,
) -> (Vec<QueuedJob>, Vec<Vec<JobId>>) {
    let mut q = case.queue.clone();
    let mut groups = Vec::new();
    let mut i = 0;
    for &n in sizes {
        if i + n > q.len() {
            break;
        }
        let leader = q[i].id;
        for k in 0..n {
            q[i + k].het = Some(HetMember {
                leader,
                offset: k as u32,
                count: n as u32,
            });
        }
        groups.push(q[i..i + n].iter().map(|j| j.id).collect::<Vec<_>>());
        i += n;
    }
    if drop_one {
        if let Some(g) = groups.iter().find(|g| g.len() >= 2) {
            let gone = *g.last().unwrap();
            q.retain(|j| j.id != gone);
        }
    }
    (q, groups)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Heterogeneous jobs: under every policy all components of a het job start in the same
    /// pass or none does (never one alone, and never an incomplete het job), components
    /// sharing nodes never over-allocate them, the components of a het job are planned to
    /// start at the same time, and the decisions do not depend on the queue's order.
    #[test]
    fn het_components_start_together(
        case in arb_case(),
        sizes in prop::collection::vec(1usize..4, 0..6),
        drop_one in prop::bool::weighted(0.3),
    ) {
        let v = &case.view;
        let (q, groups) = with_het_jobs(&case, &sizes, drop_one);
        let mut reversed = q.clone();
        reversed.reverse();
        for policy in policies() {
            let d = decide(v, &q, NOW, &config(policy));
            // Deterministic whatever the order of the queue.
            prop_assert_eq!(&d, &decide(v, &reversed, NOW, &config(policy)));
            prop_assert_eq!(d.starts.len() + d.waiting.len(), q.len());
            let started = |id: JobId| d.starts.iter().any(|s| s.job_id == id);
            for g in &groups {
                let queued: Vec<JobId> =
                    g.iter().copied().filter(|id| q.iter().any(|j| j.id == *id)).collect();
                let n = queued.iter().filter(|&&id| started(id)).count();
                if queued.len() < g.len() {
                    prop_assert_eq!(n, 0, "{:?}: incomplete het job {:?} started", policy, g);
                } else {
                    prop_assert!(n == 0 || n == g.len(), "{:?}: {} of {:?} started", policy, n, g);
                }
                let starts: Vec<i64> = d
                    .estimates
                    .iter()
                    .filter(|e| g.contains(&e.job_id))
                    .map(|e| e.start)
                    .collect();
                prop_assert!(starts.windows(2).all(|w| w[0] == w[1]), "{:?}: {:?}", policy, starts);
                prop_assert!(starts.is_empty() || starts.len() == g.len());
            }
            let mut cpus: Vec<u32> = v.nodes.iter().map(|n| n.alloc_cpus).collect();
            let mut mem: Vec<u64> = v.nodes.iter().map(|n| n.alloc_mem_mb).collect();
            for s in &d.starts {
                let j = q.iter().find(|j| j.id == s.job_id).unwrap();
                prop_assert!(j.held.is_none() && j.begin_time.is_none_or(|b| b <= NOW));
                for a in &s.placement.nodes {
                    prop_assert!(v.nodes[a.node].available);
                    prop_assert!(v.partitions[s.partition].nodes.contains(&a.node));
                    cpus[a.node] += a.cpus;
                    mem[a.node] += a.mem_mb;
                }
            }
            for (i, n) in v.nodes.iter().enumerate() {
                prop_assert!(cpus[i] <= n.cpus, "{:?}: node {} cpus", policy, i);
                prop_assert!(mem[i] <= n.mem_mb, "{:?}: node {} mem", policy, i);
            }
        }
    }
}

/// `--constraint=[r1|r2]` (matching OR) and `[a*2&b*1]` (node counts) in placement, under
/// every policy and in the planner's searches for later starts.
#[test]
fn matching_or_and_node_counts() {
    // n1 r1; n2 r2; n3 r2,big; n4 r1,big.
    let mut v = cluster(4, 2, 1000);
    for (i, f) in [&["r1"][..], &["r2"], &["r2", "big"], &["r1", "big"]]
        .iter()
        .enumerate()
    {
        v.nodes[i].features = f.iter().map(|s| s.to_string()).collect();
    }
    let has = |feat: &str| -> Vec<bool> {
        v.nodes
            .iter()
            .map(|n| n.features.iter().any(|x| x == feat))
            .collect()
    };
    // Three nodes of one rack: neither rack has three, so no placement; two nodes: rack r1
    // (the first alternative) when both are free, rack r2 when n1 is busy.
    let mut j = job(1, 2, 2);
    j.req.nodes = Some(2);
    j.req.filter = Some(std::sync::Arc::new(NodeFilter {
        allowed: None,
        alternatives: vec![has("r1"), has("r2")],
        ..NodeFilter::default()
    }));
    for policy in policies() {
        let d = decide(&v, &[j.clone()], NOW, &config(policy));
        let nodes: Vec<usize> = d.starts[0].placement.nodes.iter().map(|a| a.node).collect();
        assert_eq!(nodes, vec![0, 3], "{policy:?}");
    }
    let mut three = j.clone();
    three.req.nodes = Some(3);
    three.req.tasks = 3;
    assert!(place(&v.nodes, &[0, 1, 2, 3], &three.req).is_none());
    let mut busy = v.clone();
    busy.nodes[0].alloc_cpus = 2;
    busy.running.push(RunningAlloc {
        job_id: 99,
        end: NOW + 600,
        nodes: vec![NodeAlloc {
            gpus: Vec::new(),
            node: 0,
            cpus: 2,
            mem_mb: 0,
            tasks: 1,
        }],
    });
    for policy in policies() {
        let d = decide(&busy, &[j.clone()], NOW, &config(policy));
        let nodes: Vec<usize> = d.starts[0].placement.nodes.iter().map(|a| a.node).collect();
        assert_eq!(nodes, vec![1, 2], "{policy:?}");
    }
    // r2 taken too: the job waits, and is planned on rack r1 when n1 frees.
    busy.nodes[1].alloc_cpus = 2;
    busy.running.push(RunningAlloc {
        job_id: 98,
        end: NOW + 1200,
        nodes: vec![NodeAlloc {
            gpus: Vec::new(),
            node: 1,
            cpus: 2,
            mem_mb: 0,
            tasks: 1,
        }],
    });
    let d = decide(&busy, &[j.clone()], NOW, &config(Policy::Conservative));
    assert!(d.starts.is_empty());
    let e = &d.estimates[0];
    assert_eq!(e.start, NOW + 600);
    let nodes: Vec<usize> = e.placement.nodes.iter().map(|a| a.node).collect();
    assert_eq!(nodes, vec![0, 3]);

    // Counts: two `big` nodes and one `r1` node, distinct: n3, n4 (big) and n1 (r1).
    let mut c = job(2, 3, 1);
    c.req.filter = Some(std::sync::Arc::new(NodeFilter {
        counts: vec![(has("big"), 2), (has("r1"), 1)],
        ..NodeFilter::default()
    }));
    let d = decide(&v, &[c.clone()], NOW, &SchedConfig::default());
    let mut nodes: Vec<usize> = d.starts[0].placement.nodes.iter().map(|a| a.node).collect();
    nodes.sort_unstable();
    assert_eq!(nodes, vec![0, 2, 3]);
    // More counted nodes than -N allows, or than exist: no placement.
    c.req.nodes = Some(2);
    assert!(place(&v.nodes, &[0, 1, 2, 3], &c.req).is_none());
    c.req.nodes = None;
    c.req.filter = Some(std::sync::Arc::new(NodeFilter {
        counts: vec![(has("big"), 3)],
        ..NodeFilter::default()
    }));
    assert!(place(&v.nodes, &[0, 1, 2, 3], &c.req).is_none());
}

/// GPU scenarios for the property test below: nodes with GPUs (some holding shares or whole
/// GPUs of running jobs), a queue of whole, MPS-share and shard jobs of a few users.
#[derive(Debug, Clone)]
struct GpuCase {
    view: ClusterView,
    queue: Vec<QueuedJob>,
}

fn arb_gpu_case() -> impl Strategy<Value = GpuCase> {
    let gpu = (0u32..3, prop::sample::select(vec![16u64, 40, 80]), 0u64..3);
    let node = prop::collection::vec(gpu, 1..5);
    let hold = (
        0usize..4,
        0usize..5,
        0u32..4,
        0u8..3,
        1u64..60,
        1u32..70,
        1u64..4,
    );
    let jobk = (
        0u8..3,
        0u32..4,
        1u32..4,
        1u64..90,
        1u32..101,
        1u64..5,
        0u8..4,
        1u32..4,
    );
    (
        prop::collection::vec(node, 1..4),
        prop::collection::vec(hold, 0..8),
        prop::collection::vec(jobk, 1..14),
        any::<bool>(),
        prop::sample::select(vec![100u32, 150, 200]),
    )
        .prop_map(|(nodes, holds, jobs, multiuser, compute_pct)| {
            let mut v = cluster(nodes.len(), 16, 64_000);
            let rules = crate::gpu::GpuRules {
                multiuser,
                compute_pct,
            };
            v.partitions[0].gpu = rules;
            for (n, gpus) in v.nodes.iter_mut().zip(&nodes) {
                n.gpus = gpus
                    .iter()
                    .enumerate()
                    .map(|(i, &(group, gb, shards))| GpuView {
                        device: gsched_proto::gpu::GpuDevice {
                            index: i as u32,
                            type_name: if gb == 16 {
                                "v100".into()
                            } else {
                                "a100".into()
                            },
                            file: format!("/dev/nvidia{i}"),
                            major: None,
                            minor: None,
                            uuid: None,
                            memory_mb: gb * 1024,
                            cores: vec![group],
                            mig: false,
                            mps_count: 0,
                            shard_count: shards * 2,
                        },
                        holds: Vec::new(),
                    })
                    .collect();
            }
            // Running holds, placed through the same rules so they are valid to start from.
            for (k, &(node, g, user, kind, gb, pct, sh)) in holds.iter().enumerate() {
                let node = node % v.nodes.len();
                let gpus = &v.nodes[node].gpus;
                let g = g % gpus.len();
                let share = match kind {
                    0 => None,
                    1 => Some(gsched_proto::gpu::GpuShare {
                        mem_mb: gb * 1024,
                        percent: pct,
                        shards: 0,
                        mps: true,
                    }),
                    _ => Some(gsched_proto::gpu::GpuShare {
                        mem_mb: 0,
                        percent: 100,
                        shards: sh,
                        mps: false,
                    }),
                };
                let mut u = crate::gpu::uses_now(gpus);
                let fits = match &share {
                    None => u[g] == Default::default(),
                    Some(s) => {
                        let mut t = u[g].clone();
                        t.add(user, Some(s));
                        u[g] = t;
                        gpu_ok(&gpus[g].device, &u[g], rules)
                    }
                };
                if fits {
                    v.nodes[node].gpus[g].holds.push(GpuHold {
                        job_id: 1000 + k as u32,
                        user,
                        share,
                    });
                    v.nodes[node].alloc_cpus += 1;
                    v.running.push(RunningAlloc {
                        job_id: 1000 + k as u32,
                        end: NOW + 600 * (k as i64 + 1),
                        nodes: vec![NodeAlloc {
                            node,
                            cpus: 1,
                            mem_mb: 0,
                            tasks: 1,
                            gpus: Vec::new(),
                        }],
                    });
                }
            }
            let queue = jobs
                .iter()
                .enumerate()
                .map(|(i, &(kind, count, tasks, gb, pct, sh, ty, user))| {
                    let mut j = job(i as u32 + 1, tasks, 1);
                    let amount = match kind {
                        0 => GpuAmount::Whole {
                            per_node: count.max(1),
                            per_task: 0,
                        },
                        1 => GpuAmount::Share(gsched_proto::gpu::GpuShareRequest {
                            mem_mb: (gb % 3 != 0).then_some(gb * 1024),
                            percent: (gb % 2 == 0).then_some(pct),
                            ..Default::default()
                        }),
                        _ => GpuAmount::Share(gsched_proto::gpu::GpuShareRequest {
                            shards: Some(sh),
                            ..Default::default()
                        }),
                    };
                    let amount = if kind == 0 && count == 0 {
                        GpuAmount::Whole {
                            per_node: 0,
                            per_task: 1,
                        }
                    } else {
                        amount
                    };
                    j.req.gpu = Some(Arc::new(GpuNeed {
                        type_name: match ty {
                            0 => Some("v100".into()),
                            1 => Some("a100".into()),
                            _ => None,
                        },
                        amount,
                        user,
                    }));
                    j
                })
                .collect();
            GpuCase { view: v, queue }
        })
}

/// Whether what `u` holds on GPU `d` is allowed: whole alone; MPS shares within the
/// partition's compute percentage (100 unless oversubscribed) and the memory, of one user
/// unless multi-user; shards within the count; never MPS and shards.
fn gpu_ok(
    d: &gsched_proto::gpu::GpuDevice,
    u: &crate::gpu::GpuUse,
    rules: crate::gpu::GpuRules,
) -> bool {
    let mixed = u.whole && u.holds > 1 || u.mps && u.shard;
    !mixed
        && u.percent <= rules.compute_pct
        && (d.memory_mb == 0 || u.mem_mb <= d.memory_mb)
        && u.shards <= d.shard_count
        && (rules.multiuser || u.users.len() <= 1)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// GPUs: whatever the queue and policy, no GPU is over-allocated (compute, memory,
    /// shards), whole and shared are never mixed on one GPU, MPS is one user's unless the
    /// partition is multi-user, and every start got the GPUs it asked for, of its type.
    #[test]
    fn gpus_never_over_allocated_or_mixed(case in arb_gpu_case()) {
        let (v, q) = (&case.view, &case.queue);
        let rules = v.partitions[0].gpu;
        for policy in policies() {
            let d = decide(v, q, NOW, &config(policy));
            let mut uses: Vec<Vec<crate::gpu::GpuUse>> =
                v.nodes.iter().map(|n| crate::gpu::uses_now(&n.gpus)).collect();
            for s in &d.starts {
                let j = q.iter().find(|j| j.id == s.job_id).unwrap();
                let need = j.req.gpu.as_ref().unwrap();
                for a in &s.placement.nodes {
                    let gpus = &v.nodes[a.node].gpus;
                    match &need.amount {
                        GpuAmount::Whole { .. } => {
                            prop_assert_eq!(a.gpus.len() as u32, need.whole_count(a.tasks));
                            prop_assert!(a.gpus.iter().all(|g| g.share.is_none()));
                        }
                        GpuAmount::Share(_) => {
                            prop_assert_eq!(a.gpus.len(), 1);
                            prop_assert!(a.gpus[0].share.is_some());
                        }
                    }
                    for g in &a.gpus {
                        let k = gpus.iter().position(|x| x.device.index == g.index).unwrap();
                        if let Some(t) = &need.type_name {
                            prop_assert!(gpus[k].device.type_name.eq_ignore_ascii_case(t));
                        }
                        uses[a.node][k].add(need.user, g.share.as_ref());
                    }
                }
            }
            for (i, n) in v.nodes.iter().enumerate() {
                for (k, g) in n.gpus.iter().enumerate() {
                    prop_assert!(gpu_ok(&g.device, &uses[i][k], rules),
                        "{:?}: node {} gpu {}: {:?}", policy, i, k, uses[i][k]);
                }
            }
        }
    }
}
