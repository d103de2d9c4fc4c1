//! Accounts, users, QOS and their limits through the real daemons: `gsacctmgr` builds the
//! association table, `AccountingStorageEnforce=associations,limits,qos` refuses and holds
//! jobs with Slurm's words and reasons (seen in `gsqueue`), the QOS priority factor decides
//! which job starts first (seen in `gsprio`), and fair-share usage survives a restart of
//! gsctld (the job that made it is gone from the store by then).

use gsched_tests::{current_user, secs, stderr, ClusterOpts, JobState, TestCluster};

fn acctmgr(c: &TestCluster, args: &[&str]) -> String {
    let mut a = vec!["-i"];
    a.extend_from_slice(args);
    c.cmd_ok("gsacctmgr", &a)
}

/// The reason and QOS of a pending job as gsqueue prints them.
fn queue_line(c: &TestCluster, id: u32) -> String {
    c.cmd_ok(
        "gsqueue",
        ["-h", "-j", &id.to_string(), "-o", "%i %q %a %r"],
    )
    .trim()
    .to_string()
}

#[test]
fn associations_qos_limits_and_priority() {
    let me = current_user();
    let c = TestCluster::start(
        ClusterOpts::named("qos")
            .nodes(1)
            .cpus(2)
            .config_line("PriorityType=priority/multifactor")
            .config_line("PriorityWeightQOS=10000")
            .config_line("PriorityWeightAge=1")
            .config_line("AccountingStorageEnforce=associations,limits,qos")
            .config_line("PartitionName=private Nodes=ALL AllowAccounts=chem DenyQos=high"),
    );
    // No association with the account: refused, as Slurm does.
    let o = c.cmd("gsbatch", ["-A", "physics", "--wrap", "true"]);
    assert!(!o.status.success());
    assert_eq!(
        stderr(&o).trim(),
        "gsbatch: error: Batch job submission failed: Invalid account or account/partition combination specified"
    );
    // The table, in sacctmgr's words.
    assert_eq!(
        acctmgr(
            &c,
            &[
                "add",
                "account",
                "physics",
                "Description=Physics",
                "Fairshare=10"
            ]
        ),
        " Adding Account(s)\n  physics\n"
    );
    acctmgr(&c, &["add", "qos", "high", "Priority=100"]);
    acctmgr(
        &c,
        &[
            "add",
            "qos",
            "small",
            "MaxJobsPerUser=1",
            "MaxSubmitJobsPerUser=3",
            "MaxWall=5",
        ],
    );
    let out = acctmgr(
        &c,
        &[
            "add",
            "user",
            &me,
            "Account=physics",
            "DefaultAccount=physics",
            "QOS=normal,high,small",
        ],
    );
    assert!(
        out.starts_with(" Adding User(s)\n Associations =\n"),
        "{out}"
    );
    assert_eq!(
        c.cmd_ok(
            "gsacctmgr",
            [
                "show",
                "qos",
                "-P",
                "-n",
                "format=name,priority,maxjobspu,maxsubmitpu,maxwall"
            ]
        ),
        "high|100|||\nnormal|0|||\nsmall|0|1|3|00:05:00\n"
    );
    assert_eq!(
        c.cmd_ok("gsacctmgr", ["show", "assoc", "-P", "format=account,user,share,qos"]),
        // root is in account root from the start, as on a new Slurm cluster.
        format!("Account|User|Share|QOS\nroot||1|normal\nroot|root|1|normal\nphysics||10|normal\nphysics|{me}|1|high,normal,small\n")
    );
    let users = c.cmd_ok("gsacctmgr", ["list", "user", &me]);
    let admin = if me == "root" { "Administ+" } else { "None" };
    assert_eq!(
        users,
        format!(
            "      User   Def Acct     Admin \n---------- ---------- --------- \n{me:>10}    physics {admin:>9} \n"
        )
    );
    // The partition's lists.
    let o = c.cmd("gsbatch", ["-p", "private", "--wrap", "true"]);
    assert_eq!(
        stderr(&o).trim(),
        "gsbatch: error: Batch job submission failed: Invalid account or account/partition combination specified"
    );
    let show = c.cmd_ok("gscontrol", ["show", "partition", "private"]);
    assert!(
        show.contains("AllowGroups=ALL AllowAccounts=chem DenyQos=high"),
        "{show}"
    );
    let conf = c.cmd_ok("gscontrol", ["show", "config"]);
    assert!(
        conf.lines()
            .any(|l| l.starts_with("AccountingStorageEnforce")
                && l.ends_with("= associations,limits,qos")),
        "{conf}"
    );
    // An unknown QOS, and one the association does not allow.
    let o = c.cmd("gsbatch", ["-q", "nope", "--wrap", "true"]);
    assert!(stderr(&o).contains("Invalid qos specification"), "{o:?}");
    // Without -i and without a terminal, the change is committed (no one to ask).
    assert_eq!(
        c.cmd_ok("gsacctmgr", ["add", "qos", "secret"]),
        " Adding QOS(s)\n  secret\n"
    );
    let o = c.cmd("gsbatch", ["--qos=secret", "--wrap", "true"]);
    assert!(stderr(&o).contains("Invalid qos specification"), "{o:?}");

    // MaxJobsPerUser=1: the second job of the QOS waits with Slurm's reason.
    let a = c.submit([
        "-q",
        "small",
        "-t",
        "2",
        "-o",
        "/dev/null",
        "--wrap",
        "sleep 60",
    ]);
    c.wait_state(a, JobState::Running, secs(30));
    assert_eq!(c.job(a).time_limit, Some(2));
    let b = c.submit_env(
        ["-t", "2", "-o", "/dev/null", "--wrap", "sleep 60"],
        &[("SBATCH_QOS", "small")],
    );
    c.wait_until(secs(30), "b to wait for its QOS limit", || {
        queue_line(&c, b) == format!("{b} small physics QOSMaxJobsPerUserLimit")
    });
    // MaxWall=5: a longer job waits; without -t the job gets MaxWall as its limit.
    let long = c.submit(["-q", "small", "-t", "10", "--wrap", "true"]);
    c.wait_until(secs(30), "the long job to wait for MaxWall", || {
        queue_line(&c, long) == format!("{long} small physics QOSMaxWallDurationPerJobLimit")
    });
    // MaxSubmitJobsPerUser=3: the fourth job is refused.
    let o = c.cmd("gsbatch", ["-q", "small", "--wrap", "true"]);
    assert_eq!(
        stderr(&o).trim(),
        "gsbatch: error: Batch job submission failed: Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)"
    );
    let o = c.cmd("gsqueue", ["-h", "-q", "small", "-S", "i", "-o", "%i"]);
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        format!("{a}\n{b}\n{long}\n")
    );

    // QOS priority: with the node full, a later job of QOS high ranks first and starts first.
    let filler = c.submit(["-o", "/dev/null", "--wrap", "sleep 60"]);
    c.wait_state(filler, JobState::Running, secs(30));
    let e = c.submit(["-c", "2", "-o", "/dev/null", "--wrap", "sleep 60"]);
    let f = c.submit([
        "-c",
        "2",
        "-q",
        "high",
        "-o",
        "/dev/null",
        "--wrap",
        "sleep 60",
    ]);
    c.wait_until(secs(30), "priorities of e and f", || {
        c.job(e).priority_factors.is_some() && c.job(f).priority_factors.is_some()
    });
    assert!(c.job(f).priority > c.job(e).priority);
    let prio = c.cmd_ok("gsprio", ["-j", &format!("{e},{f}"), "-o", "%i %r %Q"]);
    assert_eq!(
        prio,
        format!("JOBID PARTITION QOS\n{e} debug 0\n{f} debug 10000\n")
    );
    let prio = c.cmd_ok("gsprio", ["-w"]);
    assert!(prio.contains("Weights"), "{prio}");
    assert!(prio.lines().next().unwrap().ends_with("QOS"), "{prio}");
    // QOS= of a pending job is checked as at submit.
    let o = c.cmd("gscontrol", ["update", &format!("JobId={e}"), "QOS=secret"]);
    assert!(stderr(&o).contains("Invalid qos specification"), "{o:?}");
    c.cmd_ok("gscontrol", ["update", &format!("JobId={e}"), "QOS=normal"]);
    let show = c.cmd_ok("gscontrol", ["show", "job", &f.to_string()]);
    assert!(show.contains("Account=physics QOS=high"), "{show}");
    c.cmd_ok(
        "gscancel",
        [
            a.to_string(),
            filler.to_string(),
            b.to_string(),
            long.to_string(),
        ],
    );
    c.wait_state(f, JobState::Running, secs(30));
    assert_eq!(c.job(e).state, JobState::Pending);
    c.cmd_ok("gscancel", [e.to_string(), f.to_string()]);
    let acct = c.cmd_ok(
        "gsacct",
        [
            "-X",
            "-n",
            "-P",
            "-o",
            "JobID,QOS,Account",
            "-j",
            &f.to_string(),
        ],
    );
    assert_eq!(acct, format!("{f}|high|physics\n"));
    let acct = c.cmd_ok("gsacct", ["-X", "-n", "-P", "-o", "JobID", "-q", "high"]);
    assert_eq!(acct, format!("{f}\n"));

    // Only administrators change the table; a modify and a delete.
    assert_eq!(
        acctmgr(
            &c,
            &[
                "modify",
                "qos",
                "where",
                "name=small",
                "set",
                "MaxJobsPerUser=-1",
                "Flags=DenyOnLimit"
            ]
        ),
        " Modified qos...\n  small\n"
    );
    let o = c.cmd("gsbatch", ["-q", "small", "-t", "10", "--wrap", "true"]);
    assert!(
        stderr(&o).contains("Job violates accounting/QOS policy"),
        "{o:?}"
    );
    let o = c.cmd("gsacctmgr", ["-i", "delete", "account", "physics"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("still has users"), "{o:?}");
    let o = c.cmd("gsacctmgr", ["-i", "add", "wckey", "x"]);
    assert!(stderr(&o).contains("not supported by gsched yet"), "{o:?}");
}

