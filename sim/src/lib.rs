//! gssim: replays workload traces through gsched's own scheduler core with a virtual clock,
//! to answer "what would this policy have done to that workload?" in seconds, with the very
//! code that runs the cluster (`gsched_sched::decide`).
//!
//! * [`trace`]: the inputs (SWF, the Alibaba GPU v2023 pod list, gsched's accounting history);
//! * [`cluster`]: the simulated nodes and partitions, from a gsched.conf, flags or the trace;
//! * [`engine`]: the event-driven replay;
//! * [`metrics`]: wait, bounded slowdown, utilization, makespan, prediction accuracy;
//! * [`report`] and [`plot`]: table, CSV, JSON and the SVG plot;
//! * [`prices`]: time-of-use prices over the trace, price-aware deferral, energy cost.
//!
//! Runtime prediction lives in the scheduler core's crate ([`gsched_sched::predict`]) so that
//! the controller can use the same predictor.

#![forbid(unsafe_code)]

pub mod cluster;
pub mod engine;
pub mod metrics;
pub mod plot;
pub mod prices;
pub mod report;
pub mod trace;
