//! The price calendar of `gsched.conf` (gsched, no Slurm equivalent): named time-of-use
//! windows, a default price, an hourly day-ahead price file, the thresholds of the deferral
//! policy, and node and GPU power for cost estimates.
//!
//! ```text
//! PriceTimeZone=Europe/Berlin
//! DefaultPrice=0.30
//! PriceWindow=offpeak Start=01:00 End=06:00 Days=Mon-Sun Price=0.12
//! PriceWindow=weekend Start=10:00 End=16:00 Days=Sat,Sun Price=0.18
//! LongJobThreshold=2:00:00
//! ShortJobThreshold=30:00
//! MaxDeferral=1-00:00:00
//! PriceFile=/var/lib/gsched/prices.csv
//! NodeName=n[1-4] CPUs=64 Watts=450
//! GpuWatts=a100:400,h100:700
//! ```
//!
//! Windows are wall-clock times in `PriceTimeZone` (an IANA name; default the system's zone),
//! so they follow daylight saving time. Prices are per kWh in one currency of the site's
//! choice. The pure scheduler core never sees any of this: [`PriceCalendar::intervals`]
//! turns the calendar into absolute `(start, end, price)` stretches over the time the core
//! plans, and the core picks start times from those (`ctld/sched/src/price.rs`).
//!
//! Precedence: an hour of the price file beats a window, a window beats `DefaultPrice`.
//! Windows must not overlap (checked per minute of the week, with the file and line of both).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use jiff::civil::{Date, DateTime, Time, Weekday};
use jiff::tz::TimeZone;
use jiff::Timestamp;

/// The keys of a `PriceWindow=` line (the first one opens it).
pub const PRICE_WINDOW_KEYS: &[&str] = &["PriceWindow", "Start", "End", "Days", "Price"];

/// Global keys this module owns (also listed in `config::GLOBAL_KEYS`).
pub const PRICE_GLOBAL_KEYS: &[&str] = &[
    "DefaultPrice",
    "PriceTimeZone",
    "LongJobThreshold",
    "ShortJobThreshold",
    "MaxDeferral",
    "MediumJobRule",
    "MinDeferralSaving",
    "PriceFile",
    "PriceFileUnit",
    "GpuWatts",
    "DefaultWattsPerCPU",
    "LearnLowLoadWindows",
    "LowLoadThreshold",
];

const DAY_NAMES: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];

/// One `PriceWindow=` line.
#[derive(Debug, Clone, PartialEq)]
pub struct PriceWindow {
    pub name: String,
    /// Minutes after local midnight, `0..1440`.
    pub start_min: u32,
    /// Minutes after local midnight, `1..=1440`; at or before `start_min`: the window ends
    /// the next day (it wraps midnight).
    pub end_min: u32,
    /// Monday first: the days the window *starts* on.
    pub days: [bool; 7],
    pub price: f64,
    /// Where it was written, for messages.
    pub file: PathBuf,
    pub line: usize,
}

impl PriceWindow {
    /// The window's minutes of the week `[a, b)` (Monday 00:00 = 0), wrapped pieces split.
    fn week_ranges(&self) -> Vec<(u32, u32)> {
        let len = if self.end_min > self.start_min {
            self.end_min - self.start_min
        } else {
            self.end_min + 1440 - self.start_min
        };
        let mut out = Vec::new();
        for d in 0..7 {
            if !self.days[d] {
                continue;
            }
            let a = d as u32 * 1440 + self.start_min;
            let b = a + len;
            if b <= 7 * 1440 {
                out.push((a, b));
            } else {
                out.push((a, 7 * 1440));
                out.push((0, b - 7 * 1440));
            }
        }
        out
    }

    /// `Days=` as written back: `Mon,Wed,Fri`.
    pub fn days_text(&self) -> String {
        let v: Vec<&str> = (0..7)
            .filter(|&d| self.days[d])
            .map(|d| DAY_NAMES[d])
            .collect();
        v.join(",")
    }
}

/// The unit of the prices in `PriceFile=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PriceUnit {
    /// Per kWh (the default), like every other price in the config.
    #[default]
    KWh,
    /// Per MWh, as wholesale markets (EPEX, ENTSO-E) publish them: divided by 1000.
    MWh,
}

/// What to do with jobs between `ShortJobThreshold` and `LongJobThreshold`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MediumJobRule {
    /// Start as soon as they can, like short jobs (the default).
    #[default]
    Now,
    /// Defer them to the cheapest start like long jobs.
    Defer,
}

