"""The runner's bench on a user's MariaDB/MySQL (:mod:`logbench.servers.own_mariadb`): switches by SET GLOBAL
(each switch timed), runs sysbench — the user's Lua script or ``oltp_point_select`` — in a new process per run, so
every connection of a run opens after the switch and takes the arm's ``long_query_time``, and counts the records
the study's log file or ``mysql.slow_log`` received in each run."""

from __future__ import annotations

import dataclasses

from ..design import PlannedRun
from ...base.errors import ToolError
from ...base.records import Measurement
from ...servers.mariadb_logs import slow_entry
from ...servers.own_mariadb import GeneralFileSink, SlowFileSink, SlowLog, SlowTableSink, Switcher
from ...base.settings import Configuration
from ...workloads.sysbench import RunningSysbench
from .mariadb import measurement, measurement_extra, run_seed, statements_sent
from .on_user_server import OnUserServerBench

REDACTED = "--mysql-password=(not shown)"


class OwnMariaDBBench(OnUserServerBench):
    engine = "mariadb"
    query_mode = "text"  # --db-ps-mode=disable: every statement one slow-log entry and one general-log line

    def __init__(self, study, switcher: Switcher, argv: list[str], password: str, log: SlowLog,
                 server_version: str, server_pid: int | None):
        self.study, self.switcher, self.log = study, switcher, log
        self.argv, self.password = argv, password
        self.server_version = server_version
        self.pid = self.server_process = server_pid
        self.scale = study.table_size
        self.workload = study.load.label
        self.switches: list[tuple[str, float]] = []

    def _hide(self, text: str) -> str:
        return text.replace(self.password, "(not shown)") if self.password else text

    def _run(self, threads: int, seconds: int, seed: int, report_interval: int = 0):
        argv = [*self.argv, f"--threads={threads}", f"--time={int(seconds)}", "--events=0",
                f"--report-interval={report_interval}", "--histogram=on", f"--rand-seed={seed}", "run"]
        try:
            r = RunningSysbench(argv, self.study.test_name, timeout=seconds + 120, on_line=None).wait()
        except ToolError as e:
            raise ToolError(self._hide(str(e))) from None
        return r

    def warm(self, run: PlannedRun, seconds: float) -> None:
        self._run(run.clients, max(1, int(seconds)), run_seed(self.study, run, warm=True))

    def measure(self, run: PlannedRun, seconds: float) -> Measurement:
        r = self._run(run.clients, int(seconds), run_seed(self.study, run), report_interval=1)
        extra = measurement_extra(r)
        extra["command"] = " ".join(REDACTED if a.startswith("--mysql-password=") else a for a in r.command[1:])
        extra["statements"] = statements_sent(r.queries, r.ignored_errors)
        extra["log_read"] = self.log_read(self.study.configuration(run.configuration))
        return measurement(r, run, extra)

    def log_read(self, configuration: Configuration) -> str:
        if "slow_table" in configuration.destinations:
            return "sql"
        return self.log.how or f"not counted: {self.log.why_not}"

    def sinks(self, configuration: Configuration) -> list:
        out = []
        for d in configuration.destinations:
            if d == "slow_table":
                out.append(SlowTableSink(self.log).counting(configuration.records))
            elif self.log.how == "file":
                sink = SlowFileSink(self.log) if d == "slow_file" else GeneralFileSink(self.log)
                out.append(sink.counting(configuration.records))
        return out

    def expected_records(self, configuration: Configuration, run: PlannedRun, m: Measurement) -> int:
        if any(d.startswith("slow") for d in configuration.destinations):
            # the slow log's shape depends on the server's version (10.5 also logs each connection's end)
            configuration = dataclasses.replace(configuration, records=(slow_entry(self.server_version),))
        return configuration.expected_records(statements=m.extra["statements"], transactions=m.transactions,
                                              connections=run.clients + int(m.extra.get("reconnects", 0)), runs=1)

    def loss_defined(self, configuration: Configuration) -> bool:
        return bool(self.sinks(configuration))

