"""The digest of a captured slow log: pt-query-digest's JSON parsed, the ebook's rows rule, and the study on a real MariaDB."""

import math
from pathlib import Path

import pandas as pd
import pytest

from logbench.studies.mysql_digest import digest as D
from logbench.base.errors import ParameterError

FIXTURES = Path(__file__).parent / "fixtures"
# A full slow log captured by logbench.servers.capture from MariaDB 10.11 (sbtest1 of 2000 rows) while one session ran:
# 7 x an unindexed filter matching nothing, 5 x a join on an unindexed column, 11 x a primary-key lookup,
# 1 x a GROUP BY; and pt-query-digest 3.2.1's --output json of that file.
CAPTURED = FIXTURES / "mariadb10.11_full_slow_capture.log"
REPORT = FIXTURES / "pt_query_digest_3.2.1.json"
KNOWN = {  # fingerprint -> (count, rows examined, rows sent)
    "select * from sbtest? where c = ?": (7, 14000, 0),
    "select * from sbtest? a join sbtest? b on b.pad = a.pad where a.id = ?": (5, 10000, 5),
    "select * from sbtest? where id = ?": (11, 11, 11),
    "select k, count(*) from sbtest? group by k": (1, 2000, 335),
}


def _check_known(d: pd.DataFrame) -> None:
    got = d.set_index("fingerprint")
    for fp, (count, examined, sent) in KNOWN.items():
        assert (got.loc[fp, "count"], got.loc[fp, "rows_examined"], got.loc[fp, "rows_sent"]) == (count, examined, sent)
    assert list(d["rank"]) == list(range(1, len(d) + 1))
    assert d["time_total_s"].is_monotonic_decreasing and math.isclose(d["time_share"].sum(), 1.0, rel_tol=1e-9)


def test_parse_reads_every_fingerprint_of_a_captured_report():
    d = D.parse(REPORT.read_text())
    assert len(d) == len(KNOWN)
    _check_known(d)
    row = d.set_index("fingerprint").loc["select * from sbtest? where c = ?"]
    # pt-query-digest's own numbers for this class, as printed in its JSON
    assert (row["time_total_s"], row["time_p95_s"], row["time_max_s"]) == (0.003938, 0.0008, 0.000834)
    assert row["rows_examined_per_query"] == 2000 and row["rows_sent_per_query"] == 0


def test_the_installed_pt_query_digest_finds_the_known_queries_in_the_captured_log():
    _check_known(D.parse(D.run_digest(CAPTURED)))


def test_table_references_and_aggregates():
    assert D.table_references("select * from sbtest? a, sbtest? b where a.k=? and b.id=a.id") == 2
    assert D.table_references("select a.id from t a join u b on b.x = a.x join v c using (y) where a.id = ?") == 3
    assert D.table_references("select c from sbtest? where id between ? and ? order by c") == 1
    assert D.table_references("set names utf8mb4") == 0 and D.table_references("commit") == 0
    assert D.has_aggregate("select k, count(*) from t group by k") and D.has_aggregate("select distinct c from t")
    assert not D.has_aggregate("select c from t where id = ?")


def test_rows_rule_by_hand():
    d = pd.DataFrame({
        "fingerprint": ["select * from t where c = ?", "select * from t where k = ?", "select * from a, b where a.k=?",
                        "select * from t where x = ?", "select count(*) from t", "delete from t where id=?",
                        "select * from u where c = ?"],
        "rows_examined_per_query": [1e7, 30.0, 2.0, 0.0, 1e7, 1.0, 50.0],
        "rows_sent_per_query": [0.0, 10.0, 1.0, 0.0, 1.0, 0.0, 10.0],
        "table_references": [1, 1, 2, 1, 1, 1, 1], "time_total_s": [1.0] * 7,
    })
    r = D.rows_rule(d)
    # B / A: no rows sent but 10M examined -> inf; 30 / 10 = 3; (2 / 2 tables) / 1 = 1; 0 / 0 -> 0; 50 / 10 = 5
    assert r["ratio"].iloc[0] == math.inf and list(r["ratio"].iloc[1:4]) == [3.0, 1.0, 0.0]
    assert list(r["reading"].iloc[[0, 1, 2, 3]]) == ["serious candidate (B/A ≥ 10)", "in between", "perfect (B ≤ A)",
                                                     "perfect (B ≤ A)"]
    assert list(r["rule_applies"]) == [True, True, True, True, False, False, True]
    assert list(D.candidates(r)["fingerprint"]) == ["select * from t where c = ?"]


