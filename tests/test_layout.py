"""The layout section of docs/architecture.md names every module of the package: a module added, moved or renamed
without the map changing fails here. And the README stays one a newcomer reads in five minutes (issue 39): the rest
is in docs/."""

import importlib.util
import json
import re

from logbench import paths

README_MAX_WORDS = 1500

# Old names of moved modules, removed once a notebook's prose stopped being an input of its run (issue 39): the
# committed notebooks named them in markdown only.
REMOVED = ("logbench.digest", "logbench.pgbadger", "logbench.benches.pg_sessions")
# Old names a committed notebook's code still imports: editing that cell would re-run its study (notebook 00's
# design_comparison: ~38 min), so the shim goes with the next committed run of that study.
KEPT = {"logbench.studies.design_comparison": "00_instrument.ipynb"}


def _section(text: str, heading: str) -> str:
    """``heading``'s section of a markdown text: from the heading to the next heading of its level, or the end."""
    start = text.index(heading + "\n")
    level = heading.split(" ", 1)[0]
    nxt = re.search(rf"^{level} ", text[start + len(heading):], flags=re.MULTILINE)
    return text[start:start + len(heading) + nxt.start()] if nxt else text[start:]


def test_every_module_and_package_is_named_in_the_architecture_layout():
    doc = (paths.ROOT / "docs" / "architecture.md").read_text()
    section = _section(doc, "## Layout")
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", section))
    lib = paths.ROOT / "lib" / "logbench"
    names = {p.stem for p in lib.rglob("*.py") if p.stem not in ("__init__", "__main__")}
    names |= {p.name for p in lib.rglob("*") if p.is_dir() and (p / "__init__.py").exists()}
    assert not sorted(names - words), f"not in docs/architecture.md's layout: {sorted(names - words)}"


def test_readme_is_short():
    # Words of the markdown text as it is (code blocks, tables and their pipes included): the strictest count.
    words = len((paths.ROOT / "README.md").read_text().split())
    assert words <= README_MAX_WORDS, f"README.md has {words} words, more than {README_MAX_WORDS}: move detail to docs/"


def test_readme_links_every_docs_file():
    readme = (paths.ROOT / "README.md").read_text()
    missing = [p.name for p in sorted((paths.ROOT / "docs").glob("*.md")) if f"docs/{p.name}" not in readme]
    assert not missing, f"docs files the README does not link: {missing}"


def _code(notebook) -> str:
    return "\n".join("".join(c["source"]) for c in json.loads(notebook.read_text())["cells"] if c["cell_type"] == "code")


def test_no_module_stays_behind_under_an_old_name():
    lib = paths.ROOT / "lib" / "logbench"
    assert not [n for n in REMOVED if importlib.util.find_spec(n) is not None], "a removed shim is back"
    # a shim replaces itself with the moved module, or answers the moved names by a module __getattr__
    shims = {"logbench." + ".".join(p.relative_to(lib).with_suffix("").parts) for p in lib.rglob("*.py")
             if "sys.modules[__name__]" in p.read_text()}
    assert shims == set(KEPT), f"old-name modules: {sorted(shims)}; kept on purpose: {sorted(KEPT)}"
    assert not [p.name for p in (lib / "benches" / "postgres").glob("*.py") if "def __getattr__" in p.read_text()], \
        "benches/postgres answers study 02's moved names again"
    notebooks = sorted(paths.NOTEBOOKS.glob("*.ipynb")) + sorted((paths.NOTEBOOKS / "runs").glob("*.ipynb"))
    gone = [f"{nb.name}: {n}" for nb in notebooks for n in REMOVED
            if re.search(re.escape(n) + r"\b(?!\.)", nb.read_text())]
    assert not gone, f"notebooks naming a removed module: {gone}"
    # a kept shim goes once no committed notebook's code imports it any more
    unused = [n for n, nb in KEPT.items() if n.rsplit(".", 1)[1] not in _code(paths.NOTEBOOKS / nb)]
    assert not unused, f"shims no notebook's code imports any more (remove them): {unused}"
