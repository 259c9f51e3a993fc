"""Claims: the rules on hand-made numbers, the verdict order, and the claims file itself."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from logbench.analyze import claims as C
from logbench.base.stats import Estimate

NAN = math.nan


# --- rules --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("e, verdict", [
    (Estimate(0.85, 0.82, 0.88, 5), C.CONFIRMED),      # CI inside [0.80, 0.94]
    (Estimate(0.50, 0.45, 0.55, 5), C.REFUTED),        # CI entirely below
    (Estimate(0.97, 0.95, 0.99, 5), C.REFUTED),        # CI entirely above
    (Estimate(0.79, 0.70, 0.85, 5), C.INCONCLUSIVE),   # straddles the low edge
    (Estimate(0.90, 0.60, 1.20, 5), C.CONSISTENT),     # point inside, interval wider than the range
    (Estimate(0.97, 0.90, 1.04, 5), C.INCONCLUSIVE),   # point outside, interval overlapping the range
    (Estimate(0.85, NAN, NAN, 1), C.CONFIRMED),        # no CI: the point decides
    (Estimate(0.99, NAN, NAN, 1), C.REFUTED),
    (Estimate(0.85, -math.inf, math.inf, 3), C.INCONCLUSIVE),  # Fieller unbounded
    (Estimate(NAN, NAN, NAN, 0), C.INCONCLUSIVE),
])
def test_in_range(e, verdict):
    assert C.in_range_verdict(e, 0.80, 0.94) == verdict


def test_equivalence_confirms_on_the_90_percent_interval_and_refutes_on_the_95():
    # Hand-computed: the mean of 0.74, 0.75, 0.76 is 0.75, standard error 0.01/sqrt(3) = 0.005774 on 2 df;
    # t(0.975, 2) = 4.303 → 95 % CI [0.7252, 0.7748]; t(0.95, 2) = 2.920 → 90 % CI [0.7331, 0.7669].
    from logbench.base import stats
    e = stats.mean_ci([0.74, 0.75, 0.76])
    q = stats.mean_ci([0.74, 0.75, 0.76], C.EQUIVALENCE)
    assert (e.low, e.high) == pytest.approx((0.7252, 0.7748), abs=1e-4)
    assert (q.low, q.high) == pytest.approx((0.7331, 0.7669), abs=1e-4)
    # the margin [0.73, 0.77] holds the 90 % interval but not the 95 %: equivalent by TOST at 5 %
    assert C.in_range_verdict(e, 0.73, 0.77, q) == C.CONFIRMED
    # without it, the 95 % must fit: stricter (the point still lies inside: consistent, not resolved)
    assert C.in_range_verdict(e, 0.73, 0.77) == C.CONSISTENT
    # the 90 % interval pokes out of [0.735, 0.80] on the low side, the point lies inside: consistent, not resolved
    assert C.in_range_verdict(e, 0.735, 0.80, q) == C.CONSISTENT
    # refuted only when the 95 % interval misses the range: [0.776, 0.9] just misses it, [0.77, 0.9] does not
    assert C.in_range_verdict(e, 0.776, 0.9, q) == C.REFUTED
    assert C.in_range_verdict(e, 0.77, 0.9, q) == C.INCONCLUSIVE


def test_an_open_verdict_says_how_narrow_an_interval_would_decide_it():
    # inside the range: the distance to the nearer edge, for the 90 % interval (0.75 in [0.70, 0.76]: 0.01)
    e, q = Estimate(0.75, 0.65, 0.85, 5), Estimate(0.75, 0.67, 0.83, 5)
    assert C.deciding_width(e, 0.70, 0.76) == (pytest.approx(0.01), "90%")
    assert C.deciding_text(e, q, 0.70, 0.76) == "a 90 % CI within ±0.010 of our 0.750 would confirm it (ours ±0.080)"
    # outside: the distance to the range, for the 95 % interval (0.79 above [0.70, 0.76]: 0.03)
    e = Estimate(0.79, 0.69, 0.89, 5)
    assert C.deciding_width(e, 0.70, 0.76) == (pytest.approx(0.03), "95%")
    assert C.deciding_text(e, e, 0.70, 0.76) == "a 95 % CI within ±0.030 of our 0.790 would refute it (ours ±0.10)"
    # a half-open range: only its one edge counts
    assert C.deciding_width(Estimate(1.2, 0.9, 1.5, 4), 1.0, math.inf)[0] == pytest.approx(0.2)
    assert C.deciding_text(Estimate(NAN, NAN, NAN, 0), Estimate(NAN, NAN, NAN, 0), 0.7, 0.8) == ""


def test_in_range_open_bounds():
    assert C.in_range_verdict(Estimate(2.0, 1.5, 2.5, 3), 1.0, math.inf) == C.CONFIRMED
    assert C.in_range_verdict(Estimate(0.9, 0.8, 0.95, 3), 1.0, math.inf) == C.REFUTED
    assert C.in_range_verdict(Estimate(-1, -2, -0.5, 3), -math.inf, 0) == C.CONFIRMED


def test_fastest():
    above = Estimate(1.1, 1.05, 1.15, 3)
    around = Estimate(1.02, 0.97, 1.07, 3)
    below = Estimate(0.9, 0.85, 0.95, 3)
    assert C.fastest_verdict([above, above]) == C.CONFIRMED
    assert C.fastest_verdict([above, around]) == C.CONSISTENT  # every point above 1, one CI holds it
    assert C.fastest_verdict([above, Estimate(0.98, 0.93, 1.03, 3)]) == C.INCONCLUSIVE
    assert C.fastest_verdict([above, Estimate(1.1, -math.inf, math.inf, 3)]) == C.INCONCLUSIVE
    assert C.fastest_verdict([above, below]) == C.REFUTED
    assert C.fastest_verdict([]) == C.INCONCLUSIVE


def test_combine():
    assert C.combine([C.CONFIRMED, C.CONFIRMED]) == C.CONFIRMED
    assert C.combine([C.CONFIRMED, C.INCONCLUSIVE]) == C.INCONCLUSIVE
    assert C.combine([C.CONFIRMED, C.CONSISTENT]) == C.CONSISTENT
    assert C.combine([C.CONSISTENT, C.INCONCLUSIVE]) == C.INCONCLUSIVE
    assert C.combine([C.CONFIRMED, C.INCONCLUSIVE, C.REFUTED]) == C.REFUTED
    assert C.combine([]) == C.NOT_MEASURED


def test_fmt_and_ranges():
    assert C.fmt(0.489743) == "0.490"
    assert C.fmt(16331.9) == "16332"
    assert C.fmt(-0.0000360, 3) == "-0.0000360"
    assert C.fmt(NAN) == "—" and C.fmt(math.inf) == "∞"
    assert C.range_text(0.8, 0.94) == "[0.8, 0.94]"
    assert C.range_text(1.0, math.inf) == "≥ 1"
    assert C.range_text(7.5e6, 1.25e7) == "[7500000, 12500000]"


# --- evaluation on a hand-made study ------------------------------------------------------------------------

# tps per (configuration, clients), identical in every repeat: every CI has zero width and every ratio is exact.
TPS = {("none", 1): 1000.0, ("none", 2): 1800.0, ("a", 1): 850.0, ("a", 2): 1500.0,
       ("b", 1): 500.0, ("b", 2): 900.0}


def _study(scale: int = 10, memory: float = 8e9) -> C.StudyData:
    rows = []
    for (cfg, k), tps in TPS.items():
        for rep in range(3):
            rows.append({"configuration": cfg, "clients": k, "repeat": rep, "tps": tps,
                         "log_loss": NAN if cfg == "none" else 0.25, "log_bytes_per_s": 1000.0 * (cfg != "none"),
                         "logger_cpu_s": 0.5, "wall_s": 2.0, "duration_s": 2.0, "scale": scale,
                         "workload": "pgbench -S"})
    env = {"cpu_count": 2, "memory_bytes": memory, "timer_loop_ns": 40.0}
    return C.StudyData("hand", "postgresql", "none", pd.DataFrame(rows), None, env)


def _claim(**kw) -> dict:
    base = {c: "" for c in C.COLUMNS}
    base.update(claim_id="x", post="hand", claim="a claim", published="1", study="hand", metric="ratio",
                rule="in_range")
    base.update({k: str(v) for k, v in kw.items()})
    return base


def _evaluate(*rows, studies=None, cores=2, regression=None, orders=None):
    frame = pd.DataFrame(list(rows), columns=list(C.COLUMNS))
    studies = {"hand": _study()} if studies is None else studies
    return C.evaluate(frame, studies, cores=cores, regression=regression, orders=orders)


def test_ratio_claim_confirmed_refuted_inconclusive():
    s, d = _evaluate(
        _claim(claim_id="ok", configuration="a", clients="1", low="0.8", high="0.9"),       # 0.85
        _claim(claim_id="bad", configuration="b", clients="1", low="0.8", high="0.9"),      # 0.50
        _claim(claim_id="both", configuration="a", low="0.8", high="0.9"),                  # 0.85 and 0.833
        _claim(claim_id="mixed", configuration="a;b", clients="2", low="0.8", high="0.9"),  # 0.833 and 0.5
    )
    v = dict(zip(s["claim_id"], s["verdict"]))
    assert v == {"ok": C.CONFIRMED, "bad": C.REFUTED, "both": C.CONFIRMED, "mixed": C.REFUTED}
    ok = s.set_index("claim_id").loc["ok"]
    assert ok["value"] == pytest.approx(0.85) and ok["ours"] == "0.850 [0.850, 0.850]"
    assert ok["measured_at"] == "a/none @ 1 clients"
    assert len(d[d["claim_id"] == "both"]) == 2 and len(d[d["claim_id"] == "mixed"]) == 2
    assert s.set_index("claim_id").loc["mixed", "measured_at"] == "b/none @ 2 clients"  # the refuting case


def test_ratio_against_another_configuration_and_other_metrics():
    s, _ = _evaluate(
        _claim(claim_id="vs_a", configuration="b", reference="a", clients="1", low="0.55", high="0.6"),  # 0.588
        _claim(claim_id="loss", metric="log_loss", configuration="b", clients="1", low="0.2", high="0.3"),
        _claim(claim_id="cpu", metric="logger_cpu_share", configuration="b", clients="1", low="0.2", high="0.3"),
        _claim(claim_id="tps", metric="tps", configuration="none", clients="2", low="1000", high="1500"),
    )
    v = dict(zip(s["claim_id"], s["verdict"]))
    assert v == {"vs_a": C.CONFIRMED, "loss": C.CONFIRMED, "cpu": C.CONFIRMED, "tps": C.REFUTED}


def test_ratio_of_any_run_column():
    s, _ = _evaluate(
        _claim(claim_id="stall", metric="ratio_of:log_bytes_per_s", configuration="b", reference="a", clients="1",
               low="0.9", high="1.1"),
        _claim(claim_id="nocol", metric="ratio_of:tracer_stall_ms", configuration="b", reference="a", low="1"),
    )
    r = s.set_index("claim_id")
    assert r.loc["stall", "verdict"] == C.CONFIRMED and r.loc["stall", "measured_at"] == "b/a @ 1 clients"
    assert r.loc["nocol", "verdict"] == C.NOT_MEASURED and "tracer_stall_ms" in r.loc["nocol", "why"]


def test_fastest_rule():
    s, d = _evaluate(
        _claim(claim_id="f1", rule="fastest", metric="tps", configuration="a", reference="a;b", clients="1"),
        _claim(claim_id="f2", rule="fastest", metric="tps", configuration="b", reference="a;b;none", clients="1"),
    )
    v = dict(zip(s["claim_id"], s["verdict"]))
    assert v == {"f1": C.CONFIRMED, "f2": C.REFUTED}
    f2 = s.set_index("claim_id").loc["f2"]
    assert f2["value"] == pytest.approx(0.5)  # against the strongest rival, none
    assert f2["measured_at"] == "b/none @ 1 clients"


def test_not_reproducible_only_for_simultaneous_contention_and_shows_the_closest_number(monkeypatch):
    monkeypatch.setitem(C.claim_rules.RULES, "many", C.claim_rules.ClaimRule(concurrency=C.claim_rules.SIMULTANEOUS))
    monkeypatch.setitem(C.claim_rules.RULES, "nostudy",
                        C.claim_rules.ClaimRule(concurrency=C.claim_rules.SIMULTANEOUS))
    s, _ = _evaluate(
        _claim(claim_id="many", configuration="a", clients="56", low="0.8", high="0.9"),
        _claim(claim_id="nostudy", study="nowhere", configuration="a", clients="56", low="0.8", high="0.9"),
    )
    r = s.set_index("claim_id")
    assert r.loc["many", "verdict"] == C.NOT_REPRODUCIBLE
    assert "56 simultaneously runnable" in r.loc["many", "why"] and "2 cores" in r.loc["many", "why"]
    assert r.loc["many", "ours"] == "0.833 [0.833, 0.833] at 2 clients (closest here)"
    assert r.loc["nostudy", "verdict"] == C.NOT_REPRODUCIBLE and r.loc["nostudy", "ours"] == "—"
    # more cores: the same claim becomes measurable (and here: not measured, no 56-client runs)
    s4, _ = _evaluate(_claim(claim_id="many", configuration="a", clients="56", low="0.8", high="0.9"), cores=64)
    assert s4["verdict"].iloc[0] == C.NOT_MEASURED


def test_clients_scale_by_clients_per_core():
    """Post 004: 32 clients on 8 cores = 4 per core = 8 clients on 2 cores; here 1 client on 2 cores."""
    assert C.claim_rules.post_cores("004") == 8 and C.claim_rules.post_cores("001; 002") == 4
    conc = C.concurrency_here((32,), C.claim_rules.ClaimRule(), 8, 2)
    assert conc.here == (8,) and not conc.infeasible and "4.0 per core = 8 clients here" in conc.how
    # the hand study ran 1 and 2 clients: post 004's 8 clients on 8 cores map to 2 here
    s, d = _evaluate(_claim(claim_id="p4", post="004", configuration="a", clients="8", low="0.8", high="0.9"))
    assert s["verdict"].iloc[0] == C.CONFIRMED and list(d["clients"]) == [2]
    assert "8 clients on 8 cores" in s["why"].iloc[0]
    # more clients per core than the rule allows: not reproducible, by the per-core count, not the absolute one
    s, _ = _evaluate(_claim(claim_id="p4", post="004", configuration="a", clients="64", low="0.8", high="0.9"))
    assert s["verdict"].iloc[0] == C.NOT_REPRODUCIBLE and "more than 4 per core" in s["why"].iloc[0]
    # a post below its saturation is judged at one client per core here
    conc = C.concurrency_here((28,), C.claim_rules.ClaimRule(here_clients="cores"), None, 2)
    assert conc.here == (2,)


def test_post_001_levels_map_per_core_to_study_04s_levels():
    """Post 001's 1 / 20 / 100 connections on 4 cores are 1, 10 and 50 on 2 cores: the levels study 04 runs."""
    from logbench.studies import mysql_slowlog

    rule = C.claim_rules.rule_for("001-cpu-all")
    conc = C.concurrency_here(C._int_list(rule.clients), rule, C.claim_rules.post_cores("001; 002"), 2)
    assert conc.here == (1, 10, 50) and not conc.infeasible and "25 per core = 50 clients here" in conc.how
    assert tuple(mysql_slowlog.post_levels(2).values()) == conc.here
    assert tuple(mysql_slowlog.PROFILES["standard"]["clients"]) == conc.here
    # without the rule's own limit, 50 clients on 2 cores exceeds the default per-core limit
    assert C.concurrency_here((100,), C.claim_rules.ClaimRule(), 4, 2).infeasible == (100,)


