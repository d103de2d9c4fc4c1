//! `topology.conf` (Slurm's `topology/tree` syntax): the network's switches, read by gsctld
//! when `TopologyPlugin=topology/tree`, from the folder of gsched.conf.
//!
//! ```text
//! SwitchName=s1 Nodes=n[1-4]
//! SwitchName=s2 Nodes=n[5-8]
//! SwitchName=top Switches=s[1-2]
//! ```
//!
//! A switch with `Nodes=` is a leaf switch; `Switches=` names its children. Only the leaf
//! switches matter for placement (jobs go to as few of them as possible), the upper ones are
//! checked (every name must exist) so a typo does not go unnoticed. `LinkSpeed=` is accepted
//! and not used, as in Slurm's tree plugin.

use crate::hostlist;
use std::path::{Path, PathBuf};

/// The file name, beside gsched.conf.
pub const TOPOLOGY_CONF: &str = "topology.conf";

/// The keys of a `SwitchName=` line.
pub const TOPOLOGY_KEYS: &[&str] = &["SwitchName", "Nodes", "Switches", "LinkSpeed"];

/// One switch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Switch {
    pub name: String,
    /// The nodes under it (leaf switches).
    pub nodes: Vec<String>,
    /// The switches under it.
    pub switches: Vec<String>,
}

/// The whole tree.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Topology {
    pub switches: Vec<Switch>,
}

#[derive(Debug, thiserror::Error)]
pub enum TopologyError {
    #[error("cannot read {path}: {source}; write it (SwitchName= lines) or set TopologyPlugin=topology/none")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}:{line}: {message}")]
    Syntax {
        path: PathBuf,
        line: usize,
        message: String,
    },
}

impl Topology {
    /// Reads `topology.conf` from the folder of `config_path`.
    pub fn load_beside(config_path: &Path) -> Result<Topology, TopologyError> {
        let path = config_path
            .parent()
            .unwrap_or(Path::new("."))
            .join(TOPOLOGY_CONF);
        let text = std::fs::read_to_string(&path).map_err(|source| TopologyError::Read {
            path: path.clone(),
            source,
        })?;
        Topology::parse(&text, &path)
    }

    /// Parses the text; `path` names it in messages.
    pub fn parse(text: &str, path: &Path) -> Result<Topology, TopologyError> {
        let err = |line: usize, message: String| TopologyError::Syntax {
            path: path.to_path_buf(),
            line,
            message,
        };
        let mut switches: Vec<Switch> = Vec::new();
        for (k, raw) in text.lines().enumerate() {
            let line = k + 1;
            let l = raw.split('#').next().unwrap_or("").trim();
            if l.is_empty() {
                continue;
            }
            let mut sw = Switch {
                name: String::new(),
                nodes: Vec::new(),
                switches: Vec::new(),
            };
            for (i, word) in l.split_whitespace().enumerate() {
                let Some((key, value)) = word.split_once('=') else {
                    return Err(err(line, format!("expected Key=Value, got \"{word}\"")));
                };
                let canon = TOPOLOGY_KEYS
                    .iter()
                    .find(|c| c.eq_ignore_ascii_case(key))
                    .ok_or_else(|| {
                        err(
                            line,
                            format!(
                                "unknown key \"{key}\" (valid: {})",
                                TOPOLOGY_KEYS.join(", ")
                            ),
                        )
                    })?;
                if i == 0 && *canon != "SwitchName" {
                    return Err(err(line, "a line must start with SwitchName=".into()));
                }
                let list =
                    |v: &str| hostlist::expand(v).map_err(|e| err(line, format!("{canon}: {e}")));
                match *canon {
                    "SwitchName" => {
                        if value.is_empty() {
                            return Err(err(line, "SwitchName= needs a name".into()));
                        }
                        sw.name = value.to_string();
                    }
                    "Nodes" => sw.nodes = list(value)?,
                    "Switches" => sw.switches = list(value)?,
                    _ => {}
                }
            }
            if switches.iter().any(|s| s.name == sw.name) {
                return Err(err(line, format!("switch {} is defined twice", sw.name)));
            }
            switches.push(sw);
        }
        for s in &switches {
            for c in &s.switches {
                if !switches.iter().any(|x| &x.name == c) {
                    return Err(err(
                        0,
                        format!(
                            "switch {} names switch {c}, which no SwitchName line defines",
                            s.name
                        ),
                    ));
                }
            }
        }
        Ok(Topology { switches })
    }

    /// The leaf switch of each of `nodes` (index into the leaf switches, in file order), or
    /// `None` for a node under no switch.
    pub fn leaf_of(&self, nodes: &[String]) -> Vec<Option<u32>> {
        let leaves: Vec<&Switch> = self
            .switches
            .iter()
            .filter(|s| !s.nodes.is_empty())
            .collect();
        nodes
            .iter()
            .map(|n| {
                leaves
                    .iter()
                    .position(|s| s.nodes.iter().any(|x| x == n))
                    .map(|p| p as u32)
            })
            .collect()
    }

    /// The names of the leaf switches, in file order.
    pub fn leaf_names(&self) -> Vec<String> {
        self.switches
            .iter()
            .filter(|s| !s.nodes.is_empty())
            .map(|s| s.name.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_tree_and_finds_leaves() {
        let t = Topology::parse(
            "# two racks\nSwitchName=s1 Nodes=n[1-2] LinkSpeed=100\nSwitchName=s2 Nodes=n[3-4]\nSwitchName=top Switches=s[1-2]\n",
            Path::new("topology.conf"),
        )
        .unwrap();
        assert_eq!(t.switches.len(), 3);
        let names: Vec<String> = ["n1", "n3", "n9"].iter().map(|s| s.to_string()).collect();
        assert_eq!(t.leaf_of(&names), vec![Some(0), Some(1), None]);
        assert_eq!(t.leaf_names(), vec!["s1", "s2"]);
    }

    #[test]
    fn refuses_mistakes_with_line_numbers() {
        let p = Path::new("topology.conf");
        let e = Topology::parse("SwitchName=s1 Nodez=n1\n", p).unwrap_err();
        assert!(
            e.to_string()
                .contains("topology.conf:1: unknown key \"Nodez\""),
            "{e}"
        );
        let e = Topology::parse("Nodes=n1\n", p).unwrap_err();
        assert!(e.to_string().contains("must start with SwitchName="), "{e}");
        let e = Topology::parse("SwitchName=a Switches=b\n", p).unwrap_err();
        assert!(e.to_string().contains("names switch b"), "{e}");
        let e = Topology::parse("SwitchName=a Nodes=n1\nSwitchName=a Nodes=n2\n", p).unwrap_err();
        assert!(e.to_string().contains("defined twice"), "{e}");
    }
}
