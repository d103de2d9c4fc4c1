//! `gsnoded`: the gsched node daemon (see `gsched_noded::daemon`).
//!
//! `gsnoded [-f|--config PATH] -N|--node NAME [-D]`. It always runs in the foreground (`-D`
//! is accepted for Slurm compatibility); a service manager keeps it running. SIGTERM or
//! SIGINT stop it; jobs keep running and are re-adopted by the next gsnoded.

use anyhow::{bail, Context};
use clap::Parser;
use gsched_noded::cgroup::CgroupSetup;
use gsched_noded::daemon::{self, Node, NodeSettings};
use gsched_proto::cgroup_conf::CgroupConf;
use gsched_proto::config::{AuthType, Config};
use gsched_proto::daemon_log;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;
use tokio::signal::unix::{signal, SignalKind};

/// The gsched node daemon: runs the jobs the controller assigns to this node.
///
/// A cgroup.conf beside the configuration file puts every job in its own cgroup (memory,
/// cores, process tracking; see cgroup.conf(5)). A gres.conf beside it names the node's GPUs
/// (or AutoDetect=nvml finds them through libnvidia-ml.so.1; see gres.conf(5)).
#[derive(Parser, Debug)]
#[command(name = "gsnoded", disable_version_flag = true)]
struct Args {
    /// Configuration file (default: $GSCHED_CONF, else /etc/gsched/gsched.conf).
    #[arg(short = 'f', long = "config", value_name = "PATH")]
    config: Option<PathBuf>,
    /// The name of this node, as in the config's NodeName lines.
    #[arg(
        short = 'N',
        long = "node",
        value_name = "NAME",
        required_unless_present = "version"
    )]
    node: Option<String>,
    /// Stand for many simulated nodes in this one process: -N takes a node list
    /// (v[1-1000]) whose nodes share one NodeAddr and Port. Jobs run on a timer
    /// (GSCHED_VIRTUAL_RUNTIME seconds, else their time limit) without forking; for
    /// measuring the controller at scale.
    #[arg(long = "virtual")]
    virtual_nodes: bool,
    /// Run in the foreground (the only mode; accepted for Slurm compatibility).
    #[arg(short = 'D')]
    foreground: bool,
    /// Print the version and exit.
    #[arg(short = 'V', long = "version")]
    version: bool,
}

/// The log file, for SIGUSR2 (set once at start).
static LOG_FILE: std::sync::OnceLock<std::sync::Arc<daemon_log::LogFile>> =
    std::sync::OnceLock::new();

fn main() {
    let args = Args::parse();
    if args.version {
        println!(
            "gsched {} (slurm {} compatible)",
            env!("CARGO_PKG_VERSION"),
            gsched_proto::api::SLURM_COMPAT_VERSION
        );
        return;
    }
    if let Err(e) = run(args) {
        eprintln!("gsnoded: error: {e:#}");
        std::process::exit(1);
    }
}

/// SlurmdDebug / SlurmdLogFile (`%n`, `%h`) and SlurmdPidFile; RUST_LOG, then
/// GSCHED_DEBUG, win over the level.
fn init_logging(
    cfg: &Config,
    node: &str,
) -> anyhow::Result<(
    Option<std::sync::Arc<daemon_log::LogFile>>,
    Option<daemon_log::PidFile>,
)> {
    let logs = &cfg.daemon_logs;
    let env_var = if std::env::var("RUST_LOG").is_ok_and(|v| !v.is_empty()) {
        "RUST_LOG"
    } else {
        "GSCHED_DEBUG"
    };
    let filter = daemon_log::filter_for(env_var, 0, logs.slurmd_debug.as_deref());
    let file = logs
        .slurmd_log_file
        .as_deref()
        .map(|p| daemon_log::node_path(p, node));
    let log = daemon_log::init("gsnoded", &filter, file.as_deref());
    let pid = logs.slurmd_pid_file.as_deref().and_then(|p| {
        daemon_log::PidFile::create(&daemon_log::node_path(p, node))
            .map_err(|e| tracing::error!("{e}"))
            .ok()
    });
    Ok((log, pid))
}

