"""Notebook 00's third part: the two designs side by side, at equal machine time, interleaved in one hour.

Which design should a study use, and does switching inside a load bias what it measures? Per clients level,
``rounds`` rounds; each round runs one **switchback session** (one load on a freshly started server, every arm
switched in at window edges: :mod:`logbench.measure.switchback`) and one **block session** (the same arms as separate
runs in shuffled blocks: :mod:`logbench.measure.runner`, on a freshly started server too), in a seeded random order, of
about the same length. Each session gives its own estimate of every arm's ratio (the A/A control's true ratio is
1), so the variance of a design's estimate is measured across its sessions, not taken from a model:

- **efficiency**: the variance of the A/A log-ratio across sessions times the session's machine minutes (the
  variance one machine-minute buys), blocks over switchback, with an F interval for the ratio of two variances;
- **bias**: the logging arm's ratio by either design, and their difference with a Welch interval: switching
  inside a load must not move the estimate beyond what both designs' noise allows;
- **floor**: what the per-second noise of the same sessions allows a switchback window (switchstats.within_window_noise,
  switchstats.halfwidth_from_noise).
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

from ...base import progress as progress_channel, records, stats
from ...measure import runner, switchback, switchstats, switchwindows
from ...measure.controls import PLACEMENTS, IdleState, Placement
from ...measure.benches import postgres as pg
from .. import common

DESIGNS = ("switchback", "blocks")
ARMS = ("none", "stderr")


@dataclass(frozen=True)
class Sessions:
    """``rounds`` x clients levels x both designs; ``study`` carries the arms, the server and the switchback design,
    ``repeats``/``duration``/``warmup`` of a block session."""

    study: pg.PgStudy
    rounds: int
    block_repeats: int
    # each a factor of every round: "none" (the scheduler places server and pgbench) and/or "split" (server on
    # one half of the CPUs, pgbench on the other), so placement's effect on noise and on the ratio is measured
    # at the same hour as the designs'
    placements: tuple[str, ...] = ("none",)


def sessions_for(spec, profiles: dict, profile: str, engine: dict, output_dir: Path, *, rounds: object,
                 clients: object, seed: object, warmup: object, duration: object, lead_in_s: int,
                 placements: object = None) -> Sessions | None:
    """The designs part of study 00 from its parameters (the profile's ``design_*`` values), or None with 0
    rounds; ParameterError before anything starts."""
    from ...base import params

    rounds = params.non_negative_int("design_rounds", rounds)
    if not rounds:
        return None
    if rounds < 2:
        raise params.ParameterError("design_rounds", rounds, "0 (no designs part) or a whole number >= 2: a "
                                    "design's variance is measured across its sessions")
    p = profiles[profile]
    placements = params.name_list("design_placements", p.get("design_placements", ["none"])
                                  if placements is None else placements, PLACEMENTS)
    if len(set(placements)) != len(placements):
        raise params.ParameterError("design_placements", list(placements), "each of 'none', 'split' at most once")
    sb = switchback.SwitchbackDesign(window_s=p["design_window_s"], guard_s=p["design_guard_s"],
                                     blocks=p["design_blocks"], loads=1, max_loads=1, lead_in_s=lead_in_s)
    fields = common.study_fields(spec, profile, profiles, seed=seed, output_dir=output_dir, processed_dir=None,
                                 warmup=warmup, idle_state="hold", placement="none", target_halfwidth="off",
                                 clients=clients, duration=duration)
    configs = pg.configurations(ARMS, pg.DESTINATIONS, engine["pg_bindir"], engine["base"], "prepared")
    study = pg.checked(pg.PgStudy(**{**fields, "name": f"{spec.name}_designs"}, **engine, configurations=configs,
                                  switchback=sb))
    return Sessions(study, rounds, p["design_block_repeats"], tuple(placements))


def session_order(clients, rounds: int, seed: int,
                  placements: tuple[str, ...] = ("none",)) -> list[tuple[int, int, str, str]]:
    """(round, clients, design, placement): every round holds every level, design and placement once, in a seeded
    random order (with one placement, the order the designs part had before placement was a factor)."""
    rng = np.random.default_rng([int(seed), 0xD5])
    cells = [(c, d, p) for c in clients for d in DESIGNS for p in placements]
    return [(r, *cells[int(i)]) for r in range(rounds) for i in rng.permutation(len(cells))]


def placement_mode(in_force: object) -> str:
    """The placement a record ran under, from the control's ``in_force`` text ("split: server 0, load 1" ->
    "split"; a record from before placement was recorded: "none")."""
    return str(in_force or "none").split(":")[0]


def _sessions_file(study) -> Path:
    return Path(study.output_dir) / "sessions.jsonl"


def execute(sessions: Sessions):
    """The ``execute`` of :func:`common.run_study`: every session, each appended to ``sessions.jsonl`` with its
    machine time; the runs of all sessions together are returned."""

    def go(study, bench, env, progress):
        env_id = env["env_id"]
        path = runner.runs_path(study)
        reporter = progress_channel.Reporter(study.name)
        done = {(int(s["round"]), int(s["clients"]), s["design"], s.get("placement", "none"))
                for s in _read_sessions(study)}
        arms = [c.name for c in study.planned_configurations]
        with IdleState(study.idle_state) as idle:
            for cell in session_order(study.clients, sessions.rounds, study.seed, sessions.placements):
                if cell not in done:
                    one(study, bench, env_id, path, reporter, arms, *cell, idle.in_force)
        reporter.close()
        return records.load(path), []

    def one(study, bench, env_id, path, reporter, arms, rnd, clients, design, placement, idle_state):
        sb: switchback.SwitchbackDesign = study.switchback
        k = sessions.placements.index(placement)
        where = "" if sessions.placements == ("none",) else f", placement {placement}"
        reporter.say(f"round {rnd + 1}/{sessions.rounds}: {design} session at {clients} client(s){where}")
        t0 = time.monotonic()
        if design == "switchback":
            with Placement(placement) as place:
                # restarted inside the placement: the server is ours, then moved to its own CPUs
                bench.restart_with(study.configuration(study.baseline))
                place.pin_server(bench.server_pid())
                windows = switchback.plan_load(arms, study.baseline, sb, study.seed, clients, rnd)
                edges, per_second, marks = switchback.run_load(study, bench, clients, windows)
                # a load's key is its number @ its first position: each placement's load of a round its own
                first = 1_000_000 * k + 10_000 * (rnd + 1) + 100 * clients
                for run in switchback.window_records(study, bench, env_id, clients, windows, edges, per_second,
                                                     marks, first, idle_state, place.in_force):
                    records.append(path, run)
        else:
            bench.restart_with(study.configuration(study.baseline))
            # the runner holds the placement itself and pins the server before each run
            sub = dataclasses.replace(study, switchback=None, clients=(clients,), repeats=sessions.block_repeats,
                                      seed=study.seed + 1000 * rnd + clients, target_halfwidth=None,
                                      time_budget_s=None, max_repeats=None, placement=placement,
                                      output_dir=Path(study.output_dir) / "blocks"
                                      / (f"r{rnd}_c{clients}" + (f"_{placement}" if k else "")))
            Path(sub.output_dir).mkdir(parents=True, exist_ok=True)
            for r in runner.execute(sub, bench, env_id, progress=False).itertuples(index=False):
                run = records.Run(**{f: getattr(r, f) for f in records.RUN_FIELDS if hasattr(r, f)})
                records.append(path, dataclasses.replace(run, extra={**run.extra, "design": "blocks",
                                                                       "session": rnd}))
        seconds = time.monotonic() - t0
        with open(_sessions_file(study), "a") as f:
            f.write(json.dumps({"round": rnd, "clients": clients, "design": design, "placement": placement,
                                "seconds": seconds}) + "\n")

    return go


def _read_sessions(study) -> list[dict]:
    f = _sessions_file(study)
    return [json.loads(x) for x in f.read_text().splitlines() if x.strip()] if f.exists() else []


def sessions_table(study) -> pd.DataFrame:
    t = pd.DataFrame(_read_sessions(study), columns=["round", "clients", "design", "placement", "seconds"])
    return t.assign(placement=t["placement"].fillna("none"))


# -- analysis ----------------------------------------------------------------------------------------------

def session_estimates(runs: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """Per design, placement, clients level, session and arm: the session's own log-ratio to the baseline.
    Switchback: the mean of the within-block log-ratios of its load; blocks: log of the ratio of its runs' means."""
    cols = ["design", "placement", "clients", "session", "arm", "log_ratio", "n"]
    rows = []
    w = switchwindows.windows_frame(runs)
    w = w.assign(placement=w["extra"].map(lambda e: placement_mode(e.get("placement")))) if len(w) else w
    for (placement, clients), level in w.groupby(["placement", "clients"]) if len(w) else ():
        lr = switchstats.window_log_ratios(level, baseline)
        for (load, arm), g in lr.groupby(["load", "arm"]):
            rows.append({"design": "switchback", "placement": placement, "clients": clients,
                         "session": int(str(load).split("@")[0]), "arm": arm, "log_ratio": float(g["log_ratio"].mean()),
                         "n": len(g)})
    b = runs[runs["extra"].map(lambda e: e.get("design") == "blocks")]
    if len(b):
        b = b.assign(session=b["extra"].map(lambda e: e["session"]),
                     placement=b["extra"].map(lambda e: placement_mode(e.get("placement"))))
        for (placement, clients, session), g in b.groupby(["placement", "clients", "session"]):
            base = g[g["configuration"] == baseline]["tps"].mean()
            for arm, a in g[g["configuration"] != baseline].groupby("configuration"):
                rows.append({"design": "blocks", "placement": placement, "clients": clients, "session": session,
                             "arm": arm, "log_ratio": math.log(a["tps"].mean() / base), "n": len(a)})
    return pd.DataFrame(rows, columns=cols)