def test_every_rules_own_study_is_a_committed_run():
    """A rule that moves a claim to another run (04's resolution run, 02's post-000 profile ...) names a stem the
    workflow's committed target makes; a misspelt one would leave its claim 'not measured' for good."""
    from logbench import jobs

    stems = {r.stem for r in jobs.committed_runs()}
    moved = {k: r.study for k, r in C.claim_rules.RULES.items() if r.study}
    assert moved and not {k: s for k, s in moved.items() if s not in stems}
    assert moved["001-cpu-all"] == "mysql_slowlog_resolution"
    assert moved["001-cpu-1s"] == "mysql_slowlog_resolution_1s"  # long_query_time = 1 for the whole load
    assert moved["001-devnull"] == "mysql_slowlog_resolution_devnull"  # /dev/null named at each load's start


def test_a_configuration_mismatch_gives_no_verdict(monkeypatch):
    """The post ran something our runs did not: the verdict is 'not comparable: <why>', our number still shown."""
    req = C.claim_rules.Requirement("column", "query_mode", "simple", "the post ran simple; ours ran {have}")
    rate = C.claim_rules.Requirement("column", "syslog_rate_limit", True, "rate limiting {have}", default=False)
    monkeypatch.setitem(C.claim_rules.RULES, "proto", C.claim_rules.ClaimRule(requires=(req,)))
    monkeypatch.setitem(C.claim_rules.RULES, "rate", C.claim_rules.ClaimRule(requires=(rate,)))
    study = _study()
    study = C.StudyData(study.name, study.engine, study.baseline, study.runs.assign(query_mode="prepared"),
                        None, study.environment)
    s, d = _evaluate(_claim(claim_id="proto", configuration="a", clients="1", low="0.8", high="0.9"),
                     _claim(claim_id="rate", metric="log_loss", configuration="b", clients="1", low="0.2",
                            high="0.3"),
                     studies={"hand": study})
    r = s.set_index("claim_id")
    assert r.loc["proto", "verdict"] == C.NOT_COMPARABLE
    assert r.loc["proto", "why"] == "not comparable: the post ran simple; ours ran prepared"
    assert r.loc["proto", "ours"] == "0.850 [0.850, 0.850]"
    assert r.loc["rate", "verdict"] == C.NOT_COMPARABLE and "rate limiting False" in r.loc["rate", "why"]
    assert set(d["verdict"]) == {C.NOT_COMPARABLE}
    # matching runs: the verdict stands
    s, _ = _evaluate(_claim(claim_id="proto", configuration="a", clients="1", low="0.8", high="0.9"),
                     studies={"hand": C.StudyData("hand", "postgresql", "none", study.runs.assign(query_mode="simple"),
                                                  None, study.environment)})
    assert s["verdict"].iloc[0] == C.CONFIRMED


