//! Golden scenarios: each file in `tests/golden/` describes a small cluster, its running jobs
//! and a queue, then (after a line `== decisions`) what `decide` must answer, rendered one line
//! per job. Run with `UPDATE_GOLDEN=1` to rewrite the expected part after a deliberate change,
//! then read the diff.
//!
//! ```text
//! policy easy 1            # fifo | easy [reserve] | conservative
//! now 1000                 # epoch seconds (default 0); times below may be +N (from now)
//! horizon 604800           # optional, seconds
//! default_limit 86400      # optional, seconds, for jobs without a time limit
//! plan_depth 2             # optional: planned estimates, then "not before" bounds
//! node n1 cpus=4 mem=8000 [weight=1] [down] [penalty=10] [switch=0]  # load score, leaf switch
//! maint n1,n2 start=+600 end=+4200                   # a maintenance window (Blackout)
//! partition batch nodes=n1,n2 [maxtime=60] [down]   # default: one partition "all"
//! running 100 end=+3600 n1:4c n2:2c/1000m           # end=unlimited for no limit
//! job 1 n=16 t=120 [N=4] [c=1] [tpn=4] [mem=1000 | mempercpu=100 | mem=0]
//!       [prio=100] [submit=1] [part=batch,debug] [begin=+60] [held=user|admin] [t=unlimited]
//!       [tmin=30]              # --time-min, minutes
//!       [lim=u1,u2]            # counted limits the job is subject to
//! limit u1 jobs=2 reason=QOSMaxJobsPerUserLimit      # or cpus=N; before the jobs naming it
//!       [het=10+1/3]           # component 1 of the 3 of het job 10
//!       [C=[r1|r2]]            # --constraint (a&b, a|b, (a|b)&c, [a|b], [a*2&b*1])
//!       [topo] [sw=1]          # topology/tree placement (the nodes' switch=), --switches
//! node g1 cpus=8 gpus=a100:80*2,a100:80@1,v100:16 [shards=4]  # TYPE:GB[@core group][*count]
//! partition p nodes=g1 [multiuser]                    # GpuSharing=multiuser
//! running 100 end=+60 user=7 g1:1c g1.g0 g1.g1=40960/50 g1.g2=s2  # whole, MPS mem/%, shards
//! job 5 t=10 [user=7] [gpus=2] [gpt=1] [gtype=a100] [gmem=40960] [gpct=50] [gmps=50] [gshards=1]
//! == decisions
//! start 2 in all on n3:4c            # "limit 45" added when --time-min lowered it
//! wait 1 Resources, reserved at +3600 on n1:4c,n2:4c,n3:4c,n4:4c
//! wait 3 Priority, expected at +10800 on n4:4c
//! ```

use std::fmt::Write as _;
use std::path::Path;

use gsched_proto::gpu::{GpuAlloc, GpuDevice, GpuShare, GpuShareRequest};
use gsched_proto::job::{MemRequest, Reason};
use gsched_sched::{
    decide, ClusterView, Decisions, EstimateKind, GpuAmount, GpuHold, GpuNeed, GpuView, HetMember,
    LimitSlot, LimitUnit, NodeAlloc, NodeView, PartitionView, Policy, QueuedJob, ResourceRequest,
    RunningAlloc, SchedConfig, UNLIMITED_END,
};

struct Scenario {
    switch_of: Vec<Option<u32>>,
    limit_names: Vec<String>,
    view: ClusterView,
    queue: Vec<QueuedJob>,
    now: i64,
    config: SchedConfig,
}

fn time(v: &str, now: i64) -> i64 {
    match v.strip_prefix('+') {
        Some(rel) => now + rel.parse::<i64>().expect("relative time"),
        None => v.parse().expect("time"),
    }
}

