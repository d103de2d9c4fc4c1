//! `Prolog=` and `Epilog=`: the site's programs that a node runs as root around a job.
//!
//! Where they run (as Slurm's slurmd by default): the Prolog before a job's first process on
//! a node — gsstepd runs it before the batch script, gsnoded before the job's first step on
//! each of its other nodes — and the Epilog on every node of the job once its processes there
//! are gone, run by gsnoded when the controller asks (`node/epilog`); the node's part of the
//! job stays allocated until the Epilog has answered.
//!
//! The programs run as `gsched_proto::site_program` says (glob patterns, timeout, the
//! `Serial` lock); this module adds the node's side: which of its programs a job gets and
//! the variables a node sets itself.

use std::path::Path;

pub use gsched_proto::site_program::{run, Context, ScriptConf};

/// The node's `Prolog` or `Epilog` from its config; `None` when not set.
pub fn node_script(
    cfg: &gsched_proto::config::Config,
    context: Context,
    spool: &Path,
) -> Option<ScriptConf> {
    let pattern = match context {
        Context::Prolog => cfg.prolog.as_deref()?,
        Context::Epilog => cfg.epilog.as_deref()?,
        Context::EpilogSlurmctld | Context::PrologSlurmctld => return None,
    };
    Some(ScriptConf::new(pattern, cfg, spool))
}

/// Who a job is, for the variables a node sets itself when the controller sent none.
#[derive(Debug, Clone)]
pub struct JobIds {
    pub job_id: gsched_proto::job::JobId,
    /// uid, gid and user name, when the request carries them.
    pub user: Option<(u32, u32, String)>,
}

impl JobIds {
    pub fn of_launch(r: &gsched_proto::api::LaunchRequest) -> JobIds {
        JobIds {
            job_id: r.job_id,
            user: Some((r.uid, r.gid, r.user_name.clone())),
        }
    }

    pub fn of_step(r: &gsched_proto::step::StepLaunchRequest) -> JobIds {
        JobIds {
            job_id: r.job_id,
            user: Some((r.uid, r.gid, r.user_name.clone())),
        }
    }
}

/// The program's environment on this node: what the controller sent (the job-wide
/// variables, [`gsched_proto::script_env`]), plus the node's own `SLURM_CONF`, and the
/// job's identity and `SLURM_SCRIPT_CONTEXT` when the controller sent nothing (its config
/// has no such program).
pub fn node_env(
    given: &[(String, String)],
    ids: &JobIds,
    node: &str,
    conf_path: &Path,
    context: Context,
) -> Vec<(String, String)> {
    let mut env = given.to_vec();
    let mut default = |k: &str, v: String| {
        if !env.iter().any(|(key, _)| key == k) {
            env.push((k.to_string(), v));
        }
    };
    let id = ids.job_id.to_string();
    default("SLURM_JOB_ID", id.clone());
    default("SLURM_JOBID", id);
    if let Some((uid, gid, user)) = &ids.user {
        default("SLURM_JOB_UID", uid.to_string());
        default("SLURM_UID", uid.to_string());
        default("SLURM_JOB_GID", gid.to_string());
        default("SLURM_JOB_USER", user.clone());
    }
    default("SLURMD_NODENAME", node.to_string());
    default(
        "SLURM_SCRIPT_CONTEXT",
        match context {
            Context::Prolog | Context::PrologSlurmctld => "prolog_slurmd",
            Context::Epilog | Context::EpilogSlurmctld => "epilog_slurmd",
        }
        .to_string(),
    );
    default("SLURM_CONF", conf_path.display().to_string());
    env
}
