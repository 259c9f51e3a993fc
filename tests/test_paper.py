"""The paper builds, references only files that exist, and prints exactly the numbers of the processed data.

Two builds, both into temporary directories (never into paper/):

* from a synthetic processed directory run through the whole findings pipeline (always available);
* from the real ``data/processed`` and ``paper/figures`` — and its text must equal the committed
  ``paper/logbench.pdf``'s, so a PDF that was not rebuilt after the data changed fails here.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from logbench.analyze import claim_rules, claims, daemons, regression
from logbench.base import paths, stats
from logbench.publish import report

pytestmark = pytest.mark.skipif(shutil.which("pdftotext") is None,
                                reason="pdftotext (poppler-utils, see scripts/apt-packages.txt) is not installed")


def pdf_text(pdf: Path) -> str:
    return subprocess.run(["pdftotext", "-enc", "UTF-8", str(pdf), "-"], capture_output=True, text=True,
                          check=True).stdout


def squash(text: str) -> str:
    """Whitespace and soft hyphens removed: line breaks may fall anywhere between words."""
    return re.sub(r"\s+", "", text.replace("\u00ad", ""))


def dehyphen(text: str) -> str:
    """Hyphens inside words removed (the PDF's text drops the one a line break falls after)."""
    return re.sub(r"(?<=\w)-(?=\w)", "", text)


# --- an independent reader of the numbers' provenance -------------------------------------------------------

CODE_CONSTANTS = {
    "claims.MAX_CLIENTS_PER_CORE": claims.MAX_CLIENTS_PER_CORE,
    "regression.COOKS_FACTOR": regression.COOKS_FACTOR,
    "regression.BYTES_PER_KB": regression.BYTES_PER_KB,
    "stats.CONFIDENCE_PERCENT": round(100 * stats.CONFIDENCE),
    "claims.EQUIVALENCE_PERCENT": round(100 * claims.EQUIVALENCE),
    **{f"claim_rules.POST_CORES.{p}": c for p, c in claim_rules.POST_CORES.items() if c is not None},
    "claim_rules.POST_001_MAX_PER_CORE": claim_rules.POST_001_MAX_PER_CORE,
    "daemons.UPPER_WITHIN": daemons.UPPER_WITHIN,
}


def read_spec(spec: dict, processed: Path):
    kind = spec["kind"]
    if kind == "constant":
        return CODE_CONSTANTS[spec["name"]]
    if kind == "div":
        return read_spec(spec["a"], processed) / read_spec(spec["b"], processed)
    if kind == "mul":
        return read_spec(spec["a"], processed) * read_spec(spec["b"], processed)
    if kind == "inv":
        return spec["factor"] / read_spec(spec["of"], processed)
    if kind == "scale":
        return read_spec(spec["of"], processed) * spec["factor"]
    path = processed / spec["source"]
    if kind == "env":
        return json.loads(path.read_text())[spec["key"]]
    df = pd.read_csv(path)
    for col, want in spec.get("where", {}).items():
        df = df[df[col].astype(str) == str(want)]
    if kind == "cell":
        assert len(df) == 1, spec
        return df[spec["column"]].iloc[0]
    col = df[spec["column"]] if spec.get("column") else df
    return {"count": lambda: len(df), "nunique": lambda: col.nunique(), "max": lambda: col.max(),
            "min": lambda: col.min(),
            "median": lambda: col.median(), "first": lambda: col.iloc[0],
            "list": lambda: sorted(int(x) for x in col.unique()) if spec.get("int") else sorted(map(str, col.unique())),
            }[spec["agg"]]()


def same(a, b) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15)
    return a == b or str(a) == str(b)


def rounded_from(text: str, value, spec: dict) -> bool:
    """A grouped number's text (a large rate, formatting.rounded) says its value: thousands grouped by commas, and
    within half a unit of its last significant digit (a whole count: exactly it)."""
    if not re.fullmatch(r"-?\d{1,3}(?:,\d{3})*(?:\.\d+)?", text):
        return False
    shown, value = float(text.replace(",", "")), float(value)
    if spec.get("int"):
        return shown == int(value)
    if value == 0:
        return shown == 0
    unit = 10.0 ** (math.floor(math.log10(abs(value))) - spec.get("sig", 3) + 1)
    return abs(shown - value) <= 0.5 * unit * (1 + 1e-9)


