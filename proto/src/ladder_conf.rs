//! The invalid-job policy (gsched; Slurm has none): jobs that hold resources without using
//! them are walked down a ladder of steps, each after its own delay.
//!
//! * `HangMinutes=M`: a running job whose CPU time and output files have not grown for `M`
//!   minutes is *hung*. 0 (the default) turns the check off.
//! * `IdleGpuMinutes=M` and `IdleGpuPercent=P` (default 5): a job whose GPUs stayed under `P`%
//!   utilization for `M` minutes is *idle*. 0 (the default) turns it off.
//! * `InvalidJobLadder=notify:0,requeue:15,cancel:30` (the default): the steps and their
//!   delays in minutes, counted from the moment the job was flagged in its current run. A step
//!   is taken only while the condition lasts and after every earlier step (in this run or an
//!   earlier one), so a job requeued for idling that idles again is cancelled. A job that may
//!   not be requeued (`--no-requeue`, `JobRequeue=0`) skips that step.
//!
//! Minutes may have decimals (`HangMinutes=0.5`). A partition may set `HangMinutes=` and
//! `IdleGpuMinutes=` of its own (0 exempts its jobs).

use crate::job::LadderStep;

/// The cluster-wide policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidJobPolicy {
    /// `HangMinutes`, in seconds; `None` = off.
    pub hang_secs: Option<u64>,
    /// `IdleGpuMinutes`, in seconds; `None` = off.
    pub idle_gpu_secs: Option<u64>,
    /// `IdleGpuPercent`.
    pub idle_gpu_percent: u32,
    /// `InvalidJobLadder`: steps in order with their delays in seconds.
    pub steps: Vec<(LadderStep, u64)>,
}

impl Default for InvalidJobPolicy {
    fn default() -> Self {
        InvalidJobPolicy {
            hang_secs: None,
            idle_gpu_secs: None,
            idle_gpu_percent: 5,
            steps: vec![
                (LadderStep::Notify, 0),
                (LadderStep::Requeue, 15 * 60),
                (LadderStep::Cancel, 30 * 60),
            ],
        }
    }
}

/// A partition's own thresholds (`None` = the cluster's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PartitionLadder {
    /// `Some(None)`: `HangMinutes=0` on the partition, checks off for its jobs.
    pub hang_secs: Option<Option<u64>>,
    pub idle_gpu_secs: Option<Option<u64>>,
}

/// Parses a number of minutes, decimals allowed, into seconds; 0 gives `None` (off).
pub fn parse_minutes(v: &str) -> Result<Option<u64>, String> {
    let m: f64 = v
        .trim()
        .parse()
        .ok()
        .filter(|m: &f64| m.is_finite() && *m >= 0.0 && *m <= 525_600.0)
        .ok_or_else(|| format!("expected minutes (decimals allowed, 0 = off), got \"{v}\""))?;
    let secs = (m * 60.0).round() as u64;
    Ok((secs > 0).then_some(secs))
}

/// Parses `InvalidJobLadder=step:minutes,...`: steps among notify, requeue and cancel, each
/// at most once, in that order, with non-decreasing delays.
pub fn parse_ladder(v: &str) -> Result<Vec<(LadderStep, u64)>, String> {
    let mut steps: Vec<(LadderStep, u64)> = Vec::new();
    for item in v.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (name, mins) = item.split_once(':').unwrap_or((item, "0"));
        let step = match name.trim().to_ascii_lowercase().as_str() {
            "notify" => LadderStep::Notify,
            "requeue" => LadderStep::Requeue,
            "cancel" => LadderStep::Cancel,
            other => {
                return Err(format!(
                    "unknown step \"{other}\" (expected notify, requeue or cancel, as step:minutes)"
                ))
            }
        };
        let secs = parse_minutes(mins)?.unwrap_or(0);
        if let Some(&(last, last_secs)) = steps.last() {
            if step <= last {
                return Err(format!(
                    "the steps must come in the order notify, requeue, cancel, each once (\"{item}\" after {})",
                    last.as_str()
                ));
            }
            if secs < last_secs {
                return Err(format!(
                    "\"{item}\" comes earlier than the step before it; delays count from the moment the job is flagged"
                ));
            }
        }
        steps.push((step, secs));
    }
    if steps.is_empty() {
        return Err("expected at least one step (notify:M, requeue:M, cancel:M)".into());
    }
    Ok(steps)
}

