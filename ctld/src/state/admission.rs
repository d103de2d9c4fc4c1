//! Limits on what one submission may bring in (issue 9: hostile input must not exhaust the
//! controller). The same limits as Slurm's `_test_job_desc_fields` and `MaxJobCount`, with
//! the same answers, so that scripts see what they would see under Slurm:
//!
//! * the batch script at most `max_script_size` bytes (`SchedulerParameters`, 4 MiB), the
//!   submit line at most `max_submit_line_size` (1 MiB); the job name, comment, account, QOS,
//!   partitions, constraint and mail user at most 1,024 bytes; paths at most `PATH_MAX`; the
//!   dependency at most 128 KiB; the `--array` expression at most 4 KiB: refused with
//!   `Pathname of a file, directory or other parameter too long`, naming the field;
//! * an array of more than `max_array_tasks` tasks: `Invalid job array specification`;
//! * more jobs in the controller than `MaxJobCount` (pending, running, and finished ones
//!   still within `MinJobAge`): `MaxJobCount limit reached`, which gsbatch, like sbatch,
//!   answers by retrying for a while (`Slurm job queue full, sleeping and retrying`).
//!
//! Every check runs before anything is stored, so a refused submission leaves the store as
//! it was. The HTTP body limit (`MAX_BODY_BYTES`, answered with 413) bounds what reaches
//! these checks at all.

use super::State;
use gsched_proto::api::{ApiError, ErrorCode};
use gsched_proto::job::JobSpec;

/// Slurm's limit on most string fields of a job.
const FIELD_MAX: usize = 1024;
/// `PATH_MAX` on Linux.
const PATH_MAX: usize = 4096;

impl State {
    /// Checks the sizes of a job's fields (see the module docs).
    pub(super) fn check_field_sizes(&self, spec: &JobSpec) -> Result<(), ApiError> {
        let params = &self.cfg.scheduler.params;
        let max_script = usize::try_from(params.max_script_size()).unwrap_or(usize::MAX);
        let max_line = usize::try_from(params.max_submit_line_size()).unwrap_or(usize::MAX);
        let opt = |o: &Option<String>| o.as_deref().map_or(0, str::len);
        let partitions = spec.partitions.iter().map(|p| p.len() + 1).sum::<usize>();
        let env_bytes: usize = spec
            .environment
            .iter()
            .map(|(k, v)| k.len() + v.len() + 2)
            .sum();
        let checks: [(&str, usize, usize, &str); 17] = [
            (
                "script",
                spec.script.len(),
                max_script,
                "SchedulerParameters=max_script_size",
            ),
            (
                "submit line",
                spec.submit_line.len(),
                max_line,
                "SchedulerParameters=max_submit_line_size",
            ),
            ("job name", spec.name.len(), FIELD_MAX, ""),
            ("comment", opt(&spec.comment), FIELD_MAX, ""),
            ("account", opt(&spec.account), FIELD_MAX, ""),
            ("qos", opt(&spec.qos), FIELD_MAX, ""),
            ("partition", partitions, FIELD_MAX, ""),
            ("constraint", opt(&spec.constraint), FIELD_MAX, ""),
            ("mail_user", opt(&spec.mail_user), FIELD_MAX, ""),
            ("array", opt(&spec.array), FIELD_MAX * 4, ""),
            ("dependency", opt(&spec.dependency), FIELD_MAX * 128, ""),
            ("work_dir", spec.work_dir.len(), PATH_MAX, ""),
            ("std_out", opt(&spec.stdout), PATH_MAX, ""),
            ("std_err", opt(&spec.stderr), PATH_MAX, ""),
            ("std_in", opt(&spec.stdin), PATH_MAX, ""),
            // Not in Slurm's list, which bounds the environment only by the message size;
            // here the script's limit bounds it too, so that one job cannot hold more than
            // a few MiB of the controller's memory.
            (
                "environment",
                env_bytes,
                max_script.max(FIELD_MAX * 1024),
                "",
            ),
            (
                "arguments",
                spec.argv.iter().map(|a| a.len() + 1).sum(),
                max_line,
                "",
            ),
        ];
        for (what, len, max, key) in checks {
            if len > max {
                let hint = if key.is_empty() {
                    String::new()
                } else {
                    format!("; an administrator can raise it with {key}=")
                };
                return Err(ApiError::new(
                    ErrorCode::PathnameTooLong,
                    format!(
                        "{} ({what} is {len} bytes, at most {max}{hint})",
                        ErrorCode::PathnameTooLong.slurm_text()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Checks that `new_jobs` more jobs fit under `MaxJobCount`, and an array's size under
    /// `max_array_tasks`.
    pub(super) fn check_job_count(&self, new_jobs: usize, array: bool) -> Result<(), ApiError> {
        if array {
            if let Some(max) = self.cfg.scheduler.params.max_array_tasks {
                if new_jobs > max as usize {
                    return Err(ApiError::new(
                        ErrorCode::InvalidArray,
                        format!(
                            "{} ({new_jobs} tasks; SchedulerParameters=max_array_tasks={max})",
                            gsched_proto::array::INVALID_ARRAY
                        ),
                    ));
                }
            }
        }
        let max = self.cfg.max_job_count as usize;
        if self.jobs.len().saturating_add(new_jobs) > max {
            tracing::warn!(
                "MaxJobCount limit from the config reached ({max}); refusing a submission"
            );
            return Err(ApiError::plain(ErrorCode::MaxJobCount));
        }
        Ok(())
    }
}
