"""Rotating a busy slow log: the analysis by hand, and every method once on a real MariaDB under sysbench."""

import numpy as np
import pytest

from conftest import the_smoke_run_is_here
from logbench.base.errors import ParameterError
from logbench.studies import log_rotation as rot

from test_mariadb import leftovers, scratch  # noqa: F401 (scratch is a fixture)


def test_throughput_effect_hand_computed():
    # seconds 1..8; rotation in second 4 (3.5 .. 3.6 s); second 1 and the final second 8 are not used
    tps = [50, 100, 100, 100, 40, 90, 100, 10]
    e = rot.throughput_effect(tps, 3.5, 3.6, duration=8)
    assert e["tps_before"] == 100  # seconds 2 and 3
    # window: seconds overlapping 3.5 .. 3.6 + 1 settle second -> seconds 4 and 5
    assert e["tps_worst"] == 40 and e["dip"] == pytest.approx(0.6)
    assert e["deficit_s"] == pytest.approx((1 - 1.0) + (1 - 0.4))


def test_throughput_effect_without_reference_is_nan():
    e = rot.throughput_effect([10, 10, 10], 1.2, 1.3, duration=3)
    assert np.isnan(e["dip"]) and np.isnan(e["deficit_s"])


def test_tracer_census_finds_lost_and_duplicated():
    old = b"# Query_time: 0.1\nSET timestamp=1;\nSELECT 'lbseq:1';\n# Query_time: 0.1\nSELECT 'lbseq:2';\n"
    new = b"# Query_time: 0.1\nSELECT 'lbseq:2';\n# Query_time: 0.1\nSELECT 'lbseq:4';\n"
    c = rot.tracer_census(old, new, [1, 2, 3, 4])
    assert c["tracer_missing"] == [3] and c["tracer_duplicated"] == [2]
    assert (c["tracer_in_old"], c["tracer_in_new"]) == (2, 2)


def test_rotation_sink_reads_both_files_from_the_mark(tmp_path):
    live = tmp_path / "slow.log"
    live.write_bytes(b"-- filler\n" * 3)
    sink = rot.RotationSink(live)
    mark = sink.mark()
    with open(live, "ab") as f:
        f.write(b"# Query_time: 1\nSELECT 1;\n")
    live.rename(tmp_path / "slow.log.1")
    live.write_bytes(b"# Query_time: 1\nSELECT 2;\n# Query_time: 1\nSELECT 3;\n")
    assert sink.count_since(mark).records == 3
    old, new = sink.data_since(mark)
    assert old == b"# Query_time: 1\nSELECT 1;\n" and new.count(b"SELECT") == 2


@pytest.mark.parametrize("kwargs, parameter", [
    ({"methods": ["logrotate"]}, "methods"),
    ({"workload": "tpcc"}, "workload"),
    ({"rotate_at": 1}, "rotate_at"),
    ({"rotate_at": 4, "duration": 5}, "rotate_at"),
    ({"duration": 2}, "duration"),
    ({"tracer_rate": 10000}, "tracer_rate"),
    ({"log_size_mb": -1}, "log_size_mb"),
    ({"clients": "[0]"}, "clients"),
])
def test_bad_parameters_fail_before_any_server_starts(kwargs, parameter, scratch):
    with pytest.raises(ParameterError) as e:
        rot.define(profile="smoke", **kwargs)
    assert e.value.parameter == parameter
    assert leftovers(scratch) == []


def check_every_method_once(study: rot.LogRotationStudy, recorded) -> None:
    """Every method once under load (the smoke profile), on the runs ``study`` recorded."""
    runs = rot.expand(recorded).set_index("configuration")
    assert set(runs.index) == set(rot.METHODS) | {"none_again"}  # with the A/A control
    # rename + FLUSH SLOW LOGS loses nothing and duplicates nothing: every statement is in the old or the new file
    r = runs.loc["rename_flush"]
    assert r["log_records_received"] == r["log_records_expected"] > 0
    assert r["tracer_lost"] == 0 and r["tracer_duplicated"] == 0 and r["tracer_sent"] > 50
    assert r["extra"]["tracer_in_old"] > 0 and r["extra"]["tracer_in_new"] > 0
    # no rotation: everything in the one file
    r = runs.loc["none"]
    assert r["log_records_received"] == r["log_records_expected"] and r["old_file_bytes"] == 0
    # switched off around the flush: only what was sent while it was off is missing
    r = runs.loc["rename_flush_disabled"]
    assert r["tracer_lost"] == 0 and r["tracer_lost_by_design"] > 0
    assert r["log_records_received"] < r["log_records_expected"]
    # the ebook's long_query_time trick does not reach the open sessions: nothing stops being logged
    r = runs.loc["ebook_long_query_time"]
    assert r["log_records_received"] == r["log_records_expected"] and r["tracer_lost_by_design"] == 0
    # copytruncate ran, and the server kept appending to the truncated file (no sparse hole)
    r = runs.loc["copytruncate"]
    assert r["rotated_file_bytes"] > study.log_size_mb * 2**20 and r["tracer_duplicated"] == 0
    assert r["extra"]["live_file_allocated_bytes"] >= 0.5 * r["extra"]["live_file_bytes"]
    assert np.isfinite(runs["dip"]).all() and np.isfinite(runs["tracer_stall_ms"]).all()
    s = rot.summary(recorded)
    assert list(s["configuration"]) == [*rot.METHODS, "none_again"] and (s.loc[s.configuration == "none", "ratio"] == 1).all()
    assert "`rename_flush`" in rot.finding(s)
    tl = rot.timeline(recorded)
    assert set(tl["configuration"]) == set(rot.METHODS) | {"none_again"} and (tl["n"] == 1).all()


@pytest.mark.integration
@pytest.mark.long_load
@pytest.mark.smoke_run_study
def test_every_method_once_under_load(tmp_path, request):
    # The workflow's smoke run executes this same study (SPEC.smoke[0]: the smoke profile, local): where it runs in
    # this session, tests/test_workflow.py asserts the same on its runs, and on what its guardians found left.
    if the_smoke_run_is_here(request):
        pytest.skip("asserted on the workflow's smoke run of this study in this session (tests/test_workflow.py)")
    scratch = request.getfixturevalue("scratch")
    study = rot.define(profile="smoke", backend="local", output_dir=tmp_path / "out")
    check_every_method_once(study, rot.run(study, progress=False).runs)
    assert leftovers(scratch) == []
