"""Figures and display tables shared by the notebooks and the paper (seaborn on matplotlib).

Shared module: add functions here; every study's figures use the same look.
Error bars are always the interval the statistics module computed (never
seaborn's own bootstrap), and every table shows n beside the estimate.
"""

from __future__ import annotations


import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from ..base.formatting import ci_text

# Fixed metadata: a rebuilt figure from unchanged data is the same file.
PNG_METADATA = {"Software": None}


def theme() -> None:
    sns.set_theme(context="notebook", style="whitegrid", palette="colorblind")


def variants(summary: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """A summary's servers, each with its rows: [("", summary)] for one server; a version sweep's or a backend
    comparison's variants in their order, each its own baseline (never pooled, so shown side by side)."""
    if "variant" not in summary or not (summary["variant"].astype(str) != "").any():
        return [("", summary)]
    return [(str(v), summary[summary["variant"] == v]) for v in dict.fromkeys(summary["variant"])]


def ci_table(summary: pd.DataFrame, value: str, *, index: str = "configuration", columns: str = "clients",
             n_col: str = "n", digits: int = 4) -> pd.DataFrame:
    """A wide table of 'mean [CI] (n)' strings: one row per ``index`` (per variant and ``index`` where the summary
    has several servers), one column per ``columns``."""
    cells = summary.assign(
        _cell=[ci_text(r[f"{value}_mean"] if f"{value}_mean" in summary else r[value],
                       r[f"{value}_ci_low"], r[f"{value}_ci_high"], n=int(r[n_col]), sig=digits)
               for _, r in summary.iterrows()]
    )
    rows = [index] if len(variants(summary)) == 1 else ["variant", index]
    order = list(dict.fromkeys(map(tuple, cells[rows].to_numpy()))) if len(rows) > 1 else list(dict.fromkeys(cells[index]))
    wide = cells.pivot(index=rows, columns=columns, values="_cell").reindex(order)
    wide.columns = [f"{columns}={c}" for c in wide.columns]
    return wide


def _dodged(ax, data: pd.DataFrame, *, x: str, hue: str, mean: str, low: str, high: str, also_x=()):
    """One point with its interval per (hue, x), hues side by side; returns the x positions per hue. ``also_x``:
    further categories on the axis (where only published points lie)."""
    hues = list(dict.fromkeys(data[hue]))
    xs = sorted(set(data[x].unique()) | set(also_x))
    palette = dict(zip(hues, sns.color_palette("colorblind", len(hues))))
    width = 0.8 / max(len(hues), 1)
    positions = {}
    for i, h in enumerate(hues):
        d = data[data[hue] == h].set_index(x).reindex(xs)
        pos = np.arange(len(xs)) + (i - (len(hues) - 1) / 2) * width
        m = d[mean]
        yerr = [(m - d[low]).clip(lower=0).fillna(0), (d[high] - m).clip(lower=0).fillna(0)]
        ax.errorbar(pos, m, yerr=yerr, fmt="o", color=palette[h], label=h, capsize=3, markersize=5)
        positions[h] = pos
    ax.set_xticks(np.arange(len(xs)), [str(v) for v in xs])
    ax.set_xlabel(x)
    return xs, positions, palette


def wrapped(title: str, fig) -> str:
    """A title broken into lines the figure's width holds: a figure's title is one line of text that matplotlib
    does not wrap, so a long study or fit name ran past the edges of the PNG and the paper showed it cut."""
    import textwrap

    # about 9 characters of the default title size per inch of figure (11 still cut a 7-inch figure's title)
    return "\n".join(textwrap.wrap(title, max(20, int(fig.get_figwidth() * 9)))) if title else title


def _panels(summary: pd.DataFrame, height: float):
    """One axes per server (variant), sharing the y axis: a version sweep's versions side by side."""
    parts = variants(summary)
    fig, axes = plt.subplots(1, len(parts), figsize=(8 if len(parts) == 1 else 4.2 * len(parts) + 1.5, height),
                             sharey=True, squeeze=False)
    for ax, (label, _) in zip(axes[0], parts):
        if label:
            ax.set_title(label)
    return fig, list(zip(axes[0], parts))


def ratio_figure(summary: pd.DataFrame, *, baseline: str, reference: pd.DataFrame | None = None,
                 title: str = "", x: str = "clients", hue: str = "configuration", ylabel: str = "throughput / baseline"):
    """Overhead ratios with their CIs per configuration and concurrency (one panel per server where the summary
    has several: each against its own baseline); published ratios as open markers, at the ``clients`` their rows
    carry (a caller that maps a post's clients to this machine's per core passes them mapped: they may fall
    between our levels, and get a category of their own)."""
    theme()
    fig, panels = _panels(summary, 4.5)
    has_reference = reference is not None and len(reference) > 0
    for ax, (_, part) in panels:
        data = part[part[hue] != baseline]
        shown = reference[reference["configuration_key"].isin(set(data[hue]))] if has_reference else None
        xs, positions, palette = _dodged(ax, data, x=x, hue=hue, mean="ratio", low="ratio_ci_low",
                                         high="ratio_ci_high", also_x=shown["clients"].unique() if has_reference else ())
        if has_reference:
            for h, pos in positions.items():
                r = shown[shown["configuration_key"] == h].groupby("clients")["ratio"].first().reindex(xs)
                if r.notna().any():
                    ax.scatter(pos, r, marker="D", facecolors="none", edgecolors=palette[h], s=40, linewidths=1.2)
        ax.axhline(1.0, color="0.3", lw=1, ls="--")
    ax0 = panels[0][0]
    ax0.set_ylabel(ylabel)
    if title:
        fig.suptitle(wrapped(title, fig)) if len(panels) > 1 else ax0.set_title(wrapped(title, fig))
    handles, labels = ax0.get_legend_handles_labels()
    if has_reference:
        handles.append(plt.Line2D([], [], marker="D", ls="", markerfacecolor="none", markeredgecolor="0.3"))
        labels.append("published (post)")
    # beside the axes: inside, it hid the A/A points of the highest levels
    panels[-1][0].legend(handles, labels, fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1),
                         borderaxespad=0)
    fig.tight_layout()
    return fig


