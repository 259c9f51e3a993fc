"""The memory limit that makes study 02's IO-bound regime: a real cgroup caps what a process's reads may cache."""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from logbench.base import records
from logbench.servers import memlimit


@pytest.mark.integration
@pytest.mark.skipif(bool(memlimit.available()), reason=memlimit.available() or "")
def test_a_reader_in_the_cgroup_caches_no_more_than_the_limit():
    with tempfile.TemporaryDirectory(dir="/var/tmp") as d:
        data = Path(d) / "data"
        data.write_bytes(b"\1" * (96 * 2**20))
        assert memlimit.evict(Path(d)) == 96 * 2**20
        with memlimit.MemoryLimit(32 * 2**20) as lim:
            reader = subprocess.Popen(["sh", "-c", "read x; cat \"$0\" > /dev/null", str(data)], stdin=subprocess.PIPE)
            assert lim.add_tree(reader.pid) == 1
            reader.communicate(b"go\n", timeout=60)
            s = lim.stats()
            # 96 MB read through a 32 MB limit: the cache stayed under it, the limit reclaimed the rest
            assert s["usage_bytes"] <= 32 * 2**20 and 0 < s["file_bytes"] <= 32 * 2**20 and s["limit_hits"] > 0
            path = lim.path
        assert not path.exists()


_NO_READ_LIMIT = memlimit.available(read_limit_on=Path("/var/tmp"))


