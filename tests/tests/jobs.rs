//! Jobs end to end: submit → run → complete, output files and their patterns, the job's
//! environment, exit codes and signals (and `RequeueExit`), hold and release, and the default
//! layouts of gsqueue and gsinfo.

use gsched_proto::api::{paths, ErrorCode, JobFilter, JobQuery};
use gsched_proto::client::ClientError;
use gsched_tests::{secs, stdout, ClusterOpts, JobState, Reason, TestCluster};
use std::collections::HashMap;
use std::path::Path;

const T: std::time::Duration = std::time::Duration::from_secs(30);

#[test]
fn submit_run_complete_with_output() {
    let c = TestCluster::start(ClusterOpts::named("complete"));

    // The plain (non --parsable) answer is Slurm's, byte for byte.
    let out = c.cmd("gsbatch", ["--wrap", "echo hello from $SLURM_JOB_ID"]);
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    let id: u32 = text
        .strip_prefix("Submitted batch job ")
        .and_then(|s| s.strip_suffix('\n'))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("unexpected gsbatch output {text:?}"));
    assert!(out.stderr.is_empty(), "{out:?}");

    let job = c.wait_terminal(id, T);
    assert_eq!(job.state, JobState::Completed, "{job:?}");
    assert_eq!(job.exit_code_string(), "0:0");
    assert_eq!(job.name, "wrap");
    assert_eq!(job.user_name, c.user());
    assert_eq!(job.partition, "debug");
    assert_eq!(job.nodes.len(), 1);
    assert!(c.node_names().contains(&job.nodes[0]), "{:?}", job.nodes);
    assert!(job.start_time.is_some() && job.end_time.is_some());
    assert_eq!(
        c.read_work_file(&format!("slurm-{id}.out")),
        format!("hello from {id}\n")
    );

    // A script file: #SBATCH directives are read, arguments reach $1.., and ids grow.
    c.write_script(
        "job.sh",
        "#!/bin/bash\n#SBATCH -J scripted\n#SBATCH -o scripted-%j.out\n\necho \"args: $1 $2\"\n",
    );
    let id2 = c.submit(["job.sh", "one", "two"]);
    assert!(id2 > id, "ids must grow: {id} then {id2}");
    let job2 = c.wait_terminal(id2, T);
    assert_eq!(job2.state, JobState::Completed, "{job2:?}");
    assert_eq!(job2.name, "scripted");
    assert_eq!(
        c.read_work_file(&format!("scripted-{id2}.out")),
        "args: one two\n"
    );
}

#[test]
fn output_file_names_and_patterns() {
    let c = TestCluster::start(ClusterOpts::named("patterns"));
    let user = c.user().to_string();

    // Default: slurm-%j.out in the submit directory, stderr in the same file.
    let d = c.submit(["--wrap", "echo to-out; echo to-err >&2"]);
    // Every pattern token, with -e to a separate file.
    let p = c.submit([
        "-J",
        "pat",
        "-o",
        "out-%j-%x-%u-%N-%A-%a-%%.txt",
        "-e",
        "err-%j-%x.txt",
        "--wrap",
        "echo to-out; echo to-err >&2",
    ]);
    // Zero padding and a relative path in a subdirectory of the working directory.
    std::fs::create_dir_all(c.work_file("sub")).unwrap();
    let z = c.submit(["-o", "sub/pad-%8j.out", "--wrap", "echo padded"]);

    let jd = c.wait_terminal(d, T);
    assert_eq!(jd.state, JobState::Completed, "{jd:?}");
    assert_eq!(
        c.read_work_file(&format!("slurm-{d}.out")),
        "to-out\nto-err\n"
    );

    let jp = c.wait_terminal(p, T);
    assert_eq!(jp.state, JobState::Completed, "{jp:?}");
    let node = &jp.nodes[0];
    let out_name = format!("out-{p}-pat-{user}-{node}-{p}-4294967294-%.txt");
    assert_eq!(c.read_work_file(&out_name), "to-out\n");
    assert_eq!(c.read_work_file(&format!("err-{p}-pat.txt")), "to-err\n");
    assert!(
        !c.work_file(&format!("slurm-{p}.out")).exists(),
        "with -o no default file may be written"
    );

    let jz = c.wait_terminal(z, T);
    assert_eq!(jz.state, JobState::Completed, "{jz:?}");
    assert_eq!(c.read_work_file(&format!("sub/pad-{z:08}.out")), "padded\n");
}

