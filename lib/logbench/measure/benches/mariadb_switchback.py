"""MariaDB's half of the switchback design: switch the logs by SET GLOBAL inside one continuous sysbench load.

What a running session takes at once and what it does not (measured on MariaDB 10.11; the test
tests/test_mariadb_switchback.py checks it on the real server): ``general_log`` and ``log_output`` set globally act
on the next statement of every open session; ``long_query_time`` and ``log_slow_rate_limit`` are copied into a
session when it connects, so a global change never reaches sysbench's open connections; ``slow_query_log`` is
both: a statement is slow-logged only when the global flag *and* the session's own copy, taken at connect, are
on (a load that connected with the slow log off never logs, whatever the global flag says later). So:

- the variables sessions read at connect (:data:`SESSION_READ`) take one value for the whole load, set globally
  before sysbench connects (``long_query_time = 0`` when an arm logs every statement): the arms may differ only
  in what acts at once, and a study asking otherwise is refused before anything starts (:func:`check_switchable`);
- when an arm turns the slow log on, sysbench connects with it on (:data:`CONNECT_ON`), and the baseline's
  settings are switched in as soon as every session is connected, in the lead-in, before the first window;
- a log file's name is a restart here: SET GLOBAL refuses any file but a regular one (``slow_query_log_file =
  /dev/null``: "can't be set to the value of '/dev/null'", MariaDB 10.11, 2026-11-29), so it is read at the server's
  start (:data:`START_READ`), one value for every arm that logs there (:func:`start_settings`, which the study's
  base takes): an arm that leaves that log off writes nothing to it whatever its name. Arms that would log to two
  names are refused.

Windows follow sysbench's own clock: its per-second reports (``--report-interval=1``) count from the moment its
threads started, which is no whole epoch second, so every window edge is that moment plus whole seconds. Records
per window: MariaDB writes its log files itself, synchronously, once per statement (no collector, no buffer), so
each file's size read at the window's edges bounds its records exactly. The slow log as a table is refused: a
SET GLOBAL out of ``log_output = TABLE`` took 8-17 s under 10 clients (measured 2026-11-24), longer than any window.
"""

from __future__ import annotations

import math
import signal
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .. import controls, switchstats
from ...base.errors import ParameterError, SettingError, ToolError
from ...servers.mariadb import norm_name, same_value, sql_literal
from ...base.settings import Settings
from .pg_switchback import Applied

# Copied into a session at connect: one value per load.
SESSION_READ = ("long_query_time", "log_slow_rate_limit")
# Acts only where the session's own copy, taken at connect, is on: on while the load connects if any arm sets it.
CONNECT_ON = ("slow_query_log",)
# A log file's name, opened at the server's start -> the flag that turns that log on.
START_READ = {"slow_query_log_file": "slow_query_log", "general_log_file": "general_log"}


def _slow_arms(configurations: Sequence) -> list:
    """The arms that slow-log: the only ones a session-read slow-log variable matters to."""
    return [c for c in configurations if any(norm_name(k) == "slow_query_log" and v == "on"
                                             for k, v in c.settings.items())]


def _session_value(c, name: str, base: Settings | None) -> str | None:
    """What a session of this arm would copy at connect: the arm's value, else the base's (None: the default)."""
    for k, v in c.settings.items():
        if norm_name(k) == name:
            return v
    for k, v in (base or {}).items():
        if norm_name(k) == name:
            return v
    return None


def load_settings(configurations: Sequence, base: Settings | None = None) -> dict[str, str]:
    """The session-read variables the load runs with: the one value the slow-logging arms need."""
    out: dict[str, str] = {}
    for c in _slow_arms(configurations):
        for name in SESSION_READ:
            v = _session_value(c, name, base)
            if v is not None:
                out[name] = v
    return out


def _file_names(configurations: Sequence) -> dict[str, dict[str, str | None]]:
    """Each log file's name as the arms that write that log (or name its file) would have it: name -> arm -> value
    (None: the server's default)."""
    out: dict[str, dict[str, str | None]] = {}
    for name, flag in START_READ.items():
        for c in configurations:
            own = {norm_name(k): v for k, v in c.settings.items()}
            if name in own or own.get(flag) == "on":
                out.setdefault(name, {})[c.name] = own.get(name)
    return out


