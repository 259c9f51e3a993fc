"""The container backend on a real Docker engine: same settings, same destinations, nothing left behind."""

import json
import shutil
import tempfile
from pathlib import Path

import pytest

from logbench.base import paths, records
from logbench import studies
from logbench.base.errors import ParameterError
from logbench.servers import containers
from logbench.servers.container_postgres import ContainerPostgres
from logbench.servers.postgres import LocalPostgres
from logbench.base.settings import Settings
from logbench.studies import pg_destinations as study_mod

from conftest import fail_the_load_tool_at

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("docker_engine")]


@pytest.fixture
def log_dirs():
    d = Path(tempfile.mkdtemp(prefix="logbench-test-", dir=paths.scratch_root()))
    d.chmod(0o755)
    yield d / "local", d / "container"
    shutil.rmtree(d, ignore_errors=True)


def _volumes() -> set[str]:
    return {v.name for v in containers._docker().volumes.list()}


def _ours() -> set[str]:
    """Every container and network of any logbench study now (compared before/after: other work may run)."""
    left = containers.leftovers()
    return set(left["containers"]) | set(left["networks"])


def test_settings_verified_from_inside_the_container(log_dirs):
    base = Settings.of("postgresql", study_mod.BASE)
    cfg = study_mod.DESTINATIONS["csvlog"][0]
    with ContainerPostgres(base, log_dir=log_dirs[1]) as pg:
        assert pg.apply(Settings.of("postgresql", cfg)).kind == "reload"
        out = pg.container.exec(["psql", "-U", "postgres", "-Atc",
                                 "SELECT current_setting('log_min_duration_statement') || ' ' || current_setting('log_destination')"])
        assert out.exit_code == 0 and out.output.decode().strip() == "0 csvlog"


def test_same_effective_settings_under_either_backend(log_dirs):
    """Every configuration of the study: pg_settings of the names it touches agree across backends."""
    base = Settings.of("postgresql", study_mod.BASE)
    names = sorted(set(study_mod.BASE) | {k for s, _ in study_mod.DESTINATIONS.values() for k in s})
    query = "SELECT name, setting FROM pg_settings WHERE name = ANY(%s) AND name NOT IN ('log_directory') ORDER BY name"
    with LocalPostgres(base, log_dir=log_dirs[0]) as local, ContainerPostgres(base, log_dir=log_dirs[1]) as ct:
        for name, (cfg, _) in study_mod.DESTINATIONS.items():
            settings = Settings.of("postgresql", cfg)
            local.apply(settings)
            ct.apply(settings)
            with local.connect() as a, ct.connect() as b:
                assert a.execute(query, [names]).fetchall() == b.execute(query, [names]).fetchall(), name


def test_every_destination_counted_in_containers_and_nothing_left(nbval_run):
    """Notebook 02's smoke run on the container backend, the one tests/test_notebooks.py runs under nbval (once per
    session: conftest.nbval_run), asserted on its records: every destination counted across the study's Docker
    network, and no container, network, volume or directory left."""
    (smoke,) = [dict(p) for p in studies.spec(study_mod.NAME).smoke if p.get("backend") == "container"]
    run = nbval_run(studies.spec(study_mod.NAME).notebook, smoke)
    assert run.results is not None and (run.results / "runs.jsonl").exists(), run.output
    assert json.loads((run.results / "study.json").read_text())["backend"] == "container"
    runs = records.load(run.results / "runs.jsonl")
    assert set(runs["backend"]) == {"container"}
    assert set(study_mod.DESTINATIONS) <= set(runs["configuration"])
    for r in runs[runs["configuration"].isin(list(study_mod.DESTINATIONS))].itertuples():
        name = r.configuration
        if name == "none":
            assert r.log_records_received == 0
        elif name == "remote_syslog_udp":
            assert 0 < r.log_records_received <= r.log_records_expected
        else:
            # including remote_syslog_tcp: across the study's Docker network to the rsyslog container
            assert r.log_records_received == r.log_records_expected > 0, name
    (before, before_volumes), (after, after_volumes) = run.containers_before, run.containers_after
    assert after <= before
    assert after_volumes <= before_volumes
    # the study's own teardown removed what it made: its guardian found nothing to remove
    assert not run.guardians_running and not run.guardians_removed, run.guardians_removed


