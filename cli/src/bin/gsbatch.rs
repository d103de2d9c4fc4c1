//! `gsbatch`: Slurm's `sbatch`.

/// The static (musl) build's allocator. musl's malloc gives memory back to the kernel at
/// almost every free: 47 of a submission's 113 system calls were mmap and munmap, a fifth
/// of gsbatch's time after exec. dlmalloc keeps freed memory for the next allocation.
#[cfg(target_env = "musl")]
#[global_allocator]
static ALLOCATOR: dlmalloc::GlobalDlmalloc = dlmalloc::GlobalDlmalloc;

fn main() {
    let args = gsched_cli::common::args_to_strings(std::env::args_os());
    std::process::exit(gsched_cli::sbatch::main(args));
}
