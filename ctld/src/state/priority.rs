//! `PriorityType=priority/multifactor` in the controller.
//!
//! Every scheduling pass recomputes the priority of each pending job (except held ones, which
//! stay at 0, and jobs whose priority an administrator set) with
//! [`gsched_sched::multifactor_priority`], and keeps the weighted factors in
//! [`JobInfo::priority_factors`] for `gscontrol show job`.
//!
//! **Fair-share.** Usage is CPU-seconds per association: the job's account (`-A`), or its
//! user when it has none. Each pass first decays every association's usage by the time since
//! the previous pass (`PriorityDecayHalfLife`), then adds the CPU-seconds that running and
//! finished jobs used since they were last counted. Usage lives in memory; after a restart it
//! is rebuilt from the jobs the store still holds (those that ended within `MinJobAge`, and
//! the running ones). Every association known to the controller (with usage, or with jobs in
//! memory) has equal shares; its fair-share factor is `2^(-usage/shares)` with usage as a
//! fraction of all usage, Slurm's classic formula.

use super::*;
use gsched_proto::config::PriorityType;
use gsched_proto::job::PriorityFactors;
use gsched_sched::{decay, multifactor_priority, PriorityInputs, PriorityWeights};
use std::collections::HashSet;

/// Who usage is charged to.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Assoc {
    Account(String),
    User(u32),
}

impl Assoc {
    pub fn of(job: &JobInfo) -> Assoc {
        match &job.spec.account {
            Some(a) => Assoc::Account(a.clone()),
            None => Assoc::User(job.user_id),
        }
    }
}

/// Decayed CPU-seconds per association.
#[derive(Debug, Clone, Default)]
pub struct Usage {
    pub by_assoc: HashMap<Assoc, f64>,
    /// When `by_assoc` was last decayed.
    pub decayed_at: Option<i64>,
    /// Per job: the time up to which its run was counted.
    pub counted_until: HashMap<JobId, i64>,
}

impl Usage {
    /// Decays all usage to `now` and counts what jobs used since they were last counted.
    pub fn update<'a>(
        &mut self,
        jobs: impl Iterator<Item = &'a JobInfo>,
        now: i64,
        half_life: i64,
    ) {
        if let Some(t) = self.decayed_at {
            let elapsed = now - t;
            if elapsed > 0 {
                for u in self.by_assoc.values_mut() {
                    *u = decay(*u, elapsed, half_life);
                }
            }
        }
        self.decayed_at = Some(now);
        let mut seen = HashSet::new();
        for j in jobs {
            let Some(start) = j.start_time else { continue };
            seen.insert(j.job_id);
            let to = j.end_time.unwrap_or(now).min(now);
            let from = self
                .counted_until
                .get(&j.job_id)
                .map_or(start, |&c| c.max(start));
            if to > from {
                let cpus: u32 = j.cpus_per_node.iter().sum();
                let cpus = if cpus == 0 { j.num_cpus } else { cpus };
                *self.by_assoc.entry(Assoc::of(j)).or_insert(0.0) +=
                    f64::from(cpus) * (to - from) as f64;
                self.counted_until.insert(j.job_id, to);
            }
        }
        // Forget jobs the controller forgot.
        self.counted_until.retain(|id, _| seen.contains(id));
    }

    /// The association's share of all usage (`0..=1`).
    pub fn fraction(&self, a: &Assoc) -> f64 {
        let total: f64 = self.by_assoc.values().sum();
        if total <= 0.0 {
            0.0
        } else {
            self.by_assoc.get(a).copied().unwrap_or(0.0) / total
        }
    }
}

/// The multifactor weights from the config.
pub fn weights_from(cfg: &Config) -> PriorityWeights {
    let p = &cfg.priority;
    PriorityWeights {
        age: p.weight_age,
        fairshare: p.weight_fairshare,
        job_size: p.weight_job_size,
        partition: p.weight_partition,
        qos: p.weight_qos,
        max_age_secs: p.max_age_secs,
        favor_small: p.favor_small,
    }
}

