"""The paper's sections after the studies and the costs: the claims, the 1-client anomaly and the instrument hook,
the anomaly screen, the digests of captured logs, the comparison of the designs, the model per study and level,
threats to validity.

Each is a function of the ``doc`` (what numbers.json holds), the processed directory and ``generated/``
(``gen``), and of the number registry where it registers numbers; it sets its keys of ``doc`` whether or not
its files exist.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from ...analyze import anomalies as anomalies_mod
from ...analyze import models as models_mod
from ... import studies as studies_registry
from ...analyze import claim_rules
from ...analyze import claims as claims_mod
from ...analyze.claims import fmt
from ..findings import cell_columns, cell_label, in_cell
from ...base.settings import aa_name
from ...base.stats import effects
from . import scoreboard
from .tables import EFFECT_HEADER, add_table, statements
from ...base.formatting import CI, ci_text
from .text import cell_text, effect_cell

# Written by the instrument study (issue 10) when it exists: one row per finding, ``item`` and ``statement`` (a
# sentence whose numbers its code printed from its data). The paper's section "Instrument resolution and the
# anomaly test" prints these statements; until the file exists it says the test is pending.
INSTRUMENT_FINDINGS = "instrument_findings.csv"

# Written by 90_findings: the anomaly screen over every study's data (logbench.analyze.anomalies).
ANOMALIES = "findings_anomalies.csv"
CLAIMS = "findings_claims.csv"


def claims_section(doc: dict, processed_dir: Path, gen: Path, nums) -> None:
    """The claims table and the count per verdict (``doc['verdicts']``), from 90_findings' claims."""
    claims_file = processed_dir / CLAIMS
    doc["verdicts"] = []
    doc["scoreboard"] = []
    doc["rules_table"] = ""
    if not claims_file.exists():
        return
    cl = pd.read_csv(claims_file, dtype=str, keep_default_na=False)
    if "rule" not in cl.columns:
        cl["rule"] = ""
    shown = cl[["claim_id", "post", "claim", "published", "claimed", "ours", "verdict", "why", "rule"]]
    doc["claims_table"] = add_table(doc, gen, shown, "claims")
    # the rule each claim is judged by, once per claim whose rule is its own; the standard rules are stated once
    # in the paper's text (issue 42: the same rule printed 20 times)
    own = cl[~cl["rule"].map(standard_rule)]
    doc["rules_table"] = add_table(doc, gen, own[["claim_id", "rule"]].rename(columns={"claim_id": "claim"}),
                                   "claim_rules") if len(own) else ""
    # the results by post: each post's claims read in one line each, and the study its key figure comes from
    for post, board in scoreboard.scoreboard(cl).items():
        doc["scoreboard"].append({"post": post, "table": add_table(doc, gen, board, f"scoreboard_{post}"),
                                  "study": scoreboard.key_study(cl, post)})
    nums.add("claims.count", {"kind": "agg", "source": CLAIMS, "agg": "count"})
    for v in claims_mod.VERDICTS:
        nums.add(f"claims.{v}", {"kind": "agg", "source": CLAIMS, "where": {"verdict": v}, "agg": "count"})
        doc["verdicts"].append(v)


# the two rules every claim without a rule of its own is judged by (claims.rule_text), whatever its range
_STANDARD_RANGE = re.compile(re.escape(claims_mod.rule_text("in_range", 0.0, 1.0)).replace(
    re.escape(claims_mod.range_text(0.0, 1.0)), ".+"))


def standard_rule(rule: str) -> bool:
    """Whether ``rule`` is :func:`logbench.analyze.claims.rule_text`'s for a range or for "fastest" (not a rule of its own)."""
    return rule == claims_mod.rule_text("fastest", 0.0, 0.0) or bool(_STANDARD_RANGE.fullmatch(rule))


