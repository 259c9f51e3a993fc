"""The schedule: every repeat block runs every (configuration, clients) pair once, in a seeded random order.

Interleaving is what makes a noisy two-core machine usable: drift in the
machine's state (page cache, other tenants, thermal state) spreads over all
configurations instead of landing on whichever ran last.

Two things are added here for every study alike:

- the **A/A control** (:func:`aa_name`): the baseline again under another name, interleaved like
  the rest; its ratio to the baseline must be 1, and its CI's width is the study's resolution;
- **adaptive repeats** (:class:`Adaptive`): after the ``repeats`` blocks, further interleaved
  blocks over the cells whose ratio CI is still wider than ``target_halfwidth``, until all meet it,
  the time budget ends or ``max_repeats`` is reached. The decision reads only each ratio's
  *relative* CI half-width, which depends on the runs' spread and number, not on the ratio's
  value: stopping never depends on the estimate.

A study may declare a **block layout** instead (:class:`BlockLayout`, its profile's ``"block_layout"``): the
baseline and its A/A control more than once per block, and orders balanced for the previous arm
(Williams rows, one sub-block per clients level); a layout that leaves an arm without its baseline next to
it in every block is refused (:func:`check_layout`) when the study is defined.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..base import stats
from .controls import IDLE_STATES, LOAD_REPORT_INTERVAL_S, PLACEMENTS, Settle, settle_condition
from ..base.errors import ParameterError
from ..base.settings import AA_SUFFIX, aa_name  # noqa: F401  (aa_name is part of this module's interface)


# Several servers in one schedule name their configurations "label/name" (see runner.SplitBench).
VARIANT_SEP = "/"


@dataclass(frozen=True)
class PlannedRun:
    position: int
    block: int  # repeat index; warm-up blocks are numbered from -warmup_blocks to -1
    configuration: str
    clients: int
    warmup: bool


def schedule(configurations: tuple[str, ...], clients: tuple[int, ...], repeats: int, seed: int,
             warmup_blocks: int = 0) -> tuple[PlannedRun, ...]:
    """Blocks of all pairs, each block shuffled by a generator seeded once for the whole schedule."""
    rng = np.random.default_rng(seed)
    pairs = [(c, n) for c in configurations for n in clients]
    plan: list[PlannedRun] = []
    for block in range(-warmup_blocks, repeats):
        for i in rng.permutation(len(pairs)):
            cfg, n = pairs[int(i)]
            plan.append(PlannedRun(len(plan), block, cfg, n, block < 0))
    return tuple(plan)


# --- a declared block layout: the baseline more than once per block, orders balanced for the previous arm ------

ORDERS = ("random", "williams")


@dataclass(frozen=True)
class BlockLayout:
    """How each block is laid out, where a study declares it (its profile's ``"block_layout"``; without one, a block
    is :func:`schedule`'s one run of every pair in a random order).

    - ``baseline_runs``, ``aa_runs``: runs of the baseline and of its A/A control per clients level and block.
      The drift a block shares is what limits the ratios (issue 40): a second baseline run puts one nearer
      each arm, and the baseline's mean, which every ratio of its level divides by, gets more runs.
    - ``order``: ``"random"``, every run of the block shuffled together; ``"williams"``, one sub-block per
      clients level (in a random order), each laid out by a row of a Williams design over its runs: across a
      cycle of rows every run follows every other run equally often, so what the previous arm leaves behind
      (a syslog backlog, dirty pages) falls on every arm alike instead of on whichever the dice put after it.
      Rows, and which run takes which place in them, are drawn from the study's seed.
    """

    baseline_runs: int = 1
    aa_runs: int = 1
    order: str = "random"

    def __post_init__(self):
        for name, low in (("baseline_runs", 1), ("aa_runs", 0)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise ParameterError(f"block_layout.{name}", v, f"a whole number >= {low}")
        if self.order not in ORDERS:
            raise ParameterError("block_layout.order", self.order, ORDERS)

    def as_dict(self) -> dict[str, object]:
        return dataclasses.asdict(self)


def block_layout(declared: object) -> BlockLayout | None:
    """A profile's ``"block_layout"`` (None, a :class:`BlockLayout` or a dict of its fields) as a BlockLayout."""
    if declared is None or isinstance(declared, BlockLayout):
        return declared
    if not isinstance(declared, Mapping):
        raise ParameterError("block_layout", declared, "None or a mapping of baseline_runs, aa_runs, order")
    unknown = set(declared) - {f.name for f in dataclasses.fields(BlockLayout)}
    if unknown:
        raise ParameterError("block_layout", declared, "keys baseline_runs, aa_runs, order only; not "
                             + ", ".join(sorted(unknown)))
    return BlockLayout(**declared)


def williams_rows(t: int) -> list[list[int]]:
    """Williams's (1949) sequences of ``t`` treatments 0..t-1: the first row 0, 1, t-1, 2, t-2, ..., the others
    its cyclic shifts, and for an odd ``t`` their reverses too. Across the rows every treatment follows every
    other exactly once (even t) or twice (odd t), and stands in every place equally often."""
    if t < 1:
        raise ValueError(f"williams_rows: {t} treatments")
    first, low, high = [0], 1, t - 1
    for i in range(1, t):
        if i % 2:
            first.append(low)
            low += 1
        else:
            first.append(high)
            high -= 1
    rows = [[(x + r) % t for x in first] for r in range(t)]
    return rows + [row[::-1] for row in rows] if t % 2 and t > 1 else rows


def layout_schedule(slots: Sequence[str], clients: tuple[int, ...], repeats: int, seed: int, layout: BlockLayout,
                    warmup_blocks: int = 0) -> tuple[PlannedRun, ...]:
    """Blocks of ``slots`` (a block's runs at one clients level, a configuration once per run it gets) at every
    clients level, laid out as ``layout.order`` says; one generator seeded once for the whole schedule. The
    measured blocks take the Williams rows in a drawn order, cycling through all of them before any repeats;
    warm-up blocks take rows too but count for nothing."""
    rng = np.random.default_rng([int(seed), 0x1A7])
    plan: list[PlannedRun] = []
    if layout.order == "random":
        pairs = [(c, n) for c in slots for n in clients]
        for block in range(-warmup_blocks, repeats):
            for i in rng.permutation(len(pairs)):
                cfg, n = pairs[int(i)]
                plan.append(PlannedRun(len(plan), block, cfg, n, block < 0))
        return tuple(plan)
    rows = williams_rows(len(slots))
    # per level: which run takes which Williams place, and the order its blocks go through the rows
    places = {n: [slots[int(i)] for i in rng.permutation(len(slots))] for n in clients}
    cycle = {n: [rows[int(i)] for i in rng.permutation(len(rows))] for n in clients}
    for block in range(-warmup_blocks, repeats):
        for j in rng.permutation(len(clients)):
            n = clients[int(j)]
            for place in cycle[n][block % len(rows)]:
                plan.append(PlannedRun(len(plan), block, places[n][place], n, block < 0))
    return tuple(plan)


def baseline_neighbours(plan: Sequence[PlannedRun], baselines: Mapping[str, str]) -> dict[tuple[str, int], int]:
    """Per (configuration, clients) of every arm but a baseline: in how many measured blocks one of its runs
    stands next to a run of its baseline at its clients level (``baselines``: each configuration's baseline;
    an A/A control's neighbour must be its baseline, any other arm's may be its baseline or that baseline's
    A/A, the same server setting). Adjacent in the plan, same block and clients level."""
    aa = {c: b for c, b in baselines.items() if c.endswith(AA_SUFFIX) and b != c}
    found: dict[tuple[str, int], set[int]] = {}
    for p in plan:
        if not p.warmup and baselines.get(p.configuration) != p.configuration:
            found.setdefault((p.configuration, p.clients), set())
    for a, b in zip(plan, plan[1:]):
        if a.warmup or a.block != b.block or a.clients != b.clients:
            continue
        for run, other in ((a, b), (b, a)):
            base = baselines.get(run.configuration)
            if base is None or base == run.configuration:
                continue
            if other.configuration == base or (run.configuration not in aa and aa.get(other.configuration) == base):
                found[run.configuration, run.clients].add(run.block)
    return {cell: len(blocks) for cell, blocks in found.items()}


def check_layout(plan: Sequence[PlannedRun], baselines: Mapping[str, str], layout: BlockLayout) -> None:
    """ParameterError naming ``layout`` where the declared layout leaves an arm without a run next to its
    baseline in every measured block, at some clients level: its ratio would then lean on a baseline run
    further off in time than the layout promises."""
    lonely = sorted(cell for cell, k in baseline_neighbours(plan, baselines).items() if k == 0)
    if lonely:
        cells = ", ".join(f"{c} at {n} clients" for c, n in lonely[:4]) + (" ..." if len(lonely) > 4 else "")
        raise ParameterError("block_layout", layout.as_dict(),
                             f"a layout that puts every arm next to its baseline in at least one block; here "
                             f"{cells} never is: more baseline_runs, more repeats, or order 'williams' over a "
                             "cycle of its rows")


@dataclass(frozen=True, kw_only=True)
class Study:
    """What a study runs, frozen once the parameters cell has been checked.

    A study-specific subclass adds the workload's options; everything a run
    needs flows from this one value to the server and the load tool.
    ``configurations`` are the study's own (baseline first); the A/A control is not among them
    but is in :meth:`plan` and :meth:`configuration` (see :attr:`planned_configurations`).
    """

    name: str
    engine: str
    backend: str
    profile: str
    configurations: tuple  # of settings.Configuration, baseline first
    clients: tuple[int, ...]
    repeats: int
    duration: float
    warmup: float
    warmup_blocks: int
    seed: int
    output_dir: object  # pathlib.Path of this study's raw records
    processed_dir: object  # pathlib.Path or None: where the tidy summary goes (data/processed only when publish)
    idle_state: str = "hold"          # "hold" | "free": /dev/cpu_dma_latency held at 0 during runs, or not
    aa_control: bool = True           # add the A/A configuration "<baseline>_again"
    target_halfwidth: float | None = None   # relative ratio-CI half-width target for adaptive repeats
    time_budget_s: float | None = None      # wall-clock budget for the adaptive extra blocks
    max_repeats: int | None = None          # hard cap on blocks (repeats is the minimum)
    placement: str = "none"           # "none" | "split": server and load tool on separate CPUs (controls.Placement)
    publish: bool = False             # True: the committed results, written to data/processed (studies.common)
    block_layout: BlockLayout | None = None  # a declared block layout (BlockLayout); None: one run of every pair, random
    settle: Settle | None = None      # a declared settle condition (controls.Settle); None: runs follow each other at once
    # a finished run to render instead of measuring: None (measure), "committed", or a run directory
    # (studies.recorded; the run then starts nothing)
    recorded: str | None = None

    def __post_init__(self):
        if self.placement not in PLACEMENTS:
            raise ParameterError("placement", self.placement, PLACEMENTS)
        check_controls(idle_state=self.idle_state, aa_control=self.aa_control, repeats=self.repeats,
                       target_halfwidth=self.target_halfwidth, time_budget_s=self.time_budget_s,
                       max_repeats=self.max_repeats)
        if self.block_layout is not None:
            object.__setattr__(self, "block_layout", block_layout(self.block_layout))
            if self.block_layout.aa_runs and not self.aa_control:
                raise ParameterError("block_layout.aa_runs", self.block_layout.aa_runs, "0 when aa_control is False")
            check_layout(self.plan(), self.baseline_map, self.block_layout)
        if self.settle is not None:
            object.__setattr__(self, "settle", settle_condition(self.settle))
            self.settle.check(LOAD_REPORT_INTERVAL_S)

    def resolved(self) -> "Study":
        """The study as it will run: what ``define()`` leaves to the run (which backend 'auto' means,
        whether an image is there) decided. May ask the machine (a Docker engine); the run calls it once,
        before anything starts, and records the result (an engine's study type overrides it)."""
        return self

    @property
    def baseline(self) -> str:
        return self.configurations[0].name

    @property
    def baselines(self) -> tuple[str, ...]:
        """The baseline of each variant (``label/none`` per server when a schedule spans several);
        for a study on one server, just :attr:`baseline`."""
        tail = self.baseline.rpartition(VARIANT_SEP)[2]
        return tuple(c.name for c in self.configurations if c.name.rpartition(VARIANT_SEP)[2] == tail)

    def baseline_of(self, name: str) -> str:
        """The baseline that ``name``'s ratio is taken against: the one of its own variant."""
        label = name.rpartition(VARIANT_SEP)[0]
        tail = self.baseline.rpartition(VARIANT_SEP)[2]
        return f"{label}{VARIANT_SEP}{tail}" if label else tail

    @property
    def aa_configuration(self) -> str | None:
        """The A/A control's name (of the first variant's baseline), or None without one."""
        return aa_name(self.baseline) if self.aa_control else None

    @property
    def aa_configurations(self) -> dict[str, str]:
        """A/A control name -> the baseline it repeats (one per variant)."""
        return {aa_name(b): b for b in self.baselines} if self.aa_control else {}

    @property
    def planned_configurations(self) -> tuple:
        """The study's configurations and, last, the A/A controls: copies of the baselines, renamed."""
        return (*self.configurations, *(dataclasses.replace(self.configuration(b), name=aa)
                                        for aa, b in self.aa_configurations.items()))

    def configuration(self, name: str):
        for c in self.configurations:
            if c.name == name:
                return c
        if name in self.aa_configurations:
            return dataclasses.replace(self.configuration(self.aa_configurations[name]), name=name)
        raise KeyError(name)

    def bench_configuration(self, name: str):
        """What the server runs for ``name``: for an A/A control, its baseline itself (name and all),
        so no bench can tell the two apart."""
        return self.configuration(self.aa_configurations.get(name, name))

    @property
    def adaptive(self) -> bool:
        return self.target_halfwidth is not None

    @property
    def baseline_map(self) -> dict[str, str]:
        """Each planned configuration -> the baseline its ratio is taken against (a baseline: itself)."""
        return {c.name: self.aa_configurations.get(c.name) or self.baseline_of(c.name)
                for c in self.planned_configurations}

    @property
    def slots(self) -> tuple[str, ...]:
        """A block's runs at one clients level: every planned configuration once, or as the declared layout
        repeats the baselines and their A/A controls."""
        names = tuple(c.name for c in self.planned_configurations)
        if self.block_layout is None:
            return names
        times = {**dict.fromkeys(self.baselines, self.block_layout.baseline_runs),
                 **dict.fromkeys(self.aa_configurations, self.block_layout.aa_runs)}
        return tuple(c for c in names for _ in range(times.get(c, 1)))

    def plan(self) -> tuple[PlannedRun, ...]:
        """The first ``repeats`` blocks (and warm-up blocks); adaptive blocks are decided while running."""
        if self.block_layout is None:
            return schedule(tuple(c.name for c in self.planned_configurations), self.clients, self.repeats,
                            self.seed, self.warmup_blocks)
        return layout_schedule(self.slots, self.clients, self.repeats, self.seed, self.block_layout, self.warmup_blocks)

    def describe(self) -> dict[str, object]:
        """The study as plain data (written next to its runs, shown in the notebook)."""
        out = {}
        for k, v in self.__dict__.items():
            if k == "configurations":
                v = [c.as_dict() for c in v]
            elif hasattr(v, "as_dict"):
                v = v.as_dict()
            elif isinstance(v, tuple):
                v = list(v)
            elif v is not None and not isinstance(v, (int, float, str, bool, list, dict)):
                v = str(v)
            out[k] = v
        out["aa_configuration"] = self.aa_configuration
        return out


def check_controls(*, idle_state: object = "hold", aa_control: object = True, repeats: int = 1,
                   target_halfwidth: object = None, time_budget_s: object = None, max_repeats: object = None) -> None:
    """ParameterError naming the parameter for any bad noise-control or adaptive-repeat value."""
    if idle_state not in IDLE_STATES:
        raise ParameterError("idle_state", idle_state, IDLE_STATES)
    if not isinstance(aa_control, bool):
        raise ParameterError("aa_control", aa_control, "True or False")
    def number(v: object) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool)

    if target_halfwidth is not None and not (number(target_halfwidth) and 0 < target_halfwidth < 1):
        raise ParameterError("target_halfwidth", target_halfwidth,
                             "None (no adaptive repeats) or a relative half-width in (0, 1), e.g. 0.03")
    if time_budget_s is not None and not (number(time_budget_s) and time_budget_s >= 0):
        raise ParameterError("time_budget_s", time_budget_s, "None (no budget) or seconds >= 0")
    if max_repeats is not None and (isinstance(max_repeats, bool) or not isinstance(max_repeats, int)
                                    or max_repeats < repeats):
        raise ParameterError("max_repeats", max_repeats, f"None or a whole number >= repeats ({repeats})")
    if target_halfwidth is not None and time_budget_s is None and max_repeats is None:
        raise ParameterError("target_halfwidth", target_halfwidth,
                             "a target together with time_budget_s or max_repeats (or None): without either, "
                             "a cell that never gets precise enough would run forever")


