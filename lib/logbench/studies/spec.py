"""What the registry, the report, the tests and the workflow (``Snakefile``) know of a study: its
:class:`StudySpec` (and a digest study's part of the paper, :class:`DigestPaper`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import pandas as pd


@dataclass(frozen=True)
class DigestPaper:
    """A digest study's part of the paper (``logbench.publish.paper.sections.digest_section``, one function for every such
    study): the top rows of its processed table (data/processed/<name>.csv) as display strings, and the numbers the
    text of its section states, each by reference to that table."""

    # the table's top ``rows`` rows -> the paper's table, every cell a display string
    table: Callable[[pd.DataFrame], pd.DataFrame]
    # key -> a number's spec (logbench.publish.paper.numbers: "cell", "agg", "div", "scale") without its source, which is
    # the study's table; registered as "<name>.<key>"
    numbers: Mapping[str, dict] = field(default_factory=dict)
    rows: int = 12


@dataclass(frozen=True)
class StudySpec:
    """A study as the rest of the suite sees it (see :mod:`logbench.studies` for the registry)."""

    name: str  # also its processed files' stem: data/processed/<name>.csv, <name>_runs.csv, ...
    engine: str  # "postgresql" | "mariadb"
    title: str
    post: str  # the seed post it redoes: file name in shared/seeds
    baseline: str
    notebook: str  # file name in notebooks/
    seed: int = 0  # default seed of the run order
    # the post's ratios keyed by our configuration names; called with the study's runs (or None)
    published: Callable[[pd.DataFrame | None], pd.DataFrame] | None = None
    experiment: str = ""  # the post's experiment in data/raw/reference (fallback for the figure)
    # papermill parameters of the committed (standard) run; "publish": True lets it write data/processed
    committed: Mapping[str, object] = field(default_factory=lambda: {"profile": "standard", "publish": True})
    # papermill parameters of each nbval run of its notebook (tests/test_notebooks.py)
    smoke: tuple[Mapping[str, object], ...] = ({"profile": "smoke"},)
    paper_order: int = 100  # where the paper (and the findings' study table) lists it: lower first
    extra_committed: tuple[Mapping[str, object], ...] = ()  # further committed runs (named profiles)
    # False for a study of the instrument itself (notebook 00) or a digest (09, 10): no logging configurations set
    # against a baseline, so it is not among the findings' studies (findings.KNOWN_STUDIES: no ratios, no line cost)
    measures_logging: bool = True
    # Why its runs say nothing about the cost of a logged line, where its configurations vary something other than
    # what is logged ("" for none): the line-cost regression leaves its runs out (findings.NOT_LINE_COST) and the
    # paper prints the reason. Only a study that measures logging has runs the regression could take.
    not_line_cost: str = ""
    # What its committed run says in the paper's abstract (logbench.analyze.headline.Headline), or None
    headline: object = None
    # A study that digests a captured log: its section of the paper (DigestPaper), or None
    digest: DigestPaper | None = None
    # What its version sweep (the committed run of its profile "versions", in extra_committed) measures: the
    # sweep's title in the paper's section on versions (logbench.publish.paper.versions); "" for none
    versions_title: str = ""

    @property
    def post_id(self) -> str:
        return self.post[:3]

