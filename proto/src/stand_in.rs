//! A daemon of an older release, for the tests of the fallbacks to single requests: it
//! serves one API path (`POST`, JSON in, `{"ok":true}` out) and answers every other path
//! `not_found`, as gsctld's and gsnoded's own fallback handlers do for a path they do not
//! know. It records what it was asked, in order: the job id of each request to the path it
//! knows, and the path of each other request.
//!
//! Only for tests (feature `stand-in`, which the daemons enable for their tests alone).

use crate::api::{ApiError, ErrorCode};
use crate::job::JobId;
use crate::server::ApiErr;
use serde::de::DeserializeOwned;
use std::sync::{Arc, Mutex};

/// What the stand-in was asked, in order.
pub type Asked = Arc<Mutex<Vec<String>>>;

/// Starts the stand-in on a free loopback port, serving `known` with requests of type `T`
/// (`id` names the job of one); returns the port and what it was asked.
pub async fn older_daemon<T>(known: &'static str, id: fn(&T) -> JobId) -> (u16, Asked)
where
    T: DeserializeOwned + Send + 'static,
{
    let asked = Asked::default();
    let (on_known, on_other) = (asked.clone(), asked.clone());
    let app = axum::Router::new()
        .route(
            known,
            axum::routing::post(move |axum::Json(req): axum::Json<T>| {
                on_known.lock().unwrap().push(id(&req).to_string());
                std::future::ready(axum::Json(crate::api::Ack { ok: true }))
            }),
        )
        .fallback(move |uri: axum::http::Uri| {
            on_other.lock().unwrap().push(uri.path().to_string());
            std::future::ready(ApiErr(ApiError::new(
                ErrorCode::NotFound,
                format!("Not found: no {}", uri.path()),
            )))
        });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port for the stand-in daemon");
    let port = listener.local_addr().expect("its port").port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (port, asked)
}
