"""The verdicts and the rules that give them: an estimate against a claimed range (equivalence by two one-sided
tests), a claimed fastest against its rivals, and how the cases of one claim combine."""

from __future__ import annotations

import math

from ...base import stats
from ...base.stats import Estimate
from .text import fmt, range_text

CONFIRMED, REFUTED, INCONCLUSIVE = "confirmed", "refuted", "inconclusive"
# Our point estimate is where the claim says, our interval too wide to decide it: a reproduction whose resolution
# is short of the claim's margin reads apart from an interval that cannot even place the point (issue 42: post
# 004's 0.737 against its 0.73 carried the same label as a CI of 0.53-2.64 around a point outside the range).
CONSISTENT = "consistent, not resolved"
NOT_REPRODUCIBLE, NOT_MEASURED = "not reproducible here", "not measured yet"
NOT_COMPARABLE = "not comparable"
VERDICTS = (CONFIRMED, CONSISTENT, REFUTED, INCONCLUSIVE, NOT_COMPARABLE, NOT_REPRODUCIBLE, NOT_MEASURED)

RULES = ("in_range", "fastest")
# Agreement with a claimed range is judged by two one-sided tests at 5 % each: a 90 % interval inside it.
EQUIVALENCE = 0.90


def _bounded(e: Estimate) -> bool:
    return math.isfinite(e.low) and math.isfinite(e.high)


def in_range_verdict(e: Estimate, low: float, high: float, equivalence: Estimate | None = None) -> str:
    """The equivalence interval (90 %: two one-sided tests at 5 %) inside [low, high] → confirmed; the 95 % CI
    ``e`` disjoint from it → refuted; the point inside but the interval wider than the range allows → consistent,
    not resolved; else inconclusive (no CI: the point decides). Without ``equivalence``, ``e`` itself must lie
    inside (stricter)."""
    q = e if equivalence is None else equivalence
    if math.isnan(e.value):
        return INCONCLUSIVE
    if math.isnan(e.low) or math.isnan(e.high):
        return CONFIRMED if low <= e.value <= high else REFUTED
    if e.high < low or e.low > high:
        return REFUTED
    if not (math.isnan(q.low) or math.isnan(q.high)) and low <= q.low and q.high <= high:
        return CONFIRMED
    # an unbounded interval (Fieller's, where the denominator's CI holds 0) does not place the point at all
    if _bounded(e) and low <= e.value <= high:
        return CONSISTENT
    return INCONCLUSIVE


def deciding_width(e: Estimate, low: float, high: float) -> tuple[float, str]:
    """How narrow our interval would have to be to decide a claim it leaves open: (the half-width, which
    interval). A point inside the range is confirmed by a 90 % interval closer to it than the nearer edge; a
    point outside is refuted by a 95 % interval closer to it than the range."""
    v = e.value
    if math.isnan(v):
        return math.nan, ""
    if low <= v <= high:
        return min(v - low, high - v), f"{EQUIVALENCE:.0%}"
    return (low - v if v < low else v - high), f"{stats.CONFIDENCE:.0%}"


def deciding_text(e: Estimate, equivalence: Estimate, low: float, high: float) -> str:
    """'a 90 % CI within ±0.012 of our 0.75 would confirm it (ours ±0.094)', or '' where nothing can decide."""
    width, which = deciding_width(e, low, high)
    if not which or not width > 0:
        return ""
    ours = equivalence if which.startswith(f"{EQUIVALENCE:.0%}") else e
    verb = "confirm" if low <= e.value <= high else "refute"
    return (f"a {which.replace('%', ' %')} CI within ±{fmt(width, 2)} of our {fmt(e.value)} would {verb} it "
            f"(ours ±{fmt(ours.half_width, 2)})")


def fastest_verdict(ratios: list[Estimate]) -> str:
    """Ratios of the claimed fastest to each rival: all CIs above 1 → confirmed; one below 1 → refuted; every
    point above 1 but some CI holding 1 → consistent, not resolved."""
    if any(not math.isnan(r.high) and r.high < 1 for r in ratios):
        return REFUTED
    if ratios and all(not math.isnan(r.low) and r.low > 1 for r in ratios):
        return CONFIRMED
    if ratios and all(_bounded(r) and r.value > 1 for r in ratios):
        return CONSISTENT
    return INCONCLUSIVE


def combine(verdicts: list[str]) -> str:
    """Any refuted → refuted; all confirmed → confirmed; every case confirmed or consistent → consistent, not
    resolved; else inconclusive."""
    if not verdicts:
        return NOT_MEASURED
    if REFUTED in verdicts:
        return REFUTED
    if all(v == CONFIRMED for v in verdicts):
        return CONFIRMED
    if all(v in (CONFIRMED, CONSISTENT) for v in verdicts):
        return CONSISTENT
    return INCONCLUSIVE


def rule_text(rule: str, low: float, high: float) -> str:
    if rule == "fastest":
        return ("tps ratio to every rival: all 95 % CIs > 1 → confirmed; any < 1 → refuted; every point > 1 → "
                "consistent, not resolved; else inconclusive")
    return (f"90 % CI inside {range_text(low, high)} → confirmed (two one-sided tests at 5 %); 95 % CI disjoint "
            f"→ refuted; point inside, CI wider → consistent, not resolved; else inconclusive")

def _why(verdict: str, rule: str, deciding: str = "") -> str:
    if rule == "fastest":
        return {CONFIRMED: "faster than every rival (all ratio CIs > 1)",
                REFUTED: "a rival is faster (a ratio CI < 1)",
                CONSISTENT: "every ratio's point is above 1, some ratio CI contains 1 (the point agrees, the "
                            "interval does not decide)",
                INCONCLUSIVE: "some ratio CI contains 1"}[verdict]
    return {CONFIRMED: "our 90 % CI lies inside the claimed range (equivalent within its margin)",
            REFUTED: "our 95 % CI lies outside the claimed range",
            CONSISTENT: "our point estimate lies inside the claimed range and our interval is wider than the range "
                        "allows (the point agrees, the interval does not decide)"
                        + (f": {deciding}" if deciding else ""),
            INCONCLUSIVE: "our CI straddles the claimed range's edge"
                          + (f": {deciding}" if deciding else "")}[verdict]


def _decisive(cases: list, verdict: str):
    """The case that decides: the first refuting one, the first inconclusive one, the first consistent one, else
    the first."""
    for want in (REFUTED, INCONCLUSIVE, CONSISTENT):
        if verdict == want:
            return next(x for x in cases if x[4] == want)
    return cases[0]
