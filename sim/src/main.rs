//! `gssim`: replay a workload trace through gsched's scheduler core and compare policies.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::Parser;
use gsched_proto::api::{paths, HistoryQuery, JobsResponse};
use gsched_proto::config::{resolve_config_path, Config};
use gsched_sched::predict::PredictorKind;
use gsched_sched::price::DeferRules;
use gsched_sched::{Policy, SchedConfig};
use gsched_sim::cluster::Cluster;
use gsched_sim::engine::{self, Outcome, RunningPlan, Settings};
use gsched_sim::gpu::GpuSharing;
use gsched_sim::report::{self, Row};
use gsched_sim::trace::{self, Format, Trace};
use gsched_sim::{metrics, plot};

/// Days backfill plans ahead without a config: far enough that no reservation is dropped for
/// being far off on the traces' machines.
const DEFAULT_HORIZON_DAYS: i64 = 365;

#[derive(Parser, Debug)]
#[command(
    name = "gssim",
    version,
    about = "Replay a workload trace through gsched's scheduler core and compare policies",
    long_about = "Replay a workload trace through gsched's scheduler core (the same code gsctld runs) \
with a virtual clock, and report average and p50/p95/p99 wait, average bounded slowdown (tau 10 s), \
utilization, makespan, jobs per hour and runtime prediction accuracy for each policy. The output is \
a function of the input only: the same command prints the same bytes.",
    after_help = "Policies: fcfs (strict order, no backfill; SchedulerType=sched/builtin), easy (EASY \
backfill with the users' limits), conservative (a reservation for every job), easy-predict (EASY \
where a waiting job may backfill when its predicted runtime fits before the reservation and running \
jobs are planned to end at their prediction, at their limit once they outlive it; jobs are still \
killed at their limit).\n\nExamples:\n  \
gssim --trace SDSC-SP2-1998-4.2-cln.swf.gz --jobs 10000 --policy all\n  \
gssim --trace t.swf --policy easy --json\n  \
gssim --export-history history.json --config /etc/gsched/gsched.conf\n  \
gssim --trace history.json --config /etc/gsched/gsched.conf --policy easy,easy-predict"
)]
struct Args {
    /// The trace: SWF (.swf or .swf.gz), the Alibaba GPU v2023 pod list (.csv), or gsched's
    /// accounting history (.json, from --export-history).
    #[arg(long, value_name = "FILE", required_unless_present = "export_history")]
    trace: Option<PathBuf>,
    /// The trace's format when its name does not tell: swf, alibaba or history.
    #[arg(long, value_name = "FORMAT")]
    format: Option<String>,
    /// Replay only the first N jobs (after --skip).
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,
    /// Leave out the first N jobs of the trace.
    #[arg(long, value_name = "N", default_value_t = 0)]
    skip: usize,
    /// Policies to compare, comma-separated: fcfs, easy, conservative, easy-predict, or all.
    /// Default: the config's (SchedulerType, bf_policy) with --config, else easy.
    #[arg(long, value_name = "LIST")]
    policy: Option<String>,
    /// The runtime predictor of easy-predict: easy++ (the user's last two runtimes) or recent
    /// (the last two of the same user, name and size, falling back to easy++).
    #[arg(long, value_name = "NAME", default_value = "recent")]
    predictor: String,
    /// easy-predict: where running jobs are planned to end: predict-then-limit (at their
    /// prediction, at their limit once they outlive it), limit, or predict-steps (at their
    /// prediction, extended by 1 min, 5 min, 15 min, ... when they outlive it: Tsafrir's
    /// EASY++).
    #[arg(long, value_name = "MODE", default_value = "predict-then-limit")]
    running_plan: String,
    /// A gsched.conf: the nodes, partitions and scheduler settings (SchedulerType,
    /// SchedulerParameters bf_policy, bf_reserve, bf_window) of the simulated cluster.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The partition jobs are submitted to (with --config; default: the default partition).
    #[arg(long, value_name = "NAME", requires = "config")]
    partition: Option<String>,
    /// Nodes of the simulated cluster (instead of the trace's header).
    #[arg(
        long,
        value_name = "N",
        requires = "cpus_per_node",
        conflicts_with = "config"
    )]
    nodes: Option<u32>,
    /// CPUs of each node (with --nodes).
    #[arg(long, value_name = "N", requires = "nodes")]
    cpus_per_node: Option<u32>,
    /// Memory of each node in MiB (with --nodes; jobs of SWF traces ask for none).
    #[arg(long, value_name = "MB", default_value_t = 0, requires = "nodes")]
    mem_per_node: u64,
    /// Let jobs run their whole trace runtime past their limit (as RLScheduler's simulator
    /// does) instead of killing them at it (as gsctld does).
    #[arg(long)]
    no_kill: bool,
    /// Print one JSON object (an array for several policies) instead of the table.
    #[arg(long, conflicts_with = "csv")]
    json: bool,
    /// Print CSV instead of the table.
    #[arg(long)]
    csv: bool,
    /// Also draw the wait distribution and utilization over time to this SVG file.
    #[arg(long, value_name = "FILE")]
    plot: Option<PathBuf>,
    /// Save the controller's accounting history (POST /v1/jobs/history) to FILE for replay,
    /// and exit. The controller is the one of --config, else $GSCHED_CONF, else
    /// /etc/gsched/gsched.conf.
    #[arg(long, value_name = "FILE", conflicts_with = "trace")]
    export_history: Option<PathBuf>,
    /// Hourly electricity prices (CSV, .gz allowed: TIMESTAMP,PRICE or the EPEX layout
    /// DATE,HOUR,PRICE as gsched.conf's PriceFile): the output adds energy_cost,
    /// deferrable_energy_cost, short_avg_wait_s and long_avg_wait_s.
    #[arg(long, value_name = "FILE")]
    prices: Option<PathBuf>,
    /// Defer long jobs to their cheapest start (gsched's time-of-use policy, with the
    /// thresholds of --config's LongJobThreshold, ShortJobThreshold, MaxDeferral, ...; else
    /// their defaults 2:00:00, 30:00, 1-00:00:00).
    #[arg(long, requires = "prices")]
    price_aware: bool,
    /// The time zone of --prices times without an offset (EPEX: Europe/Berlin).
    #[arg(long, value_name = "ZONE", default_value = "UTC", requires = "prices")]
    price_tz: String,
    /// The unit of --prices: kWh or MWh (default: MWh when the header says so, else kWh).
    #[arg(long, value_name = "UNIT", requires = "prices")]
    price_unit: Option<String>,
    /// The day (YYYY-MM-DD, local midnight) the trace's first submission is put at (default:
    /// the first price of the file).
    #[arg(long, value_name = "DATE", requires = "prices")]
    price_start: Option<String>,
    /// Keep the trace's own local clock: its first submission goes to the same weekday and
    /// time of day (from the SWF header's UnixStartTime and TimeZoneString) in the first
    /// week from --price-start, so the site's working hours meet the prices' working hours.
    #[arg(long, requires = "prices")]
    price_local_time: bool,
    /// Power of one CPU for the cost estimates, watts.
    #[arg(long, value_name = "W", default_value_t = 10.0, requires = "prices")]
    watts_per_cpu: f64,
    /// Schedule the GPU trace's GPUs on real GPUs of the nodes, once per mode of the list:
    /// whole (every pod gets whole GPUs, as Slurm's gres/gpu), pack (pods asking for part
    /// of a GPU share GPUs, best-fit packed, as gsched's --gpu-share) and pack:F (the same in
    /// a partition with GpuOverSubscribe=F: the shares of one GPU may add up to F GPUs);
    /// prints GPUs busy, waits and jobs per GPU-hour instead of the CPU table.
    #[arg(long, value_name = "LIST", conflicts_with_all = ["config", "csv", "plot"])]
    gpu_sharing: Option<String>,
    /// With pack:F, how fast pods run on a GPU whose shares add up to more than the GPU: a
    /// fraction of their speed alone (default 0.94, what Lucid measured for pairs of training
    /// jobs on one GPU) or `proportional` (100 / the shares' sum: every pod busy all the time).
    #[arg(long, value_name = "SPEED", requires = "gpu_sharing")]
    oversubscribed_speed: Option<String>,
    /// GPUs of each node (with --nodes and --gpu-sharing).
    #[arg(long, value_name = "N", default_value_t = 8, requires = "gpu_sharing")]
    gpus_per_node: u32,
}