def rate_figure(summary: pd.DataFrame, *, value: str, ylabel: str, baseline: str | None = None,
                x: str = "clients", hue: str = "configuration", title: str = ""):
    """Mean ± CI of a per-run quantity (log lines/s, bytes/s, loss) per configuration and concurrency (one panel
    per server where the summary has several)."""
    theme()
    fig, panels = _panels(summary, 4)
    for ax, (_, part) in panels:
        data = part if baseline is None else part[part[hue] != baseline]
        _dodged(ax, data, x=x, hue=hue, mean=f"{value}_mean", low=f"{value}_ci_low", high=f"{value}_ci_high")
    panels[0][0].set_ylabel(ylabel)
    if title:
        fig.suptitle(wrapped(title, fig)) if len(panels) > 1 else panels[0][0].set_title(wrapped(title, fig))
    panels[-1][0].legend(fontsize="small", ncol=2)
    fig.tight_layout()
    return fig


# --- saving, and the cross-study figures of 90_findings -----------------------------------------------------

SVG_HASHSALT = "logbench"


def save(fig, path, *, dpi: int = 150) -> None:
    """Write a figure byte-stably: fixed PNG metadata (no software/date), fixed SVG hash salt; closes it."""
    from pathlib import Path

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".svg":
        with plt.rc_context({"svg.hashsalt": SVG_HASHSALT}):
            fig.savefig(path, format="svg", metadata={"Date": None, "Creator": None})
    elif path.suffix == ".png":
        fig.savefig(path, format="png", dpi=dpi, metadata=PNG_METADATA)
    else:
        raise ValueError(f"figure {path}: use .png or .svg")
    plt.close(fig)


def regression_figure(points: pd.DataFrame, *, title: str = ""):
    """Diagnostics of a regression: observed vs fitted, residuals vs fitted, Cook's distance per run.

    ``points`` has one row per run with ``us_per_tx``, ``fitted``, ``residual``, ``cooks_d``,
    ``configuration`` and ``clients`` (see :func:`logbench.analyze.regression.residuals`); the threshold for an
    influential run is taken from the column ``cooks_threshold`` if present, else 4/n.
    """
    theme()
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.2))
    hues = list(dict.fromkeys(points["configuration"]))
    palette = dict(zip(hues, sns.color_palette("colorblind", len(hues))))
    threshold = float(points["cooks_threshold"].iloc[0]) if "cooks_threshold" in points else 4.0 / len(points)
    ax = axes[0]
    for h in hues:
        d = points[points["configuration"] == h]
        ax.scatter(d["fitted"], d["us_per_tx"], s=18, color=palette[h], label=h)
    lo, hi = float(points[["fitted", "us_per_tx"]].min().min()), float(points[["fitted", "us_per_tx"]].max().max())
    ax.plot([lo, hi], [lo, hi], color="0.3", lw=1, ls="--")
    ax.set_xlabel("fitted µs per transaction")
    ax.set_ylabel("observed µs per transaction")
    ax.legend(fontsize="x-small", ncol=1, loc="upper left")
    ax = axes[1]
    for h in hues:
        d = points[points["configuration"] == h]
        ax.scatter(d["fitted"], d["residual"], s=18, color=palette[h])
    flagged = points[points["cooks_d"] > threshold]
    ax.scatter(flagged["fitted"], flagged["residual"], s=80, facecolors="none", edgecolors="black", linewidths=1)
    ax.axhline(0, color="0.3", lw=1, ls="--")
    ax.set_xlabel("fitted µs per transaction")
    ax.set_ylabel("residual (µs)")
    ax = axes[2]
    order = points.sort_values(["configuration", "clients"], kind="stable").reset_index(drop=True)
    ax.vlines(np.arange(len(order)), 0, order["cooks_d"], color=[palette[h] for h in order["configuration"]])
    ax.axhline(threshold, color="0.3", lw=1, ls="--")
    ax.set_xticks([])
    ax.set_xlabel("runs (by configuration, clients)")
    ax.set_ylabel("Cook's distance")
    if title:
        fig.suptitle(wrapped(title, fig))
    fig.tight_layout()
    return fig


