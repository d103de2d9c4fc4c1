//! `gres.conf`: a node's GPUs, in Slurm's `gres.conf` syntax, read from the file beside
//! `gsched.conf` (Slurm reads it from the directory of `slurm.conf`).
//!
//! Why Slurm's file and not new keys in gsched.conf: sites keep their `gres.conf`, and the
//! split is the same as Slurm's: `Gres=gpu:a100:4` on the node line says what the
//! controller may hand out, `gres.conf` says which device files those GPUs are. Lines:
//!
//! ```text
//! AutoDetect=nvml
//! NodeName=n[1-2] Name=gpu Type=a100 File=/dev/nvidia[0-3] Cores=0-15 Memory=80G
//! NodeName=n[1-2] Name=mps Count=400
//! Name=shard Count=8 File=/dev/nvidia0
//! ```
//!
//! A line without `NodeName=` applies to every node. `AutoDetect=` alone on a line is the
//! default of all later lines; on a `NodeName=` line it applies to those nodes. `Memory=` (GPU
//! memory per device) is gsched's own key, for GPUs that NVML does not describe. A Slurm key
//! gsched does not implement (`Links`, `MultipleFiles`, `Flags`) is an error naming the line,
//! never silently ignored: each changes which devices a job gets.

use crate::config::{io_reason, logical_lines, tokenize, Line};
use crate::units::parse_cpu_list;
use std::fmt;
use std::path::{Path, PathBuf};

/// The file name, looked up in the directory of `gsched.conf`.
pub const GRES_CONF: &str = "gres.conf";

/// Keys gsched implements (the man page `gres.conf(5)` documents exactly these).
pub const GRES_KEYS: &[&str] = &[
    "AutoDetect",
    "NodeName",
    "Name",
    "Type",
    "File",
    "Cores",
    "Count",
    "Memory",
];

/// Slurm keys that gsched refuses with a clear error (they change which devices a job gets).
const UNSUPPORTED_KEYS: &[&str] = &["Links", "MultipleFiles", "Flags", "CPUs"];

/// `AutoDetect=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AutoDetect {
    /// GPUs from NVML (`libnvidia-ml.so.1`, loaded at run time).
    Nvml,
    /// Only the `gres.conf` lines.
    Off,
}

impl AutoDetect {
    pub const VALID: &'static str = "nvml, off";

    pub fn parse(v: &str) -> Option<AutoDetect> {
        match v.to_ascii_lowercase().as_str() {
            "nvml" => Some(AutoDetect::Nvml),
            "off" => Some(AutoDetect::Off),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            AutoDetect::Nvml => "nvml",
            AutoDetect::Off => "off",
        }
    }
}

/// The GRES a line describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GresName {
    Gpu,
    Mps,
    Shard,
}

impl GresName {
    fn parse(v: &str) -> Option<GresName> {
        match v.to_ascii_lowercase().as_str() {
            "gpu" => Some(GresName::Gpu),
            "mps" => Some(GresName::Mps),
            "shard" => Some(GresName::Shard),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            GresName::Gpu => "gpu",
            GresName::Mps => "mps",
            GresName::Shard => "shard",
        }
    }
}

/// One `Name=` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GresLine {
    /// Line number in the file (for messages).
    pub line: usize,
    /// `NodeName=` expanded; `None`: every node.
    pub nodes: Option<Vec<String>>,
    pub name: GresName,
    /// `Type=`, lower-cased.
    pub type_name: Option<String>,
    /// `File=` expanded (`/dev/nvidia[0-3]` → four paths).
    pub files: Vec<String>,
    /// `Cores=` (a CPU list).
    pub cores: Vec<u32>,
    /// `Count=`.
    pub count: Option<u64>,
    /// `Memory=` in MiB (gsched: GPU memory of each device of the line).
    pub memory_mb: Option<u64>,
    /// `AutoDetect=` in effect for this line.
    pub autodetect: Option<AutoDetect>,
}

impl GresLine {
    pub fn applies_to(&self, node: &str) -> bool {
        self.nodes
            .as_ref()
            .is_none_or(|n| n.iter().any(|x| x == node))
    }
}

/// A node-only `NodeName=... AutoDetect=...` line.
#[derive(Debug, Clone, PartialEq, Eq)]
struct NodeAutoDetect {
    nodes: Vec<String>,
    autodetect: AutoDetect,
}

