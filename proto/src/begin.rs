//! `--begin` / `StartTime=` values as Slurm's `parse_time` takes them: `HH:MM[:SS][AM|PM]`,
//! `midnight`, `noon`, `elevenses`, `fika`, `teatime`, `today`, `tomorrow`, `now[+N[unit]]`,
//! `YYYY-MM-DD[THH:MM[:SS]]`, `MM/DD[/YY]`, `MMDDYY`. Times of day are local time (`TZ` is
//! honoured) and mean the next such moment: `10:00` after 10:00 is tomorrow's.

use crate::units::{civil_from_days, days_from_civil, local_tm, parse_timestamp};

/// Why a `--begin` value was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Invalid time specification \"{input}\": {reason}")]
pub struct BeginError {
    pub input: String,
    pub reason: &'static str,
}

const FORMS: &str = "expected HH:MM[:SS], midnight, noon, teatime, today, tomorrow, now+N[seconds|minutes|hours|days|weeks], YYYY-MM-DD[THH:MM[:SS]] or MM/DD[/YY]";

/// Epoch seconds of a local date and time of day.
fn local(y: i64, m: u32, d: u32, hh: u32, mm: u32, ss: u32) -> Option<i64> {
    parse_timestamp(&format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}")).ok()
}

fn add_days(y: i64, m: u32, d: u32, n: i64) -> (i64, u32, u32) {
    civil_from_days(days_from_civil(y, m, d) + n)
}

/// A time as sacct's `-S/--starttime` and `-E/--endtime` take it (Slurm's `parse_time` looking
/// back): as [`parse_begin`], except that a time of day (`HH:MM[:SS]`, `midnight`, `noon`, ...)
/// is the last such moment (today's once it has passed, else yesterday's) and `now-N[unit]`
/// counts back. Across a daylight-saving change "yesterday" is 24 hours back, not a calendar
/// day.
pub fn parse_past(input: &str, now: i64) -> Result<i64, BeginError> {
    let s = input.trim().to_ascii_lowercase();
    if let Some(back) = s.strip_prefix("now-") {
        let ahead = parse_begin(&format!("now+{back}"), now)?;
        return Ok(now - (ahead - now));
    }
    let named = matches!(
        s.as_str(),
        "midnight" | "noon" | "elevenses" | "fika" | "teatime"
    );
    let date = s.len() >= 10 && s.as_bytes()[4] == b'-';
    let t = parse_begin(input, now)?;
    if named || (s.contains(':') && !date) {
        // parse_begin gave the next such moment, in (now, now + 1 day].
        return Ok(t - 86_400);
    }
    Ok(t)
}

