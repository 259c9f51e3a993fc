"""Study 11's plan and run: ``define`` checks every parameter and freezes the study (ParameterError before any
server starts); ``run`` prepares each engine's pristine data directory once, then starts the server under each
counter for every configuration, load size and repeat, in a seeded random order within each repeat, and keeps one
row per count of every start as it finishes (``starts.jsonl``, appended, never rewritten); then it times this
machine's calibration (:mod:`.calibration`, ``calibration.jsonl``)."""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ...base import cleanup, environment, params, records
from ...measure import runner
from ...base import progress as channel
from ...measure.benches.postgres import BASE, statement_records
from ...counting import StartCounts, strace, valgrind
from ...base.errors import ParameterError
from ...servers import process
from ...servers.containers import image_id, server_images
from ...servers.postgres import find_bindir
from ...base.settings import Settings
from .. import common
from . import analysis, calibration, mariadb, pg
from .spec import BACKENDS, COUNTERS, HOLD, NAME, PG_CONFIGURATIONS, PROFILES, SPEC, RecordCostStudy

# The fewest transactions a load may have: below this the start-up and connection's own counts are not
# separated from the load's by a difference large enough to read (tests/test_record_cost.py checks proportionality).
MIN_TRANSACTIONS = 20


# What each parameter means (unit, allowed values), one line each: notebook 11's generated
# parameters cell and `run STUDY --help` show it; a shared parameter not named here has parameters.HELP's.
HELP = {
    "profile": 'run size: "smoke" (seconds; tests), "standard" (committed), "full" (more repeats, larger '
               'loads), "versions" (PostgreSQL 13, 15, 17 and MariaDB 10.5, 10.11, 11.8 in their containers; '
               "committed)",
    "configurations": "PostgreSQL's, subset of: none, stderr, csvlog, jsonlog, syslog, syslog,csvlog, "
                      "remote_syslog_udp, log_statement_all, log_duration, prefix_default, prefix_production, "
                      "sample_1pct, sample_10pct, track_io_timing, none_simple, stderr_simple (each brings its "
                      "baseline); [] for none; None: profile's (standard all)",
    "mariadb_configurations": "MariaDB's, subset of: none, slow_file, slow_table, general_file, "
                              "slow_file_verbose; [] for none; None: profile's (standard all)",
    "repeats": "independent pairs of starts of each configuration and counter, > 0; None: profile's (standard 3)",
    "transactions": "the small and the large load, [small, large], small ≥ 20; None: profile's (standard [200, 1000])",
    "counters": "subset of: cachegrind (instructions), strace (system calls, bytes); None: profile's (standard both)",
    "scale": "pgbench -s of the pristine data directory, > 0",
    "seed": "seed of the order of starts within each repeat, ≥ 0; None: 20261127",
    "backend": "\"local\" only: the counting tools run on this machine's binaries",
    "pg_bindir": "PostgreSQL's bin directory; None: the newest installed",
    "mariadbd": "the mariadbd binary; None: the installed one",
    "output_dir": "raw record (starts.jsonl, environment); None: results/record_cost/<UTC time> (smoke: a temp dir)",
    "processed_dir": "the tables; None: <output_dir>/processed (publish: data/processed)",
    "publish": "True only for the committed reference run: its tables go to data/processed",
    "versions": 'versions of docker/servers.tsv (PostgreSQL "13", "15", "17"; MariaDB "10.5", "10.11", '
                "\"11.8\"), each counted in its container (Debian's build on its release); [] for this machine's "
                "binaries only; None: profile's (standard [], \"versions\" all six)",
    "calibration_repeats": "timed loads of the baseline after the counted starts (calibration), 0 (none) or ≥ 2; "
                           "None: profile's (5; smoke 3, full 10, versions 0)",
    "calibration_seconds": "seconds of each timed load (pgbench -T), > 0; None: profile's (8; smoke 1, full 10)",
}


