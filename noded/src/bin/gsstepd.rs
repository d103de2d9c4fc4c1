//! `gsstepd <job-folder>`: runs one batch job for gsnoded (see `gsched_noded::stepd`);
//! `gsstepd --step <step-folder>`: runs one node's tasks of a job step (`gsched_noded::step`).
//! `gsstepd --task-prolog <prolog> -- <task> [args]`: as the job's user, runs the node's
//! TaskProlog and then the task in its place (`gsched_noded::task_script`).
//! Exits 0 once `status.json` is written, 1 when it could not be (gsnoded then reports the
//! job as failed), 2 on bad usage.

use std::path::PathBuf;

/// The static (musl) build's allocator. musl's malloc gives memory back to the kernel at
/// almost every free: 47 of a submission's 113 system calls were mmap and munmap, a fifth
/// of gsbatch's time after exec. dlmalloc keeps freed memory for the next allocation.
#[cfg(target_env = "musl")]
#[global_allocator]
static ALLOCATOR: dlmalloc::GlobalDlmalloc = dlmalloc::GlobalDlmalloc;

fn main() {
    let mut args = std::env::args_os().skip(1);
    let first = args.next();
    if first.as_deref()
        == Some(std::ffi::OsStr::new(
            gsched_noded::task_script::TASK_PROLOG_FLAG,
        ))
    {
        gsched_noded::task_script::task_main(args);
    }
    if first.as_deref() == Some(std::ffi::OsStr::new("--step")) {
        let (Some(folder), None) = (args.next(), args.next()) else {
            eprintln!("usage: gsstepd --step <step-folder>   (started by gsnoded, not by hand)");
            std::process::exit(2);
        };
        if let Err(e) = gsched_noded::step::run(std::path::Path::new(&folder)) {
            eprintln!("gsstepd[{}]: error: {e:#}", std::process::id());
            std::process::exit(1);
        }
        return;
    }
    let (Some(folder), None) = (first, args.next()) else {
        eprintln!("usage: gsstepd <job-folder> | --step <step-folder>   (started by gsnoded, not by hand)");
        std::process::exit(2);
    };
    if folder == "-V" || folder == "--version" {
        println!(
            "gsched {} (slurm {} compatible)",
            env!("CARGO_PKG_VERSION"),
            gsched_proto::api::SLURM_COMPAT_VERSION
        );
        return;
    }
    let folder = PathBuf::from(folder);
    if let Err(e) = gsched_noded::stepd::run(&folder) {
        eprintln!("gsstepd[{}]: error: {e:#}", std::process::id());
        std::process::exit(1);
    }
}
