"""Study 00: how precise is the instrument on this machine, and what makes it noisy?

Every other study divides one mean throughput by another. Whether a 5 % effect is
visible depends on the run-to-run spread of those means on this 2-core VM, so this
study measures that spread directly and tests the controls that may shrink it:

* **The noise curve.** Long baseline runs (no statement logging) with pgbench's
  per-second progress (``-P 1``): the coefficient of variation of a w-second mean
  for w = 1 … 32 s, the per-second autocorrelation, and the steal time the
  hypervisor took, each under every control, interleaved in seeded random blocks.
* **The controls.** ``free``: the kernel's default CPU idle handling. ``hold``:
  ``/dev/cpu_dma_latency`` held at 0 while measuring, so an idle vCPU does not
  enter a halt state that costs a wake-up on every client round trip (what tuned's
  latency-performance profile and ``pyperf system tune`` do). ``hold_split``: the
  same, with the server pinned to CPU 0 and pgbench to CPU 1.
* **The 1-client anomaly.** Committed 1-client results showed logging *faster*
  than no logging. If that is the idle-state artefact, it must vanish when the
  control is held: none / stderr / syslog at 1 and 4 clients, control free vs
  held, in one interleaved schedule.

Both parts run through the shared runner, so every run is an ordinary run record
(with its steal time, context switches and idle-state counters); a control is a
*variant* label of the configuration (``hold/stderr``), like a backend in study 03.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats as sps

from .. import params, records, stats
from ..benches import postgres as pg
from ..design import VARIANT_SEP
from ..settings import Configuration
from . import common

NAME = "instrument"
# control -> (idle state, placement): what is in force while a run of that control warms up and measures
CONTROLS: dict[str, tuple[str, str]] = {"free": ("free", "none"), "hold": ("hold", "none"),
                                        "hold_split": ("hold", "split")}
ANOMALY_CONTROLS = ("free", "hold")
ANOMALY_DESTINATIONS = ("none", "stderr", "syslog")
BASELINE = "none"
LENGTHS = (1, 2, 4, 8, 16, 32)
# pgbench -P's first intervals include connection set-up and a cold backend: not steady-state seconds.
SKIP_SECONDS = 2

SPEC = common.StudySpec(
    name=NAME, engine="postgresql", title="The instrument: noise, controls and the 1-client anomaly",
    post="", baseline=f"free{VARIANT_SEP}{BASELINE}", notebook="00_instrument.ipynb", seed=20261123,
    committed={"profile": "standard", "publish": True}, smoke=({"profile": "smoke"},), paper_order=0, measures_logging=False)

# The designs part (design_comparison): per clients level and placement, ``design_rounds`` rounds of one
# switchback session (a load of ``design_blocks`` blocks of none / stderr / A/A in ``design_window_s`` windows,
# ``design_guard_s`` guard) and one block session (``design_block_repeats`` blocks of separate runs of
# ``duration`` s after ``warmup`` s) of about the same length; 0 rounds: no designs part.
PROFILES: dict[str, dict[str, object]] = {
    "smoke": {"clients": [1], "repeats": 1, "series_s": 6, "anomaly_clients": [1], "anomaly_repeats": 2,
              "duration": 1, "warmup": 0, "scale": 1, "sampling_rate": 0.1,
              "design_clients": [1], "design_rounds": 2, "design_blocks": 2, "design_window_s": 2,
              "design_guard_s": 1, "design_block_repeats": 1, "design_placements": ["split"]},
    # ~38 minutes on two cores: 3 controls x 2 levels x 2 blocks of 40 s long runs, then 2 controls x
    # (3 destinations + A/A) x 2 levels x 5 blocks of 4 s runs (~13 min); then the designs at 4 clients (2 per
    # core, where the switchback's window-to-window noise was: issue 21) with the scheduler's placement and with
    # server and pgbench on separate CPUs: 6 rounds x 2 placements x (a ~50 s switchback session + a ~56 s block
    # session) (~23 min). The 1-client comparison (no design more efficient there) is in the run of c7c6806.
    "standard": {"clients": [1, 4], "repeats": 2, "series_s": 40, "anomaly_clients": [1, 4],
                 "anomaly_repeats": 5, "duration": 4, "warmup": 1, "scale": 10, "sampling_rate": 0.01,
                 "design_clients": [4], "design_rounds": 6, "design_blocks": 4, "design_window_s": 4,
                 "design_guard_s": 1, "design_block_repeats": 3, "design_placements": ["none", "split"]},
    "full": {"clients": [1, 2, 4, 8], "repeats": 4, "series_s": 70, "anomaly_clients": [1, 4],
             "anomaly_repeats": 10, "duration": 8, "warmup": 2, "scale": 10, "sampling_rate": 0.01,
             "design_clients": [1, 2, 4, 8], "design_rounds": 12, "design_blocks": 4, "design_window_s": 4,
             "design_guard_s": 1, "design_block_repeats": 3, "design_placements": ["none", "split"]},
}


@dataclass(frozen=True, kw_only=True)
class ControlledStudy(pg.PgStudy):
    """A PostgreSQL schedule whose configurations are ``control/destination``: the control is a factor
    of the design, set per run by :class:`ControlledBench` (the study-wide idle state stays free)."""

    progress: int = 0  # pgbench -P interval of measured runs (s); 0: none


@dataclass(frozen=True)
class InstrumentStudy:
    """The two schedules (noise curve and anomaly test), each on a fresh server."""

    profile: str
    series: ControlledStudy
    anomaly: ControlledStudy
    controls: tuple[str, ...]
    processed_dir: Path | None
    publish: bool = False  # the committed results: processed tables and figure into data/processed, paper/figures
    designs: object = None  # design_comparison.Sessions, or None: no designs part


def _labelled(configs: tuple[Configuration, ...], labels) -> tuple[Configuration, ...]:
    # Interleaved by label within each configuration, the baseline ("<first label>/none") first.
    return tuple(dataclasses.replace(c, name=f"{label}{VARIANT_SEP}{c.name}") for c in configs for label in labels)


# Its PROFILES' sampling rate and the designs part's block shape are fixed per profile; the notebook's
# target_halfwidth plans its run-length table, not a run.
@common.declare(PROFILES, settings=("sampling_rate", "design_blocks", "design_window_s", "design_guard_s",
                                    "design_block_repeats"), notebook_only={"target_halfwidth": (float, 0.03)})
def define(profile: str = "standard", controls: list[str] | None = None, clients: list[int] | None = None,
           repeats: int | None = None, series_s: int | None = None, anomaly_clients: list[int] | None = None,
           anomaly_repeats: int | None = None, duration: float | None = None, warmup: float | None = None,
           scale: int | None = None, seed: int | None = None, output_dir: str | Path | None = None,
           processed_dir: str | Path | None = None, publish: bool = False, pg_bindir: str | None = None,
           design_clients: list[int] | None = None, design_rounds: int | None = None,
           design_placements: list[str] | None = None) -> InstrumentStudy:
    """Check every parameter and freeze both schedules; raises ParameterError before anything starts."""
    d = common.profile_lookup(profile, PROFILES)
    publish = params.boolean("publish", publish)
    chosen = params.name_list("controls", list(CONTROLS) if controls is None else controls, CONTROLS)
    series_s = params.positive_int("series_s", d("series_s", series_s))
    if series_s <= SKIP_SECONDS + 1:
        raise params.ParameterError("series_s", series_s, f"a whole number of seconds > {SKIP_SECONDS + 1}")
    engine = pg.pg_fields(backend="local", image=None, scale=d("scale", scale), query_mode="prepared",
                          syslog_rate_limit=False, log_dir_on="disk", sampling_rate=d("sampling_rate", None),
                          shared_buffers="128MB", extra_settings=None, pg_bindir=pg_bindir)
    out = common.output_path(NAME, profile, output_dir)

    def part(name, destinations, labels, **shared) -> ControlledStudy:
        fields = common.study_fields(SPEC, profile, PROFILES, seed=seed, output_dir=out / name,
                                     processed_dir=None, warmup=warmup, idle_state="free", placement="none",
                                     target_halfwidth="off", **shared)
        configs = pg.configurations(destinations, pg.DESTINATIONS, engine["pg_bindir"], engine["base"], "prepared")
        # the parts write no processed tables of their own: run() writes the study's after both
        return pg.checked(ControlledStudy(**{**fields, "name": f"{NAME}_{name}", "processed_dir": None}, **engine,
                                          configurations=_labelled(configs, labels),
                                          progress=1 if name == "series" else 0))

    series = part("series", (BASELINE,), chosen, clients=d("clients", clients), repeats=d("repeats", repeats),
                  duration=series_s, aa_control=False)
    anomaly = part("anomaly", ANOMALY_DESTINATIONS, ANOMALY_CONTROLS, clients=d("anomaly_clients", anomaly_clients),
                   repeats=d("anomaly_repeats", anomaly_repeats), duration=d("duration", duration))
    from .design_comparison import sessions_for

    designs = sessions_for(SPEC, PROFILES, profile, engine, out / "designs", rounds=d("design_rounds", design_rounds),
                           clients=d("design_clients", design_clients), seed=seed, warmup=warmup, duration=duration,
                           lead_in_s=int(round(series.warmup)) + 1, placements=design_placements)
    return InstrumentStudy(profile=profile, series=series, anomaly=anomaly, controls=tuple(chosen),
                           processed_dir=common.processed_path(profile, processed_dir, publish=publish, output_dir=out),
                           publish=publish, designs=designs)


class ControlledBench:
    """The PostgreSQL bench, with each configuration's control (its label) told to the runner, which
    holds it only while that run warms up and measures (``runner.execute``: ``controls_of``)."""

    def __init__(self, inner: pg.PgBench, progress: int):
        self.inner = inner
        inner.progress = progress

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    def controls_of(self, configuration: Configuration) -> tuple[str, str]:
        return CONTROLS[configuration.name.partition(VARIANT_SEP)[0]]


@dataclass(frozen=True)
class InstrumentResult:
    study: InstrumentStudy
    series_runs: pd.DataFrame
    anomaly_runs: pd.DataFrame
    environment: dict
    designs_runs: pd.DataFrame | None = None


def _run_part(study: ControlledStudy, progress: bool) -> common.StudyResult:
    def start(study, stack):
        bench, env = pg.start(study, stack)
        return ControlledBench(bench, study.progress), env

    return common.run_study(study, start, lambda result: {}, progress=progress)


def run(study: InstrumentStudy, *, progress: bool = True) -> InstrumentResult:
    """The noise curve first, then the anomaly test, each on a fresh server; the processed tables after both."""
    series = _run_part(study.series, progress)
    anomaly = _run_part(study.anomaly, progress)
    designs = None
    if study.designs is not None:
        from . import design_comparison

        designs = common.run_study(study.designs.study, pg.start, lambda result: {},
                                   execute=design_comparison.execute(study.designs), progress=progress).runs
    result = InstrumentResult(study, series.runs, anomaly.runs, series.environment, designs)
    if study.processed_dir is not None:
        write_processed(result, Path(study.processed_dir))
    return result


# -- the noise curve -------------------------------------------------------------------------------

def series_frame(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per measured second: control, clients, run position, second, tps."""
    measured = common.split_variant(runs)
    rows = []
    for r in measured.itertuples():
        for i, tps in enumerate(r.extra.get("progress_tps", [])):
            rows.append({"control": r.variant, "clients": r.clients, "position": r.position, "second": i + 1,
                         "tps": tps})
    return pd.DataFrame(rows, columns=["control", "clients", "position", "second", "tps"])


