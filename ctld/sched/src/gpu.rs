//! GPUs in placement: which GPUs of a node a job gets, whole or as a share.
//!
//! Why the rules are what they are:
//!
//! * **Whole and shared never mix on one GPU.** A GPU is either held whole by one job or
//!   shared by fractional jobs (Slurm allocates a GPU as gres/gpu or as gres/mps|shard, never
//!   both), so a whole-GPU job only ever takes GPUs nobody holds.
//! * **Fractional jobs are best-fit packed onto GPUs already shared.** A share goes to the
//!   shared GPU it fills most tightly (least compute and memory left after it), on whichever
//!   node of the partition has it; only when no shared GPU has room is a free GPU opened for
//!   sharing (the one it fills best). Free GPUs so stay free for whole-GPU jobs, against the
//!   fragmentation users of Slurm's shards complain of.
//! * **Under backfill, shares go where they add no busy time.** The planner knows when the
//!   holders of a GPU end; among the shared GPUs a share fits, it prefers one whose holders
//!   outlast it (then the tightest fit), so a GPU is not kept busy by a late co-tenant while
//!   another holding longer jobs had room. Placement now, without ends, uses the fit alone.
//! * **MPS serializes users.** NVIDIA's MPS runs one server per user on a GPU; clients of
//!   another user wait. So an MPS-shared GPU takes jobs of its current user only, unless the
//!   partition opts into multi-user MPS (`GpuSharing=multiuser`). Shards are not MPS (Slurm's
//!   gres/shard does not fence anything) and are shared by any users, but never on a GPU
//!   whose share is enforced by MPS, nor the other way round.
//! * **GPUs close together.** Whole GPUs are taken from one group of GPUs sharing the same
//!   close cores (`Cores=` in gres.conf, NVML affinity) when one group can hold them all:
//!   the smallest such group, so larger groups stay whole. gsnoded then binds the job's CPUs
//!   near its GPUs.
//!
//! A share of one GPU is per node (as Slurm without `MULTIPLE_SHARING_GRES_PJ`): a request
//! that does not fit on one GPU is not split.

use gsched_proto::gpu::{GpuAlloc, GpuDevice, GpuShare, GpuShareRequest};
use gsched_proto::job::JobId;

/// One GPU of a node as the scheduler sees it: the device and who holds it now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuView {
    pub device: GpuDevice,
    /// Jobs holding this GPU now (running or being killed).
    pub holds: Vec<GpuHold>,
}

/// A job's hold on one GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuHold {
    pub job_id: JobId,
    /// The job's user (MPS shares one GPU among one user's jobs unless the partition allows
    /// several users).
    pub user: u32,
    /// `None`: the whole GPU.
    pub share: Option<GpuShare>,
}

/// What a job needs in GPUs on each node it runs on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuNeed {
    /// Only GPUs of this type (compared without case); `None` = any.
    pub type_name: Option<String>,
    pub amount: GpuAmount,
    /// The job's user.
    pub user: u32,
}

/// Whole GPUs or a share of one, per node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GpuAmount {
    /// Whole GPUs on each node: `per_node`, and at least `per_task` for each task placed there.
    Whole { per_node: u32, per_task: u32 },
    /// A share of one GPU on each node.
    Share(GpuShareRequest),
}

impl GpuNeed {
    /// Whole GPUs the job takes on a node where it places `tasks` tasks (0 for a share).
    pub fn whole_count(&self, tasks: u32) -> u32 {
        match &self.amount {
            GpuAmount::Whole { per_node, per_task } => {
                (*per_node).max(per_task.saturating_mul(tasks))
            }
            GpuAmount::Share(_) => 0,
        }
    }

    fn type_ok(&self, d: &GpuDevice) -> bool {
        self.type_name
            .as_deref()
            .is_none_or(|t| d.type_name.eq_ignore_ascii_case(t))
    }
}

/// How a partition lets jobs share its GPUs (`GpuSharing=`, `GpuOverSubscribe=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GpuRules {
    /// `GpuSharing=multiuser`: jobs of several users may share one GPU through MPS (by
    /// default an MPS-shared GPU takes one user's jobs only, MPS serializing users).
    pub multiuser: bool,
    /// `GpuOverSubscribe=`: what the compute shares of one GPU may add up to, in percent of
    /// the GPU (100: shares are reservations; 200: twice the GPU, MPS's percentage being a
    /// cap that reserves nothing). GPU memory and shards are never oversubscribed. Values
    /// below 100 count as 100 ([`GpuRules::compute_limit`]).
    pub compute_pct: u32,
}

