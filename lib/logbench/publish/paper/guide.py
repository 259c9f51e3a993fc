"""The paper's first section (issue 42, "the answer first"): a decision guide a DBA can carry to their own server.

Everything it prints is read from ``data/processed``: the counted records per statement and instructions per record
(study 11), the cost model's µs per record (``findings_cost_model_rule.csv``), its held-out accuracy
(``findings_cost_model_summary.csv``), the timed CPU per record (study 02's per-record table), each single-threaded
daemon's one-core ceiling from its own CPU per record timed in study 02 (``findings_cost_model_ceilings.csv``, the
cost model's beside it as a check), the syslog daemons' own CPU with the receiver apart
(``findings_cost_model_daemons.csv``), and each committed MariaDB run a claim or the abstract reads, side by side
by the findings' one model per study and level (``findings_models.csv``). The worked examples are the rule applied
to those numbers through a spec (``mul``, ``inv``, ``scale``), so ``tests/test_paper.py`` re-derives each from the
tables as it does every other number.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from ... import studies as studies_registry
from ...analyze import claims as claims_mod
from ...analyze import models as models_mod
from ...analyze.claims import REGIME_NAMES, _names, _where
from ...analyze.daemons import CEILING_SIG, ceiling_text, chosen
from ...analyze.headline import study_profile
from ...base.formatting import CI, ci_text, number
from ...base.paths import stem as run_stem
from ...base.settings import aa_name
from .tables import add_table

RULE = "findings_cost_model_rule.csv"
CELLS = "findings_cost_model.csv"
DAEMONS = "findings_cost_model_daemons.csv"
CEILINGS = "findings_cost_model_ceilings.csv"
RECORD_COST = "record_cost.csv"
RECORD_FIGURES = "record_cost_figures.csv"
PER_RECORD = "pg_destinations_per_record.csv"
PG = "pg_destinations"
# How a one-core ceiling is printed in the text, as in the table (daemons.ceiling_text): its significant digits,
# thousands grouped
CEILING = {"sig": CEILING_SIG, "grouped": True}
# The writer of a record per engine, as study 11 names its process (its columns <role>_instructions_per_record)
WRITER = {"postgresql": "backend", "mariadb": "connection"}
# The destinations whose worked example the text gives: a file through the collector and the local syslog
EXAMPLE_DESTINATIONS = (("stderr", "a file (stderr through the collector)"), ("syslog", "the local syslog"))
# A DBA's server for the worked example: inputs of the rule, not measurements (said so in the text)
EXAMPLE_LOAD = {"statements_per_s": 5000, "cores": 8}
# MariaDB's study (04): each of its committed runs that a claim (claim_rules: the rule's study, else the claims file's)
# or the abstract (its spec's Headline) reads, side by side, never pooled
MARIADB = "mysql_slowlog"
ABSTRACT = "the abstract"


def _cell(source: str, where: dict, column: str, **extra) -> dict:
    return {"kind": "cell", "source": source, "where": where, "column": column, **extra}


def guide_section(doc: dict, processed_dir: Path, gen: Path, nums) -> None:
    """``doc['guide']``: the per-destination table, the worked examples' keys, the latency- and CPU-bound cells,
    the remote receiver's CPU and MariaDB's runs as the claims and the abstract read them; its parts empty where
    their tables are missing."""
    g = {"table": "", "examples": [], "bounds": [], "remote": [], "mariadb": "", "mariadb_runs": [],
         "mariadb_pending": [], "daemon": [],
         "example_load": dict(EXAMPLE_LOAD), "has_model": False}
    doc["guide"] = g
    processed_dir = Path(processed_dir)
    need = [processed_dir / f for f in (RULE, RECORD_COST, RECORD_FIGURES)]
    if all(p.exists() for p in need):
        rule = pd.read_csv(processed_dir / RULE)
        if len(rule):
            g["has_model"] = True
            g["table"] = add_table(doc, gen, per_destination(processed_dir, rule), "guide")
            examples(g, processed_dir, rule, nums)
    if (processed_dir / CELLS).exists() and (processed_dir / f"{PG}.csv").exists():
        bounds(g, processed_dir, nums)
    if (processed_dir / DAEMONS).exists():
        daemons(g, processed_dir, nums)
    mariadb, runs, pending = designs_side_by_side(processed_dir)
    if len(mariadb):
        g["mariadb"] = add_table(doc, gen, mariadb, "guide_mariadb_designs")
    g["mariadb_runs"], g["mariadb_pending"] = runs, pending


def per_destination(processed_dir: Path, rule: pd.DataFrame) -> pd.DataFrame:
    """One row per destination of the rule: records per statement and the writer's instructions per record
    (counted, with CI and n), µs per record by the counted and the fitted model, the server's timed CPU per record
    at 1 client (study 02, with CI and n) and the records per second one core of its daemon holds: from the daemon's
    own CPU per record timed in study 02 at the level it took the most records (with CI, n and the level), and by
    the fitted model beside it as a check."""
    rc = pd.read_csv(processed_dir / RECORD_COST)
    figs = pd.read_csv(processed_dir / RECORD_FIGURES)
    timed = pd.read_csv(processed_dir / PER_RECORD) if (processed_dir / PER_RECORD).exists() else None
    ceilings = pd.read_csv(processed_dir / CEILINGS) if (processed_dir / CEILINGS).exists() else pd.DataFrame()
    counted, fitted = (rule[rule["model"] == m].set_index(["engine", "configuration"]) for m in ("counted", "fitted"))
    rows = []
    for (engine, conf), r in counted.iterrows():
        role = WRITER[engine]
        c = rc[(rc["engine"] == engine) & (rc["configuration"] == conf)]
        # PostgreSQL's backend is counted by cachegrind, MariaDB's connection thread by callgrind
        n = figs[(figs["engine"] == engine) & (figs["configuration"] == conf) & (figs["process"] == role)
                 & (figs["metric"] == "instructions")]["n"]
        inst = (ci_text(c[f"{role}_instructions_per_record"].iloc[0], c[f"{role}_instructions_per_record_low"].iloc[0],
                        c[f"{role}_instructions_per_record_high"].iloc[0], n=int(n.iloc[0]) if len(n) else None)
                if len(c) else "–")
        t = timed[(timed["configuration"] == conf) & (timed["clients"] == 1)] if timed is not None else []
        cpu = (ci_text(t["server_cpu_us_per_record_mean"].iloc[0], t["server_cpu_us_per_record_ci_low"].iloc[0],
                       t["server_cpu_us_per_record_ci_high"].iloc[0], n=int(t["server_cpu_us_per_record_n"].iloc[0]))
               if engine == "postgresql" and len(t) else "–")
        f = fitted.loc[(engine, conf)] if (engine, conf) in fitted.index else None
        timed_ceiling = chosen(ceilings, PG, conf) if engine == "postgresql" else None
        rows.append({"destination": r["what"],
                     "records / statement": _count(c["records_per_statement"].iloc[0]) if len(c) else "–",
                     f"instructions / record, writer [{CI}] (n)": inst,
                     "µs / record, counted model": number(r["us_per_record"], 2),
                     f"… fitted model [{CI}]": (ci_text(f["us_per_record"], f.get("us_per_record_ci_low"),
                                                        f.get("us_per_record_ci_high"), sig=2)
                                                if f is not None else "–"),
                     f"server CPU µs / record, timed [{CI}] (n)": cpu,
                     f"records/s one daemon core holds: timed [{CI}] (n, clients); fitted": _holds(timed_ceiling, f)})
    return pd.DataFrame(rows)


def _holds(timed: pd.Series | None, fitted: pd.Series | None) -> str:
    """The one-core ceiling timed (its level and n) and the fitted model's beside it; '–' for what is not known."""
    parts = []
    if timed is not None:
        k = int(timed["clients"])
        parts.append(ceiling_text(timed["records_per_s_one_core"], timed["records_per_s_one_core_ci_low"],
                                  timed["records_per_s_one_core_ci_high"])
                     + f" (n={int(timed['n'])}, {k} client{'s' if k > 1 else ''})")
    if fitted is not None and pd.notna(fitted["daemon_records_per_s"]):
        parts.append(("fitted " if parts else "timed –; fitted ")
                     + ceiling_text(fitted["daemon_records_per_s"], fitted.get("daemon_records_per_s_ci_low"),
                                    fitted.get("daemon_records_per_s_ci_high")))
    return "; ".join(parts) or "–"


