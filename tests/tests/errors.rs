//! Bad input gets Slurm's exact messages and exit codes: a script without `#!`, DOS line
//! breaks, an invalid `#SBATCH` directive, an unknown option, a bad time or memory format,
//! an unknown partition; and config errors stop the daemons with the file, line and key
//! named.
//!
//! The expected texts and codes of the command's own checks are those of Slurm 22.05.8's
//! sbatch (Debian 12 slurm-client), run with the same arguments.

use gsched_tests::{bins, secs, stderr, stderr_lines, stdout, ClusterOpts, JobState, TestCluster};
use std::fs::File;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Instant;

/// Asserts a failed command printed exactly `lines` (after the `gsbatch: ` prefix) on stderr
/// and nothing on stdout.
fn assert_fails_with(out: &Output, code: Option<i32>, lines: &[&str]) {
    assert!(!out.status.success(), "must fail: {out:?}");
    if let Some(code) = code {
        assert_eq!(out.status.code(), Some(code), "{out:?}");
    }
    assert_eq!(stdout(out), "", "nothing on stdout");
    let got = stderr_lines(out, "gsbatch");
    assert_eq!(got, lines, "stderr was:\n{}", stderr(out));
}

#[test]
fn gsbatch_rejects_bad_scripts_and_options() {
    // These checks are the command's own (as in sbatch): no daemon is needed.
    let c = TestCluster::config_only(ClusterOpts::named("badinput"));

    c.write_script("noshebang.sh", "echo hello\n");
    let out = c.cmd("gsbatch", ["noshebang.sh"]);
    assert_fails_with(
        &out,
        Some(1),
        &[
            "error: This does not look like a batch script.  The first",
            "error: line must start with #! followed by the path to an interpreter.",
            "error: For instance: #!/bin/sh",
        ],
    );

    // DOS line breaks: refused before anything else, exit 1.
    c.write_script("dos.sh", "#!/bin/sh\r\n#SBATCH -N 1\r\necho hi\r\n");
    let out = c.cmd("gsbatch", ["dos.sh"]);
    assert_fails_with(
        &out,
        Some(1),
        &[
            "error: Batch script contains DOS line breaks (\\r\\n)",
            "error: instead of expected UNIX line breaks (\\n).",
        ],
    );

    // An invalid #SBATCH directive: Slurm's message and exit code 255, whether it is a
    // stray word or an option sbatch does not know.
    c.write_script("directive.sh", "#!/bin/sh\n#SBATCH -N 1 foo\ntrue\n");
    let out = c.cmd("gsbatch", ["directive.sh"]);
    assert_fails_with(
        &out,
        Some(255),
        &["error: Invalid directive found in batch script: foo"],
    );
    c.write_script(
        "unknown.sh",
        "#!/bin/sh\n#SBATCH --no-such-option=1\ntrue\n",
    );
    let out = c.cmd("gsbatch", ["unknown.sh"]);
    assert_eq!(out.status.code(), Some(255), "{out:?}");
    assert_eq!(stdout(&out), "");

    // getopt's wording, and sbatch's exit code for it (255).
    let out = c.cmd("gsbatch", ["--bogus-option", "--wrap", "true"]);
    assert_eq!(out.status.code(), Some(255), "{out:?}");
    assert_eq!(stdout(&out), "");
    let lines = stderr_lines(&out, "gsbatch");
    assert_eq!(lines.len(), 2, "stderr was:\n{}", stderr(&out));
    assert_eq!(lines[0], "unrecognized option '--bogus-option'");
    assert!(
        lines[1] == "Try \"gsbatch --help\" for more information"
            || lines[1] == "Try \"sbatch --help\" for more information",
        "stderr was:\n{}",
        stderr(&out)
    );

    let out = c.cmd("gsbatch", ["-Z", "--wrap", "true"]);
    assert_eq!(out.status.code(), Some(255), "{out:?}");
    let lines = stderr_lines(&out, "gsbatch");
    assert_eq!(
        lines.first().map(String::as_str),
        Some("invalid option -- 'Z'"),
        "{lines:?}"
    );

    let out = c.cmd("gsbatch", ["-t", "abc", "--wrap", "true"]);
    assert_fails_with(&out, Some(255), &["error: Invalid --time specification"]);

    let out = c.cmd("gsbatch", ["--mem=1.5G", "--wrap", "true"]);
    assert_fails_with(&out, Some(255), &["error: Invalid --mem specification"]);

    let out = c.cmd("gsbatch", ["-N", "abc", "--wrap", "true"]);
    assert_fails_with(
        &out,
        Some(255),
        &["error: \"abc\" is not a valid node count"],
    );

    let out = c.cmd("gsbatch", ["--uid=no-such-user-gs", "--wrap", "true"]);
    assert_fails_with(&out, Some(255), &["error: Invalid --uid specification"]);

    let out = c.cmd("gsbatch", ["--wrap", "true", "extra-arg"]);
    assert_fails_with(
        &out,
        Some(1),
        &["error: Script arguments not permitted with --wrap option"],
    );
}

