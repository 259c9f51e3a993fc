"""Study 02: what does each PostgreSQL log destination cost? (post 000, depesz 2013, redone)

A package (issue 24): ``study`` (the study as it was one module). Its whole package is the workflow's input for
the study (``studies.sources``). What the registry, the notebook and the tests call is re-exported here, every
public name the module had, and the modules callers reach through it (``pg``: benches.postgres, ``common``).
"""

from __future__ import annotations

from .. import common
from ...benches import postgres as pg
from .study import (ARMS, BASE, BASELINE, BYTES_PER_SCALE, DESTINATIONS, IO_BOUND_FACTOR, NAME, POST,
                    POST_EXPERIMENT, PROFILE_POSTS, PROFILES, SPEC, IoNumbers, PgDestinationsStudy, beside_post,
                    configuration_table, define, design_summary, environment_table, finding_loss, finding_overhead,
                    finding_per_record, finding_rates, load_processed, logger_share, per_record_cost,
                    processed_tables, published_for, published_ratios, regime_check, run, summary, with_regime)

__all__ = [
    "ARMS", "BASE", "BASELINE", "BYTES_PER_SCALE", "DESTINATIONS", "IO_BOUND_FACTOR", "NAME", "POST",
    "POST_EXPERIMENT", "PROFILES", "PROFILE_POSTS", "SPEC", "IoNumbers", "PgDestinationsStudy", "beside_post",
    "common", "configuration_table", "define", "design_summary", "environment_table", "finding_loss",
    "finding_overhead", "finding_per_record", "finding_rates", "load_processed", "logger_share", "per_record_cost",
    "pg", "processed_tables", "published_for", "published_ratios", "regime_check", "run", "summary", "with_regime",
]
