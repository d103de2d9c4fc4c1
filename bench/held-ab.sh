#!/usr/bin/env bash
# Held submissions, one build against another on the same machine: for each folder given,
# the local cluster is started with that folder's daemons (scripts/local-cluster.sh with
# GSCHED_LOCAL_BIN) and N × `gsbatch --parsable -H --wrap true -o /dev/null` is timed in a
# shell loop LOOPS times, after N × /bin/true (the process-spawn floor, same shell). The
# folders take turns, ROUNDS times, so that the machine's drift falls on all of them alike.
#
#   bench/held-ab.sh OLD_DIR NEW_DIR [MORE_DIRS...]
#
# Each folder holds a release build's binaries (gsctld, gsnoded, gsqueue, gscancel, ...;
# copy target/release/ there) and, as `gsbatch.static`, the gsbatch to time (copy
# target/x86_64-unknown-linux-musl/release/gsbatch after scripts/build-static.sh --release;
# without it, the folder's own gsbatch). Prints one line per folder and round:
#   DIR floor SECONDS held SECONDS...
# Knobs: N (1000), LOOPS (3), ROUNDS (3), GSCHED_LOCAL_CPUS (32).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
case "${1:-}" in
  -h | --help | "") sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
esac
N="${N:-1000}"
LOOPS="${LOOPS:-3}"
ROUNDS="${ROUNDS:-3}"
export GSCHED_LOCAL_CPUS="${GSCHED_LOCAL_CPUS:-32}"
export GSCHED_CONF="$ROOT/.local-cluster/gsched.conf"
DIRS=()
for d in "$@"; do
  d="$(cd "$d" && pwd)"
  [[ -x $d/gsctld && -x $d/gsnoded && -x $d/gscancel ]] ||
    { echo "bench/held-ab.sh: $d lacks gsctld, gsnoded or gscancel (copy a release build there)" >&2; exit 2; }
  DIRS+=("$d")
done
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'; }
cluster() { GSCHED_LOCAL_BIN="$1" "$ROOT/scripts/local-cluster.sh" "$2" >/dev/null 2>&1; }
trap 'cluster "${DIRS[0]}" down || true' EXIT
for ((r = 1; r <= ROUNDS; r++)); do
  for d in "${DIRS[@]}"; do
    cluster "$d" down || true
    rm -rf "$ROOT/.local-cluster/state"
    cluster "$d" up
    sleep 1
    submit="$d/gsbatch.static"
    [[ -x $submit ]] || submit="$d/gsbatch"
    for ((i = 0; i < 10; i++)); do "$submit" -H --wrap true -o /dev/null >/dev/null; done
    t0=$(now)
    for ((i = 0; i < N; i++)); do /bin/true; done
    line="$d floor $(since "$t0") held"
    for ((k = 0; k < LOOPS; k++)); do
      "$d/gscancel" -u "$(id -un)"
      sleep 0.3
      t0=$(now)
      for ((i = 0; i < N; i++)); do "$submit" --parsable -H --wrap true -o /dev/null >/dev/null; done
      line="$line $(since "$t0")"
    done
    echo "$line"
  done
done
