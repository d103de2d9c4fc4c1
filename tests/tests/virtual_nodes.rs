//! Virtual nodes (issue 12): one `gsnoded --virtual` process stands for 200 nodes of a real
//! gsctld; they register and heartbeat like real nodes, and the jobs the controller places
//! on them end with the right states without a process being forked: an array of 400 tasks
//! that "run" one second each completes, an exit code given through `GSCHED_VIRTUAL_EXIT`
//! makes a job FAILED, a three-node job completes on three nodes, a cancelled job is
//! CANCELLED, a suspended job's clock stops; gsrun is refused with a clear message; and
//! when the virtual gsnoded is killed, its running job starts again once the process is back.

use gsched_proto::node::NodeBaseState;
use gsched_tests::{bins, ports, secs, ClusterOpts, JobState, TestCluster};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

const NODES: usize = 200;

/// The virtual gsnoded, killed when dropped.
struct Virtual(Child);

impl Drop for Virtual {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_virtual(c: &TestCluster, log: &str) -> Virtual {
    let log = std::fs::File::create(c.dir().join("log").join(log)).unwrap();
    let child = Command::new(bins::bin("gsnoded"))
        .args(["-D", "--virtual", "-N", &format!("v[1-{NODES}]"), "-f"])
        .arg(c.conf_path())
        .env_clear()
        .envs(c.base_env())
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    Virtual(child)
}

fn idle_nodes(c: &TestCluster) -> usize {
    c.nodes()
        .iter()
        .filter(|n| n.name.starts_with('v') && !n.not_responding)
        .filter(|n| n.base == NodeBaseState::Idle)
        .count()
}

#[test]
fn virtual_nodes_register_and_run_jobs_without_processes() {
    let port = ports::free_port();
    let c = TestCluster::start(ClusterOpts::named("virtual").nodes(0).config_line(&format!(
        "NodeName=v[1-{NODES}] NodeAddr=127.0.0.1 Port={port} CPUs=4 RealMemory=4000 State=UNKNOWN"
    )));
    let mut virt = start_virtual(&c, "gsnoded-virtual.log");
    let t0 = Instant::now();
    c.wait_until(secs(60), "all virtual nodes registered and idle", || {
        idle_nodes(&c) == NODES
    });
    eprintln!("{NODES} virtual nodes registered in {:?}", t0.elapsed());
    let sinfo = c.cmd_ok("gsinfo", ["-h", "-o", "%D %T"]);
    assert_eq!(sinfo.trim(), format!("{NODES} idle"), "{sinfo}");

    let env = [("GSCHED_VIRTUAL_RUNTIME", "1")];
    let array = c.submit_env(["--array=0-399", "-c", "2", "--wrap", "true"], &env);
    let failed = c.submit_env(
        ["--wrap", "true"],
        &[
            ("GSCHED_VIRTUAL_RUNTIME", "1"),
            ("GSCHED_VIRTUAL_EXIT", "3"),
        ],
    );
    let wide = c.submit_env(["-N", "3", "--wrap", "true"], &env);
    let long = c.submit_env(["--wrap", "true"], &[("GSCHED_VIRTUAL_RUNTIME", "600")]);

    let done = c.wait_for(secs(90), "the 400 array tasks completed", || {
        let out = c.cmd_ok(
            "gsacct",
            ["-n", "-X", "-P", "-j", &array.to_string(), "-o", "State"],
        );
        let n = out.lines().filter(|l| *l == "COMPLETED").count();
        (n == 400).then_some(out)
    });
    assert_eq!(done.lines().count(), 400, "{done}");
    let f = c.wait_terminal(failed, secs(30));
    assert_eq!(f.state, JobState::Failed, "{f:?}");
    assert_eq!(f.exit_code, 3, "{f:?}");
    let w = c.wait_terminal(wide, secs(30));
    assert_eq!(w.state, JobState::Completed, "{w:?}");
    assert_eq!(w.nodes.len(), 3, "{w:?}");

    // Steps are refused with a reason.
    let out = c.cmd("gsrun", ["--jobid", &long.to_string(), "true"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("virtual nodes"), "{err}");

    // Suspend stops the clock of a job that would otherwise end in 3 s.
    let short = c.submit_env(["--wrap", "true"], &[("GSCHED_VIRTUAL_RUNTIME", "3")]);
    c.wait_state(short, JobState::Running, secs(20));
    c.cmd_ok("gscontrol", ["suspend", &short.to_string()]);
    std::thread::sleep(secs(5));
    let st = c.cmd_ok("gsqueue", ["-h", "-j", &short.to_string(), "-o", "%T"]);
    assert_eq!(
        st.trim(),
        "SUSPENDED",
        "the 3-second job ended while suspended"
    );
    c.cmd_ok("gscontrol", ["resume", &short.to_string()]);
    let s = c.wait_terminal(short, secs(30));
    assert_eq!(s.state, JobState::Completed, "{s:?}");

    // Killed and started again: the long job's run is gone with the process, so the
    // controller puts it back in the queue (as never started) and it starts anew.
    let first = c.wait_state(long, JobState::Running, secs(20));
    drop(virt);
    virt = start_virtual(&c, "gsnoded-virtual-2.log");
    c.wait_until(secs(60), "the long job started again", || {
        let j = c.job(long);
        j.state == JobState::Running && j.start_time != first.start_time
    });
    c.cmd_ok("gscancel", [long.to_string()]);
    let l = c.wait_terminal(long, secs(30));
    assert_eq!(l.state, JobState::Cancelled, "{l:?}");
    drop(virt);
}
