"""The server versions the suite runs (docker/servers.tsv): their images, and their log records counted exactly.

The fixtures (tests/fixtures/versions/, scripts/capture_version_fixtures.py) are what a real server of each
version wrote; the integration tests start one server of each version for seconds and check the same again.
"""

import json
import os
import subprocess
from pathlib import Path

import pytest

from logbench.measure import versions
from logbench.measure.benches import postgres as pg
from logbench.base.errors import ParameterError
from logbench.base.logsinks import count_records
from logbench.servers import containers
from logbench.servers import mariadb as mdb
from logbench.base.settings import Settings

FIXTURES = Path(__file__).parent / "fixtures" / "versions"
CAPTURED = json.loads((FIXTURES / "captured.json").read_text())
PG_VERSIONS = tuple(containers.server_images("postgres"))
MARIADB_VERSIONS = tuple(containers.server_images("mariadb"))


def check_pg_run(run: dict, directory: Path, key: str) -> None:
    """Every file destination of one captured run holds exactly the records the study expects, each kind on
    its own; csvlog has its major's columns, jsonlog is one JSON object per line."""
    s = Settings.of("postgresql", {**pg.BASE, **run["settings"]})
    shapes = pg.statement_records(s, run["query_mode"])
    tx, conns = run["transactions"], run["clients"]
    assert tx == versions.PG_TRANSACTIONS * versions.PG_CLIENTS
    for suffix in run["files"]:
        lines = (directory / f"{key}.{suffix}").read_bytes().splitlines()
        for shape in shapes:
            assert count_records(lines, (shape,)) == shape.expected(statements=tx, transactions=tx,
                                                                    connections=conns), (key, suffix, shape.kind)
        if suffix == "csv":
            assert {versions.csv_columns(line) for line in lines} == {
                versions.CSVLOG_COLUMNS[versions.major(run["version"])]}, key
        if suffix == "json":
            assert all("message" in json.loads(line) for line in lines), key
    assert ("json" in run["files"]) == (versions.major(run["version"]) >= versions.JSONLOG_FROM)
    assert run["server"].startswith(containers.server_images("postgres")[run["version"]].release + " ")


def check_mariadb_run(run: dict, directory: Path, key: str) -> None:
    data = (directory / f"{key}.log").read_bytes()
    shape = mdb.slow_entry(run["server"])
    expected = shape.expected(statements=run["statements"], transactions=0, connections=run["connections"])
    assert count_records(data.splitlines(), (shape,)) == expected, key
    assert len(mdb.slow_log_entries(data)) == expected, key
    # 10.5 logs the connection's end as an entry of its own; the later series do not
    assert data.count(b"# administrator command: Quit;") == expected - run["statements"], key
    assert run["server"].startswith(containers.server_images("mariadb")[run["version"]].release + "-"), key


@pytest.mark.parametrize("kind, prefix, version", [("postgres", "pg", v) for v in PG_VERSIONS]
                         + [("mariadb", "mariadb", v) for v in MARIADB_VERSIONS])
def test_every_version_was_captured(kind, prefix, version):
    if not any(k.startswith(f"{prefix}{version}_") for k in CAPTURED):
        pytest.skip(f"{kind} {version} not captured yet: `PYTHONPATH=lib python scripts/capture_version_fixtures.py "
                    f"tests/fixtures/versions {prefix}{version}` (starts it in its container for seconds)")
    assert {r["version"] for k, r in CAPTURED.items() if k.startswith(f"{prefix}{version}_")} == {version}


@pytest.mark.parametrize("key", sorted(CAPTURED))
def test_expected_records_equal_what_each_version_wrote(key):
    run = CAPTURED[key]
    (check_pg_run if key.startswith("pg") else check_mariadb_run)(run, FIXTURES, key)


