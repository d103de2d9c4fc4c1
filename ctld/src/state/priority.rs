//! `PriorityType=priority/multifactor` in the controller.
//!
//! Every scheduling pass recomputes the priority of each pending job (except held ones, which
//! stay at 0, and jobs whose priority an administrator set) with
//! [`gsched_sched::multifactor_priority`], and keeps the weighted factors in
//! [`JobInfo::priority_factors`] for `gscontrol show job` and `gsprio`. As in slurmctld, a
//! job gets its priority when it is submitted too (with the fair-share factors of the last
//! pass), so that `gsqueue` and `gscontrol show job` never show a pending job without one
//! while passes are spaced by `sched_min_interval`.
//!
//! **Fair-share.** Usage is CPU-seconds per association: the job's account (`-A`, or the
//! user's default account) and its user. Each pass first decays every association's usage by
//! the time since the previous pass (`PriorityDecayHalfLife`), then adds the CPU-seconds that
//! running and finished jobs used since they were last counted. The usage, and up to when
//! each job was counted, is saved in the store (whenever a finished job was counted, and at
//! least every [`USAGE_SAVE_SECS`]), so fair-share survives a controller restart without
//! counting anything twice. The fair-share factor is Slurm's classic algorithm over the
//! account tree of `gsacctmgr` ([`gsched_sched::classic_fairshare`]): accounts and user
//! associations with their `Fairshare=` shares (idle associations hold theirs too, as in
//! Slurm); an account or user that is not in the table gets one share (a job without account
//! hangs its user directly under the root).
//!
//! **QOS.** The QOS factor is the job's QOS `Priority` over the largest QOS priority.

use super::*;
use gsched_proto::acct::ROOT_ACCOUNT;
use gsched_proto::config::PriorityType;
use gsched_proto::job::PriorityFactors;
use gsched_sched::{
    classic_fairshare, decay, multifactor_priority, FsNode, PriorityInputs, PriorityWeights,
};
use std::collections::HashSet;

/// The longest time between two saves of the usage.
pub const USAGE_SAVE_SECS: i64 = 60;

/// Who usage is charged to: (account, user name); account `""` for a job without one.
pub type Assoc = (String, String);

/// The association a job's usage is charged to.
pub fn assoc_of(job: &JobInfo) -> Assoc {
    (
        job.spec.account.clone().unwrap_or_default(),
        job.user_name.clone(),
    )
}

/// Decayed CPU-seconds per association.
#[derive(Debug, Clone, Default)]
pub struct Usage {
    pub by_assoc: HashMap<Assoc, f64>,
    /// When `by_assoc` was last decayed.
    pub decayed_at: Option<i64>,
    /// Per job: the time up to which its run was counted.
    pub counted_until: HashMap<JobId, i64>,
    /// When the usage was last saved to the store.
    pub saved_at: Option<i64>,
    /// Finished jobs whose whole run is counted (a new one is a reason to save at once).
    pub closed: HashSet<JobId>,
}

impl Usage {
    /// The usage saved in the store (empty on a new store).
    pub fn load(store: &Store) -> Result<Usage, StoreError> {
        let (rows, counted, at) = store.load_usage()?;
        Ok(Usage {
            by_assoc: rows.into_iter().map(|(a, u, v)| ((a, u), v)).collect(),
            decayed_at: at,
            counted_until: counted.into_iter().collect(),
            saved_at: at,
            closed: HashSet::new(),
        })
    }

    /// Saves the usage (and per-job counted times) as of `now`.
    pub fn save(&mut self, store: &mut Store, now: i64) -> Result<(), StoreError> {
        let mut rows: Vec<(String, String, f64)> = self
            .by_assoc
            .iter()
            .map(|((a, u), v)| (a.clone(), u.clone(), *v))
            .collect();
        rows.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
        // Finished jobs are wholly counted by now: only runs still going are saved (a
        // restart knows the others from their end time, see `adopt_finished`).
        let mut counted: Vec<(JobId, i64)> = self
            .counted_until
            .iter()
            .filter(|(k, _)| !self.closed.contains(k))
            .map(|(k, v)| (*k, *v))
            .collect();
        counted.sort_unstable();
        store.save_usage(&rows, &counted, self.decayed_at.unwrap_or(now))?;
        self.saved_at = Some(now);
        Ok(())
    }

