#!/usr/bin/env bash
# The two commands of the README. Each does the (idempotent) set-up first.
#   bash run.sh study   # the main job: the PostgreSQL log-destination study, standard profile
#   bash run.sh test    # the whole test suite: unit, integration on real servers, nbval
#   bash run.sh suite   # the whole suite through the workflow: snakemake --cores 1 [snakemake options]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here"
case "${1:-}" in
  study)
    bash scripts/setup.sh
    mkdir -p results
    export PATH="$here/.venv/bin:$PATH"
    shift
    # Extra arguments go to papermill, e.g. -p clients "[1, 4]"
    exec papermill notebooks/02_pg_destinations.ipynb results/02_pg_destinations.out.ipynb "$@"
    ;;
  test)
    # The container backend's tests must run, not skip: set up the engine and the images too.
    # LOGBENCH_DOCKER=0 leaves Docker out (the fresh-machine check's container, where Docker-in-Docker
    # is not set up); the container tests then skip, saying why.
    if [ "${LOGBENCH_DOCKER:-1}" = 0 ]; then
      echo "run.sh: LOGBENCH_DOCKER=0: no Docker engine or images; the container backend's tests will skip" >&2
      bash scripts/setup.sh
    else
      bash scripts/setup.sh --docker
    fi
    export PATH="$here/.venv/bin:$PATH"
    shift
    exec python -m pytest "$@"
    ;;
  suite)
    bash scripts/setup.sh
    export PATH="$here/.venv/bin:$PATH"
    shift
    # Extra arguments go to snakemake, e.g. --config profile=smoke, or the target committed
    exec snakemake --cores 1 "$@"
    ;;
  *)
    echo "usage: bash run.sh study [papermill options] | bash run.sh test [pytest options] | bash run.sh suite [snakemake options]" >&2
    exit 2
    ;;
esac
