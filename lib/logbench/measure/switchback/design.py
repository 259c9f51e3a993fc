"""The switchback design's plan: its parameters, each load's windows, the order of the loads, the adaptive budget.

Pure values and seeded plans, nothing started: what a study checks before anything runs (see the package's
docstring for the design itself).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ...base import params
from ...base.errors import ParameterError
from ..design import williams_rows

LAYOUTS = ("permutation", "paired", "williams")
# The ``layout`` parameter's help, for every study that offers it (its notebook cell and --usage say this text).
LAYOUT_HELP = ('switchback: "permutation" (every arm once per block, random order), "paired" (each arm in a window '
               'next to a baseline window) or "williams" (every arm once per block, the blocks of a load in the rows '
               "of a Williams design: each arm follows every other equally often; blocks a multiple of the arms, "
               "twice that for an odd number); None: profile's")
DESIGNS = ("blocks", "switchback")
# pgbench reports its transactions per whole second (--aggregate-interval=1): a window's measured part must
# hold at least one whole interval.
REPORT_INTERVAL_S = 1


@dataclass(frozen=True)
class SwitchbackDesign:
    """How arms are switched inside a load; checked on construction (ParameterError naming the parameter)."""

    window_s: int
    guard_s: int
    layout: str = "permutation"
    blocks: int = 6           # blocks per load
    loads: int = 2            # independent loads per clients level, at least
    max_loads: int = 2        # adaptive: up to this many while an arm is wider than the target
    lead_in_s: int = 3        # the load runs this long before the first window (connections, caches)
    # sync(2) inside each guard: the page cache a logging window left dirty is written back there, not in later
    # windows. Without it, at 4 clients on 2 cores a 4 s stderr window left the next 5-10 s 11-26 % slower
    # (benchmarks/pg_carryover.py, 3 runs of 3-4 arm segments each); with it, -0.5 % [-3.0, +2.1] in the 5 s after
    flush: bool = True

    def __post_init__(self):
        for name in ("window_s", "blocks", "loads", "max_loads"):
            params.positive_int(name, getattr(self, name))
        for name in ("guard_s", "lead_in_s"):
            params.non_negative_int(name, getattr(self, name))
        params.choice("layout", self.layout, LAYOUTS)
        if self.window_s - self.guard_s < REPORT_INTERVAL_S:
            raise ParameterError("window_s", self.window_s,
                                 f"a whole number of seconds longer than guard_s ({self.guard_s}) by at least the "
                                 f"load tool's report interval ({REPORT_INTERVAL_S} s): the window must keep a "
                                 "measured second after its guard")
        if not isinstance(self.flush, bool):
            raise ParameterError("flush", self.flush, "True or False")
        if self.max_loads < self.loads:
            raise ParameterError("max_loads", self.max_loads, f"a whole number >= loads ({self.loads})")

    @property
    def measured_s(self) -> int:
        return self.window_s - self.guard_s

    def windows_per_block(self, arms: int) -> int:
        return 2 * (arms - 1) if self.layout == "paired" else arms

    def check_arms(self, arms: int) -> None:
        """ParameterError naming ``blocks`` where the layout cannot lay out ``arms`` arms (the A/A control
        counted) in this many blocks: a Williams layout needs whole sets of its rows in every load."""
        if self.layout != "williams":
            return
        rows = len(williams_rows(arms))
        if self.blocks % rows:
            # A partial set of rows balances nothing: with blocks < rows some ordered pairs never occur at all,
            # so a layout that promises balance refuses instead of running unbalanced.
            raise ParameterError("blocks", self.blocks,
                                 f"a multiple of {rows} ({rows}, {2 * rows}, ...) with layout 'williams' and {arms} "
                                 f"arms (the A/A control counted): a Williams design over {arms} arms has {rows} "
                                 "rows" + (" (an odd number of arms needs twice as many rows as arms)" if arms % 2
                                           else "") + "; or layout 'permutation'")

    def load_seconds(self, arms: int) -> int:
        """How long one load's windows take (without the lead-in)."""
        return self.blocks * self.windows_per_block(arms) * self.window_s

    def as_dict(self) -> dict[str, object]:
        return dataclasses.asdict(self)


def design_from(design: object, *, window_s: object, guard_s: object, layout: object, blocks: object,
                loads: object, max_loads: object, lead_in_s: object, flush: object = None) -> SwitchbackDesign | None:
    """The notebook's ``design`` parameter and its switchback parameters -> a design, or None for blocks."""
    params.choice("design", design, DESIGNS)
    if design == "blocks":
        return None
    loads = params.positive_int("loads", loads)
    return SwitchbackDesign(window_s=params.positive_int("window_s", window_s),
                            guard_s=params.non_negative_int("guard_s", guard_s), layout=layout,
                            blocks=params.positive_int("blocks", blocks), loads=loads,
                            max_loads=loads if max_loads is None else max_loads,
                            lead_in_s=params.non_negative_int("lead_in_s", lead_in_s),
                            flush=True if flush is None else flush)


