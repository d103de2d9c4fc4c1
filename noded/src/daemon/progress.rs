//! What each running job did lately, for the controller's invalid-job ladder: the CPU time
//! of its processes and the size of its output files, read at every heartbeat. The
//! controller only looks at whether they moved; a job whose counters stand still for
//! `HangMinutes` is flagged as hung.
//!
//! CPU time comes from the job's cgroup when the node uses cgroups (exact: every process the
//! job ever had), else from `/proc` for gsstepd's live descendants (their own time and that of
//! the children they reaped). Output sizes come from the stdout/stderr paths of the job's
//! `launch.json`, read once per job run and remembered here.

use super::jobs::Phase;
use super::Node;
use crate::procfs;
use gsched_proto::api::JobProgress;
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

/// Clock ticks per second (`_SC_CLK_TCK`).
fn clock_ticks() -> u64 {
    match nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK) {
        Ok(Some(t)) if t > 0 => t as u64,
        _ => 100,
    }
}

struct Sample {
    job_id: JobId,
    start_time: i64,
    folder: PathBuf,
    stepd: Option<i32>,
    cgroup: Option<crate::cgroup::JobCgroup>,
}

impl Node {
    /// The progress counters of every running job (blocking: reads `/proc`, cgroup files
    /// and output file sizes).
    pub(crate) fn job_progress(&self) -> Vec<JobProgress> {
        let samples: Vec<Sample> = self
            .jobs()
            .iter()
            .filter_map(|(&job_id, j)| match j.phase {
                Phase::Running(s) => Some(Sample {
                    job_id,
                    start_time: j.start_time,
                    folder: j.dir.path().to_path_buf(),
                    stepd: Some(s.pid),
                    cgroup: j.cgroup.clone(),
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
        let tick_usec = 1_000_000 / clock_ticks();
        samples
            .into_iter()
            .map(|s| {
                let cpu_usec = match &s.cgroup {
                    Some(cg) => cg.handle.open().usage(s.job_id).total_cpu_usec(),
                    None => s.stepd.map(|pid| {
                        procfs::descendants(pid)
                            .into_iter()
                            .filter_map(|p| procfs::read_stat(p).ok())
                            .map(|st| st.cpu_ticks * tick_usec)
                            .sum()
                    }),
                };
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
                    cpu_usec,
                    output_bytes,
                    gpu_util_percent: None,
                }
            })
            .collect()
    }
}
