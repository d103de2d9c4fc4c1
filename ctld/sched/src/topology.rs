//! Topology-aware placement (`TopologyPlugin=topology/tree`): a job that spans nodes goes
//! to as few leaf switches as possible, and `--switches=N` caps how many it may span.
//!
//! The caller gives each node's leaf switch ([`SwitchLimit::leaf`], from `topology.conf`)
//! in the job's [`crate::NodeFilter`], with the job's limit; while a `--switches=N@time`
//! job's wait is not over the limit holds, after it the caller drops it (Slurm then places
//! the job anyhow), so time stays outside the core.
//!
//! Placement tries, in preference order of their best node, each leaf switch alone; then,
//! when no single switch holds the job, switches by decreasing capacity until the job fits,
//! up to the limit. Within the switches chosen the ordinary rules of
//! [`crate::place`] pick the nodes.

/// The switches of the cluster as one job's placement sees them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SwitchLimit {
    /// Per node index: its leaf switch (`None`: under no switch, a switch of its own).
    pub leaf: Vec<Option<u32>>,
    /// `--switches=N`: the most leaf switches the job may span; `None`: no limit (fewest
    /// still preferred).
    pub max_switches: Option<u32>,
}

impl SwitchLimit {
    fn switch_of(&self, node: usize) -> u64 {
        match self.leaf.get(node).copied().flatten() {
            Some(s) => s as u64,
            // A node under no switch is its own.
            None => (1u64 << 32) + node as u64,
        }
    }

    /// Places with `place` over subsets of `cands` (`(node, tasks)` in preference order)
    /// that span as few switches as possible.
    pub(crate) fn place_with<P>(
        &self,
        cands: &[(usize, u32)],
        place: impl Fn(&[(usize, u32)]) -> Option<P>,
    ) -> Option<P> {
        // Switches in order of their best node.
        let mut order: Vec<u64> = Vec::new();
        for &(i, _) in cands {
            let s = self.switch_of(i);
            if !order.contains(&s) {
                order.push(s);
            }
        }
        let of = |sw: &[u64]| -> Vec<(usize, u32)> {
            cands
                .iter()
                .copied()
                .filter(|&(i, _)| sw.contains(&self.switch_of(i)))
                .collect()
        };
        for &s in &order {
            if let Some(p) = place(&of(&[s])) {
                return Some(p);
            }
        }
        let limit = self.max_switches.unwrap_or(u32::MAX) as usize;
        if limit <= 1 {
            return None;
        }
        // Roomiest switches first, until the job fits.
        let mut by_cap: Vec<(u64, u64, usize)> = order
            .iter()
            .enumerate()
            .map(|(k, &s)| {
                let cap: u64 = cands
                    .iter()
                    .filter(|&&(i, _)| self.switch_of(i) == s)
                    .map(|&(_, c)| c as u64)
                    .sum();
                (s, cap, k)
            })
            .collect();
        by_cap.sort_by(|a, b| b.1.cmp(&a.1).then(a.2.cmp(&b.2)));
        let mut chosen: Vec<u64> = Vec::new();
        for (s, _, _) in by_cap {
            if chosen.len() >= limit {
                break;
            }
            chosen.push(s);
            if chosen.len() >= 2 {
                if let Some(p) = place(&of(&chosen)) {
                    return Some(p);
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Places `n` nodes of one task each: the first `n` candidates.
    fn first_n(n: usize) -> impl Fn(&[(usize, u32)]) -> Option<Vec<usize>> {
        move |c: &[(usize, u32)]| (c.len() >= n).then(|| c.iter().take(n).map(|x| x.0).collect())
    }

    #[test]
    fn one_switch_when_one_holds_the_job() {
        // Nodes 0,1 on switch 0; 2..=5 on switch 1.
        let t = SwitchLimit {
            leaf: vec![Some(0), Some(0), Some(1), Some(1), Some(1), Some(1)],
            max_switches: None,
        };
        let cands: Vec<(usize, u32)> = (0..6).map(|i| (i, 1)).collect();
        assert_eq!(t.place_with(&cands, first_n(4)), Some(vec![2, 3, 4, 5]));
        assert_eq!(t.place_with(&cands, first_n(2)), Some(vec![0, 1]));
        // Five nodes: both switches.
        assert_eq!(t.place_with(&cands, first_n(5)).map(|v| v.len()), Some(5));
        // ... unless --switches=1.
        let one = SwitchLimit {
            max_switches: Some(1),
            ..t
        };
        assert_eq!(one.place_with(&cands, first_n(5)), None);
        assert_eq!(one.place_with(&cands, first_n(4)), Some(vec![2, 3, 4, 5]));
    }
}
