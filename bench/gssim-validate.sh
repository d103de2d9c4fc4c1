#!/usr/bin/env bash
# Reproduces the RLScheduler evaluation setup (literature.md §1.1) with gssim: windows of
# 1,024 consecutive jobs taken from the first 10,000 jobs of a trace, the cluster empty at the
# first job's submission, jobs running their whole trace runtime (--no-kill, as RLScheduler's
# simulator does), and prints the mean over the windows of each window's average bounded
# slowdown and utilization, for FCFS without backfill and with EASY.
#
#   [STEP=N] bench/gssim-validate.sh TRACE.swf.gz [GSSIM]
#
# RLScheduler draws its 10 window starts at random in [1024, 8975) from a seeded generator we
# cannot reproduce here, so this takes the windows starting at 1024, 1024 + STEP, ... up to
# 8974: with the default STEP=1024 the 8 windows 1024, 2048, ..., 8192 (every job of
# [1024, 9216) once); a small STEP (128: 63 windows) estimates the expected value of their
# random-window mean. Published (mean of their 10 windows): SDSC-SP2 FCFS 1727.54
# (EASY-like backfill 1595.12), HPC2N FCFS 297.18 (127.38).
set -euo pipefail
TRACE=${1:?usage: bench/gssim-validate.sh TRACE.swf.gz [GSSIM]}
GSSIM=${2:-target/release/gssim}
STEP=${STEP:-1024}
for policy in fcfs easy; do
  for start in $(seq 1024 "$STEP" 8974); do
    "$GSSIM" --trace "$TRACE" --skip "$start" --jobs 1024 --policy "$policy" --no-kill --csv | tail -n +2
  done | awk -F, -v p="$policy" -v t="$(basename "$TRACE")" '
    { bsld += $9; util += $10; n++; all = all sprintf(" %.1f", $9) }
    END { printf "%s %-5s windows %d  mean avg_bsld %.2f  mean utilization %.3f  (per window:%s)\n", t, p, n, bsld / n, util / n, all }'
done
