#!/usr/bin/env bash
# Where the CPU of N trivial jobs goes, end to end on the local cluster: `gsbatch --wrap true`
# N times in a loop until the queue is empty, with the CPU time each party used meanwhile
# (the loop's commands, gsctld, gsnoded, gsnoded's children — gsstepd and the job shells —
# and munged), per job. Release build; the local cluster as scripts/local-cluster.sh starts
# it (with the static gsstepd and gsbatch when built: scripts/build-static.sh --release).
#
#   bench/e2e-cpu.sh            N=1000
#   N=300 bench/e2e-cpu.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
N="${N:-1000}"
export GSCHED_LOCAL_CPUS="${GSCHED_LOCAL_CPUS:-32}" GSCHED_NO_BUILD=1
scripts/local-cluster.sh down >/dev/null 2>&1 || true
rm -rf .local-cluster/state
scripts/local-cluster.sh up >/dev/null 2>&1
export GSCHED_CONF="$ROOT/.local-cluster/gsched.conf"
B="$ROOT/target/release"
# gsbatch as installed: the static build when there is one (scripts/build-static.sh --release).
SUBMIT="$B/gsbatch"
S="$ROOT/target/x86_64-unknown-linux-musl/release/gsbatch"
if [[ -x $S ]]; then SUBMIT=$S; fi
sleep 2
ticks() { awk '{ print $14 + $15, $16 + $17 }' "/proc/$1/stat"; }
ctld=$(cat .local-cluster/run/gsctld.pid)
nodes=$(for f in .local-cluster/run/gsnoded-*.pid; do cat "$f"; done)
munged=$(cat .local-cluster/run/munged.pid 2>/dev/null || true)
snap() {
  local c n=0 nc=0 m=0 a b
  c=$(ticks "$ctld" | cut -d' ' -f1)
  for p in $nodes; do read -r a b < <(ticks "$p"); n=$((n + a)); nc=$((nc + b)); done
  [[ -n $munged ]] && m=$(ticks "$munged" | cut -d' ' -f1)
  echo "$c $n $nc $m"
}
# The shell's children's CPU seconds so far (user + system), from `times` (run by this
# shell itself: in a command substitution it would report a subshell's).
TIMES=$(mktemp)
trap 'rm -f "$TIMES"' EXIT
kids() { tail -1 "$TIMES" | tr -d 'ms' | awk '{ print $1 + $2 }'; }
times >"$TIMES"
k0=$(kids)
read -r c0 n0 nc0 m0 < <(snap)
t0=$EPOCHREALTIME
for ((i = 0; i < N; i++)); do "$SUBMIT" --parsable --wrap true -o /dev/null >/dev/null; done
t1=$EPOCHREALTIME
while [[ -n $("$B/gsqueue" -h -o %i | head -1) ]]; do sleep 0.02; done
t2=$EPOCHREALTIME
read -r c1 n1 nc1 m1 < <(snap)
times >"$TIMES"
k1=$(kids)
hz=$(getconf CLK_TCK)
per() { awk -v t="$1" -v hz="$hz" -v n="$N" 'BEGIN { printf "%.2f", t / hz * 1000 / n }'; }
echo "N=$N: submitted in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') s, all done in $(awk -v a="$t0" -v b="$t2" 'BEGIN { printf "%.2f", b - a }') s"
echo "CPU ms per job: commands $(awk -v a="$k0" -v b="$k1" -v n="$N" 'BEGIN { printf "%.2f", (b - a) * 1000 / n }') (gsbatch, and gsqueue polling at the end)," \
  "gsctld $(per $((c1 - c0))), gsnoded $(per $((n1 - n0))), gsstepd + job shells $(per $((nc1 - nc0))), munged $(per $((m1 - m0)))"
