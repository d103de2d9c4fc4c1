#!/usr/bin/env bash
# Side by side: the same workloads, in one run, against gsched and against real Slurm 22.05,
# with the ratios written to bench/RESULTS.md (issue 12).
#
# Both systems are driven through Slurm's command names, so every workload below is one
# piece of shell code for both: for gsched, scripts/install.sh --slurm-names puts sbatch,
# squeue, scancel and scontrol (pointing at the release build) into a scratch prefix first on
# PATH; for Slurm, /usr/bin. gsched runs as the local cluster (scripts/local-cluster.sh: two
# node daemons, GSCHED_LOCAL_CPUS=32 each, so that it declares the 64 CPUs of the Slurm bench
# node); Slurm as set up by ../shared/bench/slurm/setup.sh (one node, 64 CPUs, cgroup
# plugins, MaxJobCount=200000, MaxArraySize=10001). gsched's local cluster has the same
# MaxJobCount and MaxArraySize and no cgroup.conf (no cgroups), which favours it a little on
# the end-to-end workloads; say so when quoting them.
#
#   bench/compare.sh [--gsched-only | --slurm-only] [--quick] [--only W1,W2,...]
#   bench/compare.sh --report     only rewrites the report from the kept figures
#
# When both systems are measured, the loop workloads (floor, held, run, p4, e2e) alternate:
# each repetition runs one system's loop, then the other's (the order swapped every
# repetition), with both clusters up, so that both meet the same moments of a machine whose
# speed drifts (a VM with busy neighbours moved by 15% within minutes). The other workloads
# run one system after the other.
#
# Each system's raw figures are kept in bench/results/compare/{gs,sl}.txt (with the date,
# commit and sizes they were measured with); a run that measures one system only reports
# the other from its file, and says so. The report replaces its own section of
# bench/RESULTS.md and leaves the other sections alone.
#
# Workloads (names for --only):
#   floor      N × /bin/true in a shell loop: the process-spawn floor of the loops below
#   held       N × `sbatch -H --wrap true` in a loop (nothing runs)
#   run        N × `sbatch --wrap true` in a loop (jobs run meanwhile; the drain is not timed)
#   p4         N held submissions from 4 parallel sbatch processes
#   array      `sbatch --array=0-(A-1) --wrap true`: submit time, and until all tasks completed
#   latency    submit → start of L jobs on an idle cluster (median, p90)
#   e2e        N × `sbatch --wrap true` until all COMPLETED
#   query      `squeue -h -o '%i %T'` and `squeue -u USER -t PD` with Q1 and Q2 held jobs
#   memory     controller RSS idle and with M held jobs
#   startup    `sbatch --version`, `squeue` on an empty queue (hyperfine -N)
# --quick: N=100, A=1000, L=5, Q1=1000, Q2=5000, M=5000, REPS=1 (a smoke run, minutes).
# Knobs: N (1000), REPS (3), A (10000), L (20), Q1 (10000), Q2 (100000), M (50000),
# GAP (0.5 s plus a random 0-0.5 s between latency jobs), OUT (bench/RESULTS.md).
# Needs root for Slurm (setup.sh installs and starts it); hyperfine for query/startup.
set -euo pipefail
shopt -s inherit_errexit

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SLURM_BENCH="${SLURM_BENCH:-$ROOT/../shared/bench/slurm}"
OUT="${OUT:-$ROOT/bench/RESULTS.md}"
RAW="${RAW:-$ROOT/bench/results/compare}"
ARGS="$*"
WITH_SLURM=1
WITH_GSCHED=1
ONLY=""
QUICK=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --gsched-only) WITH_SLURM=0; shift ;;
    --slurm-only) WITH_GSCHED=0; shift ;;
    --report) WITH_GSCHED=0; WITH_SLURM=0; shift ;;
    --quick) QUICK=1; shift ;;
    --only) ONLY="$2"; shift 2 ;;
    --only=*) ONLY="${1#*=}"; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench/compare.sh: unknown argument $1 (try --help)" >&2; exit 2 ;;
  esac
done
if ((QUICK)); then
  : "${N:=100}" "${A:=1000}" "${L:=5}" "${Q1:=1000}" "${Q2:=5000}" "${M:=5000}" "${REPS:=1}"