def check_build(build: Path, processed: Path) -> None:
    """Every referenced file exists; every in-text number equals its source and is printed; tables are printed."""
    doc = json.loads((build / "generated" / "numbers.json").read_text())
    source = (build / "logbench.typ").read_text()
    # 1. what the source and the generated data reference exists
    for rel in re.findall(r'(?:json|csv|image)\("([^"]+)"\)', source):
        assert (build / rel).is_file(), rel
    for rel in doc["figures"] + doc["tables"]:
        assert (build / rel).is_file() and (build / rel).stat().st_size > 0, rel
    for s in doc["studies"]:
        assert s["table"] == "" or s["table"] in doc["tables"]
        for f in s["figures"]:
            assert f["path"] in doc["figures"]
    for e in doc["engines"]:
        assert e["table"] in doc["tables"]
        for rel in [e["figure_fit"]] + [f["figure"] for f in e["families"]]:
            assert rel == "" or rel in doc["figures"]
    text = pdf_text(build / "logbench.pdf")
    flat = squash(text)
    check_headings(build)
    # typst markup printed as text: an `else` on its own line after `]` ends the `if`, and its `[...]` is content
    leaked = re.findall(r"(?:^|\s)(?:else \[|#if |#n\(|#let )", text)
    assert not leaked, f"typst source printed in the paper: {leaked}"
    # 2. every in-text number: its spec re-read from the processed files gives the same value and text
    assert doc["numbers"], "no numbers were generated"
    for key, item in doc["numbers"].items():
        value = read_spec(item["spec"], processed)
        if item["value"] is None:  # a missing value is printed as a dash
            assert pd.isna(value) and item["text"] == "—", key
            continue
        assert same(item["value"], value), (key, item["value"], value)
        assert report.render(value, item["spec"]) == item["text"], key
        if item["spec"].get("grouped"):
            assert rounded_from(item["text"], value, item["spec"]), (key, item["text"], value)
        # a line break after a word's own hyphen ("TPC-B-" / "like") comes out of the PDF's text without it
        assert squash(item["text"]) in flat or dehyphen(squash(item["text"])) in dehyphen(flat), \
            f"{key} = {item['text']!r} is not printed in the PDF"
    # 3. every number in every generated table is printed
    for rel in doc["tables"]:
        cells = pd.read_csv(build / rel, dtype=str, keep_default_na=False)
        for cell in cells.to_numpy().ravel():
            for number in re.findall(r"-?\d+(?:\.\d+)?", cell):
                assert number in flat, f"{rel}: {number!r} of {cell!r} is not printed"
    # 4. the study tables say what the processed summaries say (formatted independently here)
    for s in doc["studies"]:
        if not s["table"]:
            continue
        summary = pd.read_csv(processed / f"{s['name']}.csv")
        table = pd.read_csv(build / s["table"], dtype=str, keep_default_na=False)
        ratio_col = [c for c in table.columns if c.startswith("ratio")][0]
        assert len(summary) == len(table)
        for (_, srow), (_, trow) in zip(summary.iterrows(), table.iterrows()):
            assert trow["configuration"] == str(srow["configuration"])
            if not math.isnan(srow["ratio_ci_low"]):
                expect = (f"{claims.fmt(srow['ratio'])} [{claims.fmt(srow['ratio_ci_low'])}, "
                          f"{claims.fmt(srow['ratio_ci_high'])}]")
                assert trow[ratio_col] == expect
                assert squash(expect) in flat or all(x in flat for x in squash(expect).split(","))
    # 5. the claims: every id and verdict is printed, and the counts add up
    if doc["has_findings"]:
        cl = pd.read_csv(processed / "findings_claims.csv", dtype=str, keep_default_na=False)
        for _, r in cl.iterrows():
            assert r["verdict"] in claims.VERDICTS
        counts = sum(int(doc["numbers"][f"claims.{v}"]["text"]) for v in claims.VERDICTS)
        assert counts == len(cl) == int(doc["numbers"]["claims.count"]["text"])
        for part in ("confirmed", "refuted", "notreproduciblehere", "notmeasuredyet"):
            assert part in flat


# --- headings: the compiled document has exactly the sections the source intends ----------------------------

# A source heading: a line that starts (after indentation) with '=' marks and a space. Anything else that
# typst turns into a heading — e.g. `[= #n(...)]` meant as "= 0.27" inside a sentence — is unintended.
_SOURCE_HEADING = re.compile(r"^\s*(=+)\s+(.*?)\s*(<[\w-]+>)?\s*$")
_EXPR = re.compile(r"#[A-Za-z_][\w.-]*(?:\([^()]*\))?(?:\.[\w-]+(?:\([^()]*\))?)*")


def intended_headings(source: str) -> list[tuple[int, re.Pattern]]:
    """(level, pattern of its text) for every heading the source writes at the start of a line; an embedded
    expression (#s.title, #raw(e.env_id)) matches any text."""
    out = []
    for line in source.splitlines():
        m = _SOURCE_HEADING.match(line)
        if not m or line.lstrip().startswith("//"):
            continue
        parts = _EXPR.split(m.group(2))
        out.append((len(m.group(1)), re.compile(".+".join(re.escape(x) for x in parts))))
    return out


