"""The README's layout section names every module of the package: a module added, moved or renamed without the map
changing fails here."""

import re

from logbench import paths


def test_every_module_and_package_is_named_in_the_readme_layout():
    readme = (paths.ROOT / "README.md").read_text()
    section = readme[readme.index("## Layout"):readme.index("## The studies")]
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", section))
    lib = paths.ROOT / "lib" / "logbench"
    names = {p.stem for p in lib.rglob("*.py") if p.stem not in ("__init__", "__main__")}
    names |= {p.name for p in lib.rglob("*") if p.is_dir() and (p / "__init__.py").exists()}
    assert not sorted(names - words), f"not in the README's layout: {sorted(names - words)}"