def cv_ci(x: np.ndarray, confidence: float = stats.CONFIDENCE) -> tuple[float, float, float]:
    """CV with the chi-square interval of its standard deviation (mean treated as known: the windows are many)."""
    n = x.size
    if n < 2 or x.mean() == 0:
        return math.nan, math.nan, math.nan
    sd, m = x.std(ddof=1), x.mean()
    lo, hi = sps.chi2.ppf([0.5 + confidence / 2, 0.5 - confidence / 2], n - 1)
    return sd / m, sd * math.sqrt((n - 1) / lo) / m, sd * math.sqrt((n - 1) / hi) / m


def cv_by_length(series: pd.DataFrame, lengths=LENGTHS, skip: int = SKIP_SECONDS) -> pd.DataFrame:
    """CV of a w-second mean throughput per control × clients: each run's steady seconds cut into
    non-overlapping w-second windows, pooled over the control's runs (so run-to-run shifts count)."""
    rows = []
    steady = series[series["second"] > skip]
    for (control, clients), g in steady.groupby(["control", "clients"], sort=False):
        for w in lengths:
            means = []
            for _, run_s in g.groupby("position"):
                tps = run_s.sort_values("second")["tps"].to_numpy()
                k = tps.size // w
                means.extend(tps[: k * w].reshape(k, w).mean(axis=1))
            cv, lo, hi = cv_ci(np.asarray(means))
            rows.append({"control": control, "clients": clients, "run_length_s": w, "windows": len(means),
                         "cv": cv, "cv_ci_low": lo, "cv_ci_high": hi})
    return pd.DataFrame(rows)


