# Sourced by bench/virtual-nodes.sh and bench/virtual-steady.sh: the controller config of a
# cluster of virtual nodes, and a free loopback port (bench/free-port.sh).

# shellcheck source=bench/free-port.sh
source "$(dirname "${BASH_SOURCE[0]}")/free-port.sh"

# virtual_conf DIR NODES CTLD_PORT NODE_PORT JOBS SLURMD_TIMEOUT: writes DIR/gsched.conf
# (auth/none, store and spools under DIR, NODES nodes v1.. of 64 CPUs on loopback).
virtual_conf() {
  local dir=$1 nodes=$2 ctld_port=$3 node_port=$4 jobs=$5 timeout=$6
  mkdir -p "$dir/state" "$dir/spool" "$dir/log"
  cat >"$dir/gsched.conf" <<EOC
ClusterName=virtual
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
AuthType=auth/none
SlurmUser=$(id -un)
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmdTimeout=$timeout
MaxJobCount=$((jobs + 10000))
MaxArraySize=10001
MinJobAge=60
NodeName=v[1-$nodes] NodeAddr=127.0.0.1 Port=$node_port CPUs=64 RealMemory=256000 State=UNKNOWN
PartitionName=main Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOC
}
