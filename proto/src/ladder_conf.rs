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
//! `IdleGpuMinutes=` of its own (0 exempts its jobs), and so may a QOS in the association
//! table (`gsacctmgr modify qos NAME set HangMinutes=M IdleGpuMinutes=M`, [`QosLadder`]),
//! which wins over the partition: the QOS is what a site gives a kind of work (a patient
//! pipeline, a strict GPU queue), the partition only where it runs. A QOS with
//! `Flags=Interactive` exempts its jobs from every check: gsched has no interactive
//! allocations (no salloc), so interactive apps (Jupyter, Open OnDemand) are batch jobs that
//! idle legitimately, and sites put them in such a QOS.

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

/// A QOS's own settings (from the association table). `Some(0)` is an explicit 0: the check
/// is off for the QOS's jobs; `None`: not set, the partition's or the cluster's applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QosLadder {
    /// `Flags=Interactive`: no check at all.
    pub interactive: bool,
    /// `HangMinutes=`, in seconds.
    pub hang_secs: Option<u64>,
    /// `IdleGpuMinutes=`, in seconds.
    pub idle_gpu_secs: Option<u64>,
}

impl QosLadder {
    /// Whether this QOS turns a check on by itself (so the ladder must run even when the
    /// cluster and every partition leave it off).
    fn enables_any(&self) -> bool {
        !self.interactive
            && (self.hang_secs.is_some_and(|s| s > 0) || self.idle_gpu_secs.is_some_and(|s| s > 0))
    }
}

/// Precedence of one threshold: the QOS's if set (0 = off), else the partition's if set
/// (`Some(None)` = off), else the cluster's.
fn resolve(cluster: Option<u64>, part: Option<Option<u64>>, qos: Option<u64>) -> Option<u64> {
    match qos {
        Some(0) => None,
        Some(s) => Some(s),
        None => part.unwrap_or(cluster),
    }
}

/// Formats seconds as the minutes they were given in (`0.05`, `2`, `1.5`): at most two
/// decimals, trailing zeros dropped.
pub fn format_minutes(secs: u64) -> String {
    if secs % 60 == 0 {
        return (secs / 60).to_string();
    }
    let t = format!("{:.2}", secs as f64 / 60.0);
    t.trim_end_matches('0').trim_end_matches('.').to_string()
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

    /// The hang threshold for a job of partition `p` and QOS `q` (QOS over partition over
    /// cluster; none for an interactive QOS).
    pub fn hang_for(&self, p: &PartitionLadder, q: &QosLadder) -> Option<u64> {
        if q.interactive {
            return None;
        }
        resolve(self.hang_secs, p.hang_secs, q.hang_secs)
    }

    /// The idle-GPU threshold for a job of partition `p` and QOS `q`.
    pub fn idle_gpu_for(&self, p: &PartitionLadder, q: &QosLadder) -> Option<u64> {
        if q.interactive {
            return None;
        }
        resolve(self.idle_gpu_secs, p.idle_gpu_secs, q.idle_gpu_secs)
    }

    /// Whether any check is on anywhere (`partitions` and `qos` being every partition's and
    /// every QOS's own settings).
    pub fn any_enabled<'a>(
        &self,
        mut partitions: impl Iterator<Item = &'a PartitionLadder>,
        mut qos: impl Iterator<Item = QosLadder>,
    ) -> bool {
        self.hang_secs.is_some()
            || self.idle_gpu_secs.is_some()
            || partitions.any(|p| {
                matches!(p.hang_secs, Some(Some(_))) || matches!(p.idle_gpu_secs, Some(Some(_)))
            })
            || qos.any(|q| q.enables_any())
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
        let none = QosLadder::default();
        assert_eq!(p.hang_for(&exempt, &none), None);
        assert_eq!(p.hang_for(&PartitionLadder::default(), &none), Some(120));
    }

    #[test]
    fn qos_over_partition_over_cluster() {
        let mut p = InvalidJobPolicy::default();
        p.global("HangMinutes", "2").unwrap();
        p.global("IdleGpuMinutes", "10").unwrap();
        let unset = PartitionLadder::default();
        let part_off = PartitionLadder {
            hang_secs: Some(None),
            idle_gpu_secs: Some(None),
        };
        let part_5 = PartitionLadder {
            hang_secs: Some(Some(300)),
            idle_gpu_secs: Some(Some(300)),
        };
        let qos_unset = QosLadder::default();
        let qos_3s = QosLadder {
            hang_secs: Some(3),
            idle_gpu_secs: Some(6),
            ..QosLadder::default()
        };
        let qos_off = QosLadder {
            hang_secs: Some(0),
            idle_gpu_secs: Some(0),
            ..QosLadder::default()
        };
        // Nothing set below the cluster: the cluster's.
        assert_eq!(p.hang_for(&unset, &qos_unset), Some(120));
        assert_eq!(p.idle_gpu_for(&unset, &qos_unset), Some(600));
        // The partition over the cluster.
        assert_eq!(p.hang_for(&part_5, &qos_unset), Some(300));
        assert_eq!(p.hang_for(&part_off, &qos_unset), None);
        // The QOS over both, either way.
        assert_eq!(p.hang_for(&part_off, &qos_3s), Some(3));
        assert_eq!(p.idle_gpu_for(&part_off, &qos_3s), Some(6));
        assert_eq!(p.hang_for(&part_5, &qos_off), None);
        assert_eq!(p.idle_gpu_for(&unset, &qos_off), None);
        // A QOS may set one threshold and leave the other to the partition.
        let hang_only = QosLadder {
            hang_secs: Some(3),
            ..QosLadder::default()
        };
        assert_eq!(p.idle_gpu_for(&part_5, &hang_only), Some(300));
        // Interactive: exempt from everything, whatever else is set.
        let interactive = QosLadder {
            interactive: true,
            ..qos_3s
        };
        for part in [unset, part_off, part_5] {
            assert_eq!(p.hang_for(&part, &interactive), None);
            assert_eq!(p.idle_gpu_for(&part, &interactive), None);
        }
        // A QOS alone can turn the ladder on; an interactive or exempting one cannot.
        let off = InvalidJobPolicy::default();
        assert!(!off.any_enabled([part_off].iter(), [qos_off, interactive].into_iter()));
        assert!(off.any_enabled([unset].iter(), [qos_off, hang_only].into_iter()));
        assert!(off.any_enabled([part_5].iter(), std::iter::empty()));
    }

    #[test]
    fn minutes_format_as_given() {
        assert_eq!(format_minutes(3), "0.05");
        assert_eq!(format_minutes(30), "0.5");
        assert_eq!(format_minutes(90), "1.5");
        assert_eq!(format_minutes(7200), "120");
        assert_eq!(format_minutes(0), "0");
        // What is shown parses back to the same seconds.
        for s in [1u64, 3, 10, 59, 61, 3599] {
            assert_eq!(parse_minutes(&format_minutes(s)), Ok(Some(s)), "{s}");
        }
    }
}