    /// After a restart: jobs of the store that had ended when the usage was last saved were
    /// wholly counted then.
    pub fn adopt_finished<'a>(&mut self, jobs: impl Iterator<Item = &'a JobInfo>) {
        let Some(at) = self.decayed_at else { return };
        for j in jobs {
            if let (Some(_), Some(e)) = (j.start_time, j.end_time) {
                if e <= at {
                    self.counted_until.insert(j.job_id, e);
                    self.closed.insert(j.job_id);
                }
            }
        }
    }

    /// The usage as the API reports it, sorted.
    pub fn rows(&self) -> Vec<gsched_proto::acct::UsageRow> {
        let mut v: Vec<gsched_proto::acct::UsageRow> = self
            .by_assoc
            .iter()
            .map(|((a, u), v)| gsched_proto::acct::UsageRow {
                account: a.clone(),
                user: u.clone(),
                usage: *v,
            })
            .collect();
        v.sort_by(|a, b| (&a.account, &a.user).cmp(&(&b.account, &b.user)));
        v
    }

    /// Decays all usage to `now` and counts what jobs used since they were last counted.
    /// Returns whether a job was seen finished for the first time (a reason to save at once).
    pub fn update<'a>(
        &mut self,
        jobs: impl Iterator<Item = &'a JobInfo>,
        now: i64,
        half_life: i64,
    ) -> bool {
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
        let mut finished = false;
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
                *self.by_assoc.entry(assoc_of(j)).or_insert(0.0) +=
                    f64::from(cpus) * (to - from) as f64;
                self.counted_until.insert(j.job_id, to);
            }
            if j.end_time.is_some_and(|e| e <= now) && self.closed.insert(j.job_id) {
                finished = true;
            }
        }
        // Forget jobs the controller forgot.
        self.counted_until.retain(|id, _| seen.contains(id));
        self.closed.retain(|id| seen.contains(id));
        finished
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

/// The fair-share factor of each association: `factors[account][user]`.
pub type Factors = HashMap<String, HashMap<String, f64>>;

/// The fair-share tree of the table plus the associations seen in usage and jobs (as
/// borrowed (account, user) pairs): the factor per association.
fn fairshare_by_assoc<'a>(
    db: &crate::acct::AcctDb,
    usage: &'a HashMap<Assoc, f64>,
    seen: HashSet<(&'a str, &'a str)>,
) -> Factors {
    let mut nodes = vec![FsNode {
        parent: None,
        shares: 1,
        usage: 0.0,
    }];
    let mut account_index: HashMap<&str, usize> = HashMap::new();
    account_index.insert(ROOT_ACCOUNT, 0);
    // Accounts of the table, parents first.
    let mut frontier = vec![ROOT_ACCOUNT];
    while let Some(parent) = frontier.pop() {
        let pi = account_index[parent];
        for a in db.accounts.values() {
            if a.parent.as_deref() == Some(parent) && !account_index.contains_key(a.name.as_str()) {
                account_index.insert(a.name.as_str(), nodes.len());
                nodes.push(FsNode {
                    parent: Some(pi),
                    shares: a.fairshare,
                    usage: 0.0,
                });
                frontier.push(a.name.as_str());
            }
        }
    }
    let shares: HashMap<(&str, &str), u32> = db
        .assocs
        .values()
        .map(|a| ((a.account.as_str(), a.user.as_str()), a.fairshare))
        .collect();
    // Every association of the table (idle ones hold shares too, as in Slurm), and those
    // only seen in usage and jobs.
    let mut all: Vec<(&str, &str)> = usage
        .keys()
        .map(|(a, u)| (a.as_str(), u.as_str()))
        .chain(seen)
        .chain(shares.keys().copied())
        .collect();
    all.sort_unstable();
    all.dedup();
    // Accounts only seen in jobs: one share under the root.
    for (a, _) in &all {
        if !a.is_empty() && !account_index.contains_key(a) {
            account_index.insert(a, nodes.len());
            nodes.push(FsNode {
                parent: Some(0),
                shares: 1,
                usage: 0.0,
            });
        }
    }
    let mut assoc_index = Vec::with_capacity(all.len());
    for key in &all {
        let parent = if key.0.is_empty() {
            0
        } else {
            account_index[key.0]
        };
        assoc_index.push((*key, nodes.len()));
        nodes.push(FsNode {
            parent: Some(parent),
            shares: shares.get(key).copied().unwrap_or(1),
            usage: usage
                .get(&(key.0.to_string(), key.1.to_string()))
                .copied()
                .unwrap_or(0.0),
        });
    }
    let f = classic_fairshare(&nodes);
    let mut out: Factors = HashMap::new();
    for ((a, u), i) in assoc_index {
        out.entry(a.to_string())
            .or_default()
            .insert(u.to_string(), f[i].factor);
    }
    out
}

