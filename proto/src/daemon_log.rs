//! The daemons' logging and pid files, as slurm.conf sets them: `SlurmctldLogFile` /
//! `SlurmdLogFile` (logs appended there instead of stderr, the file opened again on
//! SIGUSR2 for logrotate, as Slurm's daemons do), `SlurmctldDebug` / `SlurmdDebug` (the
//! level; an environment filter or `-v` still wins), `SlurmctldPidFile` / `SlurmdPidFile`.
//! `%n` (the node's name) and `%h` (its host name) in a node daemon's paths, as slurmd.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// A Slurm debug level as the config keeps it (`quiet` ... `debug5`) as a tracing filter.
pub fn level_filter(level: &str) -> &'static str {
    match level {
        "quiet" => "off",
        "fatal" | "error" => "error",
        "debug" => "debug",
        "debug2" | "debug3" | "debug4" | "debug5" => "trace",
        _ => "info",
    }
}

/// The filter a daemon logs with: its environment variable's, else `-v`'s (`verbose` > 0),
/// else the config's level, else `info`.
pub fn filter_for(env_var: &str, verbose: u8, config_level: Option<&str>) -> String {
    if let Some(v) = std::env::var(env_var).ok().filter(|v| !v.trim().is_empty()) {
        return match v.trim() {
            "0" => "info".into(),
            "1" | "true" | "yes" => "debug".into(),
            "2" => "trace".into(),
            other => other.to_string(),
        };
    }
    match verbose {
        0 => config_level.map_or("info", level_filter).to_string(),
        1 => "debug".into(),
        _ => "trace".into(),
    }
}

/// The log file, opened again when asked (logrotate moved it).
#[derive(Debug)]
pub struct LogFile {
    path: PathBuf,
    file: Mutex<File>,
}

fn open_append(path: &Path) -> std::io::Result<File> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
}

impl LogFile {
    pub fn open(path: &Path) -> Result<Arc<LogFile>, String> {
        let file = open_append(path).map_err(|e| {
            format!(
                "cannot open the log file {}: {e} (check the LogFile setting and the folder's permissions)",
                path.display()
            )
        })?;
        Ok(Arc::new(LogFile {
            path: path.to_path_buf(),
            file: Mutex::new(file),
        }))
    }

    /// Opens the path again (SIGUSR2): later lines go to the new file.
    pub fn reopen(&self) -> Result<(), String> {
        let fresh = open_append(&self.path)
            .map_err(|e| format!("cannot open {} again: {e}", self.path.display()))?;
        *self.file.lock().unwrap_or_else(|p| p.into_inner()) = fresh;
        Ok(())
    }
}

/// One log event's writer: the file, locked while the event is written.
pub struct LogFileWriter<'a>(std::sync::MutexGuard<'a, File>);

impl Write for LogFileWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

