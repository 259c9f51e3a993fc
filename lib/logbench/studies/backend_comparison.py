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

import contextlib
import dataclasses
import math
from pathlib import Path

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf

from .. import environment, paths, runner, stats
from ..design import PlannedRun
from ..settings import Configuration
from . import pg_destinations as pgd

NAME = "backend_comparison"
BACKENDS = ("local", "container")
SEP = "/"

PROFILES = {
    "smoke": {"destinations": ["none", "csvlog", "syslog"], "clients": [1], "repeats": 2},
    "standard": {"destinations": ["none", "stderr", "csvlog", "syslog", "remote_syslog_udp"], "clients": [1, 4],
                 "repeats": 5},
    "full": {"destinations": list(pgd.DESTINATIONS), "clients": [1, 4, 8], "repeats": 5},
}


def define(profile: str = "standard", destinations=None, clients=None, repeats=None, **kw) -> pgd.PgDestinationsStudy:
    """The PG destinations study with each configuration doubled, one per backend (both must be available)."""
    from .. import params

    params.choice("profile", profile, params.PROFILES)
    p = PROFILES[profile]
    base = pgd.define(profile=profile, destinations=p["destinations"] if destinations is None else destinations,
                      clients=p["clients"] if clients is None else clients,
                      repeats=p["repeats"] if repeats is None else repeats, backend="container", **kw)
    configurations = tuple(
        Configuration(f"{b}{SEP}{c.name}", c.settings, c.destinations) for c in base.configurations for b in BACKENDS
    )
    output_dir = Path(str(base.output_dir).replace(pgd.NAME, NAME))
    return dataclasses.replace(base, name=NAME, backend="+".join(BACKENDS), configurations=configurations,
                               output_dir=output_dir)


class Split:
    """Routes each run to the backend its configuration name starts with (see :class:`runner.Bench`)."""

    def __init__(self, benches: dict[str, pgd.PgBench], envs: dict[str, dict]):
        self.benches, self.envs = benches, envs
        self.current = next(iter(benches.values()))
        self.engine, self.workload = self.current.engine, self.current.workload
        self.query_mode, self.scale = self.current.query_mode, self.current.scale

    @staticmethod
    def _split(name: str) -> tuple[str, str]:
        backend, _, dest = name.partition(SEP)
        return backend, dest

    def _bench(self, name: str) -> pgd.PgBench:
        return self.benches[self._split(name)[0]]

    @property
    def backend(self) -> str:
        return self.current.backend

    @property
    def server_version(self) -> str:
        return self.current.server_version

    def apply(self, configuration: Configuration):
        self.current = self._bench(configuration.name)
        return self.current.apply(configuration)

    def warm(self, run: PlannedRun, seconds: float) -> None:
        self._bench(run.configuration).warm(run, seconds)

    def measure(self, run: PlannedRun, seconds: float):
        return self._bench(run.configuration).measure(run, seconds)

    def sinks(self, configuration: Configuration):
        return self._bench(configuration.name).sinks(configuration)

    def expected_records(self, configuration, run, m) -> int:
        return self._bench(configuration.name).expected_records(configuration, run, m)

    def server_cpu(self) -> float:
        return self.current.server_cpu()

    def logger_cpu(self) -> float:
        return self.current.logger_cpu()

    def effective_settings(self, configuration: Configuration) -> dict:
        return self._bench(configuration.name).effective_settings(configuration)

    def log_dir_fs(self) -> str:
        return self.current.log_dir_fs()

    def env_id_of(self, configuration: Configuration) -> str:
        return self.envs[self._split(configuration.name)[0]]["env_id"]


@dataclasses.dataclass(frozen=True)
class ComparisonResult:
    study: pgd.PgDestinationsStudy
    runs: pd.DataFrame
    environments: dict


def run(study: pgd.PgDestinationsStudy, *, progress: bool = True) -> ComparisonResult:
    with runner.terminate_as_interrupt(), contextlib.ExitStack() as stack:
        benches, envs = {}, {}
        for b in BACKENDS:
            benches[b], envs[b] = pgd.start_stack(study, b, stack)
        runner.write_study(study, {"environments": envs})
        runs = runner.execute(study, Split(benches, envs), envs[BACKENDS[0]]["env_id"], progress=progress)
    result = ComparisonResult(study, runs, envs)
    if study.processed_dir is not None:
        out = Path(study.processed_dir)
        out.mkdir(parents=True, exist_ok=True)
        summary(runs).to_csv(out / f"{NAME}.csv", index=False, float_format="%.6g")
        interaction(runs).to_csv(out / f"{NAME}_interaction.csv", index=False, float_format="%.6g")
        pgd.tidy_runs(runs).to_csv(out / f"{NAME}_runs.csv", index=False, float_format="%.6g")
    return result


def _by_destination(runs: pd.DataFrame) -> pd.DataFrame:
    r = runs[~runs["warmup"].astype(bool)].copy()
    r["destination"] = r["configuration"].str.partition(SEP)[2]
    return r


def summary(runs: pd.DataFrame) -> pd.DataFrame:
    """Per backend: tps and the ratio to that backend's own 'none', with CIs."""
    r = _by_destination(runs)
    parts = []
    for b, g in r.groupby("backend", sort=False):
        environment.check_poolable(g)
        s = stats.summarise(g.assign(configuration=g["destination"]), by=["configuration", "clients"],
                            baseline=pgd.BASELINE, also=("log_loss",))
        parts.append(s.assign(backend=b))
    out = pd.concat(parts, ignore_index=True)
    order = {c: i for i, c in enumerate(pgd.DESTINATIONS)}
    return out.sort_values(["configuration", "clients", "backend"],
                           key=lambda s: s.map(order) if s.name == "configuration" else s, ignore_index=True)


def interaction(runs: pd.DataFrame, confidence: float = stats.CONFIDENCE) -> pd.DataFrame:
    """Container ratio / local ratio per destination and concurrency, from log(tps) ~ destination * backend."""
    r = _by_destination(runs)
    rows = []
    for clients, g in r.groupby("clients"):
        g = g.assign(log_tps=np.log(g["tps"]))
        fit = smf.ols(f"log_tps ~ C(destination, Treatment('{pgd.BASELINE}')) * C(backend, Treatment('local'))",
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