/// The fair-share factor of `account`/`user` in `factors`.
fn factor_of(factors: &Factors, account: &str, user: &str) -> Option<f64> {
    factors.get(account).and_then(|m| m.get(user)).copied()
}

/// What every job's priority in one computation shares.
struct PriorityContext {
    weights: PriorityWeights,
    cluster_nodes: u32,
    cluster_cpus: u32,
    qos_max: u32,
}

impl PriorityContext {
    fn of(st: &State) -> PriorityContext {
        PriorityContext {
            weights: weights_from(&st.cfg),
            cluster_nodes: st.nodes.len() as u32,
            cluster_cpus: st.nodes.iter().map(|n| n.cpus).sum(),
            qos_max: st.acct.max_qos_priority(),
        }
    }

    /// `j`'s priority and factors; `eligible`: since when it may start (None while a
    /// dependency holds it, which keeps its age at 0).
    fn compute(
        &self,
        j: &JobInfo,
        eligible: Option<i64>,
        fairshare: f64,
        acct: &crate::acct::AcctDb,
        now: i64,
    ) -> (u32, PriorityFactors) {
        let inputs = PriorityInputs {
            eligible_time: eligible,
            nodes: j.num_nodes,
            cpus: j.num_cpus,
            cluster_nodes: self.cluster_nodes,
            cluster_cpus: self.cluster_cpus,
            fairshare,
            partition_factor: 1,
            partition_factor_max: 1,
            qos_priority: acct.qos.get(j.qos()).map_or(0, |q| q.priority),
            qos_priority_max: self.qos_max,
            nice: j.nice(),
        };
        let b = multifactor_priority(&inputs, &self.weights, now);
        let factors = PriorityFactors {
            age: b.age,
            fairshare: b.fairshare,
            job_size: b.job_size,
            partition: b.partition,
            qos: b.qos,
            nice: b.nice,
        };
        (b.total, factors)
    }
}

impl State {
    /// Under priority/multifactor: the priority of a job being submitted or released from
    /// hold (held ones keep 0 and no factors). Its fair-share factor is the last pass's; an
    /// association that pass did not see gets the tree of that pass with it added, as the
    /// next pass will have it.
    pub(super) fn priority_at_submit(&self, j: &mut JobInfo, now: i64) {
        if let Some((p, f)) = self.fresh_priority(j, now) {
            j.priority = p;
            j.priority_factors = Some(f);
        }
    }

    /// [`State::priority_at_submit`]'s figures, or None where it leaves the job alone.
    pub(super) fn fresh_priority(&self, j: &JobInfo, now: i64) -> Option<(u32, PriorityFactors)> {
        if self.cfg.priority.priority_type != PriorityType::Multifactor
            || j.held
            || j.spec.priority.is_some()
        {
            return None;
        }
        let (account, user) = (j.spec.account.as_deref().unwrap_or(""), &j.user_name);
        let fairshare = factor_of(&self.fairshare, account, user).unwrap_or_else(|| {
            // The last pass's associations are those it has factors for.
            let seen = self
                .fairshare
                .iter()
                .flat_map(|(a, users)| users.keys().map(move |u| (a.as_str(), u.as_str())))
                .chain([(account, user.as_str())])
                .collect();
            let tree = fairshare_by_assoc(&self.acct, &self.usage.by_assoc, seen);
            factor_of(&tree, account, user).unwrap_or(1.0)
        });
        // A job waiting for a dependency ages only once it is free (the next pass says).
        let eligible = if j.dependency.is_some() {
            None
        } else {
            j.eligible_time
        };
        Some(PriorityContext::of(self).compute(j, eligible, fairshare, &self.acct, now))
    }

