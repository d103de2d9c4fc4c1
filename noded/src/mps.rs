//! CUDA MPS for jobs that share a GPU: one MPS control daemon per GPU, each with its own
//! pipe and log directories under the spool dir (Slurm's sample prolog allows one MPS GPU per
//! node; separate directories lift that), started when the first sharing job of the GPU
//! arrives and stopped (`quit`) when the last one ends.
//!
//! Per job: the daemon gets `start_server -uid <uid>` once for each user (MPS runs one server
//! per user; users take turns on a GPU, which is why placement packs same-user jobs by
//! default). The job's share is enforced by the client side of MPS through its environment
//! (`CUDA_MPS_ACTIVE_THREAD_PERCENTAGE`, `CUDA_MPS_PINNED_DEVICE_MEM_LIMIT`, see
//! [`crate::gpu::environment`]).
//!
//! Failure: [`Mps::check`] asks every daemon in use for its servers (`get_server_list`); a
//! daemon that does not answer, or a recorded server process that is gone, fails every job
//! using it. gsnoded then kills those jobs and reports them with `gpu_failure`, and the
//! controller requeues them without charging them (it was not their fault).
//!
//! State: `<spool>/mps/gpu<N>/state.json` (the jobs and servers of the GPU), so a restarted
//! gsnoded knows which daemons are its own and keeps managing them.
//!
//! The control program is `nvidia-cuda-mps-control` from `PATH`, fed on stdin as MPS
//! expects; tests put a fake script first on `PATH`. [`MpsControl`] has a recording fake for
//! unit tests of the command sequences.

use crate::gpu::MpsDirs;
use gsched_proto::gpu::GpuDevice;
use gsched_proto::job::JobId;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

/// The MPS control program, looked up in `PATH`.
pub const MPS_CONTROL: &str = "nvidia-cuda-mps-control";

/// Talks to MPS control daemons.
pub trait MpsControl: Send + Sync + std::fmt::Debug {
    /// `nvidia-cuda-mps-control -d` for `gpu`, with `CUDA_VISIBLE_DEVICES` = that GPU and
    /// the pipe and log directories `dirs`.
    fn start_daemon(&self, gpu: &GpuDevice, dirs: &MpsDirs) -> Result<(), String>;
    /// One command on the daemon's stdin; its answer.
    fn command(&self, dirs: &MpsDirs, cmd: &str) -> Result<String, String>;
}

/// The real `nvidia-cuda-mps-control`.
#[derive(Debug, Clone)]
pub struct RealControl {
    pub program: PathBuf,
}

impl Default for RealControl {
    fn default() -> Self {
        RealControl {
            program: PathBuf::from(MPS_CONTROL),
        }
    }
}

impl RealControl {
    fn cmd(&self, dirs: &MpsDirs) -> Command {
        let mut c = Command::new(&self.program);
        c.env("CUDA_MPS_PIPE_DIRECTORY", &dirs.pipe)
            .env("CUDA_MPS_LOG_DIRECTORY", &dirs.log)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }
}

