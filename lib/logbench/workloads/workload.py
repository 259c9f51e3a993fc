"""A study's load as a value (issue 39: "a Workload (script or built-in, protocol, records per transaction counted)
that the runner dispatches, so a study declares its load instead of writing a bench").

A :class:`Workload` says which load tool runs which script over which protocol, and what one transaction of it
leaves in a fully kept statement log: the records the runner expects, to set against those the sinks received. Its
``label`` is the run record's ``workload`` field. So far the PostgreSQL load tool reads it
(:meth:`logbench.workloads.pgbench.Pgbench.command`: the select-only built-in is its default, with the argv and the
record counts the tool had before).

    >>> w = Workload.pgbench("select-only", "prepared")
    >>> w.label, w.script_args(), w.records(transactions=1000, clients=4)
    ('pgbench -S', ['-S'], 2004)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..base.errors import ParameterError

# pgbench's built-in scripts (pgbench -b NAME) and the statements one transaction of each sends; select-only is
# pgbench -S (its record counts were counted on real servers: tests/test_pg_integration.py).
PGBENCH_BUILTINS = {"select-only": 1, "simple-update": 5, "tpcb-like": 7}
# Statement-log records per statement of a transaction, and per statement once per connection, by protocol: the
# simple protocol logs a statement once; prepared mode logs its bind and its execute each time, its parse once per
# connection. The extended protocol (parse, bind and execute every time) is not counted here yet.
PGBENCH_RECORDS = {"simple": (1, 0), "prepared": (2, 1)}


@dataclass(frozen=True)
class Workload:
    tool: str  # "pgbench" (so far the only one dispatched)
    script: str  # a built-in's name (PGBENCH_BUILTINS), or a user's script file
    protocol: str  # pgbench -M: "simple" | "prepared"
    statements: int  # statements one transaction sends (a built-in's is known; a script's is declared with it)

    @classmethod
    def pgbench(cls, script: str = "select-only", protocol: str = "simple", *,
                statements: int | None = None) -> "Workload":
        """A pgbench load: a built-in script by name, or a script file (its statements per transaction given);
        ParameterError naming the field and its allowed values otherwise."""
        if protocol not in PGBENCH_RECORDS:
            raise ParameterError("workload.protocol", protocol, tuple(PGBENCH_RECORDS))
        if script in PGBENCH_BUILTINS:
            known = PGBENCH_BUILTINS[script]
            if statements not in (None, known):
                raise ParameterError("workload.statements", statements, f"{known} (built-in {script!r}) or None")
            return cls("pgbench", script, protocol, known)
        if not Path(script).is_file():
            raise ParameterError("workload.script", script, f"a built-in ({', '.join(PGBENCH_BUILTINS)}) or an "
                                 "existing pgbench script file")
        if isinstance(statements, bool) or not isinstance(statements, int) or statements < 1:
            raise ParameterError("workload.statements", statements, "the statements one transaction of the script "
                                 "sends, a whole number ≥ 1")
        return cls("pgbench", str(script), protocol, statements)

    @property
    def builtin(self) -> bool:
        return self.script in PGBENCH_BUILTINS

    @property
    def label(self) -> str:
        """The run record's ``workload``: 'pgbench -S' for select-only, as every run recorded it so far."""
        return f"pgbench {' '.join(self.script_args() if self.builtin else ['-f', Path(self.script).name])}"

    def script_args(self) -> list[str]:
        """The load tool's arguments that pick the script (the protocol's, -M, are the caller's to place)."""
        if self.script == "select-only":
            return ["-S"]
        return ["-b", self.script] if self.builtin else ["-f", self.script]

    def records(self, transactions: int, clients: int) -> int:
        """Statement records a fully logged run writes: per transaction, and once per connection."""
        per_statement, per_connection = PGBENCH_RECORDS[self.protocol]
        return self.statements * (transactions * per_statement + clients * per_connection)


SELECT_ONLY = "select-only"
