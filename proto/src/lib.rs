//! Types shared by every part of gsched: jobs, nodes, the API's messages and paths, the
//! authentication hook, the API client, and the config (slurm.conf syntax) with its helpers
//! (hostlists, Slurm's time and memory formats, output file patterns).

pub mod acct;
pub mod api;
pub mod array;
pub mod auth;
pub mod begin;
pub mod cgroup_conf;
pub mod client;
pub mod config;
pub mod constraint;
#[cfg(feature = "server")]
pub mod daemon_log;
pub mod depend;
pub mod environment;
pub mod gpu;
pub mod gpu_sample;
pub mod gpu_tres;
pub mod gres_conf;
pub mod het;
pub mod hostlist;
pub mod job;
pub mod ladder_conf;
pub mod licenses;
pub mod lifecycle;
pub mod mail;
pub mod node;
pub mod notify_config;
pub mod openapi;
pub mod patterns;
pub mod price_conf;
pub mod projection;
pub mod resv;
pub mod rlimits;
#[cfg(feature = "server")]
pub mod server;
#[cfg(feature = "server")]
pub mod site_program;
pub mod slurm_import;
#[cfg(feature = "stand-in")]
pub mod stand_in;
pub mod step;
pub mod topology_conf;
pub mod units;
pub mod users;
