"""The runner's bench: the engine- and workload-specific half of a study (:class:`Bench`), a bench that adds to
another (:class:`WrappedBench`), and several benches behind one schedule (:class:`SplitBench`).

The concrete benches live with their engines (``benches/``) and studies; this is only what the runner asks of them.
"""

from __future__ import annotations

import abc
import math

from .design import VARIANT_SEP, PlannedRun
from ..base.logsinks import FileSink
from ..base.records import Measurement
from ..base.settings import Configuration


class Bench(abc.ABC):
    """The engine- and workload-specific half of a study.

    The methods without a body are required: abstract, so a bench missing one fails when it is made, naming it,
    not in the middle of a schedule. The others have the answer of a bench that has no such thing; a bench
    overrides those it can answer.
    """

    engine: str
    backend: str
    workload: str
    server_version: str
    query_mode: str
    scale: int
    # (reload | restart, seconds) of every settings switch apply() made: the study reports their kinds and times.
    switches: list[tuple[str, float]]

    @abc.abstractmethod
    def apply(self, configuration: Configuration): ...  # -> object with .kind, .seconds

    @abc.abstractmethod
    def warm(self, run: PlannedRun, seconds: float) -> None: ...

    @abc.abstractmethod
    def measure(self, run: PlannedRun, seconds: float) -> Measurement: ...

    @abc.abstractmethod
    def sinks(self, configuration: Configuration) -> list[FileSink]: ...

    @abc.abstractmethod
    def expected_records(self, configuration: Configuration, run: PlannedRun, m: Measurement) -> int: ...

    @abc.abstractmethod
    def server_cpu(self) -> float: ...

    @abc.abstractmethod
    def logger_cpu(self) -> float: ...

    @abc.abstractmethod
    def effective_settings(self, configuration: Configuration) -> dict: ...

    @abc.abstractmethod
    def log_dir_fs(self) -> str: ...

    def controls_of(self, configuration: Configuration) -> tuple[str, str] | None:
        """(idle state, placement) to hold while this configuration's run warms up and measures; None: the
        execution's own, held throughout. A study whose controls are its factors (the noise study) says them here."""
        return None

    def server_pid(self) -> int | None:
        """The server's pid, whose process tree's context switches each run records and which the placement
        control pins; None: no server process of its own (nothing pinned, nothing counted)."""
        return None

    def collector_cpu(self) -> float:
        """The logging collector's cumulative CPU s; NaN: none (the run then keeps no collector_cpu_s)."""
        return math.nan

    def collector_ctx_switches(self) -> tuple[float, float]:
        """The logging collector's cumulative (voluntary, involuntary) context switches; NaN: none."""
        return math.nan, math.nan

    def env_id_of(self, configuration: Configuration) -> str | None:
        """The environment id this configuration's run belongs to, for a bench that spans several environments;
        None: the execution's."""
        return None

    def logger_cpu_parts(self) -> dict[str, float]:
        """{daemon: cumulative CPU s}, the logger CPU by daemon (each run keeps their deltas); empty: one or none."""
        return {}

    def loss_defined(self, configuration: Configuration) -> bool:
        """Whether expected-vs-received is a loss for this configuration; False where the expected count is only
        approximate (a sampled log)."""
        return True


class WrappedBench(Bench):
    """A bench that adds to another, ``inner``: every Bench method goes to it unless a subclass overrides it.

    Each method is passed on by name, not left to ``__getattr__``: the base class's defaults would otherwise answer
    for the inner bench (a wrapped PostgreSQL bench would report no server pid, no collector). Anything else (the
    attributes, ``pg``, ``server``) is the inner bench's through ``__getattr__``.
    """

    def __init__(self, inner: Bench):
        self.inner = inner

    def __getattr__(self, name: str):
        if name == "inner":  # not set yet (a half-made object): no recursion through __getattr__
            raise AttributeError(name)
        return getattr(self.inner, name)

    def apply(self, configuration: Configuration):
        return self.inner.apply(configuration)

    def warm(self, run: PlannedRun, seconds: float) -> None:
        self.inner.warm(run, seconds)

    def measure(self, run: PlannedRun, seconds: float) -> Measurement:
        return self.inner.measure(run, seconds)

    def sinks(self, configuration: Configuration) -> list[FileSink]:
        return self.inner.sinks(configuration)

    def expected_records(self, configuration: Configuration, run: PlannedRun, m: Measurement) -> int:
        return self.inner.expected_records(configuration, run, m)

    def server_cpu(self) -> float:
        return self.inner.server_cpu()

    def logger_cpu(self) -> float:
        return self.inner.logger_cpu()

    def effective_settings(self, configuration: Configuration) -> dict:
        return self.inner.effective_settings(configuration)

    def log_dir_fs(self) -> str:
        return self.inner.log_dir_fs()

    def controls_of(self, configuration: Configuration) -> tuple[str, str] | None:
        return self.inner.controls_of(configuration)

    def server_pid(self) -> int | None:
        return self.inner.server_pid()

    def collector_cpu(self) -> float:
        return self.inner.collector_cpu()

    def collector_ctx_switches(self) -> tuple[float, float]:
        return self.inner.collector_ctx_switches()

    def env_id_of(self, configuration: Configuration) -> str | None:
        return self.inner.env_id_of(configuration)

    def logger_cpu_parts(self) -> dict[str, float]:
        return self.inner.logger_cpu_parts()

    def loss_defined(self, configuration: Configuration) -> bool:
        return self.inner.loss_defined(configuration)


class SplitBench(WrappedBench):
    """Several benches behind one schedule: a configuration named ``label/name`` runs on bench ``label``.

    Interleaving two servers (local vs container, two versions) in one schedule lets the machine's
    drift fall on both alike; each run keeps the environment id of the bench that ran it. ``inner`` is the bench
    running now (the last apply() chose it): engine, workload, server_version, the server's CPU and pid are its.
    """

    SEP = VARIANT_SEP

    def __init__(self, benches: dict[str, Bench], envs: dict[str, dict]):
        self.benches, self.envs = benches, envs
        super().__init__(next(iter(benches.values())))

    def _bench(self, name: str) -> Bench:
        return self.benches[name.partition(self.SEP)[0]]

    def apply(self, configuration: Configuration):
        self.inner = self._bench(configuration.name)
        return self.inner.apply(configuration)

    def warm(self, run: PlannedRun, seconds: float) -> None:
        self._bench(run.configuration).warm(run, seconds)

    def measure(self, run: PlannedRun, seconds: float) -> Measurement:
        return self._bench(run.configuration).measure(run, seconds)

    def sinks(self, configuration: Configuration) -> list[FileSink]:
        return self._bench(configuration.name).sinks(configuration)

    def expected_records(self, configuration: Configuration, run: PlannedRun, m: Measurement) -> int:
        return self._bench(configuration.name).expected_records(configuration, run, m)

    def effective_settings(self, configuration: Configuration) -> dict:
        return self._bench(configuration.name).effective_settings(configuration)

    def controls_of(self, configuration: Configuration) -> tuple[str, str] | None:
        # asked before the run's apply(): the bench running now may be the previous run's
        return self._bench(configuration.name).controls_of(configuration)

    def loss_defined(self, configuration: Configuration) -> bool:
        return self._bench(configuration.name).loss_defined(configuration)

    def env_id_of(self, configuration: Configuration) -> str:
        return self.envs[configuration.name.partition(self.SEP)[0]]["env_id"]
