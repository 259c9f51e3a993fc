"""How many sessions per design the designs part needs to tell a 2x difference in efficiency, how many fit in the
study's committed budget, and what the sessions that ran can and cannot tell.

The designs part compares the A/A log-ratio's variance across sessions of each design (times the session's
machine minutes: known constants, so the efficiency ratio's sampling distribution is that of a ratio of two
sample variances): an F test of equal variances on (n_blocks - 1, n_switchback - 1) degrees of freedom. With n
sessions per design, the ratio of the two sample variances is the true ratio times an F(n - 1, n - 1) variable;
its power against a true ratio R is P(R F > F_hi) + P(R F < F_lo) with F_lo, F_hi the two-sided critical values
(scipy.stats.f). Normal session estimates are assumed, as the F interval in the efficiency table does.

The budget is what the committed run of the standard profile took (its records' first start to its last end,
read from data/processed), and a round's cost what the committed sessions took (the efficiency table's minutes
per session, measured by the run on the machine its environment record names).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
from scipy import optimize, stats as sps

from ...base import paths, stats

RATIO = 2.0  # the difference in efficiency (variance per machine-minute) the designs part is to tell
POWER = 0.8


def power(ratio: float, n1: int, n2: int, confidence: float = stats.CONFIDENCE) -> float:
    """The probability that the two-sided F test at ``confidence`` rejects equal variances when design 1's
    (n1 sessions) variance is ``ratio`` times design 2's (n2 sessions)."""
    if n1 < 2 or n2 < 2:
        return math.nan
    d1, d2 = n1 - 1, n2 - 1
    lo, hi = sps.f.ppf([(1 - confidence) / 2, (1 + confidence) / 2], d1, d2)
    return float(sps.f.sf(hi / ratio, d1, d2) + sps.f.cdf(lo / ratio, d1, d2))


def sessions_needed(ratio: float = RATIO, target: float = POWER, confidence: float = stats.CONFIDENCE,
                    limit: int = 1_000_000) -> int:
    """The fewest sessions per design (equal numbers) at which the F test has power ``target`` against a true
    variance ratio ``ratio`` (or 1/ratio: the test is symmetric with equal numbers)."""
    if ratio <= 0 or ratio == 1 or not 0 < target < 1:
        raise ValueError(f"ratio {ratio!r} (> 0, not 1), target power {target!r} (between 0 and 1)")
    r = max(ratio, 1 / ratio)
    hi = 2
    while power(r, hi, hi, confidence) < target:
        hi *= 2
        if hi > limit:
            raise ValueError(f"more than {limit} sessions per design for a ratio of {ratio}")
    lo = hi // 2 if hi > 2 else 1  # power(lo) < target (or lo < 2, where there is no test)
    while hi - lo > 1:  # power rises with n: bisect to the first n that reaches the target
        mid = (lo + hi) // 2
        if mid >= 2 and power(r, mid, mid, confidence) >= target:
            hi = mid
        else:
            lo = mid
    return hi


def detectable_ratio(n1: int, n2: int, target: float = POWER, confidence: float = stats.CONFIDENCE) -> float:
    """The smallest variance ratio (> 1, design 1 over design 2) the F test detects with power ``target`` with
    n1 and n2 sessions: below it, "neither design more efficient" is what the sessions could not tell."""
    if n1 < 2 or n2 < 2:
        return math.inf
    f = lambda log_r: power(math.exp(log_r), n1, n2, confidence) - target  # noqa: E731 - a root's argument
    upper = 1.0
    while f(upper) < 0:
        upper *= 2
        if upper > 50:
            return math.inf
    return math.exp(optimize.brentq(f, 0.0, upper, xtol=1e-9))


def committed_budget(processed_dir: Path = paths.PROCESSED, stem: str = "instrument") -> dict[str, float]:
    """The committed standard run's time, from its records: the whole study (first start to last end over the
    noise curve, the anomaly test and the designs part) and the designs part alone, in minutes; and the
    environment record's id, which the sessions' own table must carry."""
    processed_dir = Path(processed_dir)

    def span(frame: pd.DataFrame) -> tuple[pd.Timestamp, pd.Timestamp]:
        start = pd.to_datetime(frame["started_at"], format="ISO8601")
        end = start + pd.to_timedelta(frame["wall_s"].astype(float), unit="s")
        return start.min(), end.max()

    runs = pd.read_csv(processed_dir / f"{stem}_records.csv", usecols=["started_at", "wall_s"])
    designs = pd.read_csv(processed_dir / f"{stem}_designs_records.csv", usecols=["started_at", "wall_s"])
    (s0, e0), (s1, e1) = span(runs), span(designs)
    env = json.loads((processed_dir / f"{stem}_environment.json").read_text())
    return {"study_min": (max(e0, e1) - min(s0, s1)).total_seconds() / 60,
            "designs_min": (e1 - s1).total_seconds() / 60, "env_id": env["env_id"]}


