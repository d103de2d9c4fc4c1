//! Runs the real gsnoded binary against a fake controller (a small axum server in the test)
//! and drives it through the API with the real client: launch, idempotency, signals,
//! terminate, reports, restart with re-adoption, and the request checks.

use gsched_noded::jobdir::{JobDir, PidsFile};
use gsched_proto::api::{
    paths, Ack, ErrorCode, JobCompleteRequest, LaunchRequest, NodeSignalRequest, PingResponse,
    TerminateReason, TerminateRequest,
};
use gsched_proto::client::{Client, ClientError};
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What the fake controller received.
mod common;
use common::{wait_until, Shared};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

struct Cluster {
    _rt: tokio::runtime::Runtime,
    tmp: tempfile::TempDir,
    seen: Shared,
    conf: PathBuf,
    port: u16,
    daemon: Option<Child>,
    client: Client,
}

impl Cluster {
    fn new() -> Cluster {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let seen: Shared = Arc::default();
        let app = common::controller(seen.clone());
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let ctl_port = listener.local_addr().unwrap().port();
        rt.spawn(async move { axum::serve(listener, app).await });

        let tmp = tempfile::tempdir().unwrap();
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::create_dir(tmp.path().join("work")).unwrap();
        let port = free_port();
        let conf = tmp.path().join("gsched.conf");
        std::fs::write(
            &conf,
            format!(
                "ClusterName=test\nSlurmctldHost=localhost(127.0.0.1)\nSlurmctldPort={ctl_port}\n\
                 AuthType=auth/none\nSlurmdSpoolDir={}/spool/%n\nKillWait=1\n\
                 NodeName=n1 NodeAddr=127.0.0.1 Port={port} CPUs=2 RealMemory=1000\n\
                 PartitionName=debug Nodes=ALL Default=YES\n",
                tmp.path().display()
            ),
        )
        .unwrap();
        let auth = gsched_auth::by_name("auth/none").unwrap();
        let client =
            Client::new(format!("127.0.0.1:{port}"), auth).with_timeout(Duration::from_secs(10));
        Cluster {
            _rt: rt,
            tmp,
            seen,
            conf,
            port,
            daemon: None,
            client,
        }
    }

    fn spool(&self) -> PathBuf {
        self.tmp.path().join("spool/n1")
    }

    fn work(&self) -> PathBuf {
        self.tmp.path().join("work")
    }

    fn start(&mut self) {
        let n = self.seen.lock().unwrap().registers.len();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.tmp.path().join("gsnoded.log"))
            .unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_gsnoded"))
            .args(["-D", "-N", "n1", "-f"])
            .arg(&self.conf)
            .env("GSCHED_STEPD", env!("CARGO_BIN_EXE_gsstepd"))
            .env("GSCHED_DEBUG", "debug")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        self.daemon = Some(child);
        wait_until("registration", Duration::from_secs(20), || {
            self.seen.lock().unwrap().registers.len() > n
        });
    }

    fn kill9(&mut self) {
        if let Some(mut c) = self.daemon.take() {
            c.kill().unwrap();
            c.wait().unwrap();
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.tmp.path().join("gsnoded.log")).unwrap_or_default()
    }

    fn request(&self, job_id: u32, script: &str) -> LaunchRequest {
        let uid = nix::unistd::getuid().as_raw();
        LaunchRequest {
            job_id,
            start_time: 1_000 + i64::from(job_id),
            name: format!("job{job_id}"),
            uid,
            gid: nix::unistd::getgid().as_raw(),
            user_name: gsched_proto::users::user_name(uid),
            script: script.into(),
            argv: vec![],
            work_dir: self.work().to_string_lossy().into_owned(),
            stdout: None,
            stderr: None,
            stdin: None,
            open_mode: None,
            environment: vec![("PATH".into(), "/usr/bin:/bin".into())],
            cpus: 1,
            mem_mb: 10,
            node_index: 0,
            time_limit: None,
            gpus: Vec::new(),
            prolog_env: Vec::new(),
        }
    }

    fn launch(&self, req: &LaunchRequest) -> Result<Ack, ClientError> {
        self.client.post(paths::NODE_LAUNCH, req)
    }

    fn completion(&self, job_id: u32) -> JobCompleteRequest {
        let mut found = None;
        wait_until(
            &format!("completion of job {job_id}"),
            Duration::from_secs(30),
            || {
                found = self
                    .seen
                    .lock()
                    .unwrap()
                    .completes
                    .iter()
                    .find(|c| c.job_id == job_id)
                    .cloned();
                found.is_some()
            },
        );
        found.unwrap()
    }

    fn pids(&self, job_id: u32) -> PidsFile {
        let dir = JobDir::new(self.spool().join(format!("job_{job_id}")));
        let mut pids = None;
        wait_until("pids.json with the shell", Duration::from_secs(10), || {
            pids = dir
                .read_pids()
                .ok()
                .flatten()
                .filter(|p| p.shell_pid.is_some());
            pids.is_some()
        });
        pids.unwrap()
    }

    fn last_running(&self) -> Vec<u32> {
        let s = self.seen.lock().unwrap();
        let mut ids: Vec<u32> = s
            .registers
            .last()
            .map(|r| r.running.iter().map(|j| j.job_id).collect())
            .unwrap_or_default();
        ids.sort_unstable();
        ids
    }

    /// Sends a raw HTTP request; returns status and body.
    fn raw(&self, headers: &str) -> (u16, String) {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        write!(
            s,
            "GET {} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{headers}\r\n",
            paths::NODE_PING
        )
        .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        let status = out
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let body = out.split("\r\n\r\n").nth(1).unwrap_or("").to_string();
        (status, body)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.kill9();
        if std::thread::panicking() || std::env::var_os("GSCHED_TEST_SHOW_LOG").is_some() {
            eprintln!("---- gsnoded log ----\n{}", self.log());
        }
        // Leave no job behind, whatever the test did.
        if let Ok(entries) = std::fs::read_dir(self.spool()) {
            for e in entries.flatten() {
                if let Ok(Some(p)) = JobDir::new(e.path()).read_pids() {
                    for pid in gsched_noded::procfs::descendants(p.stepd_pid)
                        .into_iter()
                        .chain([p.stepd_pid])
                    {
                        let _ = gsched_noded::sys::send_signal(pid, libc::SIGKILL);
                    }
                }
            }
        }
    }
}