def _count(x) -> str:
    """Records per statement: a whole count as one ('2', not '2.00'), a sampled arm's fraction with its digits."""
    return str(int(x)) if float(x).is_integer() else number(x)


def rc_value(processed_dir: Path, where: dict) -> float:
    rc = pd.read_csv(processed_dir / RECORD_COST)
    for col, want in where.items():
        rc = rc[rc[col].astype(str) == str(want)]
    return float(rc["records_per_statement"].iloc[0])


def examples(g: dict, processed_dir: Path, rule: pd.DataFrame, nums) -> None:
    """The rule worked out: per example destination its records per statement, µs per record (fitted), the added
    µs per statement (their product) and, for the example load, the share of the cores it takes."""
    load = EXAMPLE_LOAD
    for conf, words in EXAMPLE_DESTINATIONS:
        where = {"engine": "postgresql", "configuration": conf}
        if not ((rule["engine"] == "postgresql") & (rule["configuration"] == conf)).any():
            continue
        k = f"guide.{conf}"
        records = _cell(RECORD_COST, where, "records_per_statement")
        per = _cell(RULE, {**where, "model": "fitted"}, "us_per_record")
        whole = float(rc_value(processed_dir, where)).is_integer()
        nums.add(f"{k}.records", {**records, **({"int": True} if whole else {"sig": 3})})
        nums.add(f"{k}.us_per_record", {**per, "sig": 2})
        fitted = {**where, "model": "fitted"}
        nums.add(f"{k}.daemon", {**_cell(RULE, fitted, "daemon_records_per_s"), **CEILING})
        # the intervals from the fitted factors' (an older rule table has none: the text then prints the estimate)
        if "us_per_record_ci_low" in rule.columns:
            for col in ("us_per_record_ci_low", "us_per_record_ci_high"):
                nums.add(f"{k}.{col}", {**_cell(RULE, fitted, col), "sig": 2}, optional=True)
            for col in ("daemon_records_per_s_ci_low", "daemon_records_per_s_ci_high"):
                nums.add(f"{k}.{col}", {**_cell(RULE, fitted, col), **CEILING}, optional=True)
            # the added time and the share of the cores at the ends of the µs per record's interval
            for end in ("ci_low", "ci_high"):
                if f"{k}.us_per_record_{end}" not in nums.items:
                    continue
                at = {"kind": "mul", "a": records, "b": _cell(RULE, fitted, f"us_per_record_{end}")}
                nums.add(f"{k}.added_{end}", {**at, "sig": 2})
                nums.add(f"{k}.share_{end}", {"kind": "scale", "sig": 2, "of": at,
                                              "factor": 100 * load["statements_per_s"] / (load["cores"] * 1e6)})
        # the daemon's one-core ceiling from its own CPU per record, timed in study 02 at the level where it took
        # the most records; its upper end only where it is bounded (daemons.one_core), its level and n beside it
        if (processed_dir / CEILINGS).exists() and chosen(pd.read_csv(processed_dir / CEILINGS), PG, conf) is not None:
            at = {"stem": PG, "configuration": conf, "chosen": True}
            for col, name in (("records_per_s_one_core", "ceiling"),
                              ("records_per_s_one_core_ci_low", "ceiling_ci_low"),
                              ("records_per_s_one_core_ci_high", "ceiling_ci_high")):
                nums.add(f"{k}.{name}", {**_cell(CEILINGS, at, col), **CEILING}, optional=name != "ceiling")
            nums.add(f"{k}.ceiling_n", _cell(CEILINGS, at, "n", int=True))
            nums.add(f"{k}.ceiling_clients", _cell(CEILINGS, at, "clients", int=True))
        # the example load's records per second, to set against the daemon's ceiling
        nums.add(f"{k}.records_per_s", {"kind": "scale", "factor": load["statements_per_s"], "of": records,
                                        "grouped": True, **({"int": True} if whole else {"sig": 3})})
        added = {"kind": "mul", "a": records, "b": per}
        nums.add(f"{k}.added", {**added, "sig": 2})
        # statements/s × records per statement × µs per record over the cores' µs per second, in percent
        nums.add(f"{k}.share", {"kind": "scale", "sig": 2, "of": added,
                                "factor": 100 * load["statements_per_s"] / (load["cores"] * 1e6)})
        g["examples"].append({"key": k, "configuration": conf, "words": words})


