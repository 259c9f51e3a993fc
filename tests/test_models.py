"""One model per study level (logbench.publish.models): a hand-computed case, the coverage of the time-smooth model on
synthetic drifting series, the levels and arms a runs table is split into, and the A/A calibration on a table
made here (never on data/, which nothing here writes)."""

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as st

from logbench import studies
from logbench.analyze import models

TRUE = {"none": 1.0, "none_again": 1.0, "a": 0.9, "b": 0.75, "c": 1.05, "d": 0.97, "e": 0.85, "f": 0.6}


def _series(seed: int, *, blocks: int = 5, phi: float = 0.9, drift_sd: float = 0.03,
            noise_sd: float = 0.05) -> pd.DataFrame:
    """A block design (each block a random order of every arm) on a host whose speed drifts: an AR(1) shared by
    every run (phi = 1: a random walk), plus independent noise per run, and a known true ratio per arm."""
    rng = np.random.default_rng(seed)
    order = [a for _ in range(blocks) for a in rng.permutation(list(TRUE))]
    drift = np.zeros(len(order))
    for i in range(1, len(order)):
        drift[i] = phi * drift[i - 1] + rng.normal(0, drift_sd)
    y = math.log(20000) + np.log([TRUE[a] for a in order]) + drift + rng.normal(0, noise_sd, len(order))
    return pd.DataFrame({"configuration": order, "tps": np.exp(y), "position": np.arange(len(order)),
                         "repeat": np.repeat(np.arange(blocks), len(TRUE)), "warmup": False})


def test_two_arms_without_drift_is_the_pooled_t_interval_of_the_log_ratio():
    base, arm = [100.0, 110.0, 90.0], [85.0, 80.0, 70.0]
    runs = pd.DataFrame({"configuration": ["none"] * 3 + ["x"] * 3, "tps": base + arm, "position": range(6)})
    got = models.fit_level(runs, arm_col="configuration", baseline="none", time_col="position").iloc[0]
    la, lb = np.log(arm), np.log(base)
    d = la.mean() - lb.mean()
    sp = math.sqrt((((la - la.mean()) ** 2).sum() + ((lb - lb.mean()) ** 2).sum()) / 4)
    half = 2.776445 * sp * math.sqrt(1 / 3 + 1 / 3)  # t(0.975, 3 + 3 - 2)
    assert got["arm"] == "x" and got["n"] == 3 and got["df_resid"] == 4
    assert got["ratio"] == pytest.approx(math.exp(d))
    assert (got["low"], got["high"]) == pytest.approx((math.exp(d - half), math.exp(d + half)))
    assert got["halfwidth"] == pytest.approx((got["high"] - got["low"]) / 2)
    assert got["se"] == pytest.approx(sp * math.sqrt(2 / 3))
    assert math.isnan(got["cluster_low"]) and got["model"] == "log y ~ arm"


@pytest.mark.parametrize("drift", [{"phi": 0.9}, {"phi": 1.0, "drift_sd": 0.02}], ids=["ar1", "random_walk"])
def test_time_smooth_model_covers_the_true_ratio_95_percent_of_the_time(drift):
    reps = 200
    hits = 0
    for seed in range(reps):
        fit = models.fit_level(_series(seed, **drift), arm_col="configuration", baseline="none",
                               time_col="position", smooth_df=12)
        b = fit.set_index("arm").loc["b"]  # one arm per replication: independent Bernoulli trials
        hits += bool(b["low"] <= TRUE["b"] <= b["high"])
    assert fit["model"].iloc[0] == "log y ~ arm + bs(time, df=12)"
    # 95 % of 200: outside [0.90, 0.99] has probability < 0.001 for an honest interval
    assert st.binom.ppf(0.0005, reps, 0.95) <= hits <= st.binom.ppf(0.9995, reps, 0.95), hits / reps


def test_block_and_clustered_columns():
    fit = models.fit_level(_series(1), arm_col="configuration", baseline="none", time_col="position",
                           block_col="repeat", smooth_df=12)
    assert fit["model"].iloc[0] == "log y ~ arm + block(repeat) + bs(time, df=12)"
    assert fit["df_resid"].iloc[0] == 40 - 8 - 4 - 12
    assert (fit["cluster_low"] < fit["ratio"]).all() and (fit["ratio"] < fit["cluster_high"]).all()
    assert set(fit["arm"]) == set(TRUE) - {"none"}