    /// Under priority/multifactor: updates usage and every pending job's priority.
    pub(super) fn update_priorities(&mut self, now: i64, dep_blocked: &HashMap<JobId, Reason>) {
        if self.cfg.priority.priority_type != PriorityType::Multifactor {
            return;
        }
        let half_life = self.cfg.priority.decay_half_life_secs;
        let finished = self
            .usage
            .update(self.jobs.values().map(|j| &j.info), now, half_life);
        if finished
            || self
                .usage
                .saved_at
                .is_none_or(|t| now - t >= USAGE_SAVE_SECS)
        {
            if let Err(e) = self.usage.save(&mut self.store, now) {
                tracing::error!("cannot save fair-share usage: {e}");
            }
        }
        let ctx = PriorityContext::of(self);
        let seen: HashSet<(&str, &str)> = self
            .jobs
            .values()
            .map(|j| {
                (
                    j.info.spec.account.as_deref().unwrap_or(""),
                    j.info.user_name.as_str(),
                )
            })
            .collect();
        let fs = fairshare_by_assoc(&self.acct, &self.usage.by_assoc, seen);
        let acct = &self.acct;
        for job in self.jobs.values_mut() {
            if job.info.state != JobState::Pending || job.priority_fixed() {
                continue;
            }
            let j = &mut job.info;
            if j.held {
                j.priority_factors = None;
                continue;
            }
            let eligible = if dep_blocked.contains_key(&j.job_id) {
                None
            } else {
                j.eligible_time
            };
            let account = j.spec.account.as_deref().unwrap_or("");
            let fairshare = factor_of(&fs, account, &j.user_name).unwrap_or(1.0);
            let (p, f) = ctx.compute(j, eligible, fairshare, acct, now);
            j.priority = p;
            j.priority_factors = Some(f);
        }
        self.fairshare = fs;
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{heartbeat_all, register_all, spec, ROOT};
    use super::*;
    use crate::state::tests::ended;

    const ALICE: Identity = Identity {
        uid: 1001,
        gid: 1001,
    };
    const BOB: Identity = Identity {
        uid: 1002,
        gid: 1002,
    };

    fn state(dir: &std::path::Path, extra: &str) -> State {
        super::super::tests::state_conf(
            dir,
            &format!(
                "PriorityType=priority/multifactor\n{extra}\
                 NodeName=n[1-2] NodeAddr=127.0.0.1 CPUs=2 RealMemory=1000\n\
                 PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE\n"
            ),
        )
    }

    fn finish(st: &mut State, id: JobId, end: i64) {
        let j = &st.jobs[&id].info;
        let start = j.start_time.unwrap();
        let done = ended(id, j.nodes[0].clone(), start, end);
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
        // Alice has all the usage and a third of the shares (her, Bob, and root's association
        // in account root): 2^(-1/(1/3)) = 1/8; Bob none: 1.
        assert!((fa.fairshare - 1250.0).abs() < 1.0, "{fa:?}");
        assert!((fb.fairshare - 10_000.0).abs() < 1e-6, "{fb:?}");
        // Age counts from the eligible time (7-day PriorityMaxAge).
        assert!(fa.age > fb.age);
        // One node frees: Bob's job starts first.
        finish(&mut st, a1, 1200);
        heartbeat_all(&mut st, 1200);
        st.schedule(1200);
        assert_eq!(st.jobs[&b1].info.state, JobState::Running);
        assert_eq!(st.jobs[&a3].info.state, JobState::Pending);
        // 2 CPUs for 200 s each (a1 finished, a2 still running); nothing decays in 200 s
        // of a 7-day half-life to within 1 CPU-second.
        let key: Assoc = (String::new(), users::user_name(1001));
        let alice = st.usage.by_assoc[&key];
        assert!((alice - 800.0).abs() < 1.0, "{alice}");
        st.schedule(1250);
        let alice = st.usage.by_assoc[&key];
        assert!((alice - 900.0).abs() < 1.0, "{alice}");
    }

    #[test]
    fn a_job_has_its_priority_from_submission_as_the_next_pass_gives_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(
            dir.path(),
            "PriorityWeightFairshare=10000\nPriorityWeightAge=1000\nPriorityWeightJobSize=100\n",
        );
        register_all(&mut st, 1000);
        let a1 = st.submit(spec(2), ALICE, 1000).unwrap();
        let a2 = st.submit(spec(2), ALICE, 1000).unwrap();
        st.schedule(1000);
        st.schedule(1100);
        assert_eq!(st.jobs[&a1].info.state, JobState::Running);
        assert_eq!(st.jobs[&a2].info.state, JobState::Running);
        // No pass between these submissions and the reads: Alice's association is in the
        // last pass's factors, Bob's is not (his factor comes from the tree with him added).
        let a3 = st.submit(spec(2), ALICE, 1150).unwrap();
        let b1 = st.submit(spec(2), BOB, 1150).unwrap();
        let mut held = spec(2);
        held.hold = true;
        let h = st.submit(held, BOB, 1150).unwrap();
        let at_submit = |st: &State, id: JobId| {
            let j = &st.jobs[&id].info;
            (j.priority, j.priority_factors)
        };
        let (pa, fa) = at_submit(&st, a3);
        let (pb, fb) = at_submit(&st, b1);
        assert!(pb > pa, "bob {pb} alice {pa}");
        let (fa, fb) = (fa.expect("alice's factors"), fb.expect("bob's factors"));
        // Alice: the last pass's tree (her and root's association, half the shares each):
        // 2^(-1/(1/2)) = 1/4. Bob: the tree with him added, where he has no usage: 1.
        assert!((fa.fairshare - 2500.0).abs() < 1.0, "{fa:?}");
        assert!((fb.fairshare - 10_000.0).abs() < 1e-6, "{fb:?}");
        assert!(fa.job_size > 0.0, "{fa:?}");
        assert_eq!(at_submit(&st, h), (0, None));
        // The next pass at the same time: Bob's as at submission; Alice's share is now a
        // third (Bob's association is seen), 2^(-3) = 1/8.
        st.schedule(1150);
        assert_eq!(at_submit(&st, b1), (pb, Some(fb)));
        let fa = st.jobs[&a3].info.priority_factors.unwrap();
        assert!((fa.fairshare - 1250.0).abs() < 1.0, "{fa:?}");
        // Released from hold: its priority at once, Bob's as the pass gave b1's.
        st.hold(&[h], &[], &[], true, BOB, 1150).unwrap();
        assert_eq!(at_submit(&st, h), (pb, Some(fb)));
        // Every task of an array has the priority the array was submitted with.
        let mut arr = spec(2);
        arr.array = Some("0-2".into());
        let first = st.submit(arr, BOB, 1150).unwrap();
        let tasks: Vec<_> = (first..first + 3).map(|id| at_submit(&st, id)).collect();
        assert_eq!(tasks, vec![(pb, Some(fb)); 3]);
    }