def bounds(g: dict, processed_dir: Path, nums) -> None:
    """This host's transaction without logging (µs at 1 client: the latency a logged record is added to; the cores'
    time per transaction at the highest level) and, per level of study 02's file destination, the fitted model's
    prediction beside the measured ratio: which bound set it."""
    summary = pd.read_csv(processed_dir / f"{PG}.csv")
    levels = sorted(int(k) for k in summary[summary["configuration"] == "none"]["clients"])
    if not levels:
        return
    base = {"configuration": "none"}
    nums.add("guide.t0_1", {"kind": "inv", "factor": 1e6, "sig": 3,
                            "of": _cell(f"{PG}.csv", {**base, "clients": levels[0]}, "tps_mean")})
    g["t0_clients"] = levels[0]
    cells = pd.read_csv(processed_dir / CELLS)
    for k in levels:
        where = {"stem": PG, "configuration": "stderr", "clients": k, "model": "fitted"}
        rows = cells
        for col, want in where.items():
            rows = rows[rows[col].astype(str) == str(want)]
        if len(rows) != 1:
            continue
        key = f"guide.bound.at{k}"
        nums.add(f"{key}.predicted", _cell(CELLS, where, "predicted_ratio", sig=3))
        for col in ("ratio", "ratio_ci_low", "ratio_ci_high"):
            nums.add(f"{key}.{col}", _cell(CELLS, where, col, sig=3))
        nums.add(f"{key}.binding", _cell(CELLS, where, "binding"))
        nums.add(f"{key}.cores", _cell(CELLS, where, "cores", int=True))
        g["bounds"].append({"key": key, "clients": k})


