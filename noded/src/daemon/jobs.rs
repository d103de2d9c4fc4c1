//! The jobs gsnoded holds: launching them (job folder + gsstepd), signalling and terminating
//! their processes, watching their gsstepd, reporting how they ended, and re-adopting them
//! from the spool directory after a restart.
//!
//! A job is in the table from the moment a launch is accepted until the controller
//! acknowledged its completion report; the registration and heartbeat `running` lists are
//! exactly the table, so the controller never mistakes a job whose report is still pending for
//! one that was never launched.

use super::{now, Node};
use crate::cgroup::JobCgroup;
use crate::env;
use crate::jobdir::{
    self, JobDir, LaunchFile, StatusFile, TerminateFile, GPU_FAILURE_FILE, STEPD_LOG,
};
use crate::procfs;
use crate::sys;
use gsched_proto::api::{
    paths, Ack, ApiError, BatchResponse, ErrorCode, JobCompleteBatch, JobCompleteRequest,
    LaunchRequest, NodeSignalRequest, NodeSuspendRequest, RunningJob, SignalScope, TerminateReason,
    TerminateRequest,
};
use gsched_proto::job::JobId;
use std::collections::BTreeSet;
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// First and longest pause between attempts to deliver a completion report.
const REPORT_BACKOFF_START: Duration = Duration::from_millis(200);
const REPORT_BACKOFF_MAX: Duration = Duration::from_secs(5);
/// How long the first of several job ends waits for the others before its report goes:
/// short jobs launched together (one pass, one request) end within a few milliseconds of
/// each other, and one request then reports them all (with 2 ms, 1,000 jobs of a submission
/// loop took 500 reports; with 5 ms, 263).
const REPORT_GATHER: Duration = Duration::from_millis(5);
/// Job-end reports gathered for one request to the controller.
#[derive(Debug, Default)]
pub(crate) struct Outbox {
    reports: Vec<JobCompleteRequest>,
    /// A blocking thread is sending (or gathering) a batch; reports queued meanwhile go with
    /// its next one.
    sending: bool,
}

/// How often SIGKILL is repeated once a terminated job's `KillWait` has passed.
const KILL_REPEAT: Duration = Duration::from_secs(1);
/// How long re-adoption waits for the `pids.json` of a job whose gsstepd was not found
/// running (gsnoded may have stopped while starting it).
const PIDS_GRACE: Duration = Duration::from_secs(1);

/// A running gsstepd, identified across pid reuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stepd {
    pub pid: i32,
    pub start_ticks: u64,
}

impl Stepd {
    fn is_alive(self) -> bool {
        procfs::is_same_live_process(self.pid, self.start_ticks)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Folder being written, gsstepd being started.
    Launching,
    Running(Stepd),
    /// gsstepd is gone; the report is not acknowledged yet.
    Ended,
}

#[derive(Debug, Clone)]
pub(crate) struct Job {
    pub start_time: i64,
    pub dir: JobDir,
    pub phase: Phase,
    pub terminate: Option<TerminateReason>,
    /// The job's cgroup, when the node uses cgroups.
    pub cgroup: Option<JobCgroup>,
}

fn internal(msg: impl Into<String>) -> ApiError {
    ApiError::new(ErrorCode::Internal, msg)
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| internal(format!("internal task failed: {e}")))
}

/// The completion report for a job from its status.
fn report_from(
    node: &str,
    job_id: JobId,
    start_time: i64,
    status: &StatusFile,
    terminated_for: Option<TerminateReason>,
) -> JobCompleteRequest {
    JobCompleteRequest {
        job_id,
        node: node.to_string(),
        start_time,
        exit_code: status.exit_code,
        signal: status.signal,
        end_time: status.end_time,
        launch_error: status.launch_error.clone(),
        terminated_for,
        oom_kills: status.oom_kills,
        usage: status.usage,
        gpu_failure: None,
        prolog_error: status.prolog_error.clone(),
    }
}

fn read_gpu_failure(dir: &JobDir) -> Option<String> {
    std::fs::read_to_string(dir.file(GPU_FAILURE_FILE))
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// How a gsstepd ended without a `status.json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Missing {
    /// It exited while gsnoded watched it (a gsstepd bug or crash: its log says why).
    Exited,
    /// It was gone when a restarted gsnoded looked (killed, or the node rebooted).
    Disappeared,
}

/// The status of a job whose gsstepd is gone: `status.json`, or else a synthesised failure,
/// which is written to the folder so that a later restart reports the same.
fn final_status(dir: &JobDir, start_time: i64, missing: Missing) -> StatusFile {
    match dir.read_status() {
        Ok(Some(s)) => return s,
        Ok(None) => {}
        Err(e) => tracing::error!("{e}; reporting the job as failed"),
    }
    let (launch_error, signal) = match missing {
        Missing::Exited => {
            let mut m = "gsstepd ended without writing a status".to_string();
            if let Some(line) = dir.last_log_line() {
                m.push_str(&format!(" (last words in {STEPD_LOG}: {line})"));
            }
            (m, 0)
        }
        Missing::Disappeared => (
            "job's gsstepd disappeared (node daemon restart)".to_string(),
            libc::SIGKILL,
        ),
    };
    let status = StatusFile {
        exit_code: if signal == 0 { 1 } else { 0 },
        signal,
        start_time,
        end_time: now(),
        launch_error: Some(launch_error),
        oom_kills: 0,
        usage: None,
        prolog_error: None,
    };
    if let Err(e) = dir.write_status(&status) {
        tracing::error!("{e}");
    }
    status
}

