"""The skeleton every study shares: its spec, its parameters, its run sequence, its processed files.

A study module keeps what is its own (configurations, profiles, checks, summaries, findings)
and hands the rest to this module:

- :class:`StudySpec` — what the registry, the report, the tests and the workflow (``Snakefile``) know of it;
- :func:`study_fields` — the parameters every study has (clients, repeats, duration, warm-up, seed,
  output paths, noise controls), resolved against its profile and checked;
- :func:`run_study` — resolve the study (backend 'auto', images) -> interrupt handling -> start the
  stack -> environment -> write the study -> execute -> write the processed files;
- :func:`environment_table`, :func:`ci`, :func:`load_processed`;
- :func:`beside_reference` — this run's ratios beside the committed reference machine's (one cell per notebook).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import secrets
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from .. import design, params, paths, records, runner, stats
from ..design import Study
from ..errors import ParameterError



@dataclass(frozen=True)
class DigestPaper:
    """A digest study's part of the paper (``logbench.paper.sections.digest_section``, one function for every such
    study): the top rows of its processed table (data/processed/<name>.csv) as display strings, and the numbers the
    text of its section states, each by reference to that table."""

    # the table's top ``rows`` rows -> the paper's table, every cell a display string
    table: Callable[[pd.DataFrame], pd.DataFrame]
    # key -> a number's spec (logbench.paper.numbers: "cell", "agg", "div", "scale") without its source, which is
    # the study's table; registered as "<name>.<key>"
    numbers: Mapping[str, dict] = field(default_factory=dict)
    rows: int = 12


@dataclass(frozen=True)
class StudySpec:
    """A study as the rest of the suite sees it (see :mod:`logbench.studies` for the registry)."""

    name: str  # also its processed files' stem: data/processed/<name>.csv, <name>_runs.csv, ...
    engine: str  # "postgresql" | "mariadb"
    title: str
    post: str  # the seed post it redoes: file name in shared/seeds
    baseline: str
    notebook: str  # file name in notebooks/
    seed: int = 0  # default seed of the run order
    # the post's ratios keyed by our configuration names; called with the study's runs (or None)
    published: Callable[[pd.DataFrame | None], pd.DataFrame] | None = None
    experiment: str = ""  # the post's experiment in data/raw/reference (fallback for the figure)
    # papermill parameters of the committed (standard) run; "publish": True lets it write data/processed
    committed: Mapping[str, object] = field(default_factory=lambda: {"profile": "standard", "publish": True})
    # papermill parameters of each nbval run of its notebook (tests/test_notebooks.py)
    smoke: tuple[Mapping[str, object], ...] = ({"profile": "smoke"},)
    paper_order: int = 100  # where the paper (and the findings' study table) lists it: lower first
    extra_committed: tuple[Mapping[str, object], ...] = ()  # further committed runs (named profiles)
    # False for a study of the instrument itself (notebook 00): no logging configurations, no line cost
    measures_logging: bool = True
    # What its committed run says in the paper's abstract (logbench.headline.Headline), or None
    headline: object = None
    # A study that digests a captured log: its section of the paper (DigestPaper), or None
    digest: DigestPaper | None = None

    @property
    def post_id(self) -> str:
        return self.post[:3]


# -- paths -----------------------------------------------------------------------------------------------

def stem(name: str, profile: str) -> str:
    """The processed/raw stem of a run: a study's own named profile gets files of its own."""
    return name if profile in ("smoke", "standard", "full") else f"{name}_{profile}"


def output_path(name: str, profile: str, given: object = None) -> Path:
    """Raw records: given, else results/<name>/<UTC time>; a smoke run goes to a fresh temporary
    path (created when the run starts, not now)."""
    if given:
        return Path(given)
    if profile == "smoke":
        return Path(tempfile.gettempdir()) / f"logbench-smoke-{secrets.token_hex(4)}" / name
    return paths.RESULTS / name / dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def processed_path(profile: str, given: object = None, *, publish: bool = False,
                   output_dir: object = None) -> Path | None:
    """Where the tidy tables go — the one place that decides whether a run may replace the committed
    processed files (issue 17): ``given``, else data/processed for a published run (``publish=True``:
    the committed-results workflow), else ``<output_dir>/processed`` (a user's run keeps its own
    results; a smoke run's output_dir is a temporary directory). Without an output_dir, None: none written.

    Only ``publish=True`` may write data/processed, also when named as ``given``; a smoke run is never published.
    """
    if publish and profile == "smoke":
        raise ParameterError("publish", publish, "False for a smoke run (its numbers are not results)")
    if given:
        out = Path(given)
        if not publish and out.resolve() == paths.PROCESSED.resolve():
            raise ParameterError("processed_dir", given, "any directory but data/processed, which only a run "
                                 "with publish=True (the committed results) writes")
        return out
    if publish:
        return paths.PROCESSED
    return Path(output_dir) / "processed" if output_dir else None