def test_the_manifest_pins_every_image_to_a_package_version():
    pgs, mdbs = containers.server_images("postgres"), containers.server_images("mariadb")
    assert pgs["15"].tag == "logbench/postgres:15" and pgs["15"].suite == "bookworm" and pgs["15"].default
    assert pgs["13"].suite == "bullseye" and pgs["17"].suite == "trixie" and not pgs["13"].default
    assert mdbs["10.5"].suite == "bullseye" and mdbs["11.8"].suite == "trixie" and mdbs["10.11"].default
    assert pgs["15"].release == "15.18" and mdbs["10.11"].release == "10.11.19" and mdbs["11.8"].release == "11.8.9"
    # the versions a study accepts are exactly the manifest's
    assert set(containers.PG_IMAGES) == set(pgs) and set(containers.MARIADB_IMAGES) == set(mdbs)


def installed_from(source: str) -> dict[str, str]:
    """{binary package: version} of what dpkg has installed from the Debian ``source``."""
    out = subprocess.run(["dpkg-query", "-W", "-f=${db:Status-Abbrev}\t${Package}\t${Version}\t${source:Package}\n"],
                         capture_output=True, text=True, check=True).stdout
    rows = (line.split("\t") for line in out.splitlines())
    return {pkg: ver for status, pkg, ver, src in rows if status.startswith("ii") and src.split(" ")[0] == source}


def test_the_default_images_match_the_local_binaries_patch_level():
    """A local-vs-container comparison runs the same patch level on both sides: set-up installs every binary of the
    local servers' sources at the default images' pin (scripts/setup_packages.sh). The fresh-machine check runs
    this where set-up installed them; a machine that had another level before set-up keeps it, said by set-up."""
    from logbench.servers.postgres import find_bindir
    from logbench.base.settings import mariadb_flavor

    pg15, maria = containers.server_images("postgres")["15"], containers.server_images("mariadb")["10.11"]
    installed = {"postgresql-15": installed_from("postgresql-15"), "mariadb": installed_from("mariadb")}
    pins = {"postgresql-15": pg15.debian_version, "mariadb": maria.debian_version}
    off = {src: sorted(set(have.values()) - {pins[src]}) for src, have in installed.items() if
           set(have.values()) - {pins[src]}}
    if off:
        pytest.skip(f"installed before set-up at another patch level, which set-up keeps: {off}, "
                    f"docker/servers.tsv pins {pins} (`bash scripts/setup_packages.sh` prints the apt command)")
    # the server binary, the client programs and the client library of each source: all of them at the pin
    assert {"postgresql-15", "postgresql-client-15", "libpq5"} <= set(installed["postgresql-15"])
    assert {"mariadb-server-core", "mariadb-client-core", "libmariadb3"} <= set(installed["mariadb"])
    local_pg = subprocess.run([str(find_bindir(None) / "postgres"), "--version"], capture_output=True,
                              text=True, check=True).stdout
    assert f" {pg15.release} " in local_pg
    assert mariadb_flavor(mdb.find_mariadbd(None))[1] == maria.release


def test_an_unknown_version_is_refused_naming_the_allowed_ones(tmp_path):
    from logbench.studies import pg_destinations as study_mod

    with pytest.raises(ParameterError, match=r"'versions' got '14'.*'13', '15', '17'"):
        study_mod.define(profile="smoke", backend="container", versions=[14], output_dir=tmp_path)
    with pytest.raises(ParameterError, match="'13', '15', '17'"):
        containers.check_version("postgres", "16")
    with pytest.raises(ParameterError, match="'10.5', '10.11', '11.8'"):
        containers.check_version("mariadb", "11.4")
    with pytest.raises(ParameterError, match="jsonlog"):
        versions.check_pg_destinations("13", ["csvlog", "jsonlog"])
    versions.check_pg_destinations("15", ["jsonlog"])