CONTROL_FIELDS = ("idle_state", "aa_control", "target_halfwidth", "time_budget_s", "max_repeats", "placement")


def control_fields(profile_defaults: Mapping[str, object], **given: object) -> dict[str, object]:
    """Study keyword arguments for the noise controls and adaptive repeats from notebook parameters.

    Each parameter left as None takes the profile's value (or the Study default when the profile
    has none); ``target_halfwidth="off"`` switches adaptive repeats off whatever the profile says.
    papermill's literal text ("0.03", "None") is read as its value. Values are checked by Study.
    """
    import ast

    unknown = set(given) - set(CONTROL_FIELDS)
    if unknown:
        raise TypeError(f"not a control parameter: {sorted(unknown)}")
    out: dict[str, object] = {}
    for name in CONTROL_FIELDS:
        v = given.get(name)
        if isinstance(v, str) and name not in ("idle_state", "placement") and v != "off":
            try:
                v = ast.literal_eval(v)
            except (ValueError, SyntaxError):
                raise ParameterError(name, v, "a number, True/False or None") from None
        if v is None:
            if name in profile_defaults:
                out[name] = profile_defaults[name]
            continue
        out[name] = None if v == "off" and name == "target_halfwidth" else v
    return out


def relative_halfwidth(x: Sequence[float], y: Sequence[float]) -> float:
    """Half-width of the Fieller CI of mean(x)/mean(y), relative to the ratio; inf when unbounded
    or undefined (fewer than two runs), so such a cell counts as too wide."""
    r = stats.ratio_ci(x, y)
    h = r.half_width / abs(r.value) if r.value else math.inf
    return h if h == h else math.inf