/// `env` output of a job, as a map.
fn env_map(text: &str) -> HashMap<String, String> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn job_environment() {
    let c = TestCluster::start(ClusterOpts::named("environment"));
    let script = "#!/bin/sh\necho \"PWD_IS=$(pwd)\"\nenv\n";
    c.write_script("env.sh", script);
    let extra = [("GSCHED_TEST_VAR", "exported-value")];
    let all = c.submit_env(
        [
            "-J",
            "envtest",
            "-c",
            "2",
            "--mem=100",
            "--export=ALL",
            "-o",
            "env-all-%j.out",
            "env.sh",
        ],
        &extra,
    );
    let dflt = c.submit_env(["-o", "env-default-%j.out", "env.sh"], &extra);
    let none = c.submit_env(["--export=NONE", "-o", "env-none-%j.out", "env.sh"], &extra);

    let workdir = c.workdir().canonicalize().unwrap();
    let same_dir = |v: &str| Path::new(v).canonicalize().ok().as_deref() == Some(&workdir);

    let j = c.wait_terminal(all, T);
    assert_eq!(j.state, JobState::Completed, "{j:?}");
    let env = env_map(&c.read_work_file(&format!("env-all-{all}.out")));
    let get = |k: &str| {
        env.get(k)
            .cloned()
            .unwrap_or_else(|| panic!("{k} is not set in the job; env: {env:#?}"))
    };
    let node = j.nodes[0].clone();
    assert!(c.node_names().contains(&node), "{node}");
    assert_eq!(get("SLURM_JOB_ID"), all.to_string());
    assert_eq!(get("SLURM_JOB_NAME"), "envtest");
    assert!(
        same_dir(&get("SLURM_SUBMIT_DIR")),
        "{}",
        get("SLURM_SUBMIT_DIR")
    );
    assert!(same_dir(&get("PWD_IS")), "job cwd {}", get("PWD_IS"));
    assert_eq!(get("SLURM_JOB_NODELIST"), node);
    assert_eq!(get("SLURM_NNODES"), "1");
    assert_eq!(get("SLURM_CPUS_ON_NODE"), "2");
    assert_eq!(get("SLURM_MEM_PER_NODE"), "100");
    assert_eq!(get("SLURM_JOB_PARTITION"), "debug");
    assert_eq!(get("SLURM_CLUSTER_NAME"), c.opts().cluster_name);
    assert_eq!(get("SLURMD_NODENAME"), node);
    assert_eq!(get("GSCHED_TEST_VAR"), "exported-value");

    // --export=ALL is the default.
    let j = c.wait_terminal(dflt, T);
    assert_eq!(j.state, JobState::Completed, "{j:?}");
    let env = env_map(&c.read_work_file(&format!("env-default-{dflt}.out")));
    assert_eq!(
        env.get("GSCHED_TEST_VAR").map(String::as_str),
        Some("exported-value")
    );

    // --export=NONE: the submitter's variables stay behind, Slurm's are there.
    let j = c.wait_terminal(none, T);
    assert_eq!(j.state, JobState::Completed, "{j:?}");
    let env = env_map(&c.read_work_file(&format!("env-none-{none}.out")));
    assert_eq!(env.get("GSCHED_TEST_VAR"), None, "{env:#?}");
    assert_eq!(
        env.get("SLURM_JOB_ID").map(String::as_str),
        Some(none.to_string().as_str())
    );
}

