//! The event-driven replay: a virtual clock jumps from event to event (a job arrives, a job
//! ends, a running job outlives its predicted end) and at each event time the scheduler
//! core's [`gsched_sched::decide`] — the very function gsctld calls — is asked which queued
//! jobs start now. Started jobs run for their trace runtime and are killed at their limit
//! (as gsctld kills them), so the only thing simulated is time.
//!
//! Planning lengths are the users' limits, or with a predictor ([`Settings::predictor`]) the
//! predicted runtimes of waiting jobs: a job may backfill when its prediction fits before
//! the reservation. Where running jobs are expected to end is [`RunningPlan`]: by default at
//! their prediction until they outlive it, then at their limit. The kill time is always the
//! limit.
//!
//! Speed: a pass costs about the length of the queue, so passes are only run when something
//! may start: at an event time with a non-empty queue and at least one free CPU in the
//! partition (with every CPU busy no job can start, whatever the policy). Estimates of start
//! times are not needed here, so the core is asked for none (`plan_depth` 0,
//! `fifo_estimates` off), which changes no decision.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use gsched_proto::job::MemRequest;
use gsched_sched::predict::{JobFeatures, Predictor, PredictorKind};
use gsched_sched::{decide, place, QueuedJob, ResourceRequest, RunningAlloc, SchedConfig};

use crate::cluster::Cluster;
use crate::trace::TraceJob;

/// How to replay.
#[derive(Debug, Clone)]
pub struct Settings {
    pub sched: SchedConfig,
    /// Plan with predicted runtimes from this predictor; `None` = with the users' limits.
    pub predictor: Option<PredictorKind>,
    /// With a predictor: where running jobs are expected to end.
    pub running_plan: RunningPlan,
    /// Kill jobs at their limit (gsctld does); `false` lets them run their whole trace
    /// runtime, as simulators that ignore limits (RLScheduler) do.
    pub kill_at_limit: bool,
    /// Time-of-use prices (`--prices`); with `aware`, long jobs are deferred to cheap hours
    /// by the core (`gsched_sched::price`).
    pub prices: Option<std::sync::Arc<crate::prices::SimPrices>>,
    /// Schedule the jobs' GPUs on the nodes' GPUs (`--gpu-sharing`, [`crate::gpu`]); `None`:
    /// as the trace's resource says (milli-GPUs as CPUs for the Alibaba trace).
    pub gpu: Option<crate::gpu::GpuSharing>,
    /// With `pack:F` (F above 1): how fast pods run on a GPU whose shares add up to more
    /// than the GPU. Their trace runtime is the work they do at full speed; a pod whose GPU's
    /// co-tenants change is re-timed then (its limit, the trace runtime, is not enforced on
    /// the time it loses).
    pub shared_speed: crate::gpu::SharedSpeed,
}

/// With a predictor, where running jobs are planned to end. Measured on SDSC-SP2, CTC-SP2 and
/// HPC2N in `docs/results.md`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RunningPlan {
    /// At `start + prediction`; once a job outlives its prediction, at its limit. Reservations
    /// follow what jobs are likely to do, and a job that proved unpredictable stops moving
    /// them.
    #[default]
    PredictThenLimit,
    /// At the limit: reservations are never earlier than running jobs guarantee, but a job
    /// backfilled on its prediction holds its resources past the reservation in the plan,
    /// which moves the reservation later (long waits in the tail on CTC-SP2).
    Limit,
    /// At the prediction, extended step by step when a job outlives it
    /// ([`Predictor::extend`]; Tsafrir's EASY++): reservations are often too early, which
    /// blocks backfill that would have fitted.
    PredictSteps,
}

impl RunningPlan {
    pub const NAMES: &'static [&'static str] = &["predict-then-limit", "limit", "predict-steps"];

    pub fn from_name(s: &str) -> Option<RunningPlan> {
        match s {
            "predict-then-limit" => Some(RunningPlan::PredictThenLimit),
            "limit" => Some(RunningPlan::Limit),
            "predict-steps" => Some(RunningPlan::PredictSteps),
            _ => None,
        }
    }
}

