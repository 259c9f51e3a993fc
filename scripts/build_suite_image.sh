#!/bin/bash
# Build the suite's image (the top-level Dockerfile) FROM the locally built Debian base: no registry needed.
# The SLURM test cluster's image (docker/slurm, scripts/slurm_cluster.sh) is built FROM it; the simulated cluster
# (workflow/profiles/containers) starts each job in a container of it.
#
#   bash scripts/build_suite_image.sh            # idempotent: seconds when the image is current
#   bash scripts/build_suite_image.sh --rebuild
#   LOGBENCH_SUITE_IMAGE=name:tag bash scripts/build_suite_image.sh
#
# The image is rebuilt only when what makes its environment changed (Dockerfile, set-up script, apt and PyPI
# pins, the base image): label org.logbench.definition. The suite's code in the image is what was current at
# the build; the workflow's jobs run the code of the workflow that submits them (mounted, PYTHONPATH=lib).
# pip in the build needs the host's CA bundle where pip here goes through a TLS-intercepting proxy: the
# bundle pip is configured with (PIP_CERT, `pip config get global.cert`) is copied to build/pip-ca.crt,
# which the Dockerfile installs before the set-up when present.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
tag=${LOGBENCH_SUITE_IMAGE:-logbench/suite:latest}
base=logbench/debian:bookworm
label=org.logbench.definition
rebuild=0
for a in "$@"; do
  case "$a" in
    --rebuild) rebuild=1 ;;
    *) echo "build_suite_image: unknown argument: $a (allowed: --rebuild)" >&2; exit 2 ;;
  esac
done
say() { printf 'build_suite_image: %s\n' "$*"; }
docker image inspect "$base" >/dev/null 2>&1 || { say "$base missing: run bash scripts/setup_docker.sh first" >&2; exit 1; }
base_id=$(docker image inspect -f '{{.Id}}' "$base")
want=$( (printf '%s\n' "$base_id"; cat Dockerfile scripts/setup.sh scripts/setup_packages.sh scripts/apt-packages.txt docker/servers.tsv pyproject.toml) \
        | sha256sum | cut -c1-16)
have=$(docker image inspect -f "{{ index .Config.Labels \"$label\" }}" "$tag" 2>/dev/null || true)
if [ $rebuild -eq 0 ] && [ "$have" = "$want" ]; then
  say "$tag is up to date ($want)"
  exit 0
fi
cert=${PIP_CERT:-$(python3 -m pip config get global.cert 2>/dev/null || true)}
mkdir -p build
rm -f build/pip-ca.crt
if [ -n "$cert" ] && [ -f "$cert" ]; then
  cp "$cert" build/pip-ca.crt
  say "pip in the build trusts $cert (copied to build/pip-ca.crt)"
fi
t0=$(date +%s)
log=$(mktemp)
say "building $tag FROM $base"
# the CLI here may lack buildx: the classic builder
if ! DOCKER_BUILDKIT=0 docker build --label "$label=$want" -t "$tag" . >"$log" 2>&1; then
  tail -n 40 "$log" >&2
  rm -f "$log"
  say "building $tag failed" >&2
  exit 1
fi
rm -f "$log"
docker image prune -f --filter "label=$label" >/dev/null 2>&1 || true
say "built $tag in $(( $(date +%s) - t0 )) s"
