//! What every command shares: its name as invoked, the version line, Slurm-style error
//! printing and exit codes, the config and the API client, and the small formatting
//! helpers Slurm's commands have in common (field padding and truncation, dates).

use gsched_proto::client::{Client, ClientError};
use gsched_proto::config::{resolve_config_path, Config};
use gsched_proto::units;
use std::io::Write;

/// The command's name as Slurm prints it in messages: the basename of argv[0], so that a
/// `sbatch` symlink to `gsbatch` prints `sbatch: error: ...`.
pub fn prog_name(argv0: &str) -> String {
    let base = argv0.rsplit('/').next().unwrap_or(argv0);
    if base.is_empty() {
        "gsched".to_string()
    } else {
        base.to_string()
    }
}

/// The line every `-V/--version` prints; tools parse `slurm X.Y.Z`.
pub fn version_line() -> String {
    format!("slurm {}", gsched_proto::api::SLURM_COMPAT_VERSION)
}

/// A command that stops: the lines to print on stderr (complete, with their prefixes) and
/// the exit status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fail {
    pub code: i32,
    pub lines: Vec<String>,
}

impl Fail {
    /// `<prog>: error: <msg>`, exit 1.
    pub fn error(prog: &str, msg: impl AsRef<str>) -> Fail {
        Fail {
            code: 1,
            lines: vec![format!("{prog}: error: {}", msg.as_ref())],
        }
    }

    /// Several `<prog>: error: ...` lines, exit 1.
    pub fn errors(prog: &str, msgs: &[&str]) -> Fail {
        Fail {
            code: 1,
            lines: msgs.iter().map(|m| format!("{prog}: error: {m}")).collect(),
        }
    }

    /// Lines printed as they are.
    pub fn raw(code: i32, lines: Vec<String>) -> Fail {
        Fail { code, lines }
    }

    pub fn with_code(mut self, code: i32) -> Fail {
        self.code = code;
        self
    }

    /// A getopt error followed by `Try "<prog> --help" for more information`.
    pub fn usage(prog: &str, getopt_msg: String, code: i32) -> Fail {
        Fail {
            code,
            lines: vec![
                getopt_msg,
                format!("Try \"{prog} --help\" for more information"),
            ],
        }
    }
}

/// Prints a failure's lines on stderr and returns its exit status.
pub fn report(f: &Fail) -> i32 {
    let mut err = std::io::stderr().lock();
    for l in &f.lines {
        let _ = writeln!(err, "{l}");
    }
    f.code
}

/// Writes to stdout, ignoring a closed pipe (`gsqueue | head`).
pub fn out(s: &str) {
    let mut o = std::io::stdout().lock();
    let _ = o.write_all(s.as_bytes());
    let _ = o.flush();
}

/// Writes one line to stderr.
pub fn err_line(s: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{s}");
}

/// Arguments as strings (non-UTF-8 bytes become U+FFFD).
pub fn args_to_strings(args: impl IntoIterator<Item = std::ffi::OsString>) -> Vec<String> {
    args.into_iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}

/// Loads the config named by `$GSCHED_CONF`, else `/etc/gsched/gsched.conf` (Slurm's
/// commands take no config option).
pub fn load_config() -> Result<Config, String> {
    let path = resolve_config_path(None);
    Config::load(&path).map_err(|e| e.to_string())
}

/// The API client for the controller named in the config.
pub fn client_for(cfg: &Config) -> Result<Client, String> {
    let auth = gsched_auth::by_name(&cfg.auth_type.to_string()).map_err(|e| e.to_string())?;
    Ok(Client::new(
        format!("{}:{}", cfg.ctld_host.connect_addr(), cfg.ctld_port),
        auth,
    ))
}

/// Config and client together, with `<prog>: error: ...` on failure.
pub fn connect(prog: &str) -> Result<(Config, Client), Fail> {
    let cfg = load_config().map_err(|e| Fail::error(prog, e))?;
    let client = client_for(&cfg).map_err(|e| Fail::error(prog, e))?;
    Ok((cfg, client))
}

/// Slurm's `slurm_strerror` text for a failed call.
pub fn client_error_text(e: &ClientError) -> String {
    match e {
        ClientError::Connect { .. } => {
            "Unable to contact slurm controller (connect failure)".to_string()
        }
        ClientError::Io(_) => "Socket timed out on send/recv operation".to_string(),
        ClientError::Api(a) => a.message.clone(),
        ClientError::Protocol(m) => format!("Unexpected message received: {m}"),
        ClientError::Auth(m) => format!("Protocol authentication error: {m}"),
    }
}

/// An environment variable that Slurm treats as a flag is "on" when it is empty, `yes`, or
/// a non-zero number.
pub fn env_flag_on(val: &str) -> bool {
    val.is_empty()
        || val.eq_ignore_ascii_case("yes")
        || val.parse::<i64>().map(|n| n != 0).unwrap_or(false)
}

/// Splits a comma list, dropping empty items (`strtok` semantics).
pub fn split_list(s: &str) -> Vec<String> {
    s.split(',')
        .filter(|x| !x.is_empty())
        .map(str::to_string)
        .collect()
}

