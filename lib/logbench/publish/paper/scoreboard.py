"""The per-post scoreboard (issue 42): each claim of a post in one line, read as *agrees*, *disagrees* or *cannot
tell here*, with one line of reason. It is a reading of the verdicts 90_findings computed
(``findings_claims.csv``), never a second judgement: the full claims table with each rule stays in the appendix.

A claim listed under several posts (``001; 002``: the ebook reprints post 001) is printed once, under the first.
"""

from __future__ import annotations

import re

import pandas as pd

from ...analyze.claims import (CONFIRMED, CONSISTENT, EQUIVALENCE, INCONCLUSIVE, NOT_COMPARABLE, NOT_MEASURED,
                      NOT_REPRODUCIBLE, REFUTED)
from ...base.stats import CONFIDENCE

AGREES, DISAGREES, CANNOT_TELL = "agrees", "disagrees", "cannot tell here"

# "consistent, not resolved" reads as agreement: our point is where the post's is and only our interval is wider
# than the post's margin (issue 42: a reproduction must read as one); its reason line says the interval is wider.
READS = {CONFIRMED: AGREES, CONSISTENT: AGREES, REFUTED: DISAGREES, INCONCLUSIVE: CANNOT_TELL,
         NOT_COMPARABLE: CANNOT_TELL, NOT_REPRODUCIBLE: CANNOT_TELL, NOT_MEASURED: CANNOT_TELL}

# the verdicts that withhold a judgement and say why in their own words
WITHHELD = (NOT_COMPARABLE, NOT_REPRODUCIBLE, NOT_MEASURED)

COLUMNS = ("claim", "what the post says", "published", "ours", "reads", "why, in one line")

# a reason longer than this is cut at a word and marked: the full reason is in the appendix's claims table
REASON_CHARS = 150


def first_post(post: str) -> str:
    """The post a claim is listed under: the first of ``001; 002``."""
    return str(post).split(";")[0].strip()


def ours_text(ours: str) -> str:
    """Our number as the scoreboard prints it: of several cases only the decisive one (the full list is in the
    appendix's claims table)."""
    m = re.search(r"decisive:\s*(.+)$", ours)
    return m.group(1).strip() if m else ours


def short(text: str, limit: int = REASON_CHARS) -> str:
    """``text`` cut at a word before ``limit`` characters, with an ellipsis."""
    text = text.strip()
    if len(text) <= limit:
        return text
    return text[:limit].rsplit(" ", 1)[0].rstrip(",:;") + " …"


def reason(verdict: str, claimed: str, why: str) -> str:
    """One line: what decided the reading. The rule's verdicts say it from the claimed range; the verdicts that
    withhold a judgement give their own first reason."""
    fastest = claimed.strip() == "fastest"
    eq, conf = round(100 * EQUIVALENCE), round(100 * CONFIDENCE)
    if verdict == CONFIRMED:
        return ("every rival's ratio interval lies above 1" if fastest
                else f"our {eq} % interval lies inside the post's range {claimed}")
    if verdict == CONSISTENT:
        return ("every rival's ratio is above 1, not every interval" if fastest
                else f"our point lies inside the claimed {claimed}; our interval is wider than that margin")
    if verdict == REFUTED:
        return ("a rival's ratio interval lies below 1" if fastest
                else f"our {conf} % interval lies outside the claimed {claimed}")
    if verdict == INCONCLUSIVE:
        return ("a ratio's interval holds 1" if fastest
                else f"our {conf} % interval reaches both inside and outside the claimed {claimed}")
    why = re.sub(r"^not comparable:\s*", "", why)
    # the clients mapping is a preamble to the reason, not the reason
    why = "; ".join(p for p in why.split("; ") if not re.match(r"the post's \d+ clients on \d+ cores", p)) or why
    return short(f"{verdict}: {why}")


def scoreboard(claims: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """{post: its scoreboard}, the posts in order, each claim in the order of the claims file. ``claims`` is
    ``findings_claims.csv`` read as strings. Claims of one post withheld for the same reason share one line (post
    003's four 56-client claims: one reason printed once), their columns joined in order."""
    out: dict[str, dict[tuple[str, str], list[dict]]] = {}
    for _, r in claims.iterrows():
        verdict = str(r["verdict"]).split(":")[0].strip()
        if verdict not in READS:
            raise ValueError(f"findings_claims.csv: claim {r['claim_id']}: verdict {r['verdict']!r} is not one of "
                             f"{sorted(READS)}")
        why = reason(verdict, str(r["claimed"]), str(r["why"]))
        # only a withheld verdict's own reason is shared; the rule's generic lines stay one per claim
        key = (READS[verdict], why) if verdict in WITHHELD else (READS[verdict], why, str(r["claim_id"]))
        out.setdefault(first_post(r["post"]), {}).setdefault(key, []).append({
            "claim": str(r["claim_id"]), "what the post says": str(r["claim"]),
            "published": str(r["published"]), "ours": ours_text(str(r["ours"]))})
    boards = {}
    for post, groups in sorted(out.items()):
        rows = [{**{c: "; ".join(m[c] for m in members) for c in members[0]}, "reads": key[0],
                 "why, in one line": key[1]} for key, members in groups.items()]
        boards[post] = pd.DataFrame(rows, columns=list(COLUMNS))
    return boards


def key_study(claims: pd.DataFrame, post: str) -> str:
    """The study most of a post's claims are judged on (ties: the first in the claims file): its figure stands in
    the post's section of the results."""
    mine = claims[claims["post"].map(first_post) == post]
    mine = mine[mine["study"].astype(str).str.len() > 0]
    if mine.empty:
        return ""
    counts = mine["study"].value_counts(sort=False)
    return str(counts.idxmax())
