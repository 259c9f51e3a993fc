"""Whether our runs can judge a post's claim: its clients mapped to this machine (step 1 of the package's
docstring), and what the post ran that our runs must match (a mismatch: not comparable)."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import claim_rules
from ..claim_rules import ClaimRule, Requirement
from .text import _join, fmt

MAX_CLIENTS_PER_CORE = 4


@dataclass(frozen=True)
class Concurrency:
    """The client counts a claim is judged at here, those it cannot be, and how they were mapped."""

    here: tuple[int, ...]
    infeasible: tuple[int, ...]  # the post's counts that cannot be reproduced here
    how: str  # the mapping, as shown in the verdict's reason
    why_not: str = ""  # why the infeasible ones cannot be


def clients_here(post_clients: int, post_cores: int, cores: int) -> int:
    """A post's client count on this machine at the same clients per core (at least one client)."""
    return max(1, int(round(post_clients * cores / post_cores)))


def concurrency_here(post_clients: tuple[int, ...], rule: ClaimRule, post_cores: int | None,
                     cores: int) -> Concurrency:
    """Map a post's client counts to this machine (see the module docstring, step 1)."""
    if not post_clients:
        return Concurrency((), (), "")
    per_core = rule.max_clients_per_core or MAX_CLIENTS_PER_CORE
    limit = per_core * cores
    if rule.concurrency == claim_rules.SIMULTANEOUS:
        ok = tuple(k for k in post_clients if k <= cores)
        bad = tuple(k for k in post_clients if k > cores)
        return Concurrency(ok, bad, "", f"needs {_join(bad)} simultaneously runnable processes (contention "
                                        f"among that many concurrent writers); this machine has {cores} cores")
    if rule.here_clients == "cores":
        return Concurrency((cores,), (), f"the post's {_join(post_clients)} clients ran below its machine's "
                                         f"saturation: judged at {cores} clients, one per core here")
    if rule.here_clients == claim_rules.BELOW_SATURATION:
        k = max(1, cores - 1)
        return Concurrency((k,), (), f"the post's {_join(post_clients)} clients ran below its machine's saturation "
                                     f"(here a client's pgbench thread and backend take about one core between "
                                     f"them and the logging collector another): judged at {k} client(s) on {cores} "
                                     f"cores")
    if post_cores is None:
        ok = tuple(k for k in post_clients if k <= limit)
        bad = tuple(k for k in post_clients if k > limit)
        return Concurrency(ok, bad, "the post does not state its cores: its client counts are used as they are",
                           f"needs {_join(bad)} clients and the post's cores are not stated; this machine has "
                           f"{cores} cores and the rule allows at most {per_core} × {cores} = {limit}")
    mapped = {k: clients_here(k, post_cores, cores) for k in post_clients}
    ok = tuple(dict.fromkeys(v for v in mapped.values() if v <= limit))
    bad = tuple(k for k, v in mapped.items() if v > limit)
    how = "; ".join(f"the post's {k} clients on {post_cores} cores = {fmt(k / post_cores, 2)} per core = "
                    f"{v} clients here" for k, v in mapped.items())
    return Concurrency(ok, bad, how, f"needs {_join(bad)} clients on {post_cores} cores, more than "
                                     f"{per_core} per core")

REQUIREMENT_KINDS = ("column", "setting", "bytes_per_record", "tps", "tps_ratio", "reachable_tps", "machine")


