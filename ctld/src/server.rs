//! The controller's side of the API: routes, the one place where every request's protocol
//! version and credential are checked, and the handlers, which lock the state briefly, apply
//! one operation, and hand the resulting effects to [`crate::dispatch`].

use crate::dispatch;
use crate::state::{PayloadFor, State, Submission};
use axum::extract::{Request, State as AxState};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use gsched_proto::api::{
    self, paths, Ack, ApiError, ConfigResponse, ErrorCode, HeartbeatRequest, HeartbeatResponse,
    HistoryQuery, HoldRequest, JobActionResponse, JobActionResult, JobCompleteRequest, JobFilter,
    JobQuery, JobUpdateRequest, JobsResponse, NodeUpdateRequest, NodesResponse, PartitionsResponse,
    PingResponse, RegisterRequest, RegisterResponse, RequeueRequest, SignalJobsRequest,
    SubmitRequest, SubmitResponse,
};
use gsched_proto::auth::{Authenticator, Identity};
use gsched_proto::config::Config;
use gsched_proto::projection::FieldSet;
pub use gsched_proto::server::{check_request, request_peer, ApiErr, Body, ConnPeer};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::Notify;

/// What every handler and background task shares.
pub struct Shared {
    pub state: Mutex<State>,
    /// Wakes the scheduling loop (submit, job end, node change).
    pub wake: Notify,
    pub auth: Arc<dyn Authenticator>,
    pub cfg: Arc<Config>,
    pub host: String,
    /// What `/metrics` exports.
    pub metrics: crate::metrics::Metrics,
    /// The queue of submissions to the group-commit batcher ([`crate::group_commit`]).
    pub submits: crate::group_commit::Submitter,
    /// Connections to the node daemons, kept between calls.
    pub node_connections: Arc<gsched_proto::client::ConnectionPool>,
    /// The budget of launches being built and sent ([`crate::dispatch::LAUNCH_JOBS_IN_FLIGHT`]).
    pub launch_slots: crate::dispatch::LaunchSlots,
}

impl Shared {
    pub fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock would be a bug; the state is still consistent with
        // the store (every change is written through), so keep serving.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Seconds since the epoch.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

async fn auth_layer(
    AxState(shared): AxState<Arc<Shared>>,
    mut req: Request,
    next: Next,
) -> Response {
    // Prometheus scrapes without a credential; the page holds only aggregates. The API's
    // OpenAPI document is public too.
    if req.uri().path() == paths::METRICS || req.uri().path() == paths::OPENAPI {
        return next.run(req).await;
    }
    let peer = request_peer(&req);
    match check_request(shared.auth.clone(), req.headers(), peer, "gsctld").await {
        Ok(id) => {
            req.extensions_mut().insert(id);
            next.run(req).await
        }
        Err(e) => ApiErr(e).into_response(),
    }
}

/// The router with every controller path.
pub fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route(paths::PING, get(ping))
        .route(paths::JOBS, post(submit))
        .route(paths::JOBS_QUERY, post(query))
        .route(paths::JOBS_SIGNAL, post(signal))
        .route(paths::JOBS_HOLD, post(hold))
        .route(paths::JOBS_UPDATE, post(update_job))
        .route(paths::JOBS_REQUEUE, post(requeue))
        .route(paths::RESERVATIONS, get(reservations))
        .route(paths::RESERVATIONS_UPDATE, post(reservation_action))
        .route(paths::NODES_REBOOT, post(reboot))
        .route(paths::JOBS_COMPLETE, post(complete))
        .route(paths::JOBS_COMPLETE_BATCH, post(complete_batch))
        .route(paths::NODES_EPILOG_COMPLETE, post(epilog_complete))
        .route(paths::JOBS_HISTORY, post(history))
        .route(paths::JOBS_USAGE, post(job_usage))
        .route(paths::NODES_USAGE, post(node_usage))
        .route(paths::METRICS, get(metrics))
        .route(paths::OPENAPI, get(openapi))
        .route(paths::NODES, get(nodes))
        .route(paths::NODES_UPDATE, post(update_nodes))
        .route(paths::NODES_REGISTER, post(register))
        .route(paths::NODES_HEARTBEAT, post(heartbeat))
        .route(paths::PARTITIONS, get(partitions))
        .route(paths::PARTITIONS_UPDATE, post(update_partition))
        .route(paths::RECONFIGURE, post(reconfigure))
        .route(paths::SHUTDOWN, post(shutdown))
        .route(paths::SETDEBUG, post(setdebug))
        .route(paths::CONFIG, get(config))
        .route(paths::ACCT, get(acct))
        .route(paths::ACCT_UPDATE, post(acct_update))
        .route(paths::JOBS_SUSPEND, post(suspend))
        .route(paths::PRICES, get(prices))
        .route(paths::JOBS_STEPS, post(crate::steps_api::create))
        .route(paths::JOBS_STEPS_COMPLETE, post(crate::steps_api::complete))
        .route(paths::JOBS_STEPS_QUERY, post(crate::steps_api::query))
        .route(paths::JOBS_STEPS_SIGNAL, post(crate::steps_api::signal))
        .fallback(|| async {
            ApiErr(ApiError::new(
                ErrorCode::NotFound,
                "no such API path; see ARCHITECTURE.md for the /v1 paths",
            ))
        })
        .layer(middleware::from_fn_with_state(shared.clone(), auth_layer))
        .layer(axum::extract::DefaultBodyLimit::max(api::MAX_BODY_BYTES))
        .with_state(shared)
}

