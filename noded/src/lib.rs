//! The node side of gsched: `gsnoded`, the node daemon (async, tokio + axum), and `gsstepd`,
//! the small synchronous helper that gsnoded starts for every job.
//!
//! The split follows Slurm's slurmd/slurmstepd and is an invariant of the architecture:
//! `fork`, `setsid` and `setuid` happen only in gsstepd, never in the multi-threaded daemon,
//! and jobs belong to their gsstepd, so they keep running when gsnoded restarts. The two
//! processes talk only through the job folder in the spool directory ([`jobdir`]).
//!
//! * [`daemon`] — gsnoded's API server, job table, watching, reporting and registration.
//! * [`stepd`] — gsstepd.
//! * [`env`](mod@env) — the job environment and stdio paths gsnoded computes for gsstepd.
//! * [`jobdir`] — the files of a job folder.
//! * [`procfs`] — process parents and start times from `/proc`.
//! * [`prolog`] — `Prolog=`/`Epilog=`: the site's programs run as root around a job.
//! * [`cgroup`] — the core allocator and the limits of a job's cgroup (`cgroup.conf`).
//! * [`step`] — job steps (`gsrun`): the step folder and `gsstepd --step`, which runs one
//!   node's tasks of a step.
//! * [`gpu`] — a job's GPU environment and device rules, GPU samples per job (`gres.conf`).
//! * [`mps`] — one CUDA MPS control daemon per shared GPU.
//! * [`virt`] — virtual nodes (`gsnoded --virtual`): many simulated nodes in one process,
//!   for measuring the controller at scale.
//! * [`sys`] — the only module with `unsafe` code (raw system calls).

pub mod cgroup;
pub mod daemon;
pub mod env;
pub mod gpu;
pub mod jobdir;
pub mod mps;
pub mod procfs;
pub mod prolog;
pub mod step;
pub mod stepd;
pub mod sys;
pub mod task_script;
pub mod virt;