/// Every process of a job: the descendants of its gsstepd (gsstepd excluded) and, with
/// cgroups, every process in the job's cgroup (which nothing escapes).
pub(crate) fn job_processes(id: JobId, stepd: Stepd, cgroup: Option<&JobCgroup>) -> Vec<i32> {
    let mut procs = if stepd.is_alive() {
        procfs::descendants(stepd.pid)
    } else {
        Vec::new()
    };
    if let Some(cg) = cgroup {
        procs.extend(cg.handle.open().pids(id));
        procs.retain(|&p| p != stepd.pid);
        procs.sort_unstable();
        procs.dedup();
    }
    procs
}

/// Kills what is left in a job's cgroup and removes it (blocking); logs failures.
fn remove_cgroup(id: JobId, cg: &JobCgroup) {
    let cgroups = cg.handle.open();
    if let Err(e) = cgroups.kill(id, Duration::from_secs(10)) {
        tracing::error!("job {id}: {e}");
    }
    if let Err(e) = cgroups.remove_job(id) {
        tracing::error!("job {id}: cannot remove its cgroup: {e}");
    }
}

/// The batch shell, if it runs (still gsstepd's child: pid reuse cannot fool this).
fn batch_shell(dir: &JobDir, stepd: Stepd) -> Option<i32> {
    let shell = dir.read_pids().ok().flatten()?.shell_pid?;
    let st = procfs::read_stat(shell).ok()?;
    (st.ppid == stepd.pid && !st.is_zombie()).then_some(shell)
}

fn signal_all(pids: &[i32], sig: i32) -> usize {
    pids.iter()
        .filter(|&&p| sys::send_signal(p, sig).is_ok())
        .count()
}

/// What re-adoption found in one folder.
enum Found {
    Alive {
        id: JobId,
        start_time: i64,
        dir: JobDir,
        stepd: Stepd,
        terminate: Option<TerminateFile>,
        cgroup: Option<JobCgroup>,
    },
    Ended {
        id: JobId,
        start_time: i64,
        dir: JobDir,
        report: JobCompleteRequest,
        cgroup: Option<JobCgroup>,
    },
}

/// Reads the spool directory for jobs not in `known` (blocking).
fn scan_spool(spool: &Path, node: &str, known: &BTreeSet<JobId>) -> Vec<Found> {
    let entries = match std::fs::read_dir(spool) {
        Ok(e) => e,
        Err(e) => {
            tracing::error!("cannot read the spool directory {}: {e}", spool.display());
            return Vec::new();
        }
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(id) = name.to_str().and_then(jobdir::parse_job_dir_name) else {
            continue;
        };
        if known.contains(&id) || !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let dir = JobDir::new(entry.path());
        if let Some(f) = examine(id, dir, node) {
            found.push(f);
        }
    }
    found
}

fn examine(id: JobId, dir: JobDir, node: &str) -> Option<Found> {
    let launch = match dir.read_launch() {
        Ok(Some(l)) => l,
        Ok(None) => {
            // gsnoded stopped before it finished writing the folder: no gsstepd ever ran.
            tracing::warn!(
                "job {id}: {} has no {}; removing the unfinished launch",
                dir.path().display(),
                jobdir::LAUNCH_FILE
            );
            if let Err(e) = std::fs::remove_dir_all(dir.path()) {
                tracing::error!("cannot remove {}: {e}", dir.path().display());
            }
            return None;
        }
        Err(e) => {
            let aside = dir
                .path()
                .with_file_name(format!("broken_job_{id}_{}", now()));
            tracing::error!(
                "job {id}: {e}; moving the folder to {} for inspection",
                aside.display()
            );
            if let Err(e) = std::fs::rename(dir.path(), &aside) {
                tracing::error!("cannot move {}: {e}", dir.path().display());
            }
            return None;
        }
    };
    let start_time = launch.request.start_time;
    let terminate = dir.read_terminate().unwrap_or_else(|e| {
        tracing::warn!("job {id}: {e}");
        None
    });
    let terminated_for = terminate.map(|t| t.reason);
    let cgroup = launch.cgroup.clone();
    let ended = |status: StatusFile| Found::Ended {
        id,
        start_time,
        report: JobCompleteRequest {
            gpu_failure: read_gpu_failure(&dir),
            ..report_from(node, id, start_time, &status, terminated_for)
        },
        dir: dir.clone(),
        cgroup: cgroup.clone(),
    };
    if let Ok(Some(status)) = dir.read_status() {
        return Some(ended(status));
    }
    let mut pids = dir.read_pids().ok().flatten();
    // gsstepd writes pids.json once the batch shell runs; one started just before gsnoded
    // stopped may still be preparing it, and is found by its command line. Else it may have
    // been about to start (its pid not even known here yet): wait a little for the file.
    let running = pids.is_none().then(|| {
        procfs::processes_started_with(Path::new("/proc"), dir.path().as_os_str())
            .into_iter()
            .find_map(|pid| procfs::start_ticks(pid).map(|start_ticks| Stepd { pid, start_ticks }))
    });
    if let Some(None) = running {
        let deadline = std::time::Instant::now() + PIDS_GRACE;
        while pids.is_none() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
            pids = dir.read_pids().ok().flatten();
        }
    }
    let recorded = pids.map(|p| Stepd {
        pid: p.stepd_pid,
        start_ticks: p.stepd_start_ticks,
    });
    if let Some(stepd) = running.flatten().or(recorded).filter(|s| s.is_alive()) {
        return Some(Found::Alive {
            id,
            start_time,
            dir,
            stepd,
            terminate,
            cgroup,
        });
    }
    // Its batch shell may have outlived it (re-parented to init): end what is still found.
    if let Some((shell, ticks)) = pids.and_then(|p| Some((p.shell_pid?, p.shell_start_ticks?))) {
        if procfs::is_same_live_process(shell, ticks) {
            let mut procs = procfs::descendants(shell);
            procs.push(shell);
            let n = signal_all(&procs, libc::SIGKILL);
            tracing::warn!("job {id}: its gsstepd is gone; killed {n} process(es) it left");
        }
    }
    if let Some(cg) = &cgroup {
        let left = cg.handle.open().pids(id).len();
        if left > 0 {
            tracing::warn!(
                "job {id}: its gsstepd is gone; killing {left} process(es) left in its cgroup"
            );
        }
    }
    let status = final_status(&dir, start_time, Missing::Disappeared);
    Some(ended(status))
}

