//! GPUs on the node, through the real gsnoded and gsstepd against a fake controller, with
//! GPUs faked where this machine has none (it has no NVIDIA GPU or driver):
//! * device files the test creates (`mknod c 195 N`, NVIDIA's major number; opening one gives
//!   ENXIO without a driver, EPERM when the devices cgroup denies it, which tells the two
//!   apart);
//! * the fake `libnvidia-ml.so.1` (`plugins/gpu/tests/fake_nvml.c`, compiled here), found
//!   through `LD_LIBRARY_PATH`, so the real nvml-wrapper path runs;
//! * a fake `nvidia-cuda-mps-control` first on `PATH`, a shell script that logs its
//!   arguments and stdin and runs a `sleep` as the "daemon" (killing it is a daemon crash).
//!
//! Checked: registration with NVML's GPUs cross-checked by gres.conf, a job's GPU
//! environment, device access through the real cgroup v1 devices controller, MPS daemon
//! commands and per-job limits, `quit` after the last job (across a gsnoded restart), a dead
//! MPS daemon killing its co-tenants with `gpu_failure` in their reports, and GPU samples with
//! per-job figures (and each job's GPU utilization for the invalid-job ladder) in the
//! heartbeats.
//!
//! Needs root (mknod, cgroups) and the v1 devices controller; skips with a message otherwise.

use gsched_proto::api::{paths, Ack, JobCompleteRequest, LaunchRequest};
use gsched_proto::client::Client;
use gsched_proto::gpu::GpuAlloc;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

mod common;
use common::{wait_until, Shared};

/// The fake `nvidia-cuda-mps-control` (shared with the cluster test in tests/tests/gpu_node.rs).
const FAKE_MPS: &str = include_str!("../../plugins/gpu/tests/fake-mps-control.sh");

struct Node {
    _rt: tokio::runtime::Runtime,
    tmp: tempfile::TempDir,
    seen: Shared,
    conf: PathBuf,
    daemon: Option<Child>,
    client: Client,
    subdir: String,
}

impl Node {
    fn spool(&self) -> PathBuf {
        self.tmp.path().join("spool/n1")
    }
    fn work(&self) -> PathBuf {
        self.tmp.path().join("work")
    }
    fn dev(&self, i: u32) -> PathBuf {
        self.tmp.path().join(format!("dev/nvidia{i}"))
    }
    fn mps_log(&self) -> String {
        std::fs::read_to_string(self.tmp.path().join("mps.log")).unwrap_or_default()
    }
    fn log(&self) -> String {
        std::fs::read_to_string(self.tmp.path().join("gsnoded.log")).unwrap_or_default()
    }

    fn start(&mut self) {
        let n = self.seen.lock().unwrap().registers.len();
        let t = self.tmp.path();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(t.join("gsnoded.log"))
            .unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_gsnoded"))
            .args(["-D", "-N", "n1", "-f"])
            .arg(&self.conf)
            .env_clear()
            .env("PATH", format!("{}:/usr/bin:/bin", t.join("bin").display()))
            .env("LD_LIBRARY_PATH", t.join("lib"))
            .env("FAKE_NVML_GPUS", "3")
            .env("FAKE_NVML_UTIL", "55")
            .env("FAKE_NVML_PROCS_FILE", t.join("procs"))
            .env("FAKE_MPS_LOG", t.join("mps.log"))
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
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    fn request(&self, job_id: u32, script: &str, gpus: Vec<GpuAlloc>) -> LaunchRequest {
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
            gpus,
            prolog_env: Vec::new(),
        }
    }

