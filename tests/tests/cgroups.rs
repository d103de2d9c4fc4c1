//! Enforcement through cgroups, driven through the real daemons: a `cgroup.conf` beside the
//! test cluster's gsched.conf makes gsnoded put each job in `…/<CgroupSubdir>/job_<id>/
//! step_batch`. As root on a host with cgroup v1 (memory, cpuset, freezer) these tests check
//! that a job over `--mem` is OOM-killed and ends OUT_OF_MEMORY (0:125, Slurm's stderr
//! line) while its neighbour runs on, that a 1-core job sees only its core, that a
//! double-forked daemon dies with its job on cancel, that usage reaches gsacct, that a
//! restarted gsnoded still kills its jobs and removes stale cgroups, and that v2 works
//! against a cgroup2 mount named by `CgroupMountpoint=`. Each test says why it skips where
//! the kernel or the privileges are missing.

use gsched_tests::cgroup_v1::{v1_missing, v1_roots, Subdir, V1_ROOT};
use gsched_tests::{is_root, secs, ClusterOpts, JobState, TestCluster};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

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

fn wait_dead(pid: i32, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while alive(pid) {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    true
}

/// A job script that starts a daemon escaping its session by a double fork (it records its
/// pid in `name`), then waits.
fn daemonizing_script(name: &str) -> String {
    format!(
        "(setsid sh -c 'echo $$ > {name}; exec sleep 1000' </dev/null >/dev/null 2>&1 &) ; sleep 1000"
    )
}

#[test]
fn oom_job_ends_out_of_memory_while_its_neighbour_runs_on() {
    if let Some(why) = v1_missing(&["memory", "cpuset", "freezer"]) {
        eprintln!("{why}");
        return;
    }
    let sub = Subdir::new("oom", v1_roots());
    let c = TestCluster::start(ClusterOpts::named("cg-oom").nodes(1).cgroup_conf(&format!(
        "CgroupPlugin=cgroup/v1\nConstrainRAMSpace=yes\nConstrainCores=yes\nCgroupSubdir={}_%n\n",
        sub.name
    )));
    let neighbour = c.submit([
        "-c1",
        "--mem=50M",
        "-o",
        "neighbour.out",
        "--wrap",
        "sleep 4; echo still-alive",
    ]);
    c.wait_state(neighbour, JobState::Running, secs(20));
    // `tail` keeps the last ten lines of a stream without newlines: all 400 MiB of it.
    let hog = c.submit([
        "-c1",
        "--mem=50M",
        "-o",
        "hog.out",
        "-e",
        "hog.err",
        "--wrap",
        "head -c 400M /dev/zero | tail; echo survived",
    ]);
    let j = c.wait_terminal(hog, secs(60));
    assert_eq!(j.state, JobState::OutOfMemory, "{j:?}");
    assert_eq!(j.exit_code_string(), "0:125");
    let err = c.read_work_file("hog.err");
    assert!(
        err.contains(&format!(
            "gsstepd: error: Detected 1 oom_kill event in StepId={hog}.batch. Some of the step tasks have been OOM Killed."
        )) || err.contains("oom_kill events in StepId="),
        "{err}"
    );
    let n = c.wait_terminal(neighbour, secs(30));
    assert_eq!(n.state, JobState::Completed, "{n:?}");
    assert_eq!(c.read_work_file("neighbour.out").trim(), "still-alive");

    // gsacct and gscontrol show it; the peak reached the limit.
    let acct = c.cmd_ok(
        "gsacct",
        [
            "-j",
            &hog.to_string(),
            "-P",
            "-n",
            "-o",
            "JobID,State,ExitCode,MaxRSS",
        ],
    );
    let lines: Vec<&str> = acct.lines().collect();
    assert_eq!(lines[0], format!("{hog}|OUT_OF_MEMORY|0:125|"), "{acct}");
    assert!(
        lines[1].starts_with(&format!("{hog}.batch|OUT_OF_MEMORY|0:125|")),
        "{acct}"
    );
    let rss = lines[1].rsplit('|').next().unwrap();
    assert!(rss.ends_with('K') || rss.ends_with('M'), "{acct}");
    let show = c.cmd_ok("gscontrol", ["show", "job", &hog.to_string()]);
    assert!(
        show.contains("JobState=OUT_OF_MEMORY Reason=OutOfMemory"),
        "{show}"
    );
    assert!(show.contains("ExitCode=0:125"), "{show}");
    assert!(show.contains("MaxRSS="), "{show}");
    // The job's cgroups are gone.
    for r in v1_roots() {
        let d = sub.job(&r, hog);
        assert!(!d.exists(), "{} still exists", d.display());
    }
}

#[test]
fn a_one_core_job_sees_only_its_core_and_usage_is_recorded() {
    if let Some(why) = v1_missing(&["cpuset", "cpuacct", "freezer"]) {
        eprintln!("{why}");
        return;
    }
    let sub = Subdir::new("cpuset", v1_roots());
    let c = TestCluster::start(
        ClusterOpts::named("cg-cpuset")
            .nodes(1)
            .cpus(2)
            .cgroup_conf(&format!(
                "CgroupPlugin=autodetect\nConstrainCores=yes\nCgroupSubdir={}_%n\n",
                sub.name
            )),
    );
    let script = "grep Cpus_allowed_list /proc/self/status | cut -f2; nproc; \
                  timeout 3 sh -c 'while :; do :; done'; true";
    let a = c.submit(["-c1", "-o", "a.out", "--wrap", script]);
    let b = c.submit(["-c1", "-o", "b.out", "--wrap", script]);
    let ja = c.wait_terminal(a, secs(30));
    let jb = c.wait_terminal(b, secs(30));
    assert_eq!(ja.state, JobState::Completed, "{ja:?}");
    assert_eq!(jb.state, JobState::Completed, "{jb:?}");
    let (oa, ob) = (c.read_work_file("a.out"), c.read_work_file("b.out"));
    let la: Vec<&str> = oa.lines().collect();
    let lb: Vec<&str> = ob.lines().collect();
    assert_eq!(la.get(1), Some(&"1"), "nproc in job a: {oa}");
    assert_eq!(lb.get(1), Some(&"1"), "nproc in job b: {ob}");
    assert!(la[0].parse::<u32>().is_ok(), "one core: {oa}");
    // They ran at the same time on a 2-CPU node: different cores.
    assert_ne!(la[0], lb[0], "jobs {a} and {b} shared a core");

    // CPU time measured by the cgroup: the 3 s busy loop (on a core it may share with
    // other tests' processes, so only a good part of it is certain).
    let usage = ja.usage.expect("usage reported");
    let cpu = usage.total_cpu_usec().expect("cpu time");
    assert!(cpu >= 300_000, "{usage:?}");
    let acct = c.cmd_ok(
        "gsacct",
        ["-j", &a.to_string(), "-P", "-n", "-o", "JobID,TotalCPU"],
    );
    let first = acct.lines().next().unwrap_or_default();
    assert!(
        first.starts_with(&format!("{a}|00:0")) && first.contains('.'),
        "{acct}"
    );
    // gseff (seff) reads the same figures: one core for the job's wall time.
    let eff = c.cmd_ok("gseff", [a.to_string()]);
    assert!(
        eff.contains(&format!("Job ID: {a}\n"))
            && eff.contains("Cores: 1\n")
            && eff.contains("State: COMPLETED (exit code 0)\n")
            && eff.contains("Memory Efficiency: "),
        "{eff}"
    );
    let pct: f64 = eff
        .lines()
        .find_map(|l| l.strip_prefix("CPU Efficiency: "))
        .and_then(|l| l.split('%').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{eff}"));
    assert!(pct > 5.0 && pct <= 100.0, "{eff}");
    let missing = c.cmd("gseff", ["999999"]);
    assert_eq!(missing.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&missing.stderr), "Job not found.\n");
}

#[test]
fn a_double_forked_daemon_dies_with_its_cancelled_job_even_across_a_gsnoded_restart() {
    if let Some(why) = v1_missing(&["freezer", "cpuset"]) {
        eprintln!("{why}");
        return;
    }
    let sub = Subdir::new("kill", v1_roots());
    let c = TestCluster::start(ClusterOpts::named("cg-kill").nodes(1).cpus(2).cgroup_conf(
        &format!(
            "CgroupPlugin=cgroup/v1\nConstrainCores=yes\nCgroupSubdir={}_%n\n",
            sub.name
        ),
    ));
    let cpus = "grep Cpus_allowed_list /proc/self/status | cut -f2";
    let id = c.submit([
        "-c1",
        "-o",
        "d.out",
        "--wrap",
        &format!("{cpus} > first.cpus; {}", daemonizing_script("daemon.pid")),
    ]);
    c.wait_state(id, JobState::Running, secs(20));
    let text = c.wait_file_contains("daemon.pid", "\n", secs(20));
    let pid: i32 = text.trim().parse().expect("pid");
    assert!(alive(pid));
    let freezer = sub.job(Path::new(V1_ROOT).join("freezer").as_path(), id);
    let procs = std::fs::read_to_string(freezer.join("step_batch/cgroup.procs")).unwrap();
    assert!(
        procs.lines().any(|l| l.trim() == pid.to_string()),
        "the daemon {pid} is not in the job's cgroup: {procs}"
    );

    // A stale cgroup (a job this node no longer holds) is removed when gsnoded restarts,
    // and the running job is still tracked by its cgroup.
    let stale = sub.job(Path::new(V1_ROOT).join("freezer").as_path(), 999_999);
    std::fs::create_dir(&stale).unwrap();
    c.kill_noded(0);
    c.start_noded(0);
    c.wait_until(secs(20), "the stale cgroup to be removed", || {
        !stale.exists()
    });
    // The restarted gsnoded knows the running job's core: a new job gets the other one.
    let other = c.submit([
        "-c1",
        "-o",
        "o.out",
        "--wrap",
        &format!("{cpus} > second.cpus"),
    ]);
    let o = c.wait_terminal(other, secs(30));
    assert_eq!(o.state, JobState::Completed, "{o:?}");
    let (first, second) = (
        c.read_work_file("first.cpus"),
        c.read_work_file("second.cpus"),
    );
    assert_ne!(first.trim(), second.trim(), "both jobs got core {first}");

    c.cmd_ok("gscancel", [id.to_string()]);
    let j = c.wait_terminal(id, secs(30));
    assert_eq!(j.state, JobState::Cancelled, "{j:?}");
    assert!(
        wait_dead(pid, secs(10)),
        "the double-forked daemon {pid} survived its job"
    );
    c.wait_until(secs(10), "the job's cgroup to be removed", || {
        !freezer.exists()
    });
}

/// A cgroup2 mount for the v2 test: a fresh one in a temporary folder if this process may
/// mount (it shows the same hierarchy), else the host's.
fn v2_mount(tmp: &Path) -> Option<(PathBuf, bool)> {
    let p = tmp.join("cg2");
    std::fs::create_dir_all(&p).ok()?;
    let ok = std::process::Command::new("mount")
        .args(["-t", "cgroup2", "none"])
        .arg(&p)
        .status()
        .is_ok_and(|s| s.success());
    if ok && p.join("cgroup.controllers").is_file() {
        return Some((p, true));
    }
    ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.join("cgroup.controllers").is_file())
        .map(|p| (p, false))
}

