//! gsbatch's GPU options: `--gres=gpu[:type]:N` (and `mps:N`, `shard:N` in the same list),
//! `-G/--gpus`, `--gpus-per-node`, `--gpus-per-task`, `--cpus-per-gpu`, `--mem-per-gpu`, and
//! gsched's own `--gpu-mem=SIZE` (GPU memory) and `--gpu-share=PERCENT` (compute share),
//! turned into the one [`GpuRequest`] the controller places.
//!
//! Kept apart from `sbatch.rs` because the rules are their own: a job asks either for whole
//! GPUs or for a share of one GPU per node, never both (Slurm never allocates one GPU as
//! gres/gpu and gres/mps|shard at once, and a share that spans GPUs would be enforced on none
//! of them); the counts, types and shares are checked here, where the user can be told which
//! option is wrong, and what a partition's GPUs can hold is checked by the controller.

use gsched_proto::gpu::{GpuRequest, GpuShareRequest};
use gsched_proto::units;

/// Slurm's words for a generic resource request it cannot parse (ESLURM_INVALID_GRES).
pub const INVALID_GRES: &str = "Invalid generic resource (gres) specification";

/// A GPU count with an optional type: `[type:]N`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Count {
    pub type_name: Option<String>,
    pub n: u32,
}

/// One item of `--gres`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GresItem {
    Gpu(Count),
    /// `mps[:type]:N`: Slurm's MPS units.
    Mps(Option<String>, u64),
    /// `shard[:type]:N`.
    Shard(Option<String>, u64),
}

/// The GPU options as merged so far (later sources win, as for every option).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GpuOpts {
    pub gres: Option<Vec<GresItem>>,
    pub gpus: Option<Count>,
    pub per_node: Option<Count>,
    pub per_task: Option<Count>,
    pub cpus_per_gpu: Option<u32>,
    /// `--mem-per-gpu`, MiB, with the rank of its source (it excludes `--mem` and
    /// `--mem-per-cpu` of the same source, as in Slurm).
    pub mem_per_gpu: Option<(u64, u8)>,
    /// `--gpu-mem`, MiB.
    pub gpu_mem: Option<u64>,
    /// `--gpu-share`, percent.
    pub gpu_share: Option<u32>,
}

/// A count with Slurm's optional `k`/`m`/`g` multiplier (`--gres=mps:1k`).
fn parse_num(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mult) = match s.char_indices().last()? {
        (i, 'k' | 'K') => (&s[..i], 1024),
        (i, 'm' | 'M') => (&s[..i], 1024 * 1024),
        (i, 'g' | 'G') => (&s[..i], 1024 * 1024 * 1024),
        _ => (s, 1),
    };
    if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    num.parse::<u64>().ok()?.checked_mul(mult)
}

fn type_word(t: &str) -> Option<String> {
    let ok = t.starts_with(|c: char| c.is_ascii_alphanumeric())
        && t.chars().any(|c| c.is_ascii_alphabetic())
        && t.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    ok.then(|| t.to_ascii_lowercase())
}

/// `[type:]N` as `--gpus*` take it.
pub fn parse_count(s: &str) -> Option<Count> {
    let (ty, n) = match s.trim().rsplit_once(':') {
        Some((t, n)) => (Some(type_word(t)?), n),
        None => (None, s.trim()),
    };
    Some(Count {
        type_name: ty,
        n: u32::try_from(parse_num(n)?).ok()?,
    })
}

/// `--gres=LIST`: `name[:type][:count]` items separated by commas, `name` being `gpu`, `mps`
/// or `shard` (optionally written `gres/name`); a missing count is 1; `none` asks for none.
pub fn parse_gres(s: &str) -> Result<Vec<GresItem>, String> {
    let bad = || INVALID_GRES.to_string();
    if s.trim().eq_ignore_ascii_case("none") {
        return Ok(Vec::new());
    }
    let mut items = Vec::new();
    for item in s.split(',') {
        let item = item.trim();
        let item = item.strip_prefix("gres/").unwrap_or(item);
        let mut parts = item.split(':');
        let name = parts.next().unwrap_or("");
        let rest: Vec<&str> = parts.collect();
        let (ty, count) = match rest.as_slice() {
            [] => (None, 1),
            [x] => match parse_num(x) {
                Some(n) => (None, n),
                None => (Some(type_word(x).ok_or_else(bad)?), 1),
            },
            [t, n] => (
                Some(type_word(t).ok_or_else(bad)?),
                parse_num(n).ok_or_else(bad)?,
            ),
            _ => return Err(bad()),
        };
        items.push(match name {
            "gpu" => GresItem::Gpu(Count {
                type_name: ty,
                n: u32::try_from(count).map_err(|_| bad())?,
            }),
            "mps" => GresItem::Mps(ty, count),
            "shard" => GresItem::Shard(ty, count),
            "" => return Err(bad()),
            other => {
                return Err(format!(
                    "{INVALID_GRES}: gsched knows the generic resources gpu, mps and shard, not {other}"
                ))
            }
        });
    }
    Ok(items)
}

