//! The site's programs that a daemon runs as root around jobs (`Prolog=`, `Epilog=`,
//! `EpilogSlurmctld=`), one way for all of them, as Slurm's `run_command`.
//!
//! A setting may be a glob pattern (`/etc/gsched/prolog.d/*`): every match runs, in name
//! order, and the first failure stops the others; a pattern that matches nothing is a
//! failure (as slurmd's). Each program gets exactly the environment given (no `PATH`: Slurm
//! sets no search path either), stdin from /dev/null, its own process group, which is killed
//! at `PrologEpilogTimeout`. Its output is kept only to say why it failed.
//!
//! One synchronous function, for gsstepd (single-threaded, no runtime) and for the daemons'
//! blocking pools: the spawn is std's (no code of ours between fork and exec).

use std::io::{Read, Seek};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Which program runs (`SLURM_SCRIPT_CONTEXT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Context {
    Prolog,
    Epilog,
    EpilogSlurmctld,
    PrologSlurmctld,
}

impl Context {
    pub fn name(self) -> &'static str {
        match self {
            Context::Prolog => "Prolog",
            Context::Epilog => "Epilog",
            Context::EpilogSlurmctld => "EpilogSlurmctld",
            Context::PrologSlurmctld => "PrologSlurmctld",
        }
    }
}

/// What the config says about one of the programs.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ScriptConf {
    /// The program or glob pattern (`Prolog=`/`Epilog=`).
    pub pattern: String,
    /// `PrologEpilogTimeout=` seconds; `None`: wait indefinitely.
    #[serde(default)]
    pub timeout_secs: Option<u32>,
    /// `PrologFlags=Serial`: the lock file that makes the node run one at a time.
    #[serde(default)]
    pub serial_lock: Option<PathBuf>,
}

impl ScriptConf {
    /// `pattern` with the config's `PrologEpilogTimeout` (and `PrologFlags=Serial`'s lock,
    /// a file in `lock_dir`).
    pub fn new(pattern: &str, cfg: &crate::config::Config, lock_dir: &Path) -> ScriptConf {
        ScriptConf {
            pattern: pattern.to_string(),
            timeout_secs: cfg.prolog_epilog_timeout,
            serial_lock: cfg
                .prolog_flags
                .serial
                .then(|| lock_dir.join("prolog_epilog.lock")),
        }
    }
}

/// The longest piece of a failed program's output kept in the message.
const OUTPUT_LIMIT: u64 = 2048;

/// Runs the program(s) of `conf` with `env`; `Err` says which failed and why (its exit
/// status or signal, the timeout, and the end of what it printed). `scratch` is a folder
/// where the output may be kept while it runs (the job folder, the spool dir).
pub fn run(
    conf: &ScriptConf,
    context: Context,
    env: &[(String, String)],
    scratch: &Path,
) -> Result<(), String> {
    let programs = expand(&conf.pattern)?;
    let _serial = match &conf.serial_lock {
        Some(path) => Some(lock(path)?),
        None => None,
    };
    for program in programs {
        run_one(&program, conf.timeout_secs, env, scratch)
            .map_err(|e| format!("{} {}: {e}", context.name(), program.display()))?;
    }
    Ok(())
}

/// The programs of a pattern, in name order; none is an error.
fn expand(pattern: &str) -> Result<Vec<PathBuf>, String> {
    let matches = glob::glob(pattern).map_err(|e| format!("bad pattern {pattern:?}: {e}"))?;
    let mut programs: Vec<PathBuf> = matches.filter_map(Result::ok).collect();
    programs.sort();
    if programs.is_empty() {
        return Err(format!(
            "{pattern}: no such program (install it on this node, or fix the setting)"
        ));
    }
    Ok(programs)
}

/// Holds the node's Prolog/Epilog lock while alive (`PrologFlags=Serial`).
fn lock(path: &Path) -> Result<nix::fcntl::Flock<std::fs::File>, String> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, e)| format!("cannot lock {}: {e}", path.display()))
}

fn run_one(
    program: &Path,
    timeout_secs: Option<u32>,
    env: &[(String, String)],
    scratch: &Path,
) -> Result<(), String> {
    // The output goes to an unlinked file: no pipe to drain while waiting with a timeout.
    let mut out = tempfile::tempfile_in(scratch)
        .or_else(|_| tempfile::tempfile())
        .map_err(|e| format!("cannot make a file for its output: {e}"))?;
    let err_copy = out
        .try_clone()
        .map_err(|e| format!("cannot make a file for its output: {e}"))?;
    let mut child = Command::new(program)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(out.try_clone().map_err(|e| e.to_string())?)
        .stderr(err_copy)
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot run it: {e}"))?;
    let started = Instant::now();
    let limit = timeout_secs.map(|s| Duration::from_secs(u64::from(s)));
    let mut pause = Duration::from_micros(500);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(e) => return Err(format!("cannot wait for it: {e}")),
        }
        if limit.is_some_and(|l| started.elapsed() >= l) {
            // The whole process group: what it started goes too.
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(child.id() as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
            let _ = child.wait();
            return Err(format!(
                "killed after PrologEpilogTimeout={} s{}",
                timeout_secs.unwrap_or(0),
                tail(&mut out)
            ));
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    };
    if status.success() {
        return Ok(());
    }
    let how = match (status.code(), status.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(s)) => format!("killed by signal {s}"),
        _ => status.to_string(),
    };
    Err(format!("{how}{}", tail(&mut out)))
}

/// The end of what the program printed, as `: <text>`, or nothing.
fn tail(out: &mut std::fs::File) -> String {
    let len = out.seek(std::io::SeekFrom::End(0)).unwrap_or(0);
    let from = len.saturating_sub(OUTPUT_LIMIT);
    if out.seek(std::io::SeekFrom::Start(from)).is_err() {
        return String::new();
    }
    let mut buf = Vec::new();
    let _ = out.take(OUTPUT_LIMIT).read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf);
    let text = text.trim();
    if text.is_empty() {
        String::new()
    } else {
        format!(": {}", text.replace('\n', " | "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn program(dir: &Path, name: &str, body: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    fn conf(pattern: &Path) -> ScriptConf {
        ScriptConf {
            pattern: pattern.display().to_string(),
            timeout_secs: None,
            serial_lock: None,
        }
    }

    #[test]
    fn every_match_runs_in_name_order_with_exactly_the_environment_given() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("prolog.d");
        std::fs::create_dir(&d).unwrap();
        let log = dir.path().join("log");
        let l = log.display();
        program(
            &d,
            "20-second",
            &format!("echo \"2 $SLURM_JOB_ID ${{HOME:-nohome}}\" >> {l}"),
        );
        program(&d, "10-first", &format!("echo \"1 $SLURM_JOB_ID\" >> {l}"));
        let env = vec![("SLURM_JOB_ID".to_string(), "7".to_string())];
        run(&conf(&d.join("*")), Context::Prolog, &env, dir.path()).unwrap();
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "1 7\n2 7 nohome\n");
    }

    #[test]
    fn a_failure_says_which_program_and_what_it_printed_and_stops_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("ran");
        program(dir.path(), "a", "echo no scratch space >&2; exit 3");
        program(dir.path(), "b", &format!("touch {}", marker.display()));
        let e = run(
            &conf(&dir.path().join("[ab]")),
            Context::Epilog,
            &[],
            dir.path(),
        )
        .unwrap_err();
        assert!(e.starts_with("Epilog "), "{e}");
        assert!(e.contains("/a: exit status 3: no scratch space"), "{e}");
        assert!(!marker.exists());
    }

    #[test]
    fn nothing_to_run_and_a_timeout_are_failures() {
        let dir = tempfile::tempdir().unwrap();
        let e = run(
            &conf(&dir.path().join("missing")),
            Context::Prolog,
            &[],
            dir.path(),
        )
        .unwrap_err();
        assert!(e.contains("no such program"), "{e}");
        let child_pid = dir.path().join("child");
        let slow = program(
            dir.path(),
            "slow",
            &format!("sleep 30 & echo $! > {}; wait", child_pid.display()),
        );
        let mut c = conf(&slow);
        c.timeout_secs = Some(1);
        let t = Instant::now();
        let e = run(&c, Context::Prolog, &[], dir.path()).unwrap_err();
        assert!(e.contains("killed after PrologEpilogTimeout=1 s"), "{e}");
        assert!(t.elapsed() < Duration::from_secs(10));
        // Its process group went with it.
        let pid: i32 = std::fs::read_to_string(&child_pid)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let alive =
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "));
        assert!(!alive, "the program's child {pid} survived the timeout");
    }

    #[test]
    fn serial_runs_hold_the_node_lock() {
        let dir = tempfile::tempdir().unwrap();
        let lock_path = dir.path().join("lock");
        let held = lock(&lock_path).unwrap();
        let p = program(dir.path(), "p", "exit 0");
        let mut c = conf(&p);
        c.serial_lock = Some(lock_path.clone());
        let (tx, rx) = std::sync::mpsc::channel();
        let scratch = dir.path().to_path_buf();
        let t = std::thread::spawn(move || {
            tx.send(run(&c, Context::Prolog, &[], &scratch)).unwrap();
        });
        assert!(
            rx.recv_timeout(Duration::from_millis(300)).is_err(),
            "ran while locked"
        );
        drop(held);
        assert!(rx.recv_timeout(Duration::from_secs(10)).unwrap().is_ok());
        t.join().unwrap();
    }
}