fn run(args: Args) -> anyhow::Result<()> {
    let Some(node_name) = args.node else {
        bail!("no node name given; pass -N <NodeName>");
    };
    let path = gsched_proto::config::resolve_config_path(args.config.as_deref());
    let path = std::path::absolute(&path).unwrap_or(path);
    let cfg = Config::load(&path).map_err(|e| anyhow::anyhow!("{e}"))?;
    for w in &cfg.warnings {
        eprintln!("gsnoded: warning: {w}");
    }
    let (log_file, _pid_file) = init_logging(&cfg, &node_name)?;
    if let Some(log) = log_file {
        LOG_FILE.set(log).ok();
    }
    if args.virtual_nodes {
        return run_virtual(&cfg, &node_name);
    }
    let stepd = daemon::default_stepd_path().context("cannot locate gsstepd")?;
    if !stepd.is_file() {
        bail!(
            "gsstepd not found at {}; install it next to gsnoded or set GSCHED_STEPD",
            stepd.display()
        );
    }
    let mut settings = NodeSettings::from_config(&cfg, &node_name, &path, stepd)?;
    settings.cgroups = cgroup_setup(&path, &settings)?;
    settings.gpus = gpu_setup(&path, &cfg, &settings)?;
    let auth = gsched_auth::from_config(&cfg)?;

    let host = cfg
        .node_addr(&node_name)
        .unwrap_or(node_name.as_str())
        .to_string();
    let port = cfg.node_port(&node_name);
    let addrs = resolve(&cfg, &host, port, &node_name)?;

    // gsstepd of a previous image (`reconfigure`) that ended meanwhile; nothing else of
    // ours runs yet.
    gsched_noded::sys::reap_exited_children();
    let node = Node::new(settings, auth)?;
    // One async thread, as gsctld: a job's launch and end are a handful of short tasks, and
    // with two worker threads each task woke the other worker (a wasted thread switch, a
    // quarter of gsnoded's per-job CPU). Whatever may block (files, /proc walks, the
    // controller's answers) runs on the blocking pool; munged's verdict on a request's
    // credential is waited for on this thread (`Authenticator::verify_async`).
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let inherited = gsched_proto::reexec::inherited_listener(&addrs);
    let result = rt.block_on(async move {
        let listener = match inherited {
            Some(l) => tokio::net::TcpListener::from_std(l)
                .context("cannot take over the listening socket of the previous image")?,
            None => bind(&addrs).await.with_context(|| {
                format!(
                    "cannot listen on {host}:{port} (is another gsnoded running for {node_name}?)"
                )
            })?,
        };
        let local = listener.local_addr().ok();
        tracing::info!(
            "gsnoded {} for node {node_name} listening on {}; spool {}, controller {}",
            env!("CARGO_PKG_VERSION"),
            local.map(|a| a.to_string()).unwrap_or_default(),
            node.settings().spool_dir.display(),
            node.settings().controller
        );
        let shutdown = shutdown_signal(Some(node.clone()))?;
        let kept = node
            .serve(listener, shutdown)
            .await
            .context("the API server failed")?;
        tracing::info!("gsnoded stopped; jobs keep running");
        anyhow::Ok(kept)
    });
    // Blocking calls to an unreachable controller may be in flight; do not wait for them.
    rt.shutdown_timeout(Duration::from_secs(1));
    let kept = result?;
    if gsched_proto::reexec::is_requested() {
        let listener = kept.and_then(|l| l.into_std().ok());
        let e = gsched_proto::reexec::exec_self(listener);
        bail!("reconfigure: cannot execute gsnoded anew: {e}; start it again");
    }
    Ok(())
}