impl Node {
    /// A `Prolog`/`Epilog` environment on this node (`crate::prolog::node_env`).
    pub(crate) fn script_env(
        &self,
        given: &[(String, String)],
        ids: &crate::prolog::JobIds,
        context: crate::prolog::Context,
    ) -> Vec<(String, String)> {
        crate::prolog::node_env(
            given,
            ids,
            &self.settings.node,
            &self.settings.config_path,
            context,
        )
    }

    /// The `running` list for registration and heartbeats: every job with a folder.
    pub(crate) fn running(&self) -> Vec<RunningJob> {
        self.jobs()
            .iter()
            .map(|(&job_id, j)| RunningJob {
                job_id,
                start_time: j.start_time,
            })
            .collect()
    }

    fn stepd_of(&self, id: JobId, start_time: i64) -> Option<Stepd> {
        match self.jobs().get(&id) {
            Some(j) if j.start_time == start_time => match j.phase {
                Phase::Running(s) => Some(s),
                _ => None,
            },
            _ => None,
        }
    }

    /// `POST /v1/node/launch`.
    pub(crate) async fn launch(self: &Arc<Self>, req: LaunchRequest) -> Result<(), ApiError> {
        env::check_request(&req).map_err(|m| ApiError::new(ErrorCode::BadRequest, m))?;
        crate::gpu::check_allocs(&req.gpus, &self.settings.gpus.devices).map_err(|m| {
            ApiError::new(ErrorCode::BadRequest, format!("job {}: {m}", req.job_id))
        })?;
        if !self.is_root && req.uid != self.own_uid {
            return Err(ApiError::new(
                ErrorCode::AccessDenied,
                format!(
                    "gsnoded runs as uid {} without root and can only run jobs of its own user (job {} is uid {})",
                    self.own_uid, req.job_id, req.uid
                ),
            ));
        }
        let _guard = self.launch_lock.lock().await;
        let (id, start_time) = (req.job_id, req.start_time);
        let conflict = |other: i64| {
            ApiError::new(
                ErrorCode::JobAlreadyDone,
                format!(
                    "job {id} already has a run on node {} (start time {other}); refusing the run with start time {start_time}",
                    self.settings.node
                ),
            )
        };
        if let Some(j) = self.jobs().get(&id) {
            return if j.start_time == start_time {
                Ok(())
            } else {
                Err(conflict(j.start_time))
            };
        }
        let dir = JobDir::new(jobdir::job_dir(&self.settings.spool_dir, id));
        if std::fs::symlink_metadata(dir.path()).is_ok() {
            return Err(ApiError::new(
                ErrorCode::JobAlreadyDone,
                format!(
                    "{} exists but gsnoded on {} does not hold job {id}; remove it once no process of the job is left",
                    dir.path().display(),
                    self.settings.node
                ),
            ));
        }
        self.jobs().insert(
            id,
            Job {
                start_time,
                dir: dir.clone(),
                phase: Phase::Launching,
                terminate: None,
                cgroup: None,
            },
        );
        match self.start_stepd(req, &dir).await {
            Ok((stepd, child, cgroup)) => {
                if let Some(j) = self.jobs().get_mut(&id) {
                    j.phase = Phase::Running(stepd);
                    j.cgroup = cgroup;
                }
                tracing::info!(
                    "job {id}: launched (start time {start_time}), gsstepd pid {}",
                    stepd.pid
                );
                self.watch(id, start_time, stepd, Some(child));
                Ok(())
            }
            Err(msg) => {
                self.jobs().remove(&id);
                self.cores().release(id);
                self.end_mps(id).await;
                let path = dir.path().to_path_buf();
                let _ = blocking(move || std::fs::remove_dir_all(path)).await;
                tracing::error!("job {id}: launch failed: {msg}");
                Err(internal(format!(
                    "cannot launch job {id} on node {}: {msg}",
                    self.settings.node
                )))
            }
        }
    }

