//! The simulated cluster: nodes and partitions as the scheduler core sees them, from a
//! gsched.conf (the daemon's own parser, so a config that runs a cluster describes its
//! simulation), from flags, or from what the trace says about its machine.

use std::path::Path;

use anyhow::{bail, Context, Result};
use gsched_proto::config::{Config, ConfiguredNodeState, PartitionState};
use gsched_sched::{ClusterView, NodeView, PartitionView, SchedConfig};

use crate::trace::Trace;

/// The cluster and the partition jobs are submitted to.
#[derive(Debug, Clone)]
pub struct Cluster {
    pub view: ClusterView,
    /// Index of the partition every job goes to.
    pub partition: usize,
    /// Total CPUs of that partition (the utilization denominator).
    pub cpus: u64,
    /// Scheduler settings from the config, if one was given.
    pub config: Option<SchedConfig>,
    /// One line saying where the cluster came from.
    pub describe: String,
}

fn node(name: String, cpus: u32, mem_mb: u64) -> NodeView {
    NodeView {
        gpus: Vec::new(),
        name: name.into(),
        cpus,
        mem_mb,
        alloc_cpus: 0,
        alloc_mem_mb: 0,
        available: true,
        weight: 1,
        features: Vec::new(),
        penalty: 0,
    }
}

impl Cluster {
    fn finish(
        view: ClusterView,
        partition: usize,
        config: Option<SchedConfig>,
        describe: String,
    ) -> Cluster {
        let cpus = view.partitions[partition]
            .nodes
            .iter()
            .map(|&i| view.nodes[i].cpus as u64)
            .sum();
        Cluster {
            view,
            partition,
            cpus,
            config,
            describe,
        }
    }

    /// `nodes` nodes of `cpus` CPUs and `mem_mb` MiB in one partition `sim` without a time
    /// limit.
    pub fn uniform(nodes: u32, cpus: u32, mem_mb: u64) -> Result<Cluster> {
        if nodes == 0 || cpus == 0 {
            bail!("the cluster needs at least one node of at least one CPU (--nodes, --cpus-per-node)");
        }
        let view = ClusterView {
            nodes: (0..nodes)
                .map(|i| node(format!("n{i:05}"), cpus, mem_mb))
                .collect(),
            partitions: vec![PartitionView {
                gpu: gsched_sched::GpuRules::default(),
                name: "sim".into(),
                nodes: (0..nodes as usize).collect(),
                up: true,
                inactive: false,
                max_time: None,
            }],
            running: Vec::new(),
            limits: Vec::new(),
            blackouts: Vec::new(),
        };
        Ok(Cluster::finish(
            view,
            0,
            None,
            format!("{nodes} nodes x {cpus} CPUs"),
        ))
    }

    /// The nodes a trace comes with (the Alibaba node list).
    pub fn from_trace_nodes(trace: &Trace) -> Result<Cluster> {
        if trace.nodes.is_empty() {
            bail!("the trace lists no nodes");
        }
        let view = ClusterView {
            nodes: trace
                .nodes
                .iter()
                .map(|n| node(n.name.clone(), n.cpus, n.mem_mb))
                .collect(),
            partitions: vec![PartitionView {
                gpu: gsched_sched::GpuRules::default(),
                name: "sim".into(),
                nodes: (0..trace.nodes.len()).collect(),
                up: true,
                inactive: false,
                max_time: None,
            }],
            running: Vec::new(),
            limits: Vec::new(),
            blackouts: Vec::new(),
        };
        let n = trace.nodes.len();
        Ok(Cluster::finish(
            view,
            0,
            None,
            format!("{n} nodes from the trace's node list"),
        ))
    }

    /// The machine of an SWF header: `MaxNodes` nodes of `MaxProcs / MaxNodes` CPUs (as
    /// RLScheduler builds it), or one node per processor without `MaxNodes`.
    pub fn from_header(trace: &Trace) -> Result<Cluster> {
        let Some(procs) = trace.machine.procs.filter(|&p| p > 0) else {
            bail!("the trace does not say how big its machine was (no MaxProcs in its header): give --nodes and --cpus-per-node, or --config");
        };
        let nodes = trace
            .machine
            .nodes
            .filter(|&n| n > 0 && procs % n == 0)
            .unwrap_or(procs);
        Cluster::uniform(nodes, procs / nodes, 0)
    }

