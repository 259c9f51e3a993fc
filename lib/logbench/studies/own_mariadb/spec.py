"""The MariaDB/MySQL study on a user's server: its arms (what SET GLOBAL can switch), profiles, the study type and
its spec. No logic: the plan (study.py) reads these; the analysis is the one every study on a user's server shares
(:mod:`logbench.studies.on_user_server`)."""

from __future__ import annotations

from dataclasses import dataclass

from ...measure.design import Study
from ...servers.own_mariadb import Server
from ...workloads.workload import Workload
from .. import common
from ..on_user_server import handed_committed

NAME = "own_mariadb"
BASELINE = "none"
# The built-in load's database: created by the study, dropped after; one that exists already is refused (it may be
# somebody's).
BUILTIN_DB = "logbench_own_server"
BUILTIN_TEST = "oltp_point_select"

# Every arm sets every logging variable, so a switch lands on the same state whatever ran before it; the baseline
# logs nothing (a server that already has a slow log on is measured against none).
OFF = {"slow_query_log": "off", "general_log": "off", "log_output": "FILE", "long_query_time": "0"}
# name -> what it logs, as variables over OFF; each arm's records land in one destination
ARMS: dict[str, dict[str, str]] = {
    "none": {},
    "slow_file": {"slow_query_log": "on"},                         # every statement in the slow-log file
    "slow_table": {"slow_query_log": "on", "log_output": "TABLE"},  # every statement a row of mysql.slow_log
    "general_file": {"general_log": "on"},                         # every statement a line of the general log
}
DESTINATIONS = {"none": (), "slow_file": ("slow_file",), "slow_table": ("slow_table",),
                "general_file": ("general_file",)}

PROFILES: dict[str, dict[str, object]] = {
    # seconds: the tests and a first look at a server (2 blocks of 1 s runs)
    "smoke": {"arms": ["none", "slow_file"], "clients": [2], "repeats": 2, "duration": 1, "warmup": 0,
              "table_size": 1000, "idle_state": "free"},
    # a staging server: every arm, 5 blocks of 2 + 10 s runs at 1 and 4 clients (10 min of load)
    "standard": {"arms": list(ARMS), "clients": [1, 4], "repeats": 5, "duration": 10, "warmup": 2,
                 "table_size": 100000, "idle_state": "free"},
    "full": {"arms": list(ARMS), "clients": [1, 4, 16], "repeats": 8, "duration": 30, "warmup": 5,
             "table_size": 1000000, "idle_state": "free", "target_halfwidth": 0.02, "time_budget_s": 1800,
             "max_repeats": 12},
}


@dataclass(frozen=True, kw_only=True)
class OwnMariaDBStudy(Study):
    """A study on a MariaDB/MySQL the user names. Not a :class:`~logbench.measure.benches.mariadb.MariaDBStudy`: that
    type's fields describe a server the suite starts."""

    server: Server
    database: str  # the user's (their script runs there) or BUILTIN_DB (created and dropped by the study)
    builtin: bool
    script: str  # the user's sysbench Lua script, or BUILTIN_TEST
    script_options: tuple[str, ...]
    table_size: int  # the built-in load's rows; 0 for the user's own
    max_active: int
    sysbench: str

    @property
    def test_name(self) -> str:
        return self.script.rsplit("/", 1)[-1]

    @property
    def load(self) -> Workload:
        """The load every run dispatches, declared: the user's Lua script with its options, or the built-in test; its
        statements as plain text, counted by sysbench."""
        return Workload.sysbench(self.script, options=self.script_options)

    @property
    def load_seconds(self) -> float:
        """The load the plan puts on the server (warm-ups included), before any adaptive block."""
        return len(self.plan()) * (self.duration + self.warmup)


SPEC = common.StudySpec(
    name=NAME, engine="mariadb", title="Logging on your own MariaDB/MySQL", post="", baseline=BASELINE,
    notebook="13_own_mariadb.ipynb", seed=20261128,
    committed=handed_committed(NAME), smoke=(), measures_logging=True, paper_order=121)

__all__ = ["ARMS", "BASELINE", "BUILTIN_DB", "BUILTIN_TEST", "DESTINATIONS", "NAME", "OFF", "PROFILES", "SPEC",
           "OwnMariaDBStudy"]
