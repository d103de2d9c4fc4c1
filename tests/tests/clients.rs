//! Real Slurm clients, unmodified, against gsched through Slurm's command names
//! (`scripts/install.sh --slurm-names` into the test's own prefix). The clients are installed
//! from PyPI at pinned versions into `.clients-venv/` by `tests/clients/setup.sh`, which
//! `.ci/run` runs; where that virtual environment is missing the test says so and skips.
//! dask-jobqueue uses sbatch/squeue/scancel; submitit and snakemake also run job steps with
//! srun (gsrun) inside their jobs.

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

/// submitit's `SlurmExecutor` pickles a function, submits it with `sbatch`, runs it inside the
/// job with `srun --unbuffered --output <folder>/%j_%t_log.out --error ...` (a job step, so
/// `gsrun` must expand `%j %t` exactly like srun), polls `sacct --parsable2 -j <id>`, and
/// reads the result back.
#[test]
fn submitit_runs_a_function_through_sbatch_and_srun() {
    let Some(py) = venv_python("submitit") else {
        return;
    };
    let c = TestCluster::start(ClusterOpts::named("submitit").nodes(1).cpus(2));
    let path = slurm_path(&c, &py);
    let folder = c.dir().join("submitit");
    let out = Command::new(&py)
        .arg(repo_root().join("tests/clients/submitit_add.py"))
        .arg(&folder)
        .env_clear()
        .envs(c.base_env())
        .env("PATH", path)
        .current_dir(c.workdir())
        .output()
        .expect("run python");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("result=5"),
        "submitit run failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    let id: u32 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("job="))
        .expect("job id printed")
        .parse()
        .expect("numeric job id");
    // The function ran in step 0, whose %j_%t log submitit named itself.
    assert!(folder.join(format!("{id}_0_log.out")).is_file());
    let acct = c.cmd_ok(
        "gsacct",
        ["-P", "-n", "-o", "JobID,State", "-j", &id.to_string()],
    );
    assert!(acct.contains(&format!("{id}.0|COMPLETED")), "{acct}");
}

/// snakemake with snakemake-executor-plugin-slurm runs a three-rule workflow to completion:
/// each rule is submitted with `sbatch`, runs inside its job through the jobstep plugin's
/// `srun -n1 --cpu-bind=q ...` (a gsrun step), and is followed with `sacct`.
#[test]
fn snakemake_runs_a_three_rule_workflow() {
    let Some(py) = venv_python("snakemake_executor_plugin_slurm") else {
        return;
    };
    let c = TestCluster::start(ClusterOpts::named("snakemake").nodes(1).cpus(2));
    let path = slurm_path(&c, &py);
    let work = c.dir().join("snakemake-work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::copy(
        repo_root().join("tests/clients/snakemake/Snakefile"),
        work.join("Snakefile"),
    )
    .unwrap();
    let out = Command::new(py.parent().unwrap().join("snakemake"))
        .args([
            "--executor",
            "slurm",
            "--jobs",
            "3",
            "--latency-wait",
            "10",
            "--default-resources",
            "slurm_partition=debug",
            "runtime=5",
            "mem_mb=100",
        ])
        .env_clear()
        .envs(c.base_env())
        .env("PATH", path)
        .env("HOME", c.dir())
        .current_dir(&work)
        .output()
        .expect("run snakemake");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "snakemake failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    assert_eq!(
        std::fs::read_to_string(work.join("c.txt")).unwrap(),
        "a\nb\nc\n"
    );
    // Three batch jobs, each with its srun step.
    let acct = c.cmd_ok("gsacct", ["-P", "-n", "-o", "JobID,State"]);
    let steps = acct.lines().filter(|l| l.contains(".0|COMPLETED")).count();
    assert_eq!(steps, 3, "{acct}");
}
