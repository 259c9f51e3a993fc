"""Study 02: what does each PostgreSQL log destination cost? (post 000, depesz 2013, redone)

Every statement is logged (``log_min_duration_statement = 0``, as in the post)
to one destination at a time; pgbench's select-only test measures throughput
and latency; each destination's sink is counted to see whether every record
arrived (the post's syslog kept ~0.5 % of them and nobody saw it in the tps).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import psutil

from .. import cleanup, environment, params, paths, records, runner, stats
from ..design import PlannedRun, Study
from ..logsinks import FileSink
from ..runner import Measurement
from ..servers import postgres as pgserver
from ..servers import process
from ..servers.process import is_root
from ..servers.syslog import FACILITY_FILE, FACILITY_TCP, FACILITY_UDP, NamespaceLogHost, SyslogPair, rsyslogd_binary
from ..settings import Configuration, Settings, validate_postgres
from ..workloads.pgbench import QUERY_MODES, RECORD_MARKER, Pgbench, expected_records

NAME = "pg_destinations"
BACKENDS = ("auto", "local", "container")
LOG_DIR_ON = ("disk", "tmpfs")

# The post's baseline (its pg_settings listing): the collector on, stderr to a file,
# no statement logging; timestamps in UTC rather than 'Poland' so runs compare anywhere.
BASE = {
    "logging_collector": True,
    "log_destination": "stderr",
    "log_filename": "postgresql.log",
    "log_rotation_age": 0,
    "log_rotation_size": 0,
    "log_truncate_on_rotation": False,
    "log_file_mode": "0600",
    "log_line_prefix": "%m %u@%d %p %r ",
    "log_checkpoints": False,
    "log_connections": False,
    "log_disconnections": False,
    "log_duration": False,
    "log_lock_waits": True,
    "log_temp_files": 0,
    "log_autovacuum_min_duration": 0,
    "log_min_messages": "warning",
    "log_min_error_statement": "error",
    "log_statement": "none",
    "log_min_duration_statement": -1,
    "log_timezone": "UTC",
    "syslog_ident": "postgres",
}

_ALL = {"log_min_duration_statement": 0}
# The post changed the prefix for syslog: the daemon already stamps pid and time.
_SYSLOG = {**_ALL, "log_line_prefix": "%u@%d %r "}

# name -> (settings over BASE, sinks that receive the statement records)
DESTINATIONS: dict[str, tuple[dict, tuple[str, ...]]] = {
    "none": ({}, ()),
    "stderr": ({**_ALL, "log_destination": "stderr"}, ("stderr",)),
    "csvlog": ({**_ALL, "log_destination": "csvlog"}, ("csvlog",)),
    "jsonlog": ({**_ALL, "log_destination": "jsonlog"}, ("jsonlog",)),
    "syslog": ({**_SYSLOG, "log_destination": "syslog", "syslog_facility": FACILITY_FILE}, ("syslog",)),
    "remote_syslog_udp": ({**_SYSLOG, "log_destination": "syslog", "syslog_facility": FACILITY_UDP}, ("remote_syslog",)),
    "remote_syslog_tcp": ({**_SYSLOG, "log_destination": "syslog", "syslog_facility": FACILITY_TCP}, ("remote_syslog",)),
    "syslog,csvlog": ({**_SYSLOG, "log_destination": "syslog,csvlog", "syslog_facility": FACILITY_FILE}, ("syslog", "csvlog")),
}
BASELINE = "none"
POST = "000_d12f15a856ad9e5d.txt"  # the post this study redoes (shared/seeds)

PROFILES: dict[str, dict[str, object]] = {
    # seconds: what tests and nbval run
    "smoke": {"clients": [1], "repeats": 2, "duration": 1, "warmup": 0, "scale": 1, "sampling_rate": 0.1},
    # the committed run: ~15 minutes on two cores
    "standard": {"clients": [1, 4, 8], "repeats": 5, "duration": 4, "warmup": 1, "scale": 10, "sampling_rate": 0.05},
    # paper-grade: longer runs, the post's cached scale
    "full": {"clients": [1, 4, 8], "repeats": 5, "duration": 30, "warmup": 5, "scale": 200, "sampling_rate": 0.01},
}


@dataclass(frozen=True, kw_only=True)
class PgDestinationsStudy(Study):
    base: Settings
    scale: int
    query_mode: str
    syslog_rate_limit: bool
    log_dir_on: str
    sampling_rate: float
    pg_bindir: str
    image: str | None
    # (label, backend, image) per server when one schedule spans several; configurations are then "label/name".
    variants: tuple[tuple[str, str, str | None], ...] = ()

    @property
    def needs_syslog(self) -> bool:
        return any(s in ("syslog", "remote_syslog") for c in self.configurations for s in c.destinations)

    @property
    def needs_remote(self) -> bool:
        return any("remote_syslog" in c.destinations for c in self.configurations)


def define(
    profile: str = "standard",
    destinations: object = None,
    clients: object = None,
    repeats: object = None,
    duration: object = None,
    warmup: object = None,
    scale: object = None,
    query_mode: str = "prepared",
    syslog_rate_limit: object = False,
    log_dir_on: str = "disk",
    sampling_rate: object = None,
    shared_buffers: str = "128MB",
    extra_settings: object = None,
    seed: object = 20130905,
    warmup_blocks: object = 0,
    backend: str = "auto",
    image: object = None,
    versions: object = None,
    output_dir: object = None,
    processed_dir: object = None,
    pg_bindir: object = None,
) -> PgDestinationsStudy:
    """Check every parameter and freeze the study; raises ParameterError/SettingError before anything starts."""
    params.choice("profile", profile, params.PROFILES)
    d = lambda name, v: params.from_profile(name, v, profile, PROFILES)  # noqa: E731
    chosen = params.name_list("destinations", list(DESTINATIONS) if destinations is None else destinations, DESTINATIONS)
    # The baseline is always measured: every ratio needs it.
    chosen = (BASELINE,) + tuple(c for c in chosen if c != BASELINE)
    params.choice("query_mode", query_mode, QUERY_MODES)
    params.choice("log_dir_on", log_dir_on, LOG_DIR_ON)
    params.choice("backend", backend, BACKENDS)
    backend = resolve_backend(backend)
    rate_limit = params.boolean("syslog_rate_limit", syslog_rate_limit)
    bindir = pgserver.find_bindir(pg_bindir)
    extra = params.mapping("extra_settings", extra_settings)
    base = Settings.of("postgresql", {**BASE, "shared_buffers": shared_buffers, **extra})
    configurations = tuple(
        Configuration(name, Settings.of("postgresql", DESTINATIONS[name][0]), DESTINATIONS[name][1]) for name in chosen
    )
    for s in (base, *(c.settings for c in configurations)):
        validate_postgres(s, bindir / "postgres")
    study = PgDestinationsStudy(
        name=NAME, engine="postgresql", backend=backend, profile=profile,
        configurations=configurations,
        clients=params.int_list("clients", d("clients", clients)),
        repeats=params.positive_int("repeats", d("repeats", repeats)),
        duration=params.positive_number("duration", d("duration", duration)),
        warmup=params.non_negative_number("warmup", d("warmup", warmup)),
        warmup_blocks=params.non_negative_int("warmup_blocks", warmup_blocks),
        seed=params.non_negative_int("seed", seed),
        output_dir=Path(output_dir) if output_dir else _default_output(profile),
        processed_dir=(Path(processed_dir) if processed_dir else (None if profile == "smoke" else paths.PROCESSED)),
        base=base,
        scale=params.positive_int("scale", d("scale", scale)),
        query_mode=query_mode,
        syslog_rate_limit=rate_limit,
        log_dir_on=log_dir_on,
        sampling_rate=params.fraction("sampling_rate", d("sampling_rate", sampling_rate)),
        pg_bindir=str(bindir),
        image=str(image) if image else None,
    )
    if versions is not None:
        from ..servers.containers import PG_IMAGES, resolve_image

        chosen = params.name_list("versions", versions, PG_IMAGES, coerce=str)
        if study.backend != "container":
            raise params.ParameterError("versions", versions, "a version sweep runs in containers: set backend to "
                                        "'container' or 'auto' with a Docker engine")
        # Images are resolved now, so a version without one fails before any server starts.
        study = with_variants(study, [(f"pg{v}", "container", resolve_image("postgres", v)) for v in chosen])
    if study.duration != int(study.duration):
        raise params.ParameterError("duration", study.duration, "whole seconds (pgbench -T takes seconds)")
    if study.needs_syslog and study.backend == "local" and not is_root():
        raise params.ParameterError(
            "destinations", [c.name for c in configurations if c.destinations and "syslog" in c.destinations[0]],
            "without root, only 'none', 'stderr', 'csvlog', 'jsonlog' (syslog destinations give the server a "
            "private /dev/log and a network namespace, which need root)")
    if study.needs_syslog:
        rsyslogd_binary()
    return study


def with_variants(study: PgDestinationsStudy, variants: list[tuple[str, str, str | None]]) -> PgDestinationsStudy:
    """The same study on several servers in one interleaved schedule (see runner.SplitBench)."""
    import dataclasses

    configurations = tuple(Configuration(f"{label}{runner.SplitBench.SEP}{c.name}", c.settings, c.destinations)
                           for c in study.configurations for label, _, _ in variants)
    return dataclasses.replace(study, configurations=configurations, variants=tuple(variants),
                               backend="+".join(dict.fromkeys(b for _, b, _ in variants)))


def resolve_backend(backend: str) -> str:
    """'auto' -> 'container' when a Docker engine answers, else 'local'; 'container' needs an engine."""
    from ..servers.containers import engine_answers

    if backend == "local":
        return backend
    answers = engine_answers()
    if backend == "container" and not answers:
        raise params.ParameterError(
            "backend", backend, "'local', or 'auto'/'container' once a Docker engine answers "
            "(`bash scripts/setup.sh --docker` installs and starts one)")
    return "container" if answers else "local"


def _default_output(profile: str) -> Path:
    if profile == "smoke":
        return Path(tempfile.mkdtemp(prefix="logbench-smoke-")) / NAME
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return paths.RESULTS / NAME / stamp


class PgBench:
    """The PostgreSQL half of the runner's loop (see :class:`logbench.runner.Bench`)."""

    engine = "postgresql"
    workload = "pgbench -S"

    def __init__(self, study: PgDestinationsStudy, pg: pgserver.LocalPostgres, pgbench: Pgbench,
                 syslog: SyslogPair | None, log_dir: Path):
        self.study, self.pg, self.pgbench, self.syslog, self.log_dir = study, pg, pgbench, syslog, log_dir
        self.backend = pg.backend
        self.server_version = pg.version()
        self.query_mode = study.query_mode
        self.scale = study.scale
        self.switches: list[tuple[str, float]] = []
        markers = (b"duration:", RECORD_MARKER.encode())
        self._sinks = {
            "stderr": FileSink("stderr", log_dir / "postgresql.log", markers),
            "csvlog": FileSink("csvlog", log_dir / "postgresql.csv", markers),
            "jsonlog": FileSink("jsonlog", log_dir / "postgresql.json", markers),
        }
        if syslog is not None:
            self._sinks["syslog"] = FileSink("syslog", syslog.files.local, markers)
            if syslog.files.remote is not None:
                self._sinks["remote_syslog"] = FileSink("remote_syslog", syslog.files.remote, markers)

    def apply(self, configuration: Configuration):
        sw = self.pg.apply(configuration.settings)
        if sw.kind != "none":
            self.switches.append((sw.kind, sw.seconds))
        return sw

    def warm(self, run: PlannedRun, seconds: float) -> None:
        self.pgbench.run(run.clients, max(1, int(seconds)), self.study.query_mode)

    def measure(self, run: PlannedRun, seconds: float) -> Measurement:
        prefix = Path(self.study.output_dir) / "txlog" / f"run{run.position:04d}"
        prefix.parent.mkdir(parents=True, exist_ok=True)
        r = self.pgbench.run(run.clients, seconds, self.study.query_mode, log_prefix=prefix,
                             sampling_rate=self.study.sampling_rate)
        return Measurement(
            transactions=r.transactions, failed=r.failed, tps=r.tps, latency_mean_ms=r.latency_avg_ms,
            latency_stddev_ms=r.latency_stddev_ms, latency_p50_ms=r.latency_p50_ms, latency_p95_ms=r.latency_p95_ms,
            latency_p99_ms=r.latency_p99_ms, latency_samples=r.latency_samples, wall_s=r.wall_seconds,
            threads=run.clients, extra={"command": " ".join(r.command[1:]),
                                        "initial_connection_ms": r.initial_connection_ms},
        )

    def sinks(self, configuration: Configuration) -> list[FileSink]:
        return [self._sinks[name] for name in configuration.destinations]

    def expected_records(self, configuration: Configuration, run: PlannedRun, m: Measurement) -> int:
        logs_all = configuration.settings.get("log_min_duration_statement") == "0"
        return expected_records(self.study.query_mode, m.transactions, run.clients) if logs_all else 0

    def server_cpu(self) -> float:
        # The server's own processes (checkpointer, walwriter, collector, ...) stay; the client
        # backends of the run, titled "postgres: user db [local] ...", must be gone and reaped.
        pid = self.pg.pid
        process.children_settled(pid, lambda p: "[local]" in " ".join(p.cmdline()))
        return process.tree_cpu_seconds(pid)

    def logger_cpu(self) -> float:
        return self.syslog.cpu_seconds() if self.syslog is not None else 0.0

    def effective_settings(self, configuration: Configuration) -> dict:
        return self.study.base.merged(configuration.settings).as_dict()

    def log_dir_fs(self) -> str:
        best = ("", "")
        for p in psutil.disk_partitions(all=True):
            if str(self.log_dir).startswith(p.mountpoint) and len(p.mountpoint) > len(best[0]):
                best = (p.mountpoint, p.fstype)
        return best[1]


