//! Display of job arrays shared by `gsqueue` and `gscontrol`: pending tasks of an array are
//! shown as one record (`N_[0-7%4]`, `ArrayTaskId=0-7%4`) unless asked for one line each.
//!
//! The collapsed record is the lowest pending task's own record (so its `JobId` is a real,
//! selectable id); its index set is kept beside it, keyed by that job id.

use gsched_proto::array::format_task_range;
use gsched_proto::job::{JobId, JobInfo, JobState};
use std::collections::{BTreeMap, HashMap};

/// Collapses each array's pending tasks (two or more) into one record. Returns the records
/// in their original order (a collapsed record takes its first task's place) and the
/// `ArrayTaskId` text of each collapsed record by its job id.
pub fn collapse(jobs: Vec<JobInfo>) -> (Vec<JobInfo>, HashMap<JobId, String>) {
    let mut groups: BTreeMap<JobId, Vec<usize>> = BTreeMap::new();
    for (i, j) in jobs.iter().enumerate() {
        if let (Some(a), JobState::Pending) = (&j.array, j.state) {
            groups.entry(a.job_id).or_default().push(i);
        }
    }
    let mut drop = vec![false; jobs.len()];
    let mut ranges = HashMap::new();
    for members in groups.values() {
        if members.len() < 2 {
            continue;
        }
        let first = *members
            .iter()
            .min_by_key(|&&i| jobs[i].job_id)
            .expect("non-empty");
        let mut idx: Vec<u32> = members
            .iter()
            .filter_map(|&i| jobs[i].array.map(|a| a.task_id))
            .collect();
        idx.sort_unstable();
        let throttle = jobs[first].array.and_then(|a| a.throttle);
        ranges.insert(jobs[first].job_id, format_task_range(&idx, throttle));
        for &i in members {
            drop[i] = i != first;
        }
    }
    // In place: a record is large, and most are kept.
    let mut jobs = jobs;
    let mut flags = drop.into_iter();
    jobs.retain(|_| !flags.next().unwrap_or(false));
    (jobs, ranges)
}

/// `%i` (JobArrayId): `N_[range]` for a collapsed record, `N_K` for a task, else `N`.
pub fn job_array_id(job: &JobInfo, ranges: &HashMap<JobId, String>) -> String {
    match (&job.array, ranges.get(&job.job_id)) {
        (Some(a), Some(r)) => format!("{}_[{r}]", a.job_id),
        (Some(a), None) => a.name(),
        _ => match &job.het {
            Some(h) => h.name(),
            None => job.job_id.to_string(),
        },
    }
}

/// `%K` (ArrayTaskId): the range of a collapsed record, the index of a task, else `N/A`.
pub fn array_task_id(job: &JobInfo, ranges: &HashMap<JobId, String>) -> String {
    match (&job.array, ranges.get(&job.job_id)) {
        (Some(_), Some(r)) => r.clone(),
        (Some(a), None) => a.task_id.to_string(),
        _ => "N/A".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gsched_proto::array::ArrayTask;

    fn task(id: JobId, base: JobId, k: u32, state: JobState) -> JobInfo {
        let mut j = crate::squeue::tests::job(id, state);
        j.array = Some(ArrayTask {
            job_id: base,
            task_id: k,
            count: 8,
            min: 0,
            max: 7,
            step: 1,
            throttle: Some(4),
        });
        j
    }

    #[test]
    fn pending_tasks_collapse_running_ones_do_not() {
        let mut jobs = vec![crate::squeue::tests::job(5, JobState::Pending)];
        jobs.push(task(10, 10, 0, JobState::Running));
        for k in 1..8 {
            jobs.push(task(10 + k, 10, k, JobState::Pending));
        }
        let (out, ranges) = collapse(jobs);
        assert_eq!(out.len(), 3);
        let ids: Vec<String> = out.iter().map(|j| job_array_id(j, &ranges)).collect();
        assert_eq!(ids, vec!["5", "10_0", "10_[1-7%4]"]);
        let k: Vec<String> = out.iter().map(|j| array_task_id(j, &ranges)).collect();
        assert_eq!(k, vec!["N/A", "0", "1-7%4"]);
        // A single pending task stays `N_K`.
        let (out, ranges) = collapse(vec![task(17, 10, 7, JobState::Pending)]);
        assert_eq!(job_array_id(&out[0], &ranges), "10_7");
    }
}
