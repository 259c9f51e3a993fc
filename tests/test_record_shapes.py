"""What each statement-logging configuration must produce, counted in log files PostgreSQL 15 really wrote.

The fixtures (tests/fixtures/pg15_*; scripts/capture_pg_log_fixtures.py) are pgbench -S -t 20 -c 2
(40 transactions) under each mode, as stderr and csvlog lines.
"""

import json
from pathlib import Path

import pytest

from logbench.measure.benches import postgres as pg
from logbench.base.errors import SettingError
from logbench.base.logsinks import FileSink, count_records
from logbench.servers import mariadb as mdb
from logbench.base.settings import Configuration, RecordShape, Settings

FIXTURES = Path(__file__).parent / "fixtures"
CAPTURED = json.loads((FIXTURES / "pg15_statement_logging.json").read_text())


def _configuration(settings: dict, query_mode: str) -> Configuration:
    s = Settings.of("postgresql", {**pg.BASE, **settings})
    return Configuration("c", s, ("stderr",), pg.statement_records(s, query_mode))


@pytest.mark.parametrize("suffix", ["log", "csv"])
@pytest.mark.parametrize("name", sorted(CAPTURED))
def test_expected_records_equal_the_records_the_server_wrote(name, suffix):
    run = CAPTURED[name]
    cfg = _configuration(run["settings"], run["query_mode"])
    lines = (FIXTURES / f"{name}.{suffix}").read_bytes().splitlines()
    tx, conns = run["transactions"], run["clients"]
    expected = cfg.expected_records(statements=tx, transactions=tx, connections=conns)
    assert expected >= tx > 0
    assert count_records(lines, cfg.records) == expected
    # Each kind on its own, so 'both' is not right by two errors cancelling.
    for shape in cfg.records:
        assert count_records(lines, (shape,)) == shape.expected(statements=tx, transactions=tx, connections=conns)


def test_the_kinds_per_mode():
    kinds = {name: [r.kind for r in _configuration(run["settings"], run["query_mode"]).records]
             for name, run in CAPTURED.items()}
    assert kinds["pg15_log_statement_all_simple"] == ["statement"]
    assert kinds["pg15_log_duration_prepared"] == ["duration"]
    assert kinds["pg15_log_statement_all_duration_prepared"] == ["statement", "duration"]
    assert kinds["pg15_min_duration_0_simple"] == ["duration+statement"]


def test_hand_counted_shapes():
    # log_duration, prepared: bind + execute per transaction, one parse per connection, pgbench's two set-up queries.
    (d,) = _configuration({"log_duration": True}, "prepared").records
    assert d.expected(statements=40, transactions=40, connections=2) == 40 * 2 + 2 + 2
    (s,) = _configuration({"log_statement": "all"}, "prepared").records
    assert s.expected(statements=40, transactions=40, connections=2) == 40
    assert _configuration({"log_min_duration_statement": 100}, "simple").records == ()
    assert _configuration({"log_statement": "ddl"}, "simple").records == ()


def test_a_mode_whose_records_were_never_captured_is_refused():
    with pytest.raises(SettingError, match="log_statement = 'all' with log_min_duration_statement = 0"):
        _configuration({"log_statement": "all", "log_min_duration_statement": 0}, "simple")


def test_a_sink_counts_the_configuration_records(tmp_path):
    path = tmp_path / "postgresql.log"
    path.write_bytes((FIXTURES / "pg15_log_statement_all_duration_simple.log").read_bytes())
    bare = FileSink("stderr", path)
    assert bare.count_since(0).records == 0 and bare.count_since(0).lines == 84
    cfg = _configuration({"log_statement": "all", "log_duration": True}, "simple")
    assert bare.counting(cfg.records).count_since(0).records == 40 + 42


def test_shape_matching_and_expectation():
    shape = RecordShape("x", (b"a", b"b"), absent=(b"c",), per_statement=0.5, per_connection=1, per_run=2)
    assert shape.matches(b"..a..b..") and not shape.matches(b"a only") and not shape.matches(b"a b c")
    assert shape.expected(statements=10, transactions=99, connections=3) == 5 + 3 + 2
    assert Configuration("c", Settings.of("mariadb"), records=(shape,)).expected_records(statements=3) == 4  # 3.5


def test_mariadb_slow_and_general_shapes_match_their_lines():
    assert mdb.SLOW_ENTRY.matches(b"# Query_time: 0.000027  Lock_time: 0.000000 Rows_sent: 1  Rows_examined: 1")
    assert mdb.GENERAL_QUERY.matches(b"\t\t     12 Query\tSELECT c FROM sbtest1 WHERE id=5")
    assert not mdb.GENERAL_QUERY.matches(b"\t\t     12 Connect\troot@localhost on sbtest")
