"""Study 03: do containers change the answer? The PG destinations study under both backends at once.

Both stacks (the local server and the container, each with its own syslog
daemons) run side by side, and one schedule interleaves their runs, so drift
of this machine lands on both equally. Each backend's overhead ratios are
against its own ``none``; whether a ratio differs between backends is the
interaction term of an OLS fit of log(tps) on destination × backend per
concurrency (statsmodels, HC3 errors): exp(coefficient) is the container's
ratio divided by the local one.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf

from .. import paths, records, stats
from . import pg_destinations as pgd

NAME = "backend_comparison"
BACKENDS = ("local", "container")

PROFILES = {
    "smoke": {"destinations": ["none", "csvlog", "syslog"], "clients": [1], "repeats": 2},
    # 5 destinations + the A/A control, x 2 levels x 2 backends x 5 blocks of ~5.8 s runs = ~12 min,
    # then up to 3 min of adaptive blocks
    "standard": {"destinations": ["none", "stderr", "csvlog", "syslog", "remote_syslog_udp"], "clients": [1, 4],
                 "repeats": 5, "target_halfwidth": 0.03, "time_budget_s": 180, "max_repeats": 10},
    "full": {"destinations": list(pgd.DESTINATIONS), "clients": [1, 4, 8], "repeats": 5},
}


def define(profile: str = "standard", destinations=None, clients=None, repeats=None, image=None,
           **kw) -> pgd.PgDestinationsStudy:
    """The PG destinations study on both backends in one schedule (a Docker engine must answer)."""
    from .. import params

    params.choice("profile", profile, params.PROFILES)
    p = PROFILES[profile]
    for k in ("target_halfwidth", "time_budget_s", "max_repeats"):
        if kw.get(k) is None and k in p:
            kw[k] = p[k]
    study = pgd.define(profile=profile, destinations=p["destinations"] if destinations is None else destinations,
                       clients=p["clients"] if clients is None else clients,
                       repeats=p["repeats"] if repeats is None else repeats, backend="container", image=image, **kw)
    study = pgd.with_variants(study, [(b, b, image) for b in BACKENDS])
    return dataclasses.replace(study, name=NAME, output_dir=Path(str(study.output_dir).replace(pgd.NAME, NAME)))


@dataclasses.dataclass(frozen=True)
class ComparisonResult:
    study: pgd.PgDestinationsStudy
    runs: pd.DataFrame
    environments: dict


def run(study: pgd.PgDestinationsStudy, *, progress: bool = True) -> ComparisonResult:
    r = pgd.run(dataclasses.replace(study, processed_dir=None), progress=progress)
    result = ComparisonResult(study, r.runs, r.environment["variants"])
    if study.processed_dir is not None:
        records.write_processed(NAME, Path(study.processed_dir), r.environment,
                                {"summary": summary(r.runs), "interaction": interaction(r.runs),
                                 "runs": records.flatten(r.runs)})
    return result


def summary(runs: pd.DataFrame) -> pd.DataFrame:
    """Per backend: tps and the ratio to that backend's own 'none', with CIs."""
    return pgd.summary(runs).rename(columns={"variant": "backend"})  # a key column, before n


def interaction(runs: pd.DataFrame, confidence: float = stats.CONFIDENCE) -> pd.DataFrame:
    """Container ratio / local ratio per destination and concurrency, from log(tps) ~ destination * backend."""
    r = pgd.split_variant(runs)
    rows = []
    for clients, g in r.groupby("clients"):
        g = g.assign(log_tps=np.log(g["tps"]))
        fit = smf.ols(f"log_tps ~ C(configuration, Treatment('{pgd.BASELINE}')) * C(variant, Treatment('local'))",
                      data=g).fit(cov_type="HC3")
        ci = fit.conf_int(alpha=1 - confidence)
        for term in fit.params.index:
            if ":" not in term:
                continue
            dest = term.split("[T.")[1].split("]")[0]
            est, (lo, hi) = fit.params[term], ci.loc[term]
            rows.append({"destination": dest, "clients": clients, "n": int(fit.nobs),
                         "ratio_of_ratios": math.exp(est), "ci_low": math.exp(lo), "ci_high": math.exp(hi),
                         "p_value": float(fit.pvalues[term])})
    return pd.DataFrame(rows)


def finding(inter: pd.DataFrame) -> str:
    differs = inter[(inter["ci_high"] < 1) | (inter["ci_low"] > 1)]
    lines = [f"- `{r.destination}`, {r.clients} client(s): container ratio / local ratio = {r.ratio_of_ratios:.3g} "
             f"[{r.ci_low:.3g}, {r.ci_high:.3g}]" for r in inter.itertuples()]
    verdict = ("No destination's overhead differs between the backends at 95 % confidence."
               if differs.empty else
               f"{len(differs)} of {len(inter)} destination × concurrency cells differ at 95 % confidence: "
               + ", ".join(f"`{r.destination}` ({r.clients})" for r in differs.itertuples()) + ".")
    return "\n".join(lines) + "\n\n" + verdict


def load_processed(processed_dir: Path = paths.PROCESSED) -> tuple[pd.DataFrame, pd.DataFrame]:
    return pd.read_csv(processed_dir / f"{NAME}.csv"), pd.read_csv(processed_dir / f"{NAME}_interaction.csv")
