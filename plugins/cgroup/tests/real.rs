//! The plugins against the kernel's own cgroup trees (as root): v1 under /sys/fs/cgroup and
//! v2 at the cgroup2 mount (`/sys/fs/cgroup/unified` on this hybrid host, or
//! `/sys/fs/cgroup` on a pure v2 one). A process tree that forks in the background is moved
//! into a job's step, then killed as a whole; freezing stops it. Each test skips, saying
//! why, where it is not root or the tree is absent.

use gsched_cgroup::{CgroupHandle, Cgroups, JobLimits, Version, Wanted};
use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

fn v2_mount() -> Option<std::path::PathBuf> {
    ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"]
        .iter()
        .map(std::path::PathBuf::from)
        .find(|p| p.join("cgroup.controllers").is_file() && p.join("cgroup.procs").is_file())
}

fn subdir(tag: &str) -> String {
    format!("gsched-test-{tag}-{}", std::process::id())
}

/// A shell that waits for a line on stdin, then starts two background sleeps (one of them
/// double-forked, re-parented away from the shell) and waits.
fn spawn_tree() -> Child {
    Command::new("sh")
        .arg("-c")
        .arg("read go; (sleep 300 &) ; sleep 300 & wait")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("sh")
}

fn join_and_go(child: &mut Child, procs: &[std::path::PathBuf]) {
    for f in procs {
        std::fs::write(f, child.id().to_string())
            .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
    }
    writeln!(child.stdin.as_mut().unwrap(), "go").unwrap();
}

fn wait_pids(cg: &dyn Cgroups, job: u32, n: usize) -> Vec<i32> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let p = cg.pids(job);
        if p.len() >= n || Instant::now() > deadline {
            return p;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => !s
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z'),
        Err(_) => false,
    }
}