/// The price settings of the cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct PriceConfig {
    pub windows: Vec<PriceWindow>,
    /// `DefaultPrice=`: the price outside every window and file hour (default 0).
    pub default_price: f64,
    /// `PriceTimeZone=`: an IANA name; `None` = the system's zone.
    pub time_zone: Option<String>,
    /// `LongJobThreshold=` seconds (default 2 h): longer jobs are deferred.
    pub long_secs: i64,
    /// `ShortJobThreshold=` seconds (default 30 min): jobs up to this long start now.
    pub short_secs: i64,
    /// `MaxDeferral=` seconds (default 1 day) after submission.
    pub max_deferral_secs: i64,
    pub medium_rule: MediumJobRule,
    /// `MinDeferralSaving=`: a fraction (default 0.05) of the cost of starting now that a
    /// deferral must save.
    pub min_saving: f64,
    pub price_file: Option<PathBuf>,
    pub price_file_unit: PriceUnit,
    /// `Watts=` on node lines, by node name.
    pub node_watts: BTreeMap<String, u32>,
    /// `DefaultWattsPerCPU=` (default 10): the power of a node without `Watts=` per CPU.
    pub default_watts_per_cpu: u32,
    /// `GpuWatts=type:W,...` (`default:W` for any other type).
    pub gpu_watts: BTreeMap<String, u32>,
    /// `LearnLowLoadWindows=yes`: recurring low-load hours count as cheap windows.
    pub learn_low_load: bool,
    /// `LowLoadThreshold=`: the allocated-CPU fraction (default 0.5) below which an hour
    /// counts as low-load.
    pub low_load_threshold: f64,
}

// The prices are plain numbers read from text, never NaN (the parser refuses it).
impl Eq for PriceConfig {}

impl Default for PriceConfig {
    fn default() -> Self {
        PriceConfig {
            windows: Vec::new(),
            default_price: 0.0,
            time_zone: None,
            long_secs: 2 * 3600,
            short_secs: 30 * 60,
            max_deferral_secs: 24 * 3600,
            medium_rule: MediumJobRule::Now,
            min_saving: 0.05,
            price_file: None,
            price_file_unit: PriceUnit::KWh,
            node_watts: BTreeMap::new(),
            default_watts_per_cpu: 10,
            gpu_watts: BTreeMap::new(),
            learn_low_load: false,
            low_load_threshold: 0.5,
        }
    }
}

impl PriceConfig {
    /// Whether prices vary at all: deferral is on only then.
    pub fn enabled(&self) -> bool {
        !self.windows.is_empty() || self.price_file.is_some() || self.learn_low_load
    }

    /// The estimated power of a whole node, watts.
    pub fn node_watts(&self, name: &str, cpus: u32) -> f64 {
        match self.node_watts.get(name) {
            Some(&w) => w as f64,
            None => self.default_watts_per_cpu as f64 * cpus as f64,
        }
    }

    /// The power of one GPU of `gtype` (`None` = untyped), watts: its `GpuWatts=` entry, else
    /// `default:`, else 300.
    pub fn gpu_watts(&self, gtype: Option<&str>) -> f64 {
        gtype
            .and_then(|t| self.gpu_watts.get(t))
            .or_else(|| self.gpu_watts.get("default"))
            .map_or(300.0, |&w| w as f64)
    }