def test_a_study_wide_setting_is_read_from_the_environment_record_where_the_runs_lack_it():
    rate = C.claim_rules.RATE_LIMITED
    runs = pd.DataFrame({"configuration": ["syslog"] * 2})
    assert "rate limiting False" in C.requirement_mismatch(rate, runs)  # neither: the default (no rate limit)
    assert "rate limiting False" in C.requirement_mismatch(rate, runs, {"syslog_rate_limit": False})
    assert C.requirement_mismatch(rate, runs, {"syslog_rate_limit": True}) == ""
    # a run column wins over the environment's value
    assert "rate limiting False" in C.requirement_mismatch(rate, runs.assign(syslog_rate_limit=False),
                                                           {"syslog_rate_limit": True})


def test_setting_and_record_size_requirements():
    runs = pd.DataFrame({"settings": ['{"log_statement": "none"}'] * 2, "log_bytes": [2780, 2790],
                         "log_records_received": [10, 10]})
    st = C.claim_rules.Requirement("setting", "log_statement", "all", "log_statement = {have}")
    assert C.requirement_mismatch(st, runs) == "log_statement = none"
    assert C.requirement_mismatch(st, runs.assign(settings='{"log_statement": "all"}')) == ""
    size = C.claim_rules.Requirement("bytes_per_record", "log_bytes", 444.0, "{have} bytes", tolerance=0.25)
    assert C.requirement_mismatch(size, runs) == "278 bytes"
    assert C.requirement_mismatch(size, runs.assign(log_bytes=4400)) == ""
    tps = C.claim_rules.Requirement("tps", "tps", 160.0, "{have} tps", tolerance=0.5)
    assert C.requirement_mismatch(tps, runs.assign(tps=[3000.0, 3100.0])) == "3050 tps"
    assert C.requirement_mismatch(tps, runs.assign(tps=[150.0, 170.0])) == ""
    machine = C.claim_rules.Requirement("machine", "", None, "about the post's own hardware")
    assert C.requirement_mismatch(machine, runs) == "about the post's own hardware"


