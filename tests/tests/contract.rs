//! The client contract of `../shared/docs/slurm-compat.md` §1 as tests: each block drives
//! the real daemons through exactly the command line a named client runs, through Slurm's
//! command names (`scripts/install.sh --slurm-names`), and reads the answer the way that
//! client's code reads it (its regular expression, its split, its state table). The clients
//! themselves (dask-jobqueue, submitit, snakemake) run in `clients.rs`; this file needs no
//! Python and keeps every expectation, the less travelled ones included, in CI.
//!
//! Two clusters: `batch` (two nodes) for submission, status and control; `steps` (two nodes)
//! for what runs inside jobs (srun steps, the job environment, signals and requeue from
//! inside a job). docs/slurm-compat-matrix.md lists each expectation with its test block.

use gsched_tests::{secs, stderr, stdout, ClusterOpts, JobId, JobState, TestCluster};
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is in the repository")
        .to_path_buf()
}

/// A cluster with Slurm's command names installed in its own prefix, first on `PATH` (also
/// inside the jobs, which inherit the submission environment).
struct Slurm {
    c: TestCluster,
    path: String,
}

impl Slurm {
    fn start(opts: ClusterOpts) -> Slurm {
        let c = TestCluster::start(opts);
        let prefix = c.dir().join("prefix");
        let out = Command::new(repo_root().join("scripts/install.sh"))
            .arg("--prefix")
            .arg(&prefix)
            .arg("--slurm-names")
            .arg("--from")
            .arg(gsched_tests::bins::bin_dir())
            .output()
            .expect("run install.sh");
        assert!(out.status.success(), "{}", stderr(&out));
        let path = format!("{}:/usr/bin:/bin", prefix.join("bin").display());
        Slurm { c, path }
    }

    /// `name` (a Slurm name) with the cluster's environment and this `PATH`.
    fn command(&self, name: &str) -> Command {
        let mut cmd = Command::new(name);
        cmd.env_clear()
            .envs(self.c.base_env())
            .env("PATH", &self.path)
            .current_dir(self.c.workdir())
            .stdin(Stdio::null());
        cmd
    }

    fn run(&self, name: &str, args: &[&str]) -> Output {
        self.command(name)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {name}: {e}"))
    }

    /// A command that must succeed: its stdout.
    fn ok(&self, name: &str, args: &[&str]) -> String {
        let out = self.run(name, args);
        assert!(
            out.status.success(),
            "{}",
            self.c.failure(&format!(
                "`{name} {}` failed ({}): {}{}",
                args.join(" "),
                out.status,
                stdout(&out),
                stderr(&out)
            ))
        );
        stdout(&out)
    }

    /// A shell line, as clients that use `shell=True` run them (snakemake, Parsl).
    fn shell(&self, line: &str) -> Output {
        let mut cmd = self.command("sh");
        cmd.args(["-c", line]);
        cmd.output().expect("run sh")
    }

    /// A command with `input` on its standard input.
    fn with_stdin(&self, mut cmd: Command, input: &str) -> Output {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        child.wait_with_output().expect("wait")
    }

    fn write(&self, rel: &str, text: &str) -> PathBuf {
        let p = self.c.workdir().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        p
    }

    fn wait_done(&self, id: JobId) -> gsched_tests::JobInfo {
        self.c.wait_terminal(id, secs(60))
    }
}

