//! `HealthCheckProgram`: the controller asks the nodes to run it every
//! `HealthCheckInterval` seconds, as slurmctld does (its ping agent sends
//! REQUEST_HEALTH_CHECK), on the nodes `HealthCheckNodeState` selects by the CPUs they have
//! in use: none (IDLE, and NONDRAINED_IDLE without a drain), some (MIXED), all (ALLOC).
//! With `CYCLE` the nodes are spread over the interval, at most `max(10, 2 × nodes /
//! interval)` per pass, as slurmctld's `run_health_check` does. Nodes that do not answer
//! (or never registered) are skipped. The node daemon also runs the program when it starts,
//! before it registers; what the program finds wrong it reports itself (typically by
//! draining the node with `gscontrol update`).

use super::{Effect, State};

/// When the checks last went out, and where a cycle is.
#[derive(Debug, Default)]
pub struct HealthCheckRt {
    /// When the last round (or cycle) began.
    started: Option<i64>,
    /// `CYCLE`: the next node to check in the current cycle; `None` between cycles.
    next: Option<usize>,
}

impl State {
    /// The health checks due at `now` (at most once per interval for each node).
    pub(super) fn health_checks(&mut self, now: i64) -> Vec<Effect> {
        let cfg = &self.cfg;
        let interval = i64::from(cfg.health_check_interval);
        let Some(program) = cfg.health_check_program.clone().filter(|_| interval > 0) else {
            return Vec::new();
        };
        let states = cfg.health_check_node_state;
        let rt = &mut self.health_check;
        let (from, limit) = match rt.next {
            Some(i) if states.cycle => (i, None),
            _ => {
                if rt.started.is_some_and(|t| now - t < interval) {
                    return Vec::new();
                }
                rt.started = Some(now);
                (0, None)
            }
        };
        let limit = if states.cycle {
            Some((self.nodes.len() * 2 / interval as usize).max(10))
        } else {
            limit
        };
        let every_state = states.idle && states.mixed && states.alloc;
        let used = if every_state {
            Vec::new()
        } else {
            self.node_sums(&self.running_allocs()).0
        };
        let mut effects = Vec::new();
        let mut i = from;
        while i < self.nodes.len() && limit.is_none_or(|l| i - from < l) {
            let n = &self.nodes[i];
            i += 1;
            if !n.registered || n.not_responding {
                continue;
            }
            if !every_state {
                let busy = used.get(i - 1).copied().unwrap_or(0);
                let wanted = if busy == 0 {
                    states.idle || (states.nondrained_idle && !n.admin.drain)
                } else if busy < n.cpus {
                    states.mixed
                } else {
                    states.alloc
                };
                if !wanted {
                    continue;
                }
            }
            effects.push(Effect::HealthCheck {
                node: n.name.clone(),
                program: program.clone(),
            });
        }
        let rt = &mut self.health_check;
        rt.next = (states.cycle && i < self.nodes.len()).then_some(i);
        effects
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{register_all, register_node, spec, state_conf, ROOT};
    use super::*;

    fn state(dir: &std::path::Path, extra: &str) -> State {
        state_conf(
            dir,
            &format!(
                "HealthCheckProgram=/bin/true\n{extra}\
                 NodeName=n[1-2] NodeAddr=127.0.0.1 CPUs=2 RealMemory=1000\n\
                 PartitionName=debug Nodes=ALL Default=YES\n"
            ),
        )
    }

    fn checked(effects: &[Effect]) -> Vec<&str> {
        effects
            .iter()
            .filter_map(|e| match e {
                Effect::HealthCheck { node, program } => {
                    assert_eq!(program, "/bin/true");
                    Some(node.as_str())
                }
                _ => None,
            })
            .collect()
    }

    #[test]
    fn every_interval_on_the_nodes_of_the_chosen_states() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(dir.path(), "HealthCheckInterval=30\n");
        // The round at start finds no node registered (each node daemon runs the program
        // when it starts, before it registers); the next is an interval later.
        assert!(st.health_checks(1000).is_empty());
        register_all(&mut st, 1000);
        assert!(st.health_checks(1029).is_empty());
        assert_eq!(checked(&st.health_checks(1030)), vec!["n1", "n2"]);
        assert!(st.health_checks(1059).is_empty());
        assert_eq!(checked(&st.health_checks(1060)), vec!["n1", "n2"]);

        let dir = tempfile::tempdir().unwrap();
        let mut st = state(
            dir.path(),
            "HealthCheckInterval=30\nHealthCheckNodeState=ALLOC\n",
        );
        register_all(&mut st, 1000);
        // A job of 2 tasks fills one node of 2 CPUs.
        st.submit(spec(2), ROOT, 1000).unwrap();
        st.schedule(1000);
        let busy = st.jobs.values().next().unwrap().info.nodes[0].clone();
        assert_eq!(checked(&st.health_checks(1030)), vec![busy.as_str()]);

        // Without an interval, never.
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(dir.path(), "");
        register_all(&mut st, 1000);
        assert!(st.health_checks(1030).is_empty());
    }

    #[test]
    fn cycle_spreads_the_nodes_over_the_interval() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state_conf(
            dir.path(),
            "HealthCheckProgram=/bin/true\nHealthCheckInterval=30\nHealthCheckNodeState=CYCLE,IDLE\n\
             NodeName=n[1-12] NodeAddr=127.0.0.1 CPUs=2 RealMemory=1000\n\
             PartitionName=debug Nodes=ALL Default=YES\n",
        );
        for i in 1..=12 {
            register_node(&mut st, &format!("n{i}"), &[], 1000);
        }
        // At most max(10, 2 x 12 / 30) nodes a pass, the rest at the next pass; the next
        // cycle an interval after this one began.
        assert_eq!(st.health_checks(1000).len(), 10);
        assert_eq!(checked(&st.health_checks(1001)), vec!["n11", "n12"]);
        assert!(st.health_checks(1002).is_empty());
        assert!(st.health_checks(1029).is_empty());
        assert_eq!(st.health_checks(1030).len(), 10);
    }
}
