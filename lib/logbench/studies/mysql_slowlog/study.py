"""Study 04's plan and run: ``define`` checks every parameter and freezes the study (ParameterError or SettingError
before any server starts), in named steps; ``run`` executes it, cell by cell; the plan's tables for the notebook
(``configuration_table``, ``regime_table``, ``design_summary``)."""

from __future__ import annotations

import dataclasses

import pandas as pd

from ...base import params, paths, progress, records
from ...measure import runner
from ...measure.benches import mariadb as mb
from ...base.errors import ParameterError
from ...servers import mariadb as mdb
from ...servers import memlimit
from ...base.settings import Configuration, Settings, validate_mariadb
from ...measure.switchback.design import LAYOUT_HELP
from .. import common
from .analysis import processed_tables
from .bench import SlowlogBench, hold
from .spec import (BACKENDS, BASELINE, CELLS, CONFIGURATIONS, DEVNULL, PROFILES, REGIMES, SPEC, MysqlSlowlogStudy,
                   size_bytes)


# What each parameter means (unit, allowed values), one line each: notebook 04's generated
# parameters cell and `run STUDY --help` show it; a shared parameter not named here has parameters.HELP's.
HELP = {
    "profile": 'run size: "smoke" (seconds; tests), "standard" (~13 min; committed), "full" (paper-grade), '
               "\"switchback\" (~20 min; committed: the post's two cached cells switched by SET GLOBAL inside "
               "one load), \"versions\" (~17 min; committed: the cpu regime's slow-log configurations on MariaDB "
               "10.5, 10.11 and 11.8 in containers); a named profile has its own processed files",
    "configurations": "subset of: off, slow_1s, slow_all, slow_all_devnull, general_log, slow_all_table, "
                      'slow_sampled; None: all ("off" is always added: it is the baseline)',
    "cells": '"regime/workload" pairs; regime: cpu (buffer pool > data) or io (buffer pool << data, O_DIRECT); '
             "workload: oltp_read_write or oltp_point_select; None: profile's",
    "clients": "sysbench --threads values (one connection each), each > 0; None: profile's ([1, 10, 50]: the "
               "post's 1/20/100 on 4 cores, per core on 2)",
    "repeats": "design blocks: interleaved blocks of separate runs, > 0; None: profile's (3)",
    "duration": "seconds measured per run (sysbench --time), whole seconds > 0",
    "warmup": "seconds of unrecorded sysbench before each run, ≥ 0 (standard: 0, the server stays warm between runs)",
    "restart_warmup": "seconds of unrecorded sysbench after each server restart (the /dev/null configuration), ≥ 0",
    "tables": "sysbench --tables, > 0",
    "table_size": "rows per table, > 0 (~250 bytes per row with its index)",
    "buffer_pool_cpu": 'innodb_buffer_pool_size of the CPU-bound regime, e.g. "512M"; must exceed 1.25 x the data',
    "buffer_pool_io": 'innodb_buffer_pool_size of the IO-bound regime, e.g. "16M"; at most a quarter of the data',
    "sample_rate": "log_slow_rate_limit of slow_sampled: log every n-th statement, ≥ 2",
    "seed": "seed of the randomized run order (the post's date)",
    "backend": "\"local\" (the machine's mariadbd; a MySQL 8 mysqld works too: pass mariadbd), \"container\" "
               '(testcontainers, the same server flags and settings), or "auto": container when a Docker '
               "engine answers, else local",
    "versions": "MariaDB series run side by side in containers, one interleaved schedule, each its own baseline "
                'and A/A: any of "10.5", "10.11", "11.8" (docker/servers.tsv); needs backend "container" '
                "or \"auto\", no image; None: the profile's (versions: [\"10.5\", \"10.11\", \"11.8\"]), else "
                "one server",
    "image": "container image; None: the official mariadb:10.11 where available, else the locally built "
             "logbench/mariadb:10.11",
    "mariadbd": "server binary; None: mariadbd on PATH or /usr/sbin (with a container it only checks the settings)",
    "output_dir": "raw run records; None: results/mysql_slowlog/<UTC time> (smoke: a temp dir)",
    "design": '"switchback" (the arms switched by SET GLOBAL inside one continuous sysbench load per cell and '
              'clients level; only arms an open session takes: off, slow_all, general_log) or "blocks" (a '
              "separate run per configuration); None: the profile's",
    "window_s": "switchback: seconds per window, whole, at least guard_s + 1; None: profile's (switchback: 3)",
    "guard_s": "switchback: seconds after each switch that are not measured, whole, ≥ 0; None: profile's "
               "(switchback: 1)",
    "layout": LAYOUT_HELP,
    "blocks": "switchback: blocks per load, > 0; None: profile's (switchback: 2)",
    "loads": "switchback: independent loads per cell and level, the server restarted before each, > 0; None: "
             "profile's (switchback: 4)",
    "max_loads": "switchback: more loads, up to this many (≥ loads), while an arm is wider than "
                 "target_halfwidth; None: profile's",
    "memory_limit_mb": "the io cell's memory cgroup limit (MB) on the local server's processes; 0 or \"none\": "
                       "off; None: the profile's (standard: 64; full: 192), dropped with the reason recorded on "
                       "a container backend",
    "read_iops": "under memory_limit_mb, the io cell's disk reads per second allowed to the server (the post's "
                 "disk's pace); None: the profile's (standard and full: 450)",
}


