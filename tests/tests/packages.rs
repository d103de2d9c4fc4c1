//! The Debian packages (`scripts/build-debs.sh`, cargo-deb): built from the debug binaries,
//! their contents inspected, then installed on this machine with dpkg, used, and purged.
//!
//! Installing touches the real system (/usr, /etc, /var, a `gsched` system user), which is
//! what CI (root, a throw-away machine) is for; the test skips, saying why, when not root,
//! when dpkg or cargo-deb is missing, or when gsched packages are already installed here
//! (an admin's own installation is never replaced or purged by a test).

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::{Command, Output};

fn run(cmd: &str, args: &[&str]) -> Output {
    Command::new(cmd)
        .args(args)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd}: {e}"))
}

fn ok(cmd: &str, args: &[&str]) -> String {
    let o = run(cmd, args);
    assert!(
        o.status.success(),
        "{cmd} {args:?} failed: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn installed(pkg: &str) -> bool {
    run("dpkg-query", &["-W", "-f", "${Status}", pkg])
        .stdout
        .starts_with(b"install ok installed")
}

/// Why this machine cannot run the test, if it cannot.
fn unsuitable() -> Option<String> {
    if !nix::unistd::geteuid().is_root() {
        return Some("not root: dpkg -i needs root".into());
    }
    if Command::new("dpkg").arg("--version").output().is_err() {
        return Some("dpkg not found (not a Debian system)".into());
    }
    if !Command::new("cargo")
        .args(["deb", "--version"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
    {
        return Some(
            "cargo-deb not installed (cargo install cargo-deb --locked; .ci/run does)".into(),
        );
    }
    for p in [
        "gsched-client",
        "gsched-controller",
        "gsched-node",
        "gsched-slurm-compat",
    ] {
        if installed(p) {
            return Some(format!(
                "{p} is already installed on this machine; not touching it"
            ));
        }
    }
    if Path::new("/usr/bin/gsbatch").exists() {
        return Some("/usr/bin/gsbatch exists (installed by hand?); not touching it".into());
    }
    None
}

fn contents(deb: &Path) -> Vec<String> {
    ok("dpkg-deb", &["-c", deb.to_str().unwrap()])
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .map(|p| p.trim_start_matches('.').to_string())
        .collect()
}

#[test]
fn debian_packages_build_install_and_purge() {
    if let Some(why) = unsuitable() {
        eprintln!("skipping the package test: {why}");
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = tempfile::tempdir().unwrap();
    let o = Command::new(root.join("scripts/build-debs.sh"))
        .args(["--profile", "dev", "--no-build", "--fast", "--out"])
        .arg(out.path())
        .output()
        .expect("run build-debs.sh");
    assert!(
        o.status.success(),
        "build-debs.sh: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let version = env!("CARGO_PKG_VERSION");
    let deb = |name: &str| out.path().join(format!("{name}_{version}-1_amd64.deb"));
    let expect = [
        (
            "gsched-controller",
            vec![
                "/usr/sbin/gsctld",
                "/lib/systemd/system/gsctld.service",
                "/usr/share/man/man8/gsctld.8.gz",
                "/usr/share/gsched/grafana/gsched.json",
            ],
        ),
        (
            "gsched-node",
            vec![
                "/usr/sbin/gsnoded",
                "/usr/sbin/gsstepd",
                "/lib/systemd/system/gsnoded.service",
                "/usr/share/man/man8/gsnoded.8.gz",
            ],
        ),
        (
            "gsched-client",
            vec![
                "/usr/bin/gsbatch",
                "/usr/bin/gsqueue",
                "/usr/bin/gscancel",
                "/usr/bin/gsinfo",
                "/usr/bin/gscontrol",
                "/usr/bin/gsacct",
                "/usr/bin/gssim",
                "/usr/share/man/man1/gsbatch.1.gz",
                "/usr/share/man/man1/gssim.1.gz",
                "/usr/share/man/man5/gsched.conf.5.gz",
                "/usr/share/bash-completion/completions/gsbatch",
                "/usr/share/zsh/vendor-completions/_gsbatch",
                "/usr/share/fish/vendor_completions.d/gsbatch.fish",
                "/usr/share/doc/gsched-client/examples/gsched.conf",
            ],
        ),
        (
            "gsched-slurm-compat",
            vec![
                "/usr/bin/sbatch",
                "/usr/bin/squeue",
                "/usr/bin/sacct",
                "/usr/share/bash-completion/completions/sbatch",
            ],
        ),
    ];
    for (name, paths) in &expect {
        let files = contents(&deb(name));
        for p in paths {
            assert!(files.iter().any(|f| f == p), "{name} lacks {p}: {files:?}");
        }
    }
    // The daemons' packages carry their maintainer scripts; the compat names conflict with
    // Slurm's own client.
    for name in ["gsched-controller", "gsched-node"] {
        let info = ok("dpkg-deb", &["-I", deb(name).to_str().unwrap()]);
        for s in ["postinst", "prerm", "postrm"] {
            assert!(info.contains(s), "{name} has no {s}:\n{info}");
        }
        assert!(
            info.contains("munge"),
            "{name} must depend on munge:\n{info}"
        );
    }
    let info = ok(
        "dpkg-deb",
        &["-I", deb("gsched-slurm-compat").to_str().unwrap()],
    );
    assert!(info.contains("Conflicts: slurm-client"), "{info}");

    // Install the three main packages.
    let debs: Vec<String> = ["gsched-client", "gsched-controller", "gsched-node"]
        .iter()
        .map(|n| deb(n).display().to_string())
        .collect();
    let mut args = vec!["-i"];
    args.extend(debs.iter().map(String::as_str));
    let o = run("dpkg", &args);
    let purge = || {
        let _ = run(
            "dpkg",
            &[
                "--purge",
                "gsched-slurm-compat",
                "gsched-node",
                "gsched-controller",
                "gsched-client",
            ],
        );
    };
    if !o.status.success() {
        purge();
        panic!(
            "dpkg -i failed: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let checks = std::panic::catch_unwind(|| {
        // The service user and the directories the units expect.
        let pw = ok("getent", &["passwd", "gsched"]);
        assert!(pw.starts_with("gsched:"), "{pw}");
        let ctld = std::fs::metadata("/var/lib/gsched/ctld").expect("/var/lib/gsched/ctld");
        let uid: u32 = pw.split(':').nth(2).unwrap().parse().unwrap();
        assert_eq!(ctld.uid(), uid, "the controller's state belongs to gsched");
        assert_eq!(ctld.permissions().mode() & 0o777, 0o700);
        let spool = std::fs::metadata("/var/spool/gsched/d").expect("/var/spool/gsched/d");
        assert_eq!(spool.uid(), 0);
        // The installed commands run.
        let v = ok("/usr/bin/gsbatch", &["-V"]);
        assert!(v.starts_with("slurm "), "{v}");
        ok("/usr/sbin/gsctld", &["--help"]);
        ok("/usr/bin/gssim", &["--help"]);
        ok("/usr/sbin/gsnoded", &["--help"]);
        // gsstepd and gsbatch are their static builds (scripts/build-static.sh): no program
        // interpreter.
        for p in ["/usr/sbin/gsstepd", "/usr/bin/gsbatch"] {
            assert_eq!(
                gsched_tests::bins::has_program_interpreter(std::path::Path::new(p)),
                Some(false),
                "{p} is not the static build"
            );
        }
        assert_eq!(
            gsched_tests::bins::has_program_interpreter(std::path::Path::new("/usr/bin/gsqueue")),
            Some(true),
            "gsqueue stays a glibc build (faster at long listings)"
        );
        // Slurm's names: refused beside a real Slurm client, else installed and working.
        let compat = deb("gsched-slurm-compat").display().to_string();
        if installed("slurm-client") {
            let o = run("dpkg", &["-i", &compat]);
            assert!(
                !o.status.success(),
                "gsched-slurm-compat installed beside slurm-client"
            );
            let text = String::from_utf8_lossy(&o.stderr);
            assert!(text.contains("conflicts"), "{text}");
        } else {
            ok("dpkg", &["-i", &compat]);
            let v = ok("/usr/bin/sbatch", &["-V"]);
            assert!(v.starts_with("slurm "), "{v}");
        }
        // The units are valid systemd units, where systemd-analyze exists.
        if Command::new("systemd-analyze")
            .arg("--version")
            .output()
            .is_ok()
        {
            for unit in ["gsctld.service", "gsnoded.service"] {
                let o = run(
                    "systemd-analyze",
                    &["verify", &format!("/lib/systemd/system/{unit}")],
                );
                let err = String::from_utf8_lossy(&o.stderr);
                // Only our unit's own lines matter (verify also reports on others), and not
                // whether `man` is installed to check the Documentation= pages.
                let ours: Vec<&str> = err
                    .lines()
                    .filter(|l| l.contains(unit) && !l.contains("Command 'man "))
                    .collect();
                assert!(ours.is_empty(), "{unit}: {ours:?}");
            }
        }
    });
    purge();
    if let Err(e) = checks {
        std::panic::resume_unwind(e);
    }
    // Purged: the binaries and the controller's state are gone; the user stays (Debian
    // leaves system users, files may still belong to them).
    for p in [
        "/usr/sbin/gsctld",
        "/usr/sbin/gsnoded",
        "/usr/bin/gsbatch",
        "/var/lib/gsched/ctld",
        "/var/spool/gsched/d",
    ] {
        assert!(!Path::new(p).exists(), "{p} left behind by purge");
    }
    for p in ["gsched-client", "gsched-controller", "gsched-node"] {
        assert!(!installed(p), "{p} still installed");
    }
}
