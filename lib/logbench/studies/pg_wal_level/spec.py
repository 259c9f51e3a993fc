"""Study 07's declarations: its name, levels and phases, profiles, study type and registry spec (no logic).

The bottom of the package (above its bench): the analysis and the study's plan both read these, so neither
imports the other's module for a constant.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...measure.benches import postgres as pg
from .. import common
from . import bench

NAME = "pg_wal_level"
BASELINE = "minimal"
POST = "004_5cd3e575f4305811.txt"
LEVELS = tuple(bench.WAL_LEVELS)
PHASES = ("import", "oltp")

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
    transactions: int = 1
    import_scale: int = 1
    fillfactor: int = 70
    generate: str = "g"


SPEC = common.StudySpec(
    name=NAME, engine="postgresql", title="PostgreSQL WAL volume by wal_level", post=POST, baseline=BASELINE,
    notebook="07_pg_wal_level.ipynb", seed=20140321, committed={"profile": "standard", "publish": True},
    paper_order=7,
    not_line_cost="its configurations differ in how much WAL is written (wal_level), not in what is logged")