type Sh = AxState<Arc<Shared>>;
type Who = Extension<Identity>;

async fn ping(AxState(sh): Sh) -> Json<PingResponse> {
    let start = sh.lock().start_time;
    Json(PingResponse {
        cluster: sh.cfg.cluster_name.clone(),
        host: sh.host.clone(),
        version: api::GSCHED_VERSION.into(),
        protocol: api::PROTOCOL_VERSION,
        start_time: start,
        now: now(),
    })
}

async fn submit(
    AxState(sh): Sh,
    Extension(who): Who,
    Body(req): Body<SubmitRequest>,
) -> Result<Json<SubmitResponse>, ApiErr> {
    if !req.het.is_empty() {
        return submit_het(sh, who, req).await;
    }
    if req.test_only {
        let (job_id, answer) = sh.lock().test_submit(req.spec, who, now())?;
        return Ok(Json(SubmitResponse {
            job_id,
            test_only: Some(answer),
            deferral: None,
        }));
    }
    let held = req.spec.hold;
    // Stored with whatever else is being submitted (group commit); answered once committed.
    let (id, deferral) = sh
        .submits
        .submit(&sh, Submission::Job(Box::new(req.spec)), who)
        .await?;
    // As slurmctld's `_slurm_rpc_submit_batch_job: JobId=N` (at SlurmctldDebug=debug).
    tracing::debug!("job {id} submitted by uid {}", who.uid);
    sh.metrics.submitted(1);
    // A held job cannot start anything; the periodic pass still sees it.
    if !held {
        sh.wake.notify_one();
    }
    Ok(Json(SubmitResponse {
        job_id: id,
        test_only: None,
        deferral,
    }))
}

/// A heterogeneous job: every component in one transaction, one id (the leader's).
async fn submit_het(
    sh: Arc<Shared>,
    who: Identity,
    req: SubmitRequest,
) -> Result<Json<SubmitResponse>, ApiErr> {
    if req.test_only {
        return Err(ApiError::new(
            ErrorCode::Disabled,
            "--test-only is not supported for heterogeneous jobs by gsched; submit the components one at a time with --test-only to see where each would start",
        )
        .into());
    }
    let held = req.spec.hold || req.het.iter().any(|s| s.hold);
    let n = 1 + req.het.len() as u64;
    let mut specs = vec![req.spec];
    specs.extend(req.het);
    let (id, _) = sh.submits.submit(&sh, Submission::Het(specs), who).await?;
    sh.metrics.submitted(n);
    if !held {
        sh.wake.notify_one();
    }
    Ok(Json(SubmitResponse {
        job_id: id,
        test_only: None,
        deferral: None,
    }))
}

