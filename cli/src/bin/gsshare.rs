//! `gsshare`: Slurm's `sshare`.
fn main() {
    let args = gsched_cli::common::args_to_strings(std::env::args_os());
    std::process::exit(gsched_cli::sshare::main(args));
}
