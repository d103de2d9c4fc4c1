//! The timeline: for every node, the CPUs and memory in use from `now` on, as a step function.
//!
//! The backfill planner asks two questions many times per pass: "how much is in use on this
//! node over `[s, e)`?" and "when, from `t`, does this node first have room for a job over a
//! whole window of length `L`?". Both are answered from a short, sorted list of breakpoints per
//! node (binary search to the start, then a walk over the steps inside the window), so a query
//! costs O(log k + steps in the window) with k the node's breakpoints. Adding a job (a start
//! or a reservation) splits at most two steps and adds to the steps in between.
//!
//! Usage only changes at breakpoints: it drops when a running job ends (or a planned job's
//! window closes) and rises when a planned job's window opens. Nothing here knows about
//! priorities or policies; [`crate::plan`] drives it.

use crate::{ClusterView, UNLIMITED_END};

/// Usage on one node from `t` until the next step's `t`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Step {
    t: i64,
    cpus: u32,
    mem_mb: u64,
}

/// One node's usage over time. The first step starts at the planner's `now`; the last step
/// lasts forever.
#[derive(Debug, Clone)]
pub(crate) struct NodeLine {
    steps: Vec<Step>,
}

impl NodeLine {
    /// Index of the step in force at `t` (`t` at or after the first step).
    fn at(&self, t: i64) -> usize {
        self.steps.partition_point(|s| s.t <= t).saturating_sub(1)
    }

    /// CPUs and memory in use at the start (the planner's `now`).
    pub(crate) fn first(&self) -> (u32, u64) {
        (self.steps[0].cpus, self.steps[0].mem_mb)
    }

    /// Most CPUs and most memory in use at any time in `[s, e)` (each its own maximum).
    pub(crate) fn peak(&self, s: i64, e: i64) -> (u32, u64) {
        let mut c = 0;
        let mut m = 0;
        for st in &self.steps[self.at(s)..] {
            if st.t >= e {
                break;
            }
            c = c.max(st.cpus);
            m = m.max(st.mem_mb);
        }
        (c, m)
    }

    /// Earliest `T >= from`, `T <= latest`, such that `fits(cpus, mem)` holds for every step
    /// that meets `[T, T + len)`. `None` when there is no such `T` by `latest`.
    ///
    /// `fits` must be monotone (less in use never fits worse), so the answer is `from` or the
    /// start of a step: the window only ever needs to begin where a step begins.
    pub(crate) fn earliest(
        &self,
        from: i64,
        len: i64,
        latest: i64,
        fits: impl Fn(u32, u64) -> bool,
    ) -> Option<i64> {
        let mut run: Option<i64> = None;
        let i = self.at(from);
        for (j, st) in self.steps[i..].iter().enumerate() {
            let start = st.t.max(from);
            let end = self.steps.get(i + j + 1).map(|n| n.t);
            if fits(st.cpus, st.mem_mb) {
                let r = *run.get_or_insert(start);
                if r > latest {
                    return None;
                }
                match end {
                    None => return Some(r),
                    Some(end) if end.saturating_sub(r) >= len => return Some(r),
                    Some(_) => {}
                }
            } else {
                run = None;
                match end {
                    Some(end) if end <= latest => {}
                    _ => return None,
                }
            }
        }
        None
    }

    /// The first breakpoint strictly after `t`, if any.
    pub(crate) fn next_change(&self, t: i64) -> Option<i64> {
        self.steps.get(self.at(t) + 1).map(|s| s.t)
    }

    /// Index of the step that starts exactly at `t`, splitting the one in force if needed.
    fn split(&mut self, t: i64) -> usize {
        let i = self.at(t);
        if self.steps[i].t == t {
            return i;
        }
        let mut st = self.steps[i];
        st.t = t;
        self.steps.insert(i + 1, st);
        i + 1
    }

    /// Puts `cpus` and `mem_mb` in use over `[s, e)`; `e` at or past [`UNLIMITED_END`] means
    /// for ever.
    fn add(&mut self, s: i64, e: i64, cpus: u32, mem_mb: u64) {
        if e <= s {
            return;
        }
        let i = self.split(s);
        let j = if e >= UNLIMITED_END {
            self.steps.len()
        } else {
            self.split(e)
        };
        for st in &mut self.steps[i..j] {
            st.cpus = st.cpus.saturating_add(cpus);
            st.mem_mb = st.mem_mb.saturating_add(mem_mb);
        }
    }
}