/// `PrivateData=jobs`: narrows a query of a user who is not an administrator to their own
/// jobs; false when nothing can match (they asked only for other users' jobs).
fn restrict_private_jobs(sh: &Shared, who: &Identity, filter: &mut JobFilter) -> bool {
    if !sh.cfg.private_data.jobs || sh.lock().is_admin(who) {
        return true;
    }
    if filter.user_ids.is_empty() {
        filter.user_ids.push(who.uid);
        return true;
    }
    filter.user_ids.retain(|u| *u == who.uid);
    !filter.user_ids.is_empty()
}

async fn query(
    AxState(sh): Sh,
    Extension(who): Who,
    Body(mut q): Body<JobQuery>,
) -> Result<Response, ApiErr> {
    let allowed = restrict_private_jobs(&sh, &who, &mut q.filter);
    let payload = if q.brief {
        PayloadFor::Nobody
    } else if sh.lock().is_admin(&who) {
        PayloadFor::Everyone
    } else {
        PayloadFor::User(who.uid)
    };
    if q.filter.visible_only {
        q.filter.hidden_partitions = sh.lock().hidden_partitions(&who);
    }
    if !q.fields.is_empty() {
        // Projected: written straight from the records under the lock (no copies), the
        // same JSON as a JobsResponse with the other fields left out.
        let mut keep = FieldSet::for_jobs(&q.fields)
            .map_err(|e| ApiError::new(ErrorCode::BadRequest, e.to_string()))?;
        if q.brief {
            keep = keep.without_script();
        }
        let mut body = Vec::with_capacity(4096);
        body.extend_from_slice(format!("{{\"now\":{},\"jobs\":[", now()).as_bytes());
        if allowed {
            sh.lock()
                .query_projected_for(&q.filter, &keep, payload, &mut body);
        }
        body.extend_from_slice(b"]}");
        return Ok((
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response());
    }
    let jobs = if allowed {
        sh.lock().query_for(&q.filter, payload)
    } else {
        Vec::new()
    };
    Ok(Json(JobsResponse {
        now: now(),
        jobs,
        energy: Vec::new(),
        gpu_usage: Vec::new(),
    })
    .into_response())
}

async fn openapi() -> Response {
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        gsched_proto::openapi::document_text(),
    )
        .into_response()
}

async fn metrics(AxState(sh): Sh) -> Response {
    let text = {
        let mut st = sh.lock();
        sh.metrics.render(&mut st, now())
    };
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        text,
    )
        .into_response()
}

