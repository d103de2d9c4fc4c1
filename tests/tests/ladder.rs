//! The invalid-job ladder through the real daemons (issue 11): a job that burns no CPU and
//! writes nothing for `HangMinutes` is flagged `Hung` (gsqueue, gscontrol), its user is told,
//! it is requeued (its resources go back to the cluster), and when it hangs again in its new
//! run it is cancelled, with the reason kept in gsacct; a job that keeps writing is left
//! alone, and a partition with `HangMinutes=0` exempts its jobs. Short thresholds (decimal
//! minutes) keep the test to about a minute; gsnoded reports progress every heartbeat (5 s).
//! A second test walks a job that holds a fake GPU at 0% utilization through the ladder.

use gsched_tests::gpu_fakes::FakeNvml;
use gsched_tests::{secs, webhook_receiver, ClusterOpts, JobState, MailLog, TestCluster};

#[test]
fn hung_jobs_walk_the_ladder_busy_and_exempt_ones_do_not() {
    let (port, hooks) = webhook_receiver();
    let mail = MailLog::new();
    let c = TestCluster::start(
        ClusterOpts::named("ladder")
            .nodes(1)
            .cpus(4)
            .config_line(&mail.config_line())
            .config_line("HangMinutes=0.1")
            .config_line("InvalidJobLadder=notify:0,requeue:0.05,cancel:0.05")
            .config_line(&format!(
                "WebhookName=ops URL=http://127.0.0.1:{port}/hook Events=INVALID_JOB"
            ))
            .config_line("PartitionName=exempt Nodes=ALL HangMinutes=0"),
    );
    let hung = c.submit(["-J", "stuck", "--wrap", "sleep 600"]);
    let busy = c.submit([
        "-J",
        "busy",
        "-o",
        "busy.out",
        "--wrap",
        "while :; do echo tick; sleep 1; done",
    ]);
    let exempt = c.submit(["-J", "calm", "-p", "exempt", "--wrap", "sleep 600"]);

    // Flagged: reason Hung while it still runs, and its user is told.
    c.wait_until(secs(40), "the stuck job flagged", || {
        c.cmd_ok("gsqueue", ["-h", "-j", &hung.to_string(), "-o", "%r"])
            .trim()
            == "Hung"
    });
    // Requeued: it runs again (Restarts=1), and the step is mailed.
    let show = c.wait_for(secs(40), "the stuck job requeued", || {
        let s = c.cmd_ok("gscontrol", ["show", "job", &hung.to_string()]);
        s.contains("Restarts=1").then_some(s)
    });
    assert!(show.contains("JobName=stuck"), "{show}");
    // Hung again in its new run: cancelled, and the reason stays in accounting.
    let j = c.wait_terminal(hung, secs(60));
    assert_eq!(j.state, JobState::Cancelled, "{j:?}");
    let acct = c.cmd_ok(
        "gsacct",
        [
            "-X",
            "-n",
            "-P",
            "-j",
            &hung.to_string(),
            "-o",
            "JobID,State,Reason",
        ],
    );
    assert!(acct.starts_with(&format!("{hung}|CANCELLED")), "{acct}");
    assert!(acct.trim_end().ends_with("|Hung"), "{acct}");

    let mails = c.wait_for(secs(20), "three ladder mails", || {
        let t = mail.read();
        (t.lines().count() >= 3).then_some(t)
    });
    for step in ["notify", "requeue", "cancel"] {
        assert!(
            mails.contains(&format!(
                "Slurm Job_id={hung} Name=stuck Flagged by the invalid-job policy, Run time"
            )) && mails
                .lines()
                .any(|l| l.ends_with(&format!(", Hung, step {step}"))),
            "{step}: {mails}"
        );
    }
    assert!(
        !mails.contains("Name=busy") && !mails.contains("Name=calm"),
        "{mails}"
    );
    let got = hooks.lock().unwrap().clone();
    let steps: Vec<&str> = got
        .iter()
        .filter(|v| v["job_id"] == hung)
        .filter_map(|v| v["invalid"]["step"].as_str())
        .collect();
    assert_eq!(steps, ["notify", "requeue", "cancel"], "{got:?}");

    // The job that writes every second and the exempt one were left alone.
    for id in [busy, exempt] {
        let j = c.jobs().into_iter().find(|j| j.job_id == id).unwrap();
        assert_eq!(j.state, JobState::Running, "{j:?}");
        assert_eq!(j.restarts, 0, "{j:?}");
        assert_eq!(j.reason.as_str(), "None", "{j:?}");
    }
    c.cmd_ok("gscancel", [busy.to_string(), exempt.to_string()]);
}

