"""The layout section of docs/architecture.md names every module of the package and declares its floors: a module
added, moved or renamed without the map changing fails here, and so does an import that runs up a floor, a circle
of imports, or a module kept under an old name (issue 39). And the README stays one a newcomer reads in five minutes
(issue 39): the rest is in docs/."""

import ast
import importlib.util
import json
import re
from pathlib import Path

from logbench.base import paths

README_MAX_WORDS = 1500
LIB = paths.ROOT / "lib" / "logbench"

# Old names of moved modules: no module answers them any more, and no committed notebook names them (a notebook's
# prose is no input of its run; its code's import lines were edited with the move).
REMOVED = ("logbench.digest", "logbench.pgbadger", "logbench.benches.pg_sessions", "logbench.studies.design_comparison",
           # 07's and 08's own benches: they declare their loads, the shared PostgreSQL bench runs them (issue 39)
           "logbench.studies.pg_wal_level.bench", "logbench.studies.pg_idle_connections.bench",
           # the flat package's modules before the floors (issue 39)
           *(f"logbench.{n}" for n in (
               "errors", "paths", "params", "settings", "environment", "cleanup", "records", "progress", "logsinks",
               "stats", "formatting", "capture", "capture_pg", "capturing", "runner", "bench", "design", "controls",
               "resume", "clock", "contention", "versions", "switchstats", "switchwindows", "benches", "switchback",
               "claim_rules", "anomalies", "reference", "costmodel", "discussion", "headline", "plots", "claims",
               "regression", "findings", "answer", "report", "gather", "models", "paper")))


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


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # its parent package is gone too
        return False


def test_no_module_stays_behind_under_an_old_name():
    assert not [n for n in REMOVED if _importable(n)], "a removed name answers again"
    # a shim replaces itself with the moved module, or answers the moved names by a module __getattr__
    shims = [_name(p) for p in LIB.rglob("*.py") if "sys.modules[__name__]" in p.read_text()
             or any(isinstance(s, ast.FunctionDef) and s.name == "__getattr__" for s in ast.parse(p.read_text()).body)]
    assert not shims, f"modules answering for another: {shims}"
    notebooks = sorted(paths.NOTEBOOKS.glob("*.ipynb")) + sorted((paths.NOTEBOOKS / "runs").glob("*.ipynb"))
    gone = [f"{nb.name}: {n}" for nb in notebooks for n in REMOVED
            if re.search(re.escape(n) + r"\b(?!\.)", nb.read_text())]
    assert not gone, f"notebooks naming a removed module: {gone}"


def test_no_module_only_re_exports_another():
    # A module of nothing but imports from one other module is an old name kept alive; a package's __init__ may
    # gather its own modules, and a facade (studies.common) several.
    shims = []
    for p in LIB.rglob("*.py"):
        body = [s for s in ast.parse(p.read_text()).body if not _inert(s)]
        if not body or not all(isinstance(s, (ast.Import, ast.ImportFrom)) for s in body):
            continue
        sources = {t for s in body for t, _ in _targets(_name(p), p, s)}
        own = _name(p) if p.name == "__init__.py" else None
        if (own is None and len(sources) == 1) or (own and not any(t.startswith(own + ".") for t in sources)):
            shims.append(f"{_name(p)} -> {sorted(sources)}")
    assert not shims, f"modules that only re-export another: {shims}"


def _inert(s: ast.stmt) -> bool:
    """A docstring, ``from __future__``, ``__all__``: what a re-exporting module holds besides its imports."""
    return ((isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
            or (isinstance(s, ast.ImportFrom) and s.module == "__future__")
            or (isinstance(s, ast.Assign) and [getattr(t, "id", None) for t in s.targets] == ["__all__"]))


def _name(p: Path) -> str:
    parts = p.relative_to(LIB.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(p): p for p in LIB.rglob("*.py")}


def _targets(module: str, path: Path, node: ast.AST) -> list[tuple[str, int]]:
    """The package's modules an import statement of ``module`` loads: (module, line)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom) and node.level:
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1] + [node.module or ""]).rstrip(".")
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
    else:
        return []
    out = []
    for n in names:
        while n not in MODULES and "." in n:
            n = n.rsplit(".", 1)[0]
        if n in MODULES and n != module:
            out.append((n, node.lineno))
    return out


def _imports() -> dict[str, list[tuple[str, int]]]:
    """Every module's imports of the package, function-level and TYPE_CHECKING ones included."""
    return {m: [t for node in ast.walk(ast.parse(p.read_text())) for t in _targets(m, p, node)]
            for m, p in MODULES.items()}


def _floors() -> dict[str, int]:
    """The floors table of docs/architecture.md's layout: top-level folder or module of the package -> its floor."""
    section = _section((paths.ROOT / "docs" / "architecture.md").read_text(), "## Layout")
    floors = {}
    for number, names in re.findall(r"^\| (\d+) \| ([^|]+) \|", section, flags=re.MULTILINE):
        for name in re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)/?`", names):
            assert name not in floors, f"{name} on two floors of docs/architecture.md"
            floors[name] = int(number)
    return floors


def _floor(module: str, floors: dict[str, int]) -> int:
    parts = module.split(".")
    return max(floors.values()) if len(parts) == 1 else floors[parts[1]]  # the package's own __init__: the top


def test_every_top_level_folder_and_module_has_a_floor():
    floors = _floors()
    top = {p.stem for p in LIB.glob("*.py") if p.stem != "__init__"}
    top |= {p.name for p in LIB.iterdir() if (p / "__init__.py").exists()}
    assert not sorted(top - set(floors)), f"not on a floor of docs/architecture.md: {sorted(top - set(floors))}"
    assert not sorted(set(floors) - top), f"floors naming what the package lacks: {sorted(set(floors) - top)}"


def test_every_import_stays_on_its_floor_or_goes_down():
    floors = _floors()
    up = [f"{m} (floor {_floor(m, floors)}) line {line} imports {t} (floor {_floor(t, floors)})"
          for m, targets in _imports().items() for t, line in targets if _floor(t, floors) > _floor(m, floors)]
    assert not up, "imports running up a floor:\n" + "\n".join(sorted(up))


def test_no_import_circle():
    graph = {m: {t for t, _ in ts} for m, ts in _imports().items()}
    circles, done = [], set()

    def visit(m: str, stack: list[str]) -> None:
        # depth-first; a module met again on the current path closes a circle
        if m in stack:
            circles.append(stack[stack.index(m):] + [m])
            return
        if m in done:
            return
        for t in sorted(graph[m]):
            visit(t, stack + [m])
        done.add(m)

    for m in sorted(graph):
        visit(m, [])
    assert not circles, "import circles:\n" + "\n".join(" -> ".join(c) for c in circles)


def test_the_layout_test_sees_imports_as_python_does():
    # known imports of each form, so that the floors and circles above are checked over imports actually seen
    seen = {m: {t for t, _ in ts} for m, ts in _imports().items()}
    assert "logbench.measure.runner" in seen["logbench.studies.running"]  # from ..measure import runner
    assert "logbench.base.formatting" in seen["logbench.base.stats"]  # from .formatting import CONFIDENCE, ci_text
    assert "logbench.analyze.planning" in seen["logbench.cli"]  # inside a function: from .analyze import planning
    assert "logbench.measure.benches.postgres" in seen["logbench.studies.pg_destinations.spec"]  # a package
    floors = _floors()
    assert _floor("logbench.publish.findings", floors) > _floor("logbench.studies.common", floors) \
        > _floor("logbench.analyze.claims.engine", floors) > _floor("logbench.base.paths", floors) == 0