fi
N="${N:-1000}"; REPS="${REPS:-3}"; A="${A:-10000}"; L="${L:-20}"
Q1="${Q1:-10000}"; Q2="${Q2:-100000}"; M="${M:-50000}"; GAP="${GAP:-0.5}"
WORKLOADS=(floor held run p4 array latency e2e query memory startup)
wanted() { [[ -z $ONLY ]] || [[ ",$ONLY," == *",$1,"* ]]; }

say() { printf '[compare %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { say "$*"; exit 1; }
t_now() { echo "$EPOCHREALTIME"; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f", b - a }'; }
# "MEDIAN P90 MIN MAX" of the numbers on stdin (nearest-rank p90)
stats() {
  sort -g | awk 'NF { v[++n] = $1 } END {
    if (n == 0) { print "nan nan nan nan"; exit }
    m = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
    r = int(0.9 * n); if (r < 0.9 * n) r++; if (r < 1) r = 1
    printf "%.6f %.6f %.6f %.6f\n", m, v[r], v[1], v[n] }'
}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/gsched-compare.XXXXXX")
chmod 755 "$WORK"
trap 'rm -rf "$WORK"' EXIT
cat >"$WORK/latency-job.sh" <<'EOF'
#!/bin/bash
date +%s.%N >"$OUTF"
EOF
chmod 755 "$WORK/latency-job.sh"
ME=$(id -un)

# ------------------------------------------------------------------ the systems
# Each defines: sys_path (a PATH prefix with sbatch & co.), sys_restart (empty job table),
# sys_ctld_pid.
gs_prefix="$WORK/gsched-prefix"
gs_setup() {
  say "gsched: release build and the local cluster with 2 × 32 CPUs"
  (cd "$ROOT" && cargo build --release --bins -q)
  "$ROOT/scripts/build-static.sh" --release >/dev/null
  "$ROOT/scripts/install.sh" --prefix "$gs_prefix" --slurm-names --no-build --force >/dev/null
  export GSCHED_LOCAL_CPUS=32
  export GSCHED_NO_BUILD=1
  "$ROOT/scripts/local-cluster.sh" down >/dev/null 2>&1 || true
  rm -rf "$ROOT/.local-cluster/state"
  "$ROOT/scripts/local-cluster.sh" up >&2
  export GSCHED_CONF="$ROOT/.local-cluster/gsched.conf"
}
gs_path() { echo "$gs_prefix/bin"; }
gs_restart() {
  "$ROOT/scripts/local-cluster.sh" down >/dev/null 2>&1 || true
  rm -rf "$ROOT/.local-cluster/state"
  "$ROOT/scripts/local-cluster.sh" up >/dev/null 2>&1
}
gs_ctld_pid() { cat "$ROOT/.local-cluster/run/gsctld.pid"; }

sl_setup() {
  say "Slurm: $SLURM_BENCH/setup.sh"
  "$SLURM_BENCH/setup.sh" >&2
}
sl_path() { echo /usr/bin; }
sl_restart() {
  "$SLURM_BENCH/stop.sh" --slurm-only >&2
  BENCH_CLEAN=1 "$SLURM_BENCH/setup.sh" >&2
}
sl_ctld_pid() { cat /run/slurm-bench/slurmctld.pid; }

# ------------------------------------------------------------------ helpers over Slurm's names
njobs() { squeue -h -o %i 2>/dev/null | wc -l; }
wait_empty() { while [[ $(njobs) -gt 0 ]]; do sleep "${1:-0.25}"; done; }
clear_jobs() { scancel -u "$ME" 2>/dev/null || true; wait_empty 0.5; }
rss_kib() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }
fill_held() { seq "$1" | xargs -P 4 -I{} sbatch --parsable -H --wrap true -o /dev/null >/dev/null; }
# reps FN: "MEDIAN MIN MAX" of FN's printed seconds over REPS runs
# summary: "median min max" of the figures on stdin, one per line
summary() { stats | awk '{ print $1, $3, $4 }'; }
reps() {
  local i
  for ((i = 1; i <= REPS; i++)); do "$1"; echo; done | summary
}
# loop_of WORKLOAD: the function that runs one repetition of a loop workload
loop_of() { if [[ $1 == floor ]]; then echo w_floor; else echo "w_${1}1"; fi; }

