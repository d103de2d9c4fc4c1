//! `gseff` (`seff`): how well a finished job used what it was given.
//!
//! Slurm ships `seff` as a contributed Perl script that reads the accounting database; users
//! and tutorials know its layout, so gseff prints the same lines from gsched's own store
//! (the `jobs/history` API that gsacct reads): CPU time against core-walltime, peak memory
//! against the allocation. The figures come from the job's cgroup when it ended
//! (`JobInfo::usage`); a node without cgroups records none, and gseff then shows zero use,
//! as seff does for a job without accounting data. Like seff: `-h`, `-v`, `-d` (the raw
//! figures), one job id (`N` or `N_K`), `Job not found.` with exit status 2.
//!
//! After seff's lines come gsched's, only where there is something to show: GPU efficiency
//! (mean utilization of the job's GPUs and their peak memory against what the job was given,
//! from the samples gsnoded takes every `GpuSampleInterval`; none for a job without GPUs or
//! samples), and the estimated energy and cost that gsacct shows as `EnergyKWh` and `Cost`.

use crate::common::{self, Fail};
use crate::getopt::{self, HasArg, Opt, Ordering};
use gsched_proto::api::{paths, HistoryQuery, JobEnergy, JobFilter, JobGpuUsage, JobsResponse};
use gsched_proto::job::{JobInfo, JobState, MemRequest};

use HasArg::No;

/// seff's options (Perl `getopts('hvd')`).
pub const OPTIONS: &[Opt] = &[
    Opt::new("help", Some('h'), &[], No),
    Opt::new("long-help", None, &["help"], No),
    Opt::new("version", Some('v'), &[], No),
    Opt::new("debug", Some('d'), &[], No),
    // gsched's addition: the Slurm version line every other command prints for `-V`.
    Opt::new("slurm-version", Some('V'), &["version"], No),
];

/// The version seff prints (`seff Version 2.1`), as the copy shipped with Slurm 22.05.
pub const SEFF_VERSION: &str = "2.1";

/// `gseff` entry point.
pub fn main(args: Vec<String>) -> i32 {
    common::run_main(&args, "seff", run)
}

/// What was asked: a job id, `N` or `N_K`.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    pub job: JobFilter,
    pub debug: bool,
}

/// Parses the arguments; `Err` carries seff's usage or version text with exit status 1.
pub fn parse_args(args: &[String]) -> Result<Params, Fail> {
    let split = getopt::parse_split(args, OPTIONS, Ordering::Permute);
    let usage = || Fail::raw(1, usage_text().lines().map(str::to_string).collect());
    if split.err.is_some() {
        return Err(usage());
    }
    let mut debug = false;
    for (id, _) in &split.opts {
        match *id {
            "version" => {
                // seff prints its version on stdout and exits 1.
                common::out(&format!("seff Version {SEFF_VERSION}\n"));
                return Err(Fail::raw(1, Vec::new()));
            }
            "slurm-version" => {
                common::out(&format!("{}\n", common::version_line()));
                return Err(Fail::raw(0, Vec::new()));
            }
            "help" => return Err(usage()),
            // gsched's addition: a description on stdout and exit status 0, as every
            // gsched command answers --help (the man page is made from it).
            "long-help" => {
                common::out(&help_text());
                return Err(Fail::raw(0, Vec::new()));
            }
            "debug" => debug = true,
            _ => {}
        }
    }
    let [id] = split.operands.as_slice() else {
        return Err(usage());
    };
    let mut job = JobFilter::default();
    let bad = || Fail::raw(2, vec!["Job not found.".to_string()]);
    match id.split_once('_') {
        Some((a, t)) => job
            .array_tasks
            .push((a.parse().map_err(|_| bad())?, t.parse().map_err(|_| bad())?)),
        None => job.ids.push(id.parse().map_err(|_| bad())?),
    }
    Ok(Params { job, debug })
}

