#!/usr/bin/env bash
# A gsched cluster on this machine in one command: a controller (gsctld) and two node daemons
# (gsnoded -N n1, -N n2) on loopback, everything under .local-cluster/ in the repository
# (config, state, spool, logs, pids, job outputs). Authentication is AuthType=auth/munge with
# a private munged (own key and socket in .local-cluster/munge/) when MUNGE is installed and
# munged can use a socket there (every directory above it searchable by all), else
# AuthType=auth/none (this user only, loopback only).
#
#   scripts/local-cluster.sh up       build, configure, start (if not running), run examples/hello.sh
#   scripts/local-cluster.sh status   what runs, gsinfo, gsqueue
#   scripts/local-cluster.sh down     stop the daemons and the jobs still running
#
# Idempotent: `up` on a running cluster keeps it and runs the example again. Works as root
# (jobs run as root) and as an ordinary user (jobs run as that user).
#
# Environment:
#   GSCHED_LOCAL_PORT   first port to try (default 16817): controller, then the nodes; if
#                       those are taken, the next free block is used
#   CARGO_TARGET_DIR    honoured: the binaries are taken from $CARGO_TARGET_DIR/release
#   GSCHED_NO_BUILD=1   skip `cargo build --release --bins`
#   GSCHED_LOCAL_AUTH   munge or none: force one (default: munge when usable, else none)
#   GSCHED_LOCAL_CPUS   CPUs each node declares (default: the machine's, split over the nodes)
#   GSCHED_LOCAL_MEM_MB memory each node declares (default: 3/4 of the machine's, split)
#   GSCHED_LOCAL_NODES  the node names, space or comma separated (default "n1 n2"); read
#                       when the config is written, later commands take them from the config
#   GSCHED_LOCAL_CLUSTER ClusterName (default local)
#   GSCHED_LOCAL_CONF_EXTRA lines appended to the config (e.g. "FirstJobId=1000")
#   GSCHED_LOCAL_BIN    take the binaries from this folder instead of building
#                       (e.g. target/debug); implies GSCHED_NO_BUILD=1
#   GSCHED_LOCAL_DIR    the cluster's folder instead of .local-cluster/ (a second cluster
#                       beside the first, as tests/tests/local_cluster.rs starts one)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${GSCHED_LOCAL_DIR:-$ROOT/.local-cluster}"
case "$DIR" in /*) ;; *) DIR="$PWD/$DIR" ;; esac
CONF="$DIR/gsched.conf"
LOG="$DIR/log"
RUN="$DIR/run"
JOBS="$DIR/jobs"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
case "$TARGET" in /*) ;; *) TARGET="$ROOT/$TARGET" ;; esac
BIN="${GSCHED_LOCAL_BIN:-$TARGET/release}"
case "$BIN" in /*) ;; *) BIN="$PWD/$BIN" ;; esac
[[ -n "${GSCHED_LOCAL_BIN:-}" ]] && GSCHED_NO_BUILD=1
BASE_PORT="${GSCHED_LOCAL_PORT:-16817}"
# The node names: those of the existing config (what may be running); a new config takes
# GSCHED_LOCAL_NODES (wanted_nodes).
NODES=(n1 n2)
if [[ -s $CONF ]] && grep -q '^NodeName=' "$CONF"; then
  mapfile -t NODES < <(sed -n 's/^NodeName=\([^ ]*\) .*/\1/p' "$CONF")
