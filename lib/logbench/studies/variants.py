"""A schedule over several servers (a version sweep's variants, runner.SplitBench): a sweep's default choice of
what every swept server can run, their runs split by variant and ordered by version, and each later variant's
ratios over the first's."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from ..base import progress, records, stats
from ..measure import runner


def sweep_default(study: str, swept: Sequence[str], chosen: Iterable[str], can_run: Callable[[str], bool],
                  why: str) -> list[str]:
    """A version sweep's default choice (the arms or cells its profile names, when the user named none): ``chosen``
    without what not every swept server can run (``can_run(name)`` false), so ``versions=[...]`` alone runs; what it
    left out is said on the progress channel with ``why``, never dropped silently. Named explicitly, such an arm is
    the study's own check's to refuse."""
    chosen = list(chosen)
    kept = [c for c in chosen if can_run(c)]
    if left := [c for c in chosen if c not in kept]:
        progress.Reporter(study).say(f"left out of the sweep of {', '.join(swept)}: {', '.join(left)} ({why})")
    return kept


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


def variant_keys(frame: pd.DataFrame, keys: list[str]) -> list[str]:
    """``keys`` with ``variant`` first where the frame has several servers (split_variant's '' for one)."""
    return ["variant", *keys] if "variant" in frame and (frame["variant"].astype(str) != "").any() else keys


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
    key = table["variant"].astype(str) if "variant" in table else pd.Series("", index=table.index)
    return table.assign(server_version=key.map(server_versions(runs)))


def server_versions(runs: pd.DataFrame) -> dict[str, str]:
    """{variant ('' for one server): the server versions its measured runs recorded, sorted, joined by ", "}
    (several where an image was rebuilt mid-study, or where MariaDB reports its version another way once the slow
    log is on: '10.5.29-MariaDB-0+deb11u1, 10.5.29-MariaDB-0+deb11u1-log')."""
    m = split_variant(runs)
    return {v: ", ".join(sorted(g["server_version"].astype(str).unique())) for v, g in m.groupby("variant")}


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

