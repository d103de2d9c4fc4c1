#!/usr/bin/env bash
# GPU check on a real NVIDIA machine (issue 6, deliverable 7). Starts a one-node gsched
# cluster on this machine whose node finds its GPUs through NVML (gres.conf AutoDetect=nvml),
# runs one whole-GPU job and two MPS-shared jobs (--gpu-mem, --gpu-share), and records what
# each saw: nvidia-smi, the GPU environment, which GPU device files it could open, and how
# much GPU memory it could allocate (the MPS jobs must hit their pinned-memory limit).
#
#   tests/gpu/device-check.sh OUTDIR
#
# Everything goes to OUTDIR: run.log (this script's output), summary.txt (one PASS/FAIL/SKIP
# line per check), nvidia-smi*.txt, node.txt, the jobs' outputs and the daemons' logs.
# Exit status: 0 when every check passed or was skipped, 1 otherwise.
#
# Needs: an NVIDIA GPU and driver (nvidia-smi, libnvidia-ml.so.1, libcuda.so.1), cc, cargo
# (unless GSCHED_BIN names built binaries), and for the MPS part nvidia-cuda-mps-control.
# As root the jobs get cgroups (ConstrainDevices=yes: v1 devices.deny, or an eBPF program on
# cgroup v2); as another user they run unconfined and the device-file check is skipped.
#
# Environment:
#   GSCHED_BIN       folder with gsctld, gsnoded, gsstepd, gsbatch, ... (default: build
#                    target/release with cargo)
#   MPS_MEM          GPU memory of each MPS job (default 4G); each tries to allocate 2 GiB more
#   GSCHED_PORT      first port to try (default 17817)
#
# It cannot run where there is no NVIDIA GPU (such as the machine it was written on): it says
# so and exits 0 with every check SKIPped.
set -uo pipefail

OUT="${1:-}"
[[ -n $OUT ]] || { echo "usage: $0 OUTDIR" >&2; exit 2; }
mkdir -p "$OUT" || exit 2
OUT="$(cd "$OUT" && pwd)"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
exec > >(tee "$OUT/run.log") 2>&1

SUMMARY="$OUT/summary.txt"
: >"$SUMMARY"
FAILED=0
result() { # result PASS|FAIL|SKIP text
  printf '%-4s %s\n' "$1" "$2" | tee -a "$SUMMARY"
  [[ $1 == FAIL ]] && FAILED=1
  return 0
}
say() { printf '==> %s\n' "$*"; }

if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  result SKIP "no NVIDIA GPU or driver here (nvidia-smi missing or failing): nothing checked"
  exit 0
fi

WORK="$(mktemp -d /tmp/gsched-device-check.XXXXXX)"
chmod 755 "$WORK"
PIDS=()
cleanup() {
  local p
  if [[ -n ${BIN:-} && -x $BIN/gscancel ]]; then
    GSCHED_CONF="$WORK/gsched.conf" "$BIN/gscancel" -u "$(id -un)" >/dev/null 2>&1 || true
    sleep 2
  fi
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  cp -r "$WORK/log" "$OUT/daemon-logs" 2>/dev/null || true
}
trap cleanup EXIT

# ------------------------------------------------------------------ what the machine has
say "recording nvidia-smi"
nvidia-smi >"$OUT/nvidia-smi.txt" 2>&1
nvidia-smi -L >"$OUT/nvidia-smi-L.txt" 2>&1
nvidia-smi -q >"$OUT/nvidia-smi-q.txt" 2>&1
NGPU=$(grep -c '^GPU ' "$OUT/nvidia-smi-L.txt")
say "$NGPU GPU(s): $(head -1 "$OUT/nvidia-smi-L.txt")"
HAVE_MPS=1
command -v nvidia-cuda-mps-control >/dev/null || HAVE_MPS=0

# ------------------------------------------------------------------ binaries
if [[ -n ${GSCHED_BIN:-} ]]; then
  BIN="$GSCHED_BIN"
else
  say "building (cargo build --release --bins)"
  (cd "$ROOT" && cargo build --release --bins) || { result FAIL "build"; exit 1; }
  BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release"
fi
for b in gsctld gsnoded gsstepd gsbatch gsqueue gscontrol gscancel gsacct; do
  [[ -x $BIN/$b ]] || { result FAIL "missing $BIN/$b"; exit 1; }
done
cc -O2 -o "$WORK/cuda_alloc" "$ROOT/tests/gpu/cuda_alloc.c" -ldl || { result FAIL "cannot compile cuda_alloc.c"; exit 1; }
chmod 755 "$WORK/cuda_alloc"