def test_a_pace_requirement_compares_the_io_regime_with_the_cpu_regime_at_the_lowest_level():
    """001-io-all: the io runs' tps over the cpu runs' of the same configuration, clients and test, at 1 client."""
    pace = C.claim_rules.POST_001_IO_PACE
    assert pace.want == pytest.approx(225 / 9607) and pace in C.claim_rules.rule_for("001-io-all").requires
    whole = pd.DataFrame({"regime": ["cpu"] * 4 + ["io"] * 4, "test": "oltp_read_write",
                          "configuration": ["slow_all", "slow_all", "slow_1s", "slow_1s"] * 2,
                          "clients": [1, 10] * 4, "tps": [900.0, 1200.0, 1000.0, 1300.0, 20.0, 30.0, 25.0, 30.0]})
    io = whole[whole["regime"] == "io"]
    # 20 / 900 and 25 / 1000: median 0.0236, inside 1/43 x (1 ± 0.5); the 10-client level is not the pace's
    assert C.requirement_mismatch(pace, io, whole=whole) == ""
    unpaced = whole.assign(tps=whole["tps"].where(whole["regime"] == "cpu", 300.0))
    why = C.requirement_mismatch(pace, unpaced[unpaced["regime"] == "io"], whole=unpaced)
    assert "1/43" in why and "1/3.1" in why and "at 1 client" in why
    # no cpu runs of the same test: nothing to set the pace against, so no verdict
    other = whole.assign(test=whole["test"].where(whole["regime"] == "io", "oltp_point_select"))
    assert "no regime=cpu runs at 1 clients" in C.requirement_mismatch(pace, io, whole=other)
    # runs that were not IO-bound by their own counters (or that did not record it) get no verdict either
    counters = C.claim_rules.IO_BOUND_BY_COUNTERS
    assert C.requirement_mismatch(counters, io.assign(measured_regime="io_bound")) == ""
    assert "cached / io_bound" in C.requirement_mismatch(counters, io.assign(measured_regime=["io_bound", "cached"] * 2))
    assert "not recorded" in C.requirement_mismatch(counters, io)


def test_every_rule_names_a_claim_of_the_file_and_every_requirement_kind_is_known():
    ids = set(C.load()["claim_id"])
    assert set(C.claim_rules.RULES) <= ids
    for cid, rule in C.claim_rules.RULES.items():
        assert rule.concurrency in C.claim_rules.CONCURRENCY, cid
        for req in rule.requires:
            assert req.kind in C.REQUIREMENT_KINDS, cid


def test_difference_rule_refutes_only_when_the_ci_excludes_the_claim():
    """002-flush-disabled: a shorter stall; judged on the difference, not a ratio to a near-zero stall."""
    rule = C.claim_rules.rule_for("002-flush-disabled")
    assert rule.metric == "difference_of:tracer_stall_ms" and rule.high == 0.0
    e = C.difference_ci([3.0, 4.0, 5.0], [1.0, 2.0, 3.0])
    assert e.value == pytest.approx(2.0) and e.low < 2.0 < e.high
    assert C.in_range_verdict(C.difference_ci([3.0, 4.0, 5.0], [1.0, 2.0, 3.0]), -math.inf, 0.0) == C.INCONCLUSIVE
    assert C.in_range_verdict(C.difference_ci([9.0, 10.0, 11.0], [1.0, 2.0, 3.0]), -math.inf, 0.0) == C.REFUTED
    # a near-zero reference no longer inflates the effect: 0.2 ms against 0.1 ms is a difference of 0.1, not 2×
    small = C.difference_ci([0.19, 0.2, 0.21], [0.09, 0.1, 0.11])
    assert small.value == pytest.approx(0.1)


def test_contention_claim_waits_for_its_own_study():
    s, _ = _evaluate(_claim(claim_id="003-contention", post="003", metric="regression:records_per_tx:extra_clients",
                            study="pg_destinations", low="0"))
    assert s["verdict"].iloc[0] == C.NOT_MEASURED and "pg_audit_timing" in s["why"].iloc[0]
    assert s["study"].iloc[0] == "pg_audit_timing"


def test_a_rule_can_point_a_claim_at_our_new_configuration(monkeypatch):
    """Our side of a comparison changes in code, not in the raw file: the rule names the configuration."""
    monkeypatch.setitem(C.claim_rules.RULES, "moved", C.claim_rules.ClaimRule(configuration="a"))
    s, d = _evaluate(_claim(claim_id="moved", configuration="b", clients="1", low="0.8", high="0.9"))
    assert s["verdict"].iloc[0] == C.CONFIRMED and list(d["configuration"]) == ["a"]


def test_aa_rows_are_never_a_claims_configuration():
    assert C.is_aa("none_again") and not C.is_aa("none")


def test_not_measured_reasons():
    s, _ = _evaluate(
        _claim(claim_id="nostudy", study="mysql_slowlog", configuration="x"),
        _claim(claim_id="nothing", study="", metric="tps"),
        _claim(claim_id="config", configuration="zzz"),
        _claim(claim_id="clients", configuration="a", clients="4"),
        _claim(claim_id="io", configuration="a", regime="io_bound", low="0", high="2"),
    )
    r = s.set_index("claim_id")
    assert (r["verdict"] == C.NOT_MEASURED).all()
    assert "mysql_slowlog_runs.csv" in r.loc["nostudy", "why"]
    assert "no study" in r.loc["nothing", "why"]
    assert "zzz" in r.loc["config", "why"]
    assert "did not run 4 clients" in r.loc["clients", "why"]
    assert "io-bound" in r.loc["io", "why"] and "cached" in r.loc["io", "why"]


def test_regime_from_database_size_and_ram():
    assert C.regime(_study(scale=10, memory=8e9))[0] == "cached"
    assert C.regime(_study(scale=2000, memory=8e9))[0] == "io_bound"  # 30 GB > 8 GB
    s, _ = _evaluate(_claim(configuration="a", clients="1", regime="io_bound", low="0.8", high="0.9"),
                     studies={"hand": _study(scale=2000, memory=8e9)})
    assert s["verdict"].iloc[0] == C.CONFIRMED


