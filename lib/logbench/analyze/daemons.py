"""The single-threaded logging daemons (issue 42): PostgreSQL's logging collector and the syslog daemon each take
their records on one process, so one core bounds the records per second they hold, whatever the server's cores.

Their CPU as study 02's runs timed it: :func:`daemon_cpu`, the syslog daemons' (the local one and a remote receiver
apart), and :func:`ceilings`, each daemon's CPU per record and the one-core ceiling it gives, per level. And the one
rule by which a time per record and its interval become records per second and theirs (:func:`one_core`, printed by
:func:`ceiling_text`): the cost model's rule table, the paper's guide, ``python -m logbench cost`` and the answer all
go through it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from ..base import paths, records
from ..base.formatting import ci_text, rounded, undefined

# The ceiling's upper end, 10⁶ over the low end of the time per record, is printed only up to this many times the
# estimate. Beyond it the time's interval reaches so near zero that its reciprocal bounds nothing (the fitted
# collector factor's interval, fitted on 4 cells, reached down to 0.0146 from its estimate of 1.90: an upper end of 28
# million records/s beside an estimate of 217,000); such a ceiling is bounded below only and printed "≥ its low end".
UPPER_WITHIN = 2
# A ceiling's significant digits wherever it is printed (the guide, the abstract, `python -m logbench cost`, the
# answer): its interval spans tens of percent (the collector's 341,073 to 463,309 records/s), so a third digit would
# already be noise; one count for all of them, so each prints the same text.
CEILING_SIG = 2


def one_core(us: float, low: float = math.nan, high: float = math.nan) -> tuple[float, float, float]:
    """(records/s, low, high) one core of a single-threaded daemon holds at ``us`` µs of its CPU per record, the time's
    interval [``low``, ``high``]: 10⁶ over each, the ends swapped (a dearer record, fewer records). The upper end is
    NaN where the time's low end is unknown or below 1 / :data:`UPPER_WITHIN` of its estimate, the lower end NaN
    where the time's upper end is unknown; all NaN where the time is not positive."""
    if not (np.isfinite(us) and us > 0):
        return math.nan, math.nan, math.nan
    lo = 1e6 / high if np.isfinite(high) and high > 0 else math.nan
    hi = 1e6 / low if np.isfinite(low) and low >= us / UPPER_WITHIN else math.nan
    return 1e6 / us, lo, hi


def ceiling_text(value: float, low: float, high: float, sig: int = CEILING_SIG, n: int | None = None) -> str:
    """'value [low, high]' at ``sig`` significant digits, thousands grouped (:func:`logbench.base.formatting.rounded`:
    '390,000 [340,000, 460,000]'); 'value [≥ low]' where the upper end is not bounded (:func:`one_core`); 'value'
    alone where the lower end is unknown too."""
    if undefined(value):
        return "–"
    if not undefined(high) or undefined(low):
        return ci_text(value, low, high, sig=sig, n=n, style=rounded)
    return f"{rounded(value, sig)} [≥ {rounded(low, sig)}]" + (f" (n={int(n)})" if n is not None else "")


# --- the daemons' own CPU, timed in study 02's runs ------------------------------------------------------------------

# The tables whose runs recorded each daemon's CPU (the syslog receiver of remote syslog apart, in the run's extra
# record as logger_cpu_s_by_daemon since the runs of 2026-11-26; the collector's as collector_cpu_s)
DAEMON_STEMS = ("pg_destinations", "pg_destinations_post000", "pg_destinations_post004", "pg_destinations_io_bound")
DAEMON_COLUMNS = ["study", "stem", "configuration", "clients", "n", "duration_s", "local_core_share",
                  "local_core_share_ci_low", "local_core_share_ci_high", "receiver_core_share",
                  "receiver_core_share_ci_low", "receiver_core_share_ci_high", "local_us_per_record",
                  "local_us_per_record_ci_low", "local_us_per_record_ci_high", "local_records_per_s_one_core",
                  "receiver_us_per_record", "receiver_us_per_record_ci_low", "receiver_us_per_record_ci_high",
                  "env_id"]