def autocorrelation(series: pd.DataFrame, nlags: int = 5, skip: int = SKIP_SECONDS) -> pd.DataFrame:
    """Mean per-second autocorrelation of tps at lags 1..nlags per control × clients (statsmodels acf)."""
    from statsmodels.tsa.stattools import acf

    rows = []
    steady = series[series["second"] > skip]
    for (control, clients), g in steady.groupby(["control", "clients"], sort=False):
        per_run = [acf(s.sort_values("second")["tps"].to_numpy(), nlags=nlags, fft=False)[1:]
                   for _, s in g.groupby("position") if len(s) > nlags + 2]
        if per_run:
            mean = np.mean(per_run, axis=0)
            rows.append({"control": control, "clients": clients, "runs": len(per_run),
                         **{f"lag {k}": float(v) for k, v in enumerate(mean, start=1)}})
    return pd.DataFrame(rows)


def runs_needed(cv: float, target_halfwidth: float, confidence: float = stats.CONFIDENCE) -> int:
    """Runs per cell so that a ratio of two cells with this CV has a CI half-width ≤ target (Student t,
    independent means of equal n: half-width ≈ t · √2 · CV / √n)."""
    if not cv > 0:
        return 2
    n = 2
    while n < 10_000:
        t = sps.t.ppf(0.5 + confidence / 2, 2 * n - 2)
        if t * math.sqrt(2) * cv / math.sqrt(n) <= target_halfwidth:
            return n
        n += 1
    return n


