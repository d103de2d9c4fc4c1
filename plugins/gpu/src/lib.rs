//! A node's GPUs: what gsnoded finds at start-up (and reports at registration) and what it
//! samples while jobs run.
//!
//! Why a plugin kind: where the truth about GPUs comes from differs by site, as in Slurm's
//! `AutoDetect=` in `gres.conf` (read by [`gsched_proto::gres_conf`]):
//! * `AutoDetect=nvml` ([`nvml::NvmlBackend`]): NVML through nvml-wrapper, whose
//!   `libnvidia-ml.so.1` is loaded at run time, so gsnoded builds and runs on nodes without a
//!   driver; model, UUID, memory, MIG mode, minor number, utilization and per-process
//!   figures. With `Name=gpu` lines as well, NVML fills in and the lines cross-check: a GPU
//!   on one side only is left out, with a warning (Slurm drops mismatching GPUs too).
//! * `AutoDetect=off` (or no `AutoDetect`): the static `Name=gpu File=...` lines only. `File=`
//!   may name any character device, which is how tests fake GPUs.
//! * [`fake::FakeBackend`]: an in-memory NVML for unit tests of the code that uses one.
//!
//! The result is a list of [`GpuDevice`]s in index order: the order of the `File=` lines,
//! or NVML's (PCI bus) order.

pub mod fake;
pub mod nvml;

use gsched_proto::config::GresConfig;
use gsched_proto::gpu::GpuDevice;
use gsched_proto::gres_conf::{AutoDetect, GresConf, NodeGres};
use std::fmt::Debug;
use std::sync::Arc;

/// The major number of NVIDIA's GPU device files (`/dev/nvidia<minor>`).
pub const NVIDIA_MAJOR: u32 = 195;

/// The names of the backends (`AutoDetect=` values, and the fake).
pub const VALID_NAMES: &[&str] = &["nvml", "off", "fake"];

/// A GPU problem, with what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    #[error("AutoDetect=nvml but NVML cannot be used: {0} (install the NVIDIA driver, or set AutoDetect=off in gres.conf and list the GPUs with Name=gpu File= lines)")]
    NvmlUnavailable(String),
    #[error("NVML: {0}")]
    Nvml(String),
    #[error(
        "{at}: File={file} {why}; File= must name the GPU's character device (e.g. /dev/nvidia0)"
    )]
    BadFile {
        at: String,
        file: String,
        why: String,
    },
    #[error("unknown GPU backend {0:?}; valid backends: {valid}", valid = VALID_NAMES.join(", "))]
    UnknownBackend(String),
}

/// One GPU as a backend sees it, in the backend's own numbering.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DetectedGpu {
    /// The backend's index (NVML's).
    pub backend_index: u32,
    /// The model name (`NVIDIA A100-SXM4-80GB`).
    pub model: String,
    pub uuid: Option<String>,
    pub memory_mb: u64,
    /// The minor number of `/dev/nvidia<minor>`.
    pub minor: Option<u32>,
    pub mig: bool,
}

/// What one GPU is doing now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RawSample {
    pub util_percent: u32,
    pub mem_used_mb: u64,
    pub processes: Vec<ProcessSample>,
}

/// One process on a GPU.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProcessSample {
    pub pid: u32,
    pub mem_used_mb: u64,
    pub sm_percent: u32,
}

/// A source of GPU facts: NVML or the fake.
pub trait GpuBackend: Send + Sync + Debug {
    /// `nvml`, `fake`.
    fn name(&self) -> &'static str;
    /// Every GPU, in the backend's order.
    fn detect(&self) -> Result<Vec<DetectedGpu>, GpuError>;
    /// What GPU `backend_index` does now.
    fn sample(&self, backend_index: u32) -> Result<RawSample, GpuError>;
}

