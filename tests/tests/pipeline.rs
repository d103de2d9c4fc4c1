//! `examples/pipeline/` on a cluster with three partitions (`cpu`, `gpu`, `small`): the
//! dependency chain of `submit.sh` runs each stage in its partition after the previous one
//! completed, a failed stage leaves the next ones `DependencyNeverSatisfied`, and
//! `pipeline-het.sh` allocates the three partitions at once as one heterogeneous job.
//!
//! The `gpu` partition is a plain node with the `gpu` feature: GPUs as a resource arrive in
//! their own issue.

use gsched_tests::{secs, ClusterOpts, JobId, JobState, Reason, TestCluster};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn cluster(name: &str) -> TestCluster {
    TestCluster::start(
        ClusterOpts::named(name)
            .named_nodes(&["cpu1", "cpu2", "gpu1", "small1"])
            .cpus(2)
            .node_features("gpu1", "gpu")
            .config_line("PartitionName=cpu Nodes=cpu[1-2] State=UP")
            .config_line("PartitionName=gpu Nodes=gpu1 State=UP")
            .config_line("PartitionName=small Nodes=small1 State=UP"),
    )
}

/// A copy of `examples/pipeline` in the cluster's work directory, as `dir`.
fn copy_example(c: &TestCluster, dir: &str) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/pipeline");
    let dst = c.workdir().join(dir);
    std::fs::create_dir_all(&dst).unwrap();
    for e in std::fs::read_dir(&src).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dst.join(e.file_name())).unwrap();
    }
    dst
}

/// Runs `sh submit.sh` in `dir` as a user would (the cluster's commands on PATH).
fn run_submit(c: &TestCluster, dir: &Path) -> Vec<JobId> {
    let out = Command::new("sh")
        .arg("submit.sh")
        .env_clear()
        .envs(c.base_env())
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "submit.sh failed: {out:?}");
    let ids: Vec<JobId> = stdout
        .split_whitespace()
        .map(|s| s.parse().unwrap())
        .collect();
    assert_eq!(ids.len(), 3, "{stdout}");
    ids
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn dependency_chain_runs_each_stage_in_its_partition() {
    let c = cluster("pipe-chain");
    let dir = copy_example(&c, "chain");
    let ids = run_submit(&c, &dir);
    let jobs: Vec<_> = ids
        .iter()
        .map(|&id| c.wait_state(id, JobState::Completed, secs(60)))
        .collect();
    let where_: Vec<(&str, &str)> = jobs
        .iter()
        .map(|j| (j.partition.as_str(), j.nodes[0].as_str()))
        .collect();
    assert!(
        where_[0].0 == "cpu" && where_[0].1.starts_with("cpu"),
        "{where_:?}"
    );
    assert_eq!(&where_[1..], &[("gpu", "gpu1"), ("small", "small1")]);
    for w in jobs.windows(2) {
        assert!(w[1].start_time.unwrap() >= w[0].end_time.unwrap(), "{w:?}");
    }
    assert_eq!(jobs[1].spec.dependency, Some(format!("afterok:{}", ids[0])));
    assert_eq!(read(&dir, "report.txt"), "model=101 verdict=pass\n");
    assert!(read(&dir, &format!("train-{}.out", ids[1])).contains("partition gpu"));

    // A failing stage: evaluation never starts.
    let bad = copy_example(&c, "broken");
    std::fs::write(
        bad.join("stage-train.sh"),
        "#!/bin/sh\n#SBATCH -J train -p gpu -C gpu -o train-%j.out\necho diverged >&2\nexit 3\n",
    )
    .unwrap();
    let ids = run_submit(&c, &bad);
    c.wait_state(ids[0], JobState::Completed, secs(60));
    let t = c.wait_terminal(ids[1], secs(60));
    assert_eq!((t.state, t.exit_code), (JobState::Failed, 3));
    c.wait_job(ids[2], secs(30), "never satisfiable", |j| {
        j.state == JobState::Pending && j.reason == Reason::DependencyNeverSatisfied
    });
    assert!(!bad.join("report.txt").exists());
    c.cmd_ok("gscancel", [ids[2].to_string()]);
}

#[test]
fn heterogeneous_job_allocates_three_partitions_at_once() {
    let c = cluster("pipe-het");
    let dir = copy_example(&c, "het");
    let mut cmd = c.command("gsbatch");
    cmd.current_dir(&dir)
        .args(["--parsable", "pipeline-het.sh"]);
    let n = c.submit_command(cmd);
    let jobs: Vec<_> = (0..3)
        .map(|k| c.wait_state(n + k, JobState::Completed, secs(60)))
        .collect();
    let parts: Vec<&str> = jobs.iter().map(|j| j.partition.as_str()).collect();
    assert_eq!(parts, ["cpu", "gpu", "small"]);
    assert!(jobs.iter().all(|j| j.start_time == jobs[0].start_time));
    let q = c.cmd_ok(
        "gsqueue",
        ["-h", "-t", "all", "-o", "%i %P %N", "-j", &n.to_string()],
    );
    assert_eq!(
        q,
        format!(
            "{n}+0 cpu {}\n{n}+1 gpu gpu1\n{n}+2 small small1\n",
            jobs[0].nodes[0]
        )
    );
    let out = read(&dir, &format!("pipeline-{n}.out"));
    assert!(out.contains("het job "), "{out}");
    assert!(out.contains(": 3 components\n"), "{out}");
    assert!(
        out.contains(&format!("component 1: job {} in gpu on gpu1\n", n + 1)),
        "{out}"
    );
    assert!(
        out.contains(&format!("component 2: job {} in small on small1\n", n + 2)),
        "{out}"
    );
    assert!(out.contains("evaluate: model=101 verdict=pass"), "{out}");
}
