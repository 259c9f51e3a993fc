"""Study 06's declarations: its name, methods and workloads, the server's base settings, profiles, study type and
registry spec (no logic). The bottom of the package: the bench, the analysis and the plan all read these."""

from __future__ import annotations

from dataclasses import dataclass

from ...measure.benches import mariadb as mb
from ...workloads.workload import Workload
from .. import common

NAME = "log_rotation"
POST = "002_6799d5933fa4bed1.txt"
BACKENDS = mb.BACKENDS  # "auto", "local", "container"
BASELINE = "none"
METHODS = ("none", "copytruncate", "rename_flush", "rename_flush_disabled", "ebook_long_query_time")
WORKLOADS = ("oltp_point_select", "oltp_read_write")
# Each workload's load, declared (issue 39): sysbench's test, its statements as plain text, counted by sysbench.
LOADS = {w: Workload.sysbench(w) for w in WORKLOADS}
SETTLE_S = 1.0  # seconds after the rotation still counted as its window

# Every statement logged to a file, as in the ebook's high-volume case; otherwise post 001's base.
BASE = {**mb.BASE, "slow_query_log": True, "long_query_time": 0, "innodb_buffer_pool_size": "256M"}

PROFILES: dict[str, dict[str, object]] = {
    "smoke": {"clients": [2], "repeats": 1, "duration": 5, "rotate_at": 2.0, "log_size_mb": 4, "pause": 0.3,
              "tables": 1, "table_size": 2000, "tracer_rate": 100},
    # the committed run: ~6 minutes on two cores
    "standard": {"clients": [4], "repeats": 5, "duration": 10, "rotate_at": 5.0, "log_size_mb": 128, "pause": 1.0,
                 "tables": 2, "table_size": 20000, "tracer_rate": 200},
    # the ebook's numbers: a 1 GB log, its 2-second pauses
    "full": {"clients": [4, 16], "repeats": 10, "duration": 20, "rotate_at": 10.0, "log_size_mb": 1024, "pause": 2.0,
             "tables": 4, "table_size": 100000, "tracer_rate": 200},
}


@dataclass(frozen=True, kw_only=True)
class LogRotationStudy(mb.MariaDBStudy):
    workload: str
    rotate_at: float
    log_size_mb: int
    pause: float
    tracer_rate: float

    @property
    def load(self) -> Workload:
        """The declared load (LOADS) of the study's workload, which every run of it dispatches."""
        return LOADS[self.workload]


SPEC = common.StudySpec(
    name=NAME, engine="mariadb", title="Rotating a busy MariaDB slow log", post=POST, baseline=BASELINE,
    notebook="06_log_rotation.ipynb", seed=20121122, committed={"profile": "standard", "backend": "local", "publish": True},
    smoke=({"profile": "smoke", "backend": "local"},), paper_order=3,
    # Every run logs every statement; the records beyond one per statement are tracers, whose count grows with the
    # run's own slowness (records per transaction = 1 + tracer records / transactions).
    not_line_cost="its configurations differ in how the log is rotated, not in what is logged; the extra records "
                  "are tracer queries, whose count per transaction grows as the run slows")
