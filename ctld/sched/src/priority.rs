//! Slurm's multifactor priority (`PriorityType=priority/multifactor`) as pure functions.
//!
//! The controller gathers the inputs (ages, usage, shares, sizes, the config's weights) and
//! stores the result in [`crate::QueuedJob::priority`]; [`decide`](crate::decide) only sorts by
//! it. Keeping the formula here, without any state, lets the simulator and `gscontrol`'s
//! breakdown use exactly the numbers the scheduler used.
//!
//! The formula is Slurm's (`priority_multifactor.c`, `_get_priority_internal`):
//!
//! ```text
//! priority = W_age * age + W_fs * fairshare + W_size * job_size
//!          + W_part * partition + W_qos * qos - nice
//! ```
//!
//! each factor in `[0, 1]`, the sum raised to at least 1 (0 is reserved for held jobs), capped
//! at `u32::MAX` and truncated to an integer.

/// The `PriorityWeight*` settings, `PriorityMaxAge` and `PriorityFavorSmall`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PriorityWeights {
    pub age: u32,
    pub fairshare: u32,
    pub job_size: u32,
    pub partition: u32,
    pub qos: u32,
    /// `PriorityMaxAge` in seconds: the age at which the age factor reaches 1 (default 7 days).
    pub max_age_secs: i64,
    /// `PriorityFavorSmall=YES`: smaller jobs get the larger job size factor.
    pub favor_small: bool,
}

impl Default for PriorityWeights {
    /// Slurm's defaults: every weight 0, `PriorityMaxAge=7-0`, `PriorityFavorSmall=NO`.
    fn default() -> Self {
        PriorityWeights {
            age: 0,
            fairshare: 0,
            job_size: 0,
            partition: 0,
            qos: 0,
            max_age_secs: 7 * 24 * 3600,
            favor_small: false,
        }
    }
}

/// What one job's priority depends on.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PriorityInputs {
    /// When the job became eligible (submit time, or its begin time when later); `None` while
    /// it is not eligible (age factor 0).
    pub eligible_time: Option<i64>,
    /// Nodes and CPUs the job asks for (at least).
    pub nodes: u32,
    pub cpus: u32,
    /// Nodes and CPUs in the cluster.
    pub cluster_nodes: u32,
    pub cluster_cpus: u32,
    /// The association's fair-share factor (`0..=1`): [`classic_fairshare`]'s
    /// [`FairShare::factor`], or [`fairshare_factor`] of its effective usage and shares.
    pub fairshare: f64,
    /// The partition's `PriorityJobFactor` and the largest of all partitions'.
    pub partition_factor: u32,
    pub partition_factor_max: u32,
    /// The QOS's priority and the largest of all QOS'.
    pub qos_priority: u32,
    pub qos_priority_max: u32,
    /// `--nice` (negative only for administrators).
    pub nice: i32,
}

/// A job's priority and its weighted parts (what `sprio` shows).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PriorityBreakdown {
    pub total: u32,
    pub age: f64,
    pub fairshare: f64,
    pub job_size: f64,
    pub partition: f64,
    pub qos: f64,
    /// Subtracted from the sum.
    pub nice: i32,
}

/// Age factor: `min(1, (now - eligible) / PriorityMaxAge)`, 0 before eligibility.
pub fn age_factor(eligible_time: Option<i64>, max_age_secs: i64, now: i64) -> f64 {
    let Some(t) = eligible_time else {
        return 0.0;
    };
    let age = now.saturating_sub(t);
    if age <= 0 {
        0.0
    } else if max_age_secs <= 0 || age >= max_age_secs {
        1.0
    } else {
        age as f64 / max_age_secs as f64
    }
}

/// Classic fair-share factor: `2^(-usage / shares)`; 0 without shares.
pub fn fairshare_factor(usage: f64, shares: f64) -> f64 {
    if shares <= 0.0 || shares.is_nan() || usage.is_nan() {
        return 0.0;
    }
    (-(usage.max(0.0)) / shares).exp2()
}