fn alive(pid: i32) -> bool {
    gsched_noded::procfs::read_stat(pid).is_ok_and(|s| !s.is_zombie())
}

#[test]
fn jobs_run_report_and_survive_restarts() {
    let mut c = Cluster::new();
    c.start();
    let ping: PingResponse = c.client.get(paths::NODE_PING).unwrap();
    assert_eq!((ping.cluster.as_str(), ping.host.as_str()), ("test", "n1"));
    {
        let s = c.seen.lock().unwrap();
        let r = &s.registers[0];
        assert_eq!((r.name.as_str(), r.cpus, r.real_memory_mb), ("n1", 2, 1000));
        assert!(r.running.is_empty());
        assert!(r.boot_time > 0 && r.start_time >= r.boot_time);
    }

    // A job runs and its exit code is reported; the folder goes after the acknowledgement.
    let req = c.request(1, "#!/bin/sh\necho \"on $SLURMD_NODENAME\"\nexit 3\n");
    c.launch(&req).unwrap();
    let done = c.completion(1);
    assert_eq!(
        (
            done.exit_code,
            done.signal,
            done.start_time,
            done.node.as_str()
        ),
        (3, 0, 1001, "n1")
    );
    assert_eq!(done.launch_error, None);
    assert_eq!(done.terminated_for, None);
    assert_eq!(
        std::fs::read_to_string(c.work().join("slurm-1.out")).unwrap(),
        "on n1\n"
    );
    wait_until("folder removal", Duration::from_secs(10), || {
        !c.spool().join("job_1").exists()
    });

    // Launch is idempotent per (job, start time); another start time conflicts.
    let req2 = c.request(2, "#!/bin/sh\nsleep 60\n");
    c.launch(&req2).unwrap();
    c.launch(&req2).unwrap();
    let mut other = req2.clone();
    other.start_time += 1;
    let e = c.launch(&other).unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::JobAlreadyDone), "{e}");
    let pids2 = c.pids(2);

    // Without a scope flag a signal goes to the job's steps only (there are none): the
    // batch shell lives on, as in Slurm.
    let ack: Ack = c
        .client
        .post(
            paths::NODE_SIGNAL,
            &NodeSignalRequest {
                job_id: 2,
                signal: libc::SIGTERM,
                batch_only: false,
                full: false,
            },
        )
        .unwrap();
    assert!(ack.ok);
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(alive(pids2.shell_pid.unwrap()));

    // `full` reaches every process of the job.
    let ack: Ack = c
        .client
        .post(
            paths::NODE_SIGNAL,
            &NodeSignalRequest {
                job_id: 2,
                signal: libc::SIGTERM,
                batch_only: false,
                full: true,
            },
        )
        .unwrap();
    assert!(ack.ok);
    let done = c.completion(2);
    assert_eq!((done.exit_code, done.signal), (0, libc::SIGTERM));
    assert!(!alive(pids2.shell_pid.unwrap()));

    // Unknown jobs are 404 InvalidJobId.
    let e = c
        .client
        .post::<_, Ack>(
            paths::NODE_SIGNAL,
            &NodeSignalRequest {
                job_id: 999,
                signal: 10,
                batch_only: true,
                full: false,
            },
        )
        .unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::InvalidJobId));
    let e = c
        .client
        .post::<_, Ack>(
            paths::NODE_TERMINATE,
            &TerminateRequest {
                job_id: 999,
                kill_wait: 0,
                reason: TerminateReason::Cancelled,
            },
        )
        .unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::InvalidJobId));

    // Terminate: a job that ignores SIGTERM is SIGKILLed after kill_wait.
    let req3 = c.request(3, "#!/bin/sh\ntrap '' TERM\nsleep 60 &\nwait\nsleep 60\n");
    c.launch(&req3).unwrap();
    c.pids(3);
    std::thread::sleep(Duration::from_millis(200));
    let t0 = Instant::now();
    let _: Ack = c
        .client
        .post(
            paths::NODE_TERMINATE,
            &TerminateRequest {
                job_id: 3,
                kill_wait: 1,
                reason: TerminateReason::TimeLimit,
            },
        )
        .unwrap();
    let done = c.completion(3);
    assert!(
        t0.elapsed() >= Duration::from_millis(900),
        "{:?}",
        t0.elapsed()
    );
    assert_eq!(done.signal, libc::SIGKILL);
    assert_eq!(done.terminated_for, Some(TerminateReason::TimeLimit));

    // Restart: a job survives kill -9 of gsnoded and is re-adopted and listed.
    let req4 = c.request(4, "#!/bin/sh\nsleep 60\n");
    c.launch(&req4).unwrap();
    let pids4 = c.pids(4);
    // A job whose gsstepd dies while gsnoded is away.
    let req5 = c.request(5, "#!/bin/sh\nsleep 60\n");
    c.launch(&req5).unwrap();
    let pids5 = c.pids(5);
    c.kill9();
    assert!(alive(pids4.stepd_pid) && alive(pids4.shell_pid.unwrap()));
    gsched_noded::sys::send_signal(pids5.stepd_pid, libc::SIGKILL).unwrap();
    wait_until("gsstepd of job 5 to die", Duration::from_secs(10), || {
        !alive(pids5.stepd_pid)
    });
    c.start();
    // Job 5's report is sent as soon as it is found, and races the registration: it is
    // listed while its report is pending and no longer once the controller acknowledged it.
    // Either order tells the controller the same; job 4 must be listed in both.
    let running = c.last_running();
    assert!(running == [4, 5] || running == [4], "{running:?}");
    let done = c.completion(5);
    assert_eq!(
        done.launch_error.as_deref(),
        Some("job's gsstepd disappeared (node daemon restart)")
    );
    assert_eq!(done.signal, libc::SIGKILL);
    // What gsstepd left (its batch shell) is killed too.
    wait_until("job 5's shell to die", Duration::from_secs(10), || {
        !alive(pids5.shell_pid.unwrap())
    });

    // The re-adopted job is watched: terminating it produces its report.
    let _: Ack = c
        .client
        .post(
            paths::NODE_TERMINATE,
            &TerminateRequest {
                job_id: 4,
                kill_wait: 5,
                reason: TerminateReason::Cancelled,
            },
        )
        .unwrap();
    let done = c.completion(4);
    assert_eq!(done.signal, libc::SIGTERM);
    assert_eq!(done.terminated_for, Some(TerminateReason::Cancelled));
    wait_until("empty spool", Duration::from_secs(10), || {
        std::fs::read_dir(c.spool()).unwrap().next().is_none()
    });
    assert!(
        c.seen
            .lock()
            .unwrap()
            .heartbeats
            .iter()
            .any(|h| h.name == "n1"),
        "no heartbeat seen\n{}",
        c.log()
    );

    // The controller's kill list at registration ends a job it does not assign here.
    let req6 = c.request(6, "#!/bin/sh\nsleep 60\n");
    c.launch(&req6).unwrap();
    c.pids(6);
    c.kill9();
    c.seen.lock().unwrap().kill_on_register = vec![6];
    c.start();
    let done = c.completion(6);
    assert_eq!(done.terminated_for, Some(TerminateReason::NotAssigned));

    // SIGTERM stops gsnoded cleanly (exit 0) and leaves jobs running.
    let req7 = c.request(7, "#!/bin/sh\nsleep 60\n");
    c.launch(&req7).unwrap();
    let pids7 = c.pids(7);
    let mut d = c.daemon.take().unwrap();
    gsched_noded::sys::send_signal(d.id() as i32, libc::SIGTERM).unwrap();
    let st = d.wait().unwrap();
    assert!(st.success(), "{st}\n{}", c.log());
    assert!(alive(pids7.shell_pid.unwrap()));
}

