//! `gscontrol import-slurm-conf`: a cluster running on a slurm.conf full of Slurm-only
//! settings (each a warning at start-up) is switched to the imported gsched.conf; the
//! controller restarts on it without a warning, and jobs run.

use gsched_tests::{secs, ClusterOpts, JobState, TestCluster};

#[test]
fn imported_config_runs_the_cluster_without_warnings() {
    let c = TestCluster::start(
        ClusterOpts::named("import")
            .nodes(1)
            .config_line("ProctrackType=proctrack/cgroup")
            .config_line("JobAcctGatherType=jobacct_gather/cgroup")
            .config_line("DownNodes=n9 State=DOWN Reason=gone"),
    );
    let slurm_conf = c.conf_path().to_path_buf();
    let gres = c.dir().join("gres.conf");
    std::fs::write(&gres, "NodeName=n1 Name=gpu File=/dev/null\n").unwrap();
    let o = c.cmd(
        "gscontrol",
        [
            "import-slurm-conf".to_string(),
            slurm_conf.display().to_string(),
            gres.display().to_string(),
        ],
    );
    assert!(o.status.success(), "{o:?}");
    let conf = String::from_utf8(o.stdout).unwrap();
    let notes = String::from_utf8(o.stderr).unwrap();
    for what in [
        "ProctrackType=proctrack/cgroup",
        "JobAcctGatherType=jobacct_gather/cgroup",
        "DownNodes=n9 State=DOWN Reason=gone: DownNodes lines are",
    ] {
        assert!(
            notes.contains(&format!("not carried over: {}", c.dir().display()))
                && notes.contains(what),
            "{what} not listed:\n{notes}"
        );
    }
    assert!(
        notes.contains("import-slurm-conf: 3 setting(s) not carried over"),
        "{notes}"
    );
    // gsched reads gres.conf itself: it is checked and named for copying.
    assert!(
        notes.contains(&format!(
            "import-slurm-conf: {} is read by gsched as it is",
            gres.display()
        )),
        "{notes}"
    );
    assert!(
        conf.contains("#[import] ProctrackType=proctrack/cgroup\n"),
        "{conf}"
    );

    // Restart the controller on the imported config.
    c.kill_ctld();
    std::fs::write(&slurm_conf, &conf).unwrap();
    let log_before = std::fs::read_to_string(c.ctld_log())
        .unwrap_or_default()
        .len();
    c.start_ctld();
    let log = std::fs::read_to_string(c.ctld_log()).unwrap_or_default();
    let since_restart = &log[log_before.min(log.len())..];
    assert!(
        !since_restart.contains("gsched does not use yet"),
        "the imported config still warns:\n{since_restart}"
    );
    let id = c.submit(["--wrap", "true"]);
    let job = c.wait_terminal(id, secs(30));
    assert_eq!(job.state, JobState::Completed);

    // Errors: a missing file, an argument that is neither gres.conf nor cgroup.conf.
    let o = c.cmd(
        "gscontrol",
        ["import-slurm-conf", "/nonexistent/slurm.conf"],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("cannot read /nonexistent/slurm.conf"),
        "{o:?}"
    );
    let o = c.cmd(
        "gscontrol",
        [
            "import-slurm-conf",
            &slurm_conf.display().to_string(),
            "x.conf",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("cannot tell whether x.conf"),
        "{o:?}"
    );
}