    fn launch(&self, req: &LaunchRequest) {
        self.client
            .post::<_, Ack>(paths::NODE_LAUNCH, req)
            .unwrap_or_else(|e| panic!("launch of job {}: {e}\n{}", req.job_id, self.log()));
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

    fn work_file(&self, name: &str) -> String {
        let p = self.work().join(name);
        wait_until(&format!("{}", p.display()), Duration::from_secs(20), || {
            std::fs::read_to_string(&p).is_ok_and(|s| s.contains("END"))
        });
        std::fs::read_to_string(&p).unwrap()
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill9();
        if std::thread::panicking() {
            eprintln!("---- gsnoded log ----\n{}", self.log());
            eprintln!("---- MPS log ----\n{}", self.mps_log());
        }
        // Leave nothing behind: the fake MPS daemons and the jobs' processes, by pid.
        let kill = |pid: i32| {
            let _ =
                nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::SIGKILL);
        };
        for g in 0..3 {
            let f = self
                .spool()
                .join(format!("mps/gpu{g}/pipe/fake-daemon.pid"));
            if let Some(pid) = std::fs::read_to_string(f)
                .ok()
                .and_then(|s| s.trim().parse().ok())
            {
                kill(pid);
            }
        }
        if let Ok(entries) = std::fs::read_dir(self.spool()) {
            for e in entries.flatten() {
                if let Ok(Some(p)) = gsched_noded::jobdir::JobDir::new(e.path()).read_pids() {
                    for pid in gsched_noded::procfs::descendants(p.stepd_pid)
                        .into_iter()
                        .chain([p.stepd_pid])
                    {
                        kill(pid);
                    }
                }
            }
        }
        for c in [
            "devices", "freezer", "cpuacct", "cpu", "memory", "pids", "cpuset",
        ] {
            let base = Path::new("/sys/fs/cgroup")
                .join(c)
                .join(format!("{}_n1", self.subdir));
            if let Ok(rd) = std::fs::read_dir(&base) {
                for e in rd.flatten() {
                    if let Ok(steps) = std::fs::read_dir(e.path()) {
                        for s in steps.flatten().filter(|s| s.path().is_dir()) {
                            let _ = std::fs::remove_dir(s.path());
                        }
                    }
                    let _ = std::fs::remove_dir(e.path());
                }
            }
            let _ = std::fs::remove_dir(&base);
        }
    }
}

