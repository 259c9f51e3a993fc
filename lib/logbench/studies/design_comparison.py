"""Notebook 00's third part: the two designs side by side, at equal machine time, interleaved in one hour.

Which design should a study use, and does switching inside a load bias what it measures? Per clients level,
``rounds`` rounds; each round runs one **switchback session** (one load on a freshly started server, every arm
switched in at window edges: :mod:`logbench.switchback`) and one **block session** (the same arms as separate
runs in shuffled blocks: :mod:`logbench.runner`, on a freshly started server too), in a seeded random order, of
about the same length. Each session gives its own estimate of every arm's ratio (the A/A control's true ratio is
1), so the variance of a design's estimate is measured across its sessions, not taken from a model:

- **efficiency**: the variance of the A/A log-ratio across sessions times the session's machine minutes (the
  variance one machine-minute buys), blocks over switchback, with an F interval for the ratio of two variances;
- **bias**: the logging arm's ratio by either design, and their difference with a Welch interval: switching
  inside a load must not move the estimate beyond what both designs' noise allows;
- **floor**: what the per-second noise of the same sessions allows a switchback window (switchstats.predicted_halfwidth).
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats as sps

from .. import progress as progress_channel, records, runner, stats, switchback, switchstats, switchwindows
from ..controls import IdleState
from ..benches import postgres as pg
from . import common

DESIGNS = ("switchback", "blocks")
ARMS = ("none", "stderr")


@dataclass(frozen=True)
class Sessions:
    """``rounds`` x clients levels x both designs; ``study`` carries the arms, the server and the switchback design,
    ``repeats``/``duration``/``warmup`` of a block session."""

    study: pg.PgStudy
    rounds: int
    block_repeats: int


def sessions_for(spec, profiles: dict, profile: str, engine: dict, output_dir: Path, *, rounds: object,
                 clients: object, seed: object, warmup: object, duration: object, lead_in_s: int) -> Sessions | None:
    """The designs part of study 00 from its parameters (the profile's ``design_*`` values), or None with 0
    rounds; ParameterError before anything starts."""
    from .. import params

    rounds = params.non_negative_int("design_rounds", rounds)
    if not rounds:
        return None
    if rounds < 2:
        raise params.ParameterError("design_rounds", rounds, "0 (no designs part) or a whole number >= 2: a "
                                    "design's variance is measured across its sessions")
    p = profiles[profile]
    sb = switchback.SwitchbackDesign(window_s=p["design_window_s"], guard_s=p["design_guard_s"],
                                     blocks=p["design_blocks"], loads=1, max_loads=1, lead_in_s=lead_in_s)
    fields = common.study_fields(spec, profile, profiles, seed=seed, output_dir=output_dir, processed_dir=None,
                                 warmup=warmup, idle_state="hold", placement="none", target_halfwidth="off",
                                 clients=clients, duration=duration)
    configs = pg.configurations(ARMS, pg.DESTINATIONS, engine["pg_bindir"], engine["base"], "prepared")
    study = pg.checked(pg.PgStudy(**{**fields, "name": f"{spec.name}_designs"}, **engine, configurations=configs,
                                  switchback=sb))
    return Sessions(study, rounds, p["design_block_repeats"])


def session_order(clients, rounds: int, seed: int) -> list[tuple[int, int, str]]:
    """(round, clients, design): every round holds every level and design once, in a seeded random order."""
    rng = np.random.default_rng([int(seed), 0xD5])
    cells = [(c, d) for c in clients for d in DESIGNS]
    return [(r, *cells[int(i)]) for r in range(rounds) for i in rng.permutation(len(cells))]


def _sessions_file(study) -> Path:
    return Path(study.output_dir) / "sessions.jsonl"


def execute(sessions: Sessions):
    """The ``execute`` of :func:`common.run_study`: every session, each appended to ``sessions.jsonl`` with its
    machine time; the runs of all sessions together are returned."""

    def go(study, bench, env, progress):
        env_id = env["env_id"]
        path = runner.runs_path(study)
        reporter = progress_channel.Reporter(study.name)
        done = {(int(s["round"]), int(s["clients"]), s["design"]) for s in _read_sessions(study)}
        arms = [c.name for c in study.planned_configurations]
        with IdleState(study.idle_state) as idle:
            for rnd, clients, design in session_order(study.clients, sessions.rounds, study.seed):
                if (rnd, clients, design) not in done:
                    one(study, bench, env_id, path, reporter, arms, rnd, clients, design, idle.in_force)
        reporter.close()
        return records.load(path), []

    def one(study, bench, env_id, path, reporter, arms, rnd, clients, design, idle_state):
        sb: switchback.SwitchbackDesign = study.switchback
        reporter.say(f"round {rnd + 1}/{sessions.rounds}: {design} session at {clients} client(s)")
        t0 = time.monotonic()
        bench.restart_with(study.configuration(study.baseline))
        if design == "switchback":
            windows = switchback.plan_load(arms, study.baseline, sb, study.seed, clients, rnd)
            edges, per_second, marks = switchback.run_load(study, bench, clients, windows)
            for run in switchback.window_records(study, bench, env_id, clients, windows, edges, per_second, marks,
                                                 10_000 * (rnd + 1) + 100 * clients, idle_state, "none"):
                records.append(path, run)
        else:
            sub = dataclasses.replace(study, switchback=None, clients=(clients,), repeats=sessions.block_repeats,
                                      seed=study.seed + 1000 * rnd + clients, target_halfwidth=None,
                                      time_budget_s=None, max_repeats=None,
                                      output_dir=Path(study.output_dir) / "blocks" / f"r{rnd}_c{clients}")
            Path(sub.output_dir).mkdir(parents=True, exist_ok=True)
            for r in runner.execute(sub, bench, env_id, progress=False).itertuples(index=False):
                run = records.Run(**{f: getattr(r, f) for f in records.RUN_FIELDS if hasattr(r, f)})
                records.append(path, dataclasses.replace(run, extra={**run.extra, "design": "blocks",
                                                                       "session": rnd}))
        seconds = time.monotonic() - t0
        with open(_sessions_file(study), "a") as f:
            f.write(json.dumps({"round": rnd, "clients": clients, "design": design, "seconds": seconds}) + "\n")

    return go


def _read_sessions(study) -> list[dict]:
    f = _sessions_file(study)
    return [json.loads(x) for x in f.read_text().splitlines() if x.strip()] if f.exists() else []


def sessions_table(study) -> pd.DataFrame:
    return pd.DataFrame(_read_sessions(study), columns=["round", "clients", "design", "seconds"])


# -- analysis ----------------------------------------------------------------------------------------------

def session_estimates(runs: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """Per design, clients level, session and arm: the session's own log-ratio to the baseline.
    Switchback: the mean of the within-block log-ratios of its load; blocks: log of the ratio of its runs' means."""
    rows = []
    w = switchwindows.windows_frame(runs)
    for clients, level in w.groupby("clients") if len(w) else ():
        lr = switchstats.window_log_ratios(level, baseline)
        for (load, arm), g in lr.groupby(["load", "arm"]):
            rows.append({"design": "switchback", "clients": clients, "session": int(str(load).split("@")[0]),
                         "arm": arm, "log_ratio": float(g["log_ratio"].mean()), "n": len(g)})
    b = runs[runs["extra"].map(lambda e: e.get("design") == "blocks")]
    if len(b):
        b = b.assign(session=b["extra"].map(lambda e: e["session"]))
        for (clients, session), g in b.groupby(["clients", "session"]):
            base = g[g["configuration"] == baseline]["tps"].mean()
            for arm, a in g[g["configuration"] != baseline].groupby("configuration"):
                rows.append({"design": "blocks", "clients": clients, "session": session, "arm": arm,
                             "log_ratio": math.log(a["tps"].mean() / base), "n": len(a)})
    return pd.DataFrame(rows, columns=["design", "clients", "session", "arm", "log_ratio", "n"])


def efficiency(estimates: pd.DataFrame, sessions: pd.DataFrame, aa: str,
               confidence: float = stats.CONFIDENCE) -> pd.DataFrame:
    """Per clients level: each design's A/A log-ratio variance across sessions, its minutes per session, the
    variance per machine-minute (variance x minutes: what one minute of this machine buys, lower is better),
    and blocks / switchback with the F interval of a ratio of two normal variances."""
    rows = []
    minutes = sessions.groupby(["clients", "design"])["seconds"].mean() / 60
    for clients, g in estimates[estimates["arm"] == aa].groupby("clients"):
        out = {"clients": clients}
        per = {}
        for d in DESIGNS:
            x = g[g["design"] == d]["log_ratio"].to_numpy()
            var = float(np.var(x, ddof=1)) if x.size > 1 else math.nan
            m = float(minutes.get((clients, d), math.nan))
            per[d] = (var, x.size, m)
            out.update({f"{d} sessions": x.size, f"{d} A/A sd": math.sqrt(var) if var == var else math.nan,
                        f"{d} minutes per session": m, f"{d} variance x minutes": var * m})
        (vs, ns, ms), (vb, nb, mb) = per["switchback"], per["blocks"]
        ratio = (vb * mb) / (vs * ms) if vs and vs == vs and vb == vb else math.nan
        if ns > 1 and nb > 1 and ratio == ratio:
            lo_q, hi_q = sps.f.ppf([0.5 + confidence / 2, 0.5 - confidence / 2], nb - 1, ns - 1)
            out.update({"blocks / switchback": ratio, "ci_low": ratio / lo_q, "ci_high": ratio / hi_q})
        else:
            out.update({"blocks / switchback": ratio, "ci_low": math.nan, "ci_high": math.nan})
        rows.append(out)
    return pd.DataFrame(rows)


def bias(estimates: pd.DataFrame, arm: str = "stderr", confidence: float = stats.CONFIDENCE) -> pd.DataFrame:
    """Per clients level: ``arm``'s ratio by either design (mean of session log-ratios, t interval), and the
    switchback / blocks ratio with a Welch interval on the log scale."""
    rows = []
    for clients, g in estimates[estimates["arm"] == arm].groupby("clients"):
        s = g[g["design"] == "switchback"]["log_ratio"].to_numpy()
        b = g[g["design"] == "blocks"]["log_ratio"].to_numpy()
        out = {"clients": clients, "arm": arm}
        for name, x in (("switchback", s), ("blocks", b)):
            e = stats.mean_ci(x, confidence)
            out.update({f"{name} ratio": math.exp(e.value), f"{name} ci_low": math.exp(e.low),
                        f"{name} ci_high": math.exp(e.high), f"{name} n": e.n})
        if s.size > 1 and b.size > 1:
            t = sps.ttest_ind(s, b, equal_var=False)
            ci = t.confidence_interval(confidence)
            out.update({"switchback / blocks": math.exp(s.mean() - b.mean()), "diff ci_low": math.exp(ci.low),
                        "diff ci_high": math.exp(ci.high)})
        rows.append(out)
    return pd.DataFrame(rows)


def floor(runs: pd.DataFrame, study) -> pd.DataFrame:
    """Per clients level: what the per-second noise of the switchback sessions' baseline windows allows an arm
    after one session's windows, beside the sd of the A/A log-ratio the sessions reached."""
    sb = study.switchback
    sec = switchwindows.seconds_frame(runs)
    rows = []
    if sb.measured_s < 2:  # one measured second per window: no noise within a window to read
        return pd.DataFrame(columns=["clients", "per-second sd", "lag-1 autocorrelation",
                                     "predicted half-width per session"])
    for clients, g in sec.groupby("clients"):
        base = g[(g["arm"] == study.baseline) & (g["offset_s"] >= sb.guard_s)]
        x = np.log(np.maximum(base["tps"].to_numpy(dtype=float), 1))
        # per window, deviations from the window's own mean: the per-second noise without the drift between windows
        dev = x - base.assign(x=x).groupby(["load", "window"])["x"].transform("mean").to_numpy()
        p = switchstats.predicted_halfwidth(dev, sb.measured_s, sb.blocks, sb.layout)
        rows.append({"clients": clients, "per-second sd": p["sigma_per_s"], "lag-1 autocorrelation": p["rho"],
                     "predicted half-width per session": p["halfwidth"]})
    return pd.DataFrame(rows)


def comparison_tables(runs: pd.DataFrame, study) -> dict[str, pd.DataFrame]:
    est = session_estimates(runs, study.baseline)
    sess = sessions_table(study)
    return {"designs_sessions": est, "designs_efficiency": efficiency(est, sess, study.aa_configuration),
            "designs_bias": bias(est), "designs_floor": floor(runs, study)}