#[test]
fn requests_are_checked() {
    let mut c = Cluster::new();
    c.start();
    let (status, body) = c.raw("x-gsched-protocol: 99\r\nauthorization: Gsched none:0:0\r\n");
    assert_eq!(status, 426, "{body}");
    assert!(body.contains("protocol_version"), "{body}");
    assert!(body.contains("upgrade the older side"), "{body}");
    let (status, body) = c.raw("x-gsched-protocol: 1\r\n");
    assert_eq!(status, 401, "{body}");
    let me = nix::unistd::getuid().as_raw();
    let other = if me == 12345 { 12346 } else { 12345 };
    let (status, body) = c.raw(&format!(
        "x-gsched-protocol: 1\r\nauthorization: Gsched none:{other}:0\r\n"
    ));
    assert_eq!(status, 401, "{body}");
    assert!(body.contains("authentication_failed"), "{body}");
    let (status, body) = c.raw(&format!(
        "x-gsched-protocol: 1\r\nauthorization: Gsched none:{me}:0\r\n"
    ));
    assert_eq!(status, 200, "{body}");

    // Bad launches are 400 with a reason.
    let mut req = c.request(1, "#!/bin/sh\n");
    req.work_dir = "relative/dir".into();
    let e = c.launch(&req).unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::BadRequest));
    assert!(e.to_string().contains("not absolute"), "{e}");
    let e = c
        .client
        .post::<_, Ack>(paths::NODE_SIGNAL, &serde_json::json!({"job_id": "x"}))
        .unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::BadRequest), "{e}");
    if !nix::unistd::geteuid().is_root() {
        // Without root, only the daemon's own user's jobs can run.
        let mut req = c.request(2, "#!/bin/sh\n");
        req.uid = 0;
        let e = c.launch(&req).unwrap_err();
        assert_eq!(e.code(), Some(ErrorCode::AccessDenied));
        assert!(
            e.to_string()
                .contains("without root and can only run jobs of its own user"),
            "{e}"
        );
    }
    let e = c.client.get::<Ack>("/v1/node/nothing").unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::NotFound), "{e}");
}