#[test]
fn v2_at_a_configured_mount_point_tracks_and_kills() {
    if !is_root() {
        eprintln!("skipping: cgroup tests need root");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let Some((mount, mounted)) = v2_mount(tmp.path()) else {
        eprintln!("skipping: no cgroup2 file system on this host");
        return;
    };
    struct Unmount(PathBuf, bool);
    impl Drop for Unmount {
        fn drop(&mut self) {
            if self.1 {
                let _ = std::process::Command::new("umount").arg(&self.0).status();
            }
        }
    }
    let _unmount = Unmount(mount.clone(), mounted);
    let sub = Subdir::new("v2", vec![mount.clone()]);
    let c = TestCluster::start(ClusterOpts::named("cg-v2").nodes(1).cgroup_conf(&format!(
        "CgroupPlugin=cgroup/v2\nCgroupMountpoint={}\nCgroupSubdir={}_%n\n",
        mount.display(),
        sub.name
    )));
    let id = c.submit([
        "-o",
        "v2.out",
        "--wrap",
        &format!(
            "grep '^0::' /proc/self/cgroup > where.txt; {}",
            daemonizing_script("daemon2.pid")
        ),
    ]);
    c.wait_state(id, JobState::Running, secs(20));
    let text = c.wait_file_contains("daemon2.pid", "\n", secs(20));
    let pid: i32 = text.trim().parse().expect("pid");
    let wherefrom = c.read_work_file("where.txt");
    assert!(
        wherefrom
            .trim()
            .ends_with(&format!("/{}_n1/job_{id}/step_batch", sub.name)),
        "{wherefrom}"
    );
    c.cmd_ok("gscancel", [id.to_string()]);
    let j = c.wait_terminal(id, secs(30));
    assert_eq!(j.state, JobState::Cancelled, "{j:?}");
    assert!(wait_dead(pid, secs(10)), "daemon {pid} survived");
    let dir = sub.job(&mount, id);
    c.wait_until(secs(10), "the job's cgroup to be removed", || !dir.exists());
    // CPU time comes from cpu.stat, which v2 always has.
    assert!(
        j.usage.and_then(|u| u.total_cpu_usec()).is_some(),
        "{:?}",
        j.usage
    );
}

#[test]
fn a_bad_cgroup_conf_stops_gsnoded_with_a_clear_message() {
    let c = TestCluster::config_only(
        ClusterOpts::named("cg-bad")
            .nodes(1)
            .cgroup_conf("CgroupPlugin=cgroup/v3\n"),
    );
    let out = std::process::Command::new(gsched_tests::bins::bin("gsnoded"))
        .args(["-f"])
        .arg(c.conf_path())
        .args(["-N", "n1"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cgroup.conf:1: CgroupPlugin: unknown plugin \"cgroup/v3\"; valid names: autodetect, cgroup/v1, cgroup/v2, disabled"),
        "{err}"
    );
}

/// `-t 1` is the smallest limit, so this test takes a bit over a minute. The daemon ignores
/// SIGTERM and double-forks: only the cgroup kill after KillWait ends it.
#[test]
fn a_double_forked_daemon_ignoring_sigterm_dies_at_the_time_limit() {
    if let Some(why) = v1_missing(&["freezer"]) {
        eprintln!("{why}");
        return;
    }
    let sub = Subdir::new("timeout", v1_roots());
    let c = TestCluster::start(
        ClusterOpts::named("cg-timeout")
            .nodes(1)
            .cgroup_conf(&format!(
                "CgroupPlugin=cgroup/v1\nCgroupSubdir={}_%n\n",
                sub.name
            )),
    );
    let id = c.submit([
        "-t",
        "1",
        "-o",
        "t.out",
        "--wrap",
        "(setsid sh -c 'trap \"\" TERM; echo $$ > stubborn.pid; while :; do sleep 1; done' </dev/null >/dev/null 2>&1 &) ; sleep 1000",
    ]);
    let text = c.wait_file_contains("stubborn.pid", "\n", secs(30));
    let pid: i32 = text.trim().parse().expect("pid");
    let j = c.wait_terminal(id, secs(150));
    assert_eq!(j.state, JobState::Timeout, "{j:?}");
    assert!(
        wait_dead(pid, secs(10)),
        "the daemon {pid} survived the time limit"
    );
    let d = sub.job(Path::new(V1_ROOT).join("freezer").as_path(), id);
    c.wait_until(secs(10), "the job's cgroup to be removed", || !d.exists());
}

/// The job joins its cgroup before it drops root: a job of another user is in it too.
#[test]
fn a_job_of_another_user_is_in_its_cgroup() {
    if let Some(why) = v1_missing(&["memory", "freezer"]) {
        eprintln!("{why}");
        return;
    }
    if gsched_tests::user_ids("gstest").is_none() {
        eprintln!("skipping: needs user gstest (created by .ci/run)");
        return;
    }
    let sub = Subdir::new("user", v1_roots());
    let c = TestCluster::start(ClusterOpts::named("cg-user").nodes(1).cgroup_conf(&format!(
        "CgroupPlugin=cgroup/v1\nConstrainRAMSpace=yes\nCgroupSubdir={}_%n\n",
        sub.name
    )));
    let id = c.submit([
        "--uid=gstest",
        "--mem=64M",
        "-o",
        "user.out",
        "--wrap",
        "id -un; grep ':memory:' /proc/self/cgroup; cat /sys/fs/cgroup/memory$(grep ':memory:' /proc/self/cgroup | cut -d: -f3)/../memory.limit_in_bytes",
    ]);
    let j = c.wait_terminal(id, secs(30));
    assert_eq!(j.state, JobState::Completed, "{j:?}");
    let out = c.read_work_file("user.out");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.first(), Some(&"gstest"), "{out}");
    assert!(
        lines
            .get(1)
            .is_some_and(|l| l.ends_with(&format!("/{}_n1/job_{id}/step_batch", sub.name))),
        "{out}"
    );
    assert_eq!(
        lines.get(2),
        Some(&(64u64 << 20).to_string().as_str()),
        "{out}"
    );
}

/// A job step's tasks (`gsrun`) on the batch node join the job's cgroup and see only the
/// job's core.
#[test]
fn a_steps_tasks_are_in_their_jobs_cgroup() {
    if let Some(why) = v1_missing(&["cpuset", "freezer"]) {
        eprintln!("{why}");
        return;
    }
    let sub = Subdir::new("step", v1_roots());
    let c = TestCluster::start(ClusterOpts::named("cg-step").nodes(1).cpus(2).cgroup_conf(
        &format!(
            "CgroupPlugin=cgroup/v1\nConstrainCores=yes\nCgroupSubdir={}_%n\n",
            sub.name
        ),
    ));
    let script = "gsrun sh -c 'grep cpuset /proc/self/cgroup; nproc'";
    let id = c.submit(["-c1", "-o", "step.out", "--wrap", script]);
    let j = c.wait_terminal(id, secs(30));
    let out = c.read_work_file("step.out");
    assert_eq!(j.state, JobState::Completed, "{out}");
    assert!(out.contains(&format!("/job_{id}/")), "{out}");
    assert!(out.lines().any(|l| l == "1"), "nproc in the step: {out}");
}
