"""The paper's answer first (issue 42): the decision guide's numbers are the processed tables' (the rule worked out on
them, never typed), the syslog daemons' CPU is read per daemon with the remote receiver apart, MariaDB's two designs
stand side by side, and a study whose "tps" counts rows says so."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from logbench.analyze import daemons
from logbench.publish import report
from logbench.publish.paper import cost_model, guide
from logbench.publish.paper.numbers import resolve


def _write(directory, name, rows):
    pd.DataFrame(rows).to_csv(directory / name, index=False)


@pytest.fixture
def processed(tmp_path):
    d = tmp_path / "processed"
    d.mkdir()
    # the cost model's per-destination rule: stderr 3 µs per record fitted, syslog 10; their daemons' ceilings
    rule = []
    for conf, what, us, hold in (("stderr", "PG stderr", 3.0, 250_000.0), ("syslog", "PG syslog", 10.0, 80_000.0)):
        for model, f in (("counted", 0.5), ("fitted", 1.0)):
            rule.append({"engine": "postgresql", "configuration": conf, "what": what,
                         "loader_instructions_per_record": 20_000.0, "collector_instructions_per_record": 600.0,
                         "syslog_instructions_per_record": 0.0, "loader_syscalls_per_record": 1.0,
                         "daemon_syscalls_per_record": 1.0, "model": model, "loader_us_per_record": us * f,
                         "collector_us_per_record": 0.0, "syslog_us_per_record": 0.0, "us_per_record": us * f,
                         "daemon_records_per_s": hold / f,
                         # the fitted model's interval (from its factors'); the counted one has none
                         **({"us_per_record_ci_low": 0.8 * us, "us_per_record_ci_high": 1.2 * us,
                             "daemon_records_per_s_ci_low": hold / 1.25, "daemon_records_per_s_ci_high": hold * 1.25}
                            if model == "fitted" else {})})
    _write(d, guide.RULE, rule)
    _write(d, guide.RECORD_COST, [
        {"engine": "postgresql", "configuration": c, "records_per_statement": 2.0,
         "backend_instructions_per_record": 20_000.0, "backend_instructions_per_record_low": 19_000.0,
         "backend_instructions_per_record_high": 21_000.0} for c in ("stderr", "syslog")])
    _write(d, guide.RECORD_FIGURES, [
        {"engine": "postgresql", "configuration": c, "counter": "cachegrind", "process": "backend",
         "metric": "instructions", "n": 3} for c in ("stderr", "syslog")])
    _write(d, guide.PER_RECORD, [
        {"configuration": "stderr", "clients": 1, "server_cpu_us_per_record_mean": 11.0,
         "server_cpu_us_per_record_ci_low": 10.0, "server_cpu_us_per_record_ci_high": 12.0,
         "server_cpu_us_per_record_n": 5}])
    _write(d, "pg_destinations.csv", [{"configuration": "none", "clients": k, "tps_mean": t}
                                      for k, t in ((1, 40_000.0), (4, 60_000.0))])
    _write(d, guide.CELLS, [
        {"stem": "pg_destinations", "configuration": "stderr", "clients": k, "model": "fitted", "cores": 2,
         "predicted_ratio": p, "ratio": m, "ratio_ci_low": m - 0.05, "ratio_ci_high": m + 0.05, "binding": b}
        for k, p, m, b in ((1, 0.8, 0.7, "latency: the backend's added time"), (4, 0.5, 0.53, "CPU: the cores"))])
    _write(d, guide.DAEMONS, [
        {"stem": "pg_destinations", "configuration": "syslog", "clients": 1, "n": 5, "local_core_share": 0.7,
         "local_core_share_ci_low": 0.6, "local_core_share_ci_high": 0.8, "receiver_core_share": math.nan,
         "local_us_per_record": 12.5, "local_us_per_record_ci_low": 12.0, "local_us_per_record_ci_high": 13.0,
         "local_records_per_s_one_core": 80_000.0},
        {"stem": "pg_destinations", "configuration": "remote_syslog_udp", "clients": 1, "n": 5,
         "local_core_share": 0.55, "local_core_share_ci_low": 0.5, "local_core_share_ci_high": 0.6,
         "receiver_core_share": 0.42, "receiver_core_share_ci_low": 0.4, "receiver_core_share_ci_high": 0.44,
         "local_us_per_record": 11.0, "local_us_per_record_ci_low": 10.0, "local_us_per_record_ci_high": 12.0,
         "local_records_per_s_one_core": 90_909.0}])
    # the daemons' timed one-core ceilings: the collector's chosen at 4 clients (where it took the most records), the
    # syslog daemon's at 1 with an interval that reached near 0 (no upper end)
    _write(d, guide.CEILINGS, [
        {"stem": "pg_destinations", "configuration": c, "daemon": dm, "clients": k, "n": 3,
         "daemon_records_per_s": rate, "us_per_record": 1e6 / v, "records_per_s_one_core": v,
         "records_per_s_one_core_ci_low": lo, "records_per_s_one_core_ci_high": hi, "chosen": ch}
        for c, dm, k, rate, v, lo, hi, ch in (
            ("stderr", "collector", 1, 50_000.0, 300_000.0, 280_000.0, 330_000.0, False),
            ("stderr", "collector", 4, 90_000.0, 400_000.0, 320_000.0, 500_000.0, True),
            ("syslog", "syslog", 1, 40_000.0, 90_000.0, 70_000.0, math.nan, True))])
    # study 04's runs in the findings' model table: the block run (standard: both regimes, the level names its regime)
    # and the resolution run (switchback, one regime: the level leaves it out, its summary has it)
    models = []
    for regime, test in (("cpu", "oltp_read_write"), ("cpu", "oltp_point_select"), ("io", "oltp_read_write")):
        for arm in ("off_again", "slow_1s", "slow_all", "slow_all_devnull", "general_log"):
            models.append({"study": "mysql_slowlog", "profile": "standard", "design": "blocks", "clients": 1,
                           "level": f"test={test}, regime={regime}, clients=1", "arm": arm, "baseline": "off",
                           "ratio": 1.00, "ci_low": 0.70, "ci_high": 1.30, "n": 3, "variant": math.nan,
                           "test": test, "regime": regime})
    for test in ("oltp_read_write", "oltp_point_select"):
        for arm, (r, lo, hi) in (("off_again", (1.069, 1.0007, 1.142)), ("slow_all", (0.97, 0.96, 0.98)),
                                 ("general_log", (0.94, 0.92, 0.96))):
            models.append({"study": "mysql_slowlog", "profile": "resolution", "design": "switchback", "clients": 1,
                           "level": f"test={test}, clients=1", "arm": arm, "baseline": "off", "ratio": r,
                           "ci_low": lo, "ci_high": hi, "n": 32, "variant": math.nan, "test": test,
                           "regime": math.nan})
    # a version sweep's rows are each version's own (variant): no committed run a claim reads
    models.append({**models[0], "profile": "versions", "variant": "mariadb10.5", "ratio": 0.5})
    _write(d, "findings_models.csv", models)
    _write(d, "mysql_slowlog_resolution.csv", [{"regime": "cpu", "test": "oltp_point_select", "configuration": "off",
                                                "clients": 1}])
    for stem, env in (("mysql_slowlog", "block"), ("mysql_slowlog_resolution", "resolution")):
        (d / f"{stem}_environment.json").write_text(json.dumps({"env_id": env}))
    return d


def _guide(processed, tmp_path):
    doc, nums = {"tables": []}, report.Numbers(processed)
    gen = tmp_path / "gen"
    gen.mkdir()
    guide.guide_section(doc, processed, gen, nums)
    return doc["guide"], nums, gen


def _value(nums, key, processed):
    """The registered number, re-read from its spec."""
    item = nums.items[key]
    load = lambda source: pd.read_csv(processed / source)  # noqa: E731
    return item["text"], resolve(item["spec"], load)


def test_the_rule_is_worked_out_on_the_tables_numbers(processed, tmp_path):
    g, nums, _ = _guide(processed, tmp_path)
    assert [e["configuration"] for e in g["examples"]] == ["stderr", "syslog"]
    # 2 records × 3 µs (fitted) = 6 µs per statement; 5000 statements/s on 8 cores: 5000 × 6 / 8e6 = 0.375 %
    assert _value(nums, "guide.stderr.added", processed) == ("6.0", pytest.approx(6.0))
    assert nums.get("guide.stderr.records") == "2"  # a whole count prints as one
    assert nums.get("guide.stderr.us_per_record_ci_low") == "2.4"
    # and the added time at its ends: 2 records × 3.6 µs
    assert _value(nums, "guide.stderr.added_ci_high", processed)[1] == pytest.approx(7.2)
    assert _value(nums, "guide.stderr.share", processed)[1] == pytest.approx(
        100 * guide.EXAMPLE_LOAD["statements_per_s"] * 6.0 / (guide.EXAMPLE_LOAD["cores"] * 1e6))
    assert _value(nums, "guide.syslog.added", processed)[1] == pytest.approx(20.0)
    assert nums.get("guide.syslog.daemon") == "80,000"
    # the ceiling the text prints is the timed one at its chosen level, its upper end only where it is bounded
    assert _value(nums, "guide.stderr.ceiling", processed) == ("400,000", pytest.approx(400_000))
    assert nums.get("guide.stderr.ceiling_ci_high") == "500,000" and nums.get("guide.stderr.ceiling_clients") == "4"
    assert nums.get("guide.syslog.ceiling_ci_low") == "70,000" and "guide.syslog.ceiling_ci_high" not in nums.items
    # the transaction without logging at the lowest level: 1e6 / 40000 tps = 25 µs
    assert nums.get("guide.t0_1") == "25.0" and g["t0_clients"] == 1
    # the fitted model's prediction beside the measured ratio, with the bound that set it, per level
    assert [b["clients"] for b in g["bounds"]] == [1, 4]
    assert nums.get("guide.bound.at1.binding") == "latency: the backend's added time"
    assert nums.get("guide.bound.at4.ratio_ci_low") == "0.480"


def test_the_per_destination_table_carries_intervals_and_n(processed, tmp_path):
    g, _, gen = _guide(processed, tmp_path)
    assert g["table"] == "generated/guide.csv"
    table = pd.read_csv(gen / "guide.csv", dtype=str, keep_default_na=False)
    stderr = table.iloc[0]
    assert stderr["destination"] == "PG stderr" and stderr["records / statement"] == "2"
    assert stderr["instructions / record, writer [95 % CI] (n)"] == "20000 [19000, 21000] (n=3)"
    assert stderr["µs / record, counted model"] == "1.5"
    assert stderr["… fitted model [95 % CI]"] == "3.0 [2.4, 3.6]"
    assert stderr["server CPU µs / record, timed [95 % CI] (n)"] == "11.0 [10.0, 12.0] (n=5)"
    assert table.iloc[1]["server CPU µs / record, timed [95 % CI] (n)"] == "–"  # not timed there
    col = "records/s one daemon core holds: timed [95 % CI] (n, clients); fitted"
    assert stderr[col] == "400,000 [320,000, 500,000] (n=3, 4 clients); fitted 250,000 [200,000, 310,000]"
    assert table.iloc[1][col] == "90,000 [≥ 70,000] (n=3, 1 client); fitted 80,000 [64,000, 100,000]"


def test_the_remote_receiver_and_the_local_daemon_are_reported_apart(processed, tmp_path):
    g, nums, _ = _guide(processed, tmp_path)
    [r] = g["remote"]
    assert nums.get(r["key"] + ".receiver.estimate") == "0.42" and nums.get(r["key"] + ".local.estimate") == "0.55"
    [d] = g["daemon"]
    assert nums.get(d["key"] + ".estimate") == "12.5" and nums.get(d["key"] + ".ceiling") == "80,000"


def _column(table: pd.DataFrame, profile: str) -> str:
    [col] = [c for c in table.columns if c.startswith(f"{profile} (")]
    return col


def test_the_abstracts_mariadb_ratios_come_from_the_run_that_judges_logging_every_statement():
    """Issue 42: the MariaDB headline and the MariaDB verdicts from the same design. The abstract's arms are logging
    every statement to a file, claim 001-cpu-all's question; its run is the one that claim's rule names."""
    from logbench import studies as registry
    from logbench.analyze import claim_rules

    h = registry.spec("mysql_slowlog").headline
    assert h.stem == claim_rules.rule_for("001-cpu-all").study == claim_rules.RESOLUTION_04
    assert "slow_all" in dict(h.arms)


def test_mariadbs_runs_stand_side_by_side_as_the_claims_and_the_abstract_read_them(processed, tmp_path):
    """Each committed run of study 04 that a claim or the abstract reads is a column of the model's ratios, named with
    who reads it: each claim under the run its rule names (claim_rules), the claims file's study otherwise; a run
    the model table does not hold yet is named as such, and gets its column once its rows are there."""
    from logbench.analyze import claim_rules, claims

    g, _, gen = _guide(processed, tmp_path)
    assert g["mariadb"] == "generated/guide_mariadb_designs.csv"
    t = pd.read_csv(gen / "guide_mariadb_designs.csv", dtype=str, keep_default_na=False)
    runs = {r["stem"]: r for r in g["mariadb_runs"]}
    assert list(runs) == ["mysql_slowlog", claim_rules.RESOLUTION_04]  # the switchback and version runs: nobody's
    # every claim of study 04's runs sits under the run its rule (or the claims file) names, and nowhere else
    judged = claims.as_judged(claims.load())
    for _, c in judged[judged["claim_id"].str.startswith("001-")].iterrows():
        stem = claim_rules.rule_for(c["claim_id"]).study or c["study"]
        assert c["study"] == stem
        holds = [s for s, r in runs.items() if c["claim_id"] in r["claims"]]
        pending = [p["stem"] for p in g["mariadb_pending"] if c["claim_id"] in p["claims"]]
        assert holds + pending == [stem], c["claim_id"]
    assert runs[claim_rules.RESOLUTION_04]["abstract"] and not runs["mysql_slowlog"]["abstract"]
    assert g["mariadb_pending"] == [{"stem": claim_rules.RESOLUTION_1S_04, "claims": ["001-cpu-1s"]},
                                    {"stem": claim_rules.RESOLUTION_DEVNULL_04, "claims": ["001-devnull"]}]
    block, res = _column(t, "standard"), _column(t, "resolution")
    assert block == "standard (blocks, environment block), read by 001-cpu-rate, 001-io-all: ratio [95 % CI] (n)"
    assert res == ("resolution (switchback, environment resolution), read by the abstract, 001-cpu-all: "
                   "ratio [95 % CI] (n)")
    at = t.set_index(["regime", "workload", "configuration", "clients"])
    # the model's ratio of each run, never pooled; '–' where a run has no such cell
    row = at.loc[("cpu", "oltp_read_write", "slow_all", "1")]
    assert (row[block], row[res]) == ("1.00 [0.700, 1.30] (n=3)", "0.970 [0.960, 0.980] (n=32)")
    assert row["read by (run)"] == "001-cpu-all (resolution); 001-cpu-rate (standard, its log_bytes_per_s)"
    # /dev/null's reader (001-devnull) reads its own run, not in these tables yet: the block run's arm is not shown
    assert ("cpu", "oltp_read_write", "slow_all_devnull", "1") not in at.index
    # the claims file's 'io_bound' is study 04's 'io'; the A/A beside what is read, an end past 1 shown as past it
    assert at.loc[("io", "oltp_read_write", "slow_1s", "1"), "read by (run)"] == "001-io-all (standard)"
    assert at.loc[("cpu", "oltp_point_select", "off_again", "1"), res] == "1.07 [1.001, 1.14] (n=32)"
    assert at.loc[("cpu", "oltp_point_select", "general_log", "1"), "read by (run)"] == "the abstract (resolution)"
    # what nobody reads is not shown: the block run's general log, the cached slow_1s before its run is modelled
    assert ("cpu", "oltp_read_write", "general_log", "1") not in at.index
    assert ("cpu", "oltp_read_write", "slow_1s", "1") not in at.index

    # after the 1 s run and `make findings`: its column, read by 001-cpu-1s, with no change to the code
    models = pd.read_csv(processed / "findings_models.csv")
    one_s = models[models["profile"] == "resolution"].assign(profile="resolution_1s")
    one_s = one_s[one_s["arm"] == "off_again"]
    one_s = pd.concat([one_s, one_s.assign(arm="slow_1s", ratio=0.99, ci_low=0.98, ci_high=1.0)])
    pd.concat([models, one_s]).to_csv(processed / "findings_models.csv", index=False)
    _write(processed, f"{claim_rules.RESOLUTION_1S_04}.csv", [{"regime": "cpu", "test": "oltp_read_write",
                                                               "configuration": "off", "clients": 1}])
    (tmp_path / "again").mkdir()
    g, _, gen = _guide(processed, tmp_path / "again")
    t = pd.read_csv(gen / "guide_mariadb_designs.csv", dtype=str, keep_default_na=False)
    assert [r["stem"] for r in g["mariadb_runs"]] == ["mysql_slowlog", claim_rules.RESOLUTION_04,
                                                      claim_rules.RESOLUTION_1S_04]
    assert g["mariadb_pending"] == [{"stem": claim_rules.RESOLUTION_DEVNULL_04, "claims": ["001-devnull"]}]
    col = _column(t, "resolution_1s")
    assert col.endswith("read by 001-cpu-1s: ratio [95 % CI] (n)")  # no environment record: none named
    row = t.set_index(["regime", "workload", "configuration", "clients"]).loc[
        ("cpu", "oltp_read_write", "slow_1s", "1")]
    assert (row[col], row["read by (run)"]) == ("0.990 [0.980, 1.00] (n=32)", "001-cpu-1s (resolution_1s)")


def test_without_the_cost_model_the_guide_says_so(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    g, nums, _ = _guide(empty, tmp_path)
    assert not g["has_model"] and g["table"] == "" and g["examples"] == [] and not nums.items


def test_daemon_cpu_reads_each_daemon_from_the_runs(tmp_path):
    """Each run's CPU per daemon (local, remote) over its length, and per record: the local daemon over the records
    the server sent, the receiver over those that arrived."""
    runs = []
    for rep, (local, remote) in enumerate(((2.0, 1.6), (2.2, 1.8))):
        runs.append({"configuration": "remote_syslog_udp", "clients": 1, "warmup": False, "duration_s": 4,
                     "log_records_expected": 100_000, "log_records_received": 80_000, "logger_cpu_s": local + remote,
                     "env_id": "e", "extra": json.dumps({"logger_cpu_s_by_daemon": {"local": local, "remote": remote}})})
        runs.append({"configuration": "syslog", "clients": 1, "warmup": False, "duration_s": 4,
                     "log_records_expected": 100_000, "log_records_received": 100_000, "logger_cpu_s": 1.2,
                     "env_id": "e", "extra": json.dumps({})})
    # syslog and a file at once: the daemon takes the syslog half of the records
    runs.append({"configuration": "syslog,csvlog", "clients": 1, "warmup": False, "duration_s": 4,
                 "log_records_expected": 200_000, "log_records_received": 200_000, "logger_cpu_s": 2.0,
                 "log_records_by_destination": json.dumps({"csvlog": 100_000, "syslog": 100_000}), "env_id": "e",
                 "extra": json.dumps({"logger_cpu_s_by_daemon": {"local": 2.0, "remote": 0.0}})})
    runs.append({"configuration": "stderr", "clients": 1, "warmup": False, "duration_s": 4,
                 "log_records_expected": 1, "log_records_received": 1, "logger_cpu_s": 0.0, "env_id": "e",
                 "extra": "{}"})
    pd.DataFrame(runs).to_csv(tmp_path / "pg_destinations_runs.csv", index=False)
    d = daemons.daemon_cpu(tmp_path).set_index("configuration")
    assert list(d.index) == ["remote_syslog_udp", "syslog", "syslog,csvlog"]  # syslog arms only
    assert d.loc["syslog,csvlog", "local_us_per_record"] == pytest.approx(1e6 * 2.0 / 100_000)
    assert math.isnan(d.loc["syslog,csvlog", "receiver_core_share"])  # no receiver: its 0 is no measurement
    r = d.loc["remote_syslog_udp"]
    assert r["n"] == 2 and r["local_core_share"] == pytest.approx(2.1 / 4)
    assert r["receiver_core_share"] == pytest.approx(1.7 / 4)
    assert r["local_us_per_record"] == pytest.approx(1e6 * 2.1 / 100_000)
    assert r["receiver_us_per_record"] == pytest.approx(1e6 * 1.7 / 80_000)
    s = d.loc["syslog"]  # no split recorded and no receiver: the one figure is the local daemon's
    assert s["local_core_share"] == pytest.approx(0.3) and math.isnan(s["receiver_core_share"])
    assert s["local_records_per_s_one_core"] == pytest.approx(1e6 / 12.0)


def test_an_import_phase_counts_rows_not_transactions():
    summary = pd.DataFrame({"phase": ["import", "oltp"], "configuration": ["minimal", "minimal"], "clients": [2, 2],
                            "n": [5, 5], "tps_mean": [1_000_000.0, 2000.0], "tps_ci_low": [900_000.0, 1900.0],
                            "tps_ci_high": [1_100_000.0, 2100.0], "ratio": [1.0, 1.0]})
    t = report.study_table(summary)
    assert list(t["unit"]) == ["rows/s (pgbench -i)", "tps"]
    assert "throughput [95 % CI]" in t.columns and "tps [95 % CI]" not in t.columns
    assert "unit" not in report.study_table(summary.assign(phase="oltp")).columns


def test_the_committed_datas_answer_is_the_rule_applied_to_its_tables(tmp_path):
    """On the committed processed data (once 90_findings wrote the cost model's tables): each worked example is the
    counted records per statement times the fitted µs per record, and the share of the cores the rule's."""
    from logbench.base import paths

    if not (paths.PROCESSED / guide.RULE).exists():
        pytest.skip("the cost model's tables are not in data/processed: run `make findings`")
    g, nums, _ = _guide(paths.PROCESSED, tmp_path)
    rule = pd.read_csv(paths.PROCESSED / guide.RULE)
    rc = pd.read_csv(paths.PROCESSED / guide.RECORD_COST)
    assert g["examples"], "no worked example from the committed tables"
    for e in g["examples"]:
        conf = e["configuration"]
        us = rule[(rule["configuration"] == conf) & (rule["model"] == "fitted")]["us_per_record"].iloc[0]
        r = rc[(rc["engine"] == "postgresql") & (rc["configuration"] == conf)]["records_per_statement"].iloc[0]
        assert nums.items[e["key"] + ".added"]["value"] == pytest.approx(r * us)
        load = guide.EXAMPLE_LOAD
        assert nums.items[e["key"] + ".share"]["value"] == pytest.approx(
            100 * load["statements_per_s"] * r * us / (load["cores"] * 1e6))


def _compared(processed):
    nums = report.Numbers(processed)
    out = cost_model.ceilings_compared(pd.read_csv(processed / cost_model.CEILINGS),
                                       pd.read_csv(processed / cost_model.RULE), nums)
    return out, nums


def test_the_timed_and_the_fitted_ceiling_are_set_side_by_side_from_the_tables(processed):
    """The cost model's section compares each daemon's timed ceiling with the fitted one: every number re-read from
    its table, the ratio the timed over the fitted, and whether the intervals overlap decided from their ends."""
    compared, nums = _compared(processed)
    assert [c["configuration"] for c in compared] == ["stderr", "syslog"]
    # stderr: timed 400,000 [320,000, 500,000] at 4 clients, fitted 250,000 [200,000, 312,500]: apart (320,000 is
    # above 312,500), the timed 1.6 times the fitted
    assert _value(nums, "cm.ceil.stderr.timed", processed) == ("400,000", pytest.approx(400_000))
    assert _value(nums, "cm.ceil.stderr.fitted", processed) == ("250,000", pytest.approx(250_000))
    assert _value(nums, "cm.ceil.stderr.ratio", processed) == ("1.6", pytest.approx(1.6))
    assert nums.get("cm.ceil.stderr.timed_ci_low") == "320,000"
    assert _value(nums, "cm.ceil.stderr.fitted_ci_high", processed) == ("310,000", pytest.approx(312_500))
    assert nums.get("cm.ceil.stderr.timed_clients") == "4" and nums.get("cm.ceil.stderr.timed_n") == "3"
    # syslog: timed 90,000 [≥ 70,000] (no upper end: open above), fitted 80,000 [64,000, 100,000]: overlapping
    assert "cm.ceil.syslog.timed_ci_high" not in nums.items
    assert _value(nums, "cm.ceil.syslog.ratio", processed)[1] == pytest.approx(90_000 / 80_000)
    assert [c["overlap"] for c in compared] == [False, True]
    for key, item in nums.items.items():
        value = resolve(item["spec"], lambda source: pd.read_csv(processed / source))
        assert item["value"] == pytest.approx(value) and report.render(value, item["spec"]) == item["text"], key


def test_an_open_upper_end_overlaps_any_interval_above(processed):
    """The fitted collector's ceiling has no upper end where its factor's interval reaches near 0: it holds any timed
    ceiling above its low end, so the two are not told apart however far their estimates lie."""
    rule = pd.read_csv(processed / guide.RULE)
    fitted = (rule["configuration"] == "stderr") & (rule["model"] == "fitted")
    rule.loc[fitted, ["daemon_records_per_s", "daemon_records_per_s_ci_low", "daemon_records_per_s_ci_high"]] = (
        100_000.0, 50_000.0, math.nan)
    rule.to_csv(processed / guide.RULE, index=False)
    compared, nums = _compared(processed)
    assert compared[0]["configuration"] == "stderr" and compared[0]["overlap"]
    assert nums.get("cm.ceil.stderr.ratio") == "4.0" and "cm.ceil.stderr.fitted_ci_high" not in nums.items


def test_the_committed_ceilings_comparison_follows_its_tables():
    """On the committed processed data: the timed over the fitted and the overlap the text states are the tables'."""
    from logbench.base import paths

    if not all((paths.PROCESSED / f).exists() for f in (cost_model.CEILINGS, cost_model.RULE)):
        pytest.skip("the cost model's tables are not in data/processed: run `make findings`")
    compared, nums = _compared(paths.PROCESSED)
    assert [c["configuration"] for c in compared] == [conf for conf, _ in cost_model.COMPARED]
    ceilings = pd.read_csv(paths.PROCESSED / cost_model.CEILINGS)
    rule = pd.read_csv(paths.PROCESSED / cost_model.RULE)
    for c in compared:
        t = daemons.chosen(ceilings, "pg_destinations", c["configuration"])
        f = rule[(rule["configuration"] == c["configuration"]) & (rule["model"] == "fitted")].iloc[0]
        assert nums.items[c["key"] + ".ratio"]["value"] == pytest.approx(
            t["records_per_s_one_core"] / f["daemon_records_per_s"])
        t_hi, f_hi = (math.inf if pd.isna(x) else x for x in (t["records_per_s_one_core_ci_high"],
                                                              f["daemon_records_per_s_ci_high"]))
        apart = t["records_per_s_one_core_ci_low"] > f_hi or f["daemon_records_per_s_ci_low"] > t_hi
        assert c["overlap"] is (not apart), c


def test_no_table_or_text_of_the_paper_is_set_below_8_pt():
    """Issue 42: the claims table was set at 6 pt; every size the source states is 8 pt or more (the body is 10.5)."""
    from logbench.base import paths

    source = (paths.PAPER / "logbench.typ").read_text()
    import re

    sizes = [float(x) for x in re.findall(r"size:\s*([\d.]+)pt", source)]
    assert sizes and min(sizes) >= 8, sorted(set(sizes))


def test_the_paper_builds_without_the_cost_models_tables(tmp_path):
    """The committed data before 90_findings wrote the cost model's tables (study 11's counts there, the model's
    tables not): the paper builds, and the guide says what it waits for instead of referring to tables it lacks."""
    import shutil
    import subprocess

    from logbench.base import paths

    if shutil.which("pdftotext") is None:
        pytest.skip("pdftotext is not installed")
    processed = tmp_path / "processed"
    shutil.copytree(paths.PROCESSED, processed)
    for f in processed.glob("findings_cost_model*.csv"):
        f.unlink()
    pdf = report.build(processed, paths.FIGURES, tmp_path / "build")
    text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    assert "The decision guide needs the cost model" in " ".join(text.split())


def test_the_headline_figures_points_are_the_cells_ratio_turned_into_microseconds():
    """Issue 42's headline figure: a hand-computed cell. Ratio 0.5 of a 1000-tps baseline on 2 cores, 2 records per
    transaction: 2e6 / 1000 x (1 / 0.5 - 1) = 2000 µs added, 0.5 x 1000 x 2 = 1000 records/s; the interval from the
    ratio's (0.4 -> 3000 µs, 0.625 -> 1200 µs). Levels below the cores, other studies and a variant are left out."""
    from logbench.publish import findings

    base = {"model": "counted", "stem": "pg_destinations", "test": None, "regime": None, "variant": None,
            "configuration": "stderr", "cores": 2, "records_per_tx": 2.0, "baseline_tps": 1000.0,
            "ratio": 0.5, "ratio_ci_low": 0.4, "ratio_ci_high": 0.625}
    cells = pd.DataFrame([
        {**base, "clients": 4},
        {**base, "clients": 1},                           # fewer clients than cores: latency, not the cores' time
        {**base, "clients": 4, "model": "fitted"},        # the same cell under the other model: counted once
        {**base, "clients": 4, "variant": "pg13"},        # a version sweep's variant
        {**base, "clients": 4, "stem": "pg_audit_timing"},
    ])
    p = findings.headline_points(cells)
    assert len(p) == 1
    r = p.iloc[0]
    assert (r["engine"], r["destination"], r["clients"]) == ("PostgreSQL", "stderr", 4)
    assert r["records_per_s"] == pytest.approx(1000.0)
    assert r["extra_us"] == pytest.approx(2000.0)
    assert (r["extra_low"], r["extra_high"]) == (pytest.approx(1200.0), pytest.approx(3000.0))
    assert findings.headline_figures(cells.iloc[[1]]) == {}