def test_the_spline_leaves_half_the_residual_df():
    small = _series(2, blocks=3)  # 24 runs, 8 arms: 16 residual df without the spline, so 8 at most
    fit = models.fit_level(small, arm_col="configuration", baseline="none", time_col="position", smooth_df=12)
    assert fit["model"].iloc[0].endswith("bs(time, df=8)") and fit["df_resid"].iloc[0] == 8
    tiny = _series(3, blocks=2).iloc[:12]  # 4 residual df without it: too few to spare, no spline at all
    fit = models.fit_level(tiny, arm_col="configuration", baseline="none", time_col="position",
                           smooth_df=12)
    assert fit["model"].iloc[0] == "log y ~ arm"


def _two_server_table() -> pd.DataFrame:
    """Two servers ("v1/…", "v2/…") and two clients levels, with start times as text, one warm-up run of
    nonsense that must not count."""
    parts = []
    for i, (variant, clients) in enumerate([("v1", 1), ("v1", 4), ("v2", 1), ("v2", 4)]):
        s = _series(10 + i, blocks=4).assign(clients=clients, env_id=variant)
        s["configuration"] = variant + "/" + s["configuration"]
        parts.append(s)
    runs = pd.concat(parts, ignore_index=True)
    runs["started_at"] = (pd.Timestamp("2026-11-26T12:00:00Z") + pd.to_timedelta(np.arange(len(runs)) * 7, "s")
                          ).strftime("%Y-%m-%dT%H:%M:%S.000+00:00")
    warm = runs.iloc[:1].assign(warmup=True, tps=1.0)
    return pd.concat([warm, runs], ignore_index=True)


def test_fit_study_splits_levels_and_variants_and_drops_warmup():
    fit = models.fit_study(_two_server_table(), block_col="repeat")
    assert list(fit.columns[:3]) == ["variant", "clients", "baseline"]
    assert len(fit) == 4 * (len(TRUE) - 1) and set(fit["baseline"]) == {"none"}
    assert (fit["n"] == 4).all()  # the warm-up run is not one of none_again's or anyone's
    assert fit["cluster_low"].notna().all()


