"""Study 02: what does each PostgreSQL log destination cost? (post 000, depesz 2013, redone)

Every statement is logged (``log_min_duration_statement = 0``, as in the post)
to one destination at a time; pgbench's select-only test measures throughput
and latency; each destination's sink is counted to see whether every record
arrived (the post's syslog kept ~0.5 % of them and nobody saw it in the tps).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ... import params, paths, progress, records, stats
from ...errors import ParameterError
from ...headline import Headline
from ...benches import postgres as pg
from ...servers import memlimit
from .. import common

NAME = "pg_destinations"
BASELINE = "none"
POST = "000_d12f15a856ad9e5d.txt"  # the post this study redoes (shared/seeds)
BASE = pg.BASE
DESTINATIONS = pg.DESTINATIONS
# Every arm the study can run: each destination at full rate (the default set) and the sampled production-style
# logging (benches.postgres.SAMPLED; the post000 profile runs them for the post's reader comment).
ARMS = {**pg.DESTINATIONS, **pg.SAMPLED}

PROFILES: dict[str, dict[str, object]] = {
    # seconds: what tests and nbval run (the block design; the switchback design's own smoke test is in tests/)
    "smoke": {"clients": [1], "repeats": 2, "duration": 1, "warmup": 0, "scale": 1, "sampling_rate": 0.1,
              "design": "blocks"},
    # the committed run: ~15 minutes on two cores, the block design (9 configurations with the A/A control x 3
    # levels x 4 blocks of ~5.9 s runs = ~11 min, then up to 4 min of adaptive blocks where a ratio is still wide).
    # design="switchback" switches them inside one load instead (logbench.switchback; ~19 min with these values:
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
# "production logging rates": 1 % and 10 % of the statements sampled to the file (benches.postgres.SAMPLED).
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
# Data per pgbench scale unit (post 000: scale 200 = 2997 MB); the IO-bound data must exceed the limit this often.
BYTES_PER_SCALE, IO_BOUND_FACTOR = 15e6, 4
# Named profiles that redo another post than this study's own: which post and experiment their figure shows.
PROFILE_POSTS = {"post004": ("004_5cd3e575f4305811.txt", "004/log_statement"),
                 "post000": ("000_d12f15a856ad9e5d.txt", "000/cached_prepared_select")}


@dataclass(frozen=True, kw_only=True)
class PgDestinationsStudy(pg.PgStudy):
    pass


@common.declare(PROFILES)
def define(profile: str = "standard", destinations: list[str] | None = None, scale: int | None = None,
           query_mode: str | None = None, statement_logging: str | None = None, syslog_rate_limit: bool | None = None,
           log_dir_on: str = "disk", sampling_rate: float | None = None, shared_buffers: str | None = None,
           extra_settings: dict | None = None, backend: str = "auto", image: str | None = None,
           versions: list[str] | None = None, pg_bindir: str | None = None, memory_limit_mb: int | str | None = None,
           read_iops: int | str | None = None, design: str | None = None, window_s: int | None = None,
           guard_s: int | None = None, layout: str | None = None, blocks: int | None = None, loads: int | None = None,
           max_loads: int | None = None, **shared: object) -> PgDestinationsStudy:
    """Check every parameter and freeze the study; raises ParameterError/SettingError before anything starts.
    ``shared``: the parameters every study has (common.SHARED: clients, repeats, duration, warmup, seed, ...).
    ``query_mode``, ``shared_buffers``, ``destinations``, ``memory_limit_mb``, ``read_iops``,
    ``syslog_rate_limit``: None takes the profile's, if it has one (rate limiting: off unless the profile's)."""
    d = common.profile_lookup(profile, PROFILES)
    own = PROFILES[profile]
    versions = own.get("versions") if versions is None else versions
    chosen = params.name_list("destinations", own.get("destinations", list(DESTINATIONS)) if destinations is None
                              else destinations, ARMS)
    if not [c for c in chosen if c != BASELINE]:
        # its notebook compares destinations with the baseline; the baseline against itself alone is notebook 00's
        raise ParameterError("destinations", destinations, "a list with at least one destination besides "
                             f"{BASELINE!r}, of: " + ", ".join(repr(x) for x in ARMS if x != BASELINE))
    if destinations is None and versions is not None:
        chosen = _every_version_has(chosen, versions)
    mechanism = own.get("statement_logging", "min_duration_0") if statement_logging is None else statement_logging
    table = pg.with_statement_logging(ARMS, mechanism)
    query_mode = own.get("query_mode", "prepared") if query_mode is None else query_mode
    engine = pg.pg_fields(backend=backend, image=image, scale=d("scale", scale), query_mode=query_mode,
                          syslog_rate_limit=own.get("syslog_rate_limit", False) if syslog_rate_limit is None
                          else syslog_rate_limit, log_dir_on=log_dir_on,
                          sampling_rate=d("sampling_rate", sampling_rate),
                          shared_buffers=own.get("shared_buffers", "128MB") if shared_buffers is None else shared_buffers,
                          extra_settings=extra_settings, pg_bindir=pg_bindir)
    limit, iops = memlimit.limit_parameters(own.get("memory_limit_mb") if memory_limit_mb is None else memory_limit_mb,
                                            own.get("read_iops") if read_iops is None else read_iops, engine["backend"])
    if limit is not None:
        _check_memory_limit(limit, engine, profile, iops)
    fields = common.study_fields(SPEC, profile, PROFILES, **shared)
    configs = pg.configurations(common.with_baseline(BASELINE, chosen), table, engine["pg_bindir"], engine["base"],
                                engine["query_mode"])
    sb = pg.switchback_design(own, configs, engine["pg_bindir"], design=design, window_s=window_s, guard_s=guard_s,
                              layout=layout, blocks=blocks, loads=loads, max_loads=max_loads,
                              lead_in_s=fields["warmup"], versions=versions, memory_limit_mb=limit)
    study = PgDestinationsStudy(**fields, **engine, memory_limit_mb=limit, read_iops=iops, configurations=configs,
                                switchback=sb)
    return pg.checked(study, versions)


def _every_version_has(chosen: list[str], versions: object) -> list[str]:
    """A sweep's default destinations: those every chosen major has, the others said and left out (jsonlog before
    15), so ``versions=["13", "17"]`` alone runs; named in ``destinations``, one a version lacks is refused
    (pg.checked)."""
    from ...servers.containers import PG_IMAGES
    from ...versions import JSONLOG_FROM, pg_has

    majors = params.name_list("versions", versions, PG_IMAGES, coerce=str)
    kept = [c for c in chosen if all(pg_has(v, ARMS[c][1]) for v in majors)]
    if left := [c for c in chosen if c not in kept]:
        progress.Reporter(SPEC.name).say(f"left out of the sweep of {', '.join(majors)}: {', '.join(left)} (jsonlog came "
                                         f"in PostgreSQL {JSONLOG_FROM})")
    return kept


def _check_memory_limit(limit_mb: int, engine: dict, profile: str, read_iops: int | None = None) -> None:
    """The IO-bound regime's preconditions, before any server starts."""
    buffers = engine["base"].get("shared_buffers", "128MB")
    m = re.fullmatch(r"(\d+)\s*(kB|MB|GB)", str(buffers))
    buffers_mb = int(m.group(1)) * {"kB": 1 / 1024, "MB": 1, "GB": 1024}[m.group(2)] if m else 128
    if limit_mb < buffers_mb + 64:
        raise ParameterError("memory_limit_mb", limit_mb, f"at least shared_buffers ({buffers}) + 64 MB: the "
                             "server's own memory counts against the limit")
    data_mb = engine["scale"] * BYTES_PER_SCALE / 2**20
    if profile != "smoke" and data_mb < IO_BOUND_FACTOR * limit_mb:
        raise ParameterError("scale", engine["scale"], f"at least {IO_BOUND_FACTOR} x the memory limit in data "
                             f"(scale {engine['scale']} ≈ {data_mb:.0f} MB against {limit_mb} MB), or the regime is "
                             "not IO-bound; raise the scale or lower memory_limit_mb")
    # what the machine allows last: a value wrong anywhere is named as such, also where no cgroup is mounted;
    # the server's data directory is made under the scratch root: its disk is the one whose reads are paced
    memlimit.check_machine(limit_mb, read_iops, paths.scratch_root())


