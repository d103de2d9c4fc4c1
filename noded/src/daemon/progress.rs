//! What each running job did lately, for the controller's invalid-job ladder: the CPU time
//! of its processes and the size of its output files, read at every heartbeat. The
//! controller only looks at whether they moved; a job whose counters stand still for
//! `HangMinutes` is flagged as hung.
//!
//! CPU time and GPU utilization are those of the heartbeat's live usage sample of the job
//! (`usage.rs`: the job's cgroup when the node uses cgroups, else its live processes).
//! Output sizes come from the stdout/stderr paths of the job's `launch.json`, read once per
//! job run and remembered here.

use super::jobs::Phase;
use super::Node;
use gsched_proto::api::{JobProgress, JobUsageSample};
use gsched_proto::job::JobId;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

/// The output files of each job run, by job folder (unique per node) and start time.
type OutputsCache = Mutex<HashMap<(PathBuf, i64), Vec<PathBuf>>>;

fn outputs_cache() -> &'static OutputsCache {
    static CACHE: OnceLock<OutputsCache> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

struct Sample {
    job_id: JobId,
    start_time: i64,
    folder: PathBuf,
}

impl Node {
    /// The progress counters of every running job, with CPU time and GPU use from `usage`,
    /// the heartbeat's live usage samples (blocking: reads output file sizes).
    pub(crate) fn job_progress(&self, usage: &[JobUsageSample]) -> Vec<JobProgress> {
        let samples: Vec<Sample> = self
            .jobs()
            .iter()
            .filter_map(|(&job_id, j)| match j.phase {
                Phase::Running(_) => Some(Sample {
                    job_id,
                    start_time: j.start_time,
                    folder: j.dir.path().to_path_buf(),
                }),
                _ => None,
            })
            .collect();
        let mut cache = outputs_cache().lock().unwrap_or_else(|p| p.into_inner());
        let live: std::collections::HashSet<(PathBuf, i64)> = samples
            .iter()
            .map(|s| (s.folder.clone(), s.start_time))
            .collect();
        cache.retain(|k, _| live.contains(k));
        samples
            .into_iter()
            .map(|s| {
                let live = usage.iter().find(|u| u.job_id == s.job_id);
                let key = (s.folder.clone(), s.start_time);
                let outputs =
                    cache.entry(key).or_insert_with(|| {
                        match crate::jobdir::JobDir::new(&s.folder).read_launch() {
                            Ok(Some(l)) if l.stdout == l.stderr => vec![l.stdout],
                            Ok(Some(l)) => vec![l.stdout, l.stderr],
                            _ => Vec::new(),
                        }
                    });
                let output_bytes = (!outputs.is_empty()).then(|| {
                    outputs
                        .iter()
                        .filter_map(|p| std::fs::metadata(p).ok())
                        .filter(|m| m.is_file())
                        .map(|m| m.len())
                        .sum()
                });
                JobProgress {
                    job_id: s.job_id,
                    start_time: s.start_time,
                    cpu_usec: live.and_then(|u| u.cpu_usec),
                    output_bytes,
                    gpu_util_percent: live.and_then(|u| u.gpu_util_percent),
                }
            })
            .collect()
    }
}
