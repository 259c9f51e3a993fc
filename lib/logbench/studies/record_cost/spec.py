"""Study 11's declarations: what a log record costs, counted (issue 38). Its configurations, profiles and registry
spec; no logic.

Each PostgreSQL configuration is settings over post 000's base (``benches.postgres.BASE``, the destinations of
study 02) with the idle state held still (:data:`HOLD`), a protocol, and the baseline its per-record figure is
taken against (the same protocol with nothing logged). MariaDB's are its module's (:mod:`.mariadb`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ...measure.benches.postgres import DESTINATIONS
from .. import common

NAME = "record_cost"
POST = "000_d12f15a856ad9e5d.txt"  # the destinations post; 003's and 004's settings ride along
BACKENDS = ("local",)
COUNTERS = ("cachegrind", "strace")

# What would move a count between two starts of the same configuration, held still: no autovacuum worker and no
# timed checkpoint during a load (each start's data directory is the same copy, so nothing is due either).
HOLD = {"autovacuum": False, "checkpoint_timeout": "1d"}

_ALL = {"log_min_duration_statement": 0}


@dataclass(frozen=True)
class PgConfiguration:
    settings: dict  # over BASE and HOLD
    protocol: str  # pgbench -M
    baseline: str  # the configuration it is compared with: same protocol, nothing logged
    syslog: bool = False  # a private rsyslogd, counted too
    remote: bool = False  # ... forwarding to a log host in a network namespace (its receiver is not counted)
    what: str = ""


def _destination(name: str) -> PgConfiguration:
    settings, sinks = DESTINATIONS[name]
    syslog = any(s in ("syslog", "remote_syslog") for s in sinks)
    return PgConfiguration(settings, "prepared", "none", syslog=syslog, remote="remote_syslog" in sinks,
                           what=f"every statement to {name} (study 02's arm)")


PG_CONFIGURATIONS: dict[str, PgConfiguration] = {
    "none": PgConfiguration({}, "prepared", "none", what="nothing logged (the baseline)"),
    **{n: _destination(n) for n in ("stderr", "csvlog", "jsonlog", "syslog", "syslog,csvlog", "remote_syslog_udp")},
    "log_statement_all": PgConfiguration({"log_statement": "all"}, "prepared", "none",
                                         what="log_statement = all: a statement record before execution (post 003, 004)"),
    "log_duration": PgConfiguration({"log_duration": True}, "prepared", "none",
                                    what="log_duration = on: a bare duration record per protocol message (post 003)"),
    "prefix_default": PgConfiguration({**_ALL, "log_line_prefix": "%m [%p] "}, "prepared", "none",
                                      what="stderr with PostgreSQL's default prefix '%m [%p] '"),
    "prefix_production": PgConfiguration({**_ALL, "log_line_prefix": "%t [%p] %u@%d %a "}, "prepared", "none",
                                         what="stderr with a production prefix '%t [%p] %u@%d %a '"),
    "sample_1pct": PgConfiguration({"log_min_duration_sample": 0, "log_statement_sample_rate": 0.01}, "prepared",
                                   "none", what="1 % of statements sampled to stderr (study 02's arm)"),
    "sample_10pct": PgConfiguration({"log_min_duration_sample": 0, "log_statement_sample_rate": 0.1}, "prepared",
                                    "none", what="10 % of statements sampled to stderr (study 02's arm)"),
    "track_io_timing": PgConfiguration({"track_io_timing": True}, "prepared", "none",
                                       what="track_io_timing = on: no record, a clock read per block IO (post 003)"),
    "none_simple": PgConfiguration({}, "simple", "none_simple", what="nothing logged, simple protocol"),
    "stderr_simple": PgConfiguration(_ALL, "simple", "none_simple", what="every statement to stderr, simple protocol"),
}

PROFILES: dict[str, dict[str, object]] = {
    # seconds: what tests and nbval run: the baseline and one destination, one repeat, instructions only
    "smoke": {"configurations": ["none", "stderr"], "mariadb_configurations": [], "repeats": 1,
              "transactions": [50, 250], "counters": ["cachegrind"], "versions": [],
              "calibration_repeats": 3, "calibration_seconds": 1},
    # the committed run: every configuration, 3 starts of each size under each counter; then the calibration
    # (calibration.py): 5 timed loads of 8 s, about 45 s with the write() floor. A profile without the calibration's
    # keys (the versions) calibrates nothing
    "standard": {"configurations": list(PG_CONFIGURATIONS), "mariadb_configurations": None, "repeats": 3,
                 "transactions": [200, 1000], "counters": list(COUNTERS), "versions": [],
                 "calibration_repeats": 5, "calibration_seconds": 8},
    "full": {"configurations": list(PG_CONFIGURATIONS), "mariadb_configurations": None, "repeats": 5,
             "transactions": [500, 2500], "counters": list(COUNTERS), "versions": [],
             "calibration_repeats": 10, "calibration_seconds": 10},
    # the versions: Debian's PostgreSQL 13, 15 and 17 and MariaDB 10.5, 10.11 and 11.8, each in its
    # release's container (its compiler, libc and tools). PostgreSQL: the destinations a container reaches without
    # the private syslog daemon, and the two settings of post 003; 5 configurations x 2 sizes x 2 counters x 3
    # repeats x 3 versions = 180 starts, measured in a container: 5.5-8.5 s a start under cachegrind, 1.3-1.8 s
    # under strace (~13 min, and ~10 s of set-up per version). MariaDB: the baseline, the slow log to a file and to
    # its table, the general log; 4 configurations x (1 callgrind start of both sizes + 2 strace starts) x 3 repeats
    # x 3 versions = 108 starts, measured in the containers: a callgrind start 6-8 s (10.5, 10.11) and 9-14 s (11.8:
    # its start-up runs ~8 s longer under valgrind), a strace start 1.0-1.5 s (11.8: 1.3-3.3 s); one repeat of the
    # three versions took 145 s with their set-up (~7 min for three repeats: ~20 min with PostgreSQL's)
    "versions": {"configurations": ["none", "stderr", "csvlog", "log_statement_all", "log_duration"],
                 "mariadb_configurations": ["none", "slow_file", "slow_table", "general_file"], "repeats": 3,
                 "transactions": [200, 1000], "counters": list(COUNTERS),
                 "versions": ["13", "15", "17", "10.5", "10.11", "11.8"]},
}


@dataclass(frozen=True)
class RecordCostStudy:
    name: str
    profile: str
    configurations: tuple[str, ...]  # PostgreSQL's, each with its baseline
    mariadb_configurations: tuple[str, ...]
    repeats: int  # independent starts of each (configuration, size, counter)
    transactions: tuple[int, int]  # the small and the large load: their difference is what is counted
    counters: tuple[str, ...]
    scale: int
    seed: int
    pg_bindir: str
    mariadbd: str | None
    output_dir: Path
    processed_dir: Path | None
    backend: str = "local"
    publish: bool = False
    # PostgreSQL and MariaDB versions of docker/servers.tsv (a version names its engine), each counted in its
    # container (Debian's build on its own release); an engine none of them names runs this machine's binaries
    versions: tuple[str, ...] = ()
    calibration_repeats: int = 0  # timed loads of the baseline after the counted starts (0: no calibration)
    calibration_seconds: int = 0  # each one's pgbench -T


SPEC = common.StudySpec(
    name=NAME, engine="postgresql", title="What one log record costs, counted: instructions, system calls, bytes",
    post=POST, baseline="none", notebook="11_record_cost.ipynb", seed=20261127,
    committed={"profile": "standard", "backend": "local", "publish": True},
    extra_committed=({"profile": "versions", "backend": "local", "publish": True},),
    smoke=({"profile": "smoke", "backend": "local"},), paper_order=11, measures_logging=False)
