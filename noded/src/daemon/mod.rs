//! gsnoded, the node daemon: it serves the node half of the API (`/v1/node/...`), starts a
//! gsstepd per job, watches it, reports how each job ended, and registers and heartbeats with
//! the controller.
//!
//! State lives in two places, and the spool directory is the one that counts: every job
//! gsnoded holds has a folder there ([`crate::jobdir`]) from the launch until the controller
//! acknowledged its completion report. The in-memory job table is rebuilt from the folders at
//! start and whenever the controller asks the node to register again, so gsnoded can be
//! killed at any moment (even with SIGKILL) without losing a job or a report.
//!
//! * `server` — routes, the one place that checks protocol version and credentials.
//! * `jobs` — the job table, launch, signal, terminate, watching, reports, re-adoption.
//! * `controller` — registration and heartbeats.
//! * `steps` — job steps (`gsrun`): launch, signal, output for gsrun.
//! * `controller` — registration and heartbeats (with the GPUs found and their samples).
//! * `gpus` — MPS daemons at launch and end, their watch, and GPU sampling.
//! * `usage`, `progress` — each job's live usage and progress counters for the heartbeats.
//! * `scripts` — the Prolog before a job's first step on its other nodes, the Epilog.

mod controller;
mod gpus;
mod jobs;
pub mod life;
mod progress;
mod scripts;
pub(crate) mod server;
mod steps;
mod usage;

pub use jobs::default_stepd_path;
pub use server::router;

use gsched_proto::auth::Authenticator;
use gsched_proto::client::Client;
use gsched_proto::config::Config;
use gsched_proto::job::JobId;
use std::collections::BTreeMap;
use std::future::Future;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// How long one call to the controller may take.
const CONTROLLER_TIMEOUT: Duration = Duration::from_secs(15);

/// What gsnoded needs to know about itself, taken from the config at start.
#[derive(Debug, Clone)]
pub struct NodeSettings {
    /// This node's name (`-N`).
    pub node: String,
    /// `ClusterName`.
    pub cluster: String,
    /// Configured `CPUs` and `RealMemory` (MiB), reported at registration.
    pub cpus: u32,
    pub real_memory_mb: u64,
    /// `SlurmdSpoolDir` for this node.
    pub spool_dir: PathBuf,
    /// The config file (the job's `SLURM_CONF`).
    pub config_path: PathBuf,
    /// The controller's `host:port`.
    pub controller: String,
    /// `KillWait` seconds.
    pub kill_wait: u32,
    /// `MessageTimeout` seconds: how long a client may take to send a request head.
    pub message_timeout: u32,
    /// `SlurmUser`'s uid, when the name resolves.
    pub slurm_uid: Option<u32>,
    /// The gsstepd binary.
    pub stepd: PathBuf,
    /// Job cgroups (`cgroup.conf` beside the config); `None`: jobs are tracked as gsstepd's
    /// descendants only and nothing is confined.
    pub cgroups: Option<crate::cgroup::CgroupSetup>,
    /// The node's GPUs (`gres.conf` beside the config; none without one).
    pub gpus: crate::gpu::GpuSetup,
    /// `HealthCheckProgram`, when `HealthCheckInterval` is not 0: run at start (before
    /// registering) and whenever the controller asks.
    pub health_check: Option<String>,
    /// `PropagateResourceLimits` (see `gsched_proto::rlimits`).
    pub propagate_rlimits: Vec<String>,
    /// `Prolog=` and `Epilog=` with their timeout and lock (`crate::prolog`).
    pub prolog: Option<crate::prolog::ScriptConf>,
    pub epilog: Option<crate::prolog::ScriptConf>,
    /// `TaskProlog=` and `TaskEpilog=` (`crate::task_script`).
    pub task_scripts: crate::task_script::TaskScripts,
}

/// Why gsnoded cannot start.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error("node {node} is not defined in {}; add a NodeName={node} line there or start gsnoded with the -N of a configured node", config.display())]
    UnknownNode { node: String, config: PathBuf },
    #[error("cannot prepare the spool directory {}: {source} (check SlurmdSpoolDir and that gsnoded may create it)", path.display())]
    Spool {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read the boot time from /proc/stat: {0}")]
    BootTime(std::io::Error),
}

