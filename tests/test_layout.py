"""The layout section of docs/architecture.md names every module of the package: a module added, moved or renamed
without the map changing fails here. And the README stays one a newcomer reads in five minutes (issue 39): the rest
is in docs/."""

import re

from logbench import paths

README_MAX_WORDS = 1500


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
