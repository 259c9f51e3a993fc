"""How long does PostgreSQL's throughput stay changed after a log is switched off? (issue 21: carryover measured)

Study 02's switchback run at 4 clients (2 per core) left the baseline window after a file-logging window at 0.76
of the load's baseline median (n = 3) against 1.08 after a baseline window; notebook 00's committed sessions
show the same at 4 clients (0.93 after stderr, n = 22, against 1.01), none at 1 client. This measures the
disturbance over tens of seconds, against a control: one continuous ``pgbench -S -M prepared`` load on a freshly
started local server with study 02's base settings and the idle-state hold, made of segments of ``before`` s of
the baseline, ``arm_s`` s of the arm (switched by the switch file and a reload, as the switchback design does)
and ``after`` s of the baseline again; control segments are the same length with no switch. Segments alternate
arm / control, ``repeats`` of each. Per second: log(tps) against the mean of its own segment's ``before``
seconds, and the kernel's dirty and writeback page-cache bytes (/proc/meminfo), which a log written at tens of
MB/s leaves to be written back ~30 s later (vm.dirty_expire_centisecs). The arm's profile after the switch-off
minus the control's at the same offsets, in 5 s bins, with a Welch t interval over the segments.
``--sync`` calls sync(2) right after each switch-off (and at the same offset of a control segment), to test
whether the later disturbance is the log's writeback.

    .venv/bin/python benchmarks/pg_carryover.py --clients 4 --arm stderr --repeats 4

Never run it beside another benchmark: they measure each other.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import psutil
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))

from logbench.base import cleanup, paths  # noqa: E402
from logbench.measure.benches.pg_switchback import Control  # noqa: E402
from logbench.measure.controls import IdleState  # noqa: E402
from logbench.servers.postgres import LocalPostgres  # noqa: E402
from logbench.base.settings import Settings  # noqa: E402
from logbench.studies import pg_destinations as study_mod  # noqa: E402
from logbench.workloads.pgbench import _PROGRESS, Pgbench  # noqa: E402

import carryover_table  # noqa: E402  (beside this script)

FILE_ARMS = ("stderr", "csvlog", "jsonlog")
CPU_KINDS = ("logger_cpu", "kernel_cpu", "backends_user", "backends_sys", "pgbench_user", "pgbench_sys",
             "user", "system", "idle", "iowait", "softirq", "steal")


def meminfo_kb(*names: str) -> dict[str, int]:
    out = {}
    for line in Path("/proc/meminfo").read_text().splitlines():
        k, v = line.split(":", 1)
        if k in names:
            out[k] = int(v.split()[0])
    return out


def cpu_s(pids: list[int]) -> tuple[float, float]:
    """User and system CPU seconds of these processes and their threads (those gone count 0)."""
    tick, user, system = os.sysconf("SC_CLK_TCK"), 0.0, 0.0
    for pid in pids:
        try:
            f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            user, system = user + int(f[11]) / tick, system + int(f[12]) / tick
        except (OSError, IndexError):
            pass
    return user, system


def kworkers() -> list[int]:
    """The kernel's own threads (children of kthreadd): writeback, journal, compaction, softirqs."""
    out = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                if (p / "stat").read_text().rsplit(")", 1)[1].split()[1] == "2":
                    out.append(int(p.name))
            except (OSError, IndexError):
                pass
    return out


def backends(postmaster: int) -> list[int]:
    # a client's backend: "postgres: postgres postgres [local] idle" (the control session's too, idle)
    return [c.pid for c in psutil.Process(postmaster).children() if "[local]" in " ".join(c.cmdline())]


