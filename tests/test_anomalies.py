"""The anomaly screen on hand-made summaries and runs: what it must flag, and what it must leave alone."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from logbench.analyze import anomalies as A
from logbench.analyze import claims


def _summary(rows):
    return pd.DataFrame(rows, columns=["configuration", "clients", "ratio", "ratio_ci_low", "ratio_ci_high"])


def test_the_summary_screen_flags_a_biased_aa_logging_faster_and_an_inversion():
    s = _summary([
        ("none", 1, 1.0, math.nan, math.nan),
        ("none_again", 1, 0.88, 0.79, 0.99),   # excludes 1
        ("none_again", 2, 1.02, 0.95, 1.09),   # holds 1
        ("file", 1, 0.88, 0.80, 0.97),
        ("devnull", 1, 0.76, 0.68, 0.86),      # cheaper, yet lower: beyond the CIs? 0.86 < 0.80 no: inside
        ("file", 2, 0.90, 0.85, 0.95),
        ("devnull", 2, 1.10, 1.02, 1.20),      # faster than none beyond its CI
    ])
    rows = pd.DataFrame(A.summary_anomalies("s", s, "none", [], (("devnull", "file"),)))
    assert sorted(zip(rows["kind"], rows["clients"])) == [("aa_excludes_1", 1), ("inversion", 1),
                                                           ("logging_faster", 2)]
    inv = rows[rows["kind"] == "inversion"].iloc[0]
    assert inv["what"] == "devnull < file" and inv["note"].endswith("inside the CIs")
    # beyond: the cheaper one's whole interval below the dearer one's
    s.loc[s["configuration"].eq("devnull") & s["clients"].eq(1), ["ratio", "ratio_ci_low", "ratio_ci_high"]] = \
        [0.70, 0.65, 0.75]
    inv = pd.DataFrame(A.summary_anomalies("s", s, "none", [], (("devnull", "file"),))).query("kind == 'inversion'")
    assert inv.iloc[0]["note"].endswith("beyond its CI")


def _runs(drop_block=None, factor=0.8, seed=1):
    rng = np.random.default_rng(seed)
    rows = []
    for block in range(5):
        for cfg, level in (("none", 1000.0), ("a", 900.0), ("b", 800.0), ("none_again", 1000.0)):
            tps = level * (1 + 0.02 * rng.standard_normal())
            if block == drop_block:
                tps *= factor
            rows.append({"configuration": cfg, "clients": 2, "repeat": block, "tps": tps,
                         "started_at": f"2026-11-24T10:0{block}:00"})
    return pd.DataFrame(rows)


def test_a_block_where_every_configuration_drops_together_is_flagged_and_only_that_one():
    rows = A.contaminated_blocks("s", _runs(drop_block=3), [])
    assert [r["what"] for r in rows] == ["block 3"]
    assert rows[0]["value"] < 0.9 and rows[0]["ci_high"] < 1 and "from 2026-11-24T10:03:00" in rows[0]["note"]
    assert A.contaminated_blocks("s", _runs(), []) == []
    # a drop of one configuration alone is that configuration's, not the block's
    r = _runs()
    r.loc[(r["repeat"] == 2) & (r["configuration"] == "a"), "tps"] *= 0.5
    assert A.contaminated_blocks("s", r, []) == []
    # a shallow common dip (5 %) stays under the threshold
    assert A.contaminated_blocks("s", _runs(drop_block=1, factor=0.95), []) == []


def test_switchback_windows_are_not_blocks_and_the_screen_joins_every_study():
    r = _runs(drop_block=3).assign(extra=[{"design": "switchback"}] * 20)
    assert A.contaminated_blocks("s", r, []) == []

    class S:
        summary = _summary([("none", 2, 1.0, math.nan, math.nan), ("none_again", 2, 1.2, 1.1, 1.3)])
        runs = _runs(drop_block=0)
        baseline = "none"

    out = A.screen({"s": S}, lambda summary: [])
    assert list(out["kind"]) == ["aa_excludes_1", "contaminated_block"] and list(out.columns) == list(A.COLUMNS)
    assert "2 × " not in A.text(out) and "A/A excludes 1 (s)" in A.text(out)
    # the paper's table prints the estimate by the paper's one formatter (paper.text.ci_text)
    from logbench.publish.paper.sections import screen_table

    table = screen_table(out)
    assert table.iloc[0]["value [95 % CI]"] == "1.20 [1.10, 1.30]" and table.iloc[1]["kind"] == "contaminated block"
    lo, hi = out.iloc[1]["ci_low"], out.iloc[1]["ci_high"]
    assert table.iloc[1]["value [95 % CI]"] == (f"{claims.fmt(out.iloc[1]['value'])} [{claims.fmt(lo)} – "
                                                f"{claims.fmt(hi)}]")


def test_logging_faster_within_the_aa_spread_says_so():
    # at 2 clients the A/A reaches |ln 0.85| = 0.1625 from 1; the logging arm's 1.10 [1.02, 1.20] (|ln 1.10| = 0.0953)
    # is above 1 beyond its CI, an anomaly still, but no farther from 1 than the baseline against itself
    s = _summary([("none", 2, 1.0, math.nan, math.nan), ("none_again", 2, 1.0, 0.85, 1.15),
                  ("devnull", 2, 1.10, 1.02, 1.20)])
    rows = A.summary_anomalies("s", s, "none", [])
    assert [r["kind"] for r in rows] == ["logging_faster"] and "within the A/A spread" in rows[0]["note"]
    # beyond the A/A's reach (|ln 1.3| = 0.262), the note is the plain anomaly
    s.loc[2, ["ratio", "ratio_ci_low", "ratio_ci_high"]] = [1.3, 1.2, 1.4]
    assert A.summary_anomalies("s", s, "none", [])[0]["note"] == "logging faster than not logging, beyond the CI"


def _switchback_runs(windows: pd.DataFrame, clients: int = 64) -> pd.DataFrame:
    """Simulated windows as a switchback study's run records: what the findings load from ``*_runs.csv``."""
    extra = [{"design": "switchback", "load": int(w.load), "attempt": 0, "block": int(w.block), "unit": int(w.unit),
              "window": int(w.window), "prev_arm": w.prev_arm, "switch_requested": 0.0, "switch_applied": 0.01,
              "guard_s": 1} for w in windows.itertuples()]
    return pd.DataFrame({"configuration": windows["arm"], "clients": clients, "tps": windows["tps"],
                         "extra": [json.dumps(e) for e in extra]})