impl GpuRules {
    /// What the compute shares of one GPU may add up to, percent (at least the GPU).
    fn compute_limit(self) -> u32 {
        self.compute_pct.max(100)
    }
}

impl Default for GpuRules {
    fn default() -> Self {
        GpuRules {
            multiuser: false,
            compute_pct: 100,
        }
    }
}

/// What is in use on one GPU (over a time window, for the planner).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct GpuUse {
    pub(crate) holds: u32,
    pub(crate) whole: bool,
    pub(crate) mem_mb: u64,
    pub(crate) percent: u32,
    pub(crate) shards: u64,
    /// Some share is enforced through MPS.
    pub(crate) mps: bool,
    /// Some share is a shard.
    pub(crate) shard: bool,
    /// Users of the MPS shares.
    pub(crate) users: Vec<u32>,
    /// For the planner: the latest end of the holds, and the end of the window asked about
    /// (`None` when ends are not known: placement now, outside the planner).
    pub(crate) until: i64,
    pub(crate) window_end: Option<i64>,
}

impl GpuUse {
    /// Seconds of the window a share placed here would keep the GPU busy beyond what its
    /// holders already do (0 when they outlast the window, or when ends are not known).
    fn extends_by(&self) -> i64 {
        self.window_end.map_or(0, |e| (e - self.until).max(0))
    }

    pub(crate) fn add(&mut self, user: u32, share: Option<&GpuShare>) {
        self.holds += 1;
        match share {
            None => self.whole = true,
            Some(s) if s.mps => {
                self.mps = true;
                self.mem_mb = self.mem_mb.saturating_add(s.mem_mb);
                self.percent = self.percent.saturating_add(s.percent);
                if !self.users.contains(&user) {
                    self.users.push(user);
                }
            }
            Some(s) => {
                self.shard = true;
                self.shards = self.shards.saturating_add(s.shards);
            }
        }
    }

    fn free(&self) -> bool {
        self.holds == 0
    }
}

/// What is in use on each GPU of `gpus` now.
pub(crate) fn uses_now(gpus: &[GpuView]) -> Vec<GpuUse> {
    gpus.iter()
        .map(|g| {
            let mut u = GpuUse::default();
            for h in &g.holds {
                u.add(h.user, h.share.as_ref());
            }
            u
        })
        .collect()
}

fn div_ceil(a: u64, b: u64) -> u64 {
    a.div_ceil(b.max(1))
}

/// The share `r` comes to on GPU `d`, or `None` if it can never fit there.
///
/// `--gpu-mem` alone takes the same fraction of the compute (40G of an 80G card: 50%);
/// `--gpu-share` or `--gres=mps:N` alone takes the same fraction of the memory (on a GPU of
/// unknown memory: no memory limit); `--gres=mps:N` is `N` of the GPU's MPS count (100 when
/// not configured); shards count against the GPU's shard count, which must be configured.
/// Where the partition oversubscribes compute (`rules.compute_pct` above 100), the GPU counts
/// as that much compute over the same memory, so the fractions are of that: with
/// `GpuOverSubscribe=2`, `--gpu-share=60` alone takes 30% of the memory and `--gpu-mem=40G`
/// of 80G alone a compute limit of 100%.
pub fn share_on(d: &GpuDevice, r: &GpuShareRequest, rules: GpuRules) -> Option<GpuShare> {
    let scale = u64::from(rules.compute_limit());
    if d.mig {
        return None;
    }
    if let Some(sh) = r.shards {
        if d.shard_count == 0 || sh == 0 || sh > d.shard_count {
            return None;
        }
        return Some(GpuShare {
            mem_mb: 0,
            percent: 100,
            shards: sh,
            mps: false,
        });
    }
    let mps_pct = match r.mps {
        Some(m) => {
            let count = if d.mps_count == 0 { 100 } else { d.mps_count };
            if m == 0 || m > count {
                return None;
            }
            Some(div_ceil(m * 100, count) as u32)
        }
        None => None,
    };
    let percent = r.percent.or(mps_pct);
    let mem_mb = match r.mem_mb {
        Some(m) => {
            if d.memory_mb == 0 || m > d.memory_mb {
                return None;
            }
            m
        }
        None => (d.memory_mb * u64::from(percent.unwrap_or(100).min(100)) / scale).min(d.memory_mb),
    };
    let percent = match percent {
        Some(p) => p,
        None if d.memory_mb > 0 => div_ceil(mem_mb * scale, d.memory_mb).clamp(1, 100) as u32,
        None => 100,
    };
    if percent == 0 || percent > 100 {
        return None;
    }
    Some(GpuShare {
        mem_mb,
        percent,
        shards: 0,
        mps: true,
    })
}

