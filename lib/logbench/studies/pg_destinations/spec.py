"""Study 02's declarations: its name and post, the arms it can run (the shared destinations and its own sampled
logs), how every statement is logged, its profiles, study type, the post's numbers it compares with and its
registry spec (no analysis, no run). The analysis and the study's plan both read these.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ...base import params
from ...measure.benches import postgres as pg
from ...analyze.headline import Headline
from .. import common

NAME = "pg_destinations"
BASELINE = "none"
POST = "000_d12f15a856ad9e5d.txt"  # the post this study redoes (shared/seeds)
BASE = pg.BASE
DESTINATIONS = pg.DESTINATIONS
# Statement logging as a DBA runs it in production (PostgreSQL 13+): every statement's duration is checked, a random
# share of them logged (log_min_duration_sample = 0 with log_statement_sample_rate, each protocol message drawn
# apart), nothing else; to the collector's file like "stderr". No record is due (a random subset: the log's own
# count says what was written; benches.postgres.statement_records). Name -> (settings over BASE, sinks), as
# DESTINATIONS.
SAMPLED: dict[str, tuple[dict, tuple[str, ...]]] = {
    f"stderr_sample_{label}": ({"log_min_duration_sample": 0, "log_statement_sample_rate": rate,
                                "log_destination": "stderr"}, ("stderr",))
    for label, rate in (("1pct", 0.01), ("10pct", 0.1))
}
# Every arm the study can run: each destination at full rate (the default set) and the sampled production-style
# logging (SAMPLED; the post000 profile runs them for the post's reader comment).
ARMS = {**pg.DESTINATIONS, **SAMPLED}

# How every statement is logged (the parameter ``statement_logging``): post 000's log_min_duration_statement = 0
# (statement and duration in one record, after execution), or post 004's log_statement = all (a statement
# record before execution). The records each leaves are benches.postgres.statement_records'.
STATEMENT_LOGGING = {
    "min_duration_0": {"log_min_duration_statement": 0},
    "log_statement_all": {"log_statement": "all"},
}


def with_statement_logging(table: dict[str, tuple], mechanism: str) -> dict[str, tuple]:
    """``table`` (name -> (settings over BASE, sinks)) with every logging configuration's
    log_min_duration_statement = 0 replaced by ``mechanism``'s settings; the baseline stays as it is."""
    params.choice("statement_logging", mechanism, STATEMENT_LOGGING)
    out = {}
    for name, (settings, *rest) in table.items():
        if settings.get("log_min_duration_statement") == 0:
            settings = {k: v for k, v in settings.items() if k != "log_min_duration_statement"}
            settings.update(STATEMENT_LOGGING[mechanism])
        out[name] = (settings, *rest)
    return out