def test_bad_parameters_are_refused_before_a_server_starts():
    from logbench.studies import mysql_digest as m

    with pytest.raises(ParameterError, match="statements"):
        m.define("smoke", statements=["unindexed_filter", "no_such"])
    with pytest.raises(ParameterError, match="backend"):
        m.define("smoke", backend="container")
    with pytest.raises(ParameterError, match="executions"):
        m.define("smoke", executions=0)
    with pytest.raises(ParameterError, match="profile"):
        m.define("post004")


@pytest.mark.integration
def test_the_study_digests_a_capture_with_its_own_statements_at_the_right_counts_and_ratios(tmp_path):
    from logbench.studies import mysql_digest as m

    study = m.define("smoke", output_dir=tmp_path / "raw")
    r = m.run(study, progress=False)
    d = r.digest.set_index("statement")
    size = study.table_size
    for name in m.OWN_STATEMENTS:
        assert d.loc[name, "count"] == study.executions, name
    assert (d.loc["unindexed_filter", "rows_examined_per_query"], d.loc["unindexed_filter", "rows_sent_per_query"]) == (size, 0)
    assert d.loc["unindexed_filter", "reading"].startswith("serious candidate")
    assert d.loc["indexed_filter", ["rows_examined", "rows_sent"]].tolist() == [0, 0]  # the ebook's "Rows_examined=0"
    # two tables, each row examined once per row sent: B = A, the ebook's "perfect"
    assert d.loc["indexed_join", "rows_examined"] == 2 * d.loc["indexed_join", "rows_sent"] > 0
    assert d.loc["indexed_join", "ratio"] == 1.0
    assert d.loc["unindexed_join", "rows_examined_per_query"] >= size and d.loc["unindexed_join", "ratio"] >= 10
    assert not d.loc["group_by", "rule_applies"]
    # sysbench's part: ten point selects per transaction, every one captured
    points = r.digest.set_index("fingerprint").loc["select c from sbtest? where id=?", "count"]
    assert points == 10 * r.sysbench["transactions"]
    assert (tmp_path / "raw" / "captured-slow.log").stat().st_size > 0 and (tmp_path / "raw" / "digest.json").exists()


def test_the_paper_prints_the_digest_once_study_09_wrote_it(tmp_path):
    from logbench.publish import report
    from logbench.studies import mysql_digest as m

    processed, gen = tmp_path / "processed", tmp_path / "generated"
    processed.mkdir(), gen.mkdir()
    doc, nums = {"tables": []}, report.Numbers(processed)
    report.digest_section(doc, processed, gen, nums, [m.SPEC])
    assert doc["digests"] == {"mysql_digest": ""}  # not run yet: the paper says so
    ruled = m.label(D.rows_rule(D.parse(REPORT.read_text())))
    ruled.to_csv(processed / "mysql_digest.csv", index=False, float_format="%.6g")
    report.digest_section(doc, processed, gen, nums, [m.SPEC])
    t = pd.read_csv(gen / "digest_mysql_digest.csv", dtype=str)
    assert doc["digests"] == {"mysql_digest": "generated/digest_mysql_digest.csv"} and len(t) == len(KNOWN)
    first = t.iloc[0]  # the unindexed filter took the most time: nothing sent, 2000 rows examined per query
    assert (first["fingerprint"], first["count"], first["B / A"]) == ("select * from sbtest? where c = ?", "7", "∞")
    assert first["reading"].startswith("serious candidate")