    /// Sets a global key this module owns (`canon` is its canonical name).
    pub fn global(&mut self, canon: &str, value: &str) -> Result<(), String> {
        let v = value.trim();
        match canon {
            "DefaultPrice" => self.default_price = parse_price(v)?,
            "PriceTimeZone" => {
                TimeZone::get(v).map_err(|_| {
                    format!("unknown time zone \"{v}\" (use an IANA name such as Europe/Berlin or UTC; see /usr/share/zoneinfo)")
                })?;
                self.time_zone = Some(v.to_string());
            }
            "LongJobThreshold" => self.long_secs = parse_duration(v)?,
            "ShortJobThreshold" => self.short_secs = parse_duration(v)?,
            "MaxDeferral" => self.max_deferral_secs = parse_duration(v)?,
            "MediumJobRule" => {
                self.medium_rule = match v.to_ascii_lowercase().as_str() {
                    "now" => MediumJobRule::Now,
                    "defer" => MediumJobRule::Defer,
                    _ => return Err(format!("\"{v}\" is not a rule (use now or defer)")),
                }
            }
            "MinDeferralSaving" => {
                let f: f64 = v
                    .parse()
                    .map_err(|_| format!("\"{v}\" is not a fraction (use e.g. 0.05)"))?;
                if !(0.0..1.0).contains(&f) {
                    return Err(format!("{f} is not in [0, 1)"));
                }
                self.min_saving = f;
            }
            "PriceFile" => {
                if v.is_empty() {
                    return Err("expected a file name".into());
                }
                self.price_file = Some(PathBuf::from(v));
            }
            "PriceFileUnit" => {
                self.price_file_unit = match v.to_ascii_lowercase().as_str() {
                    "kwh" => PriceUnit::KWh,
                    "mwh" => PriceUnit::MWh,
                    _ => return Err(format!("\"{v}\" is not a unit (use kWh or MWh)")),
                }
            }
            "GpuWatts" => {
                for item in v.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                    let (t, w) = item.split_once(':').ok_or_else(|| {
                        format!("\"{item}\" is not type:watts (e.g. GpuWatts=a100:400,default:300)")
                    })?;
                    let w: u32 = w
                        .trim()
                        .parse()
                        .map_err(|_| format!("\"{w}\" is not a number of watts"))?;
                    self.gpu_watts.insert(t.trim().to_string(), w);
                }
            }
            "DefaultWattsPerCPU" => {
                self.default_watts_per_cpu = v
                    .parse()
                    .map_err(|_| format!("\"{v}\" is not a number of watts"))?;
            }
            "LearnLowLoadWindows" => {
                self.learn_low_load = match v.to_ascii_lowercase().as_str() {
                    "yes" | "true" | "1" => true,
                    "no" | "false" | "0" => false,
                    _ => return Err(format!("\"{v}\" is not yes or no")),
                }
            }
            "LowLoadThreshold" => {
                let f: f64 = v
                    .parse()
                    .map_err(|_| format!("\"{v}\" is not a fraction (use e.g. 0.5)"))?;
                if !(0.0..=1.0).contains(&f) {
                    return Err(format!("{f} is not in [0, 1]"));
                }
                self.low_load_threshold = f;
            }
            _ => return Err(format!("{canon} is not a price setting")),
        }
        Ok(())
    }

    /// Parses one `PriceWindow=` line (its pairs, in order).
    pub fn window_line(
        &mut self,
        pairs: &[(String, String)],
        file: &Path,
        line: usize,
    ) -> Result<(), String> {
        let mut name = None;
        let (mut start, mut end, mut days, mut price) = (None, None, None, None);
        for (k, v) in pairs {
            let v = v.trim();
            match k.to_ascii_lowercase().as_str() {
                "pricewindow" if name.is_none() => {
                    if v.is_empty() {
                        return Err("PriceWindow: expected a name".into());
                    }
                    name = Some(v.to_string());
                }
                "start" => start = Some(parse_hhmm(v, false).map_err(|m| format!("Start: {m}"))?),
                "end" => end = Some(parse_hhmm(v, true).map_err(|m| format!("End: {m}"))?),
                "days" => days = Some(parse_days(v).map_err(|m| format!("Days: {m}"))?),
                "price" => price = Some(parse_price(v).map_err(|m| format!("Price: {m}"))?),
                _ => {
                    return Err(format!(
                        "unknown key \"{k}\" on a PriceWindow line (valid: {})",
                        PRICE_WINDOW_KEYS.join(", ")
                    ))
                }
            }
        }
        let name = name.unwrap_or_default();
        let missing = |k: &str| format!("PriceWindow {name}: {k}= is required");
        let start = start.ok_or_else(|| missing("Start"))?;
        let end = end.ok_or_else(|| missing("End"))?;
        let price = price.ok_or_else(|| missing("Price"))?;
        if start == end % 1440 {
            return Err(format!(
                "PriceWindow {name}: Start and End are equal (a whole day is Start=00:00 End=24:00)"
            ));
        }
        if let Some(w) = self.windows.iter().find(|w| w.name == name) {
            return Err(format!(
                "PriceWindow {name} is already defined at {}:{}",
                w.file.display(),
                w.line
            ));
        }
        let w = PriceWindow {
            name,
            start_min: start,
            end_min: end,
            days: days.unwrap_or([true; 7]),
            price,
            file: file.to_path_buf(),
            line,
        };
        for other in &self.windows {
            if let Some(at) = overlap(other, &w) {
                return Err(format!(
                    "PriceWindow {} overlaps PriceWindow {} ({}:{}) on {} {:02}:{:02}; windows must not overlap",
                    w.name,
                    other.name,
                    other.file.display(),
                    other.line,
                    DAY_NAMES[(at / 1440) as usize],
                    at % 1440 / 60,
                    at % 60
                ));
            }
        }
        self.windows.push(w);
        Ok(())
    }

    /// Checks what can only be checked once the whole file is read.
    pub fn finish(&self) -> Result<(), String> {
        if self.short_secs > self.long_secs {
            return Err(format!(
                "ShortJobThreshold ({} s) is longer than LongJobThreshold ({} s)",
                self.short_secs, self.long_secs
            ));
        }
        Ok(())
    }

    /// The time zone of the windows and of file times without an offset.
    pub fn tz(&self) -> TimeZone {
        match &self.time_zone {
            // Checked when parsed.
            Some(name) => TimeZone::get(name).unwrap_or(TimeZone::UTC),
            None => TimeZone::system(),
        }
    }
}