fn parse(text: &str) -> Scenario {
    let mut s = Scenario {
        switch_of: Vec::new(),
        limit_names: Vec::new(),
        view: ClusterView::default(),
        queue: Vec::new(),
        now: 0,
        config: SchedConfig::default(),
    };
    let mut parts_declared = false;
    let node_index = |view: &ClusterView, name: &str| -> usize {
        view.nodes
            .iter()
            .position(|n| *n.name == *name)
            .unwrap_or_else(|| panic!("unknown node {name}"))
    };
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let mut words = line.split_whitespace();
        let kind = words.next().unwrap();
        let rest: Vec<&str> = words.collect();
        let kv = |k: &str| {
            rest.iter()
                .find_map(|w| w.strip_prefix(k).and_then(|v| v.strip_prefix('=')))
        };
        let flag = |k: &str| rest.contains(&k);
        match kind {
            "policy" => {
                s.config.policy = match rest[0] {
                    "fifo" => Policy::Fifo,
                    "easy" => Policy::Easy {
                        reserve: rest.get(1).map_or(1, |r| r.parse().unwrap()),
                    },
                    "conservative" => Policy::Conservative,
                    p => panic!("unknown policy {p}"),
                }
            }
            "now" => s.now = rest[0].parse().unwrap(),
            "horizon" => s.config.horizon_secs = rest[0].parse().unwrap(),
            "default_limit" => s.config.default_limit_secs = rest[0].parse().unwrap(),
            "plan_depth" => s.config.plan_depth = rest[0].parse().unwrap(),
            "node" => s.view.nodes.push({
                s.switch_of.push(kv("switch").map(|w| w.parse().unwrap()));
                NodeView {
                    gpus: kv("gpus").map_or(Vec::new(), |g| {
                        gpu_views(g, kv("shards").map_or(0, |n| n.parse().unwrap()))
                    }),
                    name: rest[0].into(),
                    cpus: kv("cpus").unwrap().parse().unwrap(),
                    mem_mb: kv("mem").map_or(0, |m| m.parse().unwrap()),
                    alloc_cpus: 0,
                    alloc_mem_mb: 0,
                    available: !flag("down"),
                    weight: kv("weight").map_or(1, |w| w.parse().unwrap()),
                    features: kv("features")
                        .map_or(Vec::new(), |f| f.split(',').map(String::from).collect()),
                    penalty: kv("penalty").map_or(0, |p| p.parse().unwrap()),
                }
            }),
            "maint" => {
                let nodes = rest[0].split(',').map(|n| node_index(&s.view, n)).collect();
                s.view.blackouts.push(gsched_sched::Blackout {
                    nodes,
                    start: time(kv("start").unwrap(), s.now),
                    end: time(kv("end").unwrap(), s.now),
                });
            }
            "partition" => {
                parts_declared = true;
                let nodes = kv("nodes")
                    .unwrap()
                    .split(',')
                    .map(|n| node_index(&s.view, n))
                    .collect();
                s.view.partitions.push(PartitionView {
                    gpu: gsched_sched::GpuRules {
                        multiuser: flag("multiuser"),
                        compute_pct: 100,
                    },
                    name: rest[0].into(),
                    nodes,
                    up: !flag("down"),
                    inactive: false,
                    max_time: kv("maxtime").map(|m| m.parse().unwrap()),
                });
            }
            "limit" => {
                let (left, unit) = match (kv("jobs"), kv("cpus")) {
                    (Some(n), _) => (n.parse().unwrap(), LimitUnit::Jobs),
                    (_, Some(n)) => (n.parse().unwrap(), LimitUnit::Cpus),
                    _ => panic!("limit needs jobs= or cpus="),
                };
                let reason = match kv("reason").unwrap() {
                    "QOSMaxJobsPerUserLimit" => Reason::QOSMaxJobsPerUserLimit,
                    "AssocMaxJobsLimit" => Reason::AssocMaxJobsLimit,
                    "QOSMaxCpuPerUserLimit" => Reason::QOSMaxCpuPerUserLimit,
                    r => panic!("unknown limit reason {r}"),
                };
                s.limit_names.push(rest[0].into());
                s.view.limits.push(LimitSlot { left, unit, reason });
            }
            "running" => {
                let end = match kv("end").unwrap() {
                    "unlimited" => UNLIMITED_END,
                    e => time(e, s.now),
                };
                let mut nodes = Vec::new();
                for w in rest.iter().filter(|w| w.contains(':')) {
                    let (name, res) = w.split_once(':').unwrap();
                    let (c, m) = res.split_once('/').unwrap_or((res, "0m"));
                    let a = NodeAlloc {
                        gpus: Vec::new(),
                        node: node_index(&s.view, name),
                        cpus: c.trim_end_matches('c').parse().unwrap(),
                        mem_mb: m.trim_end_matches('m').parse().unwrap(),
                        tasks: 0,
                    };
                    s.view.nodes[a.node].alloc_cpus += a.cpus;
                    s.view.nodes[a.node].alloc_mem_mb += a.mem_mb;
                    nodes.push(a);
                }
                let job_id: u32 = rest[0].parse().unwrap();
                let user: u32 = kv("user").map_or(0, |u| u.parse().unwrap());
                for w in rest.iter().filter(|w| w.contains(".g")) {
                    let (name, g) = w.split_once(".g").unwrap();
                    let (ix, share) = match g.split_once('=') {
                        None => (g, None),
                        Some((ix, sh)) => (ix, Some(share(sh))),
                    };
                    let node = node_index(&s.view, name);
                    let ix: u32 = ix.parse().unwrap();
                    let v = &mut s.view.nodes[node].gpus;
                    let g = v
                        .iter_mut()
                        .find(|g| g.device.index == ix)
                        .expect("gpu index");
                    g.holds.push(GpuHold {
                        job_id,
                        user,
                        share: share.clone(),
                    });
                    if let Some(a) = nodes.iter_mut().find(|a: &&mut NodeAlloc| a.node == node) {
                        a.gpus.push(GpuAlloc { index: ix, share });
                    }
                }
                s.view.running.push(RunningAlloc { job_id, end, nodes });
            }
            "job" => {
                let id: u32 = rest[0].parse().unwrap();
                let mem = match (kv("mem"), kv("mempercpu")) {
                    (Some(m), _) => Some(MemRequest::PerNode(m.parse().unwrap())),
                    (_, Some(m)) => Some(MemRequest::PerCpu(m.parse().unwrap())),
                    _ => None,
                };
                s.queue.push(QueuedJob {
                    id,
                    priority: kv("prio").map_or(100, |p| p.parse().unwrap()),
                    submit_time: kv("submit").map_or(id as i64, |t| time(t, s.now)),
                    partitions: kv("part").map_or(vec![0], |p| {
                        p.split(',')
                            .map(|n| {
                                s.view
                                    .partitions
                                    .iter()
                                    .position(|x| x.name == n)
                                    .unwrap_or_else(|| panic!("unknown partition {n}"))
                            })
                            .collect()
                    }),
                    held: kv("held").map(|h| match h {
                        "user" => Reason::JobHeldUser,
                        _ => Reason::JobHeldAdmin,
                    }),
                    begin_time: kv("begin").map(|t| time(t, s.now)),
                    time_limit: match kv("t").unwrap() {
                        "unlimited" => None,
                        t => Some(t.parse().unwrap()),
                    },
                    time_min: kv("tmin").map(|t| t.parse().unwrap()),
                    req: ResourceRequest {
                        nodes: kv("N").map(|n| n.parse().unwrap()),
                        tasks: kv("n").map_or(1, |n| n.parse().unwrap()),
                        cpus_per_task: kv("c").map_or(1, |c| c.parse().unwrap()),
                        ntasks_per_node: kv("tpn").map(|n| n.parse().unwrap()),
                        mem,
                        filter: kv("C").map(|c| {
                            let spec = gsched_proto::constraint::parse(c).expect("constraint");
                            let nodes = &s.view.nodes;
                            std::sync::Arc::new(gsched_sched::NodeFilter::from_constraint(
                                nodes.len(),
                                |i| &nodes[i].features,
                                &[],
                                &[],
                                Some(&spec),
                            ))
                        }),
                        gpu: job_gpu(&kv),
                        ..Default::default()
                    },
                    limits: kv("lim").map_or(Vec::new(), |l| {
                        l.split(',')
                            .map(|n| {
                                s.limit_names
                                    .iter()
                                    .position(|x| x == n)
                                    .unwrap_or_else(|| panic!("unknown limit {n}"))
                            })
                            .collect()
                    }),
                    het: None,
                });
                if flag("topo") || kv("sw").is_some() {
                    let req = &mut s.queue.last_mut().unwrap().req;
                    let mut f = req.filter.as_deref().cloned().unwrap_or_default();
                    f.topology = Some(std::sync::Arc::new(gsched_sched::topology::SwitchLimit {
                        leaf: s.switch_of.clone(),
                        max_switches: kv("sw").map(|w| w.parse().unwrap()),
                    }));
                    req.filter = Some(std::sync::Arc::new(f));
                }
                s.queue.last_mut().unwrap().het = kv("het").map(|h| {
                    let (leader, rest) = h.split_once('+').expect("het=N+K/COUNT");
                    let (offset, count) = rest.split_once('/').expect("het=N+K/COUNT");
                    HetMember {
                        leader: leader.parse().unwrap(),
                        offset: offset.parse().unwrap(),
                        count: count.parse().unwrap(),
                    }
                });
            }
            k => panic!("unknown line kind {k}"),
        }
        if kind == "node" && !parts_declared {
            // Until partitions are declared, one partition "all" holds every node.
            let all = (0..s.view.nodes.len()).collect();
            s.view.partitions = vec![PartitionView {
                gpu: gsched_sched::GpuRules::default(),
                name: "all".into(),
                nodes: all,
                up: true,
                inactive: false,
                max_time: None,
            }];
        }
        if kind == "partition" && s.view.partitions.first().is_some_and(|p| p.name == "all") {
            s.view.partitions.remove(0);
        }
    }
    s
}

