//! Signal names as Slurm's commands accept them (`USR1`, `SIGUSR1`, `usr1`, `10`).

/// The names Slurm maps, with Linux numbers.
const SIGNALS: &[(&str, i32)] = &[
    ("HUP", libc::SIGHUP),
    ("INT", libc::SIGINT),
    ("QUIT", libc::SIGQUIT),
    ("ABRT", libc::SIGABRT),
    ("KILL", libc::SIGKILL),
    ("ALRM", libc::SIGALRM),
    ("TERM", libc::SIGTERM),
    ("USR1", libc::SIGUSR1),
    ("USR2", libc::SIGUSR2),
    ("URG", libc::SIGURG),
    ("CONT", libc::SIGCONT),
    ("STOP", libc::SIGSTOP),
    ("TSTP", libc::SIGTSTP),
    ("TTIN", libc::SIGTTIN),
    ("TTOU", libc::SIGTTOU),
    ("XCPU", libc::SIGXCPU),
];

/// Slurm's `sig_name2num`: a number (trailing blanks allowed), or a name with an optional
/// `SIG` prefix in any case. `None` for anything else, and for 0.
pub fn parse_signal(s: &str) -> Option<i32> {
    let digits = s
        .char_indices()
        .take_while(|(i, c)| c.is_ascii_digit() || (*i == 0 && (*c == '-' || *c == '+')))
        .count();
    if digits > 0 && s[..digits].chars().any(|c| c.is_ascii_digit()) {
        if !s[digits..].trim().is_empty() {
            return None;
        }
        let n: i64 = s[..digits].parse().ok()?;
        return i32::try_from(n).ok().filter(|n| *n != 0);
    }
    let t = s.trim_start();
    let t = if t.len() >= 3 && t[..3].eq_ignore_ascii_case("SIG") {
        &t[3..]
    } else {
        t
    };
    SIGNALS.iter().find_map(|(name, num)| {
        if t.len() >= name.len()
            && t[..name.len()].eq_ignore_ascii_case(name)
            && t[name.len()..].trim().is_empty()
        {
            Some(*num)
        } else {
            None
        }
    })
}

/// Why a `--signal` value is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WarnSignalError {
    /// Slurm's `Invalid --signal specification`.
    Invalid,
    /// `R:` (signal reservations' jobs): not supported by gsched.
    Reservation,
}

/// Slurm's `get_signal_opts`: `[{R|B}:]<sig>[@sec]`, the signal by name (with or without
/// `SIG`) or number (1..=65535), `sec` in 0..=65535 and 60 when not given.
pub fn parse_warn_signal(s: &str) -> Result<gsched_proto::job::WarnSignal, WarnSignalError> {
    let prefix = |p: &str| s.len() >= p.len() && s[..p.len()].eq_ignore_ascii_case(p);
    let (rest, batch_only) = if prefix("RB:") || prefix("BR:") || prefix("R:") {
        return Err(WarnSignalError::Reservation);
    } else if prefix("B:") {
        (&s[2..], true)
    } else {
        (s, false)
    };
    let (sig, secs) = match rest.split_once('@') {
        Some((sig, secs)) => (sig, Some(secs)),
        None => (rest, None),
    };
    let signal = parse_signal(sig)
        .filter(|n| (1..=0xffff).contains(n))
        .ok_or(WarnSignalError::Invalid)?;
    let before_secs = match secs {
        None => gsched_proto::job::WarnSignal::DEFAULT_SECS,
        // strtol: leading blanks and a sign are allowed, nothing may follow the digits;
        // an empty value reads as 0.
        Some(t) => {
            let t = t.trim_start();
            if t.is_empty() {
                0
            } else {
                match t.parse::<i64>() {
                    Ok(n) if (0..=0xffff).contains(&n) => n as u32,
                    _ => return Err(WarnSignalError::Invalid),
                }
            }
        }
    };
    Ok(gsched_proto::job::WarnSignal {
        signal,
        before_secs,
        batch_only,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warn_signal_specs() {
        let w = |s: &str| parse_warn_signal(s).map(|w| (w.signal, w.before_secs, w.batch_only));
        assert_eq!(w("USR2@90"), Ok((12, 90, false)));
        assert_eq!(w("B:USR2@30"), Ok((12, 30, true)));
        assert_eq!(w("b:SIGUSR1@55"), Ok((10, 55, true)));
        assert_eq!(w("SIGUSR1@90"), Ok((10, 90, false)));
        assert_eq!(w("10"), Ok((10, 60, false)));
        assert_eq!(w("USR1@0"), Ok((10, 0, false)));
        assert_eq!(w("USR1@65535"), Ok((10, 65535, false)));
        assert_eq!(w("USR1@65536"), Err(WarnSignalError::Invalid));
        assert_eq!(w("USR1@-1"), Err(WarnSignalError::Invalid));
        assert_eq!(w("USR1@1x"), Err(WarnSignalError::Invalid));
        assert_eq!(w("BOGUS@5"), Err(WarnSignalError::Invalid));
        assert_eq!(w("0@5"), Err(WarnSignalError::Invalid));
        assert_eq!(w("70000"), Err(WarnSignalError::Invalid));
        assert_eq!(w(""), Err(WarnSignalError::Invalid));
        assert_eq!(w("R:USR1@5"), Err(WarnSignalError::Reservation));
        assert_eq!(w("RB:USR1"), Err(WarnSignalError::Reservation));
    }

    #[test]
    fn names_and_numbers() {
        assert_eq!(parse_signal("USR1"), Some(10));
        assert_eq!(parse_signal("SIGUSR1"), Some(10));
        assert_eq!(parse_signal("sigusr2"), Some(12));
        assert_eq!(parse_signal("10"), Some(10));
        assert_eq!(parse_signal("9 "), Some(9));
        assert_eq!(parse_signal("KILL"), Some(9));
        assert_eq!(parse_signal("0"), None);
        assert_eq!(parse_signal("10x"), None);
        assert_eq!(parse_signal("BOGUS"), None);
        assert_eq!(parse_signal(""), None);
    }
}
