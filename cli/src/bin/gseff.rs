//! `gseff`: Slurm's `seff`.
fn main() {
    let args = gsched_cli::common::args_to_strings(std::env::args_os());
    std::process::exit(gsched_cli::seff::main(args));
}