/// The subscriber's writer for a [`LogFile`].
#[derive(Clone)]
pub struct ToLogFile(pub Arc<LogFile>);

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for ToLogFile {
    type Writer = LogFileWriter<'a>;
    fn make_writer(&'a self) -> Self::Writer {
        LogFileWriter(self.0.file.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// Changes the installed subscriber's filter (`scontrol setdebug`).
type SetFilter = Box<dyn Fn(tracing_subscriber::EnvFilter) -> Result<(), String> + Send + Sync>;

static SET_FILTER: std::sync::OnceLock<SetFilter> = std::sync::OnceLock::new();

/// Sets the running daemon's log level to a Slurm level ([`crate::config::level_name`])
/// until it reads its config again; an error before [`init`].
pub fn set_level(level: &str) -> Result<(), String> {
    let name = crate::config::level_name(level)?;
    let set = SET_FILTER
        .get()
        .ok_or("the daemon's logging is not set up")?;
    set(tracing_subscriber::EnvFilter::new(level_filter(&name)))
}

/// Installs the global subscriber: `filter` (an env-filter text; a bad one is `info`),
/// to `file` when given and it opens, else to stderr (a daemon that cannot open its log
/// says so on stderr and goes on, as Slurm's). Returns the file, for SIGUSR2. The filter
/// can be changed later with [`set_level`].
pub fn init(prog: &str, filter: &str, file: Option<&Path>) -> Option<Arc<LogFile>> {
    let env_filter = tracing_subscriber::EnvFilter::try_new(filter).unwrap_or_else(|e| {
        eprintln!("{prog}: warning: bad log filter {filter:?} ({e}); logging at info");
        tracing_subscriber::EnvFilter::new("info")
    });
    let log = file.and_then(|path| {
        LogFile::open(path)
            .map_err(|e| eprintln!("{prog}: error: {e}; logging to stderr"))
            .ok()
    });
    match log {
        Some(log) => {
            let b = tracing_subscriber::fmt()
                .with_env_filter(env_filter)
                .with_writer(ToLogFile(log.clone()))
                .with_ansi(false)
                .with_filter_reloading();
            let handle = b.reload_handle();
            let _ = SET_FILTER.set(Box::new(move |f| {
                handle.reload(f).map_err(|e| e.to_string())
            }));
            b.init();
            Some(log)
        }
        None => {
            let b = tracing_subscriber::fmt()
                .with_env_filter(env_filter)
                .with_writer(std::io::stderr)
                .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
                .with_filter_reloading();
            let handle = b.reload_handle();
            let _ = SET_FILTER.set(Box::new(move |f| {
                handle.reload(f).map_err(|e| e.to_string())
            }));
            b.init();
            None
        }
    }
}

/// Writes this process's pid to `path` (removed by [`PidFile::drop`]). A failure is the
/// caller's to log: Slurm's daemons go on without one.
#[derive(Debug)]
pub struct PidFile(PathBuf);

impl PidFile {
    pub fn create(path: &Path) -> Result<PidFile, String> {
        std::fs::write(path, format!("{}\n", std::process::id()))
            .map_err(|e| format!("cannot write the pid file {}: {e}", path.display()))?;
        Ok(PidFile(path.to_path_buf()))
    }
}

impl Drop for PidFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A node daemon's path with `%n` (node name) and `%h` (host name) filled in.
pub fn node_path(pattern: &str, node: &str) -> PathBuf {
    let host = host_name().unwrap_or_else(|| node.to_string());
    PathBuf::from(pattern.replace("%n", node).replace("%h", &host))
}

fn host_name() -> Option<String> {
    // The kernel's host name (gethostname(2) reads the same), without unsafe code.
    let h = std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
    Some(h.trim().to_string()).filter(|h| !h.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slurm_levels() {
        assert_eq!(level_filter("quiet"), "off");
        assert_eq!(level_filter("verbose"), "info");
        assert_eq!(level_filter("debug3"), "trace");
        assert_eq!(
            filter_for("GSCHED_TEST_UNSET_VAR", 0, Some("debug")),
            "debug"
        );
        assert_eq!(
            filter_for("GSCHED_TEST_UNSET_VAR", 2, Some("quiet")),
            "trace"
        );
        assert_eq!(filter_for("GSCHED_TEST_UNSET_VAR", 0, None), "info");
    }

    #[test]
    fn the_log_file_is_opened_again_after_a_move_and_pid_files_go_away() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.log");
        let log = LogFile::open(&path).unwrap();
        let w = ToLogFile(log.clone());
        use tracing_subscriber::fmt::MakeWriter;
        writeln!(w.make_writer(), "one").unwrap();
        std::fs::rename(&path, dir.path().join("d.log.1")).unwrap();
        writeln!(w.make_writer(), "two").unwrap();
        log.reopen().unwrap();
        writeln!(w.make_writer(), "three").unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("d.log.1")).unwrap(),
            "one\ntwo\n"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "three\n");
        let pid = dir.path().join("d.pid");
        {
            let _p = PidFile::create(&pid).unwrap();
            assert_eq!(
                std::fs::read_to_string(&pid).unwrap(),
                format!("{}\n", std::process::id())
            );
        }
        assert!(!pid.exists());
        assert_eq!(
            node_path("/var/log/%n.log", "n7"),
            PathBuf::from("/var/log/n7.log")
        );
    }
}
