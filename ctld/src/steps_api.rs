//! The controller's step paths (`/v1/jobs/steps...`, used by `gsrun`, `gscancel N.K`,
//! `gsacct` and `gsqueue -s`) and the step messages to nodes. The state decides
//! (`crate::state::steps`); this module makes the node calls outside the state lock, on
//! blocking threads, like `crate::dispatch`.

use crate::server::{now, Shared};
use axum::extract::State as AxState;
use axum::{Extension, Json};
use gsched_proto::api::{paths, Ack, ApiError, ErrorCode};
use gsched_proto::auth::Identity;
use gsched_proto::client::{Client, ClientError};
use gsched_proto::job::JobId;
use gsched_proto::server::{ApiErr, Body};
use gsched_proto::step::{
    NodeStepSignalRequest, StepCompleteRequest, StepCreateRequest, StepCreateResponse, StepQuery,
    StepSignalRequest, StepsResponse,
};
use std::sync::Arc;
use std::time::Duration;

fn node_client(sh: &Shared, endpoint: &str) -> Client {
    Client::new(endpoint.to_string(), sh.auth.clone())
        .with_timeout(Duration::from_secs(15))
        .with_pool(sh.node_connections.clone())
}

/// Sends step signals to nodes in the background (failures are logged: a node that is
/// down has no tasks left to signal).
pub fn send_step_signals(sh: &Arc<Shared>, msgs: Vec<(String, NodeStepSignalRequest)>) {
    for (ep, m) in msgs {
        let sh = sh.clone();
        tokio::task::spawn_blocking(move || {
            if let Err(e) = node_client(&sh, &ep).post::<_, Ack>(paths::NODE_STEP_SIGNAL, &m) {
                tracing::debug!("job {}: step signal to {ep}: {e}", m.job_id);
            }
        });
    }
}

/// A signal or terminate of a whole job must reach its steps' tasks on the job's other
/// nodes too (the batch node does that itself along with the job).
pub fn to_other_nodes(sh: &Arc<Shared>, job_id: JobId, signal: i32, terminate: bool, kw: u32) {
    let eps = sh.lock().other_step_nodes(job_id);
    let msgs = eps
        .into_iter()
        .map(|ep| {
            (
                ep,
                NodeStepSignalRequest {
                    job_id,
                    step_id: None,
                    signal,
                    terminate,
                    kill_wait: kw,
                },
            )
        })
        .collect();
    send_step_signals(sh, msgs);
}

/// A job's completion arrived: its steps end with it (as in Slurm, the tasks of every step
/// are killed when the batch script ends), and steps gsrun did not report are closed.
pub fn job_ended(sh: &Arc<Shared>, job_id: JobId) {
    to_other_nodes(sh, job_id, libc::SIGKILL, true, 0);
    let closed = sh.lock().close_steps_of_ended_jobs(&[job_id], now());
    if !closed.is_empty() {
        tracing::info!(
            "job {job_id}: closed {} step(s) that were still running",
            closed.len()
        );
    }
}

type Sh = AxState<Arc<Shared>>;
type Who = Extension<Identity>;

/// `POST /v1/jobs/steps`.
pub async fn create(
    AxState(sh): Sh,
    Extension(who): Who,
    Body(req): Body<StepCreateRequest>,
) -> Result<Json<StepCreateResponse>, ApiErr> {
    let (resp, launches) = sh.lock().create_step(&req, &who, now())?;
    let (job_id, step_id) = (resp.step.job_id, resp.step.step_id);
    let sh2 = sh.clone();
    let names: Vec<(String, String)> = resp
        .nodes
        .iter()
        .map(|n| (n.endpoint.clone(), n.name.clone()))
        .collect();
    let failures = tokio::task::spawn_blocking(move || {
        let mut failures = Vec::new();
        let mut launched = Vec::new();
        let mut prolog_failed = Vec::new();
        for (ep, l) in launches {
            match node_client(&sh2, &ep).post::<_, Ack>(paths::NODE_STEP_LAUNCH, &l) {
                Ok(_) => launched.push(ep),
                Err(ClientError::Api(e)) if e.code == ErrorCode::PrologFailed => {
                    let name = names.iter().find(|(p, _)| *p == ep).map(|(_, n)| n.clone());
                    failures.push(format!("{ep}: {e}"));
                    prolog_failed.push((name.unwrap_or(ep), e.message));
                }
                Err(e) => failures.push(format!("{ep}: {e}")),
            }
        }
        (failures, launched, prolog_failed)
    })
    .await
    .map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))?;
    let (failures, launched, prolog_failed) = failures;
    if !failures.is_empty() {
        let effects = {
            let mut st = sh.lock();
            let t = now();
            st.step_launch_failed(job_id, step_id, t);
            // A node's Prolog failed: drained, and the job requeued held (or cancelled).
            let mut effects = Vec::new();
            for (node, msg) in &prolog_failed {
                effects.extend(st.step_prolog_failed(node, job_id, msg, t));
            }
            effects
        };
        if !effects.is_empty() {
            crate::dispatch::send(sh.clone(), effects);
            sh.wake.notify_one();
        }
        let kill = launched
            .into_iter()
            .map(|ep| {
                (
                    ep,
                    NodeStepSignalRequest {
                        job_id,
                        step_id: Some(step_id),
                        signal: libc::SIGKILL,
                        terminate: true,
                        kill_wait: 0,
                    },
                )
            })
            .collect();
        send_step_signals(&sh, kill);
        return Err(ApiError::new(
            ErrorCode::Internal,
            format!(
                "Unable to launch step {job_id}.{step_id}: {}",
                failures.join("; ")
            ),
        )
        .into());
    }
    tracing::info!(
        "step {job_id}.{step_id}: {} task(s) on {}",
        resp.step.ntasks,
        resp.step.nodes.join(",")
    );
    Ok(Json(resp))
}

/// `POST /v1/jobs/steps/complete`.
pub async fn complete(
    AxState(sh): Sh,
    Extension(who): Who,
    Body(req): Body<StepCompleteRequest>,
) -> Result<Json<Ack>, ApiErr> {
    sh.lock().complete_step(&req, &who, now())?;
    Ok(Json(Ack { ok: true }))
}

/// `POST /v1/jobs/steps/query`.
pub async fn query(
    AxState(sh): Sh,
    Extension(who): Who,
    Body(q): Body<StepQuery>,
) -> Result<Json<StepsResponse>, ApiErr> {
    let steps = sh.lock().query_steps(&q, &who, now())?;
    Ok(Json(StepsResponse { now: now(), steps }))
}

/// `POST /v1/jobs/steps/signal`.
pub async fn signal(
    AxState(sh): Sh,
    Extension(who): Who,
    Body(req): Body<StepSignalRequest>,
) -> Result<Json<Ack>, ApiErr> {
    let msgs = sh.lock().signal_step(&req, &who, now())?;
    send_step_signals(&sh, msgs);
    Ok(Json(Ack { ok: true }))
}