def run(study: pg.PgStudy, *, progress: bool = True) -> common.StudyResult:
    """Start everything the study needs, run its schedule, stop and remove everything again."""
    return common.run_study(study, pg.start, processed_tables, execute=pg.execute, progress=progress)


def summary(runs: pd.DataFrame, baseline: str = BASELINE) -> pd.DataFrame:
    """tps mean ± CI, ratio to the baseline ± CI (within blocks: stats.cell_ratio), loss and log rates, per
    configuration × clients (and per variant, each against its own baseline, when the study spans several
    servers)."""
    also = ("latency_p95_ms", "log_loss", "log_lines_per_s", "log_bytes_per_s", "server_cpu_s", "logger_cpu_s")
    from ... import switchwindows

    if "extra" in runs.columns and runs["extra"].map(lambda e: "collector_cpu_s" in e).any():
        # the logging collector's own CPU, where the runs recorded it (it is part of server_cpu_s too)
        runs = runs.assign(collector_cpu_s=runs["extra"].map(lambda e: e.get("collector_cpu_s", np.nan)))
        also = (*also, "collector_cpu_s")

    if switchwindows.is_switchback(runs):
        return common.switchback_summary(runs, baseline, also, list(ARMS))
    return common.summary_per_variant(runs, baseline, also, list(ARMS))


