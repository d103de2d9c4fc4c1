//! The controller's durable state in SQLite: every job (as a JSON record plus the columns that
//! queries filter on), the id counter, the admin's node settings (drain, down, reason), the
//! association table of `gsacctmgr` (accounts, users, associations, QOS as JSON records by
//! kind and key) and the fair-share usage per association with the runs it has counted.
//!
//! WAL journal, one transaction per change; a job id leaves the controller only after the
//! transaction that stores the job has committed. Submissions are stored in batches (group
//! commit, `crate::group_commit`): one transaction around many jobs, each job's rows in a
//! savepoint of their own, so that a job can fail alone while the batch shares one commit. Schema versions are `PRAGMA user_version`
//! and migrations run in order at open; a store newer than this build is refused.

use gsched_proto::job::{JobId, JobState};
use rusqlite::{params, Connection, OptionalExtension};
use std::path::{Path, PathBuf};

/// The database file in `StateSaveLocation`.
pub const DB_FILE: &str = "gsched.db";

/// Schema version this build writes.
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

const MIGRATIONS: &[&str] = &[
    // 1: jobs, meta, node admin state.
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
     CREATE TABLE jobs (
        id INTEGER PRIMARY KEY,
        state TEXT NOT NULL,
        user_id INTEGER NOT NULL,
        end_time INTEGER,
        record TEXT NOT NULL
     );
     CREATE INDEX jobs_state ON jobs(state);
     CREATE INDEX jobs_end ON jobs(end_time);
     CREATE TABLE nodes (name TEXT PRIMARY KEY, record TEXT NOT NULL);",
    // 2: the association table (gsacctmgr) and fair-share usage per association.
    "CREATE TABLE acct (kind TEXT NOT NULL, key TEXT NOT NULL, record TEXT NOT NULL,
        PRIMARY KEY (kind, key));
     CREATE TABLE usage (account TEXT NOT NULL, user TEXT NOT NULL, usage REAL NOT NULL,
        PRIMARY KEY (account, user));
     CREATE TABLE usage_jobs (id INTEGER PRIMARY KEY, counted_until INTEGER NOT NULL);",
    // 3: reservations (scontrol create reservation), one JSON record each.
    "CREATE TABLE reservations (name TEXT PRIMARY KEY, record TEXT NOT NULL);",
    // 4: hourly cluster utilization (allocated CPU fraction) for learned low-load windows.
    "CREATE TABLE load_hours (hour INTEGER PRIMARY KEY, cpu_frac REAL NOT NULL);",
    // 5: job steps (gsrun): one row per step, the record as JSON (`gsched_proto::step::StepInfo`).
    "CREATE TABLE steps (job_id INTEGER NOT NULL, step_id INTEGER NOT NULL,
        state TEXT NOT NULL, record TEXT NOT NULL, PRIMARY KEY (job_id, step_id));
     CREATE INDEX steps_state ON steps(state);",
    // 6: GPU usage samples from the nodes' heartbeats, kept 14 days; job_id
    // NULL is the whole GPU, else one job's part of it.
    "CREATE TABLE gpu_samples (node TEXT NOT NULL, time INTEGER NOT NULL, gpu INTEGER NOT NULL,
        job_id INTEGER, util INTEGER NOT NULL, mem_mb INTEGER NOT NULL);
     CREATE INDEX gpu_samples_time ON gpu_samples(time);
     CREATE INDEX gpu_samples_job ON gpu_samples(job_id);",
    // 7: hourly usage of each node (load, GPU, memory, network) from the heartbeats' load
    // samples, kept `UsageHistoryDays` (store/usage_hours.rs).
    "CREATE TABLE node_hours (node TEXT NOT NULL, hour INTEGER NOT NULL,
        samples INTEGER NOT NULL, cpu_load_pct REAL NOT NULL, gpu_util_pct REAL,
        mem_used_mb REAL, mem_used_max_mb INTEGER, mem_total_mb INTEGER,
        net_rx_bytes INTEGER, net_tx_bytes INTEGER, PRIMARY KEY (node, hour));
     CREATE INDEX node_hours_hour ON node_hours(hour);",
    // 8: what a job needs only at launch (its batch script, environment and arguments), out
    // of the job's record: written once at submission, read at launch and when asked for
    // (`gsacct -B`, a full query). An array's tasks use their first task's row. Records
    // stored before this version keep them inline and have no row here.
    "CREATE TABLE job_payloads (id INTEGER PRIMARY KEY, payload TEXT NOT NULL);",
];