def run_length_table(cv: pd.DataFrame, target_halfwidth: float = 0.03, overhead_s: float = 1.5) -> pd.DataFrame:
    """For each control × clients × run length: runs per cell for the target half-width and the seconds
    that costs (each run also pays ``overhead_s`` for switching, draining and warm-up)."""
    out = cv.copy()
    out["runs_for_target"] = [runs_needed(c, target_halfwidth) for c in out["cv"]]
    out["seconds_per_cell"] = out["runs_for_target"] * (out["run_length_s"] + overhead_s)
    return out


def per_run_controls(runs: pd.DataFrame) -> pd.DataFrame:
    """Steal, context switches and server CPU per control × clients (mean ± CI)."""
    measured = common.split_variant(runs)
    cols = [c for c in ("tps", "steal_s", "server_ctx_involuntary", "server_cpu_s") if c in measured]
    rows = []
    for (control, clients), g in measured.groupby(["variant", "clients"], sort=False):
        row = {"control": control, "clients": clients, "n": len(g)}
        for c in cols:
            e = stats.mean_ci(g[c].astype(float))
            row.update({f"{c}_mean": e.value, f"{c}_ci_low": e.low, f"{c}_ci_high": e.high})
        rows.append(row)
    return pd.DataFrame(rows)


# -- the anomaly test -----------------------------------------------------------------------------

