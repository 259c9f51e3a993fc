"""Numbers and estimates as the claims print them, and what the posts published, as text."""

from __future__ import annotations

import math

import pandas as pd

from ...base.formatting import ci_text
from ...base.formatting import number as fmt
from ...base.formatting import p_value as fmt_p
from ...base.stats import Estimate
from .data import _names

def _plain(x: float) -> str:
    """A bound as the claims file states it: 0.95, 1.07, 7500000."""
    return str(int(x)) if float(x).is_integer() else f"{x:.6g}"


def range_text(low: float, high: float) -> str:
    if math.isinf(low) and math.isinf(high):
        return "any value"
    if math.isinf(high):
        return f"≥ {_plain(low)}"
    if math.isinf(low):
        return f"≤ {_plain(high)}"
    return f"[{_plain(low)}, {_plain(high)}]"


def estimate_text(e: Estimate) -> str:
    return ci_text(e.value, e.low, e.high)

# --- what the posts published (data/raw/reference, when present) --------------------------------------------


def published_parts(ids: str, values: pd.DataFrame) -> list[dict]:
    """The published numbers a claim rests on: ``a/b`` is the ratio of two published values, ``a`` one value.

    ``values`` is :func:`logbench.analyze.reference.load_values`. Unknown ids raise KeyError.
    """
    by_id = values.set_index("id")
    parts = []
    for token in _names(ids):
        if "/" in token:
            num, den = (by_id.loc[t] for t in token.split("/"))
            clients = num["clients"]
            parts.append({"token": token, "kind": "ratio", "value": float(num["value"]) / float(den["value"]),
                          "clients": None if pd.isna(clients) else int(clients), "text": ""})
        else:
            row = by_id.loc[token]
            text, unit = str(row["value_text"]).strip(), str(row["unit"])
            # The post's own text; its unit is added only where the text is a bare number.
            if not any(ch.isalpha() or ch == "%" for ch in text):
                shown = {"percent": "%", "ratio": ""}.get(unit, unit)
                text = f"{text} {shown}".strip()
            clients = row["clients"]
            parts.append({"token": token, "kind": "value", "value": float(row["value"]),
                          "clients": None if pd.isna(clients) else int(clients), "text": text})
    return parts


def _ratio_text(v: float) -> str:
    return f"{v:.2f}" if abs(v) >= 0.1 else fmt(v, 2)


def published_text(ids: str, values: pd.DataFrame, max_listed: int = 4) -> str:
    """What the post published, as text built from the reference values (ratios to 2 decimals, as the posts print)."""
    parts = published_parts(ids, values)
    ratios = [p for p in parts if p["kind"] == "ratio"]
    # The same published text for several cells (e.g. "1.00" at 1, 20 and 100 connections) is shown once.
    grouped: dict[str, list[int]] = {}
    for p in parts:
        if p["kind"] == "value":
            grouped.setdefault(p["text"], [])
            if p["clients"] is not None and p["clients"] not in grouped[p["text"]]:
                grouped[p["text"]].append(p["clients"])
    singles = [t + (f" ({', '.join(str(k) for k in ks)})" if ks else "") for t, ks in grouped.items()]
    if len(ratios) > max_listed:
        vals = [p["value"] for p in ratios]
        listed = [f"{_ratio_text(min(vals))}–{_ratio_text(max(vals))} ({len(vals)} cells)"]
    else:
        listed = [_ratio_text(p["value"]) + (f" ({p['clients']})" if p["clients"] is not None else "")
                  for p in ratios]
    return "; ".join(singles + listed)


def with_published(claims: pd.DataFrame, values: pd.DataFrame | None) -> pd.DataFrame:
    """Claims whose 'published' text is rebuilt from the reference data when it is available.

    Without reference data (or for a claim without ids) the file's own 'published' text stays.
    """
    out = claims.copy()
    out["published_source"] = "claims.csv"
    if values is None or not len(values):
        return out
    for i, r in out.iterrows():
        if r["published_ids"]:
            out.at[i, "published"] = published_text(r["published_ids"], values)
            out.at[i, "published_source"] = "reference"
    return out

def _join(xs) -> str:
    return "/".join(str(x) for x in xs)
