#!/usr/bin/env bash
# gsctld holding a full cluster of virtual nodes, sampled for a while (issue 12): what a pass
# costs when nothing starts and nothing ends, and where its CPU goes. One `gsnoded --virtual`
# stands for NODES nodes (64 CPUs each); JOBS one-CPU jobs running 600 s are submitted as
# arrays; once the cluster is full, gsctld is sampled for WINDOW seconds:
#   registered  seconds until every node is registered and idle
#   steady      passes in the window, their mean time, gsctld's CPU (percent of one core)
#   latency     20 × `gsbatch -H --wrap true` meanwhile (ms, sorted)
#   RSS         gsctld's resident memory
# With PERF=FILE, `perf record --call-graph dwarf` of gsctld over the window writes FILE;
# with REGPERF=SECONDS, another records the registration (to FILE.reg). PERF_CALLS=fp uses
# frame pointers, PERF_CALLS=none a flat profile at 999 Hz: dwarf unwinding's own cache
# misses can land on the code it samples (results/virtual-nodes.md, fourth round).
#
#   bench/virtual-steady.sh                       NODES=1000 JOBS=100000 WINDOW=20
#   NODES=10000 JOBS=1000 bench/virtual-steady.sh   (registration of 10,000 nodes)
# Uses the release build (or, with BIN=DIR, the binaries in DIR: one build against another);
# auth/none on loopback. bench/virtual-nodes.sh measures the rest.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NODES="${NODES:-1000}" JOBS="${JOBS:-100000}" WINDOW="${WINDOW:-20}"
if [[ -z ${BIN:-} ]]; then
  BIN="$ROOT/target/release"
  (cd "$ROOT" && cargo build --release --bins -q)
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/gsched-steady.XXXXXX")
# shellcheck source=bench/virtual-conf.sh
source "$ROOT/bench/virtual-conf.sh"
CTLD_PORT=$(free_port)
virtual_conf "$dir" "$NODES" "$CTLD_PORT" "$(free_port)" "$JOBS" 300
export GSCHED_CONF="$dir/gsched.conf"
ulimit -n 65536 2>/dev/null || true
"$BIN/gsctld" -D -f "$GSCHED_CONF" >"$dir/log/gsctld.log" 2>&1 &
ctld=$!
pids=("$ctld")
trap 'kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$dir"' EXIT
for _ in $(seq 100); do "$BIN/gscontrol" ping >/dev/null 2>&1 && break; sleep 0.1; done
secs_since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }
metric() { curl -s "http://127.0.0.1:$CTLD_PORT/metrics" | awk -v m="$1" '$1 == m { print $2 }'; }
ticks() { awk '{ print $14 + $15 }' "/proc/$ctld/stat"; }
case "${PERF_CALLS:-dwarf}" in
  dwarf) PERF_ARGS=(-F 200 --call-graph dwarf,16384) ;;
  fp) PERF_ARGS=(-F 499 --call-graph fp) ;;
  none) PERF_ARGS=(-F 999) ;;
  *) echo "virtual-steady.sh: PERF_CALLS is dwarf, fp or none" >&2; exit 2 ;;
esac
if [[ -n ${REGPERF:-} ]]; then
  perf record -q "${PERF_ARGS[@]}" -p "$ctld" -o "${PERF:-perf.data}.reg" \
    -- sleep "$REGPERF" >/dev/null 2>&1 &
fi
t0=$EPOCHREALTIME
"$BIN/gsnoded" -D --virtual -N "v[1-$NODES]" -f "$GSCHED_CONF" >"$dir/log/gsnoded.log" 2>&1 &
pids+=("$!")
while [[ $("$BIN/gsinfo" -h -o '%D %T' | awk '$2 == "idle" { print $1 }') != "$NODES" ]]; do sleep 0.2; done
echo "registered: $NODES nodes in $(secs_since "$t0") s"
left=$JOBS t0=$EPOCHREALTIME
while ((left > 0)); do
  size=$((left > 10000 ? 10000 : left))
  GSCHED_VIRTUAL_RUNTIME=600 "$BIN/gsbatch" --parsable -o /dev/null --array=0-$((size - 1)) --wrap true >/dev/null
  left=$((left - size))
done
echo "submitted: $JOBS jobs in $(secs_since "$t0") s"
sleep 15
p0=$(metric gsched_scheduler_passes_total) s0=$(metric gsched_scheduler_pass_seconds_sum) c0=$(ticks)
if [[ -n ${PERF:-} ]]; then
  perf record -q "${PERF_ARGS[@]}" -p "$ctld" -o "$PERF" -- sleep "$WINDOW" >/dev/null 2>&1
else
  sleep "$WINDOW"
fi
p1=$(metric gsched_scheduler_passes_total) s1=$(metric gsched_scheduler_pass_seconds_sum) c1=$(ticks)
awk -v p0="$p0" -v p1="$p1" -v s0="$s0" -v s1="$s1" -v c0="$c0" -v c1="$c1" -v w="$WINDOW" \
  -v hz="$(getconf CLK_TCK)" 'BEGIN { n = p1 - p0
    printf "steady: %d passes in %d s, mean %.1f ms; gsctld %.0f%% of a core\n", n, w,
      (n > 0 ? (s1 - s0) * 1000 / n : 0), (c1 - c0) * 100 / hz / w }'
echo "latency ms: $(for _ in $(seq 20); do
  a=$EPOCHREALTIME; "$BIN/gsbatch" -H --parsable -o /dev/null --wrap true >/dev/null
  awk -v a="$a" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f\n", (b - a) * 1000 }'
done | sort -g | tr '\n' ' ')"
echo "running: $("$BIN/gsqueue" -h -t R -r -o %i | wc -l); gsctld RSS $(awk '/^VmRSS/ { printf "%.0f", $2 / 1024 }' "/proc/$ctld/status") MiB"
