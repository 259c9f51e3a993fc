"""The published reference numbers: schema, vocabularies, arithmetic, and spot checks against the seeds.

Fast (well under a second of work); reads data/raw/reference and, when present, ../shared/seeds.
Never writes anything.
"""

from __future__ import annotations

import hashlib
import math
import re

import pandas as pd
import pytest

from logbench.base import paths
from logbench.analyze import reference as ref

SEEDS_PRESENT = paths.SEEDS.is_dir() and any(paths.SEEDS.glob("0*.txt"))
needs_seeds = pytest.mark.skipif(
    not SEEDS_PRESENT,
    reason=f"seed texts not found at {paths.SEEDS} (the ../shared/seeds folder next to the repository); "
           "spot checks against the published text need them",
)


@pytest.fixture(scope="module")
def values() -> pd.DataFrame:
    return ref.load_values()


@pytest.fixture(scope="module")
def seed_lines() -> dict[str, list[str]]:
    return {p: (paths.SEEDS / p).read_text(encoding="utf-8").split("\n") for p in ref.load_posts()["post"]}


# --------------------------------------------------------------------------------------------
# schema


def test_values_columns_and_types(values):
    assert tuple(values.columns) == ref.VALUE_COLUMNS
    for col in ("post", "engine", "experiment", "configuration_key", "metric", "unit", "kind", "flag"):
        assert isinstance(values[col].dtype, pd.CategoricalDtype), col
    for col in ("year", "clients", "line"):
        assert values[col].dtype == "Int64", col
    for col in ("value", "resolution", "error"):
        assert values[col].dtype == "float64", col
    for col in ("id", "author", "value_text", "note", "formula", "settings", "location"):
        assert pd.api.types.is_string_dtype(values[col].dtype), col


def test_required_fields_present(values):
    for col in ref.REQUIRED_VALUE_COLUMNS:
        col_values = values[col]
        assert col_values.notna().all(), col
        if pd.api.types.is_string_dtype(col_values.dtype) or isinstance(col_values.dtype, pd.CategoricalDtype):
            assert (col_values.astype(str).str.strip() != "").all(), col


def test_units_kinds_flags_metrics_from_closed_lists(values):
    assert set(values["unit"]) <= set(ref.UNITS)
    assert set(values["kind"]) <= set(ref.KINDS)
    assert set(values["flag"]) <= set(ref.FLAGS)
    assert set(values["metric"]) <= set(ref.METRICS)
    for metric, unit in zip(values["metric"], values["unit"]):
        assert unit in ref.METRICS[metric][0], (metric, unit)


def test_ids_unique_and_numbered_per_post(values):
    assert values["id"].is_unique
    for post, group in values.groupby("post", observed=True):
        assert list(group["id"]) == [f"{post[:3]}-{i:03d}" for i in range(1, len(group) + 1)]


def test_every_row_names_a_post_of_the_posts_table(values):
    posts = ref.load_posts()
    assert set(values["post"]) == set(posts["post"])
    assert all(re.fullmatch(r"\d{3}_[0-9a-f]{16}\.txt", p) for p in posts["post"])
    assert list(posts["post_id"]) == [p[:3] for p in posts["post"]]


@needs_seeds
def test_every_post_is_an_existing_unchanged_seed_file():
    posts = ref.load_posts()
    on_disk = sorted(p.name for p in paths.SEEDS.glob("0*.txt"))
    assert sorted(posts["post"]) == on_disk
    for name, digest in zip(posts["post"], posts["seed_sha256"]):
        assert hashlib.sha256((paths.SEEDS / name).read_bytes()).hexdigest() == digest, (
            f"{name} changed since it was transcribed; line numbers may no longer hold")


def test_posts_table_has_methodology_and_date_basis():
    posts = ref.load_posts()
    assert len(posts) == 5
    assert set(posts["year_basis"]) <= {"stated", "inferred", "not stated"}
    for row in posts.itertuples():
        assert row.runs_per_cell and row.reported_value and row.hardware and row.title
        # a year is either stated, inferred with the evidence named, or absent with a reason
        if row.year_basis == "not stated":
            assert pd.isna(row.year) and row.date_note
        elif row.year_basis == "inferred":
            assert not pd.isna(row.year) and "inferred" in row.date_note
        else:
            assert not pd.isna(row.year) and str(row.year) in row.date_text
    assert posts.set_index("post_id").loc["000", "reported_value"].startswith("best of 3")