    #[test]
    fn a_new_association_under_a_busy_account_gets_the_next_pass_factor_at_submission() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = state(dir.path(), "PriorityWeightFairshare=10000\n");
        register_all(&mut st, 1000);
        let mut physics = spec(2);
        physics.account = Some("physics".into());
        let a = st.submit(physics.clone(), ALICE, 1000).unwrap();
        st.schedule(1000);
        st.schedule(1100);
        assert_eq!(st.jobs[&a].info.state, JobState::Running);
        // Bob's association in physics was in no pass: his factor comes from the last
        // pass's tree with him added, where his account's usage lowers it below 1.
        let b = st.submit(physics, BOB, 1150).unwrap();
        let at_submit = st.jobs[&b].info.priority_factors.expect("factors");
        assert!(
            at_submit.fairshare > 0.0 && at_submit.fairshare < 9_999.0,
            "{at_submit:?}"
        );
        st.schedule(1150);
        assert_eq!(st.jobs[&b].info.priority_factors, Some(at_submit));
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
        let key: Assoc = ("physics".into(), users::user_name(1001));
        let u = st.usage.by_assoc[&key];
        assert!((u - 2.0 * 3600.0).abs() < 1.0, "{u}");
        // One half-life later: half.
        st.schedule(1000 + 2 * 3600);
        let u = st.usage.by_assoc[&key];
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
    fn qos_factor_and_usage_survive_restart() {
        use gsched_proto::acct::{AcctChange, AcctEntity, AcctOp};
        let dir = tempfile::tempdir().unwrap();
        let conf = "PriorityWeightQOS=1000\nPriorityWeightFairshare=1000\n";
        let key: Assoc = ("physics".into(), users::user_name(1001));
        {
            let mut st = state(dir.path(), conf);
            let add = |st: &mut State, name: &str, prio: &str| {
                let c = AcctChange {
                    op: AcctOp::Add,
                    entity: AcctEntity::Qos,
                    names: vec![name.into()],
                    conditions: Vec::new(),
                    settings: vec![("Priority".into(), "=".into(), prio.into())],
                };
                st.acct_change(&c, ROOT).unwrap();
            };
            add(&mut st, "high", "100");
            add(&mut st, "low", "25");
            let mut s = spec(1);
            s.qos = Some("low".into());
            let low = st.submit(s.clone(), ALICE, 1000).unwrap();
            s.qos = Some("high".into());
            let high = st.submit(s, ALICE, 1000).unwrap();
            let normal = st.submit(spec(1), ALICE, 1000).unwrap();
            st.schedule(1000);
            let q = |id: JobId| st.jobs[&id].info.priority_factors.unwrap().qos;
            assert_eq!((q(high), q(low), q(normal)), (1000.0, 250.0, 0.0));
            assert!(st.jobs[&high].info.priority > st.jobs[&low].info.priority);
            // Usage of a finished job is saved at once.
            register_all(&mut st, 1000);
            let mut s = spec(2);
            s.account = Some("physics".into());
            let a = st.submit(s, ALICE, 1000).unwrap();
            st.update_job(
                &JobUpdateRequest {
                    job_id: a,
                    priority: Some(u32::MAX - 1),
                    ..JobUpdateRequest::default()
                },
                ROOT,
                1000,
            )
            .unwrap();
            st.schedule(1000);
            finish(&mut st, a, 1100);
            st.schedule(1100);
            assert!((st.usage.by_assoc[&key] - 200.0).abs() < 1.0);
        }
        // A new controller on the same store: the usage is back, decayed to now, and the
        // finished job (still in the store) is not counted twice.
        let mut st = state(dir.path(), conf);
        assert!((st.usage.by_assoc[&key] - 200.0).abs() < 1.0);
        st.schedule(1200);
        let u = st.usage.by_assoc[&key];
        assert!((u - 200.0).abs() < 1.0, "{u}");
    }