@common.declare(PROFILES, help=HELP)
def define(profile: str = "standard", configurations: list[str] | None = None,
           mariadb_configurations: list[str] | None = None, repeats: int | None = None,
           transactions: list[int] | None = None, counters: list[str] | None = None, scale: int = 1,
           seed: int | None = None, backend: str = "local", pg_bindir: str | None = None,
           mariadbd: str | None = None, output_dir: str | Path | None = None,
           processed_dir: str | Path | None = None, publish: bool = False,
           versions: list[str] | None = None, calibration_repeats: int | None = None,
           calibration_seconds: int | None = None) -> RecordCostStudy:
    """Check every parameter and freeze the study; ParameterError before anything starts."""
    d = common.profile_lookup(profile, PROFILES)
    swept = _versions(d("versions", versions))
    params.choice("backend", backend, BACKENDS)
    publish = params.boolean("publish", publish)
    pg_given = d("configurations", configurations)
    chosen = params.name_list("configurations", pg_given, PG_CONFIGURATIONS) if pg_given != [] else ()
    # every configuration's baseline runs too: a per-record figure is a difference from it
    chosen = tuple(dict.fromkeys([*(PG_CONFIGURATIONS[c].baseline for c in chosen), *chosen])) if chosen else ()
    mdb = d("mariadb_configurations", mariadb_configurations)
    if mdb is None:
        mdb = list(mariadb.CONFIGURATIONS)
    mdb_chosen = params.name_list("mariadb_configurations", mdb, mariadb.CONFIGURATIONS) if mdb else ()
    if mdb_chosen and "none" not in mdb_chosen:
        mdb_chosen = ("none", *mdb_chosen)
    if not chosen and not mdb_chosen:
        raise ParameterError("configurations", configurations, "at least one configuration of either engine")
    sizes = params.int_list("transactions", d("transactions", transactions))
    if len(sizes) != 2 or sizes[0] >= sizes[1] or sizes[0] < MIN_TRANSACTIONS:
        raise ParameterError("transactions", transactions,
                             f"two whole numbers, small then large, the small one >= {MIN_TRANSACTIONS} (the load's "
                             "counts are the difference of the two, so start-up and connection cancel)")
    tools = params.name_list("counters", d("counters", counters), COUNTERS)
    for t in tools:  # refused now, not after the first start
        (valgrind if t == "cachegrind" else strace).binary()
    if _of(swept, "postgresql") and any(PG_CONFIGURATIONS[c].syslog for c in chosen):
        raise ParameterError("configurations", [c for c in chosen if PG_CONFIGURATIONS[c].syslog],
                             "no syslog destination with PostgreSQL `versions`: a counted container's /dev/log is not "
                             "wired to the private rsyslogd (the local server's is)")
    if _of(swept, "mariadb") and mariadbd is not None:
        raise ParameterError("mariadbd", mariadbd, "None with MariaDB `versions`: each version runs its image's "
                             "mariadbd (this machine's runs only when no MariaDB version is named)")
    timed = calibration.settings(profile, calibration_repeats, calibration_seconds,
                                 versions=_of(swept, "postgresql"))
    if any(PG_CONFIGURATIONS[c].syslog for c in chosen) and not process.is_root():
        raise ParameterError("configurations", list(chosen), "no syslog destination when not root (the server gets a "
                             "private /dev/log in a mount namespace only as root)")
    return RecordCostStudy(
        name=NAME, profile=profile, configurations=chosen, mariadb_configurations=tuple(mdb_chosen),
        repeats=params.positive_int("repeats", d("repeats", repeats)), transactions=(sizes[0], sizes[1]),
        counters=tuple(tools), scale=params.positive_int("scale", scale),
        seed=params.non_negative_int("seed", SPEC.seed if seed is None else seed),
        pg_bindir=str(find_bindir(pg_bindir)) if chosen else "", mariadbd=mariadbd,
        output_dir=(out := common.output_path(NAME, profile, output_dir)),
        processed_dir=common.processed_path(profile, processed_dir, publish=publish, output_dir=out),
        backend=backend, publish=publish, versions=swept, calibration_repeats=timed[0], calibration_seconds=timed[1])


# docker/servers.tsv's kind of each engine's images
KINDS = {"postgresql": "postgres", "mariadb": "mariadb"}


def _engine(version: str) -> str:
    """The engine a version of docker/servers.tsv is of: the two engines' versions are distinct strings."""
    return next(e for e, kind in KINDS.items() if version in server_images(kind))


def _of(versions: tuple[str, ...], engine: str) -> tuple[str, ...]:
    return tuple(v for v in versions if _engine(v) == engine)


