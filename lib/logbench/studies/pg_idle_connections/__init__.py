"""Study 08: do max_connections and open idle sessions cost throughput? (post 004, Cybertec, max_connections part)

A package (issue 24): ``study`` (the study as it was one module) and ``bench`` (the sessions the study holds
open, formerly ``logbench.benches.pg_sessions``, which no other study uses). Its whole package is the workflow's
input for the study (``studies.sources``). What the registry, the notebook and the tests call is re-exported here.
"""

from __future__ import annotations

from .study import (KINDS, NAME, POST, PROFILES, SESSION_COLUMNS, SPEC, IdleConnectionsStudy, SessionNumbers,
                    baseline_of, define, design_summary, environment_table, findings, load_processed, measured,
                    name_of, parse, plain, processed_tables, run, session_table, sessions_check, sessions_figure,
                    side_by_side, slopes, summary, variants_of)

__all__ = [
    "KINDS", "NAME", "POST", "PROFILES", "SESSION_COLUMNS", "SPEC", "IdleConnectionsStudy", "SessionNumbers",
    "baseline_of", "define", "design_summary", "environment_table", "findings", "load_processed", "measured",
    "name_of", "parse", "plain", "processed_tables", "run", "session_table", "sessions_check", "sessions_figure",
    "side_by_side", "slopes", "summary", "variants_of",
]