def cost_figure(per_clients: pd.DataFrame, *, pooled: pd.Series | None = None, floors: pd.DataFrame | None = None,
                title: str = "", ylabel: str = "µs per logged line"):
    """The cost of one logged line at each concurrency level (estimate and CI), the pooled estimate as a band,
    and the physical floor (one write() of a line's size) as horizontal lines.

    ``per_clients``: columns clients, estimate, ci_low, ci_high; ``pooled``: estimate, ci_low, ci_high;
    ``floors``: target, median_us.
    """
    theme()
    fig, ax = plt.subplots(figsize=(7, 4))
    d = per_clients.sort_values("clients")
    x = np.arange(len(d))
    ax.errorbar(x, d["estimate"], yerr=[(d["estimate"] - d["ci_low"]).clip(lower=0),
                                        (d["ci_high"] - d["estimate"]).clip(lower=0)],
                fmt="o", capsize=4, color=sns.color_palette("colorblind")[0], label="per concurrency level")
    ax.set_xticks(x, [str(int(c)) for c in d["clients"]])
    ax.set_xlabel("clients")
    if pooled is not None:
        ax.axhspan(pooled["ci_low"], pooled["ci_high"], color="0.85", zorder=0, label="pooled (95 % CI)")
        ax.axhline(pooled["estimate"], color="0.5", lw=1)
    if floors is not None:
        styles = ["--", ":", "-."]
        for i, (_, f) in enumerate(floors.iterrows()):
            ax.axhline(f["median_us"], color="black", lw=1, ls=styles[i % len(styles)],
                       label=f"one write() to a {f['target']}")
    ax.axhline(0, color="0.3", lw=0.8)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(wrapped(title, fig))
    ax.legend(fontsize="small", loc="best")
    fig.tight_layout()
    return fig


def carryover_figure(profile: pd.DataFrame, *, transition: str = "any switch"):
    """Throughput in each second after a switch against the window's measured seconds (log scale, mean and its
    interval per clients level; logbench.measure.switchstats.carryover): where the line leaves 0, the switch still acts."""
    theme()
    d = profile[profile["transition"] == transition]
    fig, ax = plt.subplots(figsize=(6.5, 3.2))
    for clients, g in d.groupby("clients"):
        g = g.sort_values("offset_s")
        ax.errorbar(g["offset_s"], g["mean"], yerr=[g["mean"] - g["ci_low"], g["ci_high"] - g["mean"]],
                    marker="o", capsize=3, label=f"{clients} client(s)")
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xlabel("second after the switch")
    ax.set_ylabel("log tps − window's measured mean")
    ax.set_title(f"Carryover ({transition}), 95 % intervals")
    ax.legend()
    fig.tight_layout()
    return fig


def headline_figure(points: pd.DataFrame, *, title: str = ""):
    """The answer in one figure (issue 42): the machine µs logging added to a transaction against the records per
    second the log took, a line per destination (over its clients levels), one marker per engine.

    ``points``: engine, destination, clients, records_per_s, extra_us, extra_low, extra_high
    (:func:`logbench.publish.findings.headline_points`).
    """
    theme()
    fig, ax = plt.subplots(figsize=(7.5, 4.6))
    keys = list(dict.fromkeys(zip(points["engine"], points["destination"])))
    # more destinations than the colour-blind palette's ten colours: tab20 keeps every line its own colour
    palette = sns.color_palette("colorblind" if len(keys) <= 10 else "tab20", len(keys))
    markers = {e: m for e, m in zip(dict.fromkeys(points["engine"]), ["o", "s", "^", "D"])}
    for (engine, dest), color in zip(keys, palette):
        d = points[(points["engine"] == engine) & (points["destination"] == dest)].sort_values("records_per_s")
        ax.errorbar(d["records_per_s"], d["extra_us"],
                    yerr=[(d["extra_us"] - d["extra_low"]).clip(lower=0), (d["extra_high"] - d["extra_us"]).clip(lower=0)],
                    fmt="-" + markers[engine], color=color, capsize=3, ms=5, lw=1.2, label=f"{engine}: {dest}")
    ax.axhline(0, color="0.3", lw=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("log records per second (measured)")
    ax.set_ylabel("extra µs of the cores per transaction")
    ax.legend(fontsize="x-small", loc="center left", bbox_to_anchor=(1.01, 0.5))
    if title:
        # over the whole figure, not the axes: the legend sits beside them and an axes title ran off the left edge
        fig.suptitle(wrapped(title, fig))
    fig.tight_layout()
    return fig