/// `gsacct`: read from the store on the blocking pool, without the state lock.
async fn history(
    AxState(sh): Sh,
    Extension(who): Who,
    Body(mut q): Body<HistoryQuery>,
) -> Result<Json<JobsResponse>, ApiErr> {
    if !restrict_private_jobs(&sh, &who, &mut q.filter) {
        return Ok(Json(JobsResponse {
            now: now(),
            jobs: Vec::new(),
            energy: Vec::new(),
            gpu_usage: Vec::new(),
        }));
    }
    let db = sh.cfg.state_save_location.join(crate::store::DB_FILE);
    let cfg = sh.cfg.clone();
    // The memory of every GPU, for the GPU usage (read from the state before leaving it).
    let gpu_mem: std::collections::HashMap<(String, u32), u64> = if q.gpu_usage {
        sh.lock().gpu_memory_mb()
    } else {
        Default::default()
    };
    let answer = tokio::task::spawn_blocking(move || {
        let jobs = crate::history::query(&db, &q)?;
        // Estimated energy and cost at the calendar's prices (state/price.rs).
        let energy = match crate::state::price_calendar(&cfg) {
            Ok(cal) => crate::state::price_account(&cfg, &cal, &jobs, now()),
            Err(e) => {
                tracing::error!("accounting: no cost estimates: {e}");
                Vec::new()
            }
        };
        let gpu_usage = if q.gpu_usage {
            let mem =
                |node: &str, i: u32| gpu_mem.get(&(node.to_string(), i)).copied().unwrap_or(0);
            crate::history::gpu_usage(&db, &jobs, &mem, now())?
        } else {
            Vec::new()
        };
        Ok::<_, crate::store::StoreError>((jobs, energy, gpu_usage))
    })
    .await
    .map_err(|e| {
        ApiErr(ApiError::new(
            ErrorCode::Internal,
            format!("accounting query failed: {e}"),
        ))
    })?
    .map_err(|e| {
        tracing::error!("accounting query: {e}");
        ApiErr(ApiError::new(
            ErrorCode::Internal,
            format!("accounting query failed: {e}"),
        ))
    })?;
    let (jobs, energy, gpu_usage) = answer;
    Ok(Json(JobsResponse {
        now: now(),
        jobs,
        energy,
        gpu_usage,
    }))
}

/// `gsinfo --prices`, `gsinfo --lowload`.
async fn prices(AxState(sh): Sh) -> Json<api::PricesResponse> {
    Json(sh.lock().prices_response(now()))
}

fn results(r: Vec<(u32, Option<ApiError>)>) -> Json<JobActionResponse> {
    Json(JobActionResponse {
        results: r
            .into_iter()
            .map(|(job_id, error)| JobActionResult { job_id, error })
            .collect(),
    })
}

async fn signal(
    AxState(sh): Sh,
    Extension(who): Who,
    Body(req): Body<SignalJobsRequest>,
) -> Result<Json<JobActionResponse>, ApiErr> {
    let (r, effects) = sh
        .lock()
        .signal_jobs(&req.filter, req.signal, req.scope(), who, now())?;
    dispatch::send(sh.clone(), effects);
    sh.wake.notify_one();
    Ok(results(r))
}

async fn suspend(
    AxState(sh): Sh,
    Extension(who): Who,
    Body(req): Body<gsched_proto::api::SuspendRequest>,
) -> Result<Json<JobActionResponse>, ApiErr> {
    let (r, effects) = sh.lock().suspend(&req.ids, req.resume, who, now())?;
    dispatch::send(sh.clone(), effects);
    Ok(results(r))
}

async fn hold(
    AxState(sh): Sh,
    Extension(who): Who,
    Body(req): Body<HoldRequest>,
) -> Result<Json<JobActionResponse>, ApiErr> {
    let r = sh.lock().hold(
        &req.ids,
        &req.array_tasks,
        &req.names,
        req.release,
        who,
        now(),
    )?;
    sh.wake.notify_one();
    Ok(results(r))
}

async fn update_job(
    AxState(sh): Sh,
    Extension(who): Who,
    Body(req): Body<JobUpdateRequest>,
) -> Result<Json<Ack>, ApiErr> {
    // A het job's id updates every component (Slurm); `N+K` names one (its own id).
    let ids = sh.lock().het_ids(req.job_id);
    for id in ids {
        let req = JobUpdateRequest {
            job_id: id,
            ..req.clone()
        };
        if let Some(limit) = req.time_limit {
            sh.lock().update_time_limit(req.job_id, limit, who)?;
        }
        if req.has_other_changes() {
            sh.lock().update_job(&req, who, now())?;
        }
    }
    sh.wake.notify_one();
    Ok(Json(Ack { ok: true }))
}

async fn requeue(
    AxState(sh): Sh,
    Extension(who): Who,
    Body(req): Body<RequeueRequest>,
) -> Result<Json<JobActionResponse>, ApiErr> {
    let (r, effects) = sh.lock().requeue(&req, who, now())?;
    dispatch::send(sh.clone(), effects);
    sh.wake.notify_one();
    Ok(results(r))
}

