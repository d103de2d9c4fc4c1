#!/bin/sh
# The pipeline as one heterogeneous job: three components, one per partition, allocated
# and started together (none waits on its own holding resources the others lack). The
# script runs on the first node of the first component and knows every component's nodes
# from the SLURM_*_HET_GROUP_K variables.
#
# gsched has no job steps yet (no srun --het-group=K), so the stages run here, on the batch
# host; each prints where its component was allocated. Use submit.sh to run each stage on
# its own partition's nodes.
#
#   gsbatch pipeline-het.sh
#
#SBATCH -J pipeline
#SBATCH -o pipeline-%j.out
#SBATCH -t 30
#SBATCH -p cpu -c 2
#SBATCH hetjob
#SBATCH -p gpu -C gpu
#SBATCH hetjob
#SBATCH -p small
set -e
echo "het job ${SLURM_JOB_ID}: ${SLURM_HET_SIZE} components"
for k in 0 1 2; do
    eval "nodes=\${SLURM_JOB_NODELIST_HET_GROUP_$k} part=\${SLURM_JOB_PARTITION_HET_GROUP_$k} id=\${SLURM_JOB_ID_HET_GROUP_$k}"
    echo "component $k: job $id in $part on $nodes"
done
sh stage-preprocess.sh
sh stage-train.sh
sh stage-evaluate.sh
