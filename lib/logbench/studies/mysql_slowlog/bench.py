"""Study 04's bench: the MariaDB half of the runner's loop for one cell, a run's own numbers (SlowlogNumbers), its
IO-bound evidence, the wait for the previous run's purge before each run (``SlowlogBench.settle``), the io regime's
memory limit held on a (re)started server, and what a destination's records are expected to be."""

from __future__ import annotations

import dataclasses
import math
import re
import time
from dataclasses import dataclass

from ...measure.benches import mariadb as mb
from ...measure.design import PlannedRun
from ...measure.runner import Measurement
from ...servers import mariadb as mdb
from ...servers import memlimit
from ...base.settings import Configuration, Settings
from ...workloads.sysbench import Sysbench
from .spec import DEVNULL, MysqlSlowlogStudy

def expected_statement_records(settings: Settings, queries: int) -> int:
    """Records a destination should get for ``queries`` plain-text statements under ``settings``."""
    return Configuration("", settings, records=mb.statement_records(settings)).expected_records(statements=queries)


@dataclass(frozen=True, kw_only=True)
class SlowlogNumbers(mb.SysbenchNumbers):
    """A run's own measurements (columns of the processed runs): sysbench's and these."""

    regime: str
    cell: int
    slow_file_bytes_during_run: int
    # Whether the run was IO-bound, by its own counters (io_evidence): InnoDB's page requests and the ones that
    # missed the buffer pool (SHOW GLOBAL STATUS before and after), and under the io regime's memory limit the
    # cgroup's: limit hits, page cache growth, reads from the paced disk and their rate.
    bp_read_requests: int
    bp_reads: int
    bp_miss_share: float
    measured_regime: str  # 'io_bound' | 'cached' | 'unverified' (misses, but no cgroup to say from where)
    memory_limit_hits: float = math.nan
    memory_usage_bytes: float = math.nan
    page_cache_growth_bytes: float = math.nan
    disk_reads: float = math.nan
    disk_reads_per_s: float = math.nan
    # SlowlogBench.settle: the unmeasured wait before the run for the previous run's purge (and, under the read cap,
    # its background reads), the purge backlog it found and the one the run inherited, and whether it settled.
    settle_s: float = math.nan
    history_at_end_of_previous: float = math.nan
    history_at_start: float = math.nan
    settled: bool = False  # (runs recorded before the wait existed: None)
    settle_on: str = "history"  # what said the previous run's work was done: 'history' or 'server_cpu' (before 10.6)


# SlowlogBench.settle: a run starts once the purge backlog is at most SETTLED_HISTORY and, under a read cap, the
# server read at most this share of the cap over the last step; never waiting longer than the timeout.
SETTLE_STEP_S = 0.5
SETTLED_HISTORY = 0
SETTLED_READ_SHARE = 0.05
SETTLE_TIMEOUT_S = 30.0
# MariaDB before 10.6 shrinks the history list it reports only when purge truncates the undo segments, every
# innodb_purge_rseg_truncate_frequency (128) batches: after a 50-client oltp_read_write run on 10.5.29 it stayed at
# 1528 for the whole 30 s timeout (containers, 2026-11-26), where 11.8.9's reached 0 within a second. There a run
# starts once the server's own CPU stays under this share of a core for a step: its background work is done.
HISTORY_SHOWS_PURGE_FROM = (10, 6)
SETTLED_CPU_SHARE = 0.05


def history_shows_purge(server_version: str) -> bool:
    """Whether the server's Innodb_history_list_length falls as purge works (10.6 and later; '' = the local one)."""
    m = re.match(r"(\d+)\.(\d+)", server_version or "")
    return not m or (int(m[1]), int(m[2])) >= HISTORY_SHOWS_PURGE_FROM


# InnoDB's page size (MariaDB's default innodb_page_size): the bytes one buffer pool miss reads.
PAGE_BYTES = 16384
_POOL_COUNTERS = ("Innodb_buffer_pool_read_requests", "Innodb_buffer_pool_reads")


def io_evidence(pool0: dict[str, int], pool1: dict[str, int], mem0: dict | None, mem1: dict | None,
                seconds: float) -> dict[str, object]:
    """A run's IO-bound evidence (the SlowlogNumbers fields) from the counters before and after it: InnoDB's
    (SHOW GLOBAL STATUS) and, under a memory limit, the cgroup's (memlimit.MemoryLimit.stats; None: none)."""
    requests = pool1["Innodb_buffer_pool_read_requests"] - pool0["Innodb_buffer_pool_read_requests"]
    reads = pool1["Innodb_buffer_pool_reads"] - pool0["Innodb_buffer_pool_reads"]
    share = reads / requests if requests > 0 else math.nan
    out: dict[str, object] = {"bp_read_requests": requests, "bp_reads": reads, "bp_miss_share": share}
    if mem0 is None or mem1 is None:
        missed = requests > 0 and share >= memlimit.IO_BOUND_MISS_SHARE
        out["measured_regime"] = "unverified" if missed else "cached"
        return out
    hits = mem1["limit_hits"] - mem0["limit_hits"]
    growth = mem1["file_bytes"] - mem0["file_bytes"]
    disk = mem1["disk_reads"] - mem0["disk_reads"] if "disk_reads" in mem1 else None
    out.update(memory_limit_hits=hits, page_cache_growth_bytes=growth, memory_usage_bytes=mem1["usage_bytes"],
               measured_regime="io_bound" if memlimit.io_bound(reads, requests, limit_hits=hits, page_cache_growth=growth,
                                                               page_bytes=PAGE_BYTES, disk_reads=disk) else "cached")
    if disk is not None:
        out.update(disk_reads=disk, disk_reads_per_s=disk / seconds if seconds > 0 else math.nan)
    return out


