"""Re-capture tests/fixtures/pg15_*: what PostgreSQL writes (stderr and csvlog) for pgbench -S -t 20 -c 2 under each statement-logging mode."""
# Usage: PYTHONPATH=lib python scripts/capture_pg_log_fixtures.py tests/fixtures   (starts a private PostgreSQL for seconds)
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from logbench.base import paths
from logbench.base.settings import Settings
from logbench.servers.postgres import LocalPostgres
from logbench.workloads.pgbench import Pgbench
from logbench.measure.benches.postgres import BASE


MODES = {
    "log_statement_all": {"log_statement": "all"},
    "log_duration": {"log_duration": True},
    "log_statement_all_duration": {"log_statement": "all", "log_duration": True},
    "min_duration_0": {"log_min_duration_statement": 0},
}
out = Path(sys.argv[1])
log_dir = Path(tempfile.mkdtemp(prefix="logbench-log-", dir=paths.scratch_root()))
meta = {}
try:
    with LocalPostgres(Settings.of("postgresql", {**BASE, "log_destination": "stderr,csvlog"}), log_dir=log_dir) as pg:
        pgb = Pgbench(pg.binary("pgbench"), pg.conninfo)
        pgb.initialise(1)
        files = {"log": log_dir / "postgresql.log", "csv": log_dir / "postgresql.csv"}
        for name, s in MODES.items():
            for qm in ("simple", "prepared"):
                pg.apply(Settings.of("postgresql", s))
                offs = {k: f.stat().st_size for k, f in files.items()}
                argv = [str(pgb.binary), "-n", "-S", "-M", qm, "-c", "2", "-j", "2", "-t", "20"]
                r = subprocess.run(argv, env=pgb.env, capture_output=True, text=True, check=True)
                time.sleep(0.5)
                for k, f in files.items():
                    (out / f"pg15_{name}_{qm}.{k}").write_bytes(f.read_bytes()[offs[k]:])
                pg.apply(Settings.of("postgresql", {}))
                tx = int(next(l for l in r.stdout.splitlines() if "actually processed" in l).split()[-1].split("/")[0])
                meta[f"pg15_{name}_{qm}"] = {"settings": s, "query_mode": qm, "clients": 2, "transactions": tx,
                                            "command": "pgbench " + " ".join(argv[1:]), "server": pg.version()}
finally:
    shutil.rmtree(log_dir, ignore_errors=True)
(out / "pg15_statement_logging.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
