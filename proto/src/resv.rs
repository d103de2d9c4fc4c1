//! API types of the node lifecycle beyond `api.rs`'s core: maintenance reservations
//! (`scontrol create|update|delete|show reservation`, `sinfo -T`), `scontrol reboot`, and
//! the load samples gsnoded sends with its heartbeats. Kept apart so that `api.rs` only
//! names them.

use serde::{Deserialize, Serialize};

/// A node's measured load, sent with heartbeats.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NodeLoad {
    /// The one-minute load average (`/proc/loadavg`), as Slurm's `CPULoad=`.
    pub load_avg: f64,
    /// `load_avg` as a percentage of the node's CPUs (100 = every CPU busy).
    pub cpu_load_pct: u32,
    /// The busiest GPU's utilisation in percent, where gsnoded measures GPUs (NVML); `None`
    /// without GPUs. Placement scores a node by the higher of the two.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_util_pct: Option<u32>,
    /// The node's memory and the part in use (`MemTotal` and `MemTotal - MemAvailable` of
    /// `/proc/meminfo`), MiB; `None` from older daemons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_total_mb: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_used_mb: Option<u64>,
    /// Bytes received and sent since boot over every interface but loopback
    /// (`/proc/net/dev`); counters, so rates come from differences.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net_rx_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net_tx_bytes: Option<u64>,
}

impl NodeLoad {
    /// The load placement scores: the higher of CPU load and GPU utilisation.
    pub fn score_pct(&self) -> u32 {
        self.cpu_load_pct.max(self.gpu_util_pct.unwrap_or(0))
    }
}

/// A reservation as the controller keeps and reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReservationInfo {
    pub name: String,
    /// Epoch seconds.
    pub start_time: i64,
    pub end_time: i64,
    /// Node names, in config order.
    pub nodes: Vec<String>,
    /// Slurm's flag names (`MAINT`, `IGNORE_JOBS`).
    pub flags: Vec<String>,
    /// `Users=`: who may run jobs in it.
    pub users: Vec<String>,
    /// CPUs of its nodes (`CoreCnt=`, `TRES=cpu=`).
    #[serde(default)]
    pub cpus: u32,
}

impl ReservationInfo {
    /// `ACTIVE` between its start and end, else `INACTIVE` (Slurm's words).
    pub fn state(&self, now: i64) -> &'static str {
        if self.start_time <= now && now < self.end_time {
            "ACTIVE"
        } else {
            "INACTIVE"
        }
    }
}

/// The flags gsched implements on reservations.
pub const RESV_FLAGS: &[&str] = &["MAINT", "IGNORE_JOBS"];

/// What `create` and `update` set; `None` leaves a value as it is (update) or takes the
/// default (create).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReservationSpec {
    pub name: Option<String>,
    pub start_time: Option<i64>,
    pub end_time: Option<i64>,
    /// Minutes.
    pub duration_min: Option<u32>,
    /// A hostlist expression (`n[1-4]`, `ALL`).
    pub nodes: Option<String>,
    pub flags: Option<Vec<String>>,
    pub users: Option<Vec<String>>,
}

/// `POST /v1/reservations/update`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReservationAction {
    Create(ReservationSpec),
    /// `spec.name` names the reservation to change.
    Update(ReservationSpec),
    Delete {
        name: String,
    },
}

/// The answer to a [`ReservationAction`]: the reservation's name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReservationActionResponse {
    pub name: String,
}

/// `GET /v1/reservations`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReservationsResponse {
    pub now: i64,
    pub reservations: Vec<ReservationInfo>,
}

/// What a node does once rebooted (`scontrol reboot nextstate=`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RebootNextState {
    /// Back in service (Slurm's default unless the node was drained or down).
    #[default]
    Resume,
    Down,
}

/// `POST /v1/nodes/reboot`: `scontrol reboot [ASAP] [nextstate=] [reason=] NODES`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RebootRequest {
    /// Node names (hostlists allowed); `ALL` for every node.
    pub names: Vec<String>,
    /// `ASAP`: drain the nodes so that no new job starts, reboot once they are idle.
    pub asap: bool,
    pub next_state: RebootNextState,
    pub reason: Option<String>,
}

/// `POST /v1/node/reboot` (to gsnoded): run `RebootProgram`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NodeRebootRequest {
    pub program: String,
}

/// `POST /v1/node/health_check`: run `HealthCheckProgram` now (the node answers at once and
/// logs a failure; the program reports a bad node itself, e.g. by draining it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NodeHealthCheckRequest {
    pub program: String,
}

/// `--switches=count[@max-time]`: the job wants at most `count` leaf switches and waits up to
/// `wait_secs` (from its submission) for them; then it is placed anyhow, as in Slurm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SwitchesSpec {
    pub count: u32,
    /// Seconds; Slurm's default is `max_switch_wait` (300 seconds).
    pub wait_secs: u32,
}

/// Slurm's default `max_switch_wait`.
pub const DEFAULT_SWITCH_WAIT_SECS: u32 = 300;

impl SwitchesSpec {
    /// Parses `count[@max-time]` (`max-time` in Slurm's time formats: minutes, M:S, H:M:S,
    /// D-H, ...).
    pub fn parse(v: &str) -> Result<SwitchesSpec, String> {
        let (c, t) = match v.split_once('@') {
            Some((c, t)) => (c, Some(t)),
            None => (v, None),
        };
        let count: u32 = c.trim().parse().ok().filter(|&n| n >= 1).ok_or_else(|| {
            format!("invalid --switches count \"{c}\" (a whole number of at least 1)")
        })?;
        let wait_secs = match t {
            None => DEFAULT_SWITCH_WAIT_SECS,
            Some(t) => time_secs(t.trim()).ok_or_else(|| {
                format!("invalid --switches time \"{t}\" (M, M:S, H:M:S, D-H, D-H:M or D-H:M:S)")
            })?,
        };
        Ok(SwitchesSpec { count, wait_secs })
    }
}

/// Seconds of a Slurm duration (`M`, `M:S`, `H:M:S`, `D-H`, `D-H:M`, `D-H:M:S`), exactly.
fn time_secs(t: &str) -> Option<u32> {
    crate::units::parse_time_minutes(t).ok()??;
    let (days, clock) = match t.split_once('-') {
        Some((d, c)) => (d.parse::<u64>().ok()?, c),
        None => (0, t),
    };
    let f: Vec<u64> = clock
        .split(':')
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    let dashed = t.contains('-');
    let secs = match (dashed, f.as_slice()) {
        (false, [m]) => m * 60,
        (false, [m, s]) => m * 60 + s,
        (false, [h, m, s]) | (true, [h, m, s]) => h * 3600 + m * 60 + s,
        (true, [h]) => h * 3600,
        (true, [h, m]) => h * 3600 + m * 60,
        _ => return None,
    };
    u32::try_from(days * 86_400 + secs).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switches_spec_parses_slurms_forms() {
        assert_eq!(
            SwitchesSpec::parse("1").unwrap(),
            SwitchesSpec {
                count: 1,
                wait_secs: 300
            }
        );
        assert_eq!(SwitchesSpec::parse("2@0:10").unwrap().wait_secs, 10);
        assert_eq!(SwitchesSpec::parse("2@5").unwrap().wait_secs, 300);
        assert_eq!(SwitchesSpec::parse("2@1-0").unwrap().wait_secs, 86_400);
        assert!(SwitchesSpec::parse("0").is_err());
        assert!(SwitchesSpec::parse("x@1").is_err());
        assert!(SwitchesSpec::parse("1@soon").is_err());
    }
}
