//! Registration and heartbeats. At start, and whenever the controller answers a heartbeat
//! with `registered: false` (it restarted or forgot the node), gsnoded first re-adopts the
//! jobs of its spool directory and then registers with the full list of jobs it holds; the
//! controller treats a job missing from that list as never launched. Both answers carry the
//! jobs the controller no longer assigns here, which gsnoded kills. Each heartbeat carries
//! the node's load (with memory and network counters), every job's live usage and progress
//! counters, and the GPU samples taken since the last one.

use super::Node;
use gsched_proto::api::{
    paths, HeartbeatRequest, HeartbeatResponse, RegisterRequest, RegisterResponse,
};
use std::sync::Arc;
use std::time::Duration;

const BACKOFF_START: Duration = Duration::from_millis(200);
const BACKOFF_MAX: Duration = Duration::from_secs(5);
/// Used if the controller asks for heartbeats every 0 seconds.
const MIN_HEARTBEAT: Duration = Duration::from_secs(1);

/// Registers, then heartbeats, forever.
pub(crate) async fn run(node: Arc<Node>) {
    loop {
        node.adopt_spool().await;
        let answer = register(&node).await;
        node.kill_unassigned(&answer.kill).await;
        let interval =
            Duration::from_secs(answer.heartbeat_interval_secs.into()).max(MIN_HEARTBEAT);
        heartbeat_until_unregistered(&node, interval).await;
        tracing::info!("the controller no longer knows this node; registering again");
    }
}

/// Registers until the controller answers.
async fn register(node: &Arc<Node>) -> RegisterResponse {
    let mut delay = BACKOFF_START;
    let mut last_error = String::new();
    loop {
        let req = RegisterRequest {
            name: node.settings.node.clone(),
            cpus: node.settings.cpus,
            real_memory_mb: node.settings.real_memory_mb,
            version: gsched_proto::api::GSCHED_VERSION.to_string(),
            boot_time: node.boot_time,
            start_time: node.start_time,
            running: node.running(),
            gpus: node.settings.gpus.devices.clone(),
        };
        let client = node.client.clone();
        let answer = tokio::task::spawn_blocking(move || {
            client.post::<_, RegisterResponse>(paths::NODES_REGISTER, &req)
        })
        .await;
        match answer {
            Ok(Ok(r)) => {
                tracing::info!(
                    "registered with the controller at {} ({} jobs held, {} to kill)",
                    node.client.addr(),
                    node.running().len(),
                    r.kill.len()
                );
                return r;
            }
            Ok(Err(e)) => {
                let msg = e.to_string();
                if msg != last_error {
                    tracing::warn!(
                        "cannot register with the controller at {}: {msg}; retrying",
                        node.client.addr()
                    );
                    last_error = msg;
                }
            }
            Err(e) => tracing::error!("registration task failed: {e}"),
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(BACKOFF_MAX);
    }
}

/// Heartbeats every `interval` until the controller says the node is not registered.
async fn heartbeat_until_unregistered(node: &Arc<Node>, interval: Duration) {
    let mut failing = false;
    loop {
        tokio::time::sleep(interval).await;
        let sampler = node.clone();
        let (progress, usage) = tokio::task::spawn_blocking(move || {
            let usage = sampler.job_usage();
            (sampler.job_progress(&usage), usage)
        })
        .await
        .unwrap_or_default();
        let req = HeartbeatRequest {
            name: node.settings.node.clone(),
            running: node.running(),
            progress,
            load: super::life::sample(&node.settings.node, node.settings.cpus),
            gpu_samples: node.take_gpu_samples(),
            usage,
        };
        let client = node.client.clone();
        let sent = req.gpu_samples.clone();
        let answer = tokio::task::spawn_blocking(move || {
            client.post::<_, HeartbeatResponse>(paths::NODES_HEARTBEAT, &req)
        })
        .await;
        if !matches!(answer, Ok(Ok(_))) {
            node.put_back_gpu_samples(sent);
        }
        match answer {
            Ok(Ok(r)) => {
                if failing {
                    tracing::info!("the controller answers heartbeats again");
                    failing = false;
                }
                if !r.registered {
                    return;
                }
                node.kill_unassigned(&r.kill).await;
            }
            Ok(Err(e)) => {
                if !failing {
                    tracing::warn!("heartbeat to {} failed: {e}", node.client.addr());
                    failing = true;
                } else {
                    tracing::debug!("heartbeat failed: {e}");
                }
            }
            Err(e) => tracing::error!("heartbeat task failed: {e}"),
        }
    }
}