impl NodeSettings {
    /// Settings for node `node` of `cfg`; `config_path` should be absolute (it becomes the
    /// jobs' `SLURM_CONF`).
    pub fn from_config(
        cfg: &Config,
        node: &str,
        config_path: &Path,
        stepd: PathBuf,
    ) -> Result<NodeSettings, DaemonError> {
        let n = cfg.node(node).ok_or_else(|| DaemonError::UnknownNode {
            node: node.to_string(),
            config: config_path.to_path_buf(),
        })?;
        Ok(NodeSettings {
            node: node.to_string(),
            cluster: cfg.cluster_name.clone(),
            cpus: n.cpus,
            real_memory_mb: n.real_memory_mb,
            spool_dir: cfg.spool_dir_for(node),
            config_path: config_path.to_path_buf(),
            controller: host_port(cfg.ctld_host.connect_addr(), cfg.ctld_port),
            kill_wait: cfg.kill_wait,
            message_timeout: cfg.message_timeout,
            slurm_uid: gsched_proto::users::user_by_name(&cfg.slurm_user).map(|u| u.uid),
            stepd,
            cgroups: None,
            gpus: crate::gpu::GpuSetup {
                sample_interval: cfg.gpu_sample_interval,
                ..Default::default()
            },
            health_check: cfg
                .health_check_program
                .clone()
                .filter(|_| cfg.health_check_interval > 0),
            propagate_rlimits: cfg.propagate_rlimits.clone(),
            prolog: crate::prolog::node_script(
                cfg,
                crate::prolog::Context::Prolog,
                &cfg.spool_dir_for(node),
            ),
            epilog: crate::prolog::node_script(
                cfg,
                crate::prolog::Context::Epilog,
                &cfg.spool_dir_for(node),
            ),
            task_scripts: crate::task_script::TaskScripts::from_config(cfg),
        })
    }
}

/// `host:port`, with brackets around an IPv6 literal.
pub fn host_port(host: &str, port: u16) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// Seconds since the epoch.
pub(crate) fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// The daemon: settings, identity, the job table. Shared by every handler and task.
pub struct Node {
    pub(crate) settings: NodeSettings,
    pub(crate) auth: Arc<dyn Authenticator>,
    pub(crate) client: Client,
    pub(crate) jobs: Mutex<BTreeMap<JobId, jobs::Job>>,
    /// Serialises launch, signal, terminate and re-adoption, so that each sees a job either
    /// before or after a launch, never half-way.
    pub(crate) launch_lock: tokio::sync::Mutex<()>,
    pub(crate) own_uid: u32,
    pub(crate) is_root: bool,
    pub(crate) start_time: i64,
    pub(crate) boot_time: i64,
    /// Which cores each job holds (used with `ConstrainCores`, rebuilt on re-adoption).
    pub(crate) cores: Mutex<crate::cgroup::CoreAllocator>,
    /// Job steps running (or ended, not yet collected) here.
    pub(crate) steps: Mutex<BTreeMap<(JobId, u32), steps::StepRt>>,
    /// The MPS daemons of shared GPUs (when the node has GPUs).
    pub(crate) mps: Option<Arc<crate::mps::Mps>>,
    /// GPU samples not yet sent with a heartbeat.
    pub(crate) gpu_samples: Mutex<Vec<gsched_proto::gpu_sample::GpuSample>>,
    /// The newest sample of each GPU (the invalid-job ladder's GPU utilization).
    pub(crate) gpu_latest: Mutex<BTreeMap<u32, gsched_proto::gpu_sample::GpuSample>>,
    /// The GPUs of each running job, read from its launch.json once.
    pub(crate) job_gpus: Mutex<BTreeMap<JobId, Vec<gsched_proto::gpu::GpuAlloc>>>,
    /// Job-end reports waiting to go to the controller together (see `Node::send_report`).
    pub(crate) outbox: Mutex<jobs::Outbox>,
    /// A `HealthCheckProgram` run is under way (a request meanwhile is not run twice).
    pub(crate) health_check_running: std::sync::atomic::AtomicBool,
    /// Step Prologs and Epilogs under way (`scripts`).
    pub(crate) scripts: scripts::ScriptsRt,
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node")
            .field("node", &self.settings.node)
            .finish_non_exhaustive()
    }
}