def test_rows_agree_with_posts_experiments_and_configurations(values):
    posts = ref.load_posts().set_index("post")
    exps = ref.load_experiments().set_index("experiment")
    cfgs = ref.load_configurations().set_index(["post", "configuration_key"])
    for row in values.itertuples():
        assert pd.isna(row.year) if pd.isna(posts.loc[row.post, "year"]) else row.year == posts.loc[row.post, "year"]
        assert row.engine == posts.loc[row.post, "engine"]
        assert row.experiment.startswith(row.post[:3] + "/")
        e = exps.loc[row.experiment]
        assert e["post"] == row.post
        assert (row.tool, row.mode, row.scale, row.duration, row.repeats) == (
            e["tool"], e["mode"], e["scale"], e["duration"], e["repeats"]), row.id
        assert cfgs.loc[(row.post, row.configuration_key), "settings"] == row.settings, row.id


def test_each_baseline_key_is_a_configuration_of_its_post():
    cfgs = set(zip(ref.load_configurations()["post"], ref.load_configurations()["configuration_key"]))
    for e in ref.load_experiments().itertuples():
        if e.baseline_configuration_key:
            assert (e.post, e.baseline_configuration_key) in cfgs, e.experiment


def test_post_000_uses_the_study_keys():
    keys = set(ref.load_values("000")["configuration_key"].astype(str))
    assert {"none", "stderr", "csvlog", "syslog", "remote_syslog_udp"} <= keys


# --------------------------------------------------------------------------------------------
# reading of numbers


def test_plain_value_text_reads_as_value_unless_a_separator_is_noted(values):
    for row in values.itertuples():
        if re.fullmatch(r"-?\d+(\.\d+)?", row.value_text):
            if float(row.value_text) != row.value:
                assert "thousands separator" in row.note, (row.id, row.value_text, row.value)
            else:
                assert row.resolution == ref.resolution_of(row.value_text), row.id


def test_errors_only_with_their_text(values):
    has_error = values["error"].notna()
    assert (values.loc[has_error, "error_text"] != "").all()
    assert (values.loc[~has_error, "error_text"] == "").all()
    for row in values[has_error].itertuples():
        assert float(row.error_text) == row.error


# --------------------------------------------------------------------------------------------
# arithmetic


def test_derived_and_restated_rows_have_formulas(values):
    need = values[values["kind"].isin(["derived", "restated"]) & (values["flag"] != "unverifiable")]
    assert (need["formula"] != "").all(), need.loc[need["formula"] == "", "id"].tolist()
    unverifiable = values[values["flag"] == "unverifiable"]
    assert (unverifiable["formula"] == "").all()


def test_formulas_refer_to_rows_of_the_same_post(values):
    for row in values[values["formula"] != ""].itertuples():
        refs = re.findall(r"\{(\d{3}-\d{3})\}", row.formula)
        assert refs, row.id
        assert all(r[:3] == row.id[:3] and r != row.id for r in refs), row.id


def test_recomputed_values_agree_within_published_rounding_unless_flagged():
    table = ref.recompute()
    assert len(table) > 40
    bad = table[~table["agrees"] & ~table["flag"].isin(ref.MISMATCH_FLAGS)]
    assert bad.empty, bad[["id", "value_text", "recomputed", "flag"]].to_string()


def test_mismatch_flags_are_not_stale():
    table = ref.recompute()
    flagged = table[table["flag"].isin(ref.MISMATCH_FLAGS)]
    assert not flagged.empty
    assert not flagged["agrees"].any(), flagged.loc[flagged["agrees"], "id"].tolist()


def test_every_flag_has_a_one_line_note(values):
    rows = values[values["flag"] != ""]
    assert len(rows) >= 10
    assert (rows["note"].str.len() > 20).all()
    assert not rows["note"].str.contains("\n").any()


def test_evaluate_is_restricted():
    assert ref.evaluate("100*(1-{000-034}/{000-033})", {"000-034": 9.0, "000-033": 10.0}) == pytest.approx(10.0)
    with pytest.raises(ref.ReferenceDataError):
        ref.evaluate("__import__('os')", {})
    with pytest.raises(ref.ReferenceDataError):
        ref.evaluate("{999-001}", {})


