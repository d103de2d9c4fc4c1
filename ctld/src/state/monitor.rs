//! What the controller measures for `/metrics` (`crate::metrics` reads it at each scrape)
//! beyond what its state shows at a glance:
//!
//! * the newest GPU sample of every GPU (the utilization and memory gauges), taken from the
//!   heartbeats as they arrive;
//! * GPU-seconds allocated and used, derived from the samples: each sample of a GPU stands for
//!   the time since that GPU's previous sample (at most twice `GpuSampleInterval`, so a
//!   silent node is not credited with its silence; the first sample for one interval). While
//!   a job held the GPU, as the last scheduling pass saw it, that time counts as allocated,
//!   and times the sample's utilization as used, so `used / allocated` is the allocated GPUs'
//!   mean utilization;
//! * the steps the invalid-job ladder took, by step and reason;
//! * the estimated energy and cost of jobs as they end: gsacct's own estimate
//!   (`state/price.rs`), counted once, when the job's terminal state is committed. A run that
//!   was requeued is not counted, as gsacct keeps only a job's last run.
//!
//! All of it is kept in memory: the counters start from zero when gsctld starts, which
//! Prometheus' `rate()` and `increase()` expect of counters.

use std::collections::BTreeMap;

use gsched_proto::gpu_sample::GpuSample;
use gsched_proto::job::{InvalidKind, JobId, LadderStep};
use gsched_sched::ClusterView;

use super::State;

/// The newest sample of one GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GpuLatest {
    /// When the node took it (epoch seconds, the node's clock).
    pub time: i64,
    pub util_percent: u32,
    pub mem_used_mb: u64,
}

const STEPS: [LadderStep; 3] = [LadderStep::Notify, LadderStep::Requeue, LadderStep::Cancel];
const KINDS: [InvalidKind; 2] = [InvalidKind::Hung, InvalidKind::IdleGpu];

/// The monitoring figures (see the module docs).
#[derive(Debug, Default)]
pub struct MonitorRt {
    /// Newest sample by (node index, GPU index).
    gpu_latest: BTreeMap<(usize, u32), GpuLatest>,
    /// The GPU indices held by jobs on each node, as the last scheduling pass saw them.
    held: Vec<Vec<u32>>,
    /// GPU-seconds of sampled GPUs while a job held them.
    pub gpu_allocated_secs: f64,
    /// The same weighted by the GPUs' sampled utilization.
    pub gpu_used_secs: f64,
    /// Ladder steps taken, by [`STEPS`] and [`KINDS`] position.
    ladder_steps: [[u64; 2]; 3],
    /// Estimated energy (kWh) and cost of the jobs that ended.
    pub energy_kwh: f64,
    pub cost: f64,
}

impl MonitorRt {
    /// Every (step, reason) pair with the number of times the ladder took that step.
    pub fn ladder_steps(&self) -> impl Iterator<Item = (LadderStep, InvalidKind, u64)> + '_ {
        STEPS.iter().enumerate().flat_map(move |(i, &s)| {
            KINDS
                .iter()
                .enumerate()
                .map(move |(k, &kind)| (s, kind, self.ladder_steps[i][k]))
        })
    }

    /// The newest sample of every GPU, by (node index, GPU index).
    pub fn gpu_latest(&self) -> &BTreeMap<(usize, u32), GpuLatest> {
        &self.gpu_latest
    }
}

impl State {
    /// The monitoring figures for `/metrics`.
    pub fn monitor(&self) -> &MonitorRt {
        &self.monitor
    }

    /// Remembers which GPUs jobs hold now (called with every pass's view).
    pub(super) fn note_gpu_holds(&mut self, view: &ClusterView) {
        self.monitor.held = view
            .nodes
            .iter()
            .map(|n| {
                n.gpus
                    .iter()
                    .filter(|g| !g.holds.is_empty())
                    .map(|g| g.device.index)
                    .collect()
            })
            .collect();
    }

