//! Job arrays in the controller.
//!
//! **Ids.** An array of n tasks takes a block of n consecutive job ids at submit: the array's
//! job id `N` is the first task's id, and the task at position p (indices sorted ascending)
//! has id `N + p`. Every task is an ordinary job (own id, own `JobIdRaw`, own row), so the
//! scheduler, cancel, completion and restart need no array special case; `N_K` is resolved
//! to a job id by position. Slurm instead keeps one pending meta-record and gives tasks new
//! ids as they start; clients only rely on `N_K`, `SLURM_ARRAY_JOB_ID`/`TASK_ID` and
//! distinct raw ids, which this keeps, and the ids of an array stay predictable.
//!
//! **Size.** The whole array is committed in one transaction. Its payload (script,
//! environment, arguments) is stored once, with the first task (`state/payload.rs`), and
//! every task shares one spec in memory, so a task costs a few hundred bytes in memory and
//! in the store. Arrays stored before schema 8 hold the payload in the first task's record;
//! their tasks launch with [`ArrayRt::spec`].
//!
//! **Throttle.** `%N` is applied when the queue is built: only as many of an array's pending
//! tasks as it has free run slots are offered to the scheduler core; the others wait with
//! reason `JobArrayTaskLimit`.

use super::*;
use gsched_proto::array::{self, ArrayTask};

/// An array the controller holds tasks of.
#[derive(Debug, Clone)]
pub struct ArrayRt {
    /// Every index, ascending; the task at position p has id `array job id + p`.
    pub indices: Vec<u32>,
    pub throttle: Option<u32>,
    /// The spec shared by all tasks (with the payload for an array stored before schema 8).
    pub spec: Arc<JobSpec>,
}

impl State {
    /// Parses the array specification of a submission (`None` for a plain job).
    pub(super) fn parse_array(&self, spec: &JobSpec) -> Result<Option<array::ArraySpec>, ApiError> {
        let Some(a) = &spec.array else {
            return Ok(None);
        };
        array::parse(a, Some(self.cfg.max_array_size))
            .map(Some)
            .map_err(|_| ApiError::plain(ErrorCode::InvalidArray))
    }