#[test]
fn exit_codes_and_signals() {
    let c = TestCluster::start(ClusterOpts::named("exitcodes"));
    let ok = c.submit(["--wrap", "true"]);
    let three = c.submit(["--wrap", "exit 3"]);
    let killed = c.submit(["--wrap", "kill -9 $$"]);

    let cases = [
        (ok, JobState::Completed, 0, 0, "0:0"),
        (three, JobState::Failed, 3, 0, "3:0"),
        (killed, JobState::Failed, 0, 9, "0:9"),
    ];
    for (id, state, code, sig, text) in cases {
        let j = c.wait_terminal(id, T);
        assert_eq!(j.state, state, "job {id}: {j:?}");
        assert_eq!((j.exit_code, j.exit_signal), (code, sig), "job {id}: {j:?}");
        let show = c.cmd_ok("gscontrol", ["show", "job", &id.to_string()]);
        assert!(
            show.contains(&format!("JobState={} ", state.long()))
                || show.contains(&format!("JobState={}\n", state.long())),
            "job {id}: {show}"
        );
        assert!(
            show.contains(&format!("ExitCode={text}")),
            "job {id}: {show}"
        );
    }
    let j = c.job(three);
    assert_eq!(j.reason, Reason::NonZeroExitCode, "{j:?}");
    let j = c.job(killed);
    assert_eq!(j.reason, Reason::RaisedSignal, "{j:?}");
}

#[test]
fn hold_and_release() {
    // One CPU: a running job keeps the next one pending.
    let c = TestCluster::start(ClusterOpts::named("hold").nodes(1).cpus(1));

    // Submitted held.
    let h = c.submit(["-H", "-o", "h-%j.out", "--wrap", "echo held-ran"]);
    let j = c.job(h);
    assert_eq!(j.state, JobState::Pending);
    assert!(j.held, "{j:?}");
    assert_eq!(j.reason, Reason::JobHeldUser, "{j:?}");

    let blocker = c.submit(["--wrap", "sleep 300"]);
    c.wait_state(blocker, JobState::Running, T);
    let b = c.submit(["-o", "b-%j.out", "--wrap", "echo b-ran"]);
    assert_eq!(c.job(b).state, JobState::Pending);

    // gscontrol hold on a pending job.
    c.cmd_ok("gscontrol", ["hold", &b.to_string()]);
    let j = c.wait_job(b, T, "held", |j| j.held);
    assert_eq!(j.state, JobState::Pending);
    assert!(
        matches!(j.reason, Reason::JobHeldUser | Reason::JobHeldAdmin),
        "{j:?}"
    );

    // Free the CPU: a job submitted now runs, the held ones do not.
    c.cmd_ok("gscancel", [blocker.to_string()]);
    c.wait_state(blocker, JobState::Cancelled, T);
    let free = c.submit(["--wrap", "true"]);
    let jf = c.wait_terminal(free, T);
    assert_eq!(jf.state, JobState::Completed, "{jf:?}");
    assert_eq!(c.job(b).state, JobState::Pending);
    assert_eq!(c.job(h).state, JobState::Pending);

    // Release both.
    c.cmd_ok("gscontrol", ["release", &b.to_string()]);
    c.cmd_ok("gscontrol", ["release", &h.to_string()]);
    for (id, out, text) in [(b, "b", "b-ran\n"), (h, "h", "held-ran\n")] {
        let j = c.wait_terminal(id, T);
        assert_eq!(j.state, JobState::Completed, "{j:?}");
        assert!(!j.held);
        assert_eq!(c.read_work_file(&format!("{out}-{id}.out")), text);
    }
}

/// squeue's default `%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R`: columns right-justified to
/// their width and cut to it, the last one as is.
fn squeue_row(cols: [&str; 8]) -> String {
    let widths = [18, 9, 8, 8, 2, 10, 6];
    let mut out: Vec<String> = cols[..7]
        .iter()
        .zip(widths)
        .map(|(v, w)| {
            let v: String = v.chars().take(w).collect();
            format!("{v:>w$}")
        })
        .collect();
    out.push(cols[7].to_string());
    out.join(" ")
}