fn run_gsnoded(args: &[&str], conf: Option<&Path>) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gsnoded"));
    cmd.args(args)
        .env("GSCHED_STEPD", env!("CARGO_BIN_EXE_gsstepd"))
        .env_remove("GSCHED_CONF");
    if let Some(conf) = conf {
        cmd.arg("-f").arg(conf);
    }
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn start_up_errors_are_clear() {
    let (code, out, _) = run_gsnoded(&["-V"], None);
    assert_eq!(code, 0);
    assert_eq!(
        out,
        format!(
            "gsched {} (slurm 22.05.8 compatible)\n",
            env!("CARGO_PKG_VERSION")
        )
    );

    let tmp = tempfile::tempdir().unwrap();
    let conf = tmp.path().join("gsched.conf");
    std::fs::write(
        &conf,
        format!(
            "SlurmctldHost=localhost(127.0.0.1)\nAuthType=auth/none\nSlurmdSpoolDir={}/spool\n\
             NodeName=n1 NodeAddr=127.0.0.1 Port={}\nNodeName=far NodeAddr=192.0.2.7\n",
            tmp.path().display(),
            free_port()
        ),
    )
    .unwrap();
    let (code, _, err) = run_gsnoded(&["-N", "ghost"], Some(&conf));
    assert_eq!(code, 1);
    assert!(err.contains("node ghost is not defined in"), "{err}");
    assert!(err.contains(&conf.display().to_string()), "{err}");

    let (code, _, err) = run_gsnoded(&["-N", "far"], Some(&conf));
    assert_eq!(code, 1);
    assert!(err.contains("only listens on loopback"), "{err}");

    let (code, _, err) = run_gsnoded(&[], Some(&conf));
    assert_ne!(code, 0);
    assert!(err.contains("--node"), "{err}");
}