/// The first run of ASCII digits after `prefix` in `text` (a regex `prefix(\d+)`).
fn digits_after(text: &str, prefix: &str) -> Option<JobId> {
    let start = text.find(prefix)? + prefix.len();
    let d: String = text[start..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    d.parse().ok()
}

/// `datetime.now() - 2 days` as snakemake formats it (`%Y-%m-%dT%H:00`).
fn two_days_ago() -> String {
    let out = Command::new("date")
        .args(["-d", "2 days ago", "+%Y-%m-%dT%H:00"])
        .output()
        .expect("date");
    stdout(&out).trim().to_string()
}

/// Polls `f` until it returns `Some` (or fails the test with `what`).
fn until<T>(s: &Slurm, what: &str, f: impl FnMut() -> Option<T>) -> T {
    s.c.wait_for(secs(60), what, f)
}

#[test]
fn submission_status_and_control_as_clients_run_them() {
    let s = Slurm::start(
        ClusterOpts::named("contract")
            .nodes(2)
            .cpus(4)
            .real_memory_mb(4096),
    );
    let user = s.c.user().to_string();
    let work = s.c.workdir();
    // An account and the user's association in it, for the clients that look them up
    // (snakemake, Open OnDemand).
    s.ok("sacctmgr", &["-i", "add", "account", "science"]);
    s.ok("sacctmgr", &["-i", "add", "user", &user, "Account=science"]);

    // --- submitit (slurm/slurm.py) --------------------------------------------------
    // Its generated script: `# Parameters`, sorted `#SBATCH --key=value` lines with
    // shlex-quoted values, GB memory, `--signal=USR2@90`, `--wckey`, `--open-mode=append`,
    // then `srun --unbuffered --output .../%j_%t_log.out`.
    let folder = work.join("submitit");
    std::fs::create_dir_all(&folder).unwrap();
    let f = folder.display();
    let script = format!(
        "#!/bin/bash\n\n# Parameters\n\
         #SBATCH --comment='submitit test'\n\
         #SBATCH --cpus-per-task=1\n\
         #SBATCH --error={f}/%j_0_log.err\n\
         #SBATCH --job-name=submitit\n\
         #SBATCH --mem=1GB\n\
         #SBATCH --nodes=1\n\
         #SBATCH --ntasks-per-node=1\n\
         #SBATCH --open-mode=append\n\
         #SBATCH --output={f}/%j_0_log.out\n\
         #SBATCH --signal=USR2@90\n\
         #SBATCH --time=5\n\
         #SBATCH --wckey=submitit\n\n\
         export SUBMITIT_EXECUTOR=slurm\n\
         srun --unbuffered --output {f}/%j_%t_log.out --error {f}/%j_%t_log.err bash -c 'echo result $SLURM_PROCID'\n"
    );
    let path = s.write("submitit/.submission_file_1.sh", &script);
    let out = s.ok("sbatch", &[path.to_str().unwrap()]);
    // submitit: `re.search(r"job (?P<id>[0-9]+)", output)`.
    let sub_id = digits_after(&out, "job ").expect("submitit finds `job N`");
    // submitit's poll: `sacct -o JobID,State,NodeList --parsable2 -j A -j B`, a header
    // first, step rows (with a `.`) skipped, done when the state is not in its live set.
    let live = [
        "READY",
        "PENDING",
        "RUNNING",
        "UNKNOWN",
        "REQUEUED",
        "COMPLETING",
        "PREEMPTED",
    ];
    let other = s.c.submit(["--wrap", "true"]);
    let states = until(&s, "submitit sees both jobs done", || {
        let text = s.ok(
            "sacct",
            &[
                "-o",
                "JobID,State,NodeList",
                "--parsable2",
                "-j",
                &sub_id.to_string(),
                "-j",
                &other.to_string(),
            ],
        );
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next()?.split('|').collect();
        assert_eq!(header, ["JobID", "State", "NodeList"], "{text}");
        let rows: HashMap<String, String> = lines
            .map(|l| l.split('|').collect::<Vec<_>>())
            .filter(|r| !r[0].is_empty() && !r[0].contains('.'))
            .map(|r| (r[0].to_string(), r[1].to_uppercase()))
            .collect();
        (rows.len() == 2 && rows.values().all(|st| !live.contains(&st.as_str()))).then_some(rows)
    });
    assert_eq!(states[&sub_id.to_string()], "COMPLETED", "{states:?}");
    // submitit names the task logs itself (`%j` → id, `%t` → 0).
    let log = std::fs::read_to_string(folder.join(format!("{sub_id}_0_log.out"))).unwrap();
    assert_eq!(log, "result 0\n");
    // submitit's _interrupt: `scancel <id> --signal SIGTERM` (option after the id).
    let long = s.c.submit(["--wrap", "sleep 300"]);
    s.c.wait_state(long, JobState::Running, secs(30));
    s.ok("scancel", &[&long.to_string(), "--signal", "SIGTERM"]);
    s.ok("scancel", &[&long.to_string()]);
    s.wait_done(long);

    // --- dask-jobqueue (slurm.py) ----------------------------------------------------
    // `#!/usr/bin/env bash`, short options with a space, `%J` in log names; the id is the
    // first integer of sbatch's output; `scancel <id>` on close.
    let logs = work.join("dask-logs");
    std::fs::create_dir_all(&logs).unwrap();
    let l = logs.display();
    let script = format!(
        "#!/usr/bin/env bash\n\n\
         #SBATCH -J dask-worker\n\
         #SBATCH -e {l}/dask-worker-%J.err\n\
         #SBATCH -o {l}/dask-worker-%J.out\n\
         #SBATCH -p debug\n\
         #SBATCH -n 1\n\
         #SBATCH -N 1\n\
         #SBATCH --cpus-per-task=1\n\
         #SBATCH --mem=954M\n\
         #SBATCH -t 00:30:00\n\n\
         echo worker-started\n\
         sleep 300\n"
    );
    let path = s.write("dask/tmp1.sh", &script);
    let out = s.ok("sbatch", &[path.to_str().unwrap()]);
    let first_int: String = out
        .chars()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(char::is_ascii_digit)
        .collect();
    let dask_id: JobId = first_int.parse().expect("dask finds an integer");
    s.c.wait_file_contains(
        &format!("dask-logs/dask-worker-{dask_id}.out"),
        "worker-started",
        secs(30),
    );
    s.ok("scancel", &[&dask_id.to_string()]);
    assert_eq!(s.wait_done(dask_id).state, JobState::Cancelled);

    // --- snakemake-executor-plugin-slurm ---------------------------------------------
    // Probes: `scontrol show config` (MinJobAge line, MaxArraySize regex), `sinfo -o %P`
    // (the default partition carries `*`).
    let cfg = s.ok("scontrol", &["show", "config"]);
    let min_age = cfg
        .lines()
        .find(|l| l.starts_with("MinJobAge"))
        .expect("MinJobAge line");
    assert!(min_age.ends_with("= 300 sec"), "{min_age}");
    let max_array = cfg
        .lines()
        .find_map(|l| l.strip_prefix("MaxArraySize"))
        .map(|r| r.trim_start_matches([' ', '=']).trim().to_string())
        .expect("MaxArraySize");
    assert!(max_array.parse::<u32>().is_ok(), "{max_array}");
    let parts = s.ok("sinfo", &["-o", "%P"]);
    let default: Vec<&str> = parts
        .split_whitespace()
        .filter(|p| p.contains('*'))
        .collect();
    assert_eq!(default, ["debug*"], "{parts}");
    // Submission through a shell, `--parsable`, the id from `out.strip().split(";")[0]`.
    let run_uuid = "a1b2c3d4-snakemake";
    let snake_logs = work.join("snake-logs/rule_a");
    std::fs::create_dir_all(&snake_logs).unwrap();
    let out = s.shell(&format!(
        "sbatch --parsable --job-name {run_uuid} --output {}/%j.log --export=ALL \
         --comment rule_a -p debug -t 5 --mem 100 --ntasks=1 --cpus-per-task=1 \
         -D {} --wrap=\"echo a > a.txt\"",
        snake_logs.display(),
        work.display()
    ));
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let sm_id = text.trim().split(';').next().unwrap();
    assert!(sm_id.bytes().all(|b| b.is_ascii_digit()), "{text}");
    // pass_command_as_script: the script on stdin, `/dev/stdin` as its path.
    let mut cmd = s.command("sbatch");
    cmd.args([
        "--parsable",
        "--job-name",
        run_uuid,
        "--output",
        &format!("{}/%j.log", snake_logs.display()),
        "--export=ALL",
        "--comment",
        "rule_b",
        "-D",
        work.to_str().unwrap(),
        "/dev/stdin",
    ]);
    let out = s.with_stdin(cmd, "#!/bin/sh\necho b > b.txt\n");
    assert!(out.status.success(), "{}", stderr(&out));
    let sm_id2 = stdout(&out).trim().split(';').next().unwrap().to_string();
    // Status: `sacct -X --parsable2 --clusters all --noheader --format=JobIdRaw,State
    // --starttime <2 days ago> --endtime now --name <uuid>`, read as `|`-separated CSV.
    let status = until(&s, "snakemake's jobs complete in sacct", || {
        let out = s.shell(&format!(
            "sacct -X --parsable2 --clusters all --noheader --format=JobIdRaw,State \
             --starttime {} --endtime now --name {run_uuid}",
            two_days_ago()
        ));
        assert!(out.status.success(), "{}", stderr(&out));
        let rows: HashMap<String, String> = stdout(&out)
            .lines()
            .map(|l| l.split('|').collect::<Vec<_>>())
            .map(|r| (r[0].to_string(), r[1].to_string()))
            .collect();
        (rows.len() == 2 && rows.values().all(|st| st == "COMPLETED")).then_some(rows)
    });
    assert!(status.contains_key(sm_id) && status.contains_key(&sm_id2));
    assert!(work.join("a.txt").exists() && work.join("b.txt").exists());
    // The squeue variant (MinJobAge ≥ 120): `--format='%i|%T' --states=all --noheader`.
    let out = s.shell(&format!(
        "squeue --format='%i|%T' --states=all --noheader --name {run_uuid}"
    ));
    let mut rows: Vec<String> = stdout(&out).lines().map(str::to_string).collect();
    rows.sort();
    let mut want = vec![format!("{sm_id}|COMPLETED"), format!("{sm_id2}|COMPLETED")];
    want.sort();
    assert_eq!(rows, want);
    // Its efficiency report's query.
    let eff = s.ok(
        "sacct",
        &[
            &format!("--name={run_uuid}"),
            "--parsable2",
            "--noheader",
            "--format=JobID,JobName,Comment,Elapsed,TotalCPU,NNodes,NCPUS,MaxRSS,ReqMem",
        ],
    );
    let job_row = eff
        .lines()
        .find(|l| l.starts_with(&format!("{sm_id}|")))
        .expect("job row");
    assert_eq!(job_row.split('|').count(), 9, "{job_row}");
    assert_eq!(job_row.split('|').nth(2), Some("rule_a"), "{job_row}");
    // Account guessing: `sacct -nu "<user>" -o Account%256 | tail -1` shlex-split (no
    // shell), so sacct gets `|`, `tail`, `-1` as arguments and must fail.
    let out = s.run(
        "sacct",
        &[
            "-nu",
            &format!("\"{user}\""),
            "-o",
            "Account%256",
            "|",
            "tail",
            "-1",
        ],
    );
    assert!(!out.status.success(), "{out:?}");
    // With an account given it also runs `sshare -U --format Account%256 --noheader`
    // (a missing sshare raises): the caller's associations' accounts, padded.
    let out = s.ok("sshare", &["-U", "--format", "Account%256", "--noheader"]);
    let accounts: Vec<&str> = out.lines().map(str::trim).collect();
    assert!(accounts.contains(&"science"), "{out:?}");
    assert!(out.lines().all(|l| l.len() == 257), "{out:?}");
    // Cancel: `scancel id1 id2 --clusters=all` (the ids may be long gone).
    s.ok("scancel", &[sm_id, &sm_id2, "--clusters=all"]);

    // --- Nextflow (SlurmExecutor.groovy) ----------------------------------------------
    // `.command.run` with space-separated directives and `###` metadata, submitted from
    // the task directory; `Submitted batch job (\d+)` on a line.
    let task = work.join("nf/ab/12345");
    std::fs::create_dir_all(&task).unwrap();
    let script = format!(
        "#!/bin/bash\n\
         #SBATCH -J nf-hello_(1)\n\
         #SBATCH -o {t}/.command.log\n\
         #SBATCH --no-requeue\n\
         #SBATCH --signal B:USR2@30\n\
         #SBATCH -c 2\n\
         #SBATCH -t 00:05:00\n\
         #SBATCH --mem 100M\n\
         #SBATCH -p debug\n\
         ### ---\n\
         ### name: 'hello (1)'\n\
         ### ...\n\
         trap 'exit 140' USR2\n\
         echo hello > {t}/.command.out\n\
         echo $? > {t}/.exitcode\n",
        t = task.display()
    );
    std::fs::write(task.join(".command.run"), script).unwrap();
    let mut cmd = s.command("sbatch");
    cmd.arg(".command.run").current_dir(&task);
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let nf_id = stdout(&out)
        .lines()
        .find_map(|l| digits_after(l, "Submitted batch job "))
        .expect("Nextflow's pattern");
    let nf_long = s.c.submit(["-J", "nf-long", "--wrap", "sleep 300"]);
    s.c.wait_state(nf_long, JobState::Running, secs(30));
    s.ok("scancel", &[&nf_long.to_string()]);
    // Status: `squeue --noheader -o '%i %t' -t all -u <user>` (and with `-p <queue>`),
    // stdout and stderr merged, 2-column lines, the compact state mapped.
    let nf_state = |code: &str| match code {
        "PD" | "CF" => "PENDING",
        "R" | "CG" => "RUNNING",
        "S" | "ST" => "HOLD",
        "CD" => "DONE",
        "CA" | "F" | "TO" | "NF" | "PR" | "BF" => "ERROR",
        _ => "null",
    };
    for extra in ["", " -p debug"] {
        let seen = until(&s, "Nextflow sees its jobs end", || {
            let out = s.shell(&format!(
                "squeue --noheader -o '%i %t' -t all{extra} -u {user} 2>&1"
            ));
            let m: HashMap<JobId, &'static str> = stdout(&out)
                .lines()
                .map(|l| l.split_whitespace().collect::<Vec<_>>())
                .filter(|c| c.len() == 2)
                .filter_map(|c| Some((c[0].parse().ok()?, nf_state(c[1]))))
                .collect();
            (m.get(&nf_id) == Some(&"DONE") && m.get(&nf_long) == Some(&"ERROR")).then_some(m)
        });
        assert!(seen.len() >= 2);
    }
    assert_eq!(
        std::fs::read_to_string(task.join(".exitcode")).unwrap(),
        "0\n"
    );
    assert!(!s.c.job(nf_id).requeue, "--no-requeue");

    // --- Parsl (providers/slurm) --------------------------------------------------------
    // The `sacct -X` probe must exit 0 (else Parsl falls back to squeue).
    assert!(s.run("sacct", &["-X"]).status.success());
    let pdir = work.join("parsl");
    std::fs::create_dir_all(&pdir).unwrap();
    let p = pdir.display();
    let script = format!(
        "#!/bin/bash\n\n\
         #SBATCH --job-name=parsl.block-0\n\
         #SBATCH --output={p}/parsl.submit.stdout\n\
         #SBATCH --error={p}/parsl.submit.stderr\n\
         #SBATCH --nodes=1\n\
         #SBATCH --time=5\n\
         #SBATCH --ntasks-per-node=1\n\
         #SBATCH --exclusive\n\
         #SBATCH --partition=debug\n\
         #SBATCH --mem=1g\n\n\
         echo cpus=$SLURM_CPUS_ON_NODE nodes=$SLURM_JOB_NUM_NODES name=$SLURM_JOB_NAME\n"
    );
    let path = s.write("parsl/parsl.submit", &script);
    let out = s.shell(&format!("sbatch {}", path.display()));
    assert!(out.status.success(), "{}", stderr(&out));
    // `re.match(r"Submitted batch job (?P<id>\S*)", line)`: anchored at the line start.
    let parsl_id: JobId = stdout(&out)
        .lines()
        .find_map(|l| l.strip_prefix("Submitted batch job "))
        .and_then(|r| r.split_whitespace().next())
        .and_then(|t| t.parse().ok())
        .expect("Parsl's anchored pattern");
    let ids = format!("{parsl_id},{nf_id}");
    let got = until(&s, "Parsl sees its job complete", || {
        let out = s.shell(&format!(
            "sacct -X --noheader --format=jobid,state%20 --job '{ids}'"
        ));
        assert!(out.status.success());
        let m: HashMap<String, String> = stdout(&out)
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .filter(|c| c.len() >= 2)
            .map(|c| (c[0].to_string(), c[1].to_string()))
            .collect();
        (m.get(&parsl_id.to_string()).map(String::as_str) == Some("COMPLETED")).then_some(m)
    });
    assert_eq!(got[&nf_id.to_string()], "COMPLETED");
    let out = s.shell(&format!("squeue --noheader --format='%i %t' --job '{ids}'"));
    assert!(out.status.success());
    assert_eq!(
        std::fs::read_to_string(pdir.join("parsl.submit.stdout")).unwrap(),
        "cpus=4 nodes=1 name=parsl.block-0\n",
        "--exclusive: the whole node"
    );

    // --- Open OnDemand (ood_core adapters/slurm.rb) -------------------------------------
    // `sbatch ... --parsable` with the script on stdin, `SBATCH_EXPORT=NONE`, `--export`
    // naming the variables to pass, `-H`, `--mem <N>K`, `-t H:MM:SS`.
    let odir = work.join("ood");
    std::fs::create_dir_all(&odir).unwrap();
    let mut cmd = s.command("sbatch");
    cmd.env("SBATCH_EXPORT", "NONE")
        .env("OOD_VAR", "from-ood")
        .args([
            "-H",
            "-D",
            odir.to_str().unwrap(),
            "-J",
            "ood-app",
            "-o",
            "ood.out",
            "--export",
            "OOD_VAR",
            "-t",
            "0:05:00",
            "--mem",
            "102400K",
            "--parsable",
        ]);
    let out = s.with_stdin(cmd, "#!/bin/bash\necho var=$OOD_VAR\n");
    assert!(out.status.success(), "{}", stderr(&out));
    let ood_id = stdout(&out).trim().split(';').next().unwrap().to_string();
    // Status: `squeue --all --states=all --noconvert -O <Field>:\x1F,...`, the header line
    // skipped, records split on \x1F, the job found by JobID.
    let fields = [
        "Account",
        "JobID",
        "BatchHost",
        "MinCpus",
        "NumCPUs",
        "MinTmpDisk",
        "NumNodes",
        "EndTime",
        "Dependency",
        "Feature",
        "ArrayJobID",
        "GroupName",
        "GroupID",
        "OverSubscribe",
        "Sockets",
        "JobArrayID",
        "Cores",
        "Name",
        "Threads",
        "Comment",
        "ArrayTaskID",
        "TimeLimit",
        "TimeLeft",
        "MinMemory",
        "TimeUsed",
        "ReqNodes",
        "NodeList",
        "Command",
        "Contiguous",
        "QOS",
        "Partition",
        "PriorityLong",
        "Reason",
        "StartTime",
        "StateCompact",
        "State",
        "UserName",
        "UserID",
        "Reservation",
        "SubmitTime",
        "WCKey",
        "Licenses",
        "ExcNodes",
        "CoreSpec",
        "Nice",
        "SchedNodes",
        "SCT",
        "WorkDir",
        "tres-alloc",
        "tres-per-node",
    ];
    let spec: String = fields.iter().map(|f| format!("{f}:\x1F,")).collect();
    let ood_record = |s: &Slurm| -> HashMap<&'static str, String> {
        let out = s.ok(
            "squeue",
            &[
                "--all",
                "--states=all",
                "--noconvert",
                "-O",
                &spec,
                "-j",
                &ood_id,
                "-M",
                &s.c.opts().cluster_name,
            ],
        );
        let (header, body) = out.split_once("\x1F\n").expect("header line");
        assert!(header.starts_with("ACCOUNT\x1FJOBID\x1F"), "{header:?}");
        let rec: Vec<&str> = body.trim_end_matches('\n').split('\x1F').collect();
        assert!(rec.len() >= fields.len(), "{rec:?}");
        fields
            .iter()
            .copied()
            .zip(rec.iter().map(|v| v.to_string()))
            .collect()
    };
    let r = ood_record(&s);
    assert_eq!(r["JobID"], ood_id);
    assert_eq!(
        (r["State"].as_str(), r["StateCompact"].as_str()),
        ("PENDING", "PD")
    );
    assert_eq!(r["Reason"], "JobHeldUser");
    assert_eq!(r["StartTime"], "N/A");
    assert_eq!(r["MinMemory"], "100M", "--noconvert keeps MiB");
    assert!(
        r["tres-alloc"].starts_with("cpu=1,mem=100M,node=1"),
        "{r:?}"
    );
    // `scontrol release <id>` (and `hold`), then the job runs with its one variable.
    s.ok("scontrol", &["release", &ood_id]);
    let ood_n: JobId = ood_id.parse().unwrap();
    assert_eq!(s.wait_done(ood_n).state, JobState::Completed);
    assert_eq!(
        std::fs::read_to_string(odir.join("ood.out")).unwrap(),
        "var=from-ood\n"
    );
    let r = ood_record(&s);
    assert_eq!(
        (r["State"].as_str(), r["StateCompact"].as_str()),
        ("COMPLETED", "CD")
    );
    // The older -o form: records start with \x1E.
    let out = s.ok(
        "squeue",
        &[
            "--all",
            "--states=all",
            "--noconvert",
            "-h",
            "-o",
            "\x1E%A\x1F%T\x1F%j",
            "-j",
            &ood_id,
        ],
    );
    assert_eq!(out, format!("\x1E{ood_id}\x1FCOMPLETED\x1Food-app\n"));
    // Cluster info: `scontrol show part -o`, `sinfo -aho %F/%C`, `sinfo -ahNO ...`,
    // `sinfo -ho "\x1E%c\x1F%n\x1F%f"`.
    let part = s.ok(
        "scontrol",
        &["-M", &s.c.opts().cluster_name, "show", "part", "-o"],
    );
    assert_eq!(part.lines().count(), 1, "{part}");
    assert!(part.starts_with("PartitionName=debug "), "{part}");
    // (OOD appends `-M <cluster>` to every call but sacctmgr's.)
    let agg = s.ok("sinfo", &["-aho", "%F/%C", "-M", &s.c.opts().cluster_name]);
    let n: Vec<u32> = agg
        .trim()
        .split('/')
        .map(|x| x.parse().expect("number"))
        .collect();
    assert_eq!(n.len(), 8, "{agg}");
    assert_eq!((n[3], n[7]), (2, 8), "{agg}");
    let nodes = s.ok(
        "sinfo",
        &["-ahNO", "nodehost:100,gres:512,gresused:512,statelong"],
    );
    assert_eq!(nodes.lines().count(), 2, "{nodes}");
    assert!(
        nodes.lines().all(|l| l.split_whitespace().count() == 4),
        "{nodes}"
    );
    let recs = s.ok("sinfo", &["-ho", "\x1E%c\x1F%n\x1F%f"]);
    let recs: Vec<&str> = recs.split('\x1E').filter(|r| !r.is_empty()).collect();
    assert!(recs[0].starts_with("4\x1F"), "{recs:?}");
    // Accounting: `sacct -P --delimiter \x1F -n --units G --allocations -o ...`.
    let acct_fields = "User,Group,JobId,JobName,Elapsed,ReqMem,AllocCPUS,ReqCPUS,Timelimit,State,TotalCPU,MaxRSS,Partition,Submit,Start,End,ReqTRES";
    let out = s.ok(
        "sacct",
        &[
            "-P",
            "--delimiter",
            "\x1F",
            "-n",
            "--units",
            "G",
            "--allocations",
            "-o",
            acct_fields,
            "-j",
            &ood_id,
        ],
    );
    let rec: Vec<&str> = out.trim_end().split('\x1F').collect();
    assert_eq!(rec.len(), 17, "{out:?}");
    assert_eq!(
        (rec[2], rec[3], rec[9]),
        (ood_id.as_str(), "ood-app", "COMPLETED")
    );
    // Its association lookup (no `-M` for sacctmgr); snakemake's account probe is the same
    // command with `-n -s list user "<user>" format=account%256`. Both succeed.
    let answers: Vec<String> = [
        vec![
            "-nP".to_string(),
            "show".into(),
            "users".into(),
            "withassoc".into(),
            "format=account,qos".into(),
            "where".into(),
            format!("user={user}"),
            format!("cluster={}", s.c.opts().cluster_name),
        ],
        vec![
            "-n".to_string(),
            "-s".into(),
            "list".into(),
            "user".into(),
            user.clone(),
            "format=account%256".into(),
        ],
    ]
    .iter()
    .map(|args| {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        s.ok("sacctmgr", &a)
    })
    .collect();
    // OOD splits each line on `|`; snakemake strips the padded values.
    assert!(
        answers[0]
            .lines()
            .any(|l| l.split('|').collect::<Vec<_>>() == ["science", "normal"]),
        "{answers:?}"
    );
    assert!(
        answers[1].lines().any(|l| l.trim() == "science"),
        "{answers:?}"
    );
    // `scontrol hold` of a pending job.
    let held = s.c.submit(["--begin=now+1hour", "--wrap", "true"]);
    s.ok("scontrol", &["hold", &held.to_string()]);
    assert!(s.c.job(held).held);
    s.ok("scancel", &[&held.to_string()]);

    // --- batchspawner (SlurmSpawner) ----------------------------------------------------
    // `sbatch --parsable` on stdin, `--get-user-env=L`, `--chdir`; status
    // `squeue -h -j {id} -o '%T %B'` matched with `^(?:RUNNING|COMPLETING)` and the host
    // regex `\s+((?:[\w_-]+\.?)+)$`.
    let mut cmd = s.command("sbatch");
    cmd.arg("--parsable");
    let bs = format!(
        "#!/bin/bash\n\
         #SBATCH --output={w}/jupyterhub_slurmspawner_%j.log\n\
         #SBATCH --job-name=spawner-jupyterhub\n\
         #SBATCH --chdir={w}\n\
         #SBATCH --export=PATH,GSCHED_CONF\n\
         #SBATCH --get-user-env=L\n\n\
         srun sleep 300\n",
        w = work.display()
    );
    let out = s.with_stdin(cmd, &bs);
    assert!(out.status.success(), "{}", stderr(&out));
    let bs_id: JobId = stdout(&out)
        .trim()
        .split(';')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let host = until(&s, "batchspawner sees the job run", || {
        let line = s.ok("squeue", &["-h", "-j", &bs_id.to_string(), "-o", "%T %B"]);
        let line = line.trim_end();
        if !(line.starts_with("RUNNING") || line.starts_with("COMPLETING")) {
            return None;
        }
        let host = line.rsplit(char::is_whitespace).next()?;
        host.chars()
            .all(|c| c.is_alphanumeric() || "_-.".contains(c))
            .then(|| host.to_string())
    });
    assert!(s.c.node_names().contains(&host), "{host}");
    s.ok("scancel", &[&bs_id.to_string()]);
    s.wait_done(bs_id);

    // --- Unknown job ids, as clients meet them ---------------------------------------------
    // squeue with one unknown id: Slurm's message, exit 1 (several ids: exit 0).
    let out = s.run("squeue", &["-j", "999999"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out).trim_end(),
        "slurm_load_jobs error: Invalid job id specified"
    );
    assert!(s.run("squeue", &["-j", "999998,999999"]).status.success());
    // scancel of an unknown or finished id: silent, exit 0 (dask, Nextflow, snakemake).
    let out = s.run("scancel", &["999999", &nf_id.to_string()]);
    assert!(out.status.success() && stderr(&out).is_empty(), "{out:?}");
    let out = s.run("scontrol", &["show", "job", "999999"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out).trim_end(),
        "slurm_load_jobs error: Invalid job id specified"
    );
    // sacct: a header and nothing else.
    let out = s.ok("sacct", &["-P", "-j", "999999", "-o", "JobID,State"]);
    assert_eq!(out, "JobID|State\n");

    // --- scancel's array forms (submitit cancels `N_K`; users `N_[a-b]`, `N_*`) ----------
    let arr = s.c.submit(["-H", "--array=0-3", "--wrap", "true"]);
    s.ok("scancel", &[&format!("{arr}_[1-2]"), &format!("{arr}_3")]);
    let task_states = |s: &Slurm| -> Vec<String> {
        let out = s.ok(
            "squeue",
            &[
                "-h",
                "-r",
                "-t",
                "all",
                "-o",
                "%i %T",
                "-j",
                &arr.to_string(),
            ],
        );
        out.lines().map(str::to_string).collect()
    };
    let got = until(&s, "tasks 1-3 cancelled", || {
        let v = task_states(&s);
        (v.iter().filter(|l| l.ends_with(" CANCELLED")).count() == 3).then_some(v)
    });
    assert!(got.contains(&format!("{arr}_0 PENDING")), "{got:?}");
    s.ok("scancel", &[&format!("{arr}_*")]);
    until(&s, "the whole array cancelled", || {
        let v = task_states(&s);
        v.iter().all(|l| l.ends_with(" CANCELLED")).then_some(())
    });

    // --- Versions and data dumps ----------------------------------------------------------
    for name in [
        "sbatch", "squeue", "scancel", "sinfo", "scontrol", "sacct", "sacctmgr", "sprio", "seff",
        "srun", "sstat", "sshare",
    ] {
        for flag in ["-V", "--version"] {
            let v = s.ok(name, &[flag]);
            let parts: Vec<u32> = v
                .trim()
                .strip_prefix("slurm ")
                .unwrap_or_else(|| panic!("{name} {flag}: {v}"))
                .split('.')
                .map(|p| p.parse().unwrap())
                .collect();
            assert_eq!(parts, [22, 5, 8], "{name} {flag}");
        }
    }
    // squeue/sacct/sinfo/scontrol --json: what readers of Slurm's dumps look up.
    let v: serde_json::Value =
        serde_json::from_str(&s.ok("squeue", &["--json", "-t", "all"])).unwrap();
    let job = v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["job_id"] == ood_n)
        .expect("the job in squeue --json");
    assert_eq!(job["job_state"], "COMPLETED");
    assert_eq!(job["name"], "ood-app");
    assert_eq!(job["user_name"], user.as_str());
    let v: serde_json::Value =
        serde_json::from_str(&s.ok("sacct", &["--json", "-j", &sub_id.to_string()])).unwrap();
    assert_eq!(v["jobs"][0]["job_id"], sub_id);
    assert_eq!(v["jobs"][0]["state"]["current"], "COMPLETED");
    assert_eq!(v["jobs"][0]["exit_code"]["return_code"], 0);
    let step_ids: Vec<&str> = v["jobs"][0]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|st| st["step"]["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        step_ids,
        [format!("{sub_id}.batch"), format!("{sub_id}.0")],
        "{v}"
    );
    let v: serde_json::Value = serde_json::from_str(&s.ok("sinfo", &["--json"])).unwrap();
    assert_eq!(v["nodes"].as_array().unwrap().len(), 2);
    assert_eq!(v["partitions"][0]["name"], "debug");
    let v: serde_json::Value =
        serde_json::from_str(&s.ok("scontrol", &["--json", "show", "job", &ood_id])).unwrap();
    assert_eq!(v["jobs"][0]["job_id"], ood_n);
    let yaml = s.ok("squeue", &["--yaml", "-j", &bs_id.to_string(), "-t", "all"]);
    assert!(
        yaml.starts_with("---\nmeta:\n") && yaml.contains(&format!("\n    job_id: {bs_id}\n")),
        "{yaml}"
    );
}

