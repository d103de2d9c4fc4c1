#!/bin/bash
#SBATCH -J "a b" -t 1-00:00:00 --mem=4G
#SBATCH --array=1-10%2 -d afterok:1:2
#SLURM --wrap x
echo hi