impl State {
    /// Under priority/multifactor: updates usage and every pending job's priority.
    pub(super) fn update_priorities(&mut self, now: i64, dep_blocked: &HashMap<JobId, Reason>) {
        if self.cfg.priority.priority_type != PriorityType::Multifactor {
            return;
        }
        let half_life = self.cfg.priority.decay_half_life_secs;
        self.usage
            .update(self.jobs.values().map(|j| &j.info), now, half_life);
        let weights = weights_from(&self.cfg);
        let cluster_nodes = self.nodes.len() as u32;
        let cluster_cpus: u32 = self.nodes.iter().map(|n| n.cpus).sum();
        let mut assocs: HashSet<Assoc> = self.usage.by_assoc.keys().cloned().collect();
        assocs.extend(self.jobs.values().map(|j| Assoc::of(&j.info)));
        let shares = 1.0 / assocs.len().max(1) as f64;
        let usage = &self.usage;
        for job in self.jobs.values_mut() {
            let j = &mut job.info;
            if j.state != JobState::Pending || job.extra.priority_fixed {
                continue;
            }
            if j.held {
                j.priority_factors = None;
                continue;
            }
            let inputs = PriorityInputs {
                eligible_time: if dep_blocked.contains_key(&j.job_id) {
                    None
                } else {
                    j.eligible_time
                },
                nodes: j.num_nodes,
                cpus: j.num_cpus,
                cluster_nodes,
                cluster_cpus,
                usage: usage.fraction(&Assoc::of(j)),
                shares,
                partition_factor: 1,
                partition_factor_max: 1,
                qos_priority: 0,
                qos_priority_max: 0,
                nice: j.nice(),
            };
            let b = multifactor_priority(&inputs, &weights, now);
            j.priority = b.total;
            j.priority_factors = Some(PriorityFactors {
                age: b.age,
                fairshare: b.fairshare,
                job_size: b.job_size,
                partition: b.partition,
                qos: b.qos,
                nice: b.nice,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{register_all, spec, ROOT};
    use super::*;

    const ALICE: Identity = Identity {
        uid: 1001,
        gid: 1001,
    };
    const BOB: Identity = Identity {
        uid: 1002,
        gid: 1002,
    };

    fn state(dir: &std::path::Path, extra: &str) -> State {
        let text = format!(
            "ClusterName=t\nSlurmctldHost=h(127.0.0.1)\nAuthType=auth/none\nStateSaveLocation={d}/s\nSlurmdSpoolDir={d}/sp\n\
             PriorityType=priority/multifactor\n{extra}\
             NodeName=n[1-2] NodeAddr=127.0.0.1 CPUs=2 RealMemory=1000\nPartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE\n",
            d = dir.display()
        );
        let cfg = Arc::new(Config::parse(&text, &dir.join("gsched.conf")).unwrap());
        let store = Store::open(&cfg.state_save_location, false).unwrap();
        State::load(cfg, store, 1000).unwrap()
    }

    fn finish(st: &mut State, id: JobId, end: i64) {
        let j = &st.jobs[&id].info;
        let start = j.start_time.unwrap();
        let done = JobCompleteRequest {
            job_id: id,
            node: j.nodes[0].clone(),
            start_time: start,
            exit_code: 0,
            signal: 0,
            end_time: end,
            launch_error: None,
            terminated_for: None,
            oom_kills: 0,
            usage: None,
        };
        st.launch_result(id, start, Ok(()), start);
        st.complete(&done, end).unwrap();
    }

    #[test]
    fn heavy_user_gets_lower_priority_and_starts_later() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(
            dir.path(),
            "PriorityWeightFairshare=10000\nPriorityWeightAge=1000\n",
        );
        register_all(&mut st, 1000);
        // Alice fills the cluster (times stay within SlurmdTimeout of the registration).
        let a1 = st.submit(spec(2), ALICE, 1000).unwrap();
        let a2 = st.submit(spec(2), ALICE, 1000).unwrap();
        st.schedule(1000);
        assert_eq!(st.jobs[&a1].info.state, JobState::Running);
        assert_eq!(st.jobs[&a2].info.state, JobState::Running);
        // Alice submits first, Bob later: Bob still ranks higher.
        let a3 = st.submit(spec(2), ALICE, 1050).unwrap();
        let b1 = st.submit(spec(2), BOB, 1100).unwrap();
        st.schedule(1150);
        let (pa, pb) = (st.jobs[&a3].info.priority, st.jobs[&b1].info.priority);
        assert!(pb > pa, "bob {pb} alice {pa}");
        let fa = st.jobs[&a3].info.priority_factors.unwrap();
        let fb = st.jobs[&b1].info.priority_factors.unwrap();
        // Alice has all the usage: 2^(-1/0.5) = 1/4; Bob none: 1.
        assert!((fa.fairshare - 2500.0).abs() < 1.0, "{fa:?}");
        assert!((fb.fairshare - 10_000.0).abs() < 1e-6, "{fb:?}");
        // Age counts from the eligible time (7-day PriorityMaxAge).
        assert!(fa.age > fb.age);
        // One node frees: Bob's job starts first.
        finish(&mut st, a1, 1200);
        st.schedule(1200);
        assert_eq!(st.jobs[&b1].info.state, JobState::Running);
        assert_eq!(st.jobs[&a3].info.state, JobState::Pending);
        // 2 CPUs for 200 s each (a1 finished, a2 still running); nothing decays in 200 s
        // of a 7-day half-life to within 1 CPU-second.
        let alice = st.usage.by_assoc[&Assoc::User(1001)];
        assert!((alice - 800.0).abs() < 1.0, "{alice}");
        st.schedule(1250);
        let alice = st.usage.by_assoc[&Assoc::User(1001)];
        assert!((alice - 900.0).abs() < 1.0, "{alice}");
    }

    #[test]
    fn usage_is_per_account_and_decays() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(
            dir.path(),
            "PriorityWeightFairshare=1000\nPriorityDecayHalfLife=1:00:00\n",
        );
        register_all(&mut st, 1000);
        let mut s = spec(2);
        s.account = Some("Physics".into());
        let a = st.submit(s.clone(), ALICE, 1000).unwrap();
        assert_eq!(st.jobs[&a].info.spec.account.as_deref(), Some("physics"));
        st.schedule(1000);
        finish(&mut st, a, 1000 + 3600);
        st.schedule(1000 + 3600);
        let u = st.usage.by_assoc[&Assoc::Account("physics".into())];
        assert!((u - 2.0 * 3600.0).abs() < 1.0, "{u}");
        // One half-life later: half.
        st.schedule(1000 + 2 * 3600);
        let u = st.usage.by_assoc[&Assoc::Account("physics".into())];
        assert!((u - 3600.0).abs() < 1.0, "{u}");
        // Bob in the same account shares its usage; Bob alone does not.
        let b_acct = st.submit(s, BOB, 8200).unwrap();
        let b_own = st.submit(spec(2), BOB, 8200).unwrap();
        // The nodes stopped answering long ago (SlurmdTimeout): both stay pending.
        st.schedule(8200);
        let f = |id: JobId| st.jobs[&id].info.priority_factors.unwrap().fairshare;
        assert!(f(b_acct) < f(b_own), "{} {}", f(b_acct), f(b_own));
    }

    #[test]
    fn nice_favor_small_held_and_admin_priority() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(
            dir.path(),
            "PriorityWeightJobSize=1000\nPriorityWeightPartition=100\nPriorityFavorSmall=YES\n",
        );
        // Nodes not registered: everything stays pending.
        let small = st.submit(spec(1), ALICE, 1000).unwrap();
        let big = st.submit(spec(4), ALICE, 1000).unwrap();
        let mut s = spec(1);
        s.nice = Some(300);
        let nice = st.submit(s, ALICE, 1000).unwrap();
        let mut s = spec(1);
        s.hold = true;
        let held = st.submit(s, ALICE, 1000).unwrap();
        st.schedule(1000);
        let p = |st: &State, id: JobId| st.jobs[&id].info.priority;
        // Small: nodes (2-1)/2 and CPUs (4-1)/4 -> 0.625 * 1000 + partition 100 = 725.
        assert_eq!(p(&st, small), 725);
        // One node of two (-n 4 without -N asks for one node) and all CPUs:
        // (0.5 + 0) / 2 * 1000 + 100.
        assert_eq!(p(&st, big), 350);
        assert_eq!(p(&st, nice), 425);
        assert_eq!(st.jobs[&nice].info.priority_factors.unwrap().nice, 300);
        assert_eq!(p(&st, held), 0);
        assert_eq!(st.jobs[&held].info.priority_factors, None);
        // Negative nice: only administrators.
        let mut s = spec(1);
        s.nice = Some(-100);
        let e = st.submit(s.clone(), ALICE, 1000).unwrap_err();
        assert_eq!(e.code, ErrorCode::AccessDenied);
        let boosted = st.submit(s, ROOT, 1000).unwrap();
        st.schedule(1001);
        assert_eq!(p(&st, boosted), 825);
        // An administrator's priority sticks.
        let req = JobUpdateRequest {
            job_id: big,
            priority: Some(5),
            ..JobUpdateRequest::default()
        };
        st.update_job(&req, ROOT, 1002).unwrap();
        st.schedule(1003);
        assert_eq!(p(&st, big), 5);
    }

    #[test]
    fn basic_keeps_fifo() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = super::super::tests::state(dir.path());
        let a = st.submit(spec(1), ALICE, 1000).unwrap();
        let mut s = spec(1);
        s.nice = Some(100);
        let b = st.submit(s, ALICE, 1000).unwrap();
        st.schedule(1000);
        assert!(st.jobs[&a].info.priority > st.jobs[&b].info.priority);
        assert_eq!(st.jobs[&a].info.priority_factors, None);
    }
}
