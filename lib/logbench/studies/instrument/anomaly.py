"""Study 00's anomaly test: logging against no logging per control (idle state free or held), its verdict, and
what holding the idle state does to the baseline."""

from __future__ import annotations

import math

import pandas as pd

from ...base import stats
from ...base.records import idle_driver
from .. import common
from .spec import ANOMALY_DESTINATIONS, BASELINE


def anomaly_summary(runs: pd.DataFrame) -> pd.DataFrame:
    """Ratio to `none` with its CI (within blocks: stats.cell_ratio) per control × destination × clients (each
    control its own baseline)."""
    out = common.summary_per_variant(runs, BASELINE, also=("latency_mean_ms", "log_loss", "server_cpu_s",
                                                           "logger_cpu_s"), order=list(ANOMALY_DESTINATIONS))
    return out.rename(columns={"variant": "control"})


def anomaly_verdict(summary: pd.DataFrame, cpuidle_driver: str = "") -> str:
    """Does 'logging is not slower (or faster) than no logging at 1 client' survive the idle-state control?
    ``cpuidle_driver``: the runs' (:func:`idle_driver`); "none" means the hold had nothing to act on."""
    from ...base.formatting import ci_text

    logging = summary[summary["configuration"].isin(["stderr", "syslog"])]
    lines = []
    for clients, g in logging.groupby("clients"):
        for r in g.sort_values(["configuration", "control"]).itertuples():
            word = ("faster than" if r.ratio_ci_low > 1 else "slower than" if r.ratio_ci_high < 1
                    else "not distinguishable from")
            lines.append(f"- {clients} client(s), control `{r.control}`: `{r.configuration}`/`none` = "
                         f"{ci_text(r.ratio, r.ratio_ci_low, r.ratio_ci_high, n=r.n)} — logging {word} no logging.")
    one = logging[logging["clients"] == logging["clients"].min()]
    free, hold = one[one["control"] == "free"], one[one["control"] == "hold"]
    base = summary[(summary["configuration"] == BASELINE) & (summary["clients"] == logging["clients"].min())]
    lift = ""
    by = base.set_index("control")
    if {"free", "hold"} <= set(by.index):
        f, h = by.loc["free"], by.loc["hold"]
        move = f"({f['tps_mean']:,.0f} → {h['tps_mean']:,.0f} tps)"
        if cpuidle_driver == "none":
            lift = (" This machine has no cpuidle driver: the kernel idles by HLT whatever the latency request, so "
                    f"the hold had nothing to act on {move}; the control is not tested by this run.")
        elif h.get("tps_ci_low", math.nan) > f.get("tps_ci_high", math.nan):
            lift = (f" Holding the idle state made the baseline itself {h['tps_mean'] / f['tps_mean']:.2g} times as "
                    f"fast {move}, consistent with a lone client's round trips waiting for an idle vCPU to wake.")
        else:
            lift = f" Holding the idle state did not move the baseline beyond its 95 % intervals {move}."
    if (hold["ratio_ci_low"] > 1).any():
        head = ("**Verdict:** logging still looks faster than no logging with the idle state held: the idle state "
                "does not explain it.")
    elif (free["ratio_ci_high"] >= 1).any() and (hold["ratio_ci_high"] < 1).all():
        head = ("**Verdict:** the 1-client anomaly is the VM's idle state. With the CPUs free to idle, logging at "
                "1 client is not slower than no logging (" + ", ".join(f"`{r.configuration}` {r.ratio:.3g}"
                                                                    for r in free.itertuples())
                + "); with the idle state held, every logging destination is slower (" +
                ", ".join(f"`{r.configuration}` {r.ratio:.3g}" for r in hold.itertuples()) + ")." + lift)
    else:
        head = ("**Verdict:** undecided in this run: the two controls do not separate at 1 client beyond the "
                "intervals below." + lift)
    return head + "\n" + "\n".join(lines)


def baseline_by_control(runs: pd.DataFrame) -> pd.DataFrame:
    """The `none` baseline's tps and latency per control × clients: what the idle state costs a lone client."""
    measured = common.split_variant(runs)
    base = measured[measured["configuration"] == "none"]
    rows = []
    for (control, clients), g in base.groupby(["variant", "clients"], sort=False):
        t, lat = stats.mean_ci(g["tps"]), stats.mean_ci(g["latency_mean_ms"])
        rows.append({"control": control, "clients": clients, "n": t.n, "tps_mean": t.value, "tps_ci_low": t.low,
                     "tps_ci_high": t.high, "latency_ms_mean": lat.value, "latency_ms_ci_low": lat.low,
                     "latency_ms_ci_high": lat.high, "cv_of_runs": float(g["tps"].std(ddof=1) / g["tps"].mean())
                     if len(g) > 1 else math.nan})
    return pd.DataFrame(rows)
