"""MariaDB in a container (testcontainers): same settings as the local backend, every destination counted
from the host, nothing left behind (no container, network, volume or scratch directory)."""

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from logbench.base import paths, records
from logbench import studies
from logbench.base.errors import ParameterError
from logbench.servers import containers
from logbench.servers.container_mariadb import ContainerMariaDB
from logbench.servers import mariadb as mdb
from logbench.base.settings import Settings
from logbench.studies import log_rotation as rot
from logbench.studies import mysql_slowlog as study_mod

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("docker_engine")]

# Light on memory and start-up: the study's base with a small buffer pool.
BASE = {**study_mod.BASE, "innodb_buffer_pool_size": "64M"}


def _volumes() -> set[str]:
    return {v.name for v in containers._docker().volumes.list()}


@pytest.fixture
def scratch(monkeypatch):
    """A private scratch root: the servers' work directories go here and must be gone afterwards."""
    d = Path(tempfile.mkdtemp(prefix="logbench-test-scratch-", dir="/var/tmp"))
    os.chmod(d, 0o755)  # the local backend's unprivileged server user must be able to enter it
    monkeypatch.setattr(paths, "scratch_root", lambda: d)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def nothing_left(scratch):
    """Checks, after the test, that the test removed every container, network, volume and work directory."""
    volumes = _volumes()
    yield
    assert containers.leftovers() == {"containers": [], "networks": []}
    assert containers.leftover_volumes() == [] and _volumes() == volumes
    assert sorted(p.name for p in scratch.iterdir()) == []


@pytest.fixture
def log_dir(scratch):
    d = scratch.parent / f"{scratch.name}-log"
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _inside(server: ContainerMariaDB, names: list[str]) -> dict[str, str]:
    """Global variables as the image's own client reports them, inside the container."""
    out = server.exec_sql("SELECT " + ", ".join(f"@@global.{n}" for n in names))
    return dict(zip(names, out.rstrip("\n").split("\t")))


def _say(server, what: str, n: int) -> None:
    c = server.connect(quiet=False)
    with c.cursor() as cur:
        for i in range(n):
            cur.execute(f"SELECT '{what}', {i}")
    c.close()


def test_non_default_logging_settings_verified_inside_and_every_destination_counted(log_dir, nothing_left):
    start = Settings.of("mariadb", {**BASE, "slow_query_log": True, "long_query_time": 0, "log_slow_rate_limit": 1})
    with ContainerMariaDB(start, log_dir=log_dir) as m:
        wrapped = m.container.get_wrapped_container()
        assert wrapped.attrs["HostConfig"]["NetworkMode"] == "none" and not wrapped.attrs["NetworkSettings"]["Ports"]
        assert _inside(m, ["slow_query_log", "long_query_time", "skip_networking", "slow_query_log_file"]) == {
            "slow_query_log": "1", "long_query_time": "0.000000", "skip_networking": "1",
            "slow_query_log_file": str(m.slow_log)}
        m.query("CREATE DATABASE kept")  # on the named volume: must survive the restarts below
        # slow log to a file the host counts
        slow = mdb.slow_file_sink(m.slow_log)
        mark = slow.mark()
        _say(m, "slow", 5)
        assert slow.count_since(mark).records == 6  # the connection's own SET NAMES is one more
        # the general log, by SET GLOBAL
        assert m.apply(Settings.of("mariadb", {"general_log": True})).kind == "reload"
        assert _inside(m, ["general_log", "slow_query_log"]) == {"general_log": "1", "slow_query_log": "1"}
        general = mdb.general_file_sink(m.general_log)
        mark = general.mark()
        _say(m, "general", 4)
        assert general.count_since(mark).records == 4 + 1
        # the slow log as a table
        assert m.apply(Settings.of("mariadb", {"slow_query_log": True, "long_query_time": 0,
                                               "log_output": "TABLE"})).kind == "reload"
        table = mdb.TableSink(m)
        table.truncate()
        mark = table.mark()
        _say(m, "table", 3)
        got = table.count_since(mark)
        assert got.records == 3 + 1 and got.bytes > 0  # the CSV file read on the volume from the host
        # /dev/null: startup only, so a new container on the same volume; nothing reaches the file
        name, pid = wrapped.name, m.pid
        sw = m.apply(Settings.of("mariadb", {"slow_query_log": True, "long_query_time": 0,
                                             "slow_query_log_file": "/dev/null"}))
        assert sw.kind == "restart" and sw.pending_restart == ("slow_query_log_file",)
        assert m.container.get_wrapped_container().name != name and m.pid != pid
        assert _inside(m, ["slow_query_log_file", "long_query_time", "log_slow_rate_limit"]) == {
            "slow_query_log_file": "/dev/null", "long_query_time": "0.000000", "log_slow_rate_limit": "1"}
        size = m.slow_log.stat().st_size
        _say(m, "devnull", 5)
        assert m.slow_log.stat().st_size == size
        assert ("kept",) in m.query("SHOW DATABASES")
        # back to the base: the file again, at run time
        assert m.apply(Settings.of("mariadb")).kind == "reload"
        assert _inside(m, ["slow_query_log_file", "general_log"]) == {"slow_query_log_file": str(m.slow_log),
                                                                       "general_log": "0"}
        # the server's CPU is read from the host through the container's main process: mariadbd itself
        import psutil

        assert psutil.Process(m.pid).name() == "mariadbd"
        assert study_mod.tree_cpu_seconds(m.pid) > 0
        volume = m.volume.name
    assert volume not in _volumes()