def start_settings(configurations: Sequence) -> dict[str, str]:
    """The log file names the server starts with for a switchback load: the one name the arms that log there
    share, where they name one (check_switchable refuses arms that differ)."""
    return {name: next(iter(set(by_arm.values()))) for name, by_arm in _file_names(configurations).items()
            if len(set(by_arm.values())) == 1 and None not in by_arm.values()}


def check_switchable(configurations: Sequence, base: Settings | None = None) -> None:
    """ParameterError naming ``design`` for arms a switch inside a running load cannot give (module notes)."""
    problems = []
    for name, by_arm in _file_names(configurations).items():
        if len(set(by_arm.values())) > 1:
            problems.append(f"{', '.join(by_arm)}: {name} takes {len(set(by_arm.values()))} values ("
                            f"{', '.join(sorted(str(v or 'the default') for v in set(by_arm.values())))}; a log "
                            "file's name is read at the server's start here)")
    for c in configurations:
        for k, v in c.settings.items():
            if norm_name(k) == "log_output" and "table" in str(v).lower():
                problems.append(f"{c.name}: {k} = {v} (measured: a SET GLOBAL out of the table log took 8-17 s "
                                "under 10 clients, longer than any window)")
    slow = _slow_arms(configurations)
    for name in SESSION_READ:
        values = {_session_value(c, name, base) for c in slow}
        if len(values) > 1:
            problems.append(f"{', '.join(c.name for c in slow)}: {name} takes {len(values)} values "
                            f"({', '.join(sorted(str(v or 'the default') for v in values))}); sessions read it "
                            "at connect")
    if problems:
        raise ParameterError("design", "switchback",
                             "'blocks' for these arms, or configurations a SET GLOBAL inside a running load can "
                             "switch: " + "; ".join(problems))


class Control:
    """Switch the server's logging by SET GLOBAL over its quiet admin session; every window's switch is made
    (also between equal settings: the same statements, so every window starts after the same disturbance)."""

    def __init__(self, server, fixed: dict[str, str]):
        self.server, self.fixed = server, dict(fixed)
        self.names: list[str] = []
        self._checked: set[Settings] = set()

    def desired(self, settings: Settings) -> dict[str, str]:
        """Every variable any arm sets, at this arm's value or the server's at its start (a log file's name the
        server started with: not switched)."""
        out = {n: self.server.initial[n] for n in self.names}
        out.update({norm_name(k): v for k, v in settings.items() if norm_name(k) not in START_READ})
        out.update(self.fixed)
        return out

    def start(self, arms: Sequence[Settings]) -> None:
        """Before the load connects: the session-read values, and the slow log on if an arm turns it on; the log
        files' names as the server started (the arms' own, or the load is refused)."""
        named = {norm_name(k): v for s in arms for k, v in s.items() if norm_name(k) in START_READ}
        if named:
            now = self.server.global_variables(list(named))
            bad = {n: (v, now.get(n)) for n, v in named.items() if not same_value(v, now.get(n, ""))}
            if bad:
                raise SettingError(f"the server started with other log files than the arms name: {bad}")
        names = {norm_name(k) for s in arms for k in s if norm_name(k) not in START_READ} | set(self.fixed)
        missing = sorted(n for n in names if n not in self.server.initial)
        if missing:
            raise SettingError(f"the server did not report {missing} at its start: cannot switch them back")
        self.names = sorted(names)
        connect = {norm_name(k): v for s in arms for k, v in s.items() if norm_name(k) in CONNECT_ON and v == "on"}
        for n, v in {**self.fixed, **connect}.items():
            self.server.query(f"SET GLOBAL {n} = {sql_literal(v)}")

    def connected(self, clients: int, timeout: float = 60.0) -> None:
        """Wait until ``clients`` sessions besides ours are connected (sysbench's threads have their copies)."""
        deadline = time.monotonic() + timeout
        while int(self.server.query("SELECT COUNT(*) FROM information_schema.processlist "
                                    "WHERE id <> CONNECTION_ID() AND command <> 'Daemon'")[0][0]) < clients:
            if time.monotonic() > deadline:
                raise ToolError(f"sysbench's {clients} sessions did not all connect within {timeout} s")
            time.sleep(0.01)

    def apply(self, settings: Settings, requested: float) -> Applied:
        sent = time.time()
        for n, v in self.desired(settings).items():
            if n not in self.fixed:
                self.server.query(f"SET GLOBAL {n} = {sql_literal(v)}")
        applied = time.time()  # SET GLOBAL of these acts on the next statement of every session
        if settings not in self._checked:
            self.check(settings)
            self._checked.add(settings)
        return Applied(requested, sent, applied)

    def check(self, settings: Settings) -> None:
        want = self.desired(settings)
        now = self.server.global_variables(list(want))
        bad = {n: (v, now.get(n)) for n, v in want.items() if n not in now or not same_value(v, now[n])}
        if bad:
            raise SettingError(f"after SET GLOBAL, the server reports other values than asked for: {bad}")

    def restore(self) -> None:
        """Every switched variable back to its value at the server's start (a block design may follow)."""
        for n in self.names:
            self.server.query(f"SET GLOBAL {n} = {sql_literal(self.server.initial[n])}")


