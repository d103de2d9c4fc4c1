#!/usr/bin/env bash
# Group commit (issue 12): submission throughput of gsctld with 1, 4 and 16 parallel
# submitters under StateSyncMode=FULL (every commit fsynced) and NORMAL, for two kinds of
# submitter (held jobs: nothing runs, so what is measured is the submission path and the store):
#   gsbatch  a shell loop of `gsbatch --parsable -H --wrap true -o /dev/null` (a process per job)
#   api      a thread posting the same job to /v1/jobs, one connection per job as gsbatch does
#            (no process start per job, so the controller and its store dominate)
# Optionally the same with another gsctld (the build before group commit) for the ratio.
#
#   bench/group-commit.sh [--baseline PATH/TO/OLD/gsctld]
#
# Every measurement starts a fresh gsctld (its own config and an empty store, auth/none on
# loopback; no node daemon is needed for held jobs), submits N jobs split over the
# submitters, checks that N jobs are queued, and stops it. Reported: jobs/s, median [min ..
# max] over REPS runs; with --baseline also new ÷ old.
# Knobs: N (2000 jobs per run), REPS (3), PARALLEL ("1 4 16"), MODES ("FULL NORMAL"),
# KINDS ("gsbatch api"),
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
read -r -a KINDS <<<"${KINDS:-gsbatch api}"
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

# The api submitter: P threads, N jobs in all; prints the seconds taken.
cat >"$WORK/api.py" <<'EOF'
import http.client, json, os, sys, threading, time
port, n, p = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
body = json.dumps({"spec": {
    "name": "wrap", "script": "#!/bin/sh\ntrue\n", "argv": [], "work_dir": "/tmp",
    "stdout": "/dev/null", "environment": [], "partitions": [], "time_unlimited": False,
    "hold": True, "submit_host": os.uname().nodename, "submit_line": "api", "command": ""}})
head = {"x-gsched-protocol": "1", "authorization": f"Gsched none:{os.getuid()}:{os.getgid()}",
        "content-type": "application/json", "connection": "close"}
errors = []
def loop(k):
    for _ in range(k):
        c = http.client.HTTPConnection("127.0.0.1", port)
        c.request("POST", "/v1/jobs", body, head)
        r = c.getresponse()
        data = r.read()
        c.close()
        if r.status != 200 or "job_id" not in json.loads(data):
            errors.append(data)
            return
ts = [threading.Thread(target=loop, args=(n // p,)) for _ in range(p)]
t0 = time.monotonic()
for t in ts: t.start()
for t in ts: t.join()
if errors:
    sys.exit(f"submission refused: {errors[0][:300]!r}")
print(f"{time.monotonic() - t0:.6f}")
EOF

# shellcheck source=bench/free-port.sh
source "$ROOT/bench/free-port.sh"
# "MEDIAN MIN MAX" of the numbers on stdin
stats() {
  sort -g | awk 'NF { v[++n] = $1 } END { m = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
    printf "%.0f %.0f %.0f\n", m, v[1], v[n] }'
}

# start_ctld GSCTLD MODE: a fresh controller with an empty store
start_ctld() {
  local ctld=$1 mode=$2 dir
  dir=$(mktemp -d "$WORK/c.XXXXXX")
  CTLD_PORT=$(free_port)
  cat >"$dir/gsched.conf" <<EOF
ClusterName=gcbench
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$CTLD_PORT
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

# one_run GSCTLD MODE P KIND: jobs/s of N submissions from P parallel submitters
one_run() {
  local ctld=$1 mode=$2 p=$3 kind=$4 per=$((N / $3)) t0 t1 k pids=() got secs
  start_ctld "$ctld" "$mode"
  if [[ $kind == api ]]; then
    secs=$(python3 "$WORK/api.py" "$CTLD_PORT" $((per * p)) "$p") || die "the api submitters failed"
  else
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
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f", b - a }')
  fi
  got=$("$BIN/gsqueue" -h -o %i | wc -l)
  [[ $got -eq $((per * p)) ]] || die "gsctld holds $got of the $((per * p)) submitted jobs"
  stop_ctld
  awk -v n="$((per * p))" -v s="$secs" 'BEGIN { printf "%.1f\n", n / s }'
}

# measure: sets R_<old|new>_<MODE>_<P> to "MEDIAN MIN MAX"; with a baseline, old and new
# take turns run by run, so that a change in the machine's load hits both alike.
measure() {
  local kind mode p v name r
  local names=(new)
  [[ -z $BASELINE ]] || names=(old new)
  for kind in "${KINDS[@]}"; do
    for mode in "${MODES[@]}"; do
      for p in "${PARALLEL[@]}"; do
        for name in "${names[@]}"; do : >"$WORK/rates.$name"; done
        for ((r = 1; r <= REPS; r++)); do
          for name in "${names[@]}"; do
            one_run "$(ctld_of "$name")" "$mode" "$p" "$kind" >>"$WORK/rates.$name"
          done
        done
        for name in "${names[@]}"; do
          v=$(stats <"$WORK/rates.$name")
          printf -v "R_${name}_${kind}_${mode}_$p" '%s' "$v"
          say "$name $kind $mode $p submitters: $v jobs/s (median min max)"
        done
      done
    done
  done
}
ctld_of() { if [[ $1 == old ]]; then echo "$BASELINE"; else echo "$BIN/gsctld"; fi; }

measure

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
    echo "| submitter | StateSyncMode | parallel | before (jobs/s) | after (jobs/s) | after ÷ before |"
    echo "|---|---|---|---|---|---|"
  else
    echo "| submitter | StateSyncMode | parallel | jobs/s |"
    echo "|---|---|---|---|"
  fi
  for kind in "${KINDS[@]}"; do
    for mode in "${MODES[@]}"; do
      for p in "${PARALLEL[@]}"; do
        k="${kind}_${mode}_$p"
        if [[ -n $BASELINE ]]; then
          echo "| $kind | $mode | $p | $(cell "old_$k") | $(cell "new_$k") | $(ratio "$(med "new_$k")" "$(med "old_$k")") |"
        else
          echo "| $kind | $mode | $p | $(cell "new_$k") |"
        fi
      done
    done
  done
  echo
  for kind in "${KINDS[@]}"; do
    if [[ -n $(med "new_${kind}_FULL_1") && -n $(med "new_${kind}_NORMAL_1") ]]; then
      echo "One $kind submitter: FULL costs $(awk -v f="$(med "new_${kind}_FULL_1")" -v n="$(med "new_${kind}_NORMAL_1")" 'BEGIN { printf "%.2f", 1000 / f - 1000 / n }') ms more per job than NORMAL (the commit's fsync)."
    fi
  done
  echo
  echo "Each cell: jobs/s, median [min .. max] over $REPS runs of $N held submissions from that many parallel submitters (gsbatch: shell loops of \`gsbatch --parsable -H --wrap true -o /dev/null\`; api: threads posting the same job, a connection per job), each run against a fresh gsctld and store${BASELINE:+, before and after taking turns}. Command: \`bench/group-commit.sh${BASELINE:+ --baseline $BASELINE}\`."
} | tee "$OUT"
say "written to $OUT"