/// Whether `share` fits on GPU `d` with `u` in use, for `user`.
fn share_fits(d: &GpuDevice, u: &GpuUse, share: &GpuShare, user: u32, rules: GpuRules) -> bool {
    if u.whole {
        return false;
    }
    if share.mps {
        !u.shard
            && u.percent.saturating_add(share.percent) <= rules.compute_limit()
            && (d.memory_mb == 0 || u.mem_mb.saturating_add(share.mem_mb) <= d.memory_mb)
            && (rules.multiuser || u.users.iter().all(|&x| x == user))
    } else {
        !u.mps && u.shards.saturating_add(share.shards) <= d.shard_count
    }
}

/// How tightly `share` fills GPU `d` (lower is tighter): compute (of what the partition
/// lets the shares add up to), memory and shards left after it, in per-mille of the GPU.
fn leftover(d: &GpuDevice, u: &GpuUse, share: &GpuShare, rules: GpuRules) -> u64 {
    if share.mps {
        let pct = u64::from(rules.compute_limit())
            .saturating_sub(u64::from(u.percent + share.percent))
            * 10;
        let mem = (d.memory_mb.saturating_sub(u.mem_mb + share.mem_mb) * 1000)
            .checked_div(d.memory_mb)
            .unwrap_or(0);
        pct + mem
    } else {
        d.shard_count.saturating_sub(u.shards + share.shards) * 1000 / d.shard_count.max(1)
    }
}

/// The GPU a share of `need` goes to, and the share: best fit among the GPUs already
/// shared, else the free GPU it fills best (see the module docs).
fn pick_share(
    gpus: &[GpuView],
    uses: &[GpuUse],
    need: &GpuNeed,
    r: &GpuShareRequest,
    rules: GpuRules,
) -> Option<(usize, GpuShare)> {
    gpus.iter()
        .zip(uses)
        .enumerate()
        .filter(|(_, (g, _))| need.type_ok(&g.device))
        .filter_map(|(k, (g, u))| {
            let s = share_on(&g.device, r, rules)?;
            share_fits(&g.device, u, &s, need.user, rules).then(|| {
                let key = (
                    u.free(),
                    u.extends_by(),
                    leftover(&g.device, u, &s, rules),
                    g.device.index,
                );
                (key, k, s)
            })
        })
        .min_by(|a, b| a.0.cmp(&b.0))
        .map(|(_, k, s)| (k, s))
}

/// How well a share of `need` packs on a node with these GPUs (lower is better): whether it
/// must open a free GPU, then how little it leaves on the GPU it goes to. `None` if it does
/// not fit; also `None` for whole-GPU requests (they take no part in packing).
pub(crate) fn pack_key(
    gpus: &[GpuView],
    uses: &[GpuUse],
    need: &GpuNeed,
    rules: GpuRules,
) -> Option<(bool, i64, u64)> {
    let GpuAmount::Share(r) = &need.amount else {
        return None;
    };
    let (k, s) = pick_share(gpus, uses, need, r, rules)?;
    let u = &uses[k];
    Some((
        u.free(),
        u.extends_by(),
        leftover(&gpus[k].device, u, &s, rules),
    ))
}

/// Free GPUs of the right type, by position.
fn free_whole(gpus: &[GpuView], uses: &[GpuUse], need: &GpuNeed) -> Vec<usize> {
    gpus.iter()
        .zip(uses)
        .enumerate()
        .filter(|(_, (g, u))| u.free() && need.type_ok(&g.device))
        .map(|(k, _)| k)
        .collect()
}