@dataclass(frozen=True)
class IoNumbers:
    """A memory-limited run's own counters (benches.postgres.PgBench.measure): its regime, verified."""

    regime: str
    blks_read: int
    blks_hit: int
    memory_limit_hits: int
    page_cache_growth_bytes: int


def with_regime(runs: pd.DataFrame) -> pd.DataFrame:
    """Runs with the IO-bound regime's counters as columns (``regime`` is what the claims read), when recorded."""
    if not runs["extra"].map(lambda e: "regime" in e).any():
        return runs
    out = common.measured_columns(runs, IoNumbers)
    out["blks_read_share"] = out["blks_read"] / (out["blks_read"] + out["blks_hit"])
    reads = out["extra"].map(lambda e: e.get("disk_reads"))
    if reads.notna().any():  # under a read limit: the pace the disk was held to, run by run
        out["disk_reads_per_s"] = reads.astype(float) / out["duration_s"].astype(float)
    return out


def regime_check(runs: pd.DataFrame) -> pd.DataFrame:
    """Per configuration × clients: the share of shared-buffer misses (pg_stat_database), the memory limit's
    hits, and how many measured runs were IO-bound by their own counters. Empty without a memory limit."""
    r = with_regime(records.measured(runs))
    if "regime" not in r:
        return pd.DataFrame()
    r = common.split_variant(r)
    g = r.groupby(common.variant_keys(r, ["configuration", "clients"]), sort=False)
    return pd.DataFrame({
        "runs": g.size(), "io_bound runs": g["regime"].agg(lambda x: int((x == "io_bound").sum())),
        "blks_read share (mean)": g["blks_read_share"].mean(), "blks_read (mean)": g["blks_read"].mean(),
        "blks_hit (mean)": g["blks_hit"].mean(), "memory limit hits (mean)": g["memory_limit_hits"].mean(),
        **({"disk reads per s (mean)": g["disk_reads_per_s"].mean()} if "disk_reads_per_s" in r else {}),
    }).reset_index()


def processed_tables(result: common.StudyResult) -> dict[str, pd.DataFrame]:
    from ... import switchwindows

    tables = {"summary": summary(result.runs), "runs": records.flatten(with_regime(result.runs)),
              **switchwindows.processed_tables(result.study, result.runs, BASELINE)}
    check = regime_check(result.runs)
    per_record = per_record_cost(result.runs)
    between = common.variant_differences(result.runs, BASELINE, list(ARMS))  # a version sweep's (issue 23)
    return {**tables, **({"regime": check} if len(check) else {}),
            **({"per_record": per_record} if len(per_record) else {}),
            **({"between_versions": between} if len(between) else {})}


def load_processed(processed_dir: Path = paths.PROCESSED) -> tuple[pd.DataFrame, pd.DataFrame]:
    return common.load_processed(NAME, "summary", "runs", processed_dir=processed_dir)


# -- findings: sentences whose every number is read from the summary ---------------------------------

