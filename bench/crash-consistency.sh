#!/usr/bin/env bash
# Crash consistency of the controller, gsched and real Slurm 22.05 side by side.
#
# 1,000 submissions from 8 parallel clients; once 300 are acknowledged the controller is
# killed with SIGKILL and started again at once; the clients go on (a failed submission is
# not retried). Each job appends its id to one file. Afterwards: how many acknowledged jobs
# were lost, how many ids were acknowledged twice, how many jobs ran more than once.
#
#   bench/crash-consistency.sh            # both (Slurm needs root; see below)
#   bench/crash-consistency.sh --gsched   # gsched only: the integration test tests/tests/crash.rs
#   bench/crash-consistency.sh --slurm    # Slurm only
#
# Slurm runs through ../shared/bench/slurm (SLURM_BENCH=dir to point elsewhere): setup.sh
# starts a single-host cluster with an empty job table, stop.sh stops it afterwards. Its
# slurmctld saves state on its own schedule, so what a crash loses is what this measures.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
SLURM_BENCH="${SLURM_BENCH:-$ROOT/../shared/bench/slurm}"
[[ -d $SLURM_BENCH ]] || SLURM_BENCH=/work/shared/bench/slurm
TOTAL=1000
CLIENTS=8
KILL_AFTER=300
mode="${1:-all}"

run_gsched() {
  echo "== gsched: tests/tests/crash.rs (debug build)"
  (cd "$ROOT" && cargo build -q --workspace --bins &&
    cargo test -q -p gsched-tests --test crash -- --nocapture 2>&1) | grep -E "CRASH-RESULT|test result|panicked"
}

run_slurm() {
  echo "== Slurm: $SLURM_BENCH"
  if [[ $(id -u) != 0 ]]; then echo "Slurm part needs root (setup.sh installs and starts daemons)"; return 1; fi
  local work=/tmp/slurm-crash-work run=/run/slurm-bench log=/var/log/slurm-bench
  rm -rf "$work"; mkdir -p "$work"; chmod 777 "$work"
  BENCH_CLEAN=1 BENCH_GRES=none BENCH_MIN_JOB_AGE=3600 "$SLURM_BENCH/setup.sh" >"$work/setup.log" 2>&1 ||
    { echo "Slurm setup failed:"; tail -20 "$work/setup.log"; return 1; }
  : >"$work/acks"
  local t0; t0=$(date +%s.%N)
  # The submitters: one sbatch per submission, 8 at a time; an id on stdout is an ack.
  seq "$TOTAL" | xargs -P "$CLIENTS" -I{} sh -c \
    "sbatch --parsable -o /dev/null -D $work --wrap 'echo \$SLURM_JOB_ID >> $work/runs.log' 2>>$work/sbatch.err >>$work/acks || echo fail >>$work/failed" &
  local subs=$!
  while [[ $(wc -l <"$work/acks") -lt $KILL_AFTER ]]; do sleep 0.01; done
  local pid; pid=$(cat "$run/slurmctld.pid")
  kill -KILL "$pid"; echo "slurmctld $pid killed after $(wc -l <"$work/acks") acks"
  sleep 0.3
  /usr/sbin/slurmctld -D >>"$log/slurmctld.out" 2>&1 &
  echo $! >"$run/slurmctld.pid"
  wait "$subs"
  local t1; t1=$(date +%s.%N)
  # Wait until the queue is empty (every job the controller holds has ended).
  for _ in $(seq 1200); do
    [[ $(squeue -h -o %i 2>/dev/null | wc -l) == 0 ]] && scontrol ping | grep -q UP && break
    sleep 0.5
  done
  sleep 2
  local acked failed lost dup twice stored
  acked=$(grep -c '^[0-9]' "$work/acks")
  failed=$( [[ -f $work/failed ]] && wc -l <"$work/failed" || echo 0)
  dup=$(sort "$work/acks" | uniq -d | wc -l)
  touch "$work/runs.log"
  twice=$(sort "$work/runs.log" | uniq -d | wc -l)
  # Each acknowledged submission should be one job that ran once. A controller that lost
  # state after the crash hands the lost jobs' ids out again, so an id acknowledged twice
  # stands for a lost job too: lost = acknowledgements - distinct acknowledged ids that ran
  # (or that the controller still knows).
  local kept=0
  while read -r id; do
    if grep -qx "$id" "$work/runs.log" || scontrol -o show job "$id" >/dev/null 2>&1; then
      kept=$((kept + 1))
    fi
  done < <(grep '^[0-9]' "$work/acks" | sort -u)
  lost=$((acked - kept))
  stored=$(sort -u "$work/runs.log" | wc -l)
  echo "CRASH-RESULT slurm attempts=$TOTAL acked=$acked failed=$failed ran=$stored acked_lost=$lost duplicates=$dup ran_twice=$twice submit_secs=$(python3 -c "print(f'{$t1-$t0:.1f}')")"
  "$SLURM_BENCH/stop.sh" --slurm-only >/dev/null 2>&1
}

case "$mode" in
  --gsched) run_gsched ;;
  --slurm) run_slurm ;;
  *) run_gsched; run_slurm ;;
esac
