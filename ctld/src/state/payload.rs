//! A job's payload, its batch script, environment and arguments, lives in the store, not in
//! the controller's memory.
//!
//! The payload is needed when the job launches and when someone asks for it (`gsacct -B`, a
//! full query), never by the scheduler. Kept in every queued job's record it was the larger
//! part of gsctld's memory per job (a login shell's environment is one to three kilobytes)
//! and was written again with the record at every change of the job's state. It is now
//! stored once, at submission, in a table of its own (`job_payloads`, store schema 8), and
//! read back by id at launch, as slurmctld keeps scripts and environments in files under
//! `StateSaveLocation`. An array's tasks use their first task's payload. Records stored
//! before schema 8 keep their payload inline and have no row; they launch as before.

use super::*;
use gsched_proto::environment::Environment;

/// What [`Payload::take`] moves out of a spec, as stored in `job_payloads`.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct Payload {
    #[serde(default)]
    script: String,
    #[serde(default, skip_serializing_if = "Environment::is_empty")]
    environment: Environment,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    argv: Vec<String>,
}

impl Payload {
    /// Moves the payload out of `spec`, leaving its fields empty.
    pub(crate) fn take(spec: &mut JobSpec) -> Payload {
        Payload {
            script: std::mem::take(&mut spec.script),
            environment: std::mem::take(&mut spec.environment),
            argv: std::mem::take(&mut spec.argv),
        }
    }

    /// Puts the payload back into `spec`.
    pub(crate) fn restore(self, spec: &mut JobSpec) {
        spec.script = self.script;
        spec.environment = self.environment;
        spec.argv = self.argv;
    }

    pub(crate) fn to_json(&self) -> Result<String, ApiError> {
        serde_json::to_string(self).map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))
    }

    pub(crate) fn from_json(id: JobId, text: &str) -> Result<Payload, String> {
        serde_json::from_str(text)
            .map_err(|e| format!("the stored payload of job {id} is unreadable: {e}"))
    }
}

/// The job whose payload `info` uses: its array's first task, else itself.
pub(crate) fn payload_owner(info: &JobInfo) -> JobId {
    info.array.map_or(info.job_id, |a| a.job_id)
}

/// Whether `spec` still holds a payload in memory (a record from before schema 8).
fn holds_payload(spec: &JobSpec) -> bool {
    !spec.script.is_empty() || !spec.environment.is_empty() || !spec.argv.is_empty()
}

impl State {
    /// `info` with its payload, read from the store; `Ok(None)` when the record is complete
    /// as it is (a record from before schema 8, which holds its payload; a job submitted
    /// without one). The error says what could not be read.
    pub(super) fn with_payload(&self, info: &JobInfo) -> Result<Option<JobInfo>, String> {
        let owner = payload_owner(info);
        let text = self.store.load_payload(owner).map_err(|e| {
            format!("the batch script of job {owner} could not be read from the state store: {e}")
        })?;
        match text {
            Some(text) => {
                let payload = Payload::from_json(owner, &text)?;
                let mut full = info.clone();
                payload.restore(&mut full.spec);
                Ok(Some(full))
            }
            // An array task of an array stored before schema 8: its array's spec has it.
            None => Ok(self.launch_info(info)),
        }
    }