def requirement_mismatch(req: Requirement, runs: pd.DataFrame, environment: dict | None = None,
                         whole: pd.DataFrame | None = None) -> str:
    """Why the runs differ from what the post ran ('' when they match). A ``column`` the runs lack is read from
    the study's environment record (a study-wide setting, e.g. the syslog rate limit), else its default.
    ``whole``: all the study's runs, where a ``tps_ratio`` finds its other side."""
    if not len(runs):
        return ""
    if req.kind == "tps_ratio":
        return _tps_ratio_mismatch(req, runs, runs if whole is None else whole)
    if req.kind == "column":
        if req.key in runs.columns:
            have = runs[req.key].tolist()
        else:
            have = [(environment or {}).get(req.key, req.default)] * len(runs)
        vals = sorted({str(v) for v in have})
        if all(str(v).lower() == str(req.want).lower() for v in have):
            return ""
        return req.why.format(have=" / ".join(vals))
    if req.kind == "setting":
        if "settings" not in runs.columns:
            return ""
        have = []
        for text in runs["settings"]:
            try:
                settings = json.loads(text) if isinstance(text, str) else dict(text)
            except (TypeError, ValueError):
                settings = {}
            have.append(str(settings.get(req.key, "unset")))
        if all(v == str(req.want) for v in have):
            return ""
        return req.why.format(have=" / ".join(sorted(set(have))))
    if req.kind == "bytes_per_record":
        rec = pd.to_numeric(runs.get("log_records_received"), errors="coerce")
        size = (pd.to_numeric(runs.get("log_bytes"), errors="coerce") / rec.where(rec > 0)).dropna()
        if not len(size):
            return ""
        med = float(size.median())
        if abs(med / float(req.want) - 1) <= req.tolerance:
            return ""
        return req.why.format(have=fmt(med))
    if req.kind == "tps":
        tps = pd.to_numeric(runs.get("tps"), errors="coerce").dropna()
        if not len(tps) or abs(float(tps.median()) / float(req.want) - 1) <= req.tolerance:
            return ""
        return req.why.format(have=fmt(float(tps.median())))
    if req.kind == "reachable_tps":
        pool = runs if whole is None else whole
        tps = pd.to_numeric(pool.get("tps"), errors="coerce")
        cells = pool.assign(_t=tps).dropna(subset=["_t"]).groupby(
            [pool["configuration"].astype(str), pd.to_numeric(pool["clients"])])["_t"].median()
        if not len(cells) or float(cells.max()) >= float(req.want) * (1 - req.tolerance):
            return ""
        return req.why.format(have=fmt(float(cells.max())))
    if req.kind == "machine":
        return req.why
    raise ValueError(f"requirement kind {req.kind!r}; allowed: {', '.join(REQUIREMENT_KINDS)}")


def _tps_ratio_mismatch(req: Requirement, runs: pd.DataFrame, whole: pd.DataFrame) -> str:
    """The judged runs' median tps over that of the study's runs selected by ``req.key`` ('column=value'), the same
    configuration, clients and test, at the judged runs' lowest level; per configuration, then their median."""
    col, _, want = req.key.partition("=")
    if col not in whole.columns:
        return req.why.format(have=f"no '{col}' recorded")
    level = int(pd.to_numeric(runs["clients"]).min())
    mine = runs[pd.to_numeric(runs["clients"]) == level]
    other = whole[(whole[col].astype(str) == want) & (pd.to_numeric(whole["clients"]) == level)]
    for same in ("test", "workload"):
        if same in mine.columns and same in other.columns:
            other = other[other[same].astype(str).isin(set(mine[same].astype(str)))]
    ratios = []
    for cfg, g in mine.groupby(mine["configuration"].astype(str)):
        o = pd.to_numeric(other.loc[other["configuration"].astype(str) == cfg, "tps"], errors="coerce").dropna()
        t = pd.to_numeric(g["tps"], errors="coerce").dropna()
        if len(o) and len(t) and o.median() > 0:
            ratios.append(float(t.median() / o.median()))
    if not ratios:
        return req.why.format(have=f"no {req.key} runs at {level} clients to compare with")
    ratio = float(np.median(ratios))
    if abs(ratio / float(req.want) - 1) <= req.tolerance:
        return ""
    return req.why.format(have=f"{fmt(ratio)} (1/{fmt(1 / ratio)}) at {level} client(s)")