/// The first minute of the week two windows share, if any.
fn overlap(a: &PriceWindow, b: &PriceWindow) -> Option<u32> {
    let mut first: Option<u32> = None;
    for (a0, a1) in a.week_ranges() {
        for (b0, b1) in b.week_ranges() {
            let lo = a0.max(b0);
            if lo < a1.min(b1) {
                first = Some(first.map_or(lo, |f| f.min(lo)));
            }
        }
    }
    first
}

fn parse_price(v: &str) -> Result<f64, String> {
    match v.parse::<f64>() {
        Ok(p) if p.is_finite() => Ok(p),
        _ => Err(format!(
            "\"{v}\" is not a price (a number per kWh, e.g. 0.35)"
        )),
    }
}

/// A Slurm duration (`30:00`, `2:00:00`, `1-00:00:00`, minutes) in seconds.
fn parse_duration(v: &str) -> Result<i64, String> {
    match crate::units::parse_time_minutes(v) {
        Ok(Some(m)) => Ok(m as i64 * 60),
        Ok(None) => Err(format!("\"{v}\": UNLIMITED is not allowed here")),
        Err(e) => Err(format!("\"{v}\": {e}")),
    }
}

/// `HH:MM` in minutes after midnight; `24:00` only for an end.
fn parse_hhmm(v: &str, end: bool) -> Result<u32, String> {
    let bad = || format!("\"{v}\" is not a time of day (HH:MM, 00:00 to 24:00)");
    let (h, m) = v.split_once(':').ok_or_else(bad)?;
    let h: u32 = h.parse().map_err(|_| bad())?;
    let m: u32 = m.parse().map_err(|_| bad())?;
    if m > 59 || h > 24 || (h == 24 && (m != 0 || !end)) {
        return Err(bad());
    }
    Ok(h * 60 + m)
}

fn day_index(s: &str) -> Result<usize, String> {
    let l = s.trim().to_ascii_lowercase();
    let full = [
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
    ];
    (0..7)
        .find(|&d| l == DAY_NAMES[d].to_ascii_lowercase() || l == full[d])
        .ok_or_else(|| {
            format!("unknown day \"{}\" (use Mon, Tue, Wed, Thu, Fri, Sat, Sun, ranges like Mon-Fri, lists like Sat,Sun, or All)", s.trim())
        })
}

/// `Mon-Fri`, `Sat,Sun`, `Fri-Mon` (wraps), `All`.
fn parse_days(v: &str) -> Result<[bool; 7], String> {
    let mut days = [false; 7];
    if v.eq_ignore_ascii_case("all") || v.eq_ignore_ascii_case("daily") {
        return Ok([true; 7]);
    }
    for part in v.split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (day_index(a)?, day_index(b)?);
                let mut d = a;
                loop {
                    days[d] = true;
                    if d == b {
                        break;
                    }
                    d = (d + 1) % 7;
                }
            }
            None => days[day_index(part)?] = true,
        }
    }
    Ok(days)
}

/// One malformed line of a price file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}:{line}: {message}", file.display())]
pub struct PriceFileError {
    pub file: PathBuf,
    pub line: usize,
    pub message: String,
}

/// Hourly prices: each entry is the price of `[start, start + 1 h)`, per kWh.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PriceFile {
    pub hours: BTreeMap<i64, f64>,
}

impl PriceFile {
    /// Reads a price file; see [`PriceFile::parse`].
    pub fn load(path: &Path, unit: PriceUnit, tz: &TimeZone) -> Result<PriceFile, PriceFileError> {
        let text = std::fs::read_to_string(path).map_err(|e| PriceFileError {
            file: path.to_path_buf(),
            line: 0,
            message: format!("cannot read the price file: {e} (check PriceFile= in gsched.conf)"),
        })?;
        PriceFile::parse(&text, path, unit, tz)
    }

    /// Parses CSV hourly prices. Each line is either `TIMESTAMP,PRICE[,...]` with an ISO 8601
    /// time (`2026-12-03T14:00`, with `Z` or `+01:00` for an absolute time, else local time in
    /// `tz`) or the EPEX layout `DATE,HOUR,PRICE[,...]` with hours 1-24 (hour h starts at
    /// local h-1:00). A first line that is not data is a header. `#` starts a comment. A later
    /// line for the same hour replaces an earlier one (day-ahead updates).
    pub fn parse(
        text: &str,
        path: &Path,
        unit: PriceUnit,
        tz: &TimeZone,
    ) -> Result<PriceFile, PriceFileError> {
        let scale = match unit {
            PriceUnit::KWh => 1.0,
            PriceUnit::MWh => 1e-3,
        };
        let mut hours = BTreeMap::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let err = |m: String| PriceFileError {
                file: path.to_path_buf(),
                line: i + 1,
                message: m,
            };
            let f: Vec<&str> = line.split(',').map(str::trim).collect();
            let parsed = parse_price_line(&f, tz);
            match parsed {
                Ok((t, p)) => {
                    hours.insert(t, p * scale);
                }
                Err(_)
                    if hours.is_empty()
                        && i == 0
                        && line.chars().any(|c| c.is_ascii_alphabetic())
                        && !line.starts_with(|c: char| c.is_ascii_digit()) => {}
                Err(m) => return Err(err(m)),
            }
        }
        Ok(PriceFile { hours })
    }
}

