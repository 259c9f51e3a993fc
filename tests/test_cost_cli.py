"""``python -m logbench cost`` (logbench.analyze.overhead, issue 42): the formula by hand on a small table of our own, the
command on the committed data/processed (each input with its source, the same µs per record as the cost model's
table), bad input refused with the parameter named (exit 2), ``--run`` on the directory of a real smoke run of study
11, and the prediction an own-server run's answer prints beside its measured ratio."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pandas as pd
import pytest

from conftest import needs_root, the_smoke_run_is_here
from logbench.analyze import daemons, overhead
from logbench.base import formatting, paths
from logbench.publish import answer

ENV = {**os.environ, "PYTHONPATH": str(paths.ROOT / "lib")}


def cost(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "logbench", "cost", *args], capture_output=True, text=True, env=ENV,
                          timeout=120)


def write_tables(d) -> None:
    """study 11's two tables, made small enough to price by hand (numbers of our own, not a measurement):
    stderr: 2 records a statement; the backend 10,000 instructions a record [9,000, 11,000] and one 100-byte write
    into the pipe; the collector 1,000 instructions; 0.001 µs an instruction [0.0008, 0.0012]; the pipe's write
    floor at 100 bytes 2 µs."""
    pd.DataFrame([
        {"engine": "postgresql", "server": "15", "configuration": "none", "records_per_statement": 0},
        {"engine": "postgresql", "server": "15", "configuration": "stderr", "records_per_statement": 2,
         "backend_instructions_per_record": 10000, "backend_instructions_per_record_low": 9000,
         "backend_instructions_per_record_high": 11000, "logger_instructions_per_record": 1000,
         "logger_instructions_per_record_low": 1000, "logger_instructions_per_record_high": 1000,
         "backend_write_calls_per_record": 1, "backend_bytes_written_per_record": 100},
    ]).to_csv(d / "record_cost.csv", index=False)
    cal = [{"part": "write_floor", "target": t, "quantity": "write", "nbytes": 100, "value": v, "ci_low": v,
            "ci_high": v, "n": 10} for t, v in (("pipe", 2.0), ("file", 0.5))]
    cal += [{"part": "cpu", "target": "backend", "quantity": "cpu_per_transaction", "value": 20.0, "n": 5},
            {"part": "cpu", "target": "backend", "quantity": "time_per_instruction", "value": 0.001,
             "ci_low": 0.0008, "ci_high": 0.0012, "n": 3}]
    pd.DataFrame(cal).to_csv(d / "record_cost_calibration.csv", index=False)


def test_the_formula_by_hand(tmp_path):
    write_tables(tmp_path)
    rec = overhead.per_record("postgresql", "stderr", tmp_path)
    # backend 10,000 × 0.001 + 1 × 2 µs = 12 µs, collector 1,000 × 0.001 = 1 µs: 13 µs a record
    assert (rec.us.value, rec.us.low, rec.us.high) == pytest.approx((13.0, 9000 * .0008 + 2 + .8, 11000 * .0012 + 2
                                                                     + 1.2))
    assert rec.records_per_statement.value == 2 and rec.daemon_us.value == pytest.approx(1.0)
    p = overhead.predict(10_000, 4, rec)
    # 10,000 statements/s × 2 records × 13 µs ÷ (4 × 10⁶ µs) = 6.5 % of the cores; CPU-bound 1 / 1.065 kept
    assert p.core_share[0] == pytest.approx(0.065)
    assert p.ratio_cpu_bound[0] == pytest.approx(1 / 1.065)
    assert p.ratio_cpu_bound[1] == pytest.approx(1 / (1 + 20_000 * 16.4 / 4e6))
    # the collector's 1 µs a record: one core holds 10⁶ records/s; 20,000 records/s is far below, 1.2 million above
    assert p.ceiling[0] == pytest.approx(1e6) and not p.exceeds_ceiling
    over = overhead.predict(600_000, 4, rec)
    assert over.exceeds_ceiling
    assert "EXCEEDS it" in overhead.text(over) and "1,000,000 records/s" not in overhead.text(p)
    # a rate given its own records per statement (a sampled log): the formula takes it, the source says "given"
    half = overhead.predict(10_000, 4, rec, 0.5)
    assert half.core_share[0] == pytest.approx(10_000 * 0.5 * 13 / 4e6)
    assert half.records_per_statement.source == "given"


def test_the_command_on_the_committed_tables_prints_each_source():
    r = cost("--statements-per-second", "5000", "--cores", "8", "--destination", "stderr")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "overhead ≈ statements/s × records per statement × cost per record ÷ (cores × 10⁶ µs)" in out
    for source in ("data/processed/record_cost.csv (study 11", "data/processed/record_cost_calibration.csv (study 11",
                   "data/processed/pg_destinations_runs.csv (study 02", "(n=3)"):
        assert source in out, source
    assert "predicted share of the cores" in out and "CPU-bound" in out and "one-core ceiling" in out
    # the cost model's fitted variant (timed on study 02's host) beside the counted one, with its own source
    assert "beside it, cost per record, fitted" in out and "data/processed/findings_cost_model_rule.csv" in out
    # 10,000 records/s at the cost model's counted µs per record over 8 cores
    rule = pd.read_csv(paths.PROCESSED / "findings_cost_model_rule.csv")
    us = rule[(rule.configuration == "stderr") & (rule.model == "counted")]["us_per_record"].iloc[0]
    assert f"{100 * 10_000 * us / 8e6:.3g} %" in out


@pytest.mark.parametrize("engine, destination", [("postgresql", "stderr"), ("postgresql", "syslog"),
                                                 ("postgresql", "log_duration"), ("mariadb", "slow_table")])
def test_the_committed_price_is_the_cost_models_counted_one(engine, destination):
    """One pricing: the command's µs per record is the cost model's rule table's (counted) to its printed digits."""
    rule = pd.read_csv(paths.PROCESSED / "findings_cost_model_rule.csv")
    want = rule[(rule.engine == engine) & (rule.configuration == destination) & (rule.model == "counted")]
    rec = overhead.per_record(engine, destination)
    assert rec.us.value == pytest.approx(float(want["us_per_record"].iloc[0]), rel=1e-5)
    assert rec.us.low < rec.us.value < rec.us.high
    if pd.notna(want["daemon_records_per_s"].iloc[0]):
        counted_ceiling = float(want["daemon_records_per_s"].iloc[0])
        timed = daemons.chosen(pd.read_csv(paths.PROCESSED / "findings_cost_model_ceilings.csv"), "pg_destinations",
                               destination)
        if timed is None:  # no run timed this destination's daemon: the counted model's ceiling
            assert 1e6 / rec.daemon_us.value == pytest.approx(counted_ceiling, rel=1e-5)
        else:  # the daemon's own CPU timed in study 02 prices it, the counted model's beside it as a check
            assert 1e6 / rec.daemon_us.value == pytest.approx(float(timed["records_per_s_one_core"]), rel=1e-5)
            assert rec.ceilings_beside[0].name == "counted model"
            assert rec.ceilings_beside[0].value == pytest.approx(counted_ceiling, rel=1e-5)