@dataclass(frozen=True)
class StudyResult:
    study: PgDestinationsStudy
    runs: pd.DataFrame
    environment: dict
    switches: tuple[tuple[str, float], ...]


def start_stack(study: PgDestinationsStudy, backend: str, stack: contextlib.ExitStack,
                image: str | None = None) -> tuple["PgBench", dict]:
    """Start one backend's log directory, syslog daemons, server and dataset inside ``stack``."""
    root = paths.tmpfs_root() if study.log_dir_on == "tmpfs" else paths.scratch_root()
    log_dir = cleanup.private_dir("logbench-log-", root)
    stack.callback(shutil.rmtree, log_dir, True)
    syslog = None
    if backend == "container":
        from ..servers import containers

        host_kind, server_kind = containers.ContainerLogHost, containers.ContainerPostgres
        server_kw = {"image": image or study.image}
    else:
        host_kind, server_kind = NamespaceLogHost, pgserver.LocalPostgres
        server_kw = {"bindir": study.pg_bindir}
    if study.needs_syslog:
        syslog = stack.enter_context(SyslogPair(remote=study.needs_remote, rate_limit=study.syslog_rate_limit,
                                                log_dir=log_dir, remote_host=host_kind))
    pg = stack.enter_context(server_kind(study.base, log_dir=log_dir, syslog_socket=syslog.socket if syslog else None,
                                         **server_kw))
    pgb = Pgbench(pg.binary("pgbench"), pg.conninfo)
    init_s = pgb.initialise(study.scale)
    tools = {"pgbench": pgb.version(), "postgres": environment.tool_version([str(pg.binary("postgres")), "--version"])}
    if syslog is not None:
        tools["rsyslogd"] = environment.tool_version([rsyslogd_binary(), "-v"])
    env = environment.collect(
        server_version=pg.version(), tools=tools,
        extra={**environment.pg_test_timing(pg.binary("pg_test_timing")), "pgbench_init_s": init_s,
               "log_dir_on": study.log_dir_on, "backend": pg.backend, "image": getattr(pg, "image", None)},
    )
    return PgBench(study, pg, pgb, syslog, log_dir), env