def test_a_sweep_with_the_default_destinations_leaves_out_what_a_version_lacks_and_says_so(tmp_path, monkeypatch):
    """`bash run.sh study -p versions "[13, 17]"` (issue 23's command) runs: the standard destinations less jsonlog,
    which 13 lacks, said on the progress channel; named in ``destinations``, jsonlog with 13 is still refused."""
    from logbench.studies import pg_destinations as study_mod

    monkeypatch.setenv("LOGBENCH_PROGRESS", str(tmp_path / "progress.txt"))
    swept = study_mod.define(backend="container", versions=["13", "17"], output_dir=tmp_path)
    arms = {c.name.split("/", 1)[1] for c in swept.configurations}
    assert arms == set(study_mod.PROFILES["standard"].get("destinations", study_mod.DESTINATIONS)) - {"jsonlog"}
    assert "jsonlog" in (tmp_path / "progress.txt").read_text()
    newer = study_mod.define(backend="container", versions=["15", "17"], output_dir=tmp_path)
    assert "jsonlog" in {c.name.split("/", 1)[1] for c in newer.configurations}
    with pytest.raises(ParameterError, match="jsonlog"):
        study_mod.define(backend="container", versions=["13"], destinations=["none", "jsonlog"], output_dir=tmp_path)


def test_a_mariadb_sweep_with_the_default_cells_runs_the_cpu_cells_and_says_so(tmp_path, monkeypatch):
    """`bash run.sh study 04 -p versions '["10.5", "11.8"]'`: the standard profile's cpu cells on each version (the
    profile versions' choice), the io cell left out and said; named in ``cells``, the io cell still runs."""
    from logbench.studies import mysql_slowlog as s04

    monkeypatch.setenv("LOGBENCH_PROGRESS", str(tmp_path / "progress.txt"))
    swept = s04.define(backend="container", versions=["10.5", "11.8"], output_dir=tmp_path)
    standard = s04.PROFILES["standard"]["cells"]
    assert list(swept.cell_names) == sorted(c for c in standard if c.startswith("cpu/"))
    assert "io/oltp_read_write" in (tmp_path / "progress.txt").read_text()
    named = s04.define(backend="container", versions=["10.5"], cells=["io/oltp_read_write"], output_dir=tmp_path)
    assert named.cell_names == ("io/oltp_read_write",)


# -- one real server of each version, for seconds --------------------------------------------------------

def _image_or_skip(kind: str, version: str) -> None:
    tag = containers.server_images(kind)[version].tag
    try:
        containers._docker().images.get(tag)
    except Exception:
        reason = f"{tag} is not built: `bash scripts/setup_docker.sh --all-versions` builds every version once"
        if os.environ.get("CI"):
            pytest.fail("CI builds every version's image (run.sh test): " + reason)
        pytest.skip(reason)


@pytest.mark.integration
@pytest.mark.usefixtures("docker_engine")
@pytest.mark.parametrize("version", PG_VERSIONS)
def test_each_postgres_version_writes_the_records_we_expect(version, tmp_path):
    _image_or_skip("postgres", version)
    before = containers.leftovers()
    meta = versions.capture_pg(version, tmp_path / "out", log_root=tmp_path, modes=("min_duration_0",))
    assert len(meta) == 2
    for key, run in meta.items():
        check_pg_run(run, tmp_path / "out", key)
        # the same shape as the committed capture of this version
        fixture = (FIXTURES / f"{key}.csv").read_bytes().splitlines()
        got = (tmp_path / "out" / f"{key}.csv").read_bytes().splitlines()
        assert {versions.csv_columns(x) for x in got} == {versions.csv_columns(x) for x in fixture}
    assert containers.leftovers() == before


@pytest.mark.integration
@pytest.mark.usefixtures("docker_engine")
@pytest.mark.parametrize("version", MARIADB_VERSIONS)
def test_each_mariadb_version_writes_the_records_we_expect(version, tmp_path):
    _image_or_skip("mariadb", version)
    before, volumes = containers.leftovers(), containers.leftover_volumes()
    meta = versions.capture_mariadb(version, tmp_path / "out", log_root=tmp_path)
    for key, run in meta.items():
        check_mariadb_run(run, tmp_path / "out", key)
    assert containers.leftovers() == before and containers.leftover_volumes() == volumes


