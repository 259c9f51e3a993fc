"""The line-cost regression: synthetic studies with known costs per destination family and environment are
recovered within their CIs; environments are never pooled; records the statements did not cause never enter."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from logbench.analyze import regression

FAMILY_COSTS = {"file": 4.0, "syslog": 30.0, "remote_syslog": 50.0, "table": 0.0, "discarded": 0.0}
TWO_FAMILIES = {"none": (0, 0), "stderr": (2, 120), "csvlog": (2, 260), "syslog": (2, 150),
                "syslog,csvlog": (4, 200)}


def _fit(**kw) -> regression.Fit:
    fits = regression.fit_all(regression.prepare(regression.synthetic_runs(**kw)))
    assert list(fits) == ["postgresql@synthetic"]
    return fits["postgresql@synthetic"]


def _coef(fit: regression.Fit, model: str, term: str) -> pd.Series:
    c = regression.coefficients({fit.key: fit})
    row = c[(c["model"] == model) & (c["term"] == term)]
    assert len(row) == 1, (model, term, c)
    return row.iloc[0]


def test_known_line_and_kb_cost_recovered_within_ci():
    fit = _fit(line_cost_us=4.0, kb_cost_us=1.5, noise_cv=0.01, seed=3)
    line = _coef(fit, "main", "lines_file")
    kb = _coef(fit, "main", "kb_per_tx")
    assert line["ci_low"] <= 4.0 <= line["ci_high"]
    assert kb["ci_low"] <= 1.5 <= kb["ci_high"]
    assert line["unit"] == "µs per line to a file" and kb["unit"] == "µs per logged kB"
    assert line["ci_high"] - line["ci_low"] < 1.0  # informative, not just wide
    assert line["cov_type"] == "HC3"


def test_two_families_in_two_environments_each_recovered_and_never_pooled():
    """File and syslog lines cost differently, and each environment has its own costs: every (environment, family)
    cost lies in its own CI, and no fit mixes the environments."""
    truth = {"env-a": {**FAMILY_COSTS, "file": 4.0, "syslog": 30.0},
             "env-b": {**FAMILY_COSTS, "file": 12.0, "syslog": 80.0}}
    runs = pd.concat([
        regression.synthetic_runs(env_id=env, line_cost_us=costs, configurations=TWO_FAMILIES, kb_cost_us=0.0,
                                  noise_cv=0.01, seed=seed, study="dest",
                                  base_us={1: 70.0, 2: 40.0, 4: 38.0} if env == "env-a" else {1: 120.0, 2: 90, 4: 85})
        for seed, (env, costs) in enumerate(truth.items())], ignore_index=True)
    fits = regression.fit_all(regression.prepare(runs))
    assert sorted(fits) == ["postgresql@env-a", "postgresql@env-b"]
    for key, f in fits.items():
        assert f.data["env_id"].nunique() == 1 and f.env_id == key.split("@")[1]
        assert set(f.families) == {"file", "syslog"}
        for fam in ("file", "syslog"):
            c = _coef(f, "main", f"lines_{fam}")
            assert c["ci_low"] <= truth[f.env_id][fam] <= c["ci_high"], (key, fam, c)
    # the two environments' file costs are told apart: their CIs do not overlap
    a, b = (_coef(fits[k], "main", "lines_file") for k in ("postgresql@env-a", "postgresql@env-b"))
    assert a["ci_high"] < b["ci_low"]
    coefs = regression.coefficients(fits)
    assert set(coefs["env_id"]) == {"env-a", "env-b"} and coefs.groupby("fit")["env_id"].nunique().eq(1).all()


def test_fit_refuses_to_pool_environments():
    runs = pd.concat([regression.synthetic_runs(env_id="a", seed=1), regression.synthetic_runs(env_id="b", seed=2)],
                     ignore_index=True)
    with pytest.raises(ValueError, match="env_id"):
        regression.fit(regression.prepare(runs))


def test_per_clients_slopes_show_a_step_not_a_line():
    """A cost that steps up once the clients saturate the cores is reported per level, not as a trend."""
    runs = []
    for k, cost in ((1, 0.0), (2, 20.0), (4, 20.0)):
        runs.append(regression.synthetic_runs(clients=(k,), line_cost_us=cost, kb_cost_us=0.0, seed=k,
                                              configurations={"none": (0, 0), "stderr": (2, 150), "jsonlog": (2, 400)}))
    fit = regression.fit_all(regression.prepare(pd.concat(runs, ignore_index=True)))["postgresql@synthetic"]
    assert set(fit.models) == {"main", "per_clients", regression.WITHOUT_INFLUENTIAL}
    for k, cost in ((1, 0.0), (2, 20.0), (4, 20.0)):
        c = _coef(fit, "per_clients", f"lines_file @ {k} clients")
        assert c["ci_low"] <= cost <= c["ci_high"] and c["clients"] == k
    assert not any(":extra_clients" in t for t in regression.coefficients({fit.key: fit})["term"])


def test_ci_coverage_over_seeds():
    """The 95 % interval of the per-line cost covers the truth in most synthetic replications."""
    covered = 0
    for seed in range(20):
        line = _coef(_fit(line_cost_us=4.0, kb_cost_us=1.5, noise_cv=0.02, seed=100 + seed, repeats=4),
                     "main", "lines_file")
        covered += line["ci_low"] <= 4.0 <= line["ci_high"]
    assert covered >= 16  # P(X <= 15) < 2 % for X ~ Binomial(20, 0.95)


def test_weights_are_inverse_pooled_group_variance():
    """A concurrency level ten times noisier gets about a hundredth of the weight; the fit still recovers the cost."""
    runs = regression.synthetic_runs(noise_cv=0.005, seed=12, repeats=6)
    noisy = runs["clients"] == 1
    rng = np.random.default_rng(1)
    runs.loc[noisy, "tps"] = 1e6 / (1e6 / runs.loc[noisy, "tps"] * (1 + 0.05 * rng.standard_normal(int(noisy.sum()))))
    d = regression.prepare(runs)
    for _, g in d.groupby("baseline"):
        ss = sum(c["us_per_tx"].var(ddof=1) * (len(c) - 1) for _, c in g.groupby("configuration"))
        df = sum(len(c) - 1 for _, c in g.groupby("configuration"))
        assert g["weight"].iloc[0] == pytest.approx(df / ss)
    w = d.groupby("clients")["weight"].median()
    assert w[1] < w[4] / 20
    line = _coef(regression.fit_all(d)["postgresql@synthetic"], "main", "lines_file")
    assert line["ci_low"] <= 4.0 <= line["ci_high"]


def test_prepare_counts_statement_records_only():
    """Records beyond what the statements caused (tracers, start-up queries) never enter the regressor."""
    runs = regression.synthetic_runs(repeats=2, clients=(1,))
    runs.loc[0, "warmup"] = True
    lossy = runs.index[runs["configuration"] == "stderr"][0]
    runs.loc[lossy, "log_records_received"] = runs.loc[lossy, "log_records_expected"] // 2
    extra = runs.index[runs["configuration"] == "csvlog"][0]
    runs.loc[extra, "log_records_received"] = runs.loc[extra, "log_records_expected"] + 5000  # start-up queries
    d = regression.prepare(runs)
    assert len(d) == len(runs) - 1
    row = d[d["configuration"] == "stderr"].iloc[0]
    assert row["records_per_tx"] == pytest.approx(2.0, rel=1e-3)  # expected, not the half that arrived
    assert d[d["configuration"] == "csvlog"]["records_per_tx"].max() == pytest.approx(2.0, rel=1e-3)
    r0 = runs.loc[lossy]
    assert row["kb_per_tx"] == pytest.approx(r0["log_bytes"] / regression.BYTES_PER_KB / r0["transactions"])
    assert row["us_per_tx"] == pytest.approx(1e6 / r0["tps"])
    both = d[d["configuration"] == "syslog,csvlog"].iloc[0]
    assert both["lines_file"] == pytest.approx(2.0, rel=1e-3) and both["lines_syslog"] == pytest.approx(2.0, rel=1e-3)
    assert set(d["baseline"]) == {"synthetic @ 1"}


def test_tracer_records_are_subtracted():
    runs = regression.synthetic_runs(repeats=2, clients=(4,))
    runs["tracer_sent"] = 2000
    runs["log_records_expected"] = runs["log_records_expected"] + 2000
    d = regression.prepare(runs)
    assert d.groupby("configuration")["records_per_tx"].max()["none"] == 0


def test_the_fit_leaves_out_the_studies_whose_spec_says_why_and_the_version_sweeps():
    from logbench.publish import findings
    from logbench import studies

    declared = {s.name: s.not_line_cost for s in studies.specs() if s.not_line_cost}
    assert findings.NOT_LINE_COST == {**declared, **{stem: findings.NOT_LINE_COST[stem]
                                                     for stem in findings.VERSION_SWEEPS}}
    # what their configurations vary is not what is logged (each spec says what it is)
    assert {"log_rotation", "pg_wal_level", "pg_idle_connections", "pg_audit_timing"} <= set(declared)
    # a study that measures no logging has no runs the fit could take: nothing to leave out
    assert all(s.measures_logging for s in studies.specs() if s.not_line_cost)
    rotation = regression.synthetic_runs(study="log_rotation", configurations={"none": (1, 250), "copy": (1, 250)})
    assert len(regression.prepare(rotation)) and not len(regression.prepare(rotation, tuple(findings.NOT_LINE_COST)))


def test_the_findings_leave_every_version_sweep_of_the_registry_out_of_the_fit():
    from logbench.publish import findings

    assert "pg_destinations_versions" in findings.VERSION_SWEEPS
    for stem in findings.VERSION_SWEEPS:
        sweep = regression.synthetic_runs(study=stem, configurations={"none": (0, 0), "stderr": (2, 150)})
        assert len(regression.prepare(sweep)) and not len(regression.prepare(sweep, tuple(findings.NOT_LINE_COST)))


def test_aa_rows_are_not_logging_configurations():
    runs = regression.synthetic_runs(configurations={"none": (0, 0), "none_again": (0, 0), "stderr": (2, 150),
                                                     "csvlog": (2, 300)})
    d = regression.prepare(runs)
    assert "none_again" not in set(d["configuration"])
    assert regression.is_aa("none_again") and not regression.is_aa("none")


def test_unknown_destination_is_refused_by_name():
    runs = regression.synthetic_runs(configurations={"none": (0, 0), "x": (2, 150)})
    runs.loc[runs["configuration"] == "x", "destinations"] = '["carrier_pigeon"]'
    with pytest.raises(ValueError, match="carrier_pigeon"):
        regression.prepare(runs)


def test_kb_term_dropped_when_bytes_per_line_never_vary():
    fit = _fit(configurations={"none": (0, 0), "a": (2, 150), "b": (4, 150)}, seed=2)
    c = regression.coefficients({fit.key: fit})
    assert "kb_per_tx" not in set(c["term"])
    assert any("kB term dropped" in n for n in fit.notes)
    line = _coef(fit, "main", "lines_file")
    assert line["ci_low"] <= 4.0 + 0.15 * 1.5 <= line["ci_high"]  # the per-kB cost absorbed into the line


def test_hc3_always():
    fit = _fit(noise_cv=0.001, seed=9)
    assert all(m.result.cov_type == "HC3" for m in fit.models.values() if m.ok)
    assert set(regression.diagnostics({fit.key: fit})["cov_type"]) == {"HC3"}


def test_influence_flags_an_outlier_and_refits_without_it():
    runs = regression.synthetic_runs(noise_cv=0.005, seed=4)
    i = runs.index[(runs["configuration"] == "jsonlog") & (runs["clients"] == 4)][0]
    runs.loc[i, "tps"] = runs.loc[i, "tps"] / 1.3
    fit = regression.fit_all(regression.prepare(runs))["postgresql@synthetic"]
    assert len(fit.influential) >= 1
    assert fit.models[regression.WITHOUT_INFLUENTIAL].ok
    clean = _coef(fit, regression.WITHOUT_INFLUENTIAL, "lines_file")
    assert clean["ci_low"] <= 4.0 <= clean["ci_high"]
    diag = regression.diagnostics({fit.key: fit})
    assert int(diag.loc[diag["model"] == "main", "n_influential"].iloc[0]) == len(fit.influential)


def test_engines_are_fitted_separately_and_baseline_only_engines_skipped():
    a = regression.synthetic_runs(engine="postgresql", study="s1", seed=1)
    b = regression.synthetic_runs(engine="mariadb", study="s2", line_cost_us=9.0, seed=2)
    only_base = regression.synthetic_runs(engine="other", study="s3", configurations={"none": (0, 0)}, seed=3)
    fits = regression.fit_all(regression.prepare(pd.concat([a, b, only_base], ignore_index=True)))
    assert sorted(fits) == ["mariadb@synthetic", "postgresql@synthetic"]
    c = _coef(fits["mariadb@synthetic"], "main", "lines_file")
    assert c["ci_low"] <= 9.0 <= c["ci_high"]


def test_typical_record_bytes():
    d = regression.prepare(regression.synthetic_runs(configurations={"none": (0, 0), "a": (2, 100), "b": (2, 300)}))
    assert regression.typical_record_bytes(d) == 200
    assert regression.typical_record_bytes(d[d["configuration"] == "none"]) == 200  # the default
    assert not math.isnan(d["bytes_per_record"].dropna().iloc[0])


def test_groups_whose_log_rate_never_varies_are_left_out():
    logging = regression.synthetic_runs(study="slowlog", seed=8)
    other = regression.synthetic_runs(study="other", configurations={"none": (2, 150), "copy": (2, 150)},
                                      noise_cv=0.2, seed=9)
    fit = regression.fit_all(regression.prepare(pd.concat([logging, other], ignore_index=True)))["postgresql@synthetic"]
    assert set(fit.data["study"]) == {"slowlog"}
    assert any("other (30 runs)" in n for n in fit.notes)
    line = _coef(fit, "main", "lines_file")
    assert line["ci_low"] <= 4.0 <= line["ci_high"]


def test_new_run_columns_are_tolerated_and_the_idle_state_splits_baselines():
    """Processed data gains idle_state, steal_s, ... (contracts item 5): a run held in another CPU idle state has
    its own baseline; unknown columns are ignored."""
    hold = regression.synthetic_runs(seed=21).assign(idle_state="hold", steal_s=0.01, high_steal=False)
    free = regression.synthetic_runs(seed=22, base_us={1: 90.0, 2: 40.0, 4: 30.0}).assign(
        idle_state="free", steal_s=0.02, high_steal=False)
    d = regression.prepare(pd.concat([hold, free], ignore_index=True))
    assert {"synthetic/hold @ 1", "synthetic/free @ 1"} <= set(d["baseline"])
    line = _coef(regression.fit_all(d)["postgresql@synthetic"], "main", "lines_file")
    assert line["ci_low"] <= 4.0 <= line["ci_high"]


def test_typical_line_is_the_line_plus_its_bytes_at_the_kb_cost():
    """A DBA pays for a line of the size the family's records have, not for a line of zero bytes (issue 22): the
    typical line is line + kB × bytes / 1000 at the family's median bytes per record, and its CI covers the known
    cost. Synthetic file-family runs of 120, 260, 480 and 190 bytes (median 225): 4.0 + 1.5 × 0.225 = 4.3375 µs."""
    fit = _fit(line_cost_us=4.0, kb_cost_us=1.5, noise_cv=0.01, seed=3)
    typical = _coef(fit, "main", "typical_file")
    line, kb = _coef(fit, "main", "lines_file"), _coef(fit, "main", "kb_per_tx")
    assert typical["bytes"] == pytest.approx(225.0)
    assert typical["estimate"] == pytest.approx(line["estimate"] + kb["estimate"] * 0.225)
    assert typical["ci_low"] <= 4.0 + 1.5 * 0.225 <= typical["ci_high"]
    assert typical["unit"] == "µs per typical line to a file"
    # the sum's CI is that of a linear combination, not the line's own nor a sum of the two widths
    assert typical["ci_high"] - typical["ci_low"] != pytest.approx(line["ci_high"] - line["ci_low"])
    assert typical["ci_high"] - typical["ci_low"] < (line["ci_high"] - line["ci_low"]) + 0.225 * (
        kb["ci_high"] - kb["ci_low"])


def test_typical_line_without_a_kb_term_is_the_line_coefficient():
    configs = {"none": (0, 0), "stderr": (2, 200), "syslog": (2, 200)}
    fit = _fit(line_cost_us=FAMILY_COSTS, configurations=configs, seed=5)
    assert not (regression.coefficients({fit.key: fit})["term"] == "kb_per_tx").any()
    for fam in ("file", "syslog"):
        typical, line = _coef(fit, "main", f"typical_{fam}"), _coef(fit, "main", f"lines_{fam}")
        assert typical["estimate"] == pytest.approx(line["estimate"])
        assert typical["ci_low"] == pytest.approx(line["ci_low"])


def test_io_bound_runs_and_each_workload_are_fitted_apart():
    """IO-bound runs have their own fit (their noise must not set the cached slopes), and so has each sysbench
    workload; the keys say which."""
    cached = regression.synthetic_runs(seed=31).assign(regime="cpu", test="oltp_point_select")
    rw = regression.synthetic_runs(seed=32, line_cost_us=9.0).assign(regime="cpu", test="oltp_read_write")
    io = regression.synthetic_runs(seed=33, line_cost_us=20.0, noise_cv=0.2,
                                   base_us={1: 3000.0, 2: 1600.0, 4: 900.0}).assign(regime="io", test="oltp_read_write")
    fits = regression.fit_all(regression.prepare(pd.concat([cached, rw, io], ignore_index=True)))
    assert sorted(fits) == ["postgresql@synthetic/io_bound/oltp_read_write", "postgresql@synthetic/oltp_point_select",
                            "postgresql@synthetic/oltp_read_write"]
    # each workload's own cost, not a blend of the two (coverage of the CIs is tested above, over seeds)
    for key, cost in (("postgresql@synthetic/oltp_point_select", 4.0), ("postgresql@synthetic/oltp_read_write", 9.0)):
        line = _coef(fits[key], "main", "lines_file")
        assert line["estimate"] == pytest.approx(cost, rel=0.05), key
    assert fits["postgresql@synthetic/io_bound/oltp_read_write"].regime == "io_bound"
    c = regression.coefficients(fits)
    assert set(c["regime"]) == {"cached", "io_bound"}


def test_typical_line_per_level_uses_the_shared_kb_term():
    """The per-level model gives each level's typical line: its line term plus the one kB term times the family's
    bytes, so a level's bare (zero-byte) line term may be negative while the line a DBA pays is not."""
    fit = _fit(line_cost_us=4.0, kb_cost_us=1.5, noise_cv=0.01, seed=3)
    c = regression.coefficients({fit.key: fit})
    per = c[c["model"] == "per_clients"]
    kb = per[per["term"] == "kb_per_tx"].iloc[0]
    for k in (1, 2, 4):
        typical = per[per["term"] == f"typical_file @ {k} clients"].iloc[0]
        line = per[per["term"] == f"lines_file @ {k} clients"].iloc[0]
        assert typical["clients"] == k and typical["bytes"] == pytest.approx(225.0)
        assert typical["estimate"] == pytest.approx(line["estimate"] + kb["estimate"] * 0.225)
        assert typical["ci_low"] <= 4.0 + 1.5 * 0.225 <= typical["ci_high"]


