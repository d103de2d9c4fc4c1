//! Node lifecycle settings of `gsched.conf`: what happens to jobs when a node fails
//! (`JobRequeue=`), when a node that was set DOWN comes back (`ReturnToService=`), how a node
//! reboots (`RebootProgram=`), how the switches are laid out (`TopologyPlugin=` and
//! `topology.conf`, see [`crate::topology_conf`]) and when a node counts as busy for
//! placement (`NodeLoadThreshold=`, gsched's).
//!
//! They live in their own module (the config parser hands these keys over, as it does for
//! the mail keys) so that the node lifecycle can grow without touching the parser's tables.

/// The keys handled here (all global).
pub const LIFECYCLE_KEYS: &[&str] = &[
    "JobRequeue",
    "ReturnToService",
    "RebootProgram",
    "TopologyPlugin",
    "NodeLoadThreshold",
    "ResumeTimeout",
];

/// Default `NodeLoadThreshold=`: a node whose measured CPU load is above 85% of its CPUs is
/// scored down for new placements.
pub const DEFAULT_LOAD_THRESHOLD_PCT: u32 = 85;

/// `TopologyPlugin=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TopologyPlugin {
    /// `topology/none` (default): all nodes are equal.
    #[default]
    None,
    /// `topology/tree`: `topology.conf` beside gsched.conf describes the switches;
    /// multi-node jobs go to as few leaf switches as possible.
    Tree,
}

/// The node lifecycle settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LifecycleConfig {
    /// `JobRequeue=1` (default): batch jobs are requeued after a node failure unless
    /// submitted with `--no-requeue`; `0`: only those submitted with `--requeue`.
    pub job_requeue: bool,
    /// `ReturnToService=` (Slurm's meanings): 0 (default) a DOWN node stays DOWN until
    /// `scontrol update State=RESUME`; 1 a node set DOWN for not responding returns to
    /// service when it answers again; 2 any DOWN node returns when its daemon registers.
    pub return_to_service: u8,
    /// `RebootProgram=`: what gsnoded runs for `scontrol reboot` (none: reboot refused).
    pub reboot_program: Option<String>,
    /// `TopologyPlugin=`.
    pub topology: TopologyPlugin,
    /// `NodeLoadThreshold=` percent (gsched): nodes whose measured load is above it are
    /// placed on last. 0 disables the scoring.
    pub load_threshold_pct: u32,
    /// `ResumeTimeout=` seconds (default 60): a node whose reboot was issued and that has
    /// not registered again within it is set DOWN, as Slurm does.
    pub resume_timeout_secs: u32,
}

impl Default for LifecycleConfig {
    fn default() -> Self {
        LifecycleConfig {
            job_requeue: true,
            return_to_service: 0,
            reboot_program: None,
            topology: TopologyPlugin::None,
            load_threshold_pct: DEFAULT_LOAD_THRESHOLD_PCT,
            resume_timeout_secs: 60,
        }
    }
}

impl LifecycleConfig {
    /// Takes one of [`LIFECYCLE_KEYS`]; the error is the value's problem, worded for the
    /// parser's `file:line: Key: ...`.
    pub fn global(&mut self, key: &str, value: &str) -> Result<(), String> {
        match key {
            "JobRequeue" => {
                self.job_requeue = match value.trim() {
                    "0" => false,
                    "1" => true,
                    _ => return Err(format!("invalid value \"{value}\" (expected 0 or 1)")),
                }
            }
            "ReturnToService" => {
                self.return_to_service = match value.trim() {
                    "0" => 0,
                    "1" => 1,
                    "2" => 2,
                    _ => return Err(format!("invalid value \"{value}\" (expected 0, 1 or 2)")),
                }
            }
            "RebootProgram" => {
                let v = value.trim();
                if v.is_empty() {
                    return Err("needs the path of a program".into());
                }
                self.reboot_program = Some(v.to_string());
            }
            "TopologyPlugin" => {
                self.topology = match value.trim().to_ascii_lowercase().as_str() {
                    "topology/none" | "none" | "" => TopologyPlugin::None,
                    "topology/tree" | "tree" => TopologyPlugin::Tree,
                    _ => {
                        return Err(format!(
                            "unknown topology plugin \"{value}\"; valid names: topology/none, topology/tree"
                        ))
                    }
                }
            }
            "NodeLoadThreshold" => {
                let v = value.trim().trim_end_matches('%');
                let pct: u32 = v
                    .parse()
                    .map_err(|_| format!("invalid value \"{value}\" (expected a percentage, 0 to disable)"))?;
                self.load_threshold_pct = pct;
            }
            "ResumeTimeout" => {
                self.resume_timeout_secs = value
                    .trim()
                    .parse()
                    .map_err(|_| format!("invalid value \"{value}\" (expected seconds)"))?;
            }
            _ => return Err(format!("{key} is not a node lifecycle setting")),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_each_key_and_refuses_bad_values() {
        let mut c = LifecycleConfig::default();
        assert!(c.job_requeue);
        assert_eq!(c.return_to_service, 0);
        assert_eq!(c.load_threshold_pct, 85);
        c.global("JobRequeue", "0").unwrap();
        c.global("ReturnToService", "2").unwrap();
        c.global("RebootProgram", "/sbin/reboot").unwrap();
        c.global("TopologyPlugin", "topology/tree").unwrap();
        c.global("NodeLoadThreshold", "70%").unwrap();
        c.global("ResumeTimeout", "600").unwrap();
        assert_eq!(c.resume_timeout_secs, 600);
        assert!(c.global("ResumeTimeout", "soon").is_err());
        assert!(!c.job_requeue);
        assert_eq!(c.return_to_service, 2);
        assert_eq!(c.reboot_program.as_deref(), Some("/sbin/reboot"));
        assert_eq!(c.topology, TopologyPlugin::Tree);
        assert_eq!(c.load_threshold_pct, 70);
        assert!(c.global("JobRequeue", "yes").is_err());
        assert!(c.global("ReturnToService", "3").is_err());
        let e = c.global("TopologyPlugin", "topology/3d_torus").unwrap_err();
        assert!(
            e.contains("valid names: topology/none, topology/tree"),
            "{e}"
        );
        assert!(c.global("NodeLoadThreshold", "high").is_err());
    }
}
