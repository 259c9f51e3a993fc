"""pgBadger as an independent counter of the records studies 02 and 05 count, on the log files their bench writes."""

import contextlib
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from logbench.workloads import pgbadger
from logbench.measure.benches import postgres as pg
from logbench.base.logsinks import wait_quiet
from logbench.studies import pg_audit_timing as audit_mod
from logbench.studies import pg_destinations as study_mod
from logbench.workloads.pgbench import SETUP_STATEMENTS

from conftest import needs_root

DESTINATIONS = ["stderr", "csvlog", "jsonlog", "syslog"]  # every one pgBadger reads
PGBENCH_S = "select abalance from pgbench_accounts where aid = ?;"  # as pgBadger normalizes it
TRANSACTIONS = 200  # per client: the bench's load, by count (pgBadger reads ~20k lines a second)
CLIENTS, QUERY_MODE = 2, "prepared"  # both studies' load: a record per protocol message
TX = CLIENTS * TRANSACTIONS


def test_command_names_the_format_and_the_prefix_where_lines_carry_one():
    argv = pgbadger.command(["/l/postgresql.log"], "stderr", prefix="%m %p ", outputs=["/o/r.json"])
    assert argv[1:] == ["--format", "stderr", "--quiet", "--jobs", "1", "--prefix", "%m %p ", "--outfile",
                        "/o/r.json", "/l/postgresql.log"]
    assert "--prefix" not in pgbadger.command(["/l/p.csv"], "csvlog", prefix="%m ")
    assert pgbadger.command(["/l/s"], "syslog", prefix="%u ")[2:3] == ["syslog2"]
    with pytest.raises(ValueError, match="pgBadger reads no 'remote_syslog' log"):
        pgbadger.command(["/l/x"], "remote_syslog")


def logged_runs(study, names, tmp_path, extra=()):
    """The study's bench runs pgbench -S (TRANSACTIONS per client) under each configuration of ``names``; per
    configuration: (the file of its run's own records, as the runner counts them; the configuration; the sink's
    name; our count), and pgBadger's reports (``extra``: more runs, as (label, configuration name, files of a
    piece), for pgBadger only) side by side: pgBadger mostly waits (it polls its parser process each second)."""
    pieces = {}
    with contextlib.ExitStack() as stack:
        bench, _ = pg.start(study, stack)
        for cfg in (c for c in study.configurations if c.name in names):
            bench.apply(cfg)
            [sink] = bench.sinks(cfg)
            wait_quiet([sink])
            mark = sink.mark()
            load = bench.pgbench
            subprocess.run([str(load.binary), "-n", "-S", "-M", QUERY_MODE, "-c", str(CLIENTS), "-j", str(CLIENTS),
                            "-t", str(TRANSACTIONS)], env=load.env, capture_output=True, check=True)
            wait_quiet([sink])
            piece = tmp_path / f"{cfg.name}.{sink.name}"
            piece.write_bytes(sink.path.read_bytes()[mark:])
            pieces[cfg.name] = (piece, cfg, sink.name, sink.count_since(mark).records)
    assert set(pieces) == set(names)
    runs = {}
    with ThreadPoolExecutor(len(pieces) + len(extra)) as pool:
        for label, name, files in [(n, n, lambda p: [p]) for n in pieces] + list(extra):
            piece, cfg, sink, _ = pieces[name]
            # a file the backends write themselves (logging_collector off) has stderr's lines
            destination = "stderr" if sink == pg.STDERR_DIRECT_SINK else sink
            prefix = study.base.merged(cfg.settings).get("log_line_prefix")
            runs[label] = pool.submit(pgbadger.run, files(piece), destination, prefix=prefix)
    return pieces, {label: run.result() for label, run in runs.items()}


@pytest.mark.integration
@needs_root
def test_pgbadger_counts_the_statements_our_parser_counts(tmp_path):
    study = study_mod.define(profile="smoke", destinations=DESTINATIONS, clients=[CLIENTS], repeats=1,
                             query_mode=QUERY_MODE, backend="local", output_dir=tmp_path / "out").resolved()
    pieces, reports = logged_runs(study, DESTINATIONS, tmp_path,
                                  extra=[("syslog by session", "syslog", by_process)])
    for name, report in reports.items():
        ours = pieces[name.split()[0]][3]
        # ours: a parse per connection, a bind and an execute per transaction
        assert ours == 2 * TX + CLIENTS, name
        if name == "syslog":
            # pgBadger 12.0 loses some queries of a syslog file whose sessions' lines interleave (2-6 % in trials);
            # each session's lines alone it counts exactly ("syslog by session").
            assert pgbadger.query_count(report) <= TX + SETUP_STATEMENTS
            continue
        # pgBadger: a query per statement executed (a prepared one's parse and bind durations added to its
        # execute), pgbench's set-up statements included, which carry no record of ours (RECORD_MARKER).
        assert pgbadger.query_count(report) == TX + SETUP_STATEMENTS, name
        assert pgbadger.counts_by_query(report)[PGBENCH_S] == TX, name


AUDITED = ["log_statement_all", "log_duration", "log_statement_all_duration", audit_mod.PIPE, audit_mod.DIRECT]


@pytest.mark.integration
@needs_root
def test_pgbadger_counts_the_audit_records_study_05_counts(tmp_path):
    """Study 05's record shapes (log_statement = all, log_duration, both; csvlog, stderr through the collector's
    pipe and written by the backends themselves) against pgBadger's query count of the same files."""
    study = audit_mod.define(profile="smoke", configurations=AUDITED, clients=[CLIENTS], repeats=1,
                             perf_profile=False, output_dir=tmp_path / "out").resolved()
    pieces, reports = logged_runs(study, AUDITED, tmp_path)
    for name, report in reports.items():
        _, cfg, _, ours = pieces[name]
        # ours: nothing lost, every record the configuration's shapes say is due
        assert ours == cfg.expected_records(statements=TX, transactions=TX, connections=CLIENTS), name
        statements = any(r.kind == "statement" for r in cfg.records)
        # pgBadger counts as a query every statement record and every bare "duration:" record: with log_duration
        # it cannot tie a prepared statement's bind and execute durations to its "execute" line (log_statement
        # writes that between them), so each stays a query of its own, as each is a record of ours. The one
        # difference is the shape: our "statement" record is one of the script's statement (RECORD_MARKER), and
        # pgbench's set-up statements, logged too, are not; their durations are in both counts (per_run).
        assert pgbadger.query_count(report) == ours + (SETUP_STATEMENTS if statements else 0), name
        by_query = pgbadger.counts_by_query(report)
        if statements:
            assert by_query[PGBENCH_S] == TX, name
        else:  # durations without text are no normalized query
            assert by_query == {}, name


def by_process(piece):
    """A syslog file split by the process that logged each line, one file per session."""
    sessions = {}
    for line in piece.read_bytes().splitlines(keepends=True):
        sessions.setdefault(re.search(rb" postgres\[(\d+)\]: ", line).group(1), []).append(line)
    out = []
    for pid, lines in sessions.items():
        out.append(piece.with_name(f"{piece.name}.{pid.decode()}"))
        out[-1].write_bytes(b"".join(lines))
    return out
