//! The `gpu_samples` table (migration 5): GPU utilization and memory per GPU and per job,
//! as the nodes sample them (`GpuSampleInterval`) and send them with their heartbeats. Kept
//! [`GPU_SAMPLE_DAYS`] days for the monitoring and idle-GPU work.

use super::{Store, StoreError};
use gsched_proto::gpu_sample::GpuSample;
use gsched_proto::job::JobId;
use rusqlite::params;

/// How long samples are kept.
pub const GPU_SAMPLE_DAYS: i64 = 14;

/// One stored row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuSampleRow {
    pub node: String,
    pub time: i64,
    pub gpu: u32,
    /// `None`: the whole GPU.
    pub job_id: Option<JobId>,
    pub util: u32,
    pub mem_mb: u64,
}

impl Store {
    /// Stores a node's samples and drops those older than [`GPU_SAMPLE_DAYS`] before `now`,
    /// in one transaction.
    pub fn add_gpu_samples(
        &mut self,
        node: &str,
        samples: &[GpuSample],
        now: i64,
    ) -> Result<(), StoreError> {
        self.transaction(|s| {
            let e = s.err();
            {
                let mut stmt = s
                    .conn
                    .prepare_cached(
                        "INSERT INTO gpu_samples (node, time, gpu, job_id, util, mem_mb) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    )
                    .map_err(&e)?;
                for g in samples {
                    stmt.execute(params![
                        node,
                        g.time,
                        g.index,
                        Option::<JobId>::None,
                        g.util_percent,
                        g.mem_used_mb as i64
                    ])
                    .map_err(&e)?;
                    for j in &g.jobs {
                        stmt.execute(params![
                            node,
                            g.time,
                            g.index,
                            j.job_id,
                            j.util_percent,
                            j.mem_used_mb as i64
                        ])
                        .map_err(&e)?;
                    }
                }
            }
            s.conn
                .execute(
                    "DELETE FROM gpu_samples WHERE time < ?1",
                    params![now - GPU_SAMPLE_DAYS * 86_400],
                )
                .map_err(&e)?;
            Ok(())
        })
    }

    /// The stored samples, oldest first; only job `job`'s with `Some`.
    pub fn gpu_samples(&self, job: Option<JobId>) -> Result<Vec<GpuSampleRow>, StoreError> {
        let sql = match job {
            Some(_) => "SELECT node, time, gpu, job_id, util, mem_mb FROM gpu_samples WHERE job_id = ?1 ORDER BY time, gpu",
            None => "SELECT node, time, gpu, job_id, util, mem_mb FROM gpu_samples WHERE ?1 IS NULL ORDER BY time, gpu, job_id",
        };
        let mut stmt = self.conn.prepare(sql).map_err(self.err())?;
        let rows = stmt
            .query_map(params![job], |r| {
                Ok(GpuSampleRow {
                    node: r.get(0)?,
                    time: r.get(1)?,
                    gpu: r.get(2)?,
                    job_id: r.get(3)?,
                    util: r.get(4)?,
                    mem_mb: r.get::<_, i64>(5)? as u64,
                })
            })
            .map_err(self.err())?
            .collect::<Result<Vec<_>, _>>()
            .map_err(self.err())?;
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gsched_proto::gpu_sample::GpuJobSample;

    #[test]
    fn samples_are_stored_and_expire() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(dir.path(), false).unwrap();
        let sample = |time| GpuSample {
            time,
            index: 1,
            util_percent: 70,
            mem_used_mb: 5000,
            jobs: vec![GpuJobSample {
                job_id: 9,
                util_percent: 40,
                mem_used_mb: 3000,
            }],
        };
        s.add_gpu_samples("n1", &[sample(100)], 100).unwrap();
        let all = s.gpu_samples(None).unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].job_id, None);
        assert_eq!((all[0].util, all[0].mem_mb), (70, 5000));
        let job = s.gpu_samples(Some(9)).unwrap();
        assert_eq!(
            job,
            [GpuSampleRow {
                node: "n1".into(),
                time: 100,
                gpu: 1,
                job_id: Some(9),
                util: 40,
                mem_mb: 3000
            }]
        );
        drop(s);
        // Reopened: still there; 14 days later, gone.
        let mut s = Store::open(dir.path(), false).unwrap();
        assert_eq!(s.gpu_samples(None).unwrap().len(), 2);
        let later = 100 + GPU_SAMPLE_DAYS * 86_400 + 1;
        s.add_gpu_samples("n1", &[sample(later)], later).unwrap();
        let all = s.gpu_samples(None).unwrap();
        assert!(all.iter().all(|r| r.time == later), "{all:?}");
    }
}