/// `gsnoded --virtual -N LIST`: the virtual nodes of LIST, served from one listener.
fn run_virtual(cfg: &Config, list: &str) -> anyhow::Result<()> {
    use gsched_noded::virt::VirtualHost;
    let names = gsched_proto::hostlist::expand(list)
        .with_context(|| format!("bad node list {list:?} for --virtual"))?;
    let auth = gsched_auth::from_config(cfg)?;
    let host = VirtualHost::new(cfg, &names, auth)?;
    let (addr, port) = host.endpoint.clone();
    let addrs = resolve(cfg, &addr, port, &names[0])?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .worker_threads(2)
        .build()
        .context("cannot start the async runtime")?;
    let timeout = Duration::from_secs(cfg.message_timeout.into());
    let result = rt.block_on(async move {
        let listener = bind(&addrs)
            .await
            .with_context(|| format!("cannot listen on {addr}:{port} for the virtual nodes"))?;
        tracing::info!(
            "gsnoded {} hosting {} virtual nodes ({list}) on {addr}:{port}; controller {}",
            env!("CARGO_PKG_VERSION"),
            host.len(),
            host.controller()
        );
        let shutdown = shutdown_signal(None)?;
        host.serve(listener, timeout, shutdown)
            .await
            .context("the API server failed")?;
        tracing::info!("gsnoded stopped; its virtual jobs are gone");
        anyhow::Ok(())
    });
    rt.shutdown_timeout(Duration::from_secs(1));
    result
}

/// The socket addresses of `host:port` (node `node`'s), loopback only under auth/none.
fn resolve(cfg: &Config, host: &str, port: u16, node: &str) -> anyhow::Result<Vec<SocketAddr>> {
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve the address {host} of node {node} (NodeAddr=)"))?
        .collect();
    if addrs.is_empty() {
        bail!("the address {host} of node {node} resolves to nothing");
    }
    if cfg.auth_type == AuthType::None {
        if let Some(a) = addrs.iter().find(|a| !a.ip().is_loopback()) {
            bail!(
                "AuthType=auth/none accepts unauthenticated requests, so gsnoded only listens on \
                 loopback, but node {node} listens on {host} ({}); set NodeAddr=127.0.0.1 \
                 for a single-machine cluster, or use AuthType=auth/munge",
                a.ip()
            );
        }
    }
    Ok(addrs)
}

/// Reads `cgroup.conf` beside the config and checks the cgroup tree it names: `None` when
/// there is no such file (or `CgroupPlugin=disabled`).
fn cgroup_setup(
    config: &std::path::Path,
    settings: &NodeSettings,
) -> anyhow::Result<Option<CgroupSetup>> {
    let Some(conf) = CgroupConf::load_beside(config)? else {
        return Ok(None);
    };
    for w in &conf.warnings {
        eprintln!("gsnoded: warning: {w}");
    }
    let handle = gsched_cgroup::detect(&conf, &settings.node).with_context(|| {
        format!(
            "cannot use the cgroups {} asks for{}",
            conf.path.display(),
            if nix::unistd::geteuid().is_root() {
                ""
            } else {
                " (gsnoded runs without root: remove cgroup.conf or delegate the cgroup tree to this user)"
            }
        )
    })?;
    let Some(handle) = handle else {
        return Ok(None);
    };
    if handle.version == gsched_cgroup::Version::V2 && conf.memory_swappiness.is_some() {
        eprintln!(
            "gsnoded: warning: {}: MemorySwappiness has no effect with cgroup/v2 (it has no per-cgroup swappiness); ignored",
            conf.path.display()
        );
    }
    let online = gsched_noded::cgroup::online_cpus();
    if conf.constrain_cores && settings.cpus as usize > online.len() {
        tracing::warn!(
            "node {} has CPUs={} but this host has {} online CPU(s); cores are shared round-robin",
            settings.node,
            settings.cpus,
            online.len()
        );
    }
    tracing::info!(
        "jobs are confined by {} under {}/{}",
        handle.version.plugin_name(),
        handle.mount.display(),
        handle.subdir
    );
    Ok(Some(CgroupSetup {
        cpu_map: CgroupSetup::map_cpus(settings.cpus, &online),
        real_memory_mb: settings.real_memory_mb,
        handle,
        conf,
    }))
}