#[test]
fn gsqueue_and_gsinfo_default_layout() {
    let c = TestCluster::start(ClusterOpts::named("layout"));

    // gsinfo on an idle cluster.
    let info = c.cmd_ok("gsinfo", Vec::<String>::new());
    let lines: Vec<&str> = info.lines().collect();
    assert_eq!(
        lines,
        vec![
            "PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST",
            "debug*       up   infinite      2   idle n[1-2]",
        ],
        "gsinfo printed:\n{info}"
    );

    // gsqueue: empty queue, then a held job.
    let q = c.cmd_ok("gsqueue", Vec::<String>::new());
    let header =
        "             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)";
    assert_eq!(q, format!("{header}\n"), "gsqueue printed:\n{q}");
    assert_eq!(
        header,
        squeue_row([
            "JOBID",
            "PARTITION",
            "NAME",
            "USER",
            "ST",
            "TIME",
            "NODES",
            "NODELIST(REASON)"
        ])
    );

    let id = c.submit(["-H", "-J", "holdme", "--wrap", "true"]);
    let q = c.cmd_ok("gsqueue", Vec::<String>::new());
    let row = squeue_row([
        &id.to_string(),
        "debug",
        "holdme",
        c.user(),
        "PD",
        "0:00",
        "1",
        "(JobHeldUser)",
    ]);
    assert_eq!(q, format!("{header}\n{row}\n"), "gsqueue printed:\n{q}");
    let q = c.cmd_ok("gsqueue", ["-h"]);
    assert_eq!(q, format!("{row}\n"), "gsqueue -h printed:\n{q}");

    // What gsqueue asks for: only the named fields come back (JobQuery::fields), and a
    // name that is no field of a job is refused with what to do.
    let query = |fields: &[&str]| {
        c.client().post::<_, serde_json::Value>(
            paths::JOBS_QUERY,
            &JobQuery {
                filter: JobFilter::default(),
                brief: true,
                fields: fields.iter().map(|f| f.to_string()).collect(),
            },
        )
    };
    let v = query(&["job_id", "state", "spec.account"]).unwrap();
    assert_eq!(
        v["jobs"],
        serde_json::json!([{"job_id": id, "state": "PENDING", "spec": {"account": c.user()}}]),
        "{v}"
    );
    let v = query(&["spec"]).unwrap();
    assert!(v["jobs"][0]["spec"]["work_dir"].is_string(), "{v}");
    assert!(v["jobs"][0]["spec"].get("script").is_none(), "brief: {v}");
    match query(&["job_id", "jobid"]) {
        Err(ClientError::Api(e)) => {
            assert_eq!(e.code, ErrorCode::BadRequest, "{e:?}");
            assert!(
                e.message.contains("\"jobid\"") && e.message.contains("openapi"),
                "{e:?}"
            );
        }
        other => panic!("an unknown field gave {other:?}"),
    }

    c.cmd_ok("gscancel", [id.to_string()]);
    let j = c.wait_terminal(id, secs(10));
    assert_eq!(j.state, JobState::Cancelled);
    let q = c.cmd_ok("gsqueue", ["-h"]);
    assert_eq!(q, "", "a cancelled job leaves the default gsqueue listing");
}

