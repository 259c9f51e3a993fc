"""Study 07's declarations: its name, what each level sets, its phases and the load each phase runs, profiles,
study type and registry spec (no logic; no bench of its own: the shared PostgreSQL bench runs the declared loads).

The bottom of the package: the analysis and the study's plan both read these, so neither imports the other's module
for a constant.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...measure.benches import postgres as pg
from ...workloads.workload import Import, Workload
from .. import common

NAME = "pg_wal_level"
BASELINE = "minimal"
POST = "004_5cd3e575f4305811.txt"

# What each level requires (post 004's archive / hot_standby are replica since PostgreSQL 9.6):
# minimal refuses to start with WAL senders or archiving configured; archiving is off for every level in the
# base (WAL_BASE: a postmaster setting left at its value is never re-read on reload, so it cannot be a
# configuration's own), max_wal_senders = 0 is minimal's.
WAL_LEVELS: dict[str, dict[str, object]] = {
    "minimal": {"wal_level": "minimal", "max_wal_senders": 0},
    "replica": {"wal_level": "replica"},
    "logical": {"wal_level": "logical"},
}
# Base settings for WAL measurements: no checkpoint inside a measured window (a checkpoint moves the full-page
# images to whichever run follows it), no autovacuum (its WAL would land on whichever run it overlapped).
WAL_BASE = {"max_wal_size": "8GB", "checkpoint_timeout": "1h", "autovacuum": False, "archive_mode": False}
LEVELS = tuple(WAL_LEVELS)
PHASES = ("import", "oltp")


def level_settings(names: tuple[str, ...]) -> dict[str, tuple[dict, tuple]]:
    """name -> (settings over the base, no sinks), as :func:`benches.postgres.configurations` takes them."""
    return {n: (dict(WAL_LEVELS[n]), ()) for n in names}


def loads(*, import_scale: int, fillfactor: int, generate: str, transactions: int) -> dict[str, pg.Load]:
    """What each phase measures, WAL counted around it (the phase's name kept in each run's record):

    - **import**: a fresh instance per run at the level (the post's "freshly created test instance"), then
      ``pgbench -i -F fillfactor`` one step at a time at ``import_scale``;
    - **oltp**: the study's server (restarted to change the level; its dataset at the study's scale, -F
      fillfactor), a checkpoint before each run so every run starts with the same full-page-image debt, then
      ``transactions`` of pgbench's TPC-B-like default script, split evenly over the clients.
    """
    return {"import": pg.Load(Import(import_scale, fillfactor, generate), wal=True, tags=(("phase", "import"),)),
            "oltp": pg.Load(Workload.pgbench("tpcb-like", "simple", transactions=transactions), wal=True,
                            checkpoint_first=True, tags=(("phase", "oltp"),))}

# duration: nominal seconds of a run, for the runner's pacing only (runs are fixed-size, not timed).
# scale: the OLTP dataset; import_scale: the import runs' (the post imported scale 100). minimal's WAL hardly grows
# with the data while replica's does, so the import's ratio is a function of the scale: only the post's scale
# answers its claim.
PROFILES: dict[str, dict[str, object]] = {
    "smoke": {"clients": [1], "repeats": 1, "duration": 1, "warmup": 0, "scale": 1, "import_scale": 1,
              "transactions": 200},
    # ~6 min on two cores (the committed run of 2026-11-25): 8 runs a block (3 levels + A/A, 2 phases) x 5 blocks;
    # an import run (initdb, start, scale 100 step by step, stop) 8-12 s, an OLTP run (restart, checkpoint,
    # 2 s warm-up, 15,000 transactions on 2 clients) ~5-6 s
    "standard": {"clients": [2], "repeats": 5, "duration": 15, "warmup": 2, "scale": 20, "import_scale": 100,
                 "transactions": 15_000},
    # the post's scale 100 and its 160,000 transactions per OLTP run
    "full": {"clients": [2], "repeats": 5, "duration": 160, "warmup": 5, "scale": 100, "import_scale": 100,
             "transactions": 160_000},
}


@dataclass(frozen=True, kw_only=True)
class WalLevelStudy(pg.PgStudy):
    # the parameters behind its declared loads (``loads``), kept as the study's own for its tables and record
    transactions: int = 1
    import_scale: int = 1
    fillfactor: int = 70
    generate: str = "g"


SPEC = common.StudySpec(
    name=NAME, engine="postgresql", title="PostgreSQL WAL volume by wal_level", post=POST, baseline=BASELINE,
    notebook="07_pg_wal_level.ipynb", seed=20140321, committed={"profile": "standard", "publish": True},
    paper_order=7,
    not_line_cost="its configurations differ in how much WAL is written (wal_level), not in what is logged")
