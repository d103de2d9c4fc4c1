//! Virtual nodes: one gsnoded process stands for many nodes (`gsnoded --virtual -N v[1-1000]`),
//! the way Slurm's front-end mode or kwok let a scheduler be measured at a scale no test
//! machine has. Every virtual node registers and heartbeats with the controller like a real
//! one, over the same API, so the controller cannot tell them apart; jobs are "run" by a
//! timer instead of a process: nothing forks, nothing is confined, no output is written.
//!
//! A job runs for `GSCHED_VIRTUAL_RUNTIME` seconds when its environment sets it (a decimal
//! number), else for its time limit, else until it is cancelled; it ends with exit code
//! `GSCHED_VIRTUAL_EXIT` (default 0). Signals that would kill a process end the job killed
//! by that signal; a terminate request (scancel, time limit) ends it by SIGTERM; suspend
//! stops its clock. Job steps (gsrun) are refused.
//!
//! All virtual nodes of a process share one address and port (their `NodeAddr=`/`Port=` in
//! the config must be equal); the controller names the node of every request in
//! [`api::NODE_HEADER`], which routes it here. Jobs live only in memory: when the process
//! restarts, its nodes register with no jobs and the controller requeues what they ran.

use crate::daemon::host_port;
use crate::daemon::server::Callers;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::HeaderMap;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use gsched_proto::api::{
    self, paths, Ack, ApiError, BatchResponse, BatchResult, ErrorCode, HeartbeatRequest,
    HeartbeatResponse, JobCompleteRequest, JobProgress, LaunchBatch, LaunchRequest,
    NodeSignalRequest, NodeSuspendRequest, PingResponse, RegisterRequest, RegisterResponse,
    RunningJob, TerminateReason, TerminateRequest,
};
use gsched_proto::auth::Authenticator;
use gsched_proto::client::Client;
use gsched_proto::config::Config;
use gsched_proto::job::JobId;
use gsched_proto::server::{check_request, request_peer, ApiErr, Body};
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

/// The environment variable giving a virtual job's run time in seconds.
pub const RUNTIME_ENV: &str = "GSCHED_VIRTUAL_RUNTIME";
/// The environment variable giving a virtual job's exit code.
pub const EXIT_ENV: &str = "GSCHED_VIRTUAL_EXIT";
/// Calls to the controller in flight at once, over all virtual nodes (registrations at start,
/// heartbeats, reports), so that ten thousand nodes do not open ten thousand connections.
const MAX_CALLS: usize = 64;
const CONTROLLER_TIMEOUT: Duration = Duration::from_secs(15);
const BACKOFF_START: Duration = Duration::from_millis(200);
const BACKOFF_MAX: Duration = Duration::from_secs(5);

/// Why the virtual nodes cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum VirtualError {
    #[error("virtual node {0} is not defined in the config; add it to a NodeName= line")]
    UnknownNode(String),
    #[error("virtual nodes must share one address and port, but {first} is at {first_at} and {other} at {other_at}; give their NodeName= line one NodeAddr= and one Port=")]
    Endpoints {
        first: String,
        first_at: String,
        other: String,
        other_at: String,
    },
    #[error("no virtual node named; pass -N with a node list such as v[1-100]")]
    Empty,
}

/// One virtual node.
struct VNode {
    name: String,
    cpus: u32,
    real_memory_mb: u64,
    jobs: Mutex<BTreeMap<JobId, VJob>>,
}

/// A job "running" on a virtual node.
struct VJob {
    start_time: i64,
    cpus: u32,
    exit_code: i32,
    /// When the job's clock last (re)started, and the run time left then (`None`: forever).
    since: Instant,
    left: Option<Duration>,
    suspended: bool,
    /// CPU time "used" before `since`, microseconds (so that the invalid-job ladder sees a
    /// busy job).
    cpu_usec: u64,
    timer: Option<tokio::task::AbortHandle>,
}

impl VJob {
    fn cpu_usec_now(&self) -> u64 {
        if self.suspended {
            self.cpu_usec
        } else {
            self.cpu_usec + self.since.elapsed().as_micros() as u64 * u64::from(self.cpus)
        }
    }
}

