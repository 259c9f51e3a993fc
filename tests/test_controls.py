"""The noise controls: the idle-state request is released whatever happens, counters read."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from logbench.measure import controls
from logbench.base.errors import ParameterError

DEVICE = controls.DMA_LATENCY


def _dma_fds() -> int:
    n = 0
    for fd in Path("/proc/self/fd").iterdir():
        try:
            if os.readlink(fd) == str(DEVICE):
                n += 1
        except OSError:
            pass
    return n


needs_device = pytest.mark.skipif(not os.access(DEVICE, os.W_OK) or controls.cpuidle_driver() == "none",
                                  reason="needs root, /dev/cpu_dma_latency and a cpuidle driver to read it")


@needs_device
def test_hold_keeps_the_device_open_only_inside():
    before = _dma_fds()
    with controls.IdleState("hold") as idle:
        assert idle.in_force == "hold"
        assert _dma_fds() == before + 1
    assert _dma_fds() == before


@needs_device
@pytest.mark.parametrize("exc", [RuntimeError, KeyboardInterrupt])
def test_hold_is_released_after_a_failure_or_an_interrupt(exc):
    before = _dma_fds()
    with pytest.raises(exc):
        with controls.IdleState("hold"):
            assert _dma_fds() == before + 1
            raise exc("boom")
    assert _dma_fds() == before


@needs_device
def test_a_held_descriptor_is_not_inherited_by_children():
    import subprocess

    with controls.IdleState("hold"):
        out = subprocess.run(["ls", "-l", "/proc/self/fd"], capture_output=True, text=True, check=True).stdout
    assert str(DEVICE) not in out


def test_free_does_nothing():
    before = _dma_fds()
    with controls.IdleState("free") as idle:
        assert idle.in_force == "free" and _dma_fds() == before


def test_missing_device_is_recorded_not_fatal(tmp_path):
    with controls.IdleState("hold", device=tmp_path / "nope") as idle:
        assert idle.in_force.startswith("unavailable:") and "does not exist" in idle.in_force


def test_bad_mode_names_the_parameter():
    with pytest.raises(ParameterError, match="idle_state.*'hold', 'free'"):
        controls.IdleState("off")


def test_snapshot_delta_counts_idle_entries_and_steal():
    a = controls.snapshot()
    import time

    time.sleep(0.05)
    b = controls.snapshot()
    d = controls.delta(a, b)
    assert d["monotonic_s"] > 0 and d["steal_s"] >= 0
    usage = controls.cpuidle_usage(d)
    if controls.cpuidle_driver() != "none":
        assert usage and all(v >= 0 for v in usage.values())


def test_high_steal_threshold():
    assert not controls.high_steal(0.0, 4.0, cpus=2)
    assert controls.high_steal(0.2, 4.0, cpus=2)  # 2.5 % of 8 CPU-seconds
    assert not controls.high_steal(float("nan"), 4.0, cpus=2)


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_split_placement_pins_load_tools_and_server_apart_and_restores():
    import subprocess

    mine = os.sched_getaffinity(0)
    server = subprocess.Popen(["sleep", "30"])
    try:
        with controls.Placement("split") as place:
            assert place.in_force.startswith("split:") and not place.server_cpus & place.load_cpus
            load = subprocess.Popen(["sleep", "30"])  # a load tool started now inherits the load CPUs
            try:
                assert os.sched_getaffinity(load.pid) == place.load_cpus
            finally:
                load.kill()
                load.wait()
            place.pin_server(server.pid)
            assert os.sched_getaffinity(server.pid) == place.server_cpus
        assert os.sched_getaffinity(0) == mine
    finally:
        server.kill()
        server.wait()


def test_no_placement_changes_nothing():
    mine = os.sched_getaffinity(0)
    with controls.Placement("none") as place:
        assert place.in_force == "none" and os.sched_getaffinity(0) == mine
    with pytest.raises(ParameterError, match="placement"):
        controls.Placement("pinned")


def test_a_hold_without_a_cpuidle_driver_is_recorded_as_unavailable(tmp_path, monkeypatch):
    # a writable stand-in for the device, and a sysfs whose cpuidle has no driver: the request would be written but
    # nothing reads it, so the record must not say "hold"
    device = tmp_path / "cpu_dma_latency"
    device.write_bytes(b"")
    sysfs = tmp_path / "cpu"
    (sysfs / "cpuidle").mkdir(parents=True)
    (sysfs / "cpuidle" / "current_driver").write_text("none\n")
    monkeypatch.setattr(controls, "CPU_SYSFS", sysfs)
    with controls.IdleState("hold", device=device) as idle:
        assert idle.in_force == controls.NO_DRIVER and not idle.holding
    (sysfs / "cpuidle" / "current_driver").write_text("haltpoll\n")
    with controls.IdleState("hold", device=device) as idle:
        assert idle.in_force == "hold" and idle.holding
