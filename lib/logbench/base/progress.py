"""A running study's progress, told to a channel that is not the notebook (issue 17).

Inside papermill the kernel's stdout and stderr are captured into the executed notebook, so a study
cannot talk to the terminal that started it: a progress bar stays in the notebook (and in its HTML
report), so no study prints one. Instead, when ``LOGBENCH_PROGRESS`` names a file, every study appends
lines a person can read to it: one when its servers start and are up, one per completed block of runs
with each arm's running estimate (:func:`block_line`: ``block 3/4 done · 36/48 runs · 4m10s elapsed,
~1m25s left · stderr/none ×4: 0.480 ± 6.2 % · …``), one per adaptive decision, and, while one long
thing runs without a line, a heartbeat every :data:`HEARTBEAT_S` seconds (a phase may ask for fewer: a
block of runs says where it is once a minute, :data:`BLOCK_HEARTBEAT_S`). Whoever started papermill
shows the file: ``bash run.sh study`` tails it to the terminal's stderr; the workflow can do the same
or keep it as a log. Unset (a test, a plain Jupyter session): nothing is written. The channel only
displays; nothing the study measures or writes depends on it.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

ENV = "LOGBENCH_PROGRESS"
HEARTBEAT_S = 5.0
BLOCK_HEARTBEAT_S = 60.0  # inside a block of runs: its line at the end says the rest
SHOWN = 4  # arms named on a block line (the widest); the rest are counted


def channel() -> Path | None:
    """The progress file named by ``LOGBENCH_PROGRESS``, or None (then nothing is reported)."""
    value = os.environ.get(ENV, "").strip()
    return Path(value) if value else None


def duration(seconds: float) -> str:
    """'42s', '3m05s', '1h02m': short enough for a status line."""
    if not math.isfinite(seconds):
        return "?"
    s = max(0, int(round(seconds)))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def _estimate(value: float, halfwidth: float) -> str:
    v = "–" if not math.isfinite(value) else f"{value:.3f}"
    if math.isfinite(halfwidth):
        return f"{v} ± {100 * halfwidth:.1f} %"
    # fewer than two runs (nan), or an interval unbounded so far (inf)
    return f"{v} ± ?" if math.isfinite(value) else v


def _width(halfwidth: float) -> float:
    """Sort key: an interval not computable yet counts as the widest."""
    return halfwidth if math.isfinite(halfwidth) else math.inf


def block_line(done: int, planned: int, estimates: Mapping[str, tuple[float, float]], elapsed: float,
               left: float | None = None, *, runs: tuple[int, int] | None = None, shown: int = SHOWN,
               what: str = "block", extra: str = "") -> str:
    """One line for one completed block: where the study is, and each arm's running estimate.

    ``done``/``planned``: blocks (``planned`` may grow, adaptive blocks); ``estimates``: per arm (its
    label, e.g. ``"stderr/none ×4"``: the configuration, its baseline and the clients) the running ratio
    to its baseline and the ratio CI's half-width *relative* to it (0.03 reads ``± 3.0 %``, the unit of
    ``target_halfwidth``; nan or inf: not computable yet, ``± ?``). The ``shown`` widest arms are named,
    widest first; the rest are counted with the widest half-width among them. ``elapsed``/``left``:
    seconds (``left`` None: not shown); ``runs``: (recorded, planned) runs when the caller counts runs;
    ``extra`` is appended to the time left (e.g. the adaptive budget); ``what`` names the block.

    ``block_line(3, 4, {"stderr/none ×4": (0.48, 0.0625)}, 250, 85, runs=(36, 48))`` is
    ``'block 3/4 done · 36/48 runs · 4m10s elapsed, ~1m25s left · stderr/none ×4: 0.480 ± 6.2 %'``.
    """
    parts = [f"{what} {done}/{planned} done"]
    if runs is not None:
        parts.append(f"{runs[0]}/{runs[1]} runs")
    parts.append(f"{duration(elapsed)} elapsed" + ("" if left is None else f", ~{duration(left)} left") + extra)
    arms = sorted(estimates.items(), key=lambda kv: -_width(kv[1][1]))  # stable: equal widths keep their order
    parts += [f"{label}: {_estimate(*est)}" for label, est in arms[:shown]]
    rest = arms[shown:]
    if rest:
        widest = _width(rest[0][1][1])
        parts.append(f"{len(rest)} more" + (f" (each within ± {100 * widest:.1f} %)" if math.isfinite(widest) else ""))
    return " · ".join(parts)


class Reporter:
    """Lines about one study (or one schedule of it, ``part``) to the progress channel, with a heartbeat.

    ``say(text)`` writes a line now; :meth:`block` a block's line (:func:`block_line`); while a
    :meth:`phase` is open, a background thread repeats its description with the time spent in it
    whenever its heartbeat interval (:data:`HEARTBEAT_S` unless the phase names another) passed
    without a line.
    """

    def __init__(self, study: str, part: str | None = None, path: Path | None = None,
                 heartbeat_s: float = HEARTBEAT_S):
        self.path = channel() if path is None else Path(path)
        self.prefix = study + (f" [{part}]" if part else "")
        self.heartbeat_s = heartbeat_s
        self._lock = threading.Lock()
        self._last = time.monotonic()
        self._phase: tuple[str | Callable[[], str], float, float] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def active(self) -> bool:
        return self.path is not None

    def say(self, text: str) -> None:
        if self.path is None:
            return
        line = f"{time.strftime('%H:%M:%S')} {self.prefix}: {text}\n"
        with self._lock:
            try:
                with open(self.path, "a", encoding="utf-8") as f:
                    f.write(line)
            except OSError:
                # The channel is a display: losing it (the terminal's tail gone) must not stop a study.
                self.path = None
            self._last = time.monotonic()

    def block(self, done: int, planned: int, estimates: Mapping[str, tuple[float, float]], elapsed: float,
              left: float | None = None, **kw) -> str:
        """Say :func:`block_line` (same arguments) and return it: one line per completed block, for any
        executor (:func:`logbench.measure.runner.execute`'s blocks, a switchback's) with its own estimates."""
        line = block_line(done, planned, estimates, elapsed, left, **kw)
        self.say(line)
        return line

    @contextlib.contextmanager
    def phase(self, what: str | Callable[[], str], every: float | None = None) -> Iterator[None]:
        """Heartbeat lines '<what> (12s so far)' while the block runs and nothing else is said for
        ``every`` seconds (default: the reporter's ``heartbeat_s``); ``what`` may be a function, called
        at each heartbeat (e.g. the run a block is at)."""
        if self.path is None:
            yield
            return
        self._phase = (what, time.monotonic(), self.heartbeat_s if every is None else every)
        if self._thread is None:
            self._thread = threading.Thread(target=self._beat, name="logbench-progress", daemon=True)
            self._thread.start()
        try:
            yield
        finally:
            self._phase = None

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1)
            self._thread = None

    def _beat(self) -> None:
        while not self._stop.wait(min(1.0, self.heartbeat_s)):
            current = self._phase
            if current is not None and time.monotonic() - self._last >= current[2]:
                what, t0, _ = current
                try:
                    text = what() if callable(what) else what
                except Exception:  # noqa: BLE001 - a display only
                    text = "working"
                self.say(f"{text} ({duration(time.monotonic() - t0)} so far)")


class RunCounter:
    """Runs done / planned with elapsed and estimated time left, for :func:`logbench.measure.runner.execute`,
    said once per completed block (:meth:`block_done`).

    The estimate is the mean time of the runs finished so far (before the first: ``nominal_s``, the
    run's warm-up + duration + a second of switching) times the runs still planned; adaptive blocks
    add to the planned count when they are decided, and ``budget_s`` (their time budget) is named as
    the most they may add.
    """

    def __init__(self, reporter: Reporter, planned: int, *, done: int = 0, nominal_s: float = 1.0,
                 budget_s: float | None = None):
        self.reporter, self.planned, self.done = reporter, planned, done
        self.nominal_s, self.budget_s = nominal_s, budget_s
        self.t0 = time.monotonic()
        self.finished_here = 0

    def per_run(self) -> float:
        return (time.monotonic() - self.t0) / self.finished_here if self.finished_here else self.nominal_s

    def left_s(self) -> float:
        return self.per_run() * max(0, self.planned - self.done)

    def status(self) -> str:
        extra = f" (+ adaptive blocks, at most {duration(self.budget_s)})" if self.budget_s else ""
        return (f"{duration(time.monotonic() - self.t0)} elapsed, ~{duration(self.left_s())} left{extra}")

    def what(self, configuration: str, clients: int) -> str:
        """The run about to start, named for a heartbeat (nothing is said)."""
        return f"run {self.done + 1}/{self.planned}: {configuration} × {clients} client(s)"

    def starting(self, configuration: str, clients: int, warmup: bool = False) -> str:
        """Say which run starts; returns its short name (for the heartbeat). (The runner no longer says
        a line per run: its block lines carry the count; kept for a caller that wants one.)"""
        what = self.what(configuration, clients)
        self.reporter.say(what + (" (warm-up block)" if warmup else "") + " · " + self.status())
        return what

    def block_done(self, done: int, planned: int, estimates: Mapping[str, tuple[float, float]], *,
                   what: str = "block") -> str:
        """Say a completed block's line (:meth:`Reporter.block`) with the runs recorded / planned,
        elapsed and time left."""
        extra = f" (+ adaptive blocks, at most {duration(self.budget_s)})" if self.budget_s else ""
        return self.reporter.block(done, planned, estimates, time.monotonic() - self.t0, self.left_s(),
                                   runs=(self.done, self.planned), what=what, extra=extra)

    def finished(self) -> None:
        self.done += 1
        self.finished_here += 1

    def grown(self, added: int, why: str) -> None:
        self.planned += added
        self.reporter.say(f"adaptive: {why}; {added} more runs, {self.planned} planned · {self.status()}")
