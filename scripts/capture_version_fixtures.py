"""Re-capture tests/fixtures/versions/: what each server version of docker/servers.tsv writes to its log files
(PostgreSQL: stderr, csvlog, jsonlog from 15, pgbench -S -t 20 -c 2 under each statement-logging mode; MariaDB:
the slow log of every statement), from a real server of that version in its container, seconds each."""
# Usage: PYTHONPATH=lib python scripts/capture_version_fixtures.py [OUT_DIR] [VERSION_KEY ...]
#   VERSION_KEY: pg13, pg15, pg17, mariadb10.5, ... (default: every version of docker/servers.tsv);
#   KEY=IMAGE captures that version from another image of it (e.g. a pinned build under a scratch tag).
#   Builds a missing image first (scripts/setup_docker.sh --image ...); run it under the tests lock.
import json
import sys
from pathlib import Path

from logbench.measure import versions
from logbench.servers.containers import server_images

out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1] / "tests/fixtures/versions"
keys = dict((a.split("=", 1) + [None])[:2] for a in sys.argv[2:])
meta_file = out / "captured.json"
meta = json.loads(meta_file.read_text()) if meta_file.exists() else {}
for kind, capture, prefix in (("postgres", versions.capture_pg, "pg"), ("mariadb", versions.capture_mariadb, "mariadb")):
    for version in server_images(kind):
        if keys and f"{prefix}{version}" not in keys:
            continue
        print(f"capturing {kind} {version}", flush=True)
        meta = {k: v for k, v in meta.items() if not k.startswith(f"{prefix}{version}_")}
        meta.update(capture(version, out, image=keys.get(f"{prefix}{version}")))
        versions.write_meta(out, meta)
print(f"wrote {out}")