/// Parses a `--begin` value relative to `now` (epoch seconds) into epoch seconds.
pub fn parse_begin(input: &str, now: i64) -> Result<i64, BeginError> {
    let err = |reason| BeginError {
        input: input.to_string(),
        reason,
    };
    let s = input.trim().to_ascii_lowercase();
    if s.is_empty() {
        return Err(err(FORMS));
    }
    let tm = local_tm(now).ok_or_else(|| err("the C library cannot convert the current time"))?;
    let (y, mo, d) = (tm.year, tm.month, tm.day);
    // The next moment at this local time of day: today, or tomorrow if it has passed.
    let next_at = |hh: u32, mm: u32, ss: u32| -> Result<i64, BeginError> {
        let today = local(y, mo, d, hh, mm, ss).ok_or_else(|| err(FORMS))?;
        if today > now {
            return Ok(today);
        }
        let (y2, m2, d2) = add_days(y, mo, d, 1);
        local(y2, m2, d2, hh, mm, ss).ok_or_else(|| err(FORMS))
    };
    match s.as_str() {
        "midnight" => return next_at(0, 0, 0),
        "noon" => return next_at(12, 0, 0),
        "elevenses" => return next_at(11, 0, 0),
        "fika" => return next_at(15, 0, 0),
        "teatime" => return next_at(16, 0, 0),
        "today" => return Ok(now),
        "tomorrow" => {
            let (y2, m2, d2) = add_days(y, mo, d, 1);
            return local(y2, m2, d2, 0, 0, 0).ok_or_else(|| err(FORMS));
        }
        _ => {}
    }
    if let Some(rest) = s.strip_prefix("now") {
        if rest.is_empty() {
            return Ok(now);
        }
        let rest = rest
            .strip_prefix('+')
            .ok_or_else(|| err("expected now+N[seconds|minutes|hours|days|weeks]"))?;
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(err("expected now+N[seconds|minutes|hours|days|weeks]"));
        }
        let n: i64 = rest[..digits]
            .parse()
            .map_err(|_| err("the offset is too large"))?;
        let unit = &rest[digits..];
        let mult = match unit {
            "" | "s" | "sec" | "secs" | "second" | "seconds" => 1,
            "m" | "min" | "mins" | "minute" | "minutes" => 60,
            "h" | "hour" | "hours" => 3600,
            "d" | "day" | "days" => 86_400,
            "w" | "week" | "weeks" => 7 * 86_400,
            _ => {
                return Err(err(
                    "the unit must be seconds, minutes, hours, days or weeks",
                ))
            }
        };
        return n
            .checked_mul(mult)
            .and_then(|o| now.checked_add(o))
            .ok_or_else(|| err("the offset is too large"));
    }
    // YYYY-MM-DD[THH:MM[:SS]]
    if s.len() >= 10 && s.as_bytes()[4] == b'-' {
        return parse_timestamp(&s.to_ascii_uppercase()).map_err(|e| match e {
            crate::units::UnitError::Timestamp { reason, .. } => err(reason),
            _ => err(FORMS),
        });
    }
    // HH:MM[:SS][AM|PM]
    if s.contains(':') {
        let (clock, half) = if let Some(c) = s.strip_suffix("am") {
            (c.trim_end(), Some(false))
        } else if let Some(c) = s.strip_suffix("pm") {
            (c.trim_end(), Some(true))
        } else {
            (s.as_str(), None)
        };
        let parts: Vec<&str> = clock.split(':').collect();
        let num = |f: &str| -> Result<u32, BeginError> {
            if f.is_empty() || f.len() > 2 || !f.bytes().all(|b| b.is_ascii_digit()) {
                return Err(err(FORMS));
            }
            f.parse().map_err(|_| err(FORMS))
        };
        let (mut hh, mm, ss) = match parts.as_slice() {
            [h, m] => (num(h)?, num(m)?, 0),
            [h, m, sec] => (num(h)?, num(m)?, num(sec)?),
            _ => return Err(err(FORMS)),
        };
        if let Some(pm) = half {
            if hh == 0 || hh > 12 {
                return Err(err("the hour must be 1 to 12 with AM/PM"));
            }
            hh = match (pm, hh) {
                (false, 12) => 0,
                (true, 12) => 12,
                (true, h) => h + 12,
                (false, h) => h,
            };
        }
        if hh > 23 || mm > 59 || ss > 59 {
            return Err(err("the time of day must be 00:00:00 to 23:59:59"));
        }
        return next_at(hh, mm, ss);
    }
    // MM/DD[/YY] and MMDDYY: midnight of that date; without a year, the next such date.
    let (month, day, year) = if s.contains('/') {
        let parts: Vec<&str> = s.split('/').collect();
        let num = |f: &str| -> Result<u32, BeginError> {
            if f.is_empty() || f.len() > 4 || !f.bytes().all(|b| b.is_ascii_digit()) {
                return Err(err(FORMS));
            }
            f.parse().map_err(|_| err(FORMS))
        };
        match parts.as_slice() {
            [m, dd] => (num(m)?, num(dd)?, None),
            [m, dd, yy] => (num(m)?, num(dd)?, Some(num(yy)?)),
            _ => return Err(err(FORMS)),
        }
    } else if s.len() == 6 && s.bytes().all(|b| b.is_ascii_digit()) {
        let n = |r: std::ops::Range<usize>| s[r].parse::<u32>().unwrap_or(0);
        (n(0..2), n(2..4), Some(n(4..6)))
    } else {
        return Err(err(FORMS));
    };
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return Err(err("the month must be 1 to 12 and the day 1 to 31"));
    }
    let year = match year {
        Some(yy) if yy < 100 => 2000 + i64::from(yy),
        Some(yyyy) => i64::from(yyyy),
        None => {
            if (month, day) < (mo, d) {
                y + 1
            } else {
                y
            }
        }
    };
    let t = parse_timestamp(&format!("{year:04}-{month:02}-{day:02}")).map_err(|e| match e {
        crate::units::UnitError::Timestamp { reason, .. } => err(reason),
        _ => err(FORMS),
    })?;
    Ok(t)
}

#[cfg(test)]
mod tests {
    #[test]
    fn past_times_look_back() {
        let now = super::parse_begin("2026-03-10T15:30:00", 0).unwrap();
        let at = |s: &str| super::parse_begin(s, 0).unwrap();
        assert_eq!(
            super::parse_past("10:00", now),
            Ok(at("2026-03-10T10:00:00"))
        );
        assert_eq!(
            super::parse_past("16:00", now),
            Ok(at("2026-03-09T16:00:00"))
        );
        assert_eq!(
            super::parse_past("midnight", now),
            Ok(at("2026-03-10T00:00:00"))
        );
        assert_eq!(super::parse_past("now-2hours", now), Ok(now - 7200));
        assert_eq!(super::parse_past("now", now), Ok(now));
        assert_eq!(
            super::parse_past("2026-01-02", now),
            Ok(at("2026-01-02T00:00:00"))
        );
        assert!(super::parse_past("now-x", now).is_err());
    }

