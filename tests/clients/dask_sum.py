"""dask-jobqueue's SLURMCluster, unmodified, against gsched through Slurm's command names.

Run by tests/tests/clients.rs with `sbatch`, `squeue`, `scancel` on PATH pointing at gsched's
commands and GSCHED_CONF naming the test cluster. Starts two workers as batch jobs, computes
a sum on them, closes the cluster (which runs `scancel`) and prints the result and the job ids.
"""
import sys

from dask.distributed import Client
from dask_jobqueue import SLURMCluster


def main() -> int:
    log_dir = sys.argv[1]
    cluster = SLURMCluster(
        cores=1,
        processes=1,
        memory="200MB",
        walltime="00:05:00",
        log_directory=log_dir,
        scheduler_options={"host": "127.0.0.1"},
        worker_extra_args=["--host", "127.0.0.1"],
    )
    print(cluster.job_script(), file=sys.stderr)
    cluster.scale(jobs=2)
    client = Client(cluster)
    client.wait_for_workers(2, timeout=120)
    futures = client.map(lambda x: x * x, range(100))
    total = client.submit(sum, futures).result(timeout=120)
    ids = sorted(str(j.job_id) for j in cluster.workers.values())
    print(f"sum={total}")
    print("jobs=" + ",".join(ids))
    client.close()
    cluster.close()
    return 0 if total == sum(x * x for x in range(100)) else 1


if __name__ == "__main__":
    sys.exit(main())