def _plain(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(_plain(c) for c in content)
    if not isinstance(content, dict):
        return ""
    func = content.get("func")
    if func == "space":
        return " "
    if func == "smartquote":
        return '"' if content.get("double", True) else "'"
    if "text" in content and isinstance(content["text"], str):
        return content["text"]
    if "children" in content:
        return _plain(content["children"])
    if "body" in content:
        return _plain(content["body"])
    return ""


def compiled_headings(build: Path) -> list[tuple[int, str]]:
    import typst

    found = json.loads(typst.query(str(build / "logbench.typ"), "heading", root=str(build), ignore_system_fonts=True))
    return [(int(h["level"]), _plain(h["body"]).strip()) for h in found]


def unintended_headings(build: Path) -> list[tuple[int, str]]:
    intended = intended_headings((build / "logbench.typ").read_text())
    return [(lvl, text) for lvl, text in compiled_headings(build)
            if not any(lvl == il and p.fullmatch(text) for il, p in intended)]


def check_headings(build: Path) -> None:
    bad = unintended_headings(build)
    assert not bad, f"headings the source does not intend (a stray '=' at the start of markup?): {bad}"
    flat = squash(pdf_text(build / "logbench.pdf"))
    for _, text in compiled_headings(build):
        assert squash(text.replace("'", "’")) in flat, text


def test_the_number_check_reads_a_grouped_rate_back():
    """A ceiling printed at 2 significant digits passes only as the rounding of its value, grouped."""
    spec = {"sig": 2, "grouped": True}
    assert rounded_from("390,000", 392904.0, spec) and rounded_from("46,000", 46065.7, spec)
    assert not rounded_from("400,000", 392904.0, spec)  # off by more than half its last digit
    assert not rounded_from("392904", 392904.0, spec)  # not grouped: every integer digit, the false precision
    assert not rounded_from("390 000", 392904.0, spec)
    assert rounded_from("10,000", 10000, {"int": True, "grouped": True})
    assert not rounded_from("10,000", 10001, {"int": True, "grouped": True})


def test_the_heading_check_catches_a_stray_equals_sign(tmp_path):
    """The bug it guards against: `[= #n(...)]` in running text turns a p-value into a section heading."""
    (tmp_path / "logbench.typ").write_text(
        '#set heading(numbering: "1.1")\n= Intended <sec-a>\n#let p = "0.27"\n'
        'The test ($p$ #if false [< 0.001] else [= #p]).\n== Also #p intended\n')
    (tmp_path / "logbench.pdf").write_bytes(b"")
    assert unintended_headings(tmp_path) == [(1, "0.27")]


# --- a synthetic processed directory through the whole pipeline ---------------------------------------------

CONFIGS = {"none": (0, 0), "stderr": (2, 150), "csvlog": (2, 290), "syslog": (2, 160), "syslog,csvlog": (4, 220)}


def synthetic_processed(directory: Path) -> Path:
    runs = regression.synthetic_runs(study="pg_destinations", configurations=CONFIGS, clients=(1, 2, 4), repeats=4,
                                     line_cost_us=6.0, noise_cv=0.02, seed=11)
    runs = runs.assign(server_version="15.18 (synthetic)", query_mode="prepared", backend="local", switch="reload")
    directory.mkdir(parents=True)
    runs.to_csv(directory / "pg_destinations_runs.csv", index=False, float_format="%.6g")
    summary = stats.summarise(runs, by=["configuration", "clients"], baseline="none",
                              also=("log_loss", "log_lines_per_s", "log_bytes_per_s", "server_cpu_s", "logger_cpu_s"))
    summary.to_csv(directory / "pg_destinations.csv", index=False, float_format="%.6g")
    env = {"cpu_count": 2, "cpu_model": "Synthetic CPU", "memory_bytes": 8_000_000_000, "kernel": "6.1.0",
           "os": "Debian GNU/Linux 12 (bookworm)", "clocksource": "tsc", "timer_loop_ns": 31.5, "env_id": "synthetic"}
    (directory / "pg_destinations_environment.json").write_text(json.dumps(env, indent=2, sort_keys=True) + "\n")
    # a second engine whose study is made of cells (regime × workload), like mysql_slowlog
    my = pd.concat([
        regression.synthetic_runs(study="mysql_slowlog", engine="mariadb", configurations=MY_CONFIGS, clients=(1, 8),
                                  repeats=3, line_cost_us=9.0, seed=seed).assign(regime=regime, test="oltp_read_write")
        for seed, regime in ((21, "cpu"), (22, "io"))], ignore_index=True)
    my = my.assign(server_version="10.11 (synthetic)", query_mode="", backend="local", workload="sysbench oltp_read_write")
    my.to_csv(directory / "mysql_slowlog_runs.csv", index=False, float_format="%.6g")
    my_summary = stats.summarise(my, by=["regime", "test", "configuration", "clients"], baseline="off",
                                 also=("log_loss", "log_bytes_per_s", "server_cpu_s"))
    my_summary.to_csv(directory / "mysql_slowlog.csv", index=False, float_format="%.6g")
    (directory / "mysql_slowlog_environment.json").write_text(json.dumps(env, indent=2, sort_keys=True) + "\n")
    synthetic_calibration(directory)
    return directory


def synthetic_calibration(directory: Path) -> None:
    """Study 11's calibration as its committed run publishes it: the write() floor at two record sizes, to a file
    and into a pipe, and the baseline backend's CPU (where the findings read the floor)."""
    from logbench.studies.record_cost import calibration

    floors = [{"part": "write_floor", "target": t, "nbytes": n, "batch": 100, "env_id": "synthetic",
               "per_write_us": list(base + 0.01 * n / 100 + 0.02 * np.sin(np.arange(40)))}
              for t, base in (("file", 1.1), ("pipe", 0.7)) for n in (140, 290)]
    loads = [{"part": "cpu", "repeat": r, "transactions": 40_000, "user_s": 0.8 + 0.01 * r, "system_s": 0.3,
              "tps": 9000.0, "env_id": "synthetic"} for r in range(3)]
    counted = pd.DataFrame({"engine": "postgresql", "configuration": "none", "counter": "cachegrind",
                            "process": "backend", "metric": "instructions", "per_statement": [61_000.0, 61_100.0]})
    calibration.table(pd.DataFrame(floors + loads), counted).to_csv(
        directory / "record_cost_calibration.csv", index=False, float_format="%.6g")


MY_CONFIGS = {"off": (0, 0), "slow_1s": (0, 0), "slow_all": (1, 400), "slow_all_devnull": (1, 0)}


@pytest.fixture(scope="module")
def synthetic_build(tmp_path_factory):
    root = tmp_path_factory.mktemp("paper")
    processed = synthetic_processed(root / "processed")
    tables, figures = report.compute_findings(processed)
    report.write_findings(tables, figures, output_dir=processed, figures_dir=root / "figures")
    pdf = report.build(processed, root / "figures", root / "build")
    return root, processed, pdf


def test_synthetic_paper_builds_and_prints_the_processed_numbers(synthetic_build):
    root, processed, pdf = synthetic_build
    assert pdf == root / "build" / "logbench.pdf" and pdf.stat().st_size > 10_000
    check_build(root / "build", processed)
    doc = json.loads((root / "build" / "generated" / "numbers.json").read_text())
    assert [s["name"] for s in doc["studies"]] == ["pg_destinations", "mysql_slowlog"]
    # a version sweep is missing from the studies' section: the section on versions says it has not run
    assert [m["name"] for m in doc["missing_studies"]] == [
        s.name for s in report.KNOWN_STUDIES if s.name not in ("pg_destinations", "mysql_slowlog")
        and not s.name.endswith("_versions")]
    assert len(doc["versions_pending"]) == 3 and doc["versions"] == []
    # MariaDB's cached and IO-bound runs are fitted apart (issue 22)
    assert [e["engine"] for e in doc["engines"]] == ["mariadb", "mariadb", "postgresql"] and doc["has_findings"]
    assert [e["label"].split("; ")[1] for e in doc["engines"]] == [
        "cached data, oltp_read_write", "IO-bound data, oltp_read_write", "cached data"]
    my = doc["studies"][1]
    assert [f["cell"] for f in my["figures"]] == ["cpu, oltp_read_write", "io, oltp_read_write"]
    verdicts = pd.read_csv(processed / "findings_claims.csv", dtype=str, keep_default_na=False).set_index("claim_id")
    # its run (resolution_devnull) is not among the synthetic ones: not judged on the block run's arm instead
    assert verdicts.loc["001-devnull", "verdict"] == claims.NOT_MEASURED
    assert verdicts.loc["001-io-all", "verdict"] != claims.NOT_MEASURED  # the io cell answers the IO-bound claim


def test_synthetic_paper_reports_the_known_line_cost(synthetic_build):
    root, processed, pdf = synthetic_build
    coefs = pd.read_csv(processed / "findings_regression.csv")
    flat = squash(pdf_text(pdf))
    assert set(coefs["env_id"]) == {"synthetic"} and coefs.groupby("fit")["engine"].nunique().eq(1).all()
    for engine, truth in (("postgresql", 6.0), ("mariadb", 9.0)):
        line = coefs[(coefs["engine"] == engine) & (coefs["model"] == "main")
                     & (coefs["term"] == "lines_file")].iloc[0]
        assert line["ci_low"] <= truth <= line["ci_high"], engine
        assert squash(f"{claims.fmt(line['estimate'])} (95 % CI {claims.fmt(line['ci_low'])} to "
                      f"{claims.fmt(line['ci_high'])}) µs") in flat


def test_aa_rows_are_the_resolution_not_a_configuration(tmp_path):
    """An A/A row (<baseline>_again) is printed as the study's resolution, never as its cheapest configuration,
    and never enters the regression."""
    runs = regression.synthetic_runs(study="pg_destinations", configurations={**CONFIGS, "none_again": (0, 0)},
                                     clients=(1, 4), repeats=3, line_cost_us=6.0, noise_cv=0.02, seed=5)
    runs = runs.assign(query_mode="prepared", backend="local")
    processed = tmp_path / "processed"
    processed.mkdir()
    runs.to_csv(processed / "pg_destinations_runs.csv", index=False, float_format="%.6g")
    stats.summarise(runs, by=["configuration", "clients"], baseline="none").to_csv(
        processed / "pg_destinations.csv", index=False, float_format="%.6g")
    tables, figures = report.compute_findings(processed)
    assert "none_again" not in set(report.regression_findings(report.load_studies(processed)[0]).prepared[
        "configuration"])
    report.write_findings(tables, figures, output_dir=processed, figures_dir=tmp_path / "figures")
    report.build(processed, tmp_path / "figures", tmp_path / "build")
    doc = json.loads((tmp_path / "build" / "generated" / "numbers.json").read_text())
    entry = doc["studies"][0]
    assert [r["configuration"] for r in entry["resolution"]] == ["none_again", "none_again"]
    for c in entry["cheapest"]:
        assert doc["numbers"][c["key"] + ".best.configuration"]["text"] != "none_again"
    assert squash("the A/A control none_again has a ratio of") in squash(pdf_text(tmp_path / "build" / "logbench.pdf"))


def test_instrument_findings_are_printed_when_present(tmp_path, synthetic_build):
    root, processed, _ = synthetic_build
    copy = tmp_path / "processed"
    shutil.copytree(processed, copy)
    pd.DataFrame({"item": ["aa"], "statement": ["The A/A ratio is 0.998 [0.981, 1.015] (synthetic)."]}).to_csv(
        copy / report.INSTRUMENT_FINDINGS, index=False)
    pdf = report.build(copy, root / "figures", tmp_path / "build")
    assert squash("The A/A ratio is 0.998 [0.981, 1.015] (synthetic).") in squash(pdf_text(pdf))


def test_a_studys_own_findings_are_printed_in_its_section_and_it_stays_out_of_the_regression(tmp_path,
                                                                                             synthetic_build):
    root, processed, _ = synthetic_build
    copy = tmp_path / "processed"
    shutil.copytree(processed, copy)
    runs = pd.read_csv(processed / "pg_destinations_runs.csv").assign(study="pg_wal_level")
    runs.to_csv(copy / "pg_wal_level_runs.csv", index=False)
    pd.DataFrame({"item": ["x"], "statement": ["WAL bytes of the import, replica/minimal: 41.2 (synthetic)."]}).to_csv(
        copy / report.STUDY_FINDINGS.format(name="pg_wal_level"), index=False)
    studies = report.load_studies(copy)[0]
    assert "pg_wal_level" not in set(report.regression_findings(studies).prepared["study"])
    pdf = report.build(copy, root / "figures", tmp_path / "build")
    assert squash("WAL bytes of the import, replica/minimal: 41.2 (synthetic).") in squash(pdf_text(pdf))


def test_a_studys_own_findings_are_printed_under_its_section(tmp_path, synthetic_build):
    root, processed, _ = synthetic_build
    copy = tmp_path / "processed"
    shutil.copytree(processed, copy)
    pd.DataFrame({"item": ["pipe_2"], "statement": ["The pipe pair at 2 clients: 0.912 [0.9, 0.93] (synthetic)."]}
                 ).to_csv(copy / report.STUDY_FINDINGS.format(name="pg_destinations"), index=False)
    pdf = report.build(copy, root / "figures", tmp_path / "build")
    text = squash(pdf_text(pdf))
    section = text.index(squash("Study: PostgreSQL log destinations"))
    assert text.index(squash("The pipe pair at 2 clients: 0.912 [0.9, 0.93] (synthetic).")) > section


def test_rebuild_is_byte_identical(synthetic_build):
    root, processed, pdf = synthetic_build
    again = report.build(processed, root / "figures", root / "build2")
    assert again.read_bytes() == pdf.read_bytes()


def test_figures_are_byte_stable(synthetic_build, tmp_path):
    """Figures are the same file when redrawn from the same data."""
    root, processed, _ = synthetic_build
    studies, _ = report.load_studies(processed)
    figs = {**report.study_figures(studies), **report.regression_findings(studies).figures}
    for name, fig in figs.items():
        report.plots.save(fig, tmp_path / f"{name}.png")
        assert (tmp_path / f"{name}.png").read_bytes() == (root / "figures" / f"{name}.png").read_bytes(), name


def test_build_never_writes_into_the_paper_directory(synthetic_build):
    generated = paths.PAPER / "generated" / "numbers.json"
    if generated.exists():
        doc = json.loads(generated.read_text())
        assert "Synthetic CPU" not in json.dumps(doc)


# --- the real data: the committed PDF is what the processed data builds -------------------------------------


def test_committed_paper_matches_a_rebuild_from_the_processed_data(tmp_path):
    committed = paths.PAPER / report.PDF_NAME
    assert committed.exists(), "paper/logbench.pdf is missing: run `make paper`"
    pdf = report.build(paths.PROCESSED, paths.FIGURES, tmp_path / "build")
    check_build(tmp_path / "build", paths.PROCESSED)
    assert pdf_text(pdf) == pdf_text(committed), (
        "paper/logbench.pdf differs from a rebuild from data/processed: run `make findings` (if the studies' data "
        "changed) and `make paper`, then commit the PDF")


def test_the_designs_comparison_is_read_from_notebook_00s_tables(tmp_path):
    """The method section's design paragraph says what notebook 00's intervals say, and nothing without them."""
    import pandas as pd

    gen = tmp_path / "gen"
    gen.mkdir()
    doc = {"tables": []}
    report.designs_section(doc, tmp_path, gen)
    assert doc["designs_table"] == "" and doc["designs_verdict"] == ""
    pd.DataFrame({"clients": [1, 4], "switchback sessions": [6, 6], "blocks sessions": [6, 6],
                  "blocks / switchback": [3.5, 0.9], "ci_low": [1.2, 0.3], "ci_high": [9.0, 2.0]}).to_csv(
        tmp_path / "instrument_designs_efficiency.csv", index=False)
    pd.DataFrame({"clients": [1, 4], "arm": ["stderr", "stderr"], "switchback / blocks": [1.0, 0.9],
                  "diff ci_low": [0.95, 0.85], "diff ci_high": [1.05, 0.95]}).to_csv(
        tmp_path / "instrument_designs_bias.csv", index=False)
    report.designs_section(doc, tmp_path, gen)
    assert doc["designs_verdict"] == ("Switching was more efficient with confidence at 1 client(s); switching moved "
                                      "the logging arm's ratio at 4 client(s).")
    eff = pd.read_csv(tmp_path / "instrument_designs_efficiency.csv").assign(ci_low=[0.5, 0.1], ci_high=[2.0, 0.8])
    eff.to_csv(tmp_path / "instrument_designs_efficiency.csv", index=False)
    report.designs_section(doc, tmp_path, gen)
    assert doc["designs_verdict"].startswith("The block design was more efficient with confidence at 4 client(s); ")
    table = pd.read_csv(gen / "designs.csv")
    assert list(table["its ratio, switchback / blocks"]) == ["1.00 [0.950, 1.05]", "0.900 [0.850, 0.950]"]


def test_the_abstract_answers_in_shares_of_throughput_and_typical_lines(synthetic_build):
    """The abstract opens with the answer (issue 22 part 4): per destination the share of throughput kept at each
    number of clients per core, read from the model of its study and level (issue 40; the findings' model table
    of the same build), and the typical line's cost from the
    regression of that study's environment (printed with the regression since issue 42: an orientation, not the
    guide's cost); the machine named by what it is, not by its hash."""
    root, processed, pdf = synthetic_build
    doc = json.loads((root / "build" / "generated" / "numbers.json").read_text())
    [pg] = doc["headline"]  # the synthetic MariaDB data has no resolution table, which its headline reads
    assert pg["machine"] == "PostgreSQL, 2 vCPUs Synthetic CPU"  # its environment record names no version
    assert [a["label"] for a in pg["arms"]] == ["to a file", "to the local syslog"]
    assert [lv["per_core"] for lv in pg["arms"][0]["levels"]] == ["0.5", "1", "2"]
    models = pd.read_csv(processed / "findings_models.csv")
    model = models[(models["study"] == "pg_destinations") & (models["profile"] == "standard")]
    model = model.set_index(["arm", "clients"])
    nums = doc["numbers"]
    assert pg["intervals"] == "model"
    for cfg in ("stderr", "syslog"):
        for k in (1, 2, 4):
            key = f"headline.pg_destinations.{cfg}.at{k}"
            assert nums[key + ".estimate"]["text"] == claims.fmt(100 * model.loc[(cfg, k), "ratio"], 2)
            assert nums[key + ".ci_low"]["text"] == claims.fmt(100 * model.loc[(cfg, k), "ci_low"], 2)
    coefs = pd.read_csv(processed / "findings_regression.csv")
    typical = coefs[(coefs["fit"] == "postgresql@synthetic") & (coefs["term"] == "typical_file")
                    & (coefs["model"] == "main")].iloc[0]
    assert [t["label"] for t in pg["typical"]] == ["a file", "the local syslog"]
    assert nums["headline.pg_destinations.typical.file.estimate"]["text"] == claims.fmt(typical["estimate"])
    abstract = squash(pdf_text(pdf)).split(squash("The answer: what logging will cost your server"))[0]
    assert "keeps" in abstract and "environment synthetic" not in abstract
    assert squash(f"{claims.fmt(100 * model.loc[('stderr', 1), 'ratio'], 2)} % (") in abstract
    assert squash("CIs from one model per study and level") in abstract


def test_the_posts_points_sit_at_their_clients_per_core(synthetic_build):
    """Figure 1's open diamonds (issue 22): post 000's 1 / 4 / 8 clients on 4 cores are 1 / 2 / 4 clients on this
    2-core machine, as the claims map them, not 1 / 4 / 8 beside ours."""
    import matplotlib.pyplot as plt

    root, processed, _ = synthetic_build
    studies, _ = report.load_studies(processed)
    pg = studies["pg_destinations"]
    runs = pg.runs[pg.runs["clients"].isin([1, 4])]
    one = dataclasses.replace(pg, runs=runs, summary=pg.summary[pg.summary["clients"].isin([1, 4])])
    fig = report.study_figures({"pg_destinations": one})["study_pg_destinations"]
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "4"]  # 2: the post's 4 on 4 cores only
    diamonds = [c for c in ax.collections if c.get_offsets().shape[0] and c.get_facecolor().size == 0]
    xs = sorted({round(float(x)) for c in diamonds for x, y in c.get_offsets() if np.isfinite(y)})
    assert xs == [0, 1, 2]  # positions of 1, 2 and 4 clients
    plt.close(fig)
    assert claims.clients_here(1, 4, 2) == 1 and claims.clients_here(8, 4, 2) == 4 and claims.clients_here(32, 8, 2) == 8