def screen_section(doc: dict, processed_dir: Path, gen: Path, nums) -> None:
    """The anomaly screen's counts per kind and its table (``doc['screen_table']``, '' where it found nothing)."""
    screen_file = processed_dir / ANOMALIES
    doc["screen_table"] = ""
    if not screen_file.exists():
        return
    screen = pd.read_csv(screen_file, dtype={"cell": str}, keep_default_na=False,
                         na_values={c: [""] for c in ("value", "ci_low", "ci_high")})
    nums.add("screen.count", {"kind": "agg", "source": ANOMALIES, "agg": "count"})
    for k in anomalies_mod.KINDS:
        nums.add(f"screen.{k}", {"kind": "agg", "source": ANOMALIES, "where": {"kind": k}, "agg": "count"})
    if len(screen):
        doc["screen_table"] = add_table(doc, gen, screen_table(screen), "anomalies")


def screen_table(anomalies: pd.DataFrame) -> pd.DataFrame:
    """The screen as the paper prints it: the value with its interval (:func:`.text.ci_text`; a block: its
    configurations' range)."""
    def value(r) -> str:
        if r["kind"] == "contaminated_block":
            return f"{cell_text(r['value'])} [{cell_text(r['ci_low'])} – {cell_text(r['ci_high'])}]"
        return ci_text(r["value"], r["ci_low"], r["ci_high"])

    return pd.DataFrame({"study": anomalies["study"], "cell": anomalies["cell"].replace("", "–"),
                         "clients": anomalies["clients"].astype(str),
                         "kind": anomalies["kind"].map(anomalies_mod.LABELS), "what": anomalies["what"],
                         f"value [{CI}]": anomalies.apply(value, axis=1), "note": anomalies["note"]})


def anomaly_section(doc: dict, processed_dir: Path, gen: Path, nums, studies: dict) -> None:
    """The cells where logging was faster than not logging, as a table; the instrument study's statements."""
    rows = []
    aa_col, ratio_col = f"A/A ratio [{CI}]", f"ratio to baseline [{CI}]"
    for name, s in studies.items():
        fast = anomalies_mod.faster_than_baseline(s.summary, s.baseline)
        read = effects(s.summary, s.baseline, keys=cell_columns(s.summary) + ["clients"]) if len(fast) else None
        for i, r in fast.iterrows():
            cell = {c: str(r[c]) for c in cell_columns(s.summary) if c in r.index}
            k = int(r["clients"])
            # what else the cell says: the CPU idle state its runs held, and its baseline measured against itself
            runs = in_cell(s.runs, cell)
            runs = runs[runs["clients"].astype(int) == k]
            idle = "/".join(sorted(runs["idle_state"].dropna().astype(str).unique())) if "idle_state" in runs else ""
            aa = in_cell(s.summary, cell)
            aa = aa[(aa["configuration"].astype(str) == aa_name(s.baseline)) & (aa["clients"].astype(int) == k)]
            rows.append({"study": name, "cell": cell_label(cell), "configuration": str(r["configuration"]),
                         "clients": str(k), ratio_col: ci_text(r["ratio"], r["ratio_ci_low"], r["ratio_ci_high"]),
                         "idle state": idle or "–",
                         aa_col: (ci_text(aa["ratio"].iloc[0], aa["ratio_ci_low"].iloc[0], aa["ratio_ci_high"].iloc[0])
                                  if len(aa) else "–"),
                         EFFECT_HEADER: effect_cell(str(r["configuration"]), s.baseline, read.loc[i, "effect"],
                                                    read.loc[i, "aa_reach"])})
    df = pd.DataFrame(rows, columns=["study", "cell", "configuration", "clients", ratio_col, "idle state", aa_col,
                                     EFFECT_HEADER])
    doc["anomaly_table"] = ""
    if len(df):
        doc["anomaly_table"] = add_table(doc, gen, df, "anomaly")
        doc["anomaly_clients"] = sorted({int(x) for x in df["clients"]})
        doc["anomaly_idle_free"] = bool((df["idle state"] != "hold").any())
    inst = processed_dir / INSTRUMENT_FINDINGS
    doc["instrument"] = ""
    if inst.exists():
        doc["instrument"] = add_table(doc, gen, statements(inst), "instrument")


# Written by notebook 00's designs part: the switchback and the block design at equal machine time.
DESIGNS = ("instrument_designs_efficiency.csv", "instrument_designs_bias.csv")
PLACEMENT_TEXT = {"none": "with the scheduler's placement", "split": "with the server and pgbench on separate CPUs"}


