//! Runs the real gsstepd binary on hand-made job folders, the way gsnoded does, and checks
//! what the job saw and what gsstepd recorded. These tests start real processes (and, as
//! root, really switch to user `nobody`).

use gsched_noded::env::{job_environment, stdio_paths};
use gsched_noded::jobdir::{JobDir, LaunchFile, StatusFile, TerminateFile};
use gsched_proto::api::{LaunchRequest, TerminateReason};
use gsched_proto::job::OpenMode;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const NOBODY: u32 = 65534;

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

fn own_ids() -> (u32, u32) {
    (
        nix::unistd::getuid().as_raw(),
        nix::unistd::getgid().as_raw(),
    )
}

/// A spool directory and a working directory that any user can use.
struct Fixture {
    _tmp: tempfile::TempDir,
    spool: PathBuf,
    work: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let tmp = tempfile::tempdir().expect("tempdir");
        // Like a real spool directory (0755), so that the job's user can reach its script.
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let spool = tmp.path().join("spool");
        let work = tmp.path().join("work");
        std::fs::create_dir(&spool).unwrap();
        std::fs::create_dir(&work).unwrap();
        std::fs::set_permissions(&spool, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(&work, std::fs::Permissions::from_mode(0o777)).unwrap();
        Fixture {
            _tmp: tmp,
            spool,
            work,
        }
    }

    fn request(&self, job_id: u32, script: &str) -> LaunchRequest {
        let (uid, gid) = own_ids();
        LaunchRequest {
            job_id,
            start_time: 1_767_225_600,
            name: "t".into(),
            uid,
            gid,
            user_name: gsched_proto::users::user_name(uid),
            script: script.into(),
            argv: vec![],
            work_dir: self.work.to_string_lossy().into_owned(),
            stdout: None,
            stderr: None,
            stdin: None,
            open_mode: None,
            environment: vec![
                ("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()),
                ("SLURM_JOB_ID".into(), job_id.to_string()),
            ],
            cpus: 1,
            mem_mb: 100,
            node_index: 0,
            time_limit: None,
            gpus: Vec::new(),
            prolog_env: Vec::new(),
        }
    }

    /// Writes the job folder as gsnoded does.
    fn folder(&self, req: LaunchRequest) -> JobDir {
        let dir = JobDir::new(self.spool.join(format!("job_{}", req.job_id)));
        std::fs::create_dir(dir.path()).unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
        let stdio = stdio_paths(&req, "n1");
        let launch = LaunchFile {
            environment: job_environment(&req, "n1", Path::new("/etc/gsched/gsched.conf")),
            stdout: stdio.stdout,
            stderr: stdio.stderr,
            stdin: stdio.stdin,
            open_mode: req.open_mode.unwrap_or_default(),
            kill_wait: 30,
            cgroup: None,
            user: None,
            node: "n1".into(),
            request: req,
            propagate_rlimits: Vec::new(),
            prolog: None,
            prolog_env: Vec::new(),
            task_scripts: Default::default(),
        };
        dir.write_launch(&launch).unwrap();
        dir
    }
}

/// Runs gsstepd on `dir` (with a variable in its own environment that must not reach the
/// job) and returns the status it wrote.
fn run_stepd(dir: &JobDir) -> StatusFile {
    let log = std::fs::File::create(dir.file("stepd.log")).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_gsstepd"))
        .arg(dir.path())
        .env("GSCHED_TEST_LEAK", "leaked")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start gsstepd");
    let deadline = Instant::now() + Duration::from_secs(60);
    let st = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("gsstepd did not finish within 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let log = std::fs::read_to_string(dir.file("stepd.log")).unwrap_or_default();
    assert!(st.success(), "gsstepd failed: {st}\n{log}");
    dir.read_status()
        .unwrap()
        .unwrap_or_else(|| panic!("no status.json\n{log}"))
}

fn output(f: &Fixture, job_id: u32) -> String {
    std::fs::read_to_string(f.work.join(format!("slurm-{job_id}.out"))).unwrap_or_default()
}

/// Processes whose command line contains `token`.
fn processes_with(token: &str) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| s.contains(") Z "))
            .unwrap_or(true);
        if cmd.contains(token) && !zombie {
            out.push(pid);
        }
    }
    out
}

#[test]
fn exit_code_is_recorded() {
    let f = Fixture::new();
    let dir = f.folder(f.request(101, "#!/bin/sh\necho hello\nexit 3\n"));
    let st = run_stepd(&dir);
    assert_eq!((st.exit_code, st.signal), (3, 0));
    assert_eq!(st.launch_error, None);
    assert!(st.end_time >= st.start_time);
    assert_eq!(output(&f, 101), "hello\n");
    let pids = dir.read_pids().unwrap().unwrap();
    assert!(pids.stepd_pid > 0 && pids.shell_pid.is_some());
    // The script is the user's, read+exec only.
    let meta = std::fs::metadata(dir.file("script")).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o500);
}