@common.declare(PROFILES, help=HELP)
def define(profile: str = "standard", configurations: list[str] | None = None, cells: list[str] | None = None,
           tables: int | None = None, table_size: int | None = None, buffer_pool_cpu: str | None = None,
           buffer_pool_io: str | None = None, sample_rate: int = 100, restart_warmup: int | None = None,
           backend: str = "auto", image: str | None = None, mariadbd: str | None = None, design: str | None = None,
           window_s: int | None = None, guard_s: int | None = None, layout: str | None = None,
           blocks: int | None = None, loads: int | None = None, max_loads: int | None = None,
           memory_limit_mb: int | str | None = None, read_iops: int | str | None = None,
           versions: list[str] | None = None, **shared: object) -> MysqlSlowlogStudy:
    """Check every parameter and freeze the study; raises ParameterError/SettingError before anything starts.
    ``shared``: the parameters every study has (common.SHARED: clients, repeats, duration, warmup, seed, ...).
    ``configurations`` and the switchback design's parameters: None takes the profile's (every configuration,
    the block design, where it has none). ``memory_limit_mb`` / ``read_iops``: the io regime's pacing (None: the
    profile's; 0 or "none": off); the profile's is dropped, with the reason recorded, where the backend is a
    container or this machine allows no cgroup; one asked for explicitly is checked and refused instead.
    ``versions``: MariaDB series (docker/servers.tsv) run side by side in containers, one interleaved schedule,
    each its own baseline and A/A (None: the profile's, if it has them; else one server)."""
    d = common.profile_lookup(profile, PROFILES)
    own = PROFILES[profile]
    versions = own.get("versions") if versions is None else versions
    swept = None if versions is None else mb.check_versions(versions, backend, image)
    if swept and cells is None:
        cells = _cpu_cells(d("cells", None), swept)
    chosen = params.name_list("configurations", own.get("configurations", list(CONFIGURATIONS))
                              if configurations is None else configurations, CONFIGURATIONS)
    chosen = common.with_baseline(BASELINE, chosen)
    params.choice("backend", backend, BACKENDS)
    rate = params.positive_int("sample_rate", sample_rate)
    if rate < 2:
        raise ParameterError("sample_rate", rate, "a whole number >= 2 (log every n-th statement; 1 is slow_all)")
    engine = mb.mariadb_fields(backend=backend, image=image, mariadbd=mariadbd, tables=d("tables", tables),
                               table_size=d("table_size", table_size))
    configs = _configurations(chosen, rate, engine["flavor"])
    study = MysqlSlowlogStudy(
        **common.without_block_layout(common.study_fields(SPEC, profile, PROFILES, whole_seconds=True, **shared),
                                      swept), **engine,
        configurations=tuple(configs),
        # Cells sharing a regime run next to each other: one restart per regime.
        cell_names=tuple(sorted(params.name_list("cells", d("cells", cells), CELLS), key=lambda c: (
            REGIMES.index(c.split("/")[0]), c))),
        buffer_pool_cpu=str(d("buffer_pool_cpu", buffer_pool_cpu)),
        buffer_pool_io=str(d("buffer_pool_io", buffer_pool_io)),
        sample_rate=rate, restart_warmup=params.non_negative_int("restart_warmup", d("restart_warmup", restart_warmup)),
    )
    study = _with_switchback(study, own, swept, design=design, window_s=window_s, guard_s=guard_s, layout=layout,
                             blocks=blocks, loads=loads, max_loads=max_loads)
    io_pool = _checked_pools(study, profile)
    study = _paced(study, own, memory_limit_mb, read_iops, io_pool)
    for r in study.regimes:
        validate_mariadb(study.base_for(r), study.mariadbd)
    for c in study.configurations:
        validate_mariadb(c.settings, study.mariadbd)
    if swept:
        study = mb.with_variants(study, [(f"mariadb{v}", study.backend, None, v) for v in swept])
    if study.block_layout is not None and study.switchback is None:
        # each cell runs its own schedule with a seed of its own (for_cell): a declared block layout must hold for
        # every one of them now, not fail at that cell's turn with its servers up (seen 2026-11-28)
        for i in range(len(study.cell_names)):
            study.for_cell(i)
    return study


