//! Job steps through the real daemons: `gsrun` (Slurm's `srun`) inside batch jobs spreads
//! tasks over two nodes with the right `SLURM_PROCID`/`SLURM_NODEID`/`SLURM_LOCALID`, labels
//! lines with `-l`, writes `%t` output files on the nodes, exits with the highest task exit
//! code, and each run is a step `N.0`, `N.1`, ... in `gsacct`; cancelling the job kills its
//! steps, `gscancel N.K` cancels one step, and `gscancel --signal=USR1` reaches a step's
//! tasks. The two nodes are two gsnoded on this host (no hardware is faked).

use gsched_tests::{secs, ClusterOpts, JobState, TestCluster};

fn sorted_lines(s: &str) -> Vec<String> {
    let mut v: Vec<String> = s.lines().map(str::to_string).collect();
    v.sort();
    v
}

#[test]
fn steps_spread_tasks_label_lines_and_show_in_gsacct() {
    let c = TestCluster::start(ClusterOpts::named("steps").nodes(2).cpus(2));
    let script = "#!/bin/bash\n\
        gsrun -l bash -c 'echo rank=$SLURM_PROCID node=$SLURM_NODEID local=$SLURM_LOCALID step=$SLURM_STEP_ID ntasks=$SLURM_NTASKS host=$SLURMD_NODENAME'\n\
        echo rc0=$?\n\
        gsrun -n 2 bash -c 'exit $((SLURM_PROCID + 3))'\n\
        echo rc1=$?\n\
        gsrun -n 2 -N 2 -o 'task-%j.%s-%t.out' bash -c 'echo out $SLURM_PROCID on $SLURMD_NODENAME; echo err $SLURM_PROCID >&2'\n\
        echo rc2=$?\n\
        printf 'a\\nb\\n' | gsrun -n1 -J reader wc -l\n\
        echo rc3=$?\n";
    c.write_script("steps.sh", script);
    let id = c.submit(["-N", "2", "-n", "4", "-o", "steps-%j.out", "steps.sh"]);
    let j = c.wait_terminal(id, secs(60));
    let out = c.read_work_file(&format!("steps-{id}.out"));
    assert_eq!(j.state, JobState::Completed, "{out}");
    // Step 0: four tasks, two per node, labelled.
    let labelled: Vec<String> = out
        .lines()
        .filter(|l| l.contains("rank="))
        .map(str::to_string)
        .collect();
    let mut want = Vec::new();
    for rank in 0..4u32 {
        let node = rank / 2;
        want.push(format!(
            "{rank}: rank={rank} node={node} local={} step=0 ntasks=4 host=n{}",
            rank % 2,
            node + 1
        ));
    }
    assert_eq!(sorted_lines(&labelled.join("\n")), want, "{out}");
    assert!(out.contains("rc0=0\n"), "{out}");
    // Step 1: two tasks over the job's two nodes (a step spans the allocation unless -N
    // says otherwise, as in Slurm); the highest task exit code, and srun's messages.
    assert!(out.contains("rc1=4\n"), "{out}");
    assert!(
        out.contains("gsrun: error: n1: task 0: Exited with exit code 3"),
        "{out}"
    );
    assert!(
        out.contains("gsrun: error: n2: task 1: Exited with exit code 4"),
        "{out}"
    );
    // Step 2: per-task files written on the nodes (%t), stderr with stdout.
    assert!(out.contains("rc2=0\n"), "{out}");
    let t0 = c.read_work_file(&format!("task-{id}.2-0.out"));
    let t1 = c.read_work_file(&format!("task-{id}.2-1.out"));
    assert_eq!(sorted_lines(&t0), ["err 0", "out 0 on n1"], "{t0}");
    assert_eq!(sorted_lines(&t1), ["err 1", "out 1 on n2"], "{t1}");
    // Step 3: gsrun's stdin reaches the task.
    assert!(out.contains("\n2\nrc3=0\n"), "{out}");

    // gsacct: the job, its batch step and the gsrun steps with their own states and codes.
    let acct = c.cmd_ok(
        "gsacct",
        [
            "-j".to_string(),
            id.to_string(),
            "-P".into(),
            "-n".into(),
            "-o".into(),
            "JobID,JobName,State,ExitCode,NTasks,NodeList".into(),
        ],
    );
    let want = format!(
        "{id}|steps.sh|COMPLETED|0:0||n[1-2]\n\
         {id}.batch|batch|COMPLETED|0:0|1|n1\n\
         {id}.0|bash|COMPLETED|0:0|4|n[1-2]\n\
         {id}.1|bash|FAILED|4:0|2|n[1-2]\n\
         {id}.2|bash|COMPLETED|0:0|2|n[1-2]\n\
         {id}.3|reader|COMPLETED|0:0|1|n1\n"
    );
    assert_eq!(acct, want);
    // -X hides the steps; -j N.1 shows only that step.
    let x = c.cmd_ok(
        "gsacct",
        ["-X", "-P", "-n", "-o", "JobID", "-j", &id.to_string()],
    );
    assert_eq!(x, format!("{id}\n"));
    let one = c.cmd_ok(
        "gsacct",
        ["-P", "-n", "-o", "JobID,State", "-j", &format!("{id}.1")],
    );
    assert_eq!(one, format!("{id}.1|FAILED\n"));
}

