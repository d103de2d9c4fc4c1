//! Time-of-use output of the commands (gsched extensions, no Slurm equivalent):
//! `gsinfo --prices` (the next 24 hours of prices and windows), `gsinfo --lowload` (the
//! learned low-load hours of the week) and `gsacct --cost-report` (estimated energy and cost
//! per user and account). The controller computes; this module only lays it out.

use std::collections::BTreeMap;

use gsched_proto::api::{JobsResponse, PricesResponse};
use gsched_proto::units;

const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];

/// `gsinfo --prices`.
pub fn render_prices(r: &PricesResponse) -> String {
    let mut out = format!(
        "Prices per kWh, time zone {}, default {:.4}; deferral of long jobs {}\n",
        r.time_zone,
        r.default_price,
        if r.enabled {
            "on"
        } else {
            "off (no PriceWindow, PriceFile or LearnLowLoadWindows)"
        }
    );
    out.push_str(&format!(
        "{:<19}  {:<19}  {:>10}  {}\n",
        "START", "END", "PRICE", "SOURCE"
    ));
    for s in &r.spans {
        out.push_str(&format!(
            "{:<19}  {:<19}  {:>10.4}  {}\n",
            units::format_timestamp(s.start),
            units::format_timestamp(s.end),
            s.price,
            s.source
        ));
    }
    out
}

/// Hour ranges such as `00-06,22-24` from a sorted list of hours.
fn hour_ranges(hours: &[u8]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < hours.len() {
        let a = hours[i];
        let mut b = a;
        while i + 1 < hours.len() && hours[i + 1] == b + 1 {
            i += 1;
            b = hours[i];
        }
        parts.push(format!("{a:02}-{:02}", b + 1));
        i += 1;
    }
    parts.join(",")
}

/// `gsinfo --lowload`.
pub fn render_lowload(r: &PricesResponse) -> String {
    let mut out = format!(
        "Low-load hours (median allocated CPU fraction below {:.2}; {} day(s) of history, {} needed; LearnLowLoadWindows={})\n",
        r.low_load_threshold,
        r.history_days,
        7,
        if r.learn_low_load { "yes" } else { "no" }
    );
    out.push_str(&format!(
        "{:<4} {:>9}  {}\n",
        "DAY", "MEAN_LOAD", "LOW_HOURS"
    ));
    for (d, name) in DAYS.iter().enumerate() {
        let hours: Vec<_> = r
            .load_profile
            .iter()
            .filter(|h| h.weekday as usize == d)
            .collect();
        if hours.is_empty() {
            out.push_str(&format!("{name:<4} {:>9}  (no history)\n", "-"));
            continue;
        }
        let mean = hours.iter().map(|h| h.median).sum::<f64>() / hours.len() as f64;
        let low: Vec<u8> = hours.iter().filter(|h| h.low).map(|h| h.hour).collect();
        let text = if low.is_empty() {
            "none".to_string()
        } else {
            hour_ranges(&low)
        };
        out.push_str(&format!("{name:<4} {mean:>9.2}  {text}\n"));
    }
    out
}

/// `gsacct --cost-report`: per user and account, the jobs that ran, their estimated energy
/// and cost, largest cost first, then a total.
pub fn render_cost_report(r: &JobsResponse) -> String {
    let energy: BTreeMap<u32, (f64, f64)> = r
        .energy
        .iter()
        .map(|e| (e.job_id, (e.kwh, e.cost)))
        .collect();
    let mut rows: BTreeMap<(String, String), (u32, f64, f64)> = BTreeMap::new();
    for j in &r.jobs {
        let Some(&(kwh, cost)) = energy.get(&j.job_id) else {
            continue;
        };
        let key = (
            j.user_name.clone(),
            j.spec.account.clone().unwrap_or_default(),
        );
        let e = rows.entry(key).or_default();
        e.0 += 1;
        e.1 += kwh;
        e.2 += cost;
    }
    let mut list: Vec<_> = rows.into_iter().collect();
    list.sort_by(|a, b| b.1 .2.total_cmp(&a.1 .2).then(a.0.cmp(&b.0)));
    let mut out = format!(
        "{:<12} {:<12} {:>6} {:>12} {:>12}\n",
        "User", "Account", "Jobs", "EnergyKWh", "Cost"
    );
    let mut tot = (0u32, 0.0, 0.0);
    for ((u, a), (n, kwh, cost)) in &list {
        out.push_str(&format!(
            "{u:<12} {a:<12} {n:>6} {kwh:>12.3} {cost:>12.2}\n"
        ));
        tot.0 += n;
        tot.1 += kwh;
        tot.2 += cost;
    }
    out.push_str(&format!(
        "{:<12} {:<12} {:>6} {:>12.3} {:>12.2}\n",
        "TOTAL", "", tot.0, tot.1, tot.2
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use gsched_proto::api::{JobEnergy, LoadHour, PriceSpanInfo};

    #[test]
    fn lowload_groups_hours_into_ranges() {
        let mut r = PricesResponse {
            low_load_threshold: 0.5,
            history_days: 9,
            learn_low_load: true,
            ..Default::default()
        };
        for h in 0..24u8 {
            r.load_profile.push(LoadHour {
                weekday: 0,
                hour: h,
                median: if !(6..22).contains(&h) { 0.1 } else { 0.9 },
                samples: 2,
                low: !(6..22).contains(&h),
            });
        }
        let text = render_lowload(&r);
        assert!(text.contains("Mon       0.63  00-06,22-24\n"), "{text}");
        assert!(text.contains("Tue          -  (no history)\n"), "{text}");
    }

    #[test]
    fn prices_table_has_one_line_per_span() {
        let r = PricesResponse {
            enabled: true,
            time_zone: "UTC".into(),
            default_price: 0.3,
            spans: vec![PriceSpanInfo {
                start: 0,
                end: 3600,
                price: 0.1,
                source: "night".into(),
            }],
            ..Default::default()
        };
        let t = render_prices(&r);
        assert_eq!(t.lines().count(), 3, "{t}");
        assert!(t.lines().nth(2).unwrap().ends_with("0.1000  night"), "{t}");
    }

    #[test]
    fn cost_report_sums_per_user_and_account() {
        let mut a = crate::squeue::tests::job(1, gsched_proto::job::JobState::Completed);
        a.user_name = "alice".into();
        a.spec.account = Some("ml".into());
        let mut b = a.clone();
        b.job_id = 2;
        let mut c = a.clone();
        c.job_id = 3;
        c.user_name = "bob".into();
        let r = JobsResponse {
            now: 0,
            jobs: vec![a, b, c],
            energy: vec![
                JobEnergy {
                    job_id: 1,
                    kwh: 1.0,
                    cost: 0.5,
                },
                JobEnergy {
                    job_id: 2,
                    kwh: 2.0,
                    cost: 1.0,
                },
                JobEnergy {
                    job_id: 3,
                    kwh: 0.5,
                    cost: 0.1,
                },
            ],
            gpu_usage: Vec::new(),
        };
        let t = render_cost_report(&r);
        let lines: Vec<&str> = t.lines().collect();
        assert!(
            lines[1].starts_with("alice        ml                2        3.000         1.50"),
            "{t}"
        );
        assert!(lines[2].starts_with("bob"), "{t}");
        assert!(lines[3].starts_with("TOTAL"), "{t}");
        assert!(lines[3].ends_with("3        3.500         1.60"), "{t}");
    }
}