PROFILES: dict[str, dict[str, object]] = {
    # seconds: what tests and nbval run (the block design; the switchback design's own smoke test is in tests/)
    "smoke": {"clients": [1], "repeats": 2, "duration": 1, "warmup": 0, "scale": 1, "sampling_rate": 0.1,
              "design": "blocks"},
    # the committed run: ~15 minutes on two cores, the block design (9 configurations with the A/A control x 3
    # levels x 4 blocks of ~5.9 s runs = ~11 min, then up to 4 min of adaptive blocks where a ratio is still wide).
    # design="switchback" switches them inside one load instead (logbench.measure.switchback; ~19 min with these values:
    # per level four loads on a restarted server, 2 blocks of the 9 arms in 4 s windows, 1 s guard). Four short
    # loads, not two long ones: with two, the loads' random effect has one degree of freedom (t = 12.7) whenever
    # their means differ more than their windows do; at 1 client, the same hour, the same 8 windows per arm,
    # 2 x 4 gave an A/A of +-43 % and 4 x 2 +-5.9 % (2026-11-25, local backend, nothing else running; blocks
    # +-12-19 %). Not the default: at 2 clients per core a file-logging window slows the windows after it by
    # ~20 % for more than 4 s, the guard's sync notwithstanding (a baseline window after stderr -0.19 in log,
    # n = 21), and notebook 00 measured switching less efficient there.
    "standard": {"clients": [1, 4, 8], "repeats": 4, "duration": 4, "warmup": 1, "scale": 10, "sampling_rate": 0.05,
                 "target_halfwidth": 0.03, "time_budget_s": 240, "max_repeats": 12,
                 "design": "blocks", "window_s": 4, "guard_s": 1, "layout": "permutation", "blocks": 2,
                 "loads": 4, "max_loads": 4},
    # paper-grade: longer runs, the post's cached scale
    "full": {"clients": [1, 4, 8], "repeats": 5, "duration": 30, "warmup": 5, "scale": 200, "sampling_rate": 0.01,
             "target_halfwidth": 0.03, "time_budget_s": 3600, "max_repeats": 20,
             "design": "blocks", "window_s": 6, "guard_s": 2, "layout": "permutation", "blocks": 10, "loads": 3,
             "max_loads": 6},
    # Post 004's comparison (its own stem, common.stem): log_statement = all to no file / a log file (stderr
    # through the collector: the post's "Logfiles") / syslog, read-only pgbench at 4 clients per core (its 32 on
    # 8 cores; 8 here), its scale 100. ~6 min: 4 configurations with the A/A control x 6 blocks of ~13 s runs
    # (+ ~3 s switch and drain each) after a ~1.5 min pgbench -i.
    "post004": {"destinations": ["none", "stderr", "syslog"], "clients": [8], "repeats": 6, "duration": 10,
                "warmup": 2, "scale": 100, "sampling_rate": 0.01, "statement_logging": "log_statement_all",
                "query_mode": "simple", "design": "blocks"},
}
# Post 000's cached half as the post ran it (its own stem): its five configurations at its 1 / 4 / 8 workers on 4
# cores mapped per core (1 / 2 / 4 here), with its rsyslog's input rate limit (5 s / 200 messages per process, what
# the distributions of its time shipped; the post's syslog kept 0.5 % of its records), and a reader's comment's
# "production logging rates": 1 % and 10 % of the statements sampled to the file (SAMPLED).
# ~9.5 min of blocks (8 configurations with the A/A control x 3 levels x 4 blocks of ~5.9 s runs), then up to
# 4 min of adaptive blocks.
PROFILES["post000"] = {**{k: v for k, v in PROFILES["standard"].items()},
                       "destinations": ["none", "stderr", "csvlog", "syslog", "remote_syslog_udp",
                                        "stderr_sample_1pct", "stderr_sample_10pct"],
                       "clients": [1, 2, 4], "syslog_rate_limit": True}
# The post's IO-bound half (scale 2000, 29 GB, simple protocol, its five configurations) made on a small dataset:
# the server's processes get a memory cgroup limit (page cache included) far under the data, with the data
# evicted from the page cache before the runs; every run records pg_stat_database blks_read / blks_hit and is
# marked io_bound only when its own counters say so (benches.postgres.io_regime). The post's 1 / 4 / 8 workers
# on 4 cores are 1 / 2 / 4 here per core. Its disks answered at a disk's pace (143-173 tps at ~1 read per
# select-only transaction, flat in the workers); this VM's disk answers in ~0.1 ms, so the server's reads are
# paced to 160 per second (read_iops): a transaction waits on storage about as long as the post's did.
# Its syslog as the post's was: rsyslog's input rate limit as its distributions shipped it (the post's syslog lost
# ~11 % of the logged durations here; claim 000-io-syslog-loss is judged only on that configuration).
# ~11 min at most: pgbench -i of scale 60 (~0.9 GB) ~1 min, 6 configurations with the A/A control x 3 levels x
# 3 blocks of ~7.5 s runs ~7 min, then up to 3 min of adaptive blocks (the committed run took 8.4 min).
PROFILES["io_bound"] = {
    "clients": [1, 2, 4], "repeats": 3, "duration": 5, "warmup": 1, "scale": 60, "sampling_rate": 0.05,
    "query_mode": "simple", "shared_buffers": "32MB", "memory_limit_mb": 192, "read_iops": 160,
    "syslog_rate_limit": True,
    "destinations": ["none", "stderr", "csvlog", "syslog", "remote_syslog_udp"],
    "target_halfwidth": 0.03, "time_budget_s": 180, "max_repeats": 8, "design": "blocks"}
# Issue 23's sweep: does the answer change with the server's version? The standard profile's runs on PostgreSQL
# 13, 15 and 17 (docker/servers.tsv), each in its container, one interleaved schedule, each version its own
# baseline and A/A (never pooled); the file destinations and syslog (jsonlog does not exist in 13). ~25 min:
# 5 configurations x 3 versions x 3 levels x 4 blocks of ~5.9 s runs, then up to 4 min of adaptive blocks.
PROFILES["versions"] = {**PROFILES["standard"], "destinations": ["none", "stderr", "csvlog", "syslog"],
                        "versions": ["13", "15", "17"]}
