//! Group commit (`crate::group_commit`): a batch of submissions stored in one transaction of
//! the store, so that they share one commit (one fsync under `StateSyncMode=FULL`).
//!
//! Each submission runs exactly as on its own ([`State::submit`], [`State::submit_het`]),
//! whose store writes are savepoints: inside the batch a refused or failed job rolls back
//! alone and gets its own error, while the others stay in the batch. The batch is committed
//! once, and only then are ids handed out. If the commit fails (or the store gave up the
//! transaction midway), nothing of the batch is in the store, and the jobs are removed from
//! memory again: every submitter of the batch gets an error, none an id. The ids of such a
//! batch are not handed out again by this process, so that a commit reported as failed whose
//! pages reached the disk anyway (an fsync error after the write) cannot meet a later job of
//! the same id after a restart.

use super::*;
use gsched_proto::api::DeferralNote;

/// One submission of a batch.
#[derive(Debug)]
pub enum Submission {
    /// A job or an array.
    Job(Box<JobSpec>),
    /// A heterogeneous job: the leader first.
    Het(Vec<JobSpec>),
}

/// A submission's answer: its id (and, for a plain job, the deferral note gsbatch prints).
pub type BatchResult = Result<(JobId, Option<DeferralNote>), ApiError>;

impl State {
    /// Stores every submission of `batch` in one store transaction and answers each in order,
    /// after the commit. See the module documentation for what fails together and what alone.
    pub fn submit_batch(
        &mut self,
        batch: Vec<(Submission, Identity)>,
        now: i64,
    ) -> Vec<BatchResult> {
        let n = batch.len();
        let first = self.next_id;
        if let Err(e) = self.store.begin_batch() {
            return vec![Err(internal(e)); n];
        }
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut out = Vec::with_capacity(n);
            for (sub, who) in batch {
                out.push(match sub {
                    Submission::Job(spec) => self.submit(*spec, who, now).map(|id| (id, true)),
                    Submission::Het(specs) => {
                        self.submit_het(specs, who, now).map(|id| (id, false))
                    }
                });
                if !self.store.in_transaction() {
                    // SQLite ends a transaction by itself on some errors (disk full, I/O):
                    // what the batch wrote before is gone.
                    return Err(ApiError::new(
                        ErrorCode::Internal,
                        "the controller could not write its state store: the transaction was rolled back; submit the job again",
                    ));
                }
            }
            self.store.commit_batch().map_err(internal)?;
            Ok(out)
        }));
        let err = match run {
            Ok(Ok(out)) => {
                return out
                    .into_iter()
                    .map(|r| {
                        let (id, plain) = r?;
                        Ok((id, if plain { self.deferral_note(id, now) } else { None }))
                    })
                    .collect()
            }
            Ok(Err(e)) => e,
            Err(_) => ApiError::new(
                ErrorCode::Internal,
                "the controller hit a bug while storing the job (see its log); the job was not stored",
            ),
        };
        tracing::error!("a batch of {n} submissions was not stored: {}", err.message);
        self.store.rollback_batch();
        // Ids from `first` on belong to this batch only (the store hands out no id twice).
        drop(self.jobs.split_off(&first));
        self.arrays.retain(|&id, _| id < first);
        vec![Err(err); n]
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{spec, state, ROOT};
    use super::*;
    use rusqlite::Connection;

    fn named(name: &str) -> JobSpec {
        JobSpec {
            name: name.into(),
            ..spec(1)
        }
    }

    /// Another connection to the store: what is committed, seen from outside.
    fn outside(dir: &std::path::Path) -> Connection {
        Connection::open(dir.join("s").join(crate::store::DB_FILE)).unwrap()
    }

    fn stored_ids(dir: &std::path::Path) -> Vec<JobId> {
        let c = outside(dir);
        let mut s = c.prepare("SELECT id FROM jobs ORDER BY id").unwrap();
        let ids = s.query_map([], |r| r.get(0)).unwrap();
        ids.collect::<Result<_, _>>().unwrap()
    }

    #[test]
    fn a_failing_job_in_a_batch_fails_alone() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(dir.path());
        // The store refuses the row of a job named "insert-poison".
        outside(dir.path())
            .execute_batch(
                "CREATE TRIGGER refuse BEFORE INSERT ON jobs WHEN NEW.record LIKE '%insert-poison%'
                 BEGIN SELECT RAISE(ABORT, 'injected insert failure'); END;",
            )
            .unwrap();
        let bad_script = JobSpec {
            script: "echo no interpreter".into(),
            ..spec(1)
        };
        let array = JobSpec {
            array: Some("0-2".into()),
            ..spec(1)
        };
        let batch = vec![
            (Submission::Job(Box::new(named("a"))), ROOT),
            (Submission::Job(Box::new(bad_script)), ROOT),
            (Submission::Job(Box::new(named("b"))), ROOT),
            (Submission::Job(Box::new(named("insert-poison"))), ROOT),
            (Submission::Job(Box::new(array)), ROOT),
            (Submission::Het(vec![named("h0"), named("h1")]), ROOT),
            (Submission::Job(Box::new(named("c"))), ROOT),
        ];
        let r = st.submit_batch(batch, 1000);
        let ids: Vec<Option<JobId>> = r.iter().map(|r| r.as_ref().ok().map(|x| x.0)).collect();
        assert_eq!(
            ids,
            vec![Some(1), None, Some(2), None, Some(3), Some(6), Some(8)]
        );
        let e = r[1].as_ref().unwrap_err();
        assert!(
            e.message.contains("does not look like a batch script"),
            "{e:?}"
        );
        let e = r[3].as_ref().unwrap_err();
        assert_eq!(e.code, ErrorCode::Internal);
        assert!(e.message.contains("injected insert failure"), "{e:?}");
        // Committed: every accepted job, array task and het component, nothing else.
        let all: Vec<JobId> = (1..=8).collect();
        assert_eq!(stored_ids(dir.path()), all);
        assert_eq!(st.jobs.keys().copied().collect::<Vec<_>>(), all);
        assert!(!st.store.in_transaction());
        // A restarted controller sees the same jobs and goes on after them.
        drop(st);
        let mut st = state(dir.path());
        assert_eq!(st.jobs.keys().copied().collect::<Vec<_>>(), all);
        assert_eq!(st.arrays.len(), 1);
        assert_eq!(st.submit(named("d"), ROOT, 1001).unwrap(), 9);
    }

    #[test]
    fn a_failed_commit_stores_and_keeps_nothing_of_the_batch() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(dir.path());
        assert_eq!(st.submit(named("before"), ROOT, 1000).unwrap(), 1);
        // The row of a job named "commit-poison" adds a row that breaks a deferred foreign
        // key: the statements succeed, the COMMIT fails (and leaves the transaction open).
        outside(dir.path())
            .execute_batch(
                "CREATE TABLE parent (id INTEGER PRIMARY KEY);
                 CREATE TABLE child (p INTEGER REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED);
                 CREATE TRIGGER poison AFTER INSERT ON jobs WHEN NEW.record LIKE '%commit-poison%'
                 BEGIN INSERT INTO child VALUES (42); END;",
            )
            .unwrap();
        let array = JobSpec {
            array: Some("0-2".into()),
            ..spec(1)
        };
        let batch = vec![
            (Submission::Job(Box::new(named("x"))), ROOT),
            (Submission::Job(Box::new(named("commit-poison"))), ROOT),
            (Submission::Job(Box::new(array)), ROOT),
            (Submission::Het(vec![named("h0"), named("h1")]), ROOT),
        ];
        let r = st.submit_batch(batch, 1000);
        assert_eq!(r.len(), 4);
        for x in &r {
            let e = x.as_ref().unwrap_err();
            assert_eq!(e.code, ErrorCode::Internal, "{e:?}");
            assert!(e.message.contains("FOREIGN KEY"), "{e:?}");
        }
        assert!(!st.store.in_transaction());
        assert_eq!(stored_ids(dir.path()), vec![1]);
        assert_eq!(st.jobs.keys().copied().collect::<Vec<_>>(), vec![1]);
        assert!(st.arrays.is_empty());
        // The next job is stored; the failed batch's ids (2..=8) are not handed out again.
        assert_eq!(st.submit(named("after"), ROOT, 1001).unwrap(), 9);
        assert_eq!(stored_ids(dir.path()), vec![1, 9]);

        // A store that gives up the transaction midway (RAISE(ROLLBACK) stands for a disk
        // error): the jobs before it in the batch are gone too, and the jobs after it must
        // not be committed on their own.
        outside(dir.path())
            .execute_batch(
                "CREATE TRIGGER lose BEFORE INSERT ON jobs WHEN NEW.record LIKE '%rollback-poison%'
                 BEGIN SELECT RAISE(ROLLBACK, 'injected rollback'); END;",
            )
            .unwrap();
        let batch = vec![
            (Submission::Job(Box::new(named("y"))), ROOT),
            (Submission::Job(Box::new(named("rollback-poison"))), ROOT),
            (Submission::Job(Box::new(named("z"))), ROOT),
        ];
        let r = st.submit_batch(batch, 1002);
        assert!(r.iter().all(|x| x.is_err()), "{r:?}");
        assert!(!st.store.in_transaction());
        assert_eq!(stored_ids(dir.path()), vec![1, 9]);
        assert_eq!(st.jobs.keys().copied().collect::<Vec<_>>(), vec![1, 9]);
        drop(st);
        let st = state(dir.path());
        assert_eq!(st.jobs.keys().copied().collect::<Vec<_>>(), vec![1, 9]);
    }
}