@pytest.mark.integration
@pytest.mark.skipif(bool(_NO_READ_LIMIT), reason=_NO_READ_LIMIT or "")
def test_a_reader_in_the_cgroup_reads_no_faster_than_its_read_limit():
    """300 random 8 kB reads of an evicted file at 100 reads/s: about 3 s, every read counted by the cgroup."""
    with tempfile.TemporaryDirectory(dir="/var/tmp") as d:
        data = Path(d) / "data"
        data.write_bytes(os.urandom(32 * 2**20))
        memlimit.evict(Path(d))
        reader_code = ("import os, random, sys, time\nsys.stdin.readline()\nf = os.open(sys.argv[1], os.O_RDONLY)\n"
                       "random.seed(1)\nt = time.monotonic()\n"
                       "for b in random.sample(range(4096), 300): os.pread(f, 8192, b * 8192)\n"
                       "print(time.monotonic() - t)")
        with memlimit.MemoryLimit(64 * 2**20, read_iops=100, read_limit_on=Path(d)) as lim:
            assert lim.device == memlimit.block_device(Path(d)) and lim.reads() == 0
            reader = subprocess.Popen([sys.executable, "-c", reader_code, str(data)],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            assert lim.add_tree(reader.pid) == 1
            out, _ = reader.communicate("go\n", timeout=60)
            # readahead may fold neighbours into one read, never more reads than asked; the pace holds
            assert 2.0 < float(out) < 30 and 0 < lim.reads() <= 300 + 16
            made = [lim.path, lim.io_path]
        assert not any(p.exists() for p in made)


def test_read_iops_is_refused_without_a_memory_limit():
    from logbench.base.errors import ParameterError
    from logbench.studies import pg_destinations as m

    with pytest.raises(ParameterError, match="read_iops"):
        m.define("standard", backend="local", read_iops=100)
    with pytest.raises(ParameterError, match="read_iops"):
        m.define("io_bound", backend="local", read_iops=-3)


@pytest.mark.integration
@pytest.mark.skipif(bool(memlimit.available()), reason=memlimit.available() or "")
def test_study_02_under_a_memory_limit_records_an_io_bound_regime_run_by_run(tmp_path):
    """A PostgreSQL whose processes may cache 80 MB of a ~150 MB pgbench database: every run misses shared
    buffers and hits the limit, by the server's own counters, and says so in its record."""
    from logbench.studies import pg_destinations as m

    study = m.define("smoke", backend="local", destinations=["stderr"], clients=[2], repeats=1, duration=2,
                     scale=10, shared_buffers="16MB", memory_limit_mb=80, query_mode="simple", aa_control=False,
                     read_iops=None if _NO_READ_LIMIT else 5000,
                     output_dir=tmp_path / "raw", processed_dir=tmp_path / "processed")
    result = m.run(study, progress=False)
    env = result.environment
    assert env["memory_limit_bytes"] == 80 * 2**20 and env["evicted_bytes"] > 100 * 2**20
    assert not Path(env["memory_cgroup"]).exists()  # removed with the server
    runs = records.measured(result.runs)
    assert len(runs) == 2  # the baseline and stderr
    for e in runs["extra"]:
        # misses of shared buffers, read from storage: the page cache filled (or the limit reclaimed it)
        assert e["blks_read"] > 0.1 * (e["blks_read"] + e["blks_hit"])
        assert e["memory_limit_hits"] > 0 or e["page_cache_growth_bytes"] >= 0.5 * 8192 * e["blks_read"]
        assert e["regime"] == "io_bound" and e["memory_usage_bytes"] <= 80 * 2**20
        assert _NO_READ_LIMIT or 0 < e["disk_reads"] <= 5000 * 3  # paced: at most the limit for a 2 s run (+1 s)
    # a named profile's processed files have a stem of their own; "smoke" keeps the study's
    assert m.common.stem("pg_destinations", "io_bound") == "pg_destinations_io_bound"
    processed = __import__("pandas").read_csv(tmp_path / "processed" / "pg_destinations_runs.csv")
    assert set(processed["regime"]) == {"io_bound"}  # the column the claims read the regime from
    check = m.regime_check(result.runs).set_index("configuration")
    assert list(check["io_bound runs"]) == [1, 1] and (check["blks_read share (mean)"] > 0.1).all()
    assert _NO_READ_LIMIT or (check["disk reads per s (mean)"] > 0).all()


def test_a_run_is_io_bound_only_when_its_misses_came_from_storage():
    from logbench.measure.benches.postgres import io_regime

    assert io_regime(500, 500, 3, 0) == "io_bound"  # half missed, the limit reclaimed during the run
    assert io_regime(500, 500, 0, 500 * 8192) == "io_bound"  # half missed, all of it read into the cache
    assert io_regime(500, 500, 0, 0) == "cached"  # the misses were in the page cache already
    assert io_regime(10, 990, 5, 0) == "cached" and io_regime(0, 0, 0, 0) == "cached"


def test_reads_that_bypass_the_page_cache_count_from_the_paced_disk():
    # O_DIRECT (InnoDB): no page cache grows and no limit is hit; the read-limited cgroup counted the disk's reads
    assert memlimit.io_bound(300, 1000, limit_hits=0, page_cache_growth=0, page_bytes=16384, disk_reads=300)
    assert not memlimit.io_bound(300, 1000, limit_hits=0, page_cache_growth=0, page_bytes=16384, disk_reads=10)
    assert not memlimit.io_bound(300, 1000, limit_hits=0, page_cache_growth=0, page_bytes=16384)


def test_io_bound_profile_is_refused_where_it_cannot_be_io_bound():
    from logbench.base.errors import ParameterError
    from logbench.studies import pg_destinations as m

    with pytest.raises(ParameterError, match="scale"):
        m.define("io_bound", backend="local", scale=20)
    with pytest.raises(ParameterError, match="memory_limit_mb"):
        m.define("io_bound", backend="local", memory_limit_mb=40)
    with pytest.raises(ParameterError, match="profile"):
        m.define("no_such_profile", backend="local")


@pytest.mark.integration
@pytest.mark.skipif(bool(_NO_READ_LIMIT), reason=_NO_READ_LIMIT or "")
def test_study_04_io_regime_paced_records_io_bound_runs_from_their_own_counters(tmp_path):
    """A MariaDB whose 16 MB buffer pool holds a sixth of the data, in a memory limit with its reads capped at
    400/s: every io run misses the pool, the paced disk served those misses, and no faster than the cap; each run
    started once the previous one's purge was done."""
    from logbench.studies import mysql_slowlog as m

    study = m.define("smoke", backend="local", cells=["io/oltp_read_write"], configurations=["slow_all"], clients=[1],
                     repeats=1, duration=2, tables=4, table_size=100000, buffer_pool_io="16M", memory_limit_mb=128,
                     read_iops=400, aa_control=False, output_dir=tmp_path / "raw", processed_dir=tmp_path / "processed")
    result = m.run(study, progress=False)
    assert result.environment["io_read_iops_limit"] == 400
    runs = result.runs[~result.runs["warmup"].astype(bool)]
    assert len(runs) == 2  # off and slow_all
    for e in runs["extra"]:
        assert e["measured_regime"] == "io_bound" and e["bp_miss_share"] > 0.1
        assert 0 < e["disk_reads_per_s"] <= 400 * 1.1 and e["memory_usage_bytes"] <= 128 * 2**20
        # each run waited for the previous one's purge and background reads: it inherits none of them
        assert e["settled"] and e["history_at_start"] == 0 and 0 <= e["settle_s"] < m.SETTLE_TIMEOUT_S
    pace = m.pace_table(result.runs)  # the notebook's table: no cpu cell here, so no io/cpu ratio
    assert pace["n"].sum() == 2 and pace["io_bound_runs"].sum() == 2 and pace["unsettled_runs"].sum() == 0
    assert pace["cpu_tps_median"].isna().all() and "2 of 2 io runs were IO-bound" in m.finding_pace(pace)
