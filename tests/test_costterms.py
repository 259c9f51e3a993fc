"""Where the cost model misses and the terms its misses name (issue 42, :mod:`logbench.analyze.costterms`): the
grouping of the judged cells, a switch's price from the baselines' runs, the log mutex's queue, and the terms'
tables on the committed data/processed."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from test_costmodel import judged

from logbench.analyze import costmodel as cm
from logbench.analyze import costterms as ct
from logbench.base import paths


@pytest.fixture(scope="module")
def committed() -> tuple[cm.CostModel, ct.CostTerms]:
    model = cm.cost_model(paths.PROCESSED)
    return model, ct.cost_terms(model, paths.PROCESSED)


def test_the_committed_misses_table(committed):
    _, terms = committed
    assert list(terms.misses.columns) == ct.MISS_COLUMNS


def test_misses_groups_the_judged_cells_and_ranks_the_largest_error():
    wait = "waiting, not CPU (pipe, socket, lock)"
    d = pd.concat([judged([0.9] * 5, 0.85, 0.95, engine="postgresql", missing_term=wait),
                   judged([0.7] * 5, 0.6, 0.8, engine="mariadb", predicted_ratio=0.9),
                   judged([0.5], 0.4, 0.6, engine="mariadb", judged=False)], ignore_index=True)
    m = ct.misses(d)
    assert list(m.columns) == ct.MISS_COLUMNS
    eng = m[m["dimension"] == "engine"].set_index("group")
    assert eng.loc["PostgreSQL", "judged_cells"] == 5 and eng.loc["MariaDB", "judged_cells"] == 5  # unjudged out
    assert eng.loc["PostgreSQL", "median_abs_error"] == pytest.approx(0.1)
    assert eng.loc["MariaDB", "mean_error"] == pytest.approx(0.2)
    assert eng.loc["PostgreSQL", "main_term"] == wait
    assert eng.loc["PostgreSQL", "missed"] == 5 and eng.loc["MariaDB", "missed"] == 0
    assert eng.loc["MariaDB", "in_ci_share"] == 0 and eng.loc["PostgreSQL", "in_ci_share"] == 0
    # the largest median error among groups of at least MISS_MIN_CELLS cells is ranked first
    top = m[m["largest"]]
    assert len(top) == 1 and top["median_abs_error"].iloc[0] == m["median_abs_error"].max()


# --- the named missing terms (what each could buy, what a calibration outside the judged cells prices it at) -----

def test_a_switch_is_priced_from_runs_whose_cpu_moves_with_their_switches():
    # two cells of a table, each run costing its cell's base plus 10 µs per voluntary switch: every estimator that
    # reads the runs within a cell recovers the 10 µs
    vcs = [0.5, 1.0, 1.5, 0.2, 0.4, 0.9]
    base = [20.0] * 3 + [30.0] * 3
    runs = pd.DataFrame({"table": "t", "variant": "", "clients": [1] * 3 + [4] * 3,
                         "cell": ["t//1"] * 3 + ["t//4"] * 3, "vcs": vcs,
                         "cpu": [b + 10.0 * v for b, v in zip(base, vcs)]})
    p = ct.switch_prices(runs).set_index("estimator")
    assert list(p.index) == [name for name, _ in ct.SWITCH_ESTIMATORS]
    within = p.loc[ct.SWITCH_ESTIMATORS[0][0]]
    assert within["price_us"] == pytest.approx(10.0) and within["runs"] == 6
    assert within["price_ci_low"] == pytest.approx(10.0, abs=1e-6) and within["price_ci_high"] == pytest.approx(10.0, abs=1e-6)
    # too few runs: no price, not a made-up one
    assert np.isnan(ct.switch_prices(runs.iloc[:2])["price_us"]).all()


def test_the_switch_price_reads_only_the_baselines_runs(tmp_path):
    extra = '{"collector_ctx_voluntary": 100, "collector_cpu_s": 0.0005}'
    runs = pd.DataFrame({"configuration": ["none", "none_again", "stderr", "none"], "warmup": [False, False, False, True],
                         "clients": 1, "transactions": 1000, "server_cpu_s": 0.0205,
                         "server_ctx_voluntary": [1100, 1300, 9000, 5000], "extra": extra})
    runs.to_csv(tmp_path / "pg_destinations_runs.csv", index=False)
    r = ct.baseline_switch_runs(tmp_path)
    # the baseline and its A/A repeat, not the logging arm nor the warm-up; the collector's switches and CPU taken out
    assert len(r) == 2 and list(r["vcs"]) == pytest.approx([1.0, 1.2])
    assert list(r["cpu"]) == pytest.approx([20.0, 20.0]) and set(r["cell"]) == {"pg_destinations//1"}


def test_added_switches_are_the_ones_above_the_baseline_in_postgresql():
    d = pd.DataFrame({"engine": ["postgresql", "postgresql", "mariadb", "postgresql"],
                      "backend_vcs_per_tx": [3.0, 0.5, 3.0, np.nan], "baseline_backend_vcs_per_tx": 1.0})
    assert list(ct.added_switches(d)) == [2.0, 0.0, 0.0, 0.0]


def test_the_log_mutex_waits_as_a_single_server_queue():
    # a record holds the mutex 2 µs; 100,000 records a second keep it busy U = 0.2 of the time: M/M/1 waits
    # 2 · 0.2 / 0.8 = 0.5 µs; one connection, or PostgreSQL, waits for no one
    d = pd.DataFrame({"engine": ["mariadb", "mariadb", "postgresql"], "clients": [10, 1, 10],
                      "loader_us_per_record": 2.0, "baseline_tps": 100_000.0, "records_per_tx": 1.0})
    assert list(ct.mutex_wait(d, pd.Series([1.0, 1.0, 1.0]))) == pytest.approx([0.5, 0.0, 0.0])


def test_the_named_terms_bound_what_they_could_buy(committed):
    cost, terms = committed
    t, p = terms.terms, terms.switch_prices
    assert list(t.columns) == ct.TERM_COLUMNS and list(p.columns) == ct.SWITCH_COLUMNS
    s = cost.summary.set_index(["model", "study"])
    for model, g in t.groupby("model"):
        g = g.set_index("term")
        assert set(g.index) == {"wake", "mutex", "table", "switchback", "all four"}
        # made exact, a term's cells can only lower the median error; all four together at least as much as one
        assert (g["if_exact_median_abs_error"] <= s.loc[(model, "all"), "median_abs_error"] + 1e-12).all()
        assert g.loc["all four", "if_exact_median_abs_error"] <= g["if_exact_median_abs_error"].min() + 1e-12
        assert g.loc["all four", "cells"] <= g.drop("all four")["cells"].sum()
        # the wake term with its price is the first estimator's row of the prices table
        first = p[(p["estimator"] == ct.SWITCH_ESTIMATORS[0][0]) & (p["model"] == model) & (p["study"] == "all")]
        if len(first) and pd.notna(g.loc["wake", "priced"]):
            assert g.loc["wake", "priced"] == pytest.approx(first["price_us"].iloc[0])
            assert g.loc["wake", "with_term_median_abs_error"] == pytest.approx(first["median_abs_error"].iloc[0])
    # the terms are reported, never kept: the model's own cells carry no term
    assert "term_us_per_tx" not in cost.cells.columns
