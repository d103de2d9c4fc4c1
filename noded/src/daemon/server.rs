//! gsnoded's side of the API (`/v1/node/...`): the routes, and the one place where every
//! request's protocol version and credential are checked. Only root, `SlurmUser` and
//! gsnoded's own user may call it (in practice that is the controller), except
//! `node/step_io` and `node/step_stdin`, which a step's own user (gsrun) may call for that
//! step.

use super::{now, Node};
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use gsched_proto::api::{
    self, paths, Ack, ApiError, BatchResponse, BatchResult, ErrorCode, LaunchBatch, LaunchRequest,
    NodeSignalRequest, PingResponse, TerminateRequest,
};
pub use gsched_proto::server::{check_request, request_peer, ApiErr, Body};
use std::sync::Arc;

async fn auth_layer(State(node): State<Arc<Node>>, mut req: Request, next: Next) -> Response {
    if let Some(other) = addressed_elsewhere(req.headers(), &node.settings.node) {
        return ApiErr(ApiError::new(
            ErrorCode::InvalidNodeName,
            format!(
                "this is gsnoded of node {}, not of node {other}: check NodeAddr= and Port= of both in the config (each node daemon needs its own address and port)",
                node.settings.node
            ),
        ))
        .into_response();
    }
    let peer = request_peer(&req);
    // A step's output is read by the step's own user (gsrun); the handler checks the uid.
    let users_may_call =
        req.uri().path() == paths::NODE_STEP_IO || req.uri().path() == paths::NODE_STEP_STDIN;
    match check_request(node.auth.clone(), req.headers(), peer, "gsnoded").await {
        Ok(id) if users_may_call || node.callers().may(id.uid) => {
            req.extensions_mut().insert(id);
            next.run(req).await
        }
        Ok(id) => ApiErr(node.callers().denied(id.uid)).into_response(),
        Err(e) => {
            tracing::debug!("refused a request: {e}");
            ApiErr(e).into_response()
        }
    }
}

/// Who may call a node daemon: root, `SlurmUser` and the daemon's own user (in practice the
/// controller). gsnoded and the virtual-node host apply the same rule.
#[derive(Debug, Clone, Copy)]
pub struct Callers {
    pub own_uid: u32,
    pub slurm_uid: Option<u32>,
}

impl Callers {
    pub fn may(&self, uid: u32) -> bool {
        uid == 0 || uid == self.own_uid || Some(uid) == self.slurm_uid
    }

    /// The refusal of a request from `uid`.
    pub fn denied(&self, uid: u32) -> ApiError {
        ApiError::new(
            ErrorCode::AccessDenied,
            format!(
                "Access/permission denied: uid {uid} may not call gsnoded; only root, SlurmUser{} and gsnoded's own uid {} may",
                self.slurm_uid
                    .map(|u| format!(" (uid {u})"))
                    .unwrap_or_default(),
                self.own_uid
            ),
        )
    }
}

/// The node a request names in [`api::NODE_HEADER`] when that is not `me`.
fn addressed_elsewhere(headers: &axum::http::HeaderMap, me: &str) -> Option<String> {
    let named = headers.get(api::NODE_HEADER)?;
    let named = String::from_utf8_lossy(named.as_bytes());
    (named != me).then(|| named.into_owned())
}

/// The router with every gsnoded path.
pub fn router(node: Arc<Node>) -> Router {
    Router::new()
        .route(paths::NODE_PING, get(ping).post(ping))
        .route(paths::NODE_LAUNCH, post(launch))
        .route(paths::NODE_LAUNCH_BATCH, post(launch_batch))
        .route(paths::NODE_SIGNAL, post(signal))
        .route(paths::NODE_TERMINATE, post(terminate))
        .route(paths::NODE_SUSPEND, post(suspend))
        .route(paths::NODE_REBOOT, post(reboot))
        .route(paths::NODE_HEALTH_CHECK, post(health_check))
        .route(paths::NODE_EPILOG, post(epilog))
        .route(paths::NODE_RECONFIGURE, post(reconfigure))
        .route(paths::NODE_SHUTDOWN, post(shutdown))
        .route(paths::NODE_STEP_LAUNCH, post(step_launch))
        .route(paths::NODE_STEP_SIGNAL, post(step_signal))
        .route(paths::NODE_STEP_IO, post(step_io))
        .route(paths::NODE_STEP_STDIN, post(step_stdin))
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(node.clone(), auth_layer))
        .layer(DefaultBodyLimit::max(api::MAX_BODY_BYTES))
        .with_state(node)
}

type Node_ = State<Arc<Node>>;

async fn ping(State(node): Node_) -> Json<PingResponse> {
    Json(PingResponse {
        cluster: node.settings.cluster.clone(),
        host: node.settings.node.clone(),
        version: api::GSCHED_VERSION.to_string(),
        protocol: api::PROTOCOL_VERSION,
        start_time: node.start_time,
        now: now(),
    })
}

async fn launch(State(node): Node_, Body(req): Body<LaunchRequest>) -> Result<Json<Ack>, ApiErr> {
    match launch_all(node, vec![req]).await?.pop() {
        Some(BatchResult { error: Some(e), .. }) => Err(ApiErr(e)),
        _ => Ok(Json(Ack { ok: true })),
    }
}

/// Several jobs of one scheduling pass, one result per job.
async fn launch_batch(
    State(node): Node_,
    Body(req): Body<LaunchBatch>,
) -> Result<Json<BatchResponse>, ApiErr> {
    let results = launch_all(node, req.jobs).await?;
    Ok(Json(BatchResponse { results }))
}