def test_same_effective_settings_under_either_backend(scratch, nothing_left):
    """Every configuration of study 04: SHOW GLOBAL VARIABLES of the names it touches agree across backends."""
    study = study_mod.define(profile="smoke", backend="local", output_dir="/tmp/unused")
    base = study.base_for("cpu").merged({"innodb_buffer_pool_size": "64M"})
    names = sorted({mdb.norm_name(k) for k in base} | {mdb.norm_name(k) for c in study.configurations
                                                       for k in c.settings} | {"general_log_file"})
    logs = scratch.parent / f"{scratch.name}-logs"
    try:
        with mdb.LocalMariaDB(base, log_dir=logs / "local") as local, \
                ContainerMariaDB(base, log_dir=logs / "container") as ct:
            def shown(server):
                return {k: v.replace(str(server.log_dir), "<log_dir>") for k, v in server.show(names).items()}

            assert shown(local) == shown(ct), "base"
            for c in study.configurations:
                sw_local, sw_ct = local.apply(c.settings), ct.apply(c.settings)
                assert sw_local.kind == sw_ct.kind, c.name
                assert shown(local) == shown(ct), c.name
                assert len(shown(ct)) == len(names)
    finally:
        shutil.rmtree(logs, ignore_errors=True)


def test_study_04_in_a_container_counts_every_configuration(tmp_path, nbval_run, nothing_left):
    """Notebook 04's smoke run on the container backend, the one tests/test_notebooks.py runs under nbval (once per
    session: conftest.nbval_run), asserted on its records: every configuration counted from the host, and no
    container, network, volume or directory left."""
    (smoke,) = [dict(p) for p in studies.spec(study_mod.NAME).smoke if p.get("backend") == "container"]
    study = study_mod.define(**smoke, output_dir=tmp_path / "out")
    assert study.backend == "container" and study.image is None  # the image is found when it runs
    run = nbval_run(studies.spec(study_mod.NAME).notebook, smoke)
    assert run.results is not None and (run.results / "runs.jsonl").exists(), run.output
    image = json.loads((run.results / "study.json").read_text())["image"]
    assert image in containers.MARIADB_IMAGES["10.11"]
    environment = json.loads((run.results / "environment.json").read_text())
    assert environment["backend"] == "container" and environment["image"] == image
    assert environment["tools"]["image"].startswith(image + " sha256:")
    runs = study_mod.expand(records.load(run.results / "runs.jsonl"))
    assert set(runs["configuration"]) == set(study_mod.CONFIGURATIONS) | {"off_again"}
    assert set(runs["backend"]) == {"container"}
    for r in runs.itertuples():
        sent, slow_grew = r.queries + r.failed, r.extra["slow_file_bytes_during_run"]
        if r.configuration in ("slow_all", "general_log", "slow_all_table"):
            assert r.log_records_received == r.log_records_expected == sent > 0, r.configuration
        if r.configuration in ("general_log", "slow_all_table", "off"):
            assert slow_grew == 0, r.configuration
        if r.configuration == "slow_all_devnull":
            assert r.log_records_expected == sent and slow_grew == 0 and r.switch == "restart"
        if r.configuration in ("slow_1s", "off"):
            assert r.log_records_received == 0, r.configuration
        if r.configuration == "slow_sampled":
            # the sample's size depends on the sessions' interleaving (test_mariadb)
            assert 0 < r.log_records_received < 10 * r.log_records_expected
    assert (runs["server_cpu_s"] > 0).all()
    (before, before_volumes), (after, after_volumes) = run.containers_before, run.containers_after
    assert after <= before and after_volumes <= before_volumes
    # the study's own teardown removed its containers' work directories: its guardian found nothing to remove
    assert not run.guardians_running and not run.guardians_removed, run.guardians_removed


