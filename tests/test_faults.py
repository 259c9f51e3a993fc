"""Faults a study must survive with its recorded runs intact (issue 14)."""

from __future__ import annotations

import json

import pytest

from conftest import blank_run
from logbench.base import records


def _write(path, n):
    for i in range(n):
        records.append(path, blank_run(i))


def test_a_truncated_last_line_is_ignored_with_a_warning_and_the_rest_kept(tmp_path):
    path = tmp_path / "runs.jsonl"
    _write(path, 3)
    whole = path.read_bytes()
    path.write_bytes(whole + blank_run(3).to_json().encode()[:57])  # power loss in the middle of the fourth write
    with pytest.warns(UserWarning, match="last line is truncated.*3 complete runs"):
        runs = records.load(path)
    assert list(runs["position"]) == [0, 1, 2]


def test_the_next_record_after_a_truncation_starts_on_a_line_of_its_own(tmp_path):
    path = tmp_path / "runs.jsonl"
    _write(path, 2)
    path.write_bytes(path.read_bytes() + b'{"study": "x", "configu')
    with pytest.warns(UserWarning, match="removed a truncated last line"):
        records.append(path, blank_run(7))
    assert list(records.load(path)["position"]) == [0, 1, 7]


def test_a_whole_record_that_lost_only_its_newline_is_kept(tmp_path):
    path = tmp_path / "runs.jsonl"
    _write(path, 2)
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    records.append(path, blank_run(5))
    assert list(records.load(path)["position"]) == [0, 1, 5]


def test_damage_in_the_middle_is_an_error_naming_the_line(tmp_path):
    path = tmp_path / "runs.jsonl"
    _write(path, 3)
    lines = path.read_text().splitlines()
    lines[1] = lines[1][:20]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match="line 2 of 3 .*damaged in the middle"):
        records.load(path)
    assert json.loads(lines[0])["position"] == 0


@pytest.mark.integration
def test_a_crashed_studys_leftovers_are_swept_when_the_next_server_starts(tmp_path, monkeypatch, capfd):
    """A study killed outright (and its guardian with it) left a work directory with a stale
    postmaster.pid and a process still running in it; the next server start removes both, says so,
    and comes up in a directory of its own."""
    import os
    import subprocess

    from logbench.base import cleanup, paths
    from logbench.servers.postgres import LocalPostgres
    from logbench.base.settings import Settings

    stale = paths.scratch_root() / f"logbench-pg-crashed{os.getpid()}"
    (stale / "data").mkdir(parents=True)
    (stale / "data" / "postmaster.pid").write_text("999999\n")
    gone = subprocess.Popen(["true"])
    gone.wait()
    (stale / cleanup.OWNER_FILE).write_text(json.dumps({"pid": gone.pid, "started": 0.0}))
    orphan = subprocess.Popen(["sleep", "300"], cwd=stale, start_new_session=True)
    monkeypatch.setattr(cleanup, "_guarded", set())  # as in a new process: its first server sweeps
    import shutil
    import tempfile
    from pathlib import Path

    log_dir = Path(tempfile.mkdtemp(prefix="lbtest-log-", dir=paths.scratch_root()))  # reachable by the server
    log_dir.chmod(0o777)
    try:
        with LocalPostgres(Settings.of("postgresql"), log_dir=log_dir) as pg:
            assert pg.workdir != stale
            assert pg._probe()
        orphan.wait(timeout=10)
        assert not stale.exists()
        err = capfd.readouterr().err
        assert f"removed a leftover of an earlier study: directory {stale}" in err
        assert f"process {orphan.pid} (sleep)" in err
    finally:
        shutil.rmtree(log_dir, ignore_errors=True)
        if orphan.poll() is None:
            orphan.kill()


@pytest.mark.integration
def test_a_full_log_filesystem_shows_as_loss_and_the_study_ends_cleanly(tmp_path, monkeypatch):
    """The log directory on a 1 MB tmpfs fills within a run: PostgreSQL keeps serving (its logging
    collector drops what it cannot write), and the study records the loss instead of hiding it; it
    ends normally and leaves nothing."""
    import os
    import subprocess

    from logbench.base import paths
    from logbench.studies import pg_destinations as study_mod

    if os.geteuid() != 0:
        pytest.skip("needs root to mount a small tmpfs")
    import tempfile
    from pathlib import Path

    mnt = Path(tempfile.mkdtemp(prefix="lbtest-full-", dir=paths.scratch_root()))  # reachable by the server
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=1777", "logbench-full", str(mnt)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        mnt.rmdir()
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    monkeypatch.setattr(paths, "tmpfs_root", lambda: mnt)
    try:
        study = study_mod.define(profile="smoke", destinations=["csvlog"], clients=[2], repeats=1, duration=3,
                                 log_dir_on="tmpfs", backend="local", output_dir=tmp_path / "out")
        runs = study_mod.run(study, progress=False).runs.set_index("configuration")
        logged = runs.loc["csvlog"]
        print(f"full log filesystem: expected {logged['log_records_expected']}, received "
              f"{logged['log_records_received']}, loss {logged['log_loss']:.3f}")
        assert logged["tps"] > 0
        assert logged["log_loss"] > 0
        assert list(mnt.iterdir()) == []  # the study's log directory removed
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
        mnt.rmdir()


@pytest.mark.integration
def test_a_port_in_use_and_a_second_server_do_not_collide(tmp_path):
    """Another server on 5432 (the port number our unix socket carries) and a second study's server at
    the same time: each server listens only on a socket directory of its own, so all three coexist."""
    import shutil
    import socket
    import tempfile
    from pathlib import Path

    from logbench.base import paths
    from logbench.servers.postgres import LocalPostgres
    from logbench.base.settings import Settings

    log_dir = Path(tempfile.mkdtemp(prefix="lbtest-log-", dir=paths.scratch_root()))
    log_dir.chmod(0o777)
    busy = socket.socket()
    try:
        busy.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            busy.bind(("127.0.0.1", 5432))
            busy.listen()
        except OSError:
            pass  # already taken by something else: as good for this test
        with LocalPostgres(Settings.of("postgresql"), log_dir=log_dir / "a") as a, \
                LocalPostgres(Settings.of("postgresql"), log_dir=log_dir / "b") as b:
            assert a.port == b.port == 5432 and a.socket_dir != b.socket_dir
            assert a._probe() and b._probe()
    finally:
        busy.close()
        shutil.rmtree(log_dir, ignore_errors=True)