def run(study: PgDestinationsStudy, *, progress: bool = True) -> StudyResult:
    """Start everything the study needs, run its schedule, stop and remove everything again."""
    with runner.terminate_as_interrupt(), contextlib.ExitStack() as stack:
        if study.variants:
            benches, envs = {}, {}
            for label, backend, image in study.variants:
                benches[label], envs[label] = start_stack(study, backend, stack, image)
            bench, env = runner.SplitBench(benches, envs), {"variants": envs}
            env_id = next(iter(envs.values()))["env_id"]
        else:
            bench, env = start_stack(study, study.backend, stack)
            env_id = env["env_id"]
        runner.write_study(study, env)
        runs = runner.execute(study, bench, env_id, progress=progress)
    switches = [sw for b in (bench.benches.values() if study.variants else [bench]) for sw in b.switches]
    result = StudyResult(study, runs, env, tuple(switches))
    if study.processed_dir is not None:
        write_processed(result, Path(study.processed_dir))
    return result


def split_variant(runs: pd.DataFrame) -> pd.DataFrame:
    """Measured runs with a ``variant`` column ('' for a single server) and plain configuration names."""
    measured = runs[~runs["warmup"].astype(bool)].copy()
    parts = measured["configuration"].str.partition(runner.SplitBench.SEP)
    has = parts[1] != ""
    measured["variant"] = parts[0].where(has, "")
    measured["configuration"] = parts[2].where(has, measured["configuration"])
    return measured