def test_a_williams_runs_aa_note_says_its_previous_arm_is_balanced_by_design():
    """The windows of a real Williams plan (three arms, 48 blocks, 3 loads), their throughput simulated with a
    true 5 % shift of the A/A arm and a carryover after the logging arm: the note says the layout balanced the
    previous arm, and names the cause as open (the carryover falls on both alike)."""
    from logbench.measure import switchback, switchstats

    arms, base, aa = ["none", "stderr", "none_again"], "none", "none_again"
    sb = switchback.SwitchbackDesign(window_s=3, guard_s=1, layout="williams", blocks=48)
    rng = np.random.default_rng(7)
    effect = {base: 1.0, "stderr": 0.6, aa: 0.95}
    rows = []
    for load in range(3):
        plan = switchback.plan_load(arms, base, sb, seed=1, clients=64, load=load)
        for w in plan:
            prev = plan[w.index - 1].arm if w.index else None
            slow = 0.95 if prev == "stderr" and w.arm != "stderr" else 1.0
            rows.append({"load": load, "block": w.block, "unit": w.unit, "window": w.index, "arm": w.arm,
                         "prev_arm": prev, "tps": 1000 * effect[w.arm] * slow * math.exp(rng.normal(0, 0.02))})
    w = pd.DataFrame(rows)
    est = switchstats.arm_ratios(w, base).set_index("arm").loc[aa]
    assert est["ratio_ci_high"] < 1
    s = _summary([(base, 64, 1.0, math.nan, math.nan), (aa, 64, est["ratio"], est["ratio_ci_low"],
                                                        est["ratio_ci_high"])])
    runs = _switchback_runs(w)
    runs["extra"] = runs["extra"].map(lambda e: json.dumps({**json.loads(e), "layout": "williams"}))
    note = A.summary_anomalies("s", s, base, [], runs=runs)[0]["note"]
    assert "(a williams layout: inside its blocks both follow every other arm equally often, by design)" in note
    assert note.endswith("does not account for it, and the cause is open")
    # a permutation run's note says nothing of the kind
    assert "williams" not in A.summary_anomalies("s", s, base, [], runs=_switchback_runs(w))[0]["note"]


@pytest.mark.parametrize("carryover, aa_effect, words", [
    (0.95, 1.0, "carryover from the previous window accounts for it"),
    (1.0, 0.95, "does not account for it, and the cause is open")])
def test_a_switchback_aa_that_excludes_1_says_whether_carryover_accounts_for_it(carryover, aa_effect, words):
    """Issue 40: a carryover into the baseline's settings on a schedule whose A/A windows follow the logging arm
    three times as often biases the A/A, and the note says so; an A/A that strays for another reason (here a
    true 5 % shift of the A/A arm) is named as open."""
    from logbench.measure import switchstats
    from test_switchstats import AA, BASE, LOGGING, UNBALANCED, simulate

    w = simulate(np.random.default_rng(41), blocks=48, loads=3, sd=0.03, after_logging=carryover,
                 orders=UNBALANCED, ratios={AA: aa_effect, LOGGING: 0.6})
    est = switchstats.arm_ratios(w, BASE).set_index("arm").loc[AA]
    assert est["ratio_ci_high"] < 1
    s = _summary([(BASE, 64, 1.0, math.nan, math.nan),
                  (AA, 64, est["ratio"], est["ratio_ci_low"], est["ratio_ci_high"])])
    rows = A.summary_anomalies("s", s, BASE, [], runs=_switchback_runs(w))
    assert [r["kind"] for r in rows] == ["aa_excludes_1"]
    note = rows[0]["note"]
    assert note.startswith("the baseline against itself") and "108 of 144 A/A and 36 of 144 baseline" in note
    assert note.endswith(words)
    # without the runs (or with a block design's) the note is the plain one
    assert A.summary_anomalies("s", s, BASE, [])[0]["note"] == "the baseline against itself: the instrument is " \
                                                                 "biased at this level"
