//! `gsstat`: Slurm's `sstat`.
fn main() {
    let args = gsched_cli::common::args_to_strings(std::env::args_os());
    std::process::exit(gsched_cli::sstat::main(args));
}