def plan(efficiency: pd.DataFrame, budget_min: float, ratio: float = RATIO, target: float = POWER,
         confidence: float = stats.CONFIDENCE, env_id: str | None = None) -> pd.DataFrame:
    """Per placement and clients level of the efficiency table: the sessions each design ran, the sessions per
    design a ``ratio`` difference needs at ``target`` power, a round's minutes (one session of each design), the
    minutes that need would take, the rounds that fit in ``budget_min`` when the designs part spends it on this
    placement and level alone, and the smallest ratio detectable (at ``target`` power) with the sessions that ran
    and with the rounds that fit. ``env_id``: the machine the budget was measured on; a table of another is refused
    (a session's cost is this machine's)."""
    if env_id is not None and "env_id" in efficiency.columns and set(efficiency["env_id"]) != {env_id}:
        raise ValueError(f"the efficiency table ran on {sorted(set(efficiency['env_id']))}, the budget on "
                         f"{env_id}: a session's cost is its machine's")
    need = sessions_needed(ratio, target, confidence)
    rows = []
    for e in efficiency.to_dict("records"):
        ran_s, ran_b = int(e["switchback sessions"]), int(e["blocks sessions"])
        round_min = float(e["switchback minutes per session"]) + float(e["blocks minutes per session"])
        fit = int(budget_min // round_min) if round_min > 0 else 0
        rows.append({"placement": e["placement"], "clients": e["clients"], "sessions per design (ran)": min(ran_s, ran_b),
                     f"detectable ratio (ran, {target:.0%} power)": detectable_ratio(ran_b, ran_s, target, confidence),
                     f"sessions per design for {ratio:g}x": need, "minutes per round": round_min,
                     f"minutes for {ratio:g}x": need * round_min, "budget (min)": budget_min,
                     "rounds that fit": fit,
                     f"detectable ratio (fit, {target:.0%} power)": detectable_ratio(fit, fit, target, confidence),
                     f"power at {ratio:g}x (fit)": power(ratio, fit, fit, confidence)})
    return pd.DataFrame(rows)


def rounds_that_fit(processed_dir: Path = paths.PROCESSED, placement: str = "none", clients: int = 4) -> int:
    """What the ``sessions`` profile runs: the rounds of one placement and level that fit in the committed designs
    part's time, each round costing what the committed one did on this machine."""
    budget = committed_budget(processed_dir)
    eff = pd.read_csv(Path(processed_dir) / "instrument_designs_efficiency.csv")
    p = plan(eff, budget["designs_min"], env_id=budget["env_id"])
    return int(p[(p["placement"] == placement) & (p["clients"] == clients)]["rounds that fit"].iloc[0])


def finding(plan_table: pd.DataFrame, ratio: float = RATIO, target: float = POWER,
            confidence: float = stats.CONFIDENCE) -> str:
    """What the sessions can and cannot tell, every number from ``plan_table`` (:func:`plan`)."""
    out = []
    for r in plan_table.to_dict("records"):
        need = r[f"sessions per design for {ratio:g}x"]
        out.append(
            f"- **{r['clients']} client(s), placement {r['placement']}**: {r['sessions per design (ran)']} sessions per "
            f"design tell a difference in efficiency only from {r[f'detectable ratio (ran, {target:.0%} power)']:.3g}x "
            f"on (at {target:.0%} power, {confidence:.0%} F test): their \"neither design more efficient\" means no more "
            f"than that. Telling {ratio:g}x takes {need} sessions per design, {r[f'minutes for {ratio:g}x']:.0f} min "
            f"of this machine ({r['minutes per round']:.2f} min per round); {r['budget (min)']:.0f} min fit "
            f"{r['rounds that fit']} rounds, which tell {r[f'detectable ratio (fit, {target:.0%} power)']:.3g}x "
            f"(power at {ratio:g}x: {r[f'power at {ratio:g}x (fit)']:.0%}).")
    return "\n".join(out) if out else "No designs part in this run."
