//! Heterogeneous jobs through the real daemons: `#SBATCH hetjob` components in different
//! partitions, `N+K` in gsqueue/gscontrol/gsacct, the `SLURM_HET_*`/`*_HET_GROUP_K`
//! environment of the batch script, components that wait for each other (none starts alone),
//! a controller restart with a pending het job, hold/release and cancel of the whole job,
//! and the submissions Slurm refuses.

use gsched_tests::{secs, ClusterOpts, JobState, Reason, TestCluster};
use std::time::{Duration, Instant};

/// Two CPU nodes in `cpu`, one node with feature `gpu` in `gpu` (no real GPU: GPUs arrive
/// in their own issue; the partition is what the scheduler must honour here).
fn cluster(name: &str) -> TestCluster {
    TestCluster::start(
        ClusterOpts::named(name)
            .named_nodes(&["cpu1", "cpu2", "gpu1"])
            .cpus(2)
            .node_features("gpu1", "gpu")
            .config_line("PartitionName=cpu Nodes=cpu[1-2] State=UP")
            .config_line("PartitionName=gpu Nodes=gpu1 State=UP"),
    )
}

fn squeue(c: &TestCluster, job: &str) -> String {
    c.cmd_ok("gsqueue", ["-h", "-o", "%i %P %T %r", "-j", job])
}

#[test]
fn het_job_runs_on_both_partitions_with_slurm_env() {
    let c = cluster("het-run");
    let script = c.write_script(
        "het.sh",
        "#!/bin/sh\n\
         #SBATCH -J pipe -p cpu -n 2 -o het-%j.out\n\
         #SBATCH hetjob\n\
         #SBATCH -p gpu -c 2 --mem=100\n\
         env | grep -E '^SLURM_(HET_SIZE|JOB_ID|JOB_(ID|NODELIST|PARTITION|NUM_NODES|NAME|CPUS_PER_NODE)_HET_GROUP_[01]|MEM_PER_NODE_HET_GROUP_1|TASKS_PER_NODE_HET_GROUP_0)=' | sort\n\
         echo host=$SLURMD_NODENAME\n\
         while [ ! -e gate ]; do sleep 0.05; done\n",
    );
    let n = c.submit([script.to_str().unwrap()]);
    let j0 = c.wait_state(n, JobState::Running, secs(30));
    let j1 = c.wait_state(n + 1, JobState::Running, secs(30));
    assert_eq!(j0.start_time, j1.start_time, "components start together");
    assert_eq!(
        (j0.partition.as_str(), j1.partition.as_str()),
        ("cpu", "gpu")
    );
    assert_eq!(j1.nodes, vec!["gpu1".to_string()]);
    // squeue shows N+K; -j N shows every component, -j N+1 one.
    assert_eq!(
        squeue(&c, &n.to_string()),
        format!("{n}+0 cpu RUNNING None\n{n}+1 gpu RUNNING None\n")
    );
    assert_eq!(
        squeue(&c, &format!("{n}+1")),
        format!("{n}+1 gpu RUNNING None\n")
    );
    let o = c.cmd_ok(
        "gsqueue",
        [
            "-h",
            "-O",
            "HetJobId,HetJobOffset,HetJobIdSet",
            "-j",
            &format!("{n}+1"),
        ],
    );
    let want = [n.to_string(), "1".into(), format!("{n}-{}", n + 1)];
    assert_eq!(o.split_whitespace().collect::<Vec<_>>(), want);
    let show = c.cmd_ok("gscontrol", ["show", "job", &format!("{n}+1")]);
    assert!(
        show.starts_with(&format!(
            "JobId={} HetJobId={n} HetJobOffset=1 JobName=pipe\n   HetJobIdSet={n}-{}\n",
            n + 1,
            n + 1
        )),
        "{show}"
    );
    let all = c.cmd_ok("gscontrol", ["-o", "show", "job", &n.to_string()]);
    assert_eq!(all.lines().count(), 2, "{all}");
    // Only the leader runs the batch script, on its first node, with every component's
    // variables.
    let out = c.wait_file_contains(&format!("het-{n}.out"), "host=", secs(10));
    let host = &j0.nodes[0];
    let want = [
        "SLURM_HET_SIZE=2".to_string(),
        "SLURM_JOB_CPUS_PER_NODE_HET_GROUP_0=2".to_string(),
        "SLURM_JOB_CPUS_PER_NODE_HET_GROUP_1=2".to_string(),
        format!("SLURM_JOB_ID={n}"),
        format!("SLURM_JOB_ID_HET_GROUP_0={n}"),
        format!("SLURM_JOB_ID_HET_GROUP_1={}", n + 1),
        "SLURM_JOB_NAME_HET_GROUP_0=pipe".to_string(),
        "SLURM_JOB_NAME_HET_GROUP_1=pipe".to_string(),
        format!("SLURM_JOB_NODELIST_HET_GROUP_0={host}"),
        "SLURM_JOB_NODELIST_HET_GROUP_1=gpu1".to_string(),
        "SLURM_JOB_NUM_NODES_HET_GROUP_0=1".to_string(),
        "SLURM_JOB_NUM_NODES_HET_GROUP_1=1".to_string(),
        "SLURM_JOB_PARTITION_HET_GROUP_0=cpu".to_string(),
        "SLURM_JOB_PARTITION_HET_GROUP_1=gpu".to_string(),
        "SLURM_MEM_PER_NODE_HET_GROUP_1=100".to_string(),
        "SLURM_TASKS_PER_NODE_HET_GROUP_0=2".to_string(),
        format!("host={host}"),
    ]
    .join("\n");
    assert_eq!(out.trim_end(), want);
    std::fs::write(c.work_file("gate"), "").unwrap();
    // The leader's end ends every component, with its state and exit code.
    let j0 = c.wait_state(n, JobState::Completed, secs(30));
    let j1 = c.wait_state(n + 1, JobState::Completed, secs(30));
    assert_eq!(j1.end_time, j0.end_time);
    let acct = c.cmd_ok(
        "gsacct",
        [
            "-X",
            "-n",
            "-P",
            "-o",
            "JobID,JobIDRaw,Partition,AllocCPUS,State,ExitCode",
            "-j",
            &n.to_string(),
        ],
    );
    assert_eq!(
        acct,
        format!(
            "{n}+0|{n}|cpu|2|COMPLETED|0:0\n{n}+1|{}|gpu|2|COMPLETED|0:0\n",
            n + 1
        )
    );
    // Only the leader has a batch step.
    let steps = c.cmd_ok(
        "gsacct",
        ["-n", "-P", "-o", "JobID,State", "-j", &n.to_string()],
    );
    assert_eq!(
        steps,
        format!("{n}+0|COMPLETED\n{n}+0.batch|COMPLETED\n{n}+1|COMPLETED\n")
    );
}

