"""Study 08: do max_connections and open idle sessions cost throughput? (post 004, Cybertec, max_connections part)

- **test 1** (`max{M}`): max_connections swept, the working pgbench clients and nothing else;
- **tests 2/3** (`max{M}_sleep`, `max{M}_idle`): the remaining slots filled with sessions held open by the
  study — running ``pg_sleep`` ("active but idle", as the post did) or connected without a query — with
  the working clients fixed (the post's 8 and 32 on 8 cores: 2 and 8 here, by clients per core).

Each session is a real connection opened before the run and closed after it, counted in ``pg_stat_activity``
(``workloads.sessions``). The server's memory with the sessions open is recorded. The post ran 9.3; PostgreSQL 14
made snapshots independent of the number of connections (GetSnapshotData no longer walks every PGPROC),
which predicts a flat curve for idle sessions where 9.3 declined.

``versions=["13", "15", "17"]`` runs the same study on each PostgreSQL version in its container (never local
beside container: the backend moves the numbers), one interleaved schedule, each version with its own
baseline, A/A control and slopes, side by side, never pooled (issue 23: 14 changed GetSnapshotData).

The study is a package (issue 24): ``spec`` (its declarations), ``analysis`` (from recorded runs to tables and
findings), ``study`` (define / run). Layered spec <- analysis <- study, no cycle. It has no bench of its own (issue
39): each configuration declares the sessions it holds open (``Configuration.sessions``, a ``HeldSessions``), and
the shared PostgreSQL bench opens them before each run (``workloads.sessions``), runs its pgbench -S, closes them. Its whole package is
the workflow's input for the study (``studies.sources``). What the registry, the notebook and the tests call is
re-exported here.
"""

from __future__ import annotations

from .analysis import (SESSION_COLUMNS, SessionNumbers, baseline_of, environment_table, findings, load_processed,
                       measured, processed_tables, sessions_check, sessions_figure, side_by_side, slopes, summary,
                       variants_of)
from .spec import KINDS, NAME, POST, PROFILES, SPEC, IdleConnectionsStudy, name_of, parse, plain
from .study import define, design_summary, run, session_table

__all__ = [
    "KINDS", "NAME", "POST", "PROFILES", "SESSION_COLUMNS", "SPEC", "IdleConnectionsStudy", "SessionNumbers",
    "baseline_of", "define", "design_summary", "environment_table", "findings", "load_processed", "measured",
    "name_of", "parse", "plain", "processed_tables", "run", "session_table", "sessions_check", "sessions_figure",
    "side_by_side", "slopes", "summary", "variants_of",
]