/// seff's usage text (on stdout, exit status 1).
pub fn usage_text() -> String {
    "Usage: seff [Options] <Jobid>\n       Options:\n       -h    Help menu\n       -v    Version\n       -d    Debug mode: display raw Slurm data\n".to_string()
}

/// `gseff --help`.
pub fn help_text() -> String {
    format!(
        "{}\nPrints how well a job used what it was given, in the layout of Slurm's seff:\n\
         CPU time against core-walltime (allocated CPUs times wall-clock time) and peak\n\
         memory against the memory allocated. The job may be N or N_K (an array task).\n\
         gsched adds, where it has them, the GPU efficiency (mean utilization of the job's\n\
         GPUs, their peak memory against the memory the job was given) and the estimated\n\
         energy and cost of the job (gsacct's EnergyKWh and Cost).\n\
         \n\
         -V and --version (gsched) print the Slurm version line the other commands print.\n\
         \n\
         Exit status: 0 when the report was printed, 1 for usage and -v, 2 when the job\n\
         is not known (Job not found.).\n",
        usage_text()
    )
}

fn run(_prog: &str, args: &[String]) -> Result<i32, Fail> {
    let p = match parse_args(args) {
        Ok(p) => p,
        Err(f) if f.code == 0 => return Ok(0),
        Err(f) if f.code == 1 => {
            // Usage and version go to stdout, as seff prints them.
            for l in &f.lines {
                common::out(&format!("{l}\n"));
            }
            return Ok(1);
        }
        Err(f) => return Err(f),
    };
    let (cfg, client) = common::connect("seff", None)?;
    let resp: JobsResponse = client
        .post(
            paths::JOBS_HISTORY,
            &HistoryQuery {
                filter: p.job.clone(),
                gpu_usage: true,
                ..HistoryQuery::default()
            },
        )
        .map_err(|e| Fail::error("seff", common::client_error_text(&e)))?;
    // An array's id alone names its first task, as in the accounting database.
    let Some(job) = resp.jobs.iter().min_by_key(|j| j.job_id) else {
        return Err(Fail::raw(2, vec!["Job not found.".to_string()]));
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let mut text = report(job, &cfg.cluster_name, now, p.debug);
    if job.state != JobState::Pending {
        let gpus: Vec<&JobGpuUsage> = resp
            .gpu_usage
            .iter()
            .filter(|g| g.job_id == job.job_id)
            .collect();
        let energy = resp.energy.iter().find(|e| e.job_id == job.job_id);
        text.push_str(&extra_lines(&gpus, energy));
    }
    common::out(&text);
    Ok(0)
}

/// The figures seff works with, taken from one job.
#[derive(Debug, Clone, PartialEq)]
pub struct Figures {
    pub ncpus: u64,
    pub nnodes: u64,
    /// Memory allocated to the whole job, KiB.
    pub alloc_mem_kib: u64,
    /// The memory request was per node (else per CPU).
    pub per_node: bool,
    /// CPU time used, seconds (rounded as seff does).
    pub cpu_secs: u64,
    /// Wall-clock time, seconds (time suspended excluded, as sacct's `Elapsed`).
    pub wall_secs: u64,
    /// Peak memory, KiB.
    pub mem_kib: u64,
}

/// What seff reads from the accounting record, from a gsched job record.
pub fn figures(job: &JobInfo, now: i64) -> Figures {
    let ncpus = u64::from(job.num_cpus.max(1));
    let nnodes = u64::from(job.num_nodes.max(1));
    let usage = job.usage.unwrap_or_default();
    let cpu_usec = usage.total_cpu_usec().unwrap_or(0);
    let wall = (job.run_time(now) - job.suspended_total(job.end_time.unwrap_or(now))).max(0);
    Figures {
        ncpus,
        nnodes,
        alloc_mem_kib: job
            .mem_per_node_mb
            .saturating_mul(1024)
            .saturating_mul(nnodes),
        per_node: !matches!(job.spec.mem, Some(MemRequest::PerCpu(_))),
        cpu_secs: (cpu_usec + 500_000) / 1_000_000,
        wall_secs: wall as u64,
        mem_kib: usage.max_rss_bytes.unwrap_or(0) / 1024,
    }
}

/// seff's report of `job`.
pub fn report(job: &JobInfo, cluster: &str, now: i64, debug: bool) -> String {
    let f = figures(job, now);
    let state = job.state_long();
    let mut s = String::new();
    let array_id = job
        .array
        .map(|a| format!("{}_{}", a.job_id, a.task_id))
        .unwrap_or_default();
    if debug {
        s.push_str("Slurm data: JobID ArrayJobID User Group State Clustername Ncpus Nnodes Ntasks Reqmem PerNode Cput Walltime Mem ExitStatus\n");
        s.push_str(&format!(
            "Slurm data: {} {array_id} {} {} {state} {cluster} {} {} {} {} {} {} {} {} {}\n\n",
            job.job_id,
            job.user_name,
            job.group_name,
            f.ncpus,
            f.nnodes,
            job.num_tasks,
            f.alloc_mem_kib,
            u8::from(f.per_node),
            f.cpu_secs,
            f.wall_secs,
            f.mem_kib,
            job.exit_code
        ));
    }
    s.push_str(&format!("Job ID: {}\n", job.job_id));
    if !array_id.is_empty() {
        s.push_str(&format!("Array Job ID: {array_id}\n"));
    }
    s.push_str(&format!("Cluster: {cluster}\n"));
    s.push_str(&format!(
        "User/Group: {}/{}\n",
        job.user_name, job.group_name
    ));
    if matches!(state, "PENDING" | "RUNNING") {
        s.push_str(&format!("State: {state}\n"));
    } else {
        s.push_str(&format!("State: {state} (exit code {})\n", job.exit_code));
    }
    if f.ncpus == 1 {
        s.push_str("Cores: 1\n");
    } else {
        s.push_str(&format!("Nodes: {}\n", f.nnodes));
        s.push_str(&format!("Cores per node: {}\n", f.ncpus / f.nnodes));
    }
    if job.state == JobState::Pending {
        s.push_str("Efficiency not available for jobs in the PENDING state.\n");
        return s;
    }
    let core_wall = f.wall_secs * f.ncpus;
    let cpu_eff = percent(f.cpu_secs, core_wall);
    s.push_str(&format!("CPU Utilized: {}\n", time_str(f.cpu_secs)));
    s.push_str(&format!(
        "CPU Efficiency: {cpu_eff:.2}% of {} core-walltime\n",
        time_str(core_wall)
    ));
    s.push_str(&format!("Job Wall-clock time: {}\n", time_str(f.wall_secs)));
    s.push_str(&format!("Memory Utilized: {}\n", kib_str(f.mem_kib)));
    let mem_eff = percent(f.mem_kib, f.alloc_mem_kib);
    let (share, per) = if f.per_node {
        (f.alloc_mem_kib / f.nnodes, "node")
    } else {
        (f.alloc_mem_kib / f.ncpus, "core")
    };
    s.push_str(&format!(
        "Memory Efficiency: {mem_eff:.2}% of {} ({}/{per})\n",
        kib_str(f.alloc_mem_kib),
        kib_str(share)
    ));
    if state == "RUNNING" {
        s.push_str("WARNING: Efficiency statistics can only be obtained after the job has ended as seff tool is based on the accounting database data.\n");
    }
    s
}

/// gsched's lines after seff's: GPU efficiency where the job's GPUs were sampled, the
/// estimated energy and cost where the controller has an estimate.
pub fn extra_lines(gpus: &[&JobGpuUsage], energy: Option<&JobEnergy>) -> String {
    let mut s = String::new();
    let samples: u64 = gpus.iter().map(|g| u64::from(g.samples)).sum();
    if samples > 0 {
        // The mean over every sample of every GPU (each GPU weighs by its samples).
        let util = gpus
            .iter()
            .map(|g| g.util_avg * f64::from(g.samples))
            .sum::<f64>()
            / samples as f64;
        let n = gpus.len();
        s.push_str(&format!(
            "GPU Efficiency: {util:.2}% mean utilization of {n} GPU{}\n",
            if n == 1 { "" } else { "s" }
        ));
        let used_kib: u64 = gpus.iter().map(|g| g.mem_max_mb * 1024).sum();
        s.push_str(&format!("GPU Memory Utilized: {}\n", kib_str(used_kib)));
        // Against what the job was given, where every GPU's memory is known.
        if gpus.iter().all(|g| g.mem_alloc_mb > 0) {
            let alloc_kib: u64 = gpus.iter().map(|g| g.mem_alloc_mb * 1024).sum();
            s.push_str(&format!(
                "GPU Memory Efficiency: {:.2}% of {}\n",
                percent(used_kib, alloc_kib),
                kib_str(alloc_kib)
            ));
        }
    }
    if let Some(e) = energy {
        s.push_str(&format!("Estimated Energy: {:.3} kWh\n", e.kwh));
        s.push_str(&format!("Estimated Cost: {:.2}\n", e.cost));
    }
    s
}

fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64 * 100.0
    }
}