def efficiency(estimates: pd.DataFrame, sessions: pd.DataFrame, aa: str,
               confidence: float = stats.CONFIDENCE) -> pd.DataFrame:
    """Per placement and clients level: each design's A/A log-ratio variance across sessions, its minutes per
    session, the variance per machine-minute (variance x minutes: what one minute of this machine buys, lower is
    better), and blocks / switchback with the F interval of a ratio of two normal variances."""
    rows = []
    minutes = sessions.groupby(["placement", "clients", "design"])["seconds"].mean() / 60
    for (placement, clients), g in estimates[estimates["arm"] == aa].groupby(["placement", "clients"]):
        out = {"placement": placement, "clients": clients}
        per = {}
        for d in DESIGNS:
            x = g[g["design"] == d]["log_ratio"].to_numpy()
            var = float(np.var(x, ddof=1)) if x.size > 1 else math.nan
            m = float(minutes.get((placement, clients, d), math.nan))
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


def _welch(x: np.ndarray, y: np.ndarray, confidence: float) -> dict[str, float]:
    """exp of the difference of two means of log-ratios, with the Welch interval: the ratio of two estimates."""
    if x.size < 2 or y.size < 2:
        return {}
    ci = sps.ttest_ind(x, y, equal_var=False).confidence_interval(confidence)
    return {"ratio": math.exp(x.mean() - y.mean()), "low": math.exp(ci.low), "high": math.exp(ci.high)}