    /// Takes in node `node`'s GPU samples (see the module docs).
    pub(super) fn monitor_gpu_samples(&mut self, node: usize, samples: &[GpuSample]) {
        let interval = i64::from(self.cfg.gpu_sample_interval.max(1));
        let m = &mut self.monitor;
        let held = m.held.get(node);
        for s in samples {
            let key = (node, s.index);
            let secs = match m.gpu_latest.get(&key).map(|l| l.time) {
                Some(prev) if s.time == prev => continue,
                // The node's clock went back: start again from this sample.
                Some(prev) if s.time < prev => 0,
                Some(prev) => (s.time - prev).min(2 * interval),
                None => interval,
            } as f64;
            if held.is_some_and(|h| h.contains(&s.index)) {
                m.gpu_allocated_secs += secs;
                m.gpu_used_secs += secs * f64::from(s.util_percent.min(100)) / 100.0;
            }
            m.gpu_latest.insert(
                key,
                GpuLatest {
                    time: s.time,
                    util_percent: s.util_percent,
                    mem_used_mb: s.mem_used_mb,
                },
            );
        }
    }

    /// The ladder took `step` for `kind`.
    pub(super) fn count_ladder_step(&mut self, step: LadderStep, kind: InvalidKind) {
        let i = STEPS.iter().position(|&s| s == step);
        let k = KINDS.iter().position(|&x| x == kind);
        if let (Some(i), Some(k)) = (i, k) {
            self.monitor.ladder_steps[i][k] += 1;
        }
    }

    /// `count_ladder_step` `n` times, for other modules' tests.
    #[cfg(test)]
    pub(crate) fn count_ladder_step_for_test(
        &mut self,
        step: LadderStep,
        kind: InvalidKind,
        n: u32,
    ) {
        for _ in 0..n {
            self.count_ladder_step(step, kind);
        }
    }

    /// Job `id` ended (its terminal state is committed): its estimated energy and cost.
    pub(super) fn meter_job_end(&mut self, id: JobId) {
        if let Some(e) = self.job_energy(id) {
            self.monitor.energy_kwh += e.kwh;
            self.monitor.cost += e.cost;
        }
    }

    /// CPUs in use on each node the controller hears from, by its load: the one-minute load
    /// average capped at the node's CPUs. Nodes without a load sample, down or not
    /// responding are left out.
    pub fn cpus_used(&self) -> Vec<(&str, f64)> {
        self.nodes
            .iter()
            .filter(|n| n.registered && !n.not_responding && !n.admin.down)
            .filter_map(|n| {
                let l = n.life.load?;
                Some((n.name.as_str(), l.load_avg.clamp(0.0, f64::from(n.cpus))))
            })
            .collect()
    }

