use super::*;
use proptest::prelude::*;

fn node(name: &str, cpus: u32, mem: u64) -> NodeView {
    NodeView {
        name: name.into(),
        cpus,
        mem_mb: mem,
        alloc_cpus: 0,
        alloc_mem_mb: 0,
        available: true,
        weight: 1,
    }
}

fn cluster(n: usize, cpus: u32, mem: u64) -> ClusterView {
    ClusterView {
        nodes: (0..n)
            .map(|i| node(&format!("n{}", i + 1), cpus, mem))
            .collect(),
        partitions: vec![PartitionView {
            name: "debug".into(),
            nodes: (0..n).collect(),
            up: true,
            max_time: None,
        }],
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
        req: ResourceRequest {
            nodes: None,
            tasks,
            cpus_per_task: cpt,
            ntasks_per_node: None,
            mem: None,
        },
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

proptest! {
    /// Whatever the queue, decisions never give a node more CPUs or memory than it has, and
    /// the same input always gives the same output.
    #[test]
    fn never_over_allocates(
        nodes in prop::collection::vec((1u32..16, 1u64..4096, 0u32..8, any::<bool>()), 1..6),
        jobs in prop::collection::vec((1u32..8, 1u32..4, prop::option::of(1u32..4), prop::option::of(0u64..2048), any::<bool>()), 0..30),
    ) {
        let mut v = ClusterView::default();
        for (i, (cpus, mem, used, avail)) in nodes.iter().enumerate() {
            let mut n = node(&format!("n{i}"), *cpus, *mem);
            n.alloc_cpus = (*used).min(*cpus);
            n.available = *avail;
            v.nodes.push(n);
        }
        v.partitions.push(PartitionView { name: "p".into(), nodes: (0..v.nodes.len()).collect(), up: true, max_time: None });
        let q: Vec<QueuedJob> = jobs.iter().enumerate().map(|(i, (tasks, cpt, n, mem, per_cpu))| {
            let mut j = job(i as u32 + 1, *tasks, *cpt);
            j.req.nodes = *n;
            j.req.mem = mem.map(|m| if *per_cpu { MemRequest::PerCpu(m) } else { MemRequest::PerNode(m) });
            j
        }).collect();
        let d = decide(&v, &q, 0, &SchedConfig::default());
        prop_assert_eq!(&d, &decide(&v, &q, 0, &SchedConfig::default()));
        let mut cpus: Vec<u32> = v.nodes.iter().map(|n| n.alloc_cpus).collect();
        let mut mem: Vec<u64> = v.nodes.iter().map(|n| n.alloc_mem_mb).collect();
        for s in &d.starts {
            let j = q.iter().find(|j| j.id == s.job_id).unwrap();
            let tasks: u32 = s.placement.nodes.iter().map(|a| a.tasks).sum();
            prop_assert!(tasks >= j.req.tasks);
            if let Some(n) = j.req.nodes { prop_assert_eq!(s.placement.nodes.len(), n as usize); }
            for a in &s.placement.nodes {
                prop_assert!(v.nodes[a.node].available);
                cpus[a.node] += a.cpus;
                mem[a.node] += a.mem_mb;
            }
        }
        for (i, n) in v.nodes.iter().enumerate() {
            prop_assert!(cpus[i] <= n.cpus.max(n.alloc_cpus));
            prop_assert!(mem[i] <= n.mem_mb.max(n.alloc_mem_mb));
        }
        prop_assert_eq!(d.starts.len() + d.waiting.len(), q.len());
    }
}