def anomaly_summary(runs: pd.DataFrame) -> pd.DataFrame:
    """Ratio to `none` with its CI (within blocks: stats.cell_ratio) per control × destination × clients (each
    control its own baseline)."""
    out = common.summary_per_variant(runs, BASELINE, also=("latency_mean_ms", "log_loss", "server_cpu_s",
                                                           "logger_cpu_s"), order=list(ANOMALY_DESTINATIONS))
    return out.rename(columns={"variant": "control"})


def anomaly_verdict(summary: pd.DataFrame) -> str:
    """Does 'logging is not slower (or faster) than no logging at 1 client' survive the idle-state control?"""
    from ..plots import fmt_ci

    logging = summary[summary["configuration"].isin(["stderr", "syslog"])]
    lines = []
    for clients, g in logging.groupby("clients"):
        for r in g.sort_values(["configuration", "control"]).itertuples():
            word = ("faster than" if r.ratio_ci_low > 1 else "slower than" if r.ratio_ci_high < 1
                    else "not distinguishable from")
            lines.append(f"- {clients} client(s), control `{r.control}`: `{r.configuration}`/`none` = "
                         f"{fmt_ci(r.ratio, r.ratio_ci_low, r.ratio_ci_high, r.n)} — logging {word} no logging.")
    one = logging[logging["clients"] == logging["clients"].min()]
    free, hold = one[one["control"] == "free"], one[one["control"] == "hold"]
    base = summary[(summary["configuration"] == BASELINE) & (summary["clients"] == logging["clients"].min())]
    speed = base.set_index("control")["tps_mean"]
    lift = (f" Holding the idle state made the baseline itself {speed['hold'] / speed['free']:.2g} times as fast "
            f"({speed['free']:,.0f} → {speed['hold']:,.0f} tps), consistent with a lone client's round trips "
            "waiting for an idle vCPU to wake." if {"free", "hold"} <= set(speed.index) else "")
    if (hold["ratio_ci_low"] > 1).any():
        head = ("**Verdict:** logging still looks faster than no logging with the idle state held: the idle state "
                "does not explain it.")
    elif (free["ratio_ci_high"] >= 1).any() and (hold["ratio_ci_high"] < 1).all():
        head = ("**Verdict:** the 1-client anomaly is the VM's idle state. With the CPUs free to idle, logging at "
                "1 client is not slower than no logging (" + ", ".join(f"`{r.configuration}` {r.ratio:.3g}"
                                                                    for r in free.itertuples())
                + "); with the idle state held, every logging destination is slower (" +
                ", ".join(f"`{r.configuration}` {r.ratio:.3g}" for r in hold.itertuples()) + ")." + lift)
    else:
        head = ("**Verdict:** undecided in this run: the two controls do not separate at 1 client beyond the "
                "intervals below." + lift)
    return head + "\n" + "\n".join(lines)


def baseline_by_control(runs: pd.DataFrame) -> pd.DataFrame:
    """The `none` baseline's tps and latency per control × clients: what the idle state costs a lone client."""
    measured = common.split_variant(runs)
    base = measured[measured["configuration"] == "none"]
    rows = []
    for (control, clients), g in base.groupby(["variant", "clients"], sort=False):
        t, lat = stats.mean_ci(g["tps"]), stats.mean_ci(g["latency_mean_ms"])
        rows.append({"control": control, "clients": clients, "n": t.n, "tps_mean": t.value, "tps_ci_low": t.low,
                     "tps_ci_high": t.high, "latency_ms_mean": lat.value, "latency_ms_ci_low": lat.low,
                     "latency_ms_ci_high": lat.high, "cv_of_runs": float(g["tps"].std(ddof=1) / g["tps"].mean())
                     if len(g) > 1 else math.nan})
    return pd.DataFrame(rows)


