"""The schedule from the noise (issue 40): what a study's committed runs say each clients level's noise is, what
the per-level model (logbench.analyze.models) would give on a candidate schedule, and the cheapest schedule that reaches
the goals within a time budget, or the floor the data allow and why.

Per level of a committed runs table (blocks or switchback windows, :func:`logbench.analyze.models.model_frame`):

- **sigma**: the residual standard deviation of the main model (arm + smooth time [+ a switchback load's block
  intercept]): the per-run (per-window) noise that is left after the drift the time terms follow;
- **drift share**: the share of the arm-only model's residual variance the time terms take, 1 - sigma^2 /
  sigma_arm^2: how much of the noise is slow drift that the schedule's spread over time has to carry;
- **acf1**: the main model's residual lag-1 autocorrelation (what the drift leaves; the interval ignores it);
- the arms' ratios (an overhead arm's half-width scales with its ratio: exp(b) sinh(t se)).

The prediction is the model's own interval on a candidate schedule: the candidate's runs laid out by the suite's
scheduler (:func:`logbench.design.layout_schedule`; switchback loads of blocks of every arm), the model's design
matrix built from the same formula (:func:`logbench.analyze.models.level_formula`), se = sigma sqrt((X'X)^-1), t on its
residual df. Run length is held at the data's (the committed runs never varied it; nothing here says how sigma
scales with it), and so is the time a run or a window costs on this host (read from the start times).

Assumptions said where they matter: the levels of a study share one profile (one design, one count of blocks or
loads: a profile cannot mix designs per level, logbench.switchback's design is the study's), so the pick is per
study, with each level's own best beside it; sigma is held at the level's (a settle wait may lower it; no committed
run has one yet).

``python -m logbench plan [processed_dir]`` prints every study's noise, plan and the predictor's validation.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import patsy
from scipy import stats as sps

from . import models
from ..base import records, stats
from ..base.errors import ParameterError
from ..base.paths import stem
from ..base.settings import AA_SUFFIX, is_aa
from ..measure import design

BLOCKS, SWITCHBACK = "blocks", "switchback"
STANDARD_BUDGET_S, RESOLUTION_BUDGET_S = 15 * 60, 60 * 60


@dataclass(frozen=True)
class Goal:
    """What a schedule must reach: the A/A half-width at one client and at more (None: reported, no goal), the
    median overhead half-width over a level's arms, and the seconds the whole schedule may take. Half-widths are
    absolute, (high - low) / 2 of the ratio."""

    median: float
    budget_s: float
    aa: float | None = None
    aa_1client: float | None = None

    def __post_init__(self):
        for name in ("median", "budget_s", "aa", "aa_1client"):
            v = getattr(self, name)
            if v is None and name in ("aa", "aa_1client"):
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0 or not math.isfinite(v):
                raise ParameterError(f"planner.{name}", v, "a positive number" + (" or None" if name.startswith("aa")
                                                                                    else ""))

    def aa_for(self, clients: object) -> float | None:
        c = pd.to_numeric(clients, errors="coerce")
        return self.aa_1client if c == 1 and self.aa_1client is not None else self.aa


def goals(study: str, budget_s: float) -> Goal:
    """Issue 40's goals: 02's A/A <= 0.03 at 2+ clients and <= 0.04 at 1, median <= 0.035; 04 and 05 median <= 0.04
    (their A/A reported)."""
    if study == "pg_destinations":
        return Goal(median=0.035, aa=0.03, aa_1client=0.04, budget_s=budget_s)
    return Goal(median=0.04, budget_s=budget_s)


@dataclass(frozen=True)
class Noise:
    """One level's noise as the committed runs of one table say it, and what a run (window) costs in seconds."""

    stem: str
    design: str
    level: str
    clients: object
    baseline: str
    arms: tuple[str, ...]  # every arm but the baseline, the A/A among them
    ratios: tuple[float, ...]
    sigma: float
    sigma_arm: float
    acf1: float
    n: int
    run_s: float  # a run, or a switchback window, with what surrounds it (switch, guard, warm-up, settle)
    load_s: float = 0.0  # a switchback load's own seconds (server restart, lead-in), 0 for blocks
    windows_per_arm_block: int = 1

    @property
    def drift_share(self) -> float:
        return max(0.0, 1 - self.sigma ** 2 / self.sigma_arm ** 2) if self.sigma_arm > 0 else math.nan

    @property
    def aa(self) -> str:
        return self.baseline + AA_SUFFIX


