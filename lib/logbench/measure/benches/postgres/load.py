"""What a PostgreSQL study's runs measure, declared as a value: its :class:`Load` (issue 39: "a study declares its
load instead of writing a bench"). The shared bench dispatches it (:mod:`.bench`, :mod:`.imports`,
:func:`.stack.start`); a study only says which load, in :class:`.study.PgStudy`'s ``loads``.

    >>> from logbench.workloads.workload import Import, Workload
    >>> Load().label("prepared")
    'pgbench -S'
    >>> oltp = Load(Workload.pgbench("tpcb-like", transactions=15_000), wal=True, checkpoint_first=True,
    ...             tags=(("phase", "oltp"),))
    >>> oltp.label("simple"), oltp.fresh, Load(Import(scale=100, fillfactor=70)).fresh
    ('pgbench TPC-B-like (-t)', False, True)
"""

from __future__ import annotations

from dataclasses import dataclass

from ....base.errors import ParameterError
from ....workloads.workload import SELECT_ONLY, Import, Workload


@dataclass(frozen=True)
class Load:
    # The load: a pgbench Workload (timed or counted) run on the study's server, or an Import run on a fresh server
    # per run. None: pgbench -S over the study's query mode, the load of every study that declares none.
    workload: Workload | Import | None = None
    # WAL counted around each measured run (and each import step): .wal's differences, per transaction too.
    wal: bool = False
    # A CHECKPOINT before each measured run: every run starts with the same full-page-image debt.
    checkpoint_first: bool = False
    # Entries every run's ``extra`` keeps as they are (study 07: its phase), (key, value) pairs.
    tags: tuple[tuple[str, object], ...] = ()

    def __post_init__(self) -> None:
        if self.workload is not None and not isinstance(self.workload, (Workload, Import)):
            raise ParameterError("load.workload", self.workload, "None (pgbench -S), a Workload or an Import")
        if isinstance(self.workload, Workload) and self.workload.tool != "pgbench":
            raise ParameterError("load.workload", self.workload.label, "a pgbench Workload (Workload.pgbench): a "
                                 "PostgreSQL server's load")
        if isinstance(self.workload, Import) and self.checkpoint_first:
            raise ParameterError("load.checkpoint_first", True, "False for an Import (each run's server is new)")

    def workload_for(self, query_mode: str) -> Workload | Import:
        """The load a run of a study in ``query_mode`` runs."""
        return self.workload if self.workload is not None else Workload.pgbench(SELECT_ONLY, query_mode)

    def label(self, query_mode: str) -> str:
        """The run record's ``workload``."""
        return self.workload_for(query_mode).label

    @property
    def fresh(self) -> bool:
        """Each run on a server of its own, started for it (an import), not on the study's running server."""
        return isinstance(self.workload, Import)

    def as_dict(self) -> dict[str, object]:
        return {"workload": None if self.workload is None else self.workload.as_dict(), "wal": self.wal,
                "checkpoint_first": self.checkpoint_first, "tags": dict(self.tags)}


DEFAULT = Load()