/// A backend by name (`nvml` loads `libnvidia-ml.so.1`; `off` is none).
pub fn backend_by_name(name: &str) -> Result<Option<Arc<dyn GpuBackend>>, GpuError> {
    match name {
        "nvml" => Ok(Some(Arc::new(nvml::NvmlBackend::open(None)?))),
        "fake" => Ok(Some(Arc::new(fake::FakeBackend::default()))),
        "off" => Ok(None),
        other => Err(GpuError::UnknownBackend(other.to_string())),
    }
}

/// The node's GPUs and where to sample them.
#[derive(Debug, Clone, Default)]
pub struct Inventory {
    pub devices: Vec<GpuDevice>,
    /// For each device, its backend index (to sample it); `None` without a backend.
    pub backend_index: Vec<Option<u32>>,
    pub backend: Option<Arc<dyn GpuBackend>>,
    /// Mismatches found (each one line, for the log).
    pub warnings: Vec<String>,
}

/// `Type=` from an NVML model name, as Slurm's autodetection writes it: lower case, spaces
/// as underscores (`NVIDIA A100-SXM4-80GB` → `nvidia_a100-sxm4-80gb`).
pub fn type_from_model(model: &str) -> String {
    model.trim().to_ascii_lowercase().replace(' ', "_")
}

/// The kind and numbers of a device file: `Ok((major, minor))` for a character device.
pub fn char_device(path: &str) -> Result<(u32, u32), String> {
    use nix::sys::stat::{major, minor, stat, SFlag};
    let st = stat(path).map_err(|e| format!("cannot be read ({e})"))?;
    if SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT != SFlag::S_IFCHR {
        return Err("is not a character device".into());
    }
    Ok((major(st.st_rdev) as u32, minor(st.st_rdev) as u32))
}

/// The node's GPUs from its `gres.conf` lines and, with `AutoDetect=nvml`, `backend`
/// (opened by the caller, so tests can pass the fake).
pub fn inventory(
    conf: &GresConf,
    node: &str,
    backend: Option<Arc<dyn GpuBackend>>,
) -> Result<Inventory, GpuError> {
    let ng = conf.for_node(node);
    let mut inv = match (ng.autodetect, backend) {
        (Some(AutoDetect::Nvml), Some(b)) => detected(conf, &ng, b)?,
        (Some(AutoDetect::Nvml), None) => {
            return Err(GpuError::NvmlUnavailable(
                "no NVML backend was opened".into(),
            ))
        }
        _ => from_lines(conf, &ng)?,
    };
    apply_sharing(conf, &ng, &mut inv);
    Ok(inv)
}

/// `AutoDetect=off`: one device per `File=` of the `Name=gpu` lines.
fn from_lines(conf: &GresConf, ng: &NodeGres) -> Result<Inventory, GpuError> {
    let mut inv = Inventory::default();
    for l in &ng.gpus {
        if l.files.is_empty() {
            return Err(GpuError::BadFile {
                at: conf.at(l.line),
                file: String::new(),
                why: "is missing (without AutoDetect=nvml every Name=gpu line needs File=, so that jobs can be confined to their GPUs)".into(),
            });
        }
        for f in &l.files {
            let (major, minor) = char_device(f).map_err(|why| GpuError::BadFile {
                at: conf.at(l.line),
                file: f.clone(),
                why,
            })?;
            inv.devices.push(GpuDevice {
                index: inv.devices.len() as u32,
                type_name: l.type_name.clone().unwrap_or_default(),
                file: f.clone(),
                major: Some(major),
                minor: Some(minor),
                uuid: None,
                memory_mb: l.memory_mb.unwrap_or(0),
                cores: l.cores.clone(),
                mig: false,
                mps_count: 0,
                shard_count: 0,
            });
            inv.backend_index.push(None);
        }
    }
    Ok(inv)
}

