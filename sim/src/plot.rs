//! The SVG plot: the distribution of waits (fraction of jobs that waited at most x, x on a
//! log scale) and utilization over time, one line per policy.

use std::path::Path;

use anyhow::{anyhow, Result};
use plotters::prelude::*;

use crate::engine::Outcome;

/// Utilization of `cpus` CPUs in `bins` equal intervals from the first submit to the last
/// end: the CPU-seconds of running jobs in each interval over its length × CPUs.
pub fn utilization_series(o: &Outcome, cpus: u64, bins: usize) -> Vec<(f64, f64)> {
    let first = o.jobs.iter().map(|j| j.submit).min().unwrap_or(0);
    let last = o.jobs.iter().map(|j| j.end).max().unwrap_or(0);
    if last <= first || bins == 0 || cpus == 0 {
        return Vec::new();
    }
    let width = ((last - first) as f64 / bins as f64).max(1.0);
    let mut busy = vec![0f64; bins];
    for j in &o.jobs {
        let (s, e) = ((j.start - first) as f64, (j.end - first) as f64);
        let mut b = ((s / width) as usize).min(bins - 1);
        while b < bins {
            let lo = b as f64 * width;
            let hi = lo + width;
            if lo >= e {
                break;
            }
            busy[b] += j.cpus as f64 * (e.min(hi) - s.max(lo)).max(0.0);
            b += 1;
        }
    }
    busy.iter()
        .enumerate()
        .map(|(b, &x)| {
            (
                (b as f64 + 0.5) * width / 86400.0,
                x / (width * cpus as f64),
            )
        })
        .collect()
}

/// Points of the wait CDF: (wait in seconds, at least 1; fraction of jobs waiting at most it).
pub fn wait_cdf(o: &Outcome) -> Vec<(f64, f64)> {
    let mut w: Vec<i64> = o.jobs.iter().map(|j| j.wait()).collect();
    w.sort_unstable();
    let n = w.len() as f64;
    let mut pts = Vec::new();
    for (i, &x) in w.iter().enumerate() {
        if i + 1 < w.len() && w[i + 1] == x {
            continue;
        }
        pts.push(((x.max(1)) as f64, (i + 1) as f64 / n));
    }
    // Thin to at most ~2,000 points (every k-th), keeping the last.
    let k = pts.len().div_ceil(2000).max(1);
    let last = pts.last().copied();
    let mut out: Vec<(f64, f64)> = pts.into_iter().step_by(k).collect();
    if let Some(l) = last {
        if out.last() != Some(&l) {
            out.push(l);
        }
    }
    out
}

/// Writes the plot of `runs` (policy name, outcome) to `path` (SVG).
pub fn write_svg(path: &Path, title: &str, runs: &[(String, &Outcome)], cpus: u64) -> Result<()> {
    let err = |e: &dyn std::fmt::Display| anyhow!("cannot draw {}: {e}", path.display());
    let root = SVGBackend::new(path, (1000, 800)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let (top, bottom) = root.split_vertically(400);
    let colors = [RED, BLUE, GREEN, MAGENTA, CYAN, BLACK];

    let max_wait = runs
        .iter()
        .flat_map(|(_, o)| o.jobs.iter().map(|j| j.wait()))
        .max()
        .unwrap_or(1)
        .max(10) as f64;
    let mut cdf = ChartBuilder::on(&top)
        .caption(format!("{title}: wait distribution"), ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(50)
        .build_cartesian_2d((1f64..max_wait * 1.1).log_scale(), 0f64..1.0)
        .map_err(|e| err(&e))?;
    cdf.configure_mesh()
        .x_desc("wait (s, log scale)")
        .y_desc("fraction of jobs")
        .draw()
        .map_err(|e| err(&e))?;
    for (i, (name, o)) in runs.iter().enumerate() {
        let c = colors[i % colors.len()];
        cdf.draw_series(LineSeries::new(wait_cdf(o), c.stroke_width(2)))
            .map_err(|e| err(&e))?
            .label(name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
    }
    cdf.configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| err(&e))?;

    let series: Vec<(String, Vec<(f64, f64)>)> = runs
        .iter()
        .map(|(n, o)| (n.clone(), utilization_series(o, cpus, 200)))
        .collect();
    let max_day = series
        .iter()
        .flat_map(|(_, s)| s.iter().map(|p| p.0))
        .fold(0.0, f64::max)
        .max(0.01)
        * 1.02;
    let mut util = ChartBuilder::on(&bottom)
        .caption("utilization over time", ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(50)
        .build_cartesian_2d(0f64..max_day, 0f64..1.05)
        .map_err(|e| err(&e))?;
    util.configure_mesh()
        .x_desc("days since the first submission")
        .y_desc("utilization")
        .draw()
        .map_err(|e| err(&e))?;
    for (i, (name, s)) in series.into_iter().enumerate() {
        let c = colors[i % colors.len()];
        util.draw_series(LineSeries::new(s, c.stroke_width(1)))
            .map_err(|e| err(&e))?
            .label(name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
    }
    util.configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::JobOutcome;

    fn o(jobs: &[(i64, i64, i64, u64)]) -> Outcome {
        Outcome {
            jobs: jobs
                .iter()
                .map(|&(submit, start, end, cpus)| JobOutcome {
                    fractional: Default::default(),
                    gpus: Vec::new(),
                    submit,
                    start,
                    end,
                    cpus,
                    trace_run: end - start,
                    limit: None,
                    planned: None,
                    killed: false,
                })
                .collect(),
            ..Outcome::default()
        }
    }

    #[test]
    fn utilization_bins_add_up() {
        // 2 CPUs over 100 s: one CPU busy all along, the other in the second half.
        let out = o(&[(0, 0, 100, 1), (0, 50, 100, 1)]);
        let s = utilization_series(&out, 2, 2);
        assert_eq!(s.len(), 2);
        assert!((s[0].1 - 0.5).abs() < 1e-9);
        assert!((s[1].1 - 1.0).abs() < 1e-9);
    }

    #[test]
    fn cdf_steps() {
        let out = o(&[(0, 0, 1, 1), (0, 5, 6, 1), (0, 5, 7, 1), (0, 100, 101, 1)]);
        assert_eq!(wait_cdf(&out), vec![(1.0, 0.25), (5.0, 0.75), (100.0, 1.0)]);
    }

    #[test]
    fn svg_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("p.svg");
        let out = o(&[(0, 0, 100, 1), (0, 50, 100, 1)]);
        write_svg(&p, "t", &[("easy".into(), &out)], 2).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.starts_with("<svg"), "{}", &text[..50.min(text.len())]);
        assert!(text.contains("easy"));
    }
}
