"""Study 08's declarations: its name and post, session kinds, profiles, configuration names, study type and
registry spec (no analysis, no run, no bench: each configuration declares the sessions it holds open,
``Configuration.sessions``, and the shared PostgreSQL bench holds them while it runs pgbench -S).

The analysis and the study's plan both read these.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...base.settings import AA_SUFFIX, HeldSessions
from ...measure import runner
from ...measure.benches import postgres as pg
from ...workloads import sessions as held
from .. import common

NAME = "pg_idle_connections"
POST = "004_5cd3e575f4305811.txt"
KINDS = HeldSessions.KINDS  # what a configuration can hold open

PROFILES: dict[str, dict[str, object]] = {
    "smoke": {"clients": [1], "repeats": 2, "duration": 1, "warmup": 0, "scale": 1, "sampling_rate": 0.1,
              "max_connections": [10, 30]},
    # ~9.5 min on two cores (estimate): 3 levels x 3 kinds + the A/A control = 10 configurations x 2 client
    # levels x 3 blocks = 60 runs of ~9.5 s on average (3 s measured, 1 s warm-up, ~1.5 s of records and
    # drain, a ~2 s restart in two runs of three, up to ~600 sessions opened at ~110/s (8 at a time) and
    # closed in ~1.5 s)
    "standard": {"clients": [2, 8], "repeats": 3, "duration": 3, "warmup": 1, "scale": 10, "sampling_rate": 0.05,
                 "max_connections": [100, 300, 600]},
    # the post's range: 20-minute runs there, 30 s here
    "full": {"clients": [2, 8], "repeats": 5, "duration": 30, "warmup": 5, "scale": 100, "sampling_rate": 0.01,
             "max_connections": [100, 250, 500, 1000, 2000]},
}
# Issue 23's sweep (its own stem, common.stem): the standard profile's runs on PostgreSQL 13, 15 and 17
# (docker/servers.tsv), each in its container, one interleaved schedule, each version its own baseline, A/A and
# slopes (14 changed GetSnapshotData: post 004's idle-connection claim judged per version). ~17 min on two cores
# (estimate): 10 configurations x 2 client levels x 3 blocks x 3 versions = 180 runs of ~5.2 s (4 s of load, ~1.2 s
# besides: a container restart in two runs of three, 0.44 s median, and the sessions; a two-version container run
# of 100 / 600 at 8 clients, 2026-11-26, took ~1 s besides its load per run), after ~1 min starting the three
# containers and loading scale 10 into each. The standard sizes, unshrunk: the slopes need the three levels and the
# three blocks (each block its own intercept), and the post's two working-client levels stay.
PROFILES["versions"] = {**PROFILES["standard"], "versions": ["13", "15", "17"]}


def name_of(m: int, kind: str) -> str:
    return f"max{m}" if kind == "none" else f"max{m}_{kind}"


def plain(name: str) -> str:
    """The configuration without a version sweep's "pg13/" (runner.SplitBench)."""
    head, sep, rest = name.partition(runner.SplitBench.SEP)
    return rest if sep else head


def parse(name: str) -> tuple[int, str]:
    """'max500_sleep' -> (500, 'sleep'); the A/A control is its baseline's."""
    head, _, kind = name.removesuffix(AA_SUFFIX).removeprefix("max").partition("_")
    return int(head), kind or "none"


def held_sessions(name: str, sessions: int | None) -> HeldSessions:
    """What configuration ``name`` holds open while it runs: its kind, ``sessions`` of them (None: every slot the
    working clients leave)."""
    kind = parse(name)[1]
    return HeldSessions(kind, 0 if kind == "none" else sessions)


@dataclass(frozen=True, kw_only=True)
class IdleConnectionsStudy(pg.PgStudy):
    max_connections: tuple[int, ...] = ()
    kinds: tuple[str, ...] = KINDS
    sessions: int | None = None  # None: fill every slot the working clients leave (minus held.MARGIN)

    def sessions_of(self, configuration: str, clients: int) -> tuple[str, int]:
        """(kind, count) of the sessions ``configuration`` (a version sweep's "pg13/max100" too) declares at
        ``clients`` working clients: what the bench holds open during its runs."""
        declared = self.configuration(configuration).sessions
        return declared.kind, held.count(declared, clients, lambda: parse(plain(configuration))[0])


SPEC = common.StudySpec(
    name=NAME, engine="postgresql", title="PostgreSQL max_connections and idle sessions", post=POST,
    baseline="max100", notebook="08_pg_idle_connections.ipynb", seed=20140401,
    committed={"profile": "standard", "publish": True},
    extra_committed=({"profile": "versions", "backend": "container", "publish": True},),
    versions_title="PostgreSQL: max_connections and idle sessions (study 08, post 004)",
    smoke=({"profile": "smoke"},), paper_order=8,
    not_line_cost="its configurations differ in max_connections and open sessions, not in what is logged")
