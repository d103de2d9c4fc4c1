#!/usr/bin/env bash
# bench/prolog-epilog.sh: what Prolog and Epilog cost a job. End to end of N trivial jobs
# (submitted one by one, until none is left in gsqueue) on a fresh local cluster, without
# and with Prolog=/bin/true and Epilog=/bin/true, alternating, ROUNDS times each; prints
# the seconds of each run. Needs the release binaries (`cargo build --release --bins &&
# scripts/build-static.sh --release`); leaves no cluster running.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
N=${N:-300}; ROUNDS=${ROUNDS:-2}
BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release
run() {
  local name=$1 extra=$2
  local dir=/tmp/lc-$name
  rm -rf "$dir"
  GSCHED_NO_BUILD=1 GSCHED_LOCAL_DIR=$dir GSCHED_LOCAL_CPUS=4 GSCHED_LOCAL_CONF_EXTRA="$extra" \
    scripts/local-cluster.sh up > /tmp/lc-$name.up 2>&1
  export GSCHED_CONF=$dir/gsched.conf PATH=$BIN:$PATH
  mkdir -p $dir/w && cd $dir/w
  local t0=$(date +%s.%N)
  for i in $(seq $N); do gsbatch -Q --wrap true > /dev/null; done
  while [ "$(gsqueue -h | wc -l)" != 0 ]; do sleep 0.05; done
  local t1=$(date +%s.%N)
  cd "$ROOT"
  GSCHED_LOCAL_DIR=$dir scripts/local-cluster.sh down > /dev/null 2>&1
  echo "$name $(echo "$t1 - $t0" | bc)"
}
for r in $(seq $ROUNDS); do
  run none ""
  run pe "$(printf 'Prolog=/bin/true\nEpilog=/bin/true')"
done