def test_the_abstract_leaves_out_a_level_whose_aa_control_excludes_1():
    """An anomaly is never the answer: a clients level whose A/A control excludes 1 is left out of the abstract's
    shares (and named there with its A/A), the others stay."""
    from logbench.analyze import headline

    summary = pd.DataFrame({"configuration": ["off_again"] * 3, "clients": [1, 10, 50],
                            "ratio": [1.01, 1.238, 1.02], "ratio_ci_low": [0.99, 1.023, 0.94],
                            "ratio_ci_high": [1.03, 1.499, 1.10]})
    assert headline.aa_excludes_1(summary, "off_again") == [10]
    assert headline.aa_excludes_1(summary.assign(ratio_ci_high=[1.03, 0.98, 1.1]), "off_again") == [10]
    assert headline.aa_excludes_1(summary.drop(columns=["ratio_ci_low", "ratio_ci_high"]), "off_again") == []


def _abstract_tables(d: Path, model_rows: list[tuple]) -> None:
    """Study 02's summary (per-cell intervals, 3 runs a cell) and a model table for its committed run (clients, arm,
    ratio, ci_low, ci_high) in ``d``; the model table's cell_* copy the summary's, as the findings step writes it."""
    cell = {("none_again", 1): (1.02, 0.90, 1.15), ("stderr", 1): (0.63, 0.54, 0.73),
            ("none_again", 8): (0.946, 0.582, 1.54), ("stderr", 8): (0.59, 0.58, 0.60),  # wide A/A, narrow cell
            ("none_again", 4): (1.05, 0.95, 1.16), ("stderr", 4): (0.34, 0.21, 0.55)}
    rows = [{"configuration": "none", "clients": k, "n": 3, "ratio": 1.0} for k in (1, 4, 8)]
    rows += [{"configuration": c, "clients": k, "n": 3, "ratio": r, "ratio_ci_low": lo, "ratio_ci_high": hi}
             for (c, k), (r, lo, hi) in cell.items()]
    d.mkdir()
    pd.DataFrame(rows).to_csv(d / "pg_destinations.csv", index=False)
    (d / "pg_destinations_environment.json").write_text(json.dumps({"cpu_count": 2}))
    pd.DataFrame([{"study": "pg_destinations", "profile": "standard", "design": "blocks", "level": f"clients={k}",
                   "clients": k, "arm": arm, "baseline": "none", "ratio": r, "ci_low": lo, "ci_high": hi,
                   "cell_ratio": cell[(arm, k)][0], "cell_low": cell[(arm, k)][1], "cell_high": cell[(arm, k)][2]}
                  for k, arm, r, lo, hi in model_rows]).to_csv(d / "findings_models.csv", index=False)


