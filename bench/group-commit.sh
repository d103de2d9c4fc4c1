#!/usr/bin/env bash
# Group commit (issue 12): submission throughput of gsctld with 1, 4 and 16 parallel
# submitters, each a shell loop of `gsbatch --parsable -H --wrap true -o /dev/null` (held:
# nothing runs, so what is measured is the submission path and the store), under
# StateSyncMode=FULL (every commit fsynced) and NORMAL. Optionally the same with another
# gsctld (the build before group commit) for the ratio.
#
#   bench/group-commit.sh [--baseline PATH/TO/OLD/gsctld]
#
# Every measurement starts a fresh gsctld (its own config and an empty store, auth/none on
# loopback; no node daemon is needed for held jobs), submits N jobs split over the
# submitters, checks that N jobs are queued, and stops it. Reported: jobs/s, median [min ..
# max] over REPS runs; with --baseline also new ÷ old.
# Knobs: N (2000 jobs per run), REPS (3), PARALLEL ("1 4 16"), MODES ("FULL NORMAL"),
# STATE_PARENT (where the stores go; default target/group-commit-bench: it must be a real
# disk, fsync on tmpfs costs nothing), OUT (bench/results/group-commit.md).
# Uses the release build (cargo build --release --bins).
set -euo pipefail
shopt -s inherit_errexit

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
case "$TARGET" in /*) ;; *) TARGET="$ROOT/$TARGET" ;; esac
BIN="$TARGET/release"
N="${N:-2000}"
REPS="${REPS:-3}"
read -r -a PARALLEL <<<"${PARALLEL:-1 4 16}"
read -r -a MODES <<<"${MODES:-FULL NORMAL}"
STATE_PARENT="${STATE_PARENT:-$TARGET/group-commit-bench}"
OUT="${OUT:-$ROOT/bench/results/group-commit.md}"
BASELINE=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --baseline) BASELINE="$2"; shift 2 ;;
    --baseline=*) BASELINE="${1#*=}"; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench/group-commit.sh: unknown argument $1 (try --help)" >&2; exit 2 ;;
  esac
done

say() { printf '[group-commit %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { say "$*"; exit 1; }

(cd "$ROOT" && cargo build --release --bins -q)
for b in gsctld gsbatch gsqueue gscontrol; do
  [[ -x $BIN/$b ]] || die "$BIN/$b is missing after the build"
done
if [[ -n $BASELINE ]]; then
  [[ -x $BASELINE ]] || die "--baseline $BASELINE: no such executable"
  BASELINE=$(cd "$(dirname "$BASELINE")" && pwd)/$(basename "$BASELINE")
fi
mkdir -p "$STATE_PARENT"
[[ $(stat -f -c %T "$STATE_PARENT") != tmpfs ]] ||
  die "$STATE_PARENT is on tmpfs, where fsync costs nothing; set STATE_PARENT to a folder on a disk"
WORK=$(mktemp -d "$STATE_PARENT/run.XXXXXX")
CTLD_PID=""
cleanup() {
  [[ -z $CTLD_PID ]] || { kill "$CTLD_PID" 2>/dev/null || true; wait "$CTLD_PID" 2>/dev/null || true; }
  rm -rf "$WORK"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# "MEDIAN MIN MAX" of the numbers on stdin
stats() {
  sort -g | awk 'NF { v[++n] = $1 } END { m = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
    printf "%.0f %.0f %.0f\n", m, v[1], v[n] }'
}

# start_ctld GSCTLD MODE: a fresh controller with an empty store
start_ctld() {
  local ctld=$1 mode=$2 dir
  dir=$(mktemp -d "$WORK/c.XXXXXX")
  cat >"$dir/gsched.conf" <<EOF
ClusterName=gcbench
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$(free_port)
AuthType=auth/none
SlurmUser=$(id -un)
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
StateSyncMode=$mode
MaxJobCount=200000
NodeName=n[1-2] NodeAddr=127.0.0.1 Port=$(free_port) CPUs=8 RealMemory=8000 State=UNKNOWN
PartitionName=main Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
  export GSCHED_CONF="$dir/gsched.conf"
  "$ctld" -D -f "$GSCHED_CONF" >"$dir/gsctld.log" 2>&1 &
  CTLD_PID=$!
  for _ in $(seq 200); do "$BIN/gscontrol" ping >/dev/null 2>&1 && return 0; sleep 0.05; done
  cat "$dir/gsctld.log" >&2
  die "gsctld ($ctld) did not answer"
}
stop_ctld() {
  kill "$CTLD_PID"; wait "$CTLD_PID" 2>/dev/null || true; CTLD_PID=""
}

# one_run GSCTLD MODE P: jobs/s of N submissions from P parallel loops
one_run() {
  local ctld=$1 mode=$2 p=$3 per=$((N / $3)) t0 t1 k pids=() got
  start_ctld "$ctld" "$mode"
  t0=$EPOCHREALTIME
  for ((k = 0; k < p; k++)); do
    (
      for ((i = 0; i < per; i++)); do
        "$BIN/gsbatch" --parsable -H --wrap true -o /dev/null >/dev/null
      done
    ) &
    pids+=($!)
  done
  for k in "${pids[@]}"; do wait "$k" || die "a submitter failed (gsctld $ctld, $mode, $p parallel)"; done
  t1=$EPOCHREALTIME
  got=$("$BIN/gsqueue" -h -o %i | wc -l)
  [[ $got -eq $((per * p)) ]] || die "gsctld holds $got of the $((per * p)) submitted jobs"
  stop_ctld
  awk -v n="$((per * p))" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f\n", n / (b - a) }'
}

# measure NAME GSCTLD: sets R_<NAME>_<MODE>_<P> to "MEDIAN MIN MAX"
measure() {
  local name=$1 ctld=$2 mode p v
  for mode in "${MODES[@]}"; do
    for p in "${PARALLEL[@]}"; do
      : >"$WORK/rates"
      for ((r = 1; r <= REPS; r++)); do one_run "$ctld" "$mode" "$p" >>"$WORK/rates"; done
      v=$(stats <"$WORK/rates")
      printf -v "R_${name}_${mode}_$p" '%s' "$v"
      say "$name $mode $p submitters: $v jobs/s (median min max)"
    done
  done
}

# Interleaved per rep would be fairer to a noisy machine; whole blocks keep the script simple,
# so run it on a quiet machine or compare ratios only.
[[ -z $BASELINE ]] || measure old "$BASELINE"
measure new "$BIN/gsctld"

cell() { local v; v=$(eval "echo \"\${R_$1:-}\""); set -- $v; printf '%s [%s .. %s]' "$1" "$2" "$3"; }
med() { local v; v=$(eval "echo \"\${R_$1:-}\""); echo "${v%% *}"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f ×", a / b }'; }
commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
mkdir -p "$(dirname "$OUT")"
{
  echo "# Group commit: submission throughput"
  echo
  echo "$(date -Is) · $(uname -n) · $(getconf _NPROCESSORS_ONLN) CPUs · $(stat -f -c %T "$STATE_PARENT") · gsched $commit (release) · N=$N, REPS=$REPS"
  echo
  if [[ -n $BASELINE ]]; then
    echo "| StateSyncMode | submitters | before (jobs/s) | after (jobs/s) | after ÷ before |"
    echo "|---|---|---|---|---|"
  else
    echo "| StateSyncMode | submitters | jobs/s |"
    echo "|---|---|---|"
  fi
  for mode in "${MODES[@]}"; do
    for p in "${PARALLEL[@]}"; do
      if [[ -n $BASELINE ]]; then
        echo "| $mode | $p | $(cell "old_${mode}_$p") | $(cell "new_${mode}_$p") | $(ratio "$(med "new_${mode}_$p")" "$(med "old_${mode}_$p")") |"
      else
        echo "| $mode | $p | $(cell "new_${mode}_$p") |"
      fi
    done
  done
  echo
  if [[ -n $(med new_FULL_1) && -n $(med new_NORMAL_1) ]]; then
    echo "One submitter: FULL costs $(awk -v f="$(med new_FULL_1)" -v n="$(med new_NORMAL_1)" 'BEGIN { printf "%.2f", 1000 / f - 1000 / n }') ms more per job than NORMAL (the commit's fsync)."
    echo
  fi
  echo "Each cell: jobs/s, median [min .. max] over $REPS runs of $N held submissions (\`gsbatch --parsable -H --wrap true -o /dev/null\`) from that many parallel shell loops, each run against a fresh gsctld and store. Command: \`bench/group-commit.sh${BASELINE:+ --baseline $BASELINE}\`."
} | tee "$OUT"
say "written to $OUT"
