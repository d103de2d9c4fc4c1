//! `Prolog=`, `Epilog=` and `EpilogSlurmctld=` through the real daemons (two gsnoded on this host; nothing is
//! faked): the Prolog runs as root before the batch script on the batch node and before the
//! job's first step on its other node, with Slurm's variables; the Epilog runs on both nodes
//! when the job ends, with its exit code, and the node stays allocated until it finished (the
//! next job starts after it); a failing Prolog drains its node ("Prolog error") and requeues
//! the job held ("launch failed requeued held"; at a batch script or at a step on the other
//! node), a failing Epilog drains its node ("Epilog error").

use gsched_tests::{secs, ClusterOpts, JobState, TestCluster};
use std::path::Path;

fn program(path: &Path, body: &str) {
    std::fs::write(path, format!("#!/bin/sh\nPATH=/usr/bin:/bin\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
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
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
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