mod gpu_samples;
pub use gpu_samples::{GpuUsageReader, GpuWindow};
mod usage_hours;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot create state directory {path}: {source} (check StateSaveLocation and its permissions)")]
    CreateDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("state store {path}: {source}")]
    Sqlite {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("state store {path} has schema version {found}, newer than this gsctld understands ({SCHEMA_VERSION}); run a newer gsctld")]
    TooNew { path: PathBuf, found: u32 },
    #[error("state store {path}: record of {what} is corrupt: {detail}")]
    Corrupt {
        path: PathBuf,
        what: String,
        detail: String,
    },
}

/// The open store.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

/// One stored job row.
#[derive(Debug, Clone)]
pub struct StoredJob {
    pub id: JobId,
    pub record: String,
}

impl Store {
    /// Opens (creating if needed) `<dir>/gsched.db` and brings the schema up to date. With
    /// `fsync`, every commit is flushed to the disk (survives power loss); without, a commit
    /// is in the operating system when it returns (survives any crash of gsctld itself).
    pub fn open(dir: &Path, fsync: bool) -> Result<Store, StoreError> {
        std::fs::create_dir_all(dir).map_err(|source| StoreError::CreateDir {
            path: dir.to_path_buf(),
            source,
        })?;
        let path = dir.join(DB_FILE);
        let conn = Connection::open(&path).map_err(|source| StoreError::Sqlite {
            path: path.clone(),
            source,
        })?;
        let mut store = Store { conn, path };
        store.init(fsync)?;
        Ok(store)
    }

