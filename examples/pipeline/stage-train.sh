#!/bin/sh
# Stage 2: training, on the GPU partition (nodes with the "gpu" feature).
#SBATCH -J train
#SBATCH -p gpu
#SBATCH -C gpu
#SBATCH -t 30
#SBATCH -o train-%j.out
set -e
echo "train: job ${SLURM_JOB_ID} on ${SLURMD_NODENAME} (partition ${SLURM_JOB_PARTITION})"
test -s data/clean.txt || { echo "train: data/clean.txt is missing: run preprocessing first" >&2; exit 1; }
# "Fit" the model: the mean of the samples.
awk '{ s += $1 } END { print s / NR }' data/clean.txt > model.txt
echo "train: model $(cat model.txt)"
