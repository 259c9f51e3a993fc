"""The log-rate regression: a synthetic study with a known cost per line is recovered within its CI."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from logbench import regression


def _fit(**kw) -> regression.EngineFit:
    fits = regression.fit_engines(regression.prepare(regression.synthetic_runs(**kw)))
    assert list(fits) == ["postgresql"]
    return fits["postgresql"]


def _coef(fit: regression.EngineFit, model: str, term: str) -> pd.Series:
    c = regression.coefficients({fit.engine: fit})
    row = c[(c["model"] == model) & (c["term"] == term)]
    assert len(row) == 1, (model, term, c)
    return row.iloc[0]


def test_known_line_and_kb_cost_recovered_within_ci():
    fit = _fit(line_cost_us=4.0, kb_cost_us=1.5, noise_cv=0.01, seed=3)
    line = _coef(fit, "main", "records_per_tx")
    kb = _coef(fit, "main", "kb_per_tx")
    assert line["ci_low"] <= 4.0 <= line["ci_high"]
    assert kb["ci_low"] <= 1.5 <= kb["ci_high"]
    assert line["unit"] == "µs per logged line" and kb["unit"] == "µs per logged kB"
    # and the interval is informative, not just wide
    assert line["ci_high"] - line["ci_low"] < 1.0


def test_interaction_recovers_a_cost_that_grows_with_clients():
    fit = _fit(line_cost_us=3.0, line_cost_per_client_us=0.5, noise_cv=0.01, seed=5)
    base = _coef(fit, "interaction", "records_per_tx")
    inter = _coef(fit, "interaction", "records_per_tx:extra_clients")
    assert base["ci_low"] <= 3.0 <= base["ci_high"]
    assert inter["ci_low"] <= 0.5 <= inter["ci_high"]
    assert inter["ci_low"] > 0  # the growth is detected
    for k in (1, 2, 4):
        per = _coef(fit, "per_clients", f"records_per_tx @ {k} clients")
        assert per["ci_low"] <= 3.0 + 0.5 * (k - 1) <= per["ci_high"]


def test_no_interaction_when_the_cost_is_flat():
    fit = _fit(line_cost_us=3.0, line_cost_per_client_us=0.0, noise_cv=0.01, seed=7)
    inter = _coef(fit, "interaction", "records_per_tx:extra_clients")
    assert inter["ci_low"] <= 0 <= inter["ci_high"]


def test_ci_coverage_over_seeds():
    """The 95 % interval of the per-line cost covers the truth in most synthetic replications."""
    covered = 0
    seeds = range(20)
    for seed in seeds:
        line = _coef(_fit(line_cost_us=4.0, kb_cost_us=1.5, noise_cv=0.02, seed=100 + seed, repeats=3),
                     "main", "records_per_tx")
        covered += line["ci_low"] <= 4.0 <= line["ci_high"]
    assert covered >= 16  # P(X <= 15) < 2 % for X ~ Binomial(20, 0.95)


def test_prepare_drops_warmups_and_counts_what_the_server_emitted():
    runs = regression.synthetic_runs(repeats=2, clients=(1,))
    runs.loc[0, "warmup"] = True
    lossy = runs.index[runs["configuration"] == "stderr"][0]
    runs.loc[lossy, "log_records_received"] = runs.loc[lossy, "log_records_expected"] // 2
    d = regression.prepare(runs)
    assert len(d) == len(runs) - 1
    row = d[(d["configuration"] == "stderr")].iloc[0]
    assert row["records_per_tx"] == pytest.approx(2.0, rel=1e-3)  # expected, not the half that arrived
    r0 = runs.loc[lossy]
    assert row["kb_per_tx"] == pytest.approx(r0["log_bytes"] / regression.BYTES_PER_KB / r0["transactions"])
    assert row["us_per_tx"] == pytest.approx(1e6 / r0["tps"])
    assert set(d["baseline"]) == {"synthetic @ 1"}


def test_kb_term_dropped_when_bytes_per_line_never_vary():
    fit = _fit(configurations={"none": (0, 0), "a": (2, 150), "b": (4, 150)}, seed=2)
    c = regression.coefficients({fit.engine: fit})
    assert "kb_per_tx" not in set(c["term"])
    assert any("kB term dropped" in n for n in fit.notes)
    line = _coef(fit, "main", "records_per_tx")
    # the per-kB cost is absorbed into the per-line cost: 4 + 0.15 * 1.5
    assert line["ci_low"] <= 4.0 + 0.15 * 1.5 <= line["ci_high"]


def test_robust_errors_by_the_breusch_pagan_rule():
    het = regression.synthetic_runs(noise_cv=0.0, seed=1)
    rng = np.random.default_rng(0)
    # noise that grows with the log rate: heteroskedastic by construction
    us = 1e6 / het["tps"] + rng.standard_normal(len(het)) * (1 + 20 * het["log_records_expected"] / het["transactions"])
    het["tps"] = 1e6 / us
    fit = regression.fit_engines(regression.prepare(het))["postgresql"]
    assert fit.bp_pvalue < regression.BP_ALPHA and fit.cov_type == "HC3"
    assert fit.main.result.cov_type == "HC3"


def test_influence_flags_an_outlier_and_refits_without_it():
    runs = regression.synthetic_runs(noise_cv=0.005, seed=4)
    i = runs.index[(runs["configuration"] == "jsonlog") & (runs["clients"] == 4)][0]
    runs.loc[i, "tps"] = runs.loc[i, "tps"] / 3  # one run three times slower
    fit = regression.fit_engines(regression.prepare(runs))["postgresql"]
    assert len(fit.influential) >= 1
    assert fit.cooks.idxmax() == i
    assert fit.models[regression.WITHOUT_INFLUENTIAL].ok
    clean = _coef(fit, regression.WITHOUT_INFLUENTIAL, "records_per_tx")
    assert clean["ci_low"] <= 4.0 <= clean["ci_high"]
    diag = regression.diagnostics({fit.engine: fit})
    assert int(diag.loc[diag["model"] == "main", "n_influential"].iloc[0]) == len(fit.influential)


def test_engines_are_fitted_separately_and_baseline_only_engines_skipped():
    a = regression.synthetic_runs(engine="postgresql", study="s1", seed=1)
    b = regression.synthetic_runs(engine="mariadb", study="s2", line_cost_us=9.0, seed=2)
    only_base = regression.synthetic_runs(engine="other", study="s3", configurations={"none": (0, 0)}, seed=3)
    fits = regression.fit_engines(regression.prepare(pd.concat([a, b, only_base], ignore_index=True)))
    assert sorted(fits) == ["mariadb", "postgresql"]
    assert _coef(fits["mariadb"], "main", "records_per_tx")["ci_low"] <= 9.0


@pytest.mark.parametrize("target", regression.WRITE_TARGETS)
def test_write_floor_is_a_positive_time_with_a_ci(tmp_path, target):
    f = regression.write_floor(120, target=target, batches=10, batch=20, directory=tmp_path)
    assert f.nbytes == 120 and f.target == target
    assert 0 < f.ci_low <= f.median_us <= f.ci_high < 10_000
    assert not any(tmp_path.iterdir())  # its temporary directory is gone


def test_write_floor_rejects_bad_arguments(tmp_path):
    with pytest.raises(ValueError):
        regression.write_floor(100, target="socket", directory=tmp_path)
    with pytest.raises(ValueError):
        regression.write_floor(0, directory=tmp_path)


def test_typical_record_bytes():
    d = regression.prepare(regression.synthetic_runs(configurations={"none": (0, 0), "a": (2, 100), "b": (2, 300)}))
    assert regression.typical_record_bytes(d) == 200
    assert regression.typical_record_bytes(d[d["configuration"] == "none"]) == 200  # the default
    assert not math.isnan(d["bytes_per_record"].dropna().iloc[0])


def test_groups_whose_log_rate_never_varies_are_left_out():
    """A study that varies something else (every run logs alike) adds noise, not information: it is left out."""
    logging = regression.synthetic_runs(study="slowlog", seed=8)
    other = regression.synthetic_runs(study="rotation", configurations={"none": (2, 150), "copy": (2, 150)},
                                      noise_cv=0.2, seed=9)
    fit = regression.fit_engines(regression.prepare(pd.concat([logging, other], ignore_index=True)))["postgresql"]
    assert set(fit.data["study"]) == {"slowlog"}
    assert any("rotation (30 runs)" in n for n in fit.notes)
    line = _coef(fit, "main", "records_per_tx")
    assert line["ci_low"] <= 4.0 <= line["ci_high"]
