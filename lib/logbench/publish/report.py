"""From processed data to the paper: the studies as the analysis sees them, the findings, the typst build.

The command line (``python -m logbench.publish.report``, ``make paper``, ``make findings``, the workflow) and the names
callers have always imported from here. The work is done in:

- :mod:`logbench.publish.findings` — step 1, :func:`load_studies` (every known study's processed files), and step 2,
  the findings the notebook ``90_findings`` computes (:func:`compute_findings` in the same order) and
  :func:`write_findings` saves as ``findings_*.csv`` and ``figures/*.png``;
- :mod:`logbench.publish.paper` — step 3, :func:`build`: ``paper/generated/`` (``numbers.json``: every in-text number
  with its provenance; CSV tables of display strings) and ``paper/logbench.pdf`` compiled from
  ``paper/logbench.typ`` with the ``typst`` package.

Hooks for other studies' findings: ``data/processed/<study>_findings.csv`` (columns ``item``, ``statement``;
:data:`STUDY_FINDINGS`) is printed under that study's section; ``data/processed/instrument_findings.csv`` (columns ``item``,
``statement``; :data:`INSTRUMENT_FINDINGS`), written by the instrument study, is printed in the paper's
section "Instrument resolution and the anomaly test"; A/A rows (``<baseline>_again``) in a study's summary
are printed as that study's resolution and never as a logging configuration.

No number in the paper is typed by hand: each in-text number in ``numbers.json``
carries a ``spec`` saying which processed file, row and column it came from
(``tests/test_paper.py`` re-reads it from there and finds its text in the PDF).

Run ``python -m logbench.publish.report`` (or ``make paper``) to rebuild the paper.
"""

from __future__ import annotations

import argparse

from ..base import paths
from ..analyze import plots  # noqa: F401  (callers reach plots through here)
from .findings import (  # noqa: F401
    ENVIRONMENT_COLUMNS, FINDINGS, FINDINGS_NOTEBOOK, FLOOR_FOR, FLOOR_WORDS, KNOWN_STUDIES, STUDY_FINDINGS,
    VARIANT_COLUMNS, RegressionFindings, StudyInfo, anomaly_findings, cell_columns, cell_label, cell_slug, cells,
    claim_findings, compute_findings, cost_figures, cost_model_findings, cost_terms, fit_label, fit_slug, fit_title,
    floor_findings, headline_figures, headline_points, load_studies, machine_cores, model_findings, physical_orders, pooled_runs, published_ratios,
    record_regression_findings, reference_values,
    regression_findings, run_findings_notebook, study_figures, study_names, study_published, summary_keys,
    version_claims, write_findings)
from .paper.build import PAPER_SOURCE, PDF_NAME, build, compile_pdf  # noqa: F401
from .paper.numbers import CONSTANTS, Numbers, generate, render, resolve  # noqa: F401
from .paper.sections import (  # noqa: F401
    ANOMALIES, DESIGNS, INSTRUMENT_FINDINGS, PLACEMENT_TEXT, designs_section, digest_section)
from .paper.tables import (  # noqa: F401
    FIGURES, GENERATED, STUDY_TABLE_COLUMNS, TITLE_GLOSS, environment_ratios, environments_text, statements,
    study_table)
from .paper.text import claims_text, display_table, floor_text, regression_text  # noqa: F401


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m logbench.publish.report", description=__doc__.splitlines()[0])
    ap.add_argument("--findings", action="store_true",
                    help="first execute notebooks/90_findings.ipynb in place (data/processed -> findings, figures)")
    ap.add_argument("--no-pdf", action="store_true", help="do not build the paper")
    ap.add_argument("--processed", default=str(paths.PROCESSED), help="processed data (default: data/processed)")
    ap.add_argument("--figures", default=str(paths.FIGURES), help="figures of 90_findings (default: paper/figures)")
    ap.add_argument("--build-dir", default=str(paths.PAPER), help="where generated/ and the PDF go (default: paper)")
    ap.add_argument("--pdf", default=None, help="PDF path (default: <build-dir>/logbench.pdf)")
    args = ap.parse_args(argv)
    if args.findings:
        print(run_findings_notebook())
    if not args.no_pdf:
        print(build(args.processed, args.figures, args.build_dir, args.pdf))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