def level_frames(runs: pd.DataFrame) -> tuple[str, list[tuple[str, object, pd.DataFrame]]]:
    """(design, [(level text, clients, the level's frame as the model reads it)]) of one runs table, its levels
    as :func:`logbench.analyze.models.fit_study` splits them."""
    frame, dsg = models.model_frame(runs)
    r = models.split_arms(frame)
    levels = [c for c in models.LEVELS if c in r and (r[c].nunique() > 1 or c == "clients")]
    out = []
    for key, g in r.groupby(levels, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        text = ", ".join(f"{k}={v}" for k, v in zip(levels, key))
        out.append((text, dict(zip(levels, key)).get("clients"), g))
    return dsg, out


def _fit(g: pd.DataFrame, dsg: str, baseline: str, *, main: bool = True) -> pd.DataFrame:
    kw = dict(models.DESIGNS[dsg]) if main else {"block_col": None, "cluster_col": models.DESIGNS[dsg]["cluster_col"]}
    return models.fit_level(g, arm_col="arm", baseline=baseline, time_col=models._time_col(g),
                            smooth_df=models.PER_GROUP if main else None, **kw)


def table_noise(runs: pd.DataFrame, stem: str, baseline: str | None = None) -> list[Noise]:
    """Every level's :class:`Noise` of one committed runs table (as read from ``data/processed``)."""
    dsg, levels = level_frames(runs)
    run_s, load_s = _seconds(runs, dsg)
    out = []
    for text, clients, g in levels:
        base = baseline or models.aa_baseline(g["arm"])
        fit, arm_only = _fit(g, dsg, base), _fit(g, dsg, base, main=False)
        per_block = 1
        if dsg == SWITCHBACK:
            per_block = max(1, int(round(len(g) / max(1, g[models.LOAD_BLOCK].nunique()) / (len(fit) + 1))))
        out.append(Noise(stem=stem, design=dsg, level=text, clients=clients, baseline=base,
                         arms=tuple(fit["arm"]), ratios=tuple(float(x) for x in fit["ratio"]),
                         sigma=float(fit["sigma"].iloc[0]), sigma_arm=float(arm_only["sigma"].iloc[0]),
                         acf1=float(fit["resid_acf1"].iloc[0]), n=len(g), run_s=run_s, load_s=load_s,
                         windows_per_arm_block=per_block))
    return out


def _seconds(runs: pd.DataFrame, dsg: str) -> tuple[float, float]:
    """(seconds a run or window takes on this host, a switchback load's own seconds) from the table's start times:
    a block run's share of the whole schedule's span (every level, warm-up runs included, as they cost time);
    a window's median spacing inside its load, and a load's span beyond its windows."""
    t = pd.to_datetime(runs["started_at"], utc=True, format="ISO8601")
    last = float(pd.to_numeric(runs["wall_s"], errors="coerce").fillna(runs["duration_s"]).iloc[int(t.argmax())])
    span = (t.max() - t.min()).total_seconds() + last
    if dsg == BLOCKS:
        return span / len(runs), 0.0
    extra = runs["extra"].map(lambda e: json.loads(e) if isinstance(e, str) else e)
    load = extra.map(lambda e: f"{e.get('load')}@{e.get('attempt')}") + "/" + runs["clients"].astype(str)
    frame = pd.DataFrame({"t": t, "load": load}).sort_values("t")
    step = frame.groupby("load")["t"].diff().dt.total_seconds().median()
    loads = frame["load"].nunique()
    return float(step), max(0.0, (span - step * len(runs)) / loads)


# --- a candidate schedule and its prediction ----------------------------------------------------------------

@dataclass(frozen=True)
class Candidate:
    """A schedule per level: blocks of every arm (``count`` blocks, the baseline ``baseline_runs`` and the A/A
    ``aa_runs`` times in each, Williams order), or switchback (``count`` loads of ``blocks`` blocks of every arm)."""

    design: str
    count: int
    baseline_runs: int = 1
    aa_runs: int = 1
    blocks: int = 1

    def as_dict(self) -> dict[str, object]:
        return {"design": self.design, "count": self.count, "baseline_runs": self.baseline_runs,
                "aa_runs": self.aa_runs, "blocks": self.blocks}

    def text(self) -> str:
        if self.design == BLOCKS:
            return f"{self.count} blocks, baseline x{self.baseline_runs}, A/A x{self.aa_runs}, williams"
        return f"{self.count} loads x {self.blocks} blocks"


def candidate_frame(noise: Noise, cand: Candidate, seed: int = 0) -> pd.DataFrame:
    """The candidate's runs of one level as the model's frame (arm, t [, block], cluster), laid out by the
    suite's own scheduler for blocks."""
    if cand.design == BLOCKS:
        slots = [noise.baseline, *noise.arms]
        layout = design.BlockLayout(baseline_runs=cand.baseline_runs, aa_runs=cand.aa_runs, order="williams")
        times = {noise.baseline: cand.baseline_runs, noise.aa: cand.aa_runs}
        slots = [s for s in slots for _ in range(times.get(s, 1))]
        plan = design.layout_schedule(slots, (1,), cand.count, seed, layout)
        return pd.DataFrame({"arm": [p.configuration for p in plan], "t": [float(p.position) for p in plan],
                             "cluster": [str(p.block) for p in plan]})
    rng = np.random.default_rng(seed)
    arms = [noise.baseline, *noise.arms]
    rows = []
    for load in range(cand.count):
        for b in range(cand.blocks):
            for i in rng.permutation(len(arms)):
                for _ in range(noise.windows_per_arm_block):
                    rows.append({"arm": arms[int(i)], "t": float(len(rows)), "block": f"{load}/{b}",
                                 "cluster": str(load)})
    return pd.DataFrame(rows)


def candidate_seconds(noise: Noise, cand: Candidate, settle_s: float = 0.0) -> float:
    """One level's seconds under the candidate, at the data's cost per run (window) and per load; ``settle_s``: a
    settle condition's wait before each block run (at least one poll; the committed runs had none)."""
    if cand.design == BLOCKS:
        per_block = len(noise.arms) + 1 + (cand.baseline_runs - 1) + (cand.aa_runs - 1)
        return cand.count * per_block * (noise.run_s + settle_s)
    windows = (len(noise.arms) + 1) * noise.windows_per_arm_block * cand.blocks
    return cand.count * (noise.load_s + windows * noise.run_s)


def unit_se(frame: pd.DataFrame, baseline: str) -> tuple[dict[str, float], int]:
    """({arm: its coefficient's standard error at sigma = 1}, the residual df) of the main model on ``frame``'s
    runs: sqrt of the diagonal of (X'X)^-1, X the design matrix of :func:`logbench.analyze.models.level_formula`."""
    d = frame.assign(y=0.0)
    term, formula, _ = models.level_formula(d, baseline=baseline, blocks="block" in frame, smooth_df=models.PER_GROUP)
    x = patsy.dmatrix(formula.split("~", 1)[1], d, return_type="dataframe")
    xtx_inv = np.linalg.pinv(x.to_numpy().T @ x.to_numpy())
    prefix = f"{term}[T."
    se = {c[len(prefix):-1]: math.sqrt(xtx_inv[j, j]) for j, c in enumerate(x.columns) if c.startswith(prefix)}
    return se, int(len(d) - np.linalg.matrix_rank(x.to_numpy()))


def predict_frame(frame: pd.DataFrame, noise: Noise, sigma: float | None = None,
                  confidence: float = stats.CONFIDENCE, unit: tuple[dict[str, float], int] | None = None
                  ) -> dict[str, float]:
    """The main model's half-widths on ``frame``'s runs with noise ``sigma`` (default the level's): the A/A's,
    the median over the overhead arms (each at its measured ratio), and the residual df."""
    se, df = unit if unit is not None else unit_se(frame, noise.baseline)
    if df < 1:
        return {"aa_hw": math.nan, "median_hw": math.nan, "df": float(df)}
    q = sps.t.ppf(1 - (1 - confidence) / 2, df)
    s = noise.sigma if sigma is None else sigma
    hw = {arm: (1.0 if is_aa(arm) else ratio) * math.sinh(q * s * se[arm])
          for arm, ratio in zip(noise.arms, noise.ratios) if arm in se}
    over = [v for a, v in hw.items() if not is_aa(a)]
    return {"aa_hw": hw.get(noise.aa, math.nan), "median_hw": float(np.median(over)) if over else math.nan,
            "df": float(df)}


# Layouts drawn per prediction: with few blocks the half-width depends on the draw (an arm that lands where the
# time spline bends is confounded with it: 04's 2 blocks gave a median of ±0.29 with one draw, ±1.5 with another),
# so the prediction is the median over this many draws from the seed on.
DRAWS = 5


def predict(noise: Noise, cand: Candidate, seed: int = 0, settle_s: float = 0.0) -> dict[str, float]:
    """:func:`predict_frame` on the candidate's runs (the median over :data:`DRAWS` layouts drawn from ``seed``
    on), with the level's seconds under it."""
    draws = [predict_frame(pd.DataFrame(), noise,
                           unit=_candidate_unit(noise.baseline, noise.arms, noise.windows_per_arm_block, cand, seed + i))
             for i in range(DRAWS)]
    return {**{k: float(np.median([d[k] for d in draws])) for k in ("aa_hw", "median_hw", "df")},
            "seconds": candidate_seconds(noise, cand, settle_s)}


@functools.lru_cache(maxsize=4096)
def _candidate_unit(baseline: str, arms: tuple[str, ...], per_block: int, cand: Candidate, seed: int):
    # the design matrix depends on the arms and the schedule, not on the level's noise: the levels of a study
    # (02's three, 04's nine) share it
    nz = Noise(stem="", design=cand.design, level="", clients=None, baseline=baseline, arms=arms, ratios=(),
               sigma=math.nan, sigma_arm=math.nan, acf1=math.nan, n=0, run_s=math.nan, windows_per_arm_block=per_block)
    return unit_se(candidate_frame(nz, cand, seed), baseline)


def candidates(dsg: str, max_count: int = 24) -> list[Candidate]:
    """The grid searched: blocks 2..max_count with the baseline x1-3 and the A/A x1-2; switchback 2..max_count
    loads of 1-4 blocks."""
    if dsg == BLOCKS:
        return [Candidate(BLOCKS, n, b, a) for n, b, a in itertools.product(range(2, max_count + 1), (1, 2, 3), (1, 2))]
    return [Candidate(SWITCHBACK, n, blocks=b) for n, b in itertools.product(range(2, max_count + 1), (1, 2, 3, 4))]


@functools.lru_cache(maxsize=4096)
def runnable(baseline: str, arms: tuple[str, ...], cand: Candidate, clients: tuple, seed: int) -> bool:
    """Whether the study would accept the candidate's block layout at its ``clients`` levels and ``seed``: the
    suite's own scheduler and its check that every arm stands next to its baseline in some block
    (:func:`logbench.design.check_layout`); switchback candidates: True (every block holds every arm)."""
    if cand.design != BLOCKS:
        return True
    layout = design.BlockLayout(baseline_runs=cand.baseline_runs, aa_runs=cand.aa_runs, order="williams")
    times = {baseline: cand.baseline_runs, baseline + AA_SUFFIX: cand.aa_runs}
    slots = [s for s in (baseline, *arms) for _ in range(times.get(s, 1))]
    plan = design.layout_schedule(slots, clients, cand.count, seed, layout)
    try:
        design.check_layout(plan, {baseline: baseline, **dict.fromkeys(arms, baseline)}, layout)
    except ParameterError:
        return False
    return True


# --- the plan: per level, and one schedule per study ---------------------------------------------------------

def _meets(p: dict, goal: Goal, clients: object) -> bool:
    aa = goal.aa_for(clients)
    return p["median_hw"] <= goal.median and (aa is None or p["aa_hw"] <= aa)


def _shortfall(p: dict, goal: Goal, clients: object) -> float:
    """How far a prediction is from the goal, as the largest predicted / goal ratio (<= 1: met)."""
    aa = goal.aa_for(clients)
    return max(p["median_hw"] / goal.median, p["aa_hw"] / aa if aa is not None else 0.0)


def plan_study(noises: list[Noise], goal: Goal, settle_s: float = 0.0, seed: int | None = None,
               accept: Callable[[Candidate], bool] | None = None) -> tuple[pd.DataFrame, dict]:
    """(per level: each design's cheapest candidate meeting the goal alone, or its best within the budget;
    the study's pick: one design and count for every level, the cheapest meeting the goal at every level
    within ``goal.budget_s``, else the one nearest it (the floor), with why). ``settle_s``: the settle wait
    expected before each block run; ``seed``: the study's, to keep only block layouts the study accepts with it
    (:func:`runnable`); ``accept``: the study's own say where its schedule is more than one layout (04 lays out
    each cell with a seed of its own): whether its define() takes the candidate (the study's pick only; the
    per-level rows show what each level alone would take)."""
    by_design: dict[str, list[Noise]] = {}
    for nz in noises:
        by_design.setdefault(nz.design, []).append(nz)
    rows, picks = [], []
    for dsg, group in by_design.items():
        levels = tuple(sorted({int(nz.clients) for nz in group}))
        cands = [c for c in candidates(dsg)
                 if seed is None or all(runnable(nz.baseline, nz.arms, c, levels, seed) for nz in group)]
        preds = {c: [predict(nz, c, seed=seed or 0, settle_s=settle_s) for nz in group] for c in cands}
        for i, nz in enumerate(group):
            ok = [(p[i]["seconds"], c) for c, p in preds.items() if _meets(p[i], goal, nz.clients)
                  and p[i]["seconds"] <= goal.budget_s]
            within = [(p[i]["seconds"], c) for c, p in preds.items() if p[i]["seconds"] <= goal.budget_s]
            c = min(ok, key=lambda x: x[0])[1] if ok else (
                min(within, key=lambda x: (_shortfall(preds[x[1]][i], goal, nz.clients), x[0]))[1] if within else None)
            p = preds[c][i] if c is not None else {"aa_hw": math.nan, "median_hw": math.nan, "seconds": math.nan}
            rows.append({"stem": nz.stem, "design": dsg, "level": nz.level, "clients": nz.clients,
                         "sigma": nz.sigma, "drift_share": nz.drift_share, "acf1": nz.acf1, "run_s": nz.run_s,
                         "schedule": c.text() if c else "none within the budget", "pred_aa_hw": p["aa_hw"],
                         "pred_median_hw": p["median_hw"], "seconds_alone": p["seconds"],
                         "goal_aa": goal.aa_for(nz.clients), "goal_median": goal.median, "meets": bool(ok)})
        for c, p in preds.items():
            total = sum(x["seconds"] for x in p)
            # the study's define() is slow (04's lays out every cell): asked only about what fits the budget
            if total <= goal.budget_s and (accept is None or accept(c)):
                short = max(_shortfall(x, goal, nz.clients) for x, nz in zip(p, group))
                picks.append((short <= 1, short, total, dsg, c, p, group))
    if not picks:
        return pd.DataFrame(rows), {"met": False, "why": f"no candidate fits {goal.budget_s:g} s"}
    met = [x for x in picks if x[0]]
    best = min(met, key=lambda x: x[2]) if met else min(picks, key=lambda x: (x[1], x[2]))
    _, short, total, dsg, c, p, group = best
    worst = max(zip(p, group), key=lambda xn: _shortfall(xn[0], goal, xn[1].clients))
    pick = {"met": bool(met), "design": dsg, "candidate": c, "schedule": c.text(), "seconds": total,
            "shortfall": short,
            "levels": [{"level": nz.level, "clients": nz.clients, "pred_aa_hw": x["aa_hw"],
                        "pred_median_hw": x["median_hw"]} for x, nz in zip(p, group)],
            "why": "" if met else (f"at {worst[1].level} the best within {goal.budget_s:g} s predicts A/A "
                                   f"{worst[0]['aa_hw']:.3f}, median {worst[0]['median_hw']:.3f}: per-run noise "
                                   f"sigma {worst[1].sigma:.3f} after the drift (drift {worst[1].drift_share:.0%} "
                                   f"of the arm-only variance) at {worst[1].run_s:.1f} s a run")}
    return pd.DataFrame(rows), pick


# --- checking the predictor on the committed runs -------------------------------------------------------------

def validate_table(runs: pd.DataFrame, stem: str, baseline: str | None = None, share: float = 0.5) -> pd.DataFrame:
    """Per level: sigma from the first ``share`` of its blocks (switchback: loads) alone, the model's half-widths on
    all of the level's runs predicted from it (the runs' own design matrix), beside what the model gave on all."""
    dsg, levels = level_frames(runs)
    out = []
    for text, clients, g in levels:
        base = baseline or models.aa_baseline(g["arm"])
        cl = models.DESIGNS[dsg]["cluster_col"]
        order = list(dict.fromkeys(g.sort_values(models._time_col(g), kind="stable")[cl].astype(str)))
        keep = set(order[: max(2, int(math.ceil(len(order) * share)))])
        part = g[g[cl].astype(str).isin(keep)]
        if part["arm"].nunique() < g["arm"].nunique() or len(keep) >= len(order):
            continue
        try:
            sub = _fit(part, dsg, base)
        except (ValueError, np.linalg.LinAlgError):
            continue
        full = _fit(g, dsg, base)
        frame = models._frame(g, "arm", "tps", models._time_col(g), models.DESIGNS[dsg]["block_col"], cl)
        nz = Noise(stem=stem, design=dsg, level=text, clients=clients, baseline=base, arms=tuple(full["arm"]),
                   ratios=tuple(full["ratio"]), sigma=float(sub["sigma"].iloc[0]), sigma_arm=math.nan,
                   acf1=math.nan, n=len(g), run_s=math.nan)
        p = predict_frame(frame, nz)
        over = full[~full["arm"].map(is_aa)]
        aa = full[full["arm"].map(is_aa)]
        out.append({"stem": stem, "design": dsg, "level": text, "clusters_used": len(keep), "clusters": len(order),
                    "sigma_part": nz.sigma, "sigma_all": float(full["sigma"].iloc[0]),
                    "pred_aa_hw": p["aa_hw"], "aa_hw": float(aa["halfwidth"].iloc[0]) if len(aa) else math.nan,
                    "pred_median_hw": p["median_hw"], "median_hw": float(over["halfwidth"].median())})
    return pd.DataFrame(out)


PLANNED = {"pg_destinations": ("standard",), "mysql_slowlog": ("standard", "switchback"),
           "pg_audit_timing": ("standard", "switchback")}


def study_noise(processed_dir: Path | str, study: str) -> list[Noise]:
    """The noise of every committed table of ``study`` the plan reads (:data:`PLANNED`: the committed profile's and
    the switchback run's, the designs the plan chooses between)."""
    out = []
    for profile in PLANNED[study]:
        path = Path(processed_dir) / f"{stem(study, profile)}_runs.csv"
        out += table_noise(pd.read_csv(path), path.name[: -len("_runs.csv")])
    return out


def runs_tables(study: str | None = None) -> list[str]:
    """The runs tables the plan reads (of every study of :data:`PLANNED`, or of ``study``): `<stem>_runs.csv`."""
    return [f"{stem(s, profile)}_runs.csv" for s in ([study] if study else PLANNED) for profile in PLANNED[s]]


def planned_in(processed_dir: Path | str) -> list[str]:
    """The studies of :data:`PLANNED` whose every runs table ``processed_dir`` holds; ParameterError naming
    PROCESSED_DIR where it holds none (or is no directory): nothing to plan from."""
    d = Path(processed_dir)
    present = [s for s in PLANNED if d.is_dir() and all((d / t).is_file() for t in runs_tables(s))]
    if not present:
        raise ParameterError("PROCESSED_DIR", str(processed_dir),
                             "a directory holding the runs tables of a planned study: "
                             + "; ".join(" + ".join(runs_tables(s)) for s in PLANNED))
    return present


def print_plans(processed: Path, seeds: dict[str, int]) -> None:
    """Per study of ``seeds`` (those of :data:`PLANNED` to plan, with its seed) and design: the per-level table and
    the pick at the standard and the resolution budget (blocks with a 0.25 s settle poll and the study's seed; 04's
    profile was picked with its define() as the judge too, which this does not ask), then the predictor's check on
    each committed table."""
    with pd.option_context("display.width", 250, "display.max_rows", 500, "display.max_columns", 30,
                           "display.float_format", "{:.3f}".format):
        for study, seed in seeds.items():
            seed = int(seed)
            noises = study_noise(processed, study)
            for dsg in (BLOCKS, SWITCHBACK):
                group = [n for n in noises if n.design == dsg]
                for budget in (STANDARD_BUDGET_S, RESOLUTION_BUDGET_S):
                    if not group:
                        continue
                    table, pick = plan_study(group, goals(study, budget), settle_s=0.25 if dsg == BLOCKS else 0.0,
                                             seed=seed)
                    print(f"\n== {study}, {dsg}, budget {budget / 60:.0f} min\n{table.to_string(index=False)}")
                    print({k: v for k, v in pick.items() if k not in ("candidate", "levels")})
                    for lv in pick.get("levels", []):
                        print(f"   {lv['level']}: A/A ±{lv['pred_aa_hw']:.3f}, median ±{lv['pred_median_hw']:.3f}")
            for profile in PLANNED[study]:
                s = stem(study, profile)
                print(f"\n-- the predictor from the first half of {s}'s blocks (loads) vs the model on all")
                print(validate_table(pd.read_csv(Path(processed) / f"{s}_runs.csv"), s).to_string(index=False))



# --- a run's schedule: predicted when it starts, reached when it ends ------------------------------------------

def study_candidate(study: object) -> Candidate:
    """The schedule a defined study runs per level, as a :class:`Candidate` (its repeats and block layout, or its
    switchback loads and blocks; adaptive blocks or loads not counted)."""
    sb = getattr(study, "switchback", None)
    if sb is not None:
        return Candidate(SWITCHBACK, int(sb.loads), blocks=int(sb.blocks))
    layout = getattr(study, "block_layout", None)
    return Candidate(BLOCKS, int(study.repeats), getattr(layout, "baseline_runs", 1), getattr(layout, "aa_runs", 1))


# resolution_blocks (05's): the standard profile's arms in its design at one of its levels, which the standard run's
# noise predicts as it does the standard's own
PREDICTED_PROFILES = ("standard", "resolution", "resolution_blocks")
PREDICTED_COLUMNS = ["level", "clients", "design", "schedule", "noise_from", "sigma", "pred_aa_hw", "pred_median_hw",
                     "pred_seconds"]


def planned_study(study: object) -> str | None:
    """The study of :data:`PLANNED` whose noise predicts ``study``'s schedule (its goals are that study's), or None
    where the planner predicts nothing for it."""
    # a named profile's study is named by its processed stem (pg_destinations_resolution)
    found = [k for k in PLANNED if stem(k, str(getattr(study, "profile", ""))) == getattr(study, "name", "")]
    # other named profiles run other arms, levels or posts than the committed tables the noise comes from
    if not found or getattr(study, "profile", "") not in PREDICTED_PROFILES:
        return None
    return found[0]


def predicted_for(study: object, processed_dir: Path | str, here: str | None = None,
                  here_idle: str | None = None) -> pd.DataFrame:
    """What the planner predicts ``study``'s schedule reaches per level, from the committed runs in
    ``processed_dir`` of the same design (:data:`PLANNED`), its levels at the study's clients and its arms among
    the study's configurations; empty where the study has no planned noise (another study, none committed) or
    where that noise was measured on another processor than ``here`` or under another cpuidle driver than
    ``here_idle`` (defaults: this machine's), said in the frame's ``attrs["not_predicted"]``. Study 04's resolution
    run was predicted from a switchback run on an AMD EPYC host (per-window sigma 0.006 at 1 client) and ran, after
    the VM had moved, on an Intel Xeon one at half the throughput and ten times the per-second noise: a prediction
    across processors predicts nothing. Nor across idle drivers: on the same Xeon, haltpoll instead of none took
    04's 1-connection point selects from 23,800 to 43,400 tps and their windows' residual sd from 0.096 to 0.025."""
    name = planned_study(study)
    if name is None:
        return pd.DataFrame(columns=PREDICTED_COLUMNS)
    if here is None:
        from ..base import environment

        here = environment.cpu_model()
    if here_idle is None:
        from ..measure import controls

        here_idle = controls.cpuidle_driver()
    cand = study_candidate(study)
    names = {c.name for c in study.planned_configurations}
    settle = getattr(study, "settle", None)
    rows = []
    try:
        noises = study_noise(processed_dir, name)
    except FileNotFoundError:
        return pd.DataFrame(columns=PREDICTED_COLUMNS)
    stems = {nz.stem for nz in noises}
    processors = {s: records.processor_of(processed_dir, s) for s in stems}
    drivers = {s: records.idle_driver_of(processed_dir, s) for s in stems}
    elsewhere = set()
    for nz in noises:
        if nz.design != cand.design or int(nz.clients) not in {int(c) for c in study.clients}:
            continue
        there, idle = processors[nz.stem], drivers[nz.stem]
        if there and here and there != here:
            elsewhere.add(f"{nz.stem} on {there}")
            continue
        if idle and here_idle and idle != here_idle:
            elsewhere.add(f"{nz.stem} under the cpuidle driver {idle}")
            continue
        keep = [(a, r) for a, r in zip(nz.arms, nz.ratios) if a in names]
        if not keep or nz.baseline not in names:
            continue
        nz = Noise(**{**nz.__dict__, "arms": tuple(a for a, _ in keep), "ratios": tuple(r for _, r in keep)})
        p = predict(nz, cand, seed=int(study.seed),
                    settle_s=settle.poll_s if settle is not None and cand.design == BLOCKS else 0.0)
        rows.append({"level": nz.level, "clients": nz.clients, "design": cand.design, "schedule": cand.text(),
                     "noise_from": nz.stem, "sigma": nz.sigma, "pred_aa_hw": p["aa_hw"],
                     "pred_median_hw": p["median_hw"], "pred_seconds": p["seconds"]})
    out = pd.DataFrame(rows, columns=PREDICTED_COLUMNS)
    if not rows and elsewhere:
        out.attrs["not_predicted"] = (f"no planner prediction: the committed runs it predicts from ran on another "
                                      f"processor or cpuidle driver ({'; '.join(sorted(elsewhere))}), this machine "
                                      f"is {here} under {here_idle}")
    return out


def reached(runs: pd.DataFrame, baseline: str | None = None) -> pd.DataFrame:
    """Per level of a finished run: the main model's A/A half-width and median overhead half-width."""
    fit = models.fit_main(runs, baseline=baseline)
    levels = [c for c in models.LEVELS if c in fit]
    fit = fit.assign(level=models._level_text(fit, levels))
    rows = []
    for level, g in fit.groupby("level", sort=False):
        aa, over = g[g["arm"].map(is_aa)], g[~g["arm"].map(is_aa)]
        rows.append({"level": level, "aa_hw": float(aa["halfwidth"].iloc[0]) if len(aa) else math.nan,
                     "median_hw": float(over["halfwidth"].median()) if len(over) else math.nan})
    return pd.DataFrame(rows, columns=["level", "aa_hw", "median_hw"])


def reached_vs_predicted(predicted: pd.DataFrame, runs: pd.DataFrame, baseline: str | None = None) -> pd.DataFrame:
    """``predicted`` (:func:`predicted_for`, taken when the run started) beside what the run reached, per level."""
    if not len(predicted):
        return predicted.assign(aa_hw=pd.Series(dtype=float), median_hw=pd.Series(dtype=float))
    return predicted.merge(reached(runs, baseline), on="level", how="left")


def reached_text(table: pd.DataFrame) -> str:
    """One line per level: what the run reached beside what the planner predicted from the committed runs."""
    if not len(table):
        return "no planner prediction for this run (no committed runs of its design to predict from)"
    return "\n".join(f"{r.level}: A/A ±{r.aa_hw:.3f} (predicted ±{r.pred_aa_hw:.3f}), median overhead "
                     f"±{r.median_hw:.3f} (predicted ±{r.pred_median_hw:.3f}); {r.schedule}, noise from "
                     f"{r.noise_from}" for r in table.itertuples())


def _beyond(value: float, limit: float) -> str:
    """``value`` to three decimals, or as many more (up to six) as it takes not to print the ``limit`` it exceeds:
    a reached ±0.0303 against a goal of ±0.030 reads '±0.0303 > ±0.030', not '±0.030 > ±0.030'."""
    for d in range(3, 7):
        if f"{value:.{d}f}" != f"{limit:.{d}f}":
            return f"{value:.{d}f}"
    return f"{value:.6f}"


def goal_text(table: pd.DataFrame, study: str) -> str:
    """One sentence from a planned table (:func:`reached_vs_predicted`): whether each level reached ``study``'s goals
    (:func:`goals`), the levels that missed named with what they reached against the goal."""
    if not len(table):
        return ""
    goal = goals(study, STANDARD_BUDGET_S)
    wanted = f"median overhead ≤ ±{goal.median:.3f}"
    if goal.aa is not None:
        one = f" (±{goal.aa_1client:.3f} at 1 client)" if goal.aa_1client not in (None, goal.aa) else ""
        wanted = f"A/A ≤ ±{goal.aa:.3f}{one}, " + wanted
    met, missed, unknown = [], [], []
    for r in table.itertuples():
        checks = [(what, value, limit) for what, value, limit in
                  (("A/A", r.aa_hw, goal.aa_for(r.clients)), ("median overhead", r.median_hw, goal.median))
                  if limit is not None]
        if any(not math.isfinite(value) for _, value, _ in checks):
            unknown.append(str(r.level))
            continue
        short = [f"{what} ±{_beyond(value, limit)} > ±{limit:.3f}" for what, value, limit in checks if value > limit]
        (missed.append(f"{r.level} ({', '.join(short)})") if short else met.append(str(r.level)))
    parts = []
    if met:
        parts.append(f"met at {', '.join(met)}" if missed or unknown else "met at every level")
    if missed:
        parts.append(f"missed at {'; '.join(missed)}" if met or unknown else
                     f"missed at every level: {'; '.join(missed)}")
    if unknown:
        parts.append(f"not known at {', '.join(unknown)} (the run too short for the model)")
    return f"The resolution goal ({wanted}) was {'; '.join(parts)}."
