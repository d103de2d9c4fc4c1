//! Time-of-use deferral through the real daemons: with a cheap window that has not begun, a
//! long job waits with reason PriceWindow and an expected start at the window (gsqueue
//! --start, gsbatch's line), while a short job and an `--urgent` long job start at once; with
//! a window that includes now, a long job starts; `--deadline` removes a job that cannot end
//! in time; gsinfo --prices shows the window; gsacct estimates energy and cost; a bad price
//! calendar stops gsctld at start-up with the file and line.

use gsched_tests::{secs, ClusterOpts, JobState, Reason, TestCluster};

/// `HH:MM` (UTC) of `t`.
fn hhmm(t: i64) -> String {
    let m = t.rem_euclid(86_400) / 60;
    format!("{:02}:{:02}", m / 60, m % 60)
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// A cluster whose only cheap window is `[from, to)` (rounded up to whole minutes).
fn cluster(name: &str, from: i64, to: i64) -> (TestCluster, i64) {
    let start = (from + 59) / 60 * 60;
    let end = (to + 59) / 60 * 60;
    let c = TestCluster::start(
        ClusterOpts::named(name)
            .nodes(1)
            .cpus(4)
            .config_line("PriceTimeZone=UTC")
            .config_line("DefaultPrice=0.50")
            .config_line(&format!(
                "PriceWindow=cheap Start={} End={} Days=All Price=0.05",
                hhmm(start),
                hhmm(end)
            ))
            .config_line("GpuWatts=default:300")
            // Large, so a job of a few seconds has a measurable estimate.
            .config_line("DefaultWattsPerCPU=360000"),
    );
    (c, start)
}

#[test]
fn long_jobs_wait_for_the_window_short_and_urgent_ones_start_now() {
    let t = now();
    // The window opens in two hours and lasts four: a three-hour job fits inside it.
    let (c, window) = cluster("price-later", t + 2 * 3600, t + 6 * 3600);
    let out = c.cmd(
        "gsbatch",
        ["-n", "1", "-t", "3:00:00", "--wrap", "sleep 1000"],
    );
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let long: u32 = stdout.trim().rsplit(' ').next().unwrap().parse().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let when = gsched_proto::units::format_timestamp(window);
    assert!(
        stderr.contains(&format!(
            "gsbatch: job {long} deferred to a cheaper price window: expected start {when} at 0.0500/kWh (now 0.5000/kWh;"
        )) && stderr.contains("use --urgent to start as soon as possible"),
        "{stderr}"
    );
    let short = c.submit(["-n", "1", "-t", "10", "--wrap", "sleep 1000"]);
    let urgent = c.submit([
        "-n",
        "1",
        "-t",
        "3:00:00",
        "--urgent",
        "--wrap",
        "sleep 1000",
    ]);
    c.wait_state(short, JobState::Running, secs(30));
    c.wait_state(urgent, JobState::Running, secs(30));
    let j = c.wait_job(long, secs(10), "an expected start", |j| {
        j.expected_start.is_some()
    });
    assert_eq!(j.state, JobState::Pending, "{j:?}");
    assert_eq!(j.reason, Reason::PriceWindow, "{j:?}");
    assert_eq!(j.expected_start, Some(window), "{j:?}");
    let q = c.cmd_ok("gsqueue", ["--start", "-h", "-o", "%i %S %r"]);
    assert!(q.contains(&format!("{long} {when} PriceWindow")), "{q}");
    // gsinfo --prices shows the window in the next 24 hours.
    let p = c.cmd_ok("gsinfo", ["--prices"]);
    assert!(
        p.contains("time zone UTC, default 0.5000; deferral of long jobs on"),
        "{p}"
    );
    assert!(
        p.contains(&format!("{when}  ")) && p.contains("0.0500  cheap"),
        "{p}"
    );
    // The QOS flag NoDefer opts out too.
    c.cmd_ok(
        "gsacctmgr",
        ["-i", "modify", "qos", "normal", "set", "Flags=NoDefer"],
    );
    let nodefer = c.submit(["-n", "1", "-t", "3:00:00", "--wrap", "sleep 1000"]);
    c.wait_state(nodefer, JobState::Running, secs(30));
    // Accounting: estimated energy (360 kW per CPU: 0.1 kWh a second) and its cost at the
    // default price.
    c.cmd_ok("gscancel", [short.to_string()]);
    c.wait_terminal(short, secs(30));
    let a = c.cmd_ok(
        "gsacct",
        [
            "-X",
            "-n",
            "-P",
            "-j",
            &short.to_string(),
            "-o",
            "JobID,EnergyKWh,Cost",
        ],
    );
    let f: Vec<&str> = a.trim().split('|').collect();
    assert_eq!(f[0], short.to_string(), "{a}");
    let kwh: f64 = f[1].parse().unwrap();
    let cost: f64 = f[2].parse().unwrap();
    let j = c.job(short);
    let ran = (j.end_time.unwrap() - j.start_time.unwrap()) as f64;
    assert!((kwh - ran * 0.1).abs() < 1e-3, "{a} ran {ran}s");
    assert!((cost - kwh * 0.5).abs() < 0.01, "{a}");
    let r = c.cmd_ok("gsacct", ["--cost-report", "-a"]);
    assert!(r.starts_with("User "), "{r}");
    assert!(r.lines().last().unwrap().starts_with("TOTAL"), "{r}");
    c.cmd_ok("gscancel", ["-u", c.user()]);
}

#[test]
fn inside_the_window_the_long_job_starts_and_deadlines_are_kept() {
    let t = now();
    let (c, _) = cluster("price-now", t - 3600, t + 5 * 3600);
    let long = c.submit(["-n", "1", "-t", "3:00:00", "--wrap", "sleep 1000"]);
    c.wait_state(long, JobState::Running, secs(30));
    // A job that cannot end before its deadline is removed (Slurm's DEADLINE, DeadLine).
    let late = c.submit([
        "-n",
        "1",
        "-t",
        "2:00:00",
        "--deadline",
        "now+1hour",
        "--hold",
        "--wrap",
        "true",
    ]);
    let j = c.wait_state(late, JobState::Deadline, secs(30));
    assert_eq!(j.reason, Reason::DeadLine, "{j:?}");
    c.cmd_ok("gscancel", ["-u", c.user()]);
}

#[test]
fn a_bad_price_calendar_stops_the_controller_with_file_and_line() {
    for (lines, want) in [
        (
            vec![
                "PriceWindow=a Start=01:00 End=05:00 Price=0.1",
                "PriceWindow=b Start=04:00 End=06:00 Days=Mon Price=0.2",
            ],
            "PriceWindow b overlaps PriceWindow a",
        ),
        (
            vec!["PriceWindow=a Start=01:00 End=05:00 Days=Mon-Fry Price=0.1"],
            "Days: unknown day \"Fry\"",
        ),
    ] {
        let mut opts = ClusterOpts::named("price-bad");
        for l in &lines {
            opts = opts.config_line(l);
        }
        let c = TestCluster::config_only(opts);
        let text = std::fs::read_to_string(c.conf_path()).unwrap();
        let line = text
            .lines()
            .position(|l| l == *lines.last().unwrap())
            .unwrap()
            + 1;
        let out = std::process::Command::new(gsched_tests::bins::bin("gsctld"))
            .arg("-D")
            .arg("-f")
            .arg(c.conf_path())
            .output()
            .unwrap();
        assert!(!out.status.success(), "{out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        let at = format!("{}:{line}: ", c.conf_path().display());
        assert!(err.contains(&format!("{at}{want}")), "{err}");
    }
    // A malformed price file: its own file and line.
    let c = TestCluster::config_only(
        ClusterOpts::named("price-badfile").config_line("PriceFile=prices.csv"),
    );
    let csv = c.conf_path().parent().unwrap().join("prices.csv");
    std::fs::write(
        &csv,
        "timestamp,price\n2026-01-01T00:00Z,0.1\n2026-01-01T01:00Z,cheap\n",
    )
    .unwrap();
    let out = std::process::Command::new(gsched_tests::bins::bin("gsctld"))
        .arg("-D")
        .arg("-f")
        .arg(c.conf_path())
        .output()
        .unwrap();
    assert!(!out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "{}:3: PriceFile: \"cheap\" is not a price",
            csv.display()
        )),
        "{err}"
    );
}
