"""Study 10 (pg_digest): pgBadger's numbers for the statements the study ran match what was run."""

import pandas as pd
import pytest

from logbench.studies import pg_digest as m
from logbench.workloads.pgbench import SETUP_STATEMENTS

PGBENCH_S = "select abalance from pgbench_accounts where aid = ?;"  # as pgBadger normalizes it


def test_normalized_queries_are_named_and_ranked():
    report = {"normalyzed_info": {"db": {
        "select * from digest_indexed where abalance = ?;": {"count": 4, "duration": 0.2, "min": "0.04", "max": "0.06"},
        "select * from pgbench_accounts where abalance = ?;": {"count": 4, "duration": 40.0, "min": "9", "max": "11"},
        PGBENCH_S: {"count": 1000, "duration": 10.0, "min": "0.005", "max": "0.1"}}}}
    t = m.ranked_queries(report)
    assert list(t["statement"]) == ["unindexed_filter", "", "indexed_filter"]
    assert list(t["rank_by_count"]) == [2, 1, 2] and list(t["rank_by_mean"]) == [1, 3, 2]
    assert t["time_mean_ms"].tolist() == pytest.approx([10.0, 0.01, 0.05])


def test_the_paper_prints_the_digest_and_reads_its_numbers_from_the_table(tmp_path):
    from logbench.publish import report

    processed, gen = tmp_path / "processed", tmp_path / "generated"
    processed.mkdir(), gen.mkdir()
    doc, nums = {"tables": []}, report.Numbers(processed)
    report.digest_section(doc, processed, gen, nums, [m.SPEC])
    assert doc["digests"] == {"pg_digest": ""} and nums.items == {}  # not run yet: the paper says so
    report_json = {"normalyzed_info": {"db": {
        "select * from digest_indexed where abalance = ?;": {"count": 4, "duration": 0.2, "min": "0.04", "max": "0.06"},
        "select * from pgbench_accounts where abalance = ?;": {"count": 4, "duration": 40.0, "min": "9", "max": "11"},
        "select a.aid from pgbench_tellers t join pgbench_accounts a on a.abalance = t.tbalance where t.tid = ? "
        "and a.bid = t.bid;": {"count": 2, "duration": 30.0, "min": "14", "max": "16"},
        PGBENCH_S: {"count": 1000, "duration": 10.0, "min": "0.005", "max": "0.1"}}}}
    m.ranked_queries(report_json).to_csv(processed / "pg_digest.csv", index=False)
    report.digest_section(doc, processed, gen, nums, [m.SPEC])
    t = pd.read_csv(gen / "digest_pg_digest.csv", dtype=str, keep_default_na=False)
    assert doc["digests"] == {"pg_digest": "generated/digest_pg_digest.csv"}
    assert list(t["ours"]) == ["unindexed_filter", "unindexed_join", "", "indexed_filter"]
    assert list(t["mean (ms)"]) == ["10.0", "15.0", "0.0100", "0.0500"] and list(t["by mean"]) == ["2", "1", "4", "3"]
    text = {k: v["text"] for k, v in nums.items.items()}
    assert text["pg_digest.queries"] == "4" and text["pg_digest.filter_index_factor"] == "200"
    assert (text["pg_digest.unindexed_join.rank"], text["pg_digest.unindexed_join.count"],
            text["pg_digest.unindexed_join.mean_ms"]) == ("2", "2", "15.0")
    assert all(v["spec"].get("source", "pg_digest.csv") == "pg_digest.csv" for v in nums.items.values())


@pytest.mark.integration
def test_pgbadger_counts_what_the_study_ran(tmp_path):
    study = m.define(profile="smoke", executions=7, output_dir=tmp_path / "out")
    r = m.run(study, progress=False)
    d = r.digest.set_index("query")
    for name in m.OWN_ORDER:  # each of ours exactly as often as it ran, once per execution
        assert r.own[name] == 7
        assert int(r.digest.loc[r.digest["statement"] == name, "count"].sum()) == 7, name
    # pgbench's statement once per transaction; its set-up statements are in the log too
    assert d.loc[PGBENCH_S, "count"] == r.pgbench["transactions"]
    assert d.loc["select count(*) from pgbench_branches;", "count"] == 1 and SETUP_STATEMENTS == 2
    # the capture helper's own statements (its restore's ALTER SYSTEM RESET, its reloads, its reads of the settings
    # and the log directory) are not in the log it captured (capture_pg.QUIET), so none is ranked as workload
    helper = r"alter system|pg_reload_conf|pg_settings|pg_current_logfile|pg_ls_logdir|pg_file_settings|pg_db_role"
    assert not r.digest["query"].str.contains(helper).any(), r.digest["query"].tolist()
    # the plans show in the time per execution: a sequential scan against an index lookup
    mean = r.digest.groupby("statement")["time_mean_ms"].first()
    assert mean["unindexed_filter"] > 10 * mean["indexed_filter"]
    assert r.html.is_file() and r.html.stat().st_size > 0