@pytest.mark.parametrize("destination", ["stderr", "csvlog", "syslog"])
def test_the_paper_the_command_and_the_answer_print_one_ceiling(destination):
    """The daemon's one-core ceiling as the paper's guide table prints it (timed in study 02, at the level where the
    daemon took the most records), the same in ``python -m logbench cost`` and in study 02's answer."""
    timed = daemons.chosen(pd.read_csv(paths.PROCESSED / "findings_cost_model_ceilings.csv"), "pg_destinations",
                           destination)
    shown = daemons.ceiling_text(timed["records_per_s_one_core"], timed["records_per_s_one_core_ci_low"],
                                 timed["records_per_s_one_core_ci_high"])
    guide_table = pd.read_csv(paths.PAPER / "generated" / "guide.csv", dtype=str, keep_default_na=False)
    assert any(c.startswith(shown + f" (n={int(timed['n'])}") for c in guide_table.iloc[:, -1]), shown
    r = cost("--statements-per-second", "5000", "--cores", "8", "--destination", destination)
    assert r.returncode == 0, r.stderr
    assert f"one-core ceiling of {'the syslog daemon' if 'syslog' in destination else 'PostgreSQL'}" in r.stdout
    assert f": {shown} records/s (10⁶ / " in r.stdout
    lines = answer.per_record_lines("pg_destinations", paths.PROCESSED, "pg_destinations")
    assert any(line.startswith(f"  postgresql {destination}:") and line.endswith(f": {shown} records/s on one core")
               for line in lines), lines


