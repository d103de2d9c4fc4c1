//! Daemons killed with SIGKILL and started again: the controller loses no job (finished jobs
//! keep state and exit code, pending jobs still run, running jobs keep running and complete,
//! a job that ended meanwhile is reported), and a node daemon re-adopts its running jobs.

use gsched_tests::{secs, ClusterOpts, JobState, TestCluster};
use std::time::Duration;

const T: Duration = Duration::from_secs(30);

/// A job that prints `started`, waits until the file `gate` exists in the work directory,
/// then prints `finished`.
fn gated(gate: &str) -> String {
    format!("echo started; while [ ! -e {gate} ]; do sleep 0.05; done; echo finished")
}

fn open_gate(c: &TestCluster, gate: &str) {
    std::fs::write(c.work_file(gate), "").unwrap();
}

#[test]
fn controller_killed_and_restarted_loses_no_job() {
    // One node with 3 CPUs: r1 (1 CPU) and r2 (2 CPUs) fill it, so `pending` waits.
    let c = TestCluster::start(ClusterOpts::named("ctld-restart").nodes(1).cpus(3));

    let failed = c.submit(["--wrap", "exit 3"]);
    let done = c.submit(["-o", "done-%j.out", "--wrap", "echo done"]);
    let jf = c.wait_terminal(failed, T);
    let jd = c.wait_terminal(done, T);
    assert_eq!(jf.state, JobState::Failed, "{jf:?}");
    assert_eq!(jd.state, JobState::Completed, "{jd:?}");

    let r1 = c.submit(["-c", "1", "-o", "r1-%j.out", "--wrap", &gated("gate1")]);
    let r2 = c.submit(["-c", "2", "-o", "r2-%j.out", "--wrap", &gated("gate2")]);
    let jr1 = c.wait_state(r1, JobState::Running, T);
    let jr2 = c.wait_state(r2, JobState::Running, T);
    c.wait_file_contains(&format!("r1-{r1}.out"), "started", T);
    c.wait_file_contains(&format!("r2-{r2}.out"), "started", T);
    let pending = c.submit(["-c", "1", "-o", "p-%j.out", "--wrap", "echo pending-ran"]);
    let held = c.submit(["-H", "-o", "h-%j.out", "--wrap", "echo held-ran"]);
    assert_eq!(c.job(pending).state, JobState::Pending);
    assert_eq!(c.job(held).state, JobState::Pending);

    c.kill_ctld();
    // r2 ends while there is no controller to tell.
    open_gate(&c, "gate2");
    c.wait_file_contains(&format!("r2-{r2}.out"), "finished", T);
    c.start_ctld();

    // Finished jobs keep their state and exit code.
    let j = c.job(failed);
    assert_eq!(
        (j.state, j.exit_code, j.exit_signal),
        (JobState::Failed, 3, 0),
        "{j:?}"
    );
    assert_eq!(j.end_time, jf.end_time);
    let j = c.job(done);
    assert_eq!((j.state, j.exit_code), (JobState::Completed, 0), "{j:?}");
    // The running job still runs, on the same node, from the same start.
    let j = c.job(r1);
    assert_eq!(j.state, JobState::Running, "{j:?}");
    assert_eq!((j.start_time, &j.nodes), (jr1.start_time, &jr1.nodes));
    // The held job is still held.
    let j = c.job(held);
    assert!(j.state == JobState::Pending && j.held, "{j:?}");

    // The job that ended meanwhile is reported; its CPUs let `pending` run.
    let j = c.wait_terminal(r2, T);
    assert_eq!(j.state, JobState::Completed, "{j:?}");
    assert_eq!(j.start_time, jr2.start_time);
    let j = c.wait_terminal(pending, T);
    assert_eq!(j.state, JobState::Completed, "{j:?}");
    assert_eq!(
        c.read_work_file(&format!("p-{pending}.out")),
        "pending-ran\n"
    );
    assert_eq!(c.job(r1).state, JobState::Running);

    // The running job completes normally.
    open_gate(&c, "gate1");
    let j = c.wait_terminal(r1, T);
    assert_eq!(j.state, JobState::Completed, "{j:?}");
    assert_eq!(
        c.read_work_file(&format!("r1-{r1}.out")),
        "started\nfinished\n"
    );

    // The held job can still be released, and ids are never reused.
    c.cmd_ok("gscontrol", ["release", &held.to_string()]);
    let j = c.wait_terminal(held, T);
    assert_eq!(j.state, JobState::Completed, "{j:?}");
    let next = c.submit(["--wrap", "true"]);
    assert!(next > held, "id {next} after a restart must exceed {held}");
    assert_eq!(c.wait_terminal(next, T).state, JobState::Completed);

    // A second restart right away (no job running) also keeps everything.
    c.kill_ctld();
    c.start_ctld();
    for id in [failed, done, r1, r2, pending, held, next] {
        assert!(c.job(id).state.is_terminal(), "job {id}: {:?}", c.job(id));
    }
}