def test_environment_and_regression_metrics():
    reg = pd.DataFrame([{"engine": "postgresql", "env_id": "e1", "model": "main", "term": "lines_file",
                         "estimate": 0.4, "ci_low": 0.1, "ci_high": 0.7, "n": 40}])
    s, _ = _evaluate(
        _claim(claim_id="timer", metric="env:timer_loop_ns", low="10", high="100"),
        _claim(claim_id="nokey", metric="env:missing_key", low="10", high="100"),
        _claim(claim_id="costs", metric="regression:lines_file", low="0"),
        regression=reg,
    )
    r = s.set_index("claim_id")
    assert r.loc["timer", "verdict"] == C.CONFIRMED and r.loc["timer", "ours"] == "40.0"
    assert r.loc["nokey", "verdict"] == C.NOT_MEASURED
    assert r.loc["costs", "verdict"] == C.CONFIRMED and r.loc["costs", "ours"] == "0.400 [0.100, 0.700]"
    s2, _ = _evaluate(_claim(claim_id="costs", metric="regression:lines_file", low="0"))
    assert s2["verdict"].iloc[0] == C.NOT_MEASURED  # no regression yet
    # two environments' fits are never merged into one number
    two = pd.concat([reg, reg.assign(env_id="e2", estimate=9.0)], ignore_index=True)
    s3, _ = _evaluate(_claim(claim_id="costs", metric="regression:lines_file", low="0"), regression=two)
    assert s3["verdict"].iloc[0] == C.NOT_MEASURED


def test_no_verdict_at_a_level_whose_aa_control_excludes_1():
    """The baseline against itself at 1 client is 0.9 in every repeat (CI [0.9, 0.9]): a ratio to that baseline
    proves nothing there, whatever it is; at 2 clients the A/A is 1 and the verdict stands."""
    base = _study()
    aa = base.runs[base.runs["configuration"] == "none"].assign(configuration="none_again")
    aa.loc[aa["clients"] == 1, "tps"] = 900.0
    study = C.StudyData("hand", "postgresql", "none", pd.concat([base.runs, aa], ignore_index=True), None,
                        base.environment)
    s, d = _evaluate(_claim(claim_id="one", configuration="a", clients="1", low="0.8", high="0.9"),
                     _claim(claim_id="two", configuration="a", clients="2", low="0.8", high="0.9"),
                     studies={"hand": study}, cores=4)
    r = s.set_index("claim_id")
    assert r.loc["one", "verdict"] == C.INCONCLUSIVE
    assert "A/A control at 1 clients, 0.900 [0.900, 0.900], excludes 1" in r.loc["one", "why"]
    assert r.loc["two", "verdict"] == C.CONFIRMED and "A/A" not in r.loc["two", "why"]


def test_no_verdict_where_a_cheaper_configuration_kept_less_throughput_than_a_dearer_one():
    """b does strictly less work than a (a physical order), yet at 1 client kept 0.50 of the baseline where a kept
    0.85: the anomaly screen's inversion. A claim judged on b there is inconclusive, whatever b's interval says;
    on a (the dearer one) the verdict stands, and without the order nothing changes."""
    order = {"hand": (("b", "a"),)}
    s, _ = _evaluate(_claim(claim_id="cheap", configuration="b", clients="1", low="0.8", high="0.9"),
                     _claim(claim_id="dear", configuration="a", clients="1", low="0.8", high="0.9"), orders=order)
    r = s.set_index("claim_id")
    assert r.loc["cheap", "verdict"] == C.INCONCLUSIVE and "an inversion" in r.loc["cheap", "why"]
    assert r.loc["dear", "verdict"] == C.CONFIRMED
    s2, _ = _evaluate(_claim(claim_id="cheap", configuration="b", clients="1", low="0.8", high="0.9"))
    assert s2["verdict"].iloc[0] == C.REFUTED


def test_an_environment_value_measured_repeatedly_gives_a_mean_with_its_ci():
    env = {"timer_loop_ns": 31.07, "clock": {"loops": [{"loop_ns": 32.0, "repeat": 0}, {"loop_ns": 33.0, "repeat": 1},
                                                      {"loop_ns": 31.0, "repeat": 2}]}}
    e = C.environment_estimate(env, "clock.loops.loop_ns")
    assert e.n == 3 and e.value == pytest.approx(32.0) and e.low < 32.0 < e.high
    assert C.environment_estimate(env, "timer_loop_ns").n == 1
    assert C.environment_estimate(env, "clock.nothing") is None and C.environment_estimate(env, "x.y") is None
    s, _ = _evaluate(_claim(claim_id="one", metric="env:timer_loop_ns", low="10", high="100"))
    assert s["why"].iloc[0].startswith("one measurement, no CI")


def test_the_wal_import_claim_is_not_judged_at_another_scale():
    rule = C.claim_rules.rule_for("004-wal-import")
    runs = pd.DataFrame({"scale": [20, 20]})
    assert "scale 20 here, the post's 100" in C.requirement_mismatch(rule.requires[0], runs)
    assert C.requirement_mismatch(rule.requires[0], runs.assign(scale=100)) == ""


# --- the claims file ----------------------------------------------------------------------------------------


def test_claims_file_loads_and_is_valid():
    claims = C.load()
    assert len(claims) >= 25
    assert claims["claim_id"].is_unique
    assert set(claims["post"].str[:3]) == {"000", "001", "002", "003", "004"}
    assert (claims["post"] == "001; 002").any()  # the ebook 002 reprints post 001


def test_bad_claims_file_is_refused(tmp_path):
    bad = pd.DataFrame([_claim(claim_id="a", rule="nearly"), _claim(claim_id="a", metric="vibes", low="2", high="1")])
    p = tmp_path / "claims.csv"
    bad.to_csv(p, index=False)
    with pytest.raises(ValueError) as e:
        C.load(p)
    msg = str(e.value)
    assert "duplicate claim_id" in msg and "nearly" in msg and "vibes" in msg and "low 2.0 > high 1.0" in msg


def _reference_values():
    try:
        from logbench.analyze import reference
        return reference.load_values()
    except Exception as exc:  # noqa: BLE001 — the reference data may not exist yet
        pytest.skip(f"reference data not available: {exc}")


def test_published_ids_exist_and_the_claimed_ranges_hold_the_posts_own_numbers():
    """The claims file is faithful: every id resolves, and each ratio the post published lies in its claimed range
    (a 'fastest' claim: above 1)."""
    values = _reference_values()
    claims = C.load()
    known = set(values["id"])
    for _, c in claims.iterrows():
        for token in C._names(c["published_ids"]):
            for i in token.split("/"):
                assert i in known, (c["claim_id"], i)
        if c["metric"] not in ("ratio", "tps") or not c["published_ids"]:
            continue
        low, high = C._bound(c["low"], -math.inf), C._bound(c["high"], math.inf)
        for p in C.published_parts(c["published_ids"], values):
            if p["kind"] != "ratio":
                continue
            if c["rule"] == "fastest":
                assert p["value"] > 1, (c["claim_id"], p)
            elif c["claim_id"] != "003-contention":
                assert low <= p["value"] <= high, (c["claim_id"], p)


