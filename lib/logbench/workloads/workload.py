"""A study's load as a value (issue 39: "a Workload (script or built-in, protocol, records per transaction counted)
that the runner dispatches, so a study declares its load instead of writing a bench").

A :class:`Workload` says which load tool runs which script over which protocol, for how long (the run's seconds, or
a fixed count of transactions), and what one transaction of it leaves in a fully kept statement log: the records the
runner expects, to set against those the sinks received. An :class:`Import` is the other load a study can measure:
``pgbench -i`` itself, one initialisation step at a time. Their ``label`` is the run record's ``workload`` field. A
study declares one (``measure.benches.postgres.Load``); the shared PostgreSQL bench runs it
(:meth:`logbench.workloads.pgbench.Pgbench.command` builds its argv). A MariaDB study's load is a sysbench
``Workload`` (a bundled test or a Lua script, its options, plain-text statements counted by sysbench itself), which
the shared sysbench bench runs (``measure.benches.mariadb.SysbenchBench``; its argv
:meth:`logbench.workloads.sysbench.Sysbench.command`'s).

    >>> w = Workload.pgbench("select-only", "prepared")
    >>> w.label, w.script_args(), w.records(transactions=1000, clients=4)
    ('pgbench -S', ['-S'], 2004)
    >>> tpcb = Workload.pgbench("tpcb-like", transactions=15_000)
    >>> tpcb.label, tpcb.script_args(), tpcb.per_client(4)
    ('pgbench TPC-B-like (-t)', [], 3750)
    >>> rw = Workload.sysbench("oltp_read_write")
    >>> rw.label, rw.ps_mode, rw.statements, rw.records(transactions=100, clients=4)
    ('sysbench oltp_read_write', 'disable', 20, 2000)
    >>> Import(scale=100, fillfactor=70).steps()
    (('dt', 'dt'), ('gen', 'g'), ('v', 'v'), ('p', 'p'))
"""

from __future__ import annotations

import dataclasses
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import ClassVar

from ..base.errors import ParameterError

# pgbench's built-in scripts (pgbench -b NAME) and the statements one transaction of each sends; select-only is
# pgbench -S (its record counts were counted on real servers: tests/test_pg_integration.py).
PGBENCH_BUILTINS = {"select-only": 1, "simple-update": 5, "tpcb-like": 7}
# The run record's name of each built-in: the names every committed run recorded ("pgbench -S" of the select-only
# studies, "pgbench TPC-B-like" of study 07's OLTP runs).
BUILTIN_LABELS = {"select-only": "pgbench -S", "simple-update": "pgbench -b simple-update",
                  "tpcb-like": "pgbench TPC-B-like"}
# Statement-log records per statement of a transaction, and per statement once per connection, by protocol: the
# simple protocol logs a statement once; prepared mode logs its bind and its execute each time, its parse once per
# connection. The extended protocol (parse, bind and execute every time) is not counted here yet.
PGBENCH_RECORDS = {"simple": (1, 0), "prepared": (2, 1)}
SELECT_ONLY = "select-only"

# sysbench's bundled OLTP tests and the statements one transaction of each sends with its default options
# (workloads.sysbench's notes: oltp_read_write's 10 point selects, 4 range queries, 2 updates, a delete and an
# insert between BEGIN and COMMIT).
SYSBENCH_TESTS = {"oltp_read_write": 20, "oltp_point_select": 1, "oltp_read_only": 16, "oltp_write_only": 6}
# A sysbench load's protocol and its --db-ps-mode: "text" sends every statement as plain text, as the posts' DBT2
# did, so each is one "Query" line of the general log and one slow-log entry, and sysbench's own count of its
# queries is the count of statements the server logs; "prepared" lets sysbench prepare them (not counted here).
SYSBENCH_PS_MODES = {"text": "disable", "prepared": "auto"}


def _known_statements(known: int, declared: object, what: str) -> int:
    """A built-in load's statements per transaction: known, so a declared count must be that one (or None)."""
    if declared not in (None, known):
        raise ParameterError("workload.statements", declared, f"{known} ({what}) or None")
    return known