def _versions(value: object) -> tuple[str, ...]:
    """The versions to count in their containers, PostgreSQL's and MariaDB's (a version names its engine): () for
    none (this machine's own binaries), else versions docker/servers.tsv declares, each once (ParameterError
    naming them otherwise)."""
    if value is None or (isinstance(value, (list, tuple)) and not value) or value == "":
        return ()
    allowed = {e: list(server_images(kind)) for e, kind in KINDS.items()}
    try:
        return params.name_list("versions", value, [v for vs in allowed.values() for v in vs], coerce=str)
    except ParameterError:
        raise ParameterError("versions", value, "versions of docker/servers.tsv, each once: PostgreSQL "
                             + ", ".join(repr(v) for v in allowed["postgresql"]) + "; MariaDB "
                             + ", ".join(repr(v) for v in allowed["mariadb"]) + " ([] for this machine's own "
                             "binaries only)") from None


def servers(study: RecordCostStudy, engine: str = "postgresql") -> tuple[str, ...]:
    """Where ``engine`` runs: 'local' (this machine's binaries) when no version of it is named, else each named
    version's container."""
    return _of(study.versions, engine) or ("local",)


def plan(study: RecordCostStudy) -> list[dict]:
    """Every start: each repeat holds every (engine, server, configuration, size, counter) once, in a seeded
    random order (a version sweep's versions interleaved, so a drift of the machine is no version's). A MariaDB
    start under valgrind runs both loads (its counters are zeroed and dumped around each: one start per repeat,
    :func:`.mariadb.count_pair`): its item names no size."""
    pg_cells = [("postgresql", v, c, n, t) for v in servers(study) for c in study.configurations
                for n in study.transactions for t in study.counters]
    mdb_cells = [("mariadb", v, c, n, t) for v in servers(study, "mariadb") for c in study.mariadb_configurations
                 for t in study.counters for n in ((None,) if t == "cachegrind" else study.transactions)]
    cells = pg_cells + mdb_cells
    out = []
    for r in range(study.repeats):
        order = np.random.default_rng([study.seed, r]).permutation(len(cells))
        for pos, i in enumerate(order):
            e, v, c, n, t = cells[i]
            out.append({"repeat": r, "position": pos, "engine": e, "version": v, "configuration": c,
                        "transactions": n, "counter": t})
    return out


def _pg_settings(name: str) -> Settings:
    return Settings.of("postgresql", {**BASE, **HOLD, **PG_CONFIGURATIONS[name].settings})


def _start_rows(item: dict, baseline: str, got: StartCounts, index: int, env_id: str, server: str) -> list[dict]:
    head = {"start": index, **item, "server": server, "baseline": baseline, "statements": got.statements,
            "records": got.records,
            "log_bytes": got.log_bytes, "seconds": round(got.seconds, 3), "env_id": env_id}
    return [{**head, "process": c.process, "metric": c.metric, "call": c.call, "value": c.value} for c in got.counts]


def _count(study: RecordCostStudy, item: dict, prepared: dict, work: Path) -> list[tuple[str, StartCounts]]:
    """The start ``item`` names: its baseline's name and what it counted, per load it ran."""
    n, tool = item["transactions"], item["counter"]
    if item["engine"] == "postgresql":
        conf = PG_CONFIGURATIONS[item["configuration"]]
        settings = _pg_settings(item["configuration"])
        got = pg.count_start(prepared[("postgresql", item["version"])], settings,
                             statement_records(settings, conf.protocol),
                             protocol=conf.protocol, transactions=n, counter=tool, syslog=conf.syslog,
                             remote=conf.remote, work=work)
        return [(conf.baseline, got)]
    server = prepared[("mariadb", item["version"])]
    if n is None:  # callgrind per thread, both loads in one start
        small, large = study.transactions
        return [("none", got) for got in mariadb.count_pair(server, item["configuration"], small, large, "callgrind",
                                                             work)]
    return [("none", mariadb.count_start(server, item["configuration"], n, tool, work))]


def _server_label(prepared: dict, item: dict) -> str:
    p = prepared[(item["engine"], item["version"])]
    return getattr(p, "server", "") or f"{str(getattr(p, 'version', p)).split()[0]} (local)"


