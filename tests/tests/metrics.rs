//! `/metrics` on gsctld: scraped without a credential, in OpenMetrics text, with the job,
//! node, CPU and scheduler families an admin's dashboard reads, and counters that move when
//! jobs run; on a node with (fake) GPUs, the GPU families from the GPUs' samples, the jobs the
//! invalid-job ladder flags and its steps, and the estimated energy and cost of ended jobs,
//! which must agree with gsacct's (and gseff's) estimate. Every family is documented in
//! gsched(7). Where Debian's `prometheus` is installed (`.ci/run` installs it), a real
//! Prometheus server scrapes gsctld and answers every query of the shipped dashboard.

use gsched_proto::api::{paths, HistoryQuery, JobFilter, JobsResponse};
use gsched_tests::gpu_fakes::FakeNvml;
use gsched_tests::{secs, ClusterOpts, JobState, TestCluster};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `GET path` on 127.0.0.1:port; the head and the body of the answer.
fn http_get(port: u16, path: &str) -> std::io::Result<(String, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )?;
    let mut resp = String::new();
    s.read_to_string(&mut resp)?;
    let (head, body) = resp.split_once("\r\n\r\n").unwrap_or((&resp, ""));
    Ok((head.to_string(), body.to_string()))
}

fn scrape(port: u16) -> String {
    let (head, body) = http_get(port, "/metrics").expect("scrape gsctld");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/openmetrics-text"),
        "{head}"
    );
    body
}