def test_published_text_from_reference():
    values = _reference_values()
    claims = C.with_published(C.load(), values)
    r = claims.set_index("claim_id")
    assert r.loc["001-cpu-all", "published"].startswith("0.88 (1); 0.80 (20); 0.94 (100)")
    assert r.loc["003-56-duration", "published"] == "0.51 (56)"
    assert (r["published_source"] == "reference").sum() == (r["published_ids"] != "").sum()


def test_post_000s_io_bound_claims_read_study_02s_io_bound_files():
    """The four 000-io-* claims are judged on the io_bound profile's processed stem, where each run's regime is
    recorded from its own counters (runs that were not IO-bound are left out by the regime filter)."""
    from logbench.studies import common, pg_destinations

    stem = common.stem(pg_destinations.NAME, "io_bound")
    assert "io_bound" in pg_destinations.PROFILES
    for cid in ("000-io-fastest", "000-io-free", "000-io-syslog-loss", "000-io-rate"):
        assert C.claim_rules.rule_for(cid).study == stem
    runs = pd.DataFrame({"regime": ["io_bound", "cached", "io_bound"], "configuration": ["a", "a", "a"],
                         "clients": [1, 1, 1]})
    study = C.StudyData(stem, "postgresql", "none", runs, None, {})
    sub, _ = C.restrict(study, "", "io_bound")
    assert len(sub.runs) == 2


def test_post_000s_cached_claims_read_the_run_made_as_the_post_ran():
    """The 000-cached-* claims are judged on study 02's post000 profile: the post's five configurations at its 1 / 4
    / 8 workers on 4 cores mapped per core, rsyslog rate-limited as the post's was (an explicit False still wins)."""
    from logbench.studies import common, pg_destinations

    stem = common.stem(pg_destinations.NAME, "post000")
    for cid in ("000-cached-cost", "000-cached-similar", "000-cached-syslog-kept", "000-cached-remote-1",
                "000-cached-baseline-4"):
        assert C.claim_rules.rule_for(cid).study == stem
    s = pg_destinations.define(profile="post000")
    assert s.syslog_rate_limit is True and s.query_mode == "prepared"
    assert tuple(s.clients) == C.concurrency_here((1, 4, 8), C.claim_rules.ClaimRule(), 4, 2).here
    assert [c.name for c in s.configurations] == ["none", "stderr", "csvlog", "syslog", "remote_syslog_udp",
                                                  "stderr_sample_1pct", "stderr_sample_10pct"]
    assert pg_destinations.define(profile="post000", syslog_rate_limit=False).syslog_rate_limit is False
    assert pg_destinations.define(profile="standard").syslog_rate_limit is False
    # the post's ratios sit at the same clients per core in the notebook's comparison (1 worker on 4 cores: 1 here)
    import os

    pub = pg_destinations.published_for(s)
    assert sorted(set(pub["clients"])) == sorted(C.concurrency_here((1, 4, 8), C.claim_rules.ClaimRule(), 4,
                                                                    os.cpu_count() or 1).here)
    assert {"post000": stem}.items() <= {p: common.stem(pg_destinations.NAME, p) for p in pg_destinations.PROFILE_POSTS}.items()


def test_the_comment_on_production_rates_is_judged_on_a_sampled_arm_with_no_record_due():
    """000-comment-typical: 1 % of the statements sampled to the file (log_min_duration_sample = 0), against no
    logging, in the post000 run; a random subset has no due count, so no loss is computed for it."""
    from logbench.studies import common, pg_destinations

    rule = C.claim_rules.rule_for("000-comment-typical")
    assert (rule.study, rule.configuration, rule.reference) == (common.stem(pg_destinations.NAME, "post000"),
                                                                "stderr_sample_1pct", "none")
    s = pg_destinations.define(profile="post000")
    arm = next(c for c in s.configurations if c.name == "stderr_sample_1pct")
    merged = s.base.merged(arm.settings)
    assert (merged.get("log_min_duration_sample"), merged.get("log_statement_sample_rate")) == ("0", "0.01")
    assert merged.get("log_min_duration_statement") == "-1" and arm.destinations == ("stderr",)
    assert [r.kind for r in arm.records] == ["duration+statement (sampled)"]  # counted where it lands
    assert arm.expected_records(transactions=1000, connections=2) == 0
    # the standard run keeps every destination at full rate, without the sampled arms
    assert not {c.name for c in pg_destinations.define(profile="standard").configurations} & set(pg_destinations.spec.SAMPLED)


def test_logging_cost_per_transaction_grows_or_not_in_machine_time_against_the_lowest_level():
    """003-contention's metric by hand: 2 cores; at 2 clients 50,000 / 25,000 tps (40 / 80 µs of machine time per
    transaction: logging adds 40 µs), at 8 clients 40,000 / 16,000 (50 / 125 µs: adds 75): a growth of 35 µs.
    The lowest level is the reference, no case of its own."""
    rows = []
    for k, base, logged in ((2, 50_000.0, 25_000.0), (8, 40_000.0, 16_000.0)):
        for b, wobble in enumerate((0.99, 1.0, 1.01)):
            rows += [{"configuration": "none", "clients": k, "repeat": b, "tps": base * wobble},
                     {"configuration": "log_duration", "clients": k, "repeat": b, "tps": logged * wobble}]
    study = C.StudyData("s", "postgresql", "none", pd.DataFrame(rows), None, {"cpu_count": 2})
    per_block = C.logging_us_per_tx(study, "log_duration", 2)
    assert list(per_block.round(6)) == [round(40 / w, 6) for w in (0.99, 1.0, 1.01)]
    e = C.metric(study, C.COST_GROWTH, "log_duration", 8, "none")
    assert e.value == pytest.approx(35.0, rel=1e-3) and e.low < 35 < e.high and e.n == 3
    assert math.isnan(C.metric(study, C.COST_GROWTH, "log_duration", 2, "none").value)
    s, d = _evaluate(_claim(claim_id="grows", metric=C.COST_GROWTH, configuration="log_duration", reference="none",
                            low="0"), studies={"hand": study})
    assert s.iloc[0]["verdict"] == C.CONFIRMED and s.iloc[0]["measured_at"].endswith("@ 8 clients")


