//! Node lifecycle and faults through real daemons: a node that stops answering goes DOWN and
//! its job runs once elsewhere (the stale copy is fenced off when the node comes back),
//! draining with a deadline migrates a checkpointing job, a maintenance reservation keeps a
//! long job from starting before it, a busy node is avoided, and a 4-node job lands on one
//! switch; `HealthCheckProgram` runs when a node daemon starts and then on the nodes
//! `HealthCheckNodeState` selects. (A gsnoded killed with SIGKILL re-adopting its running job is
//! `restart.rs::node_daemon_killed_and_restarted_adopts_jobs`.)

use gsched_tests::{ClusterOpts, JobState, TestCluster};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::time::Duration;

const T: Duration = Duration::from_secs(40);

fn signal(pid: u32, sig: Signal) {
    kill(Pid::from_raw(pid as i32), sig).unwrap_or_else(|e| panic!("kill({pid}, {sig}): {e}"));
}

fn node_state(c: &TestCluster, name: &str) -> String {
    c.nodes()
        .into_iter()
        .find(|n| n.name == name)
        .map(|n| n.state_scontrol())
        .unwrap_or_default()
}

fn count(text: &str, needle: &str) -> usize {
    text.lines().filter(|l| l.starts_with(needle)).count()
}

#[test]
fn silent_node_goes_down_and_its_job_completes_once_elsewhere() {
    // One CPU per node: the job goes to n1 first.
    let c = TestCluster::start(
        ClusterOpts::named("node-silent")
            .nodes(2)
            .cpus(1)
            .config_line("SlurmdTimeout=4")
            .config_line("ReturnToService=1"),
    );
    let script = "echo start ${SLURM_RESTART_COUNT:-0} $SLURMD_NODENAME; \
                  while [ ! -e gate ]; do sleep 0.1; done; echo finished ${SLURM_RESTART_COUNT:-0}";
    let id = c.submit(["--open-mode=append", "-o", "out-%j.txt", "--wrap", script]);
    let out = format!("out-{id}.txt");
    let j = c.wait_state(id, JobState::Running, T);
    assert_eq!(j.nodes, vec!["n1".to_string()]);
    c.wait_file_contains(&out, "start 0 n1", T);

    // n1's daemon stops answering (its job keeps running, as on a partitioned node).
    let pid = c.noded_pid(0).expect("gsnoded n1 runs");
    signal(pid, Signal::SIGSTOP);
    c.wait_until(T, "n1 NOT_RESPONDING, then DOWN", || {
        node_state(&c, "n1").starts_with("DOWN")
    });
    let n1 = c.nodes().into_iter().find(|n| n.name == "n1").unwrap();
    assert!(n1.not_responding, "{n1:?}");
    assert_eq!(n1.reason.as_deref(), Some("Not responding"));
    // The job ended NODE_FAIL there and was requeued: it runs again, on n2.
    let j = c.wait_job(id, T, "running again", |j| {
        j.state == JobState::Running && j.restarts == 1
    });
    assert_eq!(j.nodes, vec!["n2".to_string()], "{j:?}");
    c.wait_file_contains(&out, "start 1 n2", T);

    // n1 answers again: it is told to kill the stale copy (its run's start time is not
    // the job's any more), and returns to service (ReturnToService=1).
    signal(pid, Signal::SIGCONT);
    let stale = c.dir().join("spool").join("n1").join(format!("job_{id}"));
    c.wait_until(T, "the stale copy on n1 killed and cleaned up", || {
        !stale.exists()
    });
    c.wait_until(T, "n1 back in service", || node_state(&c, "n1") == "IDLE");
    assert_eq!(c.job(id).state, JobState::Running);

    std::fs::write(c.work_file("gate"), "").unwrap();
    let j = c.wait_terminal(id, T);
    assert_eq!((j.state, j.restarts), (JobState::Completed, 1), "{j:?}");
    let text = c.read_work_file(&out);
    assert_eq!(count(&text, "finished"), 1, "one completed run:\n{text}");
    assert!(text.contains("finished 1"), "{text}");
}

