//! Jobs submitted with the same options share one spec in memory, as an array's tasks do.
//!
//! With its payload in the store (`state/payload.rs`), what is left of a job's spec is its
//! options: partition, resources, limits, paths, the submit line. Parameter sweeps, the
//! loops of workflow tools and resubmitted jobs send the same options again and again, and
//! each copy cost about 1.5 KB of the controller's memory (the spec and some twenty strings).
//! A spec that equals one a job in memory already has is replaced by a reference to that
//! one. Nothing changes for the job: a spec is copied before it is changed
//! ([`SharedSpec`]'s copy on write), so an `scontrol update` of one job never reaches another.
//!
//! Two fields differ from job to job even when the options do not: the name (`-J`, which
//! workflow tools set per job) and the command line that carries it (`SubmitLine=`). The
//! pooled spec leaves both out: the name is the record's own (`JobInfo::name`), the submit
//! line the job's ([`Job::submit_line`], shared by an array's tasks), and both are put back
//! into the spec wherever a record leaves the controller's memory: the store's row, a query's
//! answer ([`Job::record`]). Jobs submitted with different names then share one spec:
//! 50,000 of them cost gsctld 2.2 KB each before, about 1 KB since.

use super::{Job, JobExtra, LaunchState};
use gsched_proto::job::{JobInfo, JobSpec, SharedSpec};
use std::collections::HashMap;
use std::hash::{DefaultHasher, Hasher};
use std::sync::{Arc, Weak};

/// The specs of the jobs in memory, by a hash of their content.
#[derive(Debug, Default)]
pub(crate) struct SpecPool {
    specs: Interned<JobSpec>,
    /// The last spec shared, as given, and what it became: an array's tasks come with one
    /// spec, which is made the pool's once, not once per task.
    last: Option<(Arc<JobSpec>, SharedSpec, Arc<str>)>,
    /// Submit lines in memory, shared as the specs are (a loop that submits the same
    /// command line keeps one copy).
    lines: Interned<str>,
}

/// Values in memory by a hash of their content, held weakly: a value equal to one held
/// elsewhere is replaced by that one.
#[derive(Debug)]
struct Interned<T: ?Sized> {
    by_hash: HashMap<u64, Weak<T>>,
    /// Dead entries are swept when the table reaches this size.
    sweep_at: usize,
}

impl<T: ?Sized> Default for Interned<T> {
    fn default() -> Self {
        Interned {
            by_hash: HashMap::new(),
            sweep_at: 0,
        }
    }
}

impl<T: ?Sized + PartialEq> Interned<T> {
    /// The value equal to `value` already in memory, or `value` itself, kept for later.
    fn share(&mut self, key: u64, value: &Arc<T>) -> Arc<T> {
        if let Some(same) = self.by_hash.get(&key).and_then(Weak::upgrade) {
            if Arc::ptr_eq(&same, value) || *same == **value {
                return same;
            }
        }
        self.by_hash.insert(key, Arc::downgrade(value));
        if self.by_hash.len() >= self.sweep_at {
            self.by_hash.retain(|_, w| w.strong_count() > 0);
            self.sweep_at = (2 * self.by_hash.len()).max(1024);
        }
        value.clone()
    }
}

/// Feeds what serde writes to a hasher, without building the text.
struct HashWriter<'a>(&'a mut DefaultHasher);

impl std::io::Write for HashWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn content_hash(spec: &JobSpec) -> Option<u64> {
    let mut h = DefaultHasher::new();
    serde_json::to_writer(HashWriter(&mut h), spec).ok()?;
    Some(h.finish())
}

impl SpecPool {
    /// A job entering the controller's memory (submitted, or loaded from the store): its
    /// spec is shared with the jobs' that have the same options.
    pub(crate) fn job(
        &mut self,
        mut info: JobInfo,
        extra: JobExtra,
        launch: Option<LaunchState>,
    ) -> Box<Job> {
        let submit_line = self.share(&mut info.spec);
        Box::new(Job {
            info,
            extra,
            launch,
            terminate_sent_at: None,
            terminate_acked: false,
            submit_line,
        })
    }

    /// Leaves the name and the submit line out of `spec` and makes it the pool's copy when
    /// an equal spec is in memory, else the copy later equal specs will share. Returns the
    /// submit line.
    pub(crate) fn share(&mut self, spec: &mut SharedSpec) -> Arc<str> {
        if let Some((given, pooled, line)) = &self.last {
            if Arc::ptr_eq(given, spec.as_arc()) {
                *spec = pooled.clone();
                return line.clone();
            }
        }
        // A spec others hold too is copied before it is changed; remembered, so that the
        // others are not copied again.
        let given = (Arc::strong_count(spec.as_arc()) > 1).then(|| spec.as_arc().clone());
        let line = if spec.name.is_empty() && spec.submit_line.is_empty() {
            self.line("")
        } else {
            let own = &mut **spec;
            own.name = String::new();
            let line = std::mem::take(&mut own.submit_line);
            self.line(&line)
        };
        self.pool(spec);
        if let Some(given) = given {
            self.last = Some((given, spec.clone(), line.clone()));
        }
        line
    }

    /// The copy of `line` in memory, or a new one.
    fn line(&mut self, line: &str) -> Arc<str> {
        let mut h = DefaultHasher::new();
        h.write(line.as_bytes());
        self.lines.share(h.finish(), &Arc::from(line))
    }