/// The uid of a user given by name or number, as Slurm's `uid_from_string` resolves it.
pub fn resolve_uid(s: &str) -> Option<u32> {
    if let Some(u) = gsched_proto::users::user_by_name(s) {
        return Some(u.uid);
    }
    s.parse::<u32>().ok()
}

/// The real uid of this process.
pub fn current_uid() -> u32 {
    gsched_proto::users::current_ids().0
}

/// Slurm's `_print_str`: pads to `width` (right-justified with `right`); a left-justified
/// value is always cut to `width`, a right-justified one only with `cut`. Width 0 prints the
/// value as it is.
pub fn print_field(s: &str, width: usize, right: bool, cut: bool) -> String {
    if width == 0 {
        return s.to_string();
    }
    let len = s.chars().count();
    if right {
        if len >= width {
            if cut {
                s.chars().take(width).collect()
            } else {
                s.to_string()
            }
        } else {
            format!("{}{s}", " ".repeat(width - len))
        }
    } else if len >= width {
        s.chars().take(width).collect()
    } else {
        format!("{s}{}", " ".repeat(width - len))
    }
}

/// Slurm's `slurm_make_time_str`: `YYYY-MM-DDTHH:MM:SS` local time, `Unknown` for 0.
pub fn make_time_str(t: i64) -> String {
    if t == 0 {
        "Unknown".to_string()
    } else {
        units::format_timestamp(t)
    }
}

/// `Some(t)` as [`make_time_str`], `None` as `Unknown`.
pub fn opt_time_str(t: Option<i64>) -> String {
    make_time_str(t.unwrap_or(0))
}

/// The date line `squeue -i`, `sinfo -l` print: `Thu Jan 01 00:00:00 2026` (local time).
pub fn ctime_str(t: i64) -> String {
    // format_timestamp gives local `YYYY-MM-DDTHH:MM:SS`; the weekday follows from the date.
    let ts = units::format_timestamp(t);
    let (date, clock) = ts.split_once('T').unwrap_or((&ts, "00:00:00"));
    let mut parts = date.splitn(3, '-');
    let y: i64 = parts.next().and_then(|x| x.parse().ok()).unwrap_or(1970);
    let m: u32 = parts.next().and_then(|x| x.parse().ok()).unwrap_or(1);
    let d: u32 = parts.next().and_then(|x| x.parse().ok()).unwrap_or(1);
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = days_from_civil(y, m, d);
    let wd = DAYS[days.rem_euclid(7) as usize];
    let mon = MONTHS[(m.clamp(1, 12) - 1) as usize];
    format!("{wd} {mon} {d:02} {clock} {y}")
}

fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The current time in epoch seconds.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// Checks `-M/--clusters`: the local cluster (any case) or `all` are fine.
pub fn check_clusters(prog: &str, value: &str, local: &str) -> Result<(), Fail> {
    for c in split_list(value) {
        if !(c.eq_ignore_ascii_case(local) || c.eq_ignore_ascii_case("all")) {
            return Err(Fail::error(
                prog,
                format!(
                    "'{c}' can't be reached now, or it is an invalid entry for --cluster.  \
                     Use 'sacctmgr list clusters' to see available clusters."
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prog_is_basename() {
        assert_eq!(prog_name("/usr/bin/sbatch"), "sbatch");
        assert_eq!(prog_name("gsqueue"), "gsqueue");
    }

    #[test]
    fn version_is_slurms() {
        assert_eq!(version_line(), "slurm 22.05.8");
    }

    #[test]
    fn field_padding_and_cutting() {
        assert_eq!(print_field("abc", 5, false, true), "abc  ");
        assert_eq!(print_field("abc", 5, true, true), "  abc");
        assert_eq!(print_field("abcdef", 4, false, false), "abcd");
        assert_eq!(print_field("abcdef", 4, true, true), "abcd");
        assert_eq!(print_field("abcdef", 4, true, false), "abcdef");
        assert_eq!(print_field("abcdef", 0, true, true), "abcdef");
    }

    #[test]
    fn flags_from_env() {
        assert!(env_flag_on(""));
        assert!(env_flag_on("yes"));
        assert!(env_flag_on("2"));
        assert!(!env_flag_on("0"));
        assert!(!env_flag_on("no"));
    }

    #[test]
    fn ctime_has_weekday() {
        let s = ctime_str(0);
        // 1970-01-01 was a Thursday in UTC; a negative UTC offset gives Wednesday.
        assert!(
            s.starts_with("Thu Jan 01") || s.starts_with("Wed Dec 31"),
            "{s}"
        );
        assert!(s.ends_with("1970") || s.ends_with("1969"));
    }

    #[test]
    fn clusters() {
        assert!(check_clusters("sbatch", "Cluster", "cluster").is_ok());
        assert!(check_clusters("sbatch", "all", "cluster").is_ok());
        let e = check_clusters("sbatch", "other", "cluster").unwrap_err();
        assert!(e.lines[0].starts_with("sbatch: error: 'other' can't be reached"));
    }
}
