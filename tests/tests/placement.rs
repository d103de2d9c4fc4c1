//! Where jobs run: `-w/--nodelist` (required nodes), `-x/--exclude`, `-C/--constraint` on
//! node features and `--exclusive` (whole nodes), through the real daemons, and the
//! submission errors Slurm gives for impossible requests; the memory of a job that asks for
//! none (`DefMemPerCPU`, `DefMemPerNode`).

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

#[test]
fn constraint_expressions_matching_or_and_counts() {
    // Racks: n1, n2 in r1; n3, n4 in r2; n2 and n4 are big.
    let c = TestCluster::start(
        ClusterOpts::named("placement-expr")
            .nodes(4)
            .cpus(2)
            .node_features("n1", "r1")
            .node_features("n2", "r1,big")
            .node_features("n3", "r2")
            .node_features("n4", "r2,big"),
    );
    let nodes_of = |args: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        a.extend(["--wrap".into(), "true".into()]);
        let id = c.submit(a);
        let mut n = c.wait_state(id, JobState::Completed, secs(30)).nodes;
        n.sort();
        n
    };
    // Parentheses: (r2|big)&big is n2 or n4; the first by preference.
    assert_eq!(nodes_of(&["-C", "(r2|big)&big"]), ["n2"]);
    // Matching OR: two nodes of the same rack, never one of each.
    assert_eq!(nodes_of(&["-N", "2", "-C", "[r1|r2]"]), ["n1", "n2"]);
    // r1 busy: the next rack, whole.
    let busy = c.submit(["-w", "n1", "--wrap", "sleep 1000"]);
    c.wait_state(busy, JobState::Running, secs(30));
    assert_eq!(
        nodes_of(&["-N", "2", "-c", "2", "-C", "[r1|r2]"]),
        ["n3", "n4"]
    );
    c.cmd_ok("gscancel", [busy.to_string()]);
    // Counts: two big nodes, whatever their rack; the count sets the node count.
    assert_eq!(nodes_of(&["-C", "big*2"]), ["n2", "n4"]);
    // A count with a per-node term: all in r2, one of them big.
    assert_eq!(nodes_of(&["-N", "2", "-C", "big*1&r2"]), ["n3", "n4"]);
    // Shown as given.
    let id = c.submit(["-H", "-C", "[r1|r2]", "--wrap", "true"]);
    let show = c.cmd_ok("gscontrol", ["show", "job", &id.to_string()]);
    assert!(show.contains("Features=[r1|r2]"), "{show}");
    c.cmd_ok("gscancel", [id.to_string()]);
    // Refused: counts joined by OR (gsbatch), more counted nodes than -N, unknown feature.
    let out = c.cmd("gsbatch", ["-C", "big*2|r1", "--wrap", "true"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Invalid feature specification") && err.contains("only be combined with AND"),
        "{err}"
    );
    let out = c.cmd("gsbatch", ["-N", "1", "-C", "big*2", "--wrap", "true"]);
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("Requested node configuration is not available"));
    let out = c.cmd("gsbatch", ["-C", "gpu*1", "--wrap", "true"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("Invalid feature specification"));
}

#[test]
fn a_job_without_memory_gets_the_partitions_or_the_clusters_default() {
    let c = TestCluster::start(
        ClusterOpts::named("def-mem")
            .nodes(1)
            .config_line("DefMemPerCPU=100")
            .config_line("PartitionName=big Nodes=ALL DefMemPerNode=300"),
    );
    let held = |args: &[&str]| -> String {
        let mut a = vec!["-H", "--parsable"];
        a.extend_from_slice(args);
        a.extend_from_slice(&["--wrap", "true"]);
        c.cmd_ok("gsbatch", a).trim().to_string()
    };
    let plain = held(&["-n", "2"]);
    let big = held(&["-p", "big"]);
    let asked = held(&["--mem=50"]);
    let mem = |id: &str| c.cmd_ok("gsqueue", ["-h", "-o", "%m", "-j", id]);
    assert_eq!(mem(&plain), "100M\n");
    assert_eq!(mem(&big), "300M\n");
    assert_eq!(mem(&asked), "50M\n");
    let shown = c.cmd_ok("gscontrol", ["show", "job", &plain]);
    assert!(shown.contains(" MinMemoryCPU=100M "), "{shown}");
    let shown = c.cmd_ok("gscontrol", ["show", "job", &big]);
    assert!(shown.contains(" MinMemoryNode=300M "), "{shown}");
    // A partition shows its own default (Slurm's layout), not the cluster's.
    let shown = c.cmd_ok("gscontrol", ["show", "partition", "big"]);
    assert!(
        shown.contains("   DefMemPerNode=300 MaxMemPerNode=UNLIMITED"),
        "{shown}"
    );
    let shown = c.cmd_ok("gscontrol", ["show", "partition", "debug"]);
    assert!(shown.contains("   DefMemPerNode=UNLIMITED "), "{shown}");
    // It runs with that memory.
    c.cmd_ok("gscontrol", ["release", &plain]);
    let id: u32 = plain.parse().unwrap();
    c.wait_state(id, JobState::Completed, secs(30));
    let out = c.cmd_ok("gsacct", ["-n", "-X", "-P", "-o", "ReqMem", "-j", &plain]);
    assert_eq!(out.trim(), "100M");
}

#[test]
fn max_mem_per_cpu_gives_more_cpus_and_max_mem_per_node_refuses() {
    let c = TestCluster::start(
        ClusterOpts::named("max-mem")
            .nodes(1)
            .cpus(4)
            .config_line("MaxMemPerCPU=100")
            .config_line("PartitionName=small Nodes=ALL MaxMemPerNode=200"),
    );
    // 250 MB per CPU is 3 CPUs of at most 100 MB: the job gets 3 CPUs of 84 MB.
    let id = c.cmd_ok(
        "gsbatch",
        ["-H", "--parsable", "--mem-per-cpu=250", "--wrap", "true"],
    );
    let shown = c.cmd_ok("gscontrol", ["show", "job", id.trim()]);
    assert!(
        shown.contains(" NumCPUs=3 NumTasks=1 CPUs/Task=3 ")
            && shown.contains(" MinMemoryCPU=84M "),
        "{shown}"
    );
    let out = c.cmd(
        "gsbatch",
        ["-H", "-p", "small", "--mem=300", "--wrap", "true"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("Batch job submission failed: Memory required by task is not available"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = c.cmd(
        "gsbatch",
        ["-H", "-p", "small", "--mem=200", "--wrap", "true"],
    );
    assert!(out.status.success());
    let shown = c.cmd_ok("gscontrol", ["show", "partition", "small"]);
    assert!(shown.contains(" MaxMemPerNode=200\n"), "{shown}");
}