def test_the_abstract_takes_the_models_interval_and_reads_it_against_the_models_aa(tmp_path):
    """Issue 40 in the abstract: a share and its interval come from the model of its study and level, and whether
    it is an effect is read against that model's A/A (a 41 % drop is not 'within the A/A spread' because one cell's
    A/A of 3 runs came out wide); a level the model lacks falls back to the summary's cells, and the entry says so;
    a model A/A excluding 1 leaves its level out as the summary's would; a model table of other data is refused."""
    from logbench.analyze import headline
    from logbench import studies as registry

    spec = registry.spec("pg_destinations")
    model = [(1, "none_again", 1.018, 0.923, 1.122), (1, "stderr", 0.633, 0.562, 0.713),
             (8, "none_again", 0.930, 0.816, 1.060), (8, "stderr", 0.554, 0.465, 0.661)]  # no level 4
    d = tmp_path / "a"
    _abstract_tables(d, model)
    # the summary alone reads 8 clients' 59 % (58-60) as within its A/A's spread
    alone = stats.effects(pd.read_csv(d / "pg_destinations.csv"), "none", keys=["clients"])
    assert alone.set_index(["configuration", "clients"]).loc[("stderr", 8), "effect"] == stats.WITHIN_AA
    doc, nums = {}, report.Numbers(d)
    headline.add(doc, nums, [spec], d)
    [pg] = doc["headline"]
    [to_file] = [a for a in pg["arms"] if a["label"] == "to a file"]
    assert [(lv["clients"], lv["intervals"], lv["note"]) for lv in to_file["levels"]] == [
        (1, "model", ""), (4, "cell", ""), (8, "model", "")]  # the model's A/A at 8: 0.554 is an effect
    assert pg["intervals"] == headline.MIXED and pg["cell_levels"] == ["2"]
    assert [nums.get(f"headline.pg_destinations.stderr.at8.{c}") for c in ("estimate", "ci_low", "ci_high")] == [
        "55", "46", "66"]
    assert [nums.get(f"headline.pg_destinations.stderr.at4.{c}") for c in ("estimate", "ci_low", "ci_high")] == [
        "34", "21", "55"]  # from the summary
    spec8 = nums.items["headline.pg_destinations.stderr.at8.ci_low"]["spec"]["of"]
    assert spec8 == {"kind": "cell", "source": "findings_models.csv", "column": "ci_low",
                     "where": {"study": "pg_destinations", "profile": "standard", "design": "blocks",
                               "level": "clients=8", "arm": "stderr"}}
    assert report.resolve(spec8, nums._load) == pytest.approx(0.465)

    # the model's A/A at 8 clients excludes 1: that level is left out, its A/A printed from the model
    d = tmp_path / "b"
    _abstract_tables(d, model[:2] + [(8, "none_again", 1.20, 1.05, 1.37), model[3],
                                     (4, "none_again", 1.0, 0.9, 1.1), (4, "stderr", 0.35, 0.3, 0.4)])
    doc, nums = {}, report.Numbers(d)
    headline.add(doc, nums, [spec], d)
    [pg] = doc["headline"]
    assert pg["intervals"] == headline.MODEL and pg["unresolved"] == [
        {"key": "headline.pg_destinations.aa.at8", "per_core": "4", "intervals": "model"}]
    assert nums.get("headline.pg_destinations.aa.at8.ci_low") == "1.05"
    assert [lv["clients"] for lv in pg["arms"][0]["levels"]] == [1, 4]

    # a model table whose copy of the cells is not the summary's was built from other data
    table = pd.read_csv(d / "findings_models.csv")
    table.loc[0, "cell_high"] += 0.01
    table.to_csv(d / "findings_models.csv", index=False)
    with pytest.raises(ValueError, match="make findings"):
        headline.add({}, report.Numbers(d), [spec], d)


