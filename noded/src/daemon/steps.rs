//! gsnoded's job steps (`gsrun`): launching one node's tasks of a step (a step folder and a
//! `gsstepd --step`), signalling them (alone, or with their job), and serving their output
//! and ends to gsrun (`node/step_io`).
//!
//! The table of steps is rebuilt from the step folders when it is asked about a step it
//! does not hold (after a gsnoded restart the step's gsstepd still runs; its pids are in the
//! folder). A step folder is removed a little after gsrun was told the step ended, or when
//! the step's job ends here.

use super::{now, Node};
use crate::procfs;
use crate::step::{self, StepFile, TaskFile};
use crate::sys;
use gsched_proto::api::{ApiError, ErrorCode};
use gsched_proto::auth::Identity;
use gsched_proto::job::JobId;
use gsched_proto::patterns::{expand_stdio, resolve_output_path, PatternContext};
use gsched_proto::step::{
    b64_decode, b64_encode, IoChunk, NodeStepSignalRequest, StepIoRequest, StepIoResponse,
    StepLaunchRequest, StepStdinRequest, Stream,
};
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Most output bytes one `step_io` answer carries.
const IO_CHUNK_MAX: u64 = 512 * 1024;

/// A step's tasks on this node.
#[derive(Debug, Clone)]
pub(crate) struct StepRt {
    pub dir: PathBuf,
    pub uid: u32,
    pub stepd_pid: i32,
    pub stepd_ticks: u64,
}

