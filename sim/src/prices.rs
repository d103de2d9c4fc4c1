//! Time-of-use prices in the replay (`gssim --prices FILE [--price-aware]`): the hourly price
//! file laid over the trace's clock, the deferral rules the core applies with
//! `--price-aware`, and the cost figures of a replay.
//!
//! The trace's first submission is put at `--price-start` (local midnight, default the first
//! day of the file), so day and night of the prices and of the trace line up only as far as
//! the trace's own start did. Costs are estimated with one power per CPU
//! (`--watts-per-cpu`, default 10 W, gsched's `DefaultWattsPerCPU`): the savings are ratios,
//! so its value only scales them.

use std::path::Path;

use anyhow::{bail, Context, Result};
use gsched_proto::price_conf::{PriceFile, PriceUnit};
use gsched_sched::price::{DeferRules, PriceInput, PriceInterval, PriceSchedule};
use jiff::civil::Date;
use jiff::tz::TimeZone;

use crate::engine::JobOutcome;

/// Prices on the replay's clock, and how they are used.
#[derive(Debug, Clone)]
pub struct SimPrices {
    /// Hourly prices in simulated time; also the core's input with `aware`.
    pub input: PriceInput,
    /// Let the core defer long jobs (`--price-aware`).
    pub aware: bool,
    /// Power of one CPU, watts.
    pub watts_per_cpu: f64,
}

/// How to read a price file and use it (gssim's `--price-*` options).
#[derive(Debug, Clone)]
pub struct PriceOpts<'a> {
    /// Time zone of times without an offset.
    pub tz: &'a str,
    /// `kWh` or `MWh`; `None`: from the header.
    pub unit: Option<&'a str>,
    /// `YYYY-MM-DD`: the day the trace starts on; `None`: the file's first price.
    pub start: Option<&'a str>,
    /// The trace's first submission on its own local clock (`--price-local-time`): it is put
    /// at the same weekday and time of day in the first week from `start`, instead of at
    /// `start`'s midnight.
    pub local_start: Option<jiff::civil::DateTime>,
    pub rules: DeferRules,
    pub aware: bool,
    pub watts_per_cpu: f64,
}

/// Reads `file` and lays it over a trace whose first submission is `first_submit`.
pub fn load(file: &Path, o: PriceOpts<'_>, first_submit: i64) -> Result<SimPrices> {
    let PriceOpts {
        tz: tz_name,
        unit,
        start,
        local_start,
        rules,
        aware,
        watts_per_cpu,
    } = o;
    let tz = TimeZone::get(tz_name).with_context(|| {
        format!("unknown time zone \"{tz_name}\" (an IANA name, e.g. Europe/Berlin)")
    })?;
    let text = read_text(file)?;
    let unit = match unit.map(str::to_ascii_lowercase).as_deref() {
        Some("kwh") => PriceUnit::KWh,
        Some("mwh") => PriceUnit::MWh,
        Some(u) => bail!("unknown price unit \"{u}\" (kWh or MWh)"),
        // Wholesale files name their unit in the header.
        None if text
            .lines()
            .next()
            .is_some_and(|l| l.to_ascii_lowercase().contains("mwh")) =>
        {
            PriceUnit::MWh
        }
        None => PriceUnit::KWh,
    };
    let pf = PriceFile::parse(&text, file, unit, &tz)?;
    let Some((&first, _)) = pf.hours.iter().next() else {
        bail!("{}: no prices", file.display());
    };
    let start_date: Date = match start {
        Some(d) => d
            .parse()
            .with_context(|| format!("--price-start {d}: not a date (YYYY-MM-DD)"))?,
        None => tz.to_datetime(jiff::Timestamp::from_second(first)?).date(),
    };
    let origin = match (local_start, start) {
        (Some(local), _) => {
            let day = local_day(start_date, local.date());
            tz.to_timestamp(day.to_datetime(local.time()))?.as_second()
        }
        (None, Some(_)) => tz
            .to_timestamp(start_date.to_datetime(jiff::civil::Time::midnight()))?
            .as_second(),
        (None, None) => first,
    };
    if !pf.hours.contains_key(&origin) && pf.hours.range(origin..).next().is_none() {
        bail!(
            "--price-start is after the last price of {}",
            file.display()
        );
    }
    // Simulated time t is price time t + shift.
    let shift = origin - first_submit;
    // From the hour the first submission falls in.
    let from = pf
        .hours
        .range(..=origin)
        .next_back()
        .map_or(origin, |(&t, _)| t);
    let intervals = pf
        .hours
        .range(from..)
        .map(|(&t, &p)| PriceInterval {
            start: t - shift,
            end: t - shift + 3600,
            price: p,
        })
        .collect();
    Ok(SimPrices {
        input: PriceInput {
            schedule: PriceSchedule {
                intervals,
                default_price: 0.0,
            },
            rules,
            jobs: Default::default(),
        },
        aware,
        watts_per_cpu,
    })
}

