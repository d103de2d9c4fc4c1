//! Accounting queries (`gsacct`, Slurm's `sacct`) answered from the controller's own store:
//! every job it ever accepted keeps its row, so no separate accounting database is needed.
//!
//! The query runs on a read-only connection of its own, off the async thread and without the
//! state lock: a history of millions of rows does not stall submissions.

use std::path::Path;

use gsched_proto::api::HistoryQuery;
use gsched_proto::job::JobInfo;

use crate::state::StoredRecord;
use crate::store::{Store, StoreError};

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
    Ok(out)
}
