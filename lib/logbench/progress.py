"""A running study's progress, told to a channel that is not the notebook (issue 17).

Inside papermill the kernel's stdout and stderr are captured into the executed notebook, so a study
cannot talk to the terminal that started it: a tqdm bar stays in the notebook, and a line per run
there would flood the committed outputs. Instead, when ``LOGBENCH_PROGRESS`` names a file, every study
appends one line per run to it (runs done / planned, the configuration and clients, elapsed and
estimated time left), one when its servers start and are up, one per adaptive-block decision, and a
heartbeat every :data:`HEARTBEAT_S` seconds while something long runs. Whoever started papermill shows
the file: ``bash run.sh study`` tails it to the terminal's stderr; the workflow can do the same or keep
it as a log. Unset (a test, a plain Jupyter session): nothing is written. The channel only displays;
nothing the study measures or writes depends on it.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

ENV = "LOGBENCH_PROGRESS"
HEARTBEAT_S = 5.0


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


class Reporter:
    """Lines about one study (or one schedule of it, ``part``) to the progress channel, with a heartbeat.

    ``say(text)`` writes a line now; while a :meth:`phase` is open, a background thread repeats its
    description with the time spent in it whenever :data:`HEARTBEAT_S` seconds passed without a line.
    """

    def __init__(self, study: str, part: str | None = None, path: Path | None = None,
                 heartbeat_s: float = HEARTBEAT_S):
        self.path = channel() if path is None else Path(path)
        self.prefix = study + (f" [{part}]" if part else "")
        self.heartbeat_s = heartbeat_s
        self._lock = threading.Lock()
        self._last = time.monotonic()
        self._phase: tuple[str, float] | None = None
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

    @contextlib.contextmanager
    def phase(self, what: str) -> Iterator[None]:
        """Heartbeat lines '<what> (12s so far)' while the block runs and nothing else is said."""
        if self.path is None:
            yield
            return
        self._phase = (what, time.monotonic())
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
            if current is not None and time.monotonic() - self._last >= self.heartbeat_s:
                what, t0 = current
                self.say(f"{what} ({duration(time.monotonic() - t0)} so far)")


class RunCounter:
    """Runs done / planned with elapsed and estimated time left, for :func:`logbench.runner.execute`.

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

    def starting(self, configuration: str, clients: int, warmup: bool = False) -> str:
        """Say which run starts; returns its short name (for the heartbeat)."""
        what = f"run {self.done + 1}/{self.planned}: {configuration} × {clients} client(s)"
        self.reporter.say(what + (" (warm-up block)" if warmup else "") + " · " + self.status())
        return what

    def finished(self) -> None:
        self.done += 1
        self.finished_here += 1

    def grown(self, added: int, why: str) -> None:
        self.planned += added
        self.reporter.say(f"adaptive: {why}; {added} more runs, {self.planned} planned · {self.status()}")
