//! What the gsnoded integration tests share: a fake controller that records registrations,
//! heartbeats and completion reports (and answers a registration with the jobs to kill that a
//! test set), and a polling wait.

#![allow(dead_code)]

use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use gsched_proto::api::{
    paths, Ack, HeartbeatRequest, HeartbeatResponse, JobCompleteRequest, RegisterRequest,
    RegisterResponse,
};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the fake controller was sent.
#[derive(Default)]
pub struct Seen {
    pub registers: Vec<RegisterRequest>,
    pub heartbeats: Vec<HeartbeatRequest>,
    pub completes: Vec<JobCompleteRequest>,
    /// Answer to the next registration.
    pub kill_on_register: Vec<u32>,
}

pub type Shared = Arc<Mutex<Seen>>;

async fn register(
    State(s): State<Shared>,
    Json(r): Json<RegisterRequest>,
) -> Json<RegisterResponse> {
    let mut s = s.lock().unwrap();
    s.registers.push(r);
    Json(RegisterResponse {
        kill: std::mem::take(&mut s.kill_on_register),
        heartbeat_interval_secs: 1,
    })
}

async fn heartbeat(
    State(s): State<Shared>,
    Json(r): Json<HeartbeatRequest>,
) -> Json<HeartbeatResponse> {
    s.lock().unwrap().heartbeats.push(r);
    Json(HeartbeatResponse {
        registered: true,
        kill: vec![],
    })
}

async fn complete(State(s): State<Shared>, Json(r): Json<JobCompleteRequest>) -> Json<Ack> {
    s.lock().unwrap().completes.push(r);
    Json(Ack { ok: true })
}

/// The fake controller's routes, recording into `seen`.
pub fn controller(seen: Shared) -> Router {
    Router::new()
        .route(paths::NODES_REGISTER, post(register))
        .route(paths::NODES_HEARTBEAT, post(heartbeat))
        .route(paths::JOBS_COMPLETE, post(complete))
        .with_state(seen)
}

/// Polls `f` until it holds; panics naming `what` after `timeout`.
pub fn wait_until(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(25));
    }
}
