#!/usr/bin/env bash
# Side-by-side output layouts of gsched's commands and of real Slurm 22.05's (issue 8 item 6).
#
# Runs the same small job set on both, captures squeue, sinfo, sacct and scontrol in their
# common shapes, masks ids, times, dates and the scratch folder (bench/format-mask.py) and
# diffs the rest with `diff -u`. Writes bench/results/format-diff/: slurm/NAME.txt and
# gsched/NAME.txt (masked outputs), commands.txt (what each NAME ran), format.diff (all diffs,
# Slurm first), summary.txt (which captures differ). The differences and whether each is
# intended are listed in bench/RESULTS.md ("Output layouts against Slurm 22.05").
#
#   bench/format-diff.sh [--no-sacct] [--only slurm|gsched] [--keep]
#
# Both sides are driven through Slurm's command names:
#   Slurm   ../shared/bench/slurm/setup.sh (root; BENCH_GRES=none BENCH_PROCTRACK=linuxproc,
#           an empty job table), then restarted from a copy of its slurm.conf with
#           FirstJobId=1000 and accounting through a slurmdbd of ours on a private MariaDB
#           (port 3307, data in the scratch folder; needs `apt-get install slurmdbd
#           mariadb-server`), because sacct reads nothing without slurmdbd in 22.05
#           (jobcomp/filetxt is only read by `sacct -c`, a different report).
#   gsched  scripts/install.sh --slurm-names into the scratch folder (binaries from GS_BIN,
#           default target/debug) and scripts/local-cluster.sh with one node named like this
#           host, 64 CPUs and 200000 MB (Slurm's bench node), partition debug,
#           ClusterName=bench, FirstJobId=1000; its state is wiped first.
# Job set (in this order, so that both number them alike): hello (examples/hello.sh, the
# local cluster's first job), ok (exit 0), fail (exit 3), cancelled (held, then cancelled),
# run (sleep), held (-H), a job with a long name and -c 2, big (-c 64: pending on Resources),
# arr (--array=0-3%2: two tasks run, two wait on JobArrayTaskLimit). Every job asks --mem=100M
# (written before gsched had DefMemPerCPU; kept so that the committed captures compare).
#
# --no-sacct  no slurmdbd/MariaDB: Slurm's sacct captures then say accounting is disabled
# --only S    run one side only and diff against the other side's committed outputs
# --keep      leave both clusters running (and the scratch folder) for a look
# Note: setup.sh copies the config it wrote into its own etc/ folder, so after this run that
# folder shows the BENCH_GRES=none/linuxproc variant (any later setup.sh run rewrites it).
# Everything this starts is stopped at the end: slurmctld/slurmd/munged through setup.sh's
# stop.sh (the PIDs it records), slurmdbd and mariadbd by their PIDs, the local cluster
# through `local-cluster.sh down`.
set -euo pipefail
shopt -s inherit_errexit

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SLURM_BENCH="${SLURM_BENCH:-$ROOT/../shared/bench/slurm}"
OUT="${OUT:-$ROOT/bench/results/format-diff}"
GS_BIN="${GS_BIN:-$ROOT/target/debug}"
case "$GS_BIN" in /*) ;; *) GS_BIN="$ROOT/$GS_BIN" ;; esac
HOST=$(hostname -s)
FIRST_ID=1000
DB_PORT=3307
DBD_PORT=6819
SACCT=1
ONLY=both
KEEP=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --no-sacct) SACCT=0; shift ;;
    --only) ONLY="$2"; shift 2 ;;
    --only=*) ONLY="${1#*=}"; shift ;;
    --keep) KEEP=1; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench/format-diff.sh: unknown argument $1 (try --help)" >&2; exit 2 ;;
  esac
done
case "$ONLY" in both | slurm | gsched) ;; *) echo "--only: slurm or gsched" >&2; exit 2 ;; esac
[[ $(id -u) -eq 0 || $ONLY == gsched ]] || { echo "bench/format-diff.sh: Slurm needs root" >&2; exit 2; }

say() { printf '[format-diff %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { say "$*"; exit 1; }

WORK=$(mktemp -d /tmp/gsched-format-diff.XXXXXX)
chmod 755 "$WORK"
JOBS="$WORK/jobs"
mkdir -p "$JOBS" "$WORK/raw"
BASE_PATH=$PATH
unset SQUEUE_FORMAT SQUEUE_FORMAT2 SQUEUE_SORT SINFO_FORMAT SINFO_SORT SACCT_FORMAT \
  SLURM_TIME_FORMAT SLURM_CONF SQUEUE_ALL SQUEUE_USERS SINFO_PARTITION SLURM_CLUSTERS

# ------------------------------------------------------------------ Slurm
SL_ETC="$WORK/slurm-etc"
SL_UP=0
sl_started_dbd=0
sl_up() {
  say "Slurm: $SLURM_BENCH/setup.sh (no GRES, linuxproc, empty job table)"
  [[ -x $SLURM_BENCH/setup.sh ]] || die "$SLURM_BENCH/setup.sh not found"
  BENCH_GRES=none BENCH_PROCTRACK=linuxproc BENCH_CLEAN=1 "$SLURM_BENCH/setup.sh" >&2
  SL_UP=1
  mkdir -p "$SL_ETC"
  chmod 755 "$SL_ETC"
  cp /etc/slurm/cgroup.conf /etc/slurm/gres.conf "$SL_ETC/"
  sed -e '/^AccountingStorage/d' -e '/^JobCompType=/d' -e '/^JobAcctGatherType=/d' \
    /etc/slurm/slurm.conf >"$SL_ETC/slurm.conf"
  {
    echo "FirstJobId=$FIRST_ID"
    echo "JobCompType=jobcomp/none"
    if ((SACCT)); then
      echo "AccountingStorageType=accounting_storage/slurmdbd"
      echo "AccountingStorageHost=127.0.0.1"
      echo "AccountingStoragePort=$DBD_PORT"
      echo "JobAcctGatherType=jobacct_gather/linux"
    else
      echo "AccountingStorageType=accounting_storage/none"
      echo "JobAcctGatherType=jobacct_gather/none"
    fi
  } >>"$SL_ETC/slurm.conf"
  export SLURM_CONF="$SL_ETC/slurm.conf"
  ((SACCT)) && sl_dbd_up
  say "Slurm: restarting slurmctld/slurmd from $SLURM_CONF"
  "$SLURM_BENCH/stop.sh" --slurm-only >&2
  /usr/sbin/slurmctld -D -c >>"$WORK/slurmctld.out" 2>&1 &
  echo $! >/run/slurm-bench/slurmctld.pid
  local i
  for ((i = 0; i < 150; i++)); do scontrol ping 2>/dev/null | grep -q UP && break; sleep 0.2; done
  scontrol ping | grep -q UP || die "slurmctld did not answer; see $WORK/slurmctld.out"
  /usr/sbin/slurmd -D >>"$WORK/slurmd.out" 2>&1 &
  echo $! >/run/slurm-bench/slurmd.pid
  for ((i = 0; i < 150; i++)); do
    [[ $(sinfo -h -n "$HOST" -o %T 2>/dev/null) == idle ]] && return 0
    sleep 0.2
  done
  die "Slurm node $HOST is not idle; see $WORK/slurmd.out"
}
sl_dbd_up() {
  command -v mariadbd >/dev/null || [[ -x /usr/sbin/mariadbd ]] ||
    die "sacct needs slurmdbd and MariaDB: apt-get install slurmdbd mariadb-server (or --no-sacct)"
  [[ -x /usr/sbin/slurmdbd ]] || die "apt-get install slurmdbd (or --no-sacct)"
  local db="$WORK/mysql" i
  mkdir -p "$db/data" "$db/run"
  chown -R mysql:mysql "$db"
  say "Slurm: a private MariaDB on 127.0.0.1:$DB_PORT and slurmdbd on :$DBD_PORT"
  mariadb-install-db --user=mysql --datadir="$db/data" --auth-root-authentication-method=normal \
    --skip-test-db >"$db/install.log" 2>&1 || die "mariadb-install-db failed; see $db/install.log"
  setpriv --reuid=mysql --regid=mysql --init-groups /usr/sbin/mariadbd --no-defaults \
    --datadir="$db/data" --socket="$db/run/mysqld.sock" --pid-file="$db/run/mysqld.pid" \
    --port=$DB_PORT --bind-address=127.0.0.1 --skip-name-resolve \
    --innodb-buffer-pool-size=128M --innodb-lock-wait-timeout=900 >"$db/mysqld.log" 2>&1 &
  echo $! >"$WORK/mariadbd.pid"
  for ((i = 0; i < 150; i++)); do
    mariadb --no-defaults -S "$db/run/mysqld.sock" -uroot -e 'select 1' >/dev/null 2>&1 && break
    sleep 0.2
  done
  mariadb --no-defaults -S "$db/run/mysqld.sock" -uroot -e \
    "create user 'slurm'@'127.0.0.1' identified by 'format-diff';
     grant all on slurm_acct_db.* to 'slurm'@'127.0.0.1';" ||
    die "MariaDB did not come up; see $db/mysqld.log"
  cat >"$SL_ETC/slurmdbd.conf" <<EOF
AuthType=auth/munge
DbdHost=$HOST
DbdAddr=127.0.0.1
DbdPort=$DBD_PORT
SlurmUser=slurm
LogFile=$WORK/slurmdbd.log
PidFile=$WORK/slurmdbd.slurm.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=format-diff
StorageLoc=slurm_acct_db
EOF
  chown slurm:slurm "$SL_ETC/slurmdbd.conf"
  chmod 600 "$SL_ETC/slurmdbd.conf"
  /usr/sbin/slurmdbd -D >>"$WORK/slurmdbd.out" 2>&1 &
  echo $! >"$WORK/slurmdbd.pid"
  sl_started_dbd=1
  for ((i = 0; i < 100; i++)); do sacctmgr -n list cluster >/dev/null 2>&1 && break; sleep 0.2; done
  sacctmgr -i add cluster bench >/dev/null || die "sacctmgr add cluster failed; see $WORK/slurmdbd.log"
}
# stop_pid FILE COMM: TERM (then KILL) the process a pid file of ours names
stop_pid() {
  local f=$1 comm=$2 pid i
  [[ -s $f ]] || return 0
  pid=$(<"$f")
  [[ -d /proc/$pid && "$(cat "/proc/$pid/comm" 2>/dev/null)" == "$comm" ]] || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 300; i++)); do [[ -d /proc/$pid ]] || break; sleep 0.1; done
  [[ -d /proc/$pid ]] && kill -KILL "$pid" 2>/dev/null
  rm -f "$f"
}
sl_down() {
  ((SL_UP)) || return 0
  SL_UP=0
  say "Slurm: stopping (stop.sh, slurmdbd, mariadbd)"
  scancel -u root >/dev/null 2>&1 || true
  "$SLURM_BENCH/stop.sh" >&2 || true
  if ((sl_started_dbd)); then
    stop_pid "$WORK/slurmdbd.pid" slurmdbd
    stop_pid "$WORK/mariadbd.pid" mariadbd
  fi
}

# ------------------------------------------------------------------ gsched
GS_UP=0
GS_PREFIX="$WORK/gsched-prefix"
gs_up() {
  say "gsched: drop-in names from $GS_BIN, local cluster with node $HOST"
  "$ROOT/scripts/install.sh" --prefix "$GS_PREFIX" --slurm-names --from "$GS_BIN" --force >/dev/null
  export GSCHED_LOCAL_BIN="$GS_BIN" GSCHED_LOCAL_NODES="$HOST" GSCHED_LOCAL_CPUS=64 \
    GSCHED_LOCAL_MEM_MB=200000 GSCHED_LOCAL_CLUSTER=bench \
    GSCHED_LOCAL_CONF_EXTRA="FirstJobId=$FIRST_ID"
  "$ROOT/scripts/local-cluster.sh" down >/dev/null 2>&1 || true
  rm -rf "$ROOT/.local-cluster/state" "$ROOT/.local-cluster/gsched.conf" "$ROOT/.local-cluster/spool"
  GS_UP=1
  "$ROOT/scripts/local-cluster.sh" up >"$WORK/local-cluster.out" 2>&1 ||
    { cat "$WORK/local-cluster.out" >&2; die "the local cluster did not start"; }
  export GSCHED_CONF="$ROOT/.local-cluster/gsched.conf"
}
gs_down() {
  ((GS_UP)) || return 0
  GS_UP=0
  say "gsched: stopping the local cluster"
  PATH="$GS_PREFIX/bin:$BASE_PATH" scancel -u "$(id -un)" >/dev/null 2>&1 || true
  "$ROOT/scripts/local-cluster.sh" down >&2 || true
}

cleanup() {
  if ((KEEP)); then
    say "--keep: clusters left running; scratch folder $WORK"
    return
  fi
  gs_down
  sl_down
  rm -rf "$WORK"
}
trap cleanup EXIT

# ------------------------------------------------------------------ the job set
LONG_NAME=a_rather_long_job_name_to_check_column_widths
# id of the first job called NAME (pending, running or finished within MinJobAge)
id_of() { squeue -h -t all -o '%A %j' | awk -v n="$1" '$2 == n { print $1 }' | sort -n | head -n1; }
wait_gone() {  # wait_gone ID: not pending/running/completing any more
  local i
  for ((i = 0; i < 600; i++)); do
    [[ -z "$(squeue -h -j "$1" -o %i 2>/dev/null)" ]] && return 0
    sleep 0.1
  done
  die "job $1 did not finish"
}
wait_state() {  # wait_state ID STATE
  local i
  for ((i = 0; i < 600; i++)); do
    [[ "$(squeue -h -j "$1" -o %T 2>/dev/null | sort -u)" == "$2" ]] && return 0
    sleep 0.1
  done
  die "job $1 is not $2: $(squeue -h -j "$1" -o %T 2>&1 | sort -u | paste -sd,)"
}
sb() { sbatch --parsable --mem=100M "$@" | cut -d';' -f1; }

jobset() {  # jobset SYS: submits the set, waits until it has settled; sets ID_*
  local sys=$1
  cd "$JOBS"
  if [[ $sys == slurm ]]; then
    # the local cluster ran examples/hello.sh as its first job
    ID_hello=$(sbatch --parsable "$ROOT/examples/hello.sh")
  else
    ID_hello=$(id_of hello)
  fi
  wait_gone "$ID_hello"
  ID_ok=$(sb -J ok -t 5 --wrap true); wait_gone "$ID_ok"
  ID_fail=$(sb -J fail -t 5 --wrap 'exit 3'); wait_gone "$ID_fail"
  ID_cancelled=$(sb -H -J cancelled -t 5 --wrap true)
  scancel "$ID_cancelled"; wait_gone "$ID_cancelled"
  ID_run=$(sb -J run -t 30 --wrap 'sleep 900')
  ID_held=$(sb -H -J held -t 10 --wrap true)
  ID_long=$(sb -J "$LONG_NAME" -c 2 -t 20 --wrap 'sleep 900')
  wait_state "$ID_run" RUNNING
  wait_state "$ID_long" RUNNING
  ID_big=$(sb -J big -c 64 -t 10 --wrap true)
  ID_arr=$(sb -J arr --array=0-3%2 -t 15 --wrap 'sleep 900')
  local i
  for ((i = 0; i < 600; i++)); do
    [[ $(squeue -h -r -j "$ID_arr" -t R -o %i | wc -l) -eq 2 ]] && break
    sleep 0.1
  done
  # Slurm's backfill pass (every 30 s) sets the pending jobs' expected start times
  say "$sys: job set submitted (ids $ID_hello..$ID_arr); waiting for start estimates"
  for ((i = 0; i < 450; i++)); do
    [[ "$(squeue -h -j "$ID_big" -o %S)" != N/A ]] && break
    sleep 0.1
  done
  # slurmdbd records the array tasks' starts a few seconds after the fact
  sleep 5
  cd "$ROOT"
}

# ------------------------------------------------------------------ the captures
# NAME|COMMAND (run with eval, stdout and stderr together; a non-zero exit is noted)
captures() {
  cat <<EOF
version|sbatch -V; squeue -V; sinfo -V; sacct -V; scontrol -V; scancel -V; srun -V
squeue|squeue
squeue-l|squeue -l
squeue-o|squeue -o "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R"
squeue-o-more|squeue -o "%.10A %.10F %.6K %.20j %.10T %.10l %.10L %.5C %.6m %.8Q %R"
squeue-O|squeue -O JobID,Partition,Name,UserName,State,TimeUsed,TimeLimit,NumNodes,NumCPUs,MinMemory,ReasonList
squeue-O-widths|squeue -O "JobArrayID:16,ArrayJobID:.10,ArrayTaskID:.8,Name:50,StateCompact:.3,Reason"
squeue-start|squeue --start
squeue-r|squeue -r
squeue-t-all|squeue -t all
squeue-parsable|squeue -h -t all -r -o "%i|%A|%F|%K|%j|%T|%r|%C|%D|%m|%l"
squeue-j|squeue -j $ID_big,$ID_held
squeue-u-PD|squeue -u root -t PD
squeue-steps|squeue -s
squeue-unknown|squeue -j 99999
sinfo|sinfo
sinfo-l|sinfo -l
sinfo-N|sinfo -N
sinfo-N-l|sinfo -N -l
sinfo-s|sinfo -s
sinfo-R|sinfo -R
sinfo-o|sinfo -o "%P %.5a %.10l %.6D %.6t %N %c %m %z %C"
sinfo-O|sinfo -O "Partition,Available,Time,Nodes,StateLong,NodeList,CPUsState,Memory"
sinfo-N-o|sinfo -h -N -o "%N %T %C %c %m"
sacct|sacct
sacct-X|sacct -X
sacct-X-P|sacct -X -P -o JobID,JobIDRaw,JobName,Partition,Account,AllocCPUS,State,ExitCode,Elapsed,Timelimit,ReqMem,NNodes,NodeList
sacct-snakemake|sacct -X -n -P -o JobIdRaw,State
sacct-widths|sacct -o JobID%20,JobName%50,State%-12,ExitCode
sacct-j|sacct -j $ID_fail,$ID_cancelled
sacct-s|sacct -X -s F,CA
sacct-s-pd|sacct -n -X -P -o JobID,State -s PD,R
sacct-array|sacct -X -j $ID_arr
sacct-l|sacct -l -j $ID_ok
sacct-never-ran|sacct -X -P -j $ID_cancelled,$ID_held -o JobID,State,Start,End,Elapsed,AllocCPUS,AllocNodes,AllocTRES,NodeList,ReqMem,Eligible
sacct-unknown|sacct -j 99999
scontrol-job-run|scontrol show job $ID_run
scontrol-job-held|scontrol show job $ID_held
scontrol-job-ok|scontrol show job $ID_ok
scontrol-job-fail|scontrol show job $ID_fail
scontrol-job-cancelled|scontrol show job $ID_cancelled
scontrol-job-big|scontrol show job $ID_big
scontrol-job-array|scontrol show job ${ID_arr}_0
scontrol-job-oneliner|scontrol -o show job $ID_long
scontrol-node|scontrol show node $HOST
scontrol-partition|scontrol show partition
scontrol-config|scontrol show config
scontrol-ping|scontrol ping
scontrol-hostnames|scontrol show hostnames "$HOST,n[1-3]"
scontrol-unknown|scontrol show job 99999
EOF
}

capture() {  # capture SYS
  local sys=$1 dir="$WORK/raw/$1" name cmd rc
  mkdir -p "$dir"
  jobset "$sys"
  # every id of the run (array tasks included) and its label, four characters as an id
  {
    local role v
    for role in hello:Jhel ok:Jokk fail:Jfal cancelled:Jcan run:Jrun held:Jhld long:Jlng \
      big:Jbig arr:Jarr; do
      v="ID_${role%%:*}"
      echo "${!v} ${role#*:}"
    done
    squeue -h -t all -r -j "$ID_arr" -o '%A' | sed 's/$/ Jarr/'
  } >"$dir/labels"
  while IFS='|' read -r name cmd; do
    rc=0
    (cd "$JOBS" && eval "$cmd") >"$dir/$name.txt" 2>&1 || rc=$?
    ((rc == 0)) || echo "[exit status $rc]" >>"$dir/$name.txt"
  done < <(captures)
  captures | sed "s/\$ID_\([a-z]*\)/<\1>/g; s/\${ID_\([a-z]*\)}/<\1>/g; s/\"\$HOST/\"<host>/" >"$WORK/commands.txt"
  mkdir -p "$OUT/$sys"
  rm -f "$OUT/$sys"/*.txt
  for f in "$dir"/*.txt; do
    name=$(basename "$f" .txt)
    local extra=()
    [[ $name == scontrol-config ]] && extra=(--config)
    python3 "$ROOT/bench/format-mask.py" --labels "$dir/labels" --work "$WORK" "${extra[@]}" \
      <"$f" >"$OUT/$sys/$name.txt"
  done
  say "$sys: $(ls "$dir" | grep -c '\.txt$') captures written to $OUT/$sys"
}

mkdir -p "$OUT"
if [[ $ONLY != gsched ]]; then
  sl_up
  PATH="/usr/bin:$BASE_PATH" capture slurm
  ((KEEP)) || sl_down
  unset SLURM_CONF
fi
if [[ $ONLY != slurm ]]; then
  gs_up
  PATH="$GS_PREFIX/bin:$BASE_PATH" capture gsched
  ((KEEP)) || gs_down
fi
cp "$WORK/commands.txt" "$OUT/commands.txt"

# ------------------------------------------------------------------ the diff
: >"$OUT/format.diff"
{
  echo "# capture: same | differs (lines -Slurm/+gsched)"
  while IFS='|' read -r name _; do
    if [[ ! -e $OUT/slurm/$name.txt || ! -e $OUT/gsched/$name.txt ]]; then
      echo "$name: missing"
      continue
    fi
    if d=$(diff -u --label "slurm/$name" --label "gsched/$name" "$OUT/slurm/$name.txt" "$OUT/gsched/$name.txt"); then
      echo "$name: same"
    else
      printf '%s\n' "$d" >>"$OUT/format.diff"
      echo "$name: differs ($(grep -c '^-[^-]' <<<"$d" || true)/$(grep -c '^+[^+]' <<<"$d" || true))"
    fi
  done < <(cut -d'|' -f1,2 "$OUT/commands.txt")
} >"$OUT/summary.txt"
cat "$OUT/summary.txt"
say "written to $OUT (format.diff, summary.txt)"