#[test]
fn inside_jobs_steps_environment_signals_and_requeue() {
    let s = Slurm::start(ClusterOpts::named("contract-steps").nodes(2).cpus(2));
    let work = s.c.workdir();
    let w = work.display();

    // --- Ray (slurm-basic.sh / slurm-template.sh) ----------------------------------------
    // Blank lines and `###` comments between directives, `--tasks-per-node`,
    // `--mem-per-cpu=<N>MB`; `scontrol show hostnames "$SLURM_JOB_NODELIST"`, then one
    // `srun --nodes=1 --ntasks=1 -w "$node"` per host.
    let ray = format!(
        "#!/bin/bash\n\
         #SBATCH --job-name=ray-test\n\
         \n\
         ### This script works for any number of nodes\n\
         #SBATCH --nodes=2\n\
         #SBATCH --tasks-per-node=1\n\
         \n\
         #SBATCH --cpus-per-task=1\n\
         #SBATCH --mem-per-cpu=100MB\n\
         #SBATCH --time=00:30:00\n\
         #SBATCH --output={w}/ray.log\n\
         nodes=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\")\n\
         nodes_array=($nodes)\n\
         echo nodes=${{#nodes_array[@]}} cpt=$SLURM_CPUS_PER_TASK nn=$SLURM_JOB_NUM_NODES\n\
         for node in \"${{nodes_array[@]}}\"; do\n\
           srun --nodes=1 --ntasks=1 -w \"$node\" bash -c 'echo on $SLURMD_NODENAME'\n\
         done\n"
    );
    let path = s.write("ray.sh", &ray);
    s.ok("sbatch", &[path.to_str().unwrap()]);

    // --- Parsl SrunLauncher and MPI mode ------------------------------------------------
    // `srun --ntasks N -l bash cmd_$SLURM_JOB_NAME.sh`; `scontrol show hostname` (a
    // prefix of `hostnames`) of `$SLURM_NODELIST`.
    s.write(
        "cmd_parsl.sh",
        "echo worker $SLURM_PROCID of $SLURM_NTASKS\n",
    );
    let parsl = format!(
        "#!/bin/bash\n\
         #SBATCH --job-name=parsl\n\
         #SBATCH --nodes=2\n\
         #SBATCH --ntasks-per-node=1\n\
         #SBATCH --output={w}/parsl.log\n\
         scontrol show hostname $SLURM_NODELIST | tr '\\n' ' '; echo\n\
         srun --ntasks 2 -l bash {w}/cmd_$SLURM_JOB_NAME.sh | sort\n"
    );
    let path = s.write("parsl.sh", &parsl);
    s.ok("sbatch", &[path.to_str().unwrap()]);

    // --- snakemake jobstep plugin -------------------------------------------------------
    // `srun -n1 --cpu-bind=q --cpus-per-task=N <cmd>` and the `sh -s` form with the command
    // on stdin; `SLURM_JOB_ID` read inside.
    let snake = format!(
        "#!/bin/bash\n\
         #SBATCH -c 2\n\
         #SBATCH --output={w}/snake.log\n\
         srun -n1 --cpu-bind=q --cpus-per-task=2 bash -c 'echo rule ran in $SLURM_JOB_ID'\n\
         echo 'echo from stdin' | srun -n1 --cpu-bind=q sh -s\n"
    );
    let path = s.write("snake.sh", &snake);
    let snake_id = digits_after(&s.ok("sbatch", &[path.to_str().unwrap()]), "job ").unwrap();

    // --- dask-jobqueue SLURMRunner ------------------------------------------------------
    // Inside `srun -n 3`: `SLURM_PROCID`, `SLURM_NTASKS`, `SLURM_JOB_ID` must all be set.
    let dask = format!(
        "#!/bin/bash\n\
         #SBATCH -n 3\n\
         #SBATCH --output={w}/runner.log\n\
         srun -n 3 bash -c 'echo rank=$SLURM_PROCID of=$SLURM_NTASKS job=$SLURM_JOB_ID' | sort\n"
    );
    let path = s.write("runner.sh", &dask);
    let runner_id = digits_after(&s.ok("sbatch", &[path.to_str().unwrap()]), "job ").unwrap();

    // --- PyTorch Lightning (SLURMEnvironment, signal connector) ---------------------------
    // `--signal=SIGUSR1@90`-style warning without `B:`: it reaches the srun tasks, not the
    // batch shell; rank 0 then runs `scontrol requeue $SLURM_JOB_ID` and expects exit 0
    // (SIGTERM is bypassed, as Lightning does). The rerun (SLURM_RESTART_COUNT=1)
    // finishes. A 1-minute limit with `@55` fires soon.
    let lightning = format!(
        "#!/bin/bash\n\
         #SBATCH --job-name=lightning\n\
         #SBATCH --nodes=2\n\
         #SBATCH --ntasks-per-node=1\n\
         #SBATCH --signal=SIGUSR1@55\n\
         #SBATCH -t 1\n\
         #SBATCH --open-mode=append\n\
         #SBATCH --output={w}/lightning.log\n\
         srun bash -c '\n\
           echo env ntasks=$SLURM_NTASKS rank=$SLURM_PROCID local=$SLURM_LOCALID node=$SLURM_NODEID pn=$SLURM_NTASKS_PER_NODE name=$SLURM_JOB_NAME list=$SLURM_NODELIST\n\
           if [ \"${{SLURM_RESTART_COUNT:-0}}\" -gt 0 ]; then echo rerun $SLURM_PROCID; exit 0; fi\n\
           trap \"\" TERM\n\
           trap \"if [ $SLURM_PROCID = 0 ]; then scontrol requeue $SLURM_JOB_ID; echo requeue-rc=\\$? > {w}/lightning.rc; fi\" USR1\n\
           while true; do sleep 0.2; done'\n"
    );
    let path = s.write("lightning.sh", &lightning);
    let lt_id = digits_after(&s.ok("sbatch", &[path.to_str().unwrap()]), "job ").unwrap();

    // --- submitit (array task requeue on USR2) ---------------------------------------------
    // `--signal=USR2@90` (no `B:`), `srun --unbuffered --output %A_%a_%t`; on USR2 the
    // task runs `scontrol requeue ${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}`.
    let folder = work.join("submitit");
    std::fs::create_dir_all(&folder).unwrap();
    let f = folder.display();
    let submitit = format!(
        "#!/bin/bash\n\n# Parameters\n\
         #SBATCH --array=0-1%2\n\
         #SBATCH --error={f}/%A_%a_0_log.err\n\
         #SBATCH --job-name=submitit\n\
         #SBATCH --open-mode=append\n\
         #SBATCH --output={f}/%A_%a_0_log.out\n\
         #SBATCH --signal=USR2@55\n\
         #SBATCH --time=1\n\n\
         srun --unbuffered --output {f}/%A_%a_%t_log.out --error {f}/%A_%a_%t_log.err bash -c '\n\
           if [ \"${{SLURM_RESTART_COUNT:-0}}\" -gt 0 ]; then echo second-run $SLURM_ARRAY_TASK_ID; exit 0; fi\n\
           trap \"\" TERM\n\
           trap \"scontrol requeue ${{SLURM_ARRAY_JOB_ID}}_${{SLURM_ARRAY_TASK_ID}}; echo requeue-rc=\\$?\" USR2\n\
           echo first-run\n\
           while true; do sleep 0.2; done'\n"
    );
    let path = s.write("submitit.sh", &submitit);
    let arr = digits_after(&s.ok("sbatch", &[path.to_str().unwrap()]), "job ").unwrap();

    // Ray: both hosts, one step each.
    let text = s.c.wait_file_contains("ray.log", "on n2", secs(60));
    assert!(
        text.starts_with("nodes=2 cpt=1 nn=2\non n1\non n2\n"),
        "{text}"
    );
    // Parsl: the hosts, then labelled task lines.
    let text = s.c.wait_file_contains("parsl.log", "1: worker", secs(60));
    assert_eq!(
        text, "n1 n2 \n0: worker 0 of 2\n1: worker 1 of 2\n",
        "{text}"
    );
    // snakemake's steps.
    s.wait_done(snake_id);
    assert_eq!(
        s.c.read_work_file("snake.log"),
        format!("rule ran in {snake_id}\nfrom stdin\n")
    );
    // SLURMRunner's three ranks.
    s.wait_done(runner_id);
    assert_eq!(
        s.c.read_work_file("runner.log"),
        format!("rank=0 of=3 job={runner_id}\nrank=1 of=3 job={runner_id}\nrank=2 of=3 job={runner_id}\n")
    );

    // Lightning: requeued once by its rank 0, then done.
    let j =
        s.c.wait_job(lt_id, secs(90), "requeued once and completed", |j| {
            j.state == JobState::Completed && j.restarts == 1
        });
    assert_eq!(j.exit_code, 0);
    // (The task writes the status to a file: srun, killed with the batch shell when the
    // job is requeued, may not relay its last line.)
    assert_eq!(s.c.read_work_file("lightning.rc"), "requeue-rc=0\n");
    let log = s.c.read_work_file("lightning.log");
    assert!(log.contains("rerun 0") && log.contains("rerun 1"), "{log}");
    for want in [
        "env ntasks=2 rank=0 local=0 node=0 pn=1 name=lightning list=n[1-2]",
        "env ntasks=2 rank=1 local=0 node=1 pn=1 name=lightning list=n[1-2]",
    ] {
        assert!(log.contains(want), "{want} in {log}");
    }

    // submitit: each array task requeued itself by `N_K` and finished in its second run.
    for k in 0..2u32 {
        let task = s.c.wait_for(secs(90), "the array task reran", || {
            s.c.jobs()
                .into_iter()
                .find(|j| j.array.is_some_and(|a| (a.job_id, a.task_id) == (arr, k)))
                .filter(|j| j.state == JobState::Completed && j.restarts == 1)
        });
        let log = std::fs::read_to_string(folder.join(format!("{arr}_{k}_0_log.out"))).unwrap();
        assert!(
            log.contains("first-run") && log.contains("requeue-rc=0"),
            "{log}"
        );
        assert!(log.contains(&format!("second-run {k}")), "{log}");
        assert!(task.restarts == 1);
    }
}
