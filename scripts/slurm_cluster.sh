#!/bin/bash
# A real SLURM cluster of containers on this machine, to run workflow/profiles/slurm as a user would
# (Debian 12's SLURM 22.05 and munge; tests/test_workflow_slurm.py):
#
#   bash scripts/slurm_cluster.sh build                 # the image only (idempotent: seconds when current)
#   bash scripts/slurm_cluster.sh up [--share DIR]...   # build the image if stale, start the cluster
#   bash scripts/slurm_cluster.sh exec [CMD...]         # run CMD in the controller (where sbatch works), in $PWD
#   bash scripts/slurm_cluster.sh status                # sinfo and the containers; exit 1 when not up
#   bash scripts/slurm_cluster.sh down                  # remove every container and the network
#
# One controller (hostname slurmctl: munge, a private MariaDB, slurmdbd, slurmctld; Snakemake runs here) and two
# compute nodes (node1, node2: munge, slurmd), each node alone in a partition of its own (part1, part2), on a
# private Docker network. The repository (and every --share DIR) is bind-mounted at its own path in all three:
# the cluster's shared filesystem. slurm.conf is written from the nodes' own `slurmd -C` (their real CPU count,
# sockets, cores, memory). The munge key is made in the controller at `up` and piped to the nodes: it never
# touches this machine's disk, and goes with the containers. Everything carries the label org.logbench.slurm:
# `down`, and a failed `up`, remove it all (containers, network; no volume is made).
# LOGBENCH_SLURM_NAME (default logbench-slurm) names the cluster's containers and network.
set -Eeuo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
name=${LOGBENCH_SLURM_NAME:-logbench-slurm}
image=${LOGBENCH_SLURM_IMAGE:-logbench/slurm:22.05}
suite=${LOGBENCH_SUITE_IMAGE:-logbench/suite:latest}
label=org.logbench.slurm
net=$name-net
ctl=$name-ctl
nodes=(node1 node2)
say() { printf 'slurm_cluster: %s\n' "$*" >&2; }

down() {
  local ids
  ids=$(docker ps -aq --filter "label=$label=$name")
  [ -z "$ids" ] || docker rm -f $ids >/dev/null
  if docker network inspect "$net" >/dev/null 2>&1; then docker network rm "$net" >/dev/null; fi
}

build_image() {
  # rebuilt when its definition, the plugin's pin or the suite image changed (as build_suite_image.sh does)
  bash "$here/scripts/build_suite_image.sh" >&2
  local plugin want have ctx cert
  plugin=$(grep -o '"snakemake-executor-plugin-slurm==[^"]*"' "$here/pyproject.toml" | tr -d '"')
  want=$( (docker image inspect -f '{{.Id}}' "$suite"; echo "$plugin"; cat "$here/docker/slurm/Dockerfile") \
          | sha256sum | cut -c1-16)
  have=$(docker image inspect -f "{{ index .Config.Labels \"org.logbench.definition\" }}" "$image" 2>/dev/null || true)
  [ "$have" = "$want" ] && return 0
  ctx=$(mktemp -d)
  cp "$here/docker/slurm/Dockerfile" "$ctx/"
  cert=${PIP_CERT:-$(python3 -m pip config get global.cert 2>/dev/null || true)}
  if [ -n "$cert" ] && [ -f "$cert" ]; then cp "$cert" "$ctx/pip-ca.crt"; fi
  say "building $image FROM $suite ($plugin)"
  local t0=$SECONDS
  if ! DOCKER_BUILDKIT=0 docker build --build-arg BASE="$suite" --build-arg PLUGIN="$plugin" \
       --label "org.logbench.definition=$want" -t "$image" "$ctx" >"$ctx/log" 2>&1; then
    tail -n 30 "$ctx/log" >&2
    rm -rf "$ctx"
    say "building $image failed"
    return 1
  fi
  rm -rf "$ctx"
  docker image prune -f --filter "label=org.logbench.definition" >/dev/null 2>&1 || true
  say "built $image in $((SECONDS - t0)) s"
}

privilege() {
  # The studies make mount and network namespaces: --privileged where this host grants it, else every capability
  # it has, unconfined (scripts/docker_privilege.py, which workflow/scripts/container_submit.sh asks too).
  python3 "$here/scripts/docker_privilege.py" "$image"
}

dx() { local c=$1; shift; docker exec -i "$c" "$@"; }

start_munge() {
  dx "$1" bash -c 'install -d -o munge -g munge -m 0755 /run/munge \
    && runuser -u munge -- /usr/sbin/munged'
}

