//! Where jobs run: `-w/--nodelist` (required nodes), `-x/--exclude`, `-C/--constraint` on
//! node features and `--exclusive` (whole nodes), through the real daemons, and the
//! submission errors Slurm gives for impossible requests.

use gsched_tests::{secs, ClusterOpts, JobState, TestCluster};

fn ran_on(c: &TestCluster, args: &[&str]) -> String {
    let mut a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    a.extend(["--wrap".into(), "true".into()]);
    let id = c.submit(a);
    let j = c.wait_state(id, JobState::Completed, secs(30));
    j.nodes.join(",")
}

#[test]
fn nodelist_exclude_constraint_and_exclusive() {
    let c = TestCluster::start(
        ClusterOpts::named("placement")
            .nodes(3)
            .cpus(2)
            .node_features("n3", "fast,big"),
    );
    assert_eq!(ran_on(&c, &["-w", "n2"]), "n2");
    assert_eq!(ran_on(&c, &["-x", "n1,n2"]), "n3");
    assert_eq!(ran_on(&c, &["-x", "n[1-2]"]), "n3");
    assert_eq!(ran_on(&c, &["-C", "fast"]), "n3");
    assert_eq!(ran_on(&c, &["-C", "fast&big"]), "n3");
    assert_eq!(ran_on(&c, &["-C", "slow|big"]), "n3");
    assert_eq!(ran_on(&c, &["-N", "2", "-w", "n3"]).split(',').count(), 2);
    let show = {
        let id = c.submit([
            "-w", "n3", "-x", "n1", "-C", "fast|big", "-H", "--wrap", "true",
        ]);
        let out = c.cmd_ok(
            "gscontrol",
            ["show".to_string(), "job".into(), id.to_string()],
        );
        c.cmd_ok("gscancel", [id.to_string()]);
        out
    };
    assert!(show.contains("ReqNodeList=n3 ExcNodeList=n1"), "{show}");
    assert!(show.contains("Features=fast|big"), "{show}");

    // --exclusive: every CPU of the node, whatever was asked.
    let id = c.submit([
        "--exclusive",
        "-o",
        "excl-%j.out",
        "--wrap",
        "echo cpus=$SLURM_CPUS_ON_NODE",
    ]);
    c.wait_state(id, JobState::Completed, secs(30));
    assert!(c
        .read_work_file(&format!("excl-{id}.out"))
        .contains("cpus=2"));
    let j = c.job(id);
    assert_eq!(j.cpus_per_node, vec![2], "{j:?}");
}

#[test]
fn impossible_placements_are_refused_at_submission() {
    let c = TestCluster::start(ClusterOpts::named("placement-err").nodes(2).cpus(2));
    let refuse = |args: &[&str], text: &str| {
        let mut a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        a.extend(["--wrap".into(), "true".into()]);
        let out = c.cmd("gsbatch", a);
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(!out.status.success(), "{args:?} was accepted");
        assert!(
            err.contains(&format!("Batch job submission failed: {text}")),
            "{args:?}: {err}"
        );
    };
    refuse(&["-w", "n9"], "Invalid node name specified");
    refuse(&["-C", "gpu"], "Invalid feature specification");
    refuse(
        &["-w", "n1", "-x", "n1"],
        "Requested node configuration is not available",
    );
    // Nothing was stored: the next job gets the first id.
    assert_eq!(c.submit(["-H", "--wrap", "true"]), 1);
}