def test_study_08_sweeps_versions_in_containers_each_with_its_own_baseline_and_aa(tmp_path):
    from logbench.workloads.sessions import MARGIN
    from logbench.studies import pg_idle_connections as s08

    study = s08.define(profile="smoke", versions=["13", "17"], output_dir=tmp_path)
    assert study.backend == "container" and [v[0] for v in study.variants] == ["pg13", "pg17"]
    assert study.baselines == ("pg13/max10", "pg17/max10")
    assert study.aa_configurations == {"pg13/max10_again": "pg13/max10", "pg17/max10_again": "pg17/max10"}
    assert study.sessions_of("pg17/max30_idle", 1) == ("idle", 30 - 1 - MARGIN)
    assert s08.define(profile="smoke", output_dir=tmp_path).backend == "local"  # no sweep: as before
    with pytest.raises(ParameterError, match="'13', '15', '17'"):
        s08.define(profile="smoke", versions=["14"], output_dir=tmp_path)
    with pytest.raises(ParameterError, match="containers"):
        s08.define(profile="smoke", versions=["13"], backend="local", output_dir=tmp_path)
    # the committed sweep: its own profile and stem, the standard runs on every version, in containers
    swept = s08.define(profile="versions", output_dir=tmp_path)
    assert [v[3] for v in swept.variants] == ["13", "15", "17"] and swept.backend == "container"
    assert swept.name == "pg_idle_connections_versions"
    assert len(swept.plan()) == 3 * len(s08.define(profile="standard", output_dir=tmp_path).plan())
    assert {"profile": "versions", "backend": "container", "publish": True} in map(dict, s08.SPEC.extra_committed)