    fn err(&self) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
        move |source| StoreError::Sqlite {
            path: self.path.clone(),
            source,
        }
    }

    fn init(&mut self, fsync: bool) -> Result<(), StoreError> {
        let path = self.path.clone();
        let e = |source| StoreError::Sqlite {
            path: path.clone(),
            source,
        };
        self.conn
            .execute_batch(&format!(
                "PRAGMA journal_mode=WAL; PRAGMA synchronous={}; PRAGMA foreign_keys=ON; PRAGMA busy_timeout=5000;",
                if fsync { "FULL" } else { "NORMAL" }
            ))
            .map_err(e)?;
        let version: u32 = self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(e)?;
        if version > SCHEMA_VERSION {
            return Err(StoreError::TooNew {
                path: self.path.clone(),
                found: version,
            });
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
            let tx = self.conn.transaction().map_err(e)?;
            tx.execute_batch(sql).map_err(e)?;
            tx.execute_batch(&format!("PRAGMA user_version = {}", i + 1))
                .map_err(e)?;
            tx.commit().map_err(e)?;
        }
        Ok(())
    }

    /// The next job id to hand out (1 on a new store).
    pub fn next_job_id(&self) -> Result<JobId, StoreError> {
        let v: Option<String> = self
            .conn
            .query_row(
                "SELECT value FROM meta WHERE key = 'next_job_id'",
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(self.err())?;
        let from_meta = v.and_then(|s| s.parse::<JobId>().ok()).unwrap_or(1);
        let max: Option<i64> = self
            .conn
            .query_row("SELECT MAX(id) FROM jobs", [], |r| r.get(0))
            .map_err(self.err())?;
        Ok(from_meta.max(max.unwrap_or(0) as JobId + 1))
    }

    /// Inserts a new job and advances the id counter in one transaction.
    pub fn insert_job(
        &mut self,
        id: JobId,
        state: JobState,
        user_id: u32,
        record: &str,
        payload: Option<&str>,
    ) -> Result<(), StoreError> {
        let payloads: Vec<(JobId, &str)> = payload.map(|p| (id, p)).into_iter().collect();
        self.insert_jobs(
            &[(id, state, user_id, record.to_string())],
            &payloads,
            id + 1,
        )
    }

    /// Inserts several new jobs (an array's tasks) with their payloads (see
    /// [`Store::load_payload`]) and advances the id counter past them, in one transaction
    /// (one commit for the whole array). Inside a batch ([`Store::begin_batch`]) this is a
    /// savepoint: on error the rows are rolled back and the rest of the batch stays.
    pub fn insert_jobs(
        &mut self,
        rows: &[(JobId, JobState, u32, String)],
        payloads: &[(JobId, &str)],
        next_id: JobId,
    ) -> Result<(), StoreError> {
        let path = self.path.clone();
        let e = |source| StoreError::Sqlite {
            path: path.clone(),
            source,
        };
        let tx = self.conn.savepoint().map_err(e)?;
        {
            let mut ins = tx
                .prepare_cached(
                    "INSERT INTO jobs (id, state, user_id, end_time, record) VALUES (?1, ?2, ?3, NULL, ?4)",
                )
                .map_err(e)?;
            for (id, state, user_id, record) in rows {
                ins.execute(params![id, state.long(), user_id, record])
                    .map_err(e)?;
            }
            let mut ins = tx
                .prepare_cached("INSERT INTO job_payloads (id, payload) VALUES (?1, ?2)")
                .map_err(e)?;
            for (id, payload) in payloads {
                ins.execute(params![id, payload]).map_err(e)?;
            }
        }
        tx.prepare_cached(
            "INSERT INTO meta (key, value) VALUES ('next_job_id', ?1)
             ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        )
        .and_then(|mut s| s.execute(params![next_id.to_string()]))
        .map_err(e)?;
        tx.commit().map_err(e)
    }

    /// One job's stored record, whatever its age (an array's first task, which holds the
    /// array's script, may have ended long before its other tasks).
    pub fn load_job(&self, id: JobId) -> Result<Option<String>, StoreError> {
        self.conn
            .query_row("SELECT record FROM jobs WHERE id = ?1", params![id], |r| {
                r.get(0)
            })
            .optional()
            .map_err(self.err())
    }

    /// The payload stored with job `id` at submission (its batch script, environment and
    /// arguments, as JSON), or `None` for a job stored without one (before schema 8, or an
    /// array task other than the first).
    pub fn load_payload(&self, id: JobId) -> Result<Option<String>, StoreError> {
        self.conn
            .prepare_cached("SELECT payload FROM job_payloads WHERE id = ?1")
            .and_then(|mut s| s.query_row(params![id], |r| r.get(0)).optional())
            .map_err(self.err())
    }

    /// Rewrites a job's record (state changes, allocation, exit status).
    pub fn update_job(
        &mut self,
        id: JobId,
        state: JobState,
        end_time: Option<i64>,
        record: &str,
    ) -> Result<(), StoreError> {
        let n = self
            .conn
            .prepare_cached("UPDATE jobs SET state = ?2, end_time = ?3, record = ?4 WHERE id = ?1")
            .and_then(|mut s| s.execute(params![id, state.long(), end_time, record]))
            .map_err(self.err())?;
        if n != 1 {
            return Err(StoreError::Corrupt {
                path: self.path.clone(),
                what: format!("job {id}"),
                detail: "row missing on update".into(),
            });
        }
        Ok(())
    }

    /// Runs `f` inside one transaction (several job updates committed together). A savepoint:
    /// on its own a transaction, inside a batch ([`Store::begin_batch`]) part of it, undone
    /// alone on error.
    pub fn transaction<T>(
        &mut self,
        f: impl FnOnce(&mut Store) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.conn
            .execute_batch("SAVEPOINT gs_tx")
            .map_err(self.err())?;
        let r = f(self).and_then(|v| {
            self.conn
                .execute_batch("RELEASE gs_tx")
                .map_err(self.err())
                .map(|()| v)
        });
        if r.is_err() {
            // Undo (a failed RELEASE at the top, a commit, may leave the transaction open).
            let _ = self.conn.execute_batch("ROLLBACK TO gs_tx; RELEASE gs_tx");
        }
        r
    }

    /// Opens the transaction of a batch of submissions: until [`Store::commit_batch`] or
    /// [`Store::rollback_batch`], every change joins it (and [`Store::insert_jobs`] nests as a
    /// savepoint). Nothing of it is durable before the commit.
    pub fn begin_batch(&mut self) -> Result<(), StoreError> {
        self.conn.execute_batch("BEGIN").map_err(self.err())
    }

    /// Commits the batch's transaction: one commit, so one fsync under `StateSyncMode=FULL`.
    /// On error the transaction may still be open: call [`Store::rollback_batch`].
    pub fn commit_batch(&mut self) -> Result<(), StoreError> {
        self.conn.execute_batch("COMMIT").map_err(self.err())
    }

    /// Rolls back whatever of the batch's transaction is still open (SQLite may have ended it
    /// already after an I/O error).
    pub fn rollback_batch(&mut self) {
        if self.in_transaction() {
            if let Err(e) = self.conn.execute_batch("ROLLBACK") {
                tracing::error!("state store {}: rollback failed: {e}", self.path.display());
            }
        }
    }

    /// A transaction is open (a batch that SQLite has not given up).
    pub fn in_transaction(&self) -> bool {
        !self.conn.is_autocommit()
    }

    /// Jobs still active, plus finished ones that ended at or after `ended_since`.
    pub fn load_jobs(&self, ended_since: i64) -> Result<Vec<StoredJob>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, record FROM jobs
                 WHERE state IN ('PENDING','RUNNING','COMPLETING') OR end_time >= ?1
                 ORDER BY id",
            )
            .map_err(self.err())?;
        let rows = stmt
            .query_map(params![ended_since], |r| {
                Ok(StoredJob {
                    id: r.get(0)?,
                    record: r.get(1)?,
                })
            })
            .map_err(self.err())?;
        rows.collect::<Result<Vec<_>, _>>().map_err(self.err())
    }

    /// Rows of jobs that had not ended before `ended_since` (all with `None`), of these users
    /// (all when empty), in id order, read through a connection of its own opened read-only
    /// on `db` (the path of [`Store::path`]): WAL lets it read while the controller writes,
    /// so a long accounting query does not hold the controller's state.
    pub fn read_history(
        db: &Path,
        ended_since: Option<i64>,
        user_ids: &[u32],
    ) -> Result<Vec<StoredJob>, StoreError> {
        let err = |source| StoreError::Sqlite {
            path: db.to_path_buf(),
            source,
        };
        let conn = Connection::open_with_flags(
            db,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(err)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(err)?;
        let mut sql = String::from("SELECT id, record FROM jobs WHERE 1=1");
        if let Some(t) = ended_since {
            sql.push_str(&format!(" AND (end_time IS NULL OR end_time >= {t})"));
        }
        if !user_ids.is_empty() {
            let list: Vec<String> = user_ids.iter().map(u32::to_string).collect();
            sql.push_str(&format!(" AND user_id IN ({})", list.join(",")));
        }
        sql.push_str(" ORDER BY id");
        let mut stmt = conn.prepare(&sql).map_err(err)?;
        let rows = stmt
            .query_map([], |r| {
                Ok(StoredJob {
                    id: r.get(0)?,
                    record: r.get(1)?,
                })
            })
            .map_err(err)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(err)
    }

    /// The payloads of jobs `ids` (see [`Store::load_payload`]) that have one, read through a
    /// read-only connection of its own as [`Store::read_history`] does.
    pub fn read_payloads(
        db: &Path,
        ids: &[JobId],
    ) -> Result<std::collections::HashMap<JobId, String>, StoreError> {
        let err = |source| StoreError::Sqlite {
            path: db.to_path_buf(),
            source,
        };
        let conn = Connection::open_with_flags(
            db,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(err)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(err)?;
        let mut stmt = conn
            .prepare("SELECT payload FROM job_payloads WHERE id = ?1")
            .map_err(err)?;
        let mut out = std::collections::HashMap::new();
        for &id in ids {
            if out.contains_key(&id) {
                continue;
            }
            if let Some(p) = stmt
                .query_row(params![id], |r| r.get::<_, String>(0))
                .optional()
                .map_err(err)?
            {
                out.insert(id, p);
            }
        }
        Ok(out)
    }

    pub fn save_node(&mut self, name: &str, record: &str) -> Result<(), StoreError> {
        self.conn
            .prepare_cached(
                "INSERT INTO nodes (name, record) VALUES (?1, ?2)
                 ON CONFLICT(name) DO UPDATE SET record = excluded.record",
            )
            .and_then(|mut s| s.execute(params![name, record]))
            .map_err(self.err())?;
        Ok(())
    }

    pub fn load_nodes(&self) -> Result<Vec<(String, String)>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT name, record FROM nodes")
            .map_err(self.err())?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(self.err())?;
        rows.collect::<Result<Vec<_>, _>>().map_err(self.err())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every stored reservation, as (name, record).
    pub fn load_reservations(&self) -> Result<Vec<(String, String)>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT name, record FROM reservations ORDER BY name")
            .map_err(self.err())?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(self.err())?;
        rows.collect::<Result<Vec<_>, _>>().map_err(self.err())
    }

    pub fn save_reservation(&mut self, name: &str, record: &str) -> Result<(), StoreError> {
        self.conn
            .prepare_cached(
                "INSERT INTO reservations (name, record) VALUES (?1, ?2)
                 ON CONFLICT(name) DO UPDATE SET record = excluded.record",
            )
            .and_then(|mut s| s.execute(params![name, record]))
            .map_err(self.err())?;
        Ok(())
    }

    pub fn delete_reservation(&mut self, name: &str) -> Result<(), StoreError> {
        self.conn
            .prepare_cached("DELETE FROM reservations WHERE name = ?1")
            .and_then(|mut s| s.execute(params![name]))
            .map_err(self.err())?;
        Ok(())
    }

    /// Stores the mean allocated-CPU fraction of the hour starting at `hour` (epoch seconds),
    /// replacing an earlier value for it.
    pub fn save_load_hour(&mut self, hour: i64, frac: f64) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT INTO load_hours (hour, cpu_frac) VALUES (?1, ?2)
                 ON CONFLICT(hour) DO UPDATE SET cpu_frac = excluded.cpu_frac",
                params![hour, frac],
            )
            .map_err(self.err())?;
        Ok(())
    }

    /// The hourly utilization from `since` on, oldest first.
    pub fn load_load_hours(&self, since: i64) -> Result<Vec<(i64, f64)>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT hour, cpu_frac FROM load_hours WHERE hour >= ?1 ORDER BY hour")
            .map_err(self.err())?;
        let rows = stmt
            .query_map(params![since], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(self.err())?;
        rows.collect::<Result<Vec<_>, _>>().map_err(self.err())
    }

    /// Every stored record of one kind of the association table (`account`, `user`,
    /// `assoc`, `qos`), as (key, record).
    pub fn load_acct(&self, kind: &str) -> Result<Vec<(String, String)>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT key, record FROM acct WHERE kind = ?1 ORDER BY key")
            .map_err(self.err())?;
        let rows = stmt
            .query_map(params![kind], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(self.err())?;
        rows.collect::<Result<Vec<_>, _>>().map_err(self.err())
    }

    /// Writes and deletes association-table records in one transaction: `Some(record)`
    /// stores, `None` deletes.
    pub fn save_acct(
        &mut self,
        changes: &[(&str, String, Option<String>)],
    ) -> Result<(), StoreError> {
        self.transaction(|s| {
            for (kind, key, record) in changes {
                let r = match record {
                    Some(rec) => s.conn.execute(
                        "INSERT INTO acct (kind, key, record) VALUES (?1, ?2, ?3)
                         ON CONFLICT(kind, key) DO UPDATE SET record = excluded.record",
                        params![kind, key, rec],
                    ),
                    None => s.conn.execute(
                        "DELETE FROM acct WHERE kind = ?1 AND key = ?2",
                        params![kind, key],
                    ),
                };
                r.map_err(s.err())?;
            }
            Ok(())
        })
    }

    /// Replaces the stored fair-share usage: decayed usage per (account, user) as of `at`,
    /// and per job the time up to which its run was counted, in one transaction (so a
    /// restarted controller neither loses nor counts twice).
    pub fn save_usage(
        &mut self,
        rows: &[(String, String, f64)],
        counted: &[(JobId, i64)],
        at: i64,
    ) -> Result<(), StoreError> {
        self.transaction(|s| {
            let e = s.err();
            s.conn
                .execute_batch("DELETE FROM usage; DELETE FROM usage_jobs;")
                .map_err(&e)?;
            for (a, u, v) in rows {
                s.conn
                    .prepare_cached("INSERT INTO usage (account, user, usage) VALUES (?1, ?2, ?3)")
                    .and_then(|mut st| st.execute(params![a, u, v]))
                    .map_err(&e)?;
            }
            for (id, t) in counted {
                s.conn
                    .prepare_cached("INSERT INTO usage_jobs (id, counted_until) VALUES (?1, ?2)")
                    .and_then(|mut st| st.execute(params![id, t]))
                    .map_err(&e)?;
            }
            s.conn
                .execute(
                    "INSERT INTO meta (key, value) VALUES ('usage_at', ?1)
                     ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                    params![at.to_string()],
                )
                .map_err(&e)?;
            Ok(())
        })
    }

    /// The stored usage: rows, per-job counted times, and when it was decayed last.
    #[allow(clippy::type_complexity)]
    pub fn load_usage(
        &self,
    ) -> Result<(Vec<(String, String, f64)>, Vec<(JobId, i64)>, Option<i64>), StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT account, user, usage FROM usage ORDER BY account, user")
            .map_err(self.err())?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .map_err(self.err())?
            .collect::<Result<Vec<_>, _>>()
            .map_err(self.err())?;
        let mut stmt = self
            .conn
            .prepare("SELECT id, counted_until FROM usage_jobs")
            .map_err(self.err())?;
        let counted = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(self.err())?
            .collect::<Result<Vec<_>, _>>()
            .map_err(self.err())?;
        let at: Option<String> = self
            .conn
            .query_row("SELECT value FROM meta WHERE key = 'usage_at'", [], |r| {
                r.get(0)
            })
            .optional()
            .map_err(self.err())?;
        Ok((rows, counted, at.and_then(|s| s.parse().ok())))
    }
}