def _environment(study: RecordCostStudy, prepared: dict) -> dict:
    versions = {_label(e, v): (p.version if hasattr(p, "version") else str(p)) for (e, v), p in prepared.items()}
    used = ["valgrind" if t == "cachegrind" else t for t in study.counters]
    swept = [(e, v) for (e, v) in prepared if v != "local"]
    # this machine's tools where a server of this machine's ran under them
    tools = {t: (valgrind.version() if t == "valgrind" else strace.version()) for t in used} if any(
        v == "local" for _, v in prepared) else {}
    extra = {"backend": "local", "servers": versions, "hold": HOLD, "pgbench_random_seed": pg.PGBENCH_SEED}
    if swept:
        # each version's server and counting tools (the image's own, which counted it): Debian's builds on its
        # release; pgbench and sysbench are this machine's for every version
        extra["containers"] = {}
        for e, v in swept:  # by version: the engines' versions are distinct strings
            line = server_images(KINDS[e])[v]
            extra["containers"][v] = {"image": line.tag, "image_id": image_id(line.tag), "suite": line.suite,
                                      "debian_version": line.debian_version, "server": prepared[(e, v)].version,
                                      "tools": _container_tools(line.tag, e)}
        tools |= {f"{t} ({v})": extra["containers"][v]["tools"].get(t, "") for _, v in swept for t in used}
        if any(e == "postgresql" for e, _ in prepared):
            tools["pgbench"] = subprocess.run([str(find_bindir(study.pg_bindir) / "pgbench"), "--version"],
                                              capture_output=True, text=True, timeout=30).stdout.strip()
        mdb_prepared = [p for (e, _), p in prepared.items() if e == "mariadb"]
        if mdb_prepared:
            tools["sysbench"] = mdb_prepared[0].sysbench
    return environment.collect(server_version="; ".join(f"{e} {v}" for e, v in versions.items()), tools=tools,
                               extra=extra)


def _label(engine: str, version: str) -> str:
    return engine if version == "local" else f"{engine} {version}"


def _container_tools(image: str, engine: str = "postgresql") -> dict[str, str]:
    """The valgrind and strace a version's image has (its release's builds) and its server, as they report
    themselves."""
    server = {"postgresql": "postgres", "mariadb": "mariadbd"}[engine]
    r = subprocess.run(["docker", "run", "--rm", "--entrypoint", "sh", image, "-c",
                        f"valgrind --version; strace -V | head -1; {server} --version"],
                       capture_output=True, text=True, timeout=120)
    lines = r.stdout.splitlines()
    return dict(zip(("valgrind", "strace", server), lines)) if r.returncode == 0 else {"error": r.stderr[-500:]}