class ContinuousSysbench:
    """sysbench for a whole load, its per-second reports read as they come: an interrupt or a stop at any moment
    keeps every second already reported. ``zero``: the epoch second (float) its threads started, the zero of its
    reports; report k covers [zero + k - 1, zero + k)."""

    def __init__(self, sysbench, test, clients: int, seconds: int, seed: int):
        """``test``: the bench's load (a sysbench Workload, or a bundled test by name)."""
        self.sysbench, self.test, self.clients, self.seconds, self.seed = sysbench, test, clients, int(seconds), seed
        self.running_sb = None
        self.zero = math.nan
        self._epoch_of_monotonic = 0.0

    def __enter__(self) -> "ContinuousSysbench":
        self._epoch_of_monotonic = time.time() - time.monotonic()
        self.running_sb = self.sysbench.start(self.test, self.clients, self.seconds, report_interval=1,
                                              seed=self.seed)
        if not self.running_sb.started.wait(timeout=60) or math.isnan(self.running_sb.started_monotonic):
            raise self.ended_early(math.nan)
        self.zero = self.running_sb.started_monotonic + self._epoch_of_monotonic
        return self

    @property
    def argv(self) -> list[str]:
        return self.running_sb.argv if self.running_sb else []

    def running(self) -> bool:
        return self.running_sb is not None and self.running_sb.proc.poll() is None

    def ended_early(self, planned_end: float) -> ToolError:
        r = self.running_sb
        rc = r.proc.poll() if r else None
        err = "".join(r._stderr)[-2000:] if r else ""
        return ToolError(f"sysbench ended before the load's last window (exit status {rc}; planned end "
                         f"{planned_end:.0f}); `{' '.join(self.argv)}` wrote:\n{err}\n{r.text[-1000:] if r else ''}")

    def per_second(self) -> dict[int, dict]:
        """Report k (1, 2, ...) -> its numbers (tps, qps, err/s, the percentile latency), as reported so far."""
        from ...workloads.sysbench import parse_intervals

        text = self.running_sb.text if self.running_sb else ""
        return {int(round(i.t_s)): {"tx": int(round(i.tps)), "queries": int(round(i.qps)),
                                    "failed": int(round(i.errors_per_s)), "pct_ms": i.latency_pct_ms}
                for i in parse_intervals(text)}

    def progress(self) -> list[tuple[float, float]]:
        return [(self.zero + k, v["tx"]) for k, v in sorted(self.per_second().items())]

    def stop(self) -> dict[int, dict]:
        r = self.running_sb
        if r is None:
            return {}
        if r.proc.poll() is None:
            r.proc.send_signal(signal.SIGTERM)
            try:
                r.proc.wait(timeout=10)
            except Exception:
                r.kill()
        r._reader.join(timeout=10)
        out = self.per_second()
        self.running_sb = None
        return out

    def __exit__(self, *exc) -> None:
        if self.running_sb is not None:
            try:
                self.stop()
            finally:
                if self.running_sb is not None:
                    self.running_sb.kill()
                    self.running_sb = None