fi
wanted_nodes() {
  local -a w
  local names="${GSCHED_LOCAL_NODES:-}"
  read -ra w <<<"${names//,/ }"
  ((${#w[@]})) || w=(n1 n2)
  NODES=("${w[@]}")
}
MUNGE_DIR="$DIR/munge"
MUNGE_SOCK="$MUNGE_DIR/run/munge.socket"

if [[ -t 1 ]]; then
  say() { printf '\033[1m==>\033[0m %s\n' "$*"; }
else
  say() { printf '==> %s\n' "$*"; }
fi
warn() { printf 'local-cluster: %s\n' "$*" >&2; }
die() { warn "$*"; exit 1; }

# alive NAME COMM: the pid file run/NAME.pid names a live process called COMM
alive() {
  local f="$RUN/$1.pid" pid
  [[ -s $f ]] || return 1
  pid=$(<"$f")
  [[ -d /proc/$pid ]] && [[ "$(cat "/proc/$pid/comm" 2>/dev/null)" == "$2" ]]
}

any_alive() {
  local n
  alive gsctld gsctld && return 0
  for n in "${NODES[@]}"; do alive "gsnoded-$n" gsnoded && return 0; done
  return 1
}

# port_busy PORT: something listens on 127.0.0.1:PORT
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# conf_port KEY [NODE]: a port from the existing config
conf_ctld_port() { sed -n 's/^SlurmctldPort=\([0-9]*\).*/\1/p' "$CONF" | head -n1; }
conf_node_port() { sed -n "s/^NodeName=$1 .*Port=\\([0-9]*\\).*/\\1/p" "$CONF" | head -n1; }

env_for_commands() {
  export GSCHED_CONF="$CONF"
  export PATH="$BIN:$PATH"
}

build() {
  if [[ "${GSCHED_NO_BUILD:-0}" == 1 ]]; then
    say "skipping the build (GSCHED_NO_BUILD=1)"
  else
    command -v cargo >/dev/null || die "cargo not found: install Rust (https://rustup.rs) and try again"
    say "building (cargo build --release --bins; the first build takes a few minutes)"
    (cd "$ROOT" && cargo build --release --bins)
    say "building the static gsstepd and gsbatch (scripts/build-static.sh --release)"
    "$ROOT/scripts/build-static.sh" --release >/dev/null
  fi
  local b
  for b in gsctld gsnoded gsstepd gsbatch gsqueue gsinfo gscontrol gscancel gsacct gsacctmgr gsprio gseff gsstat gsshare; do
    [[ -x "$BIN/$b" ]] || die "$BIN/$b is missing after the build"
  done
}

# Picks 1 + (number of nodes) ports: the config's own when it exists and they are free (or
# ours), else consecutive ones from GSCHED_LOCAL_PORT upwards. Sets CTLD_PORT and
# NODE_PORT[i] for NODES[i].
choose_ports() {
  local p i k ok n=$((${#NODES[@]} + 1))
  NODE_PORT=()
  if [[ -s $CONF ]] && [[ -z "${GSCHED_LOCAL_PORT:-}" ]]; then
    CTLD_PORT=$(conf_ctld_port)
    ok=1
    [[ -n $CTLD_PORT ]] || ok=0
    for ((k = 0; k < ${#NODES[@]}; k++)); do
      NODE_PORT[k]=$(conf_node_port "${NODES[k]}")
      [[ -n ${NODE_PORT[k]} ]] || ok=0
    done
    if ((ok)); then
      for p in "$CTLD_PORT" "${NODE_PORT[@]}"; do port_busy "$p" && ok=0; done
      ((ok)) && return 0
    fi
  fi
  for ((i = 0; i < 100; i++)); do
    p=$((BASE_PORT + n * i))
    ((p + n - 1 < 65536)) || break
    ok=1
    for ((k = 0; k < n; k++)); do port_busy $((p + k)) && { ok=0; break; }; done
    if ((ok)); then
      CTLD_PORT=$p
      for ((k = 1; k < n; k++)); do NODE_PORT[k - 1]=$((p + k)); done
      ((i == 0)) || warn "ports $BASE_PORT-$((BASE_PORT + n - 1)) are taken; using $p-$((p + n - 1))"
      return 0
    fi
  done
  die "no $n free ports found from $BASE_PORT upwards; set GSCHED_LOCAL_PORT"
}

munged_bin() {
  command -v munged 2>/dev/null && return 0
  [[ -x /usr/sbin/munged ]] && echo /usr/sbin/munged
  return 0
}

# Sets AUTH to auth/munge or auth/none (see the top of this file).
choose_auth() {
  local want=${GSCHED_LOCAL_AUTH:-auto} why="" d
  case $want in
    none) AUTH=auth/none; return 0 ;;
    munge | auto) ;;
    *) die "GSCHED_LOCAL_AUTH=$want: use munge or none" ;;
  esac
  if [[ -z $(munged_bin) ]]; then
    why="munged is not installed (Debian/Ubuntu: apt-get install munge)"
  else
    d=$DIR
    while [[ $d != / ]]; do
      d=$(dirname "$d")
      case $(stat -c %A "$d") in
        *x | *t) ;;
        *) why="munged needs every directory above its socket searchable by all, and $d is not"; break ;;
      esac
    done
  fi
  if [[ -z $why ]]; then
    AUTH=auth/munge
  elif [[ $want == munge ]]; then
    die "GSCHED_LOCAL_AUTH=munge: $why"
  else
    AUTH=auth/none
    say "using AuthType=auth/none: $why"
  fi
}

# A private munged: its own key, socket, pid and log in .local-cluster/.
start_munged() {
  local m i
  if alive munged munged; then return 0; fi
  m=$(munged_bin)
  mkdir -p "$MUNGE_DIR/run"
  chmod 0711 "$DIR" "$MUNGE_DIR"
  chmod 0755 "$MUNGE_DIR/run"
  if [[ ! -s $MUNGE_DIR/munge.key ]]; then
    (umask 077 && head -c 1024 /dev/urandom >"$MUNGE_DIR/munge.key")
  fi
  rm -f "$MUNGE_SOCK"
  say "starting a private munged (socket $MUNGE_SOCK)"
  "$m" --key-file="$MUNGE_DIR/munge.key" --socket="$MUNGE_SOCK" --pid-file="$RUN/munged.pid" \
    --log-file="$MUNGE_DIR/munged.log" --seed-file="$MUNGE_DIR/munged.seed" ||
    die "munged did not start; see $MUNGE_DIR/munged.log, or run with GSCHED_LOCAL_AUTH=none"
  for ((i = 0; i < 100; i++)); do [[ -S $MUNGE_SOCK ]] && return 0; sleep 0.1; done
  die "munged did not create $MUNGE_SOCK; see $MUNGE_DIR/munged.log"
}

write_config() {
  local cpus mem_mb c m user k nn=${#NODES[@]} nodelines=""
  cpus=$(getconf _NPROCESSORS_ONLN 2>/dev/null || nproc 2>/dev/null || echo 2)
  mem_mb=$(awk '/^MemTotal:/ { print int($2 / 1024) }' /proc/meminfo 2>/dev/null || echo 2048)
  # The nodes share the machine: CPUs split (at least one each), three quarters of the
  # memory split (at least 256 MiB each).
  m=$((mem_mb * 3 / 4 / nn)); ((m >= 256)) || m=256
  if [[ -n ${GSCHED_LOCAL_MEM_MB:-} ]]; then m=$GSCHED_LOCAL_MEM_MB; fi
  for ((k = 0; k < nn; k++)); do
    c=$(((cpus + nn - 1 - k) / nn)); ((c >= 1)) || c=1
    if [[ -n ${GSCHED_LOCAL_CPUS:-} ]]; then c=$GSCHED_LOCAL_CPUS; fi
    nodelines+="NodeName=${NODES[k]} NodeAddr=127.0.0.1 Port=${NODE_PORT[k]} CPUs=$c RealMemory=$m"$'\n'
  done
  user=$(id -un)
  mkdir -p "$DIR/state" "$DIR/spool" "$LOG" "$RUN" "$JOBS"
  cat >"$CONF.new" <<EOF
# gsched local cluster, written by scripts/local-cluster.sh (rewritten by every \`up\`
# while the cluster is down). Syntax: slurm.conf; see man/man5/gsched.conf.5.
ClusterName=${GSCHED_LOCAL_CLUSTER:-local}
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$CTLD_PORT
AuthType=$AUTH
$([[ $AUTH == auth/munge ]] && echo "AuthInfo=socket=$MUNGE_SOCK")
SlurmUser=$user
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool/%n
KillWait=10
MinJobAge=300
# As the reference Slurm cluster of the benchmarks (Slurm's defaults are 10000 and 1001).
MaxJobCount=200000
MaxArraySize=10001
${nodelines}PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
${GSCHED_LOCAL_CONF_EXTRA:-}
EOF
  mv "$CONF.new" "$CONF"
}

# start NAME BINARY ARGS...: in its own session, so that a Ctrl-C in this terminal spares it
start_daemon() {
  local name=$1 bin=$2; shift 2
  echo "=== local-cluster: starting $bin $* at $(date -Is) ===" >>"$LOG/$name.log"
  setsid "$BIN/$bin" "$@" </dev/null >>"$LOG/$name.log" 2>&1 &
  echo $! >"$RUN/$name.pid"
}

show_logs() {
  local f
  for f in "$LOG"/*.log; do
    [[ -e $f ]] || continue
    echo "----- last lines of $f -----" >&2
    tail -n 20 "$f" >&2
  done
}

# The controller answers and every node is registered: every row of gsinfo's default
# layout (PARTITION AVAIL TIMELIMIT NODES STATE NODELIST) is idle, mix or alloc.
ready() {
  local out
  out=$(gsinfo 2>/dev/null) || return 1
  awk 'NR > 1 { rows++; if ($5 !~ /^(idle|mix|alloc)$/) bad = 1 } END { exit (bad || !rows) }' <<<"$out"
}

wait_ready() {
  local i
  for ((i = 0; i < 300; i++)); do
    ready && return 0
    if ! alive gsctld gsctld; then
      show_logs; die "gsctld exited; see $LOG/gsctld.log"
    fi
    for n in "${NODES[@]}"; do
      if ! alive "gsnoded-$n" gsnoded; then
        show_logs; die "gsnoded $n exited; see $LOG/gsnoded-$n.log"
      fi
    done
    sleep 0.1
  done
  show_logs
  die "the cluster did not come up within 30 s; logs are in $LOG"
}

cmd_up() {
  build
  env_for_commands
  mkdir -p "$DIR/state" "$DIR/spool" "$LOG" "$RUN" "$JOBS"
  local n all=1
  alive gsctld gsctld || all=0
  for n in "${NODES[@]}"; do alive "gsnoded-$n" gsnoded || all=0; done
  if ((all)); then
    say "the local cluster is already running (config $CONF)"
    if grep -q '^AuthType=auth/munge' "$CONF"; then start_munged; fi
  else
    if any_alive; then
      say "part of the cluster is running; restarting it"
      cmd_down >/dev/null
    fi
    wanted_nodes
    choose_ports
    choose_auth
    write_config
    [[ $AUTH == auth/munge ]] && start_munged
    say "starting gsctld on 127.0.0.1:$CTLD_PORT and gsnoded ${NODES[*]} on :${NODE_PORT[*]}"
    start_daemon gsctld gsctld -D -f "$CONF"
    # The node daemons register with the controller once it answers.
    # The static gsstepd when it was built (scripts/build-static.sh), as installed nodes run.
    local stepd="$TARGET/x86_64-unknown-linux-musl/$(basename "$BIN")/gsstepd"
    if [[ -x $stepd && -z ${GSCHED_LOCAL_BIN:-} ]]; then export GSCHED_STEPD="$stepd"; fi
    for n in "${NODES[@]}"; do start_daemon "gsnoded-$n" gsnoded -D -f "$CONF" -N "$n"; done
  fi
  wait_ready
  gsinfo
  echo

  say "submitting examples/hello.sh (from $JOBS)"
  local id state out
  id=$(cd "$JOBS" && gsbatch --parsable "$ROOT/examples/hello.sh")
  id=${id%%;*}
  echo "Submitted batch job $id"
  gsqueue
  echo
  say "waiting for job $id to finish"
  for ((i = 0; i < 600; i++)); do
    [[ -z "$(gsqueue -h -j "$id" 2>/dev/null)" ]] && break
    sleep 0.1
  done
  state=$(gscontrol show job "$id" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | head -n1 || true)
  echo "job $id: ${state:-state unknown}"
  out="$JOBS/slurm-$id.out"
  if [[ -s $out ]]; then
    say "output of job $id ($out):"
    sed 's/^/    /' "$out"
  else
    warn "no output file $out yet; see $LOG"
  fi
  echo
  cat <<EOF
The local cluster is up. To use it from this shell:

    export GSCHED_CONF=$CONF
    export PATH=$BIN:\$PATH
    gsbatch --wrap 'hostname'
    gsqueue; gsinfo; gscontrol show job <id>; gscancel <id>

Job outputs go to slurm-<jobid>.out in the directory you submit from.
Daemon logs: $LOG/. Stop it with: make cluster-down
EOF
}

# Pids of the processes whose command line contains $1, and all their descendants.
tree_of_cmdline() {
  local needle=$1 d pid ppid rest cmd
  declare -A parent=()
  local -a roots=()
  for d in /proc/[0-9]*; do
    pid=${d#/proc/}
    rest=$(cat "$d/stat" 2>/dev/null) || continue
    rest=${rest##*) }
    read -r _ ppid _ <<<"$rest"
    parent[$pid]=$ppid
    cmd=$(tr '\0' ' ' <"$d/cmdline" 2>/dev/null) || continue
    [[ $pid != "$$" && $cmd == *"$needle"* ]] && roots+=("$pid")
  done
  local -a out=("${roots[@]}")
  local changed=1 p q
  while ((changed)); do
    changed=0
    for p in "${!parent[@]}"; do
      [[ " ${out[*]} " == *" $p "* ]] && continue
      q=${parent[$p]}
      if [[ " ${out[*]} " == *" $q "* ]]; then out+=("$p"); changed=1; fi
    done
  done
  ((${#out[@]})) && printf '%s\n' "${out[@]}"
  return 0
}

stop_one() {  # stop_one NAME COMM
  local f="$RUN/$1.pid" pid i
  if ! alive "$1" "$2"; then rm -f "$f"; return 0; fi
  pid=$(<"$f")
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do [[ -d /proc/$pid ]] || break; sleep 0.1; done
  if [[ -d /proc/$pid ]]; then kill -KILL "$pid" 2>/dev/null || true; fi
  echo "stopped $1 (pid $pid)"
  rm -f "$f"
}

cmd_down() {
  local n pids
  for n in "${NODES[@]}"; do stop_one "gsnoded-$n" gsnoded; done
  stop_one gsctld gsctld
  stop_one munged munged
  # Jobs still running: their gsstepd was started with its job folder under our spool dir.
  pids=$(tree_of_cmdline "$DIR/spool/")
  if [[ -n $pids ]]; then
    echo "killing the jobs left running: $(echo "$pids" | tr '\n' ' ')"
    # shellcheck disable=SC2086
    kill -STOP $pids 2>/dev/null || true
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
  fi
  echo "the local cluster is stopped (state kept in $DIR; rm -rf $DIR to start afresh)"
}

cmd_status() {
  local n st=0
  for n in gsctld "${NODES[@]/#/gsnoded-}"; do
    if alive "$n" "${n%%-*}"; then echo "$n: running (pid $(<"$RUN/$n.pid"))"
    else echo "$n: not running"; st=1; fi
  done
  if [[ -s $CONF ]] && grep -q '^AuthType=auth/munge' "$CONF"; then
    if alive munged munged; then echo "munged: running (pid $(<"$RUN/munged.pid"))"
    else echo "munged: not running"; st=1; fi
  fi
  [[ -s $CONF ]] && echo "config: $CONF"
  if ((st == 0)); then
    env_for_commands
    echo; gsinfo; echo; gsqueue
  else
    echo "start it with: make cluster"
  fi
  return $st
}

case "${1:-}" in
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