def run(study: RecordCostStudy, *, progress: bool = True) -> dict:
    """Every planned start, one at a time; returns the tables (also written where the study says)."""
    out = Path(study.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    reporter = channel.Reporter(study.name) if progress else None
    say = reporter.say if reporter else (lambda *_: None)
    starts = plan(study)
    raw = out / "starts.jsonl"
    with runner.terminate_as_interrupt(), contextlib.ExitStack() as stack:
        # claimed: a study killed outright leaves it to its guardian (logbench.base.cleanup), not to the disk
        work = cleanup.private_dir("logbench-record-cost-")
        stack.callback(shutil.rmtree, work, ignore_errors=True)
        work.chmod(0o755)
        prepared = {}
        base = Settings.of("postgresql", {**BASE, **HOLD})
        if study.configurations:
            for v in servers(study):
                if v == "local":
                    prepared[("postgresql", v)] = pg.prepare(work, bindir=study.pg_bindir, scale=study.scale, base=base)
                else:
                    say(f"PostgreSQL {v}: its pristine data directory in its container")
                    prepared[("postgresql", v)] = pg.prepare_container(work, version=v, scale=study.scale, base=base)
        if study.mariadb_configurations:
            for v in servers(study, "mariadb"):
                if v == "local":
                    prepared[("mariadb", v)] = mariadb.prepare(work, mariadbd=study.mariadbd)
                else:
                    say(f"MariaDB {v}: its pristine data directory in its container")
                    prepared[("mariadb", v)] = mariadb.prepare_container(work, version=v)
        env = _environment(study, prepared)
        (out / "environment.json").write_text(json.dumps(env, indent=2, sort_keys=True, default=str) + "\n")
        say(f"{study.profile} profile: {len(starts)} starts; raw counts in {raw}")
        t0 = time.monotonic()
        with raw.open("a") as f:
            for i, item in enumerate(starts):
                counted = _count(study, item, prepared, work)
                server = _server_label(prepared, item)
                for baseline, got in counted:
                    tool = "callgrind" if item["engine"] == "mariadb" and item["transactions"] is None else None
                    one = {**item, "transactions": got.transactions, "counter": tool or item["counter"]}
                    for row in _start_rows(one, baseline, got, i, env["env_id"], server):
                        f.write(json.dumps(row) + "\n")
                f.flush()
                say(f"start {i + 1}/{len(starts)}: {item['engine']} {server} {item['configuration']} "
                    f"{'+'.join(str(g.transactions) for _, g in counted)} tx under {item['counter']}, "
                    f"{'+'.join(str(g.records) for _, g in counted)} records, {counted[-1][1].seconds:.1f} s "
                    f"(elapsed {channel.duration(time.monotonic() - t0)})")
        if study.calibration_repeats:  # what the study times, after what it counts
            calibration.run(prepared.get(("postgresql", "local")), _pg_settings("none"),
                            pd.read_json(raw, lines=True, dtype={"call": str}), out / calibration.RAW,
                            repeats=study.calibration_repeats, seconds=study.calibration_seconds, work=work,
                            env_id=env["env_id"], say=say)
    if reporter:
        reporter.close()
    tables = tables_of(pd.read_json(raw, lines=True, dtype={"call": str}), calibration.load(out))
    if study.processed_dir is not None:
        # a named profile's files are its own (record_cost_versions*.csv), never the committed run's; a run without
        # calibration removes an earlier run's
        records.write_processed(common.stem(study.name, study.profile), Path(study.processed_dir), env,
                                {**tables, "calibration": tables.get("calibration")})
    return {**tables, "environment": env}


def tables_of(starts: pd.DataFrame, timed: pd.DataFrame | None = None) -> dict[str, pd.DataFrame]:
    """The processed tables from the raw starts: the per-configuration table (summary), every figure with its
    CI (figures), each repeat's (repeats), the system calls by call (syscalls) and the starts themselves; with the
    calibration's raw records (``timed``), its table (calibration)."""
    starts = starts.assign(call=starts["call"].fillna("").astype(str))
    if "server" not in starts.columns:  # a run from before the versions: this machine's server only
        starts = starts.assign(server="local")
    rep = analysis.per_record(analysis.per_repeat(starts))
    summ = analysis.summary(rep)
    summ = _ordered(summ)
    by_call = (summ["metric"] == "syscalls") & ~summ["call"].isin(["all", "writes"])
    tables = {"summary": analysis.headline(summ), "figures": summ[~by_call].reset_index(drop=True),
              "repeats": _ordered(rep), "syscalls": summ[by_call].reset_index(drop=True),
              "orderings": analysis.orderings(rep)}
    builds = {s: build_of(s, e) for e, s in starts[["engine", "server"]].drop_duplicates().itertuples(index=False)}
    between = analysis.version_differences(_ordered(rep), builds)
    if not between.empty:
        tables["between_versions"] = between
    if timed is not None:
        tables["calibration"] = calibration.table(timed, rep)
    return {**tables, "starts": starts}


def build_of(server: str, engine: str = "postgresql") -> str:
    """What a server label of ``engine`` ran, as built: "Debian's 13.23-0+deb11u4 (bullseye)" for a version's
    container (docker/servers.tsv), "this machine's" for the local binaries."""
    if "container" not in server:
        return f"this machine's {'PostgreSQL' if engine == 'postgresql' else 'MariaDB'} {server.split()[0]}"
    line = server_images(KINDS[engine]).get(server.split()[0])
    return f"Debian's {line.debian_version} ({line.suite})" if line else server


def _ordered(d: pd.DataFrame) -> pd.DataFrame:
    """Rows by engine, then configuration in the spec's order (stable: the rest keeps its order)."""
    key = (d["engine"].map({"postgresql": 0, "mariadb": 1}) * 1000 + d["configuration"].map(_order()).fillna(999)
           + d["server"].map({s: i for i, s in enumerate(sorted(d["server"].unique(), key=analysis._version_number))})
           / 100)
    return d.iloc[np.argsort(key.to_numpy(), kind="stable")].reset_index(drop=True)


def _order() -> dict[str, int]:
    """The configurations in the order the spec declares them (the tables' rows)."""
    return {c: i for i, c in enumerate(dict.fromkeys([*PG_CONFIGURATIONS, *mariadb.CONFIGURATIONS]))}


def load(output_dir: str | Path) -> dict[str, pd.DataFrame]:
    """A run directory's tables, computed again from its raw starts (a run that was interrupted included)."""
    return tables_of(pd.read_json(Path(output_dir) / "starts.jsonl", lines=True, dtype={"call": str}),
                     calibration.load(output_dir))