#[test]
fn death_by_signal_is_recorded() {
    let f = Fixture::new();
    let dir = f.folder(f.request(102, "#!/bin/sh\nkill -KILL $$\n"));
    let st = run_stepd(&dir);
    assert_eq!((st.exit_code, st.signal), (0, 9));
}

#[test]
fn double_forked_processes_are_killed() {
    let f = Fixture::new();
    // Unique durations identify the processes in /proc.
    let script = "#!/bin/sh\n\
        (setsid sleep 1000.4242 &) \n\
        (sh -c 'sleep 1000.4343 & exit 0' &) \n\
        nohup sleep 1000.4444 >/dev/null 2>&1 &\n\
        sleep 0.3\n\
        exit 0\n";
    let dir = f.folder(f.request(103, script));
    let started = Instant::now();
    let st = run_stepd(&dir);
    assert_eq!((st.exit_code, st.signal, st.launch_error), (0, 0, None));
    assert!(started.elapsed() < Duration::from_secs(30));
    for token in ["1000.4242", "1000.4343", "1000.4444"] {
        let left = processes_with(token);
        assert!(left.is_empty(), "sleep {token} survived: {left:?}");
    }
    let log = std::fs::read_to_string(dir.file("stepd.log")).unwrap();
    assert!(log.contains("leftover"), "{log}");
}

#[test]
fn job_runs_as_the_user() {
    if !is_root() {
        eprintln!("SKIPPED job_runs_as_the_user: needs root to switch to user nobody (uid 65534)");
        return;
    }
    if gsched_proto::users::user_by_uid(NOBODY).is_none() {
        eprintln!("SKIPPED job_runs_as_the_user: no user with uid 65534 on this machine");
        return;
    }
    let f = Fixture::new();
    let mut req = f.request(
        104,
        "#!/bin/sh\nid -u\nid -g\npwd\ntouch made-by-job\ngrep CapEff /proc/self/status\n",
    );
    req.uid = NOBODY;
    req.gid = NOBODY;
    req.user_name = gsched_proto::users::user_name(NOBODY);
    let dir = f.folder(req);
    let st = run_stepd(&dir);
    let out = output(&f, 104);
    assert_eq!(
        (st.exit_code, st.launch_error.as_deref()),
        (0, None),
        "{out}"
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "65534", "{out}");
    assert_eq!(lines[1], "65534", "{out}");
    assert_eq!(lines[2], f.work.to_string_lossy(), "{out}");
    assert_eq!(lines[3], "CapEff:\t0000000000000000", "{out}");
    let out_meta = std::fs::metadata(f.work.join("slurm-104.out")).unwrap();
    assert_eq!(out_meta.uid(), NOBODY);
    assert_eq!(
        std::fs::metadata(f.work.join("made-by-job")).unwrap().uid(),
        NOBODY
    );
    assert_eq!(std::fs::metadata(dir.file("script")).unwrap().uid(), NOBODY);
}

/// gsnoded resolves the user and its groups (NSS loaded once) and gsstepd takes them as
/// given: the job gets exactly those groups, whatever NSS would say.
#[test]
fn groups_resolved_by_gsnoded_are_used() {
    if !is_root() {
        eprintln!("SKIPPED groups_resolved_by_gsnoded_are_used: needs root to switch users");
        return;
    }
    if gsched_proto::users::user_by_uid(NOBODY).is_none() {
        eprintln!("SKIPPED groups_resolved_by_gsnoded_are_used: no user with uid 65534 here");
        return;
    }
    let f = Fixture::new();
    let mut req = f.request(107, "#!/bin/sh\nid -u\nid -G\n");
    req.uid = NOBODY;
    req.gid = NOBODY;
    req.user_name = gsched_proto::users::user_name(NOBODY);
    let dir = f.folder(req);
    let mut launch = dir.read_launch().unwrap().unwrap();
    launch.user = Some(gsched_noded::jobdir::ResolvedUser {
        name: "nobody".into(),
        groups: vec![NOBODY, 4242],
    });
    dir.write_launch(&launch).unwrap();
    let st = run_stepd(&dir);
    let out = output(&f, 107);
    assert_eq!(
        (st.exit_code, st.launch_error.as_deref()),
        (0, None),
        "{out}"
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines, ["65534", "65534 4242"], "{out}");
}