    /// Stores the tasks of a new array, built from the first task's record, in one
    /// transaction. Returns the array's job id.
    /// `first` comes without its payload, which is stored once, with the first task.
    pub(super) fn insert_array(
        &mut self,
        first: JobInfo,
        payload: &str,
        parsed: array::ArraySpec,
    ) -> Result<JobId, ApiError> {
        let base = first.job_id;
        let n = parsed.indices.len() as u32;
        let last = base
            .checked_add(n)
            .ok_or_else(|| ApiError::new(ErrorCode::Internal, "job ids exhausted"))?;
        let shared = first.spec.as_arc().clone();
        let template = first.clone();
        let task_of = |k: u32| ArrayTask {
            job_id: base,
            task_id: k,
            count: n,
            min: parsed.indices[0],
            max: parsed.indices[parsed.indices.len() - 1],
            step: array::common_step(&parsed.indices),
            throttle: parsed.throttle,
        };
        let mut jobs = Vec::with_capacity(parsed.indices.len());
        let mut rows = Vec::with_capacity(parsed.indices.len());
        for (p, &k) in parsed.indices.iter().enumerate() {
            let id = base + p as u32;
            let mut info = if p == 0 {
                first.clone()
            } else {
                JobInfo {
                    job_id: id,
                    ..template.clone()
                }
            };
            info.array = Some(task_of(k));
            // Basic priority falls with the id; a multifactor one (computed at submission)
            // is every task's alike, as their factors are.
            let basic =
                self.cfg.priority.priority_type != gsched_proto::config::PriorityType::Multifactor;
            if !info.held && basic && info.spec.priority.is_none() {
                info.priority = priority_for(id, info.nice());
            }
            let rec = StoredRecord {
                info,
                extra: JobExtra::default(),
            };
            let text = serde_json::to_string(&rec)
                .map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))?;
            rows.push((id, JobState::Pending, rec.info.user_id, text));
            jobs.push(rec.info);
        }
        self.store
            .insert_jobs(&rows, &[(base, payload)], last)
            .map_err(internal)?;
        drop(rows);
        self.next_id = last;
        for info in jobs {
            self.active.note(info.job_id, JobState::Pending);
            let id = info.job_id;
            let job = self.specs.job(info, JobExtra::default(), None);
            self.jobs.insert(id, job);
        }
        self.arrays.insert(
            base,
            ArrayRt {
                indices: parsed.indices,
                throttle: parsed.throttle,
                spec: shared,
            },
        );
        Ok(base)
    }

    /// Rebuilds the array table after loading jobs from the store.
    pub(super) fn rebuild_arrays(&mut self) -> Result<(), StoreError> {
        let mut masters: Vec<JobId> = self
            .jobs
            .values()
            .filter_map(|j| j.info.array.map(|a| a.job_id))
            .collect();
        masters.dedup();
        for m in masters {
            let spec = match self.jobs.get(&m) {
                Some(j) => j.info.spec.clone(),
                None => match self.store.load_job(m)? {
                    Some(text) => match serde_json::from_str::<StoredRecord>(&text) {
                        Ok(r) => r.info.spec,
                        Err(e) => {
                            tracing::error!("array {m}: unreadable first task: {e}");
                            continue;
                        }
                    },
                    None => {
                        tracing::error!("array {m}: first task missing from the store");
                        continue;
                    }
                },
            };
            let parsed = spec
                .array
                .as_deref()
                .and_then(|a| array::parse(a, None).ok());
            let Some(parsed) = parsed else {
                tracing::error!("array {m}: unreadable array specification");
                continue;
            };
            self.arrays.insert(
                m,
                ArrayRt {
                    indices: parsed.indices,
                    throttle: parsed.throttle,
                    spec: Arc::new(spec.into_inner()),
                },
            );
        }
        Ok(())
    }

    /// The job id of task `k` of array `n`, if such a task was ever submitted.
    pub fn array_task_id(&self, n: JobId, k: u32) -> Option<JobId> {
        let a = self.arrays.get(&n)?;
        let p = a.indices.binary_search(&k).ok()?;
        Some(n + p as u32)
    }

    /// The job ids a list of ids and `N_K` names select, in order: an array's job id selects
    /// every task still known; unknown names are kept (as the id, or `N` for `N_K`) so that
    /// callers report them.
    pub fn resolve_ids(&self, ids: &[JobId], tasks: &[(JobId, u32)]) -> Vec<JobId> {
        let mut out = Vec::with_capacity(ids.len() + tasks.len());
        for &id in ids {
            match self.arrays.get(&id) {
                Some(a) => {
                    let end = id + a.indices.len() as u32;
                    out.extend(self.jobs.range(id..end).map(|(&i, _)| i));
                }
                None => out.extend(self.het_ids(id)),
            }
        }
        for &(n, k) in tasks {
            match self.array_task_id(n, k) {
                Some(id) if self.jobs.contains_key(&id) => out.push(id),
                _ => out.push(n),
            }
        }
        out.dedup();
        out
    }

    /// The full spec to launch a job with (array tasks share their array's).
    pub(super) fn launch_info(&self, info: &JobInfo) -> Option<JobInfo> {
        let a = info.array?;
        if a.job_id == info.job_id {
            return None;
        }
        let rt = self.arrays.get(&a.job_id)?;
        let mut full = info.clone();
        full.spec = gsched_proto::job::SharedSpec::shared(&rt.spec);
        full.array = Some(a);
        Some(full)
    }

    /// Pending tasks held back by their array's throttle (`%N`), given the jobs now running.
    pub(super) fn throttled(&self) -> std::collections::HashSet<JobId> {
        let mut out = std::collections::HashSet::new();
        for (&n, a) in &self.arrays {
            let Some(limit) = a.throttle else { continue };
            let end = n + a.indices.len() as u32;
            let mut running = 0u32;
            let mut pending = Vec::new();
            for (&id, j) in self.jobs.range(n..end) {
                match j.info.state {
                    JobState::Running | JobState::Completing => running += 1,
                    JobState::Pending if !j.info.held => pending.push(id),
                    _ => {}
                }
            }
            let free = limit.saturating_sub(running) as usize;
            out.extend(pending.into_iter().skip(free));
        }
        out
    }

    /// Forgets arrays none of whose tasks are still in memory.
    pub(super) fn purge_arrays(&mut self) {
        let jobs = &self.jobs;
        self.arrays.retain(|&n, a| {
            let end = n + a.indices.len() as u32;
            jobs.range(n..end).next().is_some()
        });
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{register_all, spec, state, ROOT};
    use super::*;
    use crate::state::tests::ended;

    fn array_spec(a: &str) -> JobSpec {
        JobSpec {
            array: Some(a.into()),
            environment: vec![("X".to_string(), "1".to_string())].into(),
            ..spec(1)
        }
    }

    #[test]
    fn submit_array_makes_consecutive_tasks() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(dir.path());
        let plain = st.submit(spec(1), ROOT, 1000).unwrap();
        let n = st.submit(array_spec("0,6,16-18"), ROOT, 1000).unwrap();
        assert_eq!(n, plain + 1);
        let tasks: Vec<(JobId, u32)> = st
            .jobs
            .range(n..)
            .map(|(&id, j)| (id, j.info.array.unwrap().task_id))
            .collect();
        assert_eq!(
            tasks,
            vec![(n, 0), (n + 1, 6), (n + 2, 16), (n + 3, 17), (n + 4, 18)]
        );
        let a = st.jobs[&(n + 2)].info.array.unwrap();
        assert_eq!((a.job_id, a.count, a.min, a.max, a.step), (n, 5, 0, 18, 1));
        // The payload is stored once, with the first task; all tasks share one spec in
        // memory and launch with that payload.
        assert!(st.jobs[&n].info.spec.script.is_empty());
        assert!(Arc::ptr_eq(
            st.jobs[&n].info.spec.as_arc(),
            st.jobs[&(n + 4)].info.spec.as_arc()
        ));
        let full = st.with_payload(&st.jobs[&(n + 1)].info).unwrap().unwrap();
        assert_eq!(full.spec.environment.len(), 1);
        assert!(full.spec.script.starts_with("#!"));
        assert_eq!(st.submit(spec(1), ROOT, 1000).unwrap(), n + 5);
        assert_eq!(st.array_task_id(n, 16), Some(n + 2));
        assert_eq!(st.array_task_id(n, 5), None);
        assert_eq!(st.resolve_ids(&[n], &[]).len(), 5);
        assert_eq!(st.resolve_ids(&[], &[(n, 17)]), vec![n + 3]);
        let f = JobFilter {
            ids: vec![n],
            ..JobFilter::default()
        };
        assert_eq!(st.query(&f, false).len(), 5);
        // Bad specifications and indices past MaxArraySize.
        for bad in ["x", "0-1001", "3-1", "0-4:0"] {
            let e = st.submit(array_spec(bad), ROOT, 1000).unwrap_err();
            assert_eq!(e.to_string(), "Invalid job array specification");
        }
    }

    #[test]
    fn arrays_survive_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let n;
        {
            let mut st = state(dir.path());
            n = st.submit(array_spec("1-3"), ROOT, 1000).unwrap();
        }
        let mut st = state(dir.path());
        assert_eq!(st.array_task_id(n, 3), Some(n + 2));
        register_all(&mut st, 1000);
        let eff = st.schedule(1001);
        assert_eq!(eff.len(), 3);
        let reqs = super::launches(&mut st, &eff, 1001);
        assert_eq!(reqs.len(), 3, "{eff:?}");
        for req in reqs {
            assert!(req.script.starts_with("#!"));
            let v = |k: &str| req.env(k).map(str::to_string);
            assert_eq!(v("SLURM_ARRAY_JOB_ID"), Some(n.to_string()));
            assert_eq!(v("SLURM_ARRAY_TASK_COUNT").as_deref(), Some("3"));
            assert_eq!(v("X").as_deref(), Some("1"));
            let k: u32 = v("SLURM_ARRAY_TASK_ID").unwrap().parse().unwrap();
            assert_eq!(req.job_id, n + k - 1);
        }
    }

    #[test]
    fn throttle_limits_running_tasks() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(dir.path());
        register_all(&mut st, 1000);
        let n = st.submit(array_spec("0-5%2"), ROOT, 1000).unwrap();
        let eff = st.schedule(1000);
        assert_eq!(eff.len(), 2);
        let running = |st: &State| {
            st.jobs
                .values()
                .filter(|j| j.info.state == JobState::Running)
                .count()
        };
        assert_eq!(running(&st), 2);
        assert_eq!(st.jobs[&(n + 5)].info.reason, Reason::JobArrayTaskLimit);
        // Cancel one running task: exactly one more starts.
        let f = JobFilter {
            array_tasks: vec![(n, 0)],
            ..JobFilter::default()
        };
        st.signal_jobs(&f, None, SignalScope::Full, ROOT, 1001)
            .unwrap();
        let done = JobCompleteRequest {
            signal: 15,
            ..ended(n, st.jobs[&n].info.nodes[0].clone(), 1000, 1002)
        };
        st.complete(&done, 1002).unwrap();
        assert_eq!(st.jobs[&n].info.state, JobState::Cancelled);
        st.schedule(1003);
        assert_eq!(running(&st), 2);
        assert_eq!(st.jobs[&(n + 2)].info.state, JobState::Running);
        // Cancelling the array ends every task.
        let f = JobFilter {
            ids: vec![n],
            ..JobFilter::default()
        };
        let (res, _) = st
            .signal_jobs(&f, None, SignalScope::Full, ROOT, 1004)
            .unwrap();
        assert_eq!(res.len(), 6);
        assert!(st.jobs[&(n + 5)].info.state == JobState::Cancelled);
    }

    #[test]
    fn big_held_array_is_one_commit() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(dir.path());
        register_all(&mut st, 1000);
        let mut s = array_spec("0-9999");
        s.hold = true;
        let t = std::time::Instant::now();
        // MaxArraySize 1001 refuses it; a larger limit accepts it.
        assert!(st.submit(s.clone(), ROOT, 1000).is_err());
        let mut cfg = (*st.cfg).clone();
        cfg.max_array_size = 10_001;
        st.cfg = Arc::new(cfg);
        let n = st.submit(s, ROOT, 1000).unwrap();
        assert_eq!(st.jobs.len(), 10_000);
        assert!(st.schedule(1001).is_empty());
        let (ok, _) = st
            .hold(&[n], &[], &[], true, ROOT, 1002)
            .map(|r| (r.iter().filter(|x| x.1.is_none()).count(), ()))
            .unwrap();
        assert_eq!(ok, 10_000);
        assert!(t.elapsed() < std::time::Duration::from_secs(20));
    }
}