@dataclass(frozen=True)
class Workload:
    tool: str  # "pgbench" | "sysbench"
    # a built-in's name (PGBENCH_BUILTINS, SYSBENCH_TESTS), or a user's script file (SQL for pgbench, Lua for sysbench)
    script: str
    protocol: str  # pgbench -M: "simple" | "prepared"; sysbench: "text" | "prepared" (SYSBENCH_PS_MODES)
    # statements one transaction sends (a built-in's is known; a pgbench script's is declared with it; 0: a sysbench
    # script's, unknown: sysbench counts the statements it sent itself, and the records expected follow its count)
    statements: int
    # Transactions per run, split evenly over the clients (pgbench -t): a load whose size, not its time, is fixed
    # (study 07's WAL per transaction). None: the run's seconds (pgbench -T, sysbench --time), as every timed study
    # runs.
    transactions: int | None = None
    # the script's own options (sysbench --name=value, after the connection and the tables), in their order
    options: tuple[str, ...] = ()

    @classmethod
    def pgbench(cls, script: str = SELECT_ONLY, protocol: str = "simple", *,
                statements: int | None = None, transactions: int | None = None) -> "Workload":
        """A pgbench load: a built-in script by name, or a script file (its statements per transaction given), timed
        or of ``transactions`` per run; ParameterError naming the field and its allowed values otherwise."""
        if protocol not in PGBENCH_RECORDS:
            raise ParameterError("workload.protocol", protocol, tuple(PGBENCH_RECORDS))
        if transactions is not None and (isinstance(transactions, bool) or not isinstance(transactions, int)
                                         or transactions < 1):
            raise ParameterError("workload.transactions", transactions, "None (timed: the run's seconds) or the "
                                 "transactions of a run, a whole number ≥ 1")
        if script in PGBENCH_BUILTINS:
            known = _known_statements(PGBENCH_BUILTINS[script], statements, f"built-in {script!r}")
            return cls("pgbench", script, protocol, known, transactions)
        if not Path(script).is_file():
            raise ParameterError("workload.script", script, f"a built-in ({', '.join(PGBENCH_BUILTINS)}) or an "
                                 "existing pgbench script file")
        if isinstance(statements, bool) or not isinstance(statements, int) or statements < 1:
            raise ParameterError("workload.statements", statements, "the statements one transaction of the script "
                                 "sends, a whole number ≥ 1")
        return cls("pgbench", str(script), protocol, statements, transactions)

    @classmethod
    def sysbench(cls, test: str = "oltp_point_select", protocol: str = "text", *, options: tuple[str, ...] = (),
                 statements: int | None = None) -> "Workload":
        """A sysbench load by time: a bundled OLTP test by name (SYSBENCH_TESTS), or a Lua script file, with its own
        ``--name=value`` options; ParameterError naming the field and its allowed values otherwise."""
        if protocol not in SYSBENCH_PS_MODES:
            raise ParameterError("workload.protocol", protocol, tuple(SYSBENCH_PS_MODES))
        if isinstance(options, str) or not all(isinstance(o, str) and o.startswith("--") for o in options):
            raise ParameterError("workload.options", options, "the script's own options, each '--name=value' (or a "
                                 "bare '--name')")
        if test in SYSBENCH_TESTS:
            known = _known_statements(SYSBENCH_TESTS[test], statements, f"sysbench {test}")
            return cls("sysbench", test, protocol, known, None, tuple(options))
        if not Path(test).is_file():
            raise ParameterError("workload.script", test, f"a sysbench test ({', '.join(SYSBENCH_TESTS)}) or an "
                                 "existing sysbench Lua script file")
        if statements is not None and (isinstance(statements, bool) or not isinstance(statements, int)
                                       or statements < 1):
            raise ParameterError("workload.statements", statements, "None (sysbench counts them) or the statements "
                                 "one transaction of the script sends, a whole number ≥ 1")
        return cls("sysbench", str(test), protocol, statements or 0, None, tuple(options))

    @property
    def builtin(self) -> bool:
        return self.script in (SYSBENCH_TESTS if self.tool == "sysbench" else PGBENCH_BUILTINS)

    @property
    def counted(self) -> bool:
        return self.transactions is not None

    @property
    def label(self) -> str:
        """The run record's ``workload``: 'pgbench -S' for select-only, as every run recorded it so far; a counted
        load says so ('(-t)'); 'sysbench <test>' (a script: its file's name), as every MariaDB run recorded it."""
        if self.tool == "sysbench":
            return f"sysbench {self.script if self.builtin else Path(self.script).name}"
        name = BUILTIN_LABELS[self.script] if self.builtin else f"pgbench -f {Path(self.script).name}"
        return f"{name} (-t)" if self.counted else name

    @property
    def ps_mode(self) -> str:
        """sysbench --db-ps-mode of a sysbench load."""
        return SYSBENCH_PS_MODES[self.protocol]

    def script_args(self) -> list[str]:
        """The load tool's arguments that pick the script (the protocol's, -M, are the caller's to place);
        tpcb-like is pgbench's default script, named by no argument (as the post ran it); sysbench's test or script
        comes first, its options after the connection (:meth:`logbench.workloads.sysbench.Sysbench.command`)."""
        if self.tool == "sysbench":
            return [self.script]
        if self.script == SELECT_ONLY:
            return ["-S"]
        if self.script == "tpcb-like":
            return []
        return ["-b", self.script] if self.builtin else ["-f", self.script]

    def per_client(self, clients: int) -> int:
        """pgbench -t of a counted load: its transactions split evenly over the clients, at least one each."""
        if self.transactions is None:
            raise ValueError("a timed load has no transactions per client")
        return max(1, self.transactions // clients)

    def timed(self) -> "Workload":
        """The same script run by time (a warm-up of a counted load lasts the warm-up's seconds)."""
        return dataclasses.replace(self, transactions=None)

    def records(self, transactions: int, clients: int) -> int:
        """Statement records a fully logged run writes: per transaction, and once per connection (a sysbench load
        in text: one per statement, the statements of a built-in test's transactions)."""
        if self.tool == "sysbench":
            if self.protocol != "text" or not self.statements:
                raise ValueError(f"the records of {self.label} over {self.protocol!r} are sysbench's count of its "
                                 "statements, not a number per transaction")
            return self.statements * transactions
        per_statement, per_connection = PGBENCH_RECORDS[self.protocol]
        return self.statements * (transactions * per_statement + clients * per_connection)

    def as_dict(self) -> dict[str, object]:
        return {**asdict(self), "label": self.label}


# pgbench's client-side (COPY) or server-side (INSERT ... SELECT generate_series) data generation step
GENERATE = ("g", "G")


@dataclass(frozen=True)
class Import:
    """``pgbench -i`` as the measured load (study 07's import): every run imports into a freshly started server at
    the configuration's settings (the post's "freshly created test instance"), pgbench -i's default steps one at a
    time (``-I dt``, ``-I g`` or ``G``, ``-I v``, ``-I p``), so each step's seconds (and WAL, if counted) are its
    own. The run's "transactions" are the rows loaded, its "tps" rows per second of import."""

    scale: int
    fillfactor: int = 100  # pgbench -F
    generate: str = "g"  # GENERATE

    # the steps' names in the run record (f"{step}_seconds", ...) and pgbench's letters of each but the generation
    STEPS: ClassVar[tuple[str, ...]] = ("dt", "gen", "v", "p")
    ROWS_PER_SCALE: ClassVar[int] = 100_000
    label: ClassVar[str] = "pgbench -i (step by step)"
    protocol: ClassVar[str] = "simple"

    def __post_init__(self) -> None:
        for name in ("scale", "fillfactor"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ParameterError(f"import.{name}", v, "a whole number ≥ 1")
        if not 10 <= self.fillfactor <= 100:
            raise ParameterError("import.fillfactor", self.fillfactor, "a whole number from 10 to 100 (pgbench -F)")
        if self.generate not in GENERATE:
            raise ParameterError("import.generate", self.generate, GENERATE)

    def steps(self) -> tuple[tuple[str, str], ...]:
        """(step, pgbench -I letters) in pgbench's default order."""
        return tuple(zip(self.STEPS, ("dt", self.generate, "v", "p")))

    @property
    def rows(self) -> int:
        return self.scale * self.ROWS_PER_SCALE

    def as_dict(self) -> dict[str, object]:
        return {**asdict(self), "label": self.label}