def with_baseline(baseline: str, chosen: tuple[str, ...]) -> tuple[str, ...]:
    """The chosen names with the baseline first: every ratio needs it."""
    return (baseline,) + tuple(c for c in chosen if c != baseline)


# -- parameters --------------------------------------------------------------------------------------------

SHARED = ("clients", "repeats", "duration", "warmup", "warmup_blocks", "seed", "output_dir", "processed_dir",
          "publish", *design.CONTROL_FIELDS)


def profile_lookup(profile: str, profiles: dict[str, dict[str, object]]) -> Callable[[str, object], object]:
    """Check ``profile`` (smoke/standard/full, or a study's own named profile: a key of ``profiles``);
    returns ``d(name, value)``: the value, or the profile's default when it is None."""
    params.choice("profile", profile, tuple(dict.fromkeys((*params.PROFILES, *profiles))))
    return lambda name, value: params.from_profile(name, value, profile, profiles)


def study_fields(spec: StudySpec, profile: str, profiles: dict[str, dict[str, object]], *,
                 whole_seconds: bool = False, clients: object = None, repeats: object = None,
                 duration: object = None, warmup: object = None, warmup_blocks: object = 0, seed: object = None,
                 output_dir: object = None, processed_dir: object = None, publish: object = False,
                 idle_state: object = None,
                 aa_control: object = None, target_halfwidth: object = None, time_budget_s: object = None,
                 max_repeats: object = None, placement: object = None, **unknown: object) -> dict[str, object]:
    """The :class:`~logbench.design.Study` fields every study shares, checked (ParameterError otherwise).

    ``whole_seconds``: duration and warm-up are whole seconds (the load tool takes no fractions).
    The noise controls and adaptive repeats (None: the profile's value) are checked by the Study itself.
    ``publish``: True only for the committed results (writes data/processed, see :func:`processed_path`).
    """
    if unknown:
        name = sorted(unknown)[0]
        raise ParameterError(name, unknown[name], f"a parameter of study {spec.name!r}; the shared ones are "
                             + ", ".join(SHARED))
    d = profile_lookup(profile, profiles)
    publish = params.boolean("publish", publish)
    number, non_negative = ((params.positive_int, params.non_negative_int) if whole_seconds
                            else (params.positive_number, params.non_negative_number))
    controls = design.control_fields(profiles[profile], idle_state=idle_state, aa_control=aa_control,
                                     target_halfwidth=target_halfwidth, time_budget_s=time_budget_s,
                                     max_repeats=max_repeats, placement=placement)
    # A named profile's runs are a study of their own in the records and the processed files (common.stem).
    name = stem(spec.name, profile)
    return dict(
        name=name, engine=spec.engine, profile=profile,
        clients=params.int_list("clients", d("clients", clients)),
        repeats=params.positive_int("repeats", d("repeats", repeats)),
        duration=number("duration", d("duration", duration)),
        warmup=non_negative("warmup", d("warmup", warmup)),
        warmup_blocks=params.non_negative_int("warmup_blocks", warmup_blocks),
        seed=params.non_negative_int("seed", spec.seed if seed is None else seed),
        output_dir=(out := output_path(name, profile, output_dir)),
        processed_dir=processed_path(profile, processed_dir, publish=publish, output_dir=out),
        publish=publish,
        **controls,
    )


# -- running ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class StudyResult:
    study: Study
    runs: pd.DataFrame
    environment: dict
    switches: tuple[tuple[str, float], ...] = ()  # (reload | restart, seconds) of every settings switch