/// Every node's usage from `now` on.
#[derive(Debug, Clone)]
pub(crate) struct Timeline {
    pub(crate) now: i64,
    pub(crate) lines: Vec<NodeLine>,
}

impl Timeline {
    /// The cluster as it is at `now`, with each running job's resources given back at its
    /// expected end. A job already past its end (being killed) is expected to free its
    /// resources one second from now.
    pub(crate) fn new(view: &ClusterView, now: i64) -> Self {
        let mut ends: Vec<Vec<(i64, u32, u64)>> = vec![Vec::new(); view.nodes.len()];
        for r in &view.running {
            if r.end >= UNLIMITED_END {
                continue;
            }
            let end = r.end.max(now.saturating_add(1));
            for a in &r.nodes {
                if let Some(e) = ends.get_mut(a.node) {
                    e.push((end, a.cpus, a.mem_mb));
                }
            }
        }
        let lines = view
            .nodes
            .iter()
            .zip(ends)
            .map(|(n, mut e)| {
                e.sort_unstable();
                let mut st = Step {
                    t: now,
                    cpus: n.alloc_cpus,
                    mem_mb: n.alloc_mem_mb,
                };
                let mut steps = vec![st];
                for (t, c, m) in e {
                    st.cpus = st.cpus.saturating_sub(c);
                    st.mem_mb = st.mem_mb.saturating_sub(m);
                    if st.t == t {
                        *steps.last_mut().expect("one step at least") = st;
                    } else {
                        st.t = t;
                        steps.push(st);
                    }
                }
                NodeLine { steps }
            })
            .collect();
        let mut tl = Timeline { now, lines };
        // Maintenance windows: the whole node is taken over the window.
        for b in &view.blackouts {
            if b.end <= now {
                continue;
            }
            for &i in &b.nodes {
                if let Some(n) = view.nodes.get(i) {
                    tl.add(i, b.start, b.end, n.cpus, n.mem_mb);
                }
            }
        }
        tl
    }

    /// Puts `cpus`/`mem_mb` in use on `node` over `[s, e)`.
    pub(crate) fn add(&mut self, node: usize, s: i64, e: i64, cpus: u32, mem_mb: u64) {
        self.lines[node].add(s.max(self.now), e, cpus, mem_mb);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(steps: &[(i64, u32)]) -> NodeLine {
        NodeLine {
            steps: steps
                .iter()
                .map(|&(t, c)| Step {
                    t,
                    cpus: c,
                    mem_mb: 0,
                })
                .collect(),
        }
    }

    #[test]
    fn peak_and_earliest() {
        // 4 CPUs in use until 10, 1 until 20, then free.
        let l = line(&[(0, 4), (10, 1), (20, 0)]);
        assert_eq!(l.peak(0, 10), (4, 0));
        assert_eq!(l.peak(5, 15), (4, 0));
        assert_eq!(l.peak(10, 15), (1, 0));
        assert_eq!(l.peak(25, 99), (0, 0));
        let room = |need: u32| move |c: u32, _m: u64| c + need <= 4;
        assert_eq!(l.earliest(0, 5, 100, room(3)), Some(10));
        assert_eq!(l.earliest(0, 5, 100, room(4)), Some(20));
        assert_eq!(l.earliest(12, 5, 100, room(3)), Some(12));
        assert_eq!(l.earliest(0, 5, 15, room(4)), None);
        assert_eq!(l.earliest(0, 5, 100, room(5)), None);
    }

    #[test]
    fn add_splits_and_finds_holes() {
        let mut l = line(&[(0, 0)]);
        l.add(10, 20, 3, 0);
        l.add(30, UNLIMITED_END, 4, 0);
        assert_eq!(l.peak(0, 10), (0, 0));
        assert_eq!(l.peak(0, 11), (3, 0));
        assert_eq!(l.peak(20, 30), (0, 0));
        let room = |need: u32| move |c: u32, _m: u64| c + need <= 4;
        // A 10-second hole at 0 and another at 20.
        assert_eq!(l.earliest(0, 10, 1000, room(4)), Some(0));
        assert_eq!(l.earliest(1, 10, 1000, room(4)), Some(20));
        assert_eq!(l.earliest(1, 11, 1000, room(4)), None);
        assert_eq!(l.earliest(1, 11, 1000, room(1)), Some(1));
        assert_eq!(l.next_change(0), Some(10));
        assert_eq!(l.next_change(30), None);
    }
}
