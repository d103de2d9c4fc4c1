//! `gsctld`: the gsched controller daemon.

use anyhow::{bail, Context};
use clap::Parser;
use gsched_ctld::server::{self, Shared};
use gsched_ctld::state::State;
use gsched_ctld::store::Store;
use gsched_proto::config::Config;
use gsched_proto::daemon_log;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;

/// Passes that take at least this long are followed by a pause as long as they took.
const PASS_PAUSE_FROM: Duration = Duration::from_millis(2);

/// The gsched controller: keeps the queue, schedules jobs, and drives the node daemons.
#[derive(Parser, Debug)]
#[command(name = "gsctld", version = concat!(env!("CARGO_PKG_VERSION"), " (slurm 22.05.8 compatible)"))]
struct Args {
    /// Configuration file (default: $GSCHED_CONF, else /etc/gsched/gsched.conf).
    #[arg(short = 'f', long = "config")]
    config: Option<PathBuf>,
    /// Run in the foreground (the only mode; accepted for Slurm compatibility).
    #[arg(short = 'D')]
    foreground: bool,
    /// More logging (-v, -vv).
    #[arg(short = 'v', action = clap::ArgAction::Count)]
    verbose: u8,
}

fn main() {
    let args = Args::parse();
    if let Err(e) = run(args) {
        eprintln!("gsctld: error: {e:#}");
        std::process::exit(1);
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    let path = gsched_proto::config::resolve_config_path(args.config.as_deref());
    let cfg = Config::load(&path).map_err(|e| anyhow::anyhow!("{e}"))?;
    for w in &cfg.warnings {
        eprintln!("gsctld: warning: {w}");
    }
    // SlurmctldDebug / SlurmctldLogFile (GSCHED_DEBUG and -v win over the level).
    let logs = &cfg.daemon_logs;
    let filter = daemon_log::filter_for("GSCHED_DEBUG", args.verbose, logs.ctld_debug.as_deref());
    let log_file = daemon_log::init(
        "gsctld",
        &filter,
        logs.ctld_log_file.as_deref().map(Path::new),
    );
    let _pid_file = logs.ctld_pid_file.as_deref().and_then(|p| {
        daemon_log::PidFile::create(Path::new(p))
            .map_err(|e| tracing::error!("{e}"))
            .ok()
    });
    let cfg = Arc::new(cfg);
    // The authentication plugin, AdminUsers, topology.conf (State::load uses it) and the
    // address; `scontrol reconfigure` makes the same checks.
    let addr = gsched_ctld::reconfigure::startup_checks(&cfg)?;
    let auth = gsched_auth::from_config(&cfg)?;
    // The listening socket of this gsctld's previous image (`reconfigure`), if any.
    let inherited = gsched_proto::reexec::inherited_listener(&[addr]);
    let store = Store::open(
        &cfg.state_save_location,
        cfg.state_sync == gsched_proto::config::StateSync::Full,
    )?;
    let mut state = State::load(cfg.clone(), store, server::now())?;
    state.set_notifier(gsched_ctld::notify::Notifier::spawn(cfg.notify.clone()));
    let recovered = state.jobs.len();
    let (submits, batches) = gsched_ctld::group_commit::channel();
    let shared = Arc::new(Shared {
        state: Mutex::new(state),
        wake: Notify::new(),
        auth,
        cfg: cfg.clone(),
        host: cfg.ctld_host.name.clone(),
        metrics: gsched_ctld::metrics::Metrics::for_config(&cfg),
        submits,
        node_connections: gsched_proto::client::ConnectionPool::new(),
        launch_slots: gsched_ctld::dispatch::LaunchSlots::default(),
    });

    // One async thread: every request takes the state lock anyway, and a single thread
    // saves the cross-thread wake-ups that dominate a request's cost. Node calls run on the
    // blocking pool; munged is waited for on this thread (`Authenticator::verify_async`).
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let kept = rt.block_on(async move {
        let listener = match inherited {
            Some(l) => tokio::net::TcpListener::from_std(l)
                .context("cannot take over the listening socket of the previous image")?,
            None => tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("cannot listen on {addr} (SlurmctldPort in use?)"))?,
        };
        tracing::info!(
            "gsctld {} for cluster {} listening on {addr}; {recovered} jobs recovered from {}",
            env!("CARGO_PKG_VERSION"),
            cfg.cluster_name,
            cfg.state_save_location.display()
        );
        tokio::spawn(gsched_ctld::group_commit::run(shared.clone(), batches));
        let sched = shared.clone();
        let min_gap = cfg.scheduler.params.sched_min_interval();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = sched.wake.notified() => {}
                    _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                }
                let t = std::time::Instant::now();
                {
                    let now = server::now();
                    let mut st = sched.lock();
                    let effects = st.schedule(now);
                    let started: Vec<u32> = effects
                        .iter()
                        .filter_map(|e| match e {
                            gsched_ctld::state::Effect::Launch { job_id, .. } => Some(*job_id),
                            _ => None,
                        })
                        .collect();
                    sched
                        .metrics
                        .pass(t.elapsed().as_secs_f64(), &started, &st, now);
                    drop(st);
                    gsched_ctld::dispatch::send(sched.clone(), effects);
                }
                // The next pass starts `sched_min_interval` after this one ended at the
                // earliest: wake-ups meanwhile (a submission loop, jobs ending) are one
                // pass, whose launches go to each node in one request. A pass after a quiet
                // spell starts at once (submit-to-start latency). A long pass (a deep queue,
                // thousands of nodes) is followed by as long a pause, so that requests get
                // at least half of the thread however often the pass is woken.
                let took = t.elapsed();
                let long = if took >= PASS_PAUSE_FROM {
                    took
                } else {
                    Duration::ZERO
                };
                let pause = long.max(min_gap);
                if !pause.is_zero() {
                    tokio::time::sleep(pause).await;
                }
            }
        });
        if let Some(log) = log_file {
            tokio::spawn(reopen_on_sigusr2(log));
        }
        tokio::spawn(reconfigure_on_sighup(shared.clone()));
        let app = server::router(shared.clone());
        let header_timeout = std::time::Duration::from_secs(cfg.message_timeout.into());
        gsched_proto::server::serve_api(listener, app, header_timeout, async {
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                    .expect("signal handler");
            tokio::select! {
                _ = term.recv() => tracing::info!("gsctld shutting down"),
                _ = tokio::signal::ctrl_c() => tracing::info!("gsctld shutting down"),
                _ = gsched_proto::reexec::requested() => {
                    tracing::info!("gsctld stopping to read its config again")
                }
            }
        })
        .await
        .context("API server failed")
    })?;
    // Launches and node calls in flight finish (or are cut, which a restart recovers).
    rt.shutdown_timeout(Duration::from_secs(5));
    if gsched_proto::reexec::is_requested() {
        let listener = kept.and_then(|l| l.into_std().ok());
        let e = gsched_proto::reexec::exec_self(listener);
        bail!("reconfigure: cannot execute gsctld anew: {e}; start it again");
    }
    Ok(())
}