/// `[D-]HH:MM:SS`, as seff's `time2str`.
pub fn time_str(secs: u64) -> String {
    let days = secs / 86_400;
    let rest = secs % 86_400;
    let hms = format!(
        "{:02}:{:02}:{:02}",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    );
    if days > 0 {
        format!("{days}-{hms}")
    } else {
        hms
    }
}

/// KiB in the largest binary unit that keeps the number at least 1, with two decimals
/// (`512.00 KB`, `1.50 GB`); zero is `0.00 MB`, as seff's `kbytes2str`.
pub fn kib_str(kib: u64) -> String {
    if kib == 0 {
        return "0.00 MB".to_string();
    }
    const PREFIXES: [&str; 6] = ["K", "M", "G", "T", "P", "E"];
    let mut exp = 0usize;
    let mut v = kib as f64;
    while v >= 1024.0 && exp + 1 < PREFIXES.len() {
        v /= 1024.0;
        exp += 1;
    }
    format!("{v:.2} {}B", PREFIXES[exp])
}

#[cfg(test)]
mod tests {
    use super::*;
    use gsched_proto::job::{JobSpec, JobUsage};

    fn job() -> JobInfo {
        let spec = JobSpec {
            mem: Some(MemRequest::PerNode(4096)),
            ..JobSpec::default()
        };
        let text = serde_json::json!({
            "job_id": 42, "name": "x", "user_id": 1000, "group_id": 1000,
            "user_name": "alice", "group_name": "lab", "state": "COMPLETED", "reason": "None",
            "partition": "debug", "priority": 1, "time_limit": 60, "submit_time": 0,
            "eligible_time": 0, "start_time": 100, "end_time": 700, "num_nodes": 1,
            "num_cpus": 4, "num_tasks": 1, "mem_per_node_mb": 4096, "nodes": ["n1"],
            "cpus_per_node": [4], "exit_code": 0, "exit_signal": 0, "cancelled_by": null,
            "held": false, "spec": spec,
        });
        let mut j: JobInfo = serde_json::from_value(text).unwrap();
        j.usage = Some(JobUsage {
            max_rss_bytes: Some(1024 * 1024 * 1024),
            user_cpu_usec: Some(500_000_000),
            system_cpu_usec: Some(100_000_000),
        });
        j
    }

