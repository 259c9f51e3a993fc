#!/usr/bin/env bash
# Set-up for logbench on Debian/Ubuntu: system packages, the unprivileged server user,
# the Python environment pinned in pyproject.toml, and (with --docker) the Docker engine
# and the locally built images. Idempotent: each step checks before it works, so a
# second run takes seconds.
#
#   scripts/setup.sh            # packages, user, .venv
#   scripts/setup.sh --docker   # the same, then scripts/setup_docker.sh
#   scripts/setup.sh --docker --all-versions   # ... and every server version's image (docker/servers.tsv)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
with_docker=0
docker_args=()
for a in "$@"; do
  case "$a" in
    --docker) with_docker=1 ;;
    --all-versions) with_docker=1; docker_args+=(--all-versions) ;;
    *) echo "setup: unknown argument: $a (allowed: --docker, --all-versions)" >&2; exit 2 ;;
  esac
done
say() { printf 'setup: %s\n' "$*"; }
t0=$(date +%s)
sudo_=""
[ "$(id -u)" -eq 0 ] || sudo_="sudo"

# 1. System packages, only the missing ones (a second run does not touch apt); the local PostgreSQL and MariaDB
#    at docker/servers.tsv's patch level, the one their default images run (scripts/setup_packages.sh says why).
bash scripts/setup_packages.sh

# 2. The account servers run as when the suite runs as root (PostgreSQL and MariaDB refuse root).
if ! id logbench >/dev/null 2>&1; then
  say "creating system user logbench"
  $sudo_ useradd --system --no-create-home --shell /usr/sbin/nologin logbench
fi

# 3. Python environment: reinstalled only when pyproject.toml changed.
if [ ! -x .venv/bin/python ]; then
  say "creating .venv"
  python3 -m venv .venv
fi
stamp=.venv/.logbench-installed
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  say "installing the Python packages pinned in pyproject.toml"
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e ".[test]"
  echo "$want" > "$stamp"
else
  say "Python environment up to date"
fi

# 4. Containers (issue 5): engine and images, only when asked for.
if [ "$with_docker" -eq 1 ]; then
  $sudo_ bash scripts/setup_docker.sh "${docker_args[@]}"
fi
say "done in $(( $(date +%s) - t0 )) s"