/// `AutoDetect=nvml`: the backend's GPUs, cross-checked with the `Name=gpu` lines if any.
fn detected(
    conf: &GresConf,
    ng: &NodeGres,
    backend: Arc<dyn GpuBackend>,
) -> Result<Inventory, GpuError> {
    let found = backend.detect()?;
    let mut inv = Inventory::default();
    // The files of the lines, with their numbers (unreadable ones are reported).
    let mut listed = Vec::new();
    for l in &ng.gpus {
        for f in &l.files {
            match char_device(f) {
                Ok((maj, min)) => listed.push((l, f.clone(), maj, min, false)),
                Err(why) => inv.warnings.push(format!(
                    "{}: File={f} {why}; that GPU is not used",
                    conf.at(l.line)
                )),
            }
        }
    }
    let cross_check = !ng.gpus.is_empty();
    for d in found {
        let model_type = type_from_model(&d.model);
        let (file, major, minor, type_name, cores, memory) = if cross_check {
            let Some(entry) = listed
                .iter_mut()
                .find(|e| !e.4 && Some(e.3) == d.minor && e.2 == NVIDIA_MAJOR)
            else {
                inv.warnings.push(format!(
                    "NVML GPU {} ({}, minor {}) matches no Name=gpu File= line of {}; it is not used",
                    d.backend_index,
                    d.model,
                    d.minor.map_or("?".into(), |m| m.to_string()),
                    conf.path.display()
                ));
                continue;
            };
            entry.4 = true;
            let l = entry.0;
            if let Some(t) = &l.type_name {
                if !model_type.contains(t.as_str()) {
                    inv.warnings.push(format!(
                        "{}: Type={t} but NVML reports {} for {} ({model_type}); that GPU is not used (Type= must be part of the model name)",
                        conf.at(l.line),
                        d.model,
                        entry.1
                    ));
                    continue;
                }
            }
            (
                entry.1.clone(),
                Some(entry.2),
                Some(entry.3),
                l.type_name.clone().unwrap_or_else(|| model_type.clone()),
                l.cores.clone(),
                l.memory_mb
                    .filter(|_| d.memory_mb == 0)
                    .unwrap_or(d.memory_mb),
            )
        } else {
            let minor = d.minor;
            let file = minor.map_or_else(String::new, |m| format!("/dev/nvidia{m}"));
            let major = char_device(&file).ok().map_or(NVIDIA_MAJOR, |(ma, _)| ma);
            (
                file,
                minor.map(|_| major),
                minor,
                model_type.clone(),
                Vec::new(),
                d.memory_mb,
            )
        };
        inv.devices.push(GpuDevice {
            index: inv.devices.len() as u32,
            type_name,
            file,
            major,
            minor,
            uuid: d.uuid.clone(),
            memory_mb: memory,
            cores,
            mig: d.mig,
            mps_count: 0,
            shard_count: 0,
        });
        inv.backend_index.push(Some(d.backend_index));
    }
    for e in listed.iter().filter(|e| !e.4) {
        inv.warnings.push(format!(
            "{}: File={} is not a GPU that NVML reports; it is not used",
            conf.at(e.0.line),
            e.1
        ));
    }
    inv.backend = Some(backend);
    Ok(inv)
}

/// `Name=mps` and `Name=shard` counts: per file, or split evenly over the GPUs (Slurm).
fn apply_sharing(conf: &GresConf, ng: &NodeGres, inv: &mut Inventory) {
    for (lines, is_mps) in [(&ng.mps, true), (&ng.shards, false)] {
        for l in lines {
            let count = l.count.unwrap_or(0);
            let targets: Vec<usize> = if l.files.is_empty() {
                (0..inv.devices.len()).collect()
            } else {
                l.files
                    .iter()
                    .filter_map(|f| {
                        let i = inv.devices.iter().position(|d| &d.file == f);
                        if i.is_none() {
                            inv.warnings.push(format!(
                                "{}: File={f} is not one of the node's GPUs; its Name={} count is not used",
                                conf.at(l.line),
                                if is_mps { "mps" } else { "shard" }
                            ));
                        }
                        i
                    })
                    .collect()
            };
            if targets.is_empty() {
                continue;
            }
            let each = count / targets.len() as u64;
            for i in targets {
                let d = &mut inv.devices[i];
                if is_mps {
                    d.mps_count = each;
                } else {
                    d.shard_count = each;
                }
            }
        }
    }
}