def test_syslog_past_its_daemons_core_is_said():
    r = cost("--statements-per-second", "50000", "--cores", "8", "--destination", "syslog")
    assert r.returncode == 0, r.stderr
    assert "one-core ceiling of the syslog daemon" in r.stdout and "EXCEEDS it" in r.stdout


@pytest.mark.parametrize("args, named, allowed", [
    (["--statements-per-second", "0", "--cores", "2", "--destination", "stderr"], "--statements-per-second",
     "a positive number"),
    (["--statements-per-second", "-5", "--cores", "2", "--destination", "stderr"], "--statements-per-second",
     "a positive number"),
    (["--statements-per-second", "100", "--cores", "0", "--destination", "stderr"], "--cores", "a positive number"),
    (["--statements-per-second", "100", "--cores", "2", "--destination", "stderr", "--engine", "oracle"],
     "--engine", "'postgresql', 'mariadb'"),
    (["--statements-per-second", "100", "--cores", "2", "--destination", "stderr", "--records-per-statement", "-1"],
     "--records-per-statement", "a number ≥ 0"),
    (["--statements-per-second", "100", "--cores", "2", "--destination", "kafka"], "--destination",
     "record_cost.csv prices for postgresql: stderr, csvlog, jsonlog, syslog"),
    (["--statements-per-second", "100", "--cores", "2", "--destination", "stderr", "--engine", "mariadb"],
     "--destination", "prices for mariadb: slow_file, slow_table, general_file"),
])
def test_bad_input_names_the_parameter_and_what_is_allowed(capsys, args, named, allowed):
    assert overhead.cost_main(args) == 2
    err = capsys.readouterr().err
    assert f"parameter {named!r} got" in err and allowed in err, err


