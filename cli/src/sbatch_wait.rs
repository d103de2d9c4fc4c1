//! `sbatch -W/--wait`: after the submission, poll the controller until the job (every task
//! of an array) has ended, then exit with its exit code as Slurm's `_job_wait` does: the
//! highest exit code over the tasks, 1 for a task that a signal ended.

use crate::common::{self, Fail};
use gsched_proto::api::{paths, JobFilter, JobQuery, JobsResponse};
use gsched_proto::client::Client;
use gsched_proto::job::{JobId, JobInfo, JobState};
use std::time::Duration;

/// First and longest pause between two polls.
const FIRST_POLL: Duration = Duration::from_millis(100);
const LONGEST_POLL: Duration = Duration::from_secs(1);

/// The exit code of one ended job for `--wait`. Slurm gives 1 when the batch script did not
/// exit normally (signal, also a cancelled running job); gsched also gives 1 for a job
/// cancelled before it started (Slurm would give 0, its wait status being 0).
pub fn job_exit_code(j: &JobInfo) -> i32 {
    if j.exit_signal != 0 || j.state == JobState::Cancelled {
        1
    } else {
        j.exit_code
    }
}

/// The exit code for `--wait` once every record of the job has ended, else `None`.
pub fn wait_result(id: JobId, jobs: &[JobInfo]) -> Option<i32> {
    let mine: Vec<&JobInfo> = jobs
        .iter()
        .filter(|j| j.job_id == id || j.array_job_id() == id)
        .collect();
    if mine.is_empty() || mine.iter().any(|j| !j.state.is_terminal()) {
        return None;
    }
    mine.iter().map(|j| job_exit_code(j)).max()
}

/// Polls until job `id` ended; returns the exit code for `--wait`.
pub fn wait_for_job(prog: &str, client: &Client, id: JobId) -> Result<i32, Fail> {
    let mut pause = FIRST_POLL;
    let mut failures = 0u32;
    loop {
        std::thread::sleep(pause);
        pause = (pause * 2).min(LONGEST_POLL);
        let filter = JobFilter {
            ids: vec![id],
            ..JobFilter::default()
        };
        let resp: Result<JobsResponse, _> = client.post(
            paths::JOBS_QUERY,
            &JobQuery {
                filter,
                brief: true,
                fields: Vec::new(),
            },
        );
        match resp {
            Ok(r) => {
                failures = 0;
                if r.jobs.is_empty() {
                    return Err(Fail::error(
                        prog,
                        format!("Job {id} no longer found and exit code not found"),
                    ));
                }
                if let Some(code) = wait_result(id, &r.jobs) {
                    return Ok(code);
                }
            }
            Err(e) => {
                // The controller may be restarting: say so once in a while, keep waiting.
                if failures % 30 == 0 {
                    common::err_line(&format!(
                        "{prog}: error: Currently unable to load job state information, retrying: {}",
                        common::client_error_text(&e)
                    ));
                }
                failures += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(id: JobId, state: JobState, code: i32, sig: i32) -> JobInfo {
        let mut j: JobInfo = serde_json::from_value(serde_json::json!({
            "job_id": id, "name": "j", "user_id": 0, "group_id": 0, "user_name": "root",
            "group_name": "root", "state": "PENDING", "reason": "None", "partition": "p",
            "priority": 1, "time_limit": null, "submit_time": 0, "eligible_time": null,
            "start_time": null, "end_time": null, "num_nodes": 1, "num_cpus": 1,
            "num_tasks": 1, "mem_per_node_mb": 0, "nodes": [], "cpus_per_node": [],
            "exit_code": 0, "exit_signal": 0, "cancelled_by": null, "held": false,
            "spec": {"name": "j", "script": "#!/bin/sh\n", "work_dir": "/", "stdout": null,
                     "stderr": null, "stdin": null, "export": null, "time_limit": null,
                     "nodes": null, "ntasks": null, "cpus_per_task": null,
                     "ntasks_per_node": null, "mem": null, "submit_host": "h"}
        }))
        .unwrap();
        j.state = state;
        j.exit_code = code;
        j.exit_signal = sig;
        j
    }

    #[test]
    fn exit_codes_follow_slurm() {
        assert_eq!(wait_result(5, &[job(5, JobState::Running, 0, 0)]), None);
        assert_eq!(wait_result(5, &[]), None);
        assert_eq!(
            wait_result(5, &[job(5, JobState::Completed, 0, 0)]),
            Some(0)
        );
        assert_eq!(wait_result(5, &[job(5, JobState::Failed, 3, 0)]), Some(3));
        assert_eq!(wait_result(5, &[job(5, JobState::Failed, 0, 9)]), Some(1));
        assert_eq!(
            wait_result(5, &[job(5, JobState::Cancelled, 0, 0)]),
            Some(1)
        );
        assert_eq!(
            wait_result(
                5,
                &[
                    job(5, JobState::Failed, 2, 0),
                    job(5, JobState::Failed, 7, 0)
                ]
            ),
            Some(7)
        );
    }
}