/// Compares the node's `Gres=gpu[:type]:N` in gsched.conf with what was found: `None` when
/// they agree, else a line for the log (the node registers what it really has).
pub fn check_config(node: &str, configured: &[GresConfig], found: &[GpuDevice]) -> Option<String> {
    let want: Vec<&GresConfig> = configured.iter().filter(|g| g.name == "gpu").collect();
    let mut problems = Vec::new();
    let total_want: u64 = want.iter().map(|g| g.count).sum();
    if total_want != found.len() as u64 {
        problems.push(format!(
            "gsched.conf gives it {total_want} GPU(s) but {} were found",
            found.len()
        ));
    }
    for g in &want {
        if let Some(t) = &g.gtype {
            let t = t.to_ascii_lowercase();
            let n = found
                .iter()
                .filter(|d| d.type_name.contains(t.as_str()))
                .count() as u64;
            if n != g.count {
                problems.push(format!("Gres={g} but {n} GPU(s) of type {t} were found"));
            }
        }
    }
    if problems.is_empty() {
        return None;
    }
    let have: Vec<String> = found
        .iter()
        .map(|d| {
            format!(
                "{}={}",
                d.index,
                if d.type_name.is_empty() {
                    "gpu"
                } else {
                    &d.type_name
                }
            )
        })
        .collect();
    Some(format!(
        "node {node}: {}; it registers what it has ({}); fix Gres= on its NodeName line or gres.conf",
        problems.join("; "),
        if have.is_empty() { "no GPU".to_string() } else { have.join(", ") }
    ))
}