#[test]
fn fair_share_usage_survives_a_controller_restart() {
    let me = current_user();
    let c = TestCluster::start(
        ClusterOpts::named("fairshare")
            .nodes(1)
            .cpus(1)
            .min_job_age(3)
            .config_line("PriorityType=priority/multifactor")
            .config_line("PriorityWeightFairshare=10000"),
    );
    acctmgr(&c, &["add", "account", "heavy,light"]);
    acctmgr(
        &c,
        &[
            "add",
            "user",
            &me,
            "Account=heavy,light",
            "DefaultAccount=light",
        ],
    );
    let x = c.submit([
        "-A",
        "heavy",
        "-o",
        "x.out",
        "--wrap",
        "echo $SLURM_JOB_ACCOUNT $SLURM_JOB_QOS; sleep 2",
    ]);
    let j = c.wait_terminal(x, secs(60));
    assert_eq!(j.state, JobState::Completed, "{j:?}");
    assert_eq!(c.read_work_file("x.out"), "heavy normal\n");
    // Let the job leave the controller's memory and MinJobAge, so that after the restart
    // nothing but the saved usage remembers it.
    std::thread::sleep(secs(5));
    c.kill_ctld();
    c.start_ctld();
    assert!(
        c.try_job(x).ok().flatten().is_none(),
        "job {x} still loaded"
    );
    let h = c.submit(["-A", "heavy", "--begin", "now+1hour", "--wrap", "true"]);
    let l = c.submit(["--begin", "now+1hour", "--wrap", "true"]);
    c.wait_until(secs(30), "fair-share factors", || {
        c.job(h).priority_factors.is_some() && c.job(l).priority_factors.is_some()
    });
    let (fh, fl) = (
        c.job(h).priority_factors.unwrap().fairshare,
        c.job(l).priority_factors.unwrap().fairshare,
    );
    // heavy used everything: 2^(-1/(1/3)) of the weight (root's children are heavy, light
    // and root's own association, one share each); light nothing.
    assert!((fh - 1250.0).abs() < 1.0, "heavy {fh}");
    assert!((fl - 10_000.0).abs() < 1.0, "light {fl}");
    let out = c.cmd_ok("gsprio", ["-h", "-o", "%i %a %F"]);
    assert!(out.contains(&format!("{l} ")), "{out}");
    let out = c.cmd_ok("gsprio", ["-h", "-n", "-o", "%i %f", "-j", &h.to_string()]);
    assert_eq!(out, format!("{h} 0.1250000\n"));
    // gsshare (sshare) shows the same tree and factors, from the saved usage.
    let out = c.cmd_ok(
        "gsshare",
        ["-a", "-U", "-P", "-n", "-o", "Account,User,FairShare"],
    );
    for want in [
        format!("  heavy|{me}|0.125000"),
        format!("  light|{me}|1.000000"),
    ] {
        assert!(out.lines().any(|l| l == want), "{want} in {out}");
    }
    let out = c.cmd_ok("gsshare", ["-a", "-P", "-n", "-o", "Account,RawUsage"]);
    assert!(
        out.lines()
            .next()
            .is_some_and(|l| l.starts_with("root|") && l != "root|0"),
        "{out}"
    );
    // The table survived too; the default account applies to a job without -A.
    assert_eq!(c.job(l).spec.account.as_deref(), Some("light"));
    assert_eq!(
        c.cmd_ok(
            "gsacctmgr",
            ["show", "account", "-n", "-P", "format=account"]
        ),
        "root\nheavy\nlight\n"
    );
}