# define's steps (split out of it to keep it readable; the checks and their order as they were):


def _cpu_cells(cells: list[str], swept: tuple[str, ...]) -> list[str]:
    """A sweep's default cells: the profile's cpu cells (the profile ``versions``'s choice), the io regime said and left
    out, so ``versions=["10.5", "11.8"]`` alone runs what a sweep can measure: a container's server is outside the
    memory cgroup that paces the io regime (where a container runs the io cell, its pacing is dropped)."""
    return common.sweep_default(SPEC.name, swept, cells, lambda c: not c.startswith("io/"),
                                "the io regime's memory cgroup cannot hold a container's server")


def _configurations(chosen: list[str], rate: int, flavor: str) -> list[Configuration]:
    """The chosen configurations' settings (the sampled log's rate filled in), each with its sinks and records."""
    if flavor == "mysql" and "slow_sampled" in chosen:
        raise ParameterError("configurations", "slow_sampled",
                             "configurations without 'slow_sampled' on MySQL (log_slow_rate_limit is MariaDB's / "
                             "Percona Server's)")
    configs = []
    for name in chosen:
        settings, sinks, _ = CONFIGURATIONS[name]
        settings = {k: (rate if v is None else v) for k, v in settings.items()}
        settings = Settings.of("mariadb", settings)
        configs.append(Configuration(name, settings, sinks, mb.statement_records(settings)))
    return configs


def _with_switchback(study: MysqlSlowlogStudy, own: dict, swept: object, **design: object) -> MysqlSlowlogStudy:
    """The study with the switchback design where the profile or ``design`` asks for it (checked); as it was."""
    from ...measure import switchback
    from ...measure.benches import mariadb_switchback

    sb = switchback.from_profile(own, lead_in_s=study.warmup, **design)
    if sb is not None:
        if swept:
            raise ParameterError("design", "switchback", "'blocks' with a version sweep (versions): its servers "
                                 "interleave as separate runs")
        mariadb_switchback.check_switchable(study.configurations, study.base)
        sb.check_arms(len(study.planned_configurations))
        study = dataclasses.replace(study, switchback=sb)
    return study


def _checked_pools(study: MysqlSlowlogStudy, profile: str) -> int:
    """The regimes' buffer pools checked against the data (but for smoke); returns the io regime's, in bytes."""
    cpu_pool = size_bytes("buffer_pool_cpu", study.buffer_pool_cpu)
    io_pool = size_bytes("buffer_pool_io", study.buffer_pool_io)
    data = study.data_bytes_estimate
    if profile != "smoke":
        if "cpu" in study.regimes and cpu_pool < 1.25 * data:
            raise ParameterError("buffer_pool_cpu", study.buffer_pool_cpu,
                                 f"at least 1.25 x the data (~{data / 2**20:.0f} MB for {study.tables} x "
                                 f"{study.table_size} rows), or the CPU-bound regime is not CPU-bound")
        if "io" in study.regimes and io_pool * 4 > data:
            raise ParameterError("buffer_pool_io", study.buffer_pool_io,
                                 f"at most a quarter of the data (~{data / 2**20:.0f} MB), or the IO-bound regime "
                                 "is not IO-bound; add tables or rows instead")
    return io_pool


