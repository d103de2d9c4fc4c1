//! What every command shares: its name as invoked, its `main`, the version line,
//! Slurm-style error printing and exit codes, the config and the API client, the
//! `-i/--iterate` loop and `-S` sorting, and the small formatting helpers Slurm's commands
//! have in common (field padding and truncation, dates).

use crate::getopt::GetoptError;
use gsched_proto::client::{Client, ClientError};
use gsched_proto::config::{resolve_config_path, Config};
use gsched_proto::units;
use std::io::Write;

/// The command's name as Slurm prints it in messages: the basename of argv[0], so that a
/// `sbatch` symlink to `gsbatch` prints `sbatch: error: ...`.
pub fn prog_name(argv0: &str) -> String {
    let base = basename(argv0);
    if base.is_empty() {
        "gsched".to_string()
    } else {
        base.to_string()
    }
}

/// The last component of a path (`dir/job.sh` gives `job.sh`).
pub fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// A command's `main`: `run` gets the name to print in messages (from argv[0], else
/// `name`) and the arguments after argv[0]; a failure is printed and gives the exit status.
pub fn run_main(
    args: &[String],
    name: &str,
    run: impl FnOnce(&str, &[String]) -> Result<i32, Fail>,
) -> i32 {
    let prog = prog_name(args.first().map_or(name, String::as_str));
    let rest = args.get(1..).unwrap_or_default();
    match run(&prog, rest) {
        Ok(code) => code,
        Err(f) => report(&f),
    }
}

/// What a command line asks for: a text to print (`--help`, `--usage`, `-V`), or a run.
#[derive(Debug)]
pub enum Parsed<T> {
    Print(String),
    Run(T),
}

impl<T> Parsed<T> {
    /// The run, or `None` once the text to print is on stdout.
    pub fn or_print(self) -> Option<T> {
        match self {
            Parsed::Print(s) => {
                out(&s);
                None
            }
            Parsed::Run(t) => Some(t),
        }
    }
}