impl Node {
    /// Prepares the daemon (creates the spool directory, mode 0755).
    pub fn new(
        settings: NodeSettings,
        auth: Arc<dyn Authenticator>,
    ) -> Result<Arc<Node>, DaemonError> {
        let spool = &settings.spool_dir;
        let spool_err = |source| DaemonError::Spool {
            path: spool.clone(),
            source,
        };
        std::fs::create_dir_all(spool).map_err(spool_err)?;
        std::fs::set_permissions(spool, std::fs::Permissions::from_mode(0o755))
            .map_err(spool_err)?;
        let boot_time = crate::procfs::boot_time().map_err(DaemonError::BootTime)?;
        let client = Client::new(settings.controller.clone(), auth.clone())
            .with_timeout(CONTROLLER_TIMEOUT)
            .with_pool(gsched_proto::client::ConnectionPool::new());
        let own_uid = nix::unistd::getuid().as_raw();
        let cores = crate::cgroup::CoreAllocator::new(settings.cpus);
        let mps = (!settings.gpus.devices.is_empty()).then(|| {
            Arc::new(crate::mps::Mps::new(
                Box::new(crate::mps::RealControl::default()),
                &settings.spool_dir,
            ))
        });
        Ok(Arc::new(Node {
            cores: Mutex::new(cores),
            steps: Mutex::new(BTreeMap::new()),
            mps,
            gpu_samples: Mutex::new(Vec::new()),
            gpu_latest: Mutex::new(BTreeMap::new()),
            job_gpus: Mutex::new(BTreeMap::new()),
            outbox: Mutex::new(jobs::Outbox::default()),
            health_check_running: Default::default(),
            scripts: Default::default(),
            settings,
            auth,
            client,
            jobs: Mutex::new(BTreeMap::new()),
            launch_lock: tokio::sync::Mutex::new(()),
            own_uid,
            is_root: nix::unistd::geteuid().is_root(),
            start_time: now(),
            boot_time,
        }))
    }

    pub fn settings(&self) -> &NodeSettings {
        &self.settings
    }

    pub(crate) fn cores(&self) -> MutexGuard<'_, crate::cgroup::CoreAllocator> {
        self.cores.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn steps(&self) -> MutexGuard<'_, BTreeMap<(JobId, u32), steps::StepRt>> {
        self.steps.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn jobs(&self) -> MutexGuard<'_, BTreeMap<JobId, jobs::Job>> {
        // The table stays consistent even if a holder panicked (every update is one insert
        // or field change), so keep serving.
        self.jobs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Who may call this daemon: root, SlurmUser, or gsnoded's own user.
    pub(crate) fn callers(&self) -> server::Callers {
        server::Callers {
            own_uid: self.own_uid,
            slurm_uid: self.settings.slurm_uid,
        }
    }

    /// `scontrol reconfigure` or SIGHUP: if the config file still loads for this node,
    /// gsnoded stops serving and executes itself anew ([`gsched_proto::reexec`]); its jobs
    /// keep running and are adopted again, as after a restart. Otherwise it keeps its
    /// current settings and says why.
    pub fn reconfigure(&self) -> Result<(), String> {
        let s = &self.settings;
        let cfg = Config::load(&s.config_path).map_err(|e| {
            format!(
                "node {}: the config does not load, gsnoded keeps its current settings: {e}",
                s.node
            )
        })?;
        NodeSettings::from_config(&cfg, &s.node, &s.config_path, s.stepd.clone()).map_err(|e| {
            format!(
                "node {}: the config is not usable here, gsnoded keeps its current settings: {e}",
                s.node
            )
        })?;
        tracing::info!(
            "reconfigure: executing gsnoded anew with {}",
            s.config_path.display()
        );
        gsched_proto::reexec::request();
        Ok(())
    }

    /// Re-adopts the jobs in the spool directory, then serves the API on `listener` until
    /// `shutdown` completes, registering and heartbeating with the controller meanwhile.
    /// Jobs keep running when this returns: they belong to their gsstepd.
    pub async fn serve(
        self: Arc<Self>,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<Option<tokio::net::TcpListener>> {
        self.adopt_spool().await;
        let node = self.clone();
        let ctl = tokio::spawn(async move {
            // As slurmd: the health check runs once before the node registers.
            if let Some(program) = node.settings.health_check.clone() {
                node.health_check(&program).await;
            }
            controller::run(node).await
        });
        let gpu_tasks = self.clone().start_gpu_tasks();
        let timeout = std::time::Duration::from_secs(self.settings.message_timeout.into());
        let result =
            gsched_proto::server::serve_api(listener, router(self.clone()), timeout, shutdown)
                .await;
        ctl.abort();
        for t in gpu_tasks {
            t.abort();
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_port_brackets_ipv6() {
        assert_eq!(host_port("head", 6817), "head:6817");
        assert_eq!(host_port("127.0.0.1", 1), "127.0.0.1:1");
        assert_eq!(host_port("::1", 1), "[::1]:1");
        assert_eq!(host_port("[::1]", 1), "[::1]:1");
    }
}