# The server's own memory besides the buffer pool that the limit must leave room for; a server over its limit with
# no page cache left to reclaim is killed. What it allocated before it entered stays charged outside (cgroups move
# no charges): MariaDB 10.11 with a 16 MB pool at 50 connections had 3-19 MB charged inside (smoke run, 2026-11-25).
SERVER_OVERHEAD_MB = 48


def _paced(study: MysqlSlowlogStudy, own: dict, memory_limit_mb: object, read_iops: object,
           io_pool: int) -> MysqlSlowlogStudy:
    """The study with its io regime's pacing checked (servers.memlimit), before any server starts."""
    asked = memory_limit_mb is not None or read_iops is not None
    limit, iops = memlimit.limit_parameters(own.get("memory_limit_mb") if memory_limit_mb is None else memory_limit_mb,
                                            own.get("read_iops") if read_iops is None else read_iops,
                                            study.backend if asked else "local")
    if limit is None or "io" not in study.regimes:
        return dataclasses.replace(study, memory_limit_mb=None, read_iops=None)
    need = io_pool / 2**20 + SERVER_OVERHEAD_MB
    if limit < need:
        raise ParameterError("memory_limit_mb", limit, f"at least buffer_pool_io ({study.buffer_pool_io}) + "
                             f"{SERVER_OVERHEAD_MB} MB = {need:.0f} MB: the server's own memory counts against the "
                             "limit, and a server over it with no page cache left to reclaim is killed")
    if not asked and study.backend == "container":
        return dataclasses.replace(study, memory_limit_mb=None, read_iops=None,
                                   pacing_off="the container backend (the limit is a cgroup on a local server's "
                                              "processes)")
    try:
        # the server's data directory is made under the scratch root: its disk is the one whose reads are paced
        memlimit.check_machine(limit, iops, paths.scratch_root())
    except ParameterError as e:
        if asked:
            raise
        return dataclasses.replace(study, memory_limit_mb=None, read_iops=None, pacing_off=f"this machine ({e})")
    return dataclasses.replace(study, memory_limit_mb=limit, read_iops=iops)


def run(study: MysqlSlowlogStudy, *, progress: bool = True) -> common.StudyResult:
    """Start a server (one per version of a sweep), load the data, run every cell's schedule, stop and remove
    everything again."""
    def start(study, stack):
        if study.variants:
            servers, envs = {}, {}
            for label, *_ in study.variants:
                server, sb, envs[label] = mb.start(study.variant(label), stack, study.base_for(study.regimes[0]),
                                                   extra=lambda s: {**_data_bytes(s), **_pacing(study)})
                servers[label] = (server, sb)
            return (servers, None), {"variants": envs}
        server, sb, env = mb.start(study, stack, study.base_for(study.regimes[0]),
                                   extra=lambda s: {**_data_bytes(s), **_pacing(study)})
        limit = None
        if study.memory_limit_mb:
            # made now, entered by the server only when the io regime starts (the cpu regime runs unlimited)
            limit = stack.enter_context(memlimit.MemoryLimit(study.memory_limit_mb * 2**20, read_iops=study.read_iops,
                                                             read_limit_on=server.datadir))
        return ({"": (server, sb)}, limit), env

    return common.run_study(study, processed_tables, start=start, execute=_execute_cells, progress=progress)


def _data_bytes(server: mdb.MariaDBServer) -> dict:
    return {"data_bytes": int(server.query("SELECT COALESCE(SUM(data_length + index_length), 0) FROM "
                                           "information_schema.tables WHERE table_schema = 'sbtest'")[0][0])}


def _pacing(study: MysqlSlowlogStudy) -> dict:
    """The io regime's pacing as the environment record keeps it."""
    if study.memory_limit_mb:
        return {"io_memory_limit_bytes": study.memory_limit_mb * 2**20, "io_read_iops_limit": study.read_iops}
    return {"io_pacing_off": study.pacing_off} if study.pacing_off else {}


