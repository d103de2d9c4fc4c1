//! `scontrol reconfigure` and SIGHUP: the controller checks its config file, tells every
//! node daemon to read it again, and executes itself anew ([`gsched_proto::reexec`]).
//! `scontrol shutdown` goes the same way to stop the daemons instead ([`shutdown`]).
//!
//! The checks are those gsctld makes at start-up ([`startup_checks`], shared with
//! `main`), so a config that would stop a fresh gsctld is refused while the running one
//! goes on with what it has; the admin gets the reason. One more is made: the state store
//! may not move (`StateSaveLocation`), as the new image would find an empty queue there
//! while the jobs' records stay behind.

use crate::server::Shared;
use gsched_proto::api::{paths, Ack};
use gsched_proto::client::Client;
use gsched_proto::config::{AuthType, Config};
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

/// How long one node daemon gets to take the request.
const NODE_TIMEOUT: Duration = Duration::from_secs(5);
/// Node daemons asked at once.
const NODE_FANOUT: usize = 32;

/// What gsctld checks in a config before it serves (start-up and `reconfigure`): the
/// authentication plugin, `AdminUsers=`, `topology.conf`, and the controller's address
/// (loopback only under `auth/none`). Returns that address.
pub fn startup_checks(cfg: &Config) -> anyhow::Result<SocketAddr> {
    use anyhow::{bail, Context};
    gsched_auth::from_config(cfg)?;
    for name in &cfg.admin_users {
        if gsched_proto::users::resolve_user(name).is_none() {
            bail!("AdminUsers: no such user {name:?}; fix the name or remove it from AdminUsers=");
        }
    }
    if cfg.lifecycle.topology == gsched_proto::lifecycle::TopologyPlugin::Tree {
        gsched_proto::topology_conf::Topology::load_beside(&cfg.path)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    let host = cfg.ctld_host.connect_addr().to_string();
    let addrs: Vec<_> = (host.as_str(), cfg.ctld_port)
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve SlurmctldHost address {host}"))?
        .collect();
    let Some(addr) = addrs.first().copied() else {
        bail!("SlurmctldHost address {host} resolves to nothing");
    };
    if cfg.auth_type == AuthType::None && !addr.ip().is_loopback() {
        bail!(
            "AuthType=auth/none is only allowed on loopback, but SlurmctldHost is {host} ({addr}); \
             use AuthType=auth/munge or set SlurmctldHost=name(127.0.0.1)"
        );
    }
    Ok(addr)
}

/// Loads the config file `running` was read from and checks it; the reason when the
/// controller must keep its current config.
pub fn check(running: &Config) -> Result<Config, String> {
    let keep = "gsctld keeps running with its current config";
    let cfg = Config::load(&running.path).map_err(|e| format!("{e} ({keep})"))?;
    startup_checks(&cfg).map_err(|e| format!("{e:#} ({keep})"))?;
    if cfg.state_save_location != running.state_save_location {
        return Err(format!(
            "StateSaveLocation changed from {} to {}: the queue cannot move while gsctld runs; \
             stop gsctld, move the folder, then start it ({keep})",
            running.state_save_location.display(),
            cfg.state_save_location.display()
        ));
    }
    Ok(cfg)
}

/// Asks every registered node daemon to read the config again (each one address once:
/// virtual nodes share one); waits for their answers up to [`NODE_TIMEOUT`] each.
/// Returns the nodes that did not take it, with why.
pub fn forward_to_nodes(sh: &Arc<Shared>, path: &'static str) -> Vec<(String, String)> {
    let endpoints = sh.lock().registered_node_endpoints();
    let mut failed = Vec::new();
    for chunk in endpoints.chunks(NODE_FANOUT) {
        let handles: Vec<_> = chunk
            .iter()
            .cloned()
            .map(|(node, ep)| {
                let auth = sh.auth.clone();
                std::thread::spawn(move || {
                    let c = Client::new(ep, auth)
                        .with_timeout(NODE_TIMEOUT)
                        .for_node(&node);
                    let r = c.post::<_, Ack>(path, &serde_json::json!({}));
                    (node, r.err().map(|e| e.to_string()))
                })
            })
            .collect();
        for h in handles {
            if let Ok((node, Some(e))) = h.join() {
                tracing::warn!("{path}: node {node} did not take it: {e}");
                failed.push((node, e));
            }
        }
    }
    failed
}

/// The whole `reconfigure`, once the caller is known to be an admin: check, tell the
/// nodes, then stop serving to be executed anew (in-flight requests finish first). Blocks:
/// run it on the blocking pool.
pub fn run(sh: &Arc<Shared>) -> Result<(), String> {
    let running = sh.lock().cfg.clone();
    check(&running)?;
    let failed = forward_to_nodes(sh, paths::NODE_RECONFIGURE);
    tracing::info!(
        "reconfigure: executing gsctld anew with {}{}",
        running.path.display(),
        if failed.is_empty() {
            String::new()
        } else {
            format!(
                " ({} node daemon(s) did not take it: send them SIGHUP or restart them)",
                failed.len()
            )
        }
    );
    gsched_proto::reexec::request();
    Ok(())
}

/// `scontrol shutdown [slurmctld|controller]`, once the caller is known to be an admin:
/// the node daemons stop (unless `controller_only`), then the controller stops serving and
/// exits, as on SIGTERM. Running jobs go on; the queue is in the store. Blocks.
pub fn shutdown(sh: &Arc<Shared>, controller_only: bool) {
    if !controller_only {
        let failed = forward_to_nodes(sh, paths::NODE_SHUTDOWN);
        if !failed.is_empty() {
            tracing::warn!(
                "shutdown: {} node daemon(s) did not take it; stop them with SIGTERM",
                failed.len()
            );
        }
    }
    tracing::info!(
        "shutdown requested{}",
        if controller_only {
            " (controller only)"
        } else {
            ""
        }
    );
    gsched_proto::reexec::request_stop();
}