def test_auto_picks_the_container_when_the_study_runs_and_an_engine_answers():
    study = study_mod.define(profile="smoke", destinations=["csvlog"])
    assert (study.backend, study.image) == ("auto", None)  # define() decides nothing that needs the engine
    ran = study.resolved()
    assert ran.backend == "container" and ran.image in containers.PG_IMAGES["15"]
    local = study_mod.define(profile="smoke", destinations=["csvlog"], backend="local").resolved()
    assert (local.backend, local.image) == ("local", None)


def test_define_asks_no_engine_and_the_run_refuses_a_missing_one(monkeypatch, tmp_path):
    def no_engine():
        raise ConnectionError("no Docker engine here")

    monkeypatch.setattr(containers, "_docker", no_engine)
    study = study_mod.define(profile="smoke", destinations=["csvlog"], backend="container", output_dir=tmp_path)
    assert study.backend == "container"
    with pytest.raises(ParameterError, match="'backend'.*once a Docker engine answers") as e:
        study_mod.run(study, progress=False)
    assert e.value.parameter == "backend"
    assert list(tmp_path.iterdir()) == []  # refused before anything was written or started
    assert study_mod.define(profile="smoke", destinations=["csvlog"]).resolved().backend == "local"
    with pytest.raises(ParameterError, match="'image'.*an image name"):
        study_mod.define(profile="smoke", image="Not An Image")


def test_unknown_backend_is_refused():
    with pytest.raises(ParameterError, match="'backend'.*'auto', 'local', 'container'"):
        study_mod.define(profile="smoke", backend="podman")


def test_failure_mid_study_removes_every_container_and_network(tmp_path, monkeypatch):
    from logbench.base import records
    fail_the_load_tool_at(monkeypatch, 3)
    before_volumes, before = _volumes(), _ours()
    study = study_mod.define(profile="smoke", destinations=["remote_syslog_tcp"], backend="container", clients=[1],
                             repeats=2, output_dir=tmp_path)
    with pytest.raises(RuntimeError, match="injected"):
        study_mod.run(study, progress=False)
    assert len(records.load(tmp_path / "runs.jsonl")) == 2
    assert _ours() <= before
    assert _volumes() <= before_volumes


def test_version_sweep_runs_each_version_against_its_own_baseline(tmp_path):
    study = study_mod.define(profile="smoke", destinations=["csvlog"], versions="[15]", clients=[1], repeats=2,
                             output_dir=tmp_path)
    assert [c.name for c in study.configurations] == ["pg15/none", "pg15/csvlog"]
    runs = study_mod.run(study, progress=False).runs
    assert set(runs["server_version"].str.split().str[0].str.split(".").str[0]) == {"15"}
    summary = study_mod.summary(runs)
    assert set(summary["variant"]) == {"pg15"}
    assert summary.set_index("configuration").loc["none", "ratio"] == 1.0


def test_a_version_set_up_cannot_build_is_refused_before_anything_starts(tmp_path):
    """Only docker/servers.tsv's versions (pinned images set-up builds, on first use when missing) are allowed."""
    with pytest.raises(ParameterError, match="'versions'.*'13', '15', '17'"):
        study_mod.define(profile="smoke", versions=["9.2"])
    with pytest.raises(ParameterError, match="'versions'.*'13', '15', '17'"):
        study_mod.define(profile="smoke", versions=[14])
    with pytest.raises(ParameterError, match="'versions'.*runs in containers"):
        study_mod.define(profile="smoke", versions=[15], backend="local")
