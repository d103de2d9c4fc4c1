//! Sends the state machine's [`Effect`]s to the node daemons and feeds their answers back.
//! Calls use the one API client on blocking threads, so a slow node never stalls the
//! controller's async threads or holds the state lock.

use crate::server::{now, Shared};
use crate::state::{Effect, LaunchFailure};
use gsched_proto::api::{
    paths, Ack, ApiError, BatchResponse, ErrorCode, LaunchBatch, LaunchRequest, NodeSignalRequest,
    SignalScope, TerminateRequest,
};
use gsched_proto::client::{Client, ClientError};
use gsched_proto::job::JobId;
use std::collections::BTreeMap;
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

/// Sends every effect in the background. The launches of one pass go to each node in one
/// request ([`paths::NODE_LAUNCH_BATCH`]) when there are several.
pub fn send(sh: Arc<Shared>, effects: Vec<Effect>) {
    let mut launches: BTreeMap<String, Vec<LaunchRequest>> = BTreeMap::new();
    for e in effects {
        match e {
            Effect::Launch { node, req } => launches.entry(node).or_default().push(*req),
            e => {
                let sh = sh.clone();
                tokio::task::spawn_blocking(move || run(&sh, e));
            }
        }
    }
    for (node, jobs) in launches {
        let sh = sh.clone();
        tokio::task::spawn_blocking(move || launch(&sh, &node, jobs));
    }
}

/// What a launch request's failure means for its jobs (`runs`).
fn launch_failure(e: ClientError, runs: &[(JobId, i64)], node: &str) -> Result<(), LaunchFailure> {
    match e {
        ClientError::Connect { source, .. } => Err(LaunchFailure::Unreachable(source.to_string())),
        ClientError::Api(e) => Err(api_failure(e)),
        // Sent, but the answer was lost: the node may have them. Treat them as launched;
        // reconciliation with the node's job list settles it.
        other => {
            let ids: Vec<String> = runs.iter().map(|(id, _)| id.to_string()).collect();
            tracing::warn!(
                "job(s) {}: launch answer from {node} lost: {other}",
                ids.join(",")
            );
            Ok(())
        }
    }
}

/// A node's refusal of one job.
fn api_failure(e: ApiError) -> LaunchFailure {
    if e.code == ErrorCode::JobAlreadyDone {
        LaunchFailure::Busy(e.message)
    } else {
        LaunchFailure::Refused(e.message)
    }
}

/// Starts `jobs` on `node`: one request for one job, one batch request for several (a node
/// that does not know the batch path, an older gsnoded, gets them one by one).
fn launch(sh: &Arc<Shared>, node: &str, jobs: Vec<LaunchRequest>) {
    let runs: Vec<(JobId, i64)> = jobs.iter().map(|j| (j.job_id, j.start_time)).collect();
    let results: Vec<Result<(), LaunchFailure>> = match client(sh, node) {
        None => runs
            .iter()
            .map(|_| Err(LaunchFailure::Refused(format!("unknown node {node}"))))
            .collect(),
        Some(c) if jobs.len() == 1 => {
            sh.metrics.launch_request();
            let r = c.post::<_, Ack>(paths::NODE_LAUNCH, &jobs[0]).map(|_| ());
            vec![r.or_else(|e| launch_failure(e, &runs, node))]
        }
        Some(c) => {
            let batch = LaunchBatch { jobs };
            sh.metrics.launch_request();
            match c.post::<_, BatchResponse>(paths::NODE_LAUNCH_BATCH, &batch) {
                Ok(answer) => runs
                    .iter()
                    .enumerate()
                    .map(|(i, &(id, _))| match answer.outcome(i, id) {
                        Some(Ok(())) => Ok(()),
                        Some(Err(e)) => Err(api_failure(e.clone())),
                        None => {
                            tracing::warn!(
                                "job {id}: the launch answer from {node} does not list it"
                            );
                            Ok(())
                        }
                    })
                    .collect(),
                Err(ClientError::Api(e)) if e.code == ErrorCode::NotFound => {
                    tracing::debug!("node {node} has no batch launch; launching one by one");
                    for req in batch.jobs {
                        launch(sh, node, vec![req]);
                    }
                    return;
                }
                Err(e) => {
                    let failure = launch_failure(e, &runs, node);
                    runs.iter().map(|_| failure.clone()).collect()
                }
            }
        }
    };
    let mut failed = false;
    {
        let mut st = sh.lock();
        for (&(id, start), result) in runs.iter().zip(results) {
            failed |= result.is_err();
            st.launch_result(id, start, result, now());
        }
    }
    if failed {
        sh.wake.notify_one();
    }
}

fn run(sh: &Arc<Shared>, e: Effect) {
    match e {
        Effect::Launch { node, req } => launch(sh, &node, vec![*req]),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::tests::{spec, ROOT};
    use crate::state::State;
    use crate::store::Store;
    use gsched_proto::config::Config;
    use gsched_proto::stand_in::older_daemon;
    use std::sync::Mutex;

    /// A cluster upgraded controller first: the controller's batch request is refused by the
    /// older node daemon, and the same jobs go as single launches, each recorded as started.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_node_without_batch_launches_gets_the_jobs_one_by_one() {
        let (port, asked) = older_daemon::<LaunchRequest>(paths::NODE_LAUNCH, |r| r.job_id).await;
        let dir = tempfile::tempdir().unwrap();
        let text = format!(
            "ClusterName=t\nSlurmctldHost=h(127.0.0.1)\nAuthType=auth/none\nStateSaveLocation={d}/s\n\
             SlurmdSpoolDir={d}/sp\nNodeName=n1 NodeAddr=127.0.0.1 Port={port} CPUs=2 RealMemory=1000\n\
             PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE\n",
            d = dir.path().display()
        );
        let cfg = Arc::new(Config::parse(&text, &dir.path().join("gsched.conf")).unwrap());
        let store = Store::open(&cfg.state_save_location, false).unwrap();
        let mut st = State::load(cfg.clone(), store, 1000).unwrap();
        crate::state::tests::register_node(&mut st, "n1", &[], 1000);
        let a = st.submit(spec(1), ROOT, 1000).unwrap();
        let b = st.submit(spec(1), ROOT, 1000).unwrap();
        let jobs: Vec<LaunchRequest> = st
            .schedule(1001)
            .into_iter()
            .filter_map(|e| match e {
                Effect::Launch { req, .. } => Some(*req),
                _ => None,
            })
            .collect();
        assert_eq!(jobs.len(), 2, "both jobs placed on n1 in one pass");
        let (submits, _batches) = crate::group_commit::channel();
        let sh = Arc::new(Shared {
            state: Mutex::new(st),
            wake: tokio::sync::Notify::new(),
            auth: Arc::new(gsched_auth::NoneAuth::current()),
            cfg: cfg.clone(),
            host: "h".into(),
            metrics: crate::metrics::Metrics::for_config(&cfg),
            submits,
            node_connections: gsched_proto::client::ConnectionPool::new(),
        });
        let s = sh.clone();
        tokio::task::spawn_blocking(move || launch(&s, "n1", jobs))
            .await
            .unwrap();
        assert_eq!(
            *asked.lock().unwrap(),
            [
                paths::NODE_LAUNCH_BATCH.to_string(),
                a.to_string(),
                b.to_string()
            ],
            "one batch request refused, then one launch per job"
        );
        let st = sh.lock();
        for id in [a, b] {
            assert_eq!(
                st.jobs[&id].info.state,
                gsched_proto::job::JobState::Running,
                "job {id}"
            );
        }
    }
}