/// What happened to one job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobOutcome {
    pub submit: i64,
    pub start: i64,
    pub end: i64,
    pub cpus: u64,
    /// The trace runtime (what the job would have run without a limit).
    pub trace_run: i64,
    pub limit: Option<i64>,
    /// The planning length it was first given: its prediction, or its limit.
    pub planned: Option<i64>,
    pub killed: bool,
    /// GPUs it held, as (node, GPU index), with `--gpu-sharing`.
    pub gpus: Vec<(u32, u32)>,
    /// It asked for part of one GPU (with `--gpu-sharing`).
    pub fractional: bool,
}

impl JobOutcome {
    pub fn wait(&self) -> i64 {
        self.start - self.submit
    }
    pub fn run(&self) -> i64 {
        self.end - self.start
    }
}

/// The result of a replay.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// Jobs that ran, in the order of the trace's submit times.
    pub jobs: Vec<JobOutcome>,
    /// Jobs refused at submission, by reason.
    pub rejected: BTreeMap<String, u64>,
    /// Jobs still waiting when nothing else could happen (a partition down, say).
    pub never_started: u64,
    /// Scheduling passes run.
    pub passes: u64,
}

/// A running job.
#[derive(Debug, Clone, Copy)]
struct Run {
    start: i64,
    end: i64,
    plan_end: i64,
    corrections: u32,
    /// Seconds of work left at full speed as of `since`, and the speed since then (below 1
    /// on an oversubscribed GPU).
    work_left: f64,
    since: i64,
    speed: f64,
}

/// Re-times, at `now`, the jobs on the shared GPUs of an allocation that just started or
/// ended (`nodes`): each runs at the speed its GPU's shares give it from now on.
fn respeed(
    view: &mut gsched_sched::ClusterView,
    runs: &mut [Option<Run>],
    pos_in_running: &[usize],
    ends: &mut BinaryHeap<Reverse<(i64, u32)>>,
    model: crate::gpu::SharedSpeed,
    nodes: &[gsched_sched::NodeAlloc],
    now: i64,
) {
    for a in nodes {
        for g in a.gpus.iter().filter(|g| g.share.is_some()) {
            respeed_gpu(
                view,
                runs,
                pos_in_running,
                ends,
                model,
                a.node,
                g.index,
                now,
            );
        }
    }
}

/// [`respeed`] for GPU `gpu` of node `node`.
#[allow(clippy::too_many_arguments)]
fn respeed_gpu(
    view: &mut gsched_sched::ClusterView,
    runs: &mut [Option<Run>],
    pos_in_running: &[usize],
    ends: &mut BinaryHeap<Reverse<(i64, u32)>>,
    model: crate::gpu::SharedSpeed,
    node: usize,
    gpu: u32,
    now: i64,
) {
    let Some(g) = view.nodes[node].gpus.iter().find(|g| g.device.index == gpu) else {
        return;
    };
    let sum: u32 = g
        .holds
        .iter()
        .filter_map(|h| h.share.as_ref().map(|s| s.percent))
        .sum();
    let speed = model.speed(sum);
    let ids: Vec<u32> = g.holds.iter().map(|h| h.job_id).collect();
    for id in ids {
        let i = id as usize - 1;
        let Some(run) = runs[i].as_mut() else {
            continue;
        };
        if run.speed == speed {
            continue;
        }
        run.work_left = (run.work_left - (now - run.since) as f64 * run.speed).max(0.0);
        run.since = now;
        run.speed = speed;
        // Work done by now (to the rounding of a second) ends now, whatever the speed.
        let end = now + ((run.work_left / speed - 1e-6).ceil() as i64).max(0);
        if end != run.end {
            run.end = end;
            ends.push(Reverse((end, id)));
            if let Some(r) = view.running.get_mut(pos_in_running[i]) {
                r.end = end.max(run.plan_end);
            }
        }
    }
}

fn minutes(secs: i64) -> u32 {
    ((secs.max(1) + 59) / 60).min(u32::MAX as i64) as u32
}

fn request(j: &TraceJob, gpu: Option<crate::gpu::GpuSharing>) -> ResourceRequest {
    if let (Some(mode), Some(g)) = (gpu, &j.gpu) {
        return ResourceRequest {
            nodes: Some(1),
            tasks: 1,
            cpus_per_task: crate::gpu::cpus(g),
            mem: j.mem_mb.map(MemRequest::PerNode),
            gpu: Some(crate::gpu::need(g, mode)),
            ..ResourceRequest::default()
        };
    }
    ResourceRequest {
        licenses: Vec::new(),
        gpu: None,
        nodes: j.one_node.then_some(1),
        tasks: j.tasks.max(1),
        cpus_per_task: j.cpus_per_task.max(1),
        ntasks_per_node: None,
        mem: j.mem_mb.map(MemRequest::PerNode),
        exclusive: false,
        filter: None,
    }
}