    /// A copy of `job`'s record for a query (with the name and the submit line in its
    /// spec): with its payload read from the store when `full`, without any payload
    /// otherwise.
    pub(super) fn queried(&self, job: &Job, full: bool) -> JobInfo {
        let info = &job.info;
        let mut out = if full {
            match self.with_payload(info) {
                Ok(Some(j)) => j,
                Ok(None) => info.clone(),
                Err(e) => {
                    tracing::error!("{e}");
                    info.clone()
                }
            }
        } else {
            let mut out = info.clone();
            if holds_payload(&info.spec) {
                // A record from before schema 8 (copied once, then cleared).
                Payload::take(&mut out.spec);
            }
            out
        };
        job.complete_spec(&mut out);
        out.epilog_running = self.epilog_jobs.contains(&info.job_id);
        out.configuring = self.prolog_ctld_jobs.contains(&info.job_id);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{register_all, spec, state, ROOT};
    use super::*;
    use rusqlite::Connection;

    fn with_payload() -> JobSpec {
        JobSpec {
            environment: vec![("X".to_string(), "1".to_string())].into(),
            argv: vec!["a1".into()],
            ..spec(1)
        }
    }

    fn launches(st: &mut State, now: i64) -> Vec<gsched_proto::api::LaunchRequest> {
        let effects = st.schedule(now);
        super::super::launches(st, &effects, now)
    }

    fn outside(dir: &std::path::Path) -> Connection {
        Connection::open(dir.join("s").join(crate::store::DB_FILE)).unwrap()
    }

    #[test]
    fn a_job_launches_with_the_payload_its_memory_does_not_hold() {
        let dir = tempfile::tempdir().unwrap();
        let a;
        {
            let mut st = state(dir.path());
            a = st.submit(with_payload(), ROOT, 1000).unwrap();
            let held = &st.jobs[&a].info.spec;
            assert!(held.script.is_empty() && held.environment.is_empty() && held.argv.is_empty());
            // Nor does the stored record: the payload has a row of its own.
            let rec: String = outside(dir.path())
                .query_row("SELECT record FROM jobs WHERE id = ?1", [a], |r| r.get(0))
                .unwrap();
            assert!(
                !rec.contains("\"a1\"") && !rec.contains("#!/bin/sh"),
                "{rec}"
            );
        }
        // After a restart too.
        let mut st = state(dir.path());
        register_all(&mut st, 1000);
        let l = launches(&mut st, 1001);
        assert_eq!(l.len(), 1);
        assert_eq!(l[0].script, "#!/bin/sh\ntrue\n");
        assert_eq!(l[0].argv, vec!["a1".to_string()]);
        assert!(l[0].environment.iter().any(|(k, v)| k == "X" && v == "1"));
        assert!(st.jobs[&a].info.spec.script.is_empty());
    }

    #[test]
    fn a_record_stored_before_schema_8_keeps_and_launches_its_inline_payload() {
        let dir = tempfile::tempdir().unwrap();
        let a;
        {
            let mut st = state(dir.path());
            a = st.submit(with_payload(), ROOT, 1000).unwrap();
        }
        // What an older gsctld stored: the payload in the record, no row.
        let c = outside(dir.path());
        let rec: String = c
            .query_row("SELECT record FROM jobs WHERE id = ?1", [a], |r| r.get(0))
            .unwrap();
        let mut v: serde_json::Value = serde_json::from_str(&rec).unwrap();
        v["info"]["spec"]["script"] = "#!/bin/sh\nold\n".into();
        v["info"]["spec"]["argv"] = serde_json::json!(["o1"]);
        c.execute(
            "UPDATE jobs SET record = ?2 WHERE id = ?1",
            rusqlite::params![a, v.to_string()],
        )
        .unwrap();
        c.execute("DELETE FROM job_payloads", []).unwrap();
        drop(c);
        let mut st = state(dir.path());
        let brief = st.query(&JobFilter::default(), true);
        assert!(brief[0].spec.script.is_empty() && brief[0].spec.argv.is_empty());
        assert_eq!(st.query(&JobFilter::default(), false)[0].spec.argv, ["o1"]);
        register_all(&mut st, 1000);
        let l = launches(&mut st, 1001);
        assert_eq!(l[0].script, "#!/bin/sh\nold\n");
        assert_eq!(l[0].argv, ["o1"]);
    }

    #[test]
    fn an_unreadable_payload_fails_the_job_instead_of_running_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(dir.path());
        let a = st.submit(with_payload(), ROOT, 1000).unwrap();
        let b = st.submit(with_payload(), ROOT, 1000).unwrap();
        outside(dir.path())
            .execute("UPDATE job_payloads SET payload = '{' WHERE id = ?1", [a])
            .unwrap();
        register_all(&mut st, 1000);
        let l = launches(&mut st, 1001);
        assert_eq!(l.iter().map(|r| r.job_id).collect::<Vec<_>>(), vec![b]);
        let j = &st.jobs[&a].info;
        assert_eq!(j.state, JobState::Failed);
        assert_eq!(j.reason, Reason::JobLaunchFailure);
        assert_eq!(st.jobs[&b].info.state, JobState::Running);
    }

    #[test]
    fn jobs_submitted_alike_share_one_spec_also_after_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, c);
        {
            let mut st = state(dir.path());
            a = st.submit(with_payload(), ROOT, 1000).unwrap();
            // Another environment and argument: the same options all the same.
            b = st
                .submit(
                    JobSpec {
                        argv: vec!["b1".into()],
                        ..spec(1)
                    },
                    ROOT,
                    1000,
                )
                .unwrap();
            c = st.submit(spec(2), ROOT, 1000).unwrap();
            let arc = |id: JobId| st.jobs[&id].info.spec.as_arc().clone();
            assert!(Arc::ptr_eq(&arc(a), &arc(b)));
            assert!(!Arc::ptr_eq(&arc(a), &arc(c)));
            // A change to one job stays with it.
            let e = st.update_job(
                &gsched_proto::api::JobUpdateRequest {
                    job_id: a,
                    name: Some("renamed".into()),
                    time_min: Some(Some(1)),
                    ..Default::default()
                },
                ROOT,
                1000,
            );
            assert!(e.is_ok(), "{e:?}");
            let arc = |id: JobId| st.jobs[&id].info.spec.as_arc().clone();
            assert!(!Arc::ptr_eq(&arc(a), &arc(b)));
            assert_eq!(st.jobs[&a].info.spec.time_min, Some(1));
            assert_eq!(st.jobs[&b].info.spec.time_min, None);
            // Names are the jobs' own, out of the shared spec and back in the record.
            assert_eq!(st.jobs[&a].record().spec.name, "renamed");
            assert_eq!(st.jobs[&b].record().spec.name, "j");
        }
        let mut st = state(dir.path());
        let d = st.submit(spec(1), ROOT, 1000).unwrap();
        let arc = |id: JobId| st.jobs[&id].info.spec.as_arc().clone();
        assert!(Arc::ptr_eq(&arc(b), &arc(d)));
        assert!(!Arc::ptr_eq(&arc(a), &arc(b)));
        register_all(&mut st, 1000);
        let l = launches(&mut st, 1001);
        let argv = |id: JobId| l.iter().find(|r| r.job_id == id).map(|r| r.argv.clone());
        assert_eq!(argv(a), Some(vec!["a1".to_string()]));
        assert_eq!(argv(b), Some(vec!["b1".to_string()]));
    }
}
