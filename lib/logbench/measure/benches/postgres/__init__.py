"""PostgreSQL: the base study type, its destinations, and one measurement with pgbench on a server.

:class:`PgStudy` carries what every PostgreSQL study shares (base settings, pgbench scale and
query mode, backend, image, log directory, syslog options); :func:`start` brings up the log
directory, syslog daemons, server(s) and dataset for it and returns the runner's bench.

The package, one concern a module (issue 24: postgres.py had grown to 624 lines): :mod:`.destinations` the
settings and the records each configuration must leave, :mod:`.study` the study type and its checks,
:mod:`.bench` one measurement, :mod:`.stack` bringing the servers up; :mod:`.load` the load a study declares
(the bench runs it), :mod:`.imports` an import measured on a fresh server per run, :mod:`.wal` WAL counted around a
run. Every name stays importable from ``logbench.measure.benches.postgres`` (``from ..benches import postgres as pg`` in every PostgreSQL study, the tests,
scripts), which re-exports them. What only study 02 runs (its sampled logs, how it logs every statement) is in its
package, ``studies.pg_destinations.spec``.
"""

from __future__ import annotations

from .bench import BLOCK_BYTES, PgBench, io_regime
from .destinations import (BASE, DESTINATIONS, STDERR_DIRECT, STDERR_DIRECT_SINK, configurations,
                           statement_records)
from .imports import ImportBench
from .load import Load
from .stack import start, start_stack
from .study import (DEFAULT_VERSION, LOG_DIR_ON, PgStudy, check_syslog, checked, configuration_table,
                    design_summary, execute, pg_fields, swept_versions, switchback_design, with_loads,
                    with_variants)

__all__ = ["BASE", "BLOCK_BYTES", "DEFAULT_VERSION", "DESTINATIONS", "LOG_DIR_ON", "STDERR_DIRECT",
           "STDERR_DIRECT_SINK", "ImportBench", "Load", "PgBench", "PgStudy", "check_syslog", "checked", "configuration_table",
           "configurations", "design_summary", "execute", "io_regime", "pg_fields", "start", "start_stack",
           "statement_records", "swept_versions", "switchback_design", "with_loads", "with_variants"]
