"""The paper's first section (issue 42, "the answer first"): a decision guide a DBA can carry to their own server.

Everything it prints is read from ``data/processed``: the counted records per statement and instructions per record
(study 11), the cost model's µs per record (``findings_cost_model_rule.csv``), its held-out accuracy
(``findings_cost_model_summary.csv``), the timed CPU per record (study 02's per-record table), each single-threaded
daemon's one-core ceiling from its own CPU per record timed in study 02 (``findings_cost_model_ceilings.csv``, the
cost model's beside it as a check), the syslog daemons' own CPU with the receiver apart
(``findings_cost_model_daemons.csv``), and MariaDB's ratios by both
designs side by side. The worked examples are the rule applied to those numbers through a spec (``mul``, ``inv``,
``scale``), so ``tests/test_paper.py`` re-derives each from the tables as it does every other number.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ...analyze.daemons import CEILING_SIG, ceiling_text, chosen
from ...base.formatting import CI, ci_text, number
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
# MariaDB: the abstract reads the switchback table, the claims the block design's; both side by side
MARIADB_DESIGNS = (("block design (the claims' verdicts)", "mysql_slowlog"),
                   ("switchback (the abstract's headline)", "mysql_slowlog_switchback"))
MARIADB_CELL = {"regime": "cpu"}


def _cell(source: str, where: dict, column: str, **extra) -> dict:
    return {"kind": "cell", "source": source, "where": where, "column": column, **extra}


def guide_section(doc: dict, processed_dir: Path, gen: Path, nums) -> None:
    """``doc['guide']``: the per-destination table, the worked examples' keys, the latency- and CPU-bound cells,
    the remote receiver's CPU and MariaDB's two designs; its parts empty where their tables are missing."""
    g = {"table": "", "examples": [], "bounds": [], "remote": [], "mariadb": "", "daemon": [],
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
    mariadb = designs_side_by_side(processed_dir)
    if len(mariadb):
        g["mariadb"] = add_table(doc, gen, mariadb, "guide_mariadb_designs")


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


def designs_side_by_side(processed_dir: Path) -> pd.DataFrame:
    """MariaDB's ratios per workload, configuration and level by the block design (what the claims judge) and by the
    switchback design (what the abstract prints), each with its CI, n and environment: never pooled."""
    tables = {}
    for label, stem in MARIADB_DESIGNS:
        f = processed_dir / f"{stem}.csv"
        if not f.exists():
            return pd.DataFrame()
        t = pd.read_csv(f)
        for col, want in MARIADB_CELL.items():
            if col in t.columns:
                t = t[t[col].astype(str) == want]
        tables[label] = t[t["ratio"].notna() & (t["configuration"] != "off")]
    (block_label, block), (sb_label, sb) = tables.items()
    keys = ["test", "configuration", "clients"]
    rows = []
    for _, s in sb.sort_values(keys).iterrows():
        b = block
        for col in keys:
            b = b[b[col].astype(str) == str(s[col])]
        if not len(b):
            continue
        b = b.iloc[0]
        rows.append({"workload": str(s["test"]), "configuration": str(s["configuration"]),
                     "clients": str(int(s["clients"])),
                     f"{block_label} [{CI}]": ci_text(b["ratio"], b["ratio_ci_low"], b["ratio_ci_high"],
                                                     n=int(b["n"])),
                     f"{sb_label} [{CI}]": ci_text(s["ratio"], s["ratio_ci_low"], s["ratio_ci_high"], n=int(s["n"])),
                     "environments (block / switchback)": f"{b.get('env_id', '')} / {s.get('env_id', '')}"})
    return pd.DataFrame(rows)
