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

/// One GPU over a stretch of time: what [`GpuUsageReader::window`] answers.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GpuWindow {
    /// Samples of the GPU in the stretch.
    pub samples: u32,
    /// Sum of the utilizations counted (percent), for the mean over `samples`.
    pub util_sum: u64,
    pub util_max: u32,
    pub mem_max_mb: u64,
}

/// Reads jobs' GPU usage from the samples on a read-only connection of its own (the
/// accounting queries run off the async thread and without the state lock).
pub struct GpuUsageReader {
    conn: rusqlite::Connection,
    path: std::path::PathBuf,
}

impl GpuUsageReader {
    pub fn open(db: &std::path::Path) -> Result<GpuUsageReader, StoreError> {
        let err = |source| StoreError::Sqlite {
            path: db.to_path_buf(),
            source,
        };
        let conn = rusqlite::Connection::open_with_flags(
            db,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(err)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(err)?;
        Ok(GpuUsageReader {
            conn,
            path: db.to_path_buf(),
        })
    }

    /// GPU `gpu` of `node` over `[from, to]`: with `job` `None` the whole GPU's figures,
    /// else job `job`'s own part of them (a sample of the GPU without the job counting 0%).
    pub fn window(
        &self,
        node: &str,
        gpu: u32,
        job: Option<JobId>,
        from: i64,
        to: i64,
    ) -> Result<GpuWindow, StoreError> {
        let err = |source| StoreError::Sqlite {
            path: self.path.clone(),
            source,
        };
        // The GPU's own rows: how many samples the stretch has (and, for a whole GPU, the
        // figures themselves).
        let mut w = self
            .conn
            .prepare_cached(
                "SELECT count(*), coalesce(sum(util), 0), coalesce(max(util), 0), coalesce(max(mem_mb), 0)
                 FROM gpu_samples WHERE time >= ?1 AND time <= ?2 AND node = ?3 AND gpu = ?4 AND job_id IS NULL",
            )
            .map_err(err)?
            .query_row(params![from, to, node, gpu], |r| {
                Ok(GpuWindow {
                    samples: r.get::<_, i64>(0)? as u32,
                    util_sum: r.get::<_, i64>(1)? as u64,
                    util_max: r.get::<_, i64>(2)? as u32,
                    mem_max_mb: r.get::<_, i64>(3)? as u64,
                })
            })
            .map_err(err)?;
        if let Some(job) = job {
            let (sum, max, mem) = self
                .conn
                .prepare_cached(
                    "SELECT coalesce(sum(util), 0), coalesce(max(util), 0), coalesce(max(mem_mb), 0)
                     FROM gpu_samples WHERE job_id = ?1 AND time >= ?2 AND time <= ?3 AND node = ?4 AND gpu = ?5",
                )
                .map_err(err)?
                .query_row(params![job, from, to, node, gpu], |r| {
                    Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, i64>(2)?))
                })
                .map_err(err)?;
            w.util_sum = sum as u64;
            w.util_max = max as u32;
            w.mem_max_mb = mem as u64;
        }
        Ok(w)
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

    #[test]
    fn usage_windows_of_a_whole_gpu_and_of_a_share() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(dir.path(), false).unwrap();
        let sample = |time, util, jobs: Vec<GpuJobSample>| GpuSample {
            time,
            index: 0,
            util_percent: util,
            mem_used_mb: 1000 + time as u64,
            jobs,
        };
        let part = |util| GpuJobSample {
            job_id: 7,
            util_percent: util,
            mem_used_mb: 300,
        };
        s.add_gpu_samples(
            "n1",
            &[
                sample(10, 20, vec![part(10)]),
                sample(20, 60, vec![]),
                sample(30, 40, vec![part(30)]),
                sample(99, 100, vec![part(90)]),
            ],
            100,
        )
        .unwrap();
        let r = GpuUsageReader::open(&dir.path().join(crate::store::DB_FILE)).unwrap();
        let whole = r.window("n1", 0, None, 10, 30).unwrap();
        assert_eq!(
            whole,
            GpuWindow {
                samples: 3,
                util_sum: 120,
                util_max: 60,
                mem_max_mb: 1030
            }
        );
        // The share: its own part, the sample at 20 without it counting 0.
        let share = r.window("n1", 0, Some(7), 10, 30).unwrap();
        assert_eq!(
            share,
            GpuWindow {
                samples: 3,
                util_sum: 40,
                util_max: 30,
                mem_max_mb: 300
            }
        );
        assert_eq!(r.window("n2", 0, None, 0, 100).unwrap().samples, 0);
    }
}