def finding_overhead(summary: pd.DataFrame, baseline: str = BASELINE) -> str:
    return common.per_variant_text(summary, _finding_overhead, baseline)


def _finding_overhead(summary: pd.DataFrame, baseline: str) -> str:
    """Per concurrency: the cheapest and dearest destination, and which ones are distinguishable from the baseline."""
    lines = []
    for clients, g in stats.logging_rows(summary, baseline).groupby("clients", sort=True):
        g = g.sort_values("ratio", ascending=False)
        best, worst = g.iloc[0], g.iloc[-1]
        slower = g[g["ratio_ci_high"] < 1]["configuration"].tolist()
        lines.append(
            f"- **{clients} client(s):** cheapest `{best['configuration']}` at {common.ci(best, 'ratio')} of the baseline's "
            f"throughput, dearest `{worst['configuration']}` at {common.ci(worst, 'ratio')}; "
            + (f"{len(slower)} of {len(g)} destinations are slower than `{baseline}` with 95 % confidence "
               f"({', '.join(f'`{c}`' for c in slower)})." if slower else
               f"no destination is slower than `{baseline}` with 95 % confidence.")
        )
    return "\n".join(lines)


def finding_loss(summary: pd.DataFrame, baseline: str = BASELINE) -> str:
    return common.per_variant_text(summary, _finding_loss, baseline)


def _finding_loss(summary: pd.DataFrame, baseline: str) -> str:
    """Which destinations lost statement records, and how many."""
    g = stats.logging_rows(summary, baseline)
    lost = g[g["log_loss_ci_low"] > 0]
    worst = g.loc[g["log_loss_mean"].idxmax()] if g["log_loss_mean"].notna().any() else None
    head = (
        f"Largest mean loss: `{worst['configuration']}` at {worst['clients']} client(s), "
        f"{100 * worst['log_loss_mean']:.3g} % of the expected records "
        f"(95 % CI {100 * worst['log_loss_ci_low']:.3g} to {100 * worst['log_loss_ci_high']:.3g} %, n={int(worst['n'])})."
        if worst is not None else "No destination expected records."
    )
    tail = (
        " Loss distinguishable from zero: " + ", ".join(f"`{r.configuration}` ({r.clients} clients)" for r in lost.itertuples()) + "."
        if len(lost) else " No destination's loss is distinguishable from zero at 95 % confidence."
    )
    return head + tail


def finding_rates(summary: pd.DataFrame, baseline: str = BASELINE) -> str:
    return common.per_variant_text(summary, _finding_rates, baseline)


def _finding_rates(summary: pd.DataFrame, baseline: str) -> str:
    g = stats.logging_rows(summary, baseline)
    top = g.loc[g["log_bytes_per_s_mean"].idxmax()]
    return (
        f"The logging rate ranged from {g['log_lines_per_s_mean'].min():,.0f} to {g['log_lines_per_s_mean'].max():,.0f} "
        f"lines/s; the most bytes went to `{top['configuration']}` at {top['clients']} client(s): "
        f"{top['log_bytes_per_s_mean'] / 1e6:.3g} MB/s."
    )


# -- tables for the notebook ----------------------------------------------------------------------

def configuration_table(study: pg.PgStudy) -> pd.DataFrame:
    """Each configuration: the settings it changes from the base, and where its records are counted."""
    rows = []
    for c in study.configurations:
        changed = {k: v for k, v in c.settings.items() if study.base.get(k) != v}
        rows.append({"configuration": c.name,
                     "settings (over the base)": ", ".join(f"{k}={v!r}" for k, v in changed.items()) or "(base only)",
                     "sinks": ", ".join(c.destinations) or "–"})
    return pd.DataFrame(rows).set_index("configuration")


design_summary = pg.design_summary


def environment_table(result: common.StudyResult) -> pd.DataFrame:
    return common.environment_table(result, {"timer loop (ns, pg_test_timing)": result.environment.get("timer_loop_ns")})


# Which of the post's experiments a run of ours is comparable to, by query mode: its update ran
# -M prepared on a cached scale (200), its first run the simple protocol on an IO-bound scale (2000).
POST_EXPERIMENT = {"prepared": "cached_prepared_select", "simple": "io_bound_select"}


