#!/usr/bin/env bash
# Submission benchmark for gsched, optionally side by side with real Slurm.
#
# Against the local cluster (`make cluster`, release build; started here if it is not running):
#   floor  the process-spawn floor: a shell loop starting /bin/true N times
#   (a)    N sequential `gsbatch --parsable -H --wrap true -o /dev/null` (held: nothing runs)
#   (b)    the same without -H (the jobs run while the loop submits; draining is not timed)
#   (d)    submit → start latency over L jobs on an idle cluster: the job's first command
#          writes `date +%s.%N`, compared with the time taken just before gsbatch
# Targets (issue 2): (a) ≤ 1.6 × floor; median (d) < 20 ms.
#
#   bench/submit.sh [--with-slurm] [--no-start]
#
# --with-slurm: also run the same loops against real Slurm, set up by
# ../shared/bench/slurm/setup.sh (root; installs and starts slurmctld/slurmd/munged, reusing
# that folder's lib.sh), and print the ratios. Slurm daemons started here are stopped again.
#
# Knobs: N (1000), REPS (3: loops report the median), LAT_JOBS (20), GAP seconds between latency jobs (0.5, plus a random
# 0-0.5 s so that submissions do not stay in phase with a periodic scheduler),
# SLURM_BENCH (the Slurm bench folder), OUT (bench/RESULTS.md).
# Held jobs are cancelled at the end (also on interruption).
set -euo pipefail
# A failing submission inside $(...) must stop the run, not make the loop look fast.
shopt -s inherit_errexit

