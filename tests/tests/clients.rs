//! Real Slurm clients, unmodified, against gsched through Slurm's command names
//! (`scripts/install.sh --slurm-names` into the test's own prefix). The clients are installed
//! from PyPI at pinned versions into `.clients-venv/` by `tests/clients/setup.sh`, which
//! `.ci/run` runs; where that virtual environment is missing the test says so and skips.

use gsched_tests::{secs, ClusterOpts, TestCluster};
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is in the repository")
        .to_path_buf()
}

/// The clients' Python, if `tests/clients/setup.sh` has installed them.
fn venv_python(module: &str) -> Option<PathBuf> {
    let py = repo_root().join(".clients-venv/bin/python");
    let ok = Command::new(&py)
        .args(["-c", &format!("import {module}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        Some(py)
    } else {
        eprintln!(
            "skipping: {module} is not installed in .clients-venv (run tests/clients/setup.sh; .ci/run does)"
        );
        None
    }
}

/// Installs the Slurm names for the cluster; returns the `PATH` the client runs with.
fn slurm_path(c: &TestCluster, python: &Path) -> String {
    let prefix = c.dir().join("prefix");
    let out = Command::new(repo_root().join("scripts/install.sh"))
        .arg("--prefix")
        .arg(&prefix)
        .arg("--slurm-names")
        .arg("--from")
        .arg(gsched_tests::bins::bin_dir())
        .output()
        .expect("run install.sh");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    format!(
        "{}:{}:/usr/bin:/bin",
        prefix.join("bin").display(),
        python.parent().unwrap().display()
    )
}

/// dask-jobqueue's `SLURMCluster` starts two workers as batch jobs (its own `#SBATCH -J -e -o
/// -n -N --cpus-per-task --mem -t` script), computes on them, and `scancel`s them on close.
#[test]
fn dask_jobqueue_computes_on_gsched_workers() {
    let Some(py) = venv_python("dask_jobqueue") else {
        return;
    };
    let c = TestCluster::start(ClusterOpts::named("dask").nodes(1).cpus(2));
    let path = slurm_path(&c, &py);
    let logs = c.dir().join("dask-logs");
    std::fs::create_dir_all(&logs).unwrap();
    let out = Command::new(&py)
        .arg(repo_root().join("tests/clients/dask_sum.py"))
        .arg(&logs)
        .env_clear()
        .envs(c.base_env())
        .env("PATH", path)
        .current_dir(c.workdir())
        .output()
        .expect("run python");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("sum=328350"),
        "dask run failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    // Both worker jobs were gsched jobs, and closing the cluster cancelled them.
    let ids: Vec<u32> = stdout
        .lines()
        .find_map(|l| l.strip_prefix("jobs="))
        .expect("job ids printed")
        .split(',')
        .map(|s| s.parse().expect("numeric job id"))
        .collect();
    assert_eq!(ids.len(), 2, "{stdout}");
    for id in ids {
        let j = c.wait_terminal(id, secs(60));
        assert_eq!(j.name, "dask-worker", "{j:?}");
    }
}