#[test]
fn node_daemon_killed_and_restarted_adopts_jobs() {
    let c = TestCluster::start(ClusterOpts::named("noded-restart").nodes(1).cpus(2));

    let a = c.submit(["-o", "a-%j.out", "--wrap", &gated("gate-a")]);
    let b = c.submit(["-o", "b-%j.out", "--wrap", &gated("gate-b")]);
    let ja = c.wait_state(a, JobState::Running, T);
    c.wait_state(b, JobState::Running, T);
    c.wait_file_contains(&format!("a-{a}.out"), "started", T);
    c.wait_file_contains(&format!("b-{b}.out"), "started", T);

    c.kill_noded(0);
    // The jobs outlive their node daemon: b even finishes meanwhile.
    open_gate(&c, "gate-b");
    c.wait_file_contains(&format!("b-{b}.out"), "finished", T);
    c.start_noded(0);

    // a was adopted: still running, same run.
    let j = c.job(a);
    assert_eq!(j.state, JobState::Running, "{j:?}");
    assert_eq!(j.start_time, ja.start_time);
    // b's end, which happened while no daemon watched, is reported.
    let j = c.wait_terminal(b, T);
    assert_eq!((j.state, j.exit_code), (JobState::Completed, 0), "{j:?}");
    assert_eq!(
        c.read_work_file(&format!("b-{b}.out")),
        "started\nfinished\n"
    );

    // a completes normally, output intact.
    open_gate(&c, "gate-a");
    let j = c.wait_terminal(a, T);
    assert_eq!((j.state, j.exit_code), (JobState::Completed, 0), "{j:?}");
    assert_eq!(
        c.read_work_file(&format!("a-{a}.out")),
        "started\nfinished\n"
    );

    // The node takes new work after the restart.
    let n = c.submit(["--wrap", "echo after-restart"]);
    let j = c.wait_terminal(n, secs(30));
    assert_eq!(j.state, JobState::Completed, "{j:?}");
}

/// Jobs whose options differ only in their names share one spec in the controller's memory,
/// which leaves the name and the submit line out; every answer carries each job's own (the
/// API record, `gscontrol show job`, `gsqueue %j`), also after `gscontrol update JobName=` and
/// after the controller was killed and started again.
#[test]
fn distinct_names_and_submit_lines_come_back_whole() {
    let c = TestCluster::start(ClusterOpts::named("names").nodes(1));
    let a = c.submit(["-H", "-J", "alpha", "--wrap", "true"]);
    let b = c.submit(["-H", "-J", "beta", "--wrap", "true"]);
    c.cmd_ok(
        "gscontrol",
        ["update", &format!("JobId={b}"), "JobName=gamma"],
    );
    let check = |c: &TestCluster| {
        for (id, name, given) in [(a, "alpha", "alpha"), (b, "gamma", "beta")] {
            let j = c.job(id);
            assert_eq!(
                (j.name.as_str(), j.spec.name.as_str()),
                (name, name),
                "{j:?}"
            );
            assert!(j.spec.submit_line.contains(&format!("-J {given}")), "{j:?}");
            let shown = c.cmd_ok("gscontrol", ["show", "job", &id.to_string()]);
            assert!(shown.contains(&format!("JobName={name}")), "{shown}");
            let line = shown
                .lines()
                .map(str::trim)
                .find(|l| l.starts_with("SubmitLine="))
                .unwrap_or_else(|| panic!("no SubmitLine= in {shown}"));
            assert!(line.contains(&format!("-J {given} --wrap true")), "{line}");
            let listed = c.cmd_ok("gsqueue", ["-h", "-j", &id.to_string(), "-o", "%j"]);
            assert_eq!(listed.trim(), name);
        }
    };
    check(&c);
    c.kill_ctld();
    c.start_ctld();
    check(&c);
}