def write_processed(result: InstrumentResult, processed_dir: Path) -> dict[str, Path]:
    # The runs go to instrument_records.csv, not *_runs.csv: the findings read every *_runs.csv as a
    # logging study's, and these runs measure the machine.
    series = series_frame(result.series_runs)
    cv = cv_by_length(series)
    summary = anomaly_summary(result.anomaly_runs)
    return records.write_processed(NAME, processed_dir, result.environment, {
        "summary": summary,
        "findings": findings(series, cv, summary, result.anomaly_runs),
        "cv": run_length_table(cv),
        "acf": autocorrelation(series),
        "series": series,
        "controls": per_run_controls(result.series_runs),
        "baseline": baseline_by_control(result.anomaly_runs),
        "records": records.flatten(pd.concat([result.series_runs, result.anomaly_runs], ignore_index=True)),
        **designs_tables(result),
    })


def designs_tables(result: InstrumentResult) -> dict[str, pd.DataFrame]:
    """The designs part's tables (design_comparison), with its windows and runs as ``designs_records``."""
    if result.designs_runs is None or not len(result.designs_runs):
        return {}
    from . import design_comparison

    return {**design_comparison.comparison_tables(result.designs_runs, result.study.designs.study),
            "designs_records": records.flatten(result.designs_runs)}


# -- figures and tables for the notebook ------------------------------------------------------------

def cv_figure(cv: pd.DataFrame):
    """CV of a w-second mean against w, per control and clients, with 95 % error bars (log-log)."""
    import matplotlib.pyplot as plt

    from .. import plots

    plots.theme()
    levels = sorted(cv["clients"].unique())
    fig, axes = plt.subplots(1, len(levels), figsize=(4.2 * len(levels), 3.4), sharey=True, squeeze=False)
    for ax, clients in zip(axes[0], levels):
        for control, g in cv[cv["clients"] == clients].groupby("control", sort=False):
            g = g.sort_values("run_length_s")
            err = [(g["cv"] - g["cv_ci_low"]).clip(lower=0), (g["cv_ci_high"] - g["cv"]).clip(lower=0)]
            ax.errorbar(g["run_length_s"], 100 * g["cv"], yerr=[100 * e for e in err], marker="o", capsize=3,
                        label=control)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("run length (s)")
        ax.set_title(f"{clients} client(s)")
    axes[0][0].set_ylabel("CV of mean tps (%)")
    axes[0][-1].legend(title="control")
    fig.tight_layout()
    return fig


def design_summary(study: InstrumentStudy) -> dict[str, object]:
    s, a = study.series, study.anomaly
    return {"profile": study.profile, "controls (noise curve)": list(study.controls),
            "clients (noise curve)": list(s.clients), "blocks (noise curve)": s.repeats,
            "seconds per long run": s.duration, "clients (anomaly)": list(a.clients),
            "blocks (anomaly)": a.repeats, "seconds per anomaly run": a.duration, "warm-up per run (s)": s.warmup,
            "scale": s.scale, "runs planned": len(s.plan()) + len(a.plan()), "seed": s.seed,
            "output": str(Path(s.output_dir).parent),
            **({"designs: clients": list(study.designs.study.clients), "designs: rounds": study.designs.rounds,
                "designs: placements": list(study.designs.placements),
                "designs: switchback session": f"{study.designs.study.switchback.blocks} blocks of 3 windows of "
                                               f"{study.designs.study.switchback.window_s} s",
                "designs: block session": f"{study.designs.block_repeats} blocks of 3 runs of {a.duration} s"}
               if study.designs is not None else {})}


def finding_run_length(table: pd.DataFrame, target_halfwidth: float = 0.03) -> str:
    """Which run length reaches the target half-width cheapest, per control × clients."""
    lines = []
    for (control, clients), g in table.groupby(["control", "clients"], sort=False):
        g = g[g["windows"] >= 4]
        if g.empty:
            continue
        best = g.loc[g["seconds_per_cell"].idxmin()]
        lines.append(f"- `{control}`, {clients} client(s): cheapest at {int(best.run_length_s)} s runs "
                     f"(CV {100 * best.cv:.2g} %, 95 % CI {100 * best.cv_ci_low:.2g}–{100 * best.cv_ci_high:.2g} %, "
                     f"from {int(best.windows)} windows): {int(best.runs_for_target)} runs per cell for a "
                     f"±{100 * target_halfwidth:.0f} % ratio interval, {best.seconds_per_cell:.0f} s per cell.")
    return "\n".join(lines)


