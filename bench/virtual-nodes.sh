#!/usr/bin/env bash
# gsctld at the scale of a large cluster, on one machine (issue 12): one `gsnoded --virtual`
# process stands for NODES nodes (64 CPUs each) that register, heartbeat and "run" jobs on a
# timer; 100,000 jobs are submitted as arrays. Measured, per node count:
#   register    seconds until every node is registered and idle
#   hb_idle     gsctld CPU use with the nodes heartbeating and no job (percent of one core)
#   submit      seconds to submit JOBS jobs (arrays of 10,000 tasks)
#   pass        scheduling passes meanwhile: count, mean and largest-bucket time (from /metrics)
#   latency     `gsbatch -H --wrap true` while the cluster is full (median, p90 of 20, ms)
#   hb_busy     gsctld CPU use with the cluster full of running jobs
#   rss         gsctld resident memory, idle and full (MiB)
#
#   bench/virtual-nodes.sh [NODES...]        (default: 1000 10000)
# Knobs: JOBS (100000), RUNTIME (600: each virtual job's seconds), SLURMD_TIMEOUT (300; nodes
# heartbeat every SlurmdTimeout/3 s, at most every 5 s), WINDOW (30 s of CPU sampling),
# OUT (bench/results/virtual-nodes.md).
# Uses the release build; needs nothing but this machine (auth/none on loopback).
set -euo pipefail
shopt -s inherit_errexit

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
JOBS="${JOBS:-100000}"
RUNTIME="${RUNTIME:-600}"
SLURMD_TIMEOUT="${SLURMD_TIMEOUT:-300}"
WINDOW="${WINDOW:-30}"
OUT="${OUT:-$ROOT/bench/results/virtual-nodes.md}"
SIZES=("$@")
[[ ${#SIZES[@]} -gt 0 ]] || SIZES=(1000 10000)

say() { printf '[virtual %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { say "$*"; exit 1; }

(cd "$ROOT" && cargo build --release --bins -q)
BIN="$ROOT/target/release"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gsched-virtual.XXXXXX")
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
ulimit -n 65536 2>/dev/null || true

# shellcheck source=bench/virtual-conf.sh
source "$ROOT/bench/virtual-conf.sh"
# CPU seconds (user + system) of a process so far
cpu_s() { awk -v t="$(getconf CLK_TCK)" '{ print ($14 + $15) / t }' "/proc/$1/stat"; }
rss_mib() { awk '/^VmRSS/ { printf "%.0f", $2 / 1024 }' "/proc/$1/status"; }
# percent of one core that pid $1 used over WINDOW seconds
cpu_pct() {
  local a b; a=$(cpu_s "$1"); sleep "$WINDOW"; b=$(cpu_s "$1")
  awk -v a="$a" -v b="$b" -v w="$WINDOW" 'BEGIN { printf "%.1f", (b - a) * 100 / w }'
}
metric() { curl -s "http://127.0.0.1:$CTLD_PORT/metrics" | awk -v m="$1" '$1 == m { print $2 }'; }
# "MEDIAN P90" of numbers on stdin
stats() {
  sort -g | awk 'NF { v[++n] = $1 } END { m = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
    r = int(0.9 * n); if (r < 0.9 * n) r++; printf "%.1f %.1f\n", m, v[r] }'
}

run_size() {
  local nodes=$1 dir="$WORK/n$1"
  CTLD_PORT=$(free_port)
  virtual_conf "$dir" "$nodes" "$CTLD_PORT" "$(free_port)" "$JOBS" "$SLURMD_TIMEOUT"
  export GSCHED_CONF="$dir/gsched.conf"
  "$BIN/gsctld" -D -f "$GSCHED_CONF" >"$dir/log/gsctld.log" 2>&1 &
  local ctld=$!; PIDS+=("$ctld")
  for _ in $(seq 100); do "$BIN/gscontrol" ping >/dev/null 2>&1 && break; sleep 0.1; done
  local t0; t0=$EPOCHREALTIME
  "$BIN/gsnoded" -D --virtual -N "v[1-$nodes]" -f "$GSCHED_CONF" >"$dir/log/gsnoded.log" 2>&1 &
  PIDS+=("$!")
  while [[ $("$BIN/gsinfo" -h -o '%D %T' | awk '$2 == "idle" { print $1 }') != "$nodes" ]]; do
    sleep 0.5
  done
  local register; register=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
  say "$nodes nodes registered in $register s"
  local rss_idle hb_idle; rss_idle=$(rss_mib "$ctld"); hb_idle=$(cpu_pct "$ctld")
  say "idle: gsctld ${hb_idle}% CPU, ${rss_idle} MiB"

  local p0 s0; p0=$(metric gsched_scheduler_passes_total); s0=$(metric gsched_scheduler_pass_seconds_sum)
  t0=$EPOCHREALTIME
  local left=$JOBS size
  while ((left > 0)); do
    size=$((left > 10000 ? 10000 : left))
    GSCHED_VIRTUAL_RUNTIME=$RUNTIME "$BIN/gsbatch" --parsable -o /dev/null \
      --array=0-$((size - 1)) --wrap true >/dev/null
    left=$((left - size))
  done
  local submit; submit=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
  sleep 20
  local running; running=$("$BIN/gsqueue" -h -t R -r -o %i | wc -l)
  local lat; lat=$(for _ in $(seq 20); do
    local a=$EPOCHREALTIME; "$BIN/gsbatch" -H --parsable -o /dev/null --wrap true >/dev/null
    awk -v a="$a" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f\n", (b - a) * 1000 }'
  done | stats)
  local hb_busy rss_full; hb_busy=$(cpu_pct "$ctld"); rss_full=$(rss_mib "$ctld")
  local p1 s1; p1=$(metric gsched_scheduler_passes_total); s1=$(metric gsched_scheduler_pass_seconds_sum)
  local passes mean_ms
  passes=$(awk -v a="$p0" -v b="$p1" 'BEGIN { print b - a }')
  mean_ms=$(awk -v a="$s0" -v b="$s1" -v n="$passes" 'BEGIN { printf "%.1f", (n > 0 ? (b - a) * 1000 / n : 0) }')
  say "$nodes nodes: submitted $JOBS in $submit s; $running running; $passes passes of $mean_ms ms; latency $lat ms; busy ${hb_busy}% CPU, ${rss_full} MiB"
  printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s / %s |\n' \
    "$nodes" "$register" "$hb_idle" "$submit" "$running" "$passes" "$mean_ms" \
    "$(echo "$lat" | tr ' ' '/')" "$hb_busy" "$rss_idle" "$rss_full" >>"$WORK/rows"
  "$BIN/gscancel" -u "$(id -un)" >/dev/null 2>&1 || true
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  PIDS=()
}

: >"$WORK/rows"
for n in "${SIZES[@]}"; do run_size "$n"; done
mkdir -p "$(dirname "$OUT")"
{
  echo "# gsctld with virtual nodes ($(date -u +%F), $(git -C "$ROOT" rev-parse --short HEAD), $(nproc) cores)"
  echo
  echo "\`bench/virtual-nodes.sh ${SIZES[*]}\`: one \`gsnoded --virtual\` for all nodes (64 CPUs each),"
  echo "$JOBS one-CPU jobs as arrays of 10,000 running ${RUNTIME} s each, SlurmdTimeout=$SLURMD_TIMEOUT"
  hb=$((SLURMD_TIMEOUT / 3)); ((hb > 5)) && hb=5
  echo "(heartbeat every $hb s, gsctld's cap). CPU percentages are of one core, over $WINDOW s."
  echo
  echo "| nodes | register s | idle CPU % | submit s | running | passes | pass ms (mean) | gsbatch ms (median/p90) | busy CPU % | RSS MiB idle / full |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  cat "$WORK/rows"
} | tee "$OUT"
