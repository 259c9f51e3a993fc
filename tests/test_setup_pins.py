"""Set-up's pin of the local servers (scripts/setup_packages.sh, docker/servers.tsv's default lines), on this
machine as it is: with the packages present no apt runs; another manifest stands for a machine whose installed
patch level is not the pin, or for another Debian release. Set-up's install at the pin is checked where it
installs: in the fresh-machine container (tests/test_server_versions.py's patch-level test runs there)."""

import subprocess
from pathlib import Path

import pytest

from logbench.base import paths
from test_server_versions import installed_from

SCRIPT = paths.ROOT / "scripts" / "setup_packages.sh"
MANIFEST = paths.ROOT / "docker" / "servers.tsv"
SOURCES = ("postgresql-15", "mariadb")


def wanted_present() -> bool:
    lines = (paths.ROOT / "scripts" / "apt-packages.txt").read_text().splitlines()
    wanted = [x.split("#")[0].strip() for x in lines if x.split("#")[0].strip()]
    r = subprocess.run(["dpkg-query", "-W", "-f=${db:Status-Abbrev}\\n", *wanted], capture_output=True, text=True)
    return r.returncode == 0 and all(x.startswith("ii") for x in r.stdout.splitlines())


pytestmark = pytest.mark.skipif(not wanted_present(), reason="set-up has not installed scripts/apt-packages.txt "
                                "here (these tests must not make it run apt)")


def manifest_with(tmp_path: Path, change) -> Path:
    """docker/servers.tsv with ``change(columns)`` applied to each default line."""
    out = []
    for line in MANIFEST.read_text().splitlines():
        cols = line.split("\t")
        if not line.startswith("#") and len(cols) == 5 and cols[4] == "yes":
            change(cols)
        out.append("\t".join(cols))
    path = tmp_path / "servers.tsv"
    path.write_text("\n".join(out) + "\n")
    return path


def run(manifest: Path) -> list[str]:
    r = subprocess.run(["bash", str(SCRIPT), "--manifest", str(manifest)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "setup: system packages present"
    return r.stdout.splitlines()


def test_an_installed_server_at_another_patch_level_is_kept_and_set_up_says_how_to_align(tmp_path):
    before = {s: installed_from(s) for s in SOURCES}
    (have,) = set(before["postgresql-15"].values())
    pin = "15.1-0+deb12u1"  # below any 15 Debian 12 shipped, and in no archive
    manifest = manifest_with(tmp_path, lambda c: c.__setitem__(3, pin) if c[0] == "postgres" else None)
    line, = [x for x in run(manifest) if x.startswith("setup: postgresql-15 ")]
    align = " ".join(f"{p}={pin}" for p in sorted(before["postgresql-15"]))
    sudo = "" if subprocess.run(["id", "-u"], capture_output=True, text=True).stdout.strip() == "0" else "sudo "
    assert line == (f"setup: postgresql-15 {have} is installed, {manifest} pins {pin}: kept (set-up does not change "
                    "an installed server), so study 03's local and container servers differ in patch level; to align: "
                    f"{sudo}apt-get install --allow-downgrades {align} (this machine's apt archive lacks {pin}: "
                    f"`apt-get update` first, or change {manifest})")
    assert {s: installed_from(s) for s in SOURCES} == before


def test_at_the_pin_set_up_says_so_and_touches_nothing():
    pins = {c[0]: c[3] for c in (x.split("\t") for x in MANIFEST.read_text().splitlines())
            if len(c) == 5 and c[4] == "yes"}
    before = {s: installed_from(s) for s in SOURCES}
    if set(before["postgresql-15"].values()) != {pins["postgres"]}:
        pytest.skip(f"postgresql-15 here was installed at {before['postgresql-15']} before set-up, not at the pin")
    out = run(MANIFEST)
    assert f"setup: postgresql-15 at docker/servers.tsv's {pins['postgres']}" in out
    assert not any("is installed" in x for x in out if x.startswith("setup: postgresql-15 "))
    assert {s: installed_from(s) for s in SOURCES} == before


def test_another_release_keeps_its_own_servers_and_says_so(tmp_path):
    manifest = manifest_with(tmp_path, lambda c: c.__setitem__(2, "forky"))
    out = run(manifest)
    for src in SOURCES:
        assert any(x.startswith(f"setup: this machine is Debian/Ubuntu 'bookworm', not forky: its {src} is the "
                                "release's own") for x in out), out
    assert len(out) == 3, out  # the two lines and "present": nothing pinned, nothing to align
