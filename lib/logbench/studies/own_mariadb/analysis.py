"""The MariaDB study's analysis: the one every study on a user's server shares
(:mod:`logbench.studies.on_user_server`), over this study's arms and its switches by SET GLOBAL."""

from __future__ import annotations

import pandas as pd

from .. import common, on_user_server as shared
from .spec import ARMS, BASELINE

records_per_transaction = shared.records_per_transaction


def summary(runs: pd.DataFrame, baseline: str = BASELINE) -> pd.DataFrame:
    return shared.summary(runs, baseline, list(ARMS))


def switch_delays(runs: pd.DataFrame) -> pd.DataFrame:
    """Per arm switched to: from the first SET GLOBAL until SHOW GLOBAL VARIABLES reported the arm's values (ms)."""
    return shared.switch_delays(runs, "set_global")


def processed_tables(result: common.StudyResult) -> dict[str, pd.DataFrame]:
    return shared.processed_tables(result, BASELINE, list(ARMS), "set_global")


def priced_as(arm: str, destinations: list[str]) -> str | None:
    """The configuration of the committed per-record tables that prices a record of ``arm``: study 11 counted the
    same three (slow_file, slow_table, general_file)."""
    return destinations[0] if destinations else None


def predictions(processed, stem: str = "own_mariadb"):
    """The cost model's prediction beside each arm's measured ratio (logbench.analyze.overhead, what `cost` prints)."""
    return shared.predictions(processed, stem, "mariadb", BASELINE, priced_as)


def prediction_parts(processed_dir):
    """What the notebook's section on the cost model shows: the cores assumed and the prediction beside each
    measured ratio, as the answer prints it; ("", an empty table) where there is nothing to show."""
    return shared.prediction_parts(processed_dir, predictions)