def test_the_abstract_prints_an_aa_end_just_past_1_as_past_it(tmp_path):
    """Study 04's resolution run: a model A/A of 1.069 [1.0007, 1.142] leaves its level out of the abstract, where
    '1.00 to 1.14' would read as an interval that holds 1; its end gets the digits that show it does not."""
    from logbench.analyze import headline
    from logbench import studies as registry

    d = tmp_path / "a"
    _abstract_tables(d, [(1, "none_again", 1.018, 0.923, 1.122), (1, "stderr", 0.633, 0.562, 0.713),
                         (8, "none_again", 1.069, 1.0007, 1.142), (8, "stderr", 0.554, 0.465, 0.661),
                         (4, "none_again", 0.98, 0.96, 0.9997), (4, "stderr", 0.35, 0.3, 0.4)])
    doc, nums = {}, report.Numbers(d)
    headline.add(doc, nums, [registry.spec("pg_destinations")], d)
    [pg] = doc["headline"]
    assert [u["key"] for u in pg["unresolved"]] == [f"headline.pg_destinations.aa.at{k}" for k in (4, 8)]
    assert [nums.get(f"headline.pg_destinations.aa.at8.{c}") for c in ("estimate", "ci_low", "ci_high")] == [
        "1.07", "1.001", "1.14"]
    assert nums.get("headline.pg_destinations.aa.at4.ci_high") == "0.9997"
    for key in ("headline.pg_destinations.aa.at8.ci_low", "headline.pg_destinations.aa.at4.ci_high"):
        spec = nums.items[key]["spec"]
        assert report.render(report.resolve(spec, nums._load), spec) == nums.get(key)  # as the build re-checks it