    /// Memory in use on each node the controller hears from, bytes: `MemTotal -
    /// MemAvailable` of its newest load sample (nodes whose gsnoded does not report memory,
    /// down or not responding are left out).
    pub fn memory_used(&self) -> Vec<(&str, u64)> {
        self.nodes
            .iter()
            .filter(|n| n.registered && !n.not_responding && !n.admin.down)
            .filter_map(|n| Some((n.name.as_str(), n.life.load?.mem_used_mb? << 20)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{register_all, spec, state, ROOT};
    use super::*;
    use crate::state::tests::ended;
    use gsched_proto::gpu_sample::GpuSample;
    use gsched_proto::job::JobState;
    use gsched_proto::resv::NodeLoad;

    fn sample(time: i64, index: u32, util: u32) -> GpuSample {
        GpuSample {
            time,
            index,
            util_percent: util,
            mem_used_mb: 100,
            jobs: vec![],
        }
    }

    #[test]
    fn gpu_seconds_count_held_gpus_only_and_gaps_are_capped() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(dir.path());
        register_all(&mut st, 1000);
        let interval = st.cfg.gpu_sample_interval as i64;
        // GPU 1 of node 0 is held, GPU 0 is not.
        st.monitor.held = vec![vec![1]];
        st.monitor_gpu_samples(0, &[sample(1000, 0, 90), sample(1000, 1, 50)]);
        // First samples: one interval each; only the held GPU counts.
        assert_eq!(st.monitor.gpu_allocated_secs, interval as f64);
        assert_eq!(st.monitor.gpu_used_secs, interval as f64 * 0.5);
        // The next one, `interval` later at 100%; then a repeat (ignored); then one after a
        // long silence, capped at two intervals.
        let t = 1000 + interval;
        st.monitor_gpu_samples(0, &[sample(t, 1, 100), sample(t, 1, 100)]);
        st.monitor_gpu_samples(0, &[sample(t + 100 * interval, 1, 0)]);
        assert_eq!(st.monitor.gpu_allocated_secs, 4.0 * interval as f64);
        assert_eq!(st.monitor.gpu_used_secs, 1.5 * interval as f64);
        let latest = st.monitor().gpu_latest();
        assert_eq!(latest[&(0, 1)].util_percent, 0);
        assert_eq!(latest[&(0, 0)].util_percent, 90);
    }

    #[test]
    fn ladder_steps_are_counted_by_step_and_reason() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(dir.path());
        st.count_ladder_step(LadderStep::Requeue, InvalidKind::IdleGpu);
        st.count_ladder_step(LadderStep::Requeue, InvalidKind::IdleGpu);
        st.count_ladder_step(LadderStep::Notify, InvalidKind::Hung);
        let all: Vec<_> = st.monitor().ladder_steps().collect();
        assert_eq!(all.len(), 6, "every pair is listed, zeros included");
        assert!(all.contains(&(LadderStep::Requeue, InvalidKind::IdleGpu, 2)));
        assert!(all.contains(&(LadderStep::Notify, InvalidKind::Hung, 1)));
        assert!(all.contains(&(LadderStep::Cancel, InvalidKind::Hung, 0)));
    }

    #[test]
    fn ended_jobs_add_gsaccts_estimate_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(dir.path());
        register_all(&mut st, 1000);
        let id = st.submit(spec(2), ROOT, 1000).unwrap();
        st.schedule(1000);
        assert_eq!(st.jobs[&id].info.state, JobState::Running);
        st.launch_result(id, 1000, Ok(()), 1000);
        assert_eq!(st.monitor.energy_kwh, 0.0, "nothing counted while it runs");
        let done = ended(id, "n1", 1000, 4600);
        st.complete(&done, 4600).unwrap();
        assert_eq!(st.jobs[&id].info.state, JobState::Completed);
        let info = st.jobs[&id].info.clone();
        let cal = crate::state::price_calendar(&st.cfg).unwrap();
        let want = crate::state::price_account(&st.cfg, &cal, &[info], 9999)[0];
        // Two CPUs of a node at the default 10 W per CPU, for an hour.
        assert!((want.kwh - 0.02).abs() < 1e-9, "{want:?}");
        assert_eq!(st.monitor.energy_kwh, want.kwh);
        assert_eq!(st.monitor.cost, want.cost);
        // Committing the ended job again counts nothing more.
        st.persist(id).unwrap();
        assert_eq!(st.monitor.energy_kwh, want.kwh);
    }

    #[test]
    fn cpus_used_is_the_load_capped_at_the_cpus() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(dir.path());
        register_all(&mut st, 1000);
        let names: Vec<String> = st.nodes.iter().map(|n| n.name.clone()).collect();
        let cpus = st.nodes[0].cpus as f64;
        let load = |l: f64| {
            Some(NodeLoad {
                load_avg: l,
                cpu_load_pct: 0,
                mem_used_mb: Some(100),
                ..Default::default()
            })
        };
        st.node_load(&names[0], load(cpus + 10.0));
        if names.len() > 1 {
            st.node_load(&names[1], load(0.5));
        }
        let used = st.cpus_used();
        assert_eq!(used[0], (names[0].as_str(), cpus));
        if names.len() > 1 {
            assert_eq!(used[1], (names[1].as_str(), 0.5));
        }
        assert_eq!(st.memory_used()[0], (names[0].as_str(), 100 << 20));
        st.nodes[0].not_responding = true;
        assert!(st.cpus_used().iter().all(|(n, _)| *n != names[0]));
        assert!(st.memory_used().iter().all(|(n, _)| *n != names[0]));
    }
}