def machine_cpu() -> dict[str, float]:
    """The machine's CPU seconds so far by kind (/proc/stat's first line)."""
    f = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]
    tick = os.sysconf("SC_CLK_TCK")
    return dict(zip(("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"),
                    (int(x) / tick for x in f)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--arm", choices=FILE_ARMS, default="stderr")
    ap.add_argument("--repeats", type=int, default=4)
    ap.add_argument("--before", type=int, default=10)
    ap.add_argument("--arm-s", type=int, default=4)
    ap.add_argument("--after", type=int, default=40)
    ap.add_argument("--lead-in", type=int, default=5)
    ap.add_argument("--scale", type=int, default=10)
    ap.add_argument("--sync", action="store_true", help="sync(2) right after each switch-off (and in controls)")
    ap.add_argument("--save", help="write the per-second series and the segment order to this JSON file")
    a = ap.parse_args(argv)
    for name in ("clients", "repeats", "before", "arm_s", "after", "scale"):
        if getattr(a, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be at least 1")
    seg = a.before + a.arm_s + a.after
    total = a.lead_in + 2 * a.repeats * seg
    study = study_mod.define(profile="standard", destinations=["none", a.arm], backend="local")
    base = Settings.of("postgresql", study_mod.BASE)
    arm, none = (study.bench_configuration(c).settings for c in (a.arm, "none"))
    log_dir = cleanup.private_dir("logbench-log-", paths.scratch_root())
    order = []
    for r in range(a.repeats):
        order += [("arm", r), ("control", r)] if r % 2 == 0 else [("control", r), ("arm", r)]
    per_s: dict[int, dict[str, float]] = {}  # second of the load -> what was read then
    with IdleState("hold"), LocalPostgres(base, log_dir=log_dir) as pg:
        pgb = Pgbench(pg.binary("pgbench"), pg.conninfo)
        pgb.initialise(a.scale)
        logger = [c.pid for c in psutil.Process(pg.pid).children() if "logger" in " ".join(c.cmdline())]
        with Control(pg) as control:
            argv_ = [*pgb.command(a.clients, total + 2, "prepared", progress=1)]
            t_start = time.time()
            proc = subprocess.Popen(argv_, env=pgb.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                zero = t_start
                nxt = zero
                plan = []
                for i, (kind, _) in enumerate(order):
                    s0 = zero + a.lead_in + i * seg
                    if kind == "arm":
                        plan += [(s0 + a.before, "on"), (s0 + a.before + a.arm_s, "off")]
                    else:
                        plan += [(s0 + a.before + a.arm_s, "ctl")]
                clients_: list[int] = []
                while proc.poll() is None and nxt < zero + total:
                    if len(clients_) < a.clients + 1:  # the load's backends, once all have connected
                        clients_ = backends(pg.pid)
                    while plan and plan[0][0] <= time.time():
                        _, what = plan.pop(0)
                        if what == "on":
                            control.apply(arm, requested=time.time())
                        else:
                            if what == "off":
                                control.apply(none, requested=time.time())
                            if a.sync:
                                os.sync()
                    (bu, bs), (pu, ps) = cpu_s(clients_), cpu_s([proc.pid])
                    per_s[int(round(nxt - zero))] = {**meminfo_kb("Dirty", "Writeback"),
                                                     "logger_cpu": sum(cpu_s(logger)),
                                                     "kernel_cpu": sum(cpu_s(kworkers())),
                                                     "backends_user": bu, "backends_sys": bs, "pgbench_user": pu,
                                                     "pgbench_sys": ps, **machine_cpu()}
                    nxt += 1
                    time.sleep(max(0.0, min(nxt, plan[0][0] if plan else nxt) - time.time()))
                out, err = proc.communicate(timeout=total + 120)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
    # -P 1's interval ending at k s after pgbench's start covers [k-1, k)
    tps = {round(float(m.group(1))): float(m.group(2)) for m in _PROGRESS.finditer(err)}
    if a.save:
        Path(a.save).write_text(json.dumps({"args": vars(a), "order": order, "tps": tps, "per_s": per_s}))
    print(f"{a.arm} {a.arm_s} s at {a.clients} clients, pgbench -S -M prepared scale {a.scale}"
          f"{' (sync after each switch-off)' if a.sync else ''}; {a.repeats} arm and {a.repeats} control segments "
          f"of {seg} s in one load; log(tps) against each segment's first {a.before} s")
    profiles: dict[str, list[np.ndarray]] = {"arm": [], "control": []}
    dirty: dict[str, list[np.ndarray]] = {"arm": [], "control": []}
    cpu: dict[tuple[str, str], list[np.ndarray]] = {}
    for i, (kind, _) in enumerate(order):
        first = a.lead_in + i * seg + 1
        series = np.array([tps.get(first + s, math.nan) for s in range(seg)])
        if np.isnan(series).any() or series.min() <= 0:
            print(f"segment {i} ({kind}) lacks {int(np.isnan(series).sum())} of its seconds: left out")
            continue
        profiles[kind].append(np.log(series) - np.log(series[:a.before]).mean())
        dirty[kind].append(np.array([(per_s.get(first - 1 + s, {}).get("Dirty", 0) + per_s.get(first - 1 + s, {}).get(
            "Writeback", 0)) / 1024 for s in range(seg)]))
        for k in CPU_KINDS:
            c = np.array([per_s.get(first - 1 + s, {}).get(k, math.nan) for s in range(seg + 1)])
            cpu.setdefault((kind, k), []).append(np.diff(c))
    armp, ctl = np.array(profiles["arm"]), np.array(profiles["control"])
    da, dc = np.array(dirty["arm"]), np.array(dirty["control"])
    carryover_table.print_bins(armp, ctl, a.before, a.arm_s, a.after, extra_header=" dirty+writeback MB arm / ctl",
                               extra=lambda lo, hi: f"{da[:, lo:hi].mean():7.1f} / {dc[:, lo:hi].mean():7.1f}")
    off = a.before + a.arm_s
    for k in CPU_KINDS:
        print(f"{k:>10} per second, arm segments, 2 s before the arm to 12 s after it:",
              " ".join(f"{v:.2f}" for v in np.nanmean(np.array(cpu[("arm", k)]), 0)[a.before - 2: off + 12]))
    print("per second after the switch-off, arm - control (log tps):",
          " ".join(f"{v:+.3f}" for v in (armp[:, off:off + 10].mean(0) - ctl[:, off:off + 10].mean(0))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