fn setup() -> Option<Node> {
    if !nix::unistd::getuid().is_root() {
        eprintln!("skipping: the GPU node test needs root (mknod, cgroups)");
        return None;
    }
    if !Path::new("/sys/fs/cgroup/devices/devices.deny").is_file() {
        eprintln!(
            "skipping: the cgroup v1 devices controller is not mounted at /sys/fs/cgroup/devices"
        );
        return None;
    }
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    std::fs::set_permissions(t, std::fs::Permissions::from_mode(0o755)).unwrap();
    for d in ["work", "dev", "bin", "lib"] {
        std::fs::create_dir(t.join(d)).unwrap();
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/gpu/tests/fake_nvml.c");
    match Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(t.join("lib/libnvidia-ml.so.1"))
        .arg(&src)
        .status()
    {
        Ok(s) => assert!(s.success(), "cc failed on {}", src.display()),
        Err(e) => {
            eprintln!("skipping: no C compiler to build the fake NVML library ({e}); install gcc");
            return None;
        }
    }
    for i in 0..3 {
        let st = Command::new("mknod")
            .arg(t.join(format!("dev/nvidia{i}")))
            .args(["c", "195", &i.to_string()])
            .status()
            .unwrap();
        assert!(st.success(), "mknod failed");
    }
    let mps = t.join("bin/nvidia-cuda-mps-control");
    std::fs::write(&mps, FAKE_MPS).unwrap();
    std::fs::set_permissions(&mps, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(t.join("procs"), "").unwrap();

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
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let conf = t.join("gsched.conf");
    std::fs::write(
        &conf,
        format!(
            "ClusterName=test\nSlurmctldHost=localhost(127.0.0.1)\nSlurmctldPort={ctl_port}\n\
             AuthType=auth/none\nSlurmdSpoolDir={}/spool/%n\nKillWait=1\nGpuSampleInterval=1\n\
             NodeName=n1 NodeAddr=127.0.0.1 Port={port} CPUs=2 RealMemory=1000 Gres=gpu:a100:3\n\
             PartitionName=debug Nodes=ALL Default=YES\n",
            t.display()
        ),
    )
    .unwrap();
    std::fs::write(
        t.join("gres.conf"),
        format!(
            "AutoDetect=nvml\nName=gpu Type=a100 File={}/dev/nvidia[0-2] Cores=0-1\nName=mps Count=300\n",
            t.display()
        ),
    )
    .unwrap();
    let subdir = format!("gsched-gputest-{}", std::process::id());
    std::fs::write(
        t.join("cgroup.conf"),
        format!("CgroupPlugin=cgroup/v1\nConstrainDevices=yes\nCgroupSubdir={subdir}_%n\n"),
    )
    .unwrap();
    let client = Client::new(
        format!("127.0.0.1:{port}"),
        gsched_auth::by_name("auth/none").unwrap(),
    )
    .with_timeout(Duration::from_secs(10));
    Some(Node {
        _rt: rt,
        tmp,
        seen,
        conf,
        daemon: None,
        client,
        subdir,
    })
}

/// A script that records the GPU variables and which GPU files it can open.
fn probe(node: &Node, out: &str, extra: &str) -> String {
    let devs: Vec<String> = (0..3).map(|i| node.dev(i).display().to_string()).collect();
    format!(
        "#!/bin/sh\nexec > {out} 2>&1\necho pid=$$\nenv | grep -E '^(CUDA|GPU_|SLURM_JOB_GPUS|SLURM_GPUS)' | sort\n\
         for d in {}; do cat $d >/dev/null 2>/tmp/gsched-gputest-err.$$; echo \"open $d: $(cat /tmp/gsched-gputest-err.$$ | sed 's/.*: //')\"; done\n\
         rm -f /tmp/gsched-gputest-err.$$\n{extra}\necho END\n",
        devs.join(" ")
    )
}

#[test]
fn gpus_registered_isolated_shared_and_sampled() {
    let Some(mut node) = setup() else { return };
    node.start();

    // Registration: NVML's three GPUs, matched to the gres.conf files by minor number.
    let reg = node.seen.lock().unwrap().registers[0].clone();
    assert_eq!(reg.gpus.len(), 3, "{:?}\n{}", reg.gpus, node.log());
    for (i, g) in reg.gpus.iter().enumerate() {
        assert_eq!(g.index, i as u32);
        assert_eq!(g.type_name, "a100");
        assert_eq!(g.file, node.dev(i as u32).display().to_string());
        assert_eq!((g.major, g.minor), (Some(195), Some(i as u32)));
        assert_eq!(g.memory_mb, 81920);
        assert_eq!(g.cores, [0, 1]);
        assert_eq!(g.mps_count, 100);
        assert_eq!(
            g.uuid.as_deref(),
            Some(format!("GPU-fa4e0000-0000-0000-0000-00000000000{i}").as_str())
        );
    }
    assert!(
        node.log()
            .contains("node n1 has 3 GPU(s) (Gres=gpu:a100:3)"),
        "{}",
        node.log()
    );

    // A whole GPU: its variables, and only its device file opens (ENXIO: no driver).
    node.launch(&node.request(1, &probe(&node, "job1.out", ""), vec![GpuAlloc::whole(1)]));
    let out = node.work_file("job1.out");
    for want in [
        "CUDA_DEVICE_ORDER=PCI_BUS_ID",
        "CUDA_VISIBLE_DEVICES=0\n",
        "GPU_DEVICE_ORDINAL=0\n",
        "SLURM_JOB_GPUS=1\n",
        "SLURM_GPUS_ON_NODE=1\n",
    ] {
        assert!(out.contains(want), "{want:?} not in:\n{out}");
    }
    assert!(!out.contains("CUDA_MPS"), "{out}");
    let d = |i| node.dev(i).display().to_string();
    assert!(
        out.contains(&format!("open {}: Operation not permitted", d(0))),
        "{out}"
    );
    assert!(
        out.contains(&format!("open {}: No such device or address", d(1))),
        "{out}"
    );
    assert!(
        out.contains(&format!("open {}: Operation not permitted", d(2))),
        "{out}"
    );
    assert_eq!(node.completion(1).exit_code, 0);

    // No GPU: none of the node's GPU files opens.
    node.launch(&node.request(2, &probe(&node, "job2.out", ""), vec![]));
    let out = node.work_file("job2.out");
    assert_eq!(out.matches("Operation not permitted").count(), 3, "{out}");
    assert!(!out.contains("SLURM_JOB_GPUS"), "{out}");
    node.completion(2);

    // Two MPS jobs on GPU 2: one daemon with its own directories, one server for the user,
    // each job's limits in its environment.
    let uid = nix::unistd::getuid().as_raw();
    let hold = |f: &str| {
        format!(
            "while [ ! -e {} ]; do sleep 0.1; done",
            node.work().join(f).display()
        )
    };
    node.launch(&node.request(
        3,
        &probe(&node, "job3.out", &format!("echo END\n{}", hold("never"))),
        vec![GpuAlloc::mps(2, 50, 20480)],
    ));
    node.launch(&node.request(
        4,
        &probe(&node, "job4.out", &format!("echo END\n{}", hold("never"))),
        vec![GpuAlloc::mps(2, 25, 0)],
    ));
    let out3 = node.work_file("job3.out");
    let out4 = node.work_file("job4.out");
    let pipe2 = node.spool().join("mps/gpu2/pipe").display().to_string();
    for want in [
        "CUDA_VISIBLE_DEVICES=0\n".to_string(),
        "SLURM_JOB_GPUS=2\n".to_string(),
        format!("CUDA_MPS_PIPE_DIRECTORY={pipe2}\n"),
        "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50\n".to_string(),
        "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=20480M\n".to_string(),
    ] {
        assert!(out3.contains(&want), "{want:?} not in:\n{out3}");
    }
    assert!(
        out3.contains(&format!("open {}: No such device or address", d(2))),
        "{out3}"
    );
    assert!(
        out4.contains("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25\n"),
        "{out4}"
    );
    assert!(!out4.contains("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "{out4}");
    let log = node.mps_log();
    assert_eq!(log.matches(" -d ").count(), 1, "{log}");
    assert!(
        log.contains(&format!(
            "{pipe2} -d visible=GPU-fa4e0000-0000-0000-0000-000000000002 log={}",
            node.spool().join("mps/gpu2/log").display()
        )),
        "{log}"
    );
    assert_eq!(
        log.matches(&format!("{pipe2} start_server -uid {uid}"))
            .count(),
        1,
        "{log}"
    );

    // Samples: GPU 2's utilization, and job 3's process as job 3's.
    let pid3: u32 = out3
        .lines()
        .find_map(|l| l.strip_prefix("pid="))
        .unwrap()
        .parse()
        .unwrap();
    std::fs::write(node.tmp.path().join("procs"), format!("2 {pid3} 1000 40\n")).unwrap();
    wait_until("a GPU sample with job 3", Duration::from_secs(20), || {
        node.seen.lock().unwrap().heartbeats.iter().any(|h| {
            h.gpu_samples.iter().any(|s| {
                s.index == 2
                    && s.util_percent == 55
                    && s.jobs
                        .iter()
                        .any(|j| j.job_id == 3 && j.mem_used_mb == 1000 && j.util_percent == 40)
            })
        })
    });

    // The invalid-job ladder's input: job 3's GPU utilization is its own processes' share.
    wait_until(
        "job 3's GPU utilization in a heartbeat",
        Duration::from_secs(20),
        || {
            node.seen.lock().unwrap().heartbeats.iter().any(|h| {
                h.progress
                    .iter()
                    .any(|p| p.job_id == 3 && p.gpu_util_percent == Some(40))
            })
        },
    );
    // Job 4 runs no process on the GPU: 0 %, which the ladder may call idle.
    wait_until(
        "job 4's GPU utilization in a heartbeat",
        Duration::from_secs(20),
        || {
            node.seen.lock().unwrap().heartbeats.iter().any(|h| {
                h.progress
                    .iter()
                    .any(|p| p.job_id == 4 && p.gpu_util_percent == Some(0))
            })
        },
    );

    // The MPS daemon dies: both co-tenants are killed and reported as GPU failures.
    let daemon: i32 = std::fs::read_to_string(node.spool().join("mps/gpu2/pipe/fake-daemon.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(daemon),
        nix::sys::signal::SIGKILL,
    )
    .unwrap();
    for id in [3, 4] {
        let r = node.completion(id);
        let why = r
            .gpu_failure
            .unwrap_or_else(|| panic!("job {id}: no gpu_failure\n{}", node.log()));
        assert!(why.contains("MPS control daemon of GPU 2 died"), "{why}");
        assert_ne!(r.signal, 0, "job {id} was not killed");
    }

    // MPS on GPU 0 across a gsnoded restart: the restarted daemon still stops MPS (`quit`)
    // when the job ends.
    node.launch(&node.request(
        5,
        &probe(&node, "job5.out", &format!("echo END\n{}", hold("go5"))),
        vec![GpuAlloc::mps(0, 100, 0)],
    ));
    node.work_file("job5.out");
    node.kill9();
    node.start();
    std::fs::write(node.work().join("go5"), "").unwrap();
    let r = node.completion(5);
    assert_eq!((r.exit_code, r.gpu_failure.clone()), (0, None), "{r:?}");
    let pipe0 = node.spool().join("mps/gpu0/pipe").display().to_string();
    wait_until("quit of GPU 0's daemon", Duration::from_secs(10), || {
        node.mps_log().contains(&format!("{pipe0} quit"))
    });
    assert!(!node.spool().join("mps/gpu0/state.json").exists());
}

/// Bad GPU settings stop gsnoded at start-up with the file, the line and what to do.
#[test]
fn gpu_start_up_errors_are_clear() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let conf = t.join("gsched.conf");
    std::fs::write(
        &conf,
        format!(
            "SlurmctldHost=localhost(127.0.0.1)\nAuthType=auth/none\nSlurmdSpoolDir={}/spool\n\
             NodeName=n1 NodeAddr=127.0.0.1 Port=1 Gres=gpu:2\n",
            t.display()
        ),
    )
    .unwrap();
    let run = || {
        let out = Command::new(env!("CARGO_BIN_EXE_gsnoded"))
            .args(["-N", "n1", "-f"])
            .arg(&conf)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("LD_LIBRARY_PATH", t.join("nolib"))
            .env("GSCHED_STEPD", env!("CARGO_BIN_EXE_gsstepd"))
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let gres = t.join("gres.conf");
    let cases = [
        (
            "Name=gpu File=/dev/null Links=0",
            "gres.conf:1: Links= is a Slurm gres.conf key gsched does not implement",
        ),
        (
            "AutoDetect=rsmi",
            "gres.conf:1: AutoDetect=rsmi is not supported; valid values: nvml, off",
        ),
        (
            "\nName=gpu File=/etc/hostname",
            "gres.conf:2: File=/etc/hostname is not a character device",
        ),
    ];
    for (text, want) in cases {
        std::fs::write(&gres, text).unwrap();
        let (code, err) = run();
        assert_eq!(code, 1, "{text}: {err}");
        assert!(err.contains(want), "{text}: {err}");
    }
    // Only on a machine without the NVIDIA driver (this test's premise).
    if !Path::new("/dev/nvidiactl").exists() {
        std::fs::write(&gres, "AutoDetect=nvml\n").unwrap();
        let (code, err) = run();
        assert_eq!(code, 1, "{err}");
        assert!(
            err.contains("AutoDetect=nvml but NVML cannot be used"),
            "{err}"
        );
        assert!(err.contains("set AutoDetect=off in gres.conf"), "{err}");
    }
}
