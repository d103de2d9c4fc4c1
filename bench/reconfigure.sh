#!/usr/bin/env bash
# bench/reconfigure.sh: what a config change costs the clients. On a fresh local cluster,
# a loop of N held submissions (`gsbatch -H`, each one timed) runs while gsctld is made to
# read its config K times, by `gscontrol reconfigure` (in place, listening socket handed
# over) and, for comparison, by a restart (SIGTERM, then the same command line again), and
# once with neither. Prints, per mode: submissions refused, median and longest submission
# (ms), and how long each reconfigure command or restart took (ms). Needs the release
# binaries (`cargo build --release --bins && scripts/build-static.sh --release`); leaves no
# cluster running.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
N=${N:-600}; K=${K:-5}
BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release
DIR=/tmp/lc-reconf
export PATH=$BIN:$PATH

ms() { echo $(( $(date +%s%N) / 1000000 )); }

# Submits N held jobs one by one; one line per submission: "<ms> <exit status>".
submit_loop() {
  for _ in $(seq "$N"); do
    local t0 t1 rc=0
    t0=$(ms)
    gsbatch -H -Q --wrap true > /dev/null 2>> "$DIR/errors.txt" || rc=$?
    t1=$(ms)
    echo "$((t1 - t0)) $rc"
  done
}

# The controller's config read again K times while the loop runs, by $1.
disturb() {
  local how=$1
  for _ in $(seq "$K"); do
    sleep 0.4
    local t0 t1
    t0=$(ms)
    case $how in
      reconfigure) gscontrol reconfigure ;;
      restart)
        local pid
        pid=$(<"$DIR/run/gsctld.pid")
        kill -TERM "$pid"
        # Exited (a zombie counts: the first gsctld's parent is init, which reaps late).
        while [[ -e /proc/$pid && $(awk '{print $3}' /proc/"$pid"/stat 2> /dev/null) != Z ]]; do
          sleep 0.01
        done
        setsid "$BIN/gsctld" -D -f "$DIR/gsched.conf" < /dev/null >> "$DIR/log/gsctld.log" 2>&1 &
        echo $! > "$DIR/run/gsctld.pid"
        until gscontrol ping > /dev/null 2>&1; do sleep 0.01; done
        ;;
    esac
    t1=$(ms)
    echo "$((t1 - t0))" >> "$DIR/disturb.ms"
  done
}

run() {
  local how=$1
  rm -rf "$DIR"
  GSCHED_NO_BUILD=1 GSCHED_LOCAL_DIR=$DIR GSCHED_LOCAL_CPUS=4 \
    scripts/local-cluster.sh up > /tmp/lc-reconf.up 2>&1
  export GSCHED_CONF=$DIR/gsched.conf
  mkdir -p "$DIR/w"
  : > "$DIR/disturb.ms"
  (cd "$DIR/w" && submit_loop > "$DIR/loop.txt") &
  local loop=$!
  [[ $how != none ]] && disturb "$how"
  wait "$loop"
  local refused median longest took
  refused=$(awk '$2 != 0' "$DIR/loop.txt" | wc -l)
  median=$(awk '{print $1}' "$DIR/loop.txt" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  longest=$(awk '{print $1}' "$DIR/loop.txt" | sort -n | tail -1)
  took=$(paste -sd, "$DIR/disturb.ms")
  printf '%-12s refused %3d of %d   median %4s ms   longest %5s ms   each (ms): %s\n' \
    "$how" "$refused" "$N" "$median" "$longest" "${took:--}"
  sort "$DIR/errors.txt" | uniq -c | sort -rn | head -3 | sed 's/^/    /'
  GSCHED_LOCAL_DIR=$DIR scripts/local-cluster.sh down > /dev/null 2>&1
}

for how in ${MODES:-none reconfigure restart}; do
  run "$how"
done