/// The parsed `gres.conf`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GresConf {
    pub path: PathBuf,
    /// A global `AutoDetect=` line (the last one counts for lines after it; this is the
    /// last seen, for nodes without lines).
    pub autodetect: Option<AutoDetect>,
    node_autodetect: Vec<NodeAutoDetect>,
    pub lines: Vec<GresLine>,
}

/// What `gres.conf` says about one node.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NodeGres {
    /// `AutoDetect=` for this node (`None`: not set, i.e. off).
    pub autodetect: Option<AutoDetect>,
    pub gpus: Vec<GresLine>,
    pub mps: Vec<GresLine>,
    pub shards: Vec<GresLine>,
}

/// A `gres.conf` problem, with the file and line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GresConfError {
    #[error("cannot read {}: {reason}", path.display())]
    Read { path: PathBuf, reason: String },
    #[error("{}:{line}: {message}", path.display())]
    Line {
        path: PathBuf,
        line: usize,
        message: String,
    },
}

impl GresConf {
    /// The `gres.conf` beside `gsched_conf`: `Ok(None)` when there is none.
    pub fn load_beside(gsched_conf: &Path) -> Result<Option<GresConf>, GresConfError> {
        match crate::config::read_beside(gsched_conf, GRES_CONF) {
            Ok(Some((path, text))) => GresConf::parse(&text, &path).map(Some),
            Ok(None) => Ok(None),
            Err((path, e)) => Err(GresConfError::Read {
                reason: io_reason(&e),
                path,
            }),
        }
    }

    pub fn parse(text: &str, path: &Path) -> Result<GresConf, GresConfError> {
        let mut conf = GresConf {
            path: path.to_path_buf(),
            autodetect: None,
            node_autodetect: Vec::new(),
            lines: Vec::new(),
        };
        for (line, content) in logical_lines(text) {
            if content.trim().is_empty() {
                continue;
            }
            let err = |message: String| GresConfError::Line {
                path: path.to_path_buf(),
                line,
                message,
            };
            let pairs = match tokenize(&content).map_err(&err)? {
                Line::Include(_) => {
                    return Err(err(
                        "Include is not supported in gres.conf; write the lines here".into(),
                    ))
                }
                Line::Pairs(p) => p,
            };
            let mut nodes = None;
            let mut name = None;
            let mut type_name = None;
            let mut files = Vec::new();
            let mut cores = Vec::new();
            let mut count = None;
            let mut memory_mb = None;
            let mut autodetect = None;
            for (key, value) in pairs {
                if let Some(k) = UNSUPPORTED_KEYS
                    .iter()
                    .find(|k| k.eq_ignore_ascii_case(&key))
                {
                    return Err(err(format!(
                        "{k}= is a Slurm gres.conf key gsched does not implement; remove it (gsched keys: {})",
                        GRES_KEYS.join(", ")
                    )));
                }
                let Some(k) = GRES_KEYS.iter().find(|k| k.eq_ignore_ascii_case(&key)) else {
                    return Err(err(format!(
                        "unknown key {key}; valid keys: {}",
                        GRES_KEYS.join(", ")
                    )));
                };
                if value.is_empty() {
                    return Err(err(format!("{k}= needs a value")));
                }
                match *k {
                    "AutoDetect" => {
                        autodetect = Some(AutoDetect::parse(&value).ok_or_else(|| {
                            err(format!(
                                "AutoDetect={value} is not supported; valid values: {}",
                                AutoDetect::VALID
                            ))
                        })?)
                    }
                    "NodeName" => {
                        nodes = Some(crate::hostlist::expand(&value).map_err(|e| {
                            err(format!("NodeName={value} is not a valid host list: {e}"))
                        })?)
                    }
                    "Name" => {
                        name = Some(GresName::parse(&value).ok_or_else(|| {
                            err(format!(
                                "Name={value} is not a GRES gsched knows; valid names: gpu, mps, shard"
                            ))
                        })?)
                    }
                    "Type" => type_name = Some(value.to_ascii_lowercase()),
                    "File" => {
                        files = crate::hostlist::expand(&value).map_err(|e| {
                            err(format!(
                                "File={value} is not a valid file list (e.g. /dev/nvidia[0-3]): {e}"
                            ))
                        })?;
                        if let Some(f) = files.iter().find(|f| !f.starts_with('/')) {
                            return Err(err(format!(
                                "File={f} is not an absolute path; name the device file, e.g. /dev/nvidia0"
                            )));
                        }
                    }
                    "Cores" => {
                        cores = parse_cpu_list(&value).ok_or_else(|| {
                            err(format!(
                                "Cores={value} is not a CPU list (e.g. 0-15 or 0,2,4)"
                            ))
                        })?
                    }
                    "Count" => {
                        count = Some(parse_count(&value).ok_or_else(|| {
                            err(format!(
                                "Count={value} is not a count (a whole number, optionally with K, M or G)"
                            ))
                        })?)
                    }
                    "Memory" => {
                        memory_mb = Some(crate::units::parse_memory_mb(&value).map_err(|e| {
                            err(format!("Memory={value} is not a size such as 80G: {e}"))
                        })?)
                    }
                    _ => unreachable!("every key of GRES_KEYS is handled"),
                }
            }
            let Some(name) = name else {
                // An AutoDetect line, global or for some nodes.
                let Some(a) = autodetect else {
                    return Err(err(
                        "a line needs Name= (gpu, mps or shard), or is an AutoDetect= line".into(),
                    ));
                };
                if type_name.is_some()
                    || !files.is_empty()
                    || !cores.is_empty()
                    || count.is_some()
                    || memory_mb.is_some()
                {
                    return Err(err(
                        "Type, File, Cores, Count and Memory need Name= on the same line".into(),
                    ));
                }
                match nodes {
                    Some(nodes) => conf.node_autodetect.push(NodeAutoDetect {
                        nodes,
                        autodetect: a,
                    }),
                    None => conf.autodetect = Some(a),
                }
                continue;
            };
            if name != GresName::Gpu && (type_name.is_some() || memory_mb.is_some()) {
                return Err(err(format!(
                    "Type= and Memory= belong on the Name=gpu lines; Name={} takes its type from the GPU it shares",
                    name.as_str()
                )));
            }
            if name == GresName::Gpu {
                if let (Some(c), false) = (count, files.is_empty()) {
                    if c != files.len() as u64 {
                        return Err(err(format!(
                            "Count={c} but File= names {} device(s); give one Count per file, or leave Count out",
                            files.len()
                        )));
                    }
                }
            }
            if name != GresName::Gpu && count.is_none() {
                return Err(err(format!(
                    "Name={} needs Count= (e.g. Count=100 per GPU)",
                    name.as_str()
                )));
            }
            conf.lines.push(GresLine {
                line,
                nodes,
                name,
                type_name,
                files,
                cores,
                count,
                memory_mb,
                autodetect: autodetect.or(conf.autodetect),
            });
        }
        Ok(conf)
    }

