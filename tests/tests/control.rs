//! Administration through the commands against real daemons: `gscontrol update` of a job's
//! time limit and of a node's state (a drained node gets no new jobs, resuming it lets them
//! start), `gscancel --signal` reaching the job's steps, `-b` the batch shell and `-f` every
//! process, and `gscancel`'s filters; `Nice=` of a pending job; the daemons' log and pid
//! files; `gscontrol update PartitionName=` (states, limits, until the next restart);
//! `gscontrol reconfigure` and SIGHUP; `gscontrol shutdown`; `gscontrol setdebug`.

use gsched_tests::{secs, ClusterOpts, JobState, Reason, TestCluster};

#[test]
fn update_time_limit_is_shown_and_enforced() {
    let c = TestCluster::start(ClusterOpts::named("tlimit").nodes(1));
    let id = c.submit(["-t", "10", "--wrap", "sleep 1000"]);
    c.wait_state(id, JobState::Running, secs(30));
    c.cmd_ok(
        "gscontrol",
        [
            "update".to_string(),
            format!("JobId={id}"),
            "TimeLimit=5".into(),
        ],
    );
    let show = c.cmd_ok(
        "gscontrol",
        ["show".to_string(), "job".into(), id.to_string()],
    );
    assert!(show.contains("TimeLimit=00:05:00"), "{show}");
    assert_eq!(c.job(id).time_limit, Some(5));
    // Users may lower a limit; the lowest is one minute (seconds round up).
    c.cmd_ok(
        "gscontrol",
        [
            "update".to_string(),
            format!("JobId={id}"),
            "TimeLimit=0:01".into(),
        ],
    );
    let j = c.job(id);
    assert_eq!(j.time_limit, Some(1));
    c.cmd_ok("gscancel", [id.to_string()]);
    c.wait_terminal(id, secs(30));
}

/// `gscontrol update JobId=N Nice=V` (priority/basic): the pending job moves down (or, for
/// root, up) the queue at once by the change, as slurmctld does, and gsqueue and gscontrol
/// show the new nice value; a value out of Slurm's range is refused by the command.
#[test]
fn nice_update_moves_a_pending_job_at_once() {
    let c = TestCluster::start(ClusterOpts::named("nice").nodes(1));
    let a = c.submit(["--begin=now+1hour", "--wrap", "true"]);
    let b = c.submit(["--begin=now+1hour", "--nice=1", "--wrap", "true"]);
    let queue = || {
        let out = c.cmd_ok("gsqueue", ["-h", "-o", "%i %y %Q"]);
        out.lines()
            .map(|l| {
                let f: Vec<i64> = l.split_whitespace().map(|x| x.parse().unwrap()).collect();
                (f[0] as u32, (f[1], f[2]))
            })
            .collect::<std::collections::BTreeMap<_, _>>()
    };
    let q = queue();
    let (pa, pb) = (q[&a].1, q[&b].1);
    assert_eq!((q[&a].0, q[&b].0), (0, 1), "{q:?}");
    assert_eq!(pa - pb, 2, "one for its place, one for its nice: {q:?}");
    let update = |nice: &str| {
        c.cmd(
            "gscontrol",
            [
                "update".to_string(),
                format!("JobId={a}"),
                format!("Nice={nice}"),
            ],
        )
    };
    assert!(update("5").status.success());
    let q = queue();
    assert_eq!(q[&a], (5, pa - 5), "{q:?}");
    assert!(q[&a].1 < q[&b].1, "a now ranks behind b: {q:?}");
    // Root may go below 0.
    assert!(update("-3").status.success());
    assert_eq!(queue()[&a], (-3, pa + 3));
    let show = c.cmd_ok(
        "gscontrol",
        ["show".to_string(), "job".into(), a.to_string()],
    );
    assert!(
        show.contains(&format!("Priority={} Nice=-3 ", pa + 3)),
        "{show}"
    );
    let out = update("9999999999");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        gsched_tests::stderr(&out).contains("Nice value out of range (+/- 2147483645)"),
        "{}",
        gsched_tests::stderr(&out)
    );
    assert_eq!(queue()[&a], (-3, pa + 3), "unchanged");
}