/// Finds the node's GPUs as `gres.conf` beside the config says (none without the file), and
/// compares them with the node's `Gres=` in the config: a mismatch is logged and the node
/// registers what it really has.
fn gpu_setup(
    config: &std::path::Path,
    cfg: &Config,
    settings: &NodeSettings,
) -> anyhow::Result<gsched_noded::gpu::GpuSetup> {
    use gsched_proto::gres_conf::{AutoDetect, GresConf};
    let node = &settings.node;
    let configured = cfg.node(node).map(|n| n.gres.clone()).unwrap_or_default();
    let Some(conf) = GresConf::load_beside(config)? else {
        if configured.iter().any(|g| g.name == "gpu") {
            tracing::warn!(
                "node {node} has Gres=gpu in {} but there is no gres.conf beside it; the node registers no GPU (write a gres.conf, e.g. AutoDetect=nvml)",
                config.display()
            );
        }
        return Ok(settings.gpus.clone());
    };
    let backend = match conf.for_node(node).autodetect {
        Some(AutoDetect::Nvml) => Some(std::sync::Arc::new(
            gsched_gpu::nvml::NvmlBackend::open(None)
                .with_context(|| format!("{} asks for AutoDetect=nvml", conf.path.display()))?,
        ) as std::sync::Arc<dyn gsched_gpu::GpuBackend>),
        _ => None,
    };
    let inv = gsched_gpu::inventory(&conf, node, backend)?;
    for w in &inv.warnings {
        tracing::warn!("{w}");
    }
    if let Some(w) = gsched_gpu::check_config(node, &configured, &inv.devices) {
        tracing::warn!("{w}");
    }
    for d in &inv.devices {
        tracing::info!(
            "GPU {}: type {} file {} memory {} MiB{}{}",
            d.index,
            if d.type_name.is_empty() {
                "-"
            } else {
                &d.type_name
            },
            d.file,
            d.memory_mb,
            d.uuid
                .as_deref()
                .map(|u| format!(" {u}"))
                .unwrap_or_default(),
            if d.mig {
                " (MIG mode: handed out whole)"
            } else {
                ""
            }
        );
    }
    tracing::info!(
        "node {node} has {} GPU(s) (Gres={})",
        inv.devices.len(),
        gsched_gpu::gres_string(&inv.devices)
    );
    Ok(gsched_noded::gpu::GpuSetup::from_inventory(
        inv,
        settings.gpus.sample_interval,
    ))
}

async fn bind(addrs: &[SocketAddr]) -> std::io::Result<tokio::net::TcpListener> {
    let mut last = None;
    for a in addrs {
        match tokio::net::TcpListener::bind(a).await {
            Ok(l) => return Ok(l),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no address to listen on")))
}

/// Completes on SIGTERM or SIGINT, or when the daemon is to be executed anew. SIGHUP is
/// Slurm's "reconfigure": a node daemon checks its config and executes itself anew
/// ([`Node::reconfigure`]); virtual nodes only log that a restart is needed.
fn shutdown_signal(
    node: Option<std::sync::Arc<Node>>,
) -> anyhow::Result<impl std::future::Future<Output = ()> + Send + 'static> {
    let mut term = signal(SignalKind::terminate()).context("cannot handle SIGTERM")?;
    let mut int = signal(SignalKind::interrupt()).context("cannot handle SIGINT")?;
    let mut hup = signal(SignalKind::hangup()).context("cannot handle SIGHUP")?;
    tokio::spawn(async move {
        while hup.recv().await.is_some() {
            match &node {
                Some(node) => match node.reconfigure() {
                    Ok(()) => tracing::info!("SIGHUP: reading the config again"),
                    Err(e) => tracing::error!("SIGHUP: {e}"),
                },
                None => tracing::warn!(
                    "SIGHUP: virtual nodes do not read their config again; restart gsnoded --virtual to apply changes"
                ),
            }
        }
    });
    // SIGUSR2 opens SlurmdLogFile again, as slurmd does (logrotate's postrotate).
    if let Some(log) = LOG_FILE.get() {
        let mut usr2 = signal(SignalKind::user_defined2()).context("cannot handle SIGUSR2")?;
        tokio::spawn(async move {
            while usr2.recv().await.is_some() {
                match log.reopen() {
                    Ok(()) => tracing::info!("log file reopened (SIGUSR2)"),
                    Err(e) => tracing::error!("{e}"),
                }
            }
        });
    }
    Ok(async move {
        tokio::select! {
            _ = term.recv() => tracing::info!("SIGTERM received; stopping"),
            _ = int.recv() => tracing::info!("SIGINT received; stopping"),
            _ = gsched_proto::reexec::requested() => tracing::info!("stopping to read the config again"),
        }
    })
}
