//! Slurm's textual units: time limits, durations, memory sizes and timestamps.
//!
//! Scripts written for Slurm pass these strings verbatim (`-t 1-00:00:00`, `--mem=16GB`,
//! `--begin 2026-01-01T10:00`), and clients parse what `squeue`/`scontrol` print back
//! (`30:00`, `1-00:00:00`, `8G`, `2026-01-01T10:00:00`). gsched parses and prints them in
//! one place so that every command, daemon and the config file agree with Slurm and with
//! each other.
//!
//! Timestamps are local time, like Slurm's. Converting needs the C library's time zone
//! database; the small `local_tm` wrapper is the only `unsafe` code of this crate.

/// Why a time, memory or timestamp string was rejected. Every message quotes the input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    /// A bad `-t/--time`, `MaxTime=` or `DefaultTime=` value.
    #[error("Invalid time limit specification \"{input}\": {reason}")]
    TimeLimit { input: String, reason: &'static str },
    /// A bad `--mem`-style size.
    #[error("Invalid memory specification \"{input}\": {reason}")]
    Memory { input: String, reason: &'static str },
    /// A bad `YYYY-MM-DD[THH:MM[:SS]]` timestamp.
    #[error("Invalid time specification \"{input}\": {reason}")]
    Timestamp { input: String, reason: &'static str },
}

const TIME_FORMS: &str =
    "expected M, M:S, H:M:S, D-H, D-H:M, D-H:M:S (whole numbers), UNLIMITED, INFINITE or -1";

/// Parses a Slurm time limit into whole minutes, keeping `0` as `Some(0)`.
///
/// Accepts `M`, `M:S`, `H:M:S`, `D-H`, `D-H:M` and `D-H:M:S` (fields are not range
/// checked, so `90` and `48:00:00` work); seconds round up to the next minute
/// (`0:30` → 1, `1:00:30` → 61). `UNLIMITED`, `INFINITE` and `-1` (any case) give `None`.
/// Surrounding whitespace is ignored. Use this where `0` means zero minutes (config
/// `MaxTime=`); use [`parse_time_limit`] for `-t/--time`.
pub fn parse_time_minutes(s: &str) -> Result<Option<u32>, UnitError> {
    let t = s.trim();
    let err = |reason| UnitError::TimeLimit {
        input: s.to_string(),
        reason,
    };
    if t == "-1" || t.eq_ignore_ascii_case("UNLIMITED") || t.eq_ignore_ascii_case("INFINITE") {
        return Ok(None);
    }
    if t.is_empty() {
        return Err(err("the value is empty"));
    }
    let (days, clock) = match t.split_once('-') {
        Some((d, rest)) => (Some(d), rest),
        None => (None, t),
    };
    let mut fields = Vec::with_capacity(3);
    for part in clock.split(':') {
        fields.push(parse_field(part).ok_or_else(|| err(TIME_FORMS))?);
    }
    // Seconds of each clock field, by form.
    let (h, m, sec) = match (days.is_some(), fields.as_slice()) {
        (false, [m]) => (0, *m, 0),
        (false, [m, s]) => (0, *m, *s),
        (false, [h, m, s]) => (*h, *m, *s),
        (true, [h]) => (*h, 0, 0),
        (true, [h, m]) => (*h, *m, 0),
        (true, [h, m, s]) => (*h, *m, *s),
        _ => return Err(err(TIME_FORMS)),
    };
    let d = match days {
        Some(d) => parse_field(d).ok_or_else(|| err(TIME_FORMS))?,
        None => 0,
    };
    let total = d
        .checked_mul(86_400)
        .and_then(|x| x.checked_add(h.checked_mul(3600)?))
        .and_then(|x| x.checked_add(m.checked_mul(60)?))
        .and_then(|x| x.checked_add(sec))
        .ok_or_else(|| err("the value is too large"))?;
    let minutes = total.div_ceil(60);
    u32::try_from(minutes)
        .map(Some)
        .map_err(|_| err("the value is too large"))
}

/// One numeric field: 1 to 10 ASCII digits.
fn parse_field(s: &str) -> Option<u64> {
    if s.is_empty() || s.len() > 10 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Parses `-t/--time`: like [`parse_time_minutes`], except that a limit of zero also
/// means "no limit" (`None`), as in sbatch.
pub fn parse_time_limit(s: &str) -> Result<Option<u32>, UnitError> {
    Ok(parse_time_minutes(s)?.filter(|&m| m != 0))
}

/// Seconds as `scontrol` prints durations: `HH:MM:SS`, or `D-HH:MM:SS` from one day on.
pub fn format_secs_scontrol(secs: u64) -> String {
    let (d, h, m, s) = split_secs(secs);
    if d > 0 {
        format!("{d}-{h:02}:{m:02}:{s:02}")
    } else {
        format!("{h:02}:{m:02}:{s:02}")
    }
}

/// Seconds as `squeue` prints durations: `M:SS`, `H:MM:SS`, or `D-HH:MM:SS`; more than
/// 365 days prints `INVALID` (as squeue does).
pub fn format_secs_squeue(secs: u64) -> String {
    if secs > 365 * 86_400 {
        return "INVALID".to_string();
    }
    let (d, h, m, s) = split_secs(secs);
    if d > 0 {
        format!("{d}-{h:02}:{m:02}:{s:02}")
    } else if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{m}:{s:02}")
    }
}

fn split_secs(secs: u64) -> (u64, u64, u64, u64) {
    (secs / 86_400, secs / 3600 % 24, secs / 60 % 60, secs % 60)
}

/// A time limit in minutes as `squeue %l` prints it (`30:00`, `1:00:00`, `1-00:00:00`);
/// `None` prints `UNLIMITED`.
pub fn format_time_limit_squeue(mins: Option<u32>) -> String {
    match mins {
        None => "UNLIMITED".to_string(),
        Some(m) => format_secs_squeue(u64::from(m) * 60),
    }
}

/// A time limit in minutes as `scontrol show` prints it (`00:30:00`, `1-00:00:00`);
/// `None` prints `UNLIMITED`.
pub fn format_time_limit_scontrol(mins: Option<u32>) -> String {
    match mins {
        None => "UNLIMITED".to_string(),
        Some(m) => format_secs_scontrol(u64::from(m) * 60),
    }
}

/// Same as [`format_time_limit_squeue`] (the form sinfo and squeue share).
pub fn format_time_limit(mins: Option<u32>) -> String {
    format_time_limit_squeue(mins)
}

/// Parses an sbatch `--mem` size into MiB.
///
/// A whole number with an optional unit `K`, `M`, `G` or `T` (any case) and an optional
/// trailing `B` (`16GB`, `1024MB`, `14G`, `32g`, `4000`). The default unit is MiB; `K`
/// rounds up to whole MiB. `0` is accepted (it means "all of the node's memory"; the
/// caller decides).
pub fn parse_memory_mb(s: &str) -> Result<u64, UnitError> {
    let t = s.trim();
    let err = |reason| UnitError::Memory {
        input: s.to_string(),
        reason,
    };
    const FORMS: &str =
        "expected a whole number with an optional K, M, G or T suffix, e.g. 4000, 512K, 16G or 16GB";
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return Err(err(FORMS));
    }
    let (num, suffix) = t.split_at(digits);
    let n: u64 = num.parse().map_err(|_| err("the value is too large"))?;
    let mut chars = suffix.chars();
    let shift = match chars.next() {
        None => return Ok(n),
        Some('k' | 'K') => None,
        Some('m' | 'M') => Some(0),
        Some('g' | 'G') => Some(10),
        Some('t' | 'T') => Some(20),
        Some(_) => return Err(err(FORMS)),
    };
    match (chars.next(), chars.next()) {
        (None, _) | (Some('b' | 'B'), None) => {}
        _ => return Err(err(FORMS)),
    }
    match shift {
        None => Ok(n.div_ceil(1024)),
        Some(bits) => n
            .checked_mul(1u64 << bits)
            .ok_or_else(|| err("the value is too large")),
    }
}

/// MiB as `squeue %m` prints memory: `500M`, `8G`, `2T` (the largest exact unit); `0`
/// prints `0`.
pub fn format_memory_mb(mb: u64) -> String {
    if mb == 0 {
        "0".to_string()
    } else if mb % (1024 * 1024) == 0 {
        format!("{}T", mb / (1024 * 1024))
    } else if mb % 1024 == 0 {
        format!("{}G", mb / 1024)
    } else {
        format!("{mb}M")
    }
}

/// Broken-down local time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LocalTm {
    pub(crate) year: i64,
    pub(crate) month: u32,
    pub(crate) day: u32,
    pub(crate) hour: u32,
    pub(crate) minute: u32,
    pub(crate) second: u32,
}