    /// Writes the job folder and starts gsstepd on it.
    async fn start_stepd(
        &self,
        req: LaunchRequest,
        dir: &JobDir,
    ) -> Result<(Stepd, tokio::process::Child, Option<JobCgroup>), String> {
        let node = self.settings.node.clone();
        let stdio = env::stdio_paths(&req, &node);
        let cgroup = match &self.settings.cgroups {
            Some(setup) => {
                let id = req.job_id;
                let cores = match self.cores().allocate(id, req.cpus) {
                    Ok(c) => c,
                    Err((c, warning)) => {
                        tracing::warn!("{warning}");
                        c
                    }
                };
                let mut limits = setup.limits(&req, &cores);
                // ConstrainDevices: the node's GPUs the job was not given are denied.
                if let Some(denied) = &mut limits.denied_devices {
                    denied.extend(crate::gpu::denied_devices(
                        &self.settings.gpus.devices,
                        &req.gpus,
                    ));
                }
                let handle = setup.handle.clone();
                let made = blocking(move || {
                    let cg = handle.open();
                    crate::cgroup::create_for_job(&*cg, id, &limits).map(|procs| JobCgroup {
                        handle,
                        procs,
                        cores,
                    })
                })
                .await
                .map_err(|e| e.message)?;
                Some(made.map_err(|e| format!("cannot create the job's cgroup: {e}"))?)
            }
            None => None,
        };
        self.start_mps(&req).await?;
        let mut environment = env::job_environment(&req, &node, &self.settings.config_path);
        let constrained = self
            .settings
            .cgroups
            .as_ref()
            .is_some_and(|c| c.conf.constrain_devices);
        for (k, v) in crate::gpu::environment(&req.gpus, constrained, &self.settings.spool_dir) {
            env::set_var(&mut environment, &k, v);
        }
        let prolog_env = match &self.settings.prolog {
            Some(_) => self.script_env(
                &req.prolog_env,
                &crate::prolog::JobIds::of_launch(&req),
                crate::prolog::Context::Prolog,
            ),
            None => Vec::new(),
        };
        let mut launch = LaunchFile {
            user: None,
            cgroup: cgroup.clone(),
            environment,
            stdout: stdio.stdout,
            stderr: stdio.stderr,
            stdin: stdio.stdin,
            open_mode: req.open_mode.unwrap_or_default(),
            kill_wait: self.settings.kill_wait,
            node,
            request: req,
            propagate_rlimits: self.settings.propagate_rlimits.clone(),
            prolog_env,
            prolog: self.settings.prolog.clone(),
            task_scripts: self.settings.task_scripts.clone(),
        };
        let folder = dir.clone();
        let log = blocking(move || -> Result<std::fs::File, String> {
            // Resolved here, where NSS is loaded once, instead of in every gsstepd.
            if nix::unistd::geteuid().is_root() {
                let r = &launch.request;
                launch.user = crate::jobdir::ResolvedUser::lookup_cached(r.uid, r.gid);
            }
            std::fs::DirBuilder::new()
                .mode(0o711)
                .create(folder.path())
                .map_err(|e| format!("cannot create {}: {e}", folder.path().display()))?;
            folder.write_launch(&launch).map_err(|e| e.to_string())?;
            let log = folder.file(STEPD_LOG);
            std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .mode(0o600)
                .open(&log)
                .map_err(|e| format!("cannot create {}: {e}", log.display()))
        })
        .await
        .map_err(|e| e.message)??;
        let mut cmd = tokio::process::Command::new(&self.settings.stepd);
        // From `/`, so that gsstepd (and a job whose chdir fails) keeps no directory of
        // gsnoded's busy.
        cmd.arg(dir.path())
            .current_dir("/")
            .env_clear()
            .env(
                "PATH",
                "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            )
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(log)
            .kill_on_drop(false);
        let child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", self.settings.stepd.display()))?;
        let pid = child
            .id()
            .and_then(|p| i32::try_from(p).ok())
            .ok_or("gsstepd exited before its pid could be read")?;
        // Our unreaped child: /proc/<pid>/stat exists even if it already exited.
        let start_ticks = procfs::start_ticks(pid)
            .ok_or_else(|| format!("cannot read /proc/{pid}/stat of gsstepd"))?;
        Ok((Stepd { pid, start_ticks }, child, cgroup))
    }

    /// Watches a gsstepd until it exits, then reports the job. `child` is given for a
    /// gsstepd this gsnoded started: waiting for it reaps it (tokio watches it through a
    /// pidfd of its own); an adopted gsstepd, not our child, is watched through a pidfd.
    fn watch(
        self: &Arc<Self>,
        id: JobId,
        start_time: i64,
        stepd: Stepd,
        child: Option<tokio::process::Child>,
    ) {
        let node = self.clone();
        if let Some(mut child) = child {
            tokio::spawn(async move {
                match child.wait().await {
                    Ok(st) => tracing::debug!("job {id}: gsstepd exited: {st}"),
                    Err(e) => {
                        tracing::warn!("job {id}: waiting for gsstepd: {e}");
                        while stepd.is_alive() {
                            tokio::time::sleep(Duration::from_millis(500)).await;
                        }
                    }
                }
                node.stepd_ended(id, start_time).await;
            });
            return;
        }
        let pidfd = sys::pidfd_open(stepd.pid);
        tokio::spawn(async move {
            let watched = match pidfd {
                // A recycled pid between the liveness check and pidfd_open (adoption).
                Ok(_) if !stepd.is_alive() => Ok(()),
                Ok(fd) => sys::wait_pidfd(fd).await,
                Err(e) => Err(e),
            };
            if let Err(e) = watched {
                tracing::debug!("job {id}: no pidfd for gsstepd ({e}); polling /proc instead");
                while stepd.is_alive() {
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
            }
            // Our own child when the previous image of this gsnoded started it.
            sys::reap_if_child(stepd.pid);
            node.stepd_ended(id, start_time).await;
        });
    }

    /// gsstepd is gone: read the status, clean up and report it. One hand-off to the
    /// blocking pool does it all, the first report attempt included (the controller answers
    /// it within a millisecond; each hand-off costs two thread wake-ups, which showed in the
    /// node's profile), together with the ends of other jobs ([`Node::send_report`]); only
    /// a report that did not get through goes on in [`Node::report`].
    async fn stepd_ended(self: Arc<Self>, id: JobId, start_time: i64) {
        let (dir, terminate, cgroup) = {
            let mut jobs = self.jobs();
            let Some(j) = jobs.get_mut(&id) else { return };
            if j.start_time != start_time || j.phase == Phase::Ended {
                return;
            }
            j.phase = Phase::Ended;
            (j.dir.clone(), j.terminate, j.cgroup.clone())
        };
        // The job's steps end with it (as when Slurm's batch step ends).
        self.job_steps_end(id).await;
        self.end_mps(id).await;
        let node = self.clone();
        let first = blocking(move || {
            let status = final_status(&dir, start_time, Missing::Exited);
            let terminated_for =
                terminate.or_else(|| dir.read_terminate().ok().flatten().map(|t| t.reason));
            // gsstepd removed the cgroup unless it crashed; make sure nothing is left before
            // the cores go back (the controller may place a job on them once it has the report).
            if let Some(cg) = &cgroup {
                remove_cgroup(id, cg);
            }
            node.cores().release(id);
            let mut report =
                report_from(&node.settings.node, id, start_time, &status, terminated_for);
            report.gpu_failure = read_gpu_failure(&dir);
            tracing::info!(
                "job {id}: ended (exit code {} signal {}{})",
                report.exit_code,
                report.signal,
                report
                    .launch_error
                    .as_deref()
                    .map(|e| format!(", launch error: {e}"))
                    .unwrap_or_default()
            );
            node.send_report(report)
        })
        .await;
        match first {
            Ok(failed) => {
                for (report, failure) in failed {
                    tokio::spawn(self.clone().report(report, Some(failure)));
                }
            }
            Err(e) => {
                self.cores().release(id);
                tracing::error!("job {id}: cannot build the report: {}", e.message);
            }
        }
    }

    /// The folder of this run of an ended job, while gsnoded still holds it.
    fn ended_folder(&self, id: JobId, start_time: i64) -> Option<JobDir> {
        let jobs = self.jobs();
        match jobs.get(&id) {
            Some(j) if j.start_time == start_time && j.phase == Phase::Ended => Some(j.dir.clone()),
            _ => None,
        }
    }

    /// Flushes an ended job's `status.json` to disk (the report did not get through at once).
    async fn flush_status(&self, id: JobId, start_time: i64) {
        let Some(dir) = self.ended_folder(id, start_time) else {
            return;
        };
        match blocking(move || dir.flush_status()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!("job {id}: {e}"),
            Err(e) => tracing::error!("job {id}: {e}"),
        }
    }

    /// Queues a job's end report and sends it (blocking) unless another thread is sending:
    /// the first waits [`REPORT_GATHER`] for other ends (when other jobs are still here to
    /// end), then sends everything queued in one request, and again until nothing is
    /// queued. Returns the reports this thread sent that did not get through, with why
    /// (they go on in [`Node::report`], one by one).
    fn send_report(&self, report: JobCompleteRequest) -> Vec<(JobCompleteRequest, String)> {
        {
            let mut out = self.outbox();
            out.reports.push(report);
            if out.sending {
                return Vec::new();
            }
            out.sending = true;
        }
        // Should a send panic, the next job end sends what is queued.
        struct Sending<'a>(&'a Node);
        impl Drop for Sending<'_> {
            fn drop(&mut self) {
                if std::thread::panicking() {
                    self.0.outbox().sending = false;
                }
            }
        }
        let _sending = Sending(self);
        // Only jobs still launching or running can end meanwhile: with none, a lone job's
        // end (a dependency chain, a single test job) is reported at once.
        if self.jobs().values().any(|j| j.phase != Phase::Ended) {
            std::thread::sleep(REPORT_GATHER);
        }
        let mut failed = Vec::new();
        loop {
            let reports = {
                let mut out = self.outbox();
                if out.reports.is_empty() {
                    // Cleared under the lock: a report queued after this finds no sender
                    // and sends itself.
                    out.sending = false;
                    return failed;
                }
                std::mem::take(&mut out.reports)
            };
            failed.extend(self.deliver_reports(reports));
        }
    }