def daemons(g: dict, processed_dir: Path, nums) -> None:
    """The local syslog daemon's timed µs per record and one-core ceiling (study 02, local syslog), and per level of
    remote syslog the local daemon's and the receiver's share of one core, apart."""
    d = pd.read_csv(processed_dir / DAEMONS)
    pg = d[d["stem"] == PG]
    for _, r in pg[pg["configuration"] == "syslog"].sort_values("clients").iterrows():
        k = f"guide.daemon.syslog.at{int(r['clients'])}"
        where = {"stem": PG, "configuration": "syslog", "clients": int(r["clients"])}
        for col, name in (("local_us_per_record", "estimate"), ("local_us_per_record_ci_low", "ci_low"),
                          ("local_us_per_record_ci_high", "ci_high")):
            nums.add(f"{k}.{name}", _cell(DAEMONS, where, col, sig=3))
        nums.add(f"{k}.n", _cell(DAEMONS, where, "n", int=True))
        nums.add(f"{k}.ceiling", _cell(DAEMONS, where, "local_records_per_s_one_core", **CEILING))
        g["daemon"].append({"key": k, "clients": int(r["clients"])})
    for _, r in pg[pg["configuration"].str.startswith("remote")].sort_values(["configuration", "clients"]).iterrows():
        if pd.isna(r["receiver_core_share"]):
            continue
        where = {"stem": PG, "configuration": r["configuration"], "clients": int(r["clients"])}
        k = f"guide.remote.{r['configuration']}.at{int(r['clients'])}"
        for who in ("local", "receiver"):
            for col, name in (("", "estimate"), ("_ci_low", "ci_low"), ("_ci_high", "ci_high")):
                nums.add(f"{k}.{who}.{name}", _cell(DAEMONS, where, f"{who}_core_share{col}", sig=2))
        nums.add(f"{k}.n", _cell(DAEMONS, where, "n", int=True))
        g["remote"].append({"key": k, "configuration": str(r["configuration"]), "clients": int(r["clients"])})


