//! The scheduler core's settings from the daemon's config, in one place, so that gsctld and
//! the trace simulator (gssim) read `SchedulerType=` and `SchedulerParameters=` alike.

use gsched_proto::config::{BackfillPolicy, Config, SchedulerType};

use crate::{Policy, SchedConfig};

impl SchedConfig {
    /// The settings from `SchedulerType=` and `SchedulerParameters=` (`bf_policy`,
    /// `bf_reserve`, `bf_window`, `bf_max_job_test`).
    pub fn from_config(cfg: &Config) -> SchedConfig {
        let p = cfg.scheduler.params;
        let mut c = SchedConfig {
            policy: match (cfg.scheduler.scheduler_type, p.bf_policy) {
                (SchedulerType::Builtin, _) => Policy::Fifo,
                (SchedulerType::Backfill, BackfillPolicy::Easy) => Policy::Easy {
                    reserve: p.bf_reserve.unwrap_or(1) as usize,
                },
                (SchedulerType::Backfill, BackfillPolicy::Conservative) => Policy::Conservative,
            },
            ..SchedConfig::default()
        };
        if let Some(w) = p.bf_window_min {
            c.horizon_secs = w as i64 * 60;
        }
        if let Some(n) = p.bf_max_job_test {
            c.plan_depth = n as usize;
        }
        c
    }
}
