#!/bin/bash
# The simulated cluster's submit command (Snakemake's generic cluster executor, workflow/profiles/containers):
# each job runs in a container of its own, started from the suite's image, so it runs on a "host" with its
# own hostname, kernel namespaces, PostgreSQL, MariaDB and syslog. The workflow's tree and the working
# directory are bind-mounted at their own paths (a cluster's shared filesystem); the job's software is the
# image's (`python` on its PATH: the profile leaves software-deployment out of the shared filesystem).
#
#   container_submit.sh JOBSCRIPT      # prints the container's id, Snakemake's job id
#
# The job's host is its {host} wildcard (container hostname logbench-<label>, so its environment record, and
# env_id, differ from another host's); a job without one is "head". The job's output goes to
# .snakemake/logbench-cluster/<host>-<job id>.log in the working directory; Snakemake learns the end from the
# jobscript's own finished/failed marker files. LOGBENCH_SUITE_IMAGE: the image (logbench/suite:latest,
# built by scripts/build_suite_image.sh).
set -euo pipefail
jobscript=$(realpath "$1")
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
workdir=$(pwd -P)
image=${LOGBENCH_SUITE_IMAGE:-logbench/suite:latest}

props=$(sed -n 's/^# properties = //p' "$jobscript")
read -r host jobid < <(python3 -c '
import json, sys
p = json.loads(sys.argv[1])
print(p.get("wildcards", {}).get("host", "head"), p.get("jobid", "x"))' "$props")

logs=$workdir/.snakemake/logbench-cluster
mkdir -p "$logs"

# --privileged where this host grants it; else (a sandbox without CAP_SYS_RESOURCE) every capability it has,
# unconfined (scripts/docker_privilege.py, as scripts/slurm_cluster.sh and tests/test_fresh_machine.py ask it).
# Decided once per working directory.
privilege_file=$logs/.privilege
if [ ! -s "$privilege_file" ]; then
  python3 "$root/scripts/docker_privilege.py" "$image" > "$privilege_file"
fi
read -r -a privilege < "$privilege_file"

args=(run -d --rm --hostname "logbench-$host" --label org.logbench.cluster-job="$host" "${privilege[@]}"
      -v "$root:$root" -w "$workdir"
      -e PATH=/logbench/.venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)
case "$workdir/" in
  "$root"/*) ;;  # already shared with the tree
  *) args+=(-v "$workdir:$workdir") ;;
esac
# the CPU idle-state control holds this device while measuring (notebook 00)
[ -e /dev/cpu_dma_latency ] && args+=(--device /dev/cpu_dma_latency)
exec docker "${args[@]}" "$image" bash -c "bash '$jobscript' > '$logs/$host-$jobid.log' 2>&1"
