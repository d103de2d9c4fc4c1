//! Shared types of gsched.

pub mod config;
pub mod hostlist;
pub mod patterns;
pub mod units;
