//! `TaskProlog=` and `TaskEpilog=`: the site's programs run as the job's user around each
//! task (the batch script, and every task of a step), as slurmstepd runs them.
//!
//! The TaskProlog runs *in the task's process*, so that `SLURM_TASK_PID` is the task's pid
//! and the prolog's `print` lines land in the task's output: gsstepd starts the task as
//! `gsstepd --task-prolog <prolog> -- <program> <args>` with the task's identity, cgroup,
//! files and limits already set up ([`crate::sys::install_child_setup`]); that process
//! runs the prolog with its standard output read back, applies what it says ([`directives`]:
//! `export NAME=value`, `unset NAME`, `print text`), and executes the program in its
//! place. A prolog that fails ends the task with its exit status (1 if it was killed), as
//! slurmstepd's task does; the reason goes to the task's standard error.
//!
//! The TaskEpilog runs after the task ended, as the user, in the job's cgroup and working
//! directory, with the task's environment as it was launched (not what the TaskProlog
//! exported into the task, as with slurmstepd, whose prolog changes only the task's copy)
//! plus `SLURM_SCRIPT_CONTEXT=epilog_task`; its output is discarded and a failure is only
//! logged (Slurm waits for it without a limit).

use serde::{Deserialize, Serialize};
use std::ffi::OsString;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The first argument of gsstepd's task mode.
pub const TASK_PROLOG_FLAG: &str = "--task-prolog";

/// The node's `TaskProlog=` and `TaskEpilog=`, handed to gsstepd in the job or step folder.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskScripts {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prolog: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epilog: Option<PathBuf>,
}

impl TaskScripts {
    pub fn from_config(cfg: &gsched_proto::config::Config) -> TaskScripts {
        TaskScripts {
            prolog: cfg.task_prolog.as_ref().map(PathBuf::from),
            epilog: cfg.task_epilog.as_ref().map(PathBuf::from),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.prolog.is_none() && self.epilog.is_none()
    }
}

/// What one line of a TaskProlog's output asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Directive {
    /// `print text`: the text (leading blanks dropped, newline kept) to the task's output.
    Print(Vec<u8>),
    /// `export NAME=value`: everything after `=` to the end of the line is the value.
    Export(String, String),
    /// `unset NAME`.
    Unset(String),
}

/// The directives of a TaskProlog's output, line by line, as slurmstepd reads them: other
/// lines, and `export` lines without `=`, are ignored.
pub fn directives(out: &[u8]) -> Vec<Directive> {
    let mut found = Vec::new();
    let mut rest = out;
    while !rest.is_empty() {
        let (line, next) = match rest.iter().position(|&b| b == b'\n') {
            Some(i) => (&rest[..=i], &rest[i + 1..]),
            None => (rest, &rest[rest.len()..]),
        };
        rest = next;
        let text = line.strip_suffix(b"\n").unwrap_or(line);
        if let Some(p) = line.strip_prefix(b"print ") {
            let start = p
                .iter()
                .position(|b| !b.is_ascii_whitespace() || *b == b'\n')
                .unwrap_or(p.len());
            found.push(Directive::Print(p[start..].to_vec()));
        } else if let Some(e) = text.strip_prefix(b"export ") {
            let e = String::from_utf8_lossy(e);
            let Some((name, value)) = e.trim_start().split_once('=') else {
                continue;
            };
            let name = name.trim_end();
            if !name.is_empty() {
                found.push(Directive::Export(name.to_string(), value.to_string()));
            }
        } else if let Some(u) = text.strip_prefix(b"unset ") {
            let name = String::from_utf8_lossy(u).trim().to_string();
            if !name.is_empty() {
                found.push(Directive::Unset(name));
            }
        }
    }
    found
}

