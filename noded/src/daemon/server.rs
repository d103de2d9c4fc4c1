//! gsnoded's side of the API (`/v1/node/...`): the routes, and the one place where every
//! request's protocol version and credential are checked. Only root, `SlurmUser` and
//! gsnoded's own user may call it; in practice that is the controller.

use super::{now, Node};
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, FromRequest, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use gsched_proto::api::{
    self, paths, Ack, ApiError, ErrorCode, LaunchRequest, NodeSignalRequest, PingResponse,
    TerminateRequest,
};
use gsched_proto::auth::{Authenticator, Identity};
use serde::de::DeserializeOwned;
use std::sync::Arc;

/// An [`ApiError`] as an HTTP answer with the code's status.
pub struct ApiErr(pub ApiError);

impl From<ApiError> for ApiErr {
    fn from(e: ApiError) -> Self {
        ApiErr(e)
    }
}

impl IntoResponse for ApiErr {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.0.code.http_status())
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        (status, Json(self.0)).into_response()
    }
}

/// A JSON body whose decoding errors are API errors (not axum's plain-text rejections).
pub struct Body<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Body<T> {
    type Rejection = ApiErr;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = Bytes::from_request(req, state).await.map_err(|e| {
            ApiErr(ApiError::new(
                ErrorCode::BadRequest,
                format!(
                    "cannot read the request body: {e} (at most {} bytes)",
                    api::MAX_BODY_BYTES
                ),
            ))
        })?;
        serde_json::from_slice(&bytes).map(Body).map_err(|e| {
            ApiErr(ApiError::new(
                ErrorCode::BadRequest,
                format!("malformed request body: {e}"),
            ))
        })
    }
}

/// Checks a request's protocol version and credential; returns who sent it.
pub async fn check_request(
    auth: Arc<dyn Authenticator>,
    headers: &HeaderMap,
) -> Result<Identity, ApiError> {
    let version = headers
        .get(api::PROTOCOL_HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u32>().ok());
    match version {
        Some(v) if (api::MIN_PROTOCOL_VERSION..=api::PROTOCOL_VERSION).contains(&v) => {}
        Some(v) => {
            return Err(ApiError::new(
                ErrorCode::ProtocolVersion,
                format!(
                    "Incompatible versions of client and server code: the request uses protocol {v}, this gsnoded speaks {}..={}; upgrade the older side",
                    api::MIN_PROTOCOL_VERSION,
                    api::PROTOCOL_VERSION
                ),
            ))
        }
        None => {
            return Err(ApiError::new(
                ErrorCode::ProtocolVersion,
                format!(
                    "Incompatible versions of client and server code: missing or malformed {} header (this gsnoded speaks {}..={}); upgrade the older side",
                    api::PROTOCOL_HEADER,
                    api::MIN_PROTOCOL_VERSION,
                    api::PROTOCOL_VERSION
                ),
            ))
        }
    }
    let cred = headers
        .get(api::AUTH_HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Gsched "))
        .ok_or_else(|| {
            ApiError::new(
                ErrorCode::AuthenticationFailed,
                "Protocol authentication error: the request carries no credential (authorization: Gsched <credential>)",
            )
        })?
        .to_string();
    // Verifying may talk to a local daemon (munged): keep it off the async threads.
    tokio::task::spawn_blocking(move || auth.verify(&cred))
        .await
        .map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))?
        .map_err(|e| {
            ApiError::new(
                ErrorCode::AuthenticationFailed,
                format!("Protocol authentication error: {e}"),
            )
        })
}

async fn auth_layer(State(node): State<Arc<Node>>, mut req: Request, next: Next) -> Response {
    match check_request(node.auth.clone(), req.headers()).await {
        Ok(id) if node.may_call(id.uid) => {
            req.extensions_mut().insert(id);
            next.run(req).await
        }
        Ok(id) => ApiErr(ApiError::new(
            ErrorCode::AccessDenied,
            format!(
                "Access/permission denied: uid {} may not call gsnoded; only root, SlurmUser{} and gsnoded's own uid {} may",
                id.uid,
                node.settings
                    .slurm_uid
                    .map(|u| format!(" (uid {u})"))
                    .unwrap_or_default(),
                node.own_uid
            ),
        ))
        .into_response(),
        Err(e) => {
            tracing::debug!("refused a request: {e}");
            ApiErr(e).into_response()
        }
    }
}

/// The router with every gsnoded path.
pub fn router(node: Arc<Node>) -> Router {
    Router::new()
        .route(paths::NODE_PING, get(ping).post(ping))
        .route(paths::NODE_LAUNCH, post(launch))
        .route(paths::NODE_SIGNAL, post(signal))
        .route(paths::NODE_TERMINATE, post(terminate))
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
    node.launch(req).await?;
    Ok(Json(Ack { ok: true }))
}

async fn signal(
    State(node): Node_,
    Body(req): Body<NodeSignalRequest>,
) -> Result<Json<Ack>, ApiErr> {
    node.signal(req).await?;
    Ok(Json(Ack { ok: true }))
}

async fn terminate(
    State(node): Node_,
    Body(req): Body<TerminateRequest>,
) -> Result<Json<Ack>, ApiErr> {
    node.terminate(req).await?;
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
