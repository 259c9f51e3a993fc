"""What the five seed posts published, as typed pandas frames.

The tables live in ``data/raw/reference/`` (see its README for every column and
vocabulary). They are transcribed *as published*: a number the post got wrong
stays wrong here, and a flag plus a one-line note say what is wrong with it.
This module reads them, checks them against the closed vocabularies below, and
answers the two questions every study asks:

* what did the post measure as its own baseline? (:func:`baselines`)
* what is each published result as a ratio to that baseline?
  (:func:`published_ratios`), so a study can set it beside its own ratio.

:func:`recompute` re-does every piece of arithmetic the posts published
(ratios, percentages, totals, restated values) from the values they published
alongside, so an inconsistency is shown, never silently repaired.

Public API (stable; the study notebooks call it)::

    load_posts()                        -> one row per seed post
    load_experiments()                  -> one row per experiment, with its baseline key
    load_configurations()               -> the configuration-key vocabulary per post
    load_values(post=None)              -> every published value (typed)
    baselines(post=None, experiment=None)
    published_ratios(post=None, experiment=None)
    recompute(post=None)                -> published derived values vs their recomputation
    flagged(post=None)                  -> every flagged value with its one-line note
    resolve_post(post), resolve_experiment(experiment, post=None), post_ids()
    evaluate(formula, values), resolution_of(value_text)

``post`` arguments accept ``"000"``, ``0``, the seed file name or its stem; ``experiment``
arguments accept the full id (``"000/io_bound_select"``) or, with ``post``, the short name.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from ..base import paths
from ..base.errors import LogbenchError

REFERENCE_DIR: Path = paths.REFERENCE

#: Units a value may carry (closed list).
UNITS: tuple[str, ...] = (
    "tps", "notpm", "qps",                  # throughput
    "ns", "us", "ms", "s", "min",           # time
    "lines", "rows", "count",               # counts
    "bytes", "kB", "MB", "GB", "GiB",       # sizes
    "kB/s", "MB/s",                         # log rates
    "percent", "ratio",                     # dimensionless
)

#: Metrics (closed list): name -> (allowed units, meaning).
METRICS: dict[str, tuple[tuple[str, ...], str]] = {
    # throughput and its published arithmetic
    "throughput": (("tps", "notpm", "qps"), "transactions (pgbench: excluding connections establishing), new-order transactions per minute (DBT2), or queries per second"),
    "throughput_incl_connections": (("tps",), "pgbench tps including connections establishing"),
    "throughput_per_client": (("qps",), "throughput per client (a reader's prediction)"),
    "throughput_ratio": (("ratio",), "a ratio of two throughputs the post printed (which one: formula and location)"),
    "throughput_decrease": (("percent",), "100 * (1 - logged / not logged) as stated in the prose"),
    "throughput_overhead": (("percent",), "logging overhead in percent (a reader's claim)"),
    # latency and durations
    "latency": (("ms",), "latency as the post printed it (000: pgbench 9.2 -r statement latency)"),
    "latency_mean": (("ms",), "pgbench 'latency average'"),
    "latency_stddev": (("ms",), "pgbench 'latency stddev'"),
    "statement_latency": (("ms",), "pgbench -r per-statement latency; item = the statement"),
    "statement_duration": (("ms",), "the duration of one logged statement in an example log line"),
    "query_time": (("s",), "slow-log Query_time"),
    "lock_time": (("s",), "slow-log Lock_time"),
    "client_elapsed": (("s",), "elapsed time printed by the mysql client"),
    "logged_duration_total": (("s",), "sum of the durations of all logged queries"),
    "logged_duration_decrease": (("percent",), "how much smaller one logged-duration total is than another"),
    "test_duration": (("s", "min"), "how long a test ran, as stated"),
    "time_to_failure": (("s",), "time until the server crashed"),
    "timer_overhead_per_loop": (("ns",), "pg_test_timing 'Per loop time including overhead'"),
    "timing_histogram_count": (("count",), "pg_test_timing histogram count; item = bucket"),
    "timing_histogram_share": (("percent",), "pg_test_timing histogram '% of total'; item = bucket"),
    # counts and volumes
    "transactions": (("count",), "transactions processed (pgbench) or stated total"),
    "lines_logged": (("lines",), "number of queries (log lines) the destination received"),
    "logged_fraction": (("percent",), "share of queries logged by one destination relative to another"),
    "log_rate": (("kB/s", "MB/s"), "rate at which the log grew"),
    "query_rate": (("qps",), "queries per second executed during a test (approximate, as stated)"),
    "database_size": (("MB", "GB", "GiB"), "size of the test database"),
    "dataset_rows": (("rows",), "rows of test data"),
    "wal_volume_ratio": (("ratio",), "ratio of WAL (xlog) volumes between wal_levels"),
    "logger_cpu": (("percent",), "CPU used by the logging daemon, share of one core"),
    "logger_memory": (("MB",), "memory used by the logging daemon"),
    # slow-log fields and EXPLAIN (post 002)
    "rows_sent": (("rows",), "slow-log Rows_sent (or as stated in prose)"),
    "rows_examined": (("rows",), "slow-log Rows_examined (or as stated in prose)"),
    "rows_affected": (("rows",), "slow-log Rows_affected"),
    "rows_read": (("rows",), "slow-log Rows_read"),
    "rows_examined_ratio": (("ratio",), "rows examined / rows sent"),
    "bytes_sent": (("bytes",), "slow-log Bytes_sent"),
    "tmp_tables": (("count",), "slow-log Tmp_tables"),
    "tmp_disk_tables": (("count",), "slow-log Tmp_disk_tables"),
    "tmp_table_sizes": (("bytes",), "slow-log Tmp_table_sizes"),
    "explain_rows": (("rows",), "EXPLAIN 'rows' estimate; item = query and table"),
    "result_rows": (("rows",), "'N rows in set' printed by the mysql client"),
    # profiles (post 003)
    "perf_samples": (("count",), "perf 'Samples:' (as abbreviated: 1M, 672K)"),
    "perf_event_count": (("count",), "perf 'Event count (approx.)'"),
    "perf_overhead": (("percent",), "perf report flat 'Overhead' of a symbol"),
    "perf_children": (("percent",), "perf report 'Children' of a symbol"),
    "perf_self": (("percent",), "perf report 'Self' of a symbol"),
    "perf_callgraph_share": (("percent",), "a branch percentage in a perf call graph; item = profile | symbol"),
}

#: How a value came to be in the post.
KINDS: dict[str, str] = {
    "measured": "a result of the post's own measurement, printed for the first time in the post",
    "restated": "the same result printed again elsewhere in the post (summary table, caption, prose); formula points to the first printing",
    "derived": "arithmetic the post published on its own values (ratio, percentage, total); formula recomputes it",
    "claim": "an approximate or unmeasured statement (e.g. 'about 1000 per second', a reader's comment, a rule of thumb)",
    "example": "a number from an illustrative example (a single logged statement, a slow-log entry), not a benchmark result",
}

#: Flags: why a published value deserves doubt. "" = no flag.
FLAGS: dict[str, str] = {
    "": "no flag",
    "label_mismatch": "the column header or label says something the value contradicts",
    "arithmetic_mismatch": "the published result of a computation differs from its recomputation beyond rounding",
    "truncated": "a restated value was truncated, not rounded, so it differs from the source by more than half a unit",
    "claim_vs_data": "the post's prose claims something its own numbers contradict",
    "method_mismatch": "the post states two different methods (e.g. run counts) for the same numbers",
    "anomaly_acknowledged": "an odd result the post itself notices (and explains away or cannot explain)",
    "doubt": "implausible or not checkable from the post; kept as published",
    "unverifiable": "a derived value whose inputs are not in the seed text",
}

#: Flags under which a recomputation may disagree with the published value.
MISMATCH_FLAGS: frozenset[str] = frozenset({"label_mismatch", "arithmetic_mismatch", "truncated"})

#: Metrics that are throughput-like: ratio to baseline is meaningful (higher = better).
THROUGHPUT_METRICS: tuple[str, ...] = ("throughput", "throughput_incl_connections")

#: Configuration keys that are not configurations.
NO_CONFIGURATION = "n/a"
UNSTATED_CONFIGURATION = "unstated"

VALUE_COLUMNS: tuple[str, ...] = (
    "id", "post", "author", "year", "engine", "engine_version", "hardware",
    "experiment", "tool", "mode", "scale", "duration", "repeats",
    "configuration", "configuration_key", "settings", "clients",
    "metric", "item", "unit", "value", "value_text", "resolution", "error", "error_text",
    "kind", "formula", "location", "line", "flag", "note",
)
#: Columns that may never be empty.
REQUIRED_VALUE_COLUMNS: tuple[str, ...] = (
    "id", "post", "engine", "experiment", "tool", "configuration", "configuration_key",
    "metric", "unit", "value", "value_text", "resolution", "kind", "location", "line",
)
POST_COLUMNS: tuple[str, ...] = (
    "post", "post_id", "title", "authors", "author_basis", "date", "date_text", "year", "year_basis",
    "date_note", "engine", "engine_version", "hardware", "os", "tools", "language", "runs_per_cell",
    "reported_value", "error_reported", "figures_missing", "note", "seed_sha256",
)
EXPERIMENT_COLUMNS: tuple[str, ...] = (
    "experiment", "post", "section", "description", "tool", "mode", "scale", "duration", "repeats",
    "reported_value", "clients", "baseline_configuration_key", "engine_version", "note",
)
CONFIGURATION_COLUMNS: tuple[str, ...] = ("post", "configuration_key", "configuration", "settings", "note")

_INT_COLUMNS = ("year", "clients", "line")
_FLOAT_COLUMNS = ("value", "resolution", "error")
_CATEGORY_COLUMNS = ("post", "engine", "experiment", "configuration_key", "metric", "unit", "kind", "flag")
_REF = re.compile(r"\{(\d{3}-\d{3})\}")


class ReferenceDataError(LogbenchError, ValueError):
    """The reference tables are malformed, or a post/experiment name is unknown."""


# --------------------------------------------------------------------------------------------
# reading


def _read(name: str, columns: tuple[str, ...]) -> pd.DataFrame:
    path = REFERENCE_DIR / name
    if not path.is_file():
        raise ReferenceDataError(f"reference table {path} is missing; expected the files listed in {REFERENCE_DIR / 'README.md'}")
    frame = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8")
    if tuple(frame.columns) != columns:
        raise ReferenceDataError(f"{name}: columns {list(frame.columns)}; expected {list(columns)}")
    return frame


@lru_cache(maxsize=1)
def _posts_raw() -> pd.DataFrame:
    return _read("posts.csv", POST_COLUMNS)


@lru_cache(maxsize=1)
def _experiments_raw() -> pd.DataFrame:
    return _read("experiments.csv", EXPERIMENT_COLUMNS)


@lru_cache(maxsize=1)
def _configurations_raw() -> pd.DataFrame:
    return _read("configurations.csv", CONFIGURATION_COLUMNS)


@lru_cache(maxsize=1)
def _values_raw() -> pd.DataFrame:
    files = sorted(REFERENCE_DIR.glob("values_*.csv"))
    if not files:
        raise ReferenceDataError(f"no values_*.csv in {REFERENCE_DIR}")
    frame = pd.concat([_read(f.name, VALUE_COLUMNS) for f in files], ignore_index=True)
    _validate_values(frame)
    return frame


def _validate_values(frame: pd.DataFrame) -> None:
    problems: list[str] = []
    for col in REQUIRED_VALUE_COLUMNS:
        empty = frame.loc[frame[col].str.strip() == "", "id"].tolist()
        if empty:
            problems.append(f"required column {col!r} empty in {empty[:5]}")
    for col, allowed in (("unit", UNITS), ("kind", tuple(KINDS)), ("flag", tuple(FLAGS))):
        bad = frame.loc[~frame[col].isin(allowed), ["id", col]]
        if len(bad):
            problems.append(f"{col} not allowed in {bad.values.tolist()[:5]}; allowed: {', '.join(map(repr, allowed))}")
    bad_metric = frame.loc[~frame["metric"].isin(tuple(METRICS)), ["id", "metric"]]
    if len(bad_metric):
        problems.append(f"metric not allowed in {bad_metric.values.tolist()[:5]}; allowed: {', '.join(METRICS)}")
    wrong_unit = [i for i, m, u in zip(frame["id"], frame["metric"], frame["unit"]) if m in METRICS and u not in METRICS[m][0]]
    if wrong_unit:
        problems.append(f"unit not allowed for the metric in {wrong_unit[:5]}")
    if frame["id"].duplicated().any():
        problems.append(f"duplicate ids {frame.loc[frame['id'].duplicated(), 'id'].tolist()}")
    known = set(_posts_raw()["post"])
    bad_posts = sorted(set(frame["post"]) - known)
    if bad_posts:
        problems.append(f"posts {bad_posts} not in posts.csv")
    bad_exp = sorted(set(frame["experiment"]) - set(_experiments_raw()["experiment"]))
    if bad_exp:
        problems.append(f"experiments {bad_exp} not in experiments.csv")
    cfg = set(zip(_configurations_raw()["post"], _configurations_raw()["configuration_key"]))
    bad_cfg = sorted({(p, k) for p, k in zip(frame["post"], frame["configuration_key"])} - cfg)
    if bad_cfg:
        problems.append(f"configuration keys {bad_cfg} not in configurations.csv")
    if problems:
        raise ReferenceDataError("reference values invalid: " + "; ".join(problems))


def _typed(frame: pd.DataFrame, categories: dict[str, list[str]] | None = None,
           ints: tuple[str, ...] = _INT_COLUMNS) -> pd.DataFrame:
    out = frame.copy()
    categories = categories or {}
    for col in out.columns:
        if col in ints:
            out[col] = pd.to_numeric(out[col].replace("", None)).astype("Int64")
        elif col in _FLOAT_COLUMNS:
            out[col] = pd.to_numeric(out[col].replace("", None)).astype("float64")
        elif col in _CATEGORY_COLUMNS or col in categories:
            cats = categories.get(col) or list(dict.fromkeys(out[col]))
            out[col] = pd.Categorical(out[col], categories=cats)
        else:
            out[col] = out[col].astype("str")
    return out


def _post_order() -> list[str]:
    return _posts_raw()["post"].tolist()


def _value_categories() -> dict[str, list[str]]:
    return {
        "post": _post_order(),
        "experiment": _experiments_raw()["experiment"].tolist(),
        "configuration_key": list(dict.fromkeys(_configurations_raw()["configuration_key"])),
        "metric": list(METRICS),
        "unit": list(UNITS),
        "kind": list(KINDS),
        "flag": list(FLAGS),
    }


# --------------------------------------------------------------------------------------------
# names


def resolve_post(post: str | int) -> str:
    """The seed file name for ``post``: accepts ``"000"``, ``0``, ``"000_d12f15a856ad9e5d"`` or the file name.

    An int is read as the post number (papermill turns ``-p post 001`` into ``1``).
    """
    names = _post_order()
    if isinstance(post, int) and not isinstance(post, bool):
        post = f"{post:03d}"
    for name in names:
        if post in (name, name[:3], name.removesuffix(".txt")):
            return name
    raise ReferenceDataError(f"unknown post {post!r}; allowed: {', '.join(n[:3] for n in names)} or a seed file name")


def resolve_experiment(experiment: str, post: str | None = None) -> str:
    """The experiment id for ``experiment``: a full id (``"000/io_bound_select"``) or, with ``post``, its short name."""
    ids = _experiments_raw()["experiment"].tolist()
    if experiment in ids:
        return experiment
    if post is not None:
        full = f"{resolve_post(post)[:3]}/{experiment}"
        if full in ids:
            return full
    raise ReferenceDataError(f"unknown experiment {experiment!r}; allowed: {', '.join(ids)}")


def post_ids() -> list[str]:
    """The three-digit ids of the seed posts, in order."""
    return [n[:3] for n in _post_order()]


# --------------------------------------------------------------------------------------------
# loaders


def load_posts() -> pd.DataFrame:
    """One row per seed post: title, authors, date (and how it is known), engine, hardware, methodology."""
    return _typed(_posts_raw(), {"post": _post_order()})


def load_experiments() -> pd.DataFrame:
    """One row per experiment: workload, repeats, reported value, and its baseline configuration key."""
    cats = {"post": _post_order(), "experiment": _experiments_raw()["experiment"].tolist()}
    return _typed(_experiments_raw(), cats, ints=())


def load_configurations() -> pd.DataFrame:
    """The configuration-key vocabulary: per post, each key with the post's name for it and normalised settings."""
    cats = {"post": _post_order(), "configuration_key": list(dict.fromkeys(_configurations_raw()["configuration_key"]))}
    return _typed(_configurations_raw(), cats)


