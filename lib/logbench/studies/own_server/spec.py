"""Study 12's declarations: its arms (what a reload can switch on a user's server), profiles, the study type and its
spec. No logic: the plan (study.py) and the analysis read these."""

from __future__ import annotations

from dataclasses import dataclass

from ...measure.design import Study
from ...servers.own_postgres import APP, FILE_DESTINATIONS, Dsn
from ...workloads.user_scripts import Script
from .. import common
from ..on_user_server import handed_committed

NAME = "own_server"
BASELINE = "none"
# The built-in load's database: created by the study, dropped after; one that exists already is refused (it may be
# somebody's).
BUILTIN_DB = "logbench_own_server"
QUERY_MODES = ("simple", "prepared")

# Every arm sets every statement-logging setting, so a switch lands on the same state whatever ran before it; the
# baseline turns statement logging off (a server that already logs slow statements is measured against none).
OFF = {"log_min_duration_statement": "-1", "log_statement": "none", "log_min_duration_sample": "-1"}
# name -> what it logs, as settings over OFF; "{slow_ms}" and "{sample_rate}" are the study's parameters
ARMS: dict[str, dict[str, str]] = {
    "none": {},
    "min_duration_0": {"log_min_duration_statement": "0"},     # every statement with its duration
    "statement_all": {"log_statement": "all"},                 # every statement's text, no duration
    "sampled": {"log_min_duration_sample": "0"},               # a share (sample_rate) of them, with durations
    "slow": {"log_min_duration_statement": "{slow_ms}"},       # the DBA's usual threshold: only the slow ones
}
# The records due per statement are known only where every statement is logged; the others are counted.
COUNTED_ONLY = ("sampled", "slow")

PROFILES: dict[str, dict[str, object]] = {
    # seconds: the tests and a first look at a server (2 blocks of 1 s runs)
    "smoke": {"arms": ["none", "min_duration_0"], "clients": [2], "repeats": 2, "duration": 1, "warmup": 0,
              "scale": 1, "idle_state": "free"},
    # a staging server: every arm, 5 blocks of 2 + 10 s runs at 1 and 4 clients (12 min of load)
    "standard": {"arms": list(ARMS), "clients": [1, 4], "repeats": 5, "duration": 10, "warmup": 2, "scale": 10,
                 "idle_state": "free"},
    "full": {"arms": list(ARMS), "clients": [1, 4, 16], "repeats": 8, "duration": 30, "warmup": 5, "scale": 100,
             "idle_state": "free", "target_halfwidth": 0.02, "time_budget_s": 1800, "max_repeats": 12},
}


@dataclass(frozen=True, kw_only=True)
class OwnServerStudy(Study):
    """A study on a server the user names. Not a :class:`~logbench.measure.benches.postgres.PgStudy`: that type's fields
    describe a server the suite starts (base settings checked against local binaries, syslog daemons, images), none
    of which holds for a server that runs already."""

    server: Dsn
    database: str  # the user's (their scripts run there) or BUILTIN_DB (created and dropped by the study)
    builtin: bool
    scripts: tuple[Script, ...]  # empty for the built-in load (written at run time with the scale in it)
    query_mode: str
    scale: int  # the built-in load's dataset; 0 for the user's own
    destination: str
    max_active: int
    pg_bindir: str
    slow_ms: int
    sample_rate: float

    @property
    def load_seconds(self) -> float:
        """The load the plan puts on the server (warm-ups included), before any adaptive block."""
        return len(self.plan()) * (self.duration + self.warmup)


SPEC = common.StudySpec(
    name=NAME, engine="postgresql", title="Logging on your own PostgreSQL", post="", baseline=BASELINE,
    notebook="12_own_server.ipynb", seed=20261128,
    committed=handed_committed(NAME), smoke=(), measures_logging=True, paper_order=120)

__all__ = ["APP", "ARMS", "BASELINE", "BUILTIN_DB", "COUNTED_ONLY", "FILE_DESTINATIONS", "NAME", "OFF", "PROFILES",
           "QUERY_MODES", "SPEC", "OwnServerStudy"]
