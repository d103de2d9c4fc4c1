//! GPUs on a node of a real test cluster (gsctld, gsnoded, gsstepd, the commands), with the
//! GPUs faked because this machine has none: device files the test creates (`mknod c 195 N`:
//! opening one gives ENXIO without a driver, EPERM when the devices cgroup denies it), the
//! fake `libnvidia-ml.so.1` (`plugins/gpu/tests/fake_nvml.c`, compiled by the harness's
//! `gpu_fakes`) on the daemons' `LD_LIBRARY_PATH`, and a fake `nvidia-cuda-mps-control` first
//! on their `PATH`.
//!
//! * the node finds its GPUs through the real nvml-wrapper path (`AutoDetect=nvml`,
//!   cross-checked by gres.conf) and `gscontrol show node` shows them;
//! * a job without GPUs, submitted with gsbatch, can open none of the node's GPU files (the
//!   real cgroup v1 devices controller);
//! * a launch with a whole GPU (sent straight to gsnoded, as the controller sends it) sees its
//!   GPU only, in its environment and in the device files it can open (cgroup v1, and v2 with
//!   its eBPF device program);
//! * the GPUs' samples (utilization from the fake NVML) reach the controller's store;
//! * with GPU placement in the controller (`gsbatch --gpu-mem`), two MPS-shared jobs share one
//!   MPS daemon, and when that daemon dies both are requeued (Restarts=1). Without it (gsbatch
//!   refuses `--gpu-mem`), that part says so and is skipped.
//!
//! Needs root (mknod, cgroups) and the v1 devices controller; skips with a message otherwise.

use gsched_proto::api::{paths, Ack, LaunchRequest};
use gsched_proto::client::Client;
use gsched_proto::gpu::GpuAlloc;
use gsched_tests::gpu_fakes::FakeNvml;
use gsched_tests::{is_root, secs, ClusterOpts, JobState, TestCluster};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const FAKE_MPS: &str = include_str!("../../plugins/gpu/tests/fake-mps-control.sh");

/// The fake GPUs, library and MPS tool, in a folder of their own.
struct Fakes {
    nvml: FakeNvml,
}

impl Fakes {
    fn new(gpus: u32) -> Option<Fakes> {
        if !is_root() {
            eprintln!("skipping: GPU tests need root (mknod, cgroups)");
            return None;
        }
        if !Path::new("/sys/fs/cgroup/devices/devices.deny").is_file() {
            eprintln!("skipping: the cgroup v1 devices controller is not mounted at /sys/fs/cgroup/devices");
            return None;
        }
        let nvml = FakeNvml::build()?;
        let t = nvml.dir();
        for d in ["dev", "bin"] {
            std::fs::create_dir(t.join(d)).unwrap();
        }
        for i in 0..gpus {
            let ok = Command::new("mknod")
                .arg(t.join(format!("dev/nvidia{i}")))
                .args(["c", "195", &i.to_string()])
                .status()
                .unwrap()
                .success();
            assert!(ok, "mknod failed");
        }
        let mps = t.join("bin/nvidia-cuda-mps-control");
        std::fs::write(&mps, FAKE_MPS).unwrap();
        std::fs::set_permissions(&mps, std::fs::Permissions::from_mode(0o755)).unwrap();
        Some(Fakes { nvml })
    }

    fn path(&self, p: &str) -> PathBuf {
        self.nvml.path(p)
    }

    fn dev(&self, i: u32) -> String {
        self.path(&format!("dev/nvidia{i}")).display().to_string()
    }

    fn mps_log(&self) -> String {
        std::fs::read_to_string(self.path("mps.log")).unwrap_or_default()
    }

    /// A cluster of one node `n1` with these GPUs, ConstrainDevices (cgroup v1) and the fakes.
    fn opts(&self, name: &str, gpus: u32, subdir: &str) -> ClusterOpts {
        self.opts_with(
            name,
            gpus,
            &format!("CgroupPlugin=cgroup/v1\nConstrainDevices=yes\nCgroupSubdir={subdir}_%n\n"),
        )
    }

    /// The same with this `cgroup.conf`.
    fn opts_with(&self, name: &str, gpus: u32, cgroup_conf: &str) -> ClusterOpts {
        ClusterOpts::named(name)
            .nodes(1)
            .node_gres(&format!("gpu:a100:{gpus}"))
            .file(
                "gres.conf",
                &format!(
                "AutoDetect=nvml\nName=gpu Type=a100 File={}/dev/nvidia[0-{}]\nName=mps Count={}\n",
                self.nvml.dir().display(),
                gpus - 1,
                100 * gpus
                ),
            )
            .cgroup_conf(cgroup_conf)
            .daemon_env("LD_LIBRARY_PATH", &self.path("lib").display().to_string())
            .daemon_env("FAKE_NVML_GPUS", &gpus.to_string())
            .daemon_env("FAKE_NVML_UTIL", "33")
            .config_line("GpuSampleInterval=1")
            .daemon_env("FAKE_MPS_LOG", &self.path("mps.log").display().to_string())
            .daemon_env("PATH", &self.path("bin").display().to_string())
    }
}

