"""Study 06's analysis of recorded runs: the runs with their own numbers, the summary per method, the timeline
around the rotation and its figure, the processed tables and the finding's text."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...base import records, stats
from ...measure.design import aa_name
from .. import common
from .bench import RotationNumbers
from .spec import BASELINE, METHODS

def expand(runs: pd.DataFrame) -> pd.DataFrame:
    """Runs with the study's own numbers (RotationNumbers) as columns, and the records missing."""
    out = common.measured_columns(runs, RotationNumbers)
    out["records_missing"] = out["log_records_expected"] - out["log_records_received"]
    return out


def summary(runs: pd.DataFrame, baseline: str = BASELINE) -> pd.DataFrame:
    """Per method × clients: tps ± CI and ratio to no rotation (within blocks: stats.cell_ratio); dip, deficit,
    stall, rotation time and record counts, each mean ± CI; a version sweep's per version, each against its own
    baseline; the server version each row's runs ran on, last."""
    out = common.summary_per_variant(
        expand(records.measured(runs)), baseline,
        ("dip", "deficit_s", "tracer_stall_ms", "rotation_s", "records_missing", "log_loss", "tracer_lost",
         "tracer_lost_by_design", "tracer_duplicated", "tracer_sent"), list(METHODS))
    return common.with_server_version(out, runs)


def timeline(runs: pd.DataFrame) -> pd.DataFrame:
    """Per method, clients and second relative to the rotation: throughput relative to the seconds before,
    mean ± 95 % CI over the repeats."""
    rows = []
    for _, r in expand(common.split_variant(runs)).iterrows():
        tps = r["extra"]["tps_per_s"]
        start = r["extra"]["steps_s"]["start"]
        ref = r["tps_before"]
        for i, v in enumerate(tps):
            rows.append({"variant": r["variant"], "configuration": r["configuration"], "clients": r["clients"],
                         "repeat": r["repeat"], "second": (i + 1) - np.ceil(start),
                         "relative_tps": v / ref if ref else np.nan})
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    out = []
    # a version sweep's servers each on their own ('' for one server: no variant column)
    for key, g in frame.groupby(["variant", "configuration", "clients", "second"], sort=False):
        e = stats.mean_ci(g["relative_tps"])
        out.append({**({"variant": key[0]} if key[0] else {}), "configuration": key[1], "clients": key[2],
                    "second": key[3], "n": e.n, "relative_tps_mean": e.value, "relative_tps_ci_low": e.low,
                    "relative_tps_ci_high": e.high})
    return pd.DataFrame(out)


def timeline_figure(tl: pd.DataFrame, clients: int):
    """Relative throughput per second around the rotation (second 0 holds the rotation's start), mean ± CI; a
    version sweep's versions in panels side by side."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    from ...analyze import plots

    plots.theme()
    parts = plots.variants(tl)
    fig, axes = plt.subplots(1, len(parts), figsize=(8 * len(parts), 4), squeeze=False, sharey=True)
    for ax, (variant, part) in zip(axes[0], parts):
        data = part[part["clients"] == clients]
        methods = [m for m in METHODS if m in set(data["configuration"])]
        palette = dict(zip(methods, sns.color_palette("colorblind", len(methods))))
        for m in methods:
            g = data[data["configuration"] == m].sort_values("second")
            ax.plot(g["second"], g["relative_tps_mean"], marker="o", ms=3, color=palette[m], label=m)
            ax.fill_between(g["second"], g["relative_tps_ci_low"], g["relative_tps_ci_high"], color=palette[m],
                            alpha=0.15)
        ax.axvline(0, color="0.3", lw=1, ls="--")
        ax.axhline(1, color="0.6", lw=0.8)
        ax.set_xlabel("second relative to the rotation (0: the second it starts in)")
        ax.set_title(f"{variant + ', ' if variant else ''}{clients} client(s)")
        ax.legend(fontsize="small", ncol=2)
    axes[0][0].set_ylabel("tps / tps before")
    fig.tight_layout()
    return fig


def processed_tables(result: common.StudyResult) -> dict[str, pd.DataFrame]:
    # a version sweep's: each later version's ratio to its own baseline over the oldest's (issue 23)
    between = common.variant_differences(result.runs, BASELINE, list(METHODS))
    return {"summary": summary(result.runs), "runs": records.flatten(common.with_variant(expand(result.runs))),
            "timeline": timeline(result.runs), **({"between_versions": between} if len(between) else {})}


def environment_table(result: common.StudyResult) -> pd.DataFrame:
    """The environment (a version sweep's: one column per server, side by side)."""
    return common.environment_table(result, {"log file system": ", ".join(
        dict.fromkeys(e.get("log_dir_fs", "") for e in common._environments(result.environment).values()))},
        reload_label="SET GLOBAL")


def finding(summary: pd.DataFrame) -> str:
    """Per method: the rotation's time, dip, deficit, stall and records (a version sweep's: per version)."""
    return common.per_variant_text(summary, _finding)


def _finding(summary: pd.DataFrame) -> str:
    from ...base.formatting import ci_text

    lines = []
    for _, r in summary.iterrows():
        if r["configuration"] in (BASELINE, aa_name(BASELINE)):
            lines.append(f"- **`{r['configuration']}`** ({r['clients']} clients, the placebo{' again: the A/A control' if r['configuration'] != BASELINE else ''}): dip {ci_text(r['dip_mean'], r['dip_ci_low'], r['dip_ci_high'], n=int(r['n']))}, "
                         f"deficit {ci_text(r['deficit_s_mean'], r['deficit_s_ci_low'], r['deficit_s_ci_high'])} s — the noise floor.")
            continue
        lost = r["tracer_lost_mean"] * r["n"]
        lines.append(
            f"- **`{r['configuration']}`** ({r['clients']} clients): took "
            f"{ci_text(1000 * r['rotation_s_mean'], 1000 * r['rotation_s_ci_low'], 1000 * r['rotation_s_ci_high'])} ms; "
            f"dip {ci_text(r['dip_mean'], r['dip_ci_low'], r['dip_ci_high'])}, deficit "
            f"{ci_text(r['deficit_s_mean'], r['deficit_s_ci_low'], r['deficit_s_ci_high'])} s, tracer stall "
            f"{ci_text(r['tracer_stall_ms_mean'], r['tracer_stall_ms_ci_low'], r['tracer_stall_ms_ci_high'])} ms; "
            f"records missing per run {ci_text(r['records_missing_mean'], r['records_missing_ci_low'], r['records_missing_ci_high'])}"
            f" (tracer: {lost:.0f} lost in {int(r['n'])} runs"
            + (f", {r['tracer_lost_by_design_mean'] * r['n']:.0f} more while the log was off by design" if r["tracer_lost_by_design_mean"] > 0 else "")
            + f", {r['tracer_duplicated_mean'] * r['n']:.0f} duplicated).")
    return "\n".join(lines)