    fn outbox(&self) -> std::sync::MutexGuard<'_, Outbox> {
        self.outbox.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sends several reports in one request ([`paths::JOBS_COMPLETE_BATCH`]; one alone, or
    /// to a controller without that path, as single reports); the reports that did not get
    /// through come back with why.
    fn deliver_reports(
        &self,
        mut reports: Vec<JobCompleteRequest>,
    ) -> Vec<(JobCompleteRequest, String)> {
        if reports.len() == 1 {
            let Some(r) = reports.pop() else {
                return Vec::new();
            };
            return match self.deliver_report(&r) {
                Ok(()) => Vec::new(),
                Err(e) => vec![(r, e)],
            };
        }
        let batch = JobCompleteBatch { reports };
        let answer = match self
            .client
            .post::<_, BatchResponse>(paths::JOBS_COMPLETE_BATCH, &batch)
        {
            Ok(answer) => answer,
            Err(e) if e.code() == Some(ErrorCode::NotFound) => {
                tracing::debug!("the controller has no batch report; reporting one by one");
                return batch
                    .reports
                    .into_iter()
                    .filter_map(|r| self.deliver_report(&r).err().map(|e| (r, e)))
                    .collect();
            }
            Err(e) => {
                let why = e.to_string();
                return batch
                    .reports
                    .into_iter()
                    .map(|r| (r, why.clone()))
                    .collect();
            }
        };
        let mut failed = Vec::new();
        for (i, r) in batch.reports.into_iter().enumerate() {
            let outcome = match answer.outcome(i, r.job_id) {
                Some(Ok(())) => Ok(()),
                Some(Err(e)) => Err(e.clone()),
                None => Err(ApiError::new(
                    ErrorCode::Internal,
                    "the controller's answer does not list this job",
                )),
            };
            if let Err(why) = self.reported(&r, outcome) {
                failed.push((r, why));
            }
        }
        failed
    }

    /// Sends a completion report once (blocking); see [`Node::reported`].
    fn deliver_report(&self, report: &JobCompleteRequest) -> Result<(), String> {
        match self.client.post::<_, Ack>(paths::JOBS_COMPLETE, report) {
            Ok(_) => self.reported(report, Ok(())),
            Err(gsched_proto::client::ClientError::Api(e)) => self.reported(report, Err(e)),
            Err(e) => Err(e.to_string()),
        }
    }

    /// The controller answered a report: once it has it, or does not know the job (the
    /// report is then dropped), gsnoded forgets the job and deletes its folder; `Err` says
    /// why the report did not get through.
    fn reported(
        &self,
        report: &JobCompleteRequest,
        answer: Result<(), ApiError>,
    ) -> Result<(), String> {
        let (id, start_time) = (report.job_id, report.start_time);
        match answer {
            Ok(()) => tracing::debug!("job {id}: report acknowledged"),
            Err(e) if e.code == ErrorCode::InvalidJobId => tracing::warn!(
                "job {id}: the controller does not know this job; dropping its report"
            ),
            Err(e) => return Err(e.to_string()),
        }
        let Some(dir) = self.ended_folder(id, start_time) else {
            return Ok(());
        };
        if let Err(e) = dir.remove() {
            tracing::error!("job {id}: {e}");
        }
        let mut jobs = self.jobs();
        if jobs
            .get(&id)
            .is_some_and(|j| j.start_time == start_time && j.phase == Phase::Ended)
        {
            jobs.remove(&id);
        }
        Ok(())
    }

    /// Sends a completion report until the controller acknowledges it (or does not know the
    /// job), then forgets the job and deletes its folder. `failed`: why the attempt already
    /// made did not get through, if one was made.
    async fn report(self: Arc<Self>, report: JobCompleteRequest, failed: Option<String>) {
        let (id, start_time) = (report.job_id, report.start_time);
        let mut delay = REPORT_BACKOFF_START;
        let mut failures = 0u32;
        let mut failure = failed;
        loop {
            if let Some(e) = failure.take() {
                failures += 1;
                if failures == 1 {
                    // From now on the result may outlive this node's power: flush it.
                    self.flush_status(id, start_time).await;
                    tracing::warn!("job {id}: cannot report the job's end ({e}); retrying until the controller answers");
                } else {
                    tracing::debug!("job {id}: report attempt {failures} failed: {e}");
                }
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(REPORT_BACKOFF_MAX);
            }
            let node = self.clone();
            let r = report.clone();
            let sent = blocking(move || node.deliver_report(&r)).await;
            match sent {
                Ok(Ok(())) => return,
                Ok(Err(e)) => failure = Some(e),
                Err(e) => failure = Some(e.message),
            }
        }
    }

    /// The running job `id` for signal/terminate: `Err` for unknown jobs; `Ok(None)` for a job
    /// that already ended (report pending) or is still being launched.
    fn running_job(&self, id: JobId) -> Result<Option<(Stepd, Job)>, ApiError> {
        let jobs = self.jobs();
        let j = jobs.get(&id).ok_or_else(|| {
            ApiError::new(
                ErrorCode::InvalidJobId,
                format!(
                    "Invalid job id specified: node {} does not run job {id}",
                    self.settings.node
                ),
            )
        })?;
        Ok(match j.phase {
            Phase::Running(s) => Some((s, j.clone())),
            _ => None,
        })
    }

    /// `POST /v1/node/signal`.
    pub(crate) async fn signal(self: &Arc<Self>, req: NodeSignalRequest) -> Result<(), ApiError> {
        let id = req.job_id;
        if !(1..=sys::MAX_SIGNAL).contains(&req.signal) {
            return Err(ApiError::new(
                ErrorCode::BadRequest,
                format!(
                    "invalid signal number {} (1..={})",
                    req.signal,
                    sys::MAX_SIGNAL
                ),
            ));
        }
        let _guard = self.launch_lock.lock().await;
        let Some((stepd, job)) = self.running_job(id)? else {
            return Err(ApiError::new(
                ErrorCode::JobAlreadyDone,
                format!(
                    "Job/step already completing or completed: job {id} has ended on node {}",
                    self.settings.node
                ),
            ));
        };
        let (sig, scope) = (req.signal, req.scope());
        if scope == SignalScope::Steps {
            // Slurm's default: the tasks of the job's steps, not the batch shell.
            drop(_guard);
            let n = self.signal_steps(id, None, sig, false, 0).await;
            tracing::info!("job {id}: signal {sig} sent to {n} step task(s)");
            return Ok(());
        }
        let batch_only = scope == SignalScope::Batch;
        let n = blocking(move || {
            let targets = if batch_only {
                batch_shell(&job.dir, stepd).into_iter().collect()
            } else {
                job_processes(id, stepd, job.cgroup.as_ref())
            };
            signal_all(&targets, sig)
        })
        .await?;
        tracing::info!(
            "job {id}: signal {sig} sent to {n} process(es){}",
            if batch_only { " (batch shell)" } else { "" }
        );
        if !batch_only {
            drop(_guard);
            self.signal_steps(id, None, sig, false, 0).await;
        }
        Ok(())
    }

    /// `POST /v1/node/suspend`: freeze or thaw the job's cgroup, or without cgroups SIGSTOP
    /// or SIGCONT every process of the job (Slurm's proctrack without a freezer).
    pub(crate) async fn suspend(&self, req: NodeSuspendRequest) -> Result<(), ApiError> {
        let id = req.job_id;
        let _guard = self.launch_lock.lock().await;
        let Some((stepd, job)) = self.running_job(id)? else {
            return Err(ApiError::new(
                ErrorCode::JobAlreadyDone,
                format!(
                    "Job/step already completing or completed: job {id} has ended on node {}",
                    self.settings.node
                ),
            ));
        };
        let suspend = req.suspend;
        let done = blocking(move || match &job.cgroup {
            Some(cg) => cg
                .handle
                .open()
                .freeze(id, suspend)
                .map(|()| "its cgroup".to_string())
                .map_err(|e| e.to_string()),
            None => {
                let procs = job_processes(id, stepd, None);
                let sig = if suspend {
                    libc::SIGSTOP
                } else {
                    libc::SIGCONT
                };
                Ok(format!("{} process(es)", signal_all(&procs, sig)))
            }
        })
        .await?
        .map_err(internal)?;
        tracing::info!(
            "job {id}: {} {done}",
            if suspend {
                "suspended (froze)"
            } else {
                "resumed (thawed)"
            }
        );
        Ok(())
    }

    /// `POST /v1/node/terminate`, and the controller's kill lists.
    pub(crate) async fn terminate(self: &Arc<Self>, req: TerminateRequest) -> Result<(), ApiError> {
        let id = req.job_id;
        let _guard = self.launch_lock.lock().await;
        let Some((stepd, job)) = self.running_job(id)? else {
            // Already ended: its report is on the way.
            return Ok(());
        };
        let record = TerminateFile {
            reason: job.terminate.unwrap_or(req.reason),
            kill_wait: req.kill_wait,
            requested_at: now(),
        };
        if job.terminate.is_none() {
            let dir = job.dir.clone();
            blocking(move || dir.write_terminate(&record))
                .await?
                .map_err(|e| internal(e.to_string()))?;
            if let Some(j) = self.jobs().get_mut(&id) {
                j.terminate = Some(record.reason);
            }
        }
        let cgroup = job.cgroup.clone();
        let n = blocking(move || {
            // A suspended (frozen) job must be thawed to act on SIGTERM.
            if let Some(cg) = &cgroup {
                let _ = cg.handle.open().freeze(id, false);
            }
            let procs = job_processes(id, stepd, cgroup.as_ref());
            signal_all(&procs, libc::SIGCONT);
            signal_all(&procs, libc::SIGTERM)
        })
        .await?;
        tracing::info!(
            "job {id}: terminating ({:?}): SIGTERM to {n} process(es), SIGKILL after {}s",
            req.reason,
            req.kill_wait
        );
        self.arm_kill(
            id,
            job.start_time,
            Duration::from_secs(req.kill_wait.into()),
        );
        drop(_guard);
        self.signal_steps(id, None, libc::SIGTERM, true, req.kill_wait)
            .await;
        Ok(())
    }

    /// After `after`, SIGKILLs every process of the job, repeatedly, until its gsstepd ends.
    fn arm_kill(self: &Arc<Self>, id: JobId, start_time: i64, after: Duration) {
        let node = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            while let Some(stepd) = node.stepd_of(id, start_time) {
                let cgroup = node.jobs().get(&id).and_then(|j| j.cgroup.clone());
                let n = tokio::task::spawn_blocking(move || match cgroup {
                    // Race-free: a frozen (v1) or cgroup.kill'ed (v2) job cannot fork away.
                    Some(cg) => cg.handle.open().kill(id, KILL_REPEAT).unwrap_or(0),
                    None => signal_all(&job_processes(id, stepd, None), libc::SIGKILL),
                })
                .await
                .unwrap_or(0);
                if n > 0 {
                    tracing::info!("job {id}: SIGKILL sent to {n} process(es)");
                }
                tokio::time::sleep(KILL_REPEAT).await;
            }
        });
    }

    /// Kills the jobs the controller no longer assigns to this node.
    pub(crate) async fn kill_unassigned(self: &Arc<Self>, ids: &[JobId]) {
        for &job_id in ids {
            tracing::warn!(
                "job {job_id}: the controller does not assign it to this node; killing it"
            );
            let req = TerminateRequest {
                job_id,
                kill_wait: 0,
                reason: TerminateReason::NotAssigned,
            };
            if let Err(e) = self.terminate(req).await {
                tracing::debug!("job {job_id}: {e}");
            }
        }
    }

    /// Adds the jobs of the spool directory that are not in the table: live ones are watched
    /// again, ended ones reported.
    pub(crate) async fn adopt_spool(self: &Arc<Self>) {
        let _guard = self.launch_lock.lock().await;
        let known: BTreeSet<JobId> = self.jobs().keys().copied().collect();
        let spool = self.settings.spool_dir.clone();
        let node = self.settings.node.clone();
        let found = match blocking(move || scan_spool(&spool, &node, &known)).await {
            Ok(f) => f,
            Err(e) => {
                tracing::error!("cannot scan the spool directory: {e}");
                return;
            }
        };
        for f in found {
            match f {
                Found::Alive {
                    id,
                    start_time,
                    dir,
                    stepd,
                    terminate,
                    cgroup,
                } => {
                    tracing::info!("job {id}: re-adopted (gsstepd pid {})", stepd.pid);
                    if let Some(cg) = &cgroup {
                        self.cores().restore(id, cg.cores.clone());
                    }
                    self.jobs().insert(
                        id,
                        Job {
                            start_time,
                            dir,
                            phase: Phase::Running(stepd),
                            terminate: terminate.map(|t| t.reason),
                            cgroup,
                        },
                    );
                    self.watch(id, start_time, stepd, None);
                    if let Some(t) = terminate {
                        let due = t.requested_at.saturating_add(t.kill_wait.into());
                        let left = u64::try_from(due.saturating_sub(now())).unwrap_or(0);
                        self.arm_kill(id, start_time, Duration::from_secs(left));
                    }
                }
                Found::Ended {
                    id,
                    start_time,
                    dir,
                    report,
                    cgroup,
                } => {
                    // Nothing of the job may be left before the report lets the controller
                    // reuse its cores (gsstepd normally removed the cgroup already).
                    if let Some(cg) = cgroup.clone() {
                        let _ = blocking(move || remove_cgroup(id, &cg)).await;
                    }
                    tracing::info!(
                        "job {id}: ended while gsnoded was away; reporting it{}",
                        report
                            .launch_error
                            .as_deref()
                            .map(|e| format!(" ({e})"))
                            .unwrap_or_default()
                    );
                    self.jobs().insert(
                        id,
                        Job {
                            start_time,
                            dir,
                            phase: Phase::Ended,
                            terminate: report.terminated_for,
                            cgroup,
                        },
                    );
                    tokio::spawn(self.clone().report(report, None));
                }
            }
        }
        self.remove_stale_cgroups().await;
        self.adopt_steps().await;
        self.forget_mps_of_ended_jobs().await;
    }

    /// Removes the cgroups of jobs this node no longer holds (left by a crash or a reboot
    /// of gsnoded between a job's end and its clean-up), killing what is still in them.
    async fn remove_stale_cgroups(&self) {
        let Some(setup) = &self.settings.cgroups else {
            return;
        };
        let held: BTreeSet<JobId> = self.jobs().keys().copied().collect();
        let handle = setup.handle.clone();
        let removed = blocking(move || {
            let cg = handle.open();
            let mut removed = Vec::new();
            for id in cg.jobs().into_iter().filter(|id| !held.contains(id)) {
                let _ = cg.kill(id, Duration::from_secs(10));
                match cg.remove_job(id) {
                    Ok(()) => removed.push(id),
                    Err(e) => tracing::error!("job {id}: cannot remove its stale cgroup: {e}"),
                }
            }
            removed
        })
        .await
        .unwrap_or_default();
        if !removed.is_empty() {
            tracing::info!("removed the stale cgroups of jobs {removed:?}");
        }
    }
}