def switches_of(bench: object) -> list[tuple[str, float]]:
    """The settings switches a bench (or each bench behind a SplitBench) made."""
    benches = bench.benches.values() if isinstance(bench, runner.SplitBench) else [bench]
    return [sw for b in benches for sw in getattr(b, "switches", ())]


def execute_all(study: Study, bench: object, env: dict, progress: bool) -> tuple[pd.DataFrame, list]:
    """The plain schedule: every planned run on one bench (a SplitBench's runs keep their own server's
    environment id; its record is ``{"variants": {label: record}}``)."""
    env_id = env["env_id"] if "env_id" in env else next(iter(env["variants"].values()))["env_id"]
    return runner.execute(study, bench, env_id, progress=progress), switches_of(bench)


def run_study(study: Study, start: Callable[[Study, contextlib.ExitStack], tuple[object, dict]],
              tables: Callable[[StudyResult], dict[str, pd.DataFrame]], *,
              execute: Callable[..., tuple[pd.DataFrame, list]] = execute_all, progress: bool = True) -> StudyResult:
    """Resolve the study, start everything it needs, run its schedule, stop and remove everything, write its files.

    ``study.resolved()`` decides what define() left to the run (backend 'auto', images) before anything
    starts; the resolved study is what is written, started and run. ``start(study, stack)`` enters the
    servers into ``stack`` and returns (bench, environment record) (e.g. ``benches.postgres.start``);
    ``execute(study, bench, env, progress)`` returns (runs, switches) (default: the whole schedule on
    the bench); ``tables(result)`` gives the processed tables (``summary`` -> ``<name>.csv``).
    """
    from .. import progress as channel

    study = study.resolved()
    reporter = channel.Reporter(study.name)
    with runner.terminate_as_interrupt(), contextlib.ExitStack() as stack:
        stack.callback(reporter.close)
        t0 = time.monotonic()
        reporter.say(f"{study.profile} profile; raw runs in {study.output_dir}; starting the servers")
        with reporter.phase("starting the servers (and loading the data)"):
            bench, env = start(study, stack)
        reporter.say(f"servers up in {channel.duration(time.monotonic() - t0)}: {env_label(env)}")
        runner.write_study(study, env)
        runs, switches = execute(study, bench, env, progress)
        reporter.say("stopping the servers")
    result = StudyResult(study, runs, env, tuple(switches))
    if study.processed_dir is not None:
        records.write_processed(study.name, Path(study.processed_dir), env, tables(result))
        reporter.say(f"processed tables in {study.processed_dir}")
    return result


def env_label(env: Mapping) -> str:
    """'<server version> (<backend>)' per server of an environment record (one, or its variants)."""
    variants = env["variants"] if "variants" in env else {"": env}
    return "; ".join(f"{label + ': ' if label else ''}{e.get('server_version', '?')} ({e.get('backend', '?')})"
                     for label, e in variants.items())


def load_processed(name: str, *tables: str, processed_dir: Path = paths.PROCESSED) -> tuple[pd.DataFrame, ...]:
    """A study's processed tables: "summary" is ``<name>.csv``, any other key ``<name>_<key>.csv``."""
    return tuple(pd.read_csv(Path(processed_dir) / (f"{name}.csv" if t == "summary" else f"{name}_{t}.csv"))
                 for t in tables)


# -- tables and sentences -----------------------------------------------------------------------------------

def environment_table(result: StudyResult, rows: Mapping[str, object] = (), *,
                      reload_label: str = "reload") -> pd.DataFrame:
    """The environment a study ran in: machine, server, the study's own ``rows``, and how long its
    settings switches took (``reload_label`` names a reload, e.g. 'SET GLOBAL')."""
    kinds = pd.Series([k for k, _ in result.switches], dtype=object)
    secs = pd.Series([s for _, s in result.switches], dtype=float)
    switches = {f"{reload_label if kind == 'reload' else kind}s (n, median s)":
                f"{len(sel)}, {sel.median():.3f}" if len(sel) else "0"
                for kind in ("reload", "restart") for sel in [secs[kinds == kind]]}
    columns = {}
    for label, env in _environments(result.environment).items():  # a version sweep: one column per server
        columns[label or "value"] = {
            "env_id": env["env_id"], "CPU": f"{env['cpu_model']} × {env['cpu_count']}", "kernel": env["kernel"],
            "clocksource": env["clocksource"], "server": env["server_version"],
            **({"image": env["image"]} if label and env.get("image") else {}), **dict(rows),
            "git commit": env["git_commit"], **switches}
    return pd.DataFrame(columns)