/// `TYPE:GB[@group][*count],...` as GPU views (cores: the group number alone).
fn gpu_views(spec: &str, shards: u64) -> Vec<GpuView> {
    let mut v = Vec::new();
    for item in spec.split(',') {
        let (item, count) = item.split_once('*').unwrap_or((item, "1"));
        let (item, group) = match item.split_once('@') {
            Some((i, g)) => (i, vec![g.parse::<u32>().unwrap()]),
            None => (item, Vec::new()),
        };
        let (ty, gb) = item.split_once(':').expect("TYPE:GB");
        for _ in 0..count.parse::<u32>().unwrap() {
            v.push(GpuView {
                device: GpuDevice {
                    index: v.len() as u32,
                    type_name: ty.into(),
                    file: format!("/dev/nvidia{}", v.len()),
                    major: None,
                    minor: None,
                    uuid: None,
                    memory_mb: gb.parse::<u64>().unwrap() * 1024,
                    cores: group.clone(),
                    mig: false,
                    mps_count: 0,
                    shard_count: shards,
                },
                holds: Vec::new(),
            });
        }
    }
    v
}

/// `MEM/PCT` (an MPS share) or `sN` (N shards).
fn share(s: &str) -> GpuShare {
    match s.strip_prefix('s') {
        Some(n) => GpuShare {
            mem_mb: 0,
            percent: 100,
            shards: n.parse().unwrap(),
            mps: false,
        },
        None => {
            let (m, p) = s.split_once('/').expect("MEM/PCT");
            GpuShare {
                mem_mb: m.parse().unwrap(),
                percent: p.parse().unwrap(),
                shards: 0,
                mps: true,
            }
        }
    }
}

