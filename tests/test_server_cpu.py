"""Server CPU per run, read on a real PostgreSQL while its backends exit (seconds)."""

from __future__ import annotations

import threading
import time

import pytest

from logbench.servers import process
from logbench.servers.postgres import LocalPostgres
from logbench.base.settings import Settings
from logbench.workloads.pgbench import Pgbench


pytestmark = pytest.mark.integration


def _poll(pid: int, stop: threading.Event, out: list[float]) -> None:
    while not stop.is_set():
        out.append(process.tree_cpu_seconds(pid))


# A floor on the server's CPU per transaction, not per second of wall: a busy machine (CI runs the fresh-machine
# container beside the host's tests) gives the server less of a second, never less work per select. The committed
# pgbench -S runs spend 15.6 us or more each, medians 27-54 us (data/processed: the runs of pg_idle_connections,
# pg_destinations_versions and pg_destinations_post004); the one-pass reading this guards against showed 0.02 s
# for a 4 s run at thousands of tps, ~2.5 us each.
MIN_CPU_PER_TX_S = 5e-6


def test_server_cpu_is_a_cumulative_counter_while_backends_exit(log_dir):  # noqa: F811
    """Read continuously while 8 backends serve and then exit: a cumulative counter never drops.

    The old one-pass reading dropped by a whole backend's CPU whenever the postmaster reaped it
    between reading its own children times and listing its children, which is how 4 s runs at
    thousands of tps came out at 0.02 s of server CPU.
    """
    with LocalPostgres(Settings.of("postgresql"), log_dir=log_dir) as pg:
        bench = Pgbench(pg.binary("pgbench"), pg.conninfo)
        bench.initialise(1)
        for _ in range(2):
            readings: list[float] = []
            stop = threading.Event()
            t = threading.Thread(target=_poll, args=(pg.pid, stop, readings))
            before = process.tree_cpu_seconds(pg.pid)
            t.start()
            try:
                r = bench.run(8, 1, "prepared")
                time.sleep(0.5)  # the backends exit and are reaped while we read
            finally:
                stop.set()
                t.join()
            process.children_settled(pg.pid, lambda p: "[local]" in " ".join(p.cmdline()))
            after = process.tree_cpu_seconds(pg.pid)
            valid = [x for x in readings if x == x]
            assert len(valid) > 20
            drops = [b - a for a, b in zip(valid, valid[1:]) if b < a - 0.015]
            assert not drops, f"server CPU went backwards by {drops}"
            assert r.tps > 500
            assert after - before > MIN_CPU_PER_TX_S * r.transactions, (before, after, r.transactions)


def test_a_smoke_study_records_the_controls_and_the_server_cpu(tmp_path):
    """Every run of a real (smoke) study: the controls in force, the machine's counters, the server's
    context switches, and server CPU that a server answering thousands of transactions must spend."""
    import os

    from logbench.studies import pg_destinations as study_mod

    study = study_mod.define(profile="smoke", destinations=["stderr"], clients=[1, 2], repeats=2, backend="local",
                             output_dir=tmp_path / "out", placement="split")
    runs = study_mod.run(study, progress=False).runs
    assert set(runs.configuration) == {"none", "stderr", "none_again"}
    from logbench.measure import controls

    can_hold = os.access("/dev/cpu_dma_latency", os.W_OK) and controls.cpuidle_driver() != "none"
    assert (runs.idle_state == "hold").all() if can_hold else runs.idle_state.str.startswith("unavailable:").all()
    assert runs.cpuidle_driver.astype(bool).all()
    assert (runs.steal_s >= 0).all()
    assert (runs.server_ctx_voluntary > 0).all() and (runs.server_ctx_involuntary >= 0).all()
    assert (runs.server_cpu_s > MIN_CPU_PER_TX_S * runs.transactions).all(), \
        runs[["configuration", "clients", "transactions", "server_cpu_s"]]
    assert runs.extra.map(lambda e: e["placement"]).str.startswith("split").all()
    # The logging collector's own CPU, apart (it is in server_cpu_s too): every file line passes through it
    collector = runs.set_index(["configuration", "clients", "repeat"]).extra.map(lambda e: e["collector_cpu_s"])
    assert (collector >= 0).all() and (collector.loc["stderr"] > 0.01).all(), collector
    assert collector.loc["stderr"].min() > collector.loc["none"].max(), collector
    assert (runs.server_cpu_s.to_numpy() >= runs.extra.map(lambda e: e["collector_cpu_s"]).to_numpy()).all()
    summary = study_mod.summary(runs)
    assert (summary.set_index("configuration").loc["stderr", "collector_cpu_s_mean"] > 0).all()
    # and its context switches: it sleeps on the pipe between messages, so a logging run wakes it
    woken = runs.set_index(["configuration", "clients", "repeat"]).extra.map(lambda e: e["collector_ctx_voluntary"])
    assert (woken >= 0).all() and (woken.loc["stderr"] > 0).all(), woken
    per_record = study_mod.per_record_cost(runs).set_index("configuration")
    assert (per_record.loc[["stderr"], "collector_vol_per_record_mean"] > 0).all()