def load_values(post: str | None = None) -> pd.DataFrame:
    """Every published value (one row each), typed: categoricals, ``str``, ``Int64`` and ``float64`` columns.

    ``post``: a seed id or file name to select one post; ``None`` = all posts.
    """
    frame = _typed(_values_raw(), _value_categories())
    if post is not None:
        frame = frame[frame["post"] == resolve_post(post)].reset_index(drop=True)
    return frame


# --------------------------------------------------------------------------------------------
# recomputation

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


def _eval(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _eval(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return float(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_eval(node.left), _eval(node.right))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_eval(node.operand)
    raise ReferenceDataError(f"formula element {ast.dump(node)} not allowed; only numbers, + - * / and parentheses")


def evaluate(formula: str, values: dict[str, float]) -> float:
    """Evaluate a ``formula`` such as ``100*(1-{000-034}/{000-033})`` with ``values`` keyed by row id."""
    missing = [ref for ref in _REF.findall(formula) if ref not in values]
    if missing:
        raise ReferenceDataError(f"formula {formula!r} refers to unknown ids {missing}")
    expr = _REF.sub(lambda m: repr(values[m.group(1)]), formula)
    return _eval(ast.parse(expr, mode="eval"))


def recompute(post: str | None = None) -> pd.DataFrame:
    """Every published value that has a formula, beside its recomputation from the post's own values.

    ``agrees`` is True when ``|recomputed - value| <= resolution / 2`` (the published rounding).
    A disagreement is expected only for rows whose flag is in :data:`MISMATCH_FLAGS`.
    """
    values = load_values()
    by_id = dict(zip(values["id"], values["value"]))
    rows = values[values["formula"] != ""]
    if post is not None:
        rows = rows[rows["post"] == resolve_post(post)]
    rows = rows.copy()
    rows["recomputed"] = [evaluate(f, by_id) for f in rows["formula"]]
    rows["difference"] = rows["value"] - rows["recomputed"]
    rows["agrees"] = (rows["difference"].abs() <= rows["resolution"] / 2 * (1 + 1e-9)).astype(bool)
    cols = ["id", "post", "experiment", "configuration_key", "clients", "metric", "item", "unit", "kind",
            "value_text", "value", "formula", "recomputed", "difference", "resolution", "agrees", "flag", "note"]
    return rows[cols].reset_index(drop=True)


def flagged(post: str | None = None) -> pd.DataFrame:
    """Every flagged value, with where it is in the post and the one-line note that explains the flag."""
    values = load_values(post)
    rows = values[values["flag"] != ""]
    cols = ["id", "post", "experiment", "configuration_key", "clients", "metric", "value_text", "unit", "flag",
            "location", "line", "note"]
    return rows[cols].reset_index(drop=True)


# --------------------------------------------------------------------------------------------
# baselines and ratios


def _select(post: str | None, experiment: str | None) -> pd.DataFrame:
    values = load_values(post)
    if experiment is not None:
        values = values[values["experiment"] == resolve_experiment(experiment, post)]
    return values


def baselines(post: str | None = None, experiment: str | None = None) -> pd.DataFrame:
    """The post's own baseline values (measured throughput of its baseline configuration), per experiment and clients."""
    values = _select(post, experiment)
    exps = load_experiments()[["experiment", "baseline_configuration_key"]]
    keyed = values.merge(exps, on="experiment", how="left")
    keyed = keyed[
        (keyed["kind"] == "measured")
        & keyed["metric"].isin(THROUGHPUT_METRICS)
        & (keyed["configuration_key"].astype(str) == keyed["baseline_configuration_key"])
    ]
    cols = ["post", "experiment", "configuration_key", "clients", "metric", "unit", "value", "error", "id"]
    return keyed[cols].reset_index(drop=True)


def published_ratios(post: str | None = None, experiment: str | None = None) -> pd.DataFrame:
    """Each published throughput value as a ratio to its post's own baseline (same experiment, clients, metric).

    Columns: post, experiment, configuration, configuration_key, clients, metric, unit, value, error,
    baseline_configuration_key, baseline_value, baseline_error, ratio, ratio_error, is_baseline,
    published_ratio (the post's own ratio for that cell, if it printed one), published_ratio_text,
    published_ratio_flag, id, baseline_id.

    Only ``measured`` rows are used (restated copies are left out). ``ratio`` is NaN where the post
    published no baseline for that experiment/clients (e.g. 003 at 112 clients). ``ratio_error``
    propagates the published ± errors to first order, assuming independent errors of the same kind
    (``ratio * sqrt((e/v)**2 + (e_b/v_b)**2)``); NaN when the post published no errors, and for the
    baseline row itself.
    """
    values = _select(post, experiment)
    exps = load_experiments()[["experiment", "baseline_configuration_key"]]
    cells = values[(values["kind"] == "measured") & values["metric"].isin(THROUGHPUT_METRICS)]
    cells = cells.merge(exps, on="experiment", how="left")
    base = baselines(post, experiment)[["experiment", "clients", "metric", "value", "error", "id"]].rename(
        columns={"value": "baseline_value", "error": "baseline_error", "id": "baseline_id"})
    out = cells.merge(base, on=["experiment", "clients", "metric"], how="left")
    out["ratio"] = out["value"] / out["baseline_value"]
    out["is_baseline"] = (out["id"] == out["baseline_id"]).astype(bool)
    rel = np.sqrt((out["error"] / out["value"]) ** 2 + (out["baseline_error"] / out["baseline_value"]) ** 2)
    out["ratio_error"] = (out["ratio"] * rel).where(~out["is_baseline"])
    pub = values[(values["kind"] == "derived") & (values["metric"] == "throughput_ratio")]
    pub = pub[["experiment", "configuration_key", "clients", "value", "value_text", "flag"]].rename(
        columns={"value": "published_ratio", "value_text": "published_ratio_text", "flag": "published_ratio_flag"})
    out = out.merge(pub, on=["experiment", "configuration_key", "clients"], how="left")
    for col in ("published_ratio_text", "published_ratio_flag"):
        out[col] = out[col].astype(object).where(out[col].notna(), "").astype("str")
    for col in ("post", "experiment", "configuration_key", "metric", "unit"):
        out[col] = out[col].astype(values[col].dtype)
    out["baseline_configuration_key"] = out["baseline_configuration_key"].astype("str")
    cols = ["post", "experiment", "configuration", "configuration_key", "clients", "metric", "unit", "value", "error",
            "baseline_configuration_key", "baseline_value", "baseline_error", "ratio", "ratio_error", "is_baseline",
            "published_ratio", "published_ratio_text", "published_ratio_flag", "id", "baseline_id"]
    out = out[cols].sort_values(["post", "experiment", "metric", "configuration_key", "clients"], kind="stable")
    return out.reset_index(drop=True)


def resolution_of(value_text: str) -> float:
    """The unit of the last digit of a plain decimal ``value_text`` ("0.94" -> 0.01); NaN if not plain."""
    if not re.fullmatch(r"-?\d+(\.\d+)?", value_text):
        return math.nan
    return 10.0 ** -len(value_text.split(".")[1]) if "." in value_text else 1.0
