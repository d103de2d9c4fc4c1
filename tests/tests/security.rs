//! Authentication and authorization through the real daemons: MUNGE credentials that are
//! forged, tampered with, expired or replayed are refused; a process cannot pass for another
//! uid (auth/munge, and auth/none's loopback check); node registration and node daemon calls
//! are refused to ordinary users; users cannot cancel, hold or update others' jobs;
//! `PrivateData=jobs,nodes` hides others' jobs and the nodes; `AdminUsers=` may act on all;
//! malformed and oversize request bodies are refused and store nothing.
//!
//! The multi-user tests run the commands as the unprivileged user `gstest`, so they need root
//! and that user (`.ci/run` creates it); the credential tests need MUNGE installed (`munged`,
//! and `munge`/`unmunge` as the reference client; `.ci/run` installs them). Each test says why it skips.

use gsched_proto::api::{
    paths, ErrorCode, HeartbeatRequest, JobCompleteRequest, JobFilter, JobQuery, JobsResponse,
    PingResponse, RegisterRequest, RegisterResponse, SubmitRequest, SubmitResponse,
    TerminateReason, TerminateRequest,
};
use gsched_proto::auth::{AuthError, Authenticator, Identity};
use gsched_proto::client::{Client, ClientError};
use gsched_proto::job::JobSpec;
use gsched_tests::munge::PrivateMunged;
use gsched_tests::{
    is_root, secs, stderr, stderr_lines, stdout, user_ids, ClusterOpts, JobState, TestCluster,
};
use std::process::Command;
use std::sync::Arc;

const TEST_USER: &str = "gstest";

/// Sends a fixed credential, as a hostile or replaying client would.
struct FixedCred(String);

impl Authenticator for FixedCred {
    fn name(&self) -> &'static str {
        "test/fixed"
    }
    fn credential(&self) -> Result<String, AuthError> {
        Ok(self.0.clone())
    }
    fn verify(&self, _: &str) -> Result<Identity, AuthError> {
        Err(AuthError("a sending-only authenticator".into()))
    }
}

fn client_with(addr: String, cred: &str) -> Client {
    Client::new(addr, Arc::new(FixedCred(cred.to_string()))).with_timeout(secs(10))
}

fn ctld_with(c: &TestCluster, cred: &str) -> Client {
    client_with(format!("127.0.0.1:{}", c.ctld_port()), cred)
}