def test_known_inconsistencies_are_flagged():
    flags = ref.flagged().set_index("id")["flag"].astype(str)
    # 001/002 IO-bound table: ratio headers say no_logging / logging, values are logging / no_logging
    for post in ("001", "002"):
        for n in ("027", "029", "032", "034", "037", "039"):
            assert flags[f"{post}-{n}"] == "label_mismatch"
    # 003 summary tables truncate the pgbench tps
    assert (ref.recompute("003").query("flag == 'truncated'")["difference"] < 0).all()
    assert flags["004-002"] == "unverifiable"


# --------------------------------------------------------------------------------------------
# baselines and ratios


def test_published_ratios_shape_and_baselines():
    table = ref.published_ratios()
    for col in ("post", "experiment", "configuration_key", "clients", "metric", "value", "baseline_value", "ratio"):
        assert col in table.columns
    base = table[table["is_baseline"]]
    assert (base["ratio"] == 1.0).all()
    assert set(base["configuration_key"].astype(str)) == {"none"}
    # every measured throughput of an experiment with a baseline is covered
    exps = ref.load_experiments()
    with_base = set(exps.loc[exps["baseline_configuration_key"] != "", "experiment"])
    got = set(table.loc[table["ratio"].notna(), "experiment"].astype(str))
    assert got == {e for e in with_base if not e.startswith("004/wal")}


def test_published_ratio_values():
    r = ref.published_ratios("001", "cpu_bound").set_index(["configuration_key", "clients"])
    assert r.loc[("slow_log_all", 20), "ratio"] == pytest.approx(22105 / 27612)
    assert r.loc[("slow_log_all", 20), "published_ratio"] == 0.80
    # the post's own ratios equal value / baseline within their rounding, in every table
    all_r = ref.published_ratios().dropna(subset=["published_ratio"])
    assert len(all_r) == 2 * (6 + 6 + 3)  # 001 and 002: CPU-bound, IO-bound, /dev/null tables
    assert ((all_r["ratio"] - all_r["published_ratio"]).abs() <= 0.005 + 1e-12).all()
    io = ref.published_ratios("001", "io_bound").set_index(["configuration_key", "clients"])
    assert io.loc[("slow_log_1s", 1), "ratio_error"] == pytest.approx(
        211 / 225 * math.sqrt((3 / 211) ** 2 + (9 / 225) ** 2))
    r3 = ref.published_ratios("003").set_index(["configuration_key", "clients", "metric"])
    assert math.isnan(r3.loc[("log_statement_all", 112, "throughput"), "ratio"])
    assert r3.loc[("log_statement_all_duration", 56, "throughput"), "ratio"] == pytest.approx(62370.603530 / 208834.342644)
    r4 = ref.published_ratios("004").set_index("configuration_key")
    assert r4.loc["log_statement_all_syslog", "ratio"] == pytest.approx(91325 / 154407)


def test_unknown_names_raise_with_the_allowed_values():
    with pytest.raises(ref.ReferenceDataError, match="allowed: 000, 001"):
        ref.load_values("005")
    with pytest.raises(ref.ReferenceDataError, match="000/io_bound_select"):
        ref.published_ratios("000", "no_such_experiment")
    assert ref.resolve_post("000_d12f15a856ad9e5d") == "000_d12f15a856ad9e5d.txt"
    assert ref.resolve_post(1) == ref.resolve_post("001")  # papermill -p post 001 gives an int
    assert ref.resolve_experiment("io_bound_select", "000") == "000/io_bound_select"


# --------------------------------------------------------------------------------------------
# against the seed text


@needs_seeds
def test_every_value_text_is_on_its_line(values, seed_lines):
    for row in values.itertuples():
        line = seed_lines[row.post][row.line - 1]
        assert row.value_text in line, (row.id, row.value_text, line)
        if row.error_text:
            assert f"± {row.error_text}" in line, row.id


