//! The server side of the API that gsctld and gsnoded share (feature `server`): API errors as
//! HTTP answers, JSON bodies whose decoding errors are API errors, and [`check_request`], the
//! one function that checks every request's protocol version and credential.

use crate::api::{self, ApiError, ErrorCode};
use crate::auth::{Authenticator, Identity, Peer};
use axum::body::Bytes;
use axum::extract::connect_info::{ConnectInfo, Connected};
use axum::extract::{FromRequest, Request};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::serve::IncomingStream;
use axum::Json;
use serde::de::DeserializeOwned;
use std::sync::Arc;

/// An [`ApiError`] as an HTTP answer with the code's status.
#[derive(Debug)]
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
#[derive(Debug)]
pub struct Body<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Body<T> {
    type Rejection = ApiErr;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = Bytes::from_request(req, state).await.map_err(|e| {
            let code = if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ErrorCode::PayloadTooLarge
            } else {
                ErrorCode::BadRequest
            };
            ApiErr(ApiError::new(
                code,
                format!(
                    "cannot read the request body: {e} (at most {} bytes are accepted)",
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

/// Both ends of an accepted connection, recorded for every request when a server is run with
/// `into_make_service_with_connect_info::<ConnPeer>()`.
#[derive(Debug, Clone, Copy)]
pub struct ConnPeer(pub Option<Peer>);

impl Connected<IncomingStream<'_, tokio::net::TcpListener>> for ConnPeer {
    fn connect_info(stream: IncomingStream<'_, tokio::net::TcpListener>) -> Self {
        let remote = *stream.remote_addr();
        ConnPeer(
            stream
                .io()
                .local_addr()
                .ok()
                .map(|local| Peer { remote, local }),
        )
    }
}

/// The connection a request came on, when the server records it.
pub fn request_peer(req: &Request) -> Option<Peer> {
    req.extensions()
        .get::<ConnectInfo<ConnPeer>>()
        .and_then(|c| c.0 .0)
}

/// Checks a request's protocol version and credential; returns who sent it. `server` names
/// the daemon in messages (`gsctld`, `gsnoded`); `peer` is the connection it came on.
pub async fn check_request(
    auth: Arc<dyn Authenticator>,
    headers: &HeaderMap,
    peer: Option<Peer>,
    server: &str,
) -> Result<Identity, ApiError> {
    let range = format!("{}..={}", api::MIN_PROTOCOL_VERSION, api::PROTOCOL_VERSION);
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
                    "Incompatible versions of client and server code: the request uses protocol {v}, this {server} speaks {range}; upgrade the older side"
                ),
            ))
        }
        None => {
            return Err(ApiError::new(
                ErrorCode::ProtocolVersion,
                format!(
                    "Incompatible versions of client and server code: missing or malformed {} header (this {server} speaks {range}); upgrade the older side",
                    api::PROTOCOL_HEADER
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
    // Verifying may talk to a local daemon (munged): wait for it asynchronously where the
    // plugin can, else keep it off the async threads.
    let verified = if let Some(check) = auth.clone().verify_async(&cred, peer) {
        check.await
    } else if auth.verify_blocks() {
        tokio::task::spawn_blocking(move || auth.verify_from(&cred, peer))
            .await
            .map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))?
    } else {
        auth.verify_from(&cred, peer)
    };
    verified.map_err(|e| {
        ApiError::new(
            ErrorCode::AuthenticationFailed,
            format!("Protocol authentication error: {e}"),
        )
    })
}

/// Serves `app` on `listener` until `shutdown` completes, then lets the requests in flight
/// finish (for up to `header_timeout`). Returns the listener, still open, when the daemon
/// is to be executed anew ([`crate::reexec`]).
///
/// Like `axum::serve`, plus what a daemon facing hostile clients needs: a client that opens
/// a connection and does not send a whole request head within `header_timeout`
/// (`MessageTimeout=`) is dropped, and so is a keep-alive connection idle that long, so
/// that slow or silent clients cannot pile up connections. Requests carry [`ConnPeer`] as
/// `ConnectInfo`, as with `into_make_service_with_connect_info`.
pub async fn serve_api(
    listener: tokio::net::TcpListener,
    app: axum::Router,
    header_timeout: std::time::Duration,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<Option<tokio::net::TcpListener>> {
    use hyper_util::rt::{TokioIo, TokioTimer};
    use std::sync::atomic::{AtomicBool, Ordering};
    use tower::ServiceExt;
    // The stop, told to every connection; and the connections still open, counted by
    // the senders they hold (the receiver ends when the last one is dropped).
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let (live_tx, mut live_rx) = tokio::sync::mpsc::channel::<()>(1);
    tokio::pin!(shutdown);
    loop {
        let (stream, remote) = tokio::select! {
            conn = listener.accept() => match conn {
                Ok(c) => c,
                // Out of file descriptors and the like: wait a little rather than spin.
                Err(_) => {
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        let peer = ConnPeer(stream.local_addr().ok().map(|local| Peer { remote, local }));
        let app = app.clone();
        // Whether a request has come on this connection (see the stop below).
        let asked = Arc::new(AtomicBool::new(false));
        let seen = asked.clone();
        let svc =
            hyper::service::service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
                seen.store(true, Ordering::Relaxed);
                req.extensions_mut().insert(ConnectInfo(peer));
                app.clone().oneshot(req.map(axum::body::Body::new))
            });
        let conn = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(header_timeout)
            .serve_connection(TokioIo::new(stream), svc);
        let mut stop = stop_rx.clone();
        let live = live_tx.clone();
        tokio::spawn(async move {
            let _live = live;
            tokio::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => return,
                _ = stop.wait_for(|s| *s) => {}
            }
            // Stopping. A connection accepted just before, whose request has not arrived
            // yet, is not closed unanswered (its client would get a reset after sending):
            // its request is awaited (within the header timeout) and answered. Idle kept
            // connections close at once (their clients send again on a new connection).
            let until = tokio::time::Instant::now() + header_timeout;
            while !asked.load(Ordering::Relaxed) && tokio::time::Instant::now() < until {
                tokio::select! {
                    _ = conn.as_mut() => return,
                    _ = tokio::time::sleep(std::time::Duration::from_millis(2)) => {}
                }
            }
            conn.as_mut().graceful_shutdown();
            let _ = conn.await;
        });
    }
    // Stopping for good: new connections are refused at once. Executed anew
    // (`reexec`): the socket stays open, unaccepted, and goes to the new image, so that
    // clients wait in its backlog.
    let kept = crate::reexec::is_requested().then_some(listener);
    let _ = stop_tx.send(true);
    drop(live_tx);
    let _ = tokio::time::timeout(
        header_timeout.max(std::time::Duration::from_secs(5)),
        live_rx.recv(),
    )
    .await;
    Ok(kept)
}
