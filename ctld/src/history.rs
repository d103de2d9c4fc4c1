//! Accounting queries (`gsacct`, Slurm's `sacct`) answered from the controller's own store:
//! every job it ever accepted keeps its row, so no separate accounting database is needed.
//!
//! The query runs on a read-only connection of its own, off the async thread and without the
//! state lock: a history of millions of rows does not stall submissions. GPU jobs' usage of
//! their GPUs (gseff, gsacct's `TRESUsageIn*`) is read the same way from the stored samples,
//! only when the query asks for it.

use std::path::Path;

use gsched_proto::api::{HistoryQuery, JobGpuUsage};
use gsched_proto::job::{JobId, JobInfo, JobState};

use crate::state::StoredRecord;
use crate::store::{GpuUsageReader, Store, StoreError};

/// The jobs of the store that `q` selects, in id order.
pub fn query(db: &Path, q: &HistoryQuery) -> Result<Vec<JobInfo>, StoreError> {
    let rows = Store::read_history(db, q.start, &q.filter.user_ids)?;
    let mut out = Vec::new();
    for row in rows {
        let rec: StoredRecord =
            serde_json::from_str(&row.record).map_err(|e| StoreError::Corrupt {
                path: db.to_path_buf(),
                what: format!("job {}", row.id),
                detail: e.to_string(),
            })?;
        if q.selects(&rec.info) {
            out.push(rec.info);
        }
    }
    if q.payloads {
        fill_payloads(db, &mut out)?;
    }
    Ok(out)
}

/// Puts each job's payload (`state/payload.rs`) back into its spec; records stored before
/// schema 8 hold theirs already.
fn fill_payloads(db: &Path, jobs: &mut [JobInfo]) -> Result<(), StoreError> {
    let owners: Vec<JobId> = jobs.iter().map(crate::state::payload_owner).collect();
    let texts = Store::read_payloads(db, &owners)?;
    for (j, owner) in jobs.iter_mut().zip(owners) {
        let Some(text) = texts.get(&owner) else {
            continue;
        };
        match crate::state::Payload::from_json(owner, text) {
            Ok(p) => p.restore(&mut j.spec),
            Err(e) => tracing::error!("{e}"),
        }
    }
    Ok(())
}

/// How the started GPU jobs of `jobs` used their GPUs over their current runs, from the
/// stored samples (see [`JobGpuUsage`]); `gpu_mem(node, index)` is the memory of a node's
/// GPU in MiB (0: unknown). GPUs without a sample in the run are left out.
pub fn gpu_usage(
    db: &Path,
    jobs: &[JobInfo],
    gpu_mem: &dyn Fn(&str, u32) -> u64,
    now: i64,
) -> Result<Vec<JobGpuUsage>, StoreError> {
    let mut out = Vec::new();
    let mut reader: Option<GpuUsageReader> = None;
    for j in jobs {
        let Some(start) = j.start_time else {
            continue;
        };
        if j.state == JobState::Pending || j.gpus.iter().all(Vec::is_empty) {
            continue;
        }
        let r = match &mut reader {
            Some(r) => r,
            None => reader.insert(GpuUsageReader::open(db)?),
        };
        let end = j.end_time.unwrap_or(now).max(start);
        for (node, allocs) in j.nodes.iter().zip(&j.gpus) {
            for a in allocs {
                let share = a.share.as_ref();
                let w = r.window(node, a.index, share.map(|_| j.job_id), start, end)?;
                if w.samples == 0 {
                    continue;
                }
                let mem_alloc_mb = match share {
                    Some(s) if s.mem_mb > 0 => s.mem_mb,
                    _ => gpu_mem(node, a.index),
                };
                out.push(JobGpuUsage {
                    job_id: j.job_id,
                    node: node.clone(),
                    gpu: a.index,
                    samples: w.samples,
                    util_avg: w.util_sum as f64 / w.samples as f64,
                    util_max: w.util_max,
                    mem_max_mb: w.mem_max_mb,
                    mem_alloc_mb,
                });
            }
        }
    }
    Ok(out)
}
