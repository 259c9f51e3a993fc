"""The posts' quantitative claims, checked against our data by stated rules.

Each claim is a row of ``data/raw/claims.csv`` (see ``paper/README.md``): what
the post says, the number it published, the claimed range that number stands
for, and what tests it here — a study, a metric, configuration(s), clients and
a rule. What we decided about judging it on this machine (the post's cores, the
configuration it must match, a rule on another scale) lives in
:mod:`logbench.analyze.claim_rules`. :func:`evaluate` turns each row into a verdict by
code, in this order:

1. **Concurrency here.** A post's clients map to this machine by clients per
   core: k clients on the post's c cores are k × (our cores) / c clients here
   (post 004: 32 on 8 cores = 4 per core = 8 clients on 2 cores). A claim that
   needs k *simultaneously runnable* processes (post 003's contention on the
   logger pipe at 56 clients) cannot be scaled down: **not reproducible here**
   when k exceeds our cores; so is a mapped level above ``MAX_CLIENTS_PER_CORE``
   × cores. Our closest number is still shown, labelled as such.
2. **not measured yet** — the study has no processed data, the claim needs a
   regime the data does not have (IO-bound: a database larger than RAM), the
   configuration / client count is not among the runs, or the claim waits for a
   study named in its rule.
3. the rule, applied to each (configuration, clients) case with our 95 % CI:

   * ``in_range``: agreement is an equivalence test, two one-sided tests at 5 %
     (TOST): our **90 %** CI inside the claimed range → confirmed; our 95 % CI
     and the range do not overlap → refuted; our point estimate inside the range
     but our (bounded) interval wider than the range allows → **consistent, not
     resolved** (the point agrees; the resolution falls short of the claim's
     margin); otherwise inconclusive. An open verdict says how narrow an interval
     would decide it. The claimed range is the
     margin stated per claim in the claims file (its note says from what: the
     post's rounding, its own spread, or the words it used). A value with no
     CI (a single measurement, e.g. the environment's timer overhead) is
     confirmed when it lies in the range and refuted otherwise.
   * ``fastest``: tps of the configuration over tps of each rival (Fieller CI):
     every CI above 1 → confirmed; some CI below 1 → refuted; every point above
     1 → consistent, not resolved; otherwise inconclusive.

   Cases combine: any refuted → refuted; all confirmed → confirmed; each
   confirmed or consistent → consistent, not resolved; otherwise inconclusive.
4. **not comparable: <why>** replaces the verdict when our runs differ from the
   post's in a way that changes the quantity (protocol, which setting logs the
   statement, syslog rate limiting, bytes per logged query): our number is shown,
   the verdict withheld.

A/A control rows (``<baseline>_again``) are never a claim's configuration.

The package, one concern a module: :mod:`.engine` (the claims file and :func:`evaluate`), :mod:`.data` (a
study's processed data and the runs a claim is about), :mod:`.metrics` (our estimate per cell),
:mod:`.comparability` (step 1 and step 4: concurrency here, what the post ran), :mod:`.verdicts` (the rules)
and :mod:`.text` (numbers and the published values as text). Callers import from the package.
"""

from __future__ import annotations

from .. import claim_rules  # noqa: F401
from ...base import paths, stats  # noqa: F401  (callers and tests reach them through here)
from ..claim_rules import ClaimRule, Requirement  # noqa: F401
from ...base.settings import aa_name, is_aa  # noqa: F401
from ...base.stats import Estimate  # noqa: F401
from .comparability import (  # noqa: F401
    MAX_CLIENTS_PER_CORE, REQUIREMENT_KINDS, Concurrency, _tps_ratio_mismatch, clients_here, concurrency_here,
    requirement_mismatch)
from .data import (  # noqa: F401
    PGBENCH_BYTES_PER_SCALE, REGIME_NAMES, REGIMES, StudyData, _bound, _int_list, _names, _where, regime, restrict,
    run_regimes)
from .engine import (  # noqa: F401
    CLAIMS_FILE, COLUMNS, DETAIL_COLUMNS, SUMMARY_COLUMNS, _closest, _detail, _evaluate_one, as_judged, evaluate,
    load)
from .metrics import (  # noqa: F401
    COST_GROWTH, DIFFERENCE_OF, PREFIX_METRICS, RATIO_OF, RUN_METRICS, SPECIAL_METRICS, _cell, _is_ratio,
    _is_switchback, _regression_estimate, biased_baseline, cost_growth, difference_ci, environment_estimate,
    inverted, logging_us_per_tx, metric, switchback_ratio)
from .text import (  # noqa: F401
    _join, _plain, _ratio_text, estimate_text, fmt, fmt_p, published_parts, published_text, range_text,
    with_published)
from .verdicts import (  # noqa: F401
    CONFIRMED, CONSISTENT, EQUIVALENCE, INCONCLUSIVE, NOT_COMPARABLE, NOT_MEASURED, NOT_REPRODUCIBLE, REFUTED, RULES,
    VERDICTS, _decisive, _why, combine, deciding_text, deciding_width, fastest_verdict, in_range_verdict, rule_text)