/// `Gres=` as `scontrol show node` prints it, from the GPUs found (`gpu:a100:2,gpu:t4:1`).
pub fn gres_string(found: &[GpuDevice]) -> String {
    let mut by_type: Vec<(String, u32)> = Vec::new();
    for d in found {
        match by_type.iter_mut().find(|(t, _)| *t == d.type_name) {
            Some(e) => e.1 += 1,
            None => by_type.push((d.type_name.clone(), 1)),
        }
    }
    by_type
        .into_iter()
        .map(|(t, n)| {
            if t.is_empty() {
                format!("gpu:{n}")
            } else {
                format!("gpu:{t}:{n}")
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn conf(text: &str) -> GresConf {
        GresConf::parse(text, Path::new("/etc/gsched/gres.conf")).unwrap()
    }

    fn fake(n: u32) -> Arc<dyn GpuBackend> {
        Arc::new(fake::FakeBackend::with_gpus(
            n,
            "NVIDIA A100-SXM4-80GB",
            81920,
        ))
    }

    #[test]
    fn static_lines_need_character_devices() {
        // /dev/null is a character device (1:3): a test stand-in for a GPU file.
        let c =
            conf("Name=gpu Type=a100 File=/dev/null Cores=0-1 Memory=40G\nName=mps Count=200\n");
        let inv = inventory(&c, "n1", None).unwrap();
        assert_eq!(inv.devices.len(), 1);
        let d = &inv.devices[0];
        assert_eq!((d.major, d.minor), (Some(1), Some(3)));
        assert_eq!(d.type_name, "a100");
        assert_eq!(d.memory_mb, 40 * 1024);
        assert_eq!(d.cores, [0, 1]);
        assert_eq!(d.mps_count, 200);
        let t = tempfile::tempdir().unwrap();
        let plain = t.path().join("nvidia0");
        std::fs::write(&plain, "").unwrap();
        let c = conf(&format!("Name=gpu File={}\n", plain.display()));
        let e = inventory(&c, "n1", None).unwrap_err().to_string();
        assert!(e.starts_with("/etc/gsched/gres.conf:1: File="), "{e}");
        assert!(e.contains("is not a character device"), "{e}");
        let e = inventory(&conf("Name=gpu Count=2\n"), "n1", None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("needs File="), "{e}");
    }

    #[test]
    fn nvml_without_lines_names_dev_nvidia() {
        let inv = inventory(
            &conf("AutoDetect=nvml\nName=shard Count=8\n"),
            "n1",
            Some(fake(2)),
        )
        .unwrap();
        assert_eq!(inv.devices.len(), 2);
        assert_eq!(inv.devices[1].file, "/dev/nvidia1");
        assert_eq!(inv.devices[1].minor, Some(1));
        assert_eq!(inv.devices[1].type_name, "nvidia_a100-sxm4-80gb");
        assert_eq!(inv.devices[0].memory_mb, 81920);
        assert_eq!(inv.devices[0].shard_count, 4);
        assert!(inv.devices[0].uuid.as_deref().unwrap().starts_with("GPU-"));
        assert_eq!(inv.backend_index, [Some(0), Some(1)]);
        assert_eq!(gres_string(&inv.devices), "gpu:nvidia_a100-sxm4-80gb:2");
    }

    #[test]
    fn nvml_cross_checks_the_lines() {
        // /dev/null is 1:3, not an NVIDIA device: NVML's GPUs match no line.
        let c = conf("AutoDetect=nvml\nName=gpu Type=a100 File=/dev/null\n");
        let inv = inventory(&c, "n1", Some(fake(1))).unwrap();
        assert!(inv.devices.is_empty());
        assert!(
            inv.warnings
                .iter()
                .any(|w| w.contains("matches no Name=gpu File= line")),
            "{:?}",
            inv.warnings
        );
        assert!(
            inv.warnings
                .iter()
                .any(|w| w.contains("File=/dev/null is not a GPU that NVML reports")),
            "{:?}",
            inv.warnings
        );
        let e = inventory(&c, "n1", None).unwrap_err().to_string();
        assert!(e.contains("AutoDetect=nvml but NVML cannot be used"), "{e}");
    }

    #[test]
    fn config_check() {
        let dev = |i: u32, t: &str| GpuDevice {
            index: i,
            type_name: t.into(),
            file: format!("/dev/nvidia{i}"),
            major: None,
            minor: None,
            uuid: None,
            memory_mb: 0,
            cores: vec![],
            mig: false,
            mps_count: 0,
            shard_count: 0,
        };
        let g = |t: Option<&str>, n| GresConfig {
            name: "gpu".into(),
            gtype: t.map(Into::into),
            count: n,
        };
        let found = [dev(0, "a100"), dev(1, "a100")];
        assert_eq!(check_config("n1", &[g(Some("a100"), 2)], &found), None);
        assert_eq!(check_config("n1", &[g(None, 2)], &found), None);
        let w = check_config("n1", &[g(Some("a100"), 4)], &found).unwrap();
        assert!(w.contains("gives it 4 GPU(s) but 2 were found"), "{w}");
        assert!(w.contains("registers what it has (0=a100, 1=a100)"), "{w}");
        let w = check_config("n1", &[g(Some("h100"), 2)], &found).unwrap();
        assert!(w.contains("0 GPU(s) of type h100"), "{w}");
        assert!(check_config("n1", &[], &found).is_some());
        assert_eq!(check_config("n1", &[], &[]), None);
        assert_eq!(gres_string(&[dev(0, ""), dev(1, "t4")]), "gpu:1,gpu:t4:1");
    }

    #[test]
    fn backends_by_name() {
        assert!(backend_by_name("off").unwrap().is_none());
        assert_eq!(backend_by_name("fake").unwrap().unwrap().name(), "fake");
        let e = backend_by_name("rsmi").unwrap_err().to_string();
        assert!(e.contains("valid backends: nvml, off, fake"), "{e}");
    }
}