/// Converts epoch seconds to local time with the C library (honours `TZ`).
#[allow(unsafe_code)]
pub(crate) fn local_tm(epoch_secs: i64) -> Option<LocalTm> {
    // `time_t` is 32 bits on some platforms.
    // The libc crate deprecates `time_t` on musl (whose width changed in musl 1.2), where
    // gsstepd is built; the C library's own type is what `localtime_r` takes.
    #[allow(clippy::useless_conversion, deprecated)]
    let t: libc::time_t = epoch_secs.try_into().ok()?;
    // SAFETY: `libc::tm` is a plain C struct for which all-zero bytes are a valid value
    // (integers and a nullable pointer). `localtime_r` only reads `t` and writes into
    // `tm`, both valid, exclusively borrowed locals that outlive the call; it is the
    // re-entrant variant, so no shared static buffer is involved. A null return (time
    // out of range) is checked before `tm` is read.
    let tm = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&t, &mut tm).is_null() {
            return None;
        }
        tm
    };
    Some(LocalTm {
        year: i64::from(tm.tm_year) + 1900,
        month: u32::try_from(tm.tm_mon + 1).ok()?,
        day: u32::try_from(tm.tm_mday).ok()?,
        hour: u32::try_from(tm.tm_hour).ok()?,
        minute: u32::try_from(tm.tm_min).ok()?,
        second: u32::try_from(tm.tm_sec).ok()?,
    })
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Date of a day number since 1970-01-01 (inverse of [`days_from_civil`]).
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