def counters(bench) -> dict:
    """What is read at an edge: server CPU, the machine's steal and idle states, every log file's size (at a
    window's end replaced by the sizes read at its edge itself, just before the next switch: the counters are
    read 50 ms early, which would leave 5 % of a 1 s measured part's records out)."""
    from ...servers.process import tree_cpu_seconds

    # the files first, at the edge itself: the server's CPU takes milliseconds to read, in which 50k
    # statements/s write ~150 records (the guard's end read after it left 0.16 % of a window's records out)
    files = {n: s.mark() for n, s in file_sinks(bench).items()}
    return {"files": files, "server_cpu_s": tree_cpu_seconds(bench.server.pid, attempts=3), "logger_cpu_s": 0.0,
            **controls.snapshot()}


def file_sinks(bench) -> dict:
    return {n: s for n, s in bench._sinks.items() if n != "slow_table"}  # (the table arm is refused)


def run_load(study, bench, clients: int, windows: tuple, *, on_block=None):
    """One load of ``windows`` on the bench's running server: the MariaDB counterpart of
    :func:`logbench.measure.switchback.run_load` (same return shape: edges, per-second reports, marks)."""
    from ..switchback import TAIL_S, sleep_until, switch_windows

    sb = study.switchback
    arms = [study.bench_configuration(a).settings for a in dict.fromkeys(w.arm for w in windows)]
    control = Control(bench.server, load_settings(study.configurations, bench.base))
    control.start(arms)  # before sysbench connects: its sessions copy the session-read variables
    bench._rotate_if_large()
    total = sb.lead_in_s + len(windows) * sb.window_s + 6
    edges: list = []
    marks: dict = {}
    seed = int(np.random.SeedSequence([study.seed, clients, windows[0].load, 0x5B]).generate_state(1)[0]) & 0x7FFFFFFF
    with ContinuousSysbench(bench.sysbench, bench.load, clients, total, seed) as load:
        # window k's edge: the threads' start plus whole seconds (sysbench's reports count from it)
        t0 = math.floor(sb.lead_in_s) + 1
        try:
            control.connected(clients)
            control.apply(study.bench_configuration(study.baseline).settings, requested=time.time())
            marks = {"zero": load.zero, "t0": t0, "load_settings": control.fixed}
            def files_at_edge(edge) -> None:
                # the window before ends here: its files' sizes at its edge, before this switch
                edge.at_end["files"] = {n: f.mark() for n, f in file_sinks(bench).items()}

            pending = switch_windows(windows, sb, load.zero + t0, load, edges, on_block=on_block, at_edge=files_at_edge,
                                     read=lambda: counters(bench),
                                     switch=lambda arm, at: control.apply(study.bench_configuration(arm).settings,
                                                                          requested=at))
            end = load.zero + t0 + len(windows) * sb.window_s
            sleep_until(end)
            files_at_edge(edges[-1])
            sleep_until(end + TAIL_S)
            per_second = load.stop()
            control.restore()
            if pending is not None:
                on_block(*pending)
        except BaseException as e:
            e.partial = (edges, load.stop(), marks)  # type: ignore[attr-defined]
            try:
                control.restore()
            except Exception:
                pass  # the server may be what failed: the interrupt or the error is what is told
            raise
    return edges, per_second, marks