/// The value of the sample `name` (with its labels as written), if present.
fn sample(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

#[test]
fn metrics_families_and_counters() {
    let c = TestCluster::start(ClusterOpts::named("metrics").nodes(2).cpus(2));
    let done = c.submit(["--wrap", "true"]);
    c.wait_terminal(done, secs(30));
    let run = c.submit(["-n", "2", "--wrap", "sleep 1000"]);
    c.wait_state(run, JobState::Running, secs(30));
    let held = c.submit(["-H", "--wrap", "true"]);
    let part = c.job(run).partition;
    let text = scrape(c.ctld_port());
    // Chunked transfer is not used for this small page; the body ends as OpenMetrics does.
    assert!(text.trim_end().ends_with("# EOF"), "{text}");
    for family in [
        "# TYPE gsched_jobs gauge",
        "# TYPE gsched_nodes gauge",
        "# TYPE gsched_cpus gauge",
        "# TYPE gsched_cpus_allocated gauge",
        "# TYPE gsched_partition_cpus gauge",
        "# TYPE gsched_memory_bytes gauge",
        "# TYPE gsched_scheduler_passes counter",
        "# TYPE gsched_scheduler_pass_seconds histogram",
        "# TYPE gsched_jobs_submitted counter",
        "# TYPE gsched_jobs_started counter",
        "# TYPE gsched_jobs_backfilled counter",
        "# TYPE gsched_queue_wait_seconds histogram",
        "# TYPE gsched_cpus_used gauge",
        "# TYPE gsched_node_cpus_used gauge",
        "# TYPE gsched_gpus gauge",
        "# TYPE gsched_gpus_allocated gauge",
        "# TYPE gsched_gpu_utilization_percent gauge",
        "# TYPE gsched_gpu_memory_used_bytes gauge",
        "# TYPE gsched_gpu_memory_bytes gauge",
        "# TYPE gsched_gpu_allocated_seconds counter",
        "# TYPE gsched_gpu_used_seconds counter",
        "# TYPE gsched_jobs_invalid gauge",
        "# TYPE gsched_invalid_job_actions counter",
        "# TYPE gsched_energy_joules counter",
        "# TYPE gsched_cost counter",
    ] {
        assert!(text.contains(family), "{family} missing:\n{text}");
    }
    // No prices configured: no price gauge. No GPUs: no GPU series.
    assert!(!text.contains("gsched_price"), "{text}");
    assert!(!text.contains("gsched_gpus{"), "{text}");
    assert_eq!(
        sample(&text, "gsched_jobs_invalid{reason=\"Hung\"}"),
        Some(0.0)
    );
    // Each node's load: present, and no more than its CPUs.
    let used = sample(&text, "gsched_cpus_used").expect("gsched_cpus_used");
    assert!((0.0..=4.0).contains(&used), "{text}");
    // Each node's memory in use (its MemTotal - MemAvailable, so more than nothing) once
    // its first heartbeat has come.
    assert!(
        sample(&text, "gsched_memory_used_bytes").is_some(),
        "{text}"
    );
    c.wait_until(secs(30), "memory in use from the heartbeats", || {
        sample(&scrape(c.ctld_port()), "gsched_memory_used_bytes").is_some_and(|m| m > 0.0)
    });
    families_are_documented(&text);
    let jobs = |state: &str| {
        sample(
            &text,
            &format!("gsched_jobs{{state=\"{state}\",partition=\"{part}\"}}"),
        )
    };
    assert_eq!(jobs("COMPLETED"), Some(1.0), "{text}");
    assert_eq!(jobs("RUNNING"), Some(1.0), "{text}");
    assert_eq!(jobs("PENDING"), Some(1.0), "{text}");
    assert_eq!(sample(&text, "gsched_cpus"), Some(4.0));
    assert_eq!(sample(&text, "gsched_cpus_allocated"), Some(2.0));
    assert_eq!(sample(&text, "gsched_jobs_submitted_total"), Some(3.0));
    assert_eq!(sample(&text, "gsched_jobs_started_total"), Some(2.0));
    assert_eq!(sample(&text, "gsched_queue_wait_seconds_count"), Some(2.0));
    // Nothing jumped a waiting job (the held one does not count).
    assert_eq!(sample(&text, "gsched_jobs_backfilled_total"), Some(0.0));
    assert!(sample(&text, "gsched_scheduler_passes_total").unwrap() >= 2.0);
    let nodes: f64 = text
        .lines()
        .filter(|l| l.starts_with("gsched_nodes{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    assert_eq!(nodes, 2.0, "{text}");

    // Every query of the shipped Grafana dashboard names only families gsctld exports
    // (`gsched_price` only where prices are configured: checked by the GPU test's cluster).
    let exported = exported_series(&text);
    for (title, expr) in dashboard_queries() {
        for name in metric_names(&expr) {
            assert!(
                exported.contains(&name) || name == "gsched_price",
                "dashboard panel {title:?} queries {name}, which gsctld does not export ({expr})"
            );
        }
    }

    // A real Prometheus server, where installed, scrapes and stores the page, and evaluates
    // every dashboard query without error; those of GPUs and prices have no data here.
    prometheus_scrapes(&c, &part, 1, |expr| {
        expr.contains("gsched_gpu") || expr.contains("gsched_price")
    });
    c.cmd_ok("gscancel", [run.to_string(), held.to_string()]);
}

/// The jobs one pass starts on a node go there in one request, and jobs that end together
/// are reported in one: eight array tasks start at once on an idle 8-CPU node (one launch
/// request; one per job would be 8) and all end at the same moment (a shared wall-clock
/// deadline), so their ends share requests (fewer than 8). Every task completes with exit 0
/// and its own output, as when each had a request of its own.
#[test]
fn jobs_of_one_pass_share_launch_and_end_requests() {
    let c = TestCluster::start(ClusterOpts::named("batched-requests").nodes(1).cpus(8));
    let before = scrape(c.ctld_port());
    let count = |text: &str, name: &str| sample(text, name).unwrap_or(0.0);
    // Each task sleeps until the same deadline, 3 s from now (python3 for sub-second time).
    let deadline = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs_f64()
        + 3.0;
    let script = format!(
        "python3 -c 'import time; time.sleep(max(0.0, {deadline:.3} - time.time()))'; echo task $SLURM_ARRAY_TASK_ID"
    );
    let n = c.submit(["--array=0-7", "-o", "batched-%a.out", "--wrap", &script]);
    let mut tasks = Vec::new();
    for k in 0..8u32 {
        let j = c.wait_terminal(n + k, secs(60));
        assert_eq!(j.state, JobState::Completed, "{j:?}");
        assert_eq!(j.exit_code, 0, "{j:?}");
        assert_eq!(
            c.read_work_file(&format!("batched-{k}.out")),
            format!("task {k}\n")
        );
        tasks.push(j);
    }
    let after = scrape(c.ctld_port());
    let delta = |name: &str| count(&after, name) - count(&before, name);
    assert_eq!(delta("gsched_jobs_started_total"), 8.0, "{after}");
    assert_eq!(
        delta("gsched_node_launch_requests_total"),
        1.0,
        "one pass placed all eight tasks on n1: one request\n{after}"
    );
    let ends = delta("gsched_job_end_requests_total");
    assert!(
        (1.0..8.0).contains(&ends),
        "eight tasks ending at one moment took {ends} end requests (one each without batching)\n{after}"
    );
}

/// Every family of the page is listed in gsched(7) (as a whole word, counters with their
/// `_total`: `gsched_jobs` is not documented by `gsched_jobs_invalid`).
fn families_are_documented(text: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../man/man7/gsched.7");
    let page = std::fs::read_to_string(&path).expect("read man/man7/gsched.7");
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    for line in text.lines() {
        let Some(name) = line
            .strip_prefix("# TYPE ")
            .and_then(|r| r.split_whitespace().next())
        else {
            continue;
        };
        // Counters as they are queried, with `_total`.
        let listed = [name.to_string(), format!("{name}_total")].iter().any(|n| {
            page.match_indices(n.as_str())
                .any(|(i, _)| !page[..i].ends_with(word) && !page[i + n.len()..].starts_with(word))
        });
        assert!(
            listed,
            "gsched(7) does not document the metric family {name}"
        );
    }
}

/// The whole label set of a sample line, e.g. `{node="n1",gpu="0"}`, as text.
fn labels(pairs: &[(&str, &str)]) -> String {
    let inner: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
    format!("{{{}}}", inner.join(","))
}

/// A node with two fake GPUs (NVML through the fake library, 40% busy, 1 GiB used each): the
/// GPU families from its samples, GPU-seconds allocated and used, a hung job flagged and
/// counted, the price, and the energy and cost of a job once it ended, equal to gsacct's
/// estimate; gseff shows the GPU job's GPU efficiency and the same estimate, gsacct its
/// `TRESUsageInMax`. Prometheus answers every dashboard query with data.
#[test]
fn gpu_invalid_job_energy_and_cost_metrics() {
    let Some(nvml) = FakeNvml::build() else {
        return;
    };
    let opts = nvml
        .cluster_opts(
            ClusterOpts::named("metrics-gpu")
                .nodes(1)
                .cpus(4)
                .node_gres("gpu:2"),
            2,
            40,
        )
        .daemon_env("FAKE_NVML_USED_MB", "1024")
        .config_line("GpuSampleInterval=1")
        .config_line("DefaultPrice=0.25")
        .config_line("HangMinutes=0.1")
        .config_line("InvalidJobLadder=notify:0");
    let c = TestCluster::start(opts);
    let stuck = c.submit(["-J", "stuck", "--wrap", "sleep 600"]);
    let held = c.submit(["-H", "--wrap", "true"]);
    let gpu = c.submit([
        "-J",
        "gpu",
        "--gres=gpu:1",
        "-o",
        "gpu.out",
        "--wrap",
        "echo GPU=$SLURM_JOB_GPUS; while :; do echo tick; sleep 1; done",
    ]);
    c.wait_state(gpu, JobState::Running, secs(30));
    let out = c.wait_file_contains("gpu.out", "GPU=", secs(30));
    let idx = out
        .lines()
        .find_map(|l| l.strip_prefix("GPU="))
        .expect("the job's GPU")
        .trim()
        .to_string();
    let part = c.job(gpu).partition;

    // The stuck job is flagged Hung and notified; the GPU's samples arrive.
    let text = c.wait_for(
        secs(60),
        "the GPU sampled and the stuck job flagged",
        || {
            let t = scrape(c.ctld_port());
            let flagged = sample(&t, "gsched_jobs_invalid{reason=\"Hung\"}") == Some(1.0);
            let used = sample(&t, "gsched_gpu_used_seconds_total").unwrap_or(0.0) > 0.0;
            (flagged && used).then_some(t)
        },
    );
    let gpu_l = |i: &str| labels(&[("node", "n1"), ("gpu", i)]);
    assert_eq!(
        sample(
            &text,
            &format!(
                "gsched_gpus{}",
                labels(&[("node", "n1"), ("type", "nvidia_a100-sxm4-80gb")])
            )
        ),
        Some(2.0),
        "{text}"
    );
    let alloc = |mode: &str| {
        sample(
            &text,
            &format!(
                "gsched_gpus_allocated{}",
                labels(&[("node", "n1"), ("mode", mode)])
            ),
        )
    };
    assert_eq!(alloc("exclusive"), Some(1.0), "{text}");
    assert_eq!(alloc("shared"), Some(0.0), "{text}");
    for i in ["0", "1"] {
        let v = |f: &str| sample(&text, &format!("{f}{}", gpu_l(i)));
        assert_eq!(v("gsched_gpu_utilization_percent"), Some(40.0), "{text}");
        assert_eq!(
            v("gsched_gpu_memory_used_bytes"),
            Some(1024.0 * 1024.0 * 1024.0),
            "{text}"
        );
        assert_eq!(
            v("gsched_gpu_memory_bytes"),
            Some(81920.0 * 1024.0 * 1024.0),
            "{text}"
        );
    }
    // Only the held GPU counts, at its 40%.
    let gs = |n: &str| sample(&text, n).unwrap_or(0.0);
    let (a, u) = (
        gs("gsched_gpu_allocated_seconds_total"),
        gs("gsched_gpu_used_seconds_total"),
    );
    assert!(
        a > 0.0 && (u / a - 0.4).abs() < 1e-9,
        "allocated {a}, used {u}"
    );
    assert_eq!(
        sample(
            &text,
            &format!(
                "gsched_invalid_job_actions_total{}",
                labels(&[("step", "notify"), ("reason", "Hung")])
            )
        ),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, "gsched_jobs_invalid{reason=\"IdleGPU\"}"),
        Some(0.0)
    );
    assert_eq!(sample(&text, "gsched_price"), Some(0.25), "{text}");
    assert!(
        sample(
            &text,
            &format!("gsched_node_cpus_used{}", labels(&[("node", "n1")]))
        )
        .is_some(),
        "{text}"
    );
    assert_eq!(sample(&text, "gsched_energy_joules_total"), Some(0.0));
    families_are_documented(&text);
    let exported = exported_series(&text);
    for (title, expr) in dashboard_queries() {
        for name in metric_names(&expr) {
            assert!(
                exported.contains(&name),
                "dashboard panel {title:?} queries {name}, which gsctld does not export ({expr})"
            );
        }
    }
    // Every dashboard query has data here (rates and increases once Prometheus has two
    // scrapes).
    prometheus_scrapes(&c, &part, 2, |_| false);

    // The GPU job ends: the energy and cost counters hold gsacct's estimate of it.
    c.cmd_ok("gscancel", [gpu.to_string()]);
    c.wait_terminal(gpu, secs(30));
    let hist: JobsResponse = c
        .client()
        .post(
            paths::JOBS_HISTORY,
            &HistoryQuery {
                filter: JobFilter {
                    ids: vec![gpu],
                    ..JobFilter::default()
                },
                gpu_usage: true,
                ..HistoryQuery::default()
            },
        )
        .expect("jobs/history");
    let e = *hist
        .energy
        .iter()
        .find(|e| e.job_id == gpu)
        .expect("the job's estimate");
    assert!(e.kwh > 0.0 && e.cost > 0.0, "{e:?}");
    let text = scrape(c.ctld_port());
    let joules = gs_of(&text, "gsched_energy_joules_total");
    let cost = gs_of(&text, "gsched_cost_total");
    assert!(
        (joules - e.kwh * 3.6e6).abs() <= 1e-6 * joules.max(1.0),
        "counter {joules} J, gsacct {} kWh\n{text}",
        e.kwh
    );
    assert!(
        (cost - e.cost).abs() <= 1e-9 * cost.max(1.0),
        "counter {cost}, gsacct {}",
        e.cost
    );
    // The job's GPU usage over its run, as gseff and gsacct read it.
    let usage: Vec<_> = hist.gpu_usage.iter().filter(|g| g.job_id == gpu).collect();
    assert_eq!(usage.len(), 1, "{:?}", hist.gpu_usage);
    assert_eq!(usage[0].gpu.to_string(), idx);
    assert_eq!(
        (
            usage[0].util_avg,
            usage[0].util_max,
            usage[0].mem_max_mb,
            usage[0].mem_alloc_mb
        ),
        (40.0, 40, 1024, 81920),
        "{usage:?}"
    );
    let eff = c.cmd_ok("gseff", [gpu.to_string()]);
    for want in [
        "Memory Efficiency: ".to_string(),
        "GPU Efficiency: 40.00% mean utilization of 1 GPU\n".to_string(),
        "GPU Memory Utilized: 1.00 GB\n".to_string(),
        "GPU Memory Efficiency: 1.25% of 80.00 GB\n".to_string(),
        format!("Estimated Energy: {:.3} kWh\n", e.kwh),
        format!("Estimated Cost: {:.2}\n", e.cost),
    ] {
        assert!(eff.contains(&want), "{want:?} not in:\n{eff}");
    }
    // seff's lines first, gsched's after.
    assert!(
        eff.find("Memory Efficiency").unwrap() < eff.find("GPU Efficiency").unwrap(),
        "{eff}"
    );
    let acct = c.cmd_ok(
        "gsacct",
        [
            "-j",
            &gpu.to_string(),
            "-n",
            "-P",
            "-o",
            "JobID,TRESUsageInMax",
        ],
    );
    assert!(
        acct.lines().any(|l| l.starts_with(&format!("{gpu}.batch|"))
            && l.contains("gres/gpumem=1024M,gres/gpuutil=40")),
        "{acct}"
    );
    // A CPU job: no GPU lines.
    let eff = c.cmd_ok("gseff", [stuck.to_string()]);
    assert!(!eff.contains("GPU"), "{eff}");
    assert!(eff.contains("Estimated Energy: "), "{eff}");
    c.cmd_ok("gscancel", [stuck.to_string(), held.to_string()]);
}

/// A sample's value, 0 when absent.
fn gs_of(text: &str, name: &str) -> f64 {
    sample(text, name).unwrap_or(0.0)
}

/// Sample names a scrape can answer to: every family's name with the suffixes of its type.
fn exported_series(text: &str) -> std::collections::BTreeSet<String> {
    let mut names = std::collections::BTreeSet::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("# TYPE ") else {
            continue;
        };
        let mut words = rest.split_whitespace();
        let (Some(name), Some(kind)) = (words.next(), words.next()) else {
            continue;
        };
        let suffixes: &[&str] = match kind {
            "counter" => &["_total", "_created"],
            "histogram" => &["_bucket", "_sum", "_count", "_created"],
            _ => &[""],
        };
        for s in suffixes {
            names.insert(format!("{name}{s}"));
        }
    }
    names
}

/// (panel title, PromQL) of every target of `packaging/grafana/gsched.json`, rows included.
fn dashboard_queries() -> Vec<(String, String)> {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../packaging/grafana/gsched.json");
    let text = std::fs::read_to_string(&path).expect("read the Grafana dashboard");
    let dash: serde_json::Value = serde_json::from_str(&text).expect("dashboard is JSON");
    fn walk(panels: &serde_json::Value, out: &mut Vec<(String, String)>) {
        for p in panels.as_array().into_iter().flatten() {
            let title = p["title"].as_str().unwrap_or("").to_string();
            if p["type"] != "row" {
                let targets = p["targets"].as_array().map(Vec::len).unwrap_or(0);
                assert!(targets > 0, "dashboard panel {title:?} has no query");
            }
            for t in p["targets"].as_array().into_iter().flatten() {
                let expr = t["expr"].as_str().expect("target has an expr");
                out.push((title.clone(), expr.to_string()));
            }
            walk(&p["panels"], out);
        }
    }
    let mut out = Vec::new();
    walk(&dash["panels"], &mut out);
    assert!(out.len() >= 10, "the dashboard lost its panels: {out:?}");
    out
}

/// The `gsched_*` metric names a PromQL expression reads.
fn metric_names(expr: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = expr;
    while let Some(i) = rest.find("gsched_") {
        let tail = &rest[i..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        names.push(tail[..end].to_string());
        rest = &tail[end..];
    }
    names
}

/// Percent-encoding of a query parameter's value.
fn url_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn free_port() -> u16 {
    TcpListener::bind(("127.0.0.1", 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Runs `prometheus` against the cluster's controller and waits until a query returns the
/// controller's `running` jobs of partition `part`, then has it answer every dashboard query:
/// each must succeed and, unless `may_be_empty` says so (or it is a rate or an increase,
/// which need two scrapes), have data. Skips (saying why) where Prometheus is not installed.
fn prometheus_scrapes(
    c: &TestCluster,
    part: &str,
    running: u32,
    may_be_empty: impl Fn(&str) -> bool,
) {
    if Command::new("prometheus")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("prometheus not installed (apt-get install prometheus): real scrape not tested");
        return;
    }
    let dir = c.dir().join("prometheus");
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("prometheus.yml");
    std::fs::write(
        &conf,
        format!(
            "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: gsched\n    static_configs:\n      - targets: ['127.0.0.1:{}']\n",
            c.ctld_port()
        ),
    )
    .unwrap();
    let port = free_port();
    let mut child = Command::new("prometheus")
        .arg(format!("--config.file={}", conf.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("prometheus.log")).unwrap())
        .spawn()
        .expect("start prometheus");
    let query = format!(
        "/api/v1/query?query=gsched_jobs%7Bstate%3D%22RUNNING%22%2Cpartition%3D%22{part}%22%7D"
    );
    let deadline = Instant::now() + secs(60);
    let mut last = String::new();
    let found = loop {
        if let Ok((_, body)) = http_get(port, &query) {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&body) {
                let value = v["data"]["result"][0]["value"][1]
                    .as_str()
                    .map(str::to_string);
                if value.is_some() {
                    break value;
                }
            }
            last = body;
        }
        if Instant::now() > deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(250));
    };
    // Every dashboard query is valid PromQL over what was stored, and the panels reading
    // gauges have data.
    let mut failures = Vec::new();
    if found.is_some() {
        for (title, expr) in dashboard_queries() {
            let answer = http_get(port, &format!("/api/v1/query?query={}", url_encode(&expr)))
                .map(|(_, body)| body)
                .unwrap_or_default();
            let v: serde_json::Value = serde_json::from_str(&answer).unwrap_or_default();
            let empty = v["data"]["result"].as_array().is_none_or(Vec::is_empty);
            let needs_two = expr.contains("rate(") || expr.contains("increase(");
            if v["status"] != "success" || (empty && !needs_two && !may_be_empty(&expr)) {
                failures.push(format!("{title}: {expr} -> {answer}"));
            }
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let log = std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default();
    assert_eq!(
        found.as_deref(),
        Some(running.to_string().as_str()),
        "Prometheus did not store gsched_jobs: last answer {last}\n{log}"
    );
    assert!(
        failures.is_empty(),
        "dashboard queries Prometheus could not answer:\n{}",
        failures.join("\n")
    );
}
