//! Live usage through the real daemons: the nodes sample every running job with each
//! heartbeat (its cgroup, else its processes from `/proc`) and their own memory and network
//! counters; gsctld keeps the samples; `gsstat` (sstat), `gscontrol show job`'s usage line,
//! `gscontrol show node`'s `FreeMem=` and the `jobs/usage` and `nodes/usage` API show them.
//!
//! The jobs hold 200 MiB in `tail` (which keeps a stream without newlines whole until its
//! end) and burn some CPU; the tests wait for the samples rather than for fixed times.

use gsched_proto::api::{
    paths, JobUsageQuery, JobUsageResponse, NodeUsageQuery, NodeUsageResponse,
};
use gsched_tests::cgroup_v1::{v1_missing, v1_roots, Subdir};
use gsched_tests::{secs, ClusterOpts, JobState, TestCluster};

/// A byte count as sstat and gscontrol print it (`204800K`, `200M`, `1.17G`, `210763776`).
fn bytes(v: &str) -> Option<u64> {
    let (num, mult) = match v.chars().last()? {
        'K' => (&v[..v.len() - 1], 1u64 << 10),
        'M' => (&v[..v.len() - 1], 1 << 20),
        'G' => (&v[..v.len() - 1], 1 << 30),
        'T' => (&v[..v.len() - 1], 1 << 40),
        _ => (v, 1),
    };
    Some((num.parse::<f64>().ok()? * mult as f64) as u64)
}

/// CPU time as sstat prints it (`MM:SS.mmm`, `HH:MM:SS`), seconds.
fn cpu_secs(v: &str) -> Option<f64> {
    let mut secs = 0.0;
    for part in v.split(':') {
        secs = secs * 60.0 + part.parse::<f64>().ok()?;
    }
    Some(secs)
}

/// The value of `key=` in a `gscontrol show` text.
fn field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.split_whitespace()
        .find_map(|w| w.strip_prefix(&format!("{key}=")))
}

const MIB_150: u64 = 150 << 20;

/// Holds 200 MiB in the batch script's `tail` and runs a step on every node that burns
/// CPU for a few seconds, then sleeps.
const SCRIPT: &str = "#!/bin/sh\n\
    { head -c 200M /dev/zero; sleep 300; } | tail > /dev/null &\n\
    gsrun -n2 -N2 sh -c 'timeout 3 sh -c \"while :; do :; done\"; exec sleep 300'\n";