/// The process: the nodes it stands for and its way to the controller.
pub struct VirtualHost {
    nodes: BTreeMap<String, Arc<VNode>>,
    cluster: String,
    client: Client,
    auth: Arc<dyn Authenticator>,
    calls: Semaphore,
    callers: Callers,
    start_time: i64,
    boot_time: i64,
    /// The shared `host:port` the nodes listen on.
    pub endpoint: (String, u16),
}

impl std::fmt::Debug for VirtualHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VirtualHost")
            .field("nodes", &self.nodes.len())
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A job's run time and exit code from its environment: (`None` = until cancelled, code).
pub fn job_plan(req: &LaunchRequest) -> Result<(Option<Duration>, i32), String> {
    let var = |k: &str| {
        req.environment
            .iter()
            .rev()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.trim().to_string())
    };
    let runtime = match var(RUNTIME_ENV) {
        Some(v) => {
            let secs: f64 = v
                .parse()
                .ok()
                .filter(|s: &f64| s.is_finite() && *s >= 0.0)
                .ok_or_else(|| {
                    format!("{RUNTIME_ENV}={v} is not a number of seconds (such as 30 or 0.5)")
                })?;
            Some(Duration::from_secs_f64(secs))
        }
        None => req
            .time_limit
            .map(|m| Duration::from_secs(u64::from(m) * 60)),
    };
    let exit = match var(EXIT_ENV) {
        Some(v) => v
            .parse::<i32>()
            .ok()
            .filter(|c| (0..=255).contains(c))
            .ok_or_else(|| format!("{EXIT_ENV}={v} is not an exit code from 0 to 255"))?,
        None => 0,
    };
    Ok((runtime, exit))
}

/// Whether a process would end on `signal` under its default disposition.
fn signal_ends_process(signal: i32) -> bool {
    !matches!(
        signal,
        0 | libc::SIGCHLD
            | libc::SIGCONT
            | libc::SIGSTOP
            | libc::SIGTSTP
            | libc::SIGTTIN
            | libc::SIGTTOU
            | libc::SIGURG
            | libc::SIGWINCH
    )
}

/// How a virtual job ended.
struct Ending {
    exit_code: i32,
    signal: i32,
    terminated_for: Option<TerminateReason>,
}

impl VirtualHost {
    /// The virtual nodes `names` of `cfg`, talking to the controller with `auth`.
    pub fn new(
        cfg: &Config,
        names: &[String],
        auth: Arc<dyn Authenticator>,
    ) -> Result<Arc<VirtualHost>, VirtualError> {
        let first = names.first().ok_or(VirtualError::Empty)?;
        let at = |n: &str| (cfg.node_addr(n).unwrap_or(n).to_string(), cfg.node_port(n));
        let endpoint = at(first);
        let mut nodes = BTreeMap::new();
        for n in names {
            let def = cfg
                .node(n)
                .ok_or_else(|| VirtualError::UnknownNode(n.clone()))?;
            if at(n) != endpoint {
                let (a, p) = at(n);
                return Err(VirtualError::Endpoints {
                    first: first.clone(),
                    first_at: host_port(&endpoint.0, endpoint.1),
                    other: n.clone(),
                    other_at: host_port(&a, p),
                });
            }
            nodes.insert(
                n.clone(),
                Arc::new(VNode {
                    name: n.clone(),
                    cpus: def.cpus,
                    real_memory_mb: def.real_memory_mb,
                    jobs: Mutex::new(BTreeMap::new()),
                }),
            );
        }
        let controller = host_port(cfg.ctld_host.connect_addr(), cfg.ctld_port);
        Ok(Arc::new(VirtualHost {
            nodes,
            cluster: cfg.cluster_name.clone(),
            client: Client::new(controller, auth.clone())
                .with_timeout(CONTROLLER_TIMEOUT)
                .with_pool(gsched_proto::client::ConnectionPool::new()),
            auth,
            calls: Semaphore::new(MAX_CALLS),
            callers: Callers {
                own_uid: nix::unistd::getuid().as_raw(),
                slurm_uid: gsched_proto::users::user_by_name(&cfg.slurm_user).map(|u| u.uid),
            },
            start_time: crate::daemon::now(),
            boot_time: crate::procfs::boot_time().unwrap_or(0),
            endpoint,
        }))
    }

