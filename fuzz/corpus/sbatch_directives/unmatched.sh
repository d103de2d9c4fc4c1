#!/bin/sh
#SBATCH 'unterminated