    /// Nodes and partitions of a gsched.conf; jobs go to `partition` or the default one.
    /// Nodes configured `DOWN`, `DRAIN` or `FUTURE` and partitions not `UP` are as the
    /// controller would see them at start-up (no jobs there).
    pub fn from_config(path: &Path, partition: Option<&str>) -> Result<Cluster> {
        let cfg = Config::load(path).with_context(|| format!("reading {}", path.display()))?;
        let nodes: Vec<NodeView> = cfg
            .nodes
            .iter()
            .map(|n| NodeView {
                gpus: Vec::new(),
                name: n.name.as_str().into(),
                cpus: n.cpus,
                mem_mb: n.real_memory_mb,
                alloc_cpus: 0,
                alloc_mem_mb: 0,
                available: !matches!(
                    n.state,
                    ConfiguredNodeState::Down
                        | ConfiguredNodeState::Drain
                        | ConfiguredNodeState::Future
                ),
                weight: n.weight,
                features: n.features.clone(),
                penalty: 0,
            })
            .collect();
        let partitions: Vec<PartitionView> = cfg
            .partitions
            .iter()
            .map(|p| PartitionView {
                gpu: gsched_sched::GpuRules::default(),
                name: p.name.clone(),
                nodes: p
                    .nodes
                    .iter()
                    .filter_map(|name| nodes.iter().position(|n| *n.name == **name))
                    .collect(),
                up: matches!(p.state, PartitionState::Up | PartitionState::Drain),
                inactive: p.state == PartitionState::Inactive,
                max_time: p.max_time,
            })
            .collect();
        let part = match partition {
            Some(name) => cfg
                .partitions
                .iter()
                .position(|p| p.name == name)
                .with_context(|| {
                    format!(
                        "no partition {name} in {}; it has {}",
                        path.display(),
                        cfg.partitions
                            .iter()
                            .map(|p| p.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                })?,
            None => match cfg.default_partition() {
                Some(d) => cfg
                    .partitions
                    .iter()
                    .position(|p| p.name == d.name)
                    .unwrap_or(0),
                None => bail!(
                    "{} defines no partition: add a PartitionName= line",
                    path.display()
                ),
            },
        };
        let sched = SchedConfig::from_config(&cfg);
        let describe = format!(
            "{} nodes of {} (partition {})",
            partitions[part].nodes.len(),
            path.display(),
            partitions[part].name
        );
        let view = ClusterView {
            nodes,
            partitions,
            running: Vec::new(),
            limits: Vec::new(),
            blackouts: Vec::new(),
        };
        Ok(Cluster::finish(view, part, Some(sched), describe))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::MachineHint;

    #[test]
    fn header_machine() {
        let mut t = Trace {
            machine: MachineHint {
                nodes: Some(144),
                procs: Some(1152),
            },
            ..Trace::default()
        };
        let c = Cluster::from_header(&t).unwrap();
        assert_eq!(
            (c.view.nodes.len(), c.view.nodes[0].cpus, c.cpus),
            (144, 8, 1152)
        );
        t.machine.nodes = None;
        let c = Cluster::from_header(&t).unwrap();
        assert_eq!((c.view.nodes.len(), c.cpus), (1152, 1152));
        t.machine.procs = None;
        let e = Cluster::from_header(&t).unwrap_err();
        assert!(e.to_string().contains("--nodes"), "{e}");
    }

    #[test]
    fn config_nodes_partitions_and_policy() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("gsched.conf");
        std::fs::write(
            &p,
            "ClusterName=t\nSlurmctldHost=h\nSchedulerParameters=bf_policy=conservative\n\
             NodeName=a[1-3] CPUs=4 RealMemory=1000\nNodeName=b1 CPUs=8 RealMemory=2000\n\
             PartitionName=small Nodes=a[1-3] MaxTime=60\nPartitionName=all Nodes=ALL Default=YES\n",
        )
        .unwrap();
        let c = Cluster::from_config(&p, None).unwrap();
        assert_eq!(c.view.partitions[c.partition].name, "all");
        assert_eq!(c.cpus, 20);
        assert_eq!(c.config.unwrap().policy, gsched_sched::Policy::Conservative);
        let c = Cluster::from_config(&p, Some("small")).unwrap();
        assert_eq!(
            (c.cpus, c.view.partitions[c.partition].max_time),
            (12, Some(60))
        );
        let e = Cluster::from_config(&p, Some("gpu")).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("no partition gpu in {}; it has small, all", p.display())
        );
    }
}
