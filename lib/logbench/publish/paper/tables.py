"""The paper's tables as display strings and how a section files a table or a figure under ``generated/``."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ...analyze import regression
from ...analyze.claims import StudyData
from ..findings import ENVIRONMENT_COLUMNS, cell_columns, summary_keys
from ...base.stats import effects
from ...base.formatting import CI, ci_text
from .text import effect_cell

GENERATED = "generated"
FIGURES = "figures"

# English glosses of titles the paper's embedded fonts cannot set (post 003 is in Chinese).
TITLE_GLOSS = {"003": "How much does turning on audit logging and statement timing cost PostgreSQL? (in Chinese)"}


def write_csv(df: pd.DataFrame, path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(path, index=False, lineterminator="\n")
    return path.name


def add_table(doc: dict, gen: Path, df: pd.DataFrame, name: str) -> str:
    """Write ``df`` as ``<gen>/<name>.csv``, list it in ``doc['tables']``; returns its path in the paper."""
    rel = f"{GENERATED}/{write_csv(df, gen / f'{name}.csv')}"
    doc["tables"].append(rel)
    return rel


def add_figure(doc: dict, figures_dir: Path, name: str) -> str:
    """The figure's path in the paper, listed in ``doc['figures']``; '' where 90_findings did not draw it."""
    if (figures_dir / f"{name}.png").exists():
        rel = f"{FIGURES}/{name}.png"
        doc["figures"].append(rel)
        return rel
    return ""


def statements(path: Path) -> pd.DataFrame:
    """A findings file of sentences (item, statement), each number printed by the code from its data."""
    t = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = {"item", "statement"} - set(t.columns)
    if missing:
        raise ValueError(f"{path}: missing columns {sorted(missing)}; expected item, statement")
    return t[["item", "statement"]]


STUDY_TABLE_COLUMNS = (
    # (summary column stem, header, significant digits, factor)
    ("tps", f"tps [{CI}]", 3, 1.0),
    ("ratio", f"ratio to baseline [{CI}]", 3, 1.0),
    ("log_loss", "log records lost (%)", 2, 100.0),
    ("log_lines_per_s", "log lines/s", 3, 1.0),
    ("log_bytes_per_s", "log kB/s", 3, 1.0 / regression.BYTES_PER_KB),
)


# A study whose runs count something other than transactions in its "tps" column, by the cell column that says
# so: pg_wal_level's import phase counts the rows pgbench -i loads, and its rows/s were printed as tps.
THROUGHPUT_UNITS = {"phase": {"import": "rows/s (pgbench -i)"}}
THROUGHPUT_HEADER = f"throughput [{CI}]"

# The study table's column that says whether each ratio reads as an effect (stats.effect_reading).
EFFECT_HEADER = "an effect? (CI and A/A)"


def study_table(summary: pd.DataFrame, baseline: str | None = None) -> pd.DataFrame:
    """A study's summary as display strings: its key and cell columns, n, then mean [CI] per quantity; with the
    ``baseline`` named, after the ratio whether it reads as an effect (:func:`logbench.base.stats.effect_reading`
    against the A/A of its cell and level; the A/A row gives its spread)."""
    keys = summary_keys(summary)
    keys = [c for c in cell_columns(summary) if c not in keys] + keys
    out = pd.DataFrame({k: summary[k].astype(str) for k in keys})
    out["n"] = summary["n"].astype(int).astype(str)
    units = {col: m for col, m in THROUGHPUT_UNITS.items()
             if col in summary.columns and summary[col].astype(str).isin(m).any()}
    if units:
        col, m = next(iter(units.items()))
        out["unit"] = [m.get(v, "tps") for v in summary[col].astype(str)]
    for stem, header, sig, factor in STUDY_TABLE_COLUMNS:
        mean = f"{stem}_mean" if f"{stem}_mean" in summary.columns else stem
        if mean not in summary.columns:
            continue
        if stem == "tps" and units:
            header = THROUGHPUT_HEADER
        low, high = f"{stem}_ci_low", f"{stem}_ci_high"
        out[header] = [ci_text(r[mean], r.get(low), r.get(high), sig, factor) for _, r in summary.iterrows()]
        if stem == "ratio" and baseline is not None:
            read = effects(summary, baseline, keys=cell_columns(summary) + ["clients"])
            out[EFFECT_HEADER] = [effect_cell(c, baseline, e, a) for c, e, a in
                                  zip(summary["configuration"].astype(str), read["effect"], read["aa_reach"])]
    return out


def posts_table() -> pd.DataFrame:
    try:
        from ...analyze import reference
        p = reference.load_posts()
    except (ImportError, OSError, ValueError):
        return pd.DataFrame(columns=["post", "title", "authors", "year", "engine"])
    return pd.DataFrame({
        "post": p["post_id"].astype(str),
        "title": [TITLE_GLOSS.get(str(i), str(t)) for i, t in zip(p["post_id"], p["title"])],
        "authors": p["authors"].astype(str),
        "year": [str(int(y)) if pd.notna(y) else "n.d." for y in p["year"]],
        "engine": p["engine"].astype(str),
    })


def environment_ratios(studies: dict[str, StudyData]) -> dict[str, pd.DataFrame]:
    """Each study measured on more than one environment, side by side: {study: table}, a row per (other cell
    columns, configuration, clients), a column per environment (``host · env_id``) holding that environment's
    ratio to its own baseline with its CI; nothing is pooled. Empty when every study ran on one environment."""
    out = {}
    for name, s in studies.items():
        summary = s.summary
        if summary is None or "ratio" not in summary.columns:
            continue
        env_cols = [c for c in ENVIRONMENT_COLUMNS if c in cell_columns(summary)]
        if not env_cols:
            continue
        keys = [c for c in cell_columns(summary) if c not in env_cols] + ["configuration", "clients"]
        df = summary[keys].astype(str).assign(
            environment=summary[env_cols].astype(str).agg(" · ".join, axis=1),
            ratio=[ci_text(r["ratio"], r.get("ratio_ci_low"), r.get("ratio_ci_high")) for _, r in summary.iterrows()])
        wide = df.pivot_table(index=keys, columns="environment", values="ratio", aggfunc="first", sort=False)
        wide.columns.name = f"ratio to baseline [{CI}] per environment"
        out[name] = wide.reset_index()
    return out


def environments_text(tables: dict[str, pd.DataFrame]) -> str:
    """The sentence above the side-by-side tables (or why there are none)."""
    if not tables:
        return "Every study was measured on one environment: nothing to set side by side."
    return ("Measured on more than one environment (each ratio against that environment's own baseline): "
            + ", ".join(tables) + ".")
