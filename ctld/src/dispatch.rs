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

/// How many jobs' launch requests may be built and in flight at once, over all nodes. A
/// pass that fills a large cluster starts jobs on thousands of nodes; building and sending
/// them all at once held every request (a few KiB of environment each) and its serialised
/// batch in memory together. Counted in jobs, not nodes: passes that start a job or two per
/// node reach every node at once (a node daemon starts its batch's jobs one after the
/// other before it answers, so each node's answer takes as long as its batch), and only
/// passes that start many jobs per node are spread out. A node that does not answer keeps
/// its share until the client's timeout; a node found unreachable gets no new jobs.
pub const LAUNCH_JOBS_IN_FLIGHT: usize = 4096;

/// The budget of [`LAUNCH_JOBS_IN_FLIGHT`]: a node's batch takes as many units as it has
/// jobs (all of them, for a batch larger than the whole budget).
#[derive(Debug)]
pub struct LaunchSlots {
    jobs: tokio::sync::Semaphore,
    total: usize,
}

impl LaunchSlots {
    pub fn new(total: usize) -> Self {
        let total = total.max(1);
        LaunchSlots {
            jobs: tokio::sync::Semaphore::new(total),
            total,
        }
    }

    /// Waits until `n` jobs' launches may go; held until the returned permit is dropped.
    async fn take(&self, n: usize) -> Option<tokio::sync::SemaphorePermit<'_>> {
        let n = n.clamp(1, self.total) as u32;
        self.jobs.acquire_many(n).await.ok()
    }
}

impl Default for LaunchSlots {
    fn default() -> Self {
        LaunchSlots::new(LAUNCH_JOBS_IN_FLIGHT)
    }
}

/// Sends every effect in the background. The launches of one pass go to each node in one
/// request ([`paths::NODE_LAUNCH_BATCH`]) when there are several, built when they are sent,
/// at most [`LAUNCH_JOBS_IN_FLIGHT`] jobs' at a time.
pub fn send(sh: Arc<Shared>, effects: Vec<Effect>) {
    let mut launches: BTreeMap<String, Vec<(JobId, i64)>> = BTreeMap::new();
    for e in effects {
        match e {
            Effect::Launch {
                node,
                job_id,
                start_time,
            } => launches.entry(node).or_default().push((job_id, start_time)),
            e => {
                let sh = sh.clone();
                tokio::task::spawn_blocking(move || run(&sh, e));
            }
        }
    }
    for (node, runs) in launches {
        let sh = sh.clone();
        tokio::spawn(async move {
            let Some(_slots) = sh.launch_slots.take(runs.len()).await else {
                return;
            };
            let s = sh.clone();
            if let Err(e) = tokio::task::spawn_blocking(move || launch_runs(&s, &node, &runs)).await
            {
                tracing::error!("a launch task failed: {e}");
            }
        });
    }
}