fn features(j: &TraceJob) -> JobFeatures {
    JobFeatures {
        user: j.user,
        name: j.name,
        size: j.cpus().min(u32::MAX as u64) as u32,
        limit_secs: j.limit,
    }
}

/// Replays `jobs` (sorted by submit time) on `cluster`.
pub fn simulate(cluster: &Cluster, jobs: &[TraceJob], s: &Settings) -> Outcome {
    let mut sched = s.sched.clone();
    sched.plan_depth = 0;
    sched.fifo_estimates = false;
    let mut view = cluster.view.clone();
    let part = cluster.partition;
    if let Some(g) = s.gpu {
        view.partitions[part].gpu.compute_pct = g.compute_pct();
    }
    // Pods slow down only where shares may add up to more than a GPU.
    let retime = s.gpu.is_some_and(|g| g.compute_pct() > 100);
    let part_nodes = view.partitions[part].nodes.clone();
    let part_max = view.partitions[part].max_time.map(|m| m as i64 * 60);
    let mut predictor = Predictor::new(s.predictor.unwrap_or(PredictorKind::UserLimit));
    let predicting = s.predictor.is_some();

    let mut out = Outcome::default();
    // Per job (index = id - 1).
    let mut results: Vec<Option<JobOutcome>> = vec![None; jobs.len()];
    let mut runs: Vec<Option<Run>> = vec![None; jobs.len()];
    let mut pos_in_running: Vec<usize> = vec![usize::MAX; jobs.len()];
    let mut queue: Vec<QueuedJob> = Vec::new();
    let mut planned: Vec<Option<i64>> = vec![None; jobs.len()];
    let mut ends: BinaryHeap<Reverse<(i64, u32)>> = BinaryHeap::new();
    let mut expiries: BinaryHeap<Reverse<(i64, u32)>> = BinaryHeap::new();
    // Chosen starts of deferred jobs: a pass must run then even if nothing else happens.
    let mut wakeups: BinaryHeap<Reverse<i64>> = BinaryHeap::new();
    let aware = s.prices.as_ref().filter(|p| p.aware).cloned();
    // Whether a request fits the empty partition at all, by shape.
    #[allow(clippy::type_complexity)]
    let mut fits: BTreeMap<(u32, u32, Option<u64>, bool, Option<(u32, u32)>), bool> =
        BTreeMap::new();
    let empty_nodes = view.nodes.clone();
    let part_cpus: u64 = cluster.cpus;
    let mut busy_cpus: u64 = view.partitions[part]
        .nodes
        .iter()
        .map(|&i| view.nodes[i].alloc_cpus as u64)
        .sum();
    let mut next = 0usize;

    loop {
        let t_arrival = jobs.get(next).map(|j| j.submit);
        let t_end = ends.peek().map(|Reverse((t, _))| *t);
        let t_exp = expiries.peek().map(|Reverse((t, _))| *t);
        let t_wake = wakeups.peek().map(|Reverse(t)| *t);
        let Some(now) = [t_arrival, t_end, t_exp, t_wake]
            .into_iter()
            .flatten()
            .min()
        else {
            break;
        };
        while wakeups.peek().is_some_and(|Reverse(t)| *t <= now) {
            wakeups.pop();
        }

        // Completions.
        while let Some(&Reverse((t, id))) = ends.peek() {
            if t > now {
                break;
            }
            ends.pop();
            let i = id as usize - 1;
            // An end moved by a change of speed leaves its old entry behind.
            if runs[i].is_none_or(|r| r.end != t) {
                continue;
            }
            let Some(run) = runs[i].take() else { continue };
            let pos = pos_in_running[i];
            let alloc = view.running.swap_remove(pos);
            if let Some(moved) = view.running.get(pos) {
                pos_in_running[moved.job_id as usize - 1] = pos;
            }
            pos_in_running[i] = usize::MAX;
            for a in &alloc.nodes {
                let n = &mut view.nodes[a.node];
                n.alloc_cpus -= a.cpus;
                n.alloc_mem_mb -= a.mem_mb;
                busy_cpus -= a.cpus as u64;
                if !a.gpus.is_empty() {
                    for g in &mut n.gpus {
                        g.holds.retain(|h| h.job_id != id);
                    }
                }
            }
            if retime {
                respeed(
                    &mut view,
                    &mut runs,
                    &pos_in_running,
                    &mut ends,
                    s.shared_speed,
                    &alloc.nodes,
                    now,
                );
            }
            let j = &jobs[i];
            if predicting {
                predictor.observe(&features(j), run.end - run.start);
            }
            results[i] = Some(JobOutcome {
                submit: j.submit,
                start: run.start,
                end: run.end,
                cpus: alloc.nodes.iter().map(|a| a.cpus as u64).sum(),
                trace_run: j.run,
                limit: j.limit,
                planned: planned[i],
                killed: run.end - run.start < j.run,
                gpus: alloc
                    .nodes
                    .iter()
                    .flat_map(|a| a.gpus.iter().map(|g| (a.node as u32, g.index)))
                    .collect(),
                fractional: s.gpu.is_some() && j.gpu.is_some_and(|g| g.fractional()),
            });
        }

        // Running jobs past their predicted end: extend the prediction.
        while let Some(&Reverse((t, id))) = expiries.peek() {
            if t > now {
                break;
            }
            expiries.pop();
            let i = id as usize - 1;
            let Some(run) = runs[i].as_mut() else {
                continue;
            };
            if run.plan_end != t {
                continue;
            }
            let elapsed = now - run.start;
            run.plan_end = match s.running_plan {
                RunningPlan::PredictSteps => {
                    run.start + Predictor::extend(&features(&jobs[i]), elapsed, run.corrections)
                }
                _ => jobs[i]
                    .limit
                    .map_or(gsched_sched::UNLIMITED_END, |l| run.start + l),
            };
            run.corrections += 1;
            view.running[pos_in_running[i]].end = run.plan_end;
            if run.plan_end < run.end {
                expiries.push(Reverse((run.plan_end, id)));
            }
        }

        // Arrivals.
        while let Some(j) = jobs.get(next) {
            if j.submit > now {
                break;
            }
            let i = next;
            next += 1;
            let req = request(j, s.gpu);
            if let (Some(max), Some(l)) = (part_max, j.limit) {
                if l > max {
                    *out.rejected
                        .entry("time limit above the partition's MaxTime".into())
                        .or_default() += 1;
                    continue;
                }
            }
            let gkey = s.gpu.and(j.gpu).map(|g| (g.count, g.milli));
            let key = (req.tasks, req.cpus_per_task, j.mem_mb, j.one_node, gkey);
            let ok = *fits
                .entry(key)
                .or_insert_with(|| place(&empty_nodes, &part_nodes, &req).is_some());
            if !ok {
                *out.rejected
                    .entry("larger than the partition".into())
                    .or_default() += 1;
                continue;
            }
            let plan = if predicting {
                predictor.predict(&features(j))
            } else {
                j.limit
            };
            planned[i] = plan;
            queue.push(QueuedJob {
                id: i as u32 + 1,
                priority: 1,
                submit_time: j.submit,
                partitions: vec![part],
                held: None,
                begin_time: None,
                time_limit: plan.map(minutes),
                time_min: None,
                req,
                het: None,
                limits: Vec::new(),
            });
        }

        if queue.is_empty() || busy_cpus >= part_cpus {
            continue;
        }
        out.passes += 1;
        let d = match &aware {
            Some(p) => {
                let d =
                    gsched_sched::price::decide_with_prices(&view, &queue, now, &sched, &p.input);
                let deferred: std::collections::BTreeSet<u32> = d
                    .waiting
                    .iter()
                    .filter(|w| w.1 == gsched_proto::job::Reason::PriceWindow)
                    .map(|w| w.0)
                    .collect();
                if !deferred.is_empty() {
                    let mut any = false;
                    for e in d.estimates.iter().filter(|e| deferred.contains(&e.job_id)) {
                        wakeups.push(Reverse(e.start.max(now + 1)));
                        any = true;
                    }
                    if !any {
                        // FIFO plans no estimates here: ask the policy directly.
                        for df in gsched_sched::price::deferrals(&queue, now, &sched, &p.input) {
                            wakeups.push(Reverse(df.start.max(now + 1)));
                        }
                    }
                }
                d
            }
            None => decide(&view, &queue, now, &sched),
        };
        if d.starts.is_empty() {
            continue;
        }
        for st in &d.starts {
            let i = st.job_id as usize - 1;
            let j = &jobs[i];
            let run_len = match (s.kill_at_limit, j.limit) {
                (true, Some(l)) => j.run.min(l),
                _ => j.run,
            };
            let end = now + run_len.max(1);
            let plan_len = if s.running_plan != RunningPlan::Limit {
                planned[i]
            } else {
                j.limit
            };
            let plan_end = match plan_len {
                Some(p) => now + p,
                None => gsched_sched::UNLIMITED_END,
            };
            for a in &st.placement.nodes {
                view.nodes[a.node].take(a, st.job_id, 0);
                busy_cpus += a.cpus as u64;
            }
            pos_in_running[i] = view.running.len();
            view.running.push(RunningAlloc {
                job_id: st.job_id,
                end: plan_end,
                nodes: st.placement.nodes.clone(),
            });
            runs[i] = Some(Run {
                start: now,
                end,
                plan_end,
                corrections: 0,
                work_left: (end - now) as f64,
                since: now,
                speed: 1.0,
            });
            ends.push(Reverse((end, st.job_id)));
            if retime {
                respeed(
                    &mut view,
                    &mut runs,
                    &pos_in_running,
                    &mut ends,
                    s.shared_speed,
                    &st.placement.nodes,
                    now,
                );
            }
            if predicting && s.running_plan != RunningPlan::Limit && plan_end < end {
                expiries.push(Reverse((plan_end, st.job_id)));
            }
        }
        queue.retain(|q| runs[q.id as usize - 1].is_none());
    }
    out.never_started = queue.len() as u64;
    out.jobs = results.into_iter().flatten().collect();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use gsched_sched::Policy;

    fn job(submit: i64, run: i64, limit: i64, procs: u32, user: u32) -> TraceJob {
        TraceJob {
            gpu: None,
            trace_id: 0,
            submit,
            run,
            limit: Some(limit),
            tasks: procs,
            cpus_per_task: 1,
            mem_mb: None,
            one_node: false,
            user,
            name: None,
        }
    }

    fn settings(policy: Policy, predictor: Option<PredictorKind>) -> Settings {
        Settings {
            sched: SchedConfig {
                policy,
                horizon_secs: 365 * 86400,
                ..SchedConfig::default()
            },
            predictor,
            running_plan: RunningPlan::default(),
            kill_at_limit: true,
            prices: None,
            gpu: None,
            shared_speed: crate::gpu::SharedSpeed::MEASURED_PAIRS,
        }
    }

    fn starts(o: &Outcome) -> Vec<i64> {
        o.jobs.iter().map(|j| j.start).collect()
    }

    /// 4 CPUs. Job A takes 2 CPUs for 100 s; B needs 4 (waits for A); C needs 2 for 50 s.
    /// FCFS: C waits behind B. EASY: C fits beside A and ends before A, so it backfills.
    #[test]
    fn easy_backfills_what_fcfs_holds_back() {
        let c = Cluster::uniform(1, 4, 0).unwrap();
        let jobs = vec![
            job(0, 100, 100, 2, 1),
            job(1, 100, 100, 4, 1),
            job(2, 50, 60, 2, 1),
        ];
        let fcfs = simulate(&c, &jobs, &settings(Policy::Fifo, None));
        assert_eq!(starts(&fcfs), vec![0, 100, 200]);
        let easy = simulate(&c, &jobs, &settings(Policy::EASY, None));
        assert_eq!(starts(&easy), vec![0, 100, 2]);
        let cons = simulate(&c, &jobs, &settings(Policy::Conservative, None));
        assert_eq!(starts(&cons), vec![0, 100, 2]);
    }

    /// A job whose limit would cross the reservation cannot backfill under EASY with
    /// limits, but can with a prediction learnt from the user's previous jobs.
    #[test]
    fn predictions_let_overestimated_jobs_backfill() {
        let c = Cluster::uniform(1, 4, 0).unwrap();
        let jobs = vec![
            // History of user 7: runs of 10 s with a 1,000 s limit.
            job(0, 10, 1000, 4, 7),
            job(20, 10, 1000, 4, 7),
            // Long job of user 1 on 2 CPUs, then a 4-CPU job that must wait for it.
            job(40, 300, 300, 2, 1),
            job(41, 100, 100, 4, 1),
            // User 7 again: 10 s of 2 CPUs, limit 1,000 s.
            job(42, 10, 1000, 2, 7),
        ];
        let easy = simulate(&c, &jobs, &settings(Policy::EASY, None));
        assert_eq!(starts(&easy), vec![0, 20, 40, 340, 440]);
        let pred = simulate(
            &c,
            &jobs,
            &settings(Policy::EASY, Some(PredictorKind::EasyPlusPlus)),
        );
        assert_eq!(starts(&pred), vec![0, 20, 40, 340, 42]);
        assert_eq!(pred.jobs[4].planned, Some(10));
    }

    /// A job that outlives its prediction keeps running to its limit (the kill time is the
    /// limit), whatever the plan of running jobs.
    #[test]
    fn underpredicted_jobs_run_on_and_are_killed_at_their_limit() {
        let c = Cluster::uniform(1, 2, 0).unwrap();
        let jobs = vec![
            job(0, 10, 5000, 2, 3),
            job(20, 10, 5000, 2, 3),
            job(40, 4000, 3000, 2, 3),
            job(41, 10, 20, 2, 9),
        ];
        for plan in [
            RunningPlan::PredictThenLimit,
            RunningPlan::Limit,
            RunningPlan::PredictSteps,
        ] {
            let mut s = settings(Policy::EASY, Some(PredictorKind::EasyPlusPlus));
            s.running_plan = plan;
            let o = simulate(&c, &jobs, &s);
            let third = &o.jobs[2];
            assert_eq!((third.start, third.end, third.killed), (40, 3040, true));
            assert_eq!(o.jobs[3].start, 3040);
        }
    }

    /// Where running jobs are expected to end decides the reservation. R (user 7, whose jobs
    /// ran 10 s) runs 500 s of its 1,000 s limit on 2 of 4 CPUs; H needs all 4; C (2 CPUs,
    /// limit 600 s, no history) comes next. Planning R to its limit puts H's reservation at
    /// 1,040, so C backfills at once and H starts when C ends (642). Planning R to its
    /// prediction (10 s) puts the reservation at 50 and C cannot backfill. When R outlives
    /// its prediction at 50: planned to its limit from then on, the reservation moves to
    /// 1,040 and C backfills at 50 (H at 650); extended step by step (70 s, 370 s, then its
    /// limit at 410), C backfills only at 410 (H at 1,010).
    #[test]
    fn running_jobs_planned_to_their_limit_or_their_prediction() {
        let c = Cluster::uniform(1, 4, 0).unwrap();
        let jobs = vec![
            job(0, 10, 1000, 4, 7),
            job(20, 10, 1000, 4, 7),
            job(40, 500, 1000, 2, 7),
            job(41, 100, 100, 4, 1),
            job(42, 600, 600, 2, 2),
        ];
        let mut s = settings(Policy::EASY, Some(PredictorKind::EasyPlusPlus));
        for (plan, want) in [
            (RunningPlan::Limit, vec![0, 20, 40, 642, 42]),
            (RunningPlan::PredictThenLimit, vec![0, 20, 40, 650, 50]),
            (RunningPlan::PredictSteps, vec![0, 20, 40, 1010, 410]),
        ] {
            s.running_plan = plan;
            assert_eq!(starts(&simulate(&c, &jobs, &s)), want, "{plan:?}");
        }
    }

    #[test]
    fn jobs_that_cannot_fit_are_rejected_and_counted() {
        let c = Cluster::uniform(2, 4, 0).unwrap();
        let jobs = vec![job(0, 10, 10, 9, 1), job(0, 10, 10, 8, 1)];
        let o = simulate(&c, &jobs, &settings(Policy::EASY, None));
        assert_eq!(o.jobs.len(), 1);
        assert_eq!(o.rejected.get("larger than the partition"), Some(&1));
    }
}