impl InvalidJobPolicy {
    /// Sets a global key this module owns.
    pub fn global(&mut self, canon: &str, value: &str) -> Result<(), String> {
        match canon {
            "HangMinutes" => self.hang_secs = parse_minutes(value)?,
            "IdleGpuMinutes" => self.idle_gpu_secs = parse_minutes(value)?,
            "IdleGpuPercent" => {
                self.idle_gpu_percent = value
                    .trim()
                    .parse()
                    .ok()
                    .filter(|p| *p <= 100)
                    .ok_or_else(|| format!("expected a percentage 0..100, got \"{value}\""))?
            }
            "InvalidJobLadder" => self.steps = parse_ladder(value)?,
            _ => return Err(format!("invalid key \"{canon}\"")),
        }
        Ok(())
    }

    /// The global keys of this module.
    pub const GLOBAL_KEYS: &'static [&'static str] = &[
        "HangMinutes",
        "IdleGpuMinutes",
        "IdleGpuPercent",
        "InvalidJobLadder",
    ];

    /// The hang threshold for a job of partition `p`.
    pub fn hang_for(&self, p: &PartitionLadder) -> Option<u64> {
        p.hang_secs.unwrap_or(self.hang_secs)
    }

    /// The idle-GPU threshold for a job of partition `p`.
    pub fn idle_gpu_for(&self, p: &PartitionLadder) -> Option<u64> {
        p.idle_gpu_secs.unwrap_or(self.idle_gpu_secs)
    }

    /// Whether any check is on anywhere (`partitions` being every partition's own settings).
    pub fn any_enabled<'a>(
        &self,
        mut partitions: impl Iterator<Item = &'a PartitionLadder>,
    ) -> bool {
        self.hang_secs.is_some()
            || self.idle_gpu_secs.is_some()
            || partitions.any(|p| {
                matches!(p.hang_secs, Some(Some(_))) || matches!(p.idle_gpu_secs, Some(Some(_)))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minutes_and_ladders() {
        assert_eq!(parse_minutes("0"), Ok(None));
        assert_eq!(parse_minutes("0.5"), Ok(Some(30)));
        assert_eq!(parse_minutes("120"), Ok(Some(7200)));
        assert!(parse_minutes("-1").is_err() && parse_minutes("x").is_err());
        assert_eq!(
            parse_ladder("notify:0, requeue:0.5,cancel:1"),
            Ok(vec![
                (LadderStep::Notify, 0),
                (LadderStep::Requeue, 30),
                (LadderStep::Cancel, 60)
            ])
        );
        assert_eq!(
            parse_ladder("cancel:5"),
            Ok(vec![(LadderStep::Cancel, 300)])
        );
        assert!(parse_ladder("requeue:1,notify:2")
            .unwrap_err()
            .contains("order"));
        assert!(parse_ladder("notify:5,cancel:1")
            .unwrap_err()
            .contains("earlier"));
        assert!(parse_ladder("suspend:1")
            .unwrap_err()
            .contains("unknown step"));
        assert!(parse_ladder("").is_err());
        let mut p = InvalidJobPolicy::default();
        p.global("HangMinutes", "2").unwrap();
        assert!(p.global("IdleGpuPercent", "101").is_err());
        let exempt = PartitionLadder {
            hang_secs: Some(None),
            idle_gpu_secs: None,
        };
        assert_eq!(p.hang_for(&exempt), None);
        assert_eq!(p.hang_for(&PartitionLadder::default()), Some(120));
    }
}
