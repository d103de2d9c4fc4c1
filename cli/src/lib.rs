//! gsched's user commands: `gsbatch`, `gsqueue`, `gscancel`, `gsinfo`, `gscontrol`, `gsacct`,
//! `gsstat`, ..., the drop-in equivalents of Slurm's `sbatch`, `squeue`, `scancel`, `sinfo`,
//! `scontrol`, `sacct`, `sstat`, ....
//! Each binary in `src/bin/` is a thin `main` calling the module of the same name; the
//! modules keep Slurm's options, output formats, messages and exit codes.

pub mod arrays;
pub mod common;
pub mod completions;
pub mod format;
pub mod getopt;
pub mod gpu_opts;
pub mod prices;
pub mod sacct;
pub mod sacctmgr;
pub mod sbatch;
pub mod sbatch_wait;
pub mod scancel;
pub mod scontrol;
pub mod seff;
pub mod signals;
pub mod sinfo;
pub mod slurm_json;
pub mod sprio;
pub mod squeue;
pub mod squeue_steps;
pub mod srun;
pub mod sshare;
pub mod sstat;
pub mod sys;