#[test]
fn components_wait_for_each_other_survive_restart_and_cancel_together() {
    let c = cluster("het-gang");
    // gpu1 is busy: the het job's gpu component cannot start, so neither does the cpu one,
    // though cpu1 and cpu2 are idle.
    let blocker = c.submit(["-p", "gpu", "-c", "2", "--wrap", "sleep 1000"]);
    c.wait_state(blocker, JobState::Running, secs(30));
    let n = c.submit([
        "-p",
        "cpu",
        "-n",
        "1",
        ":",
        "-p",
        "gpu",
        "-n",
        "1",
        "--wrap",
        "sleep 1000",
    ]);
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        let (a, b) = (c.job(n), c.job(n + 1));
        assert_eq!((a.state, b.state), (JobState::Pending, JobState::Pending));
        std::thread::sleep(Duration::from_millis(200));
    }
    let b = c.wait_job(n + 1, secs(10), "a reason", |j| {
        j.reason == Reason::Resources
    });
    assert_eq!(c.job(n).reason, Reason::Resources, "{b:?}");
    // A restarted controller still knows the components.
    c.kill_ctld();
    c.start_ctld();
    let a = c.job(n);
    assert_eq!(
        a.het.map(|h| (h.job_id, h.offset, h.count)),
        Some((n, 0, 2))
    );
    assert_eq!(c.job(n + 1).het.map(|h| h.offset), Some(1));
    assert_eq!(squeue(&c, &n.to_string()).lines().count(), 2);
    // Once gpu1 frees, both start together.
    c.cmd_ok("gscancel", [blocker.to_string()]);
    let a = c.wait_state(n, JobState::Running, secs(30));
    let b = c.wait_state(n + 1, JobState::Running, secs(30));
    assert_eq!(a.start_time, b.start_time);
    // A running component can be cancelled alone (N+K); the leader keeps running.
    c.cmd_ok("gscancel", [format!("{n}+1")]);
    c.wait_state(n + 1, JobState::Cancelled, secs(30));
    assert_eq!(c.job(n).state, JobState::Running);
    // Cancelling N cancels every component.
    c.cmd_ok("gscancel", [n.to_string()]);
    c.wait_state(n, JobState::Cancelled, secs(30));
}

#[test]
fn hold_release_and_refused_submissions() {
    let c = cluster("het-hold");
    // -H propagates to every component; releasing N releases them all.
    let n = c.submit([
        "-H", "-p", "cpu", "-o", "held.out", ":", "-p", "gpu", "--wrap", "echo ran",
    ]);
    assert!(c.job(n).held && c.job(n + 1).held);
    // While pending, only the whole het job can be cancelled.
    let out = c.cmd("gscancel", [format!("{n}+1")]);
    assert!(!out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cancel the whole job"), "{err}");
    assert_eq!(c.job(n + 1).state, JobState::Pending);
    // update JobId=N changes every component; JobId=N+K one.
    c.cmd_ok(
        "gscontrol",
        ["update", &format!("JobId={n}"), "TimeLimit=20"],
    );
    assert_eq!(
        (c.job(n).time_limit, c.job(n + 1).time_limit),
        (Some(20), Some(20))
    );
    c.cmd_ok(
        "gscontrol",
        ["update", &format!("JobId={n}+1"), "TimeLimit=5"],
    );
    assert_eq!(
        (c.job(n).time_limit, c.job(n + 1).time_limit),
        (Some(20), Some(5))
    );
    c.cmd_ok("gscontrol", ["release", &n.to_string()]);
    c.wait_state(n, JobState::Completed, secs(30));
    c.wait_state(n + 1, JobState::Completed, secs(30));
    c.wait_file_contains("held.out", "ran", secs(10));
    // Slurm refuses job arrays of het jobs.
    let out = c.cmd(
        "gsbatch",
        ["-a", "1-2", "-p", "cpu", ":", "-p", "gpu", "--wrap", "true"],
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Batch job submission failed: Invalid job array specification"),
        "{err}"
    );
    // A component that could never run fails the whole submission; nothing is stored.
    let before = c.jobs().len();
    let out = c.cmd(
        "gsbatch",
        ["-p", "cpu", ":", "-p", "gpu", "-c", "8", "--wrap", "true"],
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(c.jobs().len(), before);
    let out = c.cmd(
        "gsbatch",
        ["-p", "cpu", ":", "-p", "nosuch", "--wrap", "true"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Invalid partition name specified"), "{err}");
}