def test_the_abstract_gives_each_hosts_answer_apart(synthetic_build, tmp_path):
    """Several hosts' runs gathered side by side (the workflow across hosts): one answer per environment, never a
    row of one host read as the other's or the two pooled."""
    from logbench.analyze import headline
    from logbench import studies as registry

    _, processed, _ = synthetic_build
    out = tmp_path / "processed"
    shutil.copytree(processed, out)
    for name in ("pg_destinations.csv", "pg_destinations_runs.csv"):
        one = pd.read_csv(processed / name)
        two = pd.concat([one.assign(host="a", env_id="env-a"),
                         one.assign(host="b", env_id="env-b", **({"ratio": one["ratio"] * 0.5} if "ratio" in one
                                                                  else {}))], ignore_index=True)
        two.to_csv(out / name, index=False)
    doc, nums = {}, report.Numbers(out)
    headline.add(doc, nums, registry.specs(), out)
    pg = [e for e in doc["headline"] if e["stem"] == "pg_destinations"]
    assert [e["machine"].split("(host ")[1] for e in pg] == ["a)", "b)"]
    a, b = (nums.get(f"headline.pg_destinations.{h}.env-{h}.stderr.at1.estimate") for h in ("a", "b"))
    assert float(b) == pytest.approx(float(a) / 2, rel=0.05)


def test_the_discussion_tells_a_logger_limit_from_the_cores_limit(tmp_path):
    """Study 02's lines per second by clients per core: a destination whose rate stops growing between the two
    highest levels is 'flat'; whether that says one process was the limit depends on the baseline's throughput
    between the same levels (flat too: the cores were, and the text says the two cannot be told apart)."""
    from logbench.analyze import discussion

    def row(cfg, clients, lines, tps, half):
        return {"configuration": cfg, "clients": clients, "tps_mean": tps, "tps_ci_low": tps - half,
                "tps_ci_high": tps + half, "log_lines_per_s_mean": lines, "log_lines_per_s_ci_low": lines - half,
                "log_lines_per_s_ci_high": lines + half}

    def doc_for(base_tps):
        rows = [row("none", c, 0, t, 1000) for c, t in zip((1, 4, 8), base_tps)]
        rows += [row("none_again", c, 0, t, 1000) for c, t in zip((1, 4, 8), base_tps)]
        rows += [row("stderr", 1, 50_000, 40_000, 3000), row("stderr", 4, 70_000, 50_000, 3000),
                 row("stderr", 8, 71_000, 50_000, 3000),  # flat between 4 and 8
                 row("syslog", 1, 20_000, 20_000, 1000), row("syslog", 4, 30_000, 30_000, 1000),
                 row("syslog", 8, 40_000, 40_000, 1000)]  # still growing
        d = tmp_path / str(base_tps[-1])
        d.mkdir()
        pd.DataFrame(rows).to_csv(d / "pg_destinations.csv", index=False)
        (d / "pg_destinations_environment.json").write_text(json.dumps({"cpu_count": 2}))
        doc, nums = {}, report.Numbers(d)
        discussion.add(doc, nums, d)
        return doc["discussion"], nums

    flat, nums = doc_for((40_000, 70_000, 70_500))
    assert flat["flat"] == ["stderr"] and flat["grew"] == ["syslog"] and not flat["baseline_grew"]
    assert [lv["per_core"] for lv in flat["levels"]] == ["0.5", "2", "4"] and flat["upper"] == ["2", "4"]
    assert nums.get("discussion.stderr.at4.estimate") == "70.0" and nums.get("discussion.none.at8.ci_high") == "71.5"
    grew, _ = doc_for((40_000, 60_000, 90_000))
    assert grew["baseline_grew"]
    # the logging collector's CPU where the runs recorded it, as a share of one core, for its destinations only
    d = tmp_path / "collector"
    d.mkdir()
    table = pd.read_csv(tmp_path / "70500" / "pg_destinations.csv")
    table["collector_cpu_s_mean"], table["collector_cpu_s_ci_low"], table["collector_cpu_s_ci_high"] = 2.0, 1.6, 2.4
    table.to_csv(d / "pg_destinations.csv", index=False)
    pd.DataFrame({"duration_s": [4, 4]}).to_csv(d / "pg_destinations_runs.csv", index=False)
    (d / "pg_destinations_environment.json").write_text(json.dumps({"cpu_count": 2}))
    doc, nums = {}, report.Numbers(d)
    discussion.add(doc, nums, d)
    assert [r["configuration"] for r in doc["discussion"]["collector"]] == ["stderr"]  # syslog's lines skip it
    assert nums.get("discussion.stderr.collector.estimate") == "50" and not doc["discussion"]["collector_whole"]
    # without the study's files: no section, and no error
    empty = tmp_path / "empty"
    empty.mkdir()
    doc = {}
    discussion.add(doc, report.Numbers(empty), empty)
    assert doc["discussion"] is None