/// Job size factor, as Slurm computes it without `PriorityFlags=SMALL_RELATIVE_TO_TIME`: the
/// mean of the job's share of the cluster's nodes and of its CPUs (or one minus each, when
/// favouring small jobs); only the node share when the CPU count is 0.
pub fn job_size_factor(
    nodes: u32,
    cpus: u32,
    cluster_nodes: u32,
    cluster_cpus: u32,
    favor_small: bool,
) -> f64 {
    if cluster_nodes == 0 {
        return 0.0;
    }
    let cn = cluster_nodes as f64;
    let cc = cluster_cpus.max(1) as f64;
    let mut f = if favor_small {
        (cn - nodes as f64) / cn
    } else {
        nodes as f64 / cn
    };
    if cpus > 0 {
        f += if favor_small {
            (cc - cpus as f64) / cc
        } else {
            cpus as f64 / cc
        };
        f /= 2.0;
    }
    f.clamp(0.0, 1.0)
}

fn ratio(v: u32, max: u32) -> f64 {
    if max == 0 {
        0.0
    } else {
        (v as f64 / max as f64).clamp(0.0, 1.0)
    }
}

/// The job's multifactor priority at `now`, with its weighted parts.
pub fn multifactor_priority(
    inputs: &PriorityInputs,
    weights: &PriorityWeights,
    now: i64,
) -> PriorityBreakdown {
    let i = inputs;
    let age = age_factor(i.eligible_time, weights.max_age_secs, now) * weights.age as f64;
    let fairshare = i.fairshare.clamp(0.0, 1.0) * weights.fairshare as f64;
    let job_size = job_size_factor(
        i.nodes,
        i.cpus,
        i.cluster_nodes,
        i.cluster_cpus,
        weights.favor_small,
    ) * weights.job_size as f64;
    let partition = ratio(i.partition_factor, i.partition_factor_max) * weights.partition as f64;
    let qos = ratio(i.qos_priority, i.qos_priority_max) * weights.qos as f64;
    let sum = age + fairshare + job_size + partition + qos - i.nice as f64;
    // Priority 0 is reserved for held jobs; `as` saturates at u32::MAX and truncates.
    let total = sum.max(1.0) as u32;
    PriorityBreakdown {
        total,
        age,
        fairshare,
        job_size,
        partition,
        qos,
        nice: i.nice,
    }
}

/// One node of the fair-share tree: an account, or a user's association in an account.
/// Node 0 is the root; every other node's parent comes before it in the slice.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FsNode {
    pub parent: Option<usize>,
    /// `Fairshare=`: shares among the parent's children.
    pub shares: u32,
    /// The node's own decayed usage (users' associations; accounts' own is usually 0).
    pub usage: f64,
}

/// A node's fair-share numbers (what `sshare` shows).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct FairShare {
    /// Slurm's `shares_norm`: the node's fraction of the whole machine, the product along
    /// its path of its shares over its siblings' shares.
    pub shares_norm: f64,
    /// Slurm's `usage_norm`: its usage (with its children's) over all usage.
    pub usage_norm: f64,
    /// Slurm's `usage_efctv`.
    pub usage_efctv: f64,
    /// `2^(-usage_efctv / shares_norm)`.
    pub factor: f64,
}

/// Slurm's classic fair-share (`PriorityFlags` without `FAIR_TREE`) over the whole tree.
///
/// Effective usage is the node's normalized usage, pulled towards its parent's effective
/// usage by its share of its siblings: `UE = U + (UE_parent - U) * S / S_siblings`; children
/// of the root take their normalized usage as it is. The factor is
/// [`fairshare_factor`]`(UE, shares_norm)`. So a user who used nothing in an account that used
/// a lot still ranks below a user of an idle account. This is the algorithm Slurm documents
/// as "classic" (`priority_multifactor.c`); the fair tree algorithm is not implemented.
pub fn classic_fairshare(nodes: &[FsNode]) -> Vec<FairShare> {
    let n = nodes.len();
    let mut total = vec![0.0f64; n];
    for (i, node) in nodes.iter().enumerate() {
        total[i] = node.usage.max(0.0);
    }
    // Children come after their parents: sum usage bottom-up.
    for i in (1..n).rev() {
        if let Some(p) = nodes[i].parent.filter(|&p| p < i) {
            total[p] += total[i];
        }
    }
    let mut siblings = vec![0u64; n];
    for node in nodes.iter().skip(1) {
        if let Some(p) = node.parent.filter(|&p| p < n) {
            siblings[p] += u64::from(node.shares);
        }
    }
    let root_usage = total.first().copied().unwrap_or(0.0);
    let mut out = vec![FairShare::default(); n];
    if n == 0 {
        return out;
    }
    out[0] = FairShare {
        shares_norm: 1.0,
        usage_norm: if root_usage > 0.0 { 1.0 } else { 0.0 },
        usage_efctv: if root_usage > 0.0 { 1.0 } else { 0.0 },
        factor: fairshare_factor(0.0, 1.0),
    };
    for i in 1..n {
        let Some(p) = nodes[i].parent.filter(|&p| p < i) else {
            continue;
        };
        let part = if siblings[p] == 0 {
            0.0
        } else {
            f64::from(nodes[i].shares) / siblings[p] as f64
        };
        let shares_norm = out[p].shares_norm * part;
        let usage_norm = if root_usage > 0.0 {
            total[i] / root_usage
        } else {
            0.0
        };
        let usage_efctv = if p == 0 {
            usage_norm
        } else {
            usage_norm + (out[p].usage_efctv - usage_norm) * part
        };
        out[i] = FairShare {
            shares_norm,
            usage_norm,
            usage_efctv,
            factor: fairshare_factor(usage_efctv, shares_norm),
        };
    }
    out
}