    /// How many nodes this process stands for.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The controller's `host:port`.
    pub fn controller(&self) -> &str {
        self.client.addr()
    }

    /// One call to the controller, on a blocking thread, at most [`MAX_CALLS`] at once.
    async fn post<B, R>(&self, path: &'static str, body: B) -> Result<R, String>
    where
        B: serde::Serialize + Send + 'static,
        R: serde::de::DeserializeOwned + Send + 'static,
    {
        self.post_with(path, || body).await
    }

    /// [`VirtualHost::post`] with a body made once the call may go: a heartbeat's list of
    /// running jobs must be taken when it is sent, not before it waited for its turn (the
    /// controller takes a job missing from a fresh list as lost).
    async fn post_with<B, R>(
        &self,
        path: &'static str,
        body: impl FnOnce() -> B,
    ) -> Result<R, String>
    where
        B: serde::Serialize + Send + 'static,
        R: serde::de::DeserializeOwned + Send + 'static,
    {
        let _permit = self.calls.acquire().await.map_err(|e| e.to_string())?;
        let body = body();
        let client = self.client.clone();
        match tokio::task::spawn_blocking(move || client.post::<_, R>(path, &body)).await {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(e)) if e.code() == Some(ErrorCode::InvalidJobId) => Err(String::new()),
            Ok(Err(e)) => Err(e.to_string()),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Serves the nodes' API on `listener` until `shutdown`, registering and heartbeating
    /// every node meanwhile.
    pub async fn serve(
        self: Arc<Self>,
        listener: tokio::net::TcpListener,
        message_timeout: Duration,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let count = self.nodes.len() as u32;
        let tasks: Vec<_> = self
            .nodes
            .values()
            .enumerate()
            .map(|(i, n)| tokio::spawn(self.clone().node_life(n.clone(), i as u32, count)))
            .collect();
        let result = gsched_proto::server::serve_api(
            listener,
            router(self.clone()),
            message_timeout,
            shutdown,
        )
        .await;
        for t in tasks {
            t.abort();
        }
        result.map(|_| ())
    }

    /// Registers node `n` (the `i`th of `count`), then heartbeats it, forever; heartbeats
    /// of the nodes are spread evenly over the interval.
    async fn node_life(self: Arc<Self>, n: Arc<VNode>, i: u32, count: u32) {
        loop {
            let answer = self.register(&n).await;
            self.drop_jobs(&n, &answer.kill);
            let interval = Duration::from_secs(answer.heartbeat_interval_secs.max(1).into());
            tokio::time::sleep(interval.mul_f64(f64::from(i) / f64::from(count.max(1)))).await;
            loop {
                tokio::time::sleep(interval).await;
                match self
                    .post_with::<_, HeartbeatResponse>(paths::NODES_HEARTBEAT, || {
                        self.heartbeat_of(&n)
                    })
                    .await
                {
                    Ok(r) if !r.registered => break,
                    Ok(r) => self.drop_jobs(&n, &r.kill),
                    Err(e) => tracing::debug!("node {}: heartbeat failed: {e}", n.name),
                }
            }
            tracing::info!(
                "node {}: the controller forgot it; registering again",
                n.name
            );
        }
    }

    async fn register(&self, n: &VNode) -> RegisterResponse {
        let mut delay = BACKOFF_START;
        loop {
            let req = || RegisterRequest {
                name: n.name.clone(),
                cpus: n.cpus,
                real_memory_mb: n.real_memory_mb,
                version: api::GSCHED_VERSION.to_string(),
                boot_time: self.boot_time,
                start_time: self.start_time,
                running: running(n),
                gpus: Vec::new(),
            };
            match self
                .post_with::<_, RegisterResponse>(paths::NODES_REGISTER, req)
                .await
            {
                Ok(r) => return r,
                Err(e) => tracing::debug!("node {}: cannot register ({e}); retrying", n.name),
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(BACKOFF_MAX);
        }
    }

    fn heartbeat_of(&self, n: &VNode) -> HeartbeatRequest {
        let jobs = lock(&n.jobs);
        let busy: u32 = jobs.values().filter(|j| !j.suspended).map(|j| j.cpus).sum();
        HeartbeatRequest {
            name: n.name.clone(),
            running: jobs
                .iter()
                .map(|(&job_id, j)| RunningJob {
                    job_id,
                    start_time: j.start_time,
                })
                .collect(),
            gpu_samples: Vec::new(),
            load: Some(gsched_proto::resv::NodeLoad {
                load_avg: f64::from(busy),
                cpu_load_pct: busy * 100 / n.cpus.max(1),
                gpu_util_pct: None,
                mem_total_mb: Some(n.real_memory_mb),
                mem_used_mb: None,
                net_rx_bytes: None,
                net_tx_bytes: None,
            }),
            // Nothing runs, so there is no live usage to sample.
            usage: Vec::new(),
            progress: jobs
                .iter()
                .map(|(&job_id, j)| JobProgress {
                    job_id,
                    start_time: j.start_time,
                    cpu_usec: Some(j.cpu_usec_now()),
                    output_bytes: None,
                    gpu_util_percent: None,
                })
                .collect(),
        }
    }

    /// Forgets jobs the controller no longer assigns to `n` (nothing runs to kill).
    fn drop_jobs(&self, n: &VNode, ids: &[JobId]) {
        let mut jobs = lock(&n.jobs);
        for id in ids {
            if let Some(j) = jobs.remove(id) {
                if let Some(t) = j.timer {
                    t.abort();
                }
            }
        }
    }

    fn node(&self, headers: &HeaderMap) -> Result<Arc<VNode>, ApiErr> {
        let Some(name) = headers.get(api::NODE_HEADER) else {
            return Err(ApiErr(ApiError::new(
                ErrorCode::BadRequest,
                format!(
                    "this gsnoded hosts {} virtual nodes and needs the {} header to know which one a request is for (only the controller's calls carry it; job steps are not supported on virtual nodes)",
                    self.nodes.len(),
                    api::NODE_HEADER
                ),
            )));
        };
        let name = String::from_utf8_lossy(name.as_bytes());
        self.nodes.get(name.as_ref()).cloned().ok_or_else(|| {
            ApiErr(ApiError::new(
                ErrorCode::InvalidNodeName,
                format!("this gsnoded does not host virtual node {name}"),
            ))
        })
    }

    fn launch(self: &Arc<Self>, n: &Arc<VNode>, req: LaunchRequest) -> Result<(), ApiErr> {
        let (runtime, exit_code) =
            job_plan(&req).map_err(|m| ApiErr(ApiError::new(ErrorCode::BadRequest, m)))?;
        let mut jobs = lock(&n.jobs);
        if let Some(j) = jobs.get(&req.job_id) {
            if j.start_time == req.start_time {
                return Ok(());
            }
            return Err(ApiErr(ApiError::new(
                ErrorCode::JobAlreadyDone,
                format!(
                    "job {} still runs here from an earlier start; retry after it ended",
                    req.job_id
                ),
            )));
        }
        let mut job = VJob {
            start_time: req.start_time,
            cpus: req.cpus,
            exit_code,
            since: Instant::now(),
            left: runtime,
            suspended: false,
            cpu_usec: 0,
            timer: None,
        };
        job.timer = self.arm(n, req.job_id, &job);
        jobs.insert(req.job_id, job);
        Ok(())
    }

    /// Starts the timer that ends `job` when its run time is over.
    fn arm(
        self: &Arc<Self>,
        n: &Arc<VNode>,
        id: JobId,
        job: &VJob,
    ) -> Option<tokio::task::AbortHandle> {
        let left = job.left?;
        let (host, node, start, code) = (self.clone(), n.clone(), job.start_time, job.exit_code);
        let task = tokio::spawn(async move {
            tokio::time::sleep(left).await;
            host.end(
                &node,
                id,
                start,
                Ending {
                    exit_code: code,
                    signal: 0,
                    terminated_for: None,
                },
            );
        });
        Some(task.abort_handle())
    }

    /// Ends job `id` of `n` (if it is still that run) and reports it until the controller
    /// acknowledges.
    fn end(self: &Arc<Self>, n: &Arc<VNode>, id: JobId, start_time: i64, how: Ending) {
        {
            let mut jobs = lock(&n.jobs);
            match jobs.get(&id) {
                Some(j) if j.start_time == start_time => {
                    if let Some(j) = jobs.remove(&id) {
                        if let Some(t) = j.timer {
                            t.abort();
                        }
                    }
                }
                _ => return,
            }
        }
        let report = JobCompleteRequest {
            job_id: id,
            node: n.name.clone(),
            start_time,
            exit_code: how.exit_code,
            signal: how.signal,
            end_time: crate::daemon::now(),
            launch_error: None,
            terminated_for: how.terminated_for,
            oom_kills: 0,
            usage: None,
            gpu_failure: None,
            prolog_error: None,
        };
        let host = self.clone();
        tokio::spawn(async move {
            let mut delay = BACKOFF_START;
            loop {
                match host
                    .post::<_, Ack>(paths::JOBS_COMPLETE, report.clone())
                    .await
                {
                    Ok(_) => return,
                    // The controller does not know the job (any more): nothing to report.
                    Err(e) if e.is_empty() => return,
                    Err(e) => tracing::debug!("job {id}: cannot report its end ({e}); retrying"),
                }
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(BACKOFF_MAX);
            }
        });
    }

    /// Ends the current run of job `id` of `n`, if it has one, killed by `signal`.
    fn end_current(
        self: &Arc<Self>,
        n: &Arc<VNode>,
        id: JobId,
        signal: i32,
        terminated_for: Option<TerminateReason>,
    ) {
        if let Some(start) = Self::current_run(n, id) {
            let how = Ending {
                exit_code: 0,
                signal,
                terminated_for,
            };
            self.end(n, id, start, how);
        }
    }

    fn current_run(n: &VNode, id: JobId) -> Option<i64> {
        lock(&n.jobs).get(&id).map(|j| j.start_time)
    }

    fn suspend(self: &Arc<Self>, n: &Arc<VNode>, req: NodeSuspendRequest) -> Result<(), ApiErr> {
        let mut jobs = lock(&n.jobs);
        let Some(j) = jobs.get_mut(&req.job_id) else {
            return Err(ApiErr(ApiError::plain(ErrorCode::InvalidJobId)));
        };
        if req.suspend && !j.suspended {
            j.cpu_usec = j.cpu_usec_now();
            if let Some(left) = j.left {
                j.left = Some(left.saturating_sub(j.since.elapsed()));
            }
            if let Some(t) = j.timer.take() {
                t.abort();
            }
            j.suspended = true;
        } else if !req.suspend && j.suspended {
            j.since = Instant::now();
            j.suspended = false;
            j.timer = self.arm(n, req.job_id, j);
        }
        Ok(())
    }
}

fn running(n: &VNode) -> Vec<RunningJob> {
    lock(&n.jobs)
        .iter()
        .map(|(&job_id, j)| RunningJob {
            job_id,
            start_time: j.start_time,
        })
        .collect()
}

async fn auth_layer(
    State(host): State<Arc<VirtualHost>>,
    mut req: Request,
    next: Next,
) -> Response {
    let peer = request_peer(&req);
    match check_request(host.auth.clone(), req.headers(), peer, "gsnoded").await {
        Ok(id) if host.callers.may(id.uid) => {
            req.extensions_mut().insert(id);
            next.run(req).await
        }
        Ok(id) => ApiErr(host.callers.denied(id.uid)).into_response(),
        Err(e) => ApiErr(e).into_response(),
    }
}

/// The routes of the virtual nodes: the controller's calls; steps are refused.
pub fn router(host: Arc<VirtualHost>) -> Router {
    Router::new()
        .route(paths::NODE_PING, get(ping).post(ping))
        .route(paths::NODE_LAUNCH, post(launch))
        .route(paths::NODE_LAUNCH_BATCH, post(launch_batch))
        .route(paths::NODE_SIGNAL, post(signal))
        .route(paths::NODE_TERMINATE, post(terminate))
        .route(paths::NODE_SUSPEND, post(suspend))
        .route(paths::NODE_HEALTH_CHECK, post(health_check))
        .route(paths::NODE_EPILOG, post(epilog))
        .route(paths::NODE_SHUTDOWN, post(shutdown))
        .fallback(refused)
        .layer(middleware::from_fn_with_state(host.clone(), auth_layer))
        .layer(DefaultBodyLimit::max(api::MAX_BODY_BYTES))
        .with_state(host)
}

type Host = State<Arc<VirtualHost>>;

async fn ping(State(host): Host, headers: HeaderMap) -> Result<Json<PingResponse>, ApiErr> {
    let n = host.node(&headers)?;
    Ok(Json(PingResponse {
        cluster: host.cluster.clone(),
        host: n.name.clone(),
        version: api::GSCHED_VERSION.to_string(),
        protocol: api::PROTOCOL_VERSION,
        start_time: host.start_time,
        now: crate::daemon::now(),
    }))
}

async fn launch(
    State(host): Host,
    headers: HeaderMap,
    Body(req): Body<LaunchRequest>,
) -> Result<Json<Ack>, ApiErr> {
    let n = host.node(&headers)?;
    host.launch(&n, req)?;
    Ok(Json(Ack { ok: true }))
}

async fn launch_batch(
    State(host): Host,
    headers: HeaderMap,
    Body(req): Body<LaunchBatch>,
) -> Result<Json<BatchResponse>, ApiErr> {
    let n = host.node(&headers)?;
    let results = req
        .jobs
        .into_iter()
        .map(|job| BatchResult {
            job_id: job.job_id,
            error: host.launch(&n, job).err().map(|e| e.0),
        })
        .collect();
    Ok(Json(BatchResponse { results }))
}

async fn signal(
    State(host): Host,
    headers: HeaderMap,
    Body(req): Body<NodeSignalRequest>,
) -> Result<Json<Ack>, ApiErr> {
    let n = host.node(&headers)?;
    if VirtualHost::current_run(&n, req.job_id).is_none() {
        return Err(ApiErr(ApiError::plain(ErrorCode::InvalidJobId)));
    }
    // A virtual job has no steps: only a signal to the batch shell (or to everything) can
    // end it.
    if req.scope() != gsched_proto::api::SignalScope::Steps && signal_ends_process(req.signal) {
        host.end_current(&n, req.job_id, req.signal, None);
    }
    Ok(Json(Ack { ok: true }))
}

async fn terminate(
    State(host): Host,
    headers: HeaderMap,
    Body(req): Body<TerminateRequest>,
) -> Result<Json<Ack>, ApiErr> {
    let n = host.node(&headers)?;
    host.end_current(&n, req.job_id, libc::SIGTERM, Some(req.reason));
    Ok(Json(Ack { ok: true }))
}

async fn suspend(
    State(host): Host,
    headers: HeaderMap,
    Body(req): Body<NodeSuspendRequest>,
) -> Result<Json<Ack>, ApiErr> {
    let n = host.node(&headers)?;
    host.suspend(&n, req)?;
    Ok(Json(Ack { ok: true }))
}

/// Virtual nodes have no host of their own to check: the request is acknowledged, nothing
/// runs.
async fn health_check() -> Json<Ack> {
    Json(Ack { ok: true })
}

/// A virtual node runs no Epilog: it answers that it is done.
async fn epilog(
    State(host): Host,
    headers: HeaderMap,
    Body(req): Body<gsched_proto::api::NodeEpilogRequest>,
) -> Result<Json<Ack>, ApiErr> {
    let n = host.node(&headers)?;
    let done = gsched_proto::api::EpilogCompleteRequest {
        node: n.name.clone(),
        job_id: req.job_id,
        start_time: req.start_time,
        error: None,
    };
    tokio::spawn(async move {
        if let Err(e) = host
            .post::<_, Ack>(paths::NODES_EPILOG_COMPLETE, done)
            .await
        {
            tracing::debug!("job {}: cannot answer its Epilog ({e})", req.job_id);
        }
    });
    Ok(Json(Ack { ok: true }))
}

/// `scontrol shutdown`: the virtual host stops (its virtual jobs are gone).
async fn shutdown() -> Json<Ack> {
    tracing::info!("shutdown requested by the controller");
    gsched_proto::reexec::request_stop();
    Json(Ack { ok: true })
}

async fn refused(req: Request) -> ApiErr {
    ApiErr(ApiError::new(
        ErrorCode::BadRequest,
        format!(
            "{} {} is not supported on virtual nodes (gsnoded --virtual runs batch jobs only: no job steps, no reboot)",
            req.method(),
            req.uri().path()
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch_req(env: &[(&str, &str)], limit: Option<u32>) -> LaunchRequest {
        LaunchRequest {
            job_id: 7,
            start_time: 100,
            name: "v".into(),
            uid: 0,
            gid: 0,
            user_name: "root".into(),
            script: String::new(),
            argv: Vec::new(),
            work_dir: "/".into(),
            stdout: None,
            stderr: None,
            stdin: None,
            open_mode: None,
            environment: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            cpus: 2,
            mem_mb: 10,
            node_index: 0,
            time_limit: limit,
            gpus: Vec::new(),
            prolog_env: Vec::new(),
        }
    }

    #[test]
    fn run_time_from_environment_else_time_limit_else_forever() {
        let r = launch_req(&[(RUNTIME_ENV, "1.5"), (EXIT_ENV, "3")], Some(10));
        assert_eq!(
            job_plan(&r).unwrap(),
            (Some(Duration::from_millis(1500)), 3)
        );
        let r = launch_req(&[], Some(2));
        assert_eq!(job_plan(&r).unwrap(), (Some(Duration::from_secs(120)), 0));
        assert_eq!(job_plan(&launch_req(&[], None)).unwrap(), (None, 0));
    }

    #[test]
    fn bad_run_time_or_exit_code_is_explained() {
        let e = job_plan(&launch_req(&[(RUNTIME_ENV, "soon")], None)).unwrap_err();
        assert!(e.contains("GSCHED_VIRTUAL_RUNTIME=soon"), "{e}");
        let e = job_plan(&launch_req(&[(RUNTIME_ENV, "-1")], None)).unwrap_err();
        assert!(e.contains("not a number of seconds"), "{e}");
        let e = job_plan(&launch_req(&[(EXIT_ENV, "300")], None)).unwrap_err();
        assert!(e.contains("0 to 255"), "{e}");
    }

    #[test]
    fn only_killing_signals_end_a_job() {
        assert!(signal_ends_process(libc::SIGTERM));
        assert!(signal_ends_process(libc::SIGUSR1));
        assert!(signal_ends_process(libc::SIGKILL));
        assert!(!signal_ends_process(0));
        assert!(!signal_ends_process(libc::SIGCONT));
        assert!(!signal_ends_process(libc::SIGWINCH));
    }

    fn config(text: &str) -> Config {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("gsched.conf");
        std::fs::write(&p, text).unwrap();
        Config::load(&p).unwrap()
    }

    #[test]
    fn nodes_must_share_one_endpoint() {
        let base = "ClusterName=v\nSlurmctldHost=localhost\nAuthType=auth/none\n";
        let cfg = config(&format!(
            "{base}NodeName=v[1-3] NodeAddr=127.0.0.1 Port=7000 CPUs=8 RealMemory=1000\nNodeName=w1 NodeAddr=127.0.0.1 Port=7001 CPUs=8 RealMemory=1000\nPartitionName=p Nodes=ALL Default=YES\n"
        ));
        let auth: Arc<dyn Authenticator> = Arc::new(gsched_auth::NoneAuth::current());
        let names = |s: &str| gsched_proto::hostlist::expand(s).unwrap();
        let h = VirtualHost::new(&cfg, &names("v[1-3]"), auth.clone()).unwrap();
        assert_eq!(h.len(), 3);
        assert_eq!(h.endpoint, ("127.0.0.1".to_string(), 7000));
        let e = VirtualHost::new(&cfg, &names("v1,w1"), auth.clone()).unwrap_err();
        assert!(e.to_string().contains("w1 at 127.0.0.1:7001"), "{e}");
        let e = VirtualHost::new(&cfg, &names("v[1-4]"), auth).unwrap_err();
        assert!(e.to_string().contains("v4 is not defined"), "{e}");
    }
}
