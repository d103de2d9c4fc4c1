//! The README's first command, `make cluster` (`scripts/local-cluster.sh up`), on the binaries
//! under test: it must start a controller and two node daemons, run `examples/hello.sh` to
//! COMPLETED and show its output; `status` must see the cluster and `down` must stop every
//! daemon. The cluster lives in a folder of its own (`GSCHED_LOCAL_DIR`) on free ports, so a
//! developer's own `.local-cluster/` is left alone.

use gsched_tests::{bins, ports, stderr, stdout, unique_marker};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("scripts/local-cluster.sh")
}

fn run(dir: &Path, port: u16, verb: &str) -> Output {
    Command::new("bash")
        .arg(script())
        .arg(verb)
        .env("GSCHED_LOCAL_DIR", dir)
        .env("GSCHED_LOCAL_BIN", bins::bin_dir())
        .env("GSCHED_LOCAL_PORT", port.to_string())
        .env_remove("GSCHED_CONF")
        .output()
        .expect("cannot run scripts/local-cluster.sh")
}

/// Pids of live processes whose command line mentions `needle`.
fn processes_mentioning(needle: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
            if String::from_utf8_lossy(&cmd).contains(needle) {
                out.push(pid);
            }
        }
    }
    out
}

/// Stops the cluster even when an assertion failed half-way.
struct Down<'a>(&'a Path, u16);

impl Drop for Down<'_> {
    fn drop(&mut self) {
        let _ = run(self.0, self.1, "down");
        let _ = std::fs::remove_dir_all(self.0);
    }
}

#[test]
fn make_cluster_runs_the_hello_job_and_stops_cleanly() {
    bins::require(&[
        "gsctld", "gsnoded", "gsstepd", "gsbatch", "gsqueue", "gsinfo",
    ]);
    let dir = std::env::temp_dir().join(unique_marker("gsched-local-cluster-"));
    let port = ports::free_port();
    let _down = Down(&dir, port);

    let up = run(&dir, port, "up");
    let (out, err) = (stdout(&up), stderr(&up));
    assert!(up.status.success(), "up failed:\n{out}\n{err}");
    let conf = dir.join("gsched.conf");
    assert!(
        out.contains(&format!("export GSCHED_CONF={}", conf.display())),
        "{out}"
    );
    // The hello job ran to the end on one of the two nodes, as the user running the script.
    assert!(out.contains("JobState=COMPLETED"), "{out}\n{err}");
    assert!(out.contains("Hello from job "), "{out}\n{err}");
    assert!(
        out.contains("Done after a 2 second nap. Bye!"),
        "{out}\n{err}"
    );
    assert!(
        out.contains("on node n1") || out.contains("on node n2"),
        "{out}"
    );

    // `up` again keeps the running daemons and runs the example once more.
    let pids_before = processes_mentioning(&conf.display().to_string());
    assert!(pids_before.len() >= 3, "daemons: {pids_before:?}");
    let again = run(&dir, port, "up");
    assert!(again.status.success(), "{}", stderr(&again));
    let pids_after = processes_mentioning(&conf.display().to_string());
    for p in &pids_before {
        assert!(
            pids_after.contains(p),
            "daemon {p} was restarted by a second up"
        );
    }

    let status = run(&dir, port, "status");
    let st = stdout(&status);
    assert!(status.status.success(), "{st}\n{}", stderr(&status));
    assert!(
        st.contains("n[1-2]") || (st.contains("n1") && st.contains("n2")),
        "{st}"
    );

    let down = run(&dir, port, "down");
    assert!(down.status.success(), "{}", stderr(&down));
    let left = processes_mentioning(&conf.display().to_string());
    assert!(left.is_empty(), "processes left after down: {left:?}");
}
