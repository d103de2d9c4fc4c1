//! Node scoring: the order in which placement considers a partition's nodes.
//!
//! Placement takes nodes first fit in *preference order*. Slurm's order is `Weight=` (lower
//! first), then the config order; gsched puts a per-node [`NodeView::penalty`] before both,
//! so that the caller can score nodes down without the core knowing why. The controller
//! uses it for load-aware placement: a node whose measured CPU load is above
//! `NodeLoadThreshold=` gets a penalty (how far above, in percent), so a new job goes to a
//! node that is not busy whenever one fits, and to the least busy of the busy ones
//! otherwise. A penalty never makes a node unusable: it only changes the order.
//!
//! Being data in the view, the penalty keeps the core pure: the same view gives the same
//! decisions, in gsctld and in the simulator.

use crate::NodeView;

/// The sort key of node `i` in preference order (smaller first).
pub fn preference(n: &NodeView, i: usize) -> (u32, u32, usize) {
    (n.penalty, n.weight, i)
}

/// The penalty of a node whose measured load is `load_pct` percent of its CPUs, with
/// `threshold_pct` the load above which a node counts as busy (0: never).
pub fn load_penalty(load_pct: Option<u32>, threshold_pct: u32) -> u32 {
    match load_pct {
        Some(l) if threshold_pct > 0 && l > threshold_pct => l - threshold_pct,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_nodes_come_last_and_least_busy_first() {
        assert_eq!(load_penalty(None, 85), 0);
        assert_eq!(load_penalty(Some(85), 85), 0);
        assert_eq!(load_penalty(Some(100), 85), 15);
        assert_eq!(load_penalty(Some(400), 0), 0);
        let node = |w: u32, p: u32| NodeView {
            name: "n".into(),
            cpus: 1,
            mem_mb: 1,
            alloc_cpus: 0,
            alloc_mem_mb: 0,
            available: true,
            weight: w,
            features: vec![],
            penalty: p,
            gpus: Vec::new(),
        };
        // A busy node of lower weight comes after an idle one of higher weight.
        assert!(preference(&node(1, 10), 0) > preference(&node(5, 0), 1));
        // Equal penalties: weight, then config order.
        assert!(preference(&node(1, 0), 1) < preference(&node(2, 0), 0));
    }
}