const POLICIES: &[&str] = &["fcfs", "easy", "conservative", "easy-predict"];

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gssim: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn export_history(out: &Path, config: Option<&Path>) -> Result<()> {
    let path = resolve_config_path(config);
    let cfg = Config::load(&path).with_context(|| format!("reading {}", path.display()))?;
    let auth = gsched_auth::from_config(&cfg)?;
    let client = gsched_proto::client::Client::new(
        format!("{}:{}", cfg.ctld_host.connect_addr(), cfg.ctld_port),
        auth,
    );
    let resp: JobsResponse = client
        .post(paths::JOBS_HISTORY, &HistoryQuery::default())
        .with_context(|| format!("asking the controller {} for its history", client.addr()))?;
    let text = serde_json::to_string(&resp)?;
    std::fs::write(out, text + "\n").with_context(|| format!("writing {}", out.display()))?;
    eprintln!("gssim: saved {} jobs to {}", resp.jobs.len(), out.display());
    Ok(())
}

fn policy_list(args: &Args, cluster: &Cluster) -> Result<Vec<String>> {
    let Some(spec) = &args.policy else {
        return Ok(vec![match cluster.config.as_ref().map(|c| c.policy) {
            Some(Policy::Fifo) => "fcfs".into(),
            Some(Policy::Conservative) => "conservative".into(),
            _ => "easy".into(),
        }]);
    };
    let mut out: Vec<String> = Vec::new();
    for p in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        if p == "all" {
            out.extend(POLICIES.iter().map(|s| s.to_string()));
        } else if POLICIES.contains(&p) {
            out.push(p.to_string());
        } else {
            bail!(
                "unknown policy \"{p}\"; valid policies: {}, all",
                POLICIES.join(", ")
            );
        }
    }
    if out.is_empty() {
        bail!(
            "--policy needs at least one of {}, all",
            POLICIES.join(", ")
        );
    }
    out.dedup();
    Ok(out)
}