# ------------------------------------------------------------------ the workloads
w_floor() {
  local t0 i; t0=$(t_now)
  for ((i = 0; i < N; i++)); do /bin/true; done
  sub "$t0" "$(t_now)"
}
w_held1() {
  local t0 i; clear_jobs; t0=$(t_now)
  for ((i = 0; i < N; i++)); do sbatch --parsable -H --wrap true -o /dev/null >/dev/null; done
  sub "$t0" "$(t_now)"
  clear_jobs
}
w_run1() {
  local t0 i v; clear_jobs; t0=$(t_now)
  for ((i = 0; i < N; i++)); do sbatch --parsable --wrap true -o /dev/null >/dev/null; done
  v=$(sub "$t0" "$(t_now)"); wait_empty; echo "$v"
}
w_p41() {
  local t0 v; clear_jobs; t0=$(t_now); fill_held "$N"; v=$(sub "$t0" "$(t_now)"); clear_jobs; echo "$v"
}
w_e2e1() {
  local t0 i; clear_jobs; t0=$(t_now)
  for ((i = 0; i < N; i++)); do sbatch --parsable --wrap true -o /dev/null >/dev/null; done
  wait_empty 0.25
  sub "$t0" "$(t_now)"
}
# array: prints "SUBMIT_S TOTAL_S COMPLETED"
w_array() {
  local t0 t1 id done_cnt; clear_jobs
  t0=$(t_now); id=$(sbatch --parsable --array=0-$((A - 1)) --wrap true -o /dev/null); t1=$(t_now)
  id=${id%%;*}
  while [[ -n "$(squeue -h -j "$id" -o %i 2>/dev/null | head -1)" ]]; do sleep 1; done
  done_cnt=$(squeue -h -t all -r -j "$id" -o %T | grep -c '^COMPLETED$' || true)
  echo "$(sub "$t0" "$t1") $(sub "$t0" "$(t_now)") $done_cnt"
}
w_latency() {
  local i f t0 id k
  clear_jobs
  for ((i = 1; i <= L; i++)); do
    f="$WORK/start.$i"; rm -f "$f"
    t0=$(t_now)
    id=$(OUTF=$f sbatch --parsable -o /dev/null --export=ALL "$WORK/latency-job.sh")
    id=${id%%;*}
    for ((k = 0; k < 12000; k++)); do [[ -s $f ]] && break; sleep 0.005; done
    [[ -s $f ]] || die "latency job $id never started"
    sub "$t0" "$(<"$f")"; echo
    while [[ -n "$(squeue -h -j "$id" -o %i 2>/dev/null)" ]]; do sleep 0.02; done
    sleep "$(awk -v g="$GAP" -v r="$RANDOM" 'BEGIN { printf "%.3f", g + (r % 500) / 1000 }')"
  done
}
# query LEVEL...: fills held jobs up to each level; prints "LEVEL MS_ALL MS_USER" per level
w_query() {
  local have=0 lvl j
  for lvl in "$@"; do
    fill_held $((lvl - have)); have=$lvl
    sleep 2
    j="$WORK/q$lvl.json"
    hyperfine -N --warmup 2 --runs 10 --export-json "$j" \
      "squeue -h -o '%i %T'" "squeue -u $ME -t PD" >/dev/null 2>&1
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"]; print(sys.argv[2], *("%.1f" % (x["median"]*1000) for x in r))' "$j" "$lvl"
  done
}
# memory: prints "IDLE_MIB FULL_MIB"
w_memory() {
  local pid idle full
  sys_restart; sleep 5
  pid=$(sys_ctld_pid); idle=$(rss_kib "$pid")
  fill_held "$M"; sleep 5
  full=$(rss_kib "$pid")
  clear_jobs
  awk -v a="$idle" -v b="$full" 'BEGIN { printf "%.1f %.1f\n", a / 1024, b / 1024 }'
}
w_startup() {
  local j="$WORK/startup.json"
  hyperfine -N --warmup 5 --runs 50 --export-json "$j" 'sbatch --version' 'squeue' >/dev/null 2>&1
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"]; print(*("%.2f" % (x["median"]*1000) for x in r))' "$j"
}

