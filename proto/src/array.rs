//! Job arrays: the `--array` index specification (`0-15`, `0,6,16-32`, `0-15:4`, `0-15%4`),
//! the per-task record the controller keeps ([`ArrayTask`]), and Slurm's compact display of
//! index sets (`0-7`, `1,3,5-9`, `0-12:4`) used by `squeue` (`N_[0-7%4]`) and `scontrol`
//! (`ArrayTaskId=0-7%4`).

use crate::job::JobId;
use serde::{Deserialize, Serialize};

/// Slurm's message for every malformed or out-of-range array specification.
pub const INVALID_ARRAY: &str = "Invalid job array specification";

/// A parsed `--array` value: the indices, sorted and without duplicates, and the `%N`
/// throttle (`None`: no limit; `%0` also means no limit, as in Slurm).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArraySpec {
    pub indices: Vec<u32>,
    pub throttle: Option<u32>,
}

/// Parses an `--array` value. `max_array_size` bounds the indices (`index < max_array_size`),
/// like Slurm's `MaxArraySize`; `None` checks the syntax only.
pub fn parse(spec: &str, max_array_size: Option<u32>) -> Result<ArraySpec, &'static str> {
    let spec = spec.trim();
    let (list, throttle) = match spec.split_once('%') {
        Some((l, t)) => {
            let t: u32 = parse_num(t).ok_or(INVALID_ARRAY)?;
            (l, (t > 0).then_some(t))
        }
        None => (spec, None),
    };
    if list.is_empty() {
        return Err(INVALID_ARRAY);
    }
    let limit = max_array_size.map(u64::from).unwrap_or(u64::from(u32::MAX));
    let mut indices: Vec<u32> = Vec::new();
    for item in list.split(',') {
        let (range, step) = match item.split_once(':') {
            Some((r, s)) => (r, parse_num(s).ok_or(INVALID_ARRAY)?),
            None => (item, 1),
        };
        if step == 0 {
            return Err(INVALID_ARRAY);
        }
        let (lo, hi) = match range.split_once('-') {
            Some((a, b)) => (
                parse_num(a).ok_or(INVALID_ARRAY)?,
                parse_num(b).ok_or(INVALID_ARRAY)?,
            ),
            None => {
                let a = parse_num(range).ok_or(INVALID_ARRAY)?;
                (a, a)
            }
        };
        if lo > hi || u64::from(hi) >= limit {
            return Err(INVALID_ARRAY);
        }
        let mut i = lo;
        loop {
            indices.push(i);
            match i.checked_add(step) {
                Some(n) if n <= hi => i = n,
                _ => break,
            }
            if indices.len() as u64 > limit {
                return Err(INVALID_ARRAY);
            }
        }
    }
    indices.sort_unstable();
    indices.dedup();
    Ok(ArraySpec { indices, throttle })
}

fn parse_num(s: &str) -> Option<u32> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// What an array task knows about its array (kept on every task's record; small and fixed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ArrayTask {
    /// The array's job id (`SLURM_ARRAY_JOB_ID`, `%A`, `ArrayJobId=`): the first task's id.
    pub job_id: JobId,
    /// This task's index (`SLURM_ARRAY_TASK_ID`, `%a`).
    pub task_id: u32,
    /// `SLURM_ARRAY_TASK_COUNT`, `_MIN`, `_MAX`, `_STEP` of the whole array.
    pub count: u32,
    pub min: u32,
    pub max: u32,
    pub step: u32,
    /// `%N`: at most this many tasks run at once.
    #[serde(default)]
    pub throttle: Option<u32>,
}

impl ArrayTask {
    /// `N_K`.
    pub fn name(&self) -> String {
        format!("{}_{}", self.job_id, self.task_id)
    }
}

/// The step Slurm reports for an index set: the common gap when all gaps are equal, else 1.
pub fn common_step(indices: &[u32]) -> u32 {
    let mut step = None;
    for w in indices.windows(2) {
        let d = w[1] - w[0];
        match step {
            None => step = Some(d),
            Some(s) if s != d => return 1,
            _ => {}
        }
    }
    step.unwrap_or(1).max(1)
}

