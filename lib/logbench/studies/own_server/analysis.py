"""Study 12's analysis: the summary (each arm's throughput ratio to the baseline within blocks, with the A/A
control, records due and counted), the switches' delays, and the statements it found in the notebook; shared with
the MariaDB study on a user's server (:mod:`logbench.studies.on_user_server`)."""

from __future__ import annotations

import pandas as pd

from .. import common, on_user_server as shared
from .spec import ARMS, BASELINE

records_per_transaction = shared.records_per_transaction


def summary(runs: pd.DataFrame, baseline: str = BASELINE) -> pd.DataFrame:
    return shared.summary(runs, baseline, list(ARMS))


def switch_delays(runs: pd.DataFrame) -> pd.DataFrame:
    """Per arm switched to: how long the reload took until the server reported the arm's values (ms)."""
    return shared.switch_delays(runs, "reload")


def processed_tables(result: common.StudyResult) -> dict[str, pd.DataFrame]:
    return shared.processed_tables(result, BASELINE, list(ARMS), "reload")