fn require_admin(sh: &Shared, who: &Identity) -> Result<(), ApiErr> {
    if sh.lock().is_admin(who) {
        Ok(())
    } else {
        Err(ApiErr(ApiError::plain(ErrorCode::AccessDenied)))
    }
}

/// Node daemon calls (register, heartbeat, job ends): root or SlurmUser only.
fn require_slurm_user(sh: &Shared, who: &Identity) -> Result<(), ApiErr> {
    if sh.lock().is_slurm_user(who) {
        Ok(())
    } else {
        Err(ApiErr(ApiError::plain(ErrorCode::AccessDenied)))
    }
}

async fn complete(
    AxState(sh): Sh,
    Extension(who): Who,
    Body(req): Body<JobCompleteRequest>,
) -> Result<Json<Ack>, ApiErr> {
    require_slurm_user(&sh, &who)?;
    match complete_reports(&sh, std::slice::from_ref(&req)).pop() {
        Some(Err(e)) => Err(ApiErr(e)),
        _ => Ok(Json(Ack { ok: true })),
    }
}

/// Several job ends of one node: each as [`complete`], one result per report.
async fn complete_batch(
    AxState(sh): Sh,
    Extension(who): Who,
    Body(req): Body<api::JobCompleteBatch>,
) -> Result<Json<api::BatchResponse>, ApiErr> {
    require_slurm_user(&sh, &who)?;
    let results = complete_reports(&sh, &req.reports)
        .into_iter()
        .zip(&req.reports)
        .map(|(r, report)| api::BatchResult {
            job_id: report.job_id,
            error: r.err(),
        })
        .collect();
    Ok(Json(api::BatchResponse { results }))
}

/// Records the ends of one request's jobs under one lock of the state, then closes the
/// steps of the jobs that ended and wakes the scheduler.
fn complete_reports(sh: &Arc<Shared>, reports: &[JobCompleteRequest]) -> Vec<Result<(), ApiError>> {
    sh.metrics.end_request();
    let mut epilogs = Vec::new();
    let results: Vec<Result<(), ApiError>> = {
        let mut st = sh.lock();
        let now = now();
        reports
            .iter()
            .map(|r| st.complete(r, now).map(|e| epilogs.extend(e)))
            .collect()
    };
    for (r, report) in results.iter().zip(reports) {
        if r.is_ok() {
            crate::steps_api::job_ended(sh, report.job_id);
        }
    }
    if !epilogs.is_empty() {
        dispatch::send(sh.clone(), epilogs);
    }
    sh.wake.notify_one();
    results
}

/// `POST /v1/nodes/epilog_complete` (gsnoded): a node's part of an ended run is free.
async fn epilog_complete(
    AxState(sh): Sh,
    Extension(who): Who,
    Body(req): Body<api::EpilogCompleteRequest>,
) -> Result<Json<Ack>, ApiErr> {
    require_slurm_user(&sh, &who)?;
    sh.lock().epilog_complete(&req, now())?;
    sh.wake.notify_one();
    Ok(Json(Ack { ok: true }))
}

async fn nodes(AxState(sh): Sh, Extension(who): Who) -> Result<Json<NodesResponse>, ApiErr> {
    // PrivateData=nodes: as slurmctld, refuse the whole listing to ordinary users.
    if sh.cfg.private_data.nodes {
        require_admin(&sh, &who)?;
    }
    let nodes = sh.lock().node_infos();
    Ok(Json(NodesResponse { now: now(), nodes }))
}

/// `gsstat`, `gscontrol show job`: running jobs' live usage (owners and administrators).
async fn job_usage(
    AxState(sh): Sh,
    Extension(who): Who,
    Body(q): Body<gsched_proto::api::JobUsageQuery>,
) -> Json<gsched_proto::api::JobUsageResponse> {
    let jobs = sh.lock().job_usage(&q, &who);
    Json(gsched_proto::api::JobUsageResponse { now: now(), jobs })
}