/// Job steps (`gsrun`): rows of the `steps` table.
impl Store {
    /// Inserts or replaces a step's row.
    pub fn save_step(
        &mut self,
        job_id: JobId,
        step_id: u32,
        state: &str,
        record: &str,
    ) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT OR REPLACE INTO steps (job_id, step_id, state, record) VALUES (?1, ?2, ?3, ?4)",
                rusqlite::params![job_id, step_id, state, record],
            )
            .map_err(self.err())?;
        Ok(())
    }

    /// The next free step id of a job (0 for its first step).
    pub fn next_step_id(&self, job_id: JobId) -> Result<u32, StoreError> {
        let max: Option<u32> = self
            .conn
            .query_row(
                "SELECT MAX(step_id) FROM steps WHERE job_id = ?1",
                [job_id],
                |r| r.get(0),
            )
            .map_err(self.err())?;
        Ok(max.map_or(0, |m| m + 1))
    }

    /// The jobs with a step in `state`.
    pub fn jobs_with_steps_in(
        &self,
        state: &str,
    ) -> Result<std::collections::BTreeSet<JobId>, StoreError> {
        let mut st = self
            .conn
            .prepare("SELECT DISTINCT job_id FROM steps WHERE state = ?1")
            .map_err(self.err())?;
        let rows = st
            .query_map([state], |r| r.get::<_, JobId>(0))
            .map_err(self.err())?;
        rows.map(|r| r.map_err(self.err())).collect()
    }

    /// Step records: of the given jobs (all jobs when empty), or only those in `state`.
    pub fn load_steps(
        &self,
        job_ids: &[JobId],
        state: Option<&str>,
    ) -> Result<Vec<String>, StoreError> {
        let mut out = Vec::new();
        let mut push = |sql: &str, params: &[&dyn rusqlite::ToSql]| -> Result<(), StoreError> {
            let mut st = self.conn.prepare_cached(sql).map_err(self.err())?;
            let rows = st
                .query_map(params, |r| r.get::<_, String>(0))
                .map_err(self.err())?;
            for r in rows {
                out.push(r.map_err(self.err())?);
            }
            Ok(())
        };
        let st = state.unwrap_or("%");
        if job_ids.is_empty() {
            push(
                "SELECT record FROM steps WHERE state LIKE ?1 ORDER BY job_id, step_id",
                &[&st],
            )?;
        } else {
            for id in job_ids {
                push(
                    "SELECT record FROM steps WHERE job_id = ?1 AND state LIKE ?2 ORDER BY step_id",
                    &[id, &st],
                )?;
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_survive_reopen_and_ids_advance() {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut s = Store::open(dir.path(), true).unwrap();
            assert_eq!(s.next_job_id().unwrap(), 1);
            s.insert_job(1, JobState::Pending, 1000, "{\"a\":1}", None)
                .unwrap();
            s.insert_job(2, JobState::Pending, 1000, "{\"a\":2}", None)
                .unwrap();
            s.update_job(1, JobState::Completed, Some(100), "{\"a\":3}")
                .unwrap();
        }
        let s = Store::open(dir.path(), true).unwrap();
        assert_eq!(s.next_job_id().unwrap(), 3);
        let all = s.load_jobs(0).unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].record, "{\"a\":3}");
        // A finished job older than the cut-off is not loaded; pending ones always are.
        let recent = s.load_jobs(101).unwrap();
        assert_eq!(recent.len(), 1);
        assert_eq!(recent[0].id, 2);
    }

    #[test]
    fn payloads_are_stored_with_their_jobs_and_read_by_id() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join(DB_FILE);
        {
            let mut s = Store::open(dir.path(), false).unwrap();
            s.insert_job(1, JobState::Pending, 0, "{}", Some("{\"script\":\"a\"}"))
                .unwrap();
            s.insert_jobs(
                &[
                    (2, JobState::Pending, 0, "{}".into()),
                    (3, JobState::Pending, 0, "{}".into()),
                ],
                &[(2, "{\"script\":\"b\"}")],
                4,
            )
            .unwrap();
            s.insert_job(4, JobState::Pending, 0, "{}", None).unwrap();
            assert_eq!(
                s.load_payload(2).unwrap().as_deref(),
                Some("{\"script\":\"b\"}")
            );
            assert_eq!(s.load_payload(3).unwrap(), None);
            // A job refused by the store leaves no payload behind.
            assert!(s
                .insert_job(4, JobState::Pending, 0, "{}", Some("x"))
                .is_err());
            assert_eq!(s.load_payload(4).unwrap(), None);
        }
        let got = Store::read_payloads(&db, &[1, 2, 3, 4, 1]).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[&1], "{\"script\":\"a\"}");
    }

    #[test]
    fn newer_schema_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        drop(Store::open(dir.path(), true).unwrap());
        let c = Connection::open(dir.path().join("gsched.db")).unwrap();
        c.execute_batch("PRAGMA user_version = 99").unwrap();
        drop(c);
        let e = Store::open(dir.path(), true).unwrap_err().to_string();
        assert!(e.contains("newer than this gsctld"), "{e}");
    }

    #[test]
    fn acct_records_and_usage_survive_reopen() {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut s = Store::open(dir.path(), true).unwrap();
            s.save_acct(&[
                ("qos", "normal".into(), Some("{}".into())),
                ("qos", "high".into(), Some("{\"p\":1}".into())),
                ("account", "physics".into(), Some("{}".into())),
            ])
            .unwrap();
            s.save_acct(&[("qos", "normal".into(), None)]).unwrap();
            s.save_usage(&[("physics".into(), "bob".into(), 12.5)], &[(7, 100)], 100)
                .unwrap();
            // Saving again replaces, it does not add.
            s.save_usage(&[("physics".into(), "bob".into(), 20.0)], &[(7, 150)], 150)
                .unwrap();
        }
        let s = Store::open(dir.path(), true).unwrap();
        assert_eq!(
            s.load_acct("qos").unwrap(),
            vec![("high".to_string(), "{\"p\":1}".to_string())]
        );
        assert_eq!(s.load_acct("account").unwrap().len(), 1);
        let (rows, counted, at) = s.load_usage().unwrap();
        assert_eq!(rows, vec![("physics".into(), "bob".into(), 20.0)]);
        assert_eq!(counted, vec![(7, 150)]);
        assert_eq!(at, Some(150));
    }

    #[test]
    fn a_batch_commits_once_and_a_failed_insert_rolls_back_alone() {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut s = Store::open(dir.path(), true).unwrap();
            s.begin_batch().unwrap();
            assert!(s.in_transaction());
            s.insert_job(1, JobState::Pending, 0, "{\"a\":1}", None)
                .unwrap();
            // The same id again: that insert fails and is undone; the batch goes on.
            assert!(s
                .insert_jobs(&[(1, JobState::Pending, 0, "{}".into())], &[], 9)
                .is_err());
            s.insert_job(2, JobState::Pending, 0, "{\"a\":2}", None)
                .unwrap();
            // A multi-row change nests too, and fails alone.
            assert!(s
                .transaction(|s| {
                    s.update_job(2, JobState::Running, None, "{\"b\":2}")?;
                    s.update_job(7, JobState::Running, None, "{}")
                })
                .is_err());
            assert!(s.in_transaction());
            // Nothing is visible outside before the commit.
            let other = Connection::open(dir.path().join(DB_FILE)).unwrap();
            let n: i64 = other
                .query_row("SELECT COUNT(*) FROM jobs", [], |r| r.get(0))
                .unwrap();
            assert_eq!(n, 0);
            s.commit_batch().unwrap();
            assert!(!s.in_transaction());
            // Outside a batch an insert is its own transaction again.
            s.insert_job(3, JobState::Pending, 0, "{\"a\":3}", None)
                .unwrap();
            assert!(!s.in_transaction());
        }
        let s = Store::open(dir.path(), true).unwrap();
        let ids: Vec<JobId> = s.load_jobs(0).unwrap().iter().map(|j| j.id).collect();
        assert_eq!(ids, vec![1, 2, 3]);
        assert_eq!(s.load_job(1).unwrap().as_deref(), Some("{\"a\":1}"));
        assert_eq!(s.load_job(2).unwrap().as_deref(), Some("{\"a\":2}"));
        assert_eq!(s.next_job_id().unwrap(), 4);
    }

    #[test]
    fn failed_transaction_rolls_back() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(dir.path(), true).unwrap();
        s.insert_job(1, JobState::Pending, 0, "{}", None).unwrap();
        let r = s.transaction(|s| {
            s.update_job(1, JobState::Running, None, "{\"x\":1}")?;
            s.update_job(7, JobState::Running, None, "{}")
        });
        assert!(r.is_err());
        assert_eq!(s.load_jobs(0).unwrap()[0].record, "{}");
    }
}