/// gsstepd's task mode (`--task-prolog <prolog> -- <program> <args>`), running as the
/// user with the task's files: the TaskProlog, then the program in this process. Never
/// returns.
pub fn task_main(mut args: impl Iterator<Item = OsString>) -> ! {
    let (Some(prolog), Some(sep), Some(program)) = (args.next(), args.next(), args.next()) else {
        eprintln!("usage: gsstepd --task-prolog <program> -- <task> [args]   (started by gsstepd)");
        std::process::exit(2);
    };
    if sep != "--" {
        eprintln!("usage: gsstepd --task-prolog <program> -- <task> [args]   (started by gsstepd)");
        std::process::exit(2);
    }
    let rest: Vec<OsString> = args.collect();
    let pid = std::process::id().to_string();
    let ran = Command::new(&prolog)
        .env("SLURM_SCRIPT_CONTEXT", "prolog_task")
        .env("SLURM_TASK_PID", &pid)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        // The task's own stderr (`output` would capture it).
        .stderr(Stdio::inherit())
        .output();
    let out = match ran {
        Ok(o) => o,
        Err(e) => {
            eprintln!(
                "gsstepd: error: TaskProlog {}: {e}",
                PathBuf::from(&prolog).display()
            );
            std::process::exit(1);
        }
    };
    match out.status.code() {
        Some(0) => {}
        Some(n) => {
            eprintln!("gsstepd: error: TaskProlog failed status={n}");
            std::process::exit(n);
        }
        None => {
            eprintln!(
                "gsstepd: error: TaskProlog did not exit normally ({})",
                out.status
            );
            std::process::exit(1);
        }
    }
    let mut cmd = Command::new(&program);
    cmd.args(&rest).env("SLURM_TASK_PID", &pid);
    let mut stdout = std::io::stdout().lock();
    for d in directives(&out.stdout) {
        match d {
            Directive::Print(text) => {
                let _ = stdout.write_all(&text);
            }
            Directive::Export(k, v) => {
                cmd.env(k, v);
            }
            Directive::Unset(k) => {
                cmd.env_remove(k);
            }
        }
    }
    let _ = stdout.flush();
    drop(stdout);
    let e = cmd.exec();
    eprintln!(
        "gsstepd: error: execve(): {}: {e}",
        PathBuf::from(&program).display()
    );
    std::process::exit(if e.kind() == std::io::ErrorKind::NotFound {
        127
    } else {
        126
    });
}

/// The task's command: `program args` itself, or through gsstepd's task mode when the
/// node has a TaskProlog (`gsstepd` is this program's path, resolved by the caller while
/// it is still root).
pub fn task_command(
    scripts: &TaskScripts,
    gsstepd: Option<&std::path::Path>,
    program: &std::ffi::OsStr,
    args: &[impl AsRef<std::ffi::OsStr>],
) -> Result<Command, String> {
    let Some(prolog) = &scripts.prolog else {
        let mut c = Command::new(program);
        c.args(args);
        return Ok(c);
    };
    let exe = gsstepd.ok_or("cannot find gsstepd's own path to run the TaskProlog")?;
    let mut c = Command::new(exe);
    c.arg(TASK_PROLOG_FLAG)
        .arg(prolog)
        .arg("--")
        .arg(program)
        .args(args);
    Ok(c)
}

/// Runs the TaskEpilog (if any) after a task: `setup` (built with `/dev/null` for its
/// files) makes it the user's, in the job's cgroup and working directory; `env` is the
/// task's environment. Waits for it; a failure is returned for the log.
pub fn run_epilog(
    scripts: &TaskScripts,
    setup: Option<(crate::sys::ChildSetup, std::os::fd::OwnedFd)>,
    env: &[(String, String)],
) -> Result<(), String> {
    let (Some(path), Some((setup, _report))) = (&scripts.epilog, setup) else {
        return Ok(());
    };
    let mut cmd = Command::new(path);
    cmd.env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("SLURM_SCRIPT_CONTEXT", "epilog_task")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    crate::sys::install_child_setup(&mut cmd, setup);
    match cmd.status() {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => Err(format!(
            "TaskEpilog {} failed: {}",
            path.display(),
            match s.code() {
                Some(n) => format!("status={n}"),
                None => s.to_string(),
            }
        )),
        Err(e) => Err(format!("TaskEpilog {}: {e}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prolog_output_as_slurmstepd_reads_it() {
        let out = b"print   hello world\n\
                    export SCRATCH=/scratch/job 7 = x\n\
                    export  SPACED  =v\n\
                    export NOEQUALS\n\
                    unset  HOME \n\
                    something else\n\
                    print last";
        assert_eq!(
            directives(out),
            vec![
                Directive::Print(b"hello world\n".to_vec()),
                Directive::Export("SCRATCH".into(), "/scratch/job 7 = x".into()),
                Directive::Export("SPACED".into(), "v".into()),
                Directive::Unset("HOME".into()),
                Directive::Print(b"last".to_vec()),
            ]
        );
        assert!(directives(b"").is_empty());
    }
}
