//! The job-wide part of a batch job's environment (Slurm's `SLURM_*` variables that depend on
//! the whole allocation), computed where the allocation is known: in the controller. gsnoded
//! adds the node-specific ones (`SLURMD_NODENAME`, `SLURM_CPUS_ON_NODE`, ...).

use gsched_proto::api::LaunchRequest;
use gsched_proto::config::Config;
use gsched_proto::hostlist;
use gsched_proto::job::{JobInfo, MemRequest};

/// Slurm's run-length form of per-node counts: `4(x2),2`.
pub fn run_length(values: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < values.len() {
        let v = values[i];
        let mut j = i;
        while j < values.len() && values[j] == v {
            j += 1;
        }
        let n = j - i;
        out.push(if n > 1 {
            format!("{v}(x{n})")
        } else {
            v.to_string()
        });
        i = j;
    }
    out.join(",")
}

/// Sets `key` in `env`, in place when it is there already.
pub(crate) fn set(env: &mut Vec<(String, String)>, key: &str, value: impl Into<String>) {
    let value = value.into();
    match env.iter_mut().find(|(k, _)| k == key) {
        Some(e) => e.1 = value,
        None => env.push((key.to_string(), value)),
    }
}

/// The launch request for a job's batch host.
pub fn launch_request(cfg: &Config, job: &JobInfo, cpus: u32, mem_mb: u64) -> LaunchRequest {
    let spec = &job.spec;
    let mut env: Vec<(String, String)> = spec.environment.to_vec();
    let nodelist = hostlist::compress(&job.nodes);
    let id = job.job_id.to_string();
    set(&mut env, "SLURM_JOB_ID", &id);
    set(&mut env, "SLURM_JOBID", &id);
    set(&mut env, "SLURM_JOB_NAME", &job.name);
    set(&mut env, "SLURM_JOB_NODELIST", &nodelist);
    set(&mut env, "SLURM_NODELIST", &nodelist);
    let nn = job.nodes.len().to_string();
    set(&mut env, "SLURM_JOB_NUM_NODES", &nn);
    set(&mut env, "SLURM_NNODES", &nn);
    set(&mut env, "SLURM_JOB_PARTITION", &job.partition);
    if let Some(a) = &spec.account {
        set(&mut env, "SLURM_JOB_ACCOUNT", a);
    }
    if let Some(q) = &spec.qos {
        set(&mut env, "SLURM_JOB_QOS", q);
    }
    set(
        &mut env,
        "SLURM_JOB_CPUS_PER_NODE",
        run_length(&job.cpus_per_node),
    );
    let cpt = spec.cpus_per_task();
    let tasks_per_node: Vec<u32> = job.cpus_per_node.iter().map(|c| c / cpt).collect();
    set(
        &mut env,
        "SLURM_TASKS_PER_NODE",
        run_length(&tasks_per_node),
    );
    if spec.ntasks.is_some() || spec.ntasks_per_node.is_some() {
        let t = job.num_tasks.to_string();
        set(&mut env, "SLURM_NTASKS", &t);
        set(&mut env, "SLURM_NPROCS", &t);
    }
    if let Some(t) = spec.ntasks_per_node {
        set(&mut env, "SLURM_NTASKS_PER_NODE", t.to_string());
    }
    if let Some(c) = spec.cpus_per_task {
        set(&mut env, "SLURM_CPUS_PER_TASK", c.to_string());
    }
    match spec.mem {
        Some(MemRequest::PerNode(0)) => set(&mut env, "SLURM_MEM_PER_NODE", mem_mb.to_string()),
        Some(MemRequest::PerNode(m)) => set(&mut env, "SLURM_MEM_PER_NODE", m.to_string()),
        Some(MemRequest::PerCpu(m)) => set(&mut env, "SLURM_MEM_PER_CPU", m.to_string()),
        None => {}
    }
    if let Some(g) = &spec.gpu {
        // As sbatch exports its GPU options: `[type:]count`.
        let typed = |n: u32| match &g.type_name {
            Some(t) => format!("{t}:{n}"),
            None => n.to_string(),
        };
        if let Some(n) = g.per_job {
            set(&mut env, "SLURM_GPUS", typed(n));
        }
        if let Some(n) = g.per_node {
            set(&mut env, "SLURM_GPUS_PER_NODE", typed(n));
        }
        if let Some(n) = g.per_task {
            set(&mut env, "SLURM_GPUS_PER_TASK", typed(n));
        }
        if let Some(c) = g.cpus_per_gpu {
            set(&mut env, "SLURM_CPUS_PER_GPU", c.to_string());
        }
        if let Some(m) = g.mem_per_gpu_mb {
            set(&mut env, "SLURM_MEM_PER_GPU", m.to_string());
        }
    }
    // gsbatch sends the directory and host it was run from; API callers may not.
    if !env.iter().any(|(k, _)| k == "SLURM_SUBMIT_DIR") {
        set(&mut env, "SLURM_SUBMIT_DIR", &spec.work_dir);
    }
    if !env.iter().any(|(k, _)| k == "SLURM_SUBMIT_HOST") {
        set(&mut env, "SLURM_SUBMIT_HOST", &spec.submit_host);
    }
    if let Some(a) = &job.array {
        set(&mut env, "SLURM_ARRAY_JOB_ID", a.job_id.to_string());
        set(&mut env, "SLURM_ARRAY_TASK_ID", a.task_id.to_string());
        set(&mut env, "SLURM_ARRAY_TASK_COUNT", a.count.to_string());
        set(&mut env, "SLURM_ARRAY_TASK_MIN", a.min.to_string());
        set(&mut env, "SLURM_ARRAY_TASK_MAX", a.max.to_string());
        set(&mut env, "SLURM_ARRAY_TASK_STEP", a.step.to_string());
    } else {
        // Submitted from inside an array task: the values are not this job's.
        env.retain(|(k, _)| !k.starts_with("SLURM_ARRAY_"));
    }
    set(&mut env, "SLURM_CLUSTER_NAME", &cfg.cluster_name);
    set(&mut env, "SLURM_JOB_USER", &job.user_name);
    set(&mut env, "SLURM_JOB_UID", job.user_id.to_string());
    set(&mut env, "SLURM_JOB_GID", job.group_id.to_string());
    set(&mut env, "SLURM_JOB_GROUP", &job.group_name);
    let start = job.start_time.unwrap_or(0);
    set(&mut env, "SLURM_JOB_START_TIME", start.to_string());
    let end = match job.time_limit {
        Some(m) => start + m as i64 * 60,
        None => start + 365 * 86400,
    };
    set(&mut env, "SLURM_JOB_END_TIME", end.to_string());
    set(&mut env, "SLURM_PRIO_PROCESS", "0");
    set(&mut env, "SLURM_JOB_EXCLUSIVE", "NO");
    set(&mut env, "SLURM_JOB_OVERSUBSCRIBE", "OK");
    if let Some(m) = spec.open_mode {
        let v = match m {
            gsched_proto::job::OpenMode::Append => "a",
            gsched_proto::job::OpenMode::Truncate => "t",
        };
        set(&mut env, "SLURM_OPEN_MODE", v);
    }
    if let Some(d) = spec.dependency.as_deref().filter(|d| !d.is_empty()) {
        set(&mut env, "SLURM_JOB_DEPENDENCY", d);
    }
    if job.restarts > 0 {
        set(&mut env, "SLURM_RESTART_COUNT", job.restarts.to_string());
    }
    if let Some(e) = &spec.export {
        set(&mut env, "SLURM_EXPORT_ENV", e);
    }
    // With --export=NONE/NIL the job still needs a sane login environment.
    let user = gsched_proto::users::cached_user_by_uid(job.user_id);
    for (k, v) in [
        ("USER", job.user_name.clone()),
        ("LOGNAME", job.user_name.clone()),
        (
            "HOME",
            user.as_ref().map(|u| u.home.clone()).unwrap_or("/".into()),
        ),
        (
            "SHELL",
            user.as_ref()
                .map(|u| u.shell.clone())
                .unwrap_or("/bin/sh".into()),
        ),
        ("PATH", "/usr/local/bin:/usr/bin:/bin".to_string()),
    ] {
        if !env.iter().any(|(ek, _)| ek == k) {
            env.push((k.to_string(), v));
        }
    }
    LaunchRequest {
        job_id: job.job_id,
        start_time: start,
        name: job.name.clone(),
        uid: job.user_id,
        gid: job.group_id,
        user_name: job.user_name.clone(),
        script: spec.script.clone(),
        argv: spec.argv.clone(),
        work_dir: spec.work_dir.clone(),
        stdout: spec.stdout.clone(),
        stderr: spec.stderr.clone(),
        stdin: spec.stdin.clone(),
        // No --open-mode: JobFileAppend decides (Slurm's slurmstepd reads it).
        open_mode: spec.open_mode.or(cfg
            .job_file_append
            .then_some(gsched_proto::job::OpenMode::Append)),
        environment: env,
        cpus,
        mem_mb,
        node_index: 0,
        time_limit: job.time_limit,
        gpus: job.gpus.first().cloned().unwrap_or_default(),
        prolog_env: if cfg.prolog.is_some() {
            script_env(cfg, job, Some(0), ScriptContext::Prolog)
        } else {
            Vec::new()
        },
    }
}