def finding_floor(cv: pd.DataFrame, run_length_s: int = 4, control: str = "hold",
                  target_halfwidth: float = 0.03, overhead_s: float = 1.5, cells: int = 27) -> str:
    """What the noise allows: the ratio half-width a cell reaches with n runs of this length, and what the
    target would cost a study of ``cells`` cells (study 02's standard profile: 9 configurations x 3 levels)."""
    at = cv[(cv["run_length_s"] == run_length_s) & (cv["control"] == control)]
    if at.empty:
        return ""
    c = float(at["cv"].max())
    def hw(n: int) -> float:
        return sps.t.ppf(0.5 + stats.CONFIDENCE / 2, 2 * n - 2) * math.sqrt(2) * c / math.sqrt(n)
    need = runs_needed(c, target_halfwidth)
    hours = need * (run_length_s + overhead_s) * cells / 3600
    return (f"**The floor.** With the idle state `{control}`, a {run_length_s} s run's mean varies by CV "
            f"{100 * c:.2g} % (the larger of the levels measured). A ratio's 95 % half-width is then "
            f"about ±{100 * hw(5):.0f} % with 5 runs per cell, ±{100 * hw(10):.0f} % with 10 and ±{100 * hw(20):.0f} % "
            f"with 20; ±{100 * target_halfwidth:.0f} % needs {need} runs per cell, {hours:.1f} h for a study of "
            f"{cells} cells. A 15-minute standard profile cannot reach ±{100 * target_halfwidth:.0f} % on this "
            "machine; its adaptive blocks spend the budget on the widest cells, and every ratio is printed with "
            "the half-width it reached.")


def findings(series: pd.DataFrame, cv: pd.DataFrame, summary: pd.DataFrame, anomaly_runs: pd.DataFrame,
             target_halfwidth: float = 0.03, run_length_s: int = 4) -> pd.DataFrame:
    """The statements the paper prints (item, statement) from the noise curve (``series``, its ``cv``) and the
    anomaly test (its ``summary`` and runs), every number from this run's data; plain text (not markdown)."""
    def plain(text: str) -> str:
        return text.replace("**", "").replace("`", "").replace("- ", "", 1)

    rows = []
    at = cv[cv["run_length_s"] == run_length_s]
    if len(at):
        parts = [f"{r.control} at {r.clients} client(s) {100 * r.cv:.2g} % [{100 * r.cv_ci_low:.2g}, "
                 f"{100 * r.cv_ci_high:.2g}] ({r.windows} windows)" for r in at.itertuples()]
        rows.append({"item": "noise", "statement": f"CV of the mean throughput of a {run_length_s} s run (baseline, "
                     "95 % CI): " + "; ".join(parts) + "."})
    for line in finding_run_length(run_length_table(cv, target_halfwidth), target_halfwidth).splitlines():
        rows.append({"item": "run length", "statement": plain(line)})
    floor = finding_floor(cv, run_length_s, target_halfwidth=target_halfwidth)
    if floor:
        rows.append({"item": "floor", "statement": plain(floor)})
    base = baseline_by_control(anomaly_runs)
    for clients, g in base.groupby("clients"):
        parts = [f"{r.control}: {r.tps_mean:,.0f} tps [{r.tps_ci_low:,.0f}, {r.tps_ci_high:,.0f}], mean latency "
                 f"{r.latency_ms_mean:.3g} ms (n={r.n})" for r in g.itertuples()]
        rows.append({"item": "baseline", "statement": f"No logging at {clients} client(s): " + "; ".join(parts) + "."})
    for line in anomaly_verdict(summary).splitlines():
        rows.append({"item": "anomaly", "statement": plain(line)})
    res = stats.resolution(summary, BASELINE)
    for r in res.itertuples():
        rows.append({"item": "A/A", "statement": f"A/A none_again/none with control {r.control} at {r.clients} "
                     f"client(s): {r.aa_ratio:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}] (n={r.n}), "
                     + ("contains 1." if r.contains_1 else "excludes 1.")})
    return pd.DataFrame(rows, columns=["item", "statement"])