def _readers(spec, judged: pd.DataFrame) -> list[dict]:
    """Who reads which of ``spec``'s runs: per claim (``judged``: the claims file as claim_rules has it judged) and
    the abstract's headline, the run's stem, the cell (column -> value: the regime, the where's columns), the
    configurations and the metric."""
    out = []
    for _, c in judged.iterrows():
        cell = {**_where(c["where"]), **({"regime": c["regime"]} if c["regime"] else {})}
        out.append({"who": str(c["claim_id"]), "stem": str(c["study"]), "cell": cell,
                    "configurations": _names(c["configuration"]), "metric": str(c["metric"])})
    h = getattr(spec, "headline", None)
    if h is not None:
        # the abstract reads its arms against the A/A of each level (a level whose A/A excludes 1 is left out)
        out.append({"who": ABSTRACT, "stem": h.stem, "cell": dict(h.cell), "metric": "ratio",
                    "configurations": [aa_name(spec.baseline), *(cfg for cfg, _ in h.arms)]})
    return out


def _run_models(models: pd.DataFrame, processed_dir: Path, spec, stem: str) -> pd.DataFrame:
    """The model table's rows of one committed run (its profile, the study's baseline, no version variant), the
    regime filled from the run's summary where the model's level leaves it out (one regime in the run)."""
    profile = study_profile(spec, stem)
    rows = models[(models["study"] == spec.name) & (models["profile"].astype(str) == str(profile))
                  & (models["baseline"].astype(str) == spec.baseline) & models["clients"].notna()]
    if "variant" in rows.columns:
        rows = rows[rows["variant"].isna() | (rows["variant"].astype(str) == "")]
    rows = rows.copy()
    for col in ("regime", "test"):  # a table of a run without the column: the run's cells are not split by it
        if col not in rows.columns:
            rows[col] = math.nan
    summary = processed_dir / f"{stem}.csv"
    if rows["regime"].isna().any() and summary.exists():
        one = pd.read_csv(summary, usecols=lambda c: c == "regime")
        if "regime" in one.columns and one["regime"].nunique() == 1:
            rows["regime"] = rows["regime"].fillna(str(one["regime"].iloc[0]))
    rows["clients"] = rows["clients"].astype(int)
    return rows


def _matches(row, cell: dict) -> bool:
    """Whether a model row (or a table row's keys) is in a reader's cell; a regime by what it is (the claims file
    says 'cached' where study 04 says 'cpu': claims.REGIME_NAMES)."""
    def same(k, have, want):
        if k == "regime":
            return REGIME_NAMES.get(str(have), str(have)) == REGIME_NAMES.get(str(want), str(want))
        return str(have) == str(want)
    return all(same(k, row.get(k, ""), v) for k, v in cell.items())


