//! Slurm's command names (`scripts/install.sh --slurm-names`): a user's `sbatch`, `squeue`,
//! `scontrol`, `sacct` and `scancel` are gsched's, and say so in Slurm's words.

use gsched_tests::{secs, ClusterOpts, JobState, TestCluster};
use std::path::Path;
use std::process::Command;

#[test]
fn slurm_names_run_the_gsched_commands() {
    let c = TestCluster::start(ClusterOpts::named("dropin").nodes(1).cpus(1));
    let prefix = c.dir().join("prefix");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let bins = gsched_tests::bins::bin_dir();
    let out = Command::new(root.join("scripts/install.sh"))
        .arg("--prefix")
        .arg(&prefix)
        .arg("--slurm-names")
        .arg("--from")
        .arg(&bins)
        .output()
        .expect("run install.sh");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bin = prefix.join("bin");
    let share = prefix.join("share");
    for n in [
        "sbatch", "squeue", "scancel", "sinfo", "scontrol", "sacct", "sacctmgr", "sprio", "seff",
        "srun", "sstat", "sshare",
    ] {
        assert!(bin.join(n).is_file(), "{n} missing");
        // Shells find the completion under Slurm's name too.
        for c in [
            format!("bash-completion/completions/{n}"),
            format!("fish/vendor_completions.d/{n}.fish"),
        ] {
            assert!(share.join(&c).is_file(), "{c} missing");
        }
    }
    assert!(share.join("zsh/vendor-completions/_gsbatch").is_file());
    // Run by Slurm's names through PATH, as a job script or a client would.
    let run = |name: &str, args: &[&str]| {
        let mut cmd = Command::new(name);
        let path = format!("{}:/usr/bin:/bin", bin.display());
        cmd.env_clear()
            .envs(c.base_env())
            .env("PATH", path)
            .current_dir(c.workdir())
            .args(args);
        cmd.output().expect("run")
    };
    let o = run("sbatch", &["--parsable", "--wrap", "sleep 1000"]);
    assert!(o.status.success(), "{o:?}");
    let id: u32 = String::from_utf8_lossy(&o.stdout).trim().parse().unwrap();
    c.wait_state(id, JobState::Running, secs(30));
    let o = run("squeue", &["-h", "-o", "%i %T", "-j", &id.to_string()]);
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        format!("{id} RUNNING\n")
    );
    let o = run("scancel", &[&id.to_string()]);
    assert!(o.status.success(), "{o:?}");
    c.wait_terminal(id, secs(30));
    let o = run(
        "sacct",
        &["-X", "-n", "-P", "-o", "State", "-j", &id.to_string()],
    );
    assert!(
        String::from_utf8_lossy(&o.stdout).starts_with("CANCELLED by "),
        "{o:?}"
    );
    // Messages carry the name the user typed.
    let o = run("sbatch", &["--bogus-option"]);
    assert_ne!(o.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&o.stderr).starts_with("sbatch: "),
        "{o:?}"
    );
    let o = run("scontrol", &["-V"]);
    assert!(
        String::from_utf8_lossy(&o.stdout).starts_with("slurm "),
        "{o:?}"
    );
    // An existing file of a Slurm name is not replaced without --force.
    let out = Command::new(root.join("scripts/install.sh"))
        .arg("--prefix")
        .arg(&prefix)
        .arg("--slurm-names")
        .arg("--from")
        .arg(&bins)
        .output()
        .unwrap();
    assert!(out.status.success(), "reinstall over our own links");
    std::fs::remove_file(bin.join("sacct")).unwrap();
    std::fs::write(bin.join("sacct"), "#!/bin/sh\n").unwrap();
    let out = Command::new(root.join("scripts/install.sh"))
        .arg("--prefix")
        .arg(&prefix)
        .arg("--slurm-names")
        .arg("--from")
        .arg(&bins)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("pass --force"),
        "{out:?}"
    );
}