#[test]
fn cancel_kills_steps_and_signals_reach_them() {
    let c = TestCluster::start(ClusterOpts::named("stepkill").nodes(2).cpus(2));
    // gscancel --signal without -b/-f reaches the steps' tasks, not the batch shell (which
    // USR1 would kill), as in Slurm; the step's tasks report it.
    let script = "#!/bin/bash\n\
        gsrun -n 2 -N 2 -l bash -c 'trap \"echo got USR1 \\$SLURM_PROCID\" USR1; echo ready $SLURM_PROCID; while true; do sleep 0.1; done'\n\
        echo after=$?\n";
    c.write_script("loop.sh", script);
    let id = c.submit(["-N", "2", "-n", "2", "-o", "loop-%j.out", "loop.sh"]);
    let name = format!("loop-{id}.out");
    c.wait_file_contains(&name, "ready 0", secs(60));
    c.wait_file_contains(&name, "ready 1", secs(30));
    c.cmd_ok("gscancel", ["--signal=USR1".to_string(), id.to_string()]);
    c.wait_file_contains(&name, "0: got USR1 0", secs(30));
    c.wait_file_contains(&name, "1: got USR1 1", secs(30));
    assert_eq!(c.job(id).state, JobState::Running);
    // gsqueue -s lists the running step, then the job's batch step (as Slurm does).
    let q = c.cmd_ok("gsqueue", ["-s", "-h", "-o", "%i %j %N"]);
    assert_eq!(
        q,
        format!("{id}.0 bash n[1-2]\n{id}.batch batch n1\n"),
        "{q}"
    );
    let q = c.cmd_ok(
        "gsqueue",
        [
            "-h".to_string(),
            "-o".into(),
            "%i".into(),
            format!("--steps={id}.batch"),
        ],
    );
    assert_eq!(q, format!("{id}.batch\n"), "{q}");
    let show = c.cmd_ok(
        "gscontrol",
        [
            "-o".to_string(),
            "show".into(),
            "step".into(),
            format!("{id}.0"),
        ],
    );
    for want in [
        format!("StepId={id}.0 "),
        " State=RUNNING ".to_string(),
        " NodeList=n[1-2] ".to_string(),
        " Nodes=2 CPUs=2 Tasks=2 Name=bash ".to_string(),
    ] {
        assert!(show.contains(&want), "{want} in {show}");
    }

    // Cancelling the job kills the step's tasks on both nodes.
    c.cmd_ok("gscancel", [id.to_string()]);
    c.wait_state(id, JobState::Cancelled, secs(30));
    c.wait_until(secs(30), "no task left", || {
        let ps = std::process::Command::new("pgrep")
            .args(["-f", "got USR1"])
            .output()
            .map(|o| o.stdout)
            .unwrap_or_default();
        ps.is_empty()
    });
    let st = c.wait_for(secs(30), "the step closed", || {
        let a = c.cmd_ok(
            "gsacct",
            ["-P", "-n", "-o", "State", "-j", &format!("{id}.0")],
        );
        (a.trim() != "RUNNING" && !a.trim().is_empty()).then_some(a)
    });
    assert!(st.starts_with("CANCELLED"), "{st}");

    // gscancel N.K cancels one step; the batch script goes on.
    let script = "#!/bin/bash\n\
        gsrun sleep 1000\n\
        echo step-ended=$?\n";
    c.write_script("one.sh", script);
    let id = c.submit(["-o", "one-%j.out", "one.sh"]);
    let name = format!("one-{id}.out");
    c.wait_for(secs(60), "step 0 running", || {
        let q = c.cmd_ok("gsqueue", ["-s", "-h", "-o", "%i"]);
        q.contains(&format!("{id}.0")).then_some(())
    });
    c.cmd_ok("gscancel", [format!("{id}.0")]);
    c.wait_file_contains(&name, "step-ended=143", secs(30));
    let j = c.wait_terminal(id, secs(30));
    assert_eq!(j.state, JobState::Completed);
    let a = c.cmd_ok(
        "gsacct",
        ["-P", "-n", "-o", "State", "-j", &format!("{id}.0")],
    );
    assert!(a.starts_with("CANCELLED by "), "{a}");
}

