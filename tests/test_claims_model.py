"""The claims read a block-design ratio from the study level's model (issue 40), the per-cell interval only where
the model does not apply."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from logbench.analyze import models
from logbench.analyze.claims.data import StudyData
from logbench.analyze.claims.metrics import metric, model_ratio
from logbench.base import stats


def _runs(seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    effect = {"none": 0.0, "none_again": 0.0, "stderr": np.log(0.7), "syslog": np.log(0.5)}
    rows = []
    for clients in (1, 4):
        for block in range(5):
            for arm in rng.permutation(list(effect)):
                rows.append({"configuration": arm, "clients": clients, "repeat": block, "warmup": False,
                             "tps": float(np.exp(9 + effect[arm] + 0.02 * block + rng.normal(0, 0.05)))})
    t0 = pd.Timestamp("2026-11-28T00:00:00Z")
    return pd.DataFrame(rows).assign(started_at=[(t0 + pd.Timedelta(seconds=6 * i)).isoformat()
                                                 for i in range(len(rows))])


def test_a_block_ratio_is_the_models_and_another_reference_is_its_contrast():
    runs = _runs()
    study = StudyData(name="synthetic", engine="postgresql", baseline="none", runs=runs)
    fit = models.fit_main(runs, baseline="none").set_index(["clients", "arm"])
    got = metric(study, "ratio", "stderr", 4)
    assert (got.value, got.low, got.high) == pytest.approx(tuple(fit.loc[(4, "stderr"), ["ratio", "low", "high"]]))
    vs = models.fit_main(runs, baseline="stderr").set_index(["clients", "arm"])
    got = metric(study, "ratio", "syslog", 1, reference="stderr")
    assert (got.value, got.low, got.high) == pytest.approx(tuple(vs.loc[(1, "syslog"), ["ratio", "low", "high"]]))
    # a narrower confidence (the equivalence test's) is the same fit's narrower interval
    narrow = metric(study, "ratio", "stderr", 4, confidence=0.90)
    wide = fit.loc[(4, "stderr"), "high"] - fit.loc[(4, "stderr"), "low"]
    assert narrow.value == pytest.approx(fit.loc[(4, "stderr"), "ratio"]) and narrow.high - narrow.low < wide


def test_where_the_model_cannot_say_the_per_cell_interval_stands():
    runs = _runs()
    # two cells (tests) at one clients level are fitted apart: no one row, so the claim reads its cell
    two = pd.concat([runs.assign(test="a"), runs.assign(test="b")], ignore_index=True)
    study = StudyData(name="synthetic", engine="mariadb", baseline="none", runs=two)
    assert model_ratio(study, "stderr", 4) is None
    cell = metric(study, "ratio", "stderr", 4)
    a = two[(two["configuration"] == "stderr") & (two["clients"] == 4)].assign(v=lambda f: f["tps"])
    b = two[(two["configuration"] == "none") & (two["clients"] == 4)].assign(v=lambda f: f["tps"])
    assert cell.value == pytest.approx(stats.cell_ratio(a, b, "v", "repeat")[0].value)