def window_records(study, bench, env_id: str, clients: int, windows: Sequence, edges: Sequence, per_second: dict,
                   marks: dict, first_position: int, idle_state: str, placement: str) -> list:
    """One :class:`records.Run` per finished window: throughput from sysbench's reports of its measured seconds,
    records from the log files' sizes at its edges (the fields both engines share: ``switchback.window_run``)."""
    from ..switchback import window_extra, window_run
    from . import mariadb as mb

    sb = study.switchback
    zero, t0 = marks.get("zero", math.nan), marks.get("t0", 0)
    sinks = file_sinks(bench)
    out = []
    for w, e in zip(windows, edges):
        first = t0 + w.index * sb.window_s  # report k covers [zero + k - 1, zero + k)
        measured = range(first + sb.guard_s + 1, first + sb.window_s + 1)
        if any(k not in per_second for k in measured):
            continue
        rows = [per_second[k] for k in measured]
        tx, queries = sum(r["tx"] for r in rows), sum(r["queries"] for r in rows)
        failed = sum(r["failed"] for r in rows)
        secs = float(len(measured))
        cfg = study.bench_configuration(w.arm)
        own = list(cfg.destinations)
        log = logged(sinks, cfg, own, e)
        settings = bench.effective_settings(cfg)
        settings.update(marks.get("load_settings", {}))
        out.append(window_run(
            study, bench, w, e, env_id=env_id, clients=clients, first_position=first_position,
            idle_state=idle_state, placement=placement,
            machine=controls.delta({k: v for k, v in e.at_guard.items() if k != "files"},
                                   {k: v for k, v in e.at_end.items() if k != "files"}),
            started=zero + first, secs=secs, own=own, received=log.received,
            expected=cfg.expected_records(statements=mb.statements_sent(queries, failed)) * len(own),
            loss_defined=bench.loss_defined(cfg), lines=log.lines, nbytes=log.nbytes,
            settings=settings, workload=bench.workload, transactions=tx, failed=failed, tps=tx / secs,
            latency_mean_ms=math.nan, latency_stddev_ms=math.nan, latency_p50_ms=math.nan,
            latency_p95_ms=float(np.mean([r["pct_ms"] for r in rows])), latency_p99_ms=math.nan, latency_samples=0,
            logger_cpu_s=0.0,
            extra=window_extra(sb, windows, w, e, first_position, placement,
                               per_second_tps=[per_second.get(k, {"tx": 0})["tx"]
                                               for k in range(first + 1, first + sb.window_s + 1)],
                               records_in_guard=log.in_guard, foreign_records=log.foreign,
                               load_settings=marks.get("load_settings", {}), sysbench_zero=zero,
                               **bench.window_numbers(queries=queries, qps=queries / secs, configuration=cfg,
                                                     statements=mb.statements_sent(queries, failed))),
        ))
    return out


def logged(sinks: dict, cfg, own: Sequence[str], e):
    """What a window's own log files received (the bytes between the guard's and the window's end marks, counted
    as the arm's records: ``cfg.records``, else the sink's), in its guard, and the lines the other arms' files got
    meanwhile: the :class:`logbench.measure.switchback.window_runs.Logged` PostgreSQL's windows fill by timestamps."""
    from ...base.logsinks import count_records
    from ..switchback.window_runs import Logged

    def counted(name: str, a: dict, b: dict) -> tuple[int, int, int]:
        s = sinks[name]
        if b["files"][name] == a["files"][name]:  # nothing between the marks; a log no arm turns on is never made
            return 0, 0, 0
        with open(s.path, "rb") as f:
            f.seek(a["files"][name])
            data = f.read(b["files"][name] - a["files"][name])
        lines = data.splitlines()
        return count_records(lines, cfg.records or s.records), len(lines), len(data)

    got = {n: counted(n, e.at_guard, e.at_end) for n in own}
    return Logged(received={n: c[0] for n, c in got.items()},
                  foreign={n: counted(n, e.at_guard, e.at_end)[1] for n in sinks if n not in own},
                  lines=sum(c[1] for c in got.values()), nbytes=sum(c[2] for c in got.values()),
                  in_guard=sum(counted(n, e.at_switch, e.at_guard)[0] for n in own))


def pilot(study, bench, clients: int, seconds: int) -> dict[str, object]:
    """A short load of the baseline: this machine's per-second noise now and the half-width it predicts."""
    from ..switchback import sleep_until

    sb = study.switchback
    bench.server.restart(base=bench.base)
    with ContinuousSysbench(bench.sysbench, bench.load, clients, sb.lead_in_s + seconds + 3, study.seed) as load:
        sleep_until(load.zero + sb.lead_in_s + 1 + seconds + 0.2)
        per_second = load.stop()
    first = sb.lead_in_s + 1
    tps = [per_second.get(k, {"tx": 0})["tx"] for k in range(first + 1, first + seconds + 1)]
    n = sb.loads * sb.blocks
    return {"clients": clients, "seconds": seconds, "tps_mean": float(np.mean(tps)), "windows_per_arm": n,
            "measured_s": sb.measured_s,
            **switchstats.predicted_halfwidth(np.log(np.maximum(tps, 1)), sb.measured_s, n, sb.layout)}


def _restart(study, bench) -> None:
    """Each load on a freshly started server (independent loads), warmed as the block design warms a restart."""
    bench.server.restart(base=bench.base)
    bench.warm_after_restart()


def engine():
    """The switchback design's MariaDB engine (:class:`logbench.measure.switchback.Engine`)."""
    from ..switchback import Engine

    return Engine(run_load=run_load, window_records=window_records, pilot=pilot, restart=_restart,
                  server_pid=lambda bench: bench.server.pid)