/// The node daemons run the static gsstepd that installs and the local cluster use
/// (scripts/build-static.sh; `make test` builds it): every job starts one, so it starts
/// without the dynamic loader and glibc.
#[test]
fn node_daemons_run_the_static_gsstepd() {
    let stepd = gsched_tests::bins::stepd();
    assert!(
        stepd
            .to_string_lossy()
            .contains(gsched_tests::bins::STATIC_TARGET),
        "the node daemons would run {}: build the static gsstepd first with scripts/build-static.sh (make test does)",
        stepd.display()
    );
    assert_eq!(
        gsched_tests::bins::has_program_interpreter(&stepd),
        Some(false)
    );
    let c = TestCluster::start(ClusterOpts::named("static-stepd").nodes(1));
    let id = c.submit(["--wrap", "sleep 30", "-o", "/dev/null"]);
    c.wait_state(id, JobState::Running, secs(30));
    let dir = c.dir().to_string_lossy().into_owned();
    let deadline = std::time::Instant::now() + secs(20);
    let mut found = Vec::new();
    while found.is_empty() && std::time::Instant::now() < deadline {
        found = stepd_processes(&dir);
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(
        found,
        vec![(stepd, false)],
        "gsstepd processes of the cluster"
    );
    c.cmd_ok("gscancel", [id.to_string()]);
}

/// The clusters' commands find the static gsbatch first, as an install does (it starts once
/// per submitted job): a submission through it works, and it names no program interpreter.
#[test]
fn commands_submit_with_the_static_gsbatch() {
    let c = TestCluster::start(ClusterOpts::named("static-gsbatch").nodes(1));
    let out = std::process::Command::new("sh")
        .args(["-c", "command -v gsbatch"])
        .env_clear()
        .envs(c.base_env())
        .output()
        .unwrap();
    let found = std::path::PathBuf::from(stdout(&out).trim());
    assert!(
        found.starts_with(
            gsched_tests::bins::static_commands_dir().expect(
                "no static gsbatch: build it with scripts/build-static.sh (make test does)"
            )
        ),
        "gsbatch on the clusters' PATH is {}",
        found.display()
    );
    let real = std::fs::canonicalize(&found).unwrap();
    assert_eq!(
        gsched_tests::bins::has_program_interpreter(&real),
        Some(false),
        "{} is not static",
        real.display()
    );
    let id = c.submit(["--wrap", "true", "-o", "/dev/null"]);
    assert_eq!(c.wait_terminal(id, secs(30)).state, JobState::Completed);
}

/// The gsstepd processes whose command line names `dir`: their executable, and whether
/// they map the C library or the dynamic loader.
fn stepd_processes(dir: &str) -> Vec<(std::path::PathBuf, bool)> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let p = e.path();
        let Ok(exe) = std::fs::read_link(p.join("exe")) else {
            continue;
        };
        let cmdline = std::fs::read(p.join("cmdline")).unwrap_or_default();
        if exe.file_name().is_some_and(|n| n == "gsstepd")
            && String::from_utf8_lossy(&cmdline).contains(dir)
        {
            let maps = std::fs::read_to_string(p.join("maps")).unwrap_or_default();
            found.push((exe, maps.contains("libc.so") || maps.contains("ld-linux")));
        }
    }
    found
}

#[test]
fn requeue_exit_runs_a_job_again_with_its_restart_count() {
    let c = TestCluster::start(
        ClusterOpts::named("requeue-exit")
            .nodes(1)
            .config_line("RequeueExit=3,5-6"),
    );
    // Exits 3 on its first run, 0 on the second.
    let again = c.submit([
        "--wrap",
        "echo run ${SLURM_RESTART_COUNT:-0}; test ${SLURM_RESTART_COUNT:-0} -ge 1 || exit 3",
    ]);
    let failed = c.submit(["--wrap", "exit 4"]);
    let j = c.wait_terminal(again, secs(30));
    assert_eq!(
        (j.state, j.restarts, j.exit_code),
        (JobState::Completed, 1, 0)
    );
    let out = std::fs::read_to_string(c.workdir().join(format!("slurm-{again}.out"))).unwrap();
    assert_eq!(
        out, "run 1\n",
        "the second run's output replaces the first's"
    );
    let j = c.wait_terminal(failed, secs(30));
    assert_eq!((j.state, j.restarts, j.exit_code), (JobState::Failed, 0, 4));
}

