//! Man pages of gsched's commands (section 1) and daemons (section 8), generated from the
//! programs' own `--help` text, so that the pages cannot say something the programs do not.
//! `cargo run -p gsched-xtask -- man` writes them under `man/`; the integration test
//! `tests/tests/man_pages.rs` regenerates them and fails when the committed pages drift.
//!
//! A page is NAME, SYNOPSIS (the usage line), DESCRIPTION (written here, one paragraph per
//! program), OPTIONS (the help text verbatim, unfilled) and SEE ALSO.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// One program with a page: its binary, section, Slurm's name for it, a one-line summary
/// and the description paragraph.
pub struct Program {
    pub name: &'static str,
    pub section: u8,
    pub slurm: Option<&'static str>,
    pub summary: &'static str,
    pub description: &'static str,
}

pub const PROGRAMS: &[Program] = &[
    Program {
        name: "gsbatch",
        section: 1,
        slurm: Some("sbatch"),
        summary: "submit a batch script to gsched",
        description: "gsbatch submits a batch script (a file, standard input, or a command line given with --wrap) to the gsched controller and prints the job id once the job is stored. Options come from the command line, then SBATCH_* environment variables, then #SBATCH lines of the script, with Slurm's precedence, units and file name patterns.",
    },
    Program {
        name: "gsqueue",
        section: 1,
        slurm: Some("squeue"),
        summary: "list pending and running jobs",
        description: "gsqueue lists the jobs the controller knows, in squeue's default, long, -o and -O formats; finished jobs stay visible for MinJobAge seconds with -t all. Pending array tasks are shown as one record unless -r is given; --start shows expected start times.",
    },
    Program {
        name: "gscancel",
        section: 1,
        slurm: Some("scancel"),
        summary: "cancel or signal jobs",
        description: "gscancel cancels jobs (every process they started) or sends them a signal, selected by id (N, N_K, N_[a-b]) or by filters that all apply together.",
    },
    Program {
        name: "gsinfo",
        section: 1,
        slurm: Some("sinfo"),
        summary: "show partitions and nodes",
        description: "gsinfo shows the partitions and the states of their nodes in sinfo's formats.",
    },
    Program {
        name: "gscontrol",
        section: 1,
        slurm: Some("scontrol"),
        summary: "show and change jobs, nodes, partitions and the configuration",
        description: "gscontrol shows jobs, nodes, partitions and the configuration in scontrol's Key=Value shapes, and holds, releases, requeues and updates jobs and nodes.",
    },
    Program {
        name: "gsacct",
        section: 1,
        slurm: Some("sacct"),
        summary: "accounting records of jobs",
        description: "gsacct reports jobs, finished ones of any age included, from the controller's own store (no accounting database is needed), with sacct's fields, widths, parsable layouts and batch step lines.",
    },
    Program {
        name: "gsacctmgr",
        section: 1,
        slurm: Some("sacctmgr"),
        summary: "show and change accounts, users, associations and QOS",
        description: "gsacctmgr adds, modifies, deletes and lists the accounts, users, associations and QOS that the controller keeps in its own store (no accounting database is needed) and enforces with AccountingStorageEnforce, in sacctmgr's grammar and listing layout. Changes need root, SlurmUser or AdminLevel=Administrator.",
    },
    Program {
        name: "gsprio",
        section: 1,
        slurm: Some("sprio"),
        summary: "the factors of pending jobs' priority",
        description: "gsprio shows, under PriorityType=priority/multifactor, the weighted (or with -n normalized) factors of each pending job's priority as the controller last computed them: age, fair-share, job size, partition and QOS, in sprio's formats; -w shows the weights.",
    },
    Program {
        name: "gseff",
        section: 1,
        slurm: Some("seff"),
        summary: "how well a job used its CPUs and memory",
        description: "gseff prints, in the layout of Slurm's seff, a job's CPU time against its core-walltime and its peak memory against its allocation, from the controller's own store (the figures come from the job's cgroup when it ended), followed, where there is data, by gsched's lines: the mean utilization of the job's GPUs and their peak memory against what it was given (from the GPU samples of its run), and its estimated energy and cost as gsacct shows them. Options: -h (usage), -v (version), -d (the raw figures first). A job that is not known exits with status 2 and 'Job not found.'.",
    },
    Program {
        name: "gsrun",
        section: 1,
        slurm: Some("srun"),
        summary: "run a parallel job step inside an allocation",
        description: "gsrun runs a command as a job step (N.0, N.1, ...) of a running job, from its batch script or with --jobid: the controller spreads the tasks over the job's nodes, each node's gsnoded starts them as the job's user with SLURM_PROCID, SLURM_LOCALID, SLURM_NODEID and the SLURM_STEP_* variables, and gsrun forwards their output (labelled with -l) or writes the -o/-e files, then exits with the highest task exit code (128 + signal for a task killed by a signal), as srun does. Steps are shown by gsacct and gsqueue -s, cancelled with gscancel N.K, and end with their job.",
    },
    Program {
        name: "gsstat",
        section: 1,
        slurm: Some("sstat"),
        summary: "live usage of running jobs",
        description: "gsstat shows, with sstat's options, field names, widths and parsable layouts, what running jobs use now: resident memory (now, peak and mean), virtual size, CPU time, bytes read and written, processes and GPUs, from the samples each node sends with its heartbeats (the job's cgroup with a cgroup.conf, else its processes); the controller keeps the last 120 samples per job and node. gsched measures a job per node, not per step: each line is a whole job and sstat's per-task figures are taken over the job's nodes. Jobs that do not run are reported on stderr, and the exit status stays 0, as with sstat. gscontrol show job prints the same figures for a running job on a line of its own.",
    },
    Program {
        name: "gsshare",
        section: 1,
        slurm: Some("sshare"),
        summary: "the fair-share tree of accounts and users",
        description: "gsshare shows, with sshare's options, columns, widths and parsable layouts, the fair-share numbers of the accounts and user associations that gsacctmgr keeps: raw and normalized shares, raw, normalized and effective usage (the decayed CPU-seconds the controller charges to each association) and the fair-share factor of Slurm's classic algorithm, the one the controller's multifactor priority uses. Without -a or -u it shows the caller's associations under every account; -U keeps the user rows (snakemake reads sshare -U --format Account%256 --noheader). Columns gsched does not track (GrpTRESMins, GrpTRESRaw, TRESRunMins, LevelFS, ID) print empty.",
    },
    Program {
        name: "gsctld",
        section: 8,
        slurm: Some("slurmctld"),
        summary: "the gsched controller",
        description: "gsctld keeps the queue durably in SQLite, ranks and places jobs (backfilling short jobs into idle gaps without delaying reserved ones), and drives the node daemons. It serves the versioned /v1 API that the commands, the node daemons and users' scripts use, and /metrics for Prometheus. Signals: SIGTERM stops it (running jobs go on; the queue is in the store); SIGHUP, like gscontrol reconfigure, checks the config file as at start-up and, if it passes, tells every node daemon and executes gsctld anew in place (same pid, the listening socket handed over, so clients wait rather than fail), otherwise logs why and goes on unchanged; SIGUSR2 reopens SlurmctldLogFile.",
    },
    Program {
        name: "gsnoded",
        section: 8,
        slurm: Some("slurmd"),
        summary: "the gsched node daemon",
        description: "gsnoded runs on every compute node: it registers the node with the controller, launches the jobs assigned to it through the per-job helper gsstepd (which forks, drops to the job's user and executes the script), signals and ends them, and reports how they ended. Jobs survive a restart of gsnoded. gsnoded runs the gsstepd named by the environment variable GSCHED_STEPD, else the one installed next to it; the installed gsstepd is a static binary (it starts once per job), and gsnoded resolves the job's user and groups through NSS for it. Signals: SIGTERM stops it (jobs keep running and are adopted again at the next start); SIGHUP, like gscontrol reconfigure, checks the config file and, if it loads for this node, executes gsnoded anew in place with it (jobs keep running); SIGUSR2 reopens SlurmdLogFile.",
    },
    Program {
        name: "gssim",
        section: 1,
        slurm: None,
        summary: "replay a workload trace through gsched's scheduler and compare policies",
        description: "gssim replays a workload trace (the Parallel Workloads Archive's SWF, the Alibaba GPU v2023 pod list, or gsched's own accounting history saved with --export-history) through the scheduler core that gsctld runs, with a virtual clock, on a cluster described by a gsched.conf, by flags or by the trace. For each policy (fcfs, easy, conservative, easy-predict) it reports average and p50/p95/p99 wait, average bounded slowdown (tau 10 s), utilization, makespan, jobs per hour and the accuracy of the runtimes planned with, as a table, CSV or JSON, and can draw the wait distribution and utilization over time to an SVG file. The same input gives the same bytes.",
    },
];