SWITCHBACK_FIELDS = ("window_s", "guard_s", "layout", "blocks", "loads", "max_loads", "flush")


def from_profile(profile: dict, *, design: object, lead_in_s: float, **given: object) -> SwitchbackDesign | None:
    """The design from a study's parameters, each None taking the profile's; None for the block design."""
    design = profile.get("design", "blocks") if design is None else design
    values = {k: profile.get(k) if given.get(k) is None else given[k] for k in SWITCHBACK_FIELDS}
    if design == "switchback":
        missing = [k for k in SWITCHBACK_FIELDS if values[k] is None and k not in ("max_loads", "flush")]
        if missing:
            raise ParameterError(missing[0], None, "a value: this profile has none for the switchback design")
    return design_from(design, lead_in_s=int(round(lead_in_s)), **values)


def check_reloadable(configurations: Sequence, contexts: dict[str, str]) -> None:
    """ParameterError naming ``design`` when an arm changes a setting only a restart applies."""
    needs_restart = sorted({f"{c.name}: {k}" for c in configurations for k in c.settings
                            if contexts.get(k) == "postmaster"})
    if needs_restart:
        raise ParameterError("design", "switchback",
                             "'blocks' for arms that change a setting only a restart applies "
                             f"({', '.join(needs_restart)}): a switch inside a running load cannot restart it")


@dataclass(frozen=True)
class Window:
    load: int
    block: int
    unit: int     # the comparison unit: the block ('permutation') or the pair ('paired')
    index: int    # order in its load
    arm: str


def plan_load(arms: Sequence[str], baseline: str, design: SwitchbackDesign, seed: int, clients: int,
              load: int) -> tuple[Window, ...]:
    """One load's windows, from a generator seeded by (seed, clients, load): the same study plans the same
    windows again (resume), and no load's order depends on another's."""
    rng = np.random.default_rng([int(seed), int(clients), int(load), 0x5B])
    if design.layout == "williams":
        return _williams_load(arms, design, rng, load)
    out: list[Window] = []
    unit = 0
    others = [a for a in arms if a != baseline]
    for block in range(design.blocks):
        if design.layout == "permutation":
            for i in rng.permutation(len(arms)):
                out.append(Window(load, block, block, len(out), arms[int(i)]))
            continue
        for i in rng.permutation(len(others)):
            pair = [baseline, others[int(i)]]
            if rng.random() < 0.5:
                pair.reverse()
            for arm in pair:
                out.append(Window(load, block, unit, len(out), arm))
            unit += 1
    return tuple(out)


def _williams_load(arms: Sequence[str], design: SwitchbackDesign, rng: np.random.Generator,
                   load: int) -> tuple[Window, ...]:
    """The ``williams`` layout: each block is every arm once, in the order of one row of a Williams design; the
    load's blocks take the rows in a drawn order, every row equally often (``check_arms``: blocks is a whole number
    of sets of rows), and which arm is which symbol of the design is drawn per load.

    What it balances, within the load: inside the blocks every arm follows every other arm blocks/len(arms) times
    and stands in every place of a block equally often, so a carryover that lasts into the next window falls on
    every arm alike (the baseline and its A/A control follow the logging arms equally often), whatever the draw.
    What it does not: the blocks - 1 pairs across block boundaries (the last window of a block before the first
    of the next) follow the drawn row order, so they add one unbalanced pair each, and one of them can be an arm
    after itself (a window without a change of settings); the load's first window follows the lead-in, which runs
    the baseline's settings and has no previous arm in the records. Each load is balanced on its own, so a level's
    loads together are too; an interrupted load runs again whole with the same plan (resume)."""
    design.check_arms(len(arms))
    rows = williams_rows(len(arms))
    symbol = [arms[int(i)] for i in rng.permutation(len(arms))]
    order = rng.permutation(len(rows))
    out: list[Window] = []
    for block in range(design.blocks):
        for s in rows[int(order[block % len(rows)])]:
            out.append(Window(load, block, block, len(out), symbol[s]))
    return tuple(out)


def load_order(clients: Sequence[int], rounds: int, seed: int) -> list[tuple[int, int]]:
    """(clients, load) pairs: round r runs every level's load r, the levels in a seeded random order, so the
    machine's drift over the study falls on every level alike."""
    rng = np.random.default_rng([int(seed), 0x0AD5])
    out = []
    for r in range(rounds):
        out += [(int(clients[int(i)]), r) for i in rng.permutation(len(clients))]
    return out


def fits_budget(spent_s: float, loads_s: Sequence[float], nominal_s: float, budget_s: float) -> bool:
    """Whether one more adaptive load fits ``time_budget_s``: the adaptive part's seconds so far plus a load as long
    as the longest this study ran (the nominal length, windows + lead-in + restart, until one has run). The planned
    loads are not counted against it: on this VM a load took ~30 % longer than its windows (restart, pgbench's
    set-up, parsing), and a budget taken from the nominal length was spent before the first adaptive load."""
    expected = max(loads_s) if len(loads_s) else nominal_s
    return spent_s + expected <= budget_s
