//! Shell completions: the committed scripts under `packaging/completions/` are what the
//! option tables make today, each parses in its shell, and the bash ones, loaded into a real
//! bash beside a running cluster, complete options, option values (the cluster's partitions
//! and nodes) and the user's own job ids, under both the gsched and the Slurm names.

use gsched_tests::{ClusterOpts, TestCluster};
use std::path::{Path, PathBuf};
use std::process::Command;

fn completions_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../packaging/completions")
}

#[test]
fn committed_completions_match_the_option_tables() {
    let mut stale = Vec::new();
    for (rel, text) in gsched_cli::completions::scripts() {
        if std::fs::read_to_string(completions_dir().join(&rel))
            .ok()
            .as_deref()
            != Some(text.as_str())
        {
            stale.push(rel);
        }
    }
    assert!(
        stale.is_empty(),
        "completions differ from the option tables; regenerate with `cargo run -p gsched-xtask -- completions`: {stale:?}"
    );
}

#[test]
fn completions_parse_in_their_shells() {
    for (shell, args) in [("bash", ["-n"]), ("zsh", ["-n"]), ("fish", ["-n"])] {
        if Command::new(shell).arg("-c").arg("true").output().is_err() {
            eprintln!(
                "{shell} not installed (apt-get install {shell}): its completions not parsed"
            );
            continue;
        }
        for (rel, _) in gsched_cli::completions::scripts() {
            if !rel.starts_with(shell) {
                continue;
            }
            let o = Command::new(shell)
                .args(args)
                .arg(completions_dir().join(&rel))
                .output()
                .unwrap();
            assert!(
                o.status.success() && o.stderr.is_empty(),
                "{shell} -n {rel}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
    }
}

/// What bash offers for the command line `words` (the last word being completed), with the
/// completion of `cmd` loaded: COMPREPLY, sorted.
fn complete(c: &TestCluster, cmd: &str, words: &[&str]) -> Vec<String> {
    let script = completions_dir().join("bash").join(cmd);
    let quoted: Vec<String> = words
        .iter()
        .map(|w| format!("'{}'", w.replace('\'', "'\\''")))
        .collect();
    let program = format!(
        "source '{}'\nCOMP_WORDS=({})\nCOMP_CWORD={}\n_gsched_{cmd}\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        script.display(),
        quoted.join(" "),
        words.len() - 1
    );
    let o = Command::new("bash")
        .arg("-c")
        .arg(program)
        .env_clear()
        .envs(c.base_env())
        .current_dir(c.workdir())
        .output()
        .expect("run bash");
    assert!(
        o.status.success(),
        "bash: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let mut out: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect();
    out.sort();
    out
}

#[test]
fn bash_completes_options_values_and_jobs_from_the_cluster() {
    let c = TestCluster::start(
        ClusterOpts::named("completions")
            .nodes(2)
            .config_line("PartitionName=gpu Nodes=n2 MaxTime=INFINITE State=UP"),
    );
    // Options: long ones that take a value end with '='.
    assert_eq!(
        complete(&c, "gsbatch", &["gsbatch", "--parti"]),
        ["--partition="]
    );
    assert_eq!(complete(&c, "gsbatch", &["sbatch", "--hol"]), ["--hold"]);
    // Values the cluster knows, for `-p X`, `--partition=X` (bash splits at '=') and nodes.
    assert_eq!(
        complete(&c, "gsbatch", &["gsbatch", "-p", ""]),
        ["debug", "gpu"]
    );
    assert_eq!(
        complete(&c, "gsbatch", &["gsbatch", "--partition", "=", "g"]),
        ["gpu"]
    );
    assert_eq!(
        complete(&c, "gsbatch", &["gsbatch", "-w", "n"]),
        ["n1", "n2"]
    );
    // Fixed word lists.
    assert_eq!(
        complete(&c, "gscancel", &["scancel", "--signal", "=", "USR"]),
        ["USR1", "USR2"]
    );
    assert_eq!(
        complete(&c, "gsinfo", &["gsinfo", "-t", "DRAI"]),
        ["DRAIN", "DRAINED", "DRAINING"]
    );
    assert_eq!(complete(&c, "gscontrol", &["scontrol", "rel"]), ["release"]);
    // A free value offers nothing (not the option list).
    assert!(complete(&c, "gsbatch", &["gsbatch", "-J", ""]).is_empty());
    // Operands: the script file for gsbatch, the user's own jobs for gscancel.
    c.write_script("train.sh", "#!/bin/sh\ntrue\n");
    assert_eq!(complete(&c, "gsbatch", &["gsbatch", "tra"]), ["train.sh"]);
    let a = c.submit(["-H", "--wrap", "true"]);
    let b = c.submit(["-H", "--wrap", "true"]);
    let mut ids = vec![a.to_string(), b.to_string()];
    ids.sort();
    assert_eq!(complete(&c, "gscancel", &["gscancel", ""]), ids);
    c.cmd_ok("gscancel", [a.to_string(), b.to_string()]);
}
