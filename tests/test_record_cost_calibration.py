"""Study 11's calibration (what it times beside what it counts): the arithmetic of the time per instruction on a
hand-made run, the table a function of its raw records, the record sizes the floor is timed at, the write() floor
itself (a short timing), and its parameters refused before anything starts. The smoke run's calibration, on a real
server, is tests/test_record_cost.py's."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sstats

from logbench.base.errors import ParameterError
from logbench.studies import record_cost as rc
from logbench.studies.record_cost import calibration


def _rep(instructions: list[float]) -> pd.DataFrame:
    """Counted repeats of the baseline's backend: instructions per statement, one per repeat."""
    return pd.DataFrame({"engine": "postgresql", "server": "15 (local)", "configuration": "none", "baseline": "none",
                         "counter": "cachegrind", "process": "backend", "metric": "instructions", "call": "",
                         "repeat": range(len(instructions)), "per_statement": instructions})


def _records(user_us: list[float], transactions: int = 10_000) -> pd.DataFrame:
    floor = [{"part": "write_floor", "target": t, "nbytes": 150, "batch": 100,
              "per_write_us": [1.0, 1.1, 0.9, 1.0, 1.2], "env_id": "x"} for t in ("file", "pipe")]
    loads = [{"part": "cpu", "repeat": r, "transactions": transactions, "user_s": u * transactions / 1e6,
              "system_s": 0.5 * u * transactions / 1e6, "tps": 5000.0, "env_id": "x"} for r, u in enumerate(user_us)]
    return pd.DataFrame(floor + loads)


def test_time_per_instruction_by_hand():
    # user CPU 20, 22, 24 µs per transaction (mean 22, sd 2); 100,000 instructions per statement in both counted
    # repeats: the count has no spread, so Fieller's interval is the CPU's t interval over the count
    t = calibration.table(_records([20.0, 22.0, 24.0]), _rep([1e5, 1e5])).set_index("quantity")
    half = sstats.t.ppf(0.975, 2) * 2 / np.sqrt(3)
    user = t.loc["user_cpu_per_transaction"]
    assert (user["value"], user["ci_low"], user["ci_high"], user["n"]) == pytest.approx((22, 22 - half, 22 + half, 3))
    assert t.loc["cpu_per_transaction", "value"] == pytest.approx(33)  # user + system
    per = t.loc["time_per_instruction"]
    assert per["value"] == pytest.approx(22e-5)
    assert (per["ci_low"], per["ci_high"]) == pytest.approx(((22 - half) * 1e-5, (22 + half) * 1e-5))
    assert per["n"] == 2 and per["unit"] == "µs of user CPU per instruction"
    assert t.loc["instructions_per_statement", "value"] == pytest.approx(1e5)


def test_one_count_is_taken_as_exact_and_a_spread_count_widens_the_interval():
    user = [20.0, 22.0, 24.0]
    one = calibration.per_instruction(np.array(user), np.array([1e5]))
    two = calibration.per_instruction(np.array(user), np.array([1e5, 1e5]))
    assert (one.value, one.low, one.high) == pytest.approx((two.value, two.low, two.high))
    spread = calibration.per_instruction(np.array(user), np.array([0.9e5, 1.1e5]))
    assert spread.value == pytest.approx(22e-5)
    assert spread.low < two.low and spread.high > two.high


def test_the_floor_is_the_median_over_batches_and_the_table_a_function_of_its_records():
    records = _records([20.0, 22.0, 24.0])
    first = calibration.table(records, _rep([1e5, 1e5]))
    pd.testing.assert_frame_equal(first, calibration.table(records, _rep([1e5, 1e5])))
    floors = first[first["part"] == "write_floor"]
    assert list(floors["target"]) == ["file", "pipe"] and (floors["value"] == 1.0).all()
    assert (floors["n"] == 5).all() and (floors["batch"] == 100).all() and (floors["nbytes"] == 150).all()
    assert (floors["ci_low"] <= 1.0).all() and (floors["ci_high"] >= 1.0).all()