fn exercise(cg: &dyn Cgroups, job: u32) {
    cg.prepare(&Wanted::default()).unwrap();
    cg.create_job(job, &JobLimits::default()).unwrap();
    let procs = cg.create_step(job, "batch").unwrap();
    let mut child = spawn_tree();
    join_and_go(&mut child, &procs);
    // sh, the subshell's sleep, and the other sleep.
    let pids = wait_pids(cg, job, 3);
    assert!(pids.len() >= 3, "{pids:?}");

    // Frozen: every task stops (state D or T in /proc on v1, "frozen 1" on v2).
    cg.freeze(job, true).unwrap();
    cg.freeze(job, false).unwrap();

    let killed = cg.kill(job, Duration::from_secs(10)).unwrap();
    assert!(killed >= 1, "{killed}");
    let _ = child.wait();
    let deadline = Instant::now() + Duration::from_secs(5);
    while pids.iter().any(|&p| alive(p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left: Vec<&i32> = pids.iter().filter(|&&p| alive(p)).collect();
    assert!(left.is_empty(), "survivors: {left:?}");
    assert!(cg.pids(job).is_empty());
    assert_eq!(cg.jobs(), vec![job]);
    cg.remove_job(job).unwrap();
    assert!(cg.jobs().is_empty());
}

#[test]
fn v1_kills_a_double_forked_tree() {
    if !is_root() || !std::path::Path::new("/sys/fs/cgroup/freezer/cgroup.procs").is_file() {
        eprintln!("skipping: needs root and cgroup v1 (freezer) at /sys/fs/cgroup");
        return;
    }
    let h = CgroupHandle {
        version: Version::V1,
        mount: "/sys/fs/cgroup".into(),
        subdir: subdir("v1"),
    };
    exercise(&*h.open(), 11);
    for c in gsched_cgroup::v1::CONTROLLERS {
        let _ = std::fs::remove_dir(format!("/sys/fs/cgroup/{c}/{}", h.subdir));
    }
}

#[test]
fn v2_kills_a_double_forked_tree() {
    let Some(mount) = v2_mount().filter(|_| is_root()) else {
        eprintln!("skipping: needs root and a cgroup2 mount");
        return;
    };
    let h = CgroupHandle {
        version: Version::V2,
        mount: mount.clone(),
        subdir: subdir("v2"),
    };
    exercise(&*h.open(), 12);
    let _ = std::fs::remove_dir(mount.join(&h.subdir));
}

#[test]
fn v1_devices_deny_rule_applies() {
    if !is_root() || !std::path::Path::new("/sys/fs/cgroup/devices/cgroup.procs").is_file() {
        eprintln!("skipping: needs root and the v1 devices controller");
        return;
    }
    let h = CgroupHandle {
        version: Version::V1,
        mount: "/sys/fs/cgroup".into(),
        subdir: subdir("dev"),
    };
    let cg = h.open();
    cg.prepare(&Wanted {
        devices: true,
        ..Wanted::default()
    })
    .unwrap();
    // /dev/null is c 1:3: the job may not open it, /dev/zero (c 1:5) stays usable.
    let text = run_with_dev_null_denied(
        &*cg,
        13,
        "read go; if head -c1 /dev/zero >/dev/null 2>&1; then echo zero-ok; fi; if cat /dev/null 2>/dev/null; then echo null-ok; else echo null-denied; fi",
    );
    for c in gsched_cgroup::v1::CONTROLLERS {
        let _ = std::fs::remove_dir(format!("/sys/fs/cgroup/{c}/{}", h.subdir));
    }
    assert!(text.contains("null-denied"), "{text}");
}

/// The v2 device filter (an eBPF program) as the kernel runs it: /dev/null (c 1:3) denied,
/// /dev/zero (c 1:5) usable, in the job's step below the cgroup that holds the program. (The
/// script reads /dev/zero through a pipe: a redirection to /dev/null would be denied too.)
#[test]
fn v2_device_filter_applies() {
    let Some(mount) = v2_mount().filter(|_| is_root()) else {
        eprintln!("skipping: needs root and a cgroup2 mount");
        return;
    };
    let h = CgroupHandle {
        version: Version::V2,
        mount: mount.clone(),
        subdir: subdir("v2dev"),
    };
    let cg = h.open();
    cg.prepare(&Wanted::default()).unwrap();
    let text = run_with_dev_null_denied(
        &*cg,
        14,
        "read go; if [ \"$(head -c1 /dev/zero | wc -c)\" = 1 ]; then echo zero-ok; fi; if cat /dev/null 2>/dev/null; then echo null-ok; else echo null-denied; fi",
    );
    let _ = std::fs::remove_dir(mount.join(&h.subdir));
    assert!(
        text.contains("zero-ok") && text.contains("null-denied"),
        "{text}"
    );
}

#[test]
fn v1_pids_limit_stops_forks() {
    if !is_root() || !std::path::Path::new("/sys/fs/cgroup/pids/cgroup.procs").is_file() {
        eprintln!("skipping: needs root and the v1 pids controller");
        return;
    }
    let h = CgroupHandle {
        version: Version::V1,
        mount: "/sys/fs/cgroup".into(),
        subdir: subdir("pids"),
    };
    let cg = h.open();
    cg.prepare(&Wanted {
        pids: true,
        ..Wanted::default()
    })
    .unwrap();
    let limits = JobLimits {
        pids_max: Some(3),
        ..JobLimits::default()
    };
    cg.create_job(14, &limits).unwrap();
    let procs = cg.create_step(14, "batch").unwrap();
    // The shell plus two sleeps fill the limit; the third fork fails.
    let mut child = Command::new("sh")
        .arg("-c")
        .arg("read go; sleep 30 >/dev/null & sleep 30 >/dev/null & if sleep 0; then echo forked; else echo refused; fi")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    join_and_go(&mut child, &procs);
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    // The kernel counted the refused fork (the shell may die of it: dash treats a failed
    // fork as fatal).
    let events: String = ["job_14", "job_14/step_batch"]
        .iter()
        .map(|d| {
            std::fs::read_to_string(format!("/sys/fs/cgroup/pids/{}/{d}/pids.events", h.subdir))
                .unwrap_or_default()
        })
        .collect();
    cg.kill(14, Duration::from_secs(5)).unwrap();
    cg.remove_job(14).unwrap();
    for c in gsched_cgroup::v1::CONTROLLERS {
        let _ = std::fs::remove_dir(format!("/sys/fs/cgroup/{c}/{}", h.subdir));
    }
    assert!(!text.contains("forked"), "{text}");
    let refused: u64 = events
        .lines()
        .filter_map(|l| l.strip_prefix("max "))
        .filter_map(|v| v.trim().parse::<u64>().ok())
        .sum();
    assert!(refused >= 1, "pids.events: {events:?}");
}

/// Runs `script` in the batch step of job `job` of `cg`, made with /dev/null (c 1:3) denied;
/// returns what it printed, after the job's cgroup is gone.
fn run_with_dev_null_denied(cg: &dyn gsched_cgroup::Cgroups, job: u32, script: &str) -> String {
    let limits = JobLimits {
        denied_devices: Some(vec![gsched_cgroup::DeviceRule {
            kind: 'c',
            major: 1,
            minor: Some(3),
            access: "rwm".into(),
        }]),
        ..JobLimits::default()
    };
    cg.create_job(job, &limits).unwrap();
    let procs = cg.create_step(job, "batch").unwrap();
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    join_and_go(&mut child, &procs);
    let out = child.wait_with_output().unwrap();
    cg.kill(job, Duration::from_secs(5)).unwrap();
    cg.remove_job(job).unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}
