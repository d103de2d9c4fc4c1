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

#[cfg(test)]
mod tests {
    use super::*;

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