/// The text an informational option prints: `--help`, `--usage`, `-V/--version`.
pub fn info_text(id: &str, help: fn() -> String, usage: fn() -> String) -> Option<String> {
    match id {
        "help" => Some(help()),
        "usage" => Some(usage()),
        "version" => Some(format!("{}\n", version_line())),
        _ => None,
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

    /// `<prog>: error: option <what> is not supported by gsched yet`, exit 1.
    pub fn not_supported(prog: &str, what: &str) -> Fail {
        Fail::error(
            prog,
            format!("option {what} is not supported by gsched yet"),
        )
    }

    /// A getopt error followed by `Try "<prog> --help" for more information`.
    pub fn usage(prog: &str, e: &GetoptError, code: i32) -> Fail {
        Fail {
            code,
            lines: vec![
                e.message(prog),
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

/// An environment variable of this process (the `env` the commands' parsers take).
pub fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Refuses the first of `vars` (a variable, the option it stands for) that is set:
/// `option --x (from VAR) is not supported by gsched yet`.
pub fn refuse_env(
    prog: &str,
    env: &dyn Fn(&str) -> Option<String>,
    vars: &[(&str, &str)],
) -> Result<(), Fail> {
    for (var, opt) in vars {
        if env(var).is_some() {
            return Err(Fail::not_supported(prog, &format!("{opt} (from {var})")));
        }
    }
    Ok(())
}

/// Loads the config named by `$GSCHED_CONF`, else `/etc/gsched/gsched.conf` (Slurm's
/// commands take no config option).
pub fn load_config() -> Result<Config, String> {
    let path = resolve_config_path(None);
    Config::load(&path).map_err(|e| e.to_string())
}

/// The API client for the controller named in the config. A refused connection is tried
/// again for `MessageTimeout` seconds, as Slurm's commands do (`slurm_open_controller_conn`):
/// a controller that is restarting is waited for rather than reported down.
pub fn client_for(cfg: &Config) -> Result<Client, String> {
    let auth = gsched_auth::from_config(cfg).map_err(|e| e.to_string())?;
    Ok(Client::new(
        format!("{}:{}", cfg.ctld_host.connect_addr(), cfg.ctld_port),
        auth,
    )
    .with_connect_patience(std::time::Duration::from_secs(cfg.message_timeout.into())))
}

/// Config and client together, with `<prog>: error: ...` on failure; then `-M/--clusters`
/// (if given) is checked against the configured cluster.
pub fn connect(prog: &str, clusters: Option<&str>) -> Result<(Config, Client), Fail> {
    let cfg = load_config().map_err(|e| Fail::error(prog, e))?;
    let client = client_for(&cfg).map_err(|e| Fail::error(prog, e))?;
    if let Some(c) = clusters {
        check_clusters(prog, c, &cfg.cluster_name)?;
    }
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

/// `(null)` for an empty value, as Slurm prints unset strings.
pub fn or_null(s: &str) -> &str {
    if s.is_empty() {
        "(null)"
    } else {
        s
    }
}

/// A user or group name, or its number when the name is unknown (empty).
pub fn name_or_id(name: &str, id: u32) -> String {
    if name.is_empty() {
        id.to_string()
    } else {
        name.to_string()
    }
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
    let days = gsched_proto::units::days_from_civil(y, m, d);
    let wd = DAYS[days.rem_euclid(7) as usize];
    let mon = MONTHS[(m.clamp(1, 12) - 1) as usize];
    format!("{wd} {mon} {d:02} {clock} {y}")
}

/// The current time in epoch seconds.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// The `-i/--iterate` loop of squeue and sinfo: `once` runs (after the date line when
/// `dated`), and with a period again every `period` seconds, after a blank line.
pub fn repeat(
    period: Option<u64>,
    dated: bool,
    mut once: impl FnMut() -> Result<(), Fail>,
) -> Result<(), Fail> {
    loop {
        if dated {
            out(&format!("{}\n", ctime_str(now())));
        }
        once()?;
        match period {
            Some(secs) => {
                out("\n");
                std::thread::sleep(std::time::Duration::from_secs(secs));
            }
            None => return Ok(()),
        }
    }
}

/// The keys of a `-S` list, last first (the order in which stable sorts make the first key
/// the most significant), each with the character before it (`-` for descending).
/// Characters in `marks` are not keys.
pub fn sort_keys(spec: &str, marks: &[char]) -> Vec<(char, Option<char>)> {
    let chars: Vec<char> = spec.chars().collect();
    (0..chars.len())
        .rev()
        .filter(|&i| !marks.contains(&chars[i]))
        .map(|i| (chars[i], i.checked_sub(1).map(|b| chars[b])))
        .collect()
}

/// A stable sort by `key`, descending with `rev`. Each key is computed once (the keys of
/// listings are often cloned strings).
pub fn sort_by<T, K: Ord>(v: &mut [T], rev: bool, key: impl Fn(&T) -> K) {
    if rev {
        v.sort_by_cached_key(|x| std::cmp::Reverse(key(x)));
    } else {
        v.sort_by_cached_key(key);
    }
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
    fn main_prog_and_rest() {
        let a = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let seen = |args: &[String]| {
            let mut got = None;
            let code = run_main(args, "squeue", |prog, rest| {
                got = Some((prog.to_string(), rest.to_vec()));
                Ok(3)
            });
            (code, got.unwrap())
        };
        assert_eq!(seen(&a(&[])), (3, ("squeue".into(), vec![])));
        assert_eq!(
            seen(&a(&["/usr/bin/gsqueue", "-h"])),
            (3, ("gsqueue".into(), a(&["-h"])))
        );
        let code = run_main(&a(&["x"]), "x", |p, _| Err(Fail::error(p, "no")));
        assert_eq!(code, 1);
        assert_eq!(
            info_text("version", String::new, String::new).as_deref(),
            Some("slurm 22.05.8\n")
        );
        assert_eq!(info_text("verbose", String::new, String::new), None);
    }

    #[test]
    fn sort_keys_last_first() {
        assert_eq!(
            sort_keys("P,-t,#N", &[',', '#', '+', '-']),
            vec![('N', Some('#')), ('t', Some('-')), ('P', None)]
        );
        let mut v = vec![(1, 'b'), (2, 'a'), (1, 'a')];
        sort_by(&mut v, true, |x| x.0);
        assert_eq!(v, vec![(2, 'a'), (1, 'b'), (1, 'a')]);
        sort_by(&mut v, false, |x| x.1);
        assert_eq!(v, vec![(2, 'a'), (1, 'a'), (1, 'b')]);
    }

    #[test]
    fn unset_values() {
        assert_eq!(or_null(""), "(null)");
        assert_eq!(or_null("x"), "x");
        assert_eq!(name_or_id("", 7), "7");
        assert_eq!(name_or_id("bob", 7), "bob");
        let env = |k: &str| (k == "B").then(String::new);
        assert!(refuse_env("p", &env, &[("A", "--a")]).is_ok());
        let e = refuse_env("p", &env, &[("A", "--a"), ("B", "--b")]).unwrap_err();
        assert_eq!(
            e.lines,
            vec!["p: error: option --b (from B) is not supported by gsched yet"]
        );
    }

    #[test]
    fn clusters() {
        assert!(check_clusters("sbatch", "Cluster", "cluster").is_ok());
        assert!(check_clusters("sbatch", "all", "cluster").is_ok());
        let e = check_clusters("sbatch", "other", "cluster").unwrap_err();
        assert!(e.lines[0].starts_with("sbatch: error: 'other' can't be reached"));
    }
}