fn tm_as_utc_secs(tm: &LocalTm) -> i64 {
    days_from_civil(tm.year, tm.month, tm.day) * 86_400
        + i64::from(tm.hour) * 3600
        + i64::from(tm.minute) * 60
        + i64::from(tm.second)
}

/// Epoch seconds as Slurm prints dates: `YYYY-MM-DDTHH:MM:SS` in local time (`TZ` is
/// honoured). If the C library cannot convert the time, it is printed in UTC.
pub fn format_timestamp(epoch_secs: i64) -> String {
    let tm = local_tm(epoch_secs).unwrap_or_else(|| {
        let days = epoch_secs.div_euclid(86_400);
        let rem = epoch_secs.rem_euclid(86_400);
        let (year, month, day) = civil_from_days(days);
        LocalTm {
            year,
            month,
            day,
            hour: (rem / 3600) as u32,
            minute: (rem / 60 % 60) as u32,
            second: (rem % 60) as u32,
        }
    });
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        tm.year, tm.month, tm.day, tm.hour, tm.minute, tm.second
    )
}

/// Parses `YYYY-MM-DD[THH:MM[:SS]]` in local time into epoch seconds (missing time
/// fields are zero). A local time that does not exist (skipped by a daylight saving
/// change) resolves to a nearby instant, as with `mktime`.
pub fn parse_timestamp(s: &str) -> Result<i64, UnitError> {
    let t = s.trim();
    let err = |reason| UnitError::Timestamp {
        input: s.to_string(),
        reason,
    };
    const FORM: &str = "expected YYYY-MM-DD, YYYY-MM-DDTHH:MM or YYYY-MM-DDTHH:MM:SS";
    let (date, clock) = match t.split_once('T') {
        Some((d, c)) => (d, Some(c)),
        None => (t, None),
    };
    let num = |f: &str, len: std::ops::RangeInclusive<usize>| -> Option<u32> {
        if !len.contains(&f.len()) || !f.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        f.parse().ok()
    };
    let dparts: Vec<&str> = date.split('-').collect();
    let [y, mo, d] = dparts.as_slice() else {
        return Err(err(FORM));
    };
    let year = num(y, 4..=4).ok_or_else(|| err(FORM))?;
    let month = num(mo, 1..=2).ok_or_else(|| err(FORM))?;
    let day = num(d, 1..=2).ok_or_else(|| err(FORM))?;
    let (hour, minute, second) = match clock {
        None => (0, 0, 0),
        Some(c) => {
            let cparts: Vec<&str> = c.split(':').collect();
            let field = |f: &str| num(f, 1..=2).ok_or_else(|| err(FORM));
            match cparts.as_slice() {
                [h, m] => (field(h)?, field(m)?, 0),
                [h, m, s] => (field(h)?, field(m)?, field(s)?),
                _ => return Err(err(FORM)),
            }
        }
    };
    if !(1..=12).contains(&month) {
        return Err(err("the month must be 01 to 12"));
    }
    let year = i64::from(year);
    let next_month = if month == 12 {
        days_from_civil(year + 1, 1, 1)
    } else {
        days_from_civil(year, month + 1, 1)
    };
    let month_len = next_month - days_from_civil(year, month, 1);
    if day == 0 || i64::from(day) > month_len {
        return Err(err("the day does not exist in that month"));
    }
    if hour > 23 || minute > 59 || second > 59 {
        return Err(err("the time of day must be 00:00:00 to 23:59:59"));
    }
    let wall = tm_as_utc_secs(&LocalTm {
        year,
        month,
        day,
        hour,
        minute,
        second,
    });
    // Find the instant whose local wall-clock time is `wall`: subtract the UTC offset
    // in effect there, and once more in case the first guess crossed an offset change.
    let wall_of = |at: i64| local_tm(at).map(|tm| tm_as_utc_secs(&tm));
    let unknown = || err("the C library cannot convert this time");
    let first = wall - (wall_of(wall).ok_or_else(unknown)? - wall);
    let second = wall - (wall_of(first).ok_or_else(unknown)? - first);
    if wall_of(second) == Some(wall) {
        return Ok(second);
    }
    if wall_of(first) == Some(wall) {
        return Ok(first);
    }
    // The wall-clock time was skipped (daylight saving starts): move forward by the
    // length of the gap, as mktime does (02:30 becomes 03:30).
    Ok(first.max(second))
}