#[test]
fn no_requeue_job_ends_node_fail_and_resume_brings_the_node_back() {
    // ReturnToService=0 (the default): the node stays DOWN until RESUME.
    let c = TestCluster::start(
        ClusterOpts::named("node-noreq")
            .nodes(1)
            .config_line("SlurmdTimeout=3"),
    );
    let id = c.submit(["--no-requeue", "--wrap", "sleep 300"]);
    c.wait_state(id, JobState::Running, T);
    let pid = c.noded_pid(0).expect("gsnoded runs");
    signal(pid, Signal::SIGSTOP);
    let j = c.wait_terminal(id, T);
    assert_eq!(j.state, JobState::NodeFail, "{j:?}");
    signal(pid, Signal::SIGCONT);
    // Heard from again, but still DOWN: no job starts.
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        node_state(&c, "n1").starts_with("DOWN"),
        "{}",
        node_state(&c, "n1")
    );
    let next = c.submit(["--wrap", "true"]);
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(c.job(next).state, JobState::Pending);
    c.cmd_ok("gscontrol", ["update", "NodeName=n1", "State=RESUME"]);
    assert_eq!(c.wait_terminal(next, T).state, JobState::Completed);
}

#[test]
fn drain_with_deadline_migrates_a_checkpointing_job() {
    let c = TestCluster::start(ClusterOpts::named("node-migrate").nodes(2).cpus(1));
    // Counts while it runs; on USR1 (its --signal) saves the count and exits; a later run
    // resumes from the saved count.
    let script = "n=0; [ -f ckpt ] && n=$(cat ckpt); \
                  echo run ${SLURM_RESTART_COUNT:-0} from $n on $SLURMD_NODENAME; \
                  trap 'echo $n > ckpt; echo checkpointed $n; exit 0' USR1; \
                  while [ ! -e gate ]; do n=$((n+1)); sleep 0.1; done; echo finished $n";
    let id = c.submit([
        "--open-mode=append",
        "-t",
        "10",
        "--signal=B:USR1@30",
        "-o",
        "m-%j.txt",
        "--wrap",
        script,
    ]);
    let out = format!("m-{id}.txt");
    let j = c.wait_state(id, JobState::Running, T);
    assert_eq!(j.nodes, vec!["n1".to_string()]);
    c.wait_file_contains(&out, "run 0 from 0 on n1", T);
    std::thread::sleep(Duration::from_millis(500));

    c.cmd_ok(
        "gscontrol",
        [
            "update",
            "NodeName=n1",
            "State=DRAIN",
            "Reason=maintenance",
            "MigrateBy=+60",
        ],
    );
    c.wait_file_contains(&out, "checkpointed", T);
    let j = c.wait_job(id, T, "running again", |j| {
        j.state == JobState::Running && j.restarts == 1
    });
    assert_eq!(j.nodes, vec!["n2".to_string()], "{j:?}");
    c.wait_file_contains(&out, "run 1 from", T);
    let text = c.read_work_file(&out);
    assert!(
        !text.contains("run 1 from 0 "),
        "the second run resumes from the checkpoint:\n{text}"
    );
    // n1 is empty and drained.
    let n1 = c.nodes().into_iter().find(|n| n.name == "n1").unwrap();
    assert_eq!((n1.alloc_cpus, n1.drain), (0, true), "{n1:?}");
    assert!(n1.life.migrate_by.is_some());

    std::fs::write(c.work_file("gate"), "").unwrap();
    let j = c.wait_terminal(id, T);
    assert_eq!((j.state, j.restarts), (JobState::Completed, 1), "{j:?}");
}

