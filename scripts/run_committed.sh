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
# The studies and their committed-run parameters come from the registry (each study module's SPEC):
# "<notebook>\t-p name value ..." per line, in the paper's order.
declare -A ARGS=()
order=()
while IFS=$'\t' read -r nb args; do
  ARGS[${nb%%_*}]=$args
  order+=("${nb%%_*}")
done < <(python -m logbench.studies --committed)
[ ${#order[@]} -gt 0 ] || { echo "python -m logbench.studies --committed listed no study" >&2; exit 2; }
wanted=("$@")
[ ${#wanted[@]} -gt 0 ] || wanted=("${order[@]}")
for id in "${wanted[@]}"; do
  if [ -z "${ARGS[$id]+set}" ]; then
    echo "no study notebook $id; known: ${order[*]}" >&2
    exit 2
  fi
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
