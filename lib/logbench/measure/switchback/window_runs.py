"""One run record per switchback window: PostgreSQL's (pgbench's per-second aggregate, the log read by its own
timestamps) and the fields every engine's window shares (:func:`window_run`, :func:`window_extra`), so MariaDB's
windows (:mod:`logbench.measure.benches.mariadb_switchback`) are recorded the same way."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from dataclasses import dataclass

from .. import controls
from ...base import records
from .design import SwitchbackDesign, Window
from .load import Edge


def window_extra(sb: SwitchbackDesign, windows: Sequence[Window], w: Window, e: Edge, first_position: int,
                 placement: str, **own: object) -> dict:
    """A window record's design fields (what :mod:`logbench.measure.switchwindows` reads), whatever the engine, and
    ``own``: the engine's per-second throughput, records in the guard, other arms' records and the like."""
    return {"design": "switchback", "layout": sb.layout, "load": w.load, "block": w.block, "unit": w.unit,
            "window": w.index, "attempt": first_position, "prev_arm": windows[w.index - 1].arm if w.index else None,
            "window_s": sb.window_s, "guard_s": sb.guard_s, "switch_requested": e.applied.requested,
            "switch_sent": e.applied.sent, "switch_applied": e.applied.applied,
            "guard_server_cpu_s": e.at_guard["server_cpu_s"] - e.at_switch["server_cpu_s"],
            "guard_logger_cpu_s": e.at_guard["logger_cpu_s"] - e.at_switch["logger_cpu_s"],
            "flush_s": e.flush_s, "flush_end": e.flush_end,
            "placement": placement, **own}


def window_run(study, bench, w: Window, e: Edge, *, env_id: str, clients: int, first_position: int,
               idle_state: str, placement: str, machine: dict, started: float, secs: float, own: Sequence[str],
               received: dict, expected: int, loss_defined: bool, lines: int, nbytes: int,
               **engine_fields: object) -> records.Run:
    """A window's :class:`records.Run` from what every engine measures alike (the window's place in the plan, its
    switch, its log records, the server's CPU and the machine's counters over its measured seconds);
    ``engine_fields``: what the load tool reports its own way (settings, workload, transactions and latency,
    the logger's CPU, ``extra``). One constructor for both engines, so their window records cannot drift apart."""
    sb: SwitchbackDesign = study.switchback
    steal = float(machine.get("steal_s", math.nan))
    got = sum(received.values())
    return records.Run(
        study=study.name, configuration=w.arm, destinations=tuple(own),
        engine=bench.engine, server_version=bench.server_version, backend=bench.backend,
        query_mode=bench.query_mode, scale=bench.scale,
        clients=clients, threads=clients, repeat=w.load * sb.blocks + w.block, position=first_position + w.index,
        warmup=False, seed=study.seed,
        started_at=dt.datetime.fromtimestamp(started, dt.timezone.utc).isoformat(timespec="milliseconds"),
        duration_s=secs, wall_s=secs, switch="reload", switch_s=e.applied.latency_s,
        log_records_expected=expected, log_records_received=got,
        log_loss=records.loss(expected, got) if own and loss_defined else math.nan,
        log_records_by_destination=received, log_lines=lines, log_bytes=nbytes,
        log_lines_per_s=lines / secs, log_bytes_per_s=nbytes / secs,
        server_cpu_s=e.at_end["server_cpu_s"] - e.at_guard["server_cpu_s"],
        env_id=env_id, log_dir_fs=bench.log_dir_fs(), idle_state=idle_state,
        cpuidle_driver=controls.cpuidle_driver(), cpuidle_usage=controls.cpuidle_usage(machine), steal_s=steal,
        high_steal=controls.high_steal(steal, secs), **engine_fields)


@dataclass(frozen=True)
class Logged:
    """What a window's own destinations received in its measured seconds (records, lines, bytes), in its guard, and
    what the other arms' destinations received meanwhile: PostgreSQL's by the log's own timestamps (:func:`logged`),
    MariaDB's by the files' sizes at the edges (:func:`logbench.measure.benches.mariadb_switchback.logged`)."""

    received: dict
    foreign: dict
    lines: int
    nbytes: int
    in_guard: int


def logged(counted: dict, own: Sequence[str], start: int, sb: SwitchbackDesign) -> Logged:
    measured = range(start + sb.guard_s, start + sb.window_s)
    return Logged(received={n: sum(counted[n].records[s] for s in measured) for n in own},
                  foreign={n: sum(c.records[s] for s in measured) for n, c in counted.items() if n not in own},
                  lines=sum(counted[n].lines[s] for n in own for s in measured),
                  nbytes=sum(counted[n].bytes[s] for n in own for s in measured),
                  in_guard=sum(counted[n].records[s] for n in own for s in range(start, start + sb.guard_s)))


def window_records(study, bench, env_id: str, clients: int, windows: Sequence[Window], edges: Sequence[Edge],
                   per_second: dict, marks: dict, first_position: int, idle_state: str, placement: str) -> list:
    """One :class:`records.Run` per finished window of a load: throughput and latency from pgbench's per-second
    aggregate over the measured seconds, records by the log's own timestamps in the same seconds."""
    from ..benches.pg_switchback import records_per_second

    from ...base.logsinks import wait_quiet

    sb: SwitchbackDesign = study.switchback
    sinks = {s.name: s for s in bench.all_sinks()}
    wait_quiet(list(sinks.values()))  # the collector and the daemons may still be writing the last window's records
    counted = {name: records_per_second(s.path, marks.get(name, 0), s.records) for name, s in sinks.items()}
    out = []
    for w, e in zip(windows, edges):
        start = int(round(e.applied.requested))
        measured = range(start + sb.guard_s, start + sb.window_s)
        if any(s not in per_second for s in measured):
            continue  # pgbench never reported a second of it (the load was stopped right after): not measured
        rows = [per_second[s] for s in measured]
        tx = sum(r[0] for r in rows)
        lat, lat2 = sum(r[1] for r in rows), sum(r[2] for r in rows)
        secs = float(len(measured))
        cfg = study.bench_configuration(w.arm)
        own = [s.name for s in bench.sinks(cfg)]
        log = logged(counted, own, start, sb)
        # seconds inside the load: its connections and set-up statements came before the first window
        expected = cfg.expected_records(statements=tx * bench.load_workload.statements, transactions=tx,
                                        connections=0, runs=0) * len(own)
        mean_us = lat / tx if tx else math.nan
        var_us = (lat2 / tx - mean_us**2) if tx else math.nan
        out.append(window_run(
            study, bench, w, e, env_id=env_id, clients=clients, first_position=first_position,
            idle_state=idle_state, placement=placement, machine=controls.delta(e.at_guard, e.at_end), started=start,
            secs=secs, own=own, received=log.received, expected=expected,
            # Records are placed by their own timestamps, transactions by pgbench's clock at their end: at the
            # two edges of the measured seconds a few records can fall on the other side (see notebook 02).
            loss_defined=True, lines=log.lines, nbytes=log.nbytes,
            settings=bench.effective_settings(cfg), workload=f"{bench.workload} (one continuous load)",
            transactions=tx, failed=sum(r[3] for r in rows), tps=tx / secs,
            latency_mean_ms=mean_us / 1000, latency_stddev_ms=math.sqrt(max(var_us, 0.0)) / 1000,
            latency_p50_ms=math.nan, latency_p95_ms=math.nan, latency_p99_ms=math.nan, latency_samples=0,
            logger_cpu_s=e.at_end["logger_cpu_s"] - e.at_guard["logger_cpu_s"],
            extra=window_extra(sb, windows, w, e, first_position, placement,
                               per_second_tps=[per_second.get(s, (0,))[0] for s in range(start, start + sb.window_s)],
                               records_in_guard=log.in_guard, foreign_records=log.foreign,
                               **dict(bench.load.tags)),
        ))
    return out
