//! The commands' behaviour that needs no controller: version and help, option errors,
//! script checks, and how an unreachable controller is reported. (Behaviour against a
//! running cluster is tested by the cluster harness in `tests/`.)

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

struct Env {
    dir: tempfile::TempDir,
    conf: PathBuf,
}

/// A config whose controller port has nothing listening.
fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let conf = dir.path().join("gsched.conf");
    std::fs::write(
        &conf,
        format!(
            "ClusterName=testc\nSlurmctldHost=localhost(127.0.0.1)\nSlurmctldPort={port}\n\
             AuthType=auth/none\nStateSaveLocation={}\n\
             NodeName=n[1-2] CPUs=2 RealMemory=100\nPartitionName=debug Nodes=n[1-2] Default=YES\n",
            dir.path().display()
        ),
    )
    .unwrap();
    Env { dir, conf }
}

fn bin(name: &str) -> PathBuf {
    PathBuf::from(match name {
        "gsbatch" => env!("CARGO_BIN_EXE_gsbatch"),
        "gsqueue" => env!("CARGO_BIN_EXE_gsqueue"),
        "gscancel" => env!("CARGO_BIN_EXE_gscancel"),
        "gsinfo" => env!("CARGO_BIN_EXE_gsinfo"),
        "gscontrol" => env!("CARGO_BIN_EXE_gscontrol"),
        _ => unreachable!(),
    })
}