GS_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
GS_TARGET="${CARGO_TARGET_DIR:-$GS_ROOT/target}"
case "$GS_TARGET" in /*) ;; *) GS_TARGET="$GS_ROOT/$GS_TARGET" ;; esac
GS_BIN="$GS_TARGET/release"
GS_CONF="$GS_ROOT/.local-cluster/gsched.conf"
SLURM_BENCH="${SLURM_BENCH:-$GS_ROOT/../shared/bench/slurm}"
OUT="${OUT:-$GS_ROOT/bench/RESULTS.md}"
N="${N:-1000}"
REPS="${REPS:-3}"
LAT_JOBS="${LAT_JOBS:-20}"
GAP="${GAP:-0.5}"
HELD_NAME=gsbench-held
RUN_NAME=gsbench-run
LAT_NAME=gsbench-lat

WITH_SLURM=0
START=1
for a in "$@"; do
  case "$a" in
    --with-slurm) WITH_SLURM=1 ;;
    --no-start) START=0 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench/submit.sh: unknown argument $a (try --help)" >&2; exit 2 ;;
  esac
done

say() { printf '[bench %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { say "$*"; exit 1; }

# Wall clock in seconds with microseconds, without starting a process.
t_now() { echo "$EPOCHREALTIME"; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f", b - a }'; }
div() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
ms() { awk -v a="$1" 'BEGIN { printf "%.1f", a * 1000 }'; }
# median and p90 (nearest rank) of the numbers on stdin: "MEDIAN P90 MIN MAX"
stats() {
  sort -g | awk 'NF { v[++n] = $1 } END {
    if (n == 0) { print "nan nan nan nan"; exit }
    m = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
    r = int(0.9 * n); if (r < 0.9 * n) r++; if (r < 1) r = 1
    printf "%.6f %.6f %.6f %.6f\n", m, v[r], v[1], v[n] }'
}
jitter() { awk -v g="$GAP" -v r="$RANDOM" 'BEGIN { printf "%.3f", g + (r % 500) / 1000 }'; }

WORKDIR=$(mktemp -d "${TMPDIR:-/tmp}/gsched-bench.XXXXXX")
chmod 755 "$WORKDIR"
cat >"$WORKDIR/latency-job.sh" <<'EOF'
#!/bin/bash
date +%s.%N >"$OUTF"
EOF
chmod 755 "$WORKDIR/latency-job.sh"

# ------------------------------------------------------------------------- the loops
# Every function takes the submit command (gsbatch or sbatch) and prints seconds.
spawn_floor() {
  local t0 t1 i
  t0=$(t_now)
  for ((i = 0; i < N; i++)); do /bin/true; done
  t1=$(t_now)
  sub "$t0" "$t1"
}

submit_loop() {  # submit_loop SBATCH held|run
  local sb=$1 t0 t1 i
  if [[ $2 == held ]]; then
    t0=$(t_now)
    for ((i = 0; i < N; i++)); do "$sb" --parsable -H -J "$HELD_NAME" --wrap true -o /dev/null >/dev/null; done
    t1=$(t_now)
  else
    t0=$(t_now)
    for ((i = 0; i < N; i++)); do "$sb" --parsable -J "$RUN_NAME" --wrap true -o /dev/null >/dev/null; done
    t1=$(t_now)
  fi
  sub "$t0" "$t1"
}

# queue_count SQUEUE NAME: jobs called NAME still pending/running/completing
queue_count() { "$1" -h -o '%j' 2>/dev/null | grep -cx "$2" || true; }

drain() {  # drain SQUEUE NAME
  local i
  for ((i = 0; i < 12000; i++)); do
    [[ $(queue_count "$1" "$2") -eq 0 ]] && return 0
    sleep 0.05
  done
  die "jobs $2 did not drain within 10 minutes"
}

# latency SBATCH SQUEUE: one line per job: seconds from just before the submit to the job's start
latency() {
  local sb=$1 sq=$2 i f t0 ts id k
  for ((i = 1; i <= LAT_JOBS; i++)); do
    f="$WORKDIR/start.$sb.$i"
    rm -f "$f"
    t0=$(t_now)
    id=$(OUTF=$f "$sb" --parsable -J "$LAT_NAME" -o /dev/null "$WORKDIR/latency-job.sh")
    id=${id%%;*}
    for ((k = 0; k < 6000; k++)); do [[ -s $f ]] && break; sleep 0.005; done
    [[ -s $f ]] || die "latency job $id never started"
    ts=$(<"$f")
    sub "$t0" "$ts"
    echo
    for ((k = 0; k < 6000; k++)); do [[ -z "$("$sq" -h -j "$id" 2>/dev/null)" ]] && break; sleep 0.01; done
    sleep "$(jitter)"
  done
}

# ------------------------------------------------------------------------- gsched
CANCEL_GS=0
cleanup() {
  if ((CANCEL_GS)) && [[ -x $GS_BIN/gscancel ]]; then
    GSCHED_CONF=$GS_CONF "$GS_BIN/gscancel" -n "$HELD_NAME" >/dev/null 2>&1 || true
  fi
  if [[ ${SLURM_CANCEL:-0} == 1 ]]; then scancel -n "$HELD_NAME" >/dev/null 2>&1 || true; fi
  rm -rf "$WORKDIR"
}
trap cleanup EXIT

export GSCHED_CONF="$GS_CONF"
export PATH="$GS_BIN:$PATH"
if ! [[ -s $GS_CONF ]] || ! "$GS_ROOT/scripts/local-cluster.sh" status >/dev/null 2>&1; then
  ((START)) || die "the local cluster is not running: start it with make cluster"
  say "starting the local cluster (scripts/local-cluster.sh up)"
  "$GS_ROOT/scripts/local-cluster.sh" up >&2
fi
for b in gsbatch gsqueue gscancel; do
  [[ -x $GS_BIN/$b ]] || die "$GS_BIN/$b is missing: run make cluster (cargo build --release --bins)"
done

# One repetition of each measurement; each prints seconds and leaves the queue clean.
gs_held() {
  local v got
  v=$(submit_loop gsbatch held)
  got=$(queue_count gsqueue "$HELD_NAME")
  [[ $got -eq $N ]] || die "gsched holds $got of the $N held jobs"
  gscancel -n "$HELD_NAME"
  drain gsqueue "$HELD_NAME"
  echo "$v"
}
gs_run() {
  local v
  v=$(submit_loop gsbatch run)
  drain gsqueue "$RUN_NAME"
  echo "$v"
}
sl_held() {
  local v got
  v=$(submit_loop sbatch held)
  got=$(queue_count squeue "$HELD_NAME")
  [[ $got -eq $N ]] || die "Slurm holds $got of the $N held jobs"
  scancel -n "$HELD_NAME" || true
  wait_empty 0.5
  echo "$v"
}
sl_run() {
  local v
  v=$(submit_loop sbatch run)
  wait_empty 0.5
  echo "$v"
}
# reps FUNCTION: "MEDIAN MIN MAX" over $REPS runs
reps() {
  local i
  for ((i = 1; i <= REPS; i++)); do
    say "  rep $i/$REPS"
    "$1"
    echo
  done | stats | awk '{ print $1, $3, $4 }'
}

say "gsched: process-spawn floor, $N × /bin/true"
read -r GS_FLOOR GS_FLOOR_MIN GS_FLOOR_MAX < <(reps spawn_floor)
CANCEL_GS=1
say "gsched: (a) $N held submissions"
read -r GS_HELD GS_HELD_MIN GS_HELD_MAX < <(reps gs_held)
say "gsched: (b) $N submissions, not held (the drain after each is not timed)"
read -r GS_RUN GS_RUN_MIN GS_RUN_MAX < <(reps gs_run)
say "gsched: (d) submit → start latency over $LAT_JOBS jobs"
read -r GS_LAT_MED GS_LAT_P90 GS_LAT_MIN GS_LAT_MAX < <(latency gsbatch gsqueue | stats)
[[ -n ${GS_HELD:-} && -n ${GS_RUN:-} && -n ${GS_LAT_MED:-} ]] || die "a gsched measurement failed (see above)"

# ------------------------------------------------------------------------- Slurm
SL_OK=0
if ((WITH_SLURM)); then
  if [[ ! -x $SLURM_BENCH/setup.sh ]]; then
    say "no Slurm bench set-up at $SLURM_BENCH/setup.sh: skipping Slurm"
  elif [[ $(id -u) -ne 0 ]]; then
    say "--with-slurm needs root (setup.sh installs and starts Slurm): skipping Slurm"
  else
    started_slurm=1
    if [[ -s /run/slurm-bench/slurmctld.pid ]] && [[ -d /proc/$(cat /run/slurm-bench/slurmctld.pid) ]]; then
      started_slurm=0
    fi
    say "Slurm: setting up ($SLURM_BENCH/setup.sh)"
    "$SLURM_BENCH/setup.sh" >&2
    # Reuse the Slurm bench's helpers (wait_empty, ...); its raw rows go to a scratch
    # folder, not into the shared one.
    export RES_DIR="$WORKDIR/slurm-results"
    # shellcheck source=/dev/null
    source "$SLURM_BENCH/lib.sh"
    shopt -s inherit_errexit
    SLURM_CANCEL=1
    wait_empty 0.5
    say "Slurm: process-spawn floor"
    read -r SL_FLOOR SL_FLOOR_MIN SL_FLOOR_MAX < <(reps spawn_floor)
    say "Slurm: (a) $N held submissions"
    read -r SL_HELD SL_HELD_MIN SL_HELD_MAX < <(reps sl_held)
    say "Slurm: (b) $N submissions, not held (the drain after each is not timed)"
    read -r SL_RUN SL_RUN_MIN SL_RUN_MAX < <(reps sl_run)
    say "Slurm: (d) submit → start latency over $LAT_JOBS jobs"
    read -r SL_LAT_MED SL_LAT_P90 SL_LAT_MIN SL_LAT_MAX < <(latency sbatch squeue | stats)
    [[ -n ${SL_HELD:-} && -n ${SL_RUN:-} && -n ${SL_LAT_MED:-} ]] || die "a Slurm measurement failed (see above)"
    SL_OK=1
    if ((started_slurm)); then
      say "Slurm: stopping the daemons this run started"
      "$SLURM_BENCH/stop.sh" >&2 || true
    fi
  fi
fi

# ------------------------------------------------------------------------- report
rate() { awk -v n="$N" -v s="$1" 'BEGIN { printf "%.0f", n / s }'; }
per() { awk -v n="$N" -v s="$1" 'BEGIN { printf "%.2f", s * 1000 / n }'; }
# loop_cell MEDIAN MIN MAX
loop_cell() { printf '%.2f s [%.2f .. %.2f] → %s ms each, %s/s' "$1" "$2" "$3" "$(per "$1")" "$(rate "$1")"; }
lat_cell() { printf '%s ms (p90 %s, min %s, max %s)' "$(ms "$1")" "$(ms "$2")" "$(ms "$3")" "$(ms "$4")"; }

commit=$(git -C "$GS_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
{
  echo "# gsched submission benchmark"
  echo
  echo "$(date -Is) · $(uname -n) · $(getconf _NPROCESSORS_ONLN) CPUs · $(awk '/^MemTotal:/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo) · gsched $commit (release) · N=$N, $LAT_JOBS latency jobs"
  echo
  if ((SL_OK)); then
    echo "| what | gsched | Slurm ($(sinfo -V 2>/dev/null || echo slurm)) | Slurm ÷ gsched (time) |"
    echo "|---|---|---|---|"
    echo "| spawn floor: $N × \`/bin/true\` | $(loop_cell "$GS_FLOOR" "$GS_FLOOR_MIN" "$GS_FLOOR_MAX") | $(loop_cell "$SL_FLOOR" "$SL_FLOOR_MIN" "$SL_FLOOR_MAX") | |"
    echo "| (a) $N × \`gsbatch -H --wrap true\` (held) | $(loop_cell "$GS_HELD" "$GS_HELD_MIN" "$GS_HELD_MAX") = $(div "$GS_HELD" "$GS_FLOOR") × floor | $(loop_cell "$SL_HELD" "$SL_HELD_MIN" "$SL_HELD_MAX") | $(div "$SL_HELD" "$GS_HELD") × |"
    echo "| (b) $N × \`gsbatch --wrap true\` (not held) | $(loop_cell "$GS_RUN" "$GS_RUN_MIN" "$GS_RUN_MAX") | $(loop_cell "$SL_RUN" "$SL_RUN_MIN" "$SL_RUN_MAX") | $(div "$SL_RUN" "$GS_RUN") × |"
    echo "| (d) submit → start, median | $(lat_cell "$GS_LAT_MED" "$GS_LAT_P90" "$GS_LAT_MIN" "$GS_LAT_MAX") | $(lat_cell "$SL_LAT_MED" "$SL_LAT_P90" "$SL_LAT_MIN" "$SL_LAT_MAX") | $(div "$SL_LAT_MED" "$GS_LAT_MED") × |"
  else
    echo "| what | gsched |"
    echo "|---|---|"
    echo "| spawn floor: $N × \`/bin/true\` | $(loop_cell "$GS_FLOOR" "$GS_FLOOR_MIN" "$GS_FLOOR_MAX") |"
    echo "| (a) $N × \`gsbatch -H --wrap true\` (held) | $(loop_cell "$GS_HELD" "$GS_HELD_MIN" "$GS_HELD_MAX") = $(div "$GS_HELD" "$GS_FLOOR") × floor |"
    echo "| (b) $N × \`gsbatch --wrap true\` (not held) | $(loop_cell "$GS_RUN" "$GS_RUN_MIN" "$GS_RUN_MAX") |"
    echo "| (d) submit → start, median | $(lat_cell "$GS_LAT_MED" "$GS_LAT_P90" "$GS_LAT_MIN" "$GS_LAT_MAX") |"
  fi
  echo
  echo "Loops: median [min .. max] over $REPS repetitions. Latency: median (p90, min, max) over $LAT_JOBS jobs submitted one at a time on an idle cluster, $GAP s plus a random 0-0.5 s after the previous one left the queue (Slurm starts batch jobs from a periodic pass, so its figure depends on that gap)."
  echo "Targets: (a) ≤ 1.6 × floor; (d) median < 20 ms. Command: \`bench/submit.sh$( ((WITH_SLURM)) && echo " --with-slurm")\`."
} >"$OUT.section"
cat "$OUT.section"
# Only this script's section of the shared results file is replaced.
python3 "$GS_ROOT/bench/replace-section.py" "$OUT" "$OUT.section" "# gsched submission benchmark"
rm -f "$OUT.section"
mv "$OUT.new" "$OUT"
say "written to $OUT"