def summary(runs: pd.DataFrame, baseline: str = BASELINE) -> pd.DataFrame:
    """tps mean ± CI, ratio to the baseline ± Fieller CI, loss and log rates, per configuration × clients
    (and per variant, each against its own baseline, when the study spans several servers)."""
    measured = split_variant(runs)
    parts = []
    for variant, g in measured.groupby("variant", sort=False):
        environment.check_poolable(g)
        s = stats.summarise(
            g, by=["configuration", "clients"], baseline=baseline,
            also=("latency_p95_ms", "log_loss", "log_lines_per_s", "log_bytes_per_s", "server_cpu_s", "logger_cpu_s"),
        )
        parts.append(s.assign(variant=variant)[["variant", *s.columns]] if variant else s)
    out = pd.concat(parts, ignore_index=True)
    order = {c: i for i, c in enumerate(DESTINATIONS)}
    keys = ["configuration", "clients"] + (["variant"] if "variant" in out else [])
    return out.sort_values(keys, key=lambda s: s.map(order) if s.name == "configuration" else s, ignore_index=True)


def tidy_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """Runs as a flat CSV-ready frame (dict columns as JSON text)."""
    return records.flatten(runs)


def write_processed(result: StudyResult, processed_dir: Path) -> dict[str, Path]:
    return records.write_processed(NAME, processed_dir, result.environment,
                                   {"summary": summary(result.runs), "runs": tidy_runs(result.runs)})