class SlowlogBench(mb.SysbenchBench):
    """The MariaDB half of the runner's loop for one cell (see :class:`logbench.measure.runner.Bench`); in the io regime
    under a memory limit (``memory_limit``), its server's processes are held in it, restarted or not."""

    def __init__(self, study: MysqlSlowlogStudy, server: mdb.MariaDBServer, sysbench: Sysbench,
                 memory_limit: memlimit.MemoryLimit | None = None):
        self.regime = study.regimes[0]
        super().__init__(study, server, sysbench, study.load, base=study.base_for(self.regime))
        self.memory_limit = memory_limit if self.regime == "io" else None
        self.table = mdb.TableSink(server)
        self._sinks: dict[str, object] = {
            "slow_file": mdb.slow_file_sink(server.slow_log),
            "general_file": mdb.general_file_sink(server.general_log),
            "slow_table": self.table,
        }

    def apply(self, configuration: Configuration):
        sw = super().apply(configuration)
        if sw.kind == "restart" and self.memory_limit is not None:
            hold(self.memory_limit, self.server)
        if sw.kind == "restart":
            # A restarted server starts cold (its buffer pool is reloaded in the background):
            # load it before the run is marked, so the restart is not measured as logging cost.
            self.warm_after_restart()
        if "slow_table" in configuration.destinations:
            # Counting is by difference; emptying keeps COUNT(*) on the CSV table quick.
            self.table.truncate()
        self._rotate_if_large()
        return sw

    def _rotate_if_large(self, limit: int = 256 * 2**20) -> None:
        """Between runs (no load), keep the log files from filling the disk over a long study."""
        for path, what in ((self.server.slow_log, "SLOW"), (self.server.general_log, "GENERAL")):
            if path.exists() and path.stat().st_size > limit:
                old = path.with_name(path.name + ".old")
                path.rename(old)
                self.server.query(f"FLUSH {what} LOGS")
                old.unlink()

    def warm_after_restart(self) -> None:
        if self.study.restart_warmup > 0:
            self.sysbench.run(self.load, max(self.study.clients), self.study.restart_warmup,
                              seed=int(self.study.seed) & 0x7FFFFFFF)

    def pool_counters(self) -> dict[str, int]:
        """InnoDB's page requests and buffer pool misses so far (the quiet admin session: logged nowhere)."""
        rows = self.server.query("SHOW GLOBAL STATUS WHERE Variable_name IN (%s, %s)", _POOL_COUNTERS)
        got = {k.lower(): int(v) for k, v in rows}
        return {k: got[k.lower()] for k in _POOL_COUNTERS}

    def settle(self) -> dict[str, object]:
        """Wait (unmeasured) until the previous run's background work is done: InnoDB's purge has emptied the
        history list and, under a read cap, the server's processes read next to nothing for a step. Measured after
        a 50-client io run under the cap (2026-11-26): purge read at the full cap for ~2.5 s with 87 transactions
        of history, so a 2 s run started at once shared the cap with it (1.6-1.9 tps at 1 client, ~18 when
        quiet). Returns the seconds waited, the history the run would have inherited and whether it settled
        (False: SETTLE_TIMEOUT_S passed first; the run is still measured and says so). On a server whose history
        list does not show the purge's progress (history_shows_purge), the server's own CPU going quiet for a step
        stands for the history reaching 0 (``settle_on``)."""
        t0 = time.monotonic()
        capped = self.memory_limit is not None and bool(self.memory_limit.read_iops)
        by_cpu = not history_shows_purge(self.server_version)
        stepped = capped or by_cpu
        history0 = history = self.history_length()
        reads0 = self.memory_limit.reads() if capped else 0
        cpu0 = self.server_cpu() if by_cpu else 0.0
        while True:
            calm = True
            if stepped:
                time.sleep(SETTLE_STEP_S)
                if capped:
                    reads1 = self.memory_limit.reads()
                    calm, reads0 = reads1 - reads0 <= SETTLED_READ_SHARE * self.memory_limit.read_iops * SETTLE_STEP_S, reads1
                if by_cpu:
                    cpu1 = self.server_cpu()
                    calm, cpu0 = calm and cpu1 - cpu0 <= SETTLED_CPU_SHARE * SETTLE_STEP_S, cpu1
                history = self.history_length()
            settled = calm and (by_cpu or history <= SETTLED_HISTORY)
            if settled or time.monotonic() - t0 >= SETTLE_TIMEOUT_S:
                break
            if not stepped:
                time.sleep(SETTLE_STEP_S / 5)
                history = self.history_length()
        return {"settle_s": time.monotonic() - t0, "history_at_end_of_previous": history0,
                "history_at_start": history, "settled": settled, "settle_on": "server_cpu" if by_cpu else "history"}

    def history_length(self) -> int:
        """InnoDB's purge backlog: transactions whose undo is not yet purged (the quiet admin session)."""
        rows = self.server.query("SHOW GLOBAL STATUS WHERE Variable_name = 'Innodb_history_list_length'")
        return int(rows[0][1]) if rows else 0

    def measure(self, run: PlannedRun, seconds: float) -> Measurement:
        settled = self.settle()
        slow0 = mb.file_size(self.server.slow_log)
        pool0 = self.pool_counters()
        t0 = time.monotonic()
        mem0 = self.memory_limit.stats() if self.memory_limit is not None else None
        r = self.sysbench.run(self.load, run.clients, int(seconds), report_interval=1, seed=mb.run_seed(self.study, run))
        mem1 = self.memory_limit.stats() if self.memory_limit is not None else None
        counted_s = time.monotonic() - t0  # the disk's reads are counted over this, sysbench's start and end included
        if mem1 is not None and not self.memory_limit.read_iops:
            mem0.pop("disk_reads"), mem1.pop("disk_reads")  # no read limit: no cgroup counted the disk's reads
        cfg = self.study.configuration(run.configuration)
        extra = dataclasses.asdict(SlowlogNumbers(
            **mb.SysbenchNumbers.of(r), regime=self.regime, cell=self.study.cell,
            slow_file_bytes_during_run=mb.file_size(self.server.slow_log) - slow0,
            **io_evidence(pool0, self.pool_counters(), mem0, mem1, counted_s), **settled))
        if cfg.settings.get("slow_query_log_file") == DEVNULL:
            # Nothing to count in /dev/null: say what was expected and leave the received count out.
            extra["records_expected_uncounted"] = cfg.expected_records(
                statements=mb.statements_sent(r.queries, r.ignored_errors), connections=connections(run, r.reconnects))
            extra["note"] = "slow log written to /dev/null: records cannot be counted"
        return mb.measurement(r, run, extra)

    def sinks(self, configuration: Configuration) -> list:
        return [self._sinks[name] for name in configuration.destinations]

    def expected_records(self, configuration: Configuration, run: PlannedRun, m: Measurement) -> int:
        # connections count where the server logs each one's end (MariaDB 10.5's slow log: the configuration's
        # records, mb.statement_records by version); elsewhere their share is 0
        return configuration.expected_records(statements=mb.statements_sent(m.extra["queries"], m.failed),
                                              connections=connections(run, m.extra.get("reconnects", 0)))

    def loss_defined(self, configuration: Configuration) -> bool:
        return loss_defined(configuration.settings)

    def window_numbers(self, *, queries: int, qps: float, configuration: Configuration | None = None,
                       statements: int = 0) -> dict:
        """A switchback window's own numbers (the columns :class:`SlowlogNumbers` gives a block run), with the
        records /dev/null got, uncounted, as a block run says them."""
        out = {"regime": self.regime, "cell": self.study.cell, "queries": queries, "qps": qps,
               "command": f"{self.test} (one continuous load)"}
        if configuration is not None and configuration.settings.get("slow_query_log_file") == DEVNULL:
            out["records_expected_uncounted"] = configuration.expected_records(statements=statements)
            out["note"] = "slow log written to /dev/null: records cannot be counted"
        return out


connections = mb.connections  # shared with study 06 (benches.mariadb)


def hold(limit: memlimit.MemoryLimit, server: mdb.MariaDBServer) -> int:
    """The (re)started server into the memory limit, its data out of the page cache: the io regime starts cold;
    returns the bytes evicted."""
    limit.add_tree(server.pid)
    return memlimit.evict(server.datadir)


def loss_defined(settings: Settings) -> bool:
    """False for the sampled slow log: MariaDB keeps a statement when the *global* query id is a
    multiple of log_slow_rate_limit at the moment it is logged, so with concurrent sessions which
    and how many statements are kept depends on their interleaving (the standard run received
    14 % more than queries / rate at 8 clients; a CI smoke run at 2 clients 36 % fewer). Its
    expected count is an approximation, and a difference from it is not a loss: the loss is
    reported as not defined (NaN)."""
    return int(settings.get("log_slow_rate_limit", "1")) <= 1