def published_ratios(query_mode: str = "prepared") -> pd.DataFrame:
    """Post 000's throughput ratios to its own baseline, keyed like our configurations."""
    from ... import reference

    d = reference.published_ratios(POST, POST_EXPERIMENT[query_mode])
    return d[d["metric"] == "throughput"].reset_index(drop=True)


def beside_post(summary: pd.DataFrame, published: pd.DataFrame) -> pd.DataFrame:
    """Our ratio with its CI next to the post's ratio for the same destination and concurrency."""
    from ...plots import fmt_ci

    pub = published.set_index(["configuration_key", "clients"])["ratio"]
    rows = []
    keys = common.variant_keys(summary, ["configuration", "clients"])
    for r in stats.logging_rows(summary, BASELINE).itertuples():
        post = pub.get((r.configuration, r.clients))
        inside = None if post is None or pd.isna(r.ratio_ci_low) else bool(r.ratio_ci_low <= post <= r.ratio_ci_high)
        rows.append({**({"variant": r.variant} if "variant" in keys else {}),
                     "configuration": r.configuration, "clients": r.clients,
                     "ours: ratio [95 % CI] (n)": fmt_ci(r.ratio, r.ratio_ci_low, r.ratio_ci_high, r.n),
                     "post 000": "–" if post is None else f"{post:.3g}",
                     "post inside our CI": "–" if inside is None else ("yes" if inside else "no")})
    return pd.DataFrame(rows).set_index(keys)


def published_for(study: pg.PgStudy) -> pd.DataFrame:
    """The post's ratios this run compares with: a named profile's own post (PROFILE_POSTS, its log files as
    our ``stderr``, its clients mapped per core to this machine), else post 000's by query mode."""
    if study.profile not in PROFILE_POSTS:
        return published_ratios(study.query_mode)
    import os

    from ... import claim_rules, reference

    post, experiment = PROFILE_POSTS[study.profile]
    d = reference.published_ratios(post, experiment)
    d = d[d["metric"] == "throughput"].copy()
    d["configuration_key"] = d["configuration_key"].replace({"log_statement_all_file": "stderr",
                                                             "log_statement_all_syslog": "syslog"})
    per_core = d["clients"].astype(float) / claim_rules.POST_CORES[post[:3]]
    d["clients"] = (per_core * (os.cpu_count() or 1)).round().clip(lower=1).astype(int)  # as claims map them
    return d.reset_index(drop=True)


def logger_share(runs: pd.DataFrame, baseline: str = BASELINE) -> pd.DataFrame:
    """Per configuration and clients: the syslog daemons' CPU as a share of one core (logger CPU seconds over the
    run's wall seconds; the post: 85 %) with its CI, and the records received against those expected."""
    m = common.split_variant(runs)
    m = m.assign(logger_share=m["logger_cpu_s"] / m["wall_s"], received=m["log_records_received"],
                 expected=m["log_records_expected"])
    rows = []
    keys = common.variant_keys(m, ["configuration", "clients"])  # each server its own
    for key, g in m.groupby(keys, sort=False):
        e = stats.mean_ci(g["logger_share"])
        rows.append({**dict(zip(keys, key)), "n": e.n, "logger_share_mean": e.value,
                     "logger_share_ci_low": e.low, "logger_share_ci_high": e.high,
                     "records_expected": int(g["expected"].sum()), "records_received": int(g["received"].sum())})
    return common.configuration_order(pd.DataFrame(rows), keys, {"configuration": list(ARMS)})