Cell = tuple[str, int]  # (configuration, clients)


class Adaptive:
    """Decides the extra blocks of one execution; pure (the runner feeds it the measured values).

    Extra blocks are numbered on from ``repeats`` and their positions continue the plan's. Each
    block holds the cells that are still too wide and, at their clients levels, their baseline and
    its A/A control (every ratio needs its baseline in the same blocks), shuffled by a generator
    of its own, seeded from the study's seed: the first ``repeats`` blocks are the same as without
    adaptive repeats.
    """

    def __init__(self, study: Study, next_position: int):
        self.study = study
        self.position = next_position
        self.block = study.repeats
        self.rng = np.random.default_rng([int(study.seed), 0xADA])
        # a declared layout's baseline and A/A runs are repeated in the extra blocks as in the planned ones
        self.pairs: tuple[Cell, ...] = tuple((c, n) for c in study.slots for n in study.clients)
        self.stopped: str = ""  # why no further block runs: "precise", "max_repeats", "time_budget"

    def halfwidths(self, values: Mapping[Cell, Sequence[float]]) -> dict[Cell, float]:
        """Each non-baseline cell's relative ratio-CI half-width (the A/A controls included)."""
        s = self.study
        return {(c, n): relative_halfwidth(values.get((c, n), ()), values.get((s.baseline_of(c), n), ()))
                for c, n in dict.fromkeys(self.pairs) if c not in s.baselines}

    def wide(self, values: Mapping[Cell, Sequence[float]]) -> list[Cell]:
        target = self.study.target_halfwidth
        return [cell for cell, h in self.halfwidths(values).items() if not h <= target]

    def next_block(self, values: Mapping[Cell, Sequence[float]], *, elapsed_s: float = 0.0,
                   seconds_per_run: float = 0.0) -> tuple[PlannedRun, ...]:
        """The next block, or () when every cell meets the target, ``max_repeats`` blocks have run, or
        the block would not end within ``time_budget_s`` (``elapsed_s``: spent on extra blocks so far)."""
        s = self.study
        if not s.adaptive:
            self.stopped = "off"
            return ()
        wide = set(self.wide(values))
        if not wide:
            self.stopped = "precise"
            return ()
        if s.max_repeats is not None and self.block >= s.max_repeats:
            self.stopped = "max_repeats"
            return ()
        keep = set(wide)
        for c, n in wide:
            base = s.baseline_of(c)
            keep.add((base, n))
            keep |= {(aa, n) for aa, b in s.aa_configurations.items() if b == base}
        pairs = [p for p in self.pairs if p in keep]
        if s.time_budget_s is not None and elapsed_s + len(pairs) * seconds_per_run > s.time_budget_s:
            self.stopped = "time_budget"
            return ()
        block = []
        for i in self.rng.permutation(len(pairs)):
            cfg, n = pairs[int(i)]
            block.append(PlannedRun(self.position, self.block, cfg, n, False))
            self.position += 1
        self.block += 1
        return tuple(block)