/// Usage left of `usage` after `elapsed_secs` with a half-life of `half_life_secs`
/// (`PriorityDecayHalfLife`): `usage * 2^(-elapsed / half_life)`. A half-life of 0 or less
/// means no decay (Slurm then relies on `PriorityUsageResetPeriod`).
///
/// Slurm applies `(1 - ln 2 / half_life)^elapsed`, the same curve to within 0.01 % for any
/// half-life of an hour or more; this form is exact and composes: decaying by `a` then `b`
/// equals decaying by `a + b`.
pub fn decay(usage: f64, elapsed_secs: i64, half_life_secs: i64) -> f64 {
    if half_life_secs <= 0 || elapsed_secs <= 0 {
        return usage;
    }
    usage * (-(elapsed_secs as f64) / half_life_secs as f64).exp2()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn age() {
        let day = 86_400;
        // Half of a 7-day PriorityMaxAge: 3.5 days.
        assert!(close(age_factor(Some(0), 7 * day, 7 * day / 2), 0.5));
        assert!(close(age_factor(Some(0), 7 * day, 14 * day), 1.0));
        assert!(close(age_factor(Some(100), 7 * day, 50), 0.0));
        assert!(close(age_factor(None, 7 * day, 50), 0.0));
    }

    #[test]
    fn fairshare() {
        // Usage equal to shares gives 1/2, twice the shares 1/4, none 1.
        assert!(close(fairshare_factor(0.2, 0.2), 0.5));
        assert!(close(fairshare_factor(0.4, 0.2), 0.25));
        assert!(close(fairshare_factor(0.0, 0.2), 1.0));
        assert!(close(fairshare_factor(0.5, 0.0), 0.0));
    }

    #[test]
    fn job_size() {
        // 2 of 10 nodes and 16 of 320 CPUs: (0.2 + 0.05) / 2 = 0.125; favouring small
        // jobs: (0.8 + 0.95) / 2 = 0.875.
        assert!(close(job_size_factor(2, 16, 10, 320, false), 0.125));
        assert!(close(job_size_factor(2, 16, 10, 320, true), 0.875));
        assert!(close(job_size_factor(5, 0, 10, 320, false), 0.5));
    }

    #[test]
    fn weighted_sum_truncates() {
        let w = PriorityWeights {
            age: 1000,
            fairshare: 10_000,
            job_size: 1000,
            partition: 1000,
            qos: 2000,
            max_age_secs: 1000,
            favor_small: true,
        };
        let i = PriorityInputs {
            eligible_time: Some(0),
            nodes: 2,
            cpus: 16,
            cluster_nodes: 10,
            cluster_cpus: 320,
            fairshare: fairshare_factor(0.2, 0.2),
            partition_factor: 1,
            partition_factor_max: 4,
            qos_priority: 10,
            qos_priority_max: 30,
            nice: 100,
        };
        // age 250/1000 -> 250; fairshare 0.5 -> 5000; size 0.875 -> 875; partition 1/4 ->
        // 250; qos 1/3 -> 666.67; minus nice 100: 6941.67 -> 6941.
        let b = multifactor_priority(&i, &w, 250);
        assert!(close(b.age, 250.0));
        assert!(close(b.fairshare, 5000.0));
        assert!(close(b.job_size, 875.0));
        assert!(close(b.partition, 250.0));
        assert!((b.qos - 666.666_666_666).abs() < 1e-6);
        assert_eq!(b.total, 6941);
        // A nice larger than the sum still leaves 1.
        let b = multifactor_priority(
            &PriorityInputs {
                nice: 1_000_000,
                ..i
            },
            &w,
            250,
        );
        assert_eq!(b.total, 1);
        // All weights 0: priority 1.
        let b = multifactor_priority(&i, &PriorityWeights::default(), 250);
        assert_eq!(b.total, 1);
        // Huge weights saturate.
        let big = PriorityWeights {
            age: u32::MAX,
            fairshare: u32::MAX,
            job_size: u32::MAX,
            partition: u32::MAX,
            qos: u32::MAX,
            ..w
        };
        assert_eq!(multifactor_priority(&i, &big, 250).total, u32::MAX);
    }

    #[test]
    fn classic_fairshare_tree() {
        // root -> physics (shares 1) -> alice (1), bob (1); root -> chem (1) -> carol (1).
        let nodes = [
            FsNode {
                parent: None,
                shares: 1,
                usage: 0.0,
            },
            FsNode {
                parent: Some(0),
                shares: 1,
                usage: 0.0,
            },
            FsNode {
                parent: Some(1),
                shares: 1,
                usage: 300.0,
            },
            FsNode {
                parent: Some(1),
                shares: 1,
                usage: 0.0,
            },
            FsNode {
                parent: Some(0),
                shares: 1,
                usage: 0.0,
            },
            FsNode {
                parent: Some(4),
                shares: 1,
                usage: 100.0,
            },
        ];
        let f = classic_fairshare(&nodes);
        // Physics used 3/4 of everything: UE 0.75, S 0.5 -> 2^(-1.5).
        assert!(close(f[1].usage_norm, 0.75));
        assert!(close(f[1].factor, (-1.5f64).exp2()));
        // Alice: U 0.75, pulled half-way to physics' 0.75: 0.75; S 0.25 -> 2^-3.
        assert!(close(f[2].shares_norm, 0.25));
        assert!(close(f[2].usage_efctv, 0.75));
        assert!(close(f[2].factor, 0.125));
        // Bob used nothing but inherits half of his account's: UE 0.375 -> 2^-1.5.
        assert!(close(f[3].usage_efctv, 0.375));
        assert!(close(f[3].factor, (-1.5f64).exp2()));
        // Carol: U 0.25, account UE 0.25 -> 0.25; S 0.5 -> 2^-0.5: above Bob.
        assert!(close(f[5].usage_efctv, 0.25));
        assert!(f[5].factor > f[3].factor);
        // No usage anywhere: every factor 1.
        let idle: Vec<FsNode> = nodes.iter().map(|n| FsNode { usage: 0.0, ..*n }).collect();
        assert!(classic_fairshare(&idle)
            .iter()
            .all(|x| close(x.factor, 1.0)));
        // Shares weigh: with 3 shares of 4, the same usage costs less.
        let two = [
            nodes[0],
            FsNode {
                parent: Some(0),
                shares: 3,
                usage: 50.0,
            },
            FsNode {
                parent: Some(0),
                shares: 1,
                usage: 50.0,
            },
        ];
        let f = classic_fairshare(&two);
        assert!(f[1].factor > f[2].factor);
        assert!(close(f[1].factor, (-0.5f64 / 0.75).exp2()));
    }

    #[test]
    fn decay_halves_per_half_life() {
        let hl = 7 * 86_400;
        assert!(close(decay(1000.0, hl, hl), 500.0));
        assert!(close(decay(1000.0, 2 * hl, hl), 250.0));
        assert!(close(decay(1000.0, 0, hl), 1000.0));
        assert!(close(decay(1000.0, hl, 0), 1000.0));
        // Composes.
        assert!(close(
            decay(decay(800.0, 3600, hl), 7200, hl),
            decay(800.0, 10_800, hl)
        ));
    }
}