    #[test]
    fn a_run_across_a_restart_is_counted_once() {
        let dir = tempfile::tempdir().unwrap();
        let conf = "PriorityWeightFairshare=1000\nSlurmdTimeout=1000\n";
        let key: Assoc = (String::new(), users::user_name(1001));
        let a;
        {
            let mut st = state(dir.path(), conf);
            register_all(&mut st, 1000);
            a = st.submit(spec(2), ALICE, 1000).unwrap();
            st.schedule(1000);
            assert_eq!(st.jobs[&a].info.state, JobState::Running);
            // USAGE_SAVE_SECS later the usage is saved with the run counted up to then.
            st.schedule(1000 + USAGE_SAVE_SECS);
            assert!((st.usage.by_assoc[&key] - 120.0).abs() < 1.0);
        }
        let mut st = state(dir.path(), conf);
        assert_eq!(st.jobs[&a].info.state, JobState::Running);
        st.schedule(1100);
        // 2 CPUs for 100 s in all, not 100 s plus the 60 s already saved.
        let u = st.usage.by_assoc[&key];
        assert!((u - 200.0).abs() < 1.0, "{u}");
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

    /// priority/basic: `--nice` moves a job down the FIFO order by its value (Slurm's
    /// `lowest_prio - 1 - nice`), and `Nice=` later moves it by the difference at once;
    /// a hold stays a hold, and its release takes the nice into account.
    #[test]
    fn basic_priority_follows_nice_at_submission_and_update() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = super::super::tests::state(dir.path());
        let p = |st: &State, id: JobId| st.jobs[&id].info.priority;
        let a = st.submit(spec(1), ALICE, 1000).unwrap();
        let mut s = spec(1);
        s.nice = Some(2);
        let b = st.submit(s, ALICE, 1000).unwrap();
        let c = st.submit(spec(1), ALICE, 1000).unwrap();
        let d = st.submit(spec(1), ALICE, 1000).unwrap();
        let e = st.submit(spec(1), ALICE, 1000).unwrap();
        assert_eq!(
            p(&st, a) - p(&st, b),
            3,
            "one for its place, two for its nice"
        );
        assert!(p(&st, c) > p(&st, b) && p(&st, e) < p(&st, b));
        assert_eq!(p(&st, d), p(&st, b), "level with the job two places later");
        let update = |st: &mut State, id: JobId, nice: i32, who: Identity| {
            let req = JobUpdateRequest {
                job_id: id,
                nice: Some(nice),
                ..JobUpdateRequest::default()
            };
            st.update_job(&req, who, 1001)
        };
        let before = p(&st, c);
        update(&mut st, c, 10, ALICE).unwrap();
        assert_eq!(p(&st, c), before - 10);
        assert_eq!(st.jobs[&c].info.nice(), 10);
        // Back down to 0 is the user's to do; below 0 is not.
        update(&mut st, c, 0, ALICE).unwrap();
        assert_eq!(p(&st, c), before);
        let err = update(&mut st, c, -5, ALICE).unwrap_err();
        assert_eq!(err.code, ErrorCode::AccessDenied);
        assert_eq!(
            (p(&st, c), st.jobs[&c].info.nice()),
            (before, 0),
            "unchanged"
        );
        update(&mut st, c, -5, ROOT).unwrap();
        assert_eq!(p(&st, c), before + 5);
        // The largest nice takes it to 1 (never 0, a hold); back to 0, its place again.
        update(&mut st, c, gsched_proto::job::NICE_LIMIT, ALICE).unwrap();
        assert_eq!(p(&st, c), 1);
        update(&mut st, c, 0, ALICE).unwrap();
        assert_eq!(p(&st, c), before);
        let err = update(&mut st, c, i32::MIN, ROOT).unwrap_err();
        assert_eq!(err.code, ErrorCode::BadRequest);
        // A held job keeps priority 0; released, it gets its place less its nice.
        let mut s = spec(1);
        s.hold = true;
        let h = st.submit(s, ALICE, 1000).unwrap();
        update(&mut st, h, 7, ALICE).unwrap();
        assert_eq!(p(&st, h), 0);
        st.hold(&[h], &[], &[], true, ALICE, 1002).unwrap();
        assert_eq!(p(&st, h), p(&st, e) - (h - e) - 7);
        // Persisted: a new controller reads the same.
        let (pc, ph) = (p(&st, c), p(&st, h));
        drop(st);
        let st = super::super::tests::state(dir.path());
        assert_eq!((p(&st, c), p(&st, h)), (pc, ph));
    }

