#!/bin/sh
# Stage 1: preprocessing, on the CPU partition.
#SBATCH -J preprocess
#SBATCH -p cpu
#SBATCH -c 2
#SBATCH -t 10
#SBATCH -o preprocess-%j.out
set -e
echo "preprocess: job ${SLURM_JOB_ID} on ${SLURMD_NODENAME} (partition ${SLURM_JOB_PARTITION})"
mkdir -p data
# "Clean" the raw data: here, the even numbers 2..200.
seq 1 100 | awk '{ print $1 * 2 }' > data/clean.txt
echo "preprocess: $(wc -l < data/clean.txt) samples"