fn bad(msg: impl Into<String>) -> ApiError {
    ApiError::new(ErrorCode::BadRequest, msg)
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

impl Node {
    /// The step folder's files, resolved: output files per task, the job's cgroup.
    fn step_file(&self, req: StepLaunchRequest, dir: &Path) -> StepFile {
        let node = self.settings.node.clone();
        let work = Path::new(&req.work_dir);
        let tasks = req
            .tasks
            .iter()
            .map(|t| {
                let ctx = PatternContext {
                    job_id: req.job_id,
                    array_job_id: req.array.map(|a| a.0),
                    array_task_id: req.array.map(|a| a.1),
                    step: Some(req.step_id),
                    user: &req.user_name,
                    job_name: &req.job_name,
                    node: &node,
                    node_index: req.node_id,
                    task_id: t.rank,
                    restart_count: 0,
                };
                let user_file = |p: &Option<String>| -> Option<PathBuf> {
                    p.as_deref()
                        .map(|p| resolve_output_path(&expand_stdio(p, &ctx), work))
                };
                let stdout = user_file(&req.stdout)
                    .unwrap_or_else(|| step::task_output_file(dir, t.rank, false));
                let stderr = match (&req.stderr, &req.stdout) {
                    (Some(_), _) => user_file(&req.stderr).unwrap_or_default(),
                    // srun: -o without -e sends stderr to the same file.
                    (None, Some(_)) => stdout.clone(),
                    (None, None) => step::task_output_file(dir, t.rank, true),
                };
                TaskFile {
                    rank: t.rank,
                    environment: step::task_environment(
                        &req,
                        t.rank,
                        t.local_id,
                        &node,
                        &self.settings.config_path,
                    ),
                    stdout,
                    stderr,
                }
            })
            .collect();
        // Tasks join the job's cgroup when the job has one here (the batch node).
        let job_dir = crate::jobdir::JobDir::new(crate::jobdir::job_dir(
            &self.settings.spool_dir,
            req.job_id,
        ));
        let cgroup_procs = job_dir
            .read_launch()
            .ok()
            .flatten()
            .and_then(|l| l.cgroup)
            .map(|c| c.procs)
            .unwrap_or_default();
        StepFile {
            request: req,
            node,
            tasks,
            cgroup_procs,
            user: None,
            propagate_rlimits: self.settings.propagate_rlimits.clone(),
            task_scripts: self.settings.task_scripts.clone(),
        }
    }

    /// `POST /v1/node/step_launch`.
    pub(crate) async fn step_launch(
        self: &Arc<Self>,
        req: StepLaunchRequest,
    ) -> Result<(), ApiError> {
        if req.argv.is_empty() || req.tasks.is_empty() {
            return Err(bad("a step needs a command and at least one task"));
        }
        if !self.is_root && req.uid != self.own_uid {
            return Err(ApiError::new(
                ErrorCode::AccessDenied,
                format!(
                    "gsnoded runs as uid {} without root and can only run steps of its own user (uid {})",
                    self.own_uid, req.uid
                ),
            ));
        }
        let key = (req.job_id, req.step_id);
        if self.steps().contains_key(&key) {
            return Ok(());
        }
        self.step_prolog(&req).await?;
        let dir = step::step_dir(&self.settings.spool_dir, req.job_id, req.step_id);
        let mut file = self.step_file(req, &dir);
        let uid = file.request.uid;
        let folder = dir.clone();
        let log = blocking(move || -> Result<std::fs::File, String> {
            // Resolved here, where NSS is loaded once, instead of in every gsstepd.
            if nix::unistd::geteuid().is_root() {
                let r = &file.request;
                file.user = crate::jobdir::ResolvedUser::lookup_cached(r.uid, r.gid);
            }
            if folder.exists() {
                // A leftover of an earlier run of the same id (requeued job).
                let _ = std::fs::remove_dir_all(&folder);
            }
            std::fs::DirBuilder::new()
                .mode(0o711)
                .create(&folder)
                .map_err(|e| format!("cannot create {}: {e}", folder.display()))?;
            crate::jobdir::write_json(
                &folder.join(step::STEP_FILE),
                &file,
                crate::jobdir::Durability::DaemonCrash,
            )
            .map_err(|e| e.to_string())?;
            std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(folder.join(crate::jobdir::STEPD_LOG))
                .map_err(|e| format!("cannot create the step log: {e}"))
        })
        .await?
        .map_err(internal)?;
        let mut cmd = tokio::process::Command::new(&self.settings.stepd);
        cmd.arg("--step")
            .arg(&dir)
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
        let mut child = cmd.spawn().map_err(|e| {
            internal(format!(
                "cannot start {}: {e}",
                self.settings.stepd.display()
            ))
        })?;
        let pid = child
            .id()
            .and_then(|p| i32::try_from(p).ok())
            .ok_or_else(|| internal("gsstepd exited before its pid could be read"))?;
        let ticks = procfs::start_ticks(pid).unwrap_or(0);
        self.steps().insert(
            key,
            StepRt {
                dir,
                uid,
                stepd_pid: pid,
                stepd_ticks: ticks,
            },
        );
        tokio::spawn(async move {
            let _ = child.wait().await;
        });
        tracing::info!("step {}.{}: started (gsstepd pid {pid})", key.0, key.1);
        Ok(())
    }

    /// The step `(job, step)`, from the table or (after a restart) from its folder.
    fn find_step(&self, job: JobId, step_id: u32) -> Option<StepRt> {
        if let Some(s) = self.steps().get(&(job, step_id)) {
            return Some(s.clone());
        }
        let dir = step::step_dir(&self.settings.spool_dir, job, step_id);
        let file = step::read_step(&dir).ok().flatten()?;
        let pids = step::read_pids(&dir).ok().flatten();
        let rt = StepRt {
            dir,
            uid: file.request.uid,
            stepd_pid: pids.map_or(0, |p| p.stepd_pid),
            stepd_ticks: pids.map_or(0, |p| p.stepd_start_ticks),
        };
        self.steps().insert((job, step_id), rt.clone());
        Some(rt)
    }

    /// Steps of a job here (every folder `step_<job>.*`).
    pub(super) fn steps_of_job(&self, job: JobId) -> Vec<StepRt> {
        let mut ids: Vec<u32> = std::fs::read_dir(&self.settings.spool_dir)
            .map(|rd| {
                rd.flatten()
                    .filter_map(|e| step::parse_step_dir_name(e.file_name().to_str()?))
                    .filter(|&(j, _)| j == job)
                    .map(|(_, s)| s)
                    .collect()
            })
            .unwrap_or_default();
        ids.sort_unstable();
        ids.into_iter()
            .filter_map(|s| self.find_step(job, s))
            .collect()
    }

    /// Signals (or terminates: SIGCONT + SIGTERM, SIGKILL after `kill_wait`) the tasks of
    /// one step or of every step of a job on this node. Returns how many processes got it.
    pub(crate) async fn signal_steps(
        self: &Arc<Self>,
        job: JobId,
        step_id: Option<u32>,
        sig: i32,
        terminate: bool,
        kill_wait: u32,
    ) -> usize {
        // The spool folder and /proc are read on the blocking pool: gsnoded has one async
        // thread, and a walk over /proc takes milliseconds on a busy node.
        let node = self.clone();
        let found = blocking(move || {
            let steps = match step_id {
                Some(s) => node.find_step(job, s).into_iter().collect(),
                None => node.steps_of_job(job),
            };
            steps
                .into_iter()
                .map(|s| {
                    let procs = step::step_processes(s.stepd_pid, s.stepd_ticks);
                    (s, procs)
                })
                .collect::<Vec<_>>()
        })
        .await
        .unwrap_or_default();
        let mut n = 0;
        for (s, procs) in found {
            let sent = |sig| {
                procs
                    .iter()
                    .filter(|&&p| sys::send_signal(p, sig).is_ok())
                    .count()
            };
            if terminate {
                let term = if sig == libc::SIGKILL {
                    libc::SIGKILL
                } else {
                    libc::SIGTERM
                };
                sent(libc::SIGCONT);
                let got = sent(term);
                if got == 0 {
                    // The step's gsstepd has not started its tasks yet: they must still get
                    // the SIGTERM first (ending as 143, as Slurm's do), not only the SIGKILL.
                    self.signal_when_started(
                        s.clone(),
                        term,
                        Duration::from_secs(kill_wait.into()),
                    );
                }
                n += got;
                self.arm_step_kill(s.clone(), Duration::from_secs(kill_wait.into()));
            } else {
                n += sent(sig);
            }
        }
        if n > 0 {
            tracing::info!(
                "job {job}{}: signal {sig} sent to {n} step process(es){}",
                step_id.map(|s| format!(".{s}")).unwrap_or_default(),
                if terminate { " (terminate)" } else { "" }
            );
        }
        n
    }

    /// Sends `sig` to a step's tasks as soon as they exist, for at most `within`.
    fn signal_when_started(self: &Arc<Self>, s: StepRt, sig: i32, within: Duration) {
        tokio::spawn(async move {
            let deadline = tokio::time::Instant::now() + within;
            while tokio::time::Instant::now() < deadline
                && procfs::is_same_live_process(s.stepd_pid, s.stepd_ticks)
            {
                tokio::time::sleep(Duration::from_millis(20)).await;
                let procs = processes_of(&s).await;
                if !procs.is_empty() {
                    for p in procs {
                        let _ = sys::send_signal(p, libc::SIGCONT);
                        let _ = sys::send_signal(p, sig);
                    }
                    tracing::info!(
                        "step folder {}: signal {sig} sent once its tasks started",
                        s.dir.display()
                    );
                    break;
                }
            }
        });
    }

    /// SIGKILLs what is left of a step after `after`, until its gsstepd has ended.
    fn arm_step_kill(self: &Arc<Self>, s: StepRt, after: Duration) {
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            for _ in 0..60 {
                if !procfs::is_same_live_process(s.stepd_pid, s.stepd_ticks) {
                    break;
                }
                for p in processes_of(&s).await {
                    let _ = sys::send_signal(p, libc::SIGKILL);
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        });
    }

    /// `POST /v1/node/step_signal` (from the controller).
    pub(crate) async fn step_signal(
        self: &Arc<Self>,
        req: NodeStepSignalRequest,
    ) -> Result<(), ApiError> {
        if !(1..=sys::MAX_SIGNAL).contains(&req.signal) {
            return Err(bad(format!("invalid signal number {}", req.signal)));
        }
        if req.terminate && req.step_id.is_none() && req.signal == libc::SIGKILL {
            // The job has ended (the controller tells the job's nodes other than the batch
            // node): kill its steps and remove their folders after a while.
            self.job_steps_end(req.job_id).await;
        } else {
            self.signal_steps(
                req.job_id,
                req.step_id,
                req.signal,
                req.terminate,
                req.kill_wait,
            )
            .await;
        }
        Ok(())
    }

    /// `POST /v1/node/step_io`: new output of the step's tasks here and, once they all
    /// ended and everything was read, how each ended. Only the step's user (or those who may
    /// call gsnoded) may read it.
    pub(crate) async fn step_io(
        self: &Arc<Self>,
        req: StepIoRequest,
        who: &Identity,
    ) -> Result<StepIoResponse, ApiError> {
        let s = self.find_step(req.job_id, req.step_id).ok_or_else(|| {
            ApiError::new(
                ErrorCode::InvalidJobId,
                format!(
                    "Invalid job id specified: node {} runs no step {}.{}",
                    self.settings.node, req.job_id, req.step_id
                ),
            )
        })?;
        if who.uid != s.uid && !self.callers().may(who.uid) {
            return Err(ApiError::plain(ErrorCode::AccessDenied));
        }
        let dir = s.dir.clone();
        let resp = blocking(move || read_io(&dir, &req)).await??;
        if resp.ended.is_some() {
            let node = self.clone();
            let key = (s.dir.clone(), req_key(&s));
            tokio::spawn(async move {
                tokio::time::sleep(step::STEP_DIR_LINGER).await;
                node.remove_step_dir(&key.0, key.1);
            });
        }
        Ok(resp)
    }

    /// `POST /v1/node/step_stdin`: appends gsrun's input for the step's gsstepd to feed to
    /// its tasks; `eof` marks its end.
    pub(crate) async fn step_stdin(
        self: &Arc<Self>,
        req: StepStdinRequest,
        who: &Identity,
    ) -> Result<(), ApiError> {
        let s = self.find_step(req.job_id, req.step_id).ok_or_else(|| {
            ApiError::new(
                ErrorCode::InvalidJobId,
                format!(
                    "Invalid job id specified: node {} runs no step {}.{}",
                    self.settings.node, req.job_id, req.step_id
                ),
            )
        })?;
        if who.uid != s.uid && !self.callers().may(who.uid) {
            return Err(ApiError::plain(ErrorCode::AccessDenied));
        }
        let data = b64_decode(&req.data_b64).ok_or_else(|| bad("data_b64 is not base64"))?;
        let dir = s.dir.clone();
        blocking(move || -> Result<(), ApiError> {
            let path = dir.join(step::STEP_STDIN_FILE);
            let len = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            // Append only what is new (a retried request repeats bytes already there).
            if req.offset + data.len() as u64 > len {
                if req.offset > len {
                    return Err(bad(format!(
                        "input offset {} is past the {len} bytes received",
                        req.offset
                    )));
                }
                let skip = (len - req.offset) as usize;
                let mut f = std::fs::OpenOptions::new()
                    .append(true)
                    .create(true)
                    .mode(0o600)
                    .open(&path)
                    .map_err(|e| internal(format!("cannot write {}: {e}", path.display())))?;
                std::io::Write::write_all(&mut f, &data[skip..])
                    .map_err(|e| internal(format!("cannot write {}: {e}", path.display())))?;
            }
            if req.eof {
                std::fs::write(dir.join(step::STEP_STDIN_EOF), b"")
                    .map_err(|e| internal(format!("cannot mark the input's end: {e}")))?;
            }
            Ok(())
        })
        .await?
    }

    fn remove_step_dir(&self, dir: &Path, key: (JobId, u32)) {
        self.steps().remove(&key);
        if dir.exists() {
            if let Err(e) = std::fs::remove_dir_all(dir) {
                tracing::warn!("cannot remove {}: {e}", dir.display());
            }
        }
    }

    /// A job ended here: kill its steps' tasks, and remove the folders of its steps once
    /// gsrun had a chance to read their ends.
    pub(crate) async fn job_steps_end(self: &Arc<Self>, job: JobId) {
        // The table holds every step of this node (launched here, or found at start by
        // `adopt_steps`): a job without steps, most batch jobs, costs no look at the spool.
        if self
            .steps()
            .range((job, 0)..=(job, u32::MAX))
            .next()
            .is_none()
        {
            return;
        }
        self.signal_steps(job, None, libc::SIGKILL, true, 0).await;
        let node = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(step::STEP_DIR_LINGER * 2).await;
            for s in node.steps_of_job(job) {
                let key = req_key(&s);
                node.remove_step_dir(&s.dir, key);
            }
        });
    }

    /// At start: removes the step folders left by a crash or reboot, and puts the steps whose
    /// folders are kept into the table (which `job_steps_end` relies on).
    pub(crate) async fn adopt_steps(self: &Arc<Self>) {
        let node = self.clone();
        let held: Vec<JobId> = self.jobs().keys().copied().collect();
        let _ = blocking(move || {
            for (job, step_id) in sweep_stale_step_dirs(&node.settings.spool_dir, &held) {
                if node.find_step(job, step_id).is_none() {
                    tracing::debug!("step {job}.{step_id}: its folder has no readable step file");
                }
            }
        })
        .await;
    }
}