impl MpsControl for RealControl {
    fn start_daemon(&self, gpu: &GpuDevice, dirs: &MpsDirs) -> Result<(), String> {
        let visible = gpu.uuid.clone().unwrap_or_else(|| gpu.index.to_string());
        let out = self
            .cmd(dirs)
            .arg("-d")
            .env("CUDA_VISIBLE_DEVICES", visible)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| {
                format!(
                    "cannot run {} -d: {e} (install the NVIDIA driver's MPS tools, or do not share GPUs with MPS on this node)",
                    self.program.display()
                )
            })?;
        if !out.status.success() {
            return Err(format!(
                "{} -d failed ({}): {}",
                self.program.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(())
    }

    fn command(&self, dirs: &MpsDirs, cmd: &str) -> Result<String, String> {
        let mut child = self
            .cmd(dirs)
            .stdin(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", self.program.display()))?;
        if let Some(mut stdin) = child.stdin.take() {
            let _ = writeln!(stdin, "{cmd}");
        }
        let out = child
            .wait_with_output()
            .map_err(|e| format!("{}: {e}", self.program.display()))?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if !out.status.success() {
            return Err(format!(
                "`{cmd}` failed ({}): {}{}",
                out.status,
                text.trim(),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(text)
    }
}

/// A recording fake: what was sent, and which daemons are "alive".
#[derive(Debug, Default)]
pub struct FakeControl {
    pub log: Mutex<Vec<String>>,
    /// Pipe directories with a live daemon.
    pub alive: Mutex<Vec<PathBuf>>,
    /// Server pids answered by `get_server_list`.
    pub servers: Mutex<Vec<u32>>,
    /// Pids that the next `start_server` commands add to `servers`, first one first.
    pub next_servers: Mutex<Vec<u32>>,
}

impl FakeControl {
    pub fn log(&self) -> Vec<String> {
        self.log.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Kills the daemon of `dirs`.
    pub fn crash(&self, dirs: &MpsDirs) {
        self.alive
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|p| p != &dirs.pipe);
    }
}

impl MpsControl for FakeControl {
    fn start_daemon(&self, gpu: &GpuDevice, dirs: &MpsDirs) -> Result<(), String> {
        self.log
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(format!("gpu{} -d", gpu.index));
        self.alive
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(dirs.pipe.clone());
        Ok(())
    }

    fn command(&self, dirs: &MpsDirs, cmd: &str) -> Result<String, String> {
        let gpu = dirs
            .base()
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        self.log
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(format!("{gpu} {cmd}"));
        let mut alive = self.alive.lock().unwrap_or_else(|p| p.into_inner());
        if !alive.contains(&dirs.pipe) {
            return Err("Cannot find MPS control daemon process".into());
        }
        if cmd == "quit" {
            alive.retain(|p| p != &dirs.pipe);
        }
        if cmd.starts_with("start_server") {
            let mut next = self.next_servers.lock().unwrap_or_else(|p| p.into_inner());
            if !next.is_empty() {
                let pid = next.remove(0);
                self.servers
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(pid);
            }
        }
        if cmd == "get_server_list" {
            let s = self.servers.lock().unwrap_or_else(|p| p.into_inner());
            return Ok(s.iter().map(|p| format!("{p}\n")).collect());
        }
        Ok(String::new())
    }
}

/// One GPU's MPS state (`state.json`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuMps {
    /// The jobs using the GPU's daemon, with their uids.
    pub jobs: BTreeMap<JobId, u32>,
    /// The server pid of each uid, once seen in `get_server_list`.
    pub servers: BTreeMap<u32, Option<u32>>,
}

/// Jobs that lost their MPS daemon or server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MpsFailure {
    pub gpu: u32,
    pub jobs: Vec<JobId>,
    pub why: String,
}

/// The MPS daemons of one node.
#[derive(Debug)]
pub struct Mps {
    control: Box<dyn MpsControl>,
    spool: PathBuf,
    gpus: Mutex<BTreeMap<u32, GpuMps>>,
}

const STATE_FILE: &str = "state.json";

fn pid_alive(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}

/// The pids in `get_server_list`'s answer.
fn parse_pids(out: &str) -> Vec<u32> {
    out.split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect()
}

impl Mps {
    /// The daemons recorded under `spool` (after a restart), managed through `control`.
    pub fn new(control: Box<dyn MpsControl>, spool: &Path) -> Mps {
        let mut gpus = BTreeMap::new();
        if let Ok(rd) = std::fs::read_dir(spool.join("mps")) {
            for e in rd.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                let Some(i) = name.strip_prefix("gpu").and_then(|n| n.parse::<u32>().ok()) else {
                    continue;
                };
                let f = e.path().join(STATE_FILE);
                match std::fs::read(&f).map(|b| serde_json::from_slice::<GpuMps>(&b)) {
                    Ok(Ok(s)) => {
                        gpus.insert(i, s);
                    }
                    Ok(Err(e)) => tracing::error!("{}: {e}; ignoring it", f.display()),
                    Err(_) => {}
                }
            }
        }
        Mps {
            control,
            spool: spool.to_path_buf(),
            gpus: Mutex::new(gpus),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u32, GpuMps>> {
        self.gpus.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn dirs(&self, gpu: u32) -> MpsDirs {
        MpsDirs::for_gpu(&self.spool, gpu)
    }

    fn save(&self, gpu: u32, state: &GpuMps) {
        let dirs = self.dirs(gpu);
        let f = dirs.base().join(STATE_FILE);
        let tmp = dirs.base().join("state.json.tmp");
        let r = serde_json::to_vec_pretty(state)
            .map_err(std::io::Error::other)
            .and_then(|b| std::fs::write(&tmp, b))
            .and_then(|()| std::fs::rename(&tmp, &f));
        if let Err(e) = r {
            tracing::error!("cannot save {}: {e}", f.display());
        }
    }

    /// The state of every GPU in use (tests, logs).
    pub fn snapshot(&self) -> BTreeMap<u32, GpuMps> {
        self.lock().clone()
    }

    /// Job `job` of user `uid` starts on shared GPU `gpu`: starts its daemon if needed and a
    /// server for the user. Blocking.
    pub fn job_started(&self, gpu: &GpuDevice, job: JobId, uid: u32) -> Result<(), String> {
        let mut gpus = self.lock();
        let dirs = self.dirs(gpu.index);
        let state = gpus.entry(gpu.index).or_default();
        if state.jobs.is_empty() {
            for d in [&dirs.pipe, &dirs.log] {
                std::fs::create_dir_all(d)
                    .map_err(|e| format!("cannot create {}: {e}", d.display()))?;
            }
            // The jobs' users connect to the pipes.
            let _ = std::fs::set_permissions(dirs.base(), std::fs::Permissions::from_mode(0o755));
            let _ = std::fs::set_permissions(&dirs.pipe, std::fs::Permissions::from_mode(0o755));
            state.servers.clear();
            if let Err(e) = self.control.start_daemon(gpu, &dirs) {
                gpus.remove(&gpu.index);
                return Err(format!(
                    "GPU {}: cannot start the MPS control daemon: {e}",
                    gpu.index
                ));
            }
            tracing::info!(
                "GPU {}: MPS control daemon started (pipes in {})",
                gpu.index,
                dirs.pipe.display()
            );
        }
        if let std::collections::btree_map::Entry::Vacant(slot) = state.servers.entry(uid) {
            let list = |c: &dyn MpsControl| {
                c.command(&dirs, "get_server_list")
                    .map(|o| parse_pids(&o))
                    .unwrap_or_default()
            };
            let before = list(&*self.control);
            if let Err(e) = self
                .control
                .command(&dirs, &format!("start_server -uid {uid}"))
            {
                if state.jobs.is_empty() {
                    let _ = self.control.command(&dirs, "quit");
                    gpus.remove(&gpu.index);
                }
                return Err(format!(
                    "GPU {}: cannot start an MPS server for uid {uid}: {e}",
                    gpu.index
                ));
            }
            let pid = list(&*self.control)
                .into_iter()
                .find(|p| !before.contains(p));
            slot.insert(pid);
        }
        state.jobs.insert(job, uid);
        let snapshot = state.clone();
        self.save(gpu.index, &snapshot);
        Ok(())
    }

    /// Job `job` left GPU `gpu`: the daemon is stopped (`quit`) when it was the last job.
    pub fn job_ended(&self, gpu: u32, job: JobId) {
        let mut gpus = self.lock();
        let Some(state) = gpus.get_mut(&gpu) else {
            return;
        };
        if state.jobs.remove(&job).is_none() {
            return;
        }
        let dirs = self.dirs(gpu);
        if state.jobs.is_empty() {
            match self.control.command(&dirs, "quit") {
                Ok(_) => {
                    tracing::info!("GPU {gpu}: last MPS job ended; MPS control daemon stopped")
                }
                Err(e) => tracing::warn!("GPU {gpu}: stopping the MPS control daemon: {e}"),
            }
            gpus.remove(&gpu);
            let _ = std::fs::remove_file(dirs.base().join(STATE_FILE));
        } else {
            let uids: Vec<u32> = state.jobs.values().copied().collect();
            state.servers.retain(|u, _| uids.contains(u));
            let snapshot = state.clone();
            self.save(gpu, &snapshot);
        }
    }

    /// Job `job` ended: it leaves whichever GPU it shared.
    pub fn job_gone(&self, job: JobId) {
        let gpus: Vec<u32> = self
            .lock()
            .iter()
            .filter(|(_, s)| s.jobs.contains_key(&job))
            .map(|(&g, _)| g)
            .collect();
        for g in gpus {
            self.job_ended(g, job);
        }
    }

    /// Forgets the jobs the node no longer holds (after a restart); stops idle daemons.
    pub fn retain_jobs(&self, held: &dyn Fn(JobId) -> bool) {
        let gone: Vec<(u32, JobId)> = self
            .lock()
            .iter()
            .flat_map(|(g, s)| s.jobs.keys().map(move |j| (*g, *j)))
            .filter(|(_, j)| !held(*j))
            .collect();
        for (g, j) in gone {
            self.job_ended(g, j);
        }
    }

    /// Checks every daemon in use; the jobs of a dead daemon or server, which are forgotten
    /// here (the caller kills and reports them).
    pub fn check(&self) -> Vec<MpsFailure> {
        let mut gpus = self.lock();
        let mut failures = Vec::new();
        for (&gpu, state) in gpus.iter_mut() {
            if state.jobs.is_empty() {
                continue;
            }
            let dirs = self.dirs(gpu);
            match self.control.command(&dirs, "get_server_list") {
                Err(e) => failures.push(MpsFailure {
                    gpu,
                    jobs: state.jobs.keys().copied().collect(),
                    why: format!("the MPS control daemon of GPU {gpu} died ({e})"),
                }),
                Ok(_) => {
                    let dead: Vec<(u32, u32)> = state
                        .servers
                        .iter()
                        .filter_map(|(&uid, &pid)| Some((uid, pid?)))
                        .filter(|&(_, pid)| !pid_alive(pid))
                        .collect();
                    for (uid, pid) in dead {
                        let jobs: Vec<JobId> = state
                            .jobs
                            .iter()
                            .filter(|(_, &u)| u == uid)
                            .map(|(&j, _)| j)
                            .collect();
                        failures.push(MpsFailure {
                            gpu,
                            jobs,
                            why: format!(
                                "the MPS server (pid {pid}) of uid {uid} on GPU {gpu} died"
                            ),
                        });
                    }
                }
            }
        }
        for f in &failures {
            let Some(state) = gpus.get_mut(&f.gpu) else {
                continue;
            };
            for j in &f.jobs {
                state.jobs.remove(j);
            }
            let dirs = self.dirs(f.gpu);
            if state.jobs.is_empty() {
                // Whatever is left of the daemon goes, so the next job starts a fresh one.
                let _ = self.control.command(&dirs, "quit");
                let _ = std::fs::remove_file(dirs.base().join(STATE_FILE));
            } else {
                let uids: Vec<u32> = state.jobs.values().copied().collect();
                state.servers.retain(|u, _| uids.contains(u));
                let snapshot = state.clone();
                self.save(f.gpu, &snapshot);
            }
        }
        gpus.retain(|_, s| !s.jobs.is_empty());
        failures
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn dev(i: u32) -> GpuDevice {
        GpuDevice {
            index: i,
            type_name: "a100".into(),
            file: format!("/dev/nvidia{i}"),
            major: Some(195),
            minor: Some(i),
            uuid: Some(format!("GPU-{i}")),
            memory_mb: 81920,
            cores: vec![],
            mig: false,
            mps_count: 0,
            shard_count: 0,
        }
    }

    /// Shares one FakeControl between the manager and the test.
    #[derive(Debug)]
    struct Shared(Arc<FakeControl>);
    impl MpsControl for Shared {
        fn start_daemon(&self, gpu: &GpuDevice, dirs: &MpsDirs) -> Result<(), String> {
            self.0.start_daemon(gpu, dirs)
        }
        fn command(&self, dirs: &MpsDirs, cmd: &str) -> Result<String, String> {
            self.0.command(dirs, cmd)
        }
    }

    #[test]
    fn daemon_per_gpu_server_per_user_quit_after_last_job() {
        let t = tempfile::tempdir().unwrap();
        let fake = Arc::new(FakeControl::default());
        let mps = Mps::new(Box::new(Shared(fake.clone())), t.path());
        mps.job_started(&dev(1), 10, 1000).unwrap();
        mps.job_started(&dev(1), 11, 1000).unwrap();
        mps.job_started(&dev(1), 12, 1001).unwrap();
        mps.job_started(&dev(0), 13, 1000).unwrap();
        assert!(t.path().join("mps/gpu1/pipe").is_dir());
        assert!(t.path().join("mps/gpu1/state.json").is_file());
        mps.job_ended(1, 10);
        mps.job_ended(1, 11);
        mps.job_ended(1, 12);
        assert!(!t.path().join("mps/gpu1/state.json").exists());
        assert_eq!(
            fake.log(),
            [
                "gpu1 -d",
                "gpu1 get_server_list",
                "gpu1 start_server -uid 1000",
                "gpu1 get_server_list",
                "gpu1 get_server_list",
                "gpu1 start_server -uid 1001",
                "gpu1 get_server_list",
                "gpu0 -d",
                "gpu0 get_server_list",
                "gpu0 start_server -uid 1000",
                "gpu0 get_server_list",
                "gpu1 quit",
            ]
        );
        assert_eq!(mps.snapshot().keys().copied().collect::<Vec<_>>(), [0]);
        // A restarted gsnoded finds GPU 0's daemon in its state file.
        let again = Mps::new(Box::new(Shared(fake.clone())), t.path());
        assert_eq!(again.snapshot()[&0].jobs[&13], 1000);
        again.retain_jobs(&|_| false);
        assert!(again.snapshot().is_empty());
        assert_eq!(fake.log().last().unwrap(), "gpu0 quit");
    }

    #[test]
    fn a_dead_daemon_fails_its_jobs() {
        let t = tempfile::tempdir().unwrap();
        let fake = Arc::new(FakeControl::default());
        let mps = Mps::new(Box::new(Shared(fake.clone())), t.path());
        mps.job_started(&dev(0), 1, 1000).unwrap();
        mps.job_started(&dev(0), 2, 1000).unwrap();
        mps.job_started(&dev(1), 3, 1000).unwrap();
        assert!(mps.check().is_empty());
        fake.crash(&MpsDirs::for_gpu(t.path(), 0));
        let f = mps.check();
        assert_eq!(f.len(), 1);
        assert_eq!((f[0].gpu, f[0].jobs.clone()), (0, vec![1, 2]));
        assert!(
            f[0].why.contains("MPS control daemon of GPU 0 died"),
            "{}",
            f[0].why
        );
        // Forgotten: the next job on GPU 0 starts a new daemon.
        assert_eq!(mps.snapshot().keys().copied().collect::<Vec<_>>(), [1]);
        mps.job_started(&dev(0), 4, 1000).unwrap();
        assert!(fake.log().iter().filter(|l| *l == "gpu0 -d").count() == 2);
    }

    #[test]
    fn a_dead_server_fails_its_users_jobs() {
        let t = tempfile::tempdir().unwrap();
        let fake = Arc::new(FakeControl::default());
        let mps = Mps::new(Box::new(Shared(fake.clone())), t.path());
        // A live server (this test process) for uid 1000, a gone one for uid 1001.
        let gone = u32::MAX - 1;
        *fake.next_servers.lock().unwrap() = vec![std::process::id(), gone];
        mps.job_started(&dev(0), 1, 1000).unwrap();
        mps.job_started(&dev(0), 2, 1001).unwrap();
        assert_eq!(mps.snapshot()[&0].servers[&1000], Some(std::process::id()));
        assert_eq!(mps.snapshot()[&0].servers[&1001], Some(gone));
        let f = mps.check();
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].jobs, [2]);
        assert!(f[0].why.contains("MPS server"), "{}", f[0].why);
        assert_eq!(mps.snapshot()[&0].jobs.len(), 1);
    }

    #[test]
    fn real_control_reports_a_missing_program() {
        let c = RealControl {
            program: PathBuf::from("/nonexistent/nvidia-cuda-mps-control"),
        };
        let t = tempfile::tempdir().unwrap();
        let e = c
            .start_daemon(&dev(0), &MpsDirs::for_gpu(t.path(), 0))
            .unwrap_err();
        assert!(e.contains("install the NVIDIA driver's MPS tools"), "{e}");
    }
}
