"""How long does MariaDB's throughput stay changed after a log is switched off? (issue 21: carryover measured)

The switchback design compares windows of a few seconds inside one load and leaves a guard of a second after
each switch; that holds only if what a logging arm does to the server ends within the guard. This measures it
over tens of seconds, against a control: one continuous sysbench load (oltp_point_select by default, the post's
cached cell) on a freshly started local MariaDB with the study's base settings and the idle-state hold, made of
segments of ``before`` s of the baseline, ``arm_s`` s of the arm (SET GLOBAL, as the switchback design switches)
and ``after`` s of the baseline again; control segments are the same length with no switch. Segments alternate
arm / control, ``repeats`` of each. Per second, log(tps) against the mean of its own segment's ``before``
seconds; the arm's profile after the switch-off minus the control's at the same offsets, in 5 s bins, with a
Welch t interval over the segments.

    .venv/bin/python benchmarks/mariadb_carryover.py --clients 10 --arm general_log --repeats 3

Never run it beside another benchmark: they measure each other.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))

from logbench.base import cleanup, paths  # noqa: E402
from logbench.measure.benches.mariadb import BASE  # noqa: E402
from logbench.measure.controls import IdleState  # noqa: E402
from logbench.servers import mariadb as mdb  # noqa: E402
from logbench.base.settings import Settings  # noqa: E402
from logbench.workloads.sysbench import Sysbench, parse_intervals  # noqa: E402

import carryover_table  # noqa: E402  (beside this script)

# what switches the arm on and off in an open session (benches.mariadb_switchback: the slow log needs the
# session connected with it on and long_query_time 0; the load connects that way for every arm)
ARMS = {"general_log": ("SET GLOBAL general_log = 1", "SET GLOBAL general_log = 0"),
        "slow_all": ("SET GLOBAL slow_query_log = 1", "SET GLOBAL slow_query_log = 0")}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=10)
    ap.add_argument("--arm", choices=sorted(ARMS), default="general_log")
    ap.add_argument("--test", choices=["oltp_point_select", "oltp_read_write"], default="oltp_point_select")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--before", type=int, default=15)
    ap.add_argument("--arm-s", type=int, default=9)
    ap.add_argument("--after", type=int, default=30)
    ap.add_argument("--lead-in", type=int, default=10)
    ap.add_argument("--save", help="write the per-second tps and the segment order to this JSON file")
    a = ap.parse_args(argv)
    for name in ("clients", "repeats", "before", "arm_s", "after"):
        if getattr(a, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be at least 1")
    seg = a.before + a.arm_s + a.after
    total = a.lead_in + 2 * a.repeats * seg
    on, off = ARMS[a.arm]
    log_dir = cleanup.private_dir("logbench-log-", paths.scratch_root())
    base = Settings.of("mariadb", {**BASE, "innodb_buffer_pool_size": "512M", "slow_query_log": True,
                                   "long_query_time": 0})
    with IdleState("hold"), mdb.LocalMariaDB(base, log_dir=log_dir) as srv:
        srv.query("CREATE DATABASE IF NOT EXISTS sbtest")
        sb = Sysbench(srv.conninfo, tables=4, table_size=100000)
        sb.prepare(a.test, threads=2)
        proc = subprocess.Popen(sb.command(a.test, "run", threads=a.clients, seconds=total + 2, report_interval=1),
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            zero = None
            # sessions connect with the slow log on (taken at connect); the baseline has it off globally
            while zero is None:
                if len(srv.query("SELECT 1 FROM information_schema.processlist WHERE db = 'sbtest'")) >= a.clients:
                    zero = time.time()
                time.sleep(0.05)
            srv.query("SET GLOBAL slow_query_log = 0")
            order = []
            for r in range(a.repeats):
                order += [("arm", r), ("control", r)] if r % 2 == 0 else [("control", r), ("arm", r)]
            for i, (kind, _) in enumerate(order):
                start = zero + a.lead_in + i * seg
                if kind == "arm":
                    time.sleep(max(0.0, start + a.before - time.time()))
                    srv.query(on)
                    time.sleep(max(0.0, start + a.before + a.arm_s - time.time()))
                    srv.query(off)
            out = proc.communicate(timeout=total + 120)[0]
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    tps = {round(i.t_s): i.tps for i in parse_intervals(out)}
    if a.save:
        Path(a.save).write_text(json.dumps({"args": vars(a), "order": order, "tps": tps, "output": out}))
    if len(tps) < total:
        print(f"sysbench reported {len(tps)} of {total} seconds; its output ends:\n{out[-1500:]}")
    # report k covers [k-1, k) s after sysbench's start, ~ our zero (all sessions connected)
    profiles: dict[str, list[np.ndarray]] = {"arm": [], "control": []}
    for i, (kind, _) in enumerate(order):
        first = a.lead_in + i * seg + 1
        series = np.array([tps.get(first + s, math.nan) for s in range(seg)])
        if np.isnan(series).any():
            # sysbench once printed no report for 85 s of a 658 s load (its queries' latencies stayed < 0.1 s)
            print(f"segment {i} ({kind}) lacks {int(np.isnan(series).sum())} of its seconds: left out")
            continue
        profiles[kind].append(np.log(series) - np.log(series[:a.before]).mean())
    print(f"{a.arm} {a.arm_s} s at {a.clients} clients, sysbench {a.test}; {a.repeats} arm and {a.repeats} control "
          f"segments of {seg} s in one load; log(tps) against each segment's first {a.before} s")
    arm, ctl = np.array(profiles["arm"]), np.array(profiles["control"])
    carryover_table.print_bins(arm, ctl, a.before, a.arm_s, a.after)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