    #[test]
    fn report_has_seffs_layout() {
        let r = report(&job(), "gsched", 1000, false);
        assert_eq!(
            r,
            "Job ID: 42\nCluster: gsched\nUser/Group: alice/lab\nState: COMPLETED (exit code 0)\n\
             Nodes: 1\nCores per node: 4\nCPU Utilized: 00:10:00\n\
             CPU Efficiency: 25.00% of 00:40:00 core-walltime\nJob Wall-clock time: 00:10:00\n\
             Memory Utilized: 1.00 GB\nMemory Efficiency: 25.00% of 4.00 GB (4.00 GB/node)\n"
        );
    }

    #[test]
    fn single_core_pending_and_running() {
        let mut j = job();
        j.num_cpus = 1;
        j.state = JobState::Pending;
        j.start_time = None;
        j.end_time = None;
        let r = report(&j, "c", 0, false);
        assert!(
            r.contains("Cores: 1\n")
                && r.ends_with("Efficiency not available for jobs in the PENDING state.\n"),
            "{r}"
        );
        j.state = JobState::Running;
        j.start_time = Some(0);
        j.usage = None;
        let r = report(&j, "c", 3600, false);
        assert!(
            r.contains("State: RUNNING\n")
                && r.contains("Job Wall-clock time: 01:00:00\n")
                && r.contains("Memory Utilized: 0.00 MB\n")
                && r.contains("WARNING: Efficiency statistics"),
            "{r}"
        );
    }