def load_processed(processed_dir: Path = paths.PROCESSED) -> tuple[pd.DataFrame, pd.DataFrame]:
    return (pd.read_csv(processed_dir / f"{NAME}.csv"), pd.read_csv(processed_dir / f"{NAME}_runs.csv"))


# -- findings: sentences whose every number is read from the summary ---------------------------------

def _ci(r: pd.Series, col: str, digits: int = 3) -> str:
    from ..plots import fmt_ci

    return fmt_ci(r[col if col in r else f"{col}_mean"], r[f"{col}_ci_low"], r[f"{col}_ci_high"], int(r["n"]), digits)


def finding_overhead(summary: pd.DataFrame, baseline: str = BASELINE) -> str:
    """Per concurrency: the cheapest and dearest destination, and which ones are distinguishable from the baseline."""
    lines = []
    for clients, g in summary[summary["configuration"] != baseline].groupby("clients", sort=True):
        g = g.sort_values("ratio", ascending=False)
        best, worst = g.iloc[0], g.iloc[-1]
        slower = g[g["ratio_ci_high"] < 1]["configuration"].tolist()
        lines.append(
            f"- **{clients} client(s):** cheapest `{best['configuration']}` at {_ci(best, 'ratio')} of the baseline's "
            f"throughput, dearest `{worst['configuration']}` at {_ci(worst, 'ratio')}; "
            + (f"{len(slower)} of {len(g)} destinations are slower than `{baseline}` with 95 % confidence "
               f"({', '.join(f'`{c}`' for c in slower)})." if slower else
               f"no destination is slower than `{baseline}` with 95 % confidence.")
        )
    return "\n".join(lines)


