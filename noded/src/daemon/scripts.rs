//! gsnoded's part of `Prolog=` and `Epilog=` (`crate::prolog` runs them).
//!
//! * The Prolog before a job's first step on a node that is not its batch node (on the
//!   batch node gsstepd ran it before the script). The step launch waits for it; a failure
//!   refuses the launch with `PrologFailed`, and the controller drains the node and requeues
//!   the job. That it ran is a file in the spool dir (`prolog_<job>`), so a restarted
//!   gsnoded does not run it again for the same run; the Epilog request removes it.
//! * The Epilog when the controller asks (`node/epilog`, after the job's run ended): once
//!   the job's step tasks here are gone, run it, then answer `nodes/epilog_complete`
//!   (retried; the controller also asks again). A repeated request for a run whose Epilog
//!   is under way or done recently is not run twice: a done one is answered again.

use super::Node;
use gsched_proto::api::{
    paths, Ack, ApiError, EpilogCompleteRequest, ErrorCode, NodeEpilogRequest,
};
use gsched_proto::job::JobId;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a finished Epilog's answer is kept to answer a repeated request.
const DONE_KEPT: Duration = Duration::from_secs(600);
/// How long the Epilog waits for the job's step tasks to be gone before it runs anyway.
const STEPS_GONE_LIMIT: Duration = Duration::from_secs(120);

#[derive(Debug, Default)]
pub(crate) struct ScriptsRt {
    /// One step Prolog at a time (a job's second step waits for its first's Prolog).
    step_prolog: tokio::sync::Mutex<()>,
    /// Epilogs under way (`None`) or done by run.
    epilogs: Mutex<HashMap<(JobId, i64), Option<EpilogDone>>>,
}

/// A finished Epilog: its error, and when it ended.
type EpilogDone = (Option<String>, Instant);

/// The file that says the job's Prolog ran on this node.
fn prolog_marker(spool: &Path, job: JobId) -> PathBuf {
    spool.join(format!("prolog_{job}"))
}

impl Node {
    /// Runs the Prolog before a job's first step here, unless this is its batch node or it
    /// ran already.
    pub(crate) async fn step_prolog(
        self: &Arc<Self>,
        req: &gsched_proto::step::StepLaunchRequest,
    ) -> Result<(), ApiError> {
        let Some(conf) = self.settings.prolog.clone() else {
            return Ok(());
        };
        if self.jobs().contains_key(&req.job_id) {
            return Ok(());
        }
        let _one_at_a_time = self.scripts.step_prolog.lock().await;
        let marker = prolog_marker(&self.settings.spool_dir, req.job_id);
        let env = self.script_env(
            &req.prolog_env,
            &crate::prolog::JobIds::of_step(req),
            crate::prolog::Context::Prolog,
        );
        let spool = self.settings.spool_dir.clone();
        let ran = tokio::task::spawn_blocking(move || {
            if marker.exists() {
                return Ok(());
            }
            crate::prolog::run(&conf, crate::prolog::Context::Prolog, &env, &spool)?;
            std::fs::write(&marker, b"")
                .map_err(|e| format!("cannot record it in {}: {e}", marker.display()))
        })
        .await
        .map_err(|e| ApiError::new(ErrorCode::Internal, format!("internal task failed: {e}")))?;
        ran.map_err(|e| {
            tracing::error!("job {}: {e}", req.job_id);
            ApiError::new(
                ErrorCode::PrologFailed,
                format!("node {}: {e}", self.settings.node),
            )
        })
    }

    /// `POST /v1/node/epilog`: answered at once; the Epilog runs in the background.
    pub(crate) fn epilog(self: &Arc<Self>, req: NodeEpilogRequest) {
        let key = (req.job_id, req.start_time);
        {
            let mut runs = self
                .scripts
                .epilogs
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            runs.retain(|_, r| r.as_ref().is_none_or(|(_, at)| at.elapsed() < DONE_KEPT));
            match runs.get(&key) {
                Some(None) => return,
                Some(Some((error, _))) => {
                    let error = error.clone();
                    let node = self.clone();
                    tokio::spawn(async move { node.epilog_answer(key, error).await });
                    return;
                }
                None => {
                    runs.insert(key, None);
                }
            }
        }
        let node = self.clone();
        tokio::spawn(async move {
            node.steps_gone(req.job_id).await;
            let error = match node.settings.epilog.clone() {
                Some(conf) => {
                    let env = node.script_env(
                        &req.environment,
                        &crate::prolog::JobIds {
                            job_id: req.job_id,
                            user: None,
                        },
                        crate::prolog::Context::Epilog,
                    );
                    let spool = node.settings.spool_dir.clone();
                    tokio::task::spawn_blocking(move || {
                        crate::prolog::run(&conf, crate::prolog::Context::Epilog, &env, &spool)
                    })
                    .await
                    .unwrap_or_else(|e| Err(format!("internal task failed: {e}")))
                    .err()
                }
                None => None,
            };
            match &error {
                Some(e) => tracing::error!("job {}: {e}", req.job_id),
                None => tracing::debug!("job {}: Epilog done", req.job_id),
            }
            let marker = prolog_marker(&node.settings.spool_dir, req.job_id);
            let _ = tokio::task::spawn_blocking(move || std::fs::remove_file(marker)).await;
            node.scripts
                .epilogs
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(key, Some((error.clone(), Instant::now())));
            node.epilog_answer(key, error).await;
        });
    }

    /// The job's step tasks here are ended (SIGKILL) and gone, or the limit passed.
    async fn steps_gone(self: &Arc<Self>, job: JobId) {
        self.job_steps_end(job).await;
        let deadline = Instant::now() + STEPS_GONE_LIMIT;
        loop {
            let mut alive = false;
            for s in self.steps_of_job(job) {
                if !super::steps::processes_of(&s).await.is_empty() {
                    alive = true;
                    break;
                }
            }
            if !alive {
                return;
            }
            if Instant::now() >= deadline {
                tracing::warn!("job {job}: step tasks still alive; running the Epilog anyway");
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Tells the controller, retrying a while (it asks again if this never arrives).
    async fn epilog_answer(self: &Arc<Self>, key: (JobId, i64), error: Option<String>) {
        let req = EpilogCompleteRequest {
            node: self.settings.node.clone(),
            job_id: key.0,
            start_time: key.1,
            error,
        };
        let mut pause = Duration::from_millis(200);
        for _ in 0..8 {
            let node = self.clone();
            let r = req.clone();
            let sent = tokio::task::spawn_blocking(move || {
                node.client.post::<_, Ack>(paths::NODES_EPILOG_COMPLETE, &r)
            })
            .await;
            match sent {
                Ok(Ok(_)) => return,
                Ok(Err(e)) => tracing::warn!("job {}: cannot report its Epilog: {e}", key.0),
                Err(e) => tracing::warn!("job {}: cannot report its Epilog: {e}", key.0),
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_secs(10));
        }
    }
}