def test_without_a_counted_baseline_there_is_cpu_but_no_time_per_instruction():
    t = calibration.table(_records([20.0, 22.0]), _rep([]))
    assert "user_cpu_per_transaction" in set(t["quantity"]) and "time_per_instruction" not in set(t["quantity"])


def test_record_sizes_are_the_counted_file_destinations_else_a_fixed_list():
    rep = pd.DataFrame({"configuration": ["none", "stderr", "stderr", "csvlog", "syslog"],
                        "records_per_statement": [0, 2, 2, 2, 2], "log_bytes_per_statement": [0, 240, 260, 500, 300]})
    assert calibration.record_sizes(rep) == [125, 250]  # syslog's datagram is no file destination
    assert calibration.record_sizes(rep[rep["configuration"] == "none"]) == list(calibration.FALLBACK_SIZES)


@pytest.mark.parametrize("target", calibration.WRITE_TARGETS)
def test_write_times_are_positive_times(tmp_path, target):
    t = calibration.write_times(120, target, batches=10, batch=20, directory=tmp_path)
    assert t.shape == (10,) and (t > 0).all() and (t < 10_000).all()
    assert not any(tmp_path.iterdir())  # its temporary directory is gone


def test_write_times_reject_bad_arguments(tmp_path):
    with pytest.raises(ValueError):
        calibration.write_times(100, "socket", directory=tmp_path)
    with pytest.raises(ValueError):
        calibration.write_times(0, "file", directory=tmp_path)


def test_calibration_parameters_are_refused_before_anything_starts():
    for kwargs in ({"calibration_repeats": 1}, {"calibration_repeats": -2}, {"calibration_seconds": 0},
                   {"calibration_repeats": "many"}):
        with pytest.raises(ParameterError) as e:
            rc.define(profile="smoke", **kwargs)
        assert e.value.parameter == next(iter(kwargs))
    assert (rc.define(profile="smoke").calibration_repeats, rc.define(profile="standard").calibration_seconds) == (3, 8)
    assert rc.define(profile="smoke", calibration_repeats=0).calibration_seconds == 0


class _Backends:
    """The postmaster's children as the finder sees them, by time since the load started: ``lives`` pid -> (from,
    to) in seconds; ``clients`` the pids that are client backends (the rest: background processes)."""

    def __init__(self, lives: dict[int, tuple[float, float]], clients: set[int]):
        import time

        self.t0, self.lives, self.clients = time.monotonic(), lives, clients

    def _now(self) -> float:
        import time

        return time.monotonic() - self.t0

    def children(self, postmaster: int) -> set[int]:
        return {1} | {p for p, (a, b) in self.lives.items() if a <= self._now() < b}

    def exists(self, pid: int) -> bool:
        return pid == 1 or pid in self.children(0)


class _Running:
    def poll(self):
        return None


def test_the_client_backend_is_the_newest_client_backend_once_warm():
    # the set-up connection's backend still exiting while the client's runs, and an autovacuum worker throughout
    # (the earlier rule, one backend alone for the warm-up, found none of this within the load)
    pids = _Backends({101: (0.0, 0.6), 102: (0.05, 5.0), 103: (0.0, 5.0)}, clients={101, 102})
    assert calibration._client_backend(pids, 0, {1}, _Running(), timeout=3, is_client=pids.clients.__contains__) == 102
    # both first seen in one poll: the later fork
    pids = _Backends({201: (0.0, 0.5), 202: (0.0, 5.0)}, clients={201, 202})
    assert calibration._client_backend(pids, 0, {1}, _Running(), timeout=3, is_client=pids.clients.__contains__) == 202
    # no client backend at all: said, not a background process taken for it
    pids = _Backends({301: (0.0, 5.0)}, clients=set())
    with pytest.raises(calibration.ToolError, match="no client backend"):
        calibration._client_backend(pids, 0, {1}, _Running(), timeout=0.5, is_client=pids.clients.__contains__)