def _execute_cells(study: MysqlSlowlogStudy, started, env: dict, progress: bool):
    """Each cell in turn on the one server, or on each version's server behind one interleaved schedule
    (runner.SplitBench), each restarted into its regime's base when that changes."""
    servers, limit = started
    switches = []
    held = False
    env_id = common.first_environment(env)["env_id"]
    for index, (regime, _) in enumerate(study.cells()):
        cell = study.for_cell(index)
        restarted = False
        for server, _ in servers.values():
            if server.base != study.base_for(regime):
                server.restart(base=study.base_for(regime))
                restarted = True
        if regime == "io" and limit is not None and (restarted or not held):
            # (InnoDB reads and writes its data O_DIRECT here, past the page cache; evict() writes and drops what
            # else the server's files left there; a limit exists for the one local server only)
            hold(limit, servers[""][0])
            held = True
        benches = {label: SlowlogBench(cell, server, sb, limit) for label, (server, sb) in servers.items()}
        if index > 0 and study.cells()[index - 1][0] != regime:
            for b in benches.values():
                b.warm_after_restart()
        bench = benches[""] if "" in benches else runner.SplitBench(benches, env["variants"])
        if study.switchback is not None:
            from ...measure import switchback
            from ...measure.benches import mariadb_switchback

            _, sw = switchback.execute(cell, bench, env, progress, engine=mariadb_switchback.engine())
            switches += sw
            continue
        try:
            runs = runner.execute(cell, bench, env_id, progress=progress,
                                  schedule_key=f"{index}:{cell.regimes[0]}/{cell.workloads[0]}")
        finally:
            switches += common.switches_of(bench)
    if study.switchback is not None:
        runs = records.load(runner.runs_path(study))
    return runs, switches


# -- the plan's tables for the notebook ------------------------------------------------------------------

def configuration_table(study: MysqlSlowlogStudy) -> pd.DataFrame:
    """Each configuration: what it changes from the base, how it reaches the server, where it is counted; for a
    version sweep, the records due per statement and per connection on each version (10.5 logs each
    connection's end too)."""
    rows = {}
    for c in study.configurations:
        label, _, name = c.name.rpartition(runner.SplitBench.SEP)
        changed = {k: v for k, v in c.settings.items() if study.base.get(k) != v}
        row = rows.setdefault(name, {
            "configuration": name,
            "settings (over the base)": ", ".join(f"{k}={v}" for k, v in changed.items()) or "(base only)",
            "applied by": "restart" if c.settings.get("slow_query_log_file") == DEVNULL else "SET GLOBAL",
            "counted in": ", ".join(c.destinations) or ("not countable" if c.settings.get("slow_query_log_file") == DEVNULL else "–"),
            "what": CONFIGURATIONS[name][2],
        })
        if label:
            row[f"records per statement; per connection ({label})"] = (
                f"{sum(r.per_statement for r in c.records):g}; {sum(r.per_connection for r in c.records):g}"
                if c.records else "–")
    return pd.DataFrame(list(rows.values())).set_index("configuration")


def regime_table(study: MysqlSlowlogStudy) -> pd.DataFrame:
    rows = []
    for r in study.regimes:
        s = study.base_for(r)
        paced = r == "io" and study.memory_limit_mb
        rows.append({"regime": r, "innodb_buffer_pool_size": s["innodb_buffer_pool_size"],
                     "innodb_flush_method": s.get("innodb_flush_method", "(server default)"),
                     "memory limit (MB, page cache included)": study.memory_limit_mb if paced else "–",
                     "disk reads per second (limit)": (study.read_iops or "–") if paced else "–",
                     "data (estimate)": f"{study.data_bytes_estimate / 2**20:.0f} MB "
                                        f"({study.tables} x {study.table_size} rows)"})
    return pd.DataFrame(rows).set_index("regime")


def design_summary(study: MysqlSlowlogStudy) -> dict[str, object]:
    per_cell = len(study.plan())
    server = (", ".join(f"{label}: {image or f'{study.flavor} {version}'}" for label, _, image, version in study.variants)
              if study.variants else f"{study.flavor} ({study.image or study.mariadbd})")
    return {
        "profile": study.profile, "backend": study.backend, "server": server, "cells": list(study.cell_names),
        "clients": list(study.clients), "repeats": study.repeats,
        "runs planned": per_cell * len(study.cells()), "duration (s)": study.duration,
        "warm-up per run (s)": study.warmup, "sampled slow log rate": study.sample_rate, "seed": study.seed,
        "output": str(study.output_dir),
    }