fn job_gpu<'a>(kv: &impl Fn(&str) -> Option<&'a str>) -> Option<std::sync::Arc<GpuNeed>> {
    let num = |k: &str| kv(k).map(|v| v.parse::<u64>().unwrap());
    let share = GpuShareRequest {
        mem_mb: num("gmem"),
        percent: num("gpct").map(|p| p as u32),
        mps: num("gmps"),
        shards: num("gshards"),
    };
    let amount = if share != GpuShareRequest::default() {
        GpuAmount::Share(share)
    } else if kv("gpus").is_some() || kv("gpt").is_some() {
        GpuAmount::Whole {
            per_node: num("gpus").unwrap_or(0) as u32,
            per_task: num("gpt").unwrap_or(0) as u32,
        }
    } else {
        return None;
    };
    Some(std::sync::Arc::new(GpuNeed {
        type_name: kv("gtype").map(String::from),
        amount,
        user: num("user").unwrap_or(0) as u32,
    }))
}

fn gpus(a: &NodeAlloc) -> String {
    if a.gpus.is_empty() {
        return String::new();
    }
    let v: Vec<String> = a
        .gpus
        .iter()
        .map(|g| match &g.share {
            None => format!("g{}", g.index),
            Some(s) if s.mps => format!("g{}={}m/{}%", g.index, s.mem_mb, s.percent),
            Some(s) => format!("g{}=s{}", g.index, s.shards),
        })
        .collect();
    format!("[{}]", v.join(" "))
}

fn rel(t: i64, now: i64) -> String {
    format!("+{}", t - now)
}

fn allocs(view: &ClusterView, a: &[NodeAlloc]) -> String {
    a.iter()
        .map(|a| {
            let n = &view.nodes[a.node].name;
            if a.mem_mb > 0 {
                format!("{n}:{}c/{}m{}", a.cpus, a.mem_mb, gpus(a))
            } else {
                format!("{n}:{}c{}", a.cpus, gpus(a))
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

fn render(s: &Scenario, d: &Decisions) -> String {
    let mut out = String::new();
    for st in &d.starts {
        let _ = write!(
            out,
            "start {} in {} on {}",
            st.job_id,
            s.view.partitions[st.partition].name,
            allocs(&s.view, &st.placement.nodes)
        );
        if let Some(m) = st.time_limit {
            let _ = write!(out, " limit {m}");
        }
        out.push('\n');
    }
    for (id, r) in &d.waiting {
        let _ = write!(out, "wait {id} {r}");
        if let Some(e) = d.estimates.iter().find(|e| e.job_id == *id) {
            let _ = write!(
                out,
                ", {} at {} in {} on {}",
                match e.kind {
                    EstimateKind::Reserved => "reserved",
                    EstimateKind::Planned => "expected",
                    EstimateKind::NotBefore => "not before",
                },
                rel(e.start, s.now),
                s.view.partitions[e.partition].name,
                allocs(&s.view, &e.placement.nodes)
            );
        }
        out.push('\n');
    }
    out
}

const MARK: &str = "== decisions\n";

#[test]
fn golden_scenarios() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let mut failures = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let (input, expected) = match text.split_once(MARK) {
            Some((i, e)) => (i, e),
            None => (text.as_str(), ""),
        };
        let s = parse(input);
        let d = decide(&s.view, &s.queue, s.now, &s.config);
        let got = render(&s, &d);
        if got != expected {
            if update {
                std::fs::write(&f, format!("{input}{MARK}{got}")).unwrap();
            } else {
                failures.push(format!(
                    "{}:\n--- expected\n{expected}--- got\n{got}",
                    f.display()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