fn api_error(r: Result<impl std::fmt::Debug, ClientError>) -> (ErrorCode, String) {
    match r {
        Err(ClientError::Api(e)) => (e.code, e.message),
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn munge_skip() -> Option<String> {
    if std::env::var(gsched_tests::munge::AUTH_ENV).as_deref() == Ok("none") {
        return Some("GSCHED_TEST_AUTH=none: the test clusters run without MUNGE".into());
    }
    gsched_tests::munge::unavailable().map(|w| format!("MUNGE is not usable here: {w}"))
}

fn multi_user_skip() -> Option<String> {
    if !is_root() {
        return Some("needs root (commands run as the user gstest)".into());
    }
    if user_ids(TEST_USER).is_none() {
        return Some(format!(
            "needs the user {TEST_USER} (useradd -m {TEST_USER})"
        ));
    }
    munge_skip()
}

macro_rules! skip_unless {
    ($reason:expr) => {
        if let Some(why) = $reason {
            eprintln!("skipped: {why}");
            return;
        }
    };
}

fn munged(c: &TestCluster) -> &PrivateMunged {
    c.munged().expect("the cluster runs with auth/munge")
}

#[test]
fn bad_munge_credentials_are_refused() {
    skip_unless!(munge_skip());
    let c = TestCluster::start(ClusterOpts::named("sec-cred").nodes(1));
    let m = munged(&c);

    // A good credential works once; the same credential again is a replay.
    let cred = m.munge_cli(&["-n"], None);
    let ping: PingResponse = ctld_with(&c, &cred).get(paths::PING).unwrap();
    assert_eq!(ping.cluster, "gstest");
    let (code, msg) = api_error(ctld_with(&c, &cred).get::<PingResponse>(paths::PING));
    assert_eq!(code, ErrorCode::AuthenticationFailed);
    assert!(msg.contains("replayed"), "{msg}");

    // Tampered: one character of the encoded body changed.
    let good = m.munge_cli(&["-n"], None);
    let mut bytes = good.into_bytes();
    let i = bytes.len() / 2;
    bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(bytes).unwrap();
    let (code, msg) = api_error(ctld_with(&c, &tampered).get::<PingResponse>(paths::PING));
    assert_eq!(code, ErrorCode::AuthenticationFailed);
    assert!(msg.contains("MUNGE credential"), "{msg}");

    // Forged: made by a munged with another key.
    let dir = tempfile::tempdir().unwrap();
    let other = PrivateMunged::start(&dir.path().join("m")).unwrap();
    let forged = other.munge_cli(&["-n"], None);
    let (code, msg) = api_error(ctld_with(&c, &forged).get::<PingResponse>(paths::PING));
    assert_eq!(code, ErrorCode::AuthenticationFailed);
    assert!(msg.contains("invalid"), "{msg}");

    // Expired: a one-second lifetime, used after it ran out.
    let short = m.munge_cli(&["-n", "-t", "1"], None);
    std::thread::sleep(secs(3));
    let (code, msg) = api_error(ctld_with(&c, &short).get::<PingResponse>(paths::PING));
    assert_eq!(code, ErrorCode::AuthenticationFailed);
    assert!(msg.contains("expired"), "{msg}");

    // Claims without MUNGE (auth/none's format, or nothing usable) prove nothing here.
    for claim in ["none:0:0", "", "MUNGE:", "MUNGE:garbage:"] {
        let (code, msg) = api_error(ctld_with(&c, claim).get::<PingResponse>(paths::PING));
        assert_eq!(code, ErrorCode::AuthenticationFailed, "{claim:?}: {msg}");
    }
    // The node daemon refuses them as well.
    let node = client_with(format!("127.0.0.1:{}", c.node_port(0)), "none:0:0");
    let (code, _) = api_error(node.get::<PingResponse>(paths::NODE_PING));
    assert_eq!(code, ErrorCode::AuthenticationFailed);

    // A command whose munged has another key: Slurm's wording, exit code 1, nothing stored.
    let conf = std::fs::read_to_string(c.conf_path()).unwrap().replace(
        &m.socket().display().to_string(),
        &other.socket().display().to_string(),
    );
    let wrong = c.dir().join("wrong-key.conf");
    std::fs::write(&wrong, conf).unwrap();
    let out = c
        .command("gsbatch")
        .env("GSCHED_CONF", &wrong)
        .args(["--wrap", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("Protocol authentication error"),
        "{}",
        stderr(&out)
    );
    assert!(c.jobs().is_empty(), "a refused submission stored a job");
}

/// The daemons wait for munged on their async thread (`Authenticator::verify_async`): while
/// munged is down a request is refused at once with what to check, the commands say munged
/// is not running, and once munged is back the same daemons accept credentials again.
#[test]
fn requests_are_refused_clearly_while_munged_is_down_and_accepted_once_it_is_back() {
    skip_unless!(munge_skip());
    let mut c = TestCluster::start(ClusterOpts::named("sec-mdown").nodes(1));
    let before = munged(&c).munge_cli(&["-n"], None);
    let for_node = munged(&c).munge_cli(&["-n"], None);
    c.munged_mut().unwrap().stop();

    let (code, msg) = api_error(ctld_with(&c, &before).get::<PingResponse>(paths::PING));
    assert_eq!(code, ErrorCode::AuthenticationFailed);
    assert!(msg.contains("munged cannot be reached"), "{msg}");
    let node = client_with(format!("127.0.0.1:{}", c.node_port(0)), &for_node);
    let (code, msg) = api_error(node.get::<PingResponse>(paths::NODE_PING));
    assert_eq!(code, ErrorCode::AuthenticationFailed);
    assert!(msg.contains("munged cannot be reached"), "{msg}");
    let out = c
        .command("gsbatch")
        .args(["--wrap", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("is munged running"),
        "{}",
        stderr(&out)
    );

    c.munged_mut().unwrap().restart().unwrap();
    let after = munged(&c).munge_cli(&["-n"], None);
    let ping: PingResponse = ctld_with(&c, &after).get(paths::PING).unwrap();
    assert_eq!(ping.cluster, "gstest");
    let out = c
        .command("gsbatch")
        .args(["--parsable", "-H", "--wrap", "true"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        c.jobs().len(),
        1,
        "the submission after the restart is stored"
    );
}

#[test]
fn users_cannot_act_on_other_users_jobs() {
    skip_unless!(multi_user_skip());
    let c = TestCluster::start(ClusterOpts::named("sec-owner").nodes(1));
    let (uid, _) = user_ids(TEST_USER).unwrap();
    let theirs = c.submit(["--wrap", "sleep 300"]);
    c.wait_state(theirs, JobState::Running, secs(30));

    let run = |name: &str, args: &[&str]| {
        c.command_as(name, TEST_USER)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {name}: {e}"))
    };
    let id = theirs.to_string();
    let out = run("gscancel", &[&id]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(
        stderr_lines(&out, "gscancel"),
        vec![format!(
            "error: Kill job error on job id {theirs}: Access/permission denied"
        )]
    );
    let out = run("gscancel", &["--signal=USR1", &id]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let out = run("gscontrol", &["hold", &id]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("Access/permission denied"),
        "{}",
        stderr(&out)
    );
    let out = run(
        "gscontrol",
        &["update", &format!("JobId={id}"), "TimeLimit=5"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(
        stderr_lines(&out, "gscontrol"),
        vec![format!("Access/permission denied for job {theirs}")]
    );
    let out = run("gscontrol", &["requeue", &id]);
    assert_ne!(out.status.code(), Some(0), "{}", stderr(&out));
    let j = c.job(theirs);
    assert_eq!(j.state, JobState::Running, "{j:?}");
    assert_ne!(j.time_limit, Some(5), "{j:?}");

    // Their usage is the owner's and the admins' only, as with Slurm's sstat.
    let out = run("gsstat", &["-j", &id, "-n"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stderr_lines(&out, "gsstat"),
        vec![format!(
            "error: problem getting step_layout for JobId={theirs}: Access/permission denied"
        )]
    );
    assert!(stdout(&out).is_empty(), "{}", stdout(&out));

    // Without PrivateData everyone sees every job (as in Slurm).
    let out = run("gsqueue", &["-h", "-o", "%i"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains(&id), "{}", stdout(&out));

    // Their own job: submitted as gstest, it runs as gstest, and they may cancel it.
    let out = run("gsbatch", &["--parsable", "--wrap", "id; sleep 300"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mine: u32 = stdout(&out).trim().parse().unwrap();
    let j = c.wait_state(mine, JobState::Running, secs(30));
    assert_eq!(j.user_id, uid);
    // Exactly the user's uid, gid and groups, as `id gstest` lists them.
    let want = Command::new("id").arg(TEST_USER).output().unwrap();
    let got = c.wait_file_contains(&format!("slurm-{mine}.out"), "groups=", secs(30));
    assert_eq!(got.lines().next(), Some(stdout(&want).trim()), "{got}");
    let out = run("gscancel", &[&mine.to_string()]);
    assert!(out.status.success(), "{}", stderr(&out));
    c.wait_state(mine, JobState::Cancelled, secs(30));
    // --priority: an operator's is the job's priority; a user's is dropped (slurmctld
    // resets it), except 0, which holds the job.
    let submit = |run_as_user: bool, priority: &str| -> u32 {
        let args = [
            "--parsable",
            "--begin=now+1hour",
            priority,
            "--wrap",
            "true",
        ];
        let out = if run_as_user {
            run("gsbatch", &args)
        } else {
            c.cmd("gsbatch", args)
        };
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out).trim().parse().unwrap()
    };
    let top = submit(false, "--priority=TOP");
    assert_eq!(c.job(top).priority, 4_294_967_293);
    let users = submit(true, "--priority=4000000000");
    assert!(
        c.job(users).priority < 4_000_000_000,
        "{}",
        c.job(users).priority
    );
    let zero = c.job(submit(true, "--priority=0"));
    assert_eq!((zero.held, zero.reason.as_str()), (true, "JobHeldUser"));
    // Asking to run as root: gsbatch refuses as sbatch does, and a hand-made request with
    // gstest's credential is refused by the controller; nothing is stored.
    let out = run("gsbatch", &["--uid=root", "--wrap", "true"]);
    assert_eq!(out.status.code(), Some(255), "{}", stderr(&out));
    assert_eq!(
        stderr_lines(&out, "gsbatch"),
        vec!["error: --uid only permitted by root user"]
    );
    let before = c.jobs().len();
    let spec = JobSpec {
        name: "as-root".into(),
        script: "#!/bin/sh\nid\n".into(),
        work_dir: c.workdir().display().to_string(),
        run_as_uid: Some(0),
        ..Default::default()
    };
    let cred = munged(&c).munge_cli(&["-n"], user_ids(TEST_USER));
    let (code, msg) = api_error(ctld_with(&c, &cred).post::<_, SubmitResponse>(
        paths::JOBS,
        &SubmitRequest {
            spec,
            test_only: false,
            het: Vec::new(),
        },
    ));
    assert_eq!(code, ErrorCode::AccessDenied, "{msg}");
    assert_eq!(c.jobs().len(), before);
}

/// A job's script and environment are its owner's and the admins' (as slurmctld's
/// REQUEST_BATCH_SCRIPT): `gscontrol write batch_script` of another user's job fails with
/// "Invalid user id", and a full job query by another user carries the job without them.
#[test]
fn scripts_and_environments_are_the_owners() {
    skip_unless!(multi_user_skip());
    let c = TestCluster::start(ClusterOpts::named("sec-script").nodes(1).cpus(4));
    let run = |name: &str, args: &[&str]| {
        c.command_as(name, TEST_USER)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {name}: {e}"))
    };
    c.write_script("root.sh", "#!/bin/sh\n# root-secret-marker\nsleep 300\n");
    let out = c.cmd(
        "gsbatch",
        ["--parsable", "--export=ALL,SECRET_TOKEN=abc123", "root.sh"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let root_job: u32 = stdout(&out).trim().parse().unwrap();
    let out = run(
        "gsbatch",
        &["--parsable", "-D", "/tmp", "--wrap", "sleep 300"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let own: u32 = stdout(&out).trim().parse().unwrap();

    let out = run(
        "gscontrol",
        &["write", "batch_script", &root_job.to_string(), "-"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(
        stderr_lines(&out, "gscontrol"),
        vec!["job script retrieval failed: Invalid user id".to_string()]
    );
    assert!(!stdout(&out).contains("root-secret-marker"));
    let out = run(
        "gscontrol",
        &["write", "batch_script", &own.to_string(), "-"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("sleep 300"), "{}", stdout(&out));
    // Root (an admin) writes it to slurm-<id>.sh in the working directory.
    let said = c.cmd_ok(
        "gscontrol",
        ["write", "batch_script", &root_job.to_string()],
    );
    assert_eq!(
        said,
        format!("batch script for job {root_job} written to slurm-{root_job}.sh\n")
    );
    assert_eq!(
        c.read_work_file(&format!("slurm-{root_job}.sh")),
        "#!/bin/sh\n# root-secret-marker\nsleep 300\n"
    );
    let out = c.cmd("gscontrol", ["write", "batch_script", "999999"]);
    assert_eq!(
        stderr_lines(&out, "gscontrol"),
        vec!["job script retrieval failed: Invalid job id specified".to_string()]
    );

    // The API itself: a full query by gstest has its own job's script, not root's
    // script or environment.
    let cred = munged(&c).munge_cli(&["-n"], user_ids(TEST_USER));
    let got: JobsResponse = ctld_with(&c, &cred)
        .post(
            paths::JOBS_QUERY,
            &JobQuery {
                filter: JobFilter::default(),
                brief: false,
                fields: Vec::new(),
            },
        )
        .unwrap();
    let theirs = got.jobs.iter().find(|j| j.job_id == root_job).unwrap();
    assert!(theirs.spec.script.is_empty(), "{:?}", theirs.spec.script);
    let has_token = |j: &gsched_proto::job::JobInfo| {
        j.spec.environment.iter().any(|(_, v)| v.contains("abc123"))
    };
    assert!(!has_token(theirs), "{:?}", theirs.spec.environment);
    // Root's own full query has it (the check above is not vacuous).
    assert!(has_token(&c.job(root_job)));
    let mine = got.jobs.iter().find(|j| j.job_id == own).unwrap();
    assert!(mine.spec.script.contains("sleep 300"));
    for id in [root_job, own] {
        c.cmd_ok("gscancel", [id.to_string()]);
    }
}

#[test]
fn private_data_hides_jobs_and_nodes_and_admin_users_act_on_all() {
    skip_unless!(multi_user_skip());
    let c = TestCluster::start(
        ClusterOpts::named("sec-private")
            .nodes(1)
            .config_line("PrivateData=jobs,nodes"),
    );
    let theirs = c.submit(["-H", "--wrap", "true"]);
    let run =
        |name: &str, args: &[&str]| c.command_as(name, TEST_USER).args(args).output().unwrap();
    let out = run("gsbatch", &["--parsable", "-H", "--wrap", "true"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mine = stdout(&out).trim().to_string();

    let out = run("gsqueue", &["-h", "-o", "%i"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), mine, "gstest sees only its own job");
    let out = run("gsqueue", &["-h", "-o", "%i", "-u", "root"]);
    assert_eq!(stdout(&out).trim(), "", "{}", stdout(&out));
    let out = run("gscontrol", &["show", "job", &theirs.to_string()]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr_lines(&out, "gscontrol"),
        vec!["slurm_load_jobs error: Invalid job id specified"]
    );
    // Named, since jobs submitted held are in no accounting window (as in Slurm).
    let both = format!("{mine},{theirs}");
    let out = run("gsacct", &["-X", "-n", "-P", "-o", "JobID", "-j", &both]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), mine);
    let out = run("gsinfo", &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("Access/permission denied"),
        "{}",
        stderr(&out)
    );
    // Root still sees everything.
    let all = c.cmd_ok("gsqueue", ["-h", "-o", "%i"]);
    assert_eq!(all.lines().count(), 2, "{all}");
    assert!(c.cmd("gsinfo", [""; 0]).status.success());

    // AdminUsers=gstest: the same user now acts on root's job.
    drop(c);
    let c = TestCluster::start(
        ClusterOpts::named("sec-admin")
            .nodes(1)
            .config_line("PrivateData=jobs")
            .config_line(&format!("AdminUsers={TEST_USER}")),
    );
    let theirs = c.submit(["-H", "--wrap", "true"]);
    let out = c
        .command_as("gsqueue", TEST_USER)
        .args(["-h", "-o", "%i"])
        .output()
        .unwrap();
    assert_eq!(stdout(&out).trim(), theirs.to_string());
    let out = c
        .command_as("gscancel", TEST_USER)
        .arg(theirs.to_string())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    c.wait_state(theirs, JobState::Cancelled, secs(30));
    // An administrator is not a node daemon: registering is still root's or SlurmUser's.
    let cred = munged(&c).munge_cli(&["-n"], user_ids(TEST_USER));
    let reg = RegisterRequest {
        name: "n1".into(),
        cpus: 64,
        real_memory_mb: 1 << 20,
        version: "x".into(),
        boot_time: 0,
        start_time: 0,
        running: Vec::new(),
        gpus: Vec::new(),
    };
    let (code, msg) =
        api_error(ctld_with(&c, &cred).post::<_, RegisterResponse>(paths::NODES_REGISTER, &reg));
    assert_eq!(code, ErrorCode::AccessDenied, "{msg}");
}

#[test]
fn node_calls_from_ordinary_users_are_refused() {
    skip_unless!(multi_user_skip());
    let c = TestCluster::start(ClusterOpts::named("sec-nodes").nodes(1));
    let m = munged(&c);
    let ids = user_ids(TEST_USER);
    let as_user = || m.munge_cli(&["-n"], ids);
    let reg = RegisterRequest {
        name: "n1".into(),
        cpus: 64,
        real_memory_mb: 1 << 20,
        version: "x".into(),
        boot_time: 0,
        start_time: 0,
        running: Vec::new(),
        gpus: Vec::new(),
    };
    let (code, msg) = api_error(
        ctld_with(&c, &as_user()).post::<_, RegisterResponse>(paths::NODES_REGISTER, &reg),
    );
    assert_eq!(code, ErrorCode::AccessDenied, "{msg}");
    assert!(msg.contains("Access/permission denied"), "{msg}");
    let n = c.nodes().into_iter().find(|n| n.name == "n1").unwrap();
    assert_eq!(
        n.cpus,
        c.opts().cpus,
        "the refused registration changed nothing"
    );

    // Root may register only configured node names.
    let unknown = RegisterRequest {
        name: "n99".into(),
        ..reg
    };
    let root = m.munge_cli(&["-n"], None);
    let (code, msg) = api_error(
        ctld_with(&c, &root).post::<_, RegisterResponse>(paths::NODES_REGISTER, &unknown),
    );
    assert_eq!(code, ErrorCode::InvalidNodeName, "{msg}");

    // The node daemon obeys only root, SlurmUser and itself.
    let node = client_with(format!("127.0.0.1:{}", c.node_port(0)), &as_user());
    let (code, msg) = api_error(node.post::<_, serde_json::Value>(
        paths::NODE_TERMINATE,
        &TerminateRequest {
            job_id: 1,
            kill_wait: 0,
            reason: TerminateReason::Cancelled,
        },
    ));
    assert_eq!(code, ErrorCode::AccessDenied, "{msg}");

    // A user cannot report a job finished (their own or anyone's) nor heartbeat as a node.
    let job = c.submit(["--wrap", "sleep 300"]);
    let running = c.wait_state(job, JobState::Running, secs(30));
    let done = JobCompleteRequest {
        job_id: job,
        node: running.nodes[0].clone(),
        start_time: running.start_time.unwrap(),
        exit_code: 0,
        signal: 0,
        end_time: running.start_time.unwrap(),
        launch_error: None,
        terminated_for: None,
        oom_kills: 0,
        usage: None,
        gpu_failure: None,
        prolog_error: None,
    };
    let (code, msg) = api_error(
        ctld_with(&c, &as_user()).post::<_, serde_json::Value>(paths::JOBS_COMPLETE, &done),
    );
    assert_eq!(code, ErrorCode::AccessDenied, "{msg}");
    // Nor free a node's part of a job by answering for its Epilog.
    let epilog_done = gsched_proto::api::EpilogCompleteRequest {
        node: running.nodes[0].clone(),
        job_id: job,
        start_time: running.start_time.unwrap(),
        error: None,
    };
    let (code, msg) = api_error(
        ctld_with(&c, &as_user())
            .post::<_, serde_json::Value>(paths::NODES_EPILOG_COMPLETE, &epilog_done),
    );
    assert_eq!(code, ErrorCode::AccessDenied, "{msg}");
    let beat = HeartbeatRequest {
        name: "n1".into(),
        running: Vec::new(),
        progress: Vec::new(),
        load: None,
        gpu_samples: Vec::new(),
        usage: Vec::new(),
    };
    let (code, msg) = api_error(
        ctld_with(&c, &as_user()).post::<_, serde_json::Value>(paths::NODES_HEARTBEAT, &beat),
    );
    assert_eq!(code, ErrorCode::AccessDenied, "{msg}");
    assert_eq!(c.job(job).state, JobState::Running);

    // A user's credential queries fine (it is authentic; only node calls are refused).
    let r: JobsResponse = ctld_with(&c, &as_user())
        .post(paths::JOBS_QUERY, &JobQuery::default())
        .unwrap();
    assert_eq!(r.jobs.len(), 1);
}

#[test]
fn auth_none_refuses_other_uids_even_when_they_claim_ours() {
    skip_unless!(if !is_root() {
        Some("needs root (gstest talks to root's daemons)".to_string())
    } else if user_ids(TEST_USER).is_none() {
        Some(format!("needs the user {TEST_USER}"))
    } else if Command::new("python3").arg("-V").output().is_err() {
        Some("needs python3 (a hand-made request)".to_string())
    } else {
        None
    });
    let c = TestCluster::start(ClusterOpts::named("sec-none").nodes(1).auth_none());
    // Honest: gstest's commands name gstest's uid, which auth/none refuses.
    let out = c.command_as("gsqueue", TEST_USER).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("accepts only uid 0"),
        "{}",
        stderr(&out)
    );

    // Dishonest: gstest claims uid 0; the connection is gstest's.
    let (uid, gid) = user_ids(TEST_USER).unwrap();
    let script = format!(
        "import http.client\n\
         c = http.client.HTTPConnection('127.0.0.1', {port})\n\
         c.request('GET', '{path}', headers={{'x-gsched-protocol': '1', 'authorization': 'Gsched none:0:0'}})\n\
         r = c.getresponse()\n\
         print(r.status, r.read().decode())\n",
        port = c.ctld_port(),
        path = paths::PING
    );
    let mut cmd = Command::new("python3");
    cmd.args(["-c", &script]);
    std::os::unix::process::CommandExt::uid(&mut cmd, uid);
    std::os::unix::process::CommandExt::gid(&mut cmd, gid);
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("401 "), "{text}");
    assert!(
        text.contains(&format!("connection belongs to uid {uid}")),
        "{text}"
    );
    // The same claim from root's own process is accepted.
    let ok: PingResponse = ctld_with(&c, "none:0:0").get(paths::PING).unwrap();
    assert_eq!(ok.cluster, "gstest");
}

/// gsched speaks munged's socket protocol itself (plugins/auth/src/munge_wire.rs); libmunge's
/// own tools (`munge`, `unmunge`) are the reference: each side decodes what the other made.
#[test]
fn munge_wire_client_agrees_with_libmunge() {
    skip_unless!(munge_skip());
    let dir = tempfile::tempdir().unwrap();
    let m = PrivateMunged::start(&dir.path().join("m")).unwrap();
    let client = gsched_auth::munge_wire::MungeClient::new(Some(&m.socket().display().to_string()));

    // Ours, with a payload and a ttl, decoded by libmunge's unmunge.
    let cred = client.encode(77, b"payload-\x01").unwrap();
    let out = Command::new("unmunge")
        .arg("-S")
        .arg(m.socket())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut ch| {
            use std::io::Write as _;
            ch.stdin.take().unwrap().write_all(cred.as_bytes())?;
            ch.wait_with_output()
        })
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "unmunge: {text}");
    assert!(text.contains("STATUS:          Success (0)"), "{text}");
    assert!(text.contains("TTL:             77"), "{text}");
    assert!(text.contains("payload-\x01"), "{text}");
    let me = nix::unistd::getuid().as_raw();
    assert!(
        text.contains(&format!(
            "UID:             {}",
            gsched_proto::users::user_name(me)
        )),
        "{text}"
    );

    // libmunge's, decoded by ours: the maker's ids, ttl and payload; then a replay.
    let (uid, gid) = if is_root() {
        user_ids(TEST_USER).unwrap_or((me, 0))
    } else {
        (me, nix::unistd::getgid().as_raw())
    };
    let theirs = m.munge_cli(
        &["-s", "hello", "-t", "42"],
        is_root().then_some((uid, gid)),
    );
    let d = client.decode(&theirs).unwrap();
    assert_eq!(
        (d.uid, d.gid, d.ttl, d.payload.as_slice()),
        (uid, gid, 42, &b"hello"[..])
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    assert!((i64::from(d.encoded_at) - now).abs() < 60, "{d:?}");
    let e = client.decode(&theirs).unwrap_err();
    assert_eq!(e.code, gsched_auth::munge_wire::EMUNGE_CRED_REPLAYED, "{e}");
    assert_eq!(e.message, "Replayed credential");
    // Garbage is munged's "Invalid credential format", not a hang or a panic.
    let e = client.decode("MUNGE:garbage:").unwrap_err();
    assert_eq!(e.code, 8, "{e}");
}

#[test]
fn munge_round_trip_cost_is_small() {
    skip_unless!(munge_skip());
    let dir = tempfile::tempdir().unwrap();
    let m = PrivateMunged::start(&dir.path().join("m")).unwrap();
    let info = format!("socket={}", m.socket().display());
    let auth = gsched_auth::by_name_with("auth/munge", Some(&info)).unwrap();
    let n = 500;
    let t = std::time::Instant::now();
    for _ in 0..n {
        let cred = auth.credential().unwrap();
        let id = auth.verify(&cred).unwrap();
        assert_eq!(id.uid, nix::unistd::getuid().as_raw());
    }
    let per = t.elapsed() / n;
    eprintln!("auth/munge: credential + verify = {per:?} per request ({n} requests)");
    // Generous: a request costs about 0.1-0.3 ms here; a credential per request must stay
    // far below a command's own start-up cost even on a loaded machine.
    assert!(per < std::time::Duration::from_millis(20), "{per:?}");
}

#[test]
fn bad_security_settings_stop_the_daemons_at_start_up() {
    for (line, daemon, want) in [
        (
            "AdminUsers=no-such-user-gsched",
            "gsctld",
            "AdminUsers: no such user \"no-such-user-gsched\"",
        ),
        (
            "AuthInfo=sockets=/x",
            "gsctld",
            "AuthInfo: unknown option \"sockets=/x\" for auth/munge",
        ),
        (
            "AuthInfo=sockets=/x",
            "gsnoded",
            "AuthInfo: unknown option \"sockets=/x\" for auth/munge",
        ),
        (
            "PrivateData=jobs,secrets",
            "gsctld",
            "PrivateData: unknown value \"secrets\"",
        ),
    ] {
        let c = TestCluster::config_only(ClusterOpts::named("sec-conf").nodes(1));
        let mut text = std::fs::read_to_string(c.conf_path()).unwrap();
        if line.starts_with("AuthInfo") {
            // AuthInfo belongs to auth/munge (auth/none refuses any).
            text = text.replace("AuthType=auth/none", "AuthType=auth/munge");
        }
        text.push_str(line);
        text.push('\n');
        std::fs::write(c.conf_path(), text).unwrap();
        let mut cmd = Command::new("timeout");
        cmd.arg("20").arg(gsched_tests::bins::bin(daemon));
        cmd.args(["-D", "-f"]).arg(c.conf_path());
        if daemon == "gsnoded" {
            cmd.args(["-N", "n1"]);
        }
        let out = cmd.output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(1),
            "{daemon} with {line}: {}",
            stderr(&out)
        );
        assert!(
            stderr(&out).contains(want),
            "{daemon} with {line}: {}",
            stderr(&out)
        );
    }
}

/// Sends a raw POST with the harness's credential; returns the status code, or `None` when
/// the server closed the connection before answering.
fn raw_post(c: &TestCluster, path: &str, body: &[u8]) -> Option<u16> {
    use std::io::{Read, Write};
    let cred = c.auth().credential().unwrap();
    let mut s = std::net::TcpStream::connect(("127.0.0.1", c.ctld_port())).unwrap();
    s.set_read_timeout(Some(secs(20))).unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: t\r\nx-gsched-protocol: 1\r\nauthorization: Gsched {cred}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = s.write_all(head.as_bytes()).and_then(|_| s.write_all(body));
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer);
    text.split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
}

#[test]
fn malformed_and_oversize_requests_are_refused_and_store_nothing() {
    let c = TestCluster::start(ClusterOpts::named("sec-bodies").nodes(1));
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("not JSON", b"{\"spec\": ".to_vec()),
        ("wrong types", br#"{"spec": {"name": 5}}"#.to_vec()),
        ("binary", vec![0xff, 0x00, 0xfe, b'{']),
        ("deep nesting", "[".repeat(100_000).into_bytes()),
        ("empty", Vec::new()),
    ];
    for (what, body) in cases {
        assert_eq!(raw_post(&c, paths::JOBS, &body), Some(400), "{what}");
    }
    // Over MAX_BODY_BYTES: 413 Payload Too Large ("cannot read the request body ... at most N
    // bytes are accepted"), or the connection is closed on the sender before it reads that.
    let big = vec![b' '; gsched_proto::api::MAX_BODY_BYTES + 1024];
    let status = raw_post(&c, paths::JOBS, &big);
    assert!(matches!(status, Some(413) | None), "{status:?}");
    // The controller still answers and stored nothing.
    assert!(c.ping().is_some());
    assert!(c.jobs().is_empty());
    let id = c.submit(["--wrap", "true"]);
    assert_eq!(c.wait_terminal(id, secs(30)).state, JobState::Completed);
}

#[test]
fn allow_groups_admits_only_the_partitions_groups_and_root() {
    skip_unless!(multi_user_skip());
    let (_, gid) = user_ids(TEST_USER).unwrap();
    let theirs = gsched_proto::users::group_name(gid);
    // `daemon` (gid 1 on Debian) is a group the test user is not in.
    let c = TestCluster::start(
        ClusterOpts::named("sec-groups")
            .nodes(1)
            .config_line("PartitionName=closed Nodes=ALL AllowGroups=daemon")
            .config_line(&format!(
                "PartitionName=theirs Nodes=ALL AllowGroups=daemon,{theirs}"
            ))
            .config_line("PartitionName=secret Nodes=ALL Hidden=YES"),
    );
    let as_user = |args: &[&str]| {
        c.command_as("gsbatch", TEST_USER)
            .args(args)
            .output()
            .unwrap()
    };
    let out = as_user(&["-H", "-p", "closed", "--wrap", "true"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert_eq!(
        stderr_lines(&out, "gsbatch"),
        vec![
            "error: Batch job submission failed: User's group not permitted to use this partition"
        ]
    );
    // Any partition of a list that the user may not use refuses the job (slurmctld 22.05).
    let out = as_user(&["-H", "-p", "theirs,closed", "--wrap", "true"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(c.jobs().is_empty(), "nothing stored");
    let out = as_user(&["-H", "--parsable", "-p", "theirs", "--wrap", "true"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mine: u32 = stdout(&out).trim().parse().unwrap();
    // Root may use any partition; a job moved there is checked for its own user.
    c.submit(["-H", "-p", "closed", "--wrap", "true"]);
    let out = c.cmd(
        "gscontrol",
        ["update", &format!("JobId={mine}"), "Partition=closed"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("User's group not permitted to use this partition"),
        "{}",
        stderr(&out)
    );
    let shown = c.cmd_ok("gscontrol", ["show", "partition", "theirs"]);
    assert!(
        shown.contains(&format!("AllowGroups=daemon,{theirs} ")),
        "{shown}"
    );

    // What the user is not allowed, and Hidden=YES, is listed only with -a (root sees all).
    let listed = |cmd: &str, args: &[&str]| {
        let out = c.command_as(cmd, TEST_USER).args(args).output().unwrap();
        assert!(out.status.success(), "{cmd} {args:?}: {}", stderr(&out));
        stdout(&out)
    };
    let parts = |args: &[&str]| {
        let mut a = vec!["-h", "-o", "%R %g"];
        a.extend_from_slice(args);
        let mut l: Vec<String> = listed("gsinfo", &a).lines().map(str::to_string).collect();
        l.sort();
        l
    };
    let g = |p: &str, groups: &str| format!("{p} {groups}");
    assert_eq!(
        parts(&[]),
        vec![g("debug", "all"), g("theirs", &format!("daemon,{theirs}"))]
    );
    assert_eq!(
        parts(&["-a"]),
        vec![
            g("closed", "daemon"),
            g("debug", "all"),
            g("secret", "all"),
            g("theirs", &format!("daemon,{theirs}"))
        ]
    );
    assert_eq!(c.cmd_ok("gsinfo", ["-h", "-o", "%R"]).lines().count(), 4);
    let queued = |args: &[&str]| {
        let mut a = vec!["-h", "-o", "%P"];
        a.extend_from_slice(args);
        let mut l: Vec<String> = listed("gsqueue", &a).lines().map(str::to_string).collect();
        l.sort();
        l
    };
    assert_eq!(queued(&[]), vec!["theirs"]);
    assert_eq!(queued(&["-a"]), vec!["closed", "theirs"]);
    let out = c
        .command_as("gscontrol", TEST_USER)
        .args(["show", "partition", "secret"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout(&out), "Partition secret not found\n");
    let shown = listed("gscontrol", &["-a", "show", "partition", "secret"]);
    assert!(shown.contains(" Hidden=YES"), "{shown}");
}

#[test]
fn disable_root_jobs_refuses_roots_jobs_where_it_applies() {
    skip_unless!(multi_user_skip());
    let c = TestCluster::start(
        ClusterOpts::named("sec-noroot")
            .nodes(1)
            .config_line("DisableRootJobs=YES")
            .config_line("OverTimeLimit=5")
            .config_line(
                "PartitionName=admin Nodes=ALL DisableRootJobs=NO OverTimeLimit=UNLIMITED",
            ),
    );
    let out = c.cmd("gsbatch", ["-H", "--wrap", "true"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let err = stderr_lines(&out, "gsbatch");
    assert_eq!(err.len(), 1, "{err:?}");
    assert!(
        err[0].starts_with("error: Batch job submission failed: Invalid user id: DisableRootJobs"),
        "{err:?}"
    );
    assert!(c.jobs().is_empty());
    // Root may still run jobs where the partition allows it, and submit for other users.
    let out = c.cmd("gsbatch", ["-H", "-p", "admin", "--wrap", "true"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = c.cmd("gsbatch", ["-H", "--uid", TEST_USER, "--wrap", "true"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let shown = c.cmd_ok("gscontrol", ["show", "partition"]);
    assert!(
        shown.contains("PartitionName=debug\n")
            && shown.contains(" DisableRootJobs=YES ")
            && shown.contains(" DisableRootJobs=NO ")
            && shown.contains("   OverTimeLimit=NONE ")
            && shown.contains("   OverTimeLimit=UNLIMITED "),
        "{shown}"
    );
    let config = c.cmd_ok("gscontrol", ["show", "config"]);
    assert!(
        config.contains("\nDisableRootJobs         = Yes\n")
            && config.contains("\nOverTimeLimit           = 5 min\n"),
        "{config}"
    );
}