# Issue 40's schedule, from the planner (logbench.analyze.planning; `python -m logbench plan` prints its numbers) on the
# committed standard run (σ 0.08-0.11 a 4 s run after the drift, ~6.0 s a run with its switch and drain, a 0.25 s
# settle poll, the layouts this seed's Williams rows accept): the baseline three times and its A/A twice in each
# block, Williams order, the settle condition instead of a bare run after run; 3 blocks (677 s predicted; a 4th does
# not fit 15 minutes with the baseline x3, and x2 leaves the A/A without a baseline neighbour at 4 clients), no
# adaptive blocks. Predicted A/A ±0.09-0.12, median overhead ±0.03-0.06: the A/A goals (±0.04 at 1 client, ±0.03
# at 2+) are out of a 15-minute run's reach here. Set after post000 and versions took the standard's values: their
# committed runs keep the schedule they ran with.
PLANNED_STANDARD = {"block_layout": {"baseline_runs": 3, "aa_runs": 2, "order": "williams"},
                    "settle": {"limit_s": 3, "poll_s": 0.25}, "repeats": 3, "time_budget_s": 0}
PROFILES["standard"] = {**PROFILES["standard"], **PLANNED_STANDARD}
# The committed resolution run (<= 60 min, the planner's pick for that budget): 13 blocks, the baseline x3 and the
# A/A x2 in each, Williams order, settle; planned on the committed standard run of 2026-11-28 (its own planned
# schedule: 7.0 s a run with the settle, switch and drain, where the earlier runs took 6.0 s, so 15 blocks no longer
# fit): predicted 3370 s, A/A ±0.072/0.042/0.057 and median overhead ±0.050/0.012/0.016 at 1/4/8 clients. The A/A
# goal stays out of reach within the hour: the per-run noise (σ 0.08-0.14 a 4 s run, little of it drift the time
# term could take) would need more than 24 blocks a level.
PROFILES["resolution"] = {**PROFILES["standard"], "repeats": 13, "max_repeats": 13,
                          "block_layout": {"baseline_runs": 3, "aa_runs": 2, "order": "williams"}}
# Data per pgbench scale unit (post 000: scale 200 = 2997 MB); the IO-bound data must exceed the limit this often.
BYTES_PER_SCALE, IO_BOUND_FACTOR = 15e6, 4
# Named profiles that redo another post than this study's own: which post and experiment their figure shows.
PROFILE_POSTS = {"post004": ("004_5cd3e575f4305811.txt", "004/log_statement"),
                 "post000": ("000_d12f15a856ad9e5d.txt", "000/cached_prepared_select")}


@dataclass(frozen=True, kw_only=True)
class PgDestinationsStudy(pg.PgStudy):
    pass


# Which of the post's experiments a run of ours is comparable to, by query mode: its update ran
# -M prepared on a cached scale (200), its first run the simple protocol on an IO-bound scale (2000).
POST_EXPERIMENT = {"prepared": "cached_prepared_select", "simple": "io_bound_select"}


def published_ratios(query_mode: str = "prepared") -> pd.DataFrame:
    """Post 000's throughput ratios to its own baseline, keyed like our configurations."""
    from ...analyze import reference

    d = reference.published_ratios(POST, POST_EXPERIMENT[query_mode])
    return d[d["metric"] == "throughput"].reset_index(drop=True)


def _published(runs: pd.DataFrame | None) -> pd.DataFrame:
    mode = str(runs["query_mode"].iloc[0]) if runs is not None and "query_mode" in runs and len(runs) else "prepared"
    return published_ratios(mode)


SPEC = common.StudySpec(
    name=NAME, engine="postgresql", title="PostgreSQL log destinations", post=POST, baseline=BASELINE,
    headline=Headline(stem=NAME, words="pgbench's select-only transactions (one prepared statement each) on cached data",
                      arms=(("stderr", "to a file"), ("syslog", "to the local syslog"),
                            ("remote_syslog_udp", "to a remote syslog over UDP")),
                      daemon=("syslog", "the one rsyslogd that receives every line")),
    notebook="02_pg_destinations.ipynb", seed=20130905, published=_published, experiment="000/cached_prepared_select",
    committed={"profile": "standard", "backend": "local", "publish": True},
    extra_committed=({"profile": "post004", "backend": "local", "publish": True},
                     {"profile": "post000", "backend": "local", "publish": True},
                     {"profile": "io_bound", "backend": "local", "publish": True},
                     {"profile": "versions", "backend": "container", "publish": True},
                     {"profile": "resolution", "backend": "local", "publish": True}),
    versions_title="PostgreSQL: every statement logged (log_min_duration_statement = 0) to each destination, "
                   "pgbench -S -M prepared (study 02)",
    smoke=({"profile": "smoke", "backend": "local"}, {"profile": "smoke", "backend": "container"}), paper_order=1)
