//! The node's part of its lifecycle: load samples for the heartbeats (load-aware placement)
//! and `scontrol reboot` (running `RebootProgram`).
//!
//! The load is the one-minute load average of `/proc/loadavg` as a share of the node's CPUs.
//! `GSCHED_LOADAVG_FILE` (with `%n` for the node name) names another file in that format:
//! the test harness runs several nodes on one host, which share one `/proc/loadavg`, so a
//! test gives each node a load of its own that way. When the file is missing the real one
//! is read.

use gsched_proto::resv::NodeLoad;

/// Where the load average is read from.
fn loadavg_path(node: &str) -> std::path::PathBuf {
    if let Ok(p) = std::env::var("GSCHED_LOADAVG_FILE") {
        let p = std::path::PathBuf::from(p.replace("%n", node));
        if p.exists() {
            return p;
        }
    }
    "/proc/loadavg".into()
}

/// The load as a share of `cpus`, from `/proc/loadavg`'s text.
pub fn parse_loadavg(text: &str, cpus: u32) -> Option<NodeLoad> {
    let load_avg: f64 = text.split_whitespace().next()?.parse().ok()?;
    if !load_avg.is_finite() || load_avg < 0.0 {
        return None;
    }
    let pct = (load_avg * 100.0 / f64::from(cpus.max(1))).round();
    Some(NodeLoad {
        load_avg,
        cpu_load_pct: pct.min(f64::from(u32::MAX)) as u32,
        // GPU utilisation is the GPU backend's to fill (NVML); none measured here.
        gpu_util_pct: None,
    })
}

/// The node's current load, if it can be read.
pub fn sample(node: &str, cpus: u32) -> Option<NodeLoad> {
    let text = std::fs::read_to_string(loadavg_path(node)).ok()?;
    parse_loadavg(&text, cpus)
}

/// Starts `RebootProgram` (through `/bin/sh -c`, as Slurm runs it) and reaps it in the
/// background. On a real node it reboots the host; gsnoded then starts at boot and
/// registers again, which tells the controller the reboot is done. std's `Command` spawns
/// without running code between fork and exec, so this is safe in the threaded daemon.
pub fn reboot(program: &str) -> std::io::Result<()> {
    let mut child = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(program)
        .stdin(std::process::Stdio::null())
        .spawn()?;
    std::thread::spawn(move || {
        let _ = child.wait();
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loadavg_as_a_share_of_cpus() {
        let l = parse_loadavg("3.40 2.00 1.00 2/345 6789\n", 4).unwrap();
        assert_eq!(l.cpu_load_pct, 85);
        assert!((l.load_avg - 3.4).abs() < 1e-9);
        assert_eq!(parse_loadavg("0.00 0 0", 2).unwrap().cpu_load_pct, 0);
        assert!(parse_loadavg("", 2).is_none());
        assert!(parse_loadavg("x 1 1", 2).is_none());
    }
}
