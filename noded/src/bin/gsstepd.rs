//! `gsstepd <job-folder>`: runs one batch job for gsnoded (see `gsched_noded::stepd`).
//! Exits 0 once `status.json` is written, 1 when it could not be (gsnoded then reports the
//! job as failed), 2 on bad usage.

use std::path::PathBuf;

fn main() {
    let mut args = std::env::args_os().skip(1);
    let (Some(folder), None) = (args.next(), args.next()) else {
        eprintln!("usage: gsstepd <job-folder>   (started by gsnoded, not by hand)");
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