def test_the_designs_comparison_names_each_placement_it_ran(tmp_path):
    """Notebook 00's designs part with placement as a factor: the paper's table and verdict per placement."""
    import pandas as pd

    gen = tmp_path / "gen"
    gen.mkdir()
    doc = {"tables": []}
    pd.DataFrame({"placement": ["none", "split"], "clients": [4, 4], "switchback sessions": [6, 6],
                  "blocks sessions": [6, 6], "blocks / switchback": [0.2, 5.0], "ci_low": [0.05, 1.5],
                  "ci_high": [0.8, 20.0]}).to_csv(tmp_path / "instrument_designs_efficiency.csv", index=False)
    pd.DataFrame({"placement": ["none", "split"], "clients": [4, 4], "arm": ["stderr", "stderr"],
                  "switchback / blocks": [1.1, 1.0], "diff ci_low": [1.02, 0.97],
                  "diff ci_high": [1.2, 1.03]}).to_csv(tmp_path / "instrument_designs_bias.csv", index=False)
    report.designs_section(doc, tmp_path, gen)
    assert doc["designs_verdict"] == (
        "With the scheduler's placement: the block design was more efficient with confidence at 4 client(s); "
        "switching moved the logging arm's ratio at 4 client(s); with the server and pgbench on separate CPUs: "
        "switching was more efficient with confidence at 4 client(s); switching did not move the logging arm's "
        "ratio at any level.")
    table = pd.read_csv(gen / "designs.csv")
    assert list(table["placement"]) == ["with the scheduler's placement", "with the server and pgbench on separate CPUs"]


def test_a_ratio_inside_its_levels_aa_spread_is_not_printed_as_an_effect(tmp_path):
    """Issue 22: the study table says per ratio whether it reads as an effect (stats.effect_reading) and the A/A
    row gives its band; the text's highest and lowest ratios say 'within the A/A spread' where their intervals
    alone would read as an effect."""
    from logbench.publish.paper import per_study

    nan = math.nan
    summary = pd.DataFrame({
        "configuration": ["none", "none", "a", "a", "b", "none_again"], "clients": [1, 2, 1, 2, 1, 1], "n": 3,
        "ratio": [1.0, 1.0, 0.85, 0.85, 0.7, 1.05], "ratio_ci_low": [nan, nan, 0.80, 0.80, 0.6, 0.95],
        "ratio_ci_high": [nan, nan, 0.90, 0.90, 0.8, 1.2]})
    # the A/A at 1 client reaches ln 1.2 = 0.1823 from 1: ratios in exp(-+0.1823) = 0.833 to 1.20 are not read;
    # a's |ln 0.85| = 0.1625 lies within it, b's |ln 0.7| = 0.3567 beyond; at 2 clients there is no A/A
    table = report.study_table(summary, "none")
    assert list(table["an effect? (CI and A/A)"]) == [
        "—", "—", "no: within the A/A spread", "no: no A/A at this level", "yes", "A/A spread 0.833–1.20"]
    assert "an effect? (CI and A/A)" not in report.study_table(summary).columns  # no baseline named, no reading
    summary.to_csv(tmp_path / "s.csv", index=False)
    study = claims.StudyData(name="s", engine="postgresql", baseline="none", runs=pd.DataFrame(), summary=summary)
    at1, at2 = per_study.cheapest(report.Numbers(tmp_path), study)
    assert (at1["best_note"], at1["worst_note"]) == ("within the A/A spread", "")
    assert at2["best_note"] == at2["worst_note"] == "no A/A at this level" and not at1["above_one"]


def test_a_version_difference_is_read_only_where_the_aa_difference_contains_1(tmp_path):
    """The paper's version section (issue 23): a later version's ratio over the oldest's whose interval is off 1
    is named, unless the A/A control's own difference at that level and pair of versions is off 1 too."""
    from logbench.publish.paper import versions

    def row(cfg, clients, v, est, low, high):
        return {"configuration": cfg, "clients": clients, "variant": v, "against": "pg13",
                "ratio_of_ratios": est, "ci_low": low, "ci_high": high, "n": 4}

    between = pd.DataFrame([row("stderr", 1, "pg17", 0.8, 0.7, 0.9), row("none_again", 1, "pg17", 1.0, 0.9, 1.1),
                            row("stderr", 4, "pg17", 0.8, 0.7, 0.9), row("none_again", 4, "pg17", 1.3, 1.1, 1.5),
                            row("csvlog", 1, "pg17", 1.0, 0.8, 1.2)])
    shown, bad = versions.differences(between)
    assert [(r.configuration, r.clients) for r in shown.itertuples()] == [("stderr", 1)]
    assert [(r.configuration, r.clients) for r in bad.itertuples()] == [("none_again", 4)]

    summary = pd.DataFrame([
        {"variant": v, "configuration": c, "clients": 1, "n": 4, "ratio": r, "ratio_ci_low": lo, "ratio_ci_high": hi}
        for v in ("pg13", "pg17") for c, r, lo, hi in (("none", 1.0, np.nan, np.nan), ("stderr", 0.6, 0.5, 0.7),
                                                        ("none_again", 1.0, 0.9, 1.1))])
    summary.to_csv(tmp_path / "pg_destinations_versions.csv", index=False)
    between.to_csv(tmp_path / "pg_destinations_versions_between_versions.csv", index=False)
    doc = {"tables": []}
    versions.versions_section(doc, tmp_path, tmp_path / "gen")
    (entry,) = doc["versions"]
    assert entry["versions"] == "pg13, pg17"
    assert "stderr at 1 client(s), pg17 / pg13 0.800 [0.700, 0.900]" in entry["reading"]
    assert "A/A control itself differs between versions at none_again at 4 client(s)" in entry["reading"]
    ratios = pd.read_csv(tmp_path / "gen" / "versions_pg_destinations_versions.csv")
    assert list(ratios.columns) == ["configuration", "clients", "pg13", "pg17"]
    assert "none" not in set(ratios["configuration"])
    assert len(doc["versions_pending"]) == len(versions.SWEEPS) - 1
