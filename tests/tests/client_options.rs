//! sbatch options that real clients always pass: `--comment` (snakemake, submitit),
//! `--signal` (submitit `USR2@90`, Nextflow `B:USR2@30`), `-W/--wait` and `--test-only`.

use gsched_tests::{secs, stderr_lines, stdout, ClusterOpts, JobState, TestCluster};

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

#[test]
fn comment_shows_in_gsqueue_and_gscontrol() {
    let c = TestCluster::start(ClusterOpts::named("comment"));
    let id = c.submit(["--hold", "--comment=rule_a wildcards x", "--wrap", "true"]);
    let j = c.job(id);
    assert_eq!(j.spec.comment.as_deref(), Some("rule_a wildcards x"));
    let q = c.cmd_ok("gsqueue", ["-h", "-j", &id.to_string(), "-o", "%i|%k"]);
    assert_eq!(q, format!("{id}|rule_a wildcards x\n"));
    let q = c.cmd_ok("gsqueue", ["-h", "-j", &id.to_string(), "-O", "comment:30"]);
    assert_eq!(q.trim_end(), "rule_a wildcards x");
    let show = c.cmd_ok("gscontrol", ["show", "job", &id.to_string()]);
    assert!(
        show.contains("\n   Comment=rule_a wildcards x \n   StdErr="),
        "{show}"
    );
    // Without a comment: `(null)` in gsqueue, no Comment= line.
    let id2 = c.submit(["--hold", "--wrap", "true"]);
    let q = c.cmd_ok("gsqueue", ["-h", "-j", &id2.to_string(), "-o", "%k"]);
    assert_eq!(q, "(null)\n");
    let show = c.cmd_ok("gscontrol", ["show", "job", &id2.to_string()]);
    assert!(!show.contains("Comment="), "{show}");
    c.cmd_ok("gscancel", [id.to_string(), id2.to_string()]);
}

/// `-t 1` with `@55`: the warning is due 5 s after the start, far before the limit.
#[test]
fn signal_reaches_batch_shell_before_time_limit() {
    let c = TestCluster::start(ClusterOpts::named("warnsig").nodes(1));
    let script = "#!/bin/bash\n\
                  #SBATCH --signal=B:USR1@55\n\
                  trap 'echo got USR1' USR1\n\
                  echo started\n\
                  for i in $(seq 1 600); do sleep 0.2; done\n";
    c.write_script("warn.sh", script);
    let id = c.submit(["-t", "1", "-o", "warn-%j.out", "warn.sh"]);
    let out = format!("warn-{id}.out");
    c.wait_file_contains(&out, "started", secs(30));
    let j = c.job(id);
    let w = j.spec.warn_signal.expect("the spec keeps --signal");
    assert_eq!((w.signal, w.before_secs, w.batch_only), (10, 55, true));
    c.wait_file_contains(&out, "got USR1", secs(20));
    let now = now();
    let since_start = now - j.start_time.expect("running job has a start time");
    assert!(
        (4..=12).contains(&since_start),
        "USR1 arrived {since_start} s after the start; expected about 5 s"
    );
    // Sent once only.
    std::thread::sleep(secs(3));
    assert_eq!(c.read_work_file(&out).matches("got USR1").count(), 1);
    assert_eq!(c.job(id).state, JobState::Running);
    c.cmd_ok("gscancel", [id.to_string()]);
    c.wait_terminal(id, secs(30));
}

#[test]
fn bad_signal_is_refused_as_slurm() {
    let c = TestCluster::start(ClusterOpts::named("badsig"));
    let out = c.cmd("gsbatch", ["--signal=USR1@x", "--wrap", "true"]);
    assert_eq!(out.status.code(), Some(255), "{out:?}");
    assert_eq!(
        stderr_lines(&out, "gsbatch"),
        vec!["error: Invalid --signal specification"]
    );
    assert!(c.jobs().is_empty());
}

#[test]
fn wait_exits_with_the_job_exit_code() {
    let c = TestCluster::start(ClusterOpts::named("wait"));
    let out = c.cmd("gsbatch", ["--wait", "--wrap", "sleep 1; exit 3"]);
    let text = stdout(&out);
    assert!(text.starts_with("Submitted batch job "), "{out:?}");
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let id: u32 = text.trim().rsplit(' ').next().unwrap().parse().unwrap();
    assert_eq!(c.job(id).state, JobState::Failed);

    let out = c.cmd("gsbatch", ["-W", "--parsable", "--wrap", "true"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    // Killed by a signal: 1.
    let out = c.cmd("gsbatch", ["-W", "--wrap", "kill -9 $$"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
}

#[test]
fn test_only_reports_start_and_creates_no_job() {
    let c = TestCluster::start(ClusterOpts::named("testonly"));
    let out = c.cmd("gsbatch", ["--test-only", "-n", "2", "--wrap", "true"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    let lines = stderr_lines(&out, "gsbatch");
    assert_eq!(lines.len(), 1, "{out:?}");
    let line = &lines[0];
    let rest = line
        .strip_prefix("Job ")
        .unwrap_or_else(|| panic!("{line}"));
    let (id, rest) = rest.split_once(" to start at ").expect("start");
    let id: u32 = id.parse().expect("job id");
    let (when, rest) = rest.split_once(" using ").expect("using");
    assert_eq!(when.len(), "YYYY-MM-DDTHH:MM:SS".len(), "{line}");
    assert_eq!(&when[10..11], "T", "{line}");
    assert!(
        rest.starts_with("2 processors on nodes ") && rest.ends_with(" in partition debug"),
        "{line}"
    );
    assert!(c.jobs().is_empty(), "--test-only must not create a job");
    // The id was not used up.
    let real = c.submit(["--hold", "--wrap", "true"]);
    assert_eq!(real, id);

    // A job that can never run is refused like a submission.
    let out = c.cmd("gsbatch", ["--test-only", "-n", "100000", "--wrap", "true"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(
        stderr_lines(&out, "gsbatch"),
        vec!["error: allocation failure: More processors requested than permitted"]
    );
    c.cmd_ok("gscancel", [real.to_string()]);
}