def designs_side_by_side(processed_dir: Path, claims_table: pd.DataFrame | None = None
                         ) -> tuple[pd.DataFrame, list[dict], list[dict]]:
    """MariaDB's committed runs that a claim or the abstract reads, each by the findings' one model per study and
    level (``findings_models.csv``, the estimate the abstract prints): per regime, workload, configuration and level
    read by any of them, the ratio [CI] (n) of each run (a column each, named with its design, environment and
    readers; '–' where the run has no such cell) and who reads the row from which run. Runs are never pooled.

    Returns (the table, the runs shown: stem, profile, design, environment, claims, whether the abstract reads it,
    the runs a claim reads that the model table does not hold yet: stem and claims). Empty without the model
    table."""
    spec = studies_registry.spec(MARIADB)
    models_file = Path(processed_dir) / models_mod.FINDINGS_TABLE
    if not models_file.exists():
        return pd.DataFrame(), [], []
    models = pd.read_csv(models_file)
    claims_table = claims_mod.load() if claims_table is None else claims_table
    judged = claims_mod.as_judged(claims_table)
    stems = [run_stem(spec.name, str(r.get("profile", "standard")))
             for r in (spec.committed or {}, *(spec.extra_committed or ()))]
    readers = [r for r in _readers(spec, judged) if r["stem"] in stems]
    runs, pending, tables = [], [], {}
    for stem in dict.fromkeys(stems):
        mine = [r for r in readers if r["stem"] == stem]
        if not mine:
            continue
        claims = [r["who"] for r in mine if r["who"] != ABSTRACT]
        rows = _run_models(models, Path(processed_dir), spec, stem)
        if not len(rows):  # not measured yet, or measured and not modelled (`make findings` after the run)
            pending.append({"stem": stem, "claims": claims})
            continue
        env_file = Path(processed_dir) / f"{stem}_environment.json"
        env = json.loads(env_file.read_text()).get("env_id", "") if env_file.exists() else ""
        runs.append({"stem": stem, "profile": str(study_profile(spec, stem)),
                     "design": str(rows["design"].iloc[0]), "environment": str(env), "claims": claims,
                     "abstract": any(r["who"] == ABSTRACT for r in mine)})
        tables[stem] = rows
    if not runs:
        return pd.DataFrame(), runs, pending
    keys = ["regime", "test", "arm", "clients"]
    cells = []
    for r in readers:  # the cells each reader reads in its own run
        t = tables.get(r["stem"])
        if t is None:
            continue
        inside = pd.Series([_matches(row, r["cell"]) for _, row in t.iterrows()], index=t.index, dtype=bool)
        at = t[inside & t["arm"].isin(r["configurations"])]
        cells.extend(tuple(x) for x in at[keys].astype(str).itertuples(index=False))
    # and each run's A/A where a row is read: the resolution the run had there
    aa = aa_name(spec.baseline)
    shown = {(regime, test) for regime, test, _, _ in cells}
    for t in tables.values():
        at = t[(t["arm"] == aa) & pd.Series([(str(a), str(b)) in shown for a, b in zip(t["regime"], t["test"])],
                                            index=t.index, dtype=bool)]
        cells.extend(tuple(x) for x in at[keys].astype(str).itertuples(index=False))
    order = sorted(set(cells), key=lambda k: (k[0], k[1], k[2], int(k[3])))
    rows = []
    for regime, test, arm, clients in order:
        here = {"regime": regime, "test": test, "configuration": arm, "clients": clients}
        row = {"regime": regime, "workload": test, "configuration": arm, "clients": clients}
        for run in runs:
            t = tables[run["stem"]]
            m = t[(t["regime"].astype(str) == regime) & (t["test"].astype(str) == test) & (t["arm"] == arm)
                  & (t["clients"] == int(clients))]
            row[_column(run)] = (ci_text(m["ratio"].iloc[0], m["ci_low"].iloc[0], m["ci_high"].iloc[0],
                                         n=int(m["n"].iloc[0]), apart=1.0) if len(m) else "–")
        by = [f"{r['who']} ({study_profile(spec, r['stem'])}"
              + (f", its {r['metric']})" if r["metric"] != "ratio" else ")")
              for r in readers if r["stem"] in tables and arm in r["configurations"] and _matches(here, r["cell"])]
        row["read by (run)"] = "; ".join(by) or "–"
        rows.append(row)
    return pd.DataFrame(rows), runs, pending


def _column(run: dict) -> str:
    """A run's column: its profile, design and environment, who reads it, what its cells print."""
    who = ([ABSTRACT] if run["abstract"] else []) + run["claims"]
    env = f", environment {run['environment']}" if run["environment"] else ""
    return f"{run['profile']} ({run['design']}{env}), read by {', '.join(who)}: ratio [{CI}] (n)"