/// Escapes text for roff: backslashes, and lines that would start a request.
fn roff(text: &str) -> String {
    text.lines()
        .map(|l| {
            let l = l.replace('\\', "\\e");
            if l.starts_with('.') || l.starts_with('\'') {
                format!("\\&{l}")
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The page of `p`, from `help` (its `--help` output).
pub fn page(p: &Program, help: &str) -> String {
    let usage = help
        .lines()
        .find_map(|l| {
            let l = l.trim();
            l.strip_prefix("Usage: ")
                .or_else(|| l.strip_prefix("usage: "))
                .map(str::to_string)
        })
        .unwrap_or_else(|| format!("{} [OPTIONS]", p.name));
    // The usage line may name Slurm's command (the programs print what Slurm prints).
    let args = usage
        .split_once(' ')
        .map(|(_, rest)| rest.to_string())
        .unwrap_or_default();
    let mut s = String::new();
    s.push_str(&format!(
        ".TH {} {} \"\" \"gsched {}\" \"gsched\"\n",
        p.name.to_ascii_uppercase(),
        p.section,
        env!("CARGO_PKG_VERSION")
    ));
    s.push_str(".SH NAME\n");
    s.push_str(&format!("{} \\- {}\n", p.name, p.summary));
    s.push_str(".SH SYNOPSIS\n");
    s.push_str(&format!(".B {}\n{}\n", p.name, roff(&args)));
    s.push_str(".SH DESCRIPTION\n");
    s.push_str(&roff(p.description));
    s.push('\n');
    if let Some(slurm) = p.slurm {
        s.push_str(".PP\n");
        s.push_str(&format!(
            "It is gsched's \\fB{slurm}\\fR; installed under that name (\\fBscripts/install.sh \\-\\-slurm\\-names\\fR) it prints \\fB{slurm}\\fR in its messages.\n"
        ));
    }
    s.push_str(".SH OPTIONS\n.nf\n");
    s.push_str(&roff(help.trim_end()));
    s.push_str("\n.fi\n");
    s.push_str(".SH SEE ALSO\n");
    let others: Vec<String> = PROGRAMS
        .iter()
        .filter(|o| o.name != p.name)
        .map(|o| format!("\\fB{}\\fR({})", o.name, o.section))
        .chain(std::iter::once("\\fBgsched.conf\\fR(5)".to_string()))
        .collect();
    s.push_str(&others.join(", "));
    s.push('\n');
    s
}

/// The path of `p`'s page under the repository's `man/`.
pub fn page_path(p: &Program) -> PathBuf {
    PathBuf::from(format!("man{}/{}.{}", p.section, p.name, p.section))
}

/// Every page, from the binaries in `bin_dir`: (path under `man/`, text).
pub fn pages(bin_dir: &Path) -> Result<Vec<(PathBuf, String)>> {
    let mut out = Vec::new();
    for p in PROGRAMS {
        let bin = bin_dir.join(p.name);
        let o = Command::new(&bin)
            .arg("--help")
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .output()
            .with_context(|| {
                format!(
                    "cannot run {} (build it first: cargo build --bins)",
                    bin.display()
                )
            })?;
        if !o.status.success() {
            bail!(
                "{} --help failed: {}",
                bin.display(),
                String::from_utf8_lossy(&o.stderr)
            );
        }
        let help = String::from_utf8(o.stdout).context("--help printed non-UTF-8")?;
        out.push((page_path(p), page(p, &help)));
    }
    Ok(out)
}