# ------------------------------------------------------------------ a one-node cluster
free_port() {
  local p=$1
  while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do p=$((p + 1)); done
  echo "$p"
}
CTLD_PORT=$(free_port "${GSCHED_PORT:-17817}")
NODE_PORT=$(free_port $((CTLD_PORT + 1)))
CPUS=$(nproc)
MEM_MB=$(awk '/MemTotal/ {print int($2 / 1024 * 0.8)}' /proc/meminfo)
mkdir -p "$WORK/state" "$WORK/spool" "$WORK/log" "$WORK/jobs"
chmod 777 "$WORK/jobs"
cat >"$WORK/gsched.conf" <<EOF
ClusterName=devcheck
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$CTLD_PORT
AuthType=auth/none
SlurmUser=$(id -un)
StateSaveLocation=$WORK/state
SlurmdSpoolDir=$WORK/spool/%n
KillWait=5
GpuSampleInterval=5
NodeName=n1 NodeAddr=127.0.0.1 Port=$NODE_PORT CPUs=$CPUS RealMemory=$MEM_MB Gres=gpu:$NGPU
PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
cat >"$WORK/gres.conf" <<EOF
AutoDetect=nvml
Name=mps Count=$((100 * NGPU))
EOF
CONFINED=0
if [[ $(id -u) == 0 && -f /sys/fs/cgroup/devices/devices.deny ]]; then
  printf 'CgroupPlugin=cgroup/v1\nConstrainDevices=yes\nCgroupSubdir=gsched-devcheck_%%n\n' >"$WORK/cgroup.conf"
  CONFINED=1
elif [[ $(id -u) == 0 && -f /sys/fs/cgroup/cgroup.controllers ]]; then
  # cgroup v2: the devices cgroup is an eBPF program gsnoded attaches to each job's cgroup.
  printf 'CgroupPlugin=cgroup/v2\nConstrainDevices=yes\nCgroupSubdir=gsched-devcheck_%%n\n' >"$WORK/cgroup.conf"
  CONFINED=1
