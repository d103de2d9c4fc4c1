//! `/metrics` on gsctld: scraped without a credential, in OpenMetrics text, with the job,
//! node, CPU and scheduler families an admin's dashboard reads, and counters that move when
//! jobs run. Where Debian's `prometheus` is installed (`.ci/run` installs it), a real
//! Prometheus server scrapes gsctld and answers a query on what it stored.

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
    ] {
        assert!(text.contains(family), "{family} missing:\n{text}");
    }
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

    // Every query of the shipped Grafana dashboard names only families gsctld exports.
    let exported = exported_series(&text);
    for (title, expr) in dashboard_queries() {
        for name in metric_names(&expr) {
            assert!(
                exported.contains(&name),
                "dashboard panel {title:?} queries {name}, which gsctld does not export ({expr})"
            );
        }
    }

    // A real Prometheus server, where installed, scrapes and stores the page, and evaluates
    // every dashboard query without error.
    prometheus_scrapes(&c, &part);
    c.cmd_ok("gscancel", [run.to_string(), held.to_string()]);
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
/// controller's job count; skips (saying why) where Prometheus is not installed.
fn prometheus_scrapes(c: &TestCluster, part: &str) {
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
            if v["status"] != "success" || (empty && !expr.contains("rate(")) {
                failures.push(format!("{title}: {expr} -> {answer}"));
            }
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let log = std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default();
    assert_eq!(
        found.as_deref(),
        Some("1"),
        "Prometheus did not store gsched_jobs: last answer {last}\n{log}"
    );
    assert!(
        failures.is_empty(),
        "dashboard queries Prometheus could not answer:\n{}",
        failures.join("\n")
    );
}