@pytest.mark.usefixtures("docker_engine")
def test_setup_refuses_an_image_it_cannot_build_naming_the_allowed_ones():
    script = Path(__file__).resolve().parents[1] / "scripts" / "setup_docker.sh"
    r = subprocess.run(["bash", str(script), "--check", "--image", "logbench/postgres:14"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode != 0 and "logbench/postgres:13 logbench/postgres:15 logbench/postgres:17" in r.stderr


def test_a_first_use_build_says_its_steps_and_a_failed_one_stops_with_its_lines(tmp_path, monkeypatch):
    """The plumbing of the build on first use, with a stand-in for set-up's script (the real one takes minutes):
    its step lines reach the progress channel; its failure is a ServerStartError carrying its last lines."""
    from logbench.base.errors import ServerStartError

    script = tmp_path / "setup_docker.sh"
    script.write_text('echo "setup_docker: building $2 (postgres 13.23-0+deb11u4 from bullseye)"\n'
                      'echo "setup_docker: logbench/debian:bullseye is up to date (x)"\n'
                      'echo "E: Version 13.23-0+deb11u4 for postgresql-13 was not found" >&2\nexit 1\n')
    progress_file = tmp_path / "progress"
    monkeypatch.setenv("LOGBENCH_PROGRESS", str(progress_file))
    monkeypatch.setattr(containers, "SETUP_DOCKER", script)
    with pytest.raises(ServerStartError, match=r"(?s)building logbench/postgres:13 failed.*was not found"):
        containers.build_image("logbench/postgres:13")
    said = progress_file.read_text()
    assert "images: logbench/postgres:13 is not built here: building it" in said
    assert "images: building logbench/postgres:13 (postgres 13.23-0+deb11u4 from bullseye)" in said
    assert "up to date" not in said


@pytest.mark.usefixtures("docker_engine")
def test_a_stale_image_is_rebuilt_on_first_use_and_checked_once_a_process(tmp_path, monkeypatch):
    """An image older than its definition under docker/ (set-up's --check says so) is rebuilt when a study first
    asks for it, saying why; the check runs once per image and process. Set-up's script is a stand-in that
    records its calls (the real build takes a minute); the image must exist, as the engine is asked first."""
    tag = containers.server_images("postgres")["15"].tag
    try:
        containers._docker().images.get(tag)
    except Exception:
        pytest.skip(f"{tag} is not built: `bash scripts/setup.sh --docker` builds it")
    calls = tmp_path / "calls"
    script = tmp_path / "setup_docker.sh"
    script.write_text(f'echo "$*" >>{calls}\n'
                      'if [ "$1" = --check ]; then\n'
                      '  echo "setup_docker: $3 is stale (built from 1111, definition is 2222)"; exit 1\n'
                      'fi\n'
                      'echo "setup_docker: built $2 in 9.9 s, 379 MB"\n')
    progress_file = tmp_path / "progress"
    monkeypatch.setenv("LOGBENCH_PROGRESS", str(progress_file))
    monkeypatch.setattr(containers, "SETUP_DOCKER", script)
    monkeypatch.setattr(containers, "_current", set())
    assert containers.resolve_image("postgres", "15") == tag
    assert containers.resolve_image("postgres", "15") == tag
    assert calls.read_text().splitlines() == [f"--check --image {tag}", f"--image {tag}"]
    said = progress_file.read_text()
    assert (f"images: {tag} is older than its definition under docker/ ({tag} is stale (built from 1111, "
            "definition is 2222)): rebuilding it") in said
    assert f"images: built {tag} in 9.9 s" in said


def test_study_04_sweeps_mariadb_versions_each_with_its_own_records_baseline_and_aa(tmp_path):
    from logbench.studies import mysql_slowlog as s04

    study = s04.define(profile="smoke", versions=["10.5", "11.8"], backend="container", output_dir=tmp_path)
    assert [v[0] for v in study.variants] == ["mariadb10.5", "mariadb11.8"]
    assert study.baselines == ("mariadb10.5/off", "mariadb11.8/off")
    assert study.aa_configurations == {"mariadb10.5/off_again": "mariadb10.5/off",
                                       "mariadb11.8/off_again": "mariadb11.8/off"}
    # 10.5's slow log has an entry more per connection (its Quit); 11.8's none: expected counts differ by that
    old, new = study.configuration("mariadb10.5/slow_all"), study.configuration("mariadb11.8/slow_all")
    assert old.expected_records(statements=1000, connections=8) == 1008
    assert new.expected_records(statements=1000, connections=8) == 1000
    assert study.configuration("mariadb10.5/slow_1s").records == ()
    # the committed sweep: its own stem, the cpu regime only, in containers, registered as a committed run
    swept = s04.define(profile="versions", output_dir=tmp_path)
    assert [v[3] for v in swept.variants] == ["10.5", "10.11", "11.8"] and swept.name == "mysql_slowlog_versions"
    assert swept.regimes == ("cpu",) and swept.memory_limit_mb is None
    assert {"profile": "versions", "backend": "container", "publish": True} in map(dict, s04.SPEC.extra_committed)
    # refused before any server starts, naming what is allowed
    with pytest.raises(ParameterError, match="'versions'.*'10.5', '10.11', '11.8'"):
        s04.define(profile="smoke", versions=["11.4"], backend="container", output_dir=tmp_path)
    with pytest.raises(ParameterError, match="'versions'.*containers"):
        s04.define(profile="smoke", versions=["10.5"], backend="local", output_dir=tmp_path)
    with pytest.raises(ParameterError, match="'image'"):
        s04.define(profile="smoke", versions=["10.5"], backend="container", image="mariadb:10.5", output_dir=tmp_path)
    with pytest.raises(ParameterError, match="'design'.*version sweep"):
        s04.define(profile="switchback", versions=["10.5"], backend="container", output_dir=tmp_path)
    assert not s04.define(profile="smoke", backend="local", output_dir=tmp_path).variants  # no sweep: as before


def test_study_05_sweeps_versions_in_containers_without_the_direct_arm(tmp_path, monkeypatch):
    from logbench.studies import pg_audit_timing as s05

    monkeypatch.setenv("LOGBENCH_PROGRESS", str(tmp_path / "progress.txt"))
    study = s05.define(profile="smoke", versions=["13", "17"], perf_profile=False, output_dir=tmp_path)
    assert study.backend == "container" and [v[0] for v in study.variants] == ["pg13", "pg17"]
    assert study.baselines == ("pg13/none", "pg17/none")
    assert study.aa_configurations == {"pg13/none_again": "pg13/none", "pg17/none_again": "pg17/none"}
    # the profile's arms but the direct one: in a container the server's stderr is Docker's log, not a file; said
    # on the progress channel as 02 and 04 say what their sweeps leave out
    assert {c.name for c in study.configurations} == {f"pg{v}/{c}" for v in ("13", "17") for c in ("none", s05.PIPE)}
    assert f"left out of the sweep of 13, 17: {s05.DIRECT}" in (tmp_path / "progress.txt").read_text()
    assert s05.DIRECT in {c.name for c in s05.define(profile="smoke", perf_profile=False).configurations}
    assert s05.define(profile="smoke", perf_profile=False).backend == "local"  # no sweep: as before
    # refused before any server starts, naming the parameter and what is allowed
    with pytest.raises(ParameterError, match="'versions'.*'13', '15', '17'"):
        s05.define(profile="smoke", versions=["14"], perf_profile=False, output_dir=tmp_path)
    with pytest.raises(ParameterError, match="'versions'.*containers"):
        s05.define(profile="smoke", versions=["13"], backend="local", perf_profile=False, output_dir=tmp_path)
    with pytest.raises(ParameterError, match=f"'configurations'.*without '{s05.DIRECT}'.*'{s05.PIPE}'") as e:
        s05.define(profile="smoke", versions=["13"], configurations=["none", s05.DIRECT], perf_profile=False,
                   output_dir=tmp_path)
    assert e.value.parameter == "configurations"
    with pytest.raises(ParameterError, match="'design'.*version sweep"):
        s05.define(profile="switchback", versions=["13", "17"], output_dir=tmp_path)


def test_study_06_sweeps_mariadb_versions_each_with_its_own_baseline_and_aa(tmp_path):
    from types import SimpleNamespace

    from logbench.studies import log_rotation as s06

    study = s06.define(profile="smoke", versions=["10.5", "11.8"], methods=["rename_flush"], output_dir=tmp_path)
    assert [v[0] for v in study.variants] == ["mariadb10.5", "mariadb11.8"]
    assert study.baselines == ("mariadb10.5/none", "mariadb11.8/none")
    assert study.aa_configurations == {"mariadb10.5/none_again": "mariadb10.5/none",
                                       "mariadb11.8/none_again": "mariadb11.8/none"}
    assert list(s06.method_table(study).index) == ["none", "rename_flush"]
    assert not s06.define(profile="smoke", output_dir=tmp_path).variants  # no sweep: as before
    # 10.5 logs each connection's end as a slow-log entry: one per sysbench connection is due on 10.5 only
    m = SimpleNamespace(extra={"queries": 1000, "tracer_sent": 50, "reconnects": 0}, failed=0)
    due = {}
    for server in ("10.5.29-MariaDB-0+deb11u1", "11.8.9-MariaDB-0+deb13u1"):
        bench = object.__new__(s06.RotationBench)
        bench.server_version = server
        due[server[:4]] = bench.expected_records(None, SimpleNamespace(clients=4), m)
    assert due == {"10.5": 1054, "11.8": 1050}
    # refused before any server starts, naming the parameter and what is allowed
    with pytest.raises(ParameterError, match="'versions'.*'10.5', '10.11', '11.8'"):
        s06.define(profile="smoke", versions=["11.4"], output_dir=tmp_path)
    with pytest.raises(ParameterError, match="'versions'.*containers"):
        s06.define(profile="smoke", versions=["10.5"], backend="local", output_dir=tmp_path)
    with pytest.raises(ParameterError, match="'image'"):
        s06.define(profile="smoke", versions=["10.5"], backend="container", image="mariadb:10.5", output_dir=tmp_path)


# -- a version sweep of studies 05 and 06 end to end, as small as they run (seconds) ------------------------

@pytest.mark.integration
@pytest.mark.usefixtures("docker_engine")
def test_study_05_runs_a_two_version_sweep_in_containers(tmp_path):
    """PostgreSQL 13 and 17 in their containers, one interleaved schedule of none and the pipe arm (one block, 1 s
    runs, no profile): every record counted on each, the version on every run and summary row, each version's
    findings, and the difference between them; nothing left behind."""
    from logbench.studies import common
    from logbench.studies import pg_audit_timing as s05

    for v in ("13", "17"):
        _image_or_skip("postgres", v)
    before = containers.leftovers()
    study = s05.define(profile="smoke", versions=["13", "17"], perf_profile=False, aa_control=False, warmup=0,
                       timing_repeats=1, output_dir=tmp_path / "out")
    result = s05.run(study, progress=False)
    runs = common.split_variant(result.runs)
    assert sorted(set(runs["variant"])) == ["pg13", "pg17"] and set(runs["backend"]) == {"container"}
    for r in runs.itertuples():
        assert r.server_version.startswith(r.variant.removeprefix("pg") + "."), r
        assert r.log_records_received == r.log_records_expected, (r.variant, r.configuration)
        assert (r.log_records_expected > 0) == (r.configuration == s05.PIPE) and r.extra["wchan_samples"] > 0
    tables = s05.processed_tables(result)
    summary = tables["summary"]
    assert {v: set(g["server_version"]) for v, g in summary.groupby("variant")} == {
        v: set(runs.loc[runs["variant"] == v, "server_version"]) for v in ("pg13", "pg17")}
    assert {i.split(".")[0] for i in tables["findings"]["item"]} >= {"pg13", "pg17"}
    between = tables["between_versions"]
    assert list(between[["configuration", "variant", "against"]].itertuples(index=False, name=None)) == [
        (s05.PIPE, "pg17", "pg13")] * len(study.clients)
    assert set(tables["runs"]["variant"]) == {"pg13", "pg17"}
    assert containers.leftovers() == before


@pytest.mark.integration
@pytest.mark.usefixtures("docker_engine")
def test_study_06_runs_a_two_version_sweep_in_containers(tmp_path):
    """MariaDB 10.5 and 11.8 in their containers, one interleaved schedule of none and rename_flush (4 s runs,
    one block): every record counted on each (10.5's connection ends too), no tracer statement lost, the version
    on every run and summary row, and the difference between them; nothing left behind."""
    from logbench.studies import common
    from logbench.studies import log_rotation as s06

    for v in ("10.5", "11.8"):
        _image_or_skip("mariadb", v)
    before, volumes = containers.leftovers(), containers.leftover_volumes()
    study = s06.define(profile="smoke", versions=["10.5", "11.8"], methods=["rename_flush"], backend="container",
                       duration=4, rotate_at=2, pause=0, log_size_mb=1, table_size=1000, aa_control=False,
                       output_dir=tmp_path / "out")
    result = s06.run(study, progress=False)
    runs = s06.expand(common.split_variant(result.runs))
    assert sorted(runs["variant"]) == ["mariadb10.5", "mariadb10.5", "mariadb11.8", "mariadb11.8"]
    for r in runs.itertuples():
        assert r.server_version.startswith(r.variant.removeprefix("mariadb") + "."), r
        assert r.log_records_received == r.log_records_expected > 0, (r.variant, r.configuration)
        assert r.tracer_lost == 0 and r.tracer_duplicated == 0, (r.variant, r.configuration)
    assert (runs.set_index(["variant", "configuration"]).loc[("mariadb10.5", "rename_flush"), "tracer_in_old"] > 0)
    tables = s06.processed_tables(result)
    summary = tables["summary"]
    assert {v: set(g["server_version"]) for v, g in summary.groupby("variant")} == {
        v: set(runs.loc[runs["variant"] == v, "server_version"]) for v in ("mariadb10.5", "mariadb11.8")}
    between = tables["between_versions"]
    assert list(between[["configuration", "variant", "against"]].itertuples(index=False, name=None)) == [
        ("rename_flush", "mariadb11.8", "mariadb10.5")]
    assert set(tables["runs"]["variant"]) == {"mariadb10.5", "mariadb11.8"}
    assert containers.leftovers() == before and containers.leftover_volumes() == volumes
