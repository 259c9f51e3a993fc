#!/usr/bin/env bash
# The two commands of the README. Each does the (idempotent) set-up first.
#   bash run.sh study [NN | notebooks/NN_name.ipynb] [papermill options]
#                       # the main job: a study (default 02, the PostgreSQL log-destination study), standard
#                       # profile; progress in the terminal, the answer at the end, an HTML report
#   bash run.sh test    # the whole test suite: unit, integration on real servers, nbval
#   bash run.sh         # usage: the commands, the studies and their own parameters
#   bash run.sh suite   # the whole suite through the workflow: snakemake --cores 1 [snakemake options]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here"

usage() {
  cat >&2 <<'TXT'
usage:
  bash run.sh study [STUDY] [papermill options]   set-up, then one study; STUDY is a notebook number (e.g. 04)
                                                  or path (notebooks/04_mysql_slowlog.ipynb); default 02
  bash run.sh test [pytest options]               set-up, then the whole test suite
  bash run.sh suite [snakemake options]           set-up, then every study, the findings and the paper
                                                  through the workflow (workflow/Snakefile; see docs/workflow.md)

  e.g.  bash run.sh study                          # 02, standard profile (~15 min)
        bash run.sh study 04 -p clients "[1, 8]"   # another study, other parameters
        bash run.sh study -p profile smoke         # seconds: does everything work here?
        bash run.sh study 12 -p server "host=db1 user=postgres" --yes   # on your own server (README)

Every study takes -p profile smoke|standard|full, clients, repeats, duration, warmup, seed, backend
(local|container|auto), idle_state, target_halfwidth, output_dir, and publish (False: your results stay
under results/; True only for the committed reference run, into data/processed/); where a notebook offers it,
recorded (committed, or a run directory: render that run, measure nothing). Studies and their
own parameters (all of them, with units and allowed values: .venv/bin/papermill --help-notebook NOTEBOOK):
TXT
  local py=python3
  [ -x "$here/.venv/bin/python" ] && py="$here/.venv/bin/python"
  if ! PYTHONPATH="$here/lib${PYTHONPATH:+:$PYTHONPATH}" "$py" -m logbench.studies --usage >&2 2>/dev/null; then
    # before set-up there is no Python environment to read the registry with: the notebooks will do
    (cd notebooks && ls -1 [0-9][0-9]_*.ipynb | sed 's/^/  /') >&2
    echo "  (run bash run.sh study once to set up; then this lists each study's parameters)" >&2
  fi
}

# A notebook number (04) or path (notebooks/04_mysql_slowlog.ipynb) -> the notebook's path.
notebook_of() {
  local want=$1 found=()
  if [[ "$want" =~ ^[0-9][0-9]$ ]]; then
    found=(notebooks/"$want"_*.ipynb)
    [ -e "${found[0]}" ] && [ ${#found[@]} -eq 1 ] && { echo "${found[0]}"; return 0; }
  elif [[ "$want" == *.ipynb ]] && [ -f "$want" ]; then
    echo "$want"; return 0
  fi
  echo "run.sh: no study notebook '$want' (give its number, e.g. 04, or its path, notebooks/04_mysql_slowlog.ipynb)" >&2
  return 1
}

case "${1:-}" in
  study)
    shift
    nb=notebooks/02_pg_destinations.ipynb
    if [ $# -gt 0 ] && [[ "$1" != -* ]]; then
      nb=$(notebook_of "$1") || { usage; exit 2; }
      shift
    fi
    # --yes: the study on your own server (12) may put its load on it (its parameter confirm)
    args=()
    for a in "$@"; do
      if [ "$a" = --yes ]; then args+=(-p confirm True); else args+=("$a"); fi
    done
    set -- "${args[@]}"
    bash scripts/setup.sh
    mkdir -p results
    export PATH="$here/.venv/bin:$PATH"
    out=results/$(basename "$nb" .ipynb).out.ipynb
    # A study's raw runs (and, unless published, its processed tables) go to results/<study>/<UTC time>,
    # named here so the answer below finds them; a -p output_dir of the caller's comes later and wins.
    name=$(python -m logbench.studies --list | awk -F'\t' -v nb="$(basename "$nb")" '$4 == nb {print $1}')
    where=()
    [ -z "$name" ] || where=(-p output_dir "results/$name/$(date -u +%Y%m%dT%H%M%SZ)")
    # The kernel's stdout/stderr go into the notebook; the study's progress lines go to this file
    # (logbench.base.progress), shown here while papermill runs.
    progress=$(mktemp "${TMPDIR:-/tmp}/logbench-progress.XXXXXX")
    export LOGBENCH_PROGRESS=$progress
    tail -n +1 -f "$progress" >&2 &
    tailer=$!
    trap 'kill "$tailer" 2>/dev/null || true; rm -f "$progress"' EXIT
    echo "run.sh: $nb -> $out (progress below; extra arguments: ${*:-none})" >&2
    rc=0
    papermill "$nb" "$out" --no-progress-bar "${where[@]}" "$@" || rc=$?
    sleep 0.5  # the last lines reach the terminal
    kill "$tailer" 2>/dev/null || true
    if [ -f "$out" ]; then
      [ "$rc" -eq 0 ] || echo "run.sh: papermill failed (exit $rc); the notebook shows where" >&2
      # The answer last: summary, resolution, where the files are; and the HTML report to open.
      python -m logbench.publish.answer --html "$out" || true
    fi
    exit "$rc"
    ;;
  test)
    # The container backend's tests must run, not skip: set up the engine and the images too.
    # LOGBENCH_DOCKER=0 leaves Docker out (the fresh-machine check's container, where Docker-in-Docker
    # is not set up); the container tests then skip, saying why.
    if [ "${LOGBENCH_DOCKER:-1}" = 0 ]; then
      echo "run.sh: LOGBENCH_DOCKER=0: no Docker engine or images; the container backend's tests will skip" >&2
      bash scripts/setup.sh
    else
      # Every server version's image too (tests/test_server_versions.py starts one of each): built once,
      # minutes, then kept in the engine and only checked (a second of the set-up's time).
      bash scripts/setup.sh --docker --all-versions
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
    usage
    exit 2
    ;;
esac