def per_record_cost(runs: pd.DataFrame, baseline: str = BASELINE) -> pd.DataFrame:
    """Per configuration and clients, what one logged record cost (the measured runs whose records all arrived,
    or whose loss is not defined: the sampled arms): the server's CPU and voluntary context switches per
    transaction over the baseline run of the same block and level, divided by the records per transaction; and
    the logging collector's own CPU and voluntary context switches (sleeps on an empty pipe) per record. Each a
    mean over blocks with its t CI and n. Why: a 10 % sample cost a fifth of the throughput where the full log
    cost a half (committed post000 run b224189, 2 clients), more per record than the full log."""
    m = common.split_variant(records.measured(runs))
    ex = m["extra"]
    m = m.assign(coll_cpu=ex.map(lambda e: e.get("collector_cpu_s", np.nan)).astype(float),
                 coll_vol=ex.map(lambda e: e.get("collector_ctx_voluntary", np.nan)).astype(float),
                 per_tx_cpu=1e6 * m["server_cpu_s"] / m["transactions"],
                 per_tx_vol=m["server_ctx_voluntary"] / m["transactions"],
                 rec_per_tx=m["log_records_received"] / m["transactions"])
    # each variant (server version) against its own baseline, never pooled
    base = m[m["configuration"] == baseline].set_index(["variant", "clients", "repeat"])[["per_tx_cpu", "per_tx_vol"]]
    kept = m[(m["configuration"] != baseline) & (m["log_records_received"] > 0)
             & (m["log_loss"].isna() | (m["log_loss"] <= 0.01))]
    kept = kept.join(base.add_suffix("_base"), on=["variant", "clients", "repeat"])
    kept = kept.assign(
        server_cpu_us_per_record=(kept["per_tx_cpu"] - kept["per_tx_cpu_base"]) / kept["rec_per_tx"],
        server_vol_per_record=(kept["per_tx_vol"] - kept["per_tx_vol_base"]) / kept["rec_per_tx"],
        collector_cpu_us_per_record=1e6 * kept["coll_cpu"] / kept["log_records_received"],
        collector_vol_per_record=kept["coll_vol"] / kept["log_records_received"])
    rows = []
    for (variant, cfg, clients), g in kept.groupby(["variant", "configuration", "clients"], sort=False):
        row = {"variant": variant, "configuration": cfg, "clients": clients, "records_per_tx": g["rec_per_tx"].mean()}
        for col in ("server_cpu_us_per_record", "server_vol_per_record", "collector_cpu_us_per_record",
                    "collector_vol_per_record"):
            e = stats.mean_ci(g[col])
            row.update({f"{col}_mean": e.value, f"{col}_ci_low": e.low, f"{col}_ci_high": e.high, f"{col}_n": e.n})
        rows.append(row)
    if not rows:
        return pd.DataFrame()
    out = pd.DataFrame(rows)
    out = out.drop(columns="variant") if (out["variant"] == "").all() else out
    keys = [c for c in ("variant", "configuration", "clients") if c in out]
    return common.configuration_order(out, keys, {"configuration": list(ARMS)})


def finding_per_record(table: pd.DataFrame, full: str = "stderr") -> str:
    """Markdown: per level, the server CPU and voluntary context switches per record of each sampled arm
    (benches.postgres.SAMPLED) beside the full log to the same file (``full``); every number read from ``table``."""
    from ...plots import fmt_ci

    sampled = [c for c in pg.SAMPLED if c in set(table.get("configuration", ()))]
    if table is None or table.empty or not sampled or full not in set(table["configuration"]):
        return f"No sampled arm beside `{full}` in this run: the per-record costs are in the table."

    def ci(r, col):
        return fmt_ci(r[f"{col}_mean"], r[f"{col}_ci_low"], r[f"{col}_ci_high"], int(r[f"{col}_n"]))

    lines = []
    for clients, g in table.groupby("clients", sort=True):
        by = g.set_index("configuration")
        if full not in by.index:
            continue
        parts = [f"`{c}` {ci(by.loc[c], 'server_cpu_us_per_record')} µs and {ci(by.loc[c], 'server_vol_per_record')} "
                 f"switches ({by.loc[c, 'records_per_tx']:.3g} records per transaction)"
                 for c in [*sampled, full] if c in by.index]
        lines.append(f"- **{clients} client{'s' if clients != 1 else ''}**: " + "; ".join(parts) + ".")
    return ("**What one record costs, by how many are logged** (server CPU and voluntary context switches per "
            "record, within blocks over the baseline; t CIs over blocks, n blocks). A fixed cost per record would "
            "give every arm the same µs per record:\n\n" + "\n".join(lines))


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
                     {"profile": "versions", "backend": "container", "publish": True}),
    versions_title="PostgreSQL: every statement logged (log_min_duration_statement = 0) to each destination, "
                   "pgbench -S -M prepared (study 02)",
    smoke=({"profile": "smoke", "backend": "local"}, {"profile": "smoke", "backend": "container"}), paper_order=1)