fi
cp "$WORK"/*.conf "$OUT/"
export GSCHED_CONF="$WORK/gsched.conf"

say "starting gsctld and gsnoded"
"$BIN/gsctld" -D -f "$GSCHED_CONF" >"$WORK/log/gsctld.log" 2>&1 &
PIDS+=($!)
sleep 1
GSCHED_STEPD="$BIN/gsstepd" "$BIN/gsnoded" -D -f "$GSCHED_CONF" -N n1 >"$WORK/log/gsnoded.log" 2>&1 &
PIDS+=($!)
up=0
for _ in $(seq 60); do
  if "$BIN/gscontrol" show node n1 2>/dev/null | grep -q 'State=IDLE'; then up=1; break; fi
  sleep 1
done
"$BIN/gscontrol" show node n1 >"$OUT/node.txt" 2>&1
grep -E 'GPU|NVML' "$WORK/log/gsnoded.log" >"$OUT/gsnoded-gpus.txt" 2>/dev/null
if [[ $up == 0 ]]; then
  result FAIL "the node did not come up (see daemon-logs/)"
  exit 1
fi
if grep -q "node n1 has $NGPU GPU(s)" "$WORK/log/gsnoded.log"; then
  result PASS "NVML autodetect: the node found $NGPU GPU(s) ($(grep -o 'Gres=[^)]*' "$WORK/log/gsnoded.log" | tail -1))"
else
  result FAIL "NVML autodetect: the node did not report $NGPU GPU(s) (see gsnoded-gpus.txt)"
fi

# ------------------------------------------------------------------ the jobs
probe() { # probe NAME ALLOC_MIB: a job script
  cat <<EOF
#!/bin/sh
echo "== env"; env | grep -E '^(CUDA|GPU_|SLURM_JOB_GPUS|SLURM_GPUS|SLURM_JOB_ID)' | sort
echo "== nvidia-smi -L"; nvidia-smi -L 2>&1
echo "== devices"
for d in /dev/nvidia[0-9]*; do
  if head -c 0 "\$d" 2>/dev/null; then echo "open \$d: ok"; else echo "open \$d: denied"; fi
done
if [ -n "\${CUDA_MPS_PIPE_DIRECTORY:-}" ]; then
  echo "== MPS servers"; echo get_server_list | nvidia-cuda-mps-control 2>&1
fi
echo "== allocation"; $WORK/cuda_alloc $2 256
echo "== nvidia-smi"; nvidia-smi 2>&1
sleep 10
echo END
EOF
}
submit() { # submit NAME ALLOC_MIB OPTIONS...
  local name=$1 alloc=$2 out
  shift 2
  probe "$name" "$alloc" >"$WORK/jobs/$name.sh"
  out=$("$BIN/gsbatch" -J "$name" -o "$OUT/job-$name.out" "$@" "$WORK/jobs/$name.sh" 2>&1) || {
    echo "gsbatch $*: $out" >&2
    return 1
  }
  echo "${out##* }"
}

MPS_MEM="${MPS_MEM:-4G}"
MPS_MIB=$(( $(numfmt --from=iec "$MPS_MEM") / 1048576 ))
ids=()
if id=$(submit whole 8192 --gres=gpu:1); then
  ids+=("$id")
else
  result FAIL "gsbatch --gres=gpu:1 refused"
fi
mps_ids=()
if [[ $HAVE_MPS == 1 ]]; then
  for k in 1 2; do
    if id=$(submit "mps$k" $((MPS_MIB + 2048)) --gpu-mem="$MPS_MEM" --gpu-share=50); then
      mps_ids+=("$id")
    else
      result FAIL "gsbatch --gpu-mem=$MPS_MEM --gpu-share=50 refused"
    fi
  done
else
  result SKIP "MPS jobs: nvidia-cuda-mps-control is not installed"
fi
ids+=("${mps_ids[@]}")
say "jobs: ${ids[*]}"
for _ in $(seq 300); do
  left=$("$BIN/gsqueue" -h -o %i 2>/dev/null | wc -l)
  [[ $left == 0 ]] && break
  sleep 2
done
for id in "${ids[@]}"; do "$BIN/gscontrol" show job "$id"; done >"$OUT/jobs.txt" 2>&1
"$BIN/gsacct" -a -o JobID,JobName,State,ExitCode,Elapsed,Restarts >"$OUT/gsacct.txt" 2>&1 || true

# ------------------------------------------------------------------ checks
w="$OUT/job-whole.out"
if [[ -f $w ]]; then
  grep -q '^CUDA_VISIBLE_DEVICES=' "$w" && grep -q '^SLURM_JOB_GPUS=' "$w" \
    && result PASS "whole-GPU job: CUDA_VISIBLE_DEVICES=$(sed -n 's/^CUDA_VISIBLE_DEVICES=//p' "$w") SLURM_JOB_GPUS=$(sed -n 's/^SLURM_JOB_GPUS=//p' "$w")" \
    || result FAIL "whole-GPU job: no GPU variables (see job-whole.out)"
  if [[ $CONFINED == 1 || $NGPU == 1 ]]; then
    [[ $(sed -n '/== nvidia-smi -L/,/== devices/p' "$w" | grep -c '^GPU ') == 1 ]] \
      && result PASS "whole-GPU job: nvidia-smi -L lists one GPU" \
      || result FAIL "whole-GPU job: nvidia-smi -L does not list exactly one GPU"
  fi
  if [[ $CONFINED == 1 && $NGPU -gt 1 ]]; then
    [[ $(grep -c 'open /dev/nvidia[0-9]*: ok' "$w") == 1 ]] \
      && result PASS "whole-GPU job: opens 1 of the $NGPU GPU device files" \
      || result FAIL "whole-GPU job: device files: $(grep -c ': ok' "$w") of $NGPU open"
  else
    result SKIP "device-file isolation (needs root, cgroups and more than one GPU)"
  fi
  grep -q 'allocated 8192 MiB (all asked)' "$w" \
    && result PASS "whole-GPU job: allocated 8 GiB" \
    || result FAIL "whole-GPU job: $(grep cuda_alloc "$w" || echo 'no allocation result')"
else
  result FAIL "whole-GPU job: no output"
fi
for k in 1 2; do
  m="$OUT/job-mps$k.out"
  [[ $HAVE_MPS == 1 ]] || break
  if [[ ! -f $m ]]; then result FAIL "MPS job $k: no output"; continue; fi
  grep -q "^CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=${MPS_MIB}M" "$m" && grep -q '^CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50' "$m" \
    && result PASS "MPS job $k: limits in its environment" \
    || result FAIL "MPS job $k: limits missing (see job-mps$k.out)"
  if grep -q 'allocated [0-9]* MiB, then' "$m"; then
    got=$(sed -n 's/.*allocated \([0-9]*\) MiB, then.*/\1/p' "$m")
    ((got <= MPS_MIB)) && result PASS "MPS job $k: allocation stopped at $got MiB (limit $MPS_MIB MiB)" \
      || result FAIL "MPS job $k: allocated $got MiB, over its $MPS_MIB MiB limit"
  else
    result FAIL "MPS job $k: exceeding the pinned limit did not fail: $(grep cuda_alloc "$m")"
  fi
done
if [[ $HAVE_MPS == 1 ]]; then
  grep -q 'MPS control daemon started' "$WORK/log/gsnoded.log" \
    && result PASS "MPS: control daemon started by gsnoded ($(grep -c 'MPS control daemon started' "$WORK/log/gsnoded.log") time(s))" \
    || result FAIL "MPS: gsnoded started no control daemon (see daemon-logs/gsnoded.log)"
  grep -q 'MPS control daemon stopped' "$WORK/log/gsnoded.log" \
    && result PASS "MPS: control daemon stopped after the last job" \
    || result FAIL "MPS: control daemon not stopped after the last job"
fi
grep -E "State=" "$OUT/jobs.txt" | sed 's/^ *//' >"$OUT/job-states.txt"
say "summary:"
cat "$SUMMARY"
exit $FAILED