def finding_loss(summary: pd.DataFrame, baseline: str = BASELINE) -> str:
    """Which destinations lost statement records, and how many."""
    g = summary[summary["configuration"] != baseline]
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
    g = summary[summary["configuration"] != baseline]
    top = g.loc[g["log_bytes_per_s_mean"].idxmax()]
    return (
        f"The logging rate ranged from {g['log_lines_per_s_mean'].min():,.0f} to {g['log_lines_per_s_mean'].max():,.0f} "
        f"lines/s; the most bytes went to `{top['configuration']}` at {top['clients']} client(s): "
        f"{top['log_bytes_per_s_mean'] / 1e6:.3g} MB/s."
    )


# -- tables for the notebook ----------------------------------------------------------------------

def configuration_table(study: PgDestinationsStudy) -> pd.DataFrame:
    """Each configuration: the settings it changes from the base, and where its records are counted."""
    rows = []
    for c in study.configurations:
        changed = {k: v for k, v in c.settings.items() if study.base.get(k) != v}
        rows.append({"configuration": c.name,
                     "settings (over the base)": ", ".join(f"{k}={v!r}" for k, v in changed.items()) or "(base only)",
                     "sinks": ", ".join(c.destinations) or "–"})
    return pd.DataFrame(rows).set_index("configuration")


def design_summary(study: PgDestinationsStudy) -> dict[str, object]:
    plan = study.plan()
    return {
        "profile": study.profile, "backend": study.backend, "clients": list(study.clients),
        "repeats": study.repeats, "runs planned": len(plan), "duration (s)": study.duration,
        "warm-up per run (s)": study.warmup, "scale": study.scale, "query mode": study.query_mode,
        "syslog rate limit": study.syslog_rate_limit, "log directory on": study.log_dir_on, "seed": study.seed,
        "output": str(study.output_dir),
    }


def environment_table(result: StudyResult) -> pd.DataFrame:
    env = result.environment
    kinds = pd.Series([k for k, _ in result.switches], dtype=object)
    secs = pd.Series([s for _, s in result.switches], dtype=float)
    rows = {
        "env_id": env["env_id"], "CPU": f"{env['cpu_model']} × {env['cpu_count']}", "kernel": env["kernel"],
        "clocksource": env["clocksource"], "timer loop (ns, pg_test_timing)": env.get("timer_loop_ns"),
        "server": env["server_version"], "git commit": env["git_commit"],
    }
    for kind in ("reload", "restart"):
        sel = secs[kinds == kind]
        rows[f"{kind}s (n, median s)"] = f"{len(sel)}, {sel.median():.3f}" if len(sel) else "0"
    return pd.Series(rows, name="value").to_frame()


# Which of the post's experiments a run of ours is comparable to, by query mode: its update ran
# -M prepared on a cached scale (200), its first run the simple protocol on an IO-bound scale (2000).
POST_EXPERIMENT = {"prepared": "cached_prepared_select", "simple": "io_bound_select"}


def published_ratios(query_mode: str = "prepared") -> pd.DataFrame:
    """Post 000's throughput ratios to its own baseline, keyed like our configurations."""
    from .. import reference

    d = reference.published_ratios(POST, POST_EXPERIMENT[query_mode])
    return d[d["metric"] == "throughput"].reset_index(drop=True)


def beside_post(summary: pd.DataFrame, published: pd.DataFrame) -> pd.DataFrame:
    """Our ratio with its CI next to the post's ratio for the same destination and concurrency."""
    from ..plots import fmt_ci

    pub = published.set_index(["configuration_key", "clients"])["ratio"]
    rows = []
    for r in summary[summary["configuration"] != BASELINE].itertuples():
        post = pub.get((r.configuration, r.clients))
        inside = None if post is None or pd.isna(r.ratio_ci_low) else bool(r.ratio_ci_low <= post <= r.ratio_ci_high)
        rows.append({"configuration": r.configuration, "clients": r.clients,
                     "ours: ratio [95 % CI] (n)": fmt_ci(r.ratio, r.ratio_ci_low, r.ratio_ci_high, r.n),
                     "post 000": "–" if post is None else f"{post:.3g}",
                     "post inside our CI": "–" if inside is None else ("yes" if inside else "no")})
    return pd.DataFrame(rows).set_index(["configuration", "clients"])