/// Which of the node's programs an environment is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScriptContext {
    Prolog,
    Epilog,
    /// The controller's `EpilogSlurmctld` (slurmctld's `job_common_env_vars`).
    EpilogSlurmctld,
    /// The controller's `PrologSlurmctld`: the same variables, before the job runs.
    PrologSlurmctld,
}

/// One of the controller's own programs (`EpilogSlurmctld`, `PrologSlurmctld`) for a job:
/// the config's pattern with `PrologEpilogTimeout`, the job's variables, and the state
/// folder for its output while it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CtldProgram {
    pub conf: gsched_proto::site_program::ScriptConf,
    pub context: gsched_proto::site_program::Context,
    pub env: Vec<(String, String)>,
    pub scratch: std::path::PathBuf,
}

impl CtldProgram {
    /// `pattern` (the setting of `context`, which is `EpilogSlurmctld` or
    /// `PrologSlurmctld`) for `job`.
    pub fn for_job(
        cfg: &Config,
        pattern: &str,
        job: &JobInfo,
        context: ScriptContext,
    ) -> CtldProgram {
        use gsched_proto::site_program::{Context, ScriptConf};
        CtldProgram {
            conf: ScriptConf::new(pattern, cfg, &cfg.state_save_location),
            context: match context {
                ScriptContext::PrologSlurmctld => Context::PrologSlurmctld,
                _ => Context::EpilogSlurmctld,
            },
            env: script_env(cfg, job, None, context),
            scratch: cfg.state_save_location.clone(),
        }
    }