#[test]
fn user_cannot_write_where_root_can() {
    if !is_root() {
        eprintln!("SKIPPED user_cannot_write_where_root_can: needs root");
        return;
    }
    let f = Fixture::new();
    let private = f.work.join("private");
    std::fs::create_dir(&private).unwrap();
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut req = f.request(105, "#!/bin/sh\necho should not run\n");
    req.uid = NOBODY;
    req.gid = NOBODY;
    req.stdout = Some(format!("{}/out", private.display()));
    let dir = f.folder(req);
    let st = run_stepd(&dir);
    let err = st.launch_error.unwrap_or_default();
    assert!(
        err.starts_with("Could not open stdout file") && err.contains("Permission denied"),
        "{err}"
    );
    assert_eq!(st.exit_code, 1);
    assert!(!private.join("out").exists());
}

#[test]
fn patterns_resolved_by_gsnoded_are_used() {
    let f = Fixture::new();
    let mut req = f.request(
        106,
        "#!/bin/sh\necho to-out\necho to-err >&2\necho \"args: $1 $2\"\n",
    );
    req.stdout = Some("out-%j-%N-%x.log".into());
    req.stderr = Some("logs/../err-%4j.log".into());
    req.argv = vec!["one".into(), "two words".into()];
    req.name = "pat".into();
    let dir = f.folder(req);
    let launch = dir.read_launch().unwrap().unwrap();
    assert_eq!(launch.stdout, f.work.join("out-106-n1-pat.log"));
    std::fs::create_dir(f.work.join("logs")).unwrap();
    let st = run_stepd(&dir);
    assert_eq!(st.exit_code, 0, "{:?}", st.launch_error);
    assert_eq!(
        std::fs::read_to_string(f.work.join("out-106-n1-pat.log")).unwrap(),
        "to-out\nargs: one two words\n"
    );
    assert_eq!(
        std::fs::read_to_string(f.work.join("err-0106.log")).unwrap(),
        "to-err\n"
    );
}