def designs_section(doc: dict, processed_dir: Path, gen: Path) -> None:
    """The method section's comparison of the designs (``doc['designs_table']``: its CSV, or '' until notebook 00
    ran it), one row per clients level and arm, every value as notebook 00 wrote it."""
    doc["designs_table"], doc["designs_verdict"] = "", ""
    eff_csv, bias_csv = (processed_dir / f for f in DESIGNS)
    if not (eff_csv.exists() and bias_csv.exists()):
        return
    eff, bias = pd.read_csv(eff_csv), pd.read_csv(bias_csv)
    # notebook 00's runs before placement was a factor of the designs part ran with the scheduler's placement
    eff, bias = (t if "placement" in t else t.assign(placement="none") for t in (eff, bias))
    placed = set(eff["placement"]) != {"none"}
    rows = [{"clients": int(e["clients"]), **({"placement": PLACEMENT_TEXT.get(e["placement"], e["placement"])}
                                              if placed else {}),
             "sessions per design": f"{int(e['switchback sessions'])} / {int(e['blocks sessions'])}",
             "A/A variance × minutes, blocks / switchback": ci_text(e["blocks / switchback"], e["ci_low"],
                                                                     e["ci_high"]),
             "arm": b["arm"],
             "its ratio, switchback / blocks": ci_text(b["switchback / blocks"], b["diff ci_low"],
                                                       b["diff ci_high"])}
            for _, e in eff.iterrows()
            for _, b in bias[(bias["clients"] == e["clients"]) & (bias["placement"] == e["placement"])].iterrows()]

    def levels(mask) -> str:
        c = sorted({int(x) for x in mask})
        return " and ".join(f"{x} client(s)" for x in c) if c else ""

    def verdict(eff: pd.DataFrame, bias: pd.DataFrame) -> str:
        sb_wins, bl_wins = levels(eff[eff["ci_low"] > 1]["clients"]), levels(eff[eff["ci_high"] < 1]["clients"])
        moved = levels(bias[(bias["diff ci_low"] > 1) | (bias["diff ci_high"] < 1)]["clients"])
        parts = ([f"switching was more efficient with confidence at {sb_wins}"] if sb_wins else []) \
            + ([f"the block design was more efficient with confidence at {bl_wins}"] if bl_wins else []) \
            + ([] if sb_wins or bl_wins else ["neither design was more efficient with confidence at any level"]) \
            + [f"switching moved the logging arm's ratio at {moved}" if moved else
               "switching did not move the logging arm's ratio at any level"]
        return "; ".join(parts)

    if placed:
        text = "; ".join(f"{PLACEMENT_TEXT.get(p, p)}: " + verdict(eff[eff["placement"] == p],
                                                                   bias[bias["placement"] == p])
                         for p in sorted(set(eff["placement"]))) + "."
    else:
        text = verdict(eff, bias) + "."
    doc["designs_verdict"] = text[0].upper() + text[1:]
    doc["designs_table"] = add_table(doc, gen, pd.DataFrame(rows), "designs")


# Written by 90_findings: one model per study and level (logbench.publish.models), and its coverage over every A/A control.
MODELS = models_mod.FINDINGS_TABLE
MODELS_COVERAGE = "findings_models_coverage.csv"


