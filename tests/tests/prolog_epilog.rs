//! `Prolog=`, `Epilog=` and `EpilogSlurmctld=` through the real daemons (two gsnoded on this host; nothing is
//! faked): the Prolog runs as root before the batch script on the batch node and before the
//! job's first step on its other node, with Slurm's variables; the Epilog runs on both nodes
//! when the job ends, with its exit code, and the node stays allocated until it finished (the
//! next job starts after it, and the ended job shows as COMPLETING meanwhile); a failing Prolog drains its node ("Prolog error") and requeues
//! the job held ("launch failed requeued held"; at a batch script or at a step on the other
//! node), a failing Epilog drains its node ("Epilog error").

use gsched_tests::{secs, ClusterOpts, JobState, TestCluster};
use std::path::Path;

fn program(path: &Path, body: &str) {
    std::fs::write(path, format!("#!/bin/sh\nPATH=/usr/bin:/bin\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
}

/// A folder for a test's programs, markers and logs, that every user may enter (the
/// daemons run them as root, TaskProlog as the job's user).
fn programs_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    dir
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn prolog_and_epilog_run_around_jobs_and_their_failures_drain_the_node() {
    let dir = programs_dir();
    let d = dir.path().display().to_string();
    let log = dir.path().join("log");
    let l = log.display();
    program(
        &dir.path().join("prolog"),
        &format!(
            "echo \"prolog $SLURMD_NODENAME $SLURM_JOB_ID $SLURM_SCRIPT_CONTEXT $SLURM_JOB_PARTITION $SLURM_JOB_NUM_NODES ${{HOME:-nohome}}\" >> {l}\n\
             [ -e {d}/fail-prolog-$SLURMD_NODENAME ] && {{ echo no scratch space; exit 1; }}\nexit 0"
        ),
    );
    program(
        &dir.path().join("epilog"),
        &format!(
            "[ -e {d}/slow-epilog ] && sleep 3\n\
             echo \"epilog $SLURMD_NODENAME $SLURM_JOB_ID $SLURM_SCRIPT_CONTEXT $SLURM_JOB_EXIT_CODE2 $(date +%s)\" >> {l}\n\
             [ -e {d}/fail-epilog-$SLURMD_NODENAME ] && exit 4\nexit 0"
        ),
    );
    let ctld_log = dir.path().join("ctld-log");
    program(
        &dir.path().join("ctld-epilog"),
        &format!(
            "echo \"$SLURM_JOB_ID $SLURM_SCRIPT_CONTEXT $SLURM_JOB_NAME $SLURM_JOB_NODELIST $SLURM_JOB_EXIT_CODE2 ${{SLURMD_NODENAME:-none}}\" >> {}",
            ctld_log.display()
        ),
    );
    let c = TestCluster::start(
        ClusterOpts::named("prologs")
            .nodes(2)
            .cpus(2)
            .config_line(&format!("Prolog={d}/prolog"))
            // A glob, as sites use a folder of programs.
            .config_line(&format!("Epilog={d}/epilo*"))
            .config_line(&format!("EpilogSlurmctld={d}/ctld-epilog"))
            .config_line("PrologEpilogTimeout=60")
            .config_line("JobRequeue=1"),
    );

    // A two-node job: the Prolog before the script on n1, before the step on n2; the
    // Epilog on both, with the script's exit code.
    c.write_script(
        "two.sh",
        &format!("#!/bin/sh\necho script >> {l}\ngsrun -N 2 -n 2 true\nexit 3\n"),
    );
    let id = c.submit(["-N", "2", "-n", "2", "-o", "two-%j.out", "two.sh"]);
    let j = c.wait_terminal(id, secs(60));
    let out = c.read_work_file(&format!("two-{id}.out"));
    assert_eq!((j.state, j.exit_code), (JobState::Failed, 3), "{out}");
    c.wait_until(secs(30), "both Epilogs", || {
        lines(&log)
            .iter()
            .filter(|l| l.starts_with("epilog"))
            .count()
            == 2
    });
    let got = lines(&log);
    assert_eq!(
        got[..3],
        [
            format!("prolog n1 {id} prolog_slurmd debug 2 nohome"),
            "script".to_string(),
            format!("prolog n2 {id} prolog_slurmd debug 2 nohome"),
        ],
        "{got:?}"
    );
    let mut epilogs: Vec<String> = got[3..]
        .iter()
        .map(|l| l.rsplit_once(' ').unwrap().0.to_string())
        .collect();
    epilogs.sort();
    assert_eq!(
        epilogs,
        [
            format!("epilog n1 {id} epilog_slurmd 3:0"),
            format!("epilog n2 {id} epilog_slurmd 3:0"),
        ]
    );

    // EpilogSlurmctld ran on the controller, with the job's variables and no node's.
    c.wait_until(secs(30), "EpilogSlurmctld", || !lines(&ctld_log).is_empty());
    assert_eq!(
        lines(&ctld_log),
        [format!("{id} epilog_slurmctld two.sh n[1-2] 3:0 none")]
    );

    // The node is held while its Epilog runs: the next job for it starts after.
    std::fs::write(&log, "").unwrap();
    std::fs::write(dir.path().join("slow-epilog"), "").unwrap();
    let a = c.submit(["-w", "n1", "-n", "2", "--wrap", "true"]);
    let b = c.submit(["-w", "n1", "-n", "2", "--wrap", "true"]);
    let a_end = c.wait_terminal(a, secs(60));
    assert_eq!(a_end.state, JobState::Completed);
    // While its Epilog runs, the ended job is COMPLETING (CG), as in Slurm: listed by
    // default and by `-t CG`, and by `-t CD` too (its base state).
    let q = c.cmd_ok("gsqueue", ["-h", "-j", &a.to_string(), "-o", "%i %t %T"]);
    assert_eq!(q.trim(), format!("{a} CG COMPLETING"), "{q}");
    let q = c.cmd_ok("gsqueue", ["-h", "-t", "CG", "-o", "%i"]);
    assert!(q.lines().any(|l| l.trim() == a.to_string()), "{q}");
    let q = c.cmd_ok("gsqueue", ["-h", "-t", "CD", "-o", "%i"]);
    assert!(q.lines().any(|l| l.trim() == a.to_string()), "{q}");
    let show = c.cmd_ok("gscontrol", ["show", "job", &a.to_string()]);
    assert!(show.contains("JobState=COMPLETING"), "{show}");
    let bj = c.wait_terminal(b, secs(60));
    c.wait_until(secs(30), "a's Epilog", || {
        lines(&log)
            .iter()
            .any(|l| l.starts_with(&format!("epilog n1 {a} ")))
    });
    let a_epilog_done: i64 = lines(&log)
        .iter()
        .find(|l| l.starts_with(&format!("epilog n1 {a} ")))
        .and_then(|l| l.rsplit_once(' ')?.1.parse().ok())
        .expect("a's Epilog ran");
    assert!(
        bj.start_time.unwrap() >= a_epilog_done,
        "b started at {:?}, before a's Epilog ended at {a_epilog_done}",
        bj.start_time
    );
    // Its Epilog done, the job is COMPLETED and leaves the default listing.
    let q = c.cmd_ok("gsqueue", ["-h", "-j", &a.to_string(), "-o", "%i %t"]);
    assert_eq!(q.trim(), "", "{q}");
    std::fs::remove_file(dir.path().join("slow-epilog")).unwrap();
    c.wait_until(secs(30), "b's Epilog", || {
        lines(&log)
            .iter()
            .any(|l| l.starts_with(&format!("epilog n1 {b} ")))
    });

    // A failing Prolog: n2 drained, the job back in the queue, held, with Slurm's reason.
    std::fs::write(dir.path().join("fail-prolog-n2"), "").unwrap();
    let p = c.submit(["-w", "n2", "--wrap", "true"]);
    let held = c.wait_job(p, secs(60), "held after its Prolog failed", |j| {
        j.held && j.state == JobState::Pending
    });
    assert_eq!(held.reason.as_str(), "launch failed requeued held");
    assert_eq!(held.restarts, 1);
    let reason = c.cmd_ok("gsqueue", ["-h", "-j", &p.to_string(), "-o", "%r"]);
    assert_eq!(reason.trim(), "launch failed requeued held");
    let n2 = c.nodes().into_iter().find(|n| n.name == "n2").unwrap();
    assert_eq!(n2.reason.as_deref(), Some("Prolog error"));

    // The same at a step's launch on the job's other node: the step fails, the job goes
    // back to the queue held, the node is drained.
    c.cmd_ok("gscontrol", ["release", &p.to_string()]);
    c.cmd_ok("gscancel", [p.to_string()]);
    c.cmd_ok("gscontrol", ["update", "NodeName=n2", "State=RESUME"]);
    c.write_script(
        "step.sh",
        "#!/bin/sh\ngsrun -N 2 -n 2 true; echo step=$?\nsleep 300\n",
    );
    let s = c.submit(["-N", "2", "-n", "2", "-o", "step-%j.out", "step.sh"]);
    let held = c.wait_job(s, secs(60), "held after the step's Prolog failed", |j| {
        j.held && j.state == JobState::Pending
    });
    assert_eq!(held.reason.as_str(), "launch failed requeued held");
    let n2 = c.nodes().into_iter().find(|n| n.name == "n2").unwrap();
    assert_eq!(n2.reason.as_deref(), Some("Prolog error"));
    c.cmd_ok("gscancel", [s.to_string()]);

    // A failing Epilog drains its node; the job's own state is untouched.
    std::fs::write(dir.path().join("fail-epilog-n1"), "").unwrap();
    let e = c.submit(["-w", "n1", "--wrap", "true"]);
    assert_eq!(c.wait_terminal(e, secs(60)).state, JobState::Completed);
    c.wait_until(secs(30), "n1 drained", || {
        c.nodes()
            .into_iter()
            .any(|n| n.name == "n1" && n.reason.as_deref() == Some("Epilog error"))
    });
}

/// `TaskProlog=` and `TaskEpilog=`: the prolog runs as the job's user in the task's own
/// process (its `SLURM_TASK_PID` is the batch shell's `$$`), its `print`, `export` and
/// `unset` lines reach the batch script and every task of a step; the epilog runs after
/// each of them with `SLURM_SCRIPT_CONTEXT=epilog_task`; a failing prolog ends the task with
/// its status and the script never runs.
#[test]
fn task_prolog_and_epilog_around_the_script_and_each_task() {
    let dir = programs_dir();
    let d = dir.path().display().to_string();
    let log = dir.path().join("task-epilog.log");
    program(
        &dir.path().join("task-prolog"),
        &format!(
            "echo \"print prolog $SLURM_JOB_ID $SLURM_TASK_PID $SLURM_SCRIPT_CONTEXT\"\n\
             echo 'not a directive'\n\
             echo \"export SCRATCH_DIR=/tmp/scratch-$SLURM_JOB_ID\"\n\
             echo 'unset UNWANTED'\n\
             [ -e {d}/fail-task-prolog ] && {{ echo broken >&2; exit 3; }}\nexit 0"
        ),
    );
    program(
        &dir.path().join("task-epilog"),
        &format!(
            "echo \"epilog $SLURM_JOB_ID $SLURM_SCRIPT_CONTEXT $SLURM_PROCID $SCRATCH_DIR\" >> {}",
            log.display()
        ),
    );
    let c = TestCluster::start(
        ClusterOpts::named("taskprolog")
            .nodes(1)
            .cpus(4)
            .config_line(&format!("TaskProlog={d}/task-prolog"))
            .config_line(&format!("TaskEpilog={d}/task-epilog")),
    );
    c.write_script(
        "tasks.sh",
        "#!/bin/sh\n\
         echo \"script $$ $SLURM_TASK_PID $SCRATCH_DIR ${UNWANTED:-gone}\"\n\
         gsrun -n 2 -o 'step-%t.out' sh -c 'echo \"task $SLURM_PROCID $SCRATCH_DIR ${UNWANTED:-gone} $$ $SLURM_TASK_PID\"'\n",
    );
    let id = c.submit([
        "--export=ALL,UNWANTED=yes",
        "-n",
        "2",
        "-o",
        "tasks-%j.out",
        "tasks.sh",
    ]);
    let j = c.wait_terminal(id, secs(60));
    let out = c.read_work_file(&format!("tasks-{id}.out"));
    assert_eq!(j.state, JobState::Completed, "{out}");
    let got: Vec<&str> = out.lines().collect();
    assert_eq!(got.len(), 2, "{out}");
    let prolog: Vec<&str> = got[0].split(' ').collect();
    let script: Vec<&str> = got[1].split(' ').collect();
    assert_eq!(
        (prolog[0], prolog[1], prolog[3]),
        ("prolog", id.to_string().as_str(), "prolog_task"),
        "{out}"
    );
    // The prolog's SLURM_TASK_PID is the script's own pid, which the script sees too.
    assert_eq!(script[1], prolog[2], "{out}");
    assert_eq!(script[2], prolog[2], "{out}");
    assert_eq!(
        (script[0], script[3], script[4]),
        ("script", format!("/tmp/scratch-{id}").as_str(), "gone"),
        "{out}"
    );
    for rank in 0..2 {
        let task = c.read_work_file(&format!("step-{rank}.out"));
        let l: Vec<&str> = task.lines().collect();
        assert_eq!(l.len(), 2, "{task}");
        assert!(l[0].starts_with(&format!("prolog {id} ")), "{task}");
        let f: Vec<&str> = l[1].split(' ').collect();
        assert_eq!(
            (f[0], f[1], f[2], f[3]),
            (
                "task",
                rank.to_string().as_str(),
                format!("/tmp/scratch-{id}").as_str(),
                "gone"
            ),
            "{task}"
        );
        assert_eq!(f[4], f[5], "the task's SLURM_TASK_PID is its pid: {task}");
    }
    c.wait_until(secs(30), "three TaskEpilogs", || lines(&log).len() == 3);
    let mut epilogs = lines(&log);
    epilogs.sort();
    // As slurmstepd's, a TaskEpilog sees the task's environment as it was launched: not
    // what the TaskProlog exported into the task (the batch script's), but the steps'
    // tasks inherited SCRATCH_DIR from the script.
    assert_eq!(
        epilogs,
        [
            format!("epilog {id} epilog_task 0 "),
            format!("epilog {id} epilog_task 0 /tmp/scratch-{id}"),
            format!("epilog {id} epilog_task 1 /tmp/scratch-{id}"),
        ]
    );

    // Another user's job: the prolog runs as that user (gsstepd's task mode is executed
    // as the user). Needs root, the user gstest and MUNGE, as the multi-user tests.
    if gsched_tests::is_root()
        && gsched_tests::user_ids("gstest").is_some()
        && gsched_tests::munge::unavailable().is_none()
    {
        let out = c
            .command_as("gsbatch", "gstest")
            .args([
                "--parsable",
                "-D",
                "/tmp",
                "-o",
                "/dev/null",
                "-e",
                "/dev/null",
            ])
            .args([
                "--wrap",
                "echo \"$SCRATCH_DIR $(id -un)\" > /tmp/gstest-task-$SLURM_JOB_ID.out",
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let theirs: u32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
        let j = c.wait_terminal(theirs, secs(60));
        assert_eq!(j.state, JobState::Completed, "{j:?}");
        let file = format!("/tmp/gstest-task-{theirs}.out");
        let got = std::fs::read_to_string(&file).unwrap_or_default();
        let _ = std::fs::remove_file(&file);
        assert_eq!(got, format!("/tmp/scratch-{theirs} gstest\n"));
    } else {
        eprintln!("skipped the other user's job: needs root, the user gstest and MUNGE");
    }

    // A failing TaskProlog: the task ends with its status, the script never runs.
    std::fs::write(dir.path().join("fail-task-prolog"), "").unwrap();
    let id = c.submit([
        "-o",
        "fail-%j.out",
        "--wrap",
        &format!("touch {d}/script-ran"),
    ]);
    let j = c.wait_terminal(id, secs(60));
    let out = c.read_work_file(&format!("fail-{id}.out"));
    assert_eq!((j.state, j.exit_code), (JobState::Failed, 3), "{out}");
    assert!(
        out.contains("broken") && out.contains("TaskProlog failed status=3"),
        "{out}"
    );
    assert!(!dir.path().join("script-ran").exists());
}

/// `PrologSlurmctld=`: the controller runs it for every run it placed, before the launch
/// (the job is CONFIGURING meanwhile, and the script sees what it did); a failure requeues
/// a job that may be requeued and cancels one that may not.
#[test]
fn prolog_slurmctld_runs_before_the_launch() {
    let dir = programs_dir();
    let d = dir.path().display().to_string();
    let log = dir.path().join("log");
    program(
        &dir.path().join("prolog-ctld"),
        &format!(
            "echo \"$SLURM_JOB_ID $SLURM_SCRIPT_CONTEXT $SLURM_JOB_NODELIST $SLURM_JOB_USER\" >> {l}\n\
             [ -e {d}/slow ] && sleep 2\n\
             [ -e {d}/fail ] && exit 1\n\
             touch {d}/done-$SLURM_JOB_ID\nexit 0",
            l = log.display()
        ),
    );
    let c = TestCluster::start(
        ClusterOpts::named("prologctld")
            .nodes(1)
            .config_line(&format!("PrologSlurmctld={d}/prolog-ctld"))
            .config_line("PrologEpilogTimeout=60"),
    );
    std::fs::write(dir.path().join("slow"), "").unwrap();
    let wrap = format!("test -e {d}/done-$SLURM_JOB_ID");
    let a = c.submit(["-o", "/dev/null", "--wrap", &wrap]);
    c.wait_until(secs(30), "CF while the PrologSlurmctld runs", || {
        c.cmd_ok("gsqueue", ["-h", "-j", &a.to_string(), "-o", "%t"])
            .trim()
            == "CF"
    });
    let q = c.cmd_ok("gsqueue", ["-h", "-t", "CF", "-o", "%i %T"]);
    assert_eq!(q.trim(), format!("{a} CONFIGURING"), "{q}");
    let j = c.wait_terminal(a, secs(30));
    assert_eq!((j.state, j.exit_code), (JobState::Completed, 0), "{j:?}");
    assert_eq!(
        lines(&log)[0],
        format!("{a} prolog_slurmctld n1 {}", c.user())
    );
    // Cancelled while its PrologSlurmctld runs: never launched.
    let x = c.submit(["-o", "/dev/null", "--wrap", &format!("touch {d}/x-ran")]);
    c.wait_until(secs(30), "x CF", || {
        c.cmd_ok("gsqueue", ["-h", "-j", &x.to_string(), "-o", "%t"])
            .trim()
            == "CF"
    });
    c.cmd_ok("gscancel", [x.to_string()]);
    let xj = c.wait_terminal(x, secs(30));
    assert_eq!(xj.state, JobState::Cancelled, "{xj:?}");
    std::thread::sleep(std::time::Duration::from_secs(3));
    assert!(
        !dir.path().join("x-ran").exists(),
        "a cancelled job was launched"
    );
    std::fs::remove_file(dir.path().join("slow")).unwrap();

    // A failure: a job that may be requeued goes back to the queue (and runs once the
    // program succeeds), one submitted with --no-requeue is cancelled.
    std::fs::write(dir.path().join("fail"), "").unwrap();
    let b = c.submit(["-o", "/dev/null", "--wrap", &wrap]);
    let n = c.submit(["-o", "/dev/null", "--no-requeue", "--wrap", &wrap]);
    c.wait_job(b, secs(30), "requeued", |j| j.restarts >= 1);
    let nj = c.wait_terminal(n, secs(30));
    assert_eq!(nj.state, JobState::Cancelled, "{nj:?}");
    std::fs::remove_file(dir.path().join("fail")).unwrap();
    let bj = c.wait_terminal(b, secs(30));
    assert_eq!((bj.state, bj.exit_code), (JobState::Completed, 0), "{bj:?}");
}
