//! What gsnoded adds to a launch request before gsstepd runs it: the node-specific Slurm
//! variables of the batch step (docs/slurm-compat.md §3), and the stdio file names with their
//! patterns expanded (`slurm-%j.out`) and made absolute.
//!
//! Both are computed here, in gsnoded, from the request alone, so the job environment is
//! exactly the request's plus these variables: nothing of gsnoded's own environment reaches
//! the job, and gsstepd receives ready-to-open paths.

use gsched_proto::api::LaunchRequest;
use gsched_proto::patterns::{expand_stdio, resolve_output_path, PatternContext};
use std::path::{Path, PathBuf};

/// Sets `key` in an ordered environment, replacing an earlier value.
pub fn set_var(env: &mut Vec<(String, String)>, key: &str, value: impl Into<String>) {
    let value = value.into();
    env.retain(|(k, _)| k != key);
    env.push((key.to_string(), value));
}

/// The final environment of the batch step on `node`: the request's environment (which
/// already holds the job-wide `SLURM_*` variables) plus the node-specific ones.
///
/// `SLURM_TASK_PID` is not set: the shell's pid is only known after the fork, and gsstepd
/// execs the script directly.
pub fn job_environment(
    req: &LaunchRequest,
    node: &str,
    config_path: &Path,
) -> Vec<(String, String)> {
    let mut env = req.environment.clone();
    set_var(&mut env, "SLURMD_NODENAME", node);
    set_var(&mut env, "SLURM_CPUS_ON_NODE", req.cpus.to_string());
    set_var(&mut env, "SLURM_NODEID", req.node_index.to_string());
    set_var(&mut env, "SLURM_PROCID", "0");
    set_var(&mut env, "SLURM_LOCALID", "0");
    set_var(&mut env, "SLURM_GTIDS", "0");
    set_var(&mut env, "SLURM_TOPOLOGY_ADDR", node);
    set_var(&mut env, "SLURM_TOPOLOGY_ADDR_PATTERN", "node");
    set_var(&mut env, "ENVIRONMENT", "BATCH");
    set_var(&mut env, "HOSTNAME", node);
    set_var(
        &mut env,
        "SLURM_CONF",
        config_path.to_string_lossy().into_owned(),
    );
    env
}

/// Resolved stdio files of the batch step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StdioPaths {
    pub stdout: PathBuf,
    /// The same path as `stdout` when the job gave no `-e`.
    pub stderr: PathBuf,
    pub stdin: PathBuf,
}

fn env_number(req: &LaunchRequest, key: &str) -> Option<u32> {
    req.env(key).and_then(|v| v.trim().parse().ok())
}

fn given(p: &Option<String>) -> Option<&str> {
    p.as_deref().filter(|s| !s.is_empty())
}

/// Expands the request's `-o`/`-e`/`-i` patterns like Slurm's batch step: default
/// `slurm-%j.out` (`slurm-%A_%a.out` for array tasks) in the working directory, stderr into
/// the stdout file unless `-e` was given, stdin from `/dev/null` unless `-i` was given.
pub fn stdio_paths(req: &LaunchRequest, node: &str) -> StdioPaths {
    let array_task_id = env_number(req, "SLURM_ARRAY_TASK_ID");
    let array_job_id = array_task_id.and(env_number(req, "SLURM_ARRAY_JOB_ID"));
    let ctx = PatternContext {
        job_id: req.job_id,
        array_job_id,
        array_task_id,
        step: None,
        user: &req.user_name,
        job_name: &req.name,
        node,
        node_index: req.node_index,
        task_id: 0,
        restart_count: env_number(req, "SLURM_RESTART_COUNT").unwrap_or(0),
    };
    let work_dir = Path::new(&req.work_dir);
    let resolve = |pattern: &str| resolve_output_path(&expand_stdio(pattern, &ctx), work_dir);
    let default_out = if array_task_id.is_some() {
        "slurm-%A_%a.out"
    } else {
        "slurm-%j.out"
    };
    let stdout = resolve(given(&req.stdout).unwrap_or(default_out));
    let stderr = match given(&req.stderr) {
        Some(p) => resolve(p),
        None => stdout.clone(),
    };
    let stdin = match given(&req.stdin) {
        Some(p) => resolve(p),
        None => PathBuf::from("/dev/null"),
    };
    StdioPaths {
        stdout,
        stderr,
        stdin,
    }
}