def test_study_06_rotations_in_a_container(tmp_path, nothing_left):
    """The host renames, copies and truncates the file the server in the container writes (a bind mount)."""
    study = rot.define(profile="smoke", backend="container", methods=["rename_flush", "copytruncate"],
                       output_dir=tmp_path / "out")
    runs = rot.expand(rot.run(study, progress=False).runs).set_index("configuration")
    assert set(runs["backend"]) == {"container"}
    for name in ("none", "rename_flush"):
        r = runs.loc[name]
        assert r["log_records_received"] == r["log_records_expected"] > 0, name
        assert r["tracer_lost"] == 0 and r["tracer_duplicated"] == 0
    assert runs.loc["rename_flush", "extra"]["tracer_in_old"] > 0 and runs.loc["rename_flush", "extra"]["tracer_in_new"] > 0
    r = runs.loc["copytruncate"]
    assert r["rotated_file_bytes"] > study.log_size_mb * 2**20
    assert r["extra"]["live_file_allocated_bytes"] >= 0.5 * r["extra"]["live_file_bytes"]


@pytest.mark.parametrize("study_module", [study_mod, rot], ids=["04", "06"])
def test_backend_is_resolved_recorded_and_checked(study_module, scratch, tmp_path):
    define = study_module.define
    auto = define(profile="smoke", output_dir="/tmp/unused")
    assert (auto.backend, auto.image) == ("auto", None)  # define() asks no engine ...
    assert auto.resolved().backend == "container"  # ... the run does: auto, with an engine
    local = define(profile="smoke", backend="local", output_dir="/tmp/unused").resolved()
    assert local.backend == "local" and local.image is None
    assert define(profile="smoke", backend="container", output_dir="/tmp/unused").resolved().image in (
        containers.MARIADB_IMAGES["10.11"])
    with pytest.raises(ParameterError, match="'backend'.*'auto', 'local', 'container'") as e:
        define(profile="smoke", backend="podman")
    assert e.value.parameter == "backend"
    with pytest.raises(ParameterError, match="'image'.*local backend") as e:
        define(profile="smoke", backend="local", image="mariadb:10.11")
    assert e.value.parameter == "image"
    with pytest.raises(ParameterError, match="'image'.*an image name") as e:
        define(profile="smoke", backend="container", image="mariadb:10.11 --privileged")
    assert e.value.parameter == "image"
    # A well-formed name of an image that is not here: refused when the run starts, before any server.
    study = define(profile="smoke", backend="container", image="nosuch/mariadb:0", output_dir=tmp_path / "out")
    with pytest.raises(ParameterError, match="'image'.*no mariadb image available.*nosuch/mariadb:0") as e:
        study_module.run(study, progress=False)
    assert e.value.parameter == "image"
    assert not (tmp_path / "out").exists()
    assert sorted(p.name for p in scratch.iterdir()) == []