    /// What the file says about `node`.
    pub fn for_node(&self, node: &str) -> NodeGres {
        let mut out = NodeGres {
            autodetect: self.autodetect,
            ..Default::default()
        };
        for a in &self.node_autodetect {
            if a.nodes.iter().any(|n| n == node) {
                out.autodetect = Some(a.autodetect);
            }
        }
        for l in self.lines.iter().filter(|l| l.applies_to(node)) {
            if let Some(a) = l.autodetect {
                out.autodetect = Some(a);
            }
            match l.name {
                GresName::Gpu => out.gpus.push(l.clone()),
                GresName::Mps => out.mps.push(l.clone()),
                GresName::Shard => out.shards.push(l.clone()),
            }
        }
        out
    }

    /// `file:line` of a line, for messages.
    pub fn at(&self, line: usize) -> String {
        format!("{}:{line}", self.path.display())
    }
}

impl fmt::Display for AutoDetect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

fn parse_count(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mult) = match s.chars().last()?.to_ascii_uppercase() {
        'K' => (&s[..s.len() - 1], 1024),
        'M' => (&s[..s.len() - 1], 1024 * 1024),
        'G' => (&s[..s.len() - 1], 1024 * 1024 * 1024),
        _ => (s, 1),
    };
    num.parse::<u64>().ok()?.checked_mul(mult)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<GresConf, GresConfError> {
        GresConf::parse(text, Path::new("/etc/gsched/gres.conf"))
    }

    #[test]
    fn slurm_lines() {
        let c = parse(
            "# GPUs\nAutoDetect=nvml\nNodeName=n[1-2] Name=gpu Type=A100 File=/dev/nvidia[0-3] Cores=0-15 Memory=80G\n\
             NodeName=n[1-2] Name=mps Count=400\nName=shard Count=8 File=/dev/nvidia0\n",
        )
        .unwrap();
        assert_eq!(c.autodetect, Some(AutoDetect::Nvml));
        let n1 = c.for_node("n1");
        assert_eq!(n1.autodetect, Some(AutoDetect::Nvml));
        assert_eq!(n1.gpus.len(), 1);
        let g = &n1.gpus[0];
        assert_eq!(g.line, 3);
        assert_eq!(g.type_name.as_deref(), Some("a100"));
        assert_eq!(
            g.files,
            [
                "/dev/nvidia0",
                "/dev/nvidia1",
                "/dev/nvidia2",
                "/dev/nvidia3"
            ]
        );
        assert_eq!(g.cores, (0..16).collect::<Vec<_>>());
        assert_eq!(g.memory_mb, Some(80 * 1024));
        assert_eq!(n1.mps[0].count, Some(400));
        assert_eq!(n1.shards[0].files, ["/dev/nvidia0"]);
        // n3 only gets the line without NodeName.
        let n3 = c.for_node("n3");
        assert!(n3.gpus.is_empty() && n3.mps.is_empty());
        assert_eq!(n3.shards.len(), 1);
    }

    #[test]
    fn autodetect_per_node_and_off() {
        let c = parse(
            "NodeName=g1 AutoDetect=nvml\nNodeName=c1 Name=gpu File=/dev/nvidia0 AutoDetect=off\n",
        )
        .unwrap();
        assert_eq!(c.for_node("g1").autodetect, Some(AutoDetect::Nvml));
        assert_eq!(c.for_node("c1").autodetect, Some(AutoDetect::Off));
        assert_eq!(c.for_node("x").autodetect, None);
    }

    #[test]
    fn errors_name_file_and_line() {
        let cases = [
            (
                "Name=gpu File=/dev/nvidia0 Bogus=1",
                ":1: unknown key Bogus; valid keys: AutoDetect",
            ),
            (
                "\nName=gpu Links=0,-1",
                ":2: Links= is a Slurm gres.conf key gsched does not implement",
            ),
            (
                "AutoDetect=rsmi",
                ":1: AutoDetect=rsmi is not supported; valid values: nvml, off",
            ),
            ("Name=fpga Count=1", "Name=fpga is not a GRES gsched knows"),
            (
                "Name=gpu File=dev/nvidia0",
                "File=dev/nvidia0 is not an absolute path",
            ),
            (
                "Name=gpu File=/dev/nvidia[0-1] Count=3",
                "Count=3 but File= names 2 device(s)",
            ),
            ("Name=mps File=/dev/nvidia0", "Name=mps needs Count="),
            (
                "Name=mps Count=100 Type=a100",
                "Type= and Memory= belong on the Name=gpu lines",
            ),
            (
                "Name=gpu Cores=3-1 File=/dev/nvidia0",
                "Cores=3-1 is not a CPU list",
            ),
            (
                "Name=gpu Memory=lots File=/dev/nvidia0",
                "Memory=lots is not a size",
            ),
            ("Type=a100", "a line needs Name="),
            ("AutoDetect=nvml Type=a100", "need Name= on the same line"),
            ("Name=gpu Count=x", "Count=x is not a count"),
            ("Include other.conf", "Include is not supported"),
        ];
        for (text, want) in cases {
            let e = parse(text).unwrap_err().to_string();
            assert!(e.starts_with("/etc/gsched/gres.conf:"), "{e}");
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }

    #[test]
    fn load_beside_missing_is_none() {
        let t = tempfile::tempdir().unwrap();
        let conf = t.path().join("gsched.conf");
        assert_eq!(GresConf::load_beside(&conf).unwrap(), None);
        std::fs::write(t.path().join("gres.conf"), "Name=gpu File=/dev/nvidia0\n").unwrap();
        let c = GresConf::load_beside(&conf).unwrap().unwrap();
        assert_eq!(c.for_node("any").gpus.len(), 1);
    }

    #[test]
    fn counts() {
        assert_eq!(parse_count("2K"), Some(2048));
        assert_eq!(parse_count("12"), Some(12));
    }
}