    use super::*;

    /// 2024-03-10T10:30:00 UTC (a Sunday).
    const NOW: i64 = 1_710_066_600;

    /// Runs the checks in a child process with `TZ=UTC0`, so the test never changes the
    /// environment of this (multi-threaded) process.
    #[test]
    fn begin_forms_in_utc() {
        if std::env::var("GSCHED_BEGIN_TZ_CHILD").is_ok() {
            relative_forms();
            named_times_are_the_next_such_moment();
            clock_times();
            dates();
            return;
        }
        let exe = std::env::current_exe().expect("current_exe");
        let o = std::process::Command::new(&exe)
            .args([
                "--exact",
                "begin::tests::begin_forms_in_utc",
                "--test-threads=1",
            ])
            .env("TZ", "UTC0")
            .env("GSCHED_BEGIN_TZ_CHILD", "1")
            .output()
            .expect("run the test binary");
        assert!(
            o.status.success() && String::from_utf8_lossy(&o.stdout).contains("1 passed"),
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }

    fn at(s: &str) -> i64 {
        parse_timestamp(s).unwrap()
    }

    fn relative_forms() {
        assert_eq!(parse_begin("now", NOW), Ok(NOW));
        assert_eq!(parse_begin("now+30", NOW), Ok(NOW + 30));
        assert_eq!(parse_begin("now+5seconds", NOW), Ok(NOW + 5));
        assert_eq!(parse_begin("now+2minutes", NOW), Ok(NOW + 120));
        assert_eq!(parse_begin("NOW+1hour", NOW), Ok(NOW + 3600));
        assert_eq!(parse_begin("now+3days", NOW), Ok(NOW + 3 * 86400));
        assert_eq!(parse_begin("now+1weeks", NOW), Ok(NOW + 7 * 86400));
        assert!(parse_begin("now+", NOW).is_err());
        assert!(parse_begin("now+5fortnights", NOW).is_err());
        assert!(parse_begin("now-5", NOW).is_err());
    }

    fn named_times_are_the_next_such_moment() {
        assert_eq!(parse_begin("midnight", NOW), Ok(at("2024-03-11T00:00:00")));
        assert_eq!(parse_begin("noon", NOW), Ok(at("2024-03-10T12:00:00")));
        assert_eq!(parse_begin("teatime", NOW), Ok(at("2024-03-10T16:00:00")));
        assert_eq!(parse_begin("today", NOW), Ok(NOW));
        assert_eq!(parse_begin("tomorrow", NOW), Ok(at("2024-03-11T00:00:00")));
    }

    fn clock_times() {
        assert_eq!(parse_begin("16:00", NOW), Ok(at("2024-03-10T16:00:00")));
        assert_eq!(parse_begin("16:00:30", NOW), Ok(at("2024-03-10T16:00:30")));
        // Already past today: tomorrow.
        assert_eq!(parse_begin("09:15", NOW), Ok(at("2024-03-11T09:15:00")));
        assert_eq!(parse_begin("4:00pm", NOW), Ok(at("2024-03-10T16:00:00")));
        assert_eq!(parse_begin("12:00am", NOW), Ok(at("2024-03-11T00:00:00")));
        assert!(parse_begin("25:00", NOW).is_err());
        assert!(parse_begin("10:", NOW).is_err());
    }

    fn dates() {
        assert_eq!(
            parse_begin("2024-04-01", NOW),
            Ok(at("2024-04-01T00:00:00"))
        );
        assert_eq!(
            parse_begin("2024-04-01T08:30", NOW),
            Ok(at("2024-04-01T08:30:00"))
        );
        assert_eq!(
            parse_begin("2024-04-01T08:30:15", NOW),
            Ok(at("2024-04-01T08:30:15"))
        );
        assert_eq!(parse_begin("04/01", NOW), Ok(at("2024-04-01T00:00:00")));
        assert_eq!(parse_begin("04/01/25", NOW), Ok(at("2025-04-01T00:00:00")));
        // Already past this year: next year.
        assert_eq!(parse_begin("01/15", NOW), Ok(at("2025-01-15T00:00:00")));
        assert_eq!(parse_begin("040125", NOW), Ok(at("2025-04-01T00:00:00")));
        assert!(parse_begin("13/01", NOW).is_err());
        assert!(parse_begin("2024-02-30", NOW).is_err());
        assert!(parse_begin("bogus", NOW).is_err());
        assert!(parse_begin("", NOW).is_err());
    }
}