fn parse_price_line(f: &[&str], tz: &TimeZone) -> Result<(i64, f64), String> {
    let price = |s: &str| -> Result<f64, String> {
        match s.parse::<f64>() {
            Ok(p) if p.is_finite() => Ok(p),
            _ => Err(format!("\"{s}\" is not a price")),
        }
    };
    if f.len() >= 3 && f[0].len() == 10 {
        if let (Ok(date), Ok(h)) = (f[0].parse::<Date>(), f[1].parse::<u32>()) {
            if !(1..=24).contains(&h) {
                return Err(format!("hour {h} is not 1-24"));
            }
            let dt = date.to_datetime(Time::constant(0, 0, 0, 0));
            let dt = dt
                .checked_add(jiff::SignedDuration::from_hours(h as i64 - 1))
                .map_err(|e| e.to_string())?;
            let t = tz.to_timestamp(dt).map_err(|e| e.to_string())?;
            return Ok((t.as_second(), price(f[2])?));
        }
    }
    if f.len() < 2 {
        return Err("expected TIMESTAMP,PRICE or DATE,HOUR,PRICE".into());
    }
    let ts = f[0];
    let t = if let Ok(t) = ts.parse::<Timestamp>() {
        t.as_second()
    } else {
        let dt: DateTime = ts.replace(' ', "T").parse().map_err(|_| {
            format!("\"{ts}\" is not a time (use 2026-12-03T14:00, 2026-12-03T14:00+01:00 or DATE,HOUR,PRICE)")
        })?;
        tz.to_timestamp(dt).map_err(|e| e.to_string())?.as_second()
    };
    Ok((t, price(f[1])?))
}

/// One stretch of constant price, `[start, end)`, epoch seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PricedSpan {
    pub start: i64,
    pub end: i64,
    pub price: f64,
    /// Where the price comes from: a window's name, `file` or `lowload`.
    pub source: &'static str,
}

