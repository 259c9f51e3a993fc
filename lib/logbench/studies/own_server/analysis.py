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


# log_statement = all writes a statement record without a duration: study 11 counted it to stderr only; every other arm
# writes duration records, priced by the destination the run wrote them to
_STATEMENT_ONLY = {"statement_all": {"stderr": "log_statement_all"}}


def priced_as(arm: str, destinations: list[str]) -> str | None:
    """The configuration of the committed per-record tables that prices a record of ``arm`` written to
    ``destinations`` (the run's log_destination)."""
    if not destinations:
        return None
    return _STATEMENT_ONLY.get(arm, {}).get(destinations[0], destinations[0])


def predictions(processed, stem: str = "own_server"):
    """The cost model's prediction beside each arm's measured ratio (logbench.analyze.overhead, what `cost` prints)."""
    return shared.predictions(processed, stem, "postgresql", BASELINE, priced_as)


def prediction_parts(processed_dir):
    """What the notebook's section on the cost model shows: the cores assumed and the prediction beside each
    measured ratio, as the answer prints it; ("", an empty table) where there is nothing to show."""
    return shared.prediction_parts(processed_dir, predictions)