/// Launches `jobs` one after the other. They run to their end in a task of their own even
/// when the controller's connection drops half-way (gsctld killed): the request's future
/// would otherwise be dropped after a job entered the table and before its gsstepd
/// started, leaving a job that is listed as held here but never runs.
async fn launch_all(node: Arc<Node>, jobs: Vec<LaunchRequest>) -> Result<Vec<BatchResult>, ApiErr> {
    tokio::spawn(async move {
        let mut results = Vec::with_capacity(jobs.len());
        for job in jobs {
            let job_id = job.job_id;
            let error = node.launch(job).await.err();
            results.push(BatchResult { job_id, error });
        }
        results
    })
    .await
    .map_err(|e| {
        ApiErr(ApiError::new(
            ErrorCode::Internal,
            format!("launch task failed: {e}"),
        ))
    })
}

async fn signal(
    State(node): Node_,
    Body(req): Body<NodeSignalRequest>,
) -> Result<Json<Ack>, ApiErr> {
    node.signal(req).await?;
    Ok(Json(Ack { ok: true }))
}

async fn suspend(
    State(node): Node_,
    Body(req): Body<gsched_proto::api::NodeSuspendRequest>,
) -> Result<Json<Ack>, ApiErr> {
    node.suspend(req).await?;
    Ok(Json(Ack { ok: true }))
}

async fn terminate(
    State(node): Node_,
    Body(req): Body<TerminateRequest>,
) -> Result<Json<Ack>, ApiErr> {
    node.terminate(req).await?;
    Ok(Json(Ack { ok: true }))
}

/// `HealthCheckProgram`, when the controller asks (every `HealthCheckInterval`): answered at
/// once, run in the background.
async fn health_check(
    State(node): Node_,
    Body(req): Body<gsched_proto::resv::NodeHealthCheckRequest>,
) -> Json<Ack> {
    tokio::spawn(async move { node.health_check(&req.program).await });
    Json(Ack { ok: true })
}

/// A job's run ended: its Epilog (answered at once, reported when done).
async fn epilog(State(node): Node_, Body(req): Body<api::NodeEpilogRequest>) -> Json<Ack> {
    node.epilog(req);
    Json(Ack { ok: true })
}

/// `scontrol reconfigure`, forwarded by the controller: read the config again if it loads.
async fn reconfigure(State(node): Node_) -> Result<Json<Ack>, ApiErr> {
    node.reconfigure()
        .map_err(|m| ApiErr(ApiError::new(ErrorCode::BadRequest, m)))?;
    Ok(Json(Ack { ok: true }))
}

/// `scontrol shutdown`, forwarded by the controller: stop as on SIGTERM (jobs keep running).
async fn shutdown() -> Json<Ack> {
    tracing::info!("shutdown requested by the controller; jobs keep running");
    gsched_proto::reexec::request_stop();
    Json(Ack { ok: true })
}

/// `scontrol reboot`: run `RebootProgram`.
async fn reboot(
    State(node): Node_,
    Body(req): Body<gsched_proto::resv::NodeRebootRequest>,
) -> Result<Json<Ack>, ApiErr> {
    tracing::warn!("reboot requested: running {}", req.program);
    super::life::reboot(&req.program).map_err(|e| {
        ApiErr(ApiError::new(
            ErrorCode::Internal,
            format!(
                "node {}: cannot run RebootProgram {}: {e}",
                node.settings.node, req.program
            ),
        ))
    })?;
    Ok(Json(Ack { ok: true }))
}

async fn step_launch(
    State(node): Node_,
    Body(req): Body<gsched_proto::step::StepLaunchRequest>,
) -> Result<Json<Ack>, ApiErr> {
    node.step_launch(req).await?;
    Ok(Json(Ack { ok: true }))
}

async fn step_signal(
    State(node): Node_,
    Body(req): Body<gsched_proto::step::NodeStepSignalRequest>,
) -> Result<Json<Ack>, ApiErr> {
    node.step_signal(req).await?;
    Ok(Json(Ack { ok: true }))
}

async fn step_io(
    State(node): Node_,
    axum::Extension(who): axum::Extension<gsched_proto::auth::Identity>,
    Body(req): Body<gsched_proto::step::StepIoRequest>,
) -> Result<Json<gsched_proto::step::StepIoResponse>, ApiErr> {
    Ok(Json(node.step_io(req, &who).await?))
}

async fn step_stdin(
    State(node): Node_,
    axum::Extension(who): axum::Extension<gsched_proto::auth::Identity>,
    Body(req): Body<gsched_proto::step::StepStdinRequest>,
) -> Result<Json<Ack>, ApiErr> {
    node.step_stdin(req, &who).await?;
    Ok(Json(Ack { ok: true }))
}

async fn not_found(req: Request) -> ApiErr {
    ApiErr(ApiError::new(
        ErrorCode::NotFound,
        format!(
            "Not found: gsnoded has no {} {}",
            req.method(),
            req.uri().path()
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_for_another_node_is_recognised() {
        let mut h = axum::http::HeaderMap::new();
        assert_eq!(addressed_elsewhere(&h, "n1"), None);
        h.insert(api::NODE_HEADER, "n1".parse().unwrap());
        assert_eq!(addressed_elsewhere(&h, "n1"), None);
        assert_eq!(addressed_elsewhere(&h, "n2"), Some("n1".to_string()));
    }
}
