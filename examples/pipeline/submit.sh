#!/bin/sh
# The pipeline as a dependency chain: each stage is its own job in its own partition and
# starts only after the one before it completed successfully (afterok). If a stage fails,
# the ones after it never start (Reason DependencyNeverSatisfied).
#
#   sh submit.sh            # with gsched's commands (gsbatch)
#   SBATCH=sbatch sh submit.sh
#
# Prints the three job ids.
set -e
cd "$(dirname "$0")"
SBATCH=${SBATCH:-gsbatch}
pre=$($SBATCH --parsable stage-preprocess.sh)
train=$($SBATCH --parsable -d "afterok:${pre%%;*}" stage-train.sh)
eval=$($SBATCH --parsable -d "afterok:${train%%;*}" stage-evaluate.sh)
echo "${pre%%;*} ${train%%;*} ${eval%%;*}"
