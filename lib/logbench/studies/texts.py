"""What a study notebook prints beside its tables: the environment it ran in, a summary row's estimate, the
finding per server, the A/A control's resolution."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pandas as pd

from .running import StudyResult, _environments


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
    from ..base.formatting import ci_text

    return ci_text(r[col if col in r.index else f"{col}_mean"], r[f"{col}_ci_low"], r[f"{col}_ci_high"],
                   n=int(r["n"]), sig=digits)


def per_variant_text(summary: pd.DataFrame, finding: Callable[..., str], *args: object) -> str:
    """``finding(summary, *args)``, or where the summary has several servers (a version sweep's variants), the
    finding of each server's rows under its label: every server against its own baseline, never pooled."""
    from ..analyze.plots import variants

    parts = variants(summary)
    if len(parts) == 1:
        return finding(summary, *args)
    return "\n\n".join(f"**{label}**\n\n{finding(part, *args)}" for label, part in parts)


def resolution_note(summary: pd.DataFrame, baseline: str) -> str:
    """Markdown: the A/A control's ratio per level (the study's resolution) and, where its CI excludes 1,
    the warning that ratios there carry a bias of that size."""
    from ..base import stats
    from ..base.formatting import ci_text

    res = stats.resolution(summary, baseline)
    if res.empty:
        return "No A/A control ran (`aa_control=False`): this run has no measure of its own resolution."
    keys = [c for c in res.columns[: list(res.columns).index("aa_ratio")]]
    lines = []
    for r in res.itertuples():
        where = ", ".join(f"{k} {getattr(r, k)}" for k in keys)
        lines.append(f"- {where}: A/A ratio {ci_text(r.aa_ratio, r.ci_low, r.ci_high, n=r.n)}, half-width "
                     f"±{100 * r.relative_half_width:.1f} % — " + ("contains 1." if r.contains_1 else "**excludes 1.**"))
    warnings = [w for w in res["warning"] if w]
    head = ("**Warning:** " + " ".join(warnings)) if warnings else (
        "Every A/A interval contains 1: the instrument shows no bias at this resolution.")
    return head + "\n\n" + "\n".join(lines)

