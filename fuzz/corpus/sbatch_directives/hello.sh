#!/bin/bash
#SBATCH --job-name=hello
#SBATCH --time=5
#
# A first gsched job: says hello, shows where and how it runs, rests a moment.
# Submit it with:  gsbatch examples/hello.sh
# Its output lands in slurm-<jobid>.out in the directory you submitted from.

echo "Hello from job ${SLURM_JOB_ID} (${SLURM_JOB_NAME}) on node ${SLURMD_NODENAME}, host $(hostname)"
echo "Running as $(id -un) in $(pwd), submitted from ${SLURM_SUBMIT_DIR}"
echo "Partition ${SLURM_JOB_PARTITION} of cluster ${SLURM_CLUSTER_NAME}: ${SLURM_CPUS_ON_NODE} CPU(s) on ${SLURM_JOB_NODELIST}"
echo
echo "The SLURM_* variables of this job:"
env | grep -E '^SLURMD?_' | sort | sed 's/^/  /'
echo
sleep 2
echo "Done after a 2 second nap. Bye!"
