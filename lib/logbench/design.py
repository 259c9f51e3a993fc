"""The schedule: every repeat block runs every (configuration, clients) pair once, in a seeded random order.

Interleaving is what makes a noisy two-core machine usable: drift in the
machine's state (page cache, other tenants, thermal state) spreads over all
configurations instead of landing on whichever ran last.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


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


@dataclass(frozen=True, kw_only=True)
class Study:
    """What a study runs, frozen once the parameters cell has been checked.

    A study-specific subclass adds the workload's options; everything a run
    needs flows from this one value to the server and the load tool.
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
    processed_dir: object  # pathlib.Path or None: where the tidy summary goes (never for smoke)
    idle_state: str = "hold"          # "hold" | "free": /dev/cpu_dma_latency held at 0 during runs, or not
    aa_control: bool = True           # add the A/A configuration "<baseline>_again"
    target_halfwidth: float | None = None   # relative ratio-CI half-width target for adaptive repeats
    time_budget_s: float | None = None      # wall-clock budget for the adaptive extra blocks
    max_repeats: int | None = None          # hard cap on blocks (repeats is the minimum)

    @property
    def baseline(self) -> str:
        return self.configurations[0].name

    def configuration(self, name: str):
        for c in self.configurations:
            if c.name == name:
                return c
        raise KeyError(name)

    def plan(self) -> tuple[PlannedRun, ...]:
        return schedule(tuple(c.name for c in self.configurations), self.clients, self.repeats, self.seed,
                        self.warmup_blocks)

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
        return out