def test_a_run_directory_without_the_tables_is_refused(tmp_path, capsys):
    (tmp_path / "processed").mkdir()
    assert overhead.cost_main(["--statements-per-second", "1", "--cores", "1", "--destination", "stderr",
                               "--run", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "parameter '--run' got" in err and "record_cost.csv + record_cost_calibration.csv" in err
    assert overhead.cost_main(["--statements-per-second", "1", "--cores", "1", "--destination", "stderr",
                               "--run", str(tmp_path / "absent")]) == 2
    assert "an existing directory" in capsys.readouterr().err
    # study 11's counts without its calibration: the time per instruction is missing, said
    write_tables(tmp_path / "processed")
    (tmp_path / "processed" / "record_cost_calibration.csv").unlink()
    assert overhead.cost_main(["--statements-per-second", "1", "--cores", "1", "--destination", "stderr",
                               "--run", str(tmp_path)]) == 2
    assert "record_cost_calibration.csv beside record_cost.csv" in capsys.readouterr().err
    # an own-server run times the whole server, never a record: refused, pointing at its answer
    own = tmp_path / "own"
    (own / "processed").mkdir(parents=True)
    (own / "processed" / "own_server_runs.csv").write_text("configuration\n")
    assert overhead.cost_main(["--statements-per-second", "1", "--cores", "1", "--destination", "stderr",
                               "--run", str(own)]) == 2
    assert "an own-server run writes neither" in capsys.readouterr().err


def test_an_own_server_runs_prediction_stands_beside_its_measured_ratio(tmp_path):
    """beside_measured on a run's tables (ours, small): the baseline's rate, the arm's counted records per statement,
    the per-record cost of the destination the run wrote to; the measured ratio and CI carried as they are."""
    write_tables(tmp_path)

    def run(conf, tps, records, dests):
        return {"configuration": conf, "clients": 2, "warmup": False, "duration_s": 10.0, "transactions": tps * 10,
                "log_records_received": records, "destinations": json.dumps(dests),
                "extra": json.dumps({"statements": tps * 10})}
    runs = pd.DataFrame([run("none", 1000, 0, []), run("min_duration_0", 800, 16_000, ["stderr"]),
                         run("none_again", 990, 0, [])])
    summary = pd.DataFrame([{"configuration": "min_duration_0", "clients": 2, "ratio": 0.8, "ratio_ci_low": 0.7,
                             "ratio_ci_high": 0.9, "n": 1}])
    t = overhead.beside_measured(summary, runs, 4, "postgresql", lambda arm, d: d[0] if d else None,
                                 run_dir=tmp_path)
    assert list(t["configuration"]) == ["min_duration_0"], "the A/A logs nothing: no prediction"
    row = t.iloc[0]
    assert row["statements_per_s"] == pytest.approx(1000) and row["records_per_statement"] == pytest.approx(2)
    # 1,000 statements/s × 2 records × 13 µs ÷ (4 × 10⁶ µs)
    assert row["core_share"] == pytest.approx(0.0065)
    assert row["predicted_ratio"] == pytest.approx(1 / 1.0065)
    assert (row["ratio"], row["ratio_ci_low"], row["ratio_ci_high"]) == (0.8, 0.7, 0.9)


def test_an_own_server_runs_answer_prints_the_prediction_beside_the_ratio(tmp_path):
    """The answer's lines for a run's processed tables (ours, small), priced by the committed tables: the cores the
    environment record names, said as the server's where its CPU was read here."""
    def run(conf, tps, records, dests):
        return {"configuration": conf, "clients": 1, "warmup": False, "duration_s": 10.0, "transactions": tps * 10,
                "log_records_received": records, "destinations": json.dumps(dests), "server_cpu_s": 5.0,
                "extra": json.dumps({"statements": tps * 10})}
    pd.DataFrame([run("none", 2000, 0, []), run("min_duration_0", 1500, 30_000, ["csvlog"])]).to_csv(
        tmp_path / "own_server_runs.csv", index=False)
    pd.DataFrame([{"configuration": "min_duration_0", "clients": 1, "n": 3, "ratio": 0.75, "ratio_ci_low": 0.7,
                   "ratio_ci_high": 0.8}]).to_csv(tmp_path / "own_server.csv", index=False)
    (tmp_path / "own_server_environment.json").write_text(json.dumps({"cpu_count": 4}))
    text = "\n".join(answer.prediction_lines("own_server", tmp_path, "own_server"))
    us = overhead.per_record("postgresql", "csvlog").us.value
    share = 2000 * 2 * us / 4e6
    assert "4 cores: the server's" in text and "csvlog" in text and "0.750 [0.700, 0.800]" in text
    assert f"{1 / (1 + share):.3f}" in text and f"{share:.1%}" in text


def test_own_server_arms_are_priced_by_the_destination_they_wrote_to():
    from logbench.studies import own_mariadb, own_server

    assert own_server.priced_as("min_duration_0", ["jsonlog"]) == "jsonlog"
    assert own_server.priced_as("statement_all", ["stderr"]) == "log_statement_all"
    assert own_server.priced_as("statement_all", ["csvlog"]) == "csvlog"
    assert own_server.priced_as("none", []) is None
    assert own_mariadb.priced_as("slow_table", ["slow_table"]) == "slow_table"
    priced = overhead.destinations()
    for arm in own_server.ARMS:
        for d in ("stderr", "csvlog", "jsonlog"):
            assert own_server.priced_as(arm, [d]) in priced["postgresql"], (arm, d)
    for arm in own_mariadb.ARMS:
        if arm != own_mariadb.BASELINE:
            assert own_mariadb.priced_as(arm, [arm]) in priced["mariadb"], arm


def test_a_study_02_runs_answer_prints_its_machines_cost_per_record():
    lines = "\n".join(answer.per_record_lines("pg_destinations", paths.PROCESSED, "pg_destinations"))
    table = pd.read_csv(paths.PROCESSED / "pg_destinations_per_record.csv")
    one = table[(table.configuration == "stderr")].sort_values("clients").iloc[0]
    # the value as the answer prints it (three significant figures, trailing zeros kept: 8.80, not 8.8)
    assert "timed" in lines and f"stderr: {formatting.number(one.server_cpu_us_per_record_mean)} [" in lines
    assert "syslog" in lines and "records/s on one core" in lines


@pytest.fixture(scope="module")
def study_11_run(tmp_path_factory):
    """A real smoke run of study 11 (the baseline and stderr under cachegrind, then its 3 × 1 s calibration: ~30 s).
    Run the integration tests under the suite's benchmark lock (``flock /tmp/logbench-bench.lock pytest ...``), as
    test_cli's smoke run: a lock taken here again would wait for the runner's own."""
    out = tmp_path_factory.mktemp("record_cost") / "run"
    r = subprocess.run([sys.executable, "-m", "logbench", "run", "record_cost", "-p", "profile", "smoke",
                        "--output-dir", str(out)], capture_output=True, text=True, env=ENV, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return out


def check_prices_on_a_study_11_run(run_dir) -> None:
    """``cost --run`` on the directory of a real smoke run of study 11 (SPEC.smoke[0]'s parameters)."""
    r = cost("--statements-per-second", "5000", "--cores", "2", "--destination", "stderr", "--run", str(run_dir))
    assert r.returncode == 0, r.stderr
    processed = run_dir / "processed"
    assert f"{processed}/record_cost.csv (study 11" in r.stdout
    assert f"{processed}/record_cost_calibration.csv (study 11" in r.stdout
    assert "counted cost on study 11's machine" in r.stdout and "host speed" not in r.stdout
    # the smoke profile counts instructions only: the write() left out, said
    assert "not counted (the run had no strace counter)" in r.stdout
    rec = overhead.per_record("postgresql", "stderr", run_dir)
    assert 1 < rec.us.value < 100, "a record costs microseconds"
    # the smoke profile counted stderr alone: another destination is refused, naming what it has
    bad = cost("--statements-per-second", "5000", "--cores", "2", "--destination", "syslog", "--run", str(run_dir))
    assert bad.returncode == 2 and "prices for postgresql: stderr" in bad.stderr
    lines = "\n".join(answer.per_record_lines("record_cost", processed, "record_cost"))
    assert f"stderr: {rec.us.text().split(' µs')[0]} µs per record" in lines


@pytest.mark.integration
@pytest.mark.smoke_run_study
@needs_root
def test_run_prices_on_the_machine_of_a_real_study_11_run(request):
    # The workflow's smoke run makes this same run (study 11's SPEC.smoke[0]): where it is in this session,
    # tests/test_workflow.py prices on it, and study 11 is not measured a second time.
    if the_smoke_run_is_here(request):
        pytest.skip("priced on the workflow's smoke run of study 11 in this session (tests/test_workflow.py)")
    check_prices_on_a_study_11_run(request.getfixturevalue("study_11_run"))


def test_run_prices_by_a_study_02_runs_timed_cpu(tmp_path, capsys):
    """--run on study 02's tables (copied from the committed run: a real one): the server's timed CPU per record
    plus, for syslog, the daemon's, at the run's lowest clients level; the collector's or daemon's core the ceiling."""
    import shutil

    for name in ("pg_destinations_per_record.csv", "pg_destinations_runs.csv", "pg_destinations_environment.json"):
        shutil.copy(paths.PROCESSED / name, tmp_path / name)
    table = pd.read_csv(tmp_path / "pg_destinations_per_record.csv")
    one = table[table.configuration == "syslog"].sort_values("clients").iloc[0]
    rec = overhead.per_record("postgresql", "syslog", tmp_path)
    assert rec.source == "timed" and rec.daemon == "the syslog daemon"
    assert rec.us.value == pytest.approx(one.server_cpu_us_per_record_mean + rec.daemon_us.value)
    assert overhead.cost_main(["--statements-per-second", "10000", "--cores", "4", "--destination", "syslog",
                               "--run", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"{tmp_path}/pg_destinations_per_record.csv (study 02, timed" in out
    assert f"{tmp_path}/pg_destinations_runs.csv (study 02, the local daemon's CPU" in out
    # a destination study 02 did not time is refused, naming those it did
    assert overhead.cost_main(["--statements-per-second", "1", "--cores", "1", "--destination", "log_duration",
                               "--run", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "the run's *_per_record.csv prices for postgresql: stderr, csvlog, jsonlog, syslog" in err