SPOT_CHECKS = [
    # (post, regex in the seed text with one group = the value_text, expected value, unit, clients, configuration_key)
    ("000", r"1 worker: (142\.911064) tps", 142.911064, "tps", 1, "none"),
    ("000", r"8 workers: (172\.701898) tps", 172.701898, "tps", 8, "remote_syslog_udp"),
    ("000", r"total duration of all logged queries was (11,627\.987) seconds", 11627.987, "s", None, "csvlog"),
    ("000", r"^baseline 5836\.255782 0\.165391 (23583\.174056) ", 23583.174056, "tps", 4, "none"),
    ("000", r"^syslog .* (394561)$", 394561, "lines", None, "syslog"),
    ("001", r"^1 (225) ± 9 211 ± 3", 225, "notpm", 1, "none"),
    ("001", r"^20 27612 27720 1\.00 (22105) 0\.80", 22105, "notpm", 20, "slow_log_all"),
    ("002", r"^100\t11609\t(11236)\t0\.97", 11236, "notpm", 100, "slow_log_all_devnull"),
    ("003", r"^tps = (208834\.342644) \(excluding", 208834.342644, "tps", 56, "none"),
    ("003", r"^tps = (98604\.216501) \(including", 98604.216501, "tps", 112, "log_statement_all"),
    ("003", r"^Per loop time including overhead: (42\.38) ns", 42.38, "ns", None, "n/a"),
    ("004", r"average of (154\.407) transactions per second", 154407, "tps", 32, "none"),
    ("004", r"Syslog \(full logging\):\s+(91\.325)", 91325, "tps", 32, "log_statement_all_syslog"),
]


@needs_seeds
@pytest.mark.parametrize("post,pattern,expected,unit,clients,key", SPOT_CHECKS,
                         ids=[f"{s[0]}-{s[2]}" for s in SPOT_CHECKS])
def test_spot_check_against_seed(values, seed_lines, post, pattern, expected, unit, clients, key):
    hits = [(i, m) for i, line in enumerate(seed_lines[ref.resolve_post(post)], start=1)
            if (m := re.search(pattern, line))]
    assert len(hits) == 1, f"pattern {pattern!r} found {len(hits)} times in {post}"
    line_no, match = hits[0]
    rows = values[(values["post"] == ref.resolve_post(post)) & (values["line"] == line_no)
                  & (values["value_text"] == match.group(1)) & (values["unit"] == unit)]
    rows = rows[rows["configuration_key"].astype(str) == key]
    rows = rows[rows["clients"].isna()] if clients is None else rows[rows["clients"] == clients]
    assert len(rows) == 1, rows[["id", "metric", "value_text"]].to_string()
    assert rows["value"].iloc[0] == pytest.approx(expected, rel=1e-12)


@needs_seeds
def test_no_throughput_of_a_pgbench_block_is_missed(values, seed_lines):
    """Every 'tps = ...' line of post 003 is transcribed (both including and excluding connections)."""
    name = ref.resolve_post("003")
    lines = [i for i, l in enumerate(seed_lines[name], start=1) if l.startswith("tps = ")]
    got = set(values.loc[(values["post"] == name) & values["metric"].isin(ref.THROUGHPUT_METRICS), "line"])
    assert len(lines) == 22 and set(lines) <= got


@needs_seeds
def test_every_number_on_the_result_lines_of_000_001_002_is_transcribed(values, seed_lines):
    """On the lines holding results (lists and tables), every number appears in some value_text or error_text."""
    for post in ("000", "001", "002"):
        name = ref.resolve_post(post)
        rows = values[values["post"] == name]
        for line_no, group in rows[rows["kind"] == "measured"].groupby("line"):
            text = seed_lines[name][int(line_no) - 1]
            if group["metric"].astype(str).str.startswith("throughput").any():
                texts = " ".join(rows.loc[rows["line"] == line_no, "value_text"]) + " " + " ".join(
                    rows.loc[rows["line"] == line_no, "error_text"])
                numbers = re.findall(r"\d+(?:[.,]\d+)*", re.sub(r"^\s*(?:•\s*)?\d+ workers?:", "", text))
                leading = re.match(r"^\s*(\d+)[\s\t]", text)  # the clients column of a table
                for n in numbers:
                    if leading and n == leading.group(1):
                        continue
                    assert n in texts.split() or n in texts, (post, line_no, n, text)