/// SIGHUP is Slurm's `scontrol reconfigure` signal: check the config, tell the node
/// daemons, execute anew; a config that does not pass leaves gsctld as it is.
async fn reconfigure_on_sighup(sh: Arc<Shared>) {
    use tokio::signal::unix::{signal, SignalKind};
    let Ok(mut hup) = signal(SignalKind::hangup()) else {
        tracing::warn!("cannot catch SIGHUP: use scontrol reconfigure");
        return;
    };
    while hup.recv().await.is_some() {
        let s = sh.clone();
        match tokio::task::spawn_blocking(move || gsched_ctld::reconfigure::run(&s)).await {
            Ok(Ok(())) => tracing::info!("SIGHUP: reading the config again"),
            Ok(Err(e)) => tracing::error!("SIGHUP: {e}"),
            Err(e) => tracing::error!("SIGHUP: {e}"),
        }
    }
}

/// SIGUSR2 opens the log file again, as slurmctld does (logrotate's postrotate).
async fn reopen_on_sigusr2(log: Arc<daemon_log::LogFile>) {
    use tokio::signal::unix::{signal, SignalKind};
    let Ok(mut usr2) = signal(SignalKind::user_defined2()) else {
        tracing::warn!("cannot catch SIGUSR2: the log file is not reopened on it");
        return;
    };
    while usr2.recv().await.is_some() {
        match log.reopen() {
            Ok(()) => tracing::info!("log file reopened (SIGUSR2)"),
            Err(e) => tracing::error!("{e}"),
        }
    }
}
