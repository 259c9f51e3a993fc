# logbench: the paper from the processed data. Other targets may be added above or below.
PY ?= .venv/bin/python
SNAKEMAKE ?= $(PY) -m snakemake

.PHONY: paper findings paper-test committed

# Build paper/logbench.pdf (and paper/generated/) from data/processed and paper/figures; well under a minute.
paper:
	$(PY) -m logbench.publish.report

# Re-run notebooks/90_findings.ipynb in place on data/processed: writes data/processed/findings_*.csv and
# paper/figures/*.png. Run it after a study's processed data changed, then `make paper`.
findings:
	$(PY) -m logbench.publish.report --findings --no-pdf

# Rebuild the paper into a temporary directory and check every number against data/processed; the committed PDF's
# main-text pages and type sizes (tests/test_paper_layout.py).
paper-test:
	$(PY) -m pytest -q tests/test_regression.py tests/test_claims.py tests/test_paper.py tests/test_paper_layout.py

# Re-make the committed results through the workflow (workflow/Snakefile, target `committed`): every study's
# committed run, one at a time on this (otherwise quiet) machine, then 90_findings in place and the paper.
committed:
	$(SNAKEMAKE) --cores 1 --forceall committed