def _estimate(prefix: str, x: np.ndarray, confidence: float) -> dict[str, object]:
    e = stats.mean_ci(x, confidence)
    return {f"{prefix} ratio": math.exp(e.value), f"{prefix} ci_low": math.exp(e.low),
            f"{prefix} ci_high": math.exp(e.high), f"{prefix} n": e.n}


def bias(estimates: pd.DataFrame, arm: str = "stderr", confidence: float = stats.CONFIDENCE) -> pd.DataFrame:
    """Per placement and clients level: ``arm``'s ratio by either design (mean of session log-ratios, t
    interval), and the switchback / blocks ratio with a Welch interval on the log scale."""
    rows = []
    for (placement, clients), g in estimates[estimates["arm"] == arm].groupby(["placement", "clients"]):
        s = g[g["design"] == "switchback"]["log_ratio"].to_numpy()
        b = g[g["design"] == "blocks"]["log_ratio"].to_numpy()
        out = {"placement": placement, "clients": clients, "arm": arm,
               **_estimate("switchback", s, confidence), **_estimate("blocks", b, confidence)}
        d = _welch(s, b, confidence)
        if d:
            out.update({"switchback / blocks": d["ratio"], "diff ci_low": d["low"], "diff ci_high": d["high"]})
        rows.append(out)
    return pd.DataFrame(rows)