def test_post_004s_syslog_cpu_is_a_share_of_a_core_at_the_posts_line_rate():
    """85 % of a core at 91,325 tps (reference 004-009 and 004-011) is judged as the share it is, and only where
    some cell of the study reaches the post's line rate: a share is the rate times the cost per line (issue 42: it
    was converted to µs per line, a cost assumed constant across rates and processors)."""
    values = pd.read_csv(C.paths.RAW / "reference" / "values_004.csv").set_index("id")
    assert float(values.loc["004-011", "value"]) == C.claim_rules.POST_004_SYSLOG_TPS
    share = float(values.loc["004-009", "value"]) / 100
    claims = C.load().set_index("claim_id")
    assert (float(claims.loc["004-syslog-cpu", "low"]), float(claims.loc["004-syslog-cpu", "high"])) == \
        C.claim_rules.POST_004_SYSLOG_SHARE
    lo, hi = C.claim_rules.POST_004_SYSLOG_SHARE
    assert lo < share < hi
    rule = C.claim_rules.rule_for("004-syslog-cpu")
    assert rule.metric == "" and rule.low is None and rule.high is None  # the claims file's logger_cpu_share
    assert C.claim_rules.POST_004_SYSLOG_RATE in rule.requires
    req = C.claim_rules.POST_004_SYSLOG_RATE
    slow = pd.DataFrame({"configuration": ["none", "none", "syslog"], "clients": [8, 8, 8],
                         "tps": [30_000.0, 32_000.0, 9_000.0]})
    assert "31000 tps" in C.requirement_mismatch(req, slow[slow["configuration"] == "syslog"], {}, slow)
    fast = slow.assign(tps=[90_000.0, 92_000.0, 80_000.0])  # the baseline reaches the rate: judged
    assert C.requirement_mismatch(req, fast[fast["configuration"] == "syslog"], {}, fast) == ""


def test_a_switchback_studys_ratio_is_the_switchback_estimators_at_the_asked_confidence():
    """Study 04's committed switchback run, one cell: the claims' ratio at 95 % is the summary's (the
    switchback estimator), at 90 % inside it; Fieller on windows taken as runs would be another interval.
    Several cells at once are refused: their loads are not one population."""
    from logbench.publish import report
    from logbench.base import stats as lstats

    studies, _ = report.load_studies()
    sb = studies.get("mysql_slowlog_switchback")
    if sb is None:
        pytest.skip("no committed switchback run of study 04 in data/processed")
    with pytest.raises(ValueError, match="several cells"):
        C.switchback_ratio(sb, "slow_all", 1)
    runs = sb.runs[(sb.runs["regime"] == "cpu") & (sb.runs["test"] == "oltp_point_select")]
    one = C.StudyData(name=sb.name, engine=sb.engine, baseline=sb.baseline, runs=runs)
    s = sb.summary[(sb.summary["test"] == "oltp_point_select") & (sb.summary["configuration"] == "slow_all")
                   & (sb.summary["clients"] == 1)].iloc[0]
    e95 = C.metric(one, "ratio", "slow_all", 1)
    # the summary file holds 6 significant digits (float_format %.6g)
    assert (e95.value, e95.low, e95.high) == pytest.approx((s["ratio"], s["ratio_ci_low"], s["ratio_ci_high"]),
                                                           rel=1e-5)
    e90 = C.metric(one, "ratio", "slow_all", 1, confidence=0.90)
    assert e95.low < e90.low < e90.value < e90.high < e95.high
    cell = one.runs[one.runs["clients"] == 1]
    fieller = lstats.ratio_ci(cell[cell.configuration == "slow_all"]["tps"], cell[cell.configuration == "off"]["tps"])
    assert (fieller.low, fieller.high) != pytest.approx((e95.low, e95.high))


# --- issue 42: agreement reads as agreement; the weak refutations re-judged on matching configurations ---------


def _noisy_study(ratio: float, spread: float) -> C.StudyData:
    """Baseline 1000 tps, the arm at ``ratio`` of it, each block's arm off by ±``spread`` (a known, wide CI)."""
    rows = []
    for rep, wobble in enumerate((1 - spread, 1.0, 1 + spread)):
        rows += [{"configuration": "none", "clients": 1, "repeat": rep, "tps": 1000.0},
                 {"configuration": "a", "clients": 1, "repeat": rep, "tps": 1000.0 * ratio * wobble}]
    return C.StudyData("hand", "postgresql", "none", pd.DataFrame(rows), None, {"cpu_count": 2})


def test_a_reproduction_whose_interval_is_wider_than_the_margin_reads_consistent_not_inconclusive():
    """The point inside the claimed range, the interval wider than it: 'consistent, not resolved', with how narrow an
    interval would confirm it; the same width around a point outside the range stays inconclusive; a narrow one
    inside confirms."""
    claim = _claim(claim_id="near", configuration="a", clients="1", low="0.70", high="0.76")
    wide_in = _evaluate(claim, studies={"hand": _noisy_study(0.737, 0.05)})[0].iloc[0]
    assert wide_in["verdict"] == C.CONSISTENT
    assert "would confirm it" in wide_in["why"] and "point estimate lies inside" in wide_in["why"]
    assert wide_in["ci_low"] < 0.70 and wide_in["ci_high"] > 0.76  # wider than the margin on both sides
    wide_out = _evaluate(claim, studies={"hand": _noisy_study(0.79, 0.05)})[0].iloc[0]
    assert wide_out["verdict"] == C.INCONCLUSIVE and wide_out["ci_low"] < 0.76
    narrow = _evaluate(claim, studies={"hand": _noisy_study(0.73, 0.001)})[0].iloc[0]
    assert narrow["verdict"] == C.CONFIRMED
    assert C.CONSISTENT in C.VERDICTS


def test_the_posts_pooled_loss_proxy_weighs_each_level_by_its_statement_time():
    """Hand-computed: levels 1 and 2; block 0: (0.5 × 100 + 0 × 300) / 400 = 0.125; block 1: (0.3 × 100 + 0.1 × 300)
    / 400 = 0.15; block 2 lacks level 2 and is left out: mean 0.1375 over n = 2 blocks."""
    cells = ((0, 1, 0.5, 100, 1.0), (0, 2, 0.0, 150, 2.0), (1, 1, 0.3, 100, 1.0), (1, 2, 0.1, 150, 2.0),
             (2, 1, 0.9, 100, 1.0))
    rows = [{"configuration": "syslog", "repeat": b, "clients": k, "log_loss": loss, "transactions": tx,
             "latency_mean_ms": lat} for b, k, loss, tx, lat in cells]
    study = C.StudyData("s", "postgresql", "none", pd.DataFrame(rows), None, {})
    e = C.metric(study, "logged_time_loss", "syslog", "1/2")
    assert e.value == pytest.approx(0.1375) and e.n == 2
    s, d = _evaluate(_claim(claim_id="loss", metric="logged_time_loss", configuration="syslog", low="0.05",
                            high="0.2"), studies={"hand": study})
    assert s.iloc[0]["measured_at"] == "syslog @ 1/2 clients" and len(d) == 1  # one case, the levels together