#[test]
fn maintenance_reservation_keeps_a_long_job_from_starting_before_it() {
    let c = TestCluster::start(ClusterOpts::named("node-maint").nodes(1).cpus(2));
    let user = c.user().to_string();
    let users = format!("Users={user}");
    let out = c.cmd_ok(
        "gscontrol",
        [
            "create",
            "reservation",
            "ReservationName=maint1",
            "StartTime=now+10minutes",
            "Duration=60",
            "Nodes=n1",
            "Flags=MAINT",
            &users,
        ],
    );
    assert_eq!(out, "Reservation created: maint1\n");
    let show = c.cmd_ok("gscontrol", ["show", "reservation"]);
    assert!(
        show.starts_with("ReservationName=maint1 StartTime="),
        "{show}"
    );
    assert!(show.contains("Nodes=n1 NodeCnt=1 CoreCnt=2"), "{show}");
    assert!(show.contains("Flags=MAINT,SPEC_NODES"), "{show}");
    assert!(show.contains("State=INACTIVE"), "{show}");
    let t = c.cmd_ok("gsinfo", ["-T"]);
    assert!(t.lines().next().unwrap().contains("RESV_NAME"), "{t}");
    assert!(t.contains("maint1"), "{t}");

    // 30 minutes would run into the window; 5 minutes end before it.
    let long = c.submit(["-t", "30", "--wrap", "true"]);
    let short = c.submit(["-t", "5", "--wrap", "true"]);
    assert_eq!(c.wait_terminal(short, T).state, JobState::Completed);
    std::thread::sleep(Duration::from_secs(2));
    let j = c.job(long);
    assert_eq!(j.state, JobState::Pending, "{j:?}");
    let r = c.cmd_ok("gsqueue", ["-h", "-o", "%r", "-j", &long.to_string()]);
    assert_eq!(r.trim(), "ReqNodeNotAvail, Reserved for maintenance");
    // Planned after the window.
    if let Some(s) = j.expected_start {
        assert!(s >= j.submit_time + 70 * 60 - 120, "{j:?}");
    }

    // Kept across a controller restart; bad input is refused clearly.
    c.kill_ctld();
    c.start_ctld();
    let show = c.cmd_ok("gscontrol", ["show", "reservation", "maint1"]);
    assert!(show.contains("ReservationName=maint1"), "{show}");
    let bad = c.cmd(
        "gscontrol",
        ["create", "reservation", "StartTime=now", "Nodes=n1"],
    );
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("Duration= or EndTime= is required"),
        "{bad:?}"
    );
    let dup = c.cmd(
        "gscontrol",
        [
            "create",
            "reservation",
            "ReservationName=maint1",
            "StartTime=now+1hour",
            "Duration=5",
            "Nodes=n1",
            &users,
        ],
    );
    assert!(String::from_utf8_lossy(&dup.stderr).contains("Duplicate reservation name"));

    // Moved further away: the long job fits before it now.
    c.cmd_ok(
        "gscontrol",
        ["update", "ReservationName=maint1", "StartTime=now+2hours"],
    );
    assert_eq!(c.wait_terminal(long, T).state, JobState::Completed);
    c.cmd_ok("gscontrol", ["delete", "ReservationName=maint1"]);
    let show = c.cmd_ok("gscontrol", ["show", "reservation"]);
    assert_eq!(show, "No reservations in the system\n");
}