def models_section(doc: dict, processed_dir: Path, gen: Path, nums) -> None:
    """The method's passage on the model per study and level: its coverage over every committed A/A control and
    the median A/A half-widths by the model, its clustered check and the per-cell intervals (``doc['models_table']``
    per study, '' until 90_findings wrote them)."""
    doc["models_table"], doc["models_studies"] = "", list(models_mod.MODEL_STUDIES)
    cov_file = processed_dir / MODELS_COVERAGE
    if not cov_file.exists():
        return
    cov = pd.read_csv(cov_file)
    if not len(cov):
        return
    every = {"source": cov_file.name, "where": {"study": models_mod.ALL}}
    nums.add("models.n_aa", {"kind": "cell", **every, "column": "n_aa"})
    nums.add("models.hold", {"kind": "cell", **every, "column": "model_hold"})
    for key, column in (("hold_percent", "model_hold_share"), ("cluster_hold_percent", "cluster_hold_share"),
                        ("cell_hold_percent", "cell_hold_share")):
        nums.add(f"models.{key}", {"kind": "scale", "factor": 100, "sig": 3,
                                   "of": {"kind": "cell", **every, "column": column}})
    for key, column in (("hold_ci_low", "model_hold_ci_low"), ("hold_ci_high", "model_hold_ci_high")):
        nums.add(f"models.{key}", {"kind": "scale", "factor": 100, "sig": 2,
                                   "of": {"kind": "cell", **every, "column": column}})
    for key, column in (("hw", "model_hw_median"), ("cluster_hw", "cluster_hw_median"), ("cell_hw", "cell_hw_median")):
        nums.add(f"models.{key}", {"kind": "cell", **every, "column": column, "sig": 2})
    shown = cov.assign(study=cov["study"].replace({models_mod.ALL: "every study"}))
    table = pd.DataFrame({
        "study": shown["study"], "A/A controls": shown["n_aa"].astype(int).astype(str),
        "model's holding 1": shown["model_hold"].astype(int).astype(str),
        "A/A half-width, per cell": shown["cell_hw_median"].map(lambda x: cell_text(x, 2)),
        "model": shown["model_hw_median"].map(lambda x: cell_text(x, 2)),
        "clustered": shown["cluster_hw_median"].map(lambda x: cell_text(x, 2))})
    doc["models_table"] = add_table(doc, gen, table, "models")


def digest_section(doc: dict, processed_dir: Path, gen: Path, nums, specs=None) -> None:
    """Every digest study's section (``doc['digests'][name]``: its table's CSV, or '' until the study ran) and the
    numbers its text states (``<name>.<key>``), as its spec's :class:`~logbench.studies.common.DigestPaper` says."""
    doc["digests"] = {}
    for spec in studies_registry.specs() if specs is None else specs:
        paper = spec.digest
        if paper is None:
            continue
        src = processed_dir / f"{spec.name}.csv"
        doc["digests"][spec.name] = ""
        if not src.exists():
            continue
        d = pd.read_csv(src, keep_default_na=False, na_values=[""])
        doc["digests"][spec.name] = add_table(doc, gen, paper.table(d.head(paper.rows)), f"digest_{spec.name}")
        for key, number in paper.numbers.items():
            nums.add(f"{spec.name}.{key}", _sourced(number, src.name))


def _sourced(spec: dict, source: str) -> dict:
    """A number's spec with ``source`` filled in wherever it reads a table (inside "div" and "scale" too)."""
    out = {k: _sourced(v, source) if isinstance(v, dict) and "kind" in v else v for k, v in spec.items()}
    return {**out, "source": source} if spec["kind"] in ("cell", "agg") else out


def threats_section(doc: dict, processed_dir: Path, nums) -> None:
    """The numbers the threats-to-validity section names (each optional: only what the data has)."""
    pg = processed_dir / "pg_destinations.csv"
    if pg.exists() and "log_loss_mean" in pd.read_csv(pg, nrows=1).columns:
        if nums.add("threat.udp_loss", {"kind": "scale", "factor": 100, "sig": 2,
                                        "of": {"kind": "agg", "source": pg.name, "column": "log_loss_mean",
                                               "where": {"configuration": "remote_syslog_udp"}, "agg": "max"}},
                    optional=True) is not None:
            doc["threat_udp"] = True
    fit_file = processed_dir / "findings_regression_fit.csv"
    if fit_file.exists():
        nums.add("threat.environments", {"kind": "agg", "source": fit_file.name, "column": "env_id",
                                         "agg": "nunique"})
        doc["threat_envs"] = True
    doc["threat_cores"] = [{"post": p, "key": f"post_cores.{p}"} for p, c in claim_rules.POST_CORES.items()
                           if c is not None]
    for p, c in claim_rules.POST_CORES.items():
        if c is not None:
            nums.add(f"post_cores.{p}", {"kind": "constant", "name": f"claim_rules.POST_CORES.{p}"})
