"""A study's parameters are declared once (issue 39): define()'s typed signature (study_fields' for the shared ones)
and the study's HELP (parameters.HELP for the shared ones), read by ``@common.declare`` into ``define.declaration``
(logbench.studies.declaration). Its PROFILES are checked by it at import; its notebook's parameters cell is
generated from it (``python -m logbench.studies --write-cells``) and its define() call passes what the cell offers
by the declaration's names (``define.declaration.given(globals())``). This test holds the committed notebooks to
both: a cell that differs from the generated text, or a define() call that lists its own keywords, fails."""

import ast
import json

import papermill
import pytest

from logbench.base import paths
from logbench import studies
from logbench.base.errors import ParameterError
from logbench.studies import parameters
from logbench.studies.declaration import (accepts, annotation, cell_source, conforms, declare, default_of,
                                          parameters_cell, type_text)

ALL = (*studies.specs(), *studies.user_server_specs())


@pytest.mark.parametrize("spec", ALL, ids=lambda s: s.notebook)
def test_every_parameters_cell_is_generated_from_its_declaration(spec):
    generated = parameters_cell(studies.module(spec.name).define, spec)
    assert cell_source(paths.NOTEBOOKS / spec.notebook) == generated, (
        f"{spec.notebook}: parameters cell differs from its study's declaration; "
        "run `python -m logbench.studies --write-cells`")


@pytest.mark.parametrize("spec", ALL, ids=lambda s: s.notebook)
def test_papermill_reads_the_declaration_from_the_generated_cell(spec):
    """What ``papermill --help-notebook`` shows is the declaration: every name, its default, a type it takes,
    its help; so the generated text is one papermill's parser reads whole."""
    declared = studies.module(spec.name).define.declaration.offered()
    cell = papermill.inspect_notebook(str(paths.NOTEBOOKS / spec.notebook))
    assert list(cell) == list(declared)
    for name, found in cell.items():
        p = declared[name]
        default = ast.literal_eval(found["default"])
        assert default == default_of(p, spec) and conforms(default, p.type), name
        assert accepts(p.type, annotation(found["inferred_type_name"])), (name, found["inferred_type_name"])
        assert found["help"] == p.help, name


def define_calls(spec) -> list[ast.Call]:
    nb = json.loads((paths.NOTEBOOKS / spec.notebook).read_text())
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    return [c for c in ast.walk(ast.parse(code)) if isinstance(c, ast.Call)
            and getattr(c.func, "attr", None) == "define"]


@pytest.mark.parametrize("spec", ALL, ids=lambda s: s.notebook)
def test_every_offered_parameter_reaches_define(spec):
    """The notebook calls ``M.define(**M.define.declaration.given(globals()))``: every parameter its cell offers
    (and papermill may inject) reaches define(), none by a keyword list that could leave one out."""
    calls = define_calls(spec)
    assert len(calls) == 1, f"{spec.notebook}: {len(calls)} define() calls"
    assert ast.unparse(calls[0]).endswith(".define(**%s.define.declaration.given(globals()))"
                                          % ast.unparse(calls[0].func.value)), ast.unparse(calls[0])


def test_given_picks_the_declared_names_and_lets_none_go_missing():
    decl = studies.module("pg_wal_level").define.declaration
    namespace = {n: p.default for n, p in decl.offered().items()} | {"profile": "smoke", "pd": object()}
    kwargs = decl.given(namespace)
    assert set(kwargs) == set(decl.offered()) - set(decl.notebook_only) and kwargs["profile"] == "smoke"
    studies.module("pg_wal_level").define(**kwargs)  # define() takes every one of them
    with pytest.raises(TypeError, match="does not define levels"):
        decl.given({k: v for k, v in namespace.items() if k != "levels"})
    with pytest.raises(ParameterError, match="profile"):
        studies.module("pg_wal_level").define(**decl.given(namespace | {"profile": "huge"}))


def test_a_profile_must_set_parameters_of_their_type():
    """The check a study's import runs (``@common.declare(PROFILES)`` on its define())."""
    def define(profile: str = "standard", scale: int | None = None, clients: list[int] | None = None,
               **shared: object) -> None:
        pass

    helps = {"profile": "run size", "scale": "pgbench -s"}
    declare({"standard": {"scale": 10, "clients": [1, 4], "repeats": 3, "target_halfwidth": "off"}},
            help=helps)(define)
    assert "warmup" in define.declaration.parameters and "warmup_blocks" in define.declaration.hidden
    with pytest.raises(TypeError, match="sets 'scael', which is no parameter"):
        declare({"standard": {"scael": 10}}, help=helps)(define)
    with pytest.raises(TypeError, match=r"\['standard'\]\['scale'\] = '10' is not int \| None"):
        declare({"standard": {"scale": "10"}}, help=helps)(define)
    with pytest.raises(TypeError, match="is not list"):
        declare({"smoke": {"clients": [1, True]}}, help=helps)(define)
    with pytest.raises(TypeError, match="no parameter"):
        declare({"smoke": {"warmup": 1}}, help=helps, without=("warmup",))(define)


def test_every_offered_parameter_must_have_its_help():
    def define(profile: str = "standard", scale: int | None = None, **shared: object) -> None:
        pass

    with pytest.raises(TypeError, match=r"without help .*\['scale'\]"):
        declare({}, help={"profile": "run size"})(define)
    with pytest.raises(TypeError, match=r"does not offer: \['scael'\]"):
        declare({}, help={"profile": "run size", "scale": "pgbench -s", "scael": "?"})(define)
    with pytest.raises(TypeError, match="one line without '#'"):
        declare({}, help={"profile": "run size", "scale": "pgbench -s # 16 MB each"})(define)
    # a shared parameter's help is parameters.HELP's unless the study says it otherwise
    declare({}, help={"profile": "run size", "scale": "pgbench -s", "clients": "sysbench --threads"})(define)
    offered = define.declaration.offered()
    assert offered["clients"].help == "sysbench --threads"
    assert offered["repeats"].help == parameters.HELP["repeats"]


def test_a_notebook_annotation_must_be_one_the_declaration_takes():
    assert accepts(int | None, annotation("Optional[int]"))
    assert accepts(float | str | None, annotation("Optional[float]"))
    assert accepts(float | str | None, annotation("Optional[Union[float, str]]"))
    assert accepts(float | None, annotation("Optional[int]"))  # a whole number of seconds is a number of them
    assert accepts(list[str] | None, annotation("Optional[list[str]]"))
    assert accepts(dict | None, annotation("Optional[dict]"))
    assert not accepts(int | None, annotation("Optional[float]"))
    assert not accepts(list[int] | None, annotation("Optional[list[str]]"))
    assert not accepts(int, annotation("Optional[int]"))  # None would reach a define() that has no use for it
