"""Study 02: what does each PostgreSQL log destination cost? (post 000, depesz 2013, redone)

Every statement is logged (``log_min_duration_statement = 0``, as in the post)
to one destination at a time; pgbench's select-only test measures throughput
and latency; each destination's sink is counted to see whether every record
arrived (the post's syslog kept ~0.5 % of them and nobody saw it in the tps).

The study is a package (issue 24): ``spec`` (its declarations: arms, profiles, study type, the post's numbers,
SPEC), ``analysis`` (from recorded runs to tables and findings: the summary, the IO-bound regime's check, the cost
of one record, the notebook's tables beside the post), ``study`` (define / run, the plan's tables). Layered
spec <- analysis <- study, no cycle. Its whole package is the workflow's input for the study
(``studies.sources``). What the registry, the notebook and the tests call is re-exported here, every public name
the module had, and the modules callers reach through it (``pg``: benches.postgres, ``common``).
"""

from __future__ import annotations

from ...measure.benches import postgres as pg
from .. import common
from .analysis import (IoNumbers, beside_post, environment_table, finding_loss, finding_overhead, finding_per_record,
                       finding_rates, load_processed, logger_share, per_record_cost, processed_tables, published_for,
                       regime_check, summary, with_regime)
from .spec import (ARMS, BASE, BASELINE, BYTES_PER_SCALE, DESTINATIONS, IO_BOUND_FACTOR, NAME, POST, POST_EXPERIMENT,
                   PROFILE_POSTS, PROFILES, SPEC, PgDestinationsStudy, published_ratios)
from .study import configuration_table, define, design_summary, run

__all__ = [
    "ARMS", "BASE", "BASELINE", "BYTES_PER_SCALE", "DESTINATIONS", "IO_BOUND_FACTOR", "NAME", "POST",
    "POST_EXPERIMENT", "PROFILES", "PROFILE_POSTS", "SPEC", "IoNumbers", "PgDestinationsStudy", "beside_post",
    "common", "configuration_table", "define", "design_summary", "environment_table", "finding_loss",
    "finding_overhead", "finding_per_record", "finding_rates", "load_processed", "logger_share", "per_record_cost",
    "pg", "processed_tables", "published_for", "published_ratios", "regime_check", "run", "summary", "with_regime",
]