/// `k` whole GPUs among `free`: from the smallest group of GPUs with the same close cores
/// that holds them all, else the first in index order.
fn pick_whole(gpus: &[GpuView], free: &[usize], k: usize) -> Option<Vec<usize>> {
    if free.len() < k {
        return None;
    }
    let mut groups: Vec<(&[u32], Vec<usize>)> = Vec::new();
    for &i in free {
        let cores = gpus[i].device.cores.as_slice();
        match groups.iter_mut().find(|g| g.0 == cores) {
            Some(g) => g.1.push(i),
            None => groups.push((cores, vec![i])),
        }
    }
    let best = groups
        .iter()
        .filter(|g| g.1.len() >= k)
        .min_by_key(|g| (g.1.len(), g.1[0]));
    Some(match best {
        Some(g) => g.1[..k].to_vec(),
        None => free[..k].to_vec(),
    })
}

/// How many tasks of a job needing `need` the GPUs of a node can take, with `uses` in use:
/// `u32::MAX` when the GPUs do not bound it, 0 when the node cannot take the job.
pub(crate) fn task_cap(gpus: &[GpuView], uses: &[GpuUse], need: &GpuNeed, rules: GpuRules) -> u32 {
    match &need.amount {
        GpuAmount::Whole { per_node, per_task } => {
            let free = free_whole(gpus, uses, need).len() as u32;
            if free < *per_node || free == 0 && *per_task > 0 {
                0
            } else if *per_task > 0 {
                free / per_task
            } else {
                u32::MAX
            }
        }
        GpuAmount::Share(r) => {
            if pick_share(gpus, uses, need, r, rules).is_some() {
                u32::MAX
            } else {
                0
            }
        }
    }
}

