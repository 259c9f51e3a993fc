"""A synthetic study with a known cost (tests, and a dry run of the pipeline)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from .observations import BYTES_PER_KB, DESTINATION_FAMILY, FAMILIES, _family_shares

def synthetic_runs(*, line_cost_us: float | dict[str, float] = 4.0, kb_cost_us: float = 1.5,
                   line_cost_per_client_us: float = 0.0,
                   configurations: dict[str, tuple] | None = None,
                   clients: tuple[int, ...] = (1, 2, 4), base_us: dict[int, float] | None = None,
                   repeats: int = 5, noise_cv: float = 0.01, duration_s: float = 10.0, seed: int = 1,
                   study: str = "synthetic", engine: str = "postgresql", env_id: str = "synthetic",
                   cpu_count: int = 2) -> pd.DataFrame:
    """Runs shaped like :class:`logbench.base.records.Run` rows whose time per transaction is known exactly.

    ``configurations`` maps a name to (records per transaction, bytes per record[, destinations]); without
    destinations they are read from the name (``"syslog,csvlog"``; a name that is no destination logs to
    ``stderr``). The first configuration is the baseline and must log nothing. ``line_cost_us`` is one cost
    or a cost per destination family. Time per transaction = base(clients) + Σ over destinations of
    lines × (family cost + per_client × (clients − 1)) + kB × kb_cost, times a normal noise factor with
    coefficient of variation ``noise_cv``.
    """
    configurations = configurations or {"none": (0, 0), "stderr": (2, 120), "csvlog": (2, 260),
                                        "jsonlog": (2, 480), "syslog,csvlog": (4, 190)}
    costs = line_cost_us if isinstance(line_cost_us, dict) else {f: float(line_cost_us) for f in FAMILIES}
    base_us = base_us or {c: 60.0 / min(c, cpu_count) + 5.0 for c in clients}
    rng = np.random.default_rng(seed)
    rows = []
    position = 0
    for rep in range(repeats):
        for cfg, spec in configurations.items():
            rec, bpr = spec[0], spec[1]
            if len(spec) > 2:
                dests = tuple(spec[2])
            elif not rec:
                dests = ()
            else:
                named = tuple(cfg.split(","))
                dests = named if all(d in DESTINATION_FAMILY for d in named) else ("stderr",)
            shares = _family_shares(dests) if rec else {}
            for c in clients:
                us = (base_us[c] + sum(rec * share * (costs[fam] + line_cost_per_client_us * (c - 1))
                                       for fam, share in shares.items())
                      + rec * bpr / BYTES_PER_KB * kb_cost_us)
                us *= 1 + noise_cv * rng.standard_normal()
                tps = 1e6 / us
                tx = int(round(tps * duration_s))
                tps = tx / duration_s
                records = int(rec * tx)
                log_bytes = int(records * bpr)
                rows.append({
                    "study": study, "configuration": cfg, "engine": engine, "clients": c, "threads": c,
                    "repeat": rep, "position": position, "warmup": False, "duration_s": duration_s,
                    "wall_s": duration_s, "transactions": tx, "failed": 0, "tps": tps,
                    "latency_mean_ms": c * us / 1000.0, "latency_p95_ms": 1.5 * c * us / 1000.0,
                    "log_records_expected": records, "log_records_received": records,
                    "log_loss": math.nan if records == 0 else 0.0, "log_lines": records, "log_bytes": log_bytes,
                    "log_lines_per_s": records / duration_s, "log_bytes_per_s": log_bytes / duration_s,
                    "server_cpu_s": duration_s * min(c, cpu_count) * 0.5, "logger_cpu_s": 0.0,
                    "destinations": json.dumps(list(dests)),
                    "env_id": env_id, "scale": 10, "workload": "pgbench -S",
                })
                position += 1
    return pd.DataFrame(rows)