/// Removes the test's cgroup folders (empty once the jobs ended).
struct CgroupCleanup(String);

impl Drop for CgroupCleanup {
    fn drop(&mut self) {
        for c in [
            "devices", "freezer", "cpuacct", "cpu", "memory", "pids", "cpuset", "unified", ".",
        ] {
            let base = Path::new("/sys/fs/cgroup")
                .join(c)
                .join(format!("{}_n1", self.0));
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

/// A script that writes the GPU variables and which GPU files it can open into `out`.
fn probe(fakes: &Fakes, gpus: u32, out: &Path, then: &str) -> String {
    let devs: Vec<String> = (0..gpus).map(|i| fakes.dev(i)).collect();
    format!(
        "#!/bin/sh\nexec > {out} 2>&1\nenv | grep -E '^(CUDA|GPU_|SLURM_JOB_GPUS|SLURM_GPUS)' | sort\n\
         for d in {devs}; do if cat $d >/dev/null 2>{out}.err; then echo \"open $d: ok\"; else echo \"open $d: $(sed 's/.*: //' {out}.err)\"; fi; done\n\
         rm -f {out}.err\necho END\n{then}\n",
        out = out.display(),
        devs = devs.join(" ")
    )
}

fn wait_for_file(c: &TestCluster, p: &Path) -> String {
    c.wait_for(secs(30), &format!("{}", p.display()), || {
        std::fs::read_to_string(p)
            .ok()
            .filter(|s| s.contains("END"))
    })
}

#[test]
fn gpus_are_found_and_confined() {
    let Some(fakes) = Fakes::new(2) else { return };
    let subdir = format!("gsched-it-gpu-{}", std::process::id());
    let _cleanup = CgroupCleanup(subdir.clone());
    let c = TestCluster::start(fakes.opts("gpu-node", 2, &subdir));

    // NVML's GPUs (through the fake library) registered, as gsched.conf says.
    let log = std::fs::read_to_string(c.noded_log(0)).unwrap();
    assert!(
        log.contains("node n1 has 2 GPU(s) (Gres=gpu:a100:2)"),
        "{log}"
    );
    assert!(!log.contains("were found"), "{log}");
    let node = c.cmd_ok("gscontrol", ["show", "node", "n1"]);
    assert!(node.contains("Gres=gpu:a100:2"), "{node}");

    // A job without GPUs opens none of the node's GPU files.
    let out = c.work_file("nogpu.out");
    let script = c.write_script("nogpu.sh", &probe(&fakes, 2, &out, ""));
    let id = c.submit([script.to_str().unwrap()]);
    let info = c.wait_terminal(id, secs(30));
    assert_eq!(
        info.state,
        JobState::Completed,
        "{}",
        c.failure("job without GPUs")
    );
    let text = wait_for_file(&c, &out);
    for i in 0..2 {
        assert!(
            text.contains(&format!("open {}: Operation not permitted", fakes.dev(i))),
            "{text}"
        );
    }
    assert!(!text.contains("SLURM_JOB_GPUS"), "{text}");

    // A launch with GPU 1, as the controller sends it: only GPU 1 opens (ENXIO: no driver).
    launch_gpu1_and_check(&c, &fakes);

    // GPU samples (every GpuSampleInterval=1 s) reach the controller's store.
    let db = c.dir().join("state/gsched.db");
    c.wait_until(secs(30), "GPU samples in the controller's store", || {
        let Ok(conn) = rusqlite::Connection::open_with_flags(
            &db,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        ) else {
            return false;
        };
        conn.query_row(
            "SELECT count(DISTINCT gpu) FROM gpu_samples WHERE node = 'n1' AND util = 33 AND job_id IS NULL",
            [],
            |r| r.get::<_, i64>(0),
        )
        .is_ok_and(|n| n == 2)
    });

    // MPS through the controller, once GPU placement is there.
    mps_part(&c, &fakes);
}

/// Sends gsnoded a launch with GPU 1 (as the controller would) and checks that the job sees
/// GPU 1 only: its variables, and only its device file opens (ENXIO: no driver here).
fn launch_gpu1_and_check(c: &TestCluster, fakes: &Fakes) {
    let out = c.work_file("gpu1.out");
    let uid = nix::unistd::getuid().as_raw();
    let req = LaunchRequest {
        job_id: 990_001,
        start_time: 1,
        name: "direct".into(),
        uid,
        gid: nix::unistd::getgid().as_raw(),
        user_name: c.user().to_string(),
        script: probe(fakes, 2, &out, ""),
        argv: vec![],
        work_dir: c.workdir().display().to_string(),
        stdout: None,
        stderr: None,
        stdin: None,
        open_mode: None,
        environment: vec![("PATH".into(), "/usr/bin:/bin".into())],
        cpus: 1,
        mem_mb: 10,
        node_index: 0,
        time_limit: None,
        gpus: vec![GpuAlloc::whole(1)],
        prolog_env: Vec::new(),
    };
    Client::new(format!("127.0.0.1:{}", c.node_port(0)), c.auth())
        .with_timeout(Duration::from_secs(10))
        .post::<_, Ack>(paths::NODE_LAUNCH, &req)
        .unwrap_or_else(|e| panic!("{}", c.failure(&format!("direct launch: {e}"))));
    let text = wait_for_file(c, &out);
    for want in [
        "CUDA_VISIBLE_DEVICES=0\n".to_string(),
        "SLURM_JOB_GPUS=1\n".to_string(),
        "SLURM_GPUS_ON_NODE=1\n".to_string(),
        format!("open {}: Operation not permitted", fakes.dev(0)),
        format!("open {}: No such device or address", fakes.dev(1)),
    ] {
        assert!(text.contains(&want), "{want:?} not in:\n{text}");
    }
}

/// Two jobs sharing a GPU through MPS (gsbatch --gpu-mem): one daemon, limits in their
/// environment; when the daemon dies both are requeued and then run to the end.
fn mps_part(c: &TestCluster, fakes: &Fakes) {
    let uid = nix::unistd::getuid().as_raw();
    let hold = c.work_file("hold");
    let mut ids = Vec::new();
    for k in 0..2 {
        let out = c.work_file(&format!("mps{k}.out"));
        let script = c.write_script(
            &format!("mps{k}.sh"),
            &probe(
                fakes,
                2,
                &out,
                &format!("while [ ! -e {} ]; do sleep 0.2; done", hold.display()),
            ),
        );
        let o = c.cmd("gsbatch", ["--gpu-mem=10G", script.to_str().unwrap()]);
        if !o.status.success() {
            eprintln!(
                "skipping the MPS part: gsbatch --gpu-mem is not available yet ({})",
                String::from_utf8_lossy(&o.stderr).trim()
            );
            return;
        }
        let id: u32 = String::from_utf8_lossy(&o.stdout)
            .split_whitespace()
            .last()
            .and_then(|w| w.parse().ok())
            .unwrap_or_else(|| panic!("no job id in {:?}", o));
        ids.push((id, out));
    }
    for (id, out) in &ids {
        c.wait_state(*id, JobState::Running, secs(30));
        let text = wait_for_file(c, out);
        assert!(text.contains("CUDA_MPS_PIPE_DIRECTORY="), "{text}");
        assert!(
            text.contains("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=10240M"),
            "{text}"
        );
    }
    let log = fakes.mps_log();
    assert_eq!(
        log.matches(" -d ").count(),
        1,
        "two jobs, one GPU, one daemon:\n{log}"
    );
    assert_eq!(
        log.matches(&format!("start_server -uid {uid}")).count(),
        1,
        "{log}"
    );
    // The daemon dies: both jobs are killed and requeued.
    let pidfile = std::fs::read_dir(c.dir().join("spool/n1/mps"))
        .unwrap()
        .flatten()
        .map(|e| e.path().join("pipe/fake-daemon.pid"))
        .find(|p| p.exists())
        .expect("the fake MPS daemon's pid file");
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::SIGKILL).unwrap();
    for (id, _) in &ids {
        c.wait_until(secs(30), "the MPS jobs to be requeued", || {
            c.job(*id).restarts >= 1
        });
    }
    std::fs::write(&hold, "").unwrap();
    for (id, _) in &ids {
        let info = c.wait_terminal(*id, secs(60));
        assert_eq!(
            info.state,
            JobState::Completed,
            "{}",
            c.failure("requeued MPS job")
        );
        assert_eq!(info.restarts, 1);
    }
}

/// The same isolation with cgroup v2, where the devices cgroup is an eBPF program.
#[test]
fn gpus_are_confined_on_cgroup_v2() {
    let Some(mount) = ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.join("cgroup.controllers").is_file())
    else {
        eprintln!("skipping: no cgroup2 file system on this host");
        return;
    };
    let Some(fakes) = Fakes::new(2) else { return };
    let subdir = format!("gsched-it-gpu2-{}", std::process::id());
    let _cleanup = CgroupCleanup(subdir.clone());
    let c = TestCluster::start(fakes.opts_with(
        "gpu-node-v2",
        2,
        &format!(
            "CgroupPlugin=cgroup/v2\nCgroupMountpoint={}\nConstrainDevices=yes\nCgroupSubdir={subdir}_%n\n",
            mount.display()
        ),
    ));
    launch_gpu1_and_check(&c, &fakes);
}