#[test]
fn a_busy_node_is_avoided_when_an_idle_one_fits() {
    let c = TestCluster::start(
        ClusterOpts::named("node-load")
            .nodes(2)
            .cpus(2)
            .config_line("SlurmdTimeout=6"),
    );
    // The nodes share this host's /proc/loadavg; each gets its own load through the file
    // the harness points gsnoded at (GSCHED_LOADAVG_FILE).
    std::fs::write(c.dir().join("loadavg-n1"), "1.90 1.50 1.00 3/300 999\n").unwrap();
    std::fs::write(c.dir().join("loadavg-n2"), "0.10 0.10 0.10 1/300 999\n").unwrap();
    c.wait_until(T, "n1's load reported", || {
        c.cmd_ok("gscontrol", ["show", "node", "n1"])
            .contains("CPULoad=1.90")
    });
    let a = c.submit(["--wrap", "true"]);
    let j = c.wait_terminal(a, T);
    assert_eq!(
        j.nodes,
        vec!["n2".to_string()],
        "n1 is at 95% of its CPUs: {j:?}"
    );

    // The other way round.
    std::fs::write(c.dir().join("loadavg-n1"), "0.00 0.00 0.00 1/300 999\n").unwrap();
    std::fs::write(c.dir().join("loadavg-n2"), "2.00 1.50 1.00 3/300 999\n").unwrap();
    c.wait_until(T, "n2's load reported", || {
        c.cmd_ok("gscontrol", ["show", "node", "n2"])
            .contains("CPULoad=2.00")
    });
    let b = c.submit(["--wrap", "true"]);
    assert_eq!(c.wait_terminal(b, T).nodes, vec!["n1".to_string()]);
}

#[test]
fn a_four_node_job_lands_on_one_switch() {
    let c = TestCluster::start(
        ClusterOpts::named("node-topo")
            .nodes(6)
            .cpus(1)
            .config_line("TopologyPlugin=topology/tree")
            .file(
                "topology.conf",
                "SwitchName=s1 Nodes=n[1-2]\nSwitchName=s2 Nodes=n[3-6]\nSwitchName=top Switches=s[1-2]\n",
            ),
    );
    let a = c.submit(["-N", "4", "--wrap", "true"]);
    let j = c.wait_terminal(a, T);
    assert_eq!(j.state, JobState::Completed, "{j:?}");
    assert_eq!(j.nodes, vec!["n3", "n4", "n5", "n6"], "{j:?}");

    // Five nodes never fit one switch: with --switches=1@0:04 the job waits 4 seconds for
    // one, then is placed anyhow (as Slurm).
    let b = c.submit(["-N", "5", "--switches=1@0:04", "--wrap", "true"]);
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(c.job(b).state, JobState::Pending);
    let j = c.wait_terminal(b, T);
    assert_eq!(j.state, JobState::Completed, "{j:?}");
    assert_eq!(j.nodes.len(), 5);
    assert!(
        j.start_time.unwrap() >= j.submit_time + 4,
        "started before its switch wait was over: {j:?}"
    );
}

#[test]
fn reboot_asap_runs_reboot_program_once_idle_and_returns_the_node() {
    // RebootProgram is a script here (gsnoded runs it from the cluster directory): it
    // records the reboot; the test then restarts gsnoded, as a rebooted host would.
    let c = TestCluster::start(
        ClusterOpts::named("node-reboot")
            .nodes(1)
            .config_line("RebootProgram=./reboot.sh")
            .file("reboot.sh", "#!/bin/sh\necho rebooted >> rebooted.txt\n"),
    );
    let id = c.submit([
        "-o",
        "r-%j.txt",
        "--wrap",
        "while [ ! -e gate ]; do sleep 0.1; done",
    ]);
    c.wait_state(id, JobState::Running, T);
    c.cmd_ok(
        "gscontrol",
        ["reboot", "ASAP", "nextstate=resume", "reason=kernel", "n1"],
    );
    let show = c.cmd_ok("gscontrol", ["show", "node", "n1"]);
    assert!(
        show.contains("+DRAIN") && show.contains("+REBOOT_REQUESTED"),
        "{show}"
    );
    assert!(show.contains("Reason=Reboot ASAP : kernel"), "{show}");
    // ASAP: no new job starts meanwhile.
    let next = c.submit(["--wrap", "true"]);
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(c.job(next).state, JobState::Pending);
    assert!(
        !c.dir().join("rebooted.txt").exists(),
        "rebooted while busy"
    );

    std::fs::write(c.work_file("gate"), "").unwrap();
    c.wait_terminal(id, T);
    c.wait_until(T, "RebootProgram run", || {
        c.dir().join("rebooted.txt").exists()
    });
    assert!(
        node_state(&c, "n1").contains("REBOOT_ISSUED"),
        "{}",
        node_state(&c, "n1")
    );
    let gsinfo = c.cmd_ok("gsinfo", ["-h", "-o", "%t"]);
    assert_eq!(gsinfo.trim(), "boot^", "{gsinfo}");

    // The host "comes back": gsnoded starts again and registers.
    c.kill_noded(0);
    c.start_noded(0);
    c.wait_until(T, "n1 back in service", || node_state(&c, "n1") == "IDLE");
    assert_eq!(c.wait_terminal(next, T).state, JobState::Completed);
    assert_eq!(
        std::fs::read_to_string(c.dir().join("rebooted.txt")).unwrap(),
        "rebooted\n"
    );
    // Without RebootProgram the command is refused.
    let c2 = TestCluster::start(ClusterOpts::named("node-noreboot").nodes(1));
    let o = c2.cmd("gscontrol", ["reboot", "n1"]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("RebootProgram is not set"),
        "{o:?}"
    );
}

