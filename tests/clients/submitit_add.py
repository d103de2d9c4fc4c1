"""submitit (unmodified) against gsched through Slurm's command names: a function is
pickled, submitted with `sbatch`, run by `srun --unbuffered --output %j_%t_log.out ...`
inside the job, and its result read back; the state is polled with `sacct --parsable2`.
Usage: submitit_add.py <folder>. Prints result=<value>."""
import sys

import submitit


def add(a, b):
    return a + b


ex = submitit.SlurmExecutor(folder=sys.argv[1], max_num_timeout=0)
ex.update_parameters(time=5, nodes=1, ntasks_per_node=1, cpus_per_task=1)
job = ex.submit(add, 2, 3)
print(f"job={job.job_id}", flush=True)
print(f"result={job.result()}", flush=True)