    fn pool(&mut self, spec: &mut SharedSpec) {
        let Some(key) = content_hash(spec) else {
            return;
        };
        let pooled = self.specs.share(key, spec.as_arc());
        if !Arc::ptr_eq(&pooled, spec.as_arc()) {
            *spec = SharedSpec::shared(&pooled);
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.specs.by_hash.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str) -> SharedSpec {
        JobSpec {
            name: name.into(),
            submit_line: format!("gsbatch -J {name}"),
            work_dir: "/tmp".into(),
            ..Default::default()
        }
        .into()
    }

    #[test]
    fn equal_specs_share_and_a_change_stays_with_its_job() {
        let mut pool = SpecPool::default();
        let mut a = spec("a");
        let mut b = spec("b");
        let mut c = JobSpec {
            work_dir: "/elsewhere".into(),
            ..(*spec("a")).clone()
        }
        .into();
        // Names and submit lines are the jobs' own: a and b share, c's options differ.
        assert_eq!(&*pool.share(&mut a), "gsbatch -J a");
        assert_eq!(&*pool.share(&mut b), "gsbatch -J b");
        pool.share(&mut c);
        assert!(Arc::ptr_eq(a.as_arc(), b.as_arc()));
        assert!(!Arc::ptr_eq(a.as_arc(), c.as_arc()));
        assert_eq!((a.name.as_str(), a.submit_line.as_str()), ("", ""));
        // Equal submit lines are one copy.
        let mut a2 = spec("a");
        assert!(Arc::ptr_eq(
            &pool.share(&mut a2),
            &pool.share(&mut spec("a"))
        ));
        // scontrol update of one job: copied on write, the other keeps its spec.
        b.comment = Some("changed".into());
        assert_eq!(a.comment, None);
        assert!(!Arc::ptr_eq(a.as_arc(), b.as_arc()));
    }

    /// An array's tasks bring one spec: shared once, each task gets the pooled copy and the
    /// submit line.
    #[test]
    fn one_spec_given_again_is_shared_once() {
        let mut pool = SpecPool::default();
        let given = spec("arr");
        let (mut t1, mut t2) = (given.clone(), given.clone());
        let l1 = pool.share(&mut t1);
        let l2 = pool.share(&mut t2);
        assert!(Arc::ptr_eq(t1.as_arc(), t2.as_arc()));
        assert!(Arc::ptr_eq(&l1, &l2));
        assert_eq!(&*l1, "gsbatch -J arr");
        assert_eq!(given.name, "arr", "the spec given is not changed");
    }

    #[test]
    fn specs_no_job_holds_are_forgotten() {
        let mut pool = SpecPool::default();
        for i in 0..5000 {
            let mut s: SharedSpec = JobSpec {
                work_dir: format!("/tmp/{i}"),
                ..Default::default()
            }
            .into();
            pool.share(&mut s);
        }
        // Every spec was dropped: the table was swept as it grew.
        assert!(pool.len() <= 1024, "{}", pool.len());
        let dir = |i: usize| -> SharedSpec {
            JobSpec {
                work_dir: format!("/k/{i}"),
                ..Default::default()
            }
            .into()
        };
        let mut kept: Vec<SharedSpec> = (0..3000).map(dir).collect();
        for s in &mut kept {
            pool.share(s);
        }
        let mut again = dir(7);
        pool.share(&mut again);
        assert!(Arc::ptr_eq(again.as_arc(), kept[7].as_arc()));
    }

    /// Jobs with different names share a spec in memory; the store's rows, the answers to
    /// queries (whole, projected, with payload) and a restarted controller's records all
    /// carry each job's own name and submit line.
    #[test]
    fn names_and_submit_lines_leave_memory_with_their_jobs() {
        use super::super::tests::{spec as job_spec, state, ROOT};
        use gsched_proto::api::JobFilter;
        use gsched_proto::projection::FieldSet;
        let dir = tempfile::tempdir().unwrap();
        let named = |n: &str| JobSpec {
            name: n.into(),
            submit_line: format!("gsbatch -J {n} --wrap true"),
            ..job_spec(1)
        };
        let check = |st: &super::super::State, a: u32, b: u32| {
            assert!(Arc::ptr_eq(
                st.jobs[&a].info.spec.as_arc(),
                st.jobs[&b].info.spec.as_arc()
            ));
            let all = JobFilter::default();
            for full in [false, true] {
                let got = st.query(&all, !full);
                assert_eq!(got[0].spec.name, "one");
                assert_eq!(got[1].spec.name, "two");
                assert_eq!(got[1].spec.submit_line, "gsbatch -J two --wrap true");
            }
            for fields in [&["spec.name", "spec.submit_line"][..], &["spec"], &[]] {
                let keep = if fields.is_empty() {
                    FieldSet::everything()
                } else {
                    FieldSet::for_jobs(fields).unwrap()
                };
                let mut out = b"[".to_vec();
                st.query_projected(&all, &keep, false, &mut out);
                out.push(b']');
                let v: Vec<JobInfo> = serde_json::from_slice(&out).unwrap();
                assert_eq!(v[0].spec.name, "one", "{fields:?}");
                assert_eq!(v[1].spec.submit_line, "gsbatch -J two --wrap true");
            }
            for (id, name) in [(a, "one"), (b, "two")] {
                let row = st.store.load_job(id).unwrap().unwrap();
                let rec: super::super::StoredRecord = serde_json::from_str(&row).unwrap();
                assert_eq!(rec.info.spec.name, name);
                assert_eq!(
                    rec.info.spec.submit_line,
                    format!("gsbatch -J {name} --wrap true")
                );
            }
        };
        let (a, b);
        {
            let mut st = state(dir.path());
            a = st.submit(named("one"), ROOT, 1000).unwrap();
            b = st.submit(named("two"), ROOT, 1000).unwrap();
            check(&st, a, b);
        }
        let st = state(dir.path());
        check(&st, a, b);
    }
}