def ci(r: pd.Series, col: str, digits: int = 3) -> str:
    """A summary row's 'mean [low, high] (n=…)' for ``col`` (its ``_mean`` column, or ``col`` itself)."""
    from ..plots import fmt_ci

    return fmt_ci(r[col if col in r.index else f"{col}_mean"], r[f"{col}_ci_low"], r[f"{col}_ci_high"],
                  int(r["n"]), digits)


def configuration_order(frame: pd.DataFrame, keys: list[str], orders: Mapping[str, list[str]]) -> pd.DataFrame:
    """``frame`` sorted by ``keys``, each key in ``orders`` by its position there (others as they sort)."""
    pos = {k: {v: i for i, v in enumerate(o)} for k, o in orders.items()}
    # a version sweep's variants by version ('pg13' before 'pg17', 'mariadb10.5' before 'mariadb10.11')
    pos.setdefault("variant", {v: i for i, v in enumerate(sorted(set(frame.get("variant", ())), key=version_key))})
    return frame.sort_values(keys, key=lambda s: s.map(pos[s.name]) if s.name in pos else s, ignore_index=True)


def version_key(label: object) -> tuple:
    """A variant label's sort key: its numbers as numbers, then the label."""
    import re

    return (tuple(int(n) for n in re.findall(r"\d+", str(label))), str(label))


def per_variant_text(summary: pd.DataFrame, finding: Callable[..., str], *args: object) -> str:
    """``finding(summary, *args)``, or where the summary has several servers (a version sweep's variants), the
    finding of each server's rows under its label: every server against its own baseline, never pooled."""
    from ..plots import variants

    parts = variants(summary)
    if len(parts) == 1:
        return finding(summary, *args)
    return "\n\n".join(f"**{label}**\n\n{finding(part, *args)}" for label, part in parts)


def variant_keys(frame: pd.DataFrame, keys: list[str]) -> list[str]:
    """``keys`` with ``variant`` first where the frame has several servers (split_variant's '' for one)."""
    return ["variant", *keys] if "variant" in frame and (frame["variant"].astype(str) != "").any() else keys


# -- summaries ---------------------------------------------------------------------------------------------

def split_variant(runs: pd.DataFrame) -> pd.DataFrame:
    """Measured runs with a ``variant`` column ('' for a single server) and plain configuration names
    (a multi-server schedule names its configurations "variant/name", see runner.SplitBench)."""
    measured = records.measured(runs).copy()
    parts = measured["configuration"].str.partition(runner.SplitBench.SEP)
    has = parts[1] != ""
    measured["variant"] = parts[0].where(has, "")
    measured["configuration"] = parts[2].where(has, measured["configuration"])
    return measured


def with_variant(runs: pd.DataFrame) -> pd.DataFrame:
    """Runs (all of them, as recorded) with a ``variant`` column beside their full configuration names: a
    multi-server schedule's label ("pg13" of "pg13/none"), '' for one server; for the processed runs table."""
    head, sep, _ = runs["configuration"].astype(str).str.partition(runner.SplitBench.SEP).T.to_numpy()
    return runs.assign(variant=[h if s else "" for h, s in zip(head, sep)])