/// A step's processes, looked up on the blocking pool (a walk over /proc).
pub(super) async fn processes_of(s: &StepRt) -> Vec<i32> {
    let (pid, ticks) = (s.stepd_pid, s.stepd_ticks);
    blocking(move || step::step_processes(pid, ticks))
        .await
        .unwrap_or_default()
}

/// `(job, step)` of a step from its folder name.
fn req_key(s: &StepRt) -> (JobId, u32) {
    s.dir
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(step::parse_step_dir_name)
        .unwrap_or((0, 0))
}

fn read_io(dir: &Path, req: &StepIoRequest) -> Result<StepIoResponse, ApiError> {
    let file = step::read_step(dir)
        .map_err(|e| internal(e.to_string()))?
        .ok_or_else(|| internal(format!("{} has no step file", dir.display())))?;
    // Read the status first: output written before the end is then surely in the files.
    let status = step::read_status(dir).map_err(|e| internal(e.to_string()))?;
    let mut chunks = Vec::new();
    let mut budget = IO_CHUNK_MAX;
    let mut complete = true;
    for t in &file.tasks {
        for (stream, path) in [(Stream::Stdout, &t.stdout), (Stream::Stderr, &t.stderr)] {
            // Only the spool files are streamed; the user's own files stay where they are.
            if !path.starts_with(dir) || (stream == Stream::Stderr && t.stderr == t.stdout) {
                continue;
            }
            let offset = req
                .offsets
                .iter()
                .find(|o| o.rank == t.rank && o.stream == stream)
                .map_or(0, |o| o.offset);
            let Ok(mut f) = std::fs::File::open(path) else {
                continue;
            };
            let len = f.metadata().map(|m| m.len()).unwrap_or(0);
            if len <= offset {
                continue;
            }
            let want = (len - offset).min(budget);
            if want < len - offset {
                complete = false;
            }
            if want == 0 {
                continue;
            }
            let mut buf = vec![0u8; want as usize];
            f.seek(SeekFrom::Start(offset))
                .and_then(|_| f.read_exact(&mut buf))
                .map_err(|e| internal(format!("cannot read {}: {e}", path.display())))?;
            budget -= want;
            chunks.push(IoChunk {
                rank: t.rank,
                stream,
                offset,
                data_b64: b64_encode(&buf),
            });
        }
    }
    let (ended, launch_error) = match status {
        Some(st) if complete => (Some(st.ends), st.launch_error),
        _ => (None, None),
    };
    Ok(StepIoResponse {
        chunks,
        ended,
        launch_error,
        usage: None,
    })
}

/// Removes step folders whose gsstepd is gone and whose job this node does not run (left by
/// a crash or reboot), at start. Returns the steps whose folders are kept.
pub(crate) fn sweep_stale_step_dirs(spool: &Path, running_jobs: &[JobId]) -> Vec<(JobId, u32)> {
    let mut kept = Vec::new();
    let Ok(rd) = std::fs::read_dir(spool) else {
        return kept;
    };
    let cutoff = now() - 3600;
    for e in rd.flatten() {
        let Some((job, step_id)) = e.file_name().to_str().and_then(step::parse_step_dir_name)
        else {
            continue;
        };
        let dir = e.path();
        let alive = step::read_pids(&dir)
            .ok()
            .flatten()
            .is_some_and(|p| procfs::is_same_live_process(p.stepd_pid, p.stepd_start_ticks));
        let old = e
            .metadata()
            .ok()
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .is_some_and(|d| (d.as_secs() as i64) < cutoff);
        if !alive && (!running_jobs.contains(&job) || old) {
            let _ = std::fs::remove_dir_all(&dir);
        } else {
            kept.push((job, step_id));
        }
    }
    kept
}
