from logbench.base import paths


def test_paths_are_rooted_in_the_repository():
    assert (paths.ROOT / "pyproject.toml").is_file()
    assert paths.LIB == paths.ROOT / "lib" / "logbench"
    for p in (paths.NOTEBOOKS, paths.RAW, paths.PROCESSED, paths.PAPER):
        assert p.is_dir(), p
        assert paths.ROOT in p.parents


def test_scratch_is_on_disk_and_tmpfs_is_tmpfs():
    assert paths.scratch_root().is_dir()
    assert str(paths.tmpfs_root()) == "/dev/shm"