def placement_effect(estimates: pd.DataFrame, arm: str = "stderr",
                     confidence: float = stats.CONFIDENCE) -> pd.DataFrame:
    """Per design and clients level where both placements ran: ``arm``'s ratio with the server and pgbench on
    separate CPUs and with the scheduler placing them, and split / none with a Welch interval. Placement is a
    condition of the measurement, not only of its noise: a ratio that moves with it is named with it."""
    rows = []
    g0 = estimates[estimates["arm"] == arm]
    if set(g0["placement"]) < {"none", "split"}:
        return pd.DataFrame(columns=["design", "clients", "arm", "split / none", "ci_low", "ci_high"])
    for (design, clients), g in g0.groupby(["design", "clients"]):
        sp = g[g["placement"] == "split"]["log_ratio"].to_numpy()
        no = g[g["placement"] == "none"]["log_ratio"].to_numpy()
        d = _welch(sp, no, confidence)
        rows.append({"design": design, "clients": clients, "arm": arm, **_estimate("split", sp, confidence),
                     **_estimate("none", no, confidence), "split / none": d.get("ratio", math.nan),
                     "ci_low": d.get("low", math.nan), "ci_high": d.get("high", math.nan)})
    return pd.DataFrame(rows)


def by_placement(runs: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The designs part's records per placement (a record from before placement was recorded: "none")."""
    mode = runs["extra"].map(lambda e: placement_mode(e.get("placement") if isinstance(e, dict) else None))
    return {p: runs[mode == p] for p in sorted(set(mode))}


def floor(runs: pd.DataFrame, study) -> pd.DataFrame:
    """Per placement and clients level: what the per-second noise of the switchback sessions' baseline windows
    allows an arm after one session's windows, beside the sd of the A/A log-ratio the sessions reached."""
    sb = study.switchback
    cols = ["placement", "clients", "per-second sd", "lag-1 autocorrelation", "predicted half-width per session"]
    rows = []
    if sb.measured_s < 2:  # one measured second per window: no noise within a window to read
        return pd.DataFrame(columns=cols)
    for placement, part in by_placement(runs).items():
        sec = switchwindows.seconds_frame(part)
        for clients, g in sec.groupby("clients"):
            base = g[(g["arm"] == study.baseline) & (g["offset_s"] >= sb.guard_s)].sort_values(
                ["load", "window", "offset_s"], kind="stable")
            x = np.log(np.maximum(base["tps"].to_numpy(dtype=float), 1))
            # within each window, so that the drift between windows is not counted as per-second noise; on
            # sum (m - 1) degrees of freedom, since each window's mean is fitted from its own seconds (the sd of
            # the deviations alone was sqrt(2/3) of sigma with 3 measured seconds, and their lag-1 correlation
            # pulled towards -1/2). The floor counts white noise only (rho 0): a smooth wander over a few
            # seconds is shared by neighbouring windows; the AR(1) fit's rho is shown beside it, not used.
            key = base["load"].astype(str) + "/" + base["window"].astype(str)
            white = switchstats.within_window_noise(x, key, model="white")
            ar1 = switchstats.within_window_noise(x, key, model="ar1")
            p = switchstats.halfwidth_from_noise(white["sigma_per_s"], 0.0, sb.measured_s, sb.blocks)
            p["rho"] = ar1["rho"]
            rows.append({"placement": placement, "clients": clients, "per-second sd": p["sigma_per_s"],
                         "lag-1 autocorrelation": p["rho"], "predicted half-width per session": p["halfwidth"]})
    return pd.DataFrame(rows, columns=cols)


def carryover(runs: pd.DataFrame, baseline: str) -> dict[str, object]:
    """:func:`switchwindows.carryover_report` per placement: its ``table`` (the guard and the same-vs-changed
    test per placement and clients level) and ``profiles`` ({placement: the after-switch profile})."""
    tables, profiles = [], {}
    for placement, part in by_placement(runs).items():
        carry = switchwindows.carryover_report(part, baseline)
        if isinstance(carry["guard"], pd.DataFrame) and len(carry["guard"]):
            tables.append(carry["guard"].merge(carry["same_vs_changed"], on="clients")
                          .assign(placement=placement))
            profiles[placement] = carry["profile"]
    table = pd.concat(tables, ignore_index=True) if tables else pd.DataFrame()
    return {"table": table[["placement"] + [c for c in table.columns if c != "placement"]] if len(table) else table,
            "profiles": profiles}


def comparison_tables(runs: pd.DataFrame, study) -> dict[str, pd.DataFrame]:
    est = session_estimates(runs, study.baseline)
    sess = sessions_table(study)
    return {"designs_sessions": est, "designs_efficiency": efficiency(est, sess, study.aa_configuration),
            "designs_bias": bias(est), "designs_placement": placement_effect(est), "designs_floor": floor(runs, study)}


def finding(tables: dict[str, pd.DataFrame]) -> str:
    """The designs part's answer in sentences, per placement and level, every number from ``tables``
    (:func:`comparison_tables`): which design buys more A/A precision per machine-minute, and whether the
    switchback or the placement moved the logging arm's ratio."""
    def ci(v, lo, hi) -> str:
        return f"{v:.3g} [{lo:.3g}, {hi:.3g}]" if lo == lo else f"{v:.3g}"

    eff, bias, place = tables["designs_efficiency"], tables["designs_bias"], tables["designs_placement"]
    out = []
    for _, e in eff.iterrows():
        b = bias[(bias["placement"] == e["placement"]) & (bias["clients"] == e["clients"])]
        lo, hi = e["ci_low"], e["ci_high"]
        which = ("switching buys more precision per minute" if lo > 1 else
                 "separate runs buy more precision per minute" if hi < 1 else
                 "neither design buys more precision per minute with confidence")
        s = (f"- **{e['clients']} client(s), placement {e['placement']}**: A/A sd across sessions "
             f"{e['switchback A/A sd']:.3f} (switchback, {e['switchback sessions']} sessions of "
             f"{e['switchback minutes per session']:.2f} min) and {e['blocks A/A sd']:.3f} (blocks, "
             f"{e['blocks sessions']} of {e['blocks minutes per session']:.2f} min); variance per machine-minute, "
             f"blocks / switchback {ci(e['blocks / switchback'], lo, hi)}: {which}.")
        for _, r in b.iterrows():
            d = [r.get(k, math.nan) for k in ("switchback / blocks", "diff ci_low", "diff ci_high")]
            moved = d[1] > 1 or d[2] < 1
            s += (f" {r['arm']}/none {ci(r['switchback ratio'], r['switchback ci_low'], r['switchback ci_high'])}"
                  f" by switching, {ci(r['blocks ratio'], r['blocks ci_low'], r['blocks ci_high'])} by separate "
                  f"runs; switchback / blocks {ci(*d)}"
                  f" ({'switching moved it' if moved else 'not moved beyond the noise'}).")
        out.append(s)
    for _, r in place.iterrows():
        moved = r["ci_low"] > 1 or r["ci_high"] < 1
        out.append(f"- **Placement, {r['design']}, {r['clients']} client(s)**: {r['arm']}/none "
                   f"{r['split ratio']:.3g} with server and pgbench on separate CPUs, {r['none ratio']:.3g} with the "
                   f"scheduler's placement; split / none {ci(r['split / none'], r['ci_low'], r['ci_high'])} "
                   f"({'the placement changes what is measured' if moved else 'no difference beyond the noise'}).")
    return "\n".join(out) if out else "No designs part in this run."
