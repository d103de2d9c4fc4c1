//! `scontrol update PartitionName=<name> Key=Value ...`: a running controller's change to
//! one partition, in the same keys and value forms as its `PartitionName=` line.
//!
//! As in Slurm 22.05 (without `ReconfigFlags=KeepPartInfo`), such a change lives in the
//! controller's memory: a restart or `scontrol reconfigure` reads the partition from the
//! config file again. The change is checked as a whole before anything is applied, so a
//! request with one bad value changes nothing.

use super::{
    canonical, group_list, name_list, parse_bool, parse_default_time, parse_max_time, parse_mem_mb,
    parse_over_time, parse_oversubscribe, parse_partition_state, per_cpu_or_node, Config,
    IGNORED_PARTITION_KEYS, PARTITION_KEYS,
};
use crate::hostlist;

impl Config {
    /// The config with partition `name` changed by `pairs` (`Key`, `Value`), or why not: an
    /// unknown partition, a key that is not a partition setting or that gsched does not
    /// implement ("Update of this parameter is not supported"), or a bad value.
    /// `Default=YES` takes the default from every other partition.
    pub fn with_partition_update(
        &self,
        name: &str,
        pairs: &[(String, String)],
    ) -> Result<Config, String> {
        let mut cfg = self.clone();
        let Some(idx) = cfg.partitions.iter().position(|p| p.name == name) else {
            return Err(format!(
                "Invalid partition name specified: {name} (the partitions are {})",
                self.partitions
                    .iter()
                    .map(|p| p.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        };
        let mut make_default = None;
        // DefMemPerCPU / DefMemPerNode (and MaxMem*) of this request: per CPU wins, as at
        // start-up; given alone, one replaces whatever the partition had.
        let (mut def_cpu, mut def_node, mut max_cpu, mut max_node) = (None, None, None, None);
        {
            let p = &mut cfg.partitions[idx];
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
                let bad = |m: String| format!("Invalid {canon}: {m}");
                match canon {
                    "PartitionName" => {
                        if value != name {
                            return Err(format!(
                                "PartitionName given twice ({name} and {value}); update one partition per command"
                            ));
                        }
                    }
                    "Nodes" => p.nodes = expand_nodes(self, value).map_err(bad)?,
                    "Default" => make_default = Some(parse_bool(value).map_err(bad)?),
                    "MaxTime" => p.max_time = parse_max_time(value).map_err(bad)?,
                    "DefaultTime" => p.default_time = parse_default_time(value).map_err(bad)?,
                    "State" => p.state = parse_partition_state(value).map_err(bad)?,
                    "AllowAccounts" => p.access.allow_accounts = name_list(value),
                    "DenyAccounts" => p.access.deny_accounts = name_list(value),
                    "AllowQos" => p.access.allow_qos = name_list(value),
                    "DenyQos" => p.access.deny_qos = name_list(value),
                    "AllowGroups" => p.access.allow_groups = group_list(value),
                    "Hidden" => p.hidden = parse_bool(value).map_err(bad)?,
                    "DefMemPerCPU" => def_cpu = Some(parse_mem_mb(value).map_err(bad)?),
                    "DefMemPerNode" => def_node = Some(parse_mem_mb(value).map_err(bad)?),
                    "MaxMemPerCPU" => max_cpu = Some(parse_mem_mb(value).map_err(bad)?),
                    "MaxMemPerNode" => max_node = Some(parse_mem_mb(value).map_err(bad)?),
                    // As scontrol's man page says, UNLIMITED clears the partition's own
                    // value: the cluster's OverTimeLimit applies again.
                    "OverTimeLimit" => {
                        p.over_time_limit = parse_over_time(value).map_err(bad)?.map(Some)
                    }
                    "DisableRootJobs" => {
                        p.disable_root_jobs = Some(parse_bool(value).map_err(bad)?)
                    }
                    "HangMinutes" => {
                        p.ladder.hang_secs =
                            Some(crate::ladder_conf::parse_minutes(value).map_err(bad)?)
                    }
                    "IdleGpuMinutes" => {
                        p.ladder.idle_gpu_secs =
                            Some(crate::ladder_conf::parse_minutes(value).map_err(bad)?)
                    }
                    "GpuSharing" => {
                        p.gpu_multiuser = match value.to_ascii_lowercase().as_str() {
                            "user" => false,
                            "multiuser" => true,
                            _ => {
                                return Err(bad(format!(
                                    "invalid value \"{value}\" (expected user or multiuser)"
                                )))
                            }
                        }
                    }
                    "GpuOverSubscribe" => {
                        p.gpu_compute_pct = parse_oversubscribe(value).ok_or_else(|| {
                            bad(format!(
                                "invalid value \"{value}\" (expected 1 to 4 GPUs' worth, e.g. 2 or 1.5)"
                            ))
                        })?
                    }
                    other => {
                        return Err(format!(
                            "Update of this parameter is not supported: {other}={value}"
                        ))
                    }
                }
            }
            if def_cpu.is_some() || def_node.is_some() {
                p.def_mem = per_cpu_or_node(def_cpu, def_node);
            }
            if max_cpu.is_some() || max_node.is_some() {
                p.max_mem = per_cpu_or_node(max_cpu, max_node);
            }
        }
        match make_default {
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
