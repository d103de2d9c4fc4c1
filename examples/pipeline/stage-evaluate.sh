#!/bin/sh
# Stage 3: evaluation, on the small partition.
#SBATCH -J evaluate
#SBATCH -p small
#SBATCH -t 10
#SBATCH -o evaluate-%j.out
set -e
echo "evaluate: job ${SLURM_JOB_ID} on ${SLURMD_NODENAME} (partition ${SLURM_JOB_PARTITION})"
test -s model.txt || { echo "evaluate: model.txt is missing: run training first" >&2; exit 1; }
model=$(cat model.txt)
# The mean of 2, 4, ..., 200 is 101.
if [ "$model" = 101 ]; then verdict=pass; else verdict=fail; fi
echo "model=$model verdict=$verdict" > report.txt
echo "evaluate: $(cat report.txt)"
[ "$verdict" = pass ]