fn run_in(
    e: &Env,
    program: &Path,
    args: &[&str],
    stdin: &[u8],
    extra_env: &[(&str, &str)],
) -> Output {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(e.dir.path())
        .env("GSCHED_CONF", &e.conf)
        .env_remove("SLURM_NODELIST")
        .env_remove("SQUEUE_FORMAT")
        .env_remove("SQUEUE_FORMAT2")
        .env_remove("SINFO_FORMAT")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    // Variables that would change sbatch's options.
    for (k, _) in std::env::vars() {
        if k.starts_with("SBATCH_") || k.starts_with("SCANCEL_") {
            cmd.env_remove(k);
        }
    }
    let mut child = cmd.spawn().unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

fn run(e: &Env, name: &str, args: &[&str]) -> Output {
    run_in(e, &bin(name), args, b"", &[])
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn version_and_help() {
    let e = env();
    for name in ["gsbatch", "gsqueue", "gscancel", "gsinfo", "gscontrol"] {
        let o = run(&e, name, &["-V"]);
        assert_eq!(text(&o.stdout), "slurm 22.05.8\n", "{name} -V");
        assert_eq!(o.status.code(), Some(0));
        let o = run(&e, name, &["--version"]);
        assert_eq!(text(&o.stdout), "slurm 22.05.8\n", "{name} --version");
        let o = run(&e, name, &["--help"]);
        assert_eq!(o.status.code(), Some(0), "{name} --help");
        assert!(text(&o.stdout).contains("sage"), "{name} --help");
        let o = run(&e, name, &["--usage"]);
        assert_eq!(o.status.code(), Some(0), "{name} --usage");
    }
    let o = run(&e, "gscontrol", &["version"]);
    assert_eq!(text(&o.stdout), "slurm 22.05.8\n");
}

#[test]
fn unknown_options() {
    let e = env();
    for (name, code) in [
        ("gsbatch", 255),
        ("gsqueue", 1),
        ("gscancel", 1),
        ("gsinfo", 1),
        ("gscontrol", 1),
    ] {
        let o = run(&e, name, &["--foo"]);
        assert_eq!(o.status.code(), Some(code), "{name}");
        assert_eq!(
            text(&o.stderr),
            format!(
                "{name}: unrecognized option '--foo'\nTry \"{name} --help\" for more information\n"
            )
        );
    }
}

#[test]
fn symlink_name_is_used_in_messages() {
    let e = env();
    let link = e.dir.path().join("sbatch");
    std::os::unix::fs::symlink(bin("gsbatch"), &link).unwrap();
    let o = run_in(&e, &link, &["--wrap=true", "extra"], b"", &[]);
    assert_eq!(
        text(&o.stderr),
        "sbatch: error: Script arguments not permitted with --wrap option\n"
    );
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn script_checks() {
    let e = env();
    let g = bin("gsbatch");
    let o = run_in(&e, &g, &[], b"", &[]);
    assert_eq!(text(&o.stderr), "gsbatch: error: Batch script is empty!\n");
    assert_eq!(o.status.code(), Some(1));
    let o = run_in(&e, &g, &[], b"  \n", &[]);
    assert_eq!(
        text(&o.stderr),
        "gsbatch: error: Batch script contains only whitespace!\n"
    );
    let o = run_in(&e, &g, &["-"], b"echo hi\n", &[]);
    assert_eq!(
        text(&o.stderr),
        "gsbatch: error: This does not look like a batch script.  The first\n\
         gsbatch: error: line must start with #! followed by the path to an interpreter.\n\
         gsbatch: error: For instance: #!/bin/sh\n"
    );
    let o = run_in(&e, &g, &[], b"#!/bin/sh\r\necho\r\n", &[]);
    assert!(text(&o.stderr).contains("DOS line breaks"));
    let o = run_in(&e, &g, &[], b"#!/bin/sh\n#SBATCH -N 1 oops\n", &[]);
    assert_eq!(
        text(&o.stderr),
        "gsbatch: error: Invalid directive found in batch script: oops\n"
    );
    assert_eq!(o.status.code(), Some(255));
    let o = run_in(&e, &g, &["missing.sh"], b"", &[]);
    assert_eq!(
        text(&o.stderr),
        "gsbatch: error: Unable to open file missing.sh\n"
    );
    let o = run_in(&e, &g, &["--gpu-bind=closest", "--wrap=x"], b"", &[]);
    assert_eq!(
        text(&o.stderr),
        "gsbatch: error: option --gpu-bind is not supported by gsched yet\n"
    );
    assert_eq!(o.status.code(), Some(1));
    let o = run_in(&e, &g, &["--wrap=x"], b"", &[("SLURM_EXIT_ERROR", "7")]);
    assert_eq!(o.status.code(), Some(7));
}

#[test]
fn unreachable_controller() {
    let e = env();
    let o = run(&e, "gsbatch", &["--wrap=true"]);
    assert_eq!(
        text(&o.stderr),
        "gsbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)\n"
    );
    assert_eq!(o.status.code(), Some(1));
    let o = run(&e, "gsqueue", &[]);
    assert_eq!(
        text(&o.stderr),
        "slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n"
    );
    assert_eq!(o.status.code(), Some(1));
    let o = run(&e, "gscontrol", &["ping"]);
    assert!(text(&o.stdout).starts_with("Slurmctld(primary) at localhost is DOWN\n"));
    assert_eq!(o.status.code(), Some(1));
    let o = run(&e, "gscancel", &["5"]);
    assert_eq!(
        text(&o.stderr),
        "gscancel: error: Kill job error on job id 5: Unable to contact slurm controller (connect failure)\n"
    );
    assert_eq!(o.status.code(), Some(1));
    let o = run(&e, "gsinfo", &[]);
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn local_errors() {
    let e = env();
    let o = run(&e, "gscancel", &[]);
    assert_eq!(
        text(&o.stderr),
        "gscancel: error: No job identification provided\n"
    );
    assert_eq!(o.status.code(), Some(1));
    let o = run(&e, "gscancel", &["INVALID"]);
    assert_eq!(text(&o.stderr), "gscancel: error: Invalid job id INVALID\n");
    let o = run(&e, "gsqueue", &["-t", "nope"]);
    assert!(text(&o.stderr).starts_with("gsqueue: error: Invalid job state specified: nope\n"));
    assert_eq!(o.status.code(), Some(1));
    let o = run(&e, "gsinfo", &["-t", "nope"]);
    assert!(text(&o.stderr).starts_with("gsinfo: error: Bad state string: \"nope\"\n"));
    assert_eq!(o.status.code(), Some(1));
    let o = run(&e, "gscontrol", &["show", "hostnames", "n[01-03]"]);
    assert_eq!(text(&o.stdout), "n01\nn02\nn03\n");
    let o = run(&e, "gscontrol", &["show", "hostlist", "n1,n2,n3"]);
    assert_eq!(text(&o.stdout), "n[1-3]\n");
    let o = run(&e, "gscontrol", &["frob"]);
    assert_eq!(text(&o.stderr), "invalid keyword: frob\n");
    assert_eq!(o.status.code(), Some(1));
    let o = run(&e, "gsqueue", &["-M", "elsewhere"]);
    assert!(text(&o.stderr).contains("'elsewhere' can't be reached now"));
}