#[test]
fn reservation_users_run_their_jobs_in_it_and_others_stay_out() {
    let c = TestCluster::start(ClusterOpts::named("node-resv").nodes(2).cpus(1));
    let user = c.user().to_string();
    let users = format!("Users={user}");
    c.cmd_ok(
        "gscontrol",
        [
            "create",
            "reservation",
            "ReservationName=r1",
            "StartTime=now",
            "Duration=60",
            "Nodes=n1",
            "Flags=MAINT",
            &users,
        ],
    );
    // Outside the reservation: n2 only.
    let a = c.submit(["--wrap", "true"]);
    assert_eq!(c.wait_terminal(a, T).nodes, vec!["n2".to_string()]);
    // In it: n1.
    let b = c.submit(["--reservation=r1", "-t", "10", "--wrap", "true"]);
    let j = c.wait_terminal(b, T);
    assert_eq!(
        (j.state, j.nodes),
        (JobState::Completed, vec!["n1".to_string()])
    );
    // A job that would outlast the reservation waits; an unknown one is refused.
    let long = c.submit(["--reservation=r1", "-t", "120", "--wrap", "true"]);
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(c.job(long).state, JobState::Pending);
    let o = c.cmd("gsbatch", ["--reservation=nope", "--wrap", "true"]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("Requested reservation is invalid"),
        "{o:?}"
    );
}

#[test]
fn health_check_runs_at_start_and_then_on_the_chosen_nodes() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("checks");
    let program = dir.path().join("check.sh");
    std::fs::write(
        &program,
        format!(
            "#!/bin/sh\necho \"$SLURMD_NODENAME ${{HOME:-nohome}}\" >> {}\n",
            log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &program,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let c = TestCluster::start(
        ClusterOpts::named("health")
            .nodes(2)
            .config_line(&format!("HealthCheckProgram={}", program.display()))
            .config_line("HealthCheckInterval=1")
            .config_line("HealthCheckNodeState=ALLOC"),
    );
    let lines = || -> Vec<String> {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    };
    // Each node daemon ran it when it started, with only SLURMD_NODENAME set.
    let mut started = lines();
    started.sort();
    assert_eq!(started, vec!["n1 nohome", "n2 nohome"]);
    // Then only where all CPUs are in use.
    let id = c.submit(["-w", "n1", "-n", "2", "--wrap", "sleep 30"]);
    c.wait_state(id, JobState::Running, Duration::from_secs(30));
    std::fs::write(&log, "").unwrap();
    c.wait_until(Duration::from_secs(20), "two checks of n1", || {
        lines().len() >= 2
    });
    assert!(lines().iter().all(|l| l == "n1 nohome"), "{:?}", lines());
}