    /// Runs it (blocks); why it failed.
    pub fn run(&self) -> Result<(), String> {
        gsched_proto::site_program::run(&self.conf, self.context, &self.env, &self.scratch)
    }
}

/// The environment of the `Prolog` or `Epilog` on the job's `node`-th node, as slurmd
/// 22.05 sets it (`prep_script_slurmd.c`), or of `EpilogSlurmctld` (`node` None, as
/// slurmctld's `job_common_env_vars`): who and what the job is, never the user's own
/// variables (the programs run as root). The node adds `SLURM_CONF`.
pub fn script_env(
    cfg: &Config,
    job: &JobInfo,
    node: Option<usize>,
    context: ScriptContext,
) -> Vec<(String, String)> {
    let spec = &job.spec;
    let mut env: Vec<(String, String)> = Vec::with_capacity(24);
    let mut put = |k: &str, v: String| env.push((k.to_string(), v));
    if let Some(name) = node.and_then(|k| job.nodes.get(k)) {
        put("SLURMD_NODENAME", name.clone());
    }
    put("SLURM_CLUSTER_NAME", cfg.cluster_name.clone());
    let id = job.job_id.to_string();
    put("SLURM_JOB_ID", id.clone());
    put("SLURM_JOBID", id);
    put("SLURM_JOB_UID", job.user_id.to_string());
    put("SLURM_UID", job.user_id.to_string());
    put("SLURM_JOB_GID", job.group_id.to_string());
    put("SLURM_JOB_USER", job.user_name.clone());
    put("SLURM_JOB_WORK_DIR", spec.work_dir.clone());
    if let Some(h) = job.het {
        put("SLURM_HET_JOB_ID", h.job_id.to_string());
        put("SLURM_PACK_JOB_ID", h.job_id.to_string());
    }
    put("SLURM_NODELIST", hostlist::compress(&job.nodes));
    put("SLURM_JOB_PARTITION", job.partition.clone());
    put(
        "SLURM_SCRIPT_CONTEXT",
        match context {
            ScriptContext::Prolog => "prolog_slurmd",
            ScriptContext::Epilog => "epilog_slurmd",
            ScriptContext::EpilogSlurmctld => "epilog_slurmctld",
            ScriptContext::PrologSlurmctld => "prolog_slurmctld",
        }
        .to_string(),
    );
    if matches!(
        context,
        ScriptContext::EpilogSlurmctld | ScriptContext::PrologSlurmctld
    ) {
        put("SLURM_JOB_NAME", job.name.clone());
        put("SLURM_JOB_GROUP", job.group_name.clone());
        put("SLURM_JOB_NODELIST", hostlist::compress(&job.nodes));
        if !spec.licenses.is_empty() {
            put(
                "SLURM_JOB_LICENSES",
                gsched_proto::licenses::format(&spec.licenses),
            );
        }
        if let Some(a) = job.array {
            put("SLURM_ARRAY_JOB_ID", a.job_id.to_string());
            put("SLURM_ARRAY_TASK_ID", a.task_id.to_string());
        }
        if let Some(h) = job.het {
            put("SLURM_HET_JOB_OFFSET", h.offset.to_string());
        }
    }
    if !matches!(
        context,
        ScriptContext::Prolog | ScriptContext::PrologSlurmctld
    ) {
        // As a wait() status: the code in the high byte, the signal in the low bits.
        let status = ((job.exit_code & 0xff) << 8) | (job.exit_signal & 0x7f);
        put("SLURM_JOB_DERIVED_EC", job.exit_code.to_string());
        put("SLURM_JOB_EXIT_CODE", status.to_string());
        put(
            "SLURM_JOB_EXIT_CODE2",
            format!("{}:{}", job.exit_code, job.exit_signal),
        );
    }
    if let Some(a) = &spec.account {
        put("SLURM_JOB_ACCOUNT", a.clone());
    }
    if let Some(c) = spec.comment.as_ref().filter(|c| !c.is_empty()) {
        put("SLURM_JOB_COMMENT", c.clone());
    }
    if let Some(c) = spec.constraint.as_ref().filter(|c| !c.is_empty()) {
        put("SLURM_JOB_CONSTRAINTS", c.clone());
    }
    put("SLURM_JOB_CPUS_PER_NODE", run_length(&job.cpus_per_node));
    put("SLURM_JOB_NTASKS", job.num_tasks.to_string());
    put("SLURM_JOB_NUM_NODES", job.nodes.len().to_string());
    if let Some(r) = &spec.reservation {
        put("SLURM_JOB_RESERVATION", r.clone());
    }
    put("SLURM_JOB_RESTART_COUNT", job.restarts.to_string());
    for (key, path) in [
        ("SLURM_JOB_STDERR", &spec.stderr),
        ("SLURM_JOB_STDIN", &spec.stdin),
        ("SLURM_JOB_STDOUT", &spec.stdout),
    ] {
        if let Some(p) = path {
            put(key, p.clone());
        }
    }
    // The node's GPUs of the job by their index on the node (the programs run outside the
    // job's device cgroup), as the GPU plugin's prolog environment.
    if let Some(gpus) = node.and_then(|k| job.gpus.get(k)).filter(|g| !g.is_empty()) {
        let ids: Vec<String> = gpus.iter().map(|g| g.index.to_string()).collect();
        let ids = ids.join(",");
        put("SLURM_JOB_GPUS", ids.clone());
        put("CUDA_VISIBLE_DEVICES", ids.clone());
        put("GPU_DEVICE_ORDINAL", ids);
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_length_matches_slurm() {
        assert_eq!(run_length(&[4, 4, 2]), "4(x2),2");
        assert_eq!(run_length(&[8]), "8");
        assert_eq!(run_length(&[1, 2, 2, 2]), "1,2(x3)");
        assert_eq!(run_length(&[]), "");
    }
}
