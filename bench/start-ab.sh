#!/usr/bin/env bash
# Jobs that run, one build against another on the same machine: for each folder given, the
# local cluster is started with that folder's binaries (scripts/local-cluster.sh with
# GSCHED_LOCAL_BIN) and two things are measured: the submit → start latency of L jobs on the
# idle cluster (a job script writes the time it starts; 0.5-1 s between jobs), and N ×
# `gsbatch --wrap true` in a loop until the queue is empty (end to end). The folders take
# turns, ROUNDS times, so that the machine's drift falls on all of them alike.
#
#   bench/start-ab.sh OLD_DIR NEW_DIR [MORE_DIRS...]
#
# Each folder holds a release build's binaries (copy target/release/ there). Prints one line
# per folder and round:  DIR round R latency_ms MEDIAN P90 e2e_s SECONDS
# Knobs: L (20), N (1000), ROUNDS (3), GSCHED_LOCAL_CPUS (32). bench/held-ab.sh does the
# same for held submissions; bench/compare.sh measures one build against Slurm.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
case "${1:-}" in
  -h | --help | "") sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
esac
L="${L:-20}" N="${N:-1000}" ROUNDS="${ROUNDS:-3}"
export GSCHED_LOCAL_CPUS="${GSCHED_LOCAL_CPUS:-32}"
export GSCHED_CONF="$ROOT/.local-cluster/gsched.conf"
DIRS=()
for d in "$@"; do
  d="$(cd "$d" && pwd)"
  [[ -x $d/gsctld && -x $d/gsnoded && -x $d/gsbatch && -x $d/gsqueue ]] ||
    { echo "bench/start-ab.sh: $d lacks gsctld, gsnoded, gsbatch or gsqueue (copy a release build there)" >&2; exit 2; }
  DIRS+=("$d")
done
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gsched-start-ab.XXXXXX")
chmod 755 "$WORK"
printf '#!/bin/bash\ndate +%%s.%%N >"$OUTF"\n' >"$WORK/job.sh"
chmod 755 "$WORK/job.sh"
cluster() { GSCHED_LOCAL_BIN="$1" "$ROOT/scripts/local-cluster.sh" "$2" >/dev/null 2>&1; }
trap 'cluster "${DIRS[0]}" down || true; rm -rf "$WORK"' EXIT
# "MEDIAN P90" of the numbers on stdin (nearest rank)
stats() { sort -g | awk '{ a[NR] = $1 } END { m = int((NR + 1) / 2); p = int(NR * 0.9 + 0.999); print a[m], a[p] }'; }
for ((r = 1; r <= ROUNDS; r++)); do
  for d in "${DIRS[@]}"; do
    cluster "$d" down || true
    rm -rf "$ROOT/.local-cluster/state"
    cluster "$d" up
    sleep 1
    lat=$(for ((i = 1; i <= L; i++)); do
      f="$WORK/start.$i"; rm -f "$f"
      t0=$EPOCHREALTIME
      id=$(OUTF=$f "$d/gsbatch" --parsable -o /dev/null --export=ALL "$WORK/job.sh")
      for ((k = 0; k < 4000; k++)); do [[ -s $f ]] && break; sleep 0.005; done
      [[ -s $f ]] || { echo "bench/start-ab.sh: job $id of $d never started" >&2; exit 1; }
      awk -v a="$t0" -v b="$(<"$f")" 'BEGIN { printf "%.1f\n", (b - a) * 1000 }'
      while [[ -n "$("$d/gsqueue" -h -j "$id" -o %i 2>/dev/null)" ]]; do sleep 0.02; done
      sleep "0.$((RANDOM % 500 + 500))"
    done | stats)
    t0=$EPOCHREALTIME
    for ((i = 0; i < N; i++)); do "$d/gsbatch" --parsable -o /dev/null --wrap true >/dev/null; done
    while [[ -n "$("$d/gsqueue" -h -o %i | head -1)" ]]; do sleep 0.05; done
    echo "$d round $r latency_ms $lat e2e_s $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')"
  done
done