# --- the fit in records (issue 42): throughput on the log rate, a record's machine µs, never a negative cost -----

PR = regression.per_record


def _record_runs(**kw) -> pd.DataFrame:
    """Synthetic runs on 2 cores at saturated levels only (2 and 4 clients): a wall µs per transaction of ``c`` per
    record is 2c of the cores' time."""
    kw = {"configurations": TWO_FAMILIES, "kb_cost_us": 0.0, "clients": (2, 4), "cpu_count": 2, "repeats": 5,
          "noise_cv": 0.01, "seed": 5, **kw}
    return regression.synthetic_runs(**kw)


def test_a_known_cost_per_record_is_recovered_in_machine_time():
    table = regression.record_costs(_record_runs(line_cost_us={**FAMILY_COSTS, "file": 6.0, "syslog": 14.0}),
                                    {"synthetic": 2})
    main = table[table["model"] == "main"].set_index("family")
    for fam, wall in (("file", 6.0), ("syslog", 14.0)):
        r = main.loc[fam]
        assert r["ci_low"] <= 2 * wall <= r["ci_high"], (fam, r)
        assert r["status"] == PR.COST and r["cov_type"] == "HC3" and r["clients"] == "2/4"
        assert r["records_per_tx"].startswith("2")  # counted at the destination: 2 per transaction
    per = table[table["model"] == "per_clients"]
    assert set(per["clients"]) == {"2", "4"}


