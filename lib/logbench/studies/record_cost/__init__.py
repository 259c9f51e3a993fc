"""Study 11: what one log record costs, counted (issue 38). PostgreSQL's and MariaDB's servers run under
cachegrind (user-space instructions per process) and strace (system calls and bytes per process) for a small and
a large load of the same configuration; the difference, per statement and per record the log received, is the
cost of logging, repeatable between starts where timing on this machine is not.

:mod:`.spec` the configurations and profiles, :mod:`.pg` and :mod:`.mariadb` one counted start of each engine,
:mod:`.study` the plan and run, :mod:`.analysis` the figures, :mod:`.calibration` what it times beside the counts
(the write() floor, the time per instruction)."""

from __future__ import annotations

from .analysis import headline, per_record, per_repeat, summary
from .spec import PG_CONFIGURATIONS, PROFILES, SPEC, RecordCostStudy
from .study import define, load, plan, run, tables_of

__all__ = ["PG_CONFIGURATIONS", "PROFILES", "SPEC", "RecordCostStudy", "define", "headline", "load",
           "per_record", "per_repeat", "plan", "run", "summary", "tables_of"]