/// The GPUs a job needing `need` gets on a node where it places `tasks` tasks, `uses` being
/// in use; `None` if they are not there.
pub(crate) fn assign(
    gpus: &[GpuView],
    uses: &[GpuUse],
    need: &GpuNeed,
    tasks: u32,
    rules: GpuRules,
) -> Option<Vec<GpuAlloc>> {
    match &need.amount {
        GpuAmount::Whole { .. } => {
            let k = need.whole_count(tasks) as usize;
            let free = free_whole(gpus, uses, need);
            let picked = pick_whole(gpus, &free, k)?;
            let mut v: Vec<GpuAlloc> = picked
                .into_iter()
                .map(|i| GpuAlloc {
                    index: gpus[i].device.index,
                    share: None,
                })
                .collect();
            v.sort_by_key(|a| a.index);
            Some(v)
        }
        GpuAmount::Share(r) => {
            let (k, s) = pick_share(gpus, uses, need, r, rules)?;
            Some(vec![GpuAlloc {
                index: gpus[k].device.index,
                share: Some(s),
            }])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE: GpuRules = GpuRules {
        multiuser: false,
        compute_pct: 100,
    };
    const MULTI: GpuRules = GpuRules {
        multiuser: true,
        compute_pct: 100,
    };

    pub(crate) fn dev(index: u32, ty: &str, mem_gb: u64, cores: &[u32]) -> GpuDevice {
        GpuDevice {
            index,
            type_name: ty.into(),
            file: format!("/dev/nvidia{index}"),
            major: None,
            minor: None,
            uuid: None,
            memory_mb: mem_gb * 1024,
            cores: cores.to_vec(),
            mig: false,
            mps_count: 0,
            shard_count: 0,
        }
    }

    fn view(devs: Vec<GpuDevice>) -> Vec<GpuView> {
        devs.into_iter()
            .map(|device| GpuView {
                device,
                holds: Vec::new(),
            })
            .collect()
    }

    fn share_need(mem_gb: Option<u64>, pct: Option<u32>, user: u32) -> GpuNeed {
        GpuNeed {
            type_name: None,
            amount: GpuAmount::Share(GpuShareRequest {
                mem_mb: mem_gb.map(|g| g * 1024),
                percent: pct,
                ..Default::default()
            }),
            user,
        }
    }

    #[test]
    fn memory_share_takes_the_same_fraction_of_compute() {
        let d = dev(0, "a100", 80, &[]);
        let s = share_on(
            &d,
            &GpuShareRequest {
                mem_mb: Some(40 * 1024),
                ..Default::default()
            },
            ONE,
        )
        .unwrap();
        assert_eq!((s.mem_mb, s.percent, s.mps), (40 * 1024, 50, true));
        let s = share_on(
            &d,
            &GpuShareRequest {
                percent: Some(25),
                ..Default::default()
            },
            ONE,
        )
        .unwrap();
        assert_eq!((s.mem_mb, s.percent), (20 * 1024, 25));
        let s = share_on(
            &d,
            &GpuShareRequest {
                mps: Some(200),
                ..Default::default()
            },
            ONE,
        );
        assert_eq!(s, None, "200 MPS units of a GPU of 100");
        let mut d2 = d.clone();
        d2.mps_count = 1000;
        let s = share_on(
            &d2,
            &GpuShareRequest {
                mps: Some(200),
                ..Default::default()
            },
            ONE,
        )
        .unwrap();
        assert_eq!(s.percent, 20);
        assert_eq!(
            share_on(
                &d,
                &GpuShareRequest {
                    mem_mb: Some(81 * 1024),
                    ..Default::default()
                },
                ONE
            ),
            None
        );
        assert_eq!(
            share_on(
                &d,
                &GpuShareRequest {
                    shards: Some(1),
                    ..Default::default()
                },
                ONE
            ),
            None,
            "no shards configured"
        );
    }

    #[test]
    fn shares_pack_onto_the_shared_gpu_tightest_first() {
        let mut g = view(vec![
            dev(0, "a100", 80, &[]),
            dev(1, "a100", 80, &[]),
            dev(2, "a100", 80, &[]),
        ]);
        g[1].holds.push(GpuHold {
            job_id: 1,
            user: 7,
            share: Some(GpuShare {
                mem_mb: 20 * 1024,
                percent: 25,
                shards: 0,
                mps: true,
            }),
        });
        g[2].holds.push(GpuHold {
            job_id: 2,
            user: 7,
            share: Some(GpuShare {
                mem_mb: 60 * 1024,
                percent: 75,
                shards: 0,
                mps: true,
            }),
        });
        let u = uses_now(&g);
        // 20G fits on GPU 2 exactly: tighter than GPU 1, and GPU 0 stays free.
        let a = assign(&g, &u, &share_need(Some(20), None, 7), 1, ONE).unwrap();
        assert_eq!(a[0].index, 2);
        // 30G only fits on GPU 1.
        let a = assign(&g, &u, &share_need(Some(30), None, 7), 1, ONE).unwrap();
        assert_eq!(a[0].index, 1);
        // Another user: not on user 7's MPS GPUs unless multi-user.
        let a = assign(&g, &u, &share_need(Some(20), None, 8), 1, ONE).unwrap();
        assert_eq!(a[0].index, 0);
        let a = assign(&g, &u, &share_need(Some(20), None, 8), 1, MULTI).unwrap();
        assert_eq!(a[0].index, 2);
        // Whole GPUs: only the free one.
        let whole = GpuNeed {
            type_name: None,
            amount: GpuAmount::Whole {
                per_node: 1,
                per_task: 0,
            },
            user: 7,
        };
        assert_eq!(task_cap(&g, &u, &whole, ONE), u32::MAX);
        let a = assign(&g, &u, &whole, 1, ONE).unwrap();
        assert_eq!(
            a,
            vec![GpuAlloc {
                index: 0,
                share: None
            }]
        );
        let two = GpuNeed {
            amount: GpuAmount::Whole {
                per_node: 2,
                per_task: 0,
            },
            ..whole
        };
        assert_eq!(task_cap(&g, &u, &two, ONE), 0);
    }

    #[test]
    fn oversubscribed_compute_packs_more_shares_but_never_more_memory() {
        let mut g = view(vec![dev(0, "a100", 80, &[]), dev(1, "a100", 80, &[])]);
        let hold = |job_id, pct, mem_gb: u64| GpuHold {
            job_id,
            user: 7,
            share: Some(GpuShare {
                mem_mb: mem_gb * 1024,
                percent: pct,
                shards: 0,
                mps: true,
            }),
        };
        g[1].holds = vec![hold(1, 60, 10), hold(2, 40, 10)];
        let u = uses_now(&g);
        let twice = GpuRules {
            multiuser: false,
            compute_pct: 200,
        };
        // GPU 1's compute is all reserved: a 50% share opens GPU 0, unless the partition
        // lets the shares add up to twice the GPU.
        let half = share_need(None, Some(50), 7);
        assert_eq!(assign(&g, &u, &half, 1, ONE).unwrap()[0].index, 0);
        let a = assign(&g, &u, &half, 1, twice).unwrap();
        assert_eq!(a[0].index, 1);
        // The job's own limit stays its share; its memory is half its share's worth, the
        // GPU counting as two GPUs' worth of compute over the same memory.
        let sh = a[0].share.clone().unwrap();
        assert_eq!((sh.percent, sh.mem_mb), (50, 20 * 1024));
        let mem_only = share_on(
            &g[0].device,
            &GpuShareRequest {
                mem_mb: Some(40 * 1024),
                ..Default::default()
            },
            twice,
        )
        .unwrap();
        assert_eq!(mem_only.percent, 100);
        // Past twice the GPU: the free GPU again.
        g[1].holds.push(hold(3, 90, 10));
        let u = uses_now(&g);
        assert_eq!(assign(&g, &u, &half, 1, twice).unwrap()[0].index, 0);
        // Memory is never oversubscribed: 30 GB left on GPU 1, whatever the compute.
        g[1].holds.truncate(2);
        g[1].holds[0] = hold(1, 10, 40);
        let u = uses_now(&g);
        let mem = share_need(Some(40), Some(10), 7);
        assert_eq!(assign(&g, &u, &mem, 1, twice).unwrap()[0].index, 0);
        let mem = share_need(Some(30), Some(10), 7);
        assert_eq!(assign(&g, &u, &mem, 1, twice).unwrap()[0].index, 1);
    }

    #[test]
    fn whole_gpus_come_from_one_core_group() {
        let g = view(vec![
            dev(0, "a100", 80, &[0, 1]),
            dev(1, "a100", 80, &[2, 3]),
            dev(2, "a100", 80, &[2, 3]),
            dev(3, "a100", 80, &[0, 1]),
            dev(4, "a100", 80, &[0, 1]),
        ]);
        let u = uses_now(&g);
        let need = |n| GpuNeed {
            type_name: None,
            amount: GpuAmount::Whole {
                per_node: n,
                per_task: 0,
            },
            user: 0,
        };
        let idx = |v: Vec<GpuAlloc>| v.iter().map(|a| a.index).collect::<Vec<_>>();
        assert_eq!(idx(assign(&g, &u, &need(2), 1, ONE).unwrap()), vec![1, 2]);
        assert_eq!(
            idx(assign(&g, &u, &need(3), 1, ONE).unwrap()),
            vec![0, 3, 4]
        );
        assert_eq!(
            idx(assign(&g, &u, &need(4), 1, ONE).unwrap()),
            vec![0, 1, 2, 3]
        );
        let typed = GpuNeed {
            type_name: Some("V100".into()),
            ..need(1)
        };
        assert_eq!(task_cap(&g, &u, &typed, ONE), 0);
    }

    #[test]
    fn shards_and_mps_never_share_a_gpu() {
        let mut d = dev(0, "a100", 80, &[]);
        d.shard_count = 4;
        let mut g = view(vec![d]);
        g[0].holds.push(GpuHold {
            job_id: 1,
            user: 1,
            share: Some(GpuShare {
                mem_mb: 0,
                percent: 100,
                shards: 3,
                mps: false,
            }),
        });
        let u = uses_now(&g);
        assert_eq!(task_cap(&g, &u, &share_need(Some(10), None, 1), ONE), 0);
        let shard = |n| GpuNeed {
            type_name: None,
            amount: GpuAmount::Share(GpuShareRequest {
                shards: Some(n),
                ..Default::default()
            }),
            user: 2,
        };
        assert_eq!(task_cap(&g, &u, &shard(1), ONE), u32::MAX);
        assert_eq!(task_cap(&g, &u, &shard(2), ONE), 0);
    }
}
