#!/usr/bin/env bash
# What N trivial jobs cost the whole machine in events that do not depend on its speed:
# system calls, page faults and context switches per job, counted system-wide
# (perf stat -a) over `gsbatch --wrap true` N times in a loop until the queue is empty, on
# the local cluster (release build, static gsbatch/gsstepd when built). On a VM whose speed
# drifts, these counts compare two builds where times cannot (bench/RESULTS.md, "Per-job
# work, continued").
#
#   bench/per-job-counts.sh            N=500
#   N=200 bench/per-job-counts.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
N="${N:-500}"
command -v perf >/dev/null || { echo "per-job-counts.sh: needs perf (apt-get install linux-perf)" >&2; exit 1; }
export GSCHED_LOCAL_CPUS="${GSCHED_LOCAL_CPUS:-32}" GSCHED_NO_BUILD=1
export GSCHED_CONF="$ROOT/.local-cluster/gsched.conf"
scripts/local-cluster.sh down >/dev/null 2>&1 || true
rm -rf .local-cluster/state
scripts/local-cluster.sh up >/dev/null 2>&1
trap 'scripts/local-cluster.sh down >/dev/null 2>&1 || true' EXIT
B="$ROOT/target/release"
SUBMIT="$B/gsbatch"
S="$ROOT/target/x86_64-unknown-linux-musl/release/gsbatch"
if [[ -x $S ]]; then SUBMIT=$S; fi
sleep 2
# Warm-up: the first jobs pay for caches being filled.
for ((i = 0; i < 50; i++)); do "$SUBMIT" --wrap true -o /dev/null >/dev/null; done
while [[ -n $("$B/gsqueue" -h -o %i | head -1) ]]; do sleep 0.05; done
OUTF=$(mktemp)
trap 'rm -f "$OUTF"; scripts/local-cluster.sh down >/dev/null 2>&1 || true' EXIT
perf stat -a -x, -e raw_syscalls:sys_enter,page-faults,context-switches -o "$OUTF" -- \
  bash -c "for ((i = 0; i < $N; i++)); do '$SUBMIT' --wrap true -o /dev/null >/dev/null; done
           while [[ -n \$('$B/gsqueue' -h -o %i | head -1) ]]; do sleep 0.01; done"
awk -F, -v n="$N" '/sys_enter/ { s = $1 } /page-faults/ { f = $1 } /context-switches/ { c = $1 }
  END { printf "N=%d: per job %.0f system calls, %.0f page faults, %.1f context switches\n", n, s / n, f / n, c / n }' "$OUTF"
