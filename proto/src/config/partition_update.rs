//! `scontrol update PartitionName=<name> Key=Value ...`: a running controller's change to
//! one partition, in the same keys and value forms as its `PartitionName=` line.
//!
//! As in Slurm 22.05 (without `ReconfigFlags=KeepPartInfo`), such a change lives in the
//! controller's memory: a restart or `scontrol reconfigure` reads the partition from the
//! config file again. The change is checked as a whole before anything is applied, so a
//! request with one bad value changes nothing.

use super::{
    canonical, per_cpu_or_node, Config, Loc, PartAttrs, IGNORED_PARTITION_KEYS, PARTITION_KEYS,
};
use crate::hostlist;

impl Config {
    /// The config with partition `name` changed by `pairs` (`Key`, `Value`), or why not: an
    /// unknown partition, a key that is not a partition setting or that gsched does not
    /// implement ("Update of this parameter is not supported"), or a bad value. The values
    /// are read as on a `PartitionName=` line ([`PartAttrs::set`]). `Default=YES` takes the
    /// default from every other partition.
    pub fn with_partition_update(
        &self,
        name: &str,
        pairs: &[(String, String)],
    ) -> Result<Config, String> {
        let Some(idx) = self.partitions.iter().position(|p| p.name == name) else {
            return Err(format!(
                "Invalid partition name specified: {name} (the partitions are {})",
                self.partitions
                    .iter()
                    .map(|p| p.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        };
        let here = Loc {
            file: "scontrol update".into(),
            line: 0,
        };
        let mut a = PartAttrs::default();
        for (key, value) in pairs {
            let Some(canon) = canonical(PARTITION_KEYS, key) else {
                return Err(if canonical(IGNORED_PARTITION_KEYS, key).is_some() {
                    format!(
                        "Update of this parameter is not supported: {key}={value} (gsched does not implement the partition setting {key})"
                    )
                } else {
                    format!("Update of this parameter is not supported: {key}={value}")
                });
            };
            if canon == "PartitionName" {
                if value != name {
                    return Err(format!(
                        "PartitionName given twice ({name} and {value}); update one partition per command"
                    ));
                }
                continue;
            }
            a.set(canon, value, &here)
                .map_err(|m| format!("Invalid {canon}: {m}"))?;
        }
        let nodes = match &a.nodes {
            Some((expr, _)) => {
                Some(expand_nodes(self, expr).map_err(|m| format!("Invalid Nodes: {m}"))?)
            }
            None => None,
        };
        let mut cfg = self.clone();
        let p = &mut cfg.partitions[idx];
        // What the request sets replaces the partition's value; the rest stays.
        if let Some(n) = nodes {
            p.nodes = n;
        }
        if let Some(v) = a.max_time {
            p.max_time = v;
        }
        if let Some(v) = a.default_time {
            p.default_time = v;
        }
        if let Some(v) = a.state {
            p.state = v;
        }
        for (set, to) in [
            (a.allow_accounts, &mut p.access.allow_accounts),
            (a.deny_accounts, &mut p.access.deny_accounts),
            (a.allow_qos, &mut p.access.allow_qos),
            (a.deny_qos, &mut p.access.deny_qos),
            (a.allow_groups, &mut p.access.allow_groups),
        ] {
            if let Some(v) = set {
                *to = v;
            }
        }
        if let Some(v) = a.hidden {
            p.hidden = v;
        }
        // Per CPU wins, as at start-up; given alone, one replaces whatever the partition had.
        if a.def_mem_per_cpu.is_some() || a.def_mem_per_node.is_some() {
            p.def_mem = per_cpu_or_node(a.def_mem_per_cpu, a.def_mem_per_node);
        }
        if a.max_mem_per_cpu.is_some() || a.max_mem_per_node.is_some() {
            p.max_mem = per_cpu_or_node(a.max_mem_per_cpu, a.max_mem_per_node);
        }
        // As scontrol's man page says, UNLIMITED clears the partition's own value: the
        // cluster's OverTimeLimit applies again.
        if let Some(o) = a.over_time_limit {
            p.over_time_limit = o.map(Some);
        }
        if a.disable_root_jobs.is_some() {
            p.disable_root_jobs = a.disable_root_jobs;
        }
        if a.ladder.hang_secs.is_some() {
            p.ladder.hang_secs = a.ladder.hang_secs;
        }
        if a.ladder.idle_gpu_secs.is_some() {
            p.ladder.idle_gpu_secs = a.ladder.idle_gpu_secs;
        }
        if let Some(v) = a.gpu_multiuser {
            p.gpu_multiuser = v;
        }
        if let Some(v) = a.gpu_compute_pct {
            p.gpu_compute_pct = v;
        }
        match a.default {
            Some(true) => {
                for (i, p) in cfg.partitions.iter_mut().enumerate() {
                    p.default = i == idx;
                }
            }
            Some(false) => cfg.partitions[idx].default = false,
            None => {}
        }
        Ok(cfg)
    }
}

/// `Nodes=`: a host list of configured nodes, `ALL`, or empty (no nodes).
fn expand_nodes(cfg: &Config, expr: &str) -> Result<Vec<String>, String> {
    if expr.is_empty() {
        return Ok(Vec::new());
    }
    if expr.eq_ignore_ascii_case("ALL") {
        return Ok(cfg.nodes.iter().map(|n| n.name.clone()).collect());
    }
    let mut nodes: Vec<String> = Vec::new();
    for n in hostlist::expand(expr).map_err(|e| e.to_string())? {
        if !cfg.nodes.iter().any(|c| c.name == n) {
            return Err(format!(
                "node \"{n}\" is not defined by any NodeName line (add it to the config and run scontrol reconfigure)"
            ));
        }
        if !nodes.contains(&n) {
            nodes.push(n);
        }
    }
    Ok(nodes)
}

#[cfg(test)]
mod tests {
    use super::super::{Config, PartitionState};
    use crate::job::MemRequest;
    use std::path::Path;

    fn cfg() -> Config {
        Config::parse(
            "SlurmctldHost=h\nNodeName=n[1-3] CPUs=2\n\
             PartitionName=a Nodes=n[1-2] Default=YES MaxTime=60\n\
             PartitionName=b Nodes=n3 DefMemPerCPU=100\n",
            Path::new("/etc/gsched/gsched.conf"),
        )
        .unwrap()
    }

    fn pairs(s: &str) -> Vec<(String, String)> {
        s.split_whitespace()
            .map(|kv| {
                let (k, v) = kv.split_once('=').unwrap();
                (k.to_string(), v.to_string())
            })
            .collect()
    }

    #[test]
    fn changes_apply_to_one_partition_and_the_default_moves() {
        let c = cfg();
        let n = c
            .with_partition_update(
                "b",
                &pairs("State=DRAIN maxtime=1-00:00:00 Default=YES Nodes=n[2-3] DefMemPerNode=500"),
            )
            .unwrap();
        let b = &n.partitions[1];
        assert_eq!(b.state, PartitionState::Drain);
        assert_eq!(b.max_time, Some(1440));
        assert_eq!(b.nodes, vec!["n2", "n3"]);
        assert_eq!(b.def_mem, Some(MemRequest::PerNode(500)));
        assert!(b.default && !n.partitions[0].default);
        assert_eq!(n.default_partition().unwrap().name, "b");
        // The original is untouched.
        assert_eq!(c.partitions[1].state, PartitionState::Up);
        let n = c
            .with_partition_update("a", &pairs("Nodes=ALL MaxTime=UNLIMITED"))
            .unwrap();
        assert_eq!(n.partitions[0].nodes.len(), 3);
        assert_eq!(n.partitions[0].max_time, None);
    }

    #[test]
    fn bad_requests_change_nothing_and_say_why() {
        let c = cfg();
        let e = c
            .with_partition_update("zz", &pairs("State=UP"))
            .unwrap_err();
        assert!(
            e.contains("Invalid partition name specified: zz (the partitions are a, b)"),
            "{e}"
        );
        let e = c
            .with_partition_update("a", &pairs("State=SIDEWAYS"))
            .unwrap_err();
        assert!(
            e.contains("Invalid State") && e.contains("UP, DOWN, DRAIN or INACTIVE"),
            "{e}"
        );
        let e = c
            .with_partition_update("a", &pairs("Nodes=n9"))
            .unwrap_err();
        assert!(e.contains("\"n9\" is not defined"), "{e}");
        let e = c
            .with_partition_update("a", &pairs("PriorityTier=5"))
            .unwrap_err();
        assert!(
            e.starts_with("Update of this parameter is not supported: PriorityTier=5"),
            "{e}"
        );
        let e = c
            .with_partition_update("a", &pairs("Colour=red"))
            .unwrap_err();
        assert_eq!(e, "Update of this parameter is not supported: Colour=red");
        let e = c
            .with_partition_update("a", &pairs("State=DOWN MaxTime=never"))
            .unwrap_err();
        assert!(e.contains("Invalid MaxTime"), "{e}");
    }
}
