//! Confinement at launch (issue 9): a job of an ordinary user gets none of gsnoded's own
//! environment with `--export=NONE`, its output file is opened as the user (a symlink planted
//! by another user in a sticky directory does not redirect root's writes, and a directory the
//! user cannot write stays untouched), its working directory is entered as the user (not
//! at all when the user may not), and what gsnoded keeps of the job in its spool (script,
//! launch request) is readable by nobody else. Needs root and the user `gstest` (`.ci/run`
//! creates it); elsewhere it says why it skips.

use gsched_tests::{is_root, secs, user_ids, ClusterOpts, JobState, TestCluster};
use std::os::unix::fs::{MetadataExt, PermissionsExt};

const TEST_USER: &str = "gstest";

fn skip() -> bool {
    if !is_root() || user_ids(TEST_USER).is_none() {
        eprintln!("skipping: needs root and user {TEST_USER} (created by .ci/run)");
        return true;
    }
    false
}

#[test]
fn jobs_are_confined_to_their_user() {
    if skip() {
        return;
    }
    let (uid, _) = user_ids(TEST_USER).unwrap();
    let c = TestCluster::start(ClusterOpts::named("confine").nodes(1));
    let uid_opt = format!("--uid={TEST_USER}");

    // 1. --export=NONE: the job sees SLURM_* and nothing of the daemons' environment.
    let id = c.submit([
        &uid_opt,
        "--export=NONE",
        "-o",
        "env-%j.out",
        "--wrap",
        "env",
    ]);
    assert_eq!(c.wait_terminal(id, secs(30)).state, JobState::Completed);
    let env = c.read_work_file(&format!("env-{id}.out"));
    assert!(env.contains(&format!("SLURM_JOB_ID={id}\n")), "{env}");
    for leak in ["GSCHED_CONF=", "RUST_BACKTRACE=", "HOME=/root"] {
        assert!(!env.contains(leak), "{leak} leaked into the job:\n{env}");
    }
    assert!(env.contains(&format!("USER={TEST_USER}\n")), "{env}");

    // 2. A symlink planted by another user (root) in a sticky, world-writable directory: the
    //    job's output must not be written through it into root's file.
    let sticky = c.dir().join("sticky");
    std::fs::create_dir(&sticky).unwrap();
    std::fs::set_permissions(&sticky, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let secret = c.dir().join("secret");
    std::fs::write(&secret, "root's data\n").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let planted = sticky.join("out.txt");
    std::os::unix::fs::symlink(&secret, &planted).unwrap();
    let id = c.submit([
        uid_opt.as_str(),
        "-o",
        planted.to_str().unwrap(),
        "--wrap",
        "echo overwritten",
    ]);
    let j = c.wait_terminal(id, secs(30));
    assert_eq!(
        std::fs::read_to_string(&secret).unwrap(),
        "root's data\n",
        "the job wrote through a symlink planted by another user ({j:?})"
    );
    assert_ne!(j.state, JobState::Completed, "{j:?}");

    // 3. An output file where the user may not write: nothing is created there.
    let closed = c.dir().join("closed");
    std::fs::create_dir(&closed).unwrap();
    std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o755)).unwrap();
    let target = closed.join("job.out");
    let id = c.submit([
        uid_opt.as_str(),
        "-o",
        target.to_str().unwrap(),
        "--wrap",
        "echo hi",
    ]);
    let j = c.wait_terminal(id, secs(30));
    assert!(
        !target.exists(),
        "root created {} for the job",
        target.display()
    );
    assert_ne!(j.state, JobState::Completed, "{j:?}");

    // 4. The working directory is entered as the user: one the user may not enter is not
    //    entered for it by root; as in Slurm, the job says so and runs in /tmp instead.
    let private = c.dir().join("private");
    std::fs::create_dir(&private).unwrap();
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).unwrap();
    let out = c.work_file("wd.out");
    let id = c.submit([
        uid_opt.as_str(),
        "-D",
        private.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--wrap",
        "pwd; ls . >/dev/null && echo listed",
    ]);
    assert_eq!(c.wait_terminal(id, secs(30)).state, JobState::Completed);
    let text = c.read_work_file("wd.out");
    assert!(
        text.contains(&format!(
            "couldn't chdir to `{}': Permission denied: going to /tmp instead",
            private.display()
        )) && text.contains("\n/tmp\n"),
        "{text}"
    );

    // 5. What the node keeps of a running job is for root only.
    let id = c.submit([uid_opt.as_str(), "--wrap", "sleep 300"]);
    c.wait_state(id, JobState::Running, secs(30));
    let dir = c.dir().join("spool").join("n1").join(format!("job_{id}"));
    let files = c.wait_for(secs(10), "the job folder", || {
        let f: Vec<_> = std::fs::read_dir(&dir).ok()?.flatten().collect();
        (!f.is_empty()).then_some(f)
    });
    let dmeta = std::fs::metadata(&dir).unwrap();
    // Others may pass through (the job, as its user, reaches its own files) but not list it.
    assert_eq!(
        dmeta.permissions().mode() & 0o066,
        0,
        "{} is listable or writable by others",
        dir.display()
    );
    for f in files {
        let m = f.metadata().unwrap();
        assert!(
            m.permissions().mode() & 0o077 == 0 || m.uid() == uid,
            "{} is readable by others ({:o})",
            f.path().display(),
            m.permissions().mode()
        );
    }
    c.cmd_ok("gscancel", [id.to_string()]);
}