/// The stretches of `[from, to)` between the cut points `cuts` (and `from`, `to`), each priced
/// by `price_at` its start (`None`: no stretch there); adjacent stretches of the same price
/// and source are merged.
pub fn spans_from_cuts(
    from: i64,
    to: i64,
    cuts: impl IntoIterator<Item = i64>,
    price_at: impl Fn(i64) -> Option<(f64, &'static str)>,
) -> Vec<PricedSpan> {
    let mut cuts: Vec<i64> = cuts.into_iter().chain([from, to]).collect();
    cuts.retain(|&t| t >= from && t <= to);
    cuts.sort_unstable();
    cuts.dedup();
    let mut out: Vec<PricedSpan> = Vec::new();
    for c in cuts.windows(2) {
        let (a, b) = (c[0], c[1]);
        let Some((price, source)) = price_at(a) else {
            continue;
        };
        match out.last_mut() {
            Some(l) if l.end == a && l.price == price && l.source == source => l.end = b,
            _ => out.push(PricedSpan {
                start: a,
                end: b,
                price,
                source,
            }),
        }
    }
    out
}

/// The price calendar in absolute time: windows in their zone, the file's hours, the default.
#[derive(Debug, Clone)]
pub struct PriceCalendar {
    pub windows: Vec<PriceWindow>,
    pub default_price: f64,
    pub tz: TimeZone,
    pub file: PriceFile,
}

impl PriceCalendar {
    pub fn new(conf: &PriceConfig, file: PriceFile) -> PriceCalendar {
        PriceCalendar {
            windows: conf.windows.clone(),
            default_price: conf.default_price,
            tz: conf.tz(),
            file,
        }
    }

    /// The windows' stretches that meet `[from, to)`, sorted, not clipped.
    fn window_spans(&self, from: i64, to: i64) -> Vec<(i64, i64, usize)> {
        let mut out = Vec::new();
        let Ok(t0) = Timestamp::from_second(from) else {
            return out;
        };
        let first = self
            .tz
            .to_datetime(t0)
            .date()
            .yesterday()
            .unwrap_or(Date::MIN);
        let mut day = first;
        loop {
            let midnight = self
                .tz
                .to_timestamp(day.to_datetime(Time::midnight()))
                .map_or(i64::MAX, |t| t.as_second());
            if midnight >= to {
                break;
            }
            let wd = weekday_index(day.weekday());
            for (k, w) in self.windows.iter().enumerate() {
                if !w.days[wd] {
                    continue;
                }
                let at = |d: Date, min: u32| -> Option<i64> {
                    let (d, min) = if min >= 1440 {
                        (d.tomorrow().ok()?, min - 1440)
                    } else {
                        (d, min)
                    };
                    let t = Time::new((min / 60) as i8, (min % 60) as i8, 0, 0).ok()?;
                    Some(self.tz.to_timestamp(d.to_datetime(t)).ok()?.as_second())
                };
                let end_min = if w.end_min > w.start_min {
                    w.end_min
                } else {
                    w.end_min + 1440
                };
                if let (Some(a), Some(b)) = (at(day, w.start_min), at(day, end_min)) {
                    if b > from && a < to && b > a {
                        out.push((a, b, k));
                    }
                }
            }
            match day.tomorrow() {
                Ok(d) => day = d,
                Err(_) => break,
            }
        }
        out.sort_by_key(|s| (s.0, s.1));
        // Daylight saving time may make two stretches touch; never let them overlap.
        for i in 1..out.len() {
            if out[i].0 < out[i - 1].1 {
                out[i].0 = out[i - 1].1;
            }
        }
        out.retain(|s| s.1 > s.0);
        out
    }

    /// The prices over `[from, to)` as sorted, non-overlapping stretches (time outside them
    /// costs [`PriceCalendar::default_price`]); file hours beat windows; adjacent stretches of
    /// the same price and source are merged.
    pub fn intervals(&self, from: i64, to: i64) -> Vec<PricedSpan> {
        let windows = self.window_spans(from, to);
        let file: Vec<(i64, i64, f64)> = self
            .file
            .hours
            .range(from - 3600 + 1..to)
            .map(|(&t, &p)| (t, t + 3600, p))
            .collect();
        let cuts = windows
            .iter()
            .map(|w| (w.0, w.1))
            .chain(file.iter().map(|f| (f.0, f.1)))
            .flat_map(|(a, b)| [a, b]);
        spans_from_cuts(from, to, cuts, |a| {
            match file.iter().rev().find(|f| f.0 <= a && a < f.1) {
                Some(f) => Some((f.2, "file")),
                None => windows
                    .iter()
                    .find(|w| w.0 <= a && a < w.1)
                    .map(|w| (self.windows[w.2].price, "window")),
            }
        })
    }

    /// The name of the window in force at `t`, if any.
    pub fn window_at(&self, t: i64) -> Option<&str> {
        self.window_spans(t, t + 1)
            .into_iter()
            .find(|s| s.0 <= t && t < s.1)
            .map(|s| self.windows[s.2].name.as_str())
    }

    /// The price at `t`.
    pub fn price_at(&self, t: i64) -> f64 {
        self.intervals(t, t + 1)
            .first()
            .map_or(self.default_price, |s| s.price)
    }
}

fn weekday_index(w: Weekday) -> usize {
    w.to_monday_zero_offset() as usize
}

/// Local (weekday Monday = 0, hour) of `t` in `tz`.
pub fn local_weekday_hour(t: i64, tz: &TimeZone) -> (usize, u32) {
    match Timestamp::from_second(t) {
        Ok(ts) => {
            let z = tz.to_datetime(ts);
            (weekday_index(z.weekday()), z.hour() as u32)
        }
        Err(_) => (0, 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(conf: &mut PriceConfig, text: &str, n: usize) -> Result<(), String> {
        let pairs: Vec<(String, String)> = text
            .split_whitespace()
            .map(|p| {
                let (k, v) = p.split_once('=').unwrap();
                (k.to_string(), v.to_string())
            })
            .collect();
        conf.window_line(&pairs, Path::new("/etc/gsched/gsched.conf"), n)
    }

    fn berlin() -> PriceConfig {
        let mut c = PriceConfig::default();
        c.global("PriceTimeZone", "Europe/Berlin").unwrap();
        c.global("DefaultPrice", "0.30").unwrap();
        line(
            &mut c,
            "PriceWindow=night Start=22:00 End=06:00 Days=Mon-Fri Price=0.10",
            3,
        )
        .unwrap();
        line(
            &mut c,
            "PriceWindow=wkend Start=10:00 End=16:00 Days=Sat,Sun Price=0.15",
            4,
        )
        .unwrap();
        c
    }

    fn ts(s: &str) -> i64 {
        s.parse::<Timestamp>().unwrap().as_second()
    }

    #[test]
    fn windows_parse_and_overlaps_are_refused_with_both_lines() {
        let mut c = berlin();
        let e = line(
            &mut c,
            "PriceWindow=late Start=05:00 End=07:00 Days=Tue Price=0.2",
            9,
        )
        .unwrap_err();
        assert!(
            e.contains("overlaps PriceWindow night (/etc/gsched/gsched.conf:3) on Tue 05:00"),
            "{e}"
        );
        // The wrap into Saturday morning from Friday night overlaps too.
        let e = line(
            &mut c,
            "PriceWindow=sat Start=00:00 End=01:00 Days=Sat Price=0.2",
            9,
        )
        .unwrap_err();
        assert!(e.contains("on Sat 00:00"), "{e}");
        // Sunday 00:00-01:00 does not (night is Mon-Fri starts).
        line(
            &mut c,
            "PriceWindow=sun Start=00:00 End=01:00 Days=Sun Price=0.2",
            10,
        )
        .unwrap();
        let e = line(
            &mut c,
            "PriceWindow=x Start=01:00 End=02:00 Days=Mun Price=1",
            11,
        )
        .unwrap_err();
        assert!(e.contains("unknown day \"Mun\""), "{e}");
        let e = line(&mut c, "PriceWindow=y Start=25:00 End=02:00 Price=1", 12).unwrap_err();
        assert!(e.starts_with("Start:"), "{e}");
        let e = line(&mut c, "PriceWindow=z Start=02:00 End=02:00 Price=1", 12).unwrap_err();
        assert!(e.contains("equal"), "{e}");
        assert!(c.global("PriceTimeZone", "Mars/Olympus").is_err());
        assert_eq!(
            parse_days("Fri-Mon").unwrap(),
            [true, false, false, false, true, true, true]
        );
    }

    #[test]
    fn calendar_follows_days_midnight_wrap_and_dst() {
        let c = berlin();
        let cal = PriceCalendar::new(&c, PriceFile::default());
        // Friday 2026-03-27 22:00 CET (21:00Z) to Saturday 06:00 CET (05:00Z).
        let from = ts("2026-03-27T12:00:00Z");
        let iv = cal.intervals(from, from + 3 * 86400);
        assert_eq!(iv[0].start, ts("2026-03-27T21:00:00Z"));
        assert_eq!(iv[0].end, ts("2026-03-28T05:00:00Z"));
        assert_eq!(iv[0].price, 0.10);
        // Saturday 10:00-16:00 CET.
        assert_eq!(iv[1].start, ts("2026-03-28T09:00:00Z"));
        // Sunday 2026-03-29: clocks go to summer time at 02:00; 10:00 CEST is 08:00Z.
        assert_eq!(iv[2].start, ts("2026-03-29T08:00:00Z"));
        assert_eq!(iv[2].end, ts("2026-03-29T14:00:00Z"));
        assert_eq!(iv.len(), 3);
        assert_eq!(cal.window_at(ts("2026-03-28T04:59:59Z")), Some("night"));
        assert_eq!(cal.window_at(ts("2026-03-28T05:00:00Z")), None);
        assert_eq!(cal.price_at(ts("2026-03-28T05:00:00Z")), 0.30);
        // Nights across the changes of 2026: 7 hours in March, 9 in October.
        let mut all = PriceConfig::default();
        all.global("PriceTimeZone", "Europe/Berlin").unwrap();
        line(
            &mut all,
            "PriceWindow=n Start=22:00 End=06:00 Days=All Price=0.1",
            1,
        )
        .unwrap();
        let cal = PriceCalendar::new(&all, PriceFile::default());
        let night = |from: &str| {
            let f = ts(from);
            let s = cal.intervals(f, f + 86400)[0];
            (s.start, s.end - s.start)
        };
        assert_eq!(
            night("2026-03-28T12:00:00Z"),
            (ts("2026-03-28T21:00:00Z"), 7 * 3600)
        );
        assert_eq!(
            night("2026-10-24T12:00:00Z"),
            (ts("2026-10-24T20:00:00Z"), 9 * 3600)
        );
    }

    #[test]
    fn price_file_beats_windows_gaps_fall_back_and_errors_name_the_line() {
        let c = berlin();
        let tz = c.tz();
        let text = "timestamp,price\n\
                    2026-03-27T21:00:00Z,0.05\n\
                    2026-03-27T22:00:00Z,-0.02\n\
                    # no 23:00 hour\n\
                    2026-03-28T00:00:00+01:00,0.07\n";
        let file = PriceFile::parse(text, Path::new("p.csv"), PriceUnit::KWh, &tz).unwrap();
        let cal = PriceCalendar::new(&c, file);
        let from = ts("2026-03-27T21:00:00Z");
        let iv = cal.intervals(from, from + 4 * 3600);
        let prices: Vec<(f64, &str)> = iv.iter().map(|s| (s.price, s.source)).collect();
        // 21Z file, 22Z file, 23Z (gap) back to the window's price, 00:00+01:00 = 23Z: file.
        assert_eq!(
            prices,
            vec![
                (0.05, "file"),
                (-0.02, "file"),
                (0.07, "file"),
                (0.10, "window")
            ]
        );
        let bad = "2026-03-27T21:00:00Z,0.05\n2026-03-27T22:00,abc\n";
        let e = PriceFile::parse(bad, Path::new("p.csv"), PriceUnit::KWh, &tz).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(
            e.to_string().starts_with("p.csv:2: \"abc\" is not a price"),
            "{e}"
        );
        let bad = "2026-03-27T21:00:00Z,0.05\nyesterday,1\n";
        let e = PriceFile::parse(bad, Path::new("p.csv"), PriceUnit::KWh, &tz).unwrap_err();
        assert_eq!(e.line, 2, "{e}");
    }

    #[test]
    fn epex_layout_in_mwh() {
        let tz = TimeZone::get("Europe/Berlin").unwrap();
        let text =
            "date,hour_of_day,price_eur_per_mwh,f1\n2019-01-07,1,35.5,1\n2019-01-07,24,40,1\n";
        let f = PriceFile::parse(text, Path::new("e.csv"), PriceUnit::MWh, &tz).unwrap();
        let at = |t: &str| f.hours.get(&ts(t)).copied().unwrap();
        assert!((at("2019-01-06T23:00:00Z") - 0.0355).abs() < 1e-12);
        assert!((at("2019-01-07T22:00:00Z") - 0.04).abs() < 1e-12);
        let e = PriceFile::parse("2019-01-07,25,1\n", Path::new("e.csv"), PriceUnit::MWh, &tz)
            .unwrap_err();
        assert!(e.message.contains("hour 25"), "{e}");
    }

    #[test]
    fn config_file_errors_carry_file_and_line() {
        use crate::config::Config;
        let base = "SlurmctldHost=h\nNodeName=n[1-2] CPUs=4 Watts=200\nPartitionName=p Nodes=ALL\n";
        let ok = format!("{base}PriceWindow=night Start=22:00 End=06:00 Price=0.1\nDefaultPrice=0.3\nGpuWatts=a100:400\n");
        let c = Config::parse(&ok, Path::new("/x/gsched.conf")).unwrap();
        assert!(c.price.enabled());
        assert_eq!(c.price.node_watts("n2", 4), 200.0);
        assert_eq!(c.price.gpu_watts(Some("a100")), 400.0);
        let bad = format!("{base}PriceWindow=a Start=01:00 End=05:00 Price=0.1\nPriceWindow=b Start=04:00 End=06:00 Days=Mon Price=0.2\n");
        let e = Config::parse(&bad, Path::new("/x/gsched.conf"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(
                "/x/gsched.conf:5: PriceWindow b overlaps PriceWindow a (/x/gsched.conf:4)"
            ),
            "{e}"
        );
        let bad = format!("{base}PriceWindow=a Start=01:00 End=05:00 Days=Mon-Fry Price=0.1\n");
        let e = Config::parse(&bad, Path::new("/x/gsched.conf"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("/x/gsched.conf:4: Days: unknown day \"Fry\""),
            "{e}"
        );
        let bad = format!("{base}PriceTimeZone=Nowhere/City\n");
        let e = Config::parse(&bad, Path::new("/x/gsched.conf"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("/x/gsched.conf:4: PriceTimeZone: unknown time zone"),
            "{e}"
        );
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("p.csv"),
            "2026-01-01T00:00Z,0.1\n2026-01-01T01:00Z\n",
        )
        .unwrap();
        let conf = dir.path().join("gsched.conf");
        let e = Config::parse(&format!("{base}PriceFile=p.csv\n"), &conf)
            .unwrap_err()
            .to_string();
        assert!(e.contains("p.csv:2: PriceFile: "), "{e}");
    }

    /// The `gsched.conf` examples of docs/price-windows.md are accepted as written.
    #[test]
    fn the_documented_examples_parse() {
        use crate::config::Config;
        let doc = include_str!("../../docs/price-windows.md");
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("prices.csv"),
            "date,hour,price\n2026-12-03,1,80.5\n",
        )
        .unwrap();
        let base = "SlurmctldHost=h\nNodeName=n1 CPUs=4\nPartitionName=p Nodes=ALL\n";
        let mut n = 0;
        for block in doc.split("```gsched.conf\n").skip(1) {
            let text = block.split("```").next().unwrap();
            let c = Config::parse(&format!("{base}{text}"), &dir.path().join("gsched.conf"))
                .unwrap_or_else(|e| panic!("{e}\n{text}"));
            assert!(c.price.enabled());
            n += 1;
        }
        assert_eq!(n, 2);
    }
}