/// `RequeueExitHold`: a job ending with a listed code goes back to the queue held in
/// SPECIAL_EXIT (`SE`, its exit code kept), which `gsqueue -t SE` selects and `-t PD` does
/// not; released, it runs again. `scontrol requeuehold` holds a requeued job ("job requeued
/// in held state", or SPECIAL_EXIT with `State=SpecialExit`), and `requeue Incomplete`
/// leaves a finished job alone.
#[test]
fn requeue_exit_hold_and_requeuehold() {
    let c = TestCluster::start(
        ClusterOpts::named("requeue-hold")
            .nodes(1)
            .config_line("RequeueExitHold=42")
            .config_line("JobRequeue=1"),
    );
    let special = c.submit(["--wrap", "test ${SLURM_RESTART_COUNT:-0} -ge 1 || exit 42"]);
    let se = c.wait_job(special, secs(30), "SPECIAL_EXIT", |j| j.special_exit);
    assert_eq!(
        (
            se.state,
            se.held,
            se.exit_code,
            se.restarts,
            se.reason.as_str()
        ),
        (JobState::Pending, true, 42, 1, "JobHeldUser")
    );
    let id = special.to_string();
    let shown = |args: &[&str]| c.cmd_ok("gsqueue", args).trim().to_string();
    assert_eq!(
        shown(&["-h", "-j", &id, "-o", "%t %T %r"]),
        "SE SPECIAL_EXIT JobHeldUser"
    );
    assert_eq!(shown(&["-h", "-t", "SE", "-o", "%i"]), id);
    assert_eq!(shown(&["-h", "-t", "PD", "-o", "%i"]), "");
    let show = c.cmd_ok("gscontrol", ["show", "job", &id]);
    assert!(show.contains("JobState=SPECIAL_EXIT"), "{show}");
    assert!(show.contains("ExitCode=42:0"), "{show}");
    c.cmd_ok("gscontrol", ["release", &id]);
    let j = c.wait_terminal(special, secs(30));
    assert_eq!(
        (j.state, j.exit_code, j.special_exit),
        (JobState::Completed, 0, false)
    );

    // requeuehold of a running job: held once its run is over.
    let running = c.submit(["--wrap", "sleep 300"]);
    c.wait_state(running, JobState::Running, secs(30));
    c.cmd_ok("gscontrol", ["requeuehold", &running.to_string()]);
    let held = c.wait_job(running, secs(30), "held", |j| {
        j.state == JobState::Pending && j.held
    });
    assert_eq!(held.reason.as_str(), "job requeued in held state");
    assert!(!held.special_exit);
    c.cmd_ok("gscancel", [running.to_string()]);

    // requeue Incomplete leaves a finished job; requeuehold State=SE requeues it in SE.
    let done = c.submit(["--wrap", "exit 3"]);
    c.wait_terminal(done, secs(30));
    c.cmd_ok("gscontrol", ["requeue", "Incomplete", &done.to_string()]);
    assert_eq!(c.job(done).state, JobState::Failed);
    c.cmd_ok(
        "gscontrol",
        ["requeuehold", "State=SpecialExit", &done.to_string()],
    );
    let j = c.job(done);
    assert_eq!(
        (j.state, j.special_exit, j.exit_code, j.reason.as_str()),
        (
            JobState::Pending,
            true,
            3,
            "job requeued in special exit state"
        )
    );
}

/// `sh -c "ulimit ...; exec gsbatch ARGS"` in the cluster's environment: the job's id.
fn submit_with_limits(c: &TestCluster, ulimits: &str, args: &str) -> u32 {
    let out = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(format!("{ulimits}; exec gsbatch --parsable {args}"))
        .env_clear()
        .envs(c.base_env())
        .current_dir(c.workdir())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

#[test]
fn resource_limits_propagate_from_the_submission() {
    let c = TestCluster::start(
        ClusterOpts::named("rlimits")
            .nodes(1)
            .config_line("PropagateResourceLimitsExcept=STACK"),
    );
    let shown = "--wrap 'echo $(ulimit -S -n) $(ulimit -S -s) $(env | grep -c ^SLURM_RLIMIT_)'";
    let output = |id: u32| {
        c.wait_terminal(id, secs(30));
        std::fs::read_to_string(c.workdir().join(format!("slurm-{id}.out"))).unwrap()
    };
    // The node's own stack limit (gsnoded started from this process).
    let node = std::process::Command::new("/bin/sh")
        .args(["-c", "ulimit -S -s"])
        .output()
        .unwrap();
    let node_stack = String::from_utf8_lossy(&node.stdout).trim().to_string();
    assert_ne!(node_stack, "1000");
    // NOFILE propagates, STACK does not (the node's stays), and the job sees no
    // SLURM_RLIMIT_* variable.
    let lowered = "ulimit -S -n 100; ulimit -S -s 1000";
    let id = submit_with_limits(&c, lowered, shown);
    assert_eq!(output(id), format!("100 {node_stack} 0\n"));
    // --propagate names what propagates, whatever the config says.
    let id = submit_with_limits(&c, lowered, &format!("--propagate=STACK {shown}"));
    let n = output(id);
    assert!(n.ends_with(" 1000 0\n") && !n.starts_with("100 "), "{n}");
}