up() {
  local shares=("$here")
  while [ $# -gt 0 ]; do
    case "$1" in
      --share) shares+=("$(cd "$2" && pwd -P)"); shift 2 ;;
      *) say "unknown argument: $1 (allowed: --share DIR)"; exit 2 ;;
    esac
  done
  if [ -n "$(docker ps -aq --filter "label=$label=$name")" ]; then
    say "$name is already up (or left over): bash scripts/slurm_cluster.sh down"
    exit 1
  fi
  trap 'say "up failed: removing what it started"; down; exit 1' ERR INT TERM HUP
  build_image
  local -a priv mounts=()
  read -r -a priv < <(privilege)
  local s
  for s in "${shares[@]}"; do mounts+=(-v "$s:$s"); done
  [ -e /dev/cpu_dma_latency ] && mounts+=(--device /dev/cpu_dma_latency)
  docker network create --label "$label=$name" "$net" >/dev/null
  local host cname
  for host in slurmctl "${nodes[@]}"; do
    cname=$name-$host
    [ "$host" = slurmctl ] && cname=$ctl
    docker run -d --init --name "$cname" --hostname "$host" --network "$net" --network-alias "$host" \
      --label "$label=$name" "${priv[@]}" "${mounts[@]}" \
      -e PATH=/logbench/.venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      "$image" sleep infinity >/dev/null
  done
  # one key for the cluster, made here and piped to the nodes
  dx "$ctl" bash -c 'mungekey --create --force --keyfile /etc/munge/munge.key \
    && chown munge:munge /etc/munge/munge.key && chmod 0400 /etc/munge/munge.key'
  for host in "${nodes[@]}"; do
    dx "$ctl" cat /etc/munge/munge.key | dx "$name-$host" bash -c 'cat > /etc/munge/munge.key \
      && chown munge:munge /etc/munge/munge.key && chmod 0400 /etc/munge/munge.key'
  done
  # slurm.conf from the nodes' own hardware
  local conf node_lines="" part_lines="" i=0
  for host in "${nodes[@]}"; do
    i=$((i + 1))
    node_lines+="$(dx "$name-$host" slurmd -C | grep '^NodeName=') State=UNKNOWN"$'\n'
    part_lines+="PartitionName=part$i Nodes=$host MaxTime=INFINITE State=UP"$'\n'
  done
  conf="# written by scripts/slurm_cluster.sh up
ClusterName=logbench
SlurmctldHost=slurmctl
AuthType=auth/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=/var/lib/slurm/slurmctld
SlurmdSpoolDir=/var/lib/slurm/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
# no cgroup hierarchy of its own in a container: processes tracked by their parent, no task binding
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
JobAcctGatherType=jobacct_gather/linux
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=slurmctl
# sacct (the executor plugin's status query) reads the jobs from slurmdbd; squeue keeps ended jobs 10 min
MinJobAge=600
${node_lines}${part_lines}"
  for host in slurmctl "${nodes[@]}"; do
    cname=$name-$host
    [ "$host" = slurmctl ] && cname=$ctl
    printf '%s' "$conf" | dx "$cname" bash -c 'cat > /etc/slurm/slurm.conf \
      && install -d /var/lib/slurm/slurmctld /var/lib/slurm/slurmd /var/log/slurm'
    start_munge "$cname"
  done
  # the controller: MariaDB (private, socket only) for slurmdbd, then slurmctld
  dx "$ctl" bash -c '
    set -e
    install -d /run/mysqld
    mariadb-install-db --user=root --datadir=/var/lib/mysql --skip-test-db >/var/log/slurm/mariadb-install.log 2>&1
    setsid mariadbd --user=root --datadir=/var/lib/mysql --skip-networking --socket=/run/mysqld/mysqld.sock \
      --log-error=/var/log/slurm/mariadb.log </dev/null >/dev/null 2>&1 &
    for _ in $(seq 100); do [ -S /run/mysqld/mysqld.sock ] && break; sleep 0.1; done
    cat > /etc/slurm/slurmdbd.conf <<CONF
AuthType=auth/munge
DbdHost=slurmctl
SlurmUser=root
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=root
StorageLoc=slurm_acct_db
PidFile=/run/slurmdbd.pid
LogFile=/var/log/slurm/slurmdbd.log
CONF
    chmod 0600 /etc/slurm/slurmdbd.conf
    slurmdbd
    for _ in $(seq 100); do sacctmgr -n list cluster >/dev/null 2>&1 && break; sleep 0.2; done
    sacctmgr -i add cluster logbench >/dev/null
    slurmctld'
  for host in "${nodes[@]}"; do dx "$name-$host" slurmd; done
  # ready: both nodes idle
  local t
  for t in $(seq 60); do
    if [ "$(dx "$ctl" sinfo -N -h -o '%N %t' | grep -c ' idle$' || true)" -eq "${#nodes[@]}" ]; then
      trap - ERR INT TERM HUP
      dx "$ctl" sinfo -N -o '%N %P %c %m %t' >&2
      return 0
    fi
    sleep 1
  done
  dx "$ctl" sinfo -N >&2 || true
  dx "$ctl" tail -n 20 /var/log/slurm/slurmctld.log >&2 || true
  say "the nodes did not become idle in 60 s"
  false
}

case "${1:-}" in
  up) shift; up "$@" ;;
  down) down ;;
  build) build_image ;;
  status)
    docker ps -a --filter "label=$label=$name" --format '{{.Names}}\t{{.Status}}'
    docker exec "$ctl" sinfo -N -o '%N %P %c %m %t' ;;
  exec)
    shift
    [ $# -gt 0 ] || set -- bash
    flags=(-i -w "$PWD")
    [ -t 0 ] && flags+=(-t)
    exec docker exec "${flags[@]}" "$ctl" "$@" ;;
  *) say "usage: slurm_cluster.sh build | up [--share DIR]... | exec [CMD...] | status | down"; exit 2 ;;
esac