def test_below_saturation_leaves_a_core_for_the_logger_and_shows_the_nearest_level_where_it_was_not_run(monkeypatch):
    rule = C.claim_rules.ClaimRule(here_clients=C.claim_rules.BELOW_SATURATION)
    assert C.concurrency_here((28,), rule, None, 2).here == (1,)
    assert C.concurrency_here((28,), rule, None, 8).here == (7,)
    monkeypatch.setitem(C.claim_rules.RULES, "sat", rule)
    s, _ = _evaluate(_claim(claim_id="sat", configuration="a", clients="28", low="0.8", high="0.9"), cores=4)
    r = s.iloc[0]
    assert r["verdict"] == C.NOT_MEASURED and "did not run 3 clients" in r["why"]
    assert r["ours"] == "0.833 [0.833, 0.833] at 2 clients (nearest level run, not judged)"


def test_post_000s_byte_rate_is_withheld_at_another_record_size_as_post_001s_is():
    """000-io-rate and 001-cpu-rate: a byte rate compares only at a similar bytes per record (issue 42)."""
    for cid in ("000-io-rate", "001-cpu-rate"):
        assert any(r.kind == "bytes_per_record" for r in C.claim_rules.rule_for(cid).requires), cid
    values = pd.read_csv(C.paths.RAW / "reference" / "values_000.csv").set_index("id")
    assert float(values.loc["000-036", "value"]) * 1000 == C.claim_rules.POST_000_IO_BYTES_PER_S  # "~ 200kB"
    req = C.claim_rules.POST_000_IO_RECORD_BYTES
    assert req.want == pytest.approx(C.claim_rules.POST_000_IO_BYTES_PER_S / C.claim_rules.POST_000_IO_TPS.want)
    runs = pd.DataFrame({"log_bytes": [2.0e6], "log_records_received": [1e4]})  # 200 bytes a record
    assert "200 bytes" in C.requirement_mismatch(req, runs)
    assert C.requirement_mismatch(req, runs.assign(log_bytes=1.25e7)) == ""


# The committed data, judged as 90_findings judges it.
@pytest.fixture(scope="module")
def committed_claims():
    from logbench.publish import findings

    if not (C.paths.PROCESSED / "pg_destinations_post004_runs.csv").exists():
        pytest.skip("no committed data in data/processed")
    studies, _ = findings.load_studies(C.paths.PROCESSED)
    summary, detail = findings.claim_findings(studies, None)
    return studies, summary.set_index("claim_id"), detail


def test_post_004_reproduces_and_reads_so(committed_claims):
    """Post 004's three throughput claims: our point inside each claimed range, our 90 % interval wider than it."""
    studies, s, _ = committed_claims
    claims = C.load().set_index("claim_id")
    for cid in ("004-file", "004-syslog", "004-syslog-vs-file"):
        r, lo, hi = s.loc[cid], float(claims.loc[cid, "low"]), float(claims.loc[cid, "high"])
        assert lo <= r["value"] <= hi, cid
        expected = C.CONFIRMED if lo <= r["ci_low"] and r["ci_high"] <= hi else C.CONSISTENT
        assert r["verdict"] == expected, (cid, r["why"])


def test_the_28_client_claims_wait_for_a_level_below_saturation(committed_claims):
    studies, s, _ = committed_claims
    study = studies[C.claim_rules.SWITCHBACK_05]
    want = C.concurrency_here((28,), C.claim_rules.rule_for("003-28-small"), None,
                              int(study.environment.get("cpu_count") or 2)).here[0]
    for cid in ("003-28-small", "003-28-both"):
        r = s.loc[cid]
        if want in study.clients:
            assert r["verdict"] != C.NOT_MEASURED, cid
        else:
            assert r["verdict"] == C.NOT_MEASURED and f"did not run {want} clients" in r["why"], cid
            assert "nearest level run, not judged" in r["ours"]


def test_post_004s_syslog_share_is_withheld_where_its_line_rate_cannot_exist(committed_claims):
    studies, s, _ = committed_claims
    runs = studies[C.claim_rules.POST004_RUN].runs
    fastest = float(runs.groupby(["configuration", "clients"])["tps"].median().max())
    r = s.loc["004-syslog-cpu"]
    if fastest < (1 - C.claim_rules.POST_004_SYSLOG_RATE.tolerance) * C.claim_rules.POST_004_SYSLOG_TPS:
        assert r["verdict"] == C.NOT_COMPARABLE and "cannot exist here" in r["why"]
    else:
        assert r["verdict"] != C.NOT_COMPARABLE
    assert r["measured_at"].startswith("syslog @ ")  # our share of a core still shown


def test_the_wal_import_claim_compares_the_position_after_initdb_and_the_import(committed_claims):
    studies, s, _ = committed_claims
    if "pg_wal_level" not in studies:
        pytest.skip("no committed pg_wal_level run")
    runs = studies["pg_wal_level"].runs
    pos = runs.groupby("configuration")["wal_position_end"].median()
    r = s.loc["004-wal-import"]
    assert r["value"] == pytest.approx(pos["import/replica"] / pos["import/minimal"], rel=1e-3)
    rule = C.claim_rules.rule_for("004-wal-import")
    assert rule.metric == "ratio_of:wal_position_end"
    lo, hi = rule.low, rule.high
    assert r["verdict"] == C.in_range_verdict(C.Estimate(r["value"], r["ci_low"], r["ci_high"], 5), lo, hi)


def test_post_000s_io_syslog_loss_is_the_pooled_proxy_on_the_rate_limited_runs(committed_claims):
    studies, s, d = committed_claims
    study, _ = C.restrict(studies[C.claim_rules.IO_BOUND_STUDY], "", "io_bound")
    assert study.environment.get("syslog_rate_limit") is True  # the post's configuration, as inferred
    levels = "/".join(str(k) for k in study.clients)
    e = C.metric(study, "logged_time_loss", "syslog", levels)
    q = C.metric(study, "logged_time_loss", "syslog", levels, confidence=C.EQUIVALENCE)
    r = s.loc["000-io-syslog-loss"]
    assert r["value"] == pytest.approx(e.value) and r["measured_at"] == f"syslog @ {levels} clients"
    assert r["verdict"] == C.in_range_verdict(e, 0.05, 0.2, q)
    assert len(d[d["claim_id"] == "000-io-syslog-loss"]) == 1


def test_post_000s_unexplained_baseline_and_its_byte_rate_are_not_comparable(committed_claims):
    _, s, _ = committed_claims
    r = s.loc["000-cached-baseline-4"]
    assert r["verdict"] == C.NOT_COMPARABLE and "could not explain" in r["why"] and r["ours"] != "—"
    r = s.loc["000-io-rate"]
    assert r["verdict"] == C.NOT_COMPARABLE and "bytes per logged select" in r["why"]