# The arms whose records one daemon takes alone: the collector every record of a file destination, the local syslog
# daemon every record sent to syslog (remote syslog's too: it reads each before forwarding it). An arm logging to
# both (syslog,csvlog) shares its records between two daemons and prices neither alone.
COLLECTOR_ARMS = ("stderr", "csvlog", "jsonlog")
SYSLOG_ARMS = ("syslog", "remote_syslog_udp", "remote_syslog_tcp")
CEILING_COLUMNS = ["study", "stem", "configuration", "daemon", "clients", "n", "duration_s", "daemon_records_per_s",
                   "core_share", "us_per_record", "us_per_record_ci_low", "us_per_record_ci_high",
                   "records_per_s_one_core", "records_per_s_one_core_ci_low", "records_per_s_one_core_ci_high",
                   "chosen", "env_id"]


def _extra(runs: pd.DataFrame, key: str, sub: str | None = None) -> pd.Series:
    def get(x):
        try:
            v = (json.loads(x) if isinstance(x, str) else x or {}).get(key, np.nan)
            return float(v.get(sub, np.nan) if sub is not None else v)
        except (ValueError, TypeError, AttributeError):
            return np.nan
    return runs["extra"].map(get) if "extra" in runs.columns else pd.Series(np.nan, index=runs.index)


def _syslog_share(x) -> float:
    """The share of a run's records that went to a syslog destination (local or remote), from its per-destination
    counts; NaN where the run did not record them."""
    try:
        d = json.loads(x) if isinstance(x, str) else {}
    except ValueError:
        return np.nan
    total = sum(float(v) for v in d.values())
    return sum(float(v) for k, v in d.items() if "syslog" in k) / total if total > 0 else np.nan


def _per_run(runs: pd.DataFrame) -> pd.DataFrame:
    """Each measured run with its daemons' CPU seconds (``local``: the local syslog daemon, ``remote``: the receiver,
    ``collector``) and the records each took (``sent``: every record the server made, to syslog its syslog share;
    ``got``: those that arrived)."""
    runs = runs.assign(local=_extra(runs, "logger_cpu_s_by_daemon", "local"),
                       remote=_extra(runs, "logger_cpu_s_by_daemon", "remote"),
                       collector=_extra(runs, "collector_cpu_s"))
    nan = pd.Series(np.nan, index=runs.index)
    total = pd.to_numeric(runs.get("logger_cpu_s", nan), errors="coerce")
    conf = runs["configuration"].astype(str)
    # without the split, the one recorded figure is the local daemon's only where there was no receiver; a
    # configuration without a receiver has no receiver's CPU (its recorded 0 is no measurement)
    no_receiver = ~conf.str.startswith("remote")
    runs["local"] = runs["local"].where(runs["local"].notna(), total.where(no_receiver))
    runs["remote"] = runs["remote"].where(~no_receiver)
    sent = pd.to_numeric(runs.get("log_records_expected", nan), errors="coerce")
    got = pd.to_numeric(runs.get("log_records_received", nan), errors="coerce")
    sent = sent.where(sent > 0, got)
    # a configuration that also logs to a file sends the syslog daemon only its syslog share of the records
    share = runs.get("log_records_by_destination", nan).map(_syslog_share).where(conf.str.contains("syslog"))
    runs["sent"], runs["got"] = sent * share.fillna(1.0), got * share.fillna(1.0)
    return runs


def _stem_runs(processed_dir: Path | str, stems: tuple[str, ...], keep):
    """(stem, :func:`_per_run` of its measured runs whose configuration ``keep`` selects) for each of ``stems`` whose
    runs table is in ``processed_dir``."""
    for stem in stems:
        runs = records.read_measured(Path(processed_dir), stem)
        if runs is not None:
            yield stem, _per_run(runs[keep(runs["configuration"].astype(str))])


