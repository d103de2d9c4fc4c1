//! `gscontrol show job`'s live usage line for a running job, from `/v1/jobs/usage` (gsched's
//! own: Slurm's scontrol shows no usage, and sstat's figures live in gsstat):
//!
//! `CurrentRSS=1.17G PeakRSS=1.50G CPUUtil=97% AveCPUs=0.98 IORead=10M IOWrite=5M
//! Processes=3 [GPUUtil=12% GPUMem=100M]`, summed over the job's nodes: resident memory now
//! and the sum of each node's peak, CPU use lately as a percent of the job's allocated CPUs,
//! the CPUs kept busy on average since the start, bytes read and written by its processes.
//! Shown only once a sample arrived; a figure that could not be read is left out.

use crate::sacct::bytes_str;
use gsched_proto::api::JobUsageInfo;

/// A byte count for people: in the largest unit under which it is at least 1 (`1.17G`,
/// `200M`, `512K`), in sacct's `--units` style.
pub fn human_bytes(b: u64) -> String {
    let unit = match b {
        b if b >= 1 << 40 => 'T',
        b if b >= 1 << 30 => 'G',
        b if b >= 1 << 20 => 'M',
        _ => 'K',
    };
    bytes_str(b, Some(unit))
}

/// The line's text (without its indentation), or `None` before the first sample.
pub fn usage_line(u: &JobUsageInfo) -> Option<String> {
    if u.error.is_some() || u.nodes.is_empty() {
        return None;
    }
    let t = &u.total;
    let mut parts = Vec::new();
    if let Some(b) = t.rss_bytes {
        parts.push(format!("CurrentRSS={}", human_bytes(b)));
    }
    let peaks: Vec<u64> = u.nodes.iter().filter_map(|n| n.peak_rss_bytes).collect();
    if !peaks.is_empty() {
        let sum = peaks.iter().fold(0u64, |a, b| a.saturating_add(*b));
        parts.push(format!("PeakRSS={}", human_bytes(sum)));
    }
    if let Some(c) = t.cpu_util_percent {
        parts.push(format!("CPUUtil={c:.0}%"));
    }
    if let Some(c) = t.ave_cpus_used {
        parts.push(format!("AveCPUs={c:.2}"));
    }
    if let Some(b) = t.read_bytes {
        parts.push(format!("IORead={}", human_bytes(b)));
    }
    if let Some(b) = t.write_bytes {
        parts.push(format!("IOWrite={}", human_bytes(b)));
    }
    parts.push(format!("Processes={}", t.processes));
    if let Some(g) = t.gpu_util_percent {
        parts.push(format!("GPUUtil={g}%"));
    }
    if let Some(m) = t.gpu_mem_mb {
        parts.push(format!("GPUMem={}", human_bytes(m.saturating_mul(1 << 20))));
    }
    Some(parts.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use gsched_proto::api::{JobNodeUsage, UsageTotals};

    #[test]
    fn bytes_for_people() {
        assert_eq!(human_bytes(200 << 20), "200M");
        assert_eq!(human_bytes(1_258_291_200), "1.17G");
        assert_eq!(human_bytes(512 << 10), "512K");
        assert_eq!(human_bytes(0), "0K");
        assert_eq!(human_bytes(3 << 40), "3T");
    }

    #[test]
    fn line_only_with_samples() {
        let mut u = JobUsageInfo::default();
        assert_eq!(usage_line(&u), None);
        u.nodes = vec![
            JobNodeUsage {
                peak_rss_bytes: Some(300 << 20),
                ..JobNodeUsage::default()
            },
            JobNodeUsage {
                peak_rss_bytes: Some(100 << 20),
                ..JobNodeUsage::default()
            },
        ];
        u.total = UsageTotals {
            rss_bytes: Some(200 << 20),
            cpu_util_percent: Some(96.6),
            ave_cpus_used: Some(0.5),
            read_bytes: Some(10 << 20),
            write_bytes: Some(0),
            processes: 3,
            gpu_util_percent: Some(12),
            gpu_mem_mb: Some(100),
            ..UsageTotals::default()
        };
        assert_eq!(
            usage_line(&u).unwrap(),
            "CurrentRSS=200M PeakRSS=400M CPUUtil=97% AveCPUs=0.50 IORead=10M IOWrite=0K \
             Processes=3 GPUUtil=12% GPUMem=100M"
        );
        u.total = UsageTotals::default();
        u.nodes[0].peak_rss_bytes = None;
        u.nodes[1].peak_rss_bytes = None;
        assert_eq!(usage_line(&u).unwrap(), "Processes=0");
    }
}
