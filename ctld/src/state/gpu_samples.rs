//! GPU samples from the heartbeats go to the store (`gpu_samples`, kept 14 days) and to the
//! monitoring figures of `/metrics` (`state/monitor.rs`); a node that is not registered has
//! its heartbeat refused first, so its samples are not stored.

use super::State;

impl State {
    /// Stores node `node`'s samples; a store failure is logged, not fatal (the samples are
    /// monitoring data, and the heartbeat must still be answered).
    pub fn record_gpu_samples(
        &mut self,
        node: &str,
        samples: &[gsched_proto::gpu_sample::GpuSample],
        now: i64,
    ) {
        if samples.is_empty() {
            return;
        }
        if let Some(&i) = self.node_index.get(node) {
            self.monitor_gpu_samples(i, samples);
        }
        if let Err(e) = self.store.add_gpu_samples(node, samples, now) {
            tracing::error!("cannot store the GPU samples of node {node}: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{register_all, state};
    use gsched_proto::gpu_sample::GpuSample;

    #[test]
    fn heartbeat_samples_reach_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(dir.path());
        register_all(&mut st, 1001);
        let s = GpuSample {
            time: 1001,
            index: 0,
            util_percent: 12,
            mem_used_mb: 34,
            jobs: vec![],
        };
        st.record_gpu_samples("n1", &[s], 1002);
        let rows = st.store.gpu_samples(None).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!((rows[0].node.as_str(), rows[0].util), ("n1", 12));
    }
}