def test_records_are_counted_where_they_arrived_and_lossy_unsaturated_io_bound_runs_are_left_out():
    runs = _record_runs(line_cost_us={**FAMILY_COSTS, "file": 6.0, "syslog": 14.0}, clients=(1, 2, 4))
    lossy = (runs["configuration"] == "syslog") & (runs["repeat"] == 0)
    runs = runs.astype({"log_records_received": float})
    runs.loc[lossy, "log_records_received"] = 0.01 * runs.loc[lossy, "log_records_expected"]
    runs.loc[lossy, "log_bytes"] = 0  # rate-limited: sent, never arrived
    data, left = PR.prepare(runs, {"synthetic": 2})
    assert not ((data["configuration"] == "syslog") & (data["repeat"] == 0)).any()
    assert (data["clients"] >= 2).all()
    reasons = left.groupby("reason").size()
    assert any("rate limit" in why for why in reasons.index) and any("latency" in why for why in reasons.index)
    io = runs.assign(regime="io_bound")
    assert PR.prepare(io, {"synthetic": 2})[0].empty
    # a run's records split by what each destination received, not by its declared count
    both = data[data["configuration"] == "syslog,csvlog"]
    assert both["rec_syslog"].round(3).eq(2.0).all() and both["rec_file"].round(3).eq(2.0).all()


