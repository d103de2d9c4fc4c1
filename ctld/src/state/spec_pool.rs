//! Jobs submitted with the same options share one spec in memory, as an array's tasks do.
//!
//! With its payload in the store (`state/payload.rs`), what is left of a job's spec is its
//! options: partition, resources, limits, paths, the submit line. Parameter sweeps, the
//! loops of workflow tools and resubmitted jobs send the same options again and again, and
//! each copy cost about 1.5 KB of the controller's memory (the spec and some twenty strings).
//! A spec that equals one a job in memory already has is replaced by a reference to that
//! one. Nothing changes for the job: a spec is copied before it is changed
//! ([`SharedSpec`]'s copy on write), so an `scontrol update` of one job never reaches another.

use gsched_proto::job::{JobSpec, SharedSpec};
use std::collections::HashMap;
use std::hash::{DefaultHasher, Hasher};
use std::sync::{Arc, Weak};

/// The specs of the jobs in memory, by a hash of their content.
#[derive(Debug, Default)]
pub(crate) struct SpecPool {
    by_hash: HashMap<u64, Weak<JobSpec>>,
    /// Dead entries are swept when the table reaches this size.
    sweep_at: usize,
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
    /// Makes `spec` the pool's copy when an equal spec is in memory; else makes it the copy
    /// later equal specs will share.
    pub(crate) fn share(&mut self, spec: &mut SharedSpec) {
        let Some(key) = content_hash(spec) else {
            return;
        };
        if let Some(same) = self.by_hash.get(&key).and_then(Weak::upgrade) {
            if Arc::ptr_eq(&same, spec.as_arc()) {
                return;
            }
            if *same == **spec {
                *spec = SharedSpec::shared(&same);
                return;
            }
        }
        self.by_hash.insert(key, Arc::downgrade(spec.as_arc()));
        if self.by_hash.len() >= self.sweep_at {
            self.by_hash.retain(|_, w| w.strong_count() > 0);
            self.sweep_at = (2 * self.by_hash.len()).max(1024);
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.by_hash.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str) -> SharedSpec {
        JobSpec {
            name: name.into(),
            work_dir: "/tmp".into(),
            ..Default::default()
        }
        .into()
    }

    #[test]
    fn equal_specs_share_and_a_change_stays_with_its_job() {
        let mut pool = SpecPool::default();
        let mut a = spec("a");
        let mut b = spec("a");
        let mut c = spec("c");
        pool.share(&mut a);
        pool.share(&mut b);
        pool.share(&mut c);
        assert!(Arc::ptr_eq(a.as_arc(), b.as_arc()));
        assert!(!Arc::ptr_eq(a.as_arc(), c.as_arc()));
        // scontrol update of one job: copied on write, the other keeps its spec.
        b.name = "renamed".into();
        assert_eq!(a.name, "a");
        assert_eq!(b.name, "renamed");
        assert!(!Arc::ptr_eq(a.as_arc(), b.as_arc()));
    }

    #[test]
    fn specs_no_job_holds_are_forgotten() {
        let mut pool = SpecPool::default();
        for i in 0..5000 {
            let mut s = spec(&format!("job{i}"));
            pool.share(&mut s);
        }
        // Every spec was dropped: the table was swept as it grew.
        assert!(pool.len() <= 1024, "{}", pool.len());
        let mut kept: Vec<SharedSpec> = (0..3000).map(|i| spec(&format!("k{i}"))).collect();
        for s in &mut kept {
            pool.share(s);
        }
        let mut again = spec("k7");
        pool.share(&mut again);
        assert!(Arc::ptr_eq(again.as_arc(), kept[7].as_arc()));
    }
}