# measure SYS: runs every wanted workload against SYS; sets R_<SYS>_<name>
# The loop workloads, alternating the two systems (see the header); sets R_gs_W and R_sl_W
# and lists the workloads done in ALTERNATED.
LOOPS=(floor held run p4 e2e)
ALTERNATED=","
alternate() {
  local w i s order old_path=$PATH any=0
  for w in "${LOOPS[@]}"; do wanted "$w" && any=1; done
  ((any)) || return 0
  gs_setup
  sl_setup
  for w in "${LOOPS[@]}"; do
    wanted "$w" || continue
    say "gs + sl: $w, $REPS × each, alternating"
    : >"$WORK/gs.$w"
    : >"$WORK/sl.$w"
    for ((i = 1; i <= REPS; i++)); do
      order="gs sl"
      ((i % 2)) || order="sl gs"
      for s in $order; do
        export PATH="$("${s}_path"):$old_path"
        "$(loop_of "$w")" >>"$WORK/$s.$w"
        echo >>"$WORK/$s.$w"
      done
    done
    export PATH=$old_path
    for s in gs sl; do
      local v
      v=$(summary <"$WORK/$s.$w")
      printf -v "R_${s}_$w" '%s' "$v"
      say "$s: $w → $v"
      save_raw "$s" "$w" "$v"
    done
    ALTERNATED+="$w,"
  done
}

measure() {
  local s=$1 old_path=$PATH w any=0
  for w in "${WORKLOADS[@]}"; do
    wanted "$w" && [[ $ALTERNATED != *",$w,"* ]] && any=1
  done
  ((any)) || return 0
  "${s}_setup"
  sys_restart() { "${s}_restart"; }
  sys_ctld_pid() { "${s}_ctld_pid"; }
  local p; p=$("${s}_path")
  export PATH="$p:$old_path"
  say "$s: $(command -v sbatch)"
  local v
  for w in "${WORKLOADS[@]}"; do
    wanted "$w" || continue
    [[ $ALTERNATED == *",$w,"* ]] && continue
    say "$s: $w"
    case $w in
      floor | held | run | p4 | e2e) v=$(reps "$(loop_of "$w")") ;;
      array) v=$(w_array) ;;
      latency) v=$(w_latency | stats) ;;
      query) v=$(w_query "$Q1" "$Q2" | paste -sd' '); clear_jobs ;;
      memory) v=$(w_memory) ;;
      startup) v=$(w_startup) ;;
    esac
    printf -v "R_${s}_$w" '%s' "$v"
    say "$s: $w → $v"
    save_raw "$s" "$w" "$v"
  done
  export PATH=$old_path
}

# save_raw SYS WORKLOAD VALUE: keeps the figure in $RAW/SYS.txt (replacing an older one)
save_raw() {
  local f="$RAW/$1.txt"
  mkdir -p "$RAW"
  touch "$f"
  { grep -v "^$2 " "$f" || true; echo "$2 $3 # $(date -Is) $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null) N=$N REPS=$REPS A=$A L=$L Q=$Q1/$Q2 M=$M"; } >"$f.new"
  mv "$f.new" "$f"
}
# load_raw SYS: sets R_SYS_* from $RAW/SYS.txt for the workloads this run did not measure
load_raw() {
  local f="$RAW/$1.txt" w rest
  [[ -s $f ]] || return 1
  while read -r w rest; do
    [[ -n $w ]] || continue
    if [[ -z $(eval "echo \"\${R_${1}_$w:-}\"") ]]; then
      printf -v "R_${1}_$w" '%s' "${rest%% # *}"
      FROM_FILE+=("$1 $w: ${rest#* # }")
    fi
  done <"$f"
}
FROM_FILE=()

if { wanted query || wanted startup; } && ! command -v hyperfine >/dev/null; then
  die "hyperfine is needed for the query and startup workloads (apt-get install hyperfine)"
fi
SL_OK=0
SL_CAN=0
if ((WITH_SLURM)); then
  if [[ $(id -u) -ne 0 || ! -x $SLURM_BENCH/setup.sh ]]; then
    say "Slurm needs root and $SLURM_BENCH/setup.sh: measuring gsched only"
  else
    SL_CAN=1
  fi