#[test]
fn gsstat_and_gscontrol_show_a_running_jobs_usage() {
    let c = TestCluster::start(ClusterOpts::named("usage").nodes(2));
    let script = c.write_script("hog.sh", SCRIPT);
    let id = c.submit(["-N2", "-n2", "-o", "hog.out", script.to_str().unwrap()]);
    c.wait_state(id, JobState::Running, secs(20));
    let ids = id.to_string();

    // gsstat: both nodes report; the batch node holds the 200 MiB; CPU time was used.
    let line = c.wait_for(secs(30), "gsstat to show the job's memory and CPU", || {
        let out = c.cmd_ok(
            "gsstat",
            [
                "-j",
                &ids,
                "-P",
                "-n",
                "-o",
                "JobID,MaxRSS,MaxRSSNode,AveCPU,NTasks,Nodelist,MaxDiskRead",
            ],
        );
        let line = out.lines().next()?.to_string();
        let f: Vec<&str> = line.split('|').collect();
        (f.len() == 7 && bytes(f[1])? >= MIB_150 && cpu_secs(f[3])? > 0.0 && f[4] == "2")
            .then_some(line)
    });
    let f: Vec<&str> = line.split('|').collect();
    assert_eq!(f[0], ids, "{line}");
    let batch_node = c.job(id).nodes[0].clone();
    assert_eq!(f[2], batch_node, "{line}");
    assert_eq!(f[5], "n[1-2]", "{line}");
    // tail read the 200 MiB that head wrote into the pipe.
    assert!(bytes(f[6]).unwrap() >= MIB_150, "{line}");

    // The default fields, in columns with sstat's header; the steps under their own names.
    let out = c.cmd_ok("gsstat", ["-j", &ids]);
    let mut lines = out.lines();
    let header = lines.next().unwrap();
    assert!(
        header.starts_with("JobID         MaxVMSize  MaxVMSizeNode "),
        "{out}"
    );
    assert!(
        lines.nth(1).unwrap().starts_with(&format!("{id} ")),
        "{out}"
    );
    let out = c.cmd_ok(
        "gsstat",
        [
            "-j",
            &format!("{id}.batch,{id}.0"),
            "-p",
            "-n",
            "-o",
            "jobid,ntasks",
        ],
    );
    assert_eq!(out, format!("{id}.batch|2|\n{id}.0|2|\n"));
    let o = c.cmd("gsstat", ["-j", &format!("{id}.7"), "-n"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        format!("gsstat: error: StepId={id}.7 not found running.\n")
    );

    // gscontrol show job: the usage line of a running job.
    let show = c.cmd_ok("gscontrol", ["show", "job", &ids]);
    let rss = field(&show, "CurrentRSS").unwrap_or_else(|| panic!("{show}"));
    assert!(bytes(rss).unwrap() >= MIB_150, "{show}");
    assert!(field(&show, "PeakRSS").is_some(), "{show}");
    assert!(
        field(&show, "CPUUtil").is_some_and(|u| u.ends_with('%')),
        "{show}"
    );
    assert!(field(&show, "Processes").is_some(), "{show}");
    assert!(show.contains("\n   CurrentRSS="), "{show}");

    // The API: per node, in the job's node order, and summed.
    let u: JobUsageResponse = c
        .client()
        .post(
            paths::JOBS_USAGE,
            &JobUsageQuery {
                job_ids: vec![id],
                series: true,
            },
        )
        .unwrap();
    let j = &u.jobs[0];
    assert_eq!(j.error, None);
    assert_eq!(j.nodes.len(), 2);
    assert_eq!((j.nodes[0].node_index, j.nodes[1].node_index), (0, 1));
    assert!(j.total.max_rss_bytes.unwrap() >= MIB_150, "{j:?}");
    assert!(!j.nodes[0].series.is_empty());
    assert!(j.total.processes >= 3, "{j:?}");

    // The nodes: memory and network in each heartbeat, FreeMem in gscontrol, and the hour in
    // progress of the hourly aggregates.
    let show = c.cmd_ok("gscontrol", ["show", "node", "n1"]);
    let free = field(&show, "FreeMem").unwrap();
    assert!(free.parse::<u64>().is_ok(), "{show}");
    let n: NodeUsageResponse = c
        .client()
        .post(
            paths::NODES_USAGE,
            &NodeUsageQuery {
                nodes: vec!["n1".into()],
                series: true,
                hours: 24,
            },
        )
        .unwrap();
    assert_eq!(n.nodes.len(), 1);
    let latest = n.nodes[0].latest.expect("a load sample").load;
    assert!(latest.mem_total_mb.unwrap() > 0, "{latest:?}");
    assert!(latest.mem_used_mb.unwrap() <= latest.mem_total_mb.unwrap());
    assert!(latest.net_rx_bytes.is_some(), "{latest:?}");
    let hour = n.nodes[0].hours.last().expect("the hour in progress");
    assert!(hour.samples >= 1 && hour.mem_used_mb.is_some(), "{hour:?}");

    // Jobs that do not run: sstat's errors on stderr, exit status 0.
    let held = c.submit(["-H", "--wrap", "true"]);
    let o = c.cmd("gsstat", ["-j", &format!("{held},999999"), "-n"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        format!(
            "gsstat: error: No steps running for job {held}\n\
             gsstat: error: couldn't get steps for job 999999\n"
        )
    );
    assert!(o.stdout.is_empty());
    let o = c.cmd("gsstat", ["-n"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "gsstat: error: You didn't give me any jobs to stat.\n"
    );
    let o = c.cmd("gsstat", ["-j", &ids, "-o", "MaxBogus"]);
    assert_eq!(o.status.code(), Some(1));
    let o = c.cmd("gsstat", ["--bogus"]);
    assert_eq!(o.status.code(), Some(1));

    // Once the job ends its usage is gone, and gsstat says it does not run.
    c.cmd_ok("gscancel", [&ids]);
    c.wait_terminal(id, secs(30));
    let o = c.cmd("gsstat", ["-j", &ids]);
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        format!("gsstat: error: No steps running for job {id}\n")
    );
    let show = c.cmd_ok("gscontrol", ["show", "job", &ids]);
    assert!(!show.contains("CurrentRSS="), "{show}");
}

#[test]
fn with_cgroups_memory_is_the_jobs_cgroups() {
    if let Some(why) = v1_missing(&["memory", "cpuacct", "freezer"]) {
        eprintln!("{why}");
        return;
    }
    let sub = Subdir::new("usage", v1_roots());
    let c = TestCluster::start(
        ClusterOpts::named("cg-usage")
            .nodes(1)
            .cgroup_conf(&format!(
                "CgroupPlugin=cgroup/v1\nCgroupSubdir={}_%n\n",
                sub.name
            )),
    );
    let id = c.submit([
        "-o",
        "cg.out",
        "--wrap",
        "{ head -c 200M /dev/zero; sleep 300; } | tail > /dev/null",
    ]);
    c.wait_state(id, JobState::Running, secs(20));
    let ids = id.to_string();
    let line = c.wait_for(secs(30), "gsstat to show the cgroup's memory", || {
        let out = c.cmd_ok(
            "gsstat",
            ["-j", &ids, "-P", "-n", "-o", "JobID,MaxRSS,AveRSS,NTasks"],
        );
        let line = out.lines().next()?.to_string();
        let f: Vec<&str> = line.split('|').collect();
        (f.len() == 4 && bytes(f[1])? >= MIB_150).then_some(line)
    });
    assert!(line.ends_with("|1"), "{line}");
    // The cgroup's figure is what the job's memory.usage_in_bytes says.
    let cg = sub.job(&std::path::Path::new("/sys/fs/cgroup").join("memory"), id);
    let now: u64 = std::fs::read_to_string(cg.join("memory.usage_in_bytes"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(now >= MIB_150, "{now}");
    let show = c.cmd_ok("gscontrol", ["show", "job", &ids]);
    let rss = bytes(field(&show, "CurrentRSS").unwrap_or_else(|| panic!("{show}"))).unwrap();
    assert!(rss >= MIB_150, "{show}");
    c.cmd_ok("gscancel", [&ids]);
    c.wait_terminal(id, secs(30));
}
