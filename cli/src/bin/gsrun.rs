//! `gsrun`: Slurm's `srun` (job steps inside an allocation).
fn main() {
    let args = gsched_cli::common::args_to_strings(std::env::args_os());
    std::process::exit(gsched_cli::srun::main(args));
}
