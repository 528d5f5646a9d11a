#!/bin/sh
# A one-node Slurm cluster on this machine, for the srun tests (test/e2e/test_slurm.py):
# munged, slurmctld and slurmd as root with a configuration of their own under DIR, the
# node named as this host, more tasks than CPUs allowed. Needs slurm-wlm (Debian 12:
# scripts/install-deps.sh installs it).
#
#   scripts/slurm-local.sh start DIR   # prints SLURM_CONF=DIR/slurm.conf once srun works
#   scripts/slurm-local.sh stop DIR
set -eu
cmd=${1:-}
dir=${2:-}
if [ -z "$cmd" ] || [ -z "$dir" ]; then
    echo "usage: $0 start|stop DIR" >&2
    exit 2
fi
stop() {
    for pidfile in "$dir/slurmd.pid" "$dir/slurmctld.pid" "$dir/munged.pid"; do
        if [ -f "$pidfile" ]; then
            kill "$(cat "$pidfile")" 2>/dev/null || true
            rm -f "$pidfile"
        fi
    done
}
if [ "$cmd" = stop ]; then
    stop
    exit 0
fi
for prog in munged mungekey slurmctld slurmd srun sinfo python3; do
    if ! command -v "$prog" >/dev/null 2>&1 && ! [ -x "/usr/sbin/$prog" ]; then
        echo "slurm-local: $prog not found (apt-get install slurm-wlm python3)" >&2
        exit 3
    fi
done
if [ "$(id -u)" != 0 ]; then
    echo "slurm-local: slurmd must run as root" >&2
    exit 3
fi
PATH=$PATH:/usr/sbin
host=$(hostname)
cpus=$(nproc)
mkdir -p "$dir/state" "$dir/spool" "$dir/munge"
chmod 700 "$dir/munge"
# munge: a key and a socket of our own, so that a system munged is not needed.
[ -f "$dir/munge/munge.key" ] || mungekey --create --keyfile="$dir/munge/munge.key" >/dev/null 2>&1 ||
    dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 2>/dev/null
chmod 400 "$dir/munge/munge.key"
munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/socket" \
    --pid-file="$dir/munged.pid" --log-file="$dir/munge/munged.log" \
    --seed-file="$dir/munge/seed"
# Ports free now, not fixed ones: a Slurm daemon of the machine (a cluster node) or a second
# test run may hold the usual ones. Both sockets are open at once: two different ports.
ports=$(python3 -c 'import socket
a, b = socket.socket(), socket.socket()
a.bind(("", 0)); b.bind(("", 0))
print(a.getsockname()[1], b.getsockname()[1])')
ctld_port=${ports% *}
slurmd_port=${ports#* }
cat > "$dir/slurm.conf" <<CONF
ClusterName=profrun
SlurmctldHost=$host
AuthType=auth/munge
AuthInfo=socket=$dir/munge/socket
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
SlurmdParameters=config_overrides
NodeName=$host CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
CONF
export SLURM_CONF="$dir/slurm.conf"
slurmctld -i
slurmd
i=0
while ! sinfo -h -o %T 2>/dev/null | grep -q idle; do
    i=$((i + 1))
    for d in slurmctld slurmd; do # one that died (a port in use, ...) says why at once
        if [ $i -gt 4 ] && ! { [ -f "$dir/$d.pid" ] && kill -0 "$(cat "$dir/$d.pid")" 2>/dev/null; }; then
            echo "slurm-local: $d is not running:" >&2
            tail -n 3 "$dir/$d.log" >&2
            stop
            exit 1
        fi
    done
    if [ $i -gt 120 ]; then
        echo "slurm-local: the node did not come up in 60 s; logs in $dir" >&2
        stop
        exit 1
    fi
    sleep 0.5
done
echo "SLURM_CONF=$SLURM_CONF"