    /// priority/multifactor: `Nice=`, and a pending job's new QOS, give it its priority at
    /// once (not at the next pass), and that pass agrees.
    #[test]
    fn multifactor_priority_follows_an_update_at_once() {
        use gsched_proto::acct::{AcctChange, AcctEntity, AcctOp};
        let dir = tempfile::tempdir().unwrap();
        let conf = "PriorityWeightQOS=1000\nPriorityWeightPartition=100\nPriorityWeightAge=0\n";
        let mut st = state(dir.path(), conf);
        let c = AcctChange {
            op: AcctOp::Add,
            entity: AcctEntity::Qos,
            names: vec!["high".into()],
            conditions: Vec::new(),
            settings: vec![("Priority".into(), "=".into(), "100".into())],
        };
        st.acct_change(&c, ROOT).unwrap();
        let a = st.submit(spec(1), ALICE, 1000).unwrap();
        st.schedule(1000);
        let p = |st: &State| st.jobs[&a].info.priority;
        let before = p(&st);
        let req = JobUpdateRequest {
            job_id: a,
            nice: Some(40),
            ..JobUpdateRequest::default()
        };
        st.update_job(&req, ALICE, 1001).unwrap();
        assert_eq!(p(&st), before - 40);
        assert_eq!(st.jobs[&a].info.priority_factors.unwrap().nice, 40);
        let req = JobUpdateRequest {
            job_id: a,
            qos: Some("high".into()),
            ..JobUpdateRequest::default()
        };
        st.update_job(&req, ROOT, 1002).unwrap();
        assert_eq!(p(&st), before - 40 + 1000);
        assert_eq!(st.jobs[&a].info.priority_factors.unwrap().qos, 1000.0);
        let now = p(&st);
        st.schedule(1003);
        assert_eq!(p(&st), now, "the next pass gives the same");
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