    #[test]
    fn per_cpu_memory_and_units() {
        let mut j = job();
        j.spec.mem = Some(MemRequest::PerCpu(1024));
        let r = report(&j, "c", 0, false);
        assert!(r.contains("of 4.00 GB (1.00 GB/core)"), "{r}");
        assert_eq!(kib_str(512), "512.00 KB");
        assert_eq!(kib_str(1536), "1.50 MB");
        assert_eq!(time_str(90_061), "1-01:01:01");
    }

    #[test]
    fn gpu_and_energy_lines_follow_seffs_only_with_data() {
        let g = |gpu, samples, util_avg, mem_max_mb, mem_alloc_mb| JobGpuUsage {
            job_id: 42,
            node: "n1".into(),
            gpu,
            samples,
            util_avg,
            util_max: 100,
            mem_max_mb,
            mem_alloc_mb,
        };
        let (a, b) = (g(0, 10, 30.0, 2048, 81920), g(1, 30, 70.0, 6144, 81920));
        let e = JobEnergy {
            job_id: 42,
            kwh: 1.23456,
            cost: 0.987,
        };
        assert_eq!(
            extra_lines(&[&a, &b], Some(&e)),
            "GPU Efficiency: 60.00% mean utilization of 2 GPUs\n\
             GPU Memory Utilized: 8.00 GB\n\
             GPU Memory Efficiency: 5.00% of 160.00 GB\n\
             Estimated Energy: 1.235 kWh\n\
             Estimated Cost: 0.99\n"
        );
        // A GPU of unknown memory: no efficiency line; one GPU.
        let c = g(0, 5, 12.5, 512, 0);
        assert_eq!(
            extra_lines(&[&c], None),
            "GPU Efficiency: 12.50% mean utilization of 1 GPU\nGPU Memory Utilized: 512.00 MB\n"
        );
        // A CPU job: its energy only; nothing at all without an estimate.
        assert_eq!(
            extra_lines(&[], Some(&e)),
            "Estimated Energy: 1.235 kWh\nEstimated Cost: 0.99\n"
        );
        assert_eq!(extra_lines(&[], None), "");
    }

    #[test]
    fn arguments_as_seff() {
        let a = |v: &[&str]| parse_args(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(a(&["7"]).unwrap().job.ids, vec![7]);
        assert_eq!(a(&["-d", "7_3"]).unwrap().job.array_tasks, vec![(7, 3)]);
        assert!(a(&["-d", "7_3"]).unwrap().debug);
        assert_eq!(a(&[]).unwrap_err().code, 1);
        assert_eq!(a(&["1", "2"]).unwrap_err().code, 1);
        assert_eq!(a(&["--bogus", "1"]).unwrap_err().code, 1);
        assert_eq!(a(&["x"]).unwrap_err().code, 2);
        // -V/--version: the Slurm version line, exit 0.
        assert_eq!(a(&["-V"]).unwrap_err().code, 0);
        assert_eq!(a(&["--version"]).unwrap_err().code, 0);
    }
}
