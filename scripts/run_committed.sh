#!/usr/bin/env bash
# Re-make the committed results: every study notebook in its standard profile, one at a time (the
# machine must be otherwise quiet: two cores, and every run counts), then the findings and the paper.
# Each executed notebook replaces the committed one only when its run succeeded.
#   bash scripts/run_committed.sh            # all studies, findings, paper
#   bash scripts/run_committed.sh 02 04      # only these studies (findings and paper always follow)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
export PATH="$here/.venv/bin:$PATH"
mkdir -p results/committed
declare -A ARGS=(
  # The committed studies run on the local backend (the embedded default, as on a machine without
  # Docker); notebook 03 puts the PostgreSQL destinations under both backends.
  [02]="-p profile standard -p backend local"
  # Named explicitly: a notebook saved from a smoke run keeps papermill's injected smoke parameters.
  [03]="-p profile standard"
  [04]="-p profile standard -p backend local"
  [06]="-p profile standard -p backend local"
)
wanted=("$@")
[ ${#wanted[@]} -gt 0 ] || wanted=(02 03 04 06)
for id in "${wanted[@]}"; do
  nb=$(ls notebooks/"${id}"_*.ipynb)
  out=results/committed/$(basename "$nb")
  echo "== $nb $(date -u +%H:%M:%S)"
  start=$(date +%s)
  # shellcheck disable=SC2086
  papermill "$nb" "$out" ${ARGS[$id]} --no-progress-bar
  cp "$out" "$nb"
  echo "== $nb done in $(( $(date +%s) - start )) s"
done
python -m logbench.report --findings
echo "== findings and paper done $(date -u +%H:%M:%S)"