/// `--gpu-share=PERCENT`: 1 to 100, an optional `%`.
pub fn parse_share(s: &str) -> Option<u32> {
    let t = s.trim();
    let t = t.strip_suffix('%').unwrap_or(t);
    t.parse::<u32>().ok().filter(|p| (1..=100).contains(p))
}

/// `--gpu-mem=SIZE`: GPU memory in MiB, more than 0 (Slurm's memory forms: `40G`, `512M`).
pub fn parse_gpu_mem(s: &str) -> Option<u64> {
    units::parse_memory_mb(s).ok().filter(|&m| m > 0)
}

impl GpuOpts {
    /// Whether any GPU option was given.
    pub fn any(&self) -> bool {
        *self != GpuOpts::default()
    }

    /// The job's GPU request, or `None` when it asks for no GPU. `mem_per_gpu_wins`: the
    /// source of `--mem-per-gpu` is the one that decides the job's memory; `cpus_per_task`:
    /// `-c` was given. Errors are the message to print (without the program name).
    pub fn request(
        &self,
        mem_per_gpu_wins: bool,
        cpus_per_task: bool,
    ) -> Result<Option<GpuRequest>, String> {
        let mut ty: Option<(String, &str)> = None;
        let mut set_type = |t: &Option<String>, from: &'static str| -> Result<(), String> {
            if let Some(t) = t {
                match &ty {
                    Some((u, o)) if u != t => {
                        return Err(format!(
                            "{from} asks for GPUs of type {t} and {o} for type {u}: one job takes one GPU type"
                        ))
                    }
                    _ => ty = Some((t.clone(), from)),
                }
            }
            Ok(())
        };
        let mut gres_gpu: Option<u32> = None;
        let mut mps = None;
        let mut shards = None;
        for item in self.gres.iter().flatten() {
            match item {
                GresItem::Gpu(c) => {
                    set_type(&c.type_name, "--gres")?;
                    gres_gpu = Some(gres_gpu.unwrap_or(0) + c.n);
                }
                GresItem::Mps(t, n) => {
                    set_type(t, "--gres")?;
                    mps = Some(*n);
                }
                GresItem::Shard(t, n) => {
                    set_type(t, "--gres")?;
                    shards = Some(*n);
                }
            }
        }
        for (c, from) in [
            (&self.gpus, "--gpus"),
            (&self.per_node, "--gpus-per-node"),
            (&self.per_task, "--gpus-per-task"),
        ] {
            if let Some(c) = c {
                set_type(&c.type_name, from)?;
            }
        }
        let nz = |v: Option<u32>| v.filter(|&n| n > 0);
        let per_node = match (nz(gres_gpu), nz(self.per_node.as_ref().map(|c| c.n))) {
            (Some(a), Some(b)) if a != b => {
                return Err(format!(
                    "--gres=gpu:{a} and --gpus-per-node={b} ask for different GPUs per node: give one of them"
                ))
            }
            (a, b) => a.or(b),
        };
        let per_job = nz(self.gpus.as_ref().map(|c| c.n));
        let per_task = nz(self.per_task.as_ref().map(|c| c.n));
        let whole = per_node.is_some() || per_job.is_some() || per_task.is_some();
        let mps = mps.filter(|&n| n > 0);
        let shards = shards.filter(|&n| n > 0);
        let share =
            self.gpu_mem.is_some() || self.gpu_share.is_some() || mps.is_some() || shards.is_some();
        if whole && share {
            let w = if gres_gpu.is_some_and(|n| n > 0) {
                "--gres=gpu"
            } else if per_job.is_some() {
                "--gpus"
            } else if per_node.is_some() {
                "--gpus-per-node"
            } else {
                "--gpus-per-task"
            };
            let s = if self.gpu_mem.is_some() {
                "--gpu-mem"
            } else if self.gpu_share.is_some() {
                "--gpu-share"
            } else if mps.is_some() {
                "--gres=mps"
            } else {
                "--gres=shard"
            };
            return Err(format!(
                "{w} (whole GPUs) and {s} (a share of one GPU) cannot be combined: ask for whole GPUs or for a share"
            ));
        }
        if shards.is_some() && (mps.is_some() || self.gpu_mem.is_some() || self.gpu_share.is_some())
        {
            return Err(
                "--gres=shard cannot be combined with --gres=mps, --gpu-mem or --gpu-share: shards are counted, not enforced through MPS"
                    .into(),
            );
        }
        if !whole && !share {
            if self.cpus_per_gpu.is_some() {
                return Err(
                    "--cpus-per-gpu needs GPUs: add --gres=gpu:N or --gpus-per-node=N".into(),
                );
            }
            if self.mem_per_gpu.is_some() && mem_per_gpu_wins {
                return Err(
                    "--mem-per-gpu needs GPUs: add --gres=gpu:N or --gpus-per-node=N".into(),
                );
            }
            return Ok(None);
        }
        if self.cpus_per_gpu.is_some() && cpus_per_task {
            return Err("--cpus-per-gpu is mutually exclusive with --cpus-per-task".into());
        }
        if share && (self.cpus_per_gpu.is_some() || self.mem_per_gpu.is_some() && mem_per_gpu_wins)
        {
            return Err(
                "--cpus-per-gpu and --mem-per-gpu count whole GPUs: with a share of one GPU use -c and --mem"
                    .into(),
            );
        }
        Ok(Some(GpuRequest {
            type_name: ty.map(|t| t.0),
            per_node,
            per_job,
            per_task,
            share: share.then_some(GpuShareRequest {
                mem_mb: self.gpu_mem,
                percent: self.gpu_share,
                mps,
                shards,
            }),
            cpus_per_gpu: self.cpus_per_gpu,
            mem_per_gpu_mb: self.mem_per_gpu.filter(|_| mem_per_gpu_wins).map(|m| m.0),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(o: &GpuOpts) -> Result<Option<GpuRequest>, String> {
        o.request(true, false)
    }

    #[test]
    fn gres_lists_as_slurm_parses_them() {
        assert_eq!(
            parse_gres("gpu:a100:2").unwrap(),
            vec![GresItem::Gpu(Count {
                type_name: Some("a100".into()),
                n: 2
            })]
        );
        assert_eq!(
            parse_gres("gpu").unwrap(),
            vec![GresItem::Gpu(Count {
                type_name: None,
                n: 1
            })]
        );
        assert_eq!(
            parse_gres("gres/gpu:TESLA").unwrap(),
            vec![GresItem::Gpu(Count {
                type_name: Some("tesla".into()),
                n: 1
            })]
        );
        assert_eq!(
            parse_gres("mps:1k,shard:l40s:12").unwrap(),
            vec![
                GresItem::Mps(None, 1024),
                GresItem::Shard(Some("l40s".into()), 12)
            ]
        );
        assert_eq!(parse_gres("none").unwrap(), vec![]);
        for bad in ["", "gpu:a:b:c", "gpu:-1", "gpu:a100:x", ",gpu"] {
            assert_eq!(parse_gres(bad), Err(INVALID_GRES.to_string()), "{bad}");
        }
        assert!(parse_gres("fpga:1").unwrap_err().contains("not fpga"));
    }

    #[test]
    fn counts_shares_and_memory() {
        assert_eq!(
            parse_count("v100:4"),
            Some(Count {
                type_name: Some("v100".into()),
                n: 4
            })
        );
        assert_eq!(parse_count("3").unwrap().n, 3);
        assert!(parse_count("x").is_none());
        assert!(parse_count("a:b:1").is_none());
        assert_eq!(parse_share("50%"), Some(50));
        assert!(parse_share("0").is_none() && parse_share("101").is_none());
        assert_eq!(parse_gpu_mem("40G"), Some(40 * 1024));
        assert!(parse_gpu_mem("0").is_none() && parse_gpu_mem("lots").is_none());
    }

    #[test]
    fn whole_and_share_requests() {
        let o = GpuOpts {
            gres: Some(parse_gres("gpu:a100:2").unwrap()),
            cpus_per_gpu: Some(4),
            ..Default::default()
        };
        let r = req(&o).unwrap().unwrap();
        assert_eq!(r.per_node, Some(2));
        assert_eq!(r.type_name.as_deref(), Some("a100"));
        assert_eq!(r.cpus_per_gpu, Some(4));
        assert_eq!(
            o.request(true, true).unwrap_err(),
            "--cpus-per-gpu is mutually exclusive with --cpus-per-task"
        );
        let o = GpuOpts {
            gpu_mem: Some(40 * 1024),
            gpu_share: Some(50),
            ..Default::default()
        };
        let r = req(&o).unwrap().unwrap();
        assert_eq!(r.share.unwrap().mem_mb, Some(40 * 1024));
        assert_eq!(r.per_node, None);
        let mixed = GpuOpts {
            per_node: Some(Count {
                type_name: None,
                n: 1,
            }),
            gpu_mem: Some(1024),
            ..Default::default()
        };
        assert!(req(&mixed).unwrap_err().starts_with(
            "--gpus-per-node (whole GPUs) and --gpu-mem (a share of one GPU) cannot be combined"
        ));
        let types = GpuOpts {
            gres: Some(parse_gres("gpu:a100:1").unwrap()),
            gpus: Some(parse_count("v100:1").unwrap()),
            ..Default::default()
        };
        assert!(req(&types)
            .unwrap_err()
            .contains("one job takes one GPU type"));
        let none = GpuOpts {
            gres: Some(parse_gres("gpu:0").unwrap()),
            ..Default::default()
        };
        assert_eq!(req(&none), Ok(None));
        let lone = GpuOpts {
            mem_per_gpu: Some((1024, 2)),
            ..Default::default()
        };
        assert!(req(&lone)
            .unwrap_err()
            .starts_with("--mem-per-gpu needs GPUs"));
        let sh = GpuOpts {
            gres: Some(parse_gres("shard:2,mps:50").unwrap()),
            ..Default::default()
        };
        assert!(req(&sh)
            .unwrap_err()
            .starts_with("--gres=shard cannot be combined"));
    }
}