/// The nodes' load samples and hourly usage; refused like the node listing under
/// `PrivateData=nodes`.
async fn node_usage(
    AxState(sh): Sh,
    Extension(who): Who,
    Body(q): Body<gsched_proto::api::NodeUsageQuery>,
) -> Result<Json<gsched_proto::api::NodeUsageResponse>, ApiErr> {
    if sh.cfg.private_data.nodes {
        require_admin(&sh, &who)?;
    }
    let t = now();
    let nodes = sh.lock().node_usage(&q, t)?;
    Ok(Json(gsched_proto::api::NodeUsageResponse { now: t, nodes }))
}

/// `scontrol reconfigure` (admins): see [`crate::reconfigure`].
async fn reconfigure(AxState(sh): Sh, Extension(who): Who) -> Result<Json<Ack>, ApiErr> {
    require_admin(&sh, &who)?;
    let s = sh.clone();
    tokio::task::spawn_blocking(move || crate::reconfigure::run(&s))
        .await
        .map_err(|e| ApiErr(ApiError::new(ErrorCode::Internal, e.to_string())))?
        .map_err(|m| ApiErr(ApiError::new(ErrorCode::BadRequest, m)))?;
    Ok(Json(Ack { ok: true }))
}

/// `scontrol shutdown` (admins): see [`crate::reconfigure::shutdown`].
async fn shutdown(
    AxState(sh): Sh,
    Extension(who): Who,
    Body(req): Body<gsched_proto::api::ShutdownRequest>,
) -> Result<Json<Ack>, ApiErr> {
    require_admin(&sh, &who)?;
    let s = sh.clone();
    tokio::task::spawn_blocking(move || crate::reconfigure::shutdown(&s, req.controller_only))
        .await
        .map_err(|e| ApiErr(ApiError::new(ErrorCode::Internal, e.to_string())))?;
    Ok(Json(Ack { ok: true }))
}

/// `scontrol setdebug` (admins): the log level until the config is read again.
async fn setdebug(
    AxState(sh): Sh,
    Extension(who): Who,
    Body(req): Body<gsched_proto::api::SetDebugRequest>,
) -> Result<Json<Ack>, ApiErr> {
    require_admin(&sh, &who)?;
    gsched_proto::daemon_log::set_level(&req.level)
        .map_err(|m| ApiErr(ApiError::new(ErrorCode::BadRequest, m)))?;
    tracing::warn!("log level set to {} by uid {}", req.level, who.uid);
    Ok(Json(Ack { ok: true }))
}

async fn update_partition(
    AxState(sh): Sh,
    Extension(who): Who,
    Body(req): Body<gsched_proto::api::PartitionUpdateRequest>,
) -> Result<Json<Ack>, ApiErr> {
    sh.lock().update_partition(&req, &who)?;
    sh.wake.notify_one();
    Ok(Json(Ack { ok: true }))
}

async fn update_nodes(
    AxState(sh): Sh,
    Extension(who): Who,
    Body(req): Body<NodeUpdateRequest>,
) -> Result<Json<Ack>, ApiErr> {
    let mut names = Vec::new();
    for n in &req.names {
        names.extend(State::expand_nodes(n)?);
    }
    let effects =
        sh.lock()
            .update_nodes(&names, req.state, req.reason, req.migrate_by, who, now())?;
    dispatch::send(sh.clone(), effects);
    sh.wake.notify_one();
    Ok(Json(Ack { ok: true }))
}