fn settings(
    name: &str,
    base: &SchedConfig,
    args: &Args,
    predictor: PredictorKind,
    prices: Option<&std::sync::Arc<gsched_sim::prices::SimPrices>>,
) -> Settings {
    let reserve = match base.policy {
        Policy::Easy { reserve } => reserve,
        _ => 1,
    };
    let mut sched = base.clone();
    sched.policy = match name {
        "fcfs" => Policy::Fifo,
        "conservative" => Policy::Conservative,
        _ => Policy::Easy { reserve },
    };
    Settings {
        gpu: None,
        shared_speed: gsched_sim::gpu::SharedSpeed::MEASURED_PAIRS,
        sched,
        predictor: (name == "easy-predict").then_some(predictor),
        running_plan: RunningPlan::from_name(&args.running_plan).unwrap_or_default(),
        kill_at_limit: !args.no_kill,
        prices: prices.cloned(),
    }
}

/// `--gpu-sharing`: every policy with every sharing mode, and the GPU figures.
fn run_gpu(args: &Args, list: &str, trace: &Trace, read: usize) -> Result<()> {
    let mut modes = Vec::new();
    for m in list.split(',').map(str::trim).filter(|m| !m.is_empty()) {
        match GpuSharing::from_name(m) {
            Some(g) => modes.push(g),
            None => bail!(
                "unknown GPU sharing \"{m}\"; valid: {}",
                GpuSharing::NAMES.join(", ")
            ),
        }
    }
    if modes.is_empty() {
        bail!(
            "--gpu-sharing needs at least one of {}",
            GpuSharing::NAMES.join(", ")
        );
    }
    if trace.jobs.iter().all(|j| j.gpu.is_none()) {
        bail!("--gpu-sharing needs a trace of GPU jobs (the Alibaba GPU v2023 pod list, --format alibaba)");
    }
    let uniform = match (args.nodes, args.cpus_per_node) {
        (Some(n), Some(c)) => Some((n, c, args.mem_per_node, args.gpus_per_node)),
        _ => None,
    };
    let speed = match &args.oversubscribed_speed {
        None => gsched_sim::gpu::SharedSpeed::MEASURED_PAIRS,
        Some(v) => gsched_sim::gpu::SharedSpeed::from_name(v).ok_or_else(|| {
            anyhow::anyhow!(
                "invalid --oversubscribed-speed \"{v}\": give a fraction above 0 and at most 1, or proportional"
            )
        })?,
    };
    let cluster = gsched_sim::gpu::cluster(trace, uniform)?;
    let total_gpus: u64 = cluster.view.nodes.iter().map(|n| n.gpus.len() as u64).sum();
    let base = SchedConfig {
        horizon_secs: DEFAULT_HORIZON_DAYS * 86400,
        ..SchedConfig::default()
    };
    let predictor = PredictorKind::from_name(&args.predictor).unwrap_or(PredictorKind::Recent);
    let mut rows = Vec::new();
    let mut rejected = std::collections::BTreeMap::new();
    for name in policy_list(args, &cluster)? {
        for &mode in &modes {
            let mut s = settings(&name, &base, args, predictor, None);
            s.gpu = Some(mode);
            s.shared_speed = speed;
            let o = engine::simulate(&cluster, &trace.jobs, &s);
            rows.push(gsched_sim::gpu::compute(&name, mode, &o, total_gpus));
            if rejected.is_empty() {
                rejected = o.rejected;
            }
        }
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(());
    }
    let name = args
        .trace
        .as_deref()
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let heading = vec![
        format!(
            "trace: {name}, {} GPU jobs replayed (skip {}, {read} read), {} asking for part of a GPU",
            trace.jobs.iter().filter(|j| j.gpu.is_some()).count(),
            args.skip,
            trace
                .jobs
                .iter()
                .filter(|j| j.gpu.is_some_and(|g| g.fractional()))
                .count()
        ),
        format!("cluster: {}", cluster.describe),
    ];
    let mut heading = heading;
    if !rejected.is_empty() {
        heading.push(format!(
            "refused at submission: {}",
            rejected
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    print!("{}", gsched_sim::gpu::table(&heading, &rows));
    Ok(())
}

fn run(args: &Args) -> Result<()> {
    if let Some(out) = &args.export_history {
        return export_history(out, args.config.as_deref());
    }
    let Some(path) = args.trace.as_deref() else {
        bail!("give --trace FILE (or --export-history FILE)");
    };
    let predictor = PredictorKind::from_name(&args.predictor)
        .filter(|p| *p != PredictorKind::UserLimit)
        .with_context(|| {
            format!(
                "unknown predictor \"{}\"; valid predictors: easy++, recent",
                args.predictor
            )
        })?;
    if RunningPlan::from_name(&args.running_plan).is_none() {
        bail!(
            "unknown running plan \"{}\"; valid: {}",
            args.running_plan,
            RunningPlan::NAMES.join(", ")
        );
    }
    let format = match &args.format {
        Some(f) => Format::from_name(f).with_context(|| {
            format!(
                "unknown format \"{f}\"; valid formats: {}",
                Format::NAMES.join(", ")
            )
        })?,
        None => Format::guess(path).with_context(|| {
            format!(
                "cannot tell the format of {} from its name; give --format {}",
                path.display(),
                Format::NAMES.join("|")
            )
        })?,
    };
    let mut trace: Trace = trace::load(path, format)?;
    let read = trace.jobs.len();
    trace.jobs.drain(..args.skip.min(read));
    if let Some(n) = args.jobs {
        trace.jobs.truncate(n);
    }
    if trace.jobs.is_empty() {
        bail!(
            "{}: no jobs to replay ({read} read, --skip {})",
            path.display(),
            args.skip
        );
    }
    if let Some(list) = &args.gpu_sharing {
        return run_gpu(args, list, &trace, read);
    }
    let cluster = if let Some(cfg) = &args.config {
        Cluster::from_config(cfg, args.partition.as_deref())?
    } else if let (Some(n), Some(c)) = (args.nodes, args.cpus_per_node) {
        Cluster::uniform(n, c, args.mem_per_node)?
    } else if !trace.nodes.is_empty() {
        Cluster::from_trace_nodes(&trace)?
    } else {
        Cluster::from_header(&trace)?
    };
    let base = cluster.config.clone().unwrap_or(SchedConfig {
        horizon_secs: DEFAULT_HORIZON_DAYS * 86400,
        ..SchedConfig::default()
    });
    let names = policy_list(args, &cluster)?;
    let prices = match &args.prices {
        Some(f) => {
            let rules = match &args.config {
                Some(c) => {
                    let p = Config::load(c)
                        .with_context(|| format!("reading {}", c.display()))?
                        .price;
                    DeferRules {
                        long_secs: p.long_secs,
                        short_secs: p.short_secs,
                        medium_defer: p.medium_rule
                            == gsched_proto::price_conf::MediumJobRule::Defer,
                        max_deferral_secs: p.max_deferral_secs,
                        min_saving: p.min_saving,
                    }
                }
                None => DeferRules::default(),
            };
            let first = trace.jobs.first().map_or(0, |j| j.submit);
            let local_start = if args.price_local_time {
                let Some(clock) = &trace.clock else {
                    anyhow::bail!(
                        "--price-local-time needs the trace's UnixStartTime and TimeZoneString (SWF header lines); this trace has none: leave the option out"
                    );
                };
                Some(gsched_sim::prices::trace_local_start(clock, first)?)
            } else {
                None
            };
            let o = gsched_sim::prices::PriceOpts {
                tz: &args.price_tz,
                unit: args.price_unit.as_deref(),
                start: args.price_start.as_deref(),
                local_start,
                rules,
                aware: args.price_aware,
                watts_per_cpu: args.watts_per_cpu,
            };
            Some(std::sync::Arc::new(gsched_sim::prices::load(f, o, first)?))
        }
        None => None,
    };
    let trace_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();

    let mut outcomes: Vec<(String, Outcome)> = Vec::new();
    let mut rows: Vec<Row> = Vec::new();
    for name in &names {
        let s = settings(name, &base, args, predictor, prices.as_ref());
        let o = engine::simulate(&cluster, &trace.jobs, &s);
        let pname = s.predictor.map_or("user", PredictorKind::name);
        let label = if args.price_aware {
            format!("{name}+price")
        } else {
            name.clone()
        };
        let mut m = metrics::compute(&label, pname, &o, cluster.cpus);
        if let Some(p) = &prices {
            metrics::add_prices(&mut m, &o, p);
        }
        rows.push(Row {
            trace: trace_name.clone(),
            cluster_cpus: cluster.cpus,
            metrics: m,
        });
        outcomes.push((name.clone(), o));
    }

    if args.json {
        print!("{}", report::json(&rows));
    } else if args.csv {
        print!("{}", report::csv(&rows));
    } else {
        let dropped = if trace.dropped.is_empty() {
            String::new()
        } else {
            format!(
                "; left out: {}",
                trace
                    .dropped
                    .iter()
                    .map(|(k, v)| format!("{k} {v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        let heading = vec![
            format!(
                "trace: {trace_name}, {} jobs replayed (skip {}, {read} read{dropped})",
                trace.jobs.len(),
                args.skip
            ),
            format!(
                "cluster: {}, {} {}s{}",
                cluster.describe,
                cluster.cpus,
                trace.resource,
                if args.no_kill {
                    "; jobs run past their limit (--no-kill)"
                } else {
                    "; jobs killed at their limit"
                }
            ),
        ];
        let mut heading = heading;
        if let Some((_, o)) = outcomes.first().filter(|(_, o)| !o.rejected.is_empty()) {
            heading.push(format!(
                "refused at submission: {}",
                o.rejected
                    .iter()
                    .map(|(k, v)| format!("{k} {v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        print!("{}", report::table(&heading, &rows));
        for r in rows.iter().filter(|r| r.metrics.energy_cost.is_some()) {
            let m = &r.metrics;
            println!(
                "prices ({}): energy_cost {:.2}, deferrable_energy_cost {:.2}, short_avg_wait_s {:.2}, long_avg_wait_s {:.2}",
                m.policy,
                m.energy_cost.unwrap_or(0.0),
                m.deferrable_energy_cost.unwrap_or(0.0),
                m.short_avg_wait_s.unwrap_or(0.0),
                m.long_avg_wait_s.unwrap_or(0.0)
            );
        }
    }
    if let Some(p) = &args.plot {
        let runs: Vec<(String, &Outcome)> = outcomes.iter().map(|(n, o)| (n.clone(), o)).collect();
        plot::write_svg(p, &trace_name, &runs, cluster.cpus)?;
    }
    Ok(())
}