#[test]
fn gsrun_outside_an_allocation_says_what_to_do() {
    let c = TestCluster::start(ClusterOpts::named("stepnoalloc").nodes(1));
    let out = c.cmd("gsrun", ["hostname"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("gsrun: error: ") && err.contains("gsbatch"),
        "{err}"
    );
    // A job that is not running.
    let id = c.submit(["-H", "--wrap", "true"]);
    let out = c.cmd("gsrun", [format!("--jobid={id}"), "true".into()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "Unable to create step for job {id}: Job is pending execution"
        )),
        "{err}"
    );
}

/// `MaxTasksPerNode` and `MaxStepCount` refuse steps with Slurm's errors (the refused step
/// takes no number), and `JobFileAppend=1` appends to a batch job's and a step's output
/// files unless the job asks `--open-mode=truncate`.
#[test]
fn step_limits_and_job_file_append() {
    let c = TestCluster::start(
        ClusterOpts::named("steplimits")
            .nodes(1)
            .cpus(2)
            .config_line("MaxTasksPerNode=2")
            .config_line("MaxStepCount=2")
            .config_line("JobFileAppend=1"),
    );
    let script = "#!/bin/sh\n\
        gsrun -n 3 --overlap true; echo rc_tasks=$?\n\
        gsrun true; echo rc0=$?\n\
        gsrun -o step.out echo step; echo rc1=$?\n\
        gsrun true; echo rc2=$?\n";
    c.write_script("limits.sh", script);
    std::fs::write(c.work_file("limits.out"), "old\n").unwrap();
    std::fs::write(c.work_file("step.out"), "old step\n").unwrap();
    let id = c.submit(["-o", "limits.out", "limits.sh"]);
    let j = c.wait_terminal(id, secs(60));
    let out = c.read_work_file("limits.out");
    assert_eq!(j.state, JobState::Completed, "{out}");
    assert!(
        out.starts_with("old\n"),
        "JobFileAppend=1 truncated the job's file: {out}"
    );
    assert!(out.contains("Task count specification invalid"), "{out}");
    assert!(out.contains("rc_tasks=1\nrc0=0\nrc1=0\n"), "{out}");
    assert!(out.contains("Step limit reached for this job"), "{out}");
    assert!(out.contains("rc2=1\n"), "{out}");
    assert_eq!(c.read_work_file("step.out"), "old step\nstep\n");
    // Asked for: truncated.
    let t = c.submit([
        "-o",
        "limits.out",
        "--open-mode=truncate",
        "--wrap",
        "echo new",
    ]);
    c.wait_terminal(t, secs(60));
    assert_eq!(c.read_work_file("limits.out"), "new\n");
}
