//! Sends the state machine's [`Effect`]s to the node daemons and feeds their answers back.
//! Calls use the one API client on blocking threads, so a slow node never stalls the
//! controller's async threads or holds the state lock.

use crate::server::{now, Shared};
use crate::state::{Effect, LaunchFailure};
use gsched_proto::api::{paths, Ack, ErrorCode, NodeSignalRequest, SignalScope, TerminateRequest};
use gsched_proto::client::{Client, ClientError};
use std::sync::Arc;
use std::time::Duration;

fn client(sh: &Shared, node: &str) -> Option<Client> {
    let ep = sh.lock().node_endpoint(node)?;
    Some(
        Client::new(ep, sh.auth.clone())
            .with_timeout(Duration::from_secs(15))
            .with_pool(sh.node_connections.clone())
            .for_node(node),
    )
}

/// Sends every effect in the background.
pub fn send(sh: Arc<Shared>, effects: Vec<Effect>) {
    for e in effects {
        let sh = sh.clone();
        tokio::task::spawn_blocking(move || run(&sh, e));
    }
}

fn run(sh: &Arc<Shared>, e: Effect) {
    match e {
        Effect::Launch { node, req } => {
            let (id, start) = (req.job_id, req.start_time);
            let result = match client(sh, &node) {
                None => Err(LaunchFailure::Refused(format!("unknown node {node}"))),
                Some(c) => match c.post::<_, Ack>(paths::NODE_LAUNCH, &*req) {
                    Ok(_) => Ok(()),
                    Err(ClientError::Connect { source, .. }) => {
                        Err(LaunchFailure::Unreachable(source.to_string()))
                    }
                    Err(ClientError::Api(e)) if e.code == ErrorCode::JobAlreadyDone => {
                        Err(LaunchFailure::Busy(e.message))
                    }
                    Err(ClientError::Api(e)) => Err(LaunchFailure::Refused(e.message)),
                    // Sent, but the answer was lost: the node may have it. Treat it as
                    // launched; reconciliation with the node's job list settles it.
                    Err(other) => {
                        tracing::warn!("job {id}: launch answer from {node} lost: {other}");
                        Ok(())
                    }
                },
            };
            let failed = result.is_err();
            sh.lock().launch_result(id, start, result, now());
            if failed {
                sh.wake.notify_one();
            }
        }
        Effect::Terminate {
            node,
            job_id,
            reason,
            kill_wait,
        } => {
            // The job's steps on its other nodes end with it.
            crate::steps_api::to_other_nodes(sh, job_id, libc::SIGTERM, true, kill_wait);
            let Some(c) = client(sh, &node) else { return };
            let req = TerminateRequest {
                job_id,
                kill_wait,
                reason,
            };
            match c.post::<_, Ack>(paths::NODE_TERMINATE, &req) {
                Ok(_) => sh.lock().terminate_result(job_id, true, now()),
                Err(e) if e.code() == Some(ErrorCode::InvalidJobId) => {
                    sh.lock().terminate_result(job_id, false, now());
                    sh.wake.notify_one();
                }
                Err(e) => {
                    tracing::warn!("job {job_id}: terminate on {node} failed: {e}; will retry")
                }
            }
        }
        Effect::Signal {
            node,
            job_id,
            signal,
            scope,
        } => {
            if scope != SignalScope::Batch {
                // `--signal` without `B:` and `gscancel --signal` reach every step's tasks
                // (and, with `gscancel -f`, the batch shell's processes too).
                crate::steps_api::to_other_nodes(sh, job_id, signal, false, 0);
            }
            let Some(c) = client(sh, &node) else { return };
            let (batch_only, full) = scope.flags();
            let req = NodeSignalRequest {
                job_id,
                signal,
                batch_only,
                full,
            };
            if let Err(e) = c.post::<_, Ack>(paths::NODE_SIGNAL, &req) {
                tracing::warn!("job {job_id}: signal {signal} on {node} failed: {e}");
            }
        }
        Effect::Suspend {
            node,
            job_id,
            suspend,
        } => {
            let Some(c) = client(sh, &node) else { return };
            let req = gsched_proto::api::NodeSuspendRequest { job_id, suspend };
            if let Err(e) = c.post::<_, Ack>(paths::NODE_SUSPEND, &req) {
                tracing::warn!(
                    "job {job_id}: {} on {node} failed: {e}",
                    if suspend { "suspend" } else { "resume" }
                );
            }
        }
        Effect::Reboot { node, program } => {
            let Some(c) = client(sh, &node) else { return };
            let req = gsched_proto::resv::NodeRebootRequest { program };
            if let Err(e) = c.post::<_, Ack>(paths::NODE_REBOOT, &req) {
                tracing::warn!("node {node}: reboot request failed: {e}");
            }
        }
    }
}