/// A job that holds a (fake) GPU at 0% utilization is flagged `IdleGPU` although it keeps
/// writing output, its user is told, and it is requeued so that its GPU goes to a job that
/// waits for one; a partition with `IdleGpuMinutes=0` exempts its GPU jobs. The GPUs are the
/// fake `libnvidia-ml.so.1` of the harness (no GPU on this machine), sampled every second.
#[test]
fn idle_gpu_job_gives_its_gpu_to_a_waiting_job() {
    let Some(nvml) = FakeNvml::build() else {
        return;
    };
    let mail = MailLog::new();
    let opts = nvml
        .cluster_opts(
            ClusterOpts::named("ladder-gpu")
                .nodes(2)
                .cpus(4)
                .node_gres("gpu:1"),
            1,
            0,
        )
        .config_line("GpuSampleInterval=1")
        .config_line(&mail.config_line())
        .config_line("IdleGpuMinutes=0.1")
        .config_line("InvalidJobLadder=notify:0,requeue:0.05,cancel:0.05")
        .config_line("PartitionName=exempt Nodes=n2 IdleGpuMinutes=0");
    let c = TestCluster::start(opts);
    let calm = c.submit([
        "-J",
        "calm",
        "-p",
        "exempt",
        "--gres=gpu:1",
        "--wrap",
        "sleep 600",
    ]);
    let idle = c.submit([
        "-J",
        "idle",
        "-w",
        "n1",
        "--gres=gpu:1",
        "-o",
        "idle.out",
        "--wrap",
        "while :; do echo tick; sleep 1; done",
    ]);
    c.wait_state(idle, JobState::Running, secs(30));
    let waiting = c.submit([
        "-J",
        "next",
        "-w",
        "n1",
        "--gres=gpu:1",
        "--wrap",
        "sleep 600",
    ]);

    c.wait_until(secs(40), "the idle GPU job flagged", || {
        c.cmd_ok("gsqueue", ["-h", "-j", &idle.to_string(), "-o", "%r"])
            .trim()
            == "IdleGPU"
    });
    // Requeued, and its GPU went to the job that waited for it.
    let next = c.wait_state(waiting, JobState::Running, secs(60));
    assert_eq!(next.nodes, ["n1"], "{next:?}");
    let j = c.job(idle);
    assert_eq!(j.restarts, 1, "{j:?}");
    assert_ne!(
        j.state,
        JobState::Running,
        "both jobs hold n1's one GPU: {j:?}"
    );
    let mails = c.wait_for(secs(20), "the IdleGPU mails", || {
        let t = mail.read();
        (t.lines().filter(|l| l.contains("Name=idle")).count() >= 2).then_some(t)
    });
    assert!(mails.contains(", IdleGPU, step notify"), "{mails}");
    assert!(mails.contains(", IdleGPU, step requeue"), "{mails}");
    let show = c.cmd_ok("gscontrol", ["show", "job", &idle.to_string()]);
    assert!(show.contains("Restarts=1"), "{show}");

    // The exempt partition's idle GPU job was left alone.
    let k = c.job(calm);
    assert_eq!(k.state, JobState::Running, "{k:?}");
    assert_eq!(k.reason.as_str(), "None", "{k:?}");
    assert!(!mails.contains("Name=calm"), "{mails}");
    c.cmd_ok(
        "gscancel",
        [calm.to_string(), idle.to_string(), waiting.to_string()],
    );
}