fi
((WITH_GSCHED && SL_CAN)) && alternate
((WITH_GSCHED)) && measure gs
if ((SL_CAN)); then
  measure sl
  SL_OK=1
  "$SLURM_BENCH/stop.sh" >&2 || true
fi

# ------------------------------------------------------------------ report
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f ×", a / b; else print "" }'; }
cell() {  # cell WORKLOAD SYS: the human text of a result
  local w=$1 s=$2 v; v=$(eval "echo \"\${R_${s}_$w:-}\"")
  [[ -n $v ]] || { echo "–"; return; }
  set -- $v
  case $w in
    floor | held | run | p4 | e2e) printf '%.2f s [%.2f .. %.2f] → %.0f/s' "$1" "$2" "$3" "$(awk -v n="$N" -v s="$1" 'BEGIN { print n / s }')" ;;
    array) printf 'submit %.3f s; all done %.1f s (%s completed)' "$1" "$2" "$3" ;;
    latency) printf 'median %.1f ms, p90 %.1f ms' "$(awk -v x="$1" 'BEGIN { print x * 1000 }')" "$(awk -v x="$2" 'BEGIN { print x * 1000 }')" ;;
    query) printf '%s: all %s ms, -u %s ms; %s: all %s ms, -u %s ms' "$1" "$2" "$3" "$4" "$5" "$6" ;;
    memory) printf 'idle %s MiB, %s held %s MiB' "$1" "$M" "$2" ;;
    startup) printf '`sbatch --version` %s ms, `squeue` %s ms' "$1" "$2" ;;
  esac
}
# key_of WORKLOAD SYS: the figure a ratio is taken of (a time or a size)
key_of() {
  local w=$1 v; v=$(eval "echo \"\${R_${2}_$1:-}\""); set -- $v
  case $w in
    array) echo "${2:-0}" ;;
    query) echo "${2:-0}" ;;
    memory) echo "${2:-0}" ;;
    *) echo "${1:-0}" ;;
  esac
}
load_raw gs || true
load_raw sl && SL_OK=1
SL_VERSION=$(sinfo -V 2>/dev/null || echo "slurm 22.05")
commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
SECTION="# gsched against Slurm, side by side"
{
  echo "$SECTION"
  echo
  echo "$(date -Is) · $(uname -n) · $(getconf _NPROCESSORS_ONLN) CPUs · $(awk '/^MemTotal:/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo) · gsched $commit (release)$( ((SL_OK)) && echo " · $SL_VERSION") · N=$N, REPS=$REPS, A=$A, L=$L, Q=$Q1/$Q2, M=$M"
  echo
  echo "| workload | gsched | Slurm | Slurm ÷ gsched |"
  echo "|---|---|---|---|"
  for w in "${WORKLOADS[@]}"; do
    # Every workload with a figure for either system (this run's or its file's).
    [[ -n $(eval "echo \"\${R_gs_$w:-}\${R_sl_$w:-}\"") ]] || continue
    r=""
    ((SL_OK)) && r=$(ratio "$(key_of "$w" sl)" "$(key_of "$w" gs)")
    echo "| $w | $(cell "$w" gs) | $(cell "$w" sl) | $r |"
  done
  echo
  echo "Loops: median [min .. max] over REPS runs$([[ $ALTERNATED != "," ]] && echo ", the two systems alternating"). array: the ratio is of the time until every task completed; query: of \`squeue -h -o '%i %T'\` at $Q1 held jobs; memory: of the RSS with $M held jobs. Command: \`bench/compare.sh $ARGS\`."
  echo "Targets (issue 12): held ≤ 1.6 × floor; latency median ≤ 20 ms; e2e ≥ 10 × Slurm; memory ≤ 1/3 of Slurm's; query ≤ 1/5 of Slurm's time."
  if ((${#FROM_FILE[@]})); then
    echo
    echo "Figures not measured in this run, from $(basename "$RAW")/ (measured when and how the note says):"
    printf -- '- %s\n' "${FROM_FILE[@]}"
  fi
} >"$WORK/section.md"
cat "$WORK/section.md"
# Replace this report's section of $OUT (from its heading to the next top-level heading),
# or append it; the other sections stay as they are.
python3 "$ROOT/bench/replace-section.py" "$OUT" "$WORK/section.md" "$SECTION"
mv "$OUT.new" "$OUT"
say "written to $OUT"