/// Where gsstepd lives: `$GSCHED_STEPD`, else next to the running gsnoded.
pub fn default_stepd_path() -> std::io::Result<PathBuf> {
    if let Some(p) = std::env::var_os("GSCHED_STEPD").filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    let exe = std::env::current_exe()?;
    Ok(exe.with_file_name("gsstepd"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use gsched_proto::stand_in::older_daemon;

    fn ended(id: JobId) -> JobCompleteRequest {
        JobCompleteRequest {
            job_id: id,
            node: "n1".into(),
            start_time: 1000,
            exit_code: 0,
            signal: 0,
            end_time: 1001,
            launch_error: None,
            terminated_for: None,
            oom_kills: 0,
            usage: None,
            gpu_failure: None,
            prolog_error: None,
        }
    }

    /// A cluster upgraded nodes first: the node's batch report is refused by the older
    /// controller, and the same ends go as single reports, none left to retry.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_controller_without_batch_reports_gets_the_ends_one_by_one() {
        let (port, asked) =
            older_daemon::<JobCompleteRequest>(paths::JOBS_COMPLETE, |r| r.job_id).await;
        let dir = tempfile::tempdir().unwrap();
        let settings = super::super::NodeSettings {
            node: "n1".into(),
            cluster: "t".into(),
            cpus: 2,
            real_memory_mb: 1000,
            spool_dir: dir.path().join("spool"),
            config_path: dir.path().join("gsched.conf"),
            controller: format!("127.0.0.1:{port}"),
            kill_wait: 1,
            message_timeout: 10,
            slurm_uid: None,
            stepd: dir.path().join("gsstepd"),
            cgroups: None,
            gpus: crate::gpu::GpuSetup::default(),
            health_check: None,
            propagate_rlimits: Vec::new(),
            prolog: None,
            epilog: None,
            task_scripts: Default::default(),
        };
        let node = Node::new(settings, Arc::new(gsched_auth::NoneAuth::current())).unwrap();
        let failed =
            tokio::task::spawn_blocking(move || node.deliver_reports(vec![ended(7), ended(8)]))
                .await
                .unwrap();
        assert!(failed.is_empty(), "{failed:?}");
        assert_eq!(
            *asked.lock().unwrap(),
            [paths::JOBS_COMPLETE_BATCH, "7", "8"],
            "one batch report refused, then one report per job"
        );
    }
}