def test_aa_calibration_reads_a_runs_table_and_its_summary(tmp_path):
    runs = _two_server_table()
    runs.to_csv(tmp_path / "toy_runs.csv", index=False)
    summary = pd.DataFrame({"variant": ["v1", "v1", "v2", "v2"], "configuration": "none_again", "clients": [1, 4, 1, 4],
                            "n": 4, "ratio": 1.0, "ratio_ci_low": [0.8, 0.9, 0.7, 0.95],
                            "ratio_ci_high": [1.2, 1.1, 1.3, 1.05]})
    summary.to_csv(tmp_path / "toy.csv", index=False)
    before = sorted(p.name for p in tmp_path.iterdir())
    cal = models.aa_calibration(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert set(cal["method"]) == {models.PER_CELL, *models.MODELS} and (cal["arm"] == "none_again").all()
    per_cell = cal[cal["method"] == models.PER_CELL].set_index("level")["halfwidth"]
    assert per_cell["variant=v2, clients=1"] == pytest.approx(0.3)
    table = models.calibration_table(cal)
    assert list(table["study"]) == ["toy", "all"] and table["n_aa"].tolist() == [4, 4]


def test_aa_calibration_recomputes_the_per_cell_interval_without_a_summary(tmp_path):
    _two_server_table().to_csv(tmp_path / "toy_runs.csv", index=False)
    cal = models.aa_calibration(tmp_path)
    per_cell = cal[cal["method"] == models.PER_CELL]
    assert len(per_cell) == 4 and per_cell["halfwidth"].notna().all()


# --- the main model (models.fit_main) and its wiring into the findings -------------------------------------


def test_main_model_without_room_for_a_spline_is_the_pooled_t_interval():
    """Two blocks of three arms: 3 residual df, too few to spare for the spline, so the main model is the OLS of
    log tps on the arm, one sigma pooled over the three arms, t on 3 df; clustered by the two blocks beside it."""
    tps = {"none": [100.0, 90.0], "none_again": [95.0, 99.0], "x": [80.0, 76.0]}
    runs = pd.DataFrame([{"configuration": a, "tps": v[b], "repeat": b, "position": 3 * b + i, "warmup": False}
                         for b in range(2) for i, (a, v) in enumerate(tps.items())])
    got = models.fit_main(runs).set_index("arm")
    logs = {a: np.log(v) for a, v in tps.items()}
    sp = math.sqrt(sum(((v - v.mean()) ** 2).sum() for v in logs.values()) / 3)
    half = st.t.ppf(0.975, 3) * sp * math.sqrt(1 / 2 + 1 / 2)
    d = logs["x"].mean() - logs["none"].mean()
    x = got.loc["x"]
    assert x["model"] == "log y ~ arm" and x["df_resid"] == 3 and x["design"] == "blocks"
    assert x["ratio"] == pytest.approx(math.exp(d))
    assert (x["low"], x["high"]) == pytest.approx((math.exp(d - half), math.exp(d + half)))
    assert x["clusters"] == 2 and x["cluster_low"] < x["ratio"] < x["cluster_high"]
    assert got.loc["none_again", "baseline"] == "none" and 0 <= x["levene_p"] <= 1


def test_one_df_of_time_per_block():
    fit = models.fit_main(_series(4, blocks=5))
    assert fit["model"].iloc[0] == "log y ~ arm + bs(time, df=5)" and fit["df_resid"].iloc[0] == 40 - 8 - 5
    assert (fit["clusters"] == 5).all()


def _binomial_ok(hits: int, reps: int) -> bool:
    """95 % of ``reps``: outside these bounds has probability < 0.001 for an honest interval."""
    return st.binom.ppf(0.0005, reps, 0.95) <= hits <= st.binom.ppf(0.9995, reps, 0.95)


@pytest.mark.parametrize("arm", ["b", "none_again"])
def test_main_model_covers_the_true_ratio_on_drifting_blocks(arm):
    reps, hits = 200, 0
    for seed in range(reps):
        row = models.fit_main(_series(100 + seed)).set_index("arm").loc[arm]
        hits += bool(row["low"] <= TRUE[arm] <= row["high"])
    assert _binomial_ok(hits, reps), hits / reps


SWITCHED = {"none": 1.0, "none_again": 1.0, "a": 0.95, "b": 0.8}


def _switchback_series(seed: int, *, loads: int = 3, blocks: int = 6) -> pd.DataFrame:
    """Switchback windows as a processed runs table holds them: loads on freshly started servers (a level of
    their own), every arm once per block in a random order, an AR(1) drift inside a load and noise per window."""
    rng = np.random.default_rng(seed)
    rows, i = [], 0
    for load in range(loads):
        level, drift, prev = rng.normal(0, 0.05), 0.0, None
        for block in range(blocks):
            for arm in rng.permutation(list(SWITCHED)):
                drift = 0.8 * drift + rng.normal(0, 0.01)
                y = math.log(20000) + level + drift + math.log(SWITCHED[arm]) + rng.normal(0, 0.02)
                extra = {"design": "switchback", "load": load, "attempt": 0, "block": block, "unit": block,
                         "window": i, "prev_arm": prev, "switch_requested": 0.0, "switch_applied": 0.1, "guard_s": 1}
                rows.append({"configuration": arm, "tps": math.exp(y), "position": i, "repeat": block,
                             "warmup": False, "clients": 2, "extra": json.dumps(extra)})
                prev, i = arm, i + 1
    return pd.DataFrame(rows)


def test_switchback_table_gets_a_block_of_a_load_and_clusters_by_load():
    runs = _switchback_series(0)
    late = json.loads(runs.loc[5, "extra"]) | {"switch_applied": 2.0}  # applied after its 1 s guard: not measured
    runs.loc[5, "extra"] = json.dumps(late)
    fit = models.fit_main(runs).set_index("arm")
    assert (fit["design"] == "switchback").all() and (fit["clusters"] == 3).all()
    assert fit["model"].iloc[0] == "log y ~ arm + block(load_block) + bs(time, df=3)"
    assert fit["n"].sum() + (runs["configuration"] == "none").sum() == len(runs) - 1


def test_main_model_covers_the_true_ratio_on_switchback_windows():
    reps, hits = 200, 0
    for seed in range(reps):
        row = models.fit_main(_switchback_series(500 + seed)).set_index("arm").loc["b"]
        hits += bool(row["low"] <= SWITCHED["b"] <= row["high"])
    assert _binomial_ok(hits, reps), hits / reps


def test_model_table_puts_the_summarys_per_cell_interval_beside_the_model(tmp_path):
    runs = _series(7, blocks=4).assign(clients=1)
    runs.to_csv(tmp_path / "pg_destinations_runs.csv", index=False)
    summary = pd.DataFrame({"configuration": list(TRUE), "clients": 1, "n": 4, "ratio": 1.0,
                            "ratio_ci_low": [math.nan] + [0.9] * 7, "ratio_ci_high": [math.nan] + [1.3] * 7})
    summary.to_csv(tmp_path / "pg_destinations.csv", index=False)
    table = models.model_table(tmp_path, studies.committed_profiles(("pg_destinations",)))
    assert list(table.columns[: len(models.MODEL_COLUMNS)]) == models.MODEL_COLUMNS
    assert set(table["arm"]) == set(TRUE) - {"none"} and (table["study"] == "pg_destinations").all()
    assert (table["profile"] == "standard").all() and (table["level"] == "clients=1").all()
    assert table["cell_halfwidth"].to_numpy() == pytest.approx(0.2)
    cov = models.coverage_table(models.aa_table(tmp_path))
    assert list(cov["study"]) == ["pg_destinations", models.ALL] and (cov["n_aa"] == 1).all()
    assert (cov["cell_hold_share"] == 1).all()


def test_model_findings_on_the_committed_data():
    from logbench.base import paths

    before = {p.name: p.stat().st_mtime_ns for p in paths.PROCESSED.iterdir()}
    committed = studies.committed_profiles(models.MODEL_STUDIES)
    table, cov = models.model_findings(paths.PROCESSED, committed)
    assert {p.name: p.stat().st_mtime_ns for p in paths.PROCESSED.iterdir()} == before
    assert list(table.columns[: len(models.MODEL_COLUMNS)]) == models.MODEL_COLUMNS
    assert set(table["study"]) == set(models.MODEL_STUDIES)
    stems = {s for s, _, _ in models.model_stems(paths.PROCESSED, committed)}
    assert len(stems) >= 3 and {"switchback", "blocks"} == set(table["design"])
    aa = table[table["arm"].str.endswith("_again")]
    assert aa[["ci_low", "ci_high", "cell_low", "cell_high"]].notna().all().all()
    assert (table["df"] >= 1).all() and (table["halfwidth"] > 0).all()
    assert list(cov.columns) == models.COVERAGE_COLUMNS and cov["study"].iloc[-1] == models.ALL
    every = cov.iloc[-1]
    assert every["n_aa"] == cov["n_aa"].iloc[:-1].sum() >= len(aa)
    assert 0 <= every["model_hold_share"] <= 1 and every["model_hold"] <= every["n_aa"]
    # the exact binomial interval of the count: scipy's, around the share
    ci = st.binomtest(int(every["model_hold"]), int(every["n_aa"])).proportion_ci(method="exact")
    assert (every["model_hold_ci_low"], every["model_hold_ci_high"]) == pytest.approx((ci.low, ci.high))
    assert every["model_hold_ci_low"] <= every["model_hold_share"] <= every["model_hold_ci_high"]


def test_the_papers_passage_reads_the_coverage_table(tmp_path):
    from logbench.publish.paper import sections
    from logbench.publish.paper.numbers import Numbers

    _two_server_table().to_csv(tmp_path / "toy_runs.csv", index=False)
    cov = models.coverage_table(models.aa_table(tmp_path))
    cov.to_csv(tmp_path / sections.MODELS_COVERAGE, index=False)
    doc, nums = {"tables": []}, Numbers(tmp_path)
    sections.models_section(doc, tmp_path, tmp_path / "generated", nums)
    assert doc["models_table"] == "generated/models.csv" and doc["models_studies"] == list(models.MODEL_STUDIES)
    table = pd.read_csv(tmp_path / doc["models_table"], dtype=str)
    assert list(table["study"]) == ["toy", "every study"] and table["A/A controls"].tolist() == ["4", "4"]
    assert nums.get("models.n_aa") == "4" and float(nums.get("models.hold_percent")) == pytest.approx(
        100 * cov["model_hold_share"].iloc[-1], abs=0.05)
    empty = {"tables": []}
    sections.models_section(empty, tmp_path / "nothing", tmp_path / "generated", nums)
    assert empty["models_table"] == ""