/// The first day from `start` on the weekday of `trace_day`.
fn local_day(start: Date, trace_day: Date) -> Date {
    let want = trace_day.weekday().to_monday_zero_offset();
    let have = start.weekday().to_monday_zero_offset();
    let ahead = (want - have).rem_euclid(7);
    start
        .checked_add(jiff::Span::new().days(i64::from(ahead)))
        .unwrap_or(start)
}

/// The first submission of a trace on the trace's own local clock: `first_submit` seconds
/// after the clock's start, in its zone.
pub fn trace_local_start(
    clock: &crate::trace::TraceClock,
    first_submit: i64,
) -> Result<jiff::civil::DateTime> {
    let zone = TimeZone::get(&clock.zone).with_context(|| {
        format!(
            "the trace's TimeZoneString \"{}\" is no time zone this machine knows",
            clock.zone
        )
    })?;
    let at = jiff::Timestamp::from_second(clock.unix_start + first_submit)?;
    Ok(zone.to_datetime(at))
}

fn read_text(file: &Path) -> Result<String> {
    let bytes = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
    if file.extension().is_some_and(|e| e == "gz") {
        use std::io::Read;
        let mut s = String::new();
        flate2::read::GzDecoder::new(&bytes[..])
            .read_to_string(&mut s)
            .with_context(|| format!("decompressing {}", file.display()))?;
        Ok(s)
    } else {
        String::from_utf8(bytes).with_context(|| format!("{}: not UTF-8 text", file.display()))
    }
}

/// The cost figures of a replay.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CostFigures {
    pub energy_cost: f64,
    pub deferrable_energy_cost: f64,
    pub short_avg_wait_s: f64,
    pub long_avg_wait_s: f64,
    pub deferrable_jobs: u64,
}

impl SimPrices {
    /// Estimated cost of one job's run.
    pub fn job_cost(&self, j: &JobOutcome) -> f64 {
        let kw = j.cpus as f64 * self.watts_per_cpu / 1000.0;
        kw * self.input.schedule.integral(j.start, j.end) / 3600.0
    }

    /// Whether a job is in the deferrable class (by its limit, the same with or without
    /// `--price-aware`).
    fn class(&self, j: &JobOutcome) -> (bool, bool) {
        let r = &self.input.rules;
        let len = j.limit.unwrap_or(i64::MAX);
        let long = len > r.long_secs || (len > r.short_secs && r.medium_defer);
        (long, len <= r.short_secs)
    }

