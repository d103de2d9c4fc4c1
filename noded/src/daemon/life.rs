//! The node's part of its lifecycle: load samples for the heartbeats (load-aware placement,
//! and the node's memory and network counters for `FreeMem=` and the controller's hourly
//! usage aggregates), `scontrol reboot` (running `RebootProgram`) and `HealthCheckProgram`.
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
        ..NodeLoad::default()
    })
}

/// `(MemTotal, MemTotal - MemAvailable)` in MiB from the text of `/proc/meminfo` (kernels
/// before 3.14 have no `MemAvailable`: there `MemFree + Buffers + Cached` stands in).
pub fn parse_meminfo(text: &str) -> Option<(u64, u64)> {
    let kb = |key: &str| {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k == key).then(|| v.split_whitespace().next()?.parse::<u64>().ok())?
        })
    };
    let total = kb("MemTotal")?;
    let avail = kb("MemAvailable").or_else(|| {
        Some(kb("MemFree")? + kb("Buffers").unwrap_or(0) + kb("Cached").unwrap_or(0))
    })?;
    Some((total / 1024, total.saturating_sub(avail) / 1024))
}

/// Bytes received and sent over every interface but loopback, from the text of
/// `/proc/net/dev` (two header lines, then `name: rx_bytes packets ... tx_bytes ...`).
pub fn parse_net_dev(text: &str) -> Option<(u64, u64)> {
    let mut found = false;
    let (mut rx, mut tx) = (0u64, 0u64);
    for line in text.lines() {
        let Some((name, rest)) = line.split_once(':') else {
            continue;
        };
        let name = name.trim();
        if name.is_empty() || name.contains('|') {
            continue;
        }
        let f: Vec<u64> = rest
            .split_whitespace()
            .map_while(|v| v.parse().ok())
            .collect();
        if f.len() < 9 {
            continue;
        }
        found = true;
        if name == "lo" {
            continue;
        }
        rx = rx.saturating_add(f[0]);
        tx = tx.saturating_add(f[8]);
    }
    found.then_some((rx, tx))
}

/// The node's current load, if it can be read, with its memory and network counters.
pub fn sample(node: &str, cpus: u32) -> Option<NodeLoad> {
    let text = std::fs::read_to_string(loadavg_path(node)).ok()?;
    let mut load = parse_loadavg(&text, cpus)?;
    if let Some((total, used)) = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| parse_meminfo(&t))
    {
        load.mem_total_mb = Some(total);
        load.mem_used_mb = Some(used);
    }
    if let Some((rx, tx)) = std::fs::read_to_string("/proc/net/dev")
        .ok()
        .and_then(|t| parse_net_dev(&t))
    {
        load.net_rx_bytes = Some(rx);
        load.net_tx_bytes = Some(tx);
    }
    Some(load)
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

/// How long `HealthCheckProgram` may run before it is killed (slurmd's limit).
pub const HEALTH_CHECK_LIMIT: std::time::Duration = std::time::Duration::from_secs(60);

impl super::Node {
    /// Runs `HealthCheckProgram` as slurmd does: the program itself (no shell, no arguments)
    /// with only `SLURMD_NODENAME` in its environment, killed after a minute; a
    /// failure is logged with what the program printed (the program reports a bad node
    /// itself, typically by draining it). A run asked for while one is under way is skipped.
    /// As `RebootProgram`'s, the spawn runs no code of ours between fork and exec (no
    /// working directory, no identity change), so it is safe in the threaded daemon.
    pub(crate) async fn health_check(&self, program: &str) {
        use std::sync::atomic::Ordering;
        if self.health_check_running.swap(true, Ordering::AcqRel) {
            tracing::debug!("health check: the previous run is still under way");
            return;
        }
        let result = run_health_check(program, &self.settings.node).await;
        self.health_check_running.store(false, Ordering::Release);
        match result {
            Ok(()) => tracing::debug!("health check {program}: success"),
            Err(e) => tracing::error!("health check {program} failed: {e}"),
        }
    }
}

async fn run_health_check(program: &str, node: &str) -> Result<(), String> {
    let child = tokio::process::Command::new(program)
        .env_clear()
        .env("SLURMD_NODENAME", node)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot run it: {e}"))?;
    let out = match tokio::time::timeout(HEALTH_CHECK_LIMIT, child.wait_with_output()).await {
        Ok(r) => r.map_err(|e| format!("cannot wait for it: {e}"))?,
        Err(_) => return Err(format!("killed after {} s", HEALTH_CHECK_LIMIT.as_secs())),
    };
    if out.status.success() {
        return Ok(());
    }
    let printed =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    Err(format!("{} output: {}", out.status, printed.trim()))
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

    #[test]
    fn meminfo_used_is_total_minus_available() {
        let text = "MemTotal:       16384000 kB\nMemFree:         1000000 kB\n\
                    MemAvailable:    8192000 kB\nBuffers:          100000 kB\n\
                    Cached:          2000000 kB\nSwapTotal:             0 kB\n";
        assert_eq!(parse_meminfo(text), Some((16000, 8000)));
        // An old kernel: free + buffers + cached.
        let old = "MemTotal: 2048000 kB\nMemFree: 1024000 kB\nBuffers: 0 kB\nCached: 512000 kB\n";
        assert_eq!(parse_meminfo(old), Some((2000, 500)));
        assert_eq!(parse_meminfo("MemFree: 1 kB\n"), None);
        assert_eq!(parse_meminfo(""), None);
    }

    #[test]
    fn net_dev_sums_all_but_loopback() {
        let text = "Inter-|   Receive                                                |  Transmit\n \
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n    \
    lo: 5000000    4000    0    0    0     0          0         0  5000000    4000    0    0    0     0       0          0\n  \
  eth0: 1200     10    0    0    0     0          0         0     3400      20    0    0    0     0       0          0\n\
ens1f0:100 1 0 0 0 0 0 0 50 1 0 0 0 0 0 0\n";
        assert_eq!(parse_net_dev(text), Some((1300, 3450)));
        // Only loopback: zero traffic, but the file was read.
        let lo = "h1\nh2\n lo: 5 1 0 0 0 0 0 0 5 1 0 0 0 0 0 0\n";
        assert_eq!(parse_net_dev(lo), Some((0, 0)));
        assert_eq!(parse_net_dev("garbage\nlines"), None);
        assert_eq!(parse_net_dev("eth0: 1 2 3\n"), None);
    }

    #[test]
    fn this_host_has_memory() {
        let l = sample("nonexistent-node", 2).expect("/proc/loadavg");
        let (total, used) = (l.mem_total_mb.unwrap(), l.mem_used_mb.unwrap());
        assert!(total > 0 && used <= total, "{l:?}");
        assert!(l.net_rx_bytes.is_some(), "{l:?}");
    }
}
