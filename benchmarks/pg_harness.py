"""Benchmarks of the instrument itself (numbers for the issue notes, never asserted in tests).

1. Harness fidelity: tps of a run driven by logbench (sampled transaction log,
   record keeping) against the same plain ``pgbench`` command on the same server
   and settings, in interleaved pairs; the ratio with its Fieller 95 % CI.
2. Switching cost: median seconds to apply a configuration by reload and by restart.

    .venv/bin/python benchmarks/pg_harness.py --pairs 8 --duration 4 --clients 4
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

from logbench.base import paths, stats
from logbench.servers.postgres import LocalPostgres
from logbench.base.settings import Settings
from logbench.studies import pg_destinations as study_mod
from logbench.workloads.pgbench import Pgbench, parse_output


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=8)
    ap.add_argument("--duration", type=int, default=4)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--scale", type=int, default=10)
    ap.add_argument("--mode", default="prepared")
    ap.add_argument("--switches", type=int, default=10)
    args = ap.parse_args()

    log_dir = Path(tempfile.mkdtemp(prefix="logbench-log-", dir=paths.scratch_root()))
    try:
        with LocalPostgres(Settings.of("postgresql", study_mod.BASE), log_dir=log_dir) as pg:
            pgb = Pgbench(pg.binary("pgbench"), pg.conninfo)
            pgb.initialise(args.scale)
            pg.apply(Settings.of("postgresql", {"log_min_duration_statement": 0}))
            harness, raw = [], []
            txlog = log_dir.parent / f"{log_dir.name}-txlog"
            txlog.mkdir()
            for i in range(args.pairs):
                # Alternate which goes first so drift does not favour one side.
                order = ("harness", "raw") if i % 2 == 0 else ("raw", "harness")
                for which in order:
                    if which == "harness":
                        r = pgb.run(args.clients, args.duration, args.mode, log_prefix=txlog / f"p{i}",
                                    sampling_rate=study_mod.PROFILES["standard"]["sampling_rate"])
                        harness.append(r.tps)
                    else:
                        argv = pgb.command(args.clients, args.duration, args.mode)
                        out = subprocess.run(argv, env=pgb.env, capture_output=True, text=True, check=True).stdout
                        raw.append(float(parse_output(out)["tps"]))
            shutil.rmtree(txlog, ignore_errors=True)
            fidelity = stats.ratio_ci(harness, raw)

            reload_s, restart_s = [], []
            a = Settings.of("postgresql", {"log_min_duration_statement": 0})
            b = Settings.of("postgresql", {"log_min_duration_statement": 0, "log_destination": "csvlog"})
            on = Settings.of("postgresql", {"logging_collector": True})
            off = Settings.of("postgresql", {"logging_collector": False})
            for i in range(args.switches):
                reload_s.append(pg.apply(b if i % 2 == 0 else a).seconds)
            for i in range(args.switches):
                sw = pg.apply(off if i % 2 == 0 else on)
                assert sw.kind == "restart", sw
                restart_s.append(sw.seconds)
    finally:
        shutil.rmtree(log_dir, ignore_errors=True)
    print(json.dumps({
        "pairs": args.pairs, "duration_s": args.duration, "clients": args.clients, "mode": args.mode,
        "harness_tps": harness, "raw_tps": raw,
        "fidelity_ratio": fidelity.value, "fidelity_ci95": [fidelity.low, fidelity.high],
        "reload_median_s": statistics.median(reload_s), "restart_median_s": statistics.median(restart_s),
        "switches_each": args.switches,
    }, indent=2))


if __name__ == "__main__":
    main()