/// CPU lists as the kernel (`cpuset.cpus`) and Slurm's config files (`Cores=`) write them.
/// `0-3,8,10-11` → [0,1,2,3,8,10,11].
pub fn parse_cpu_list(s: &str) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
                if a > b || b - a > 65_536 {
                    return None;
                }
                out.extend(a..=b);
            }
            None => out.push(part.trim().parse().ok()?),
        }
    }
    out.sort_unstable();
    out.dedup();
    Some(out)
}

/// [0,1,2,3,8,10,11] → `0-3,8,10-11` (the kernel's form).
pub fn format_cpu_list(cpus: &[u32]) -> String {
    let mut v = cpus.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let start = v[i];
        let mut end = start;
        while i + 1 < v.len() && v[i + 1] == end + 1 {
            i += 1;
            end = v[i];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_round_trip() {
        assert_eq!(
            parse_cpu_list("0-3,8,10-11").unwrap(),
            vec![0, 1, 2, 3, 8, 10, 11]
        );
        assert_eq!(parse_cpu_list("").unwrap(), Vec::<u32>::new());
        assert_eq!(parse_cpu_list("1\n").unwrap(), vec![1]);
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("x"), None);
        assert_eq!(format_cpu_list(&[11, 0, 1, 2, 3, 8, 10]), "0-3,8,10-11");
        assert_eq!(format_cpu_list(&[5]), "5");
        assert_eq!(format_cpu_list(&[]), "");
    }

    #[test]
    fn time_limit_forms() {
        let cases: &[(&str, Option<u32>)] = &[
            ("5", Some(5)),
            ("90", Some(90)),
            ("0:30", Some(1)),
            ("1:00", Some(1)),
            ("1:01", Some(2)),
            ("10:00", Some(10)),
            ("1:00:00", Some(60)),
            ("1:00:30", Some(61)),
            ("00:30:00", Some(30)),
            ("48:00:00", Some(2880)),
            ("1-0", Some(1440)),
            ("2-12", Some(3600)),
            ("1-1:30", Some(1530)),
            ("1-00:00:01", Some(1441)),
            ("0-0:0:59", Some(1)),
            (" 15 ", Some(15)),
            ("0", None),
            ("0:00", None),
            ("00:00:00", None),
            ("0-0", None),
            ("UNLIMITED", None),
            ("unlimited", None),
            ("Infinite", None),
            ("-1", None),
        ];
        for (input, want) in cases {
            assert_eq!(parse_time_limit(input), Ok(*want), "{input:?}");
        }
        assert_eq!(parse_time_minutes("0"), Ok(Some(0)));
        assert_eq!(parse_time_minutes("INFINITE"), Ok(None));
        assert_eq!(parse_time_minutes("4294967295"), Ok(Some(u32::MAX)));
    }

    #[test]
    fn time_limit_rejects_garbage() {
        for input in [
            "",
            " ",
            "abc",
            "5m",
            "1h",
            "-5",
            "--1",
            "1-",
            "-",
            "1:2:3:4",
            "1-2:3:4:5",
            "1:",
            ":1",
            "1::2",
            "1.5",
            "+5",
            "1 2",
            "1-2-3",
            "5x",
            "1-a",
            "4294967296",
            "99999999999",
            "9999999999-0",
            "0x10",
            "١",
        ] {
            match parse_time_limit(input) {
                Ok(v) => panic!("{input:?} should fail, got {v:?}"),
                Err(e) => {
                    let msg = e.to_string();
                    assert!(msg.starts_with("Invalid time limit specification"), "{msg}");
                    assert!(msg.contains(&format!("\"{input}\"")), "{msg}");
                }
            }
        }
    }

    #[test]
    fn squeue_durations() {
        assert_eq!(format_secs_squeue(0), "0:00");
        assert_eq!(format_secs_squeue(59), "0:59");
        assert_eq!(format_secs_squeue(1800), "30:00");
        assert_eq!(format_secs_squeue(3600), "1:00:00");
        assert_eq!(format_secs_squeue(3661), "1:01:01");
        assert_eq!(format_secs_squeue(86_400), "1-00:00:00");
        assert_eq!(format_secs_squeue(2 * 86_400 + 3723), "2-01:02:03");
        assert_eq!(format_secs_squeue(365 * 86_400), "365-00:00:00");
        assert_eq!(format_secs_squeue(365 * 86_400 + 1), "INVALID");
        assert_eq!(format_time_limit_squeue(None), "UNLIMITED");
        assert_eq!(format_time_limit_squeue(Some(30)), "30:00");
        assert_eq!(format_time_limit_squeue(Some(60)), "1:00:00");
        assert_eq!(format_time_limit_squeue(Some(1440)), "1-00:00:00");
        assert_eq!(format_time_limit(Some(5)), "5:00");
        assert_eq!(format_time_limit_squeue(Some(u32::MAX)), "INVALID");
    }

    #[test]
    fn scontrol_durations() {
        assert_eq!(format_secs_scontrol(0), "00:00:00");
        assert_eq!(format_secs_scontrol(1800), "00:30:00");
        assert_eq!(format_secs_scontrol(3600), "01:00:00");
        assert_eq!(format_secs_scontrol(86_400), "1-00:00:00");
        assert_eq!(format_secs_scontrol(400 * 86_400 + 5), "400-00:00:05");
        assert_eq!(format_secs_scontrol(u64::MAX), "213503982334601-07:00:15");
        assert_eq!(format_time_limit_scontrol(None), "UNLIMITED");
        assert_eq!(format_time_limit_scontrol(Some(30)), "00:30:00");
        assert_eq!(format_time_limit_scontrol(Some(2880)), "2-00:00:00");
    }

    #[test]
    fn time_limit_round_trips_through_both_formats() {
        for mins in [1u32, 5, 59, 60, 61, 1439, 1440, 1441, 10_000, 500_000] {
            assert_eq!(
                parse_time_limit(&format_time_limit_scontrol(Some(mins))),
                Ok(Some(mins))
            );
            assert_eq!(
                parse_time_limit(&format_time_limit_squeue(Some(mins))),
                Ok(Some(mins))
            );
        }
        assert_eq!(parse_time_limit(&format_time_limit_squeue(None)), Ok(None));
    }

    #[test]
    fn memory_forms() {
        let cases: &[(&str, u64)] = &[
            ("4000", 4000),
            ("0", 0),
            ("1024MB", 1024),
            ("1024M", 1024),
            ("1024mb", 1024),
            ("16GB", 16 * 1024),
            ("14G", 14 * 1024),
            ("32g", 32 * 1024),
            ("1gb", 1024),
            ("2T", 2 * 1024 * 1024),
            ("1tB", 1024 * 1024),
            ("512K", 1),
            ("1024K", 1),
            ("1025K", 2),
            ("2048kb", 2),
            ("0K", 0),
            (" 8G ", 8192),
        ];
        for (input, want) in cases {
            assert_eq!(parse_memory_mb(input), Ok(*want), "{input:?}");
        }
    }

    #[test]
    fn memory_rejects_garbage() {
        for input in [
            "",
            "G",
            "1.5G",
            "-1",
            "+1",
            "16B",
            "16GBB",
            "16GiB",
            "16 G",
            "16X",
            "0x10",
            "99999999999999999999",
            "18014398509481984G",
            "17592186044416T",
        ] {
            match parse_memory_mb(input) {
                Ok(v) => panic!("{input:?} should fail, got {v}"),
                Err(e) => {
                    let msg = e.to_string();
                    assert!(msg.starts_with("Invalid memory specification"), "{msg}");
                    assert!(msg.contains(&format!("\"{input}\"")), "{msg}");
                }
            }
        }
    }

    #[test]
    fn memory_display() {
        assert_eq!(format_memory_mb(0), "0");
        assert_eq!(format_memory_mb(500), "500M");
        assert_eq!(format_memory_mb(1024), "1G");
        assert_eq!(format_memory_mb(1536), "1536M");
        assert_eq!(format_memory_mb(8192), "8G");
        assert_eq!(format_memory_mb(1024 * 1024), "1T");
        assert_eq!(format_memory_mb(3 * 1024 * 1024), "3T");
        assert_eq!(format_memory_mb(1024 * 1024 + 1024), "1025G");
        for mb in [1u64, 500, 1024, 1536, 8192, 1 << 20, 5 << 30] {
            assert_eq!(parse_memory_mb(&format_memory_mb(mb)), Ok(mb));
        }
    }

    #[test]
    fn civil_conversion() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(days_from_civil(1969, 12, 31), -1);
        for z in [-1_000_000i64, -1, 0, 1, 11_016, 11_017, 19_782, 2_932_896] {
            let (y, m, d) = civil_from_days(z);
            assert_eq!(days_from_civil(y, m, d), z);
        }
    }

    #[test]
    fn timestamp_round_trip_in_the_current_zone() {
        for t in [
            0i64,
            86_399,
            1_000_000_000,
            1_700_000_000,
            1_720_000_000,
            2_000_000_000,
        ] {
            let text = format_timestamp(t);
            assert_eq!(text.len(), 19, "{text}");
            assert_eq!(&text[10..11], "T");
            // Round trip holds except in a repeated hour; none of these is one in
            // any common zone.
            assert_eq!(parse_timestamp(&text), Ok(t), "{text}");
        }
    }

    #[test]
    fn timestamp_parse_forms_and_errors() {
        let base = parse_timestamp("2024-02-29T00:00:00");
        assert!(base.is_ok());
        assert_eq!(parse_timestamp("2024-02-29"), base);
        assert_eq!(parse_timestamp("2024-02-29T00:00"), base);
        assert_eq!(
            parse_timestamp("2024-02-29T10:20").map(|t| t - base.clone().unwrap_or(0)),
            Ok(37_200)
        );
        for input in [
            "",
            "2024",
            "2024-02",
            "2024-02-30",
            "2023-02-29",
            "2024-13-01",
            "2024-00-10",
            "2024-01-00",
            "2024-01-01T24:00",
            "2024-01-01T10:60",
            "2024-01-01T10:00:60",
            "2024-01-01T10",
            "2024-01-01T10:00:00:00",
            "2024-01-01 10:00",
            "24-01-01",
            "2024-1-1T1:2:3x",
            "now",
        ] {
            match parse_timestamp(input) {
                Ok(v) => panic!("{input:?} should fail, got {v}"),
                Err(e) => assert!(e.to_string().contains(&format!("\"{input}\"")), "{e}"),
            }
        }
        assert!(parse_timestamp("2024-1-1T1:2:3").is_ok());
    }

    /// Runs the zone-specific checks in a child process with `TZ` set, so the test
    /// never changes the environment of this (multi-threaded) process.
    #[test]
    fn timestamps_follow_tz() {
        if let Ok(tz) = std::env::var("GSCHED_UNITS_TZ_CHILD") {
            check_zone(&tz);
            return;
        }
        let exe = match std::env::current_exe() {
            Ok(exe) => exe,
            Err(e) => panic!("current_exe: {e}"),
        };
        for tz in ["UTC0", "XYZ-3", "EST5EDT,M3.2.0,M11.1.0"] {
            let out = std::process::Command::new(&exe)
                .args([
                    "--exact",
                    "units::tests::timestamps_follow_tz",
                    "--test-threads=1",
                ])
                .env("TZ", tz)
                .env("GSCHED_UNITS_TZ_CHILD", tz)
                .output();
            match out {
                Ok(o) => assert!(
                    o.status.success() && String::from_utf8_lossy(&o.stdout).contains("1 passed"),
                    "TZ={tz}: {}{}",
                    String::from_utf8_lossy(&o.stdout),
                    String::from_utf8_lossy(&o.stderr)
                ),
                Err(e) => panic!("cannot run {}: {e}", exe.display()),
            }
        }
    }

    fn check_zone(tz: &str) {
        let cases: &[(i64, &str)] = match tz {
            "UTC0" => &[
                (0, "1970-01-01T00:00:00"),
                (1_700_000_000, "2023-11-14T22:13:20"),
                (-1, "1969-12-31T23:59:59"),
            ],
            "XYZ-3" => &[
                (0, "1970-01-01T03:00:00"),
                (1_700_000_000, "2023-11-15T01:13:20"),
            ],
            _ => &[
                (1_700_000_000, "2023-11-14T17:13:20"),
                (1_720_000_000, "2024-07-03T05:46:40"),
            ],
        };
        for (t, text) in cases {
            assert_eq!(format_timestamp(*t), *text, "TZ={tz}");
            assert_eq!(parse_timestamp(text), Ok(*t), "TZ={tz}");
        }
        if tz.starts_with("EST") {
            // 02:30 on 2024-03-10 does not exist in New York; it resolves near 03:00.
            let ok = |s| parse_timestamp(s).unwrap_or(i64::MIN);
            let gap = ok("2024-03-10T02:30");
            let before = ok("2024-03-10T01:59:59");
            let after = ok("2024-03-10T03:00:00");
            assert!(before < gap, "{gap}");
            assert_eq!(gap, after + 1800);
            // 01:30 on 2024-11-03 happens twice; either instant prints back the same.
            assert_eq!(
                format_timestamp(ok("2024-11-03T01:30")),
                "2024-11-03T01:30:00"
            );
        }
    }
}