#[test]
fn environment_is_exactly_the_launch_environment() {
    let f = Fixture::new();
    let mut req = f.request(
        107,
        "#!/bin/sh\nenv | sort\nexec grep -E '^Sig(Blk|Ign)' /proc/self/status\n",
    );
    req.environment.push(("MY_VAR".into(), "a b=c".into()));
    let dir = f.folder(req);
    let st = run_stepd(&dir);
    assert_eq!(st.exit_code, 0);
    let out = output(&f, 107);
    assert!(out.contains("MY_VAR=a b=c\n"), "{out}");
    assert!(out.contains("SLURMD_NODENAME=n1\n"), "{out}");
    assert!(out.contains("ENVIRONMENT=BATCH\n"), "{out}");
    assert!(
        out.contains("SLURM_CONF=/etc/gsched/gsched.conf\n"),
        "{out}"
    );
    assert!(!out.contains("GSCHED_TEST_LEAK"), "{out}");
    // The mask is read by the script's last command, exec'd (no fork): a shell blocks every
    // signal for a moment while it forks, so reading the shell's own status from a child
    // would race with that.
    // gsstepd blocks signals for itself; the job must start with none blocked, and with no
    // standard signal ignored (std ignores SIGPIPE in gsstepd). Signals 32 and 33 belong to
    // the C library, which refuses to change them, so whatever the test's environment set
    // for them is inherited.
    assert!(out.contains("SigBlk:\t0000000000000000"), "{out}");
    let ign = out
        .lines()
        .find_map(|l| l.strip_prefix("SigIgn:\t"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .expect("SigIgn line");
    assert_eq!(ign & 0x7fff_ffff, 0, "{out}");
}

#[test]
fn bad_working_directory_falls_back_to_tmp() {
    let f = Fixture::new();
    let mut req = f.request(108, "#!/bin/sh\npwd\n");
    req.work_dir = "/nonexistent/gsched-test".into();
    req.stdout = Some(f.work.join("out").to_string_lossy().into_owned());
    let dir = f.folder(req);
    let st = run_stepd(&dir);
    assert_eq!(st.exit_code, 0);
    let out = std::fs::read_to_string(f.work.join("out")).unwrap();
    assert_eq!(
        out,
        "gsstepd: error: couldn't chdir to `/nonexistent/gsched-test': No such file or directory: going to /tmp instead\n/tmp\n"
    );
}

#[test]
fn unopenable_output_is_a_launch_error() {
    let f = Fixture::new();
    let mut req = f.request(109, "#!/bin/sh\necho never\n");
    req.stdout = Some("no-such-dir/out".into());
    let dir = f.folder(req);
    let st = run_stepd(&dir);
    let err = st.launch_error.unwrap_or_default();
    assert_eq!(
        err,
        format!(
            "Could not open stdout file {}/no-such-dir/out: No such file or directory",
            f.work.display()
        )
    );
    assert_eq!((st.exit_code, st.signal), (1, 0));
}

#[test]
fn missing_interpreter_is_a_launch_error() {
    let f = Fixture::new();
    let dir = f.folder(f.request(110, "#!/no/such/shell\necho never\n"));
    let st = run_stepd(&dir);
    let err = st.launch_error.unwrap_or_default();
    assert!(err.starts_with("execve(): "), "{err}");
    assert!(err.contains("No such file or directory"), "{err}");
}

#[test]
fn append_mode_and_umask() {
    let f = Fixture::new();
    std::fs::write(f.work.join("slurm-111.out"), "before\n").unwrap();
    let mut req = f.request(111, "#!/bin/sh\necho after\n");
    req.open_mode = Some(OpenMode::Append);
    req.stderr = Some("err-%j".into());
    req.environment.push(("SLURM_UMASK".into(), "0077".into()));
    let dir = f.folder(req);
    let st = run_stepd(&dir);
    assert_eq!(st.exit_code, 0);
    assert_eq!(output(&f, 111), "before\nafter\n");
    let mode = std::fs::metadata(f.work.join("err-111"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
}

#[test]
fn terminated_before_start_does_not_run() {
    let f = Fixture::new();
    let dir = f.folder(f.request(112, "#!/bin/sh\ntouch ran\n"));
    dir.write_terminate(&TerminateFile {
        reason: TerminateReason::Cancelled,
        kill_wait: 0,
        requested_at: 0,
    })
    .unwrap();
    let st = run_stepd(&dir);
    assert_eq!(st.signal, libc::SIGTERM);
    assert_eq!(st.launch_error, None);
    assert!(!f.work.join("ran").exists());
}

#[test]
fn missing_launch_file_is_reported() {
    let f = Fixture::new();
    let dir = JobDir::new(f.spool.join("job_113"));
    std::fs::create_dir(dir.path()).unwrap();
    let st = run_stepd(&dir);
    assert!(
        st.launch_error
            .unwrap_or_default()
            .contains("launch.json is missing"),
        "launch error expected"
    );
}

/// `Prolog=`: gsstepd runs it before the script, with the environment gsnoded wrote (and
/// nothing of the job's own); a failing one stops the job before the script and says why.
#[test]
fn the_prolog_runs_before_the_script_and_a_failure_keeps_the_script_from_running() {
    let f = Fixture::new();
    let trace = f.work.join("trace");
    let prolog = f.work.join("prolog");
    std::fs::write(
        &prolog,
        format!(
            "#!/bin/sh\necho \"prolog $SLURM_SCRIPT_CONTEXT $SLURM_JOB_ID ${{GSCHED_TEST_LEAK:-clean}}\" >> {t}\n\
             [ \"$SLURM_JOB_ID\" = 131 ] && {{ echo no scratch space; exit 2; }}\nexit 0\n",
            t = trace.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&prolog, std::fs::Permissions::from_mode(0o755)).unwrap();
    let with_prolog = |id: u32| {
        let dir = f.folder(f.request(
            id,
            &format!("#!/bin/sh\necho script >> {}\n", trace.display()),
        ));
        let mut launch = dir.read_launch().unwrap().unwrap();
        launch.prolog = Some(gsched_noded::prolog::ScriptConf {
            pattern: prolog.display().to_string(),
            timeout_secs: Some(30),
            serial_lock: None,
        });
        launch.prolog_env = vec![
            ("SLURM_JOB_ID".into(), id.to_string()),
            ("SLURM_SCRIPT_CONTEXT".into(), "prolog_slurmd".into()),
        ];
        dir.write_launch(&launch).unwrap();
        dir
    };
    let st = run_stepd(&with_prolog(130));
    assert_eq!((st.exit_code, st.prolog_error.as_deref()), (0, None));
    assert_eq!(
        std::fs::read_to_string(&trace).unwrap(),
        "prolog prolog_slurmd 130 clean\nscript\n"
    );
    std::fs::remove_file(&trace).unwrap();
    let st = run_stepd(&with_prolog(131));
    let e = st.prolog_error.expect("the failure is reported");
    assert!(e.contains("exit status 2: no scratch space"), "{e}");
    assert_eq!(
        std::fs::read_to_string(&trace).unwrap(),
        "prolog prolog_slurmd 131 clean\n",
        "the script ran after a failed Prolog"
    );
}