#[test]
fn gsbatch_reports_controller_refusals() {
    let c = TestCluster::start(ClusterOpts::named("refusals").nodes(1));
    let out = c.cmd("gsbatch", ["-p", "nosuch", "--wrap", "true"]);
    assert_fails_with(
        &out,
        Some(1),
        &["error: Batch job submission failed: Invalid partition name specified"],
    );
    // Nothing was queued, and the cluster still works.
    assert!(c.jobs().is_empty(), "{:?}", c.jobs());
    let id = c.submit(["--wrap", "true"]);
    assert_eq!(c.wait_terminal(id, secs(30)).state, JobState::Completed);
}

/// Runs a daemon that must exit by itself within a few seconds; returns what it printed.
fn run_daemon(binary: &str, args: &[&str], dir: &Path) -> Output {
    let out_path = dir.join(format!("{binary}.stdout"));
    let err_path = dir.join(format!("{binary}.stderr"));
    let mut child = Command::new(bins::bin(binary))
        .args(args)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(File::create(&out_path).unwrap())
        .stderr(File::create(&err_path).unwrap())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {binary}: {e}"));
    let deadline = Instant::now() + gsched_tests::scaled(secs(20));
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{binary} {args:?} kept running with a bad config (it must exit non-zero); stderr:\n{}",
                std::fs::read_to_string(&err_path).unwrap_or_default()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    Output {
        status,
        stdout: std::fs::read(&out_path).unwrap_or_default(),
        stderr: std::fs::read(&err_path).unwrap_or_default(),
    }
}

#[test]
fn config_errors_name_file_line_and_key() {
    bins::require(&["gsctld", "gsnoded"]);
    let c = TestCluster::config_only(ClusterOpts::named("badconfig"));
    let good = std::fs::read_to_string(c.conf_path()).unwrap();
    let line = good.lines().count() + 1;

    let cases = [
        ("unknown.conf", "Bogus=1", "Bogus"),
        ("badvalue.conf", "KillWait=abc", "KillWait"),
    ];
    for (file, extra, key) in cases {
        let path = c.dir().join(file);
        std::fs::write(&path, format!("{good}{extra}\n")).unwrap();
        let p = path.display().to_string();
        let where_ = format!("{p}:{line}:");
        for (binary, args) in [
            ("gsctld", vec!["-D", "-f", p.as_str()]),
            ("gsnoded", vec!["-D", "-f", p.as_str(), "-N", "n1"]),
        ] {
            let out = run_daemon(binary, &args, c.dir());
            assert!(
                !out.status.success(),
                "{binary} must refuse {extra}: {out:?}"
            );
            let err = stderr(&out);
            assert!(
                err.contains(&where_) && err.contains(key),
                "{binary} with `{extra}` must name {where_} and {key}; stderr:\n{err}"
            );
        }
    }
}
