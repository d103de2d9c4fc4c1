//! What bench/format-diff.sh found different from real Slurm 22.05, through the real daemons:
//! `FirstJobId`, jobs submitted held (not eligible until released: `EligibleTime=Unknown`, in no
//! gsacct window), a job cancelled while pending (keeps its reason, no batch step, `Start=None`),
//! pending jobs' `NodeList=` and `SchedNodeList=`, `gsqueue --start`'s order and `gsqueue -s`'s
//! batch steps. The masked outputs of both systems are in bench/results/format-diff/.

use gsched_tests::{secs, ClusterOpts, JobState, Reason, TestCluster};

fn lines(s: &str) -> Vec<String> {
    s.lines().map(str::to_string).collect()
}

/// The value of `Key=` in `gscontrol show job` text ("" when empty).
fn field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.split_whitespace()
        .find_map(|w| w.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
}

#[test]
fn held_cancelled_and_waiting_jobs_look_like_slurms() {
    let c = TestCluster::start(
        ClusterOpts::named("layouts")
            .nodes(1)
            .cpus(2)
            .config_line("FirstJobId=5000"),
    );
    // FirstJobId: the first id handed out.
    let run = c.submit(["-J", "run", "-c", "2", "-t", "10", "--wrap", "sleep 300"]);
    assert_eq!(run, 5000);
    let cancelled = c.submit(["-H", "-J", "cancelled", "--wrap", "true"]);
    let held = c.submit(["-H", "-J", "held", "--wrap", "true"]);
    let big = c.submit(["-J", "big", "-c", "2", "-t", "5", "--wrap", "true"]);
    c.wait_state(run, JobState::Running, secs(30));
    c.cmd_ok("gscancel", [cancelled.to_string()]);
    c.wait_state(cancelled, JobState::Cancelled, secs(30));
    let b = c.wait_job(big, secs(30), "a planned start", |j| {
        j.expected_start.is_some()
    });
    assert_eq!(b.reason, Reason::Resources, "{b:?}");

    // A job submitted held: not eligible, no nodes; a job waiting for resources: its
    // planned nodes.
    let show = c.cmd_ok("gscontrol", ["show", "job", &held.to_string()]);
    assert_eq!(field(&show, "EligibleTime"), Some("Unknown"), "{show}");
    assert_eq!(field(&show, "AccrueTime"), Some("Unknown"), "{show}");
    assert!(show.contains("\n   NodeList=\n"), "{show}");
    assert!(!show.contains("BatchHost="), "{show}");
    let show = c.cmd_ok("gscontrol", ["show", "job", &big.to_string()]);
    let node = &c.node_names()[0];
    assert!(
        show.contains(&format!("\n   NodeList= SchedNodeList={node}\n")),
        "{show}"
    );
    assert_ne!(field(&show, "EligibleTime"), Some("Unknown"), "{show}");

    // Cancelled while pending: the reason stays (squeue %r, Reason=).
    let q = c.cmd_ok(
        "gsqueue",
        [
            "-h",
            "-t",
            "all",
            "-o",
            "%i|%T|%r",
            "-j",
            &cancelled.to_string(),
        ],
    );
    assert_eq!(q, format!("{cancelled}|CANCELLED|JobHeldUser\n"));
    let show = c.cmd_ok("gscontrol", ["show", "job", &cancelled.to_string()]);
    assert_eq!(field(&show, "Reason"), Some("JobHeldUser"), "{show}");
    assert_eq!(field(&show, "NumTasks"), Some("N/A"), "{show}");
    assert!(show.contains("\n   NodeList=\n"), "{show}");

    // gsacct: the default window has neither the held job nor the one cancelled before it
    // was eligible; named, they are listed, without a batch step.
    let all = c.cmd_ok("gsacct", ["-X", "-n", "-P", "-o", "JobID"]);
    assert_eq!(lines(&all), vec![run.to_string(), big.to_string()], "{all}");
    let uid = c.job(cancelled).cancelled_by.expect("cancelled by someone");
    let named = c.cmd_ok(
        "gsacct",
        [
            "-n",
            "-P",
            "-o",
            "JobID,State,Start,AllocNodes,AllocTRES,NodeList,Eligible",
            "-j",
            &format!("{cancelled},{held}"),
        ],
    );
    assert_eq!(
        lines(&named),
        vec![
            format!("{cancelled}|CANCELLED by {uid}|None|0||None assigned|Unknown"),
            format!("{held}|PENDING|Unknown|0||None assigned|Unknown"),
        ],
        "{named}"
    );

    // gsqueue --start: the planned job first, N/A after; gsqueue -s: the batch step.
    let start = c.cmd_ok("gsqueue", ["--start", "-h", "-o", "%i %S"]);
    let order: Vec<&str> = start
        .lines()
        .map(|l| l.split(' ').next().unwrap_or(""))
        .collect();
    assert_eq!(order, vec![big.to_string(), held.to_string()], "{start}");
    assert!(
        start.lines().nth(1).is_some_and(|l| l.ends_with(" N/A")),
        "{start}"
    );
    let steps = c.cmd_ok("gsqueue", ["-s", "-h", "-o", "%i %j %N"]);
    assert_eq!(steps, format!("{run}.batch batch {node}\n"));

    // Released: eligible from then on, and in the window.
    c.cmd_ok("gscontrol", ["release", &held.to_string()]);
    let show = c.cmd_ok("gscontrol", ["show", "job", &held.to_string()]);
    let eligible = field(&show, "EligibleTime").unwrap_or("");
    assert!(eligible.contains('T') && eligible != "Unknown", "{show}");
    let all = c.cmd_ok("gsacct", ["-X", "-n", "-P", "-o", "JobID"]);
    assert!(lines(&all).contains(&held.to_string()), "{all}");
    c.cmd_ok(
        "gscancel",
        [run.to_string(), big.to_string(), held.to_string()],
    );
}

#[test]
fn first_job_id_only_raises_the_sequence() {
    let c = TestCluster::start(
        ClusterOpts::named("firstid")
            .nodes(1)
            .config_line("FirstJobId=70"),
    );
    let a = c.submit(["-H", "--wrap", "true"]);
    assert_eq!(a, 70);
    let cfg = c.cmd_ok("gscontrol", ["show", "config"]);
    assert!(
        cfg.lines().any(|l| l
            .split_once('=')
            .is_some_and(|(k, v)| k.trim() == "FirstJobId" && v.trim() == "70")),
        "{cfg}"
    );
    // At a restart the larger of FirstJobId and the stored sequence is next.
    let set_first = |v: u32| {
        let conf = std::fs::read_to_string(c.conf_path()).unwrap();
        let conf = conf
            .lines()
            .map(|l| {
                if l.starts_with("FirstJobId=") {
                    format!("FirstJobId={v}")
                } else {
                    l.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        std::fs::write(c.conf_path(), conf + "\n").unwrap();
        c.kill_ctld();
        c.start_ctld();
    };
    set_first(100);
    let b = c.submit(["-H", "--wrap", "true"]);
    assert_eq!(b, 100);
    set_first(50);
    let d = c.submit(["-H", "--wrap", "true"]);
    assert_eq!(d, 101);
    c.cmd_ok("gscancel", [a.to_string(), b.to_string(), d.to_string()]);
}
