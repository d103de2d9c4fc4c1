//! The `node_hours` table (migration 7): each node's hour of load samples (mean CPU load,
//! GPU utilization and memory in use, highest memory, bytes received and sent), written once
//! the hour is over and kept `UsageHistoryDays`. The cluster's hourly utilization
//! (`load_hours`, migration 4) is pruned to the same horizon here.

use super::{Store, StoreError};
use gsched_proto::api::NodeUsageHour;
use rusqlite::params;

impl Store {
    /// Stores finished hours (replacing earlier values of the same node and hour) and drops
    /// the hours of `node_hours` and `load_hours` before `keep_since`, in one transaction.
    pub fn save_node_hours(
        &mut self,
        rows: &[(String, NodeUsageHour)],
        keep_since: i64,
    ) -> Result<(), StoreError> {
        self.transaction(|s| {
            let e = s.err();
            {
                let mut stmt = s
                    .conn
                    .prepare_cached(
                        "INSERT INTO node_hours (node, hour, samples, cpu_load_pct, gpu_util_pct,
                            mem_used_mb, mem_used_max_mb, mem_total_mb, net_rx_bytes, net_tx_bytes)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
                         ON CONFLICT(node, hour) DO UPDATE SET samples = excluded.samples,
                            cpu_load_pct = excluded.cpu_load_pct,
                            gpu_util_pct = excluded.gpu_util_pct,
                            mem_used_mb = excluded.mem_used_mb,
                            mem_used_max_mb = excluded.mem_used_max_mb,
                            mem_total_mb = excluded.mem_total_mb,
                            net_rx_bytes = excluded.net_rx_bytes,
                            net_tx_bytes = excluded.net_tx_bytes",
                    )
                    .map_err(&e)?;
                let int = |v: Option<u64>| v.map(|v| i64::try_from(v).unwrap_or(i64::MAX));
                for (node, h) in rows {
                    stmt.execute(params![
                        node,
                        h.hour,
                        h.samples,
                        h.cpu_load_pct,
                        h.gpu_util_pct,
                        h.mem_used_mb,
                        int(h.mem_used_max_mb),
                        int(h.mem_total_mb),
                        int(h.net_rx_bytes),
                        int(h.net_tx_bytes),
                    ])
                    .map_err(&e)?;
                }
            }
            s.conn
                .execute(
                    "DELETE FROM node_hours WHERE hour < ?1",
                    params![keep_since],
                )
                .map_err(&e)?;
            s.conn
                .execute(
                    "DELETE FROM load_hours WHERE hour < ?1",
                    params![keep_since],
                )
                .map_err(&e)?;
            Ok(())
        })
    }

    /// The stored hours from `since` on, by node then hour; only `nodes`' when not empty.
    pub fn node_hours(
        &self,
        nodes: &[String],
        since: i64,
    ) -> Result<Vec<(String, NodeUsageHour)>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT node, hour, samples, cpu_load_pct, gpu_util_pct, mem_used_mb,
                    mem_used_max_mb, mem_total_mb, net_rx_bytes, net_tx_bytes
                 FROM node_hours WHERE hour >= ?1 ORDER BY node, hour",
            )
            .map_err(self.err())?;
        let uint = |v: Option<i64>| v.map(|v| v.max(0) as u64);
        let rows = stmt
            .query_map(params![since], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    NodeUsageHour {
                        hour: r.get(1)?,
                        samples: r.get(2)?,
                        cpu_load_pct: r.get(3)?,
                        gpu_util_pct: r.get(4)?,
                        mem_used_mb: r.get(5)?,
                        mem_used_max_mb: uint(r.get(6)?),
                        mem_total_mb: uint(r.get(7)?),
                        net_rx_bytes: uint(r.get(8)?),
                        net_tx_bytes: uint(r.get(9)?),
                    },
                ))
            })
            .map_err(self.err())?;
        let all = rows.collect::<Result<Vec<_>, _>>().map_err(self.err())?;
        Ok(all
            .into_iter()
            .filter(|(n, _)| nodes.is_empty() || nodes.contains(n))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hour(h: i64, cpu: f64, rx: Option<u64>) -> NodeUsageHour {
        NodeUsageHour {
            hour: h,
            samples: 12,
            cpu_load_pct: cpu,
            gpu_util_pct: None,
            mem_used_mb: Some(1024.5),
            mem_used_max_mb: Some(2048),
            mem_total_mb: Some(8192),
            net_rx_bytes: rx,
            net_tx_bytes: Some(u64::MAX),
        }
    }

    #[test]
    fn hours_are_stored_replaced_and_pruned() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(dir.path(), false).unwrap();
        s.save_load_hour(0, 0.5).unwrap();
        s.save_load_hour(7200, 0.25).unwrap();
        s.save_node_hours(
            &[
                ("n1".into(), hour(3600, 10.0, Some(5))),
                ("n2".into(), hour(3600, 20.0, None)),
            ],
            0,
        )
        .unwrap();
        // The same hour again replaces it; a newer one is added; older ones go.
        s.save_node_hours(
            &[
                ("n1".into(), hour(3600, 15.0, Some(6))),
                ("n1".into(), hour(7200, 30.0, Some(7))),
            ],
            3600,
        )
        .unwrap();
        let all = s.node_hours(&[], 0).unwrap();
        assert_eq!(
            all.iter()
                .map(|(n, h)| (n.as_str(), h.hour, h.cpu_load_pct))
                .collect::<Vec<_>>(),
            vec![("n1", 3600, 15.0), ("n1", 7200, 30.0), ("n2", 3600, 20.0)]
        );
        let mut want = hour(3600, 15.0, Some(6));
        want.net_tx_bytes = Some(i64::MAX as u64);
        assert_eq!(all[0].1, want);
        assert_eq!(all[2].1.net_rx_bytes, None);
        // (Counters beyond i64 are kept at its maximum rather than failing the write.)
        assert_eq!(s.node_hours(&["n2".into()], 0).unwrap().len(), 1);
        assert_eq!(s.node_hours(&[], 7200).unwrap().len(), 1);
        s.save_node_hours(&[], 7200).unwrap();
        assert_eq!(s.node_hours(&[], 0).unwrap().len(), 1);
        // The cluster's hourly utilization is pruned with them.
        assert_eq!(s.load_load_hours(0).unwrap(), vec![(7200, 0.25)]);
    }
}