/// Builds `runs`' requests from the jobs as they are now and sends them to `node`.
fn launch_runs(sh: &Arc<Shared>, node: &str, runs: &[(JobId, i64)]) {
    let (jobs, failed) = sh.lock().launch_requests(runs, now());
    if failed {
        sh.wake.notify_one();
    }
    if !jobs.is_empty() {
        launch(sh, node, jobs);
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
        // `send` groups launches by node within the budget; none comes here.
        Effect::Launch { .. } => unreachable!("launches are sent by dispatch::send"),
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
        Effect::HealthCheck { node, program } => {
            let Some(c) = client(sh, &node) else { return };
            let req = gsched_proto::resv::NodeHealthCheckRequest { program };
            if let Err(e) = c.post::<_, Ack>(paths::NODE_HEALTH_CHECK, &req) {
                tracing::warn!("node {node}: health check request failed: {e}");
            }
        }
        // Not answered: sent again by a later pass (`state/epilog.rs`).
        Effect::Epilog { node, request } => {
            let Some(c) = client(sh, &node) else { return };
            match c.post::<_, Ack>(paths::NODE_EPILOG, &request) {
                Ok(_) => {}
                // A gsnoded of an older release runs no Epilog: its part is free now.
                Err(ClientError::Api(e)) if e.code == ErrorCode::NotFound => {
                    tracing::warn!(
                        "node {node}: its gsnoded runs no Epilog (an older release); job {}'s part of it is released",
                        request.job_id
                    );
                    let done = gsched_proto::api::EpilogCompleteRequest {
                        node: node.clone(),
                        job_id: request.job_id,
                        start_time: request.start_time,
                        error: None,
                    };
                    if let Err(e) = sh.lock().epilog_complete(&done, crate::server::now()) {
                        tracing::error!("job {}: {e}", request.job_id);
                    }
                    sh.wake.notify_one();
                }
                Err(e) => tracing::warn!(
                    "node {node}: Epilog request for job {} failed: {e}",
                    request.job_id
                ),
            }
        }
        // On this blocking thread: the program, then the launch or the requeue
        // (`state/prolog_ctld.rs`).
        Effect::PrologSlurmctld {
            node,
            job_id,
            start_time,
        } => {
            let Some(p) = sh.lock().prolog_slurmctld_run(job_id, start_time) else {
                return;
            };
            let result = p.run();
            let effects = sh.lock().prolog_slurmctld_done(
                job_id,
                start_time,
                &node,
                result,
                crate::server::now(),
            );
            if effects.is_empty() {
                // Given back to the queue (or cancelled): a pass sees it.
                sh.wake.notify_one();
            } else {
                send(sh.clone(), effects);
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

    /// A controller's state with nodes `nodes` (a config line's `NodeName=` value) of
    /// `cpus` CPUs, all served by the daemon on `port`; `tmp` holds its store.
    fn state_with_nodes(tmp: &std::path::Path, nodes: &str, cpus: u32, port: u16) -> State {
        let text = format!(
            "ClusterName=t\nSlurmctldHost=h(127.0.0.1)\nAuthType=auth/none\nStateSaveLocation={d}/s\n\
             SlurmdSpoolDir={d}/sp\nNodeName={nodes} NodeAddr=127.0.0.1 Port={port} CPUs={cpus} RealMemory=1000\n\
             PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE\n",
            d = tmp.display()
        );
        let cfg = Arc::new(Config::parse(&text, &tmp.join("gsched.conf")).unwrap());
        let store = Store::open(&cfg.state_save_location, false).unwrap();
        let mut st = State::load(cfg.clone(), store, 1000).unwrap();
        let names: Vec<String> = cfg.nodes.iter().map(|n| n.name.clone()).collect();
        for n in names {
            crate::state::tests::register_node(&mut st, &n, &[], 1000);
        }
        st
    }

    /// The shared state of a controller whose launch budget is `slots` jobs.
    fn shared(st: State, slots: usize) -> Arc<Shared> {
        let cfg = st.cfg.clone();
        let (submits, _batches) = crate::group_commit::channel();
        Arc::new(Shared {
            state: Mutex::new(st),
            wake: tokio::sync::Notify::new(),
            auth: Arc::new(gsched_auth::NoneAuth::current()),
            cfg: cfg.clone(),
            host: "h".into(),
            metrics: crate::metrics::Metrics::for_config(&cfg),
            submits,
            node_connections: gsched_proto::client::ConnectionPool::new(),
            launch_slots: LaunchSlots::new(slots),
        })
    }

    /// A cluster upgraded controller first: the controller's batch request is refused by the
    /// older node daemon, and the same jobs go as single launches, each recorded as started.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_node_without_batch_launches_gets_the_jobs_one_by_one() {
        let (port, asked) = older_daemon::<LaunchRequest>(paths::NODE_LAUNCH, |r| r.job_id).await;
        let dir = tempfile::tempdir().unwrap();
        let mut st = state_with_nodes(dir.path(), "n1", 2, port);
        let a = st.submit(spec(1), ROOT, 1000).unwrap();
        let b = st.submit(spec(1), ROOT, 1000).unwrap();
        let effects = st.schedule(1001);
        let jobs = crate::state::launches(&mut st, &effects, 1001);
        assert_eq!(jobs.len(), 2, "both jobs placed on n1 in one pass");
        let sh = shared(st, LAUNCH_JOBS_IN_FLIGHT);
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

    /// A node daemon of an older release answers an Epilog request with `not_found`: it
    /// runs none, so the job's part of the node is released instead of held for good.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_node_without_epilogs_releases_its_part_at_once() {
        let (port, asked) = older_daemon::<LaunchRequest>(paths::NODE_LAUNCH, |r| r.job_id).await;
        let dir = tempfile::tempdir().unwrap();
        let text = format!(
            "ClusterName=t\nSlurmctldHost=h(127.0.0.1)\nAuthType=auth/none\nStateSaveLocation={d}/s\n\
             SlurmdSpoolDir={d}/sp\nEpilog=/etc/gsched/epilog\n\
             NodeName=n1 NodeAddr=127.0.0.1 Port={port} CPUs=2 RealMemory=1000\n\
             PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE\n",
            d = dir.path().display()
        );
        let cfg = Arc::new(Config::parse(&text, &dir.path().join("gsched.conf")).unwrap());
        let store = Store::open(&cfg.state_save_location, false).unwrap();
        let mut st = State::load(cfg, store, 1000).unwrap();
        crate::state::tests::register_node(&mut st, "n1", &[], 1000);
        let a = st.submit(spec(2), ROOT, 1000).unwrap();
        let effects = st.schedule(1001);
        assert_eq!(crate::state::launches(&mut st, &effects, 1001).len(), 1);
        let epilogs = st
            .complete(&crate::state::tests::ended(a, "n1", 1001, 1002), 1002)
            .unwrap();
        assert_eq!(epilogs.len(), 1);
        let b = st.submit(spec(2), ROOT, 1003).unwrap();
        assert!(st.schedule(1004).is_empty(), "n1 is held for a's Epilog");
        let sh = shared(st, LAUNCH_JOBS_IN_FLIGHT);
        let s = sh.clone();
        let e = epilogs.into_iter().next().unwrap();
        tokio::task::spawn_blocking(move || run(&s, e))
            .await
            .unwrap();
        assert_eq!(*asked.lock().unwrap(), [paths::NODE_EPILOG.to_string()]);
        let mut st = sh.lock();
        assert!(st.jobs[&a].extra.epilog.is_none());
        let started = st.schedule(1005);
        assert_eq!(crate::state::launches(&mut st, &started, 1005)[0].job_id, b);
    }

    /// What a slow node daemon saw: the most jobs and node requests it held at once, and
    /// the jobs it was asked to launch.
    #[derive(Default)]
    struct Held {
        jobs: std::sync::atomic::AtomicUsize,
        requests: std::sync::atomic::AtomicUsize,
        most_jobs: std::sync::atomic::AtomicUsize,
        most_requests: std::sync::atomic::AtomicUsize,
        launched: std::sync::atomic::AtomicUsize,
    }

    /// A node daemon that takes 100 ms to answer a batch launch (each node's, routed by
    /// the port alone) and counts what it holds meanwhile.
    async fn slow_node_daemon() -> (u16, Arc<Held>) {
        use std::sync::atomic::Ordering::SeqCst;
        let held = Arc::new(Held::default());
        let h = held.clone();
        let app = axum::Router::new().route(
            paths::NODE_LAUNCH_BATCH,
            axum::routing::post(move |axum::Json(batch): axum::Json<LaunchBatch>| {
                let h = h.clone();
                async move {
                    let n = batch.jobs.len();
                    h.most_jobs
                        .fetch_max(h.jobs.fetch_add(n, SeqCst) + n, SeqCst);
                    h.most_requests
                        .fetch_max(h.requests.fetch_add(1, SeqCst) + 1, SeqCst);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    h.jobs.fetch_sub(n, SeqCst);
                    h.requests.fetch_sub(1, SeqCst);
                    h.launched.fetch_add(n, SeqCst);
                    let results = batch
                        .jobs
                        .iter()
                        .map(|j| gsched_proto::api::BatchResult {
                            job_id: j.job_id,
                            error: None,
                        })
                        .collect();
                    axum::Json(BatchResponse { results })
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move { axum::serve(listener, app).await });
        (port, held)
    }

    /// Starts a job on every CPU of the nodes `nodes` (`cpus` each) in one pass, sends the
    /// launches with a budget of `slots` jobs, and waits until every job is acknowledged.
    async fn fill(nodes: &str, count: usize, cpus: u32, slots: usize) -> Arc<Held> {
        let (port, held) = slow_node_daemon().await;
        let dir = tempfile::tempdir().unwrap();
        let mut st = state_with_nodes(dir.path(), nodes, cpus, port);
        let jobs = count * cpus as usize;
        let ids: Vec<JobId> = (0..jobs)
            .map(|_| st.submit(spec(1), ROOT, 1000).unwrap())
            .collect();
        let effects = st.schedule(1001);
        assert_eq!(effects.len(), jobs, "{effects:?}");
        let sh = shared(st, slots);
        send(sh.clone(), effects);
        let acked = |sh: &Shared| {
            let st = sh.lock();
            ids.iter()
                .filter(|id| {
                    matches!(
                        st.jobs[id].launch,
                        Some(crate::state::LaunchState::Acked(_))
                    )
                })
                .count()
        };
        for _ in 0..300 {
            if acked(&sh) == jobs {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(acked(&sh), jobs, "every launch acknowledged");
        let launched = held.launched.load(std::sync::atomic::Ordering::SeqCst);
        assert_eq!(launched, jobs, "each job launched once");
        held
    }

    /// A pass that starts jobs on many nodes: their launches are built and sent within a
    /// budget counted in jobs (10 here): five 2-job batches at a time at most, and more than
    /// one node at a time. A node's batch larger than the whole budget still goes, alone.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn launches_are_sent_within_a_budget_of_jobs() {
        use std::sync::atomic::Ordering::SeqCst;
        let held = fill("n[1-20]", 20, 2, 10).await;
        let (jobs, requests) = (held.most_jobs.load(SeqCst), held.most_requests.load(SeqCst));
        assert!(
            jobs <= 10 && requests >= 2,
            "{jobs} jobs in {requests} requests held at once by the node daemons; at most 10 jobs expected, on several nodes"
        );
        let held = fill("big", 1, 12, 10).await;
        assert_eq!(held.most_jobs.load(SeqCst), 12);
    }
}