def test_a_negative_slope_is_reported_as_not_physical_never_as_a_cost():
    """Logging runs made faster than the baseline (what noise or other work can do): the slope is below 0, and the
    table says it is no cost per record."""
    table = regression.record_costs(_record_runs(line_cost_us={**FAMILY_COSTS, "file": -3.0, "syslog": 14.0}),
                                    {"synthetic": 2})
    file = table[(table["model"] == "main") & (table["family"] == "file")].iloc[0]
    assert file["estimate"] < 0 and file["status"] == PR.NOT_PHYSICAL
    assert "cannot make a transaction cheaper" in file["why"]
    lines = PR.finding_text(table)
    assert any("not physical" in s for s in lines)
    assert not any(s.split(": ")[1].startswith("-") for s in lines)  # no negative number printed as the cost


def test_the_committed_slopes_are_costs_with_cis_or_say_why_not():
    """On the committed data: every pooled slope is positive with its CI above 0, or flagged with its reason; the
    counted figure stands beside it wherever study 11 counted the family."""
    from logbench.publish import findings
    from logbench.base import paths

    if not (paths.PROCESSED / "pg_destinations_runs.csv").exists():
        pytest.skip("no committed data")
    studies, _ = findings.load_studies(paths.PROCESSED)
    counted = findings.cost_model_findings(paths.PROCESSED)["cost_model_rule"]
    table = findings.record_regression_findings(studies, counted)
    main = table[table["model"] == "main"]
    assert len(main)
    for _, r in main.iterrows():
        if r["status"] == PR.COST:
            assert r["estimate"] > 0 and r["ci_low"] > 0, r
        else:
            assert r["why"], r
            assert r["status"] == (PR.NOT_PHYSICAL if r["estimate"] <= 0 else PR.UNRESOLVED)
    pg = main[(main["engine"] == "postgresql") & (main["family"] == "file") & (main["env_id"].str.len() > 0)]
    assert len(pg) and pg["counted_low"].notna().all()
    assert not main["studies"].str.contains("io_bound").any()  # IO-bound runs never enter


def test_a_line_term_below_zero_is_said_to_be_no_cost_in_the_findings_text():
    """The pooled line-cost fit's bare line term (a line of zero bytes beside a kB term) came out at −4.24 µs: the
    text prints it as no cost, never as what a line costs; the typical line above zero stays a cost."""
    from logbench.publish.paper.text import regression_text

    def row(term, est, **kw):
        return {"fit": "f", "model": "main", "term": term, "family": kw.get("family", "file"), "clients": math.nan,
                "estimate": est, "ci_low": est - 1, "ci_high": est + 1, "bytes": kw.get("bytes", math.nan)}

    c = pd.DataFrame([row("lines_file", -4.24), row("typical_file", 8.35, bytes=290.0),
                      row("kb_per_tx", 43.4, family="")])
    d = pd.DataFrame([{"fit": "f", "model": "main", "engine": "postgresql", "env_id": "e", "studies": "s", "n": 9,
                       "r2": 0.9, "cov_type": "HC3", "n_influential": 0}])
    text = regression_text(c, d)
    assert "-4.24 µs (95 % CI -5.24 to -3.24), at or below zero: no cost a line can have" in text
    assert "costs 8.35 µs (95 % CI 7.35 to 9.35), its line term" in text