async fn register(
    AxState(sh): Sh,
    Extension(who): Who,
    Body(req): Body<RegisterRequest>,
) -> Result<Json<RegisterResponse>, ApiErr> {
    require_slurm_user(&sh, &who)?;
    let report = crate::state::NodeReport {
        name: &req.name,
        cpus: req.cpus,
        mem_mb: req.real_memory_mb,
        version: &req.version,
        boot_time: req.boot_time,
        daemon_start: req.start_time,
        running: &req.running,
        gpus: &req.gpus,
    };
    let (kill, heartbeat_interval_secs) = {
        let mut st = sh.lock();
        (st.register(&report, now())?, st.heartbeat_secs())
    };
    tracing::info!("node {} registered ({} jobs)", req.name, req.running.len());
    sh.wake.notify_one();
    Ok(Json(RegisterResponse {
        kill,
        heartbeat_interval_secs,
    }))
}

async fn heartbeat(
    AxState(sh): Sh,
    Extension(who): Who,
    Body(req): Body<HeartbeatRequest>,
) -> Result<Json<HeartbeatResponse>, ApiErr> {
    require_slurm_user(&sh, &who)?;
    let r = {
        let mut st = sh.lock();
        let t = now();
        st.node_load(&req.name, req.load);
        let r = st.heartbeat(&req.name, &req.running, t);
        if r.is_some() {
            st.record_progress(&req.progress, t);
            st.record_usage(&req.name, req.load, &req.usage, &req.gpu_samples, t);
            st.record_gpu_samples(&req.name, &req.gpu_samples, t);
        }
        r
    };
    Ok(Json(match r {
        Some(kill) => HeartbeatResponse {
            registered: true,
            kill,
        },
        None => HeartbeatResponse {
            registered: false,
            kill: Vec::new(),
        },
    }))
}

async fn partitions(AxState(sh): Sh, Extension(who): Who) -> Json<PartitionsResponse> {
    Json(PartitionsResponse {
        partitions: sh.lock().partition_infos(&who),
    })
}

async fn config(AxState(sh): Sh) -> Json<ConfigResponse> {
    let st = sh.lock();
    Json(ConfigResponse {
        now: now(),
        entries: st.config_entries(),
        licenses: st.license_infos(),
    })
}

/// `gsacctmgr show`, `gsprio`: the association table, QOS and usage.
async fn acct(AxState(sh): Sh) -> Json<gsched_proto::acct::AcctResponse> {
    Json(sh.lock().acct_response())
}

/// `gsacctmgr add|modify|delete` (administrators only).
async fn acct_update(
    AxState(sh): Sh,
    Extension(who): Who,
    Body(req): Body<gsched_proto::acct::AcctChange>,
) -> Result<Json<gsched_proto::acct::AcctChangeResponse>, ApiErr> {
    let changed = sh.lock().acct_change(&req, who)?;
    // Priorities and limits change with the table.
    sh.wake.notify_one();
    Ok(Json(gsched_proto::acct::AcctChangeResponse { changed }))
}

/// `scontrol show reservation`, `sinfo -T`.
async fn reservations(AxState(sh): Sh) -> Json<gsched_proto::resv::ReservationsResponse> {
    Json(gsched_proto::resv::ReservationsResponse {
        now: now(),
        reservations: sh.lock().resvs.clone(),
    })
}

/// `scontrol create|update|delete reservation` (administrators only).
async fn reservation_action(
    AxState(sh): Sh,
    Extension(who): Who,
    Body(req): Body<gsched_proto::resv::ReservationAction>,
) -> Result<Json<gsched_proto::resv::ReservationActionResponse>, ApiErr> {
    let name = sh.lock().reservation_action(&req, who, now())?;
    sh.wake.notify_one();
    Ok(Json(gsched_proto::resv::ReservationActionResponse { name }))
}

/// `scontrol reboot` (administrators only).
async fn reboot(
    AxState(sh): Sh,
    Extension(who): Who,
    Body(req): Body<gsched_proto::resv::RebootRequest>,
) -> Result<Json<Ack>, ApiErr> {
    sh.lock().reboot_nodes(&req, who, now())?;
    sh.wake.notify_one();
    Ok(Json(Ack { ok: true }))
}
