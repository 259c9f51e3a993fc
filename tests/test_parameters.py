"""A study's parameters are declared once, in its define()'s typed signature (and study_fields' for the shared ones:
logbench.studies.declaration); its PROFILES are checked by it at import, its notebook's parameters cell here (issue 24).

The notebooks are not generated from the declaration: a committed notebook carries the outputs of a real run, and
its parameters cell's comments are what ``papermill --help-notebook`` shows its user. So this test holds each cell
to its study's declaration: the same names, the same defaults, an annotation the declared type takes; and every
parameter it offers is passed on to define()."""

import ast
import json

import papermill
import pytest

from logbench.base import paths
from logbench import studies
from logbench.studies.declaration import accepts, annotation, conforms, declare, default_of, type_text


def disagreements(spec) -> list[str]:
    """Where ``spec``'s notebook's parameters cell and its study's declaration disagree, one line each."""
    declared = studies.module(spec.name).define.declaration.offered()
    cell = papermill.inspect_notebook(str(paths.NOTEBOOKS / spec.notebook))
    nb = spec.notebook
    optional = studies.module(spec.name).define.declaration.optional
    out = [f"{nb}: does not offer {n} (define() takes it)" for n in declared if n not in cell and n not in optional]
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
    found = [line for spec in (*studies.specs(), *studies.user_server_specs()) for line in disagreements(spec)]
    assert not found, "notebook and study disagree:\n" + "\n".join(sorted(found))


def unpassed(spec) -> list[str]:
    """The parameters ``spec``'s notebook offers and its study's define() takes that the notebook's define() call
    does not pass by name: a value a user sets there (``-p``) would be silently ignored."""
    declaration = studies.module(spec.name).define.declaration
    nb = json.loads((paths.NOTEBOOKS / spec.notebook).read_text())
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    calls = [c for c in ast.walk(ast.parse(code)) if isinstance(c, ast.Call)
             and getattr(c.func, "attr", None) == "define"]
    passed = {k.arg for k in calls[0].keywords if isinstance(k.value, ast.Name) and k.value.id == k.arg}
    cell = papermill.inspect_notebook(str(paths.NOTEBOOKS / spec.notebook))
    # an optional parameter the cell leaves out is not there to pass (define()'s default holds)
    return [f"{spec.notebook}: {n}" for n in declaration.offered()
            if n not in declaration.notebook_only and n not in passed
            and not (n in declaration.optional and n not in cell)]


def test_every_offered_parameter_reaches_define():
    found = [line for spec in (*studies.specs(), *studies.user_server_specs()) if spec.notebook
             for line in unpassed(spec)]
    assert not found, "offered but not passed to define():\n" + "\n".join(found)


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