#[test]
fn drained_node_gets_no_jobs_until_resumed() {
    let c = TestCluster::start(ClusterOpts::named("drain").nodes(1));
    // Without a reason, Slurm refuses.
    let out = c.cmd("gscontrol", ["update", "NodeName=n1", "State=DRAIN"]);
    assert!(!out.status.success(), "{out:?}");
    c.cmd_ok(
        "gscontrol",
        ["update", "NodeName=n1", "State=DRAIN", "Reason=maintenance"],
    );
    let info = c.cmd_ok("gsinfo", ["-h", "-o", "%t %E"]);
    assert_eq!(info.trim(), "drain maintenance", "{info}");
    let id = c.submit(["--wrap", "true"]);
    c.wait_job(id, secs(10), "pending for Resources", |j| {
        j.state == JobState::Pending && j.reason == Reason::Resources
    });
    c.cmd_ok("gscontrol", ["update", "NodeName=n1", "State=RESUME"]);
    c.wait_state(id, JobState::Completed, secs(30));
    let info = c.cmd_ok("gsinfo", ["-h", "-o", "%t"]);
    assert_eq!(info.trim(), "idle", "{info}");
}

/// `gscontrol update PartitionName=`: DOWN keeps jobs pending, DRAIN refuses new ones but
/// runs those it has, a job listing another partition too still gets in, MaxTime applies
/// at once, bad keys and values change nothing, and a controller restart reads the
/// partition from the config again (Slurm 22.05's default).
#[test]
fn partition_update_states_and_limits() {
    let c = TestCluster::start(
        ClusterOpts::named("part-update")
            .nodes(2)
            .config_line("PartitionName=other Nodes=n2 MaxTime=INFINITE State=UP"),
    );
    let update = |args: &[&str]| {
        let mut a = vec!["update", "PartitionName=debug"];
        a.extend_from_slice(args);
        c.cmd("gscontrol", a)
    };
    let state = || {
        c.cmd_ok("gsinfo", ["-h", "-p", "debug", "-o", "%a"])
            .trim()
            .to_string()
    };
    assert!(update(&["State=DOWN"]).status.success());
    assert_eq!(state(), "down");
    let a = c.submit(["-p", "debug", "--wrap", "true"]);
    c.wait_job(a, secs(10), "pending for PartitionDown", |j| {
        j.state == JobState::Pending && j.reason == Reason::PartitionDown
    });
    // DRAIN: the pending job runs, a new one is refused, one that also lists `other` goes
    // there.
    assert!(update(&["State=DRAIN"]).status.success());
    c.wait_state(a, JobState::Completed, secs(30));
    let out = c.cmd("gsbatch", ["-p", "debug", "--wrap", "true"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("Required partition not available (inactive or drain)"),
        "{out:?}"
    );
    let b = c.submit(["-p", "debug,other", "--wrap", "true"]);
    c.wait_state(b, JobState::Completed, secs(30));
    assert_eq!(c.job(b).partition, "other");
    // Nothing changes on a bad value or a key gsched does not implement.
    let out = update(&["State=UP", "MaxTime=soon"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("slurm_update error: Invalid MaxTime"),
        "{out:?}"
    );
    let out = update(&["PriorityTier=3"]);
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("Update of this parameter is not supported: PriorityTier=3"),
        "{out:?}"
    );
    assert_eq!(state(), "drain");
    // UP with a one-minute MaxTime: a 5-minute job waits for PartitionTimeLimit.
    assert!(update(&["State=UP", "MaxTime=1"]).status.success());
    let show = c.cmd_ok("gscontrol", ["show", "partition", "debug"]);
    assert!(
        show.contains("MaxTime=00:01:00") && show.contains("State=UP"),
        "{show}"
    );
    let d = c.submit(["-p", "debug", "-t", "5", "--wrap", "true"]);
    c.wait_job(d, secs(10), "pending for PartitionTimeLimit", |j| {
        j.state == JobState::Pending && j.reason == Reason::PartitionTimeLimit
    });
    // A restart reads the config file again: MaxTime=INFINITE, the job starts.
    c.kill_ctld();
    c.start_ctld();
    c.wait_state(d, JobState::Completed, secs(30));
    let show = c.cmd_ok("gscontrol", ["show", "partition", "debug"]);
    assert!(show.contains("MaxTime=UNLIMITED"), "{show}");
}

/// `gscontrol reconfigure` and SIGHUP: both daemons read the config again in place (same
/// pids), a job running meanwhile goes on and ends under the new config (the node runs the
/// newly configured Epilog for it), submissions made during the reconfigure all succeed
/// (the listening socket is handed over), and a config that does not load is refused with
/// its reason while the controller goes on.
#[test]
fn reconfigure_reads_the_config_again_in_place() {
    let c = TestCluster::start(ClusterOpts::named("reconf").nodes(1).cpus(4));
    let (ctld, noded) = (c.ctld_pid().unwrap(), c.noded_pid(0).unwrap());
    let running = c.submit(["--wrap", "sleep 4"]);
    c.wait_state(running, JobState::Running, secs(30));
    let epilog_log = c.dir().join("epilog.log");
    let epilog = c.dir().join("epilog");
    std::fs::write(
        &epilog,
        format!(
            "#!/bin/sh\necho \"$SLURM_JOB_ID\" >> {}\n",
            epilog_log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&epilog, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let original = std::fs::read_to_string(c.conf_path()).unwrap();
    std::fs::write(
        c.conf_path(),
        format!(
            "{original}\nPartitionName=extra Nodes=ALL MaxTime=30\nEpilog={}\n",
            epilog.display()
        ),
    )
    .unwrap();

    // Submissions from another thread while both daemons are executed anew.
    let submitted = std::thread::scope(|s| {
        let loop_ = s.spawn(|| {
            (0..20)
                .map(|_| c.cmd("gsbatch", ["--parsable", "--wrap", "true"]))
                .collect::<Vec<_>>()
        });
        std::thread::sleep(std::time::Duration::from_millis(100));
        let out = c.cmd("gscontrol", ["reconfigure"]);
        assert!(out.status.success(), "{out:?}");
        assert!(out.stdout.is_empty() && out.stderr.is_empty(), "{out:?}");
        loop_.join().unwrap()
    });
    let mut ids = Vec::new();
    for out in &submitted {
        assert!(out.status.success(), "a submission failed: {out:?}");
        ids.push(
            String::from_utf8_lossy(&out.stdout)
                .trim()
                .parse::<u32>()
                .unwrap(),
        );
    }
    c.wait_until(secs(30), "the new partition", || {
        c.cmd("gsinfo", ["-h", "-p", "extra", "-o", "%P"])
            .stdout
            .starts_with(b"extra")
    });
    assert_eq!(c.ctld_pid(), Some(ctld));
    assert_eq!(c.noded_pid(0), Some(noded));
    // The same process names, which pgrep and the local cluster's scripts match.
    let comm = |pid: u32| std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap();
    assert_eq!(
        (comm(ctld), comm(noded)),
        ("gsctld\n".into(), "gsnoded\n".into())
    );
    assert!(
        std::fs::read_to_string(c.noded_log(0))
            .unwrap()
            .contains("executing gsnoded anew"),
        "gsnoded was not told"
    );
    // The job that ran through it ends as usual, and the new Epilog runs for it.
    assert_eq!(
        c.wait_terminal(running, secs(30)).state,
        JobState::Completed
    );
    c.wait_until(secs(30), "the new Epilog", || {
        std::fs::read_to_string(&epilog_log)
            .unwrap_or_default()
            .lines()
            .any(|l| l == running.to_string())
    });
    for id in ids {
        assert_eq!(c.wait_terminal(id, secs(60)).state, JobState::Completed);
    }

    // A config a fresh gsctld would not start with (the commands read it fine): refused
    // with the reason, nothing changes.
    let good = std::fs::read_to_string(c.conf_path()).unwrap();
    std::fs::write(
        c.conf_path(),
        format!("{good}\nAdminUsers=no_such_user_here\n"),
    )
    .unwrap();
    let out = c.cmd("gscontrol", ["reconfigure"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("slurm_reconfigure error: AdminUsers: no such user \"no_such_user_here\"")
            && err.contains("gsctld keeps running with its current config"),
        "{err}"
    );
    assert_eq!(c.ctld_pid(), Some(ctld));
    let id = c.submit(["-p", "extra", "--wrap", "true"]);
    assert_eq!(c.wait_terminal(id, secs(30)).state, JobState::Completed);

    // SIGHUP, as slurmctld: the same reconfigure.
    std::fs::write(
        c.conf_path(),
        format!("{good}\nPartitionName=hup Nodes=ALL\n"),
    )
    .unwrap();
    let kill = std::process::Command::new("kill")
        .args(["-HUP", &ctld.to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    c.wait_until(secs(30), "the partition added before SIGHUP", || {
        c.cmd("gsinfo", ["-h", "-p", "hup", "-o", "%P"])
            .stdout
            .starts_with(b"hup")
    });
    assert_eq!(c.ctld_pid(), Some(ctld));
}

/// `gscontrol shutdown`: both daemons exit cleanly, the running job goes on without them
/// and is reported when they start again; `shutdown slurmctld` leaves gsnoded up.
#[test]
fn shutdown_stops_the_daemons_not_the_jobs() {
    let c = TestCluster::start(ClusterOpts::named("shutdown").nodes(1));
    let mark = c.workdir().join("done");
    let id = c.submit([
        "--wrap".to_string(),
        format!("sleep 2; touch {}", mark.display()),
    ]);
    c.wait_state(id, JobState::Running, secs(30));
    let out = c.cmd("gscontrol", ["shutdown", "nodes"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("invalid shutdown argument:nodes"),
        "{out:?}"
    );
    let out = c.cmd("gscontrol", ["shutdown"]);
    assert!(out.status.success() && out.stderr.is_empty(), "{out:?}");
    let statuses = c.wait_daemons_exit(secs(30));
    assert_eq!(statuses.len(), 2);
    assert!(statuses.iter().all(|s| s.success()), "{statuses:?}");
    c.wait_until(secs(30), "the job, without daemons", || mark.exists());
    c.start_ctld();
    c.start_noded(0);
    assert_eq!(c.wait_terminal(id, secs(30)).state, JobState::Completed);

    // The controller only.
    let noded = c.noded_pid(0).unwrap();
    c.cmd_ok("gscontrol", ["shutdown", "controller"]);
    let deadline = std::time::Instant::now() + secs(30);
    while c.ping().is_some() {
        assert!(std::time::Instant::now() < deadline, "gsctld still answers");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    // Still running (not a zombie).
    let stat = std::fs::read_to_string(format!("/proc/{noded}/stat")).unwrap_or_default();
    let state = stat.rsplit_once(") ").map(|(_, r)| &r[..1]);
    assert!(
        matches!(state, Some("S" | "R")),
        "gsnoded stopped too: {stat}"
    );
}

/// `gscontrol setdebug` (and `update SlurmctldDebug=`): the controller's debug lines
/// appear from then on and stop again at `info`; a bad level is refused by the command.
#[test]
fn setdebug_changes_the_controller_log_level() {
    let c = TestCluster::start(ClusterOpts::named("setdebug").nodes(1));
    let debug_lines = || {
        std::fs::read_to_string(c.ctld_log())
            .unwrap()
            .lines()
            .filter(|l| l.contains("DEBUG") && l.contains("submitted by uid"))
            .count()
    };
    let submit = || {
        let id = c.submit(["--wrap", "true"]);
        c.wait_terminal(id, secs(30));
    };
    submit();
    assert_eq!(debug_lines(), 0, "debug lines at the default level");
    let out = c.cmd("gscontrol", ["setdebug", "loud"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("invalid debug level: loud"),
        "{out:?}"
    );
    c.cmd_ok("gscontrol", ["setdebug", "debug"]);
    submit();
    let at_debug = debug_lines();
    assert!(at_debug >= 1, "no debug line after setdebug debug");
    c.cmd_ok("gscontrol", ["update", "SlurmctldDebug=3"]);
    submit();
    assert_eq!(
        debug_lines(),
        at_debug,
        "debug lines after SlurmctldDebug=3 (info)"
    );
}

#[test]
fn signal_reaches_the_job_and_filters_select_jobs() {
    let c = TestCluster::start(ClusterOpts::named("signal").nodes(1).cpus(4));
    let script = "#!/bin/bash\n\
                  trap 'echo got USR1' USR1\n\
                  trap 'echo got USR2' USR2\n\
                  echo ready\n\
                  while true; do sleep 0.1; done\n";
    c.write_script("trap.sh", script);
    let id = c.submit(["-J", "trapper", "-o", "trap-%j.out", "trap.sh"]);
    let out = format!("trap-{id}.out");
    c.wait_file_contains(&out, "ready", secs(30));
    // As in Slurm, a signal without -b/-f goes to the job's steps only (there are none);
    // -b reaches the batch shell, -f every process of the job.
    c.cmd_ok("gscancel", ["--signal=USR1".to_string(), id.to_string()]);
    c.cmd_ok("gscancel", ["-b", "--signal=USR2", &id.to_string()]);
    c.wait_file_contains(&out, "got USR2", secs(30));
    let text = c.wait_file_contains(&out, "got USR2", secs(1));
    assert!(!text.contains("got USR1"), "{text}");
    c.cmd_ok("gscancel", ["--full", "--signal=USR1", &id.to_string()]);
    c.wait_file_contains(&out, "got USR1", secs(30));
    // Signalling does not cancel.
    assert_eq!(c.job(id).state, JobState::Running);

    // Filters: by name only the matching job goes; by state the pending one.
    let other = c.submit(["-J", "other", "--wrap", "sleep 1000"]);
    let held = c.submit(["-H", "-J", "other", "--wrap", "true"]);
    c.wait_state(other, JobState::Running, secs(30));
    c.cmd_ok("gscancel", ["-n", "trapper"]);
    c.wait_state(id, JobState::Cancelled, secs(30));
    assert_eq!(c.job(other).state, JobState::Running);
    c.cmd_ok("gscancel", ["-t", "PENDING", "-n", "other"]);
    c.wait_state(held, JobState::Cancelled, secs(10));
    assert_eq!(c.job(other).state, JobState::Running);
    c.cmd_ok("gscancel", ["-u", c.user()]);
    c.wait_state(other, JobState::Cancelled, secs(30));
}

/// `SlurmctldLogFile`/`SlurmdLogFile` (with `%n`), `SlurmdDebug` and the pid files: the
/// daemons log there instead of stderr, at the configured level, write their pids, and
/// SIGUSR2 opens the log again after logrotate moved it.
#[test]
fn daemons_log_to_their_files_and_reopen_them_on_sigusr2() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let c = TestCluster::start(
        ClusterOpts::named("logfiles")
            .nodes(1)
            .config_line(&format!("SlurmctldLogFile={d}/ctld.log"))
            .config_line(&format!("SlurmdLogFile={d}/node-%n.log"))
            .config_line(&format!("SlurmctldPidFile={d}/ctld.pid"))
            .config_line(&format!("SlurmdPidFile={d}/node-%n.pid"))
            .config_line("SlurmdDebug=debug"),
    );
    let read = |name: &str| std::fs::read_to_string(dir.path().join(name)).unwrap_or_default();
    let id = c.submit(["--wrap", "true"]);
    c.wait_terminal(id, secs(30));
    c.wait_until(secs(10), "the node's job lines", || {
        read("node-n1.log").contains(&format!("job {id}: ended"))
    });
    assert!(
        read("ctld.log").contains("node n1 registered"),
        "{}",
        read("ctld.log")
    );
    // SlurmdDebug=debug: the node logs its debug lines; the controller (info) does not.
    assert!(
        read("node-n1.log").contains("DEBUG"),
        "{}",
        read("node-n1.log")
    );
    assert!(!read("ctld.log").contains("DEBUG"));
    assert_eq!(read("ctld.pid").trim(), c.ctld_pid().unwrap().to_string());
    assert_eq!(
        read("node-n1.pid").trim(),
        c.noded_pid(0).unwrap().to_string()
    );
    // logrotate: moved, then SIGUSR2; new lines go to a new file.
    std::fs::rename(dir.path().join("ctld.log"), dir.path().join("ctld.log.1")).unwrap();
    let pid = nix::unistd::Pid::from_raw(c.ctld_pid().unwrap() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGUSR2).unwrap();
    c.wait_until(secs(10), "a new ctld.log", || {
        read("ctld.log").contains("log file reopened")
    });
    let again = c.submit(["--wrap", "true"]);
    c.wait_terminal(again, secs(30));
    assert!(!read("ctld.log.1").contains("log file reopened"));
}