/// Compact form of a sorted index set: `0-12:4` for an evenly stepped set of three or more,
/// else comma-joined ranges `1,3,5-9`.
pub fn format_indices(indices: &[u32]) -> String {
    let step = common_step(indices);
    if indices.len() > 2 && step > 1 {
        return format!("{}-{}:{}", indices[0], indices[indices.len() - 1], step);
    }
    let mut out = String::new();
    let mut i = 0;
    while i < indices.len() {
        let mut j = i;
        while j + 1 < indices.len() && indices[j + 1] == indices[j] + 1 {
            j += 1;
        }
        if !out.is_empty() {
            out.push(',');
        }
        if j > i {
            out.push_str(&format!("{}-{}", indices[i], indices[j]));
        } else {
            out.push_str(&indices[i].to_string());
        }
        i = j + 1;
    }
    out
}

/// `ArrayTaskId` of a collapsed record: the index set, with `%T` when throttled; capped at
/// 64 characters with `...` like Slurm's bitmap strings.
pub fn format_task_range(indices: &[u32], throttle: Option<u32>) -> String {
    let mut s = format_indices(indices);
    if s.len() > 64 {
        let mut cut = 61;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push_str("...");
    }
    if let Some(t) = throttle {
        s.push_str(&format!("%{t}"));
    }
    s
}

/// Parses a job id as users write it: `N` or `N_K`; `None` for anything else.
pub fn parse_job_ref(s: &str) -> Option<(JobId, Option<u32>)> {
    let (id, task) = match s.split_once('_') {
        Some((a, b)) => (a, Some(parse_num(b)?)),
        None => (s, None),
    };
    let id = parse_num(id)?;
    (id != 0).then_some((id, task))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idx(s: &str) -> Vec<u32> {
        parse(s, Some(1001)).unwrap().indices
    }

    #[test]
    fn ranges_lists_steps_and_throttles() {
        assert_eq!(idx("0-3"), vec![0, 1, 2, 3]);
        assert_eq!(idx("0,6,16-18"), vec![0, 6, 16, 17, 18]);
        assert_eq!(idx("0-15:4"), vec![0, 4, 8, 12]);
        assert_eq!(idx("5"), vec![5]);
        assert_eq!(idx("3,1,3-4"), vec![1, 3, 4]);
        let s = parse("0-15%4", Some(1001)).unwrap();
        assert_eq!(s.indices.len(), 16);
        assert_eq!(s.throttle, Some(4));
        assert_eq!(parse("1-3%0", None).unwrap().throttle, None);
        assert_eq!(idx("0-1000").len(), 1001);
    }

    #[test]
    fn bad_specs_are_refused() {
        for bad in [
            "", "-1", "a", "1-", "5-2", "0-15:0", "0-15%", "0-15%x", "1,,2", "1-2-3", "0-1001",
            "1001", " %4", "0-3:", "1:2:3",
        ] {
            assert_eq!(parse(bad, Some(1001)), Err(INVALID_ARRAY), "{bad:?}");
        }
        assert!(parse("0-9999", None).is_ok());
        assert!(parse("0-9999", Some(10_000)).is_ok());
        assert!(parse("0-10000", Some(10_000)).is_err());
    }

    #[test]
    fn display_forms() {
        assert_eq!(format_indices(&[0, 1, 2, 3]), "0-3");
        assert_eq!(format_indices(&[1, 3, 5, 6, 7, 8, 9]), "1,3,5-9");
        assert_eq!(format_indices(&[0, 4, 8, 12]), "0-12:4");
        assert_eq!(format_indices(&[2, 9]), "2,9");
        assert_eq!(format_indices(&[7]), "7");
        assert_eq!(format_task_range(&[0, 1, 2], Some(4)), "0-2%4");
        let many: Vec<u32> = (0..100).map(|i| i * 3 + (i % 2)).collect();
        assert!(format_task_range(&many, None).ends_with("..."));
        assert_eq!(common_step(&[1, 3, 5]), 2);
        assert_eq!(common_step(&[1, 3, 4]), 1);
        assert_eq!(common_step(&[1]), 1);
    }

    #[test]
    fn job_refs() {
        assert_eq!(parse_job_ref("12"), Some((12, None)));
        assert_eq!(parse_job_ref("12_3"), Some((12, Some(3))));
        for bad in ["0", "x", "12_", "_3", "12_x", "1.2", "-1"] {
            assert!(parse_job_ref(bad).is_none(), "{bad}");
        }
    }
}