def daemon_cpu(processed_dir: Path | str = paths.PROCESSED) -> pd.DataFrame:
    """Per syslog arm and clients level of :data:`DAEMON_STEMS`: the local syslog daemon's and, for remote syslog,
    the receiver's CPU as a share of one core (each run's CPU seconds over its measured length; mean with its t
    interval over runs, n), and each one's µs per record it took (the local daemon every record the server sent,
    the receiver the records that arrived). The receiver ran on the same cores as the server: reported apart, never
    charged to the database host as if it were elsewhere. A stem whose runs did not record the daemons apart
    contributes its local daemon's total only where it had no receiver."""
    from ..base.stats import mean_ci

    rows = []
    for stem, runs in _stem_runs(processed_dir, DAEMON_STEMS, lambda conf: conf.str.contains("syslog")):
        for (conf, k), g in runs.groupby(["configuration", "clients"], sort=True):
            dur = g["duration_s"].astype(float)
            local, remote = mean_ci(g["local"] / dur), mean_ci(g["remote"] / dur)
            per_l = mean_ci(1e6 * g["local"] / g["sent"].where(g["sent"] > 0))
            per_r = mean_ci(1e6 * g["remote"] / g["got"].where(g["got"] > 0))
            if local.n == 0:
                continue
            rows.append({"study": "02", "stem": stem, "configuration": conf, "clients": int(k), "n": local.n,
                         "duration_s": float(dur.median()), "local_core_share": local.value,
                         "local_core_share_ci_low": local.low, "local_core_share_ci_high": local.high,
                         "receiver_core_share": remote.value, "receiver_core_share_ci_low": remote.low,
                         "receiver_core_share_ci_high": remote.high, "local_us_per_record": per_l.value,
                         "local_us_per_record_ci_low": per_l.low, "local_us_per_record_ci_high": per_l.high,
                         # one core's worth of seconds over the daemon's seconds per record
                         "local_records_per_s_one_core": one_core(per_l.value)[0],
                         "receiver_us_per_record": per_r.value, "receiver_us_per_record_ci_low": per_r.low,
                         "receiver_us_per_record_ci_high": per_r.high,
                         "env_id": str(g["env_id"].iloc[0]) if "env_id" in g.columns else ""})
    return pd.DataFrame(rows, columns=DAEMON_COLUMNS)


def ceilings(processed_dir: Path | str = paths.PROCESSED, stems: tuple[str, ...] = DAEMON_STEMS) -> pd.DataFrame:
    """Per arm one daemon takes alone (:data:`COLLECTOR_ARMS`, :data:`SYSLOG_ARMS`) and clients level of ``stems``:
    that daemon's CPU per record it took, timed (each run's CPU seconds over its records; mean with its t interval
    over runs, n), the records per second it took, and the one-core ceiling with its interval (:func:`one_core`).

    ``chosen`` marks, per stem and arm, the level at which the daemon took the most records per second: the ceiling
    matters at high rates, and the collector's CPU per record falls as its rate rises (it reads more records per
    wake-up: study 02's standard profile, 2.3 to 2.9 µs at 8 clients against 3.7 to 4.9 at 1 and 4), so the level
    nearest the ceiling prices it; a ceiling read there is still conservative where the fall continues above it."""
    from ..base.stats import mean_ci

    rows = []
    for stem, runs in _stem_runs(processed_dir, stems, lambda conf: conf.isin((*COLLECTOR_ARMS, *SYSLOG_ARMS))):
        stem_rows = []
        for (conf, k), g in runs.groupby(["configuration", "clients"], sort=True):
            daemon, cpu = ("collector", g["collector"]) if conf in COLLECTOR_ARMS else ("syslog", g["local"])
            ok = cpu.notna() & (g["sent"] > 0)
            if not ok.any():
                continue
            g, cpu = g[ok], cpu[ok]
            dur = g["duration_s"].astype(float)
            per = mean_ci(1e6 * cpu / g["sent"])
            rate = float((g["sent"] / dur).mean())
            value, low, high = one_core(per.value, per.low, per.high)
            stem_rows.append({"study": "02", "stem": stem, "configuration": conf, "daemon": daemon,
                              "clients": int(k), "n": per.n, "duration_s": float(dur.median()),
                              "daemon_records_per_s": rate, "core_share": float((cpu / dur).mean()),
                              "us_per_record": per.value, "us_per_record_ci_low": per.low,
                              "us_per_record_ci_high": per.high, "records_per_s_one_core": value,
                              "records_per_s_one_core_ci_low": low, "records_per_s_one_core_ci_high": high,
                              "chosen": False,
                              "env_id": str(g["env_id"].iloc[0]) if "env_id" in g.columns else ""})
        if not stem_rows:
            continue
        t = pd.DataFrame(stem_rows)
        t.loc[t.groupby("configuration")["daemon_records_per_s"].idxmax(), "chosen"] = True
        rows.append(t)
    return pd.concat(rows, ignore_index=True)[CEILING_COLUMNS] if rows else pd.DataFrame(columns=CEILING_COLUMNS)


def chosen(table: pd.DataFrame, stem: str, configuration: str) -> pd.Series | None:
    """The ceiling :func:`ceilings` chose for ``stem``'s ``configuration``; None where it timed none."""
    if table.empty:
        return None
    c = table[(table["stem"] == stem) & (table["configuration"] == configuration)
              & table["chosen"].astype(str).str.lower().isin(("true", "1"))]
    return c.iloc[0] if len(c) else None