def with_server_version(table: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """``table`` (a summary, or any table keyed by ``variant`` where it has several servers) with the server
    version its rows' runs recorded, as its last column: after the cell's keys and numbers, so a reference run of
    another patch level still lines up cell by cell (beside_reference takes the keys before ``n``)."""
    if not len(table) or not len(runs) or "server_version" not in runs:
        return table
    m = split_variant(runs)
    versions = {v: ", ".join(sorted(g["server_version"].astype(str).unique())) for v, g in m.groupby("variant")}
    key = table["variant"].astype(str) if "variant" in table else pd.Series("", index=table.index)
    return table.assign(server_version=key.map(versions))


def variant_differences(runs: pd.DataFrame, baseline: str, order: list[str], value: str = "tps") -> pd.DataFrame:
    """Does the server's version change the answer? Per configuration x clients, each later variant's ratio to
    its own baseline over the first variant's (a ratio of ratios; 1: the same cost), with the t CI over blocks
    of the per-block log differences (the variants of a sweep run in the same interleaved blocks, so a block's
    drift is in both ratios) and n blocks; the A/A control's row is the instrument's own difference. Empty for
    one server."""
    m = split_variant(runs)
    labels = sorted(set(m["variant"]), key=version_key)
    if len(labels) < 2 or "" in labels:
        return pd.DataFrame()
    logs = np.log(m.groupby(["variant", "configuration", "clients", "repeat"])[value].mean())
    base = logs.xs(baseline, level="configuration")
    lr = (logs.drop(baseline, level="configuration") - base.reindex(
        logs.drop(baseline, level="configuration").index.droplevel("configuration")).to_numpy()).unstack("variant")
    first, rows = labels[0], []
    for (cfg, clients), g in lr.groupby(level=["configuration", "clients"], sort=False):
        for other in labels[1:]:
            e = stats.mean_ci((g[other] - g[first]).dropna())
            rows.append({"configuration": cfg, "clients": clients, "variant": other, "against": first,
                         "ratio_of_ratios": float(np.exp(e.value)), "ci_low": float(np.exp(e.low)),
                         "ci_high": float(np.exp(e.high)), "n": e.n})
    return configuration_order(pd.DataFrame(rows), ["configuration", "clients", "variant"], {"configuration": order})


def summary_per_variant(runs: pd.DataFrame, baseline: str, also: tuple[str, ...], order: list[str],
                        by: tuple[str, ...] = ("configuration", "clients")) -> pd.DataFrame:
    """Mean ± CI and the ratio to the baseline per ``by`` cell, within the block design's blocks (``repeat``;
    Fieller's CI on independent means where a cell's runs cannot be paired: stats.cell_ratio) — per variant,
    each against its own baseline, when the schedule spanned several servers (never pooled across
    environments)."""
    from .. import stats

    measured = split_variant(runs)
    parts = []
    for variant, g in measured.groupby("variant", sort=False):
        s = stats.summarise(g, by=list(by), baseline=baseline, also=also, block="repeat")
        parts.append(s.assign(variant=variant)[["variant", *s.columns]] if variant else s)
    out = pd.concat(parts, ignore_index=True)
    keys = list(by) + (["variant"] if "variant" in out else [])
    return configuration_order(out, keys, {"configuration": order})


def switchback_summary(runs: pd.DataFrame, baseline: str, also: tuple[str, ...], order: list[str]) -> pd.DataFrame:
    """:func:`summary_per_variant`'s table for a switchback study (the claims, the paper and the answer read its
    columns): means over windows as there, and the ratio with the switchback estimator's interval
    (within-unit paired log-ratios, autocorrelation-robust per load, random effects over loads:
    logbench.switchstats), never Fieller's on windows taken as independent runs. ``n`` counts windows;
    ``n_loads`` the independent loads; ``ratio_method`` says how the interval was made."""
    from .. import stats, switchwindows

    measured = split_variant(switchwindows.in_time(runs))
    s = stats.summarise(measured, by=["configuration", "clients"], baseline=baseline, also=also)
    est = switchwindows.estimates(measured, baseline).rename(columns={"arm": "configuration"})
    keep = ["configuration", "clients", "ratio", "ratio_ci_low", "ratio_ci_high", "halfwidth", "n_loads", "method"]
    est = est[keep].rename(columns={"halfwidth": "ratio_halfwidth", "method": "ratio_method"})
    s = s.drop(columns=["ratio", "ratio_ci_low", "ratio_ci_high", "ratio_halfwidth"]).merge(
        est, on=["configuration", "clients"], how="left")
    base = s["configuration"] == baseline
    s.loc[base, "ratio"] = 1.0
    s["design"] = "switchback"
    return configuration_order(s, ["configuration", "clients"], {"configuration": order})


_NUMERIC, _TEXT = {"float", "int", float, int}, {"str", "bool", str, bool}


def measured_columns(runs: pd.DataFrame, numbers: type) -> pd.DataFrame:
    """Runs with each scalar field of the dataclass ``numbers`` (a study's own measurements, recorded in
    each run's ``extra``) as a column: numbers as floats (NaN where a run lacks it), text as is.
    Fields holding lists or dicts (per-second series, step times) stay in ``extra``."""
    import dataclasses

    out = runs.copy()
    for f in dataclasses.fields(numbers):
        if f.type in _NUMERIC:
            out[f.name] = pd.to_numeric(out["extra"].map(lambda e, n=f.name: e.get(n)), errors="coerce").astype(float)
        elif f.type in _TEXT:
            out[f.name] = out["extra"].map(lambda e, n=f.name: e.get(n))
    return out


def resolution_note(summary: pd.DataFrame, baseline: str) -> str:
    """Markdown: the A/A control's ratio per level (the study's resolution) and, where its CI excludes 1,
    the warning that ratios there carry a bias of that size."""
    from .. import stats
    from ..plots import fmt_ci

    res = stats.resolution(summary, baseline)
    if res.empty:
        return "No A/A control ran (`aa_control=False`): this run has no measure of its own resolution."
    keys = [c for c in res.columns[: list(res.columns).index("aa_ratio")]]
    lines = []
    for r in res.itertuples():
        where = ", ".join(f"{k} {getattr(r, k)}" for k in keys)
        lines.append(f"- {where}: A/A ratio {fmt_ci(r.aa_ratio, r.ci_low, r.ci_high, r.n)}, half-width "
                     f"±{100 * r.relative_half_width:.1f} % — " + ("contains 1." if r.contains_1 else "**excludes 1.**"))
    warnings = [w for w in res["warning"] if w]
    head = ("**Warning:** " + " ".join(warnings)) if warnings else (
        "Every A/A interval contains 1: the instrument shows no bias at this resolution.")
    return head + "\n\n" + "\n".join(lines)


# -- your machine beside the reference machine -----------------------------------------------------------

ENVIRONMENT_ROWS = {"CPU": "cpu_model", "cores": "cpu_count", "memory (GiB)": "memory_bytes", "kernel": "kernel",
                    "OS": "os", "clocksource": "clocksource", "server": "server_version", "backend": "backend",
                    "env_id": "env_id"}


@dataclass(frozen=True)
class Beside:
    """The user's run beside the committed reference: ``cells`` (ratio [95 % CI] (n) of each, cell by cell),
    ``environment`` (machine and server of each), ``note`` (what is compared, or why nothing is)."""

    note: str
    cells: pd.DataFrame | None = None
    environment: pd.DataFrame | None = None

    def _repr_html_(self) -> str:
        import html

        parts = [f"<p>{html.escape(self.note)}</p>"]
        for frame in (self.cells, self.environment):
            if frame is not None:
                parts.append(frame.to_html())
        return "\n".join(parts)

    def __str__(self) -> str:
        parts = [self.note]
        for frame in (self.cells, self.environment):
            if frame is not None:
                parts.append(frame.to_string())
        return "\n\n".join(parts)


def _environments(env: Mapping | None) -> dict[str, Mapping]:
    if not env:
        return {}
    return dict(env["variants"]) if "variants" in env else {"": env}


def environment_beside(yours: Mapping | None, reference: Mapping | None) -> pd.DataFrame:
    """Rows CPU, cores, memory, kernel, OS, clocksource, server, backend, env_id; one column per server of
    each side ('yours', 'reference'; 'yours (local)', ... for a study on several servers)."""
    cols = {}
    for side, env in (("yours", yours), ("reference", reference)):
        for label, e in _environments(env).items():
            values = {}
            for row, key in ENVIRONMENT_ROWS.items():
                v = e.get(key)
                values[row] = f"{v / 2**30:.1f}" if key == "memory_bytes" and isinstance(v, (int, float)) else v
            cols[f"{side} ({label})" if label else side] = values
    return pd.DataFrame(cols).reindex(list(ENVIRONMENT_ROWS)).fillna("–")


def value_cells(frame: pd.DataFrame, keys: list[str], value: str = "ratio") -> pd.Series:
    """Each cell's ``value`` as text, indexed by ``keys``: 'v [low, high] (n=…)' where the frame has its
    interval (cells without one, a baseline's ratio, are left out), else the value alone (one capture)."""
    from ..plots import fmt_ci

    lo, hi = f"{value}_ci_low", f"{value}_ci_high"
    if lo in frame.columns:
        rows = frame[frame[lo].notna() | frame[hi].notna()]
        text = [fmt_ci(r[value], r[lo], r[hi], int(r["n"])) for _, r in rows.iterrows()]
    else:  # a value without an interval (one capture, not repeated runs)
        rows = frame
        text = [f"{r[value]:.4g}" if pd.notna(r[value]) else "–" for _, r in rows.iterrows()]
    return rows[keys].assign(text=text).drop_duplicates(keys).set_index(keys)["text"]


def beside_reference(spec_or_name: StudySpec | str, summary: pd.DataFrame, keys: list[str] | None = None, *,
                     environment: Mapping | None = None, publish: bool = False,
                     reference_dir: Path = paths.PROCESSED, value: str = "ratio") -> Beside:
    """This run's ratios beside the committed reference machine's, cell by cell, and both environments.

    One cell per study notebook, after the run (tag it ``nbval-ignore-output``)::

        from logbench.studies import common
        common.beside_reference(study_mod.SPEC, summary, environment=result.environment, publish=study.publish)

    ``spec_or_name``: the study's spec, or the stem of its processed files (a named profile's own stem,
    ``stem(name, profile)``); the reference is ``<reference_dir>/<stem>.csv`` and ``<stem>_environment.json``
    (data/processed: what the committed run published). ``summary``: this run's summary, in the processed
    summary's columns (ratio, ratio_ci_low, ratio_ci_high, n). ``keys``: the columns that name a cell
    (default: the summary's columns before ``n`` that the reference has too, e.g. configuration, clients;
    regime and test in study 04, backend in 03, control in 00). ``environment``: this run's environment
    record (``result.environment``; a study on several servers: ``{"variants": {label: record}}``).
    ``publish``: this run is the reference itself (``study.publish``): the note says so, no comparison.
    ``value``: the column compared (default the throughput ratio; e.g. the digest's rows examined per row sent),
    with its ``<value>_ci_low`` / ``_ci_high`` when the summary has them. Rows without an interval (a baseline's
    ratio, 1 by definition) are left out, unless the value has no interval at all.
    """
    stem = spec_or_name.name if isinstance(spec_or_name, StudySpec) else str(spec_or_name)
    ref_csv, ref_env = Path(reference_dir) / f"{stem}.csv", Path(reference_dir) / f"{stem}_environment.json"
    if publish:
        return Beside(f"This run is the published reference (publish=True): its tables are {ref_csv} and "
                      f"{ref_env.name}, which later runs on other machines are compared with; nothing to compare "
                      "it with here.")
    if not ref_csv.exists():
        return Beside(f"No committed reference for {stem!r} ({ref_csv} is absent): nothing to compare this run with.",
                      environment=environment_beside(environment, None))
    import json

    ref = pd.read_csv(ref_csv)
    ref_environment = json.loads(ref_env.read_text()) if ref_env.exists() else None
    if keys is None:
        cols = list(summary.columns)
        keys = [c for c in cols[:cols.index("n")] if c in ref.columns]
    missing = [k for k in keys if k not in summary.columns or k not in ref.columns]
    if missing:
        raise KeyError(f"beside_reference: key column(s) {missing} not in both this run's summary and {ref_csv}")

    lo = f"{value}_ci_low"
    yours, theirs = value_cells(summary, keys, value), value_cells(ref, keys, value)
    what = f"{value} [95 % CI] (n)" if lo in summary.columns else value
    table = pd.concat({f"yours: {what}": yours, f"reference: {what}": theirs}, axis=1)
    # this run's cells first, in its order; then cells only the reference ran
    order = list(yours.index) + [i for i in theirs.index if i not in set(yours.index)]
    table = table.reindex(order).fillna("–")
    note = (("Throughput ratio to the baseline" if value == "ratio" else f"`{value}`")
            + f", this run beside the committed reference run ({ref_csv.name}), "
            "each with its own 95 % interval and n; the machines differ (below), so a difference is a finding "
            "about the machines only where both runs' A/A controls show no bias.")
    return Beside(note, table, environment_beside(environment, ref_environment))
