//! GPU jobs through the real daemons: whole GPUs are exclusive, shares of one user are packed
//! onto one GPU, a whole-GPU job waits for a wholly free GPU, impossible requests are refused
//! at submit, what the controller gives a job reaches gsnoded (`LaunchRequest::gpus` in the
//! job's `launch.json`) and the commands, and a restarted controller keeps every GPU's holders.
//!
//! This machine has no GPU: node n1's gsnoded finds its GPUs in a `gres.conf` whose `File=`
//! lines name character devices that exist here (`/dev/tty0..3`, as Slurm's own test suite
//! does), with `Memory=80G` each, and `nvidia-cuda-mps-control` is a script on the daemons'
//! PATH that records what it is told (plugins/gpu/tests/fake-mps-control.sh). That fakes the
//! hardware only; placement, records, launches and commands are the real ones. What a job
//! sees of its GPUs (`CUDA_VISIBLE_DEVICES`, device cgroup, MPS) is tested in gpu_node.rs.

use gsched_proto::gpu::GpuAlloc;
use gsched_proto::job::Reason;
use gsched_tests::{secs, ClusterOpts, JobId, JobState, TestCluster};
use std::time::Duration;

const T: Duration = Duration::from_secs(30);

/// n1 with `n` fake GPUs (gres.conf over /dev/tty0..) and the fake MPS control tool.
fn with_fake_gpus(o: ClusterOpts, name: &str, n: u32) -> ClusterOpts {
    let bin = std::env::temp_dir().join(format!("gsched-fake-mps-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&bin).unwrap();
    let tool = bin.join("nvidia-cuda-mps-control");
    std::fs::write(
        &tool,
        include_str!("../../plugins/gpu/tests/fake-mps-control.sh"),
    )
    .unwrap();
    std::fs::set_permissions(&tool, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    o.file(
        "gres.conf",
        &format!(
            "NodeName=n1 Name=gpu Type=a100 File=/dev/tty[0-{}] Memory=80G\n",
            n - 1
        ),
    )
    .daemon_env("PATH", &bin.display().to_string())
    .daemon_env("FAKE_MPS_LOG", &bin.join("mps.log").display().to_string())
}

/// A job that waits until the file `gate` exists in the work directory.
fn gated(gate: &str) -> String {
    format!("echo started; while [ ! -e {gate} ]; do sleep 0.05; done")
}

fn cluster(name: &str) -> TestCluster {
    TestCluster::start(with_fake_gpus(
        ClusterOpts::named(name)
            .nodes(2)
            .cpus(8)
            .real_memory_mb(8000)
            .node_attrs("n1", "Gres=gpu:a100:2 GpuMemory=80G")
            .config_line("PartitionName=cpu Nodes=n2 State=UP"),
        name,
        2,
    ))
}

fn submit_gated(c: &TestCluster, args: &[&str], gate: &str) -> JobId {
    let mut a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    a.extend(["-o".into(), "%j.out".into(), "--wrap".into(), gated(gate)]);
    c.submit(a)
}

fn gpus_of(c: &TestCluster, id: JobId) -> Vec<GpuAlloc> {
    let j = c.job(id);
    assert_eq!(j.nodes, vec!["n1".to_string()], "{j:?}");
    j.gpus.first().cloned().unwrap_or_default()
}

/// The GPUs gsnoded received in the job's launch request (its `launch.json`).
fn launched_gpus(c: &TestCluster, id: JobId) -> Vec<GpuAlloc> {
    let path = c.dir().join(format!("spool/n1/job_{id}/launch.json"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    serde_json::from_value(v["request"]["gpus"].clone()).unwrap()
}

fn wait_reason(c: &TestCluster, id: JobId, reason: Reason) {
    c.wait_until(T, &format!("job {id} pending with {reason}"), || {
        let j = c.job(id);
        j.state == JobState::Pending && j.reason == reason
    });
}

fn open(c: &TestCluster, gate: &str) {
    std::fs::write(c.work_file(gate), "").unwrap();
}

#[test]
fn whole_gpus_exclusive_shares_packed_whole_waits_for_a_free_gpu() {
    let c = cluster("gpus-place");

    // Two whole-GPU jobs take both GPUs of n1; a third waits for Resources although n1 has
    // CPUs left and n2 has all of its own (it has no GPU).
    let w1 = submit_gated(&c, &["--gres=gpu:1"], "g1");
    let w2 = submit_gated(&c, &["--gpus-per-node=a100:1"], "g1");
    c.wait_state(w1, JobState::Running, T);
    c.wait_state(w2, JobState::Running, T);
    let w3 = submit_gated(&c, &["-G", "1"], "g1");
    wait_reason(&c, w3, Reason::Resources);
    let (a1, a2) = (gpus_of(&c, w1), gpus_of(&c, w2));
    assert_eq!(a1.len(), 1);
    assert_eq!(a2.len(), 1);
    assert!(a1[0].share.is_none() && a2[0].share.is_none());
    assert_ne!(a1[0].index, a2[0].index, "whole GPUs are exclusive");
    c.wait_file_contains(&format!("{w1}.out"), "started", T);
    assert_eq!(launched_gpus(&c, w1), a1, "LaunchRequest::gpus");

    // What the commands show.
    let show = c.cmd_ok("gscontrol", ["show", "job", &w2.to_string()]);
    assert!(show.contains("TresPerNode=gres/gpu:a100:1"), "{show}");
    assert!(
        show.contains(",gres/gpu=1,gres/gpu:a100=1"),
        "AllocTRES with gres/gpu: {show}"
    );
    assert!(
        show.contains(&format!("GRES=n1:gpu:a100:1(IDX:{})", a2[0].index)),
        "{show}"
    );
    let node = c.cmd_ok("gscontrol", ["show", "node", "n1"]);
    assert!(node.contains("Gres=gpu:a100:2"), "{node}");
    assert!(node.contains("GresUsed=gpu:a100:2(IDX:0-1)"), "{node}");
    let q = c.cmd_ok("gsqueue", ["-h", "-o", "%i %b", "-j", &w1.to_string()]);
    assert_eq!(q.trim(), format!("{w1} gres/gpu:1"));
    let sinfo = c.cmd_ok("gsinfo", ["-h", "-N", "-n", "n1", "-o", "%N %G"]);
    assert_eq!(sinfo.trim(), "n1 gpu:a100:2");

    // The whole-GPU jobs end; w3 takes a GPU.
    open(&c, "g1");
    c.wait_state(w1, JobState::Completed, T);
    c.wait_state(w3, JobState::Completed, T);
    let env = c.cmd_ok(
        "gsacct",
        [
            "-n",
            "-P",
            "-X",
            "-j",
            &w3.to_string(),
            "-o",
            "ReqTRES,AllocTRES",
        ],
    );
    assert!(env.contains("gres/gpu=1"), "{env}");

    // Shares of one user pack onto one GPU: 3 x 20G of an 80G card.
    let shares: Vec<JobId> = (0..3)
        .map(|_| submit_gated(&c, &["--gpu-mem=20G"], "g2"))
        .collect();
    for &s in &shares {
        c.wait_state(s, JobState::Running, T);
    }
    let idx: Vec<u32> = shares.iter().map(|&s| gpus_of(&c, s)[0].index).collect();
    assert!(
        idx.iter().all(|&i| i == idx[0]),
        "packed onto one GPU: {idx:?}"
    );
    let sh = gpus_of(&c, shares[0])[0].share.clone().expect("a share");
    assert_eq!((sh.mem_mb, sh.percent, sh.mps), (20 * 1024, 25, true));
    // A whole-GPU job still finds the other GPU free ...
    let whole = submit_gated(&c, &["--gres=gpu:1"], "g3");
    c.wait_state(whole, JobState::Running, T);
    assert_ne!(gpus_of(&c, whole)[0].index, idx[0]);
    // ... and the next one waits until the shared GPU is wholly free.
    let next = submit_gated(&c, &["--gres=gpu:1"], "g3");
    wait_reason(&c, next, Reason::Resources);
    c.cmd_ok("gscancel", [shares[0].to_string(), shares[1].to_string()]);
    c.wait_state(shares[1], JobState::Cancelled, T);
    std::thread::sleep(secs(2));
    assert_eq!(
        c.job(next).state,
        JobState::Pending,
        "one share still holds the GPU"
    );
    c.cmd_ok("gscancel", [shares[2].to_string()]);
    c.wait_state(next, JobState::Running, T);
    assert_eq!(gpus_of(&c, next)[0].index, idx[0]);
    c.wait_file_contains(&format!("{next}.out"), "started", T);
    open(&c, "g3");
    c.wait_state(next, JobState::Completed, T);
}

/// `GpuOverSubscribe=2` on a partition: compute shares on one GPU may add up to two GPUs'
/// worth there, each job keeping its own share as its MPS limit; the default partition over
/// the same GPUs still treats shares as reservations.
#[test]
fn oversubscribed_partition_packs_compute_shares_past_one_gpu() {
    let c = TestCluster::start(with_fake_gpus(
        ClusterOpts::named("gpus-over")
            .nodes(1)
            .cpus(8)
            .real_memory_mb(8000)
            .node_attrs("n1", "Gres=gpu:a100:2 GpuMemory=80G")
            .config_line("PartitionName=over Nodes=n1 GpuOverSubscribe=2"),
        "gpus-over",
        2,
    ));
    let submit = |args: &[&str]| {
        let mut a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        a.extend([
            "-o".into(),
            "%j.out".into(),
            "--wrap".into(),
            format!(
                "echo pct=$CUDA_MPS_ACTIVE_THREAD_PERCENTAGE; {}",
                gated("g")
            ),
        ]);
        c.submit(a)
    };
    let a = submit(&["-p", "over", "--gpu-share=60"]);
    let b = submit(&["-p", "over", "--gpu-share=60"]);
    c.wait_state(a, JobState::Running, T);
    c.wait_state(b, JobState::Running, T);
    let (ga, gb) = (gpus_of(&c, a), gpus_of(&c, b));
    assert_eq!(ga[0].index, gb[0].index, "120% of compute on one GPU");
    for id in [a, b] {
        c.wait_file_contains(&format!("{id}.out"), "pct=60", T);
    }
    // 60 + 60 + 90 is past two GPUs' worth: the other GPU.
    let big = submit(&["-p", "over", "--gpu-share=90"]);
    c.wait_state(big, JobState::Running, T);
    assert_ne!(gpus_of(&c, big)[0].index, ga[0].index);
    // The default partition shares the same GPUs without oversubscription: 60% fits on
    // neither (120% and 90% in use), so it waits.
    let plain = submit(&["--gpu-share=60"]);
    wait_reason(&c, plain, Reason::Resources);
    open(&c, "g");
    for id in [a, b, big, plain] {
        c.wait_state(id, JobState::Completed, T);
    }
}

#[test]
fn impossible_gpu_requests_are_refused_at_submit() {
    let c = cluster("gpus-submit");
    let refused = |args: &[&str]| -> String {
        let mut a: Vec<&str> = args.to_vec();
        a.extend(["--wrap", "true"]);
        let o = c.cmd("gsbatch", a);
        assert!(!o.status.success(), "{args:?} was accepted");
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let e = refused(&["--gpu-mem=100G"]);
    assert!(
        e.contains("Requested node configuration is not available: --gpu-mem=100G is more than any GPU of partition debug has (largest: 80G)"),
        "{e}"
    );
    let e = refused(&["--gres=gpu:v100:1"]);
    assert!(
        e.contains("Invalid generic resource (gres) specification: partition debug has no GPU of type v100 (types: a100)"),
        "{e}"
    );
    let e = refused(&["--gres=gpu:3"]);
    assert!(
        e.contains("Batch job submission failed: Requested node configuration is not available"),
        "{e}"
    );
    let e = refused(&["-p", "cpu", "--gpus=1"]);
    assert!(e.contains("no node of partition cpu has GPUs"), "{e}");
    let e = refused(&["--gres=shard:1"]);
    assert!(e.contains("is configured with shards"), "{e}");
    let e = refused(&["--gres=gpu:1", "--gpu-share=50"]);
    assert!(
        e.contains(
            "--gres=gpu (whole GPUs) and --gpu-share (a share of one GPU) cannot be combined"
        ),
        "{e}"
    );
    assert!(c.jobs().is_empty(), "nothing was stored");
}

#[test]
fn restarted_controller_keeps_gpu_allocations() {
    let c = cluster("gpus-restart");
    let whole = submit_gated(&c, &["--gres=gpu:1"], "gate");
    let share = submit_gated(&c, &["--gpu-share=50"], "gate");
    c.wait_state(whole, JobState::Running, T);
    c.wait_state(share, JobState::Running, T);
    let (aw, as_) = (gpus_of(&c, whole), gpus_of(&c, share));
    assert_ne!(aw[0].index, as_[0].index);
    // Both run on n1 before the controller goes (no launch in flight).
    for id in [whole, share] {
        c.wait_file_contains(&format!("{id}.out"), "started", T);
    }

    c.kill_ctld();
    c.start_ctld();
    assert_eq!(gpus_of(&c, whole), aw);
    assert_eq!(gpus_of(&c, share), as_);
    // Both GPUs are still held: a whole-GPU job waits; a share of the same user packs.
    let waits = submit_gated(&c, &["--gres=gpu:1"], "gate");
    wait_reason(&c, waits, Reason::Resources);
    let packs = submit_gated(&c, &["--gpu-share=50"], "gate");
    c.wait_state(packs, JobState::Running, T);
    assert_eq!(gpus_of(&c, packs)[0].index, as_[0].index);
    open(&c, "gate");
    for id in [whole, share, waits, packs] {
        c.wait_state(id, JobState::Completed, T);
    }
}

#[test]
fn cpus_and_memory_per_gpu_and_the_job_environment() {
    let c = TestCluster::start(with_fake_gpus(
        ClusterOpts::named("gpus-per-gpu")
            .nodes(1)
            .cpus(8)
            .real_memory_mb(8000)
            .node_attrs("n1", "Gres=gpu:a100:4 GpuMemory=80G")
            .config_line("DefCpuPerGPU=2")
            .config_line("DefMemPerGPU=1000"),
        "gpus-per-gpu",
        4,
    ));
    let env = "env | grep -E '^SLURM_(GPUS|GPUS_PER_NODE|GPUS_PER_TASK|CPUS_PER_GPU|MEM_PER_GPU|JOB_CPUS_PER_NODE)=' | sort";
    let run = |args: &[&str]| -> (gsched_tests::JobInfo, String) {
        let mut a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        a.extend(["-o".into(), "%j.out".into(), "--wrap".into(), env.into()]);
        let id = c.submit(a);
        let j = c.wait_state(id, JobState::Completed, T);
        (j, c.read_work_file(&format!("{id}.out")))
    };
    // --cpus-per-gpu and --mem-per-gpu: 3 GPUs x 2 CPUs, 3 x 500 MiB.
    let (j, out) = run(&["--gpus-per-node=3", "--cpus-per-gpu=2", "--mem-per-gpu=500"]);
    assert_eq!(j.cpus_per_node, vec![6], "{j:?}");
    assert_eq!(j.mem_per_node_mb, 1500, "{j:?}");
    assert_eq!(j.gpus[0].len(), 3);
    assert!(out.contains("SLURM_GPUS_PER_NODE=3\n"), "{out}");
    assert!(out.contains("SLURM_CPUS_PER_GPU=2\n"), "{out}");
    assert!(out.contains("SLURM_MEM_PER_GPU=500\n"), "{out}");
    // DefCpuPerGPU / DefMemPerGPU for a job that says nothing of CPUs or memory.
    let (j, _) = run(&["--gres=gpu:a100:2"]);
    assert_eq!(
        (j.cpus_per_node.clone(), j.mem_per_node_mb),
        (vec![4], 2000),
        "{j:?}"
    );
    // -c wins over DefCpuPerGPU; per task: 2 tasks x 1 GPU x 3 CPUs.
    let (j, _) = run(&["--gres=gpu:1", "-c", "1"]);
    assert_eq!(j.cpus_per_node, vec![1], "{j:?}");
    let (j, out) = run(&["-n", "2", "--gpus-per-task=1", "--cpus-per-gpu=3"]);
    assert_eq!(
        (j.cpus_per_node.clone(), j.gpus[0].len()),
        (vec![6], 2),
        "{j:?}"
    );
    assert!(out.contains("SLURM_GPUS_PER_TASK=1\n"), "{out}");
    // -G/--gpus: the whole job's GPUs, on one node.
    let (j, out) = run(&["-G", "a100:2", "-c", "1"]);
    assert_eq!(j.gpus[0].len(), 2, "{j:?}");
    assert!(out.contains("SLURM_GPUS=a100:2\n"), "{out}");
    // Several tasks per node with --cpus-per-gpu but without GPUs per task: refused.
    let o = c.cmd(
        "gsbatch",
        [
            "-n",
            "3",
            "--gpus-per-node=1",
            "--cpus-per-gpu=2",
            "--wrap",
            "true",
        ],
    );
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains(
            "--cpus-per-gpu with several tasks per node needs --gpus-per-task or --ntasks-per-node"
        ),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}
