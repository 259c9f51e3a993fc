"""A study's parameters are declared once, in its define()'s typed signature (and study_fields' for the shared ones:
logbench.studies.declaration); its PROFILES are checked by it at import, its notebook's parameters cell here (issue 24).

The notebooks are not generated from the declaration: a committed notebook carries the outputs of a real run, and
its parameters cell's comments are what ``papermill --help-notebook`` shows its user. So this test holds each cell
to its study's declaration: the same names, the same defaults, an annotation the declared type takes."""

import ast

import papermill
import pytest

from logbench import paths, studies
from logbench.studies.declaration import accepts, annotation, conforms, declare, default_of, type_text

# What committed notebooks offer otherwise than their study declares, until the notebook is run again with its cell
# corrected (a cell is not edited by hand: its outputs come from a run). Strict: a line fixed must leave this set.
KNOWN: set[str] = {
    # PostgreSQL's bin directory: notebook 10 offers it (and 04, 06, 09 their server binary, mariadbd)
    *(f"{nb}: does not offer pg_bindir (define() takes it)" for nb in (
        "00_instrument.ipynb", "02_pg_destinations.ipynb", "03_local_vs_container.ipynb",
        "05_pg_audit_timing.ipynb", "07_pg_wal_level.ipynb", "08_pg_idle_connections.ipynb")),
    # notebook 02 offers them for the same engine settings
    *(f"03_local_vs_container.ipynb: does not offer {n} (define() takes it)" for n in (
        "extra_settings", "log_dir_on", "sampling_rate", "shared_buffers", "syslog_rate_limit")),
    "07_pg_wal_level.ipynb: does not offer extra_settings (define() takes it)",
    "08_pg_idle_connections.ipynb: does not offer sampling_rate (define() takes it)",
    # the io regime's pacing, set by the standard and full profiles; notebook 02 offers its own
    "04_mysql_slowlog.ipynb: does not offer memory_limit_mb (define() takes it)",
    "04_mysql_slowlog.ipynb: does not offer read_iops (define() takes it)",
    # adaptive repeats: define() takes them (study_fields), the profiles leave them at the Study's default
    *(f"{nb}: does not offer {n} (define() takes it)"
      for nb in ("07_pg_wal_level.ipynb", "08_pg_idle_connections.ipynb")
      for n in ("max_repeats", "target_halfwidth", "time_budget_s")),
}


def disagreements(spec) -> list[str]:
    """Where ``spec``'s notebook's parameters cell and its study's declaration disagree, one line each."""
    declared = studies.module(spec.name).define.declaration.offered()
    cell = papermill.inspect_notebook(str(paths.NOTEBOOKS / spec.notebook))
    nb = spec.notebook
    out = [f"{nb}: does not offer {n} (define() takes it)" for n in declared if n not in cell]
    for name, found in cell.items():
        p = declared.get(name)
        if p is None:
            out.append(f"{nb}: offers {name}, which its study does not declare")
            continue
        default, tp = ast.literal_eval(found["default"]), annotation(found["inferred_type_name"])
        # a cell may state what define()'s None stands for (the seed's: the spec's) or leave it None
        if default not in (p.default, default_of(p, spec)) or not conforms(default, p.type):
            out.append(f"{nb}: {name} defaults to {default!r}, define() to {default_of(p, spec)!r}")
        if not accepts(p.type, tp):
            out.append(f"{nb}: {name} is annotated {type_text(tp)}, declared {type_text(p.type)}")
    return out


def test_every_notebook_offers_what_its_study_declares():
    found = {line for spec in studies.specs() for line in disagreements(spec)}
    assert not found - KNOWN, "notebook and study disagree:\n" + "\n".join(sorted(found - KNOWN))
    assert not KNOWN - found, "fixed (remove from KNOWN):\n" + "\n".join(sorted(KNOWN - found))


def test_a_profile_must_set_parameters_of_their_type():
    """The check a study's import runs (``@common.declare(PROFILES)`` on its define())."""
    def define(profile: str = "standard", scale: int | None = None, clients: list[int] | None = None,
               **shared: object) -> None:
        pass

    declare({"standard": {"scale": 10, "clients": [1, 4], "repeats": 3, "target_halfwidth": "off"}})(define)
    assert "warmup" in define.declaration.parameters and "warmup_blocks" in define.declaration.hidden
    with pytest.raises(TypeError, match="sets 'scael', which is no parameter"):
        declare({"standard": {"scael": 10}})(define)
    with pytest.raises(TypeError, match=r"\['standard'\]\['scale'\] = '10' is not int \| None"):
        declare({"standard": {"scale": "10"}})(define)
    with pytest.raises(TypeError, match="is not list"):
        declare({"smoke": {"clients": [1, True]}})(define)
    with pytest.raises(TypeError, match="no parameter"):
        declare({"smoke": {"warmup": 1}}, without=("warmup",))(define)


def test_a_notebook_annotation_must_be_one_the_declaration_takes():
    assert accepts(int | None, annotation("Optional[int]"))
    assert accepts(float | str | None, annotation("Optional[float]"))
    assert accepts(float | None, annotation("Optional[int]"))  # a whole number of seconds is a number of them
    assert accepts(list[str] | None, annotation("Optional[list[str]]"))
    assert accepts(dict | None, annotation("Optional[dict]"))
    assert not accepts(int | None, annotation("Optional[float]"))
    assert not accepts(list[int] | None, annotation("Optional[list[str]]"))
    assert not accepts(int, annotation("Optional[int]"))  # None would reach a define() that has no use for it