    pub fn figures(&self, jobs: &[JobOutcome]) -> CostFigures {
        let mut f = CostFigures::default();
        let (mut ns, mut nl, mut ws, mut wl) = (0u64, 0u64, 0i64, 0i64);
        for j in jobs {
            let c = self.job_cost(j);
            f.energy_cost += c;
            let (long, short) = self.class(j);
            if long {
                f.deferrable_energy_cost += c;
                nl += 1;
                wl += j.wait();
            }
            if short {
                ns += 1;
                ws += j.wait();
            }
        }
        f.deferrable_jobs = nl;
        f.short_avg_wait_s = ws as f64 / ns.max(1) as f64;
        f.long_avg_wait_s = wl as f64 / nl.max(1) as f64;
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epex_hours_are_laid_over_the_trace_clock() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("p.csv");
        std::fs::write(
            &f,
            "date,hour_of_day,price_eur_per_mwh\n2019-01-07,1,10\n2019-01-07,2,20\n",
        )
        .unwrap();
        let o = PriceOpts {
            tz: "UTC",
            unit: None,
            start: None,
            local_start: None,
            rules: DeferRules::default(),
            aware: true,
            watts_per_cpu: 10.0,
        };
        let p = load(&f, o.clone(), 1000).unwrap();
        let iv = &p.input.schedule.intervals;
        assert_eq!((iv[0].start, iv[0].end), (1000, 4600));
        assert!((iv[1].price - 0.02).abs() < 1e-12);
        // 2 CPUs x 10 W for the first hour at 0.01/kWh.
        let j = JobOutcome {
            submit: 1000,
            start: 1000,
            end: 4600,
            cpus: 2,
            trace_run: 3600,
            limit: Some(3600),
            planned: Some(3600),
            killed: false,
            gpus: Vec::new(),
            fractional: false,
        };
        assert!((p.job_cost(&j) - 0.02 * 0.01).abs() < 1e-12);
        let bad = PriceOpts {
            unit: Some("GWh"),
            ..o
        };
        assert!(load(&f, bad, 0).is_err());
    }

    /// `--price-local-time`: a trace that starts on a Friday at 18:11 Pacific time starts on
    /// the first Friday from --price-start at 18:11 of the prices' zone.
    #[test]
    fn the_trace_keeps_its_weekday_and_time_of_day() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("p.csv");
        let mut text = "date,hour_of_day,price_eur_per_mwh\n".to_string();
        for day in 7..=13 {
            for h in 1..=24 {
                text.push_str(&format!("2019-01-{day:02},{h},{h}\n"));
            }
        }
        std::fs::write(&f, text).unwrap();
        // SDSC-SP2's header: UnixStartTime 893466664 is Fri Apr 24 18:11:04 PDT 1998.
        let clock = crate::trace::TraceClock {
            unix_start: 893_466_664,
            zone: "US/Pacific".into(),
        };
        let local = trace_local_start(&clock, 0).unwrap();
        assert_eq!(local.to_string(), "1998-04-24T18:11:04");
        let o = PriceOpts {
            tz: "Europe/Berlin",
            unit: None,
            start: Some("2019-01-07"),
            local_start: Some(local),
            rules: DeferRules::default(),
            aware: false,
            watts_per_cpu: 10.0,
        };
        let p = load(&f, o, 0).unwrap();
        // Friday 2019-01-11 18:11:04 in Berlin: the first hour laid over the trace is the
        // one it falls in, 18:00 to 19:00 (hour_of_day 19).
        let berlin = TimeZone::get("Europe/Berlin").unwrap();
        let at = |h, m, s| {
            berlin
                .to_timestamp(jiff::civil::date(2019, 1, 11).at(h, m, s, 0))
                .unwrap()
                .as_second()
        };
        let iv = &p.input.schedule.intervals;
        assert_eq!(iv[0].start, at(18, 0, 0) - at(18, 11, 4));
        assert!((iv[0].price - 0.019).abs() < 1e-12, "{:?}", iv[0]);
        assert!((iv[1].price - 0.020).abs() < 1e-12, "{:?}", iv[1]);
        assert_eq!(
            local_day(
                jiff::civil::date(2019, 1, 7),
                jiff::civil::date(1996, 9, 23)
            )
            .to_string(),
            "2019-01-07"
        );
        assert_eq!(
            local_day(
                jiff::civil::date(2019, 1, 7),
                jiff::civil::date(2002, 7, 28)
            )
            .to_string(),
            "2019-01-13"
        );
    }
}