/// Checks what the kernel and gsstepd cannot take: NUL bytes in strings that become C
/// strings, `=` in variable names, a relative working directory. Returns the problem.
pub fn check_request(req: &LaunchRequest) -> Result<(), String> {
    if req.job_id == 0 {
        return Err("job id 0 is not a valid job id".into());
    }
    if !Path::new(&req.work_dir).is_absolute() {
        return Err(format!(
            "the working directory {:?} is not absolute; the controller must send an absolute path",
            req.work_dir
        ));
    }
    let nul = |what: &str, s: &str| {
        if s.contains('\0') {
            Err(format!("{what} contains a NUL byte"))
        } else {
            Ok(())
        }
    };
    nul("the working directory", &req.work_dir)?;
    nul("the user name", &req.user_name)?;
    for (what, p) in [
        ("the output pattern", &req.stdout),
        ("the error pattern", &req.stderr),
        ("the input pattern", &req.stdin),
    ] {
        if let Some(p) = p {
            nul(what, p)?;
        }
    }
    for a in &req.argv {
        nul("a script argument", a)?;
    }
    for (k, v) in &req.environment {
        if k.is_empty() || k.contains('=') || k.contains('\0') {
            return Err(format!("invalid environment variable name {k:?}"));
        }
        nul(&format!("environment variable {k}"), v)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> LaunchRequest {
        LaunchRequest {
            job_id: 42,
            start_time: 1_767_225_600,
            name: "train".into(),
            uid: 1000,
            gid: 1000,
            user_name: "alice".into(),
            script: "#!/bin/sh\n".into(),
            argv: vec![],
            work_dir: "/home/alice/run".into(),
            stdout: None,
            stderr: None,
            stdin: None,
            open_mode: None,
            environment: vec![
                ("PATH".into(), "/usr/bin:/bin".into()),
                ("SLURM_JOB_ID".into(), "42".into()),
                ("HOSTNAME".into(), "login1".into()),
            ],
            cpus: 8,
            mem_mb: 1000,
            node_index: 2,
            time_limit: None,
            gpus: Vec::new(),
            prolog_env: Vec::new(),
        }
    }

    fn get<'a>(env: &'a [(String, String)], k: &str) -> Option<&'a str> {
        env.iter().find(|(ek, _)| ek == k).map(|(_, v)| v.as_str())
    }

    #[test]
    fn node_variables_are_added_and_win() {
        let env = job_environment(&request(), "n3", Path::new("/etc/gsched/gsched.conf"));
        for (k, v) in [
            ("SLURMD_NODENAME", "n3"),
            ("SLURM_CPUS_ON_NODE", "8"),
            ("SLURM_NODEID", "2"),
            ("SLURM_PROCID", "0"),
            ("SLURM_LOCALID", "0"),
            ("SLURM_GTIDS", "0"),
            ("SLURM_TOPOLOGY_ADDR", "n3"),
            ("SLURM_TOPOLOGY_ADDR_PATTERN", "node"),
            ("ENVIRONMENT", "BATCH"),
            ("HOSTNAME", "n3"),
            ("SLURM_CONF", "/etc/gsched/gsched.conf"),
            ("PATH", "/usr/bin:/bin"),
            ("SLURM_JOB_ID", "42"),
        ] {
            assert_eq!(get(&env, k), Some(v), "{k}");
        }
        // Each name once.
        let mut names: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
        let n = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), n);
        assert_eq!(n, 3 + 10);
    }

    #[test]
    fn daemon_environment_does_not_leak() {
        // The test process certainly has variables the request lacks (HOME, CARGO_*...).
        let env = job_environment(&request(), "n3", Path::new("/c"));
        for (k, _) in std::env::vars() {
            let in_request = request().environment.iter().any(|(rk, _)| *rk == k);
            let added = env.iter().any(|(ek, _)| *ek == k);
            if added && !in_request {
                assert!(
                    [
                        "SLURMD_NODENAME",
                        "SLURM_CPUS_ON_NODE",
                        "SLURM_NODEID",
                        "SLURM_PROCID",
                        "SLURM_LOCALID",
                        "SLURM_GTIDS",
                        "SLURM_TOPOLOGY_ADDR",
                        "SLURM_TOPOLOGY_ADDR_PATTERN",
                        "ENVIRONMENT",
                        "HOSTNAME",
                        "SLURM_CONF"
                    ]
                    .contains(&k.as_str()),
                    "{k} leaked"
                );
            }
        }
    }

    #[test]
    fn default_stdio() {
        let p = stdio_paths(&request(), "n3");
        assert_eq!(p.stdout, PathBuf::from("/home/alice/run/slurm-42.out"));
        assert_eq!(p.stderr, p.stdout);
        assert_eq!(p.stdin, PathBuf::from("/dev/null"));
    }

    #[test]
    fn patterns_are_expanded_and_resolved() {
        let mut r = request();
        r.stdout = Some("logs/%x-%j-%N-%n.out".into());
        r.stderr = Some("/tmp/%u.%4j.err".into());
        r.stdin = Some("in-%j".into());
        let p = stdio_paths(&r, "n3");
        assert_eq!(
            p.stdout,
            PathBuf::from("/home/alice/run/logs/train-42-n3-2.out")
        );
        assert_eq!(p.stderr, PathBuf::from("/tmp/alice.0042.err"));
        assert_eq!(p.stdin, PathBuf::from("/home/alice/run/in-42"));
    }

    #[test]
    fn array_tasks_default_to_array_name() {
        let mut r = request();
        r.environment
            .push(("SLURM_ARRAY_JOB_ID".into(), "40".into()));
        r.environment
            .push(("SLURM_ARRAY_TASK_ID".into(), "3".into()));
        let p = stdio_paths(&r, "n3");
        assert_eq!(p.stdout, PathBuf::from("/home/alice/run/slurm-40_3.out"));
        r.stdout = Some("%A.%a.%j".into());
        assert_eq!(
            stdio_paths(&r, "n3").stdout,
            PathBuf::from("/home/alice/run/40.3.42")
        );
    }

    #[test]
    fn empty_patterns_mean_default() {
        let mut r = request();
        r.stdout = Some(String::new());
        r.stderr = Some(String::new());
        let p = stdio_paths(&r, "n3");
        assert_eq!(p.stdout, PathBuf::from("/home/alice/run/slurm-42.out"));
        assert_eq!(p.stderr, p.stdout);
    }

    #[test]
    fn request_checks() {
        assert!(check_request(&request()).is_ok());
        let mut r = request();
        r.work_dir = "relative".into();
        assert!(check_request(&r).unwrap_err().contains("not absolute"));
        let mut r = request();
        r.environment.push(("A=B".into(), "x".into()));
        assert!(check_request(&r).unwrap_err().contains("A=B"));
        let mut r = request();
        r.argv.push("a\0b".into());
        assert!(check_request(&r).unwrap_err().contains("NUL"));
        let mut r = request();
        r.job_id = 0;
        assert!(check_request(&r).is_err());
    }
}
