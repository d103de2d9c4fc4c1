//! Output: the comparison table, CSV and JSON. Everything printed is a function of the input
//! (no timings, no paths made absolute), so the same run prints the same bytes.

use std::fmt::Write as _;

use serde::Serialize;

use crate::metrics::Metrics;

/// One policy's figures with what they were measured on.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub trace: String,
    pub cluster_cpus: u64,
    #[serde(flatten)]
    pub metrics: Metrics,
}

/// JSON: one object for one policy (the stable shape scripts rely on), an array for several.
pub fn json(rows: &[Row]) -> String {
    let v = if rows.len() == 1 {
        serde_json::to_value(&rows[0])
    } else {
        serde_json::to_value(rows)
    };
    // Serializing plain structs of numbers and strings cannot fail.
    let mut s = serde_json::to_string_pretty(&v.unwrap_or_default()).unwrap_or_default();
    s.push('\n');
    s
}

const COLUMNS: &[&str] = &[
    "policy",
    "jobs",
    "avg_wait_s",
    "p50_wait_s",
    "p95_wait_s",
    "p99_wait_s",
    "avg_bsld",
    "utilization",
    "makespan_s",
    "jobs_per_hour",
    "killed",
    "rejected",
    "predictor",
    "median_abs_error_s",
    "underpredicted",
    "mean_accuracy",
];

fn cells(m: &Metrics) -> Vec<String> {
    vec![
        m.policy.clone(),
        m.jobs.to_string(),
        format!("{:.2}", m.avg_wait_s),
        m.p50_wait_s.to_string(),
        m.p95_wait_s.to_string(),
        m.p99_wait_s.to_string(),
        format!("{:.2}", m.avg_bsld),
        format!("{:.4}", m.utilization),
        m.makespan_s.to_string(),
        format!("{:.2}", m.jobs_per_hour),
        m.killed.to_string(),
        m.rejected.to_string(),
        m.accuracy.predictor.clone(),
        format!("{:.1}", m.accuracy.median_abs_error_s),
        format!("{:.4}", m.accuracy.underpredicted),
        format!("{:.4}", m.accuracy.mean_accuracy),
    ]
}

/// CSV with a header line (`trace`, `cluster_cpus`, then the table's columns).
pub fn csv(rows: &[Row]) -> String {
    let mut s = String::from("trace,cluster_cpus,");
    s.push_str(&COLUMNS.join(","));
    s.push('\n');
    for r in rows {
        let trace = if r.trace.contains([',', '"', '\n']) {
            format!("\"{}\"", r.trace.replace('"', "\"\""))
        } else {
            r.trace.clone()
        };
        let _ = writeln!(
            s,
            "{trace},{},{}",
            r.cluster_cpus,
            cells(&r.metrics).join(",")
        );
    }
    s
}

/// The aligned comparison table, headed by `heading` lines.
pub fn table(heading: &[String], rows: &[Row]) -> String {
    let mut s = String::new();
    for h in heading {
        s.push_str(h);
        s.push('\n');
    }
    let body: Vec<Vec<String>> = rows.iter().map(|r| cells(&r.metrics)).collect();
    let widths: Vec<usize> = (0..COLUMNS.len())
        .map(|c| {
            body.iter()
                .map(|r| r[c].len())
                .chain([COLUMNS[c].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cols: Vec<&str>| -> String {
        let mut l = String::new();
        for (c, v) in cols.iter().enumerate() {
            if c == 0 || c == 12 {
                let _ = write!(l, "{v:<w$}  ", w = widths[c]);
            } else {
                let _ = write!(l, "{v:>w$}  ", w = widths[c]);
            }
        }
        l.trim_end().to_string()
    };
    s.push_str(&line(COLUMNS.to_vec()));
    s.push('\n');
    for r in &body {
        s.push_str(&line(r.iter().map(String::as_str).collect()));
        s.push('\n');
    }
    s
}
