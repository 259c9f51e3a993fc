"""Every notebook re-executed under nbval, from a temporary copy, in its cheapest faithful profile.

A notebook's committed outputs come from a real standard run; nbval compares the
cells whose output is deterministic and skips those tagged ``nbval-ignore-output``
(measured numbers). papermill injects the test parameters into the copy, so
nothing tracked is written.

Each study's first smoke parameter set (``SPEC.smoke[0]``) is executed by the workflow's smoke run
(tests/test_workflow.py), whose executed notebooks are compared with the committed ones by nbval's
own comparison: executing them here again would double the suite's slowest part. Here: the notebooks
that are not studies, and each study's further smoke parameter sets (e.g. the container backend).
"""

import re

import papermill
import pytest

from logbench.base import paths
from logbench import studies

# (notebook, parameters injected for the test run); "{tmp}" is the run's temporary directory.
# A study's notebook runs with each parameter set its spec names after the first (the registry: logbench.studies).
NOTEBOOKS: list[tuple[str, dict[str, object]]] = [
    ("01_reference_data.ipynb", {}),  # deterministic: every output compared
    *((s.notebook, dict(p)) for s in studies.specs() for p in s.smoke[1:]),
    ("90_findings.ipynb", {"output_dir": "{tmp}/findings"}),  # reads data/processed, writes only to {tmp}
]
# Compared after the workflow's smoke run (tests/test_workflow.py): every study's notebook, SPEC.smoke[0].
BY_THE_WORKFLOW = {s.notebook for s in studies.specs()}
# A study on a user's server has no smoke run without one: its own test hands it a server the test started and
# executes the notebook there (tests/test_own_server.py).
BY_THEIR_OWN_TESTS = {s.notebook for s in studies.user_server_specs()}


def test_every_notebook_is_covered_by_nbval():
    present = {p.name for p in paths.NOTEBOOKS.glob("*.ipynb")}
    missing = present - {name for name, _ in NOTEBOOKS} - BY_THE_WORKFLOW - BY_THEIR_OWN_TESTS
    assert not missing, f"notebooks without an nbval test (add them to NOTEBOOKS): {sorted(missing)}"


def _needs_an_engine(name: str, parameters: dict) -> bool:
    return parameters.get("backend") == "container" or name.startswith("03_")


@pytest.mark.integration
@pytest.mark.parametrize("name, parameters", [
    # marked where it needs the engine: the fresh-machine check's ordering (conftest.py) runs these beside it
    pytest.param(n, p, marks=[pytest.mark.docker_engine] if _needs_an_engine(n, p) else [],
                 id=f"{n}-{'-'.join(map(str, p.values())) or 'as-committed'}") for n, p in NOTEBOOKS])
def test_notebook_under_nbval(name, parameters, request, nbval_run):
    if not (paths.NOTEBOOKS / name).exists():
        pytest.skip(f"{name} is listed but not in notebooks/")
    if _needs_an_engine(name, parameters):
        request.getfixturevalue("docker_engine")
    # once per session (conftest.nbval_run): the container backend's study tests assert on the same run's records
    r = nbval_run(name, parameters)
    assert r.returncode == 0, f"nbval failed for {name}:\n{r.output}"


def test_every_parameter_is_seen_by_papermill():
    """papermill cannot parse a parameters-cell line whose comment holds '=' (or '>='): that parameter silently
    drops out of ``papermill --help-notebook``, the users' list of what they can set."""
    import re

    import nbformat

    for nb_path in sorted(paths.NOTEBOOKS.glob("*.ipynb")):
        nb = nbformat.read(nb_path, as_version=4)
        cell = next((c for c in nb.cells if "parameters" in c.metadata.get("tags", [])), None)
        if cell is None:
            continue
        declared = [m.group(1) for m in re.finditer(r"^(\w+)\s*(?::[^=#]+)?=", cell.source, re.M)]
        seen = set(papermill.inspect_notebook(str(nb_path)))
        assert not [d for d in declared if d not in seen], f"{nb_path.name}: papermill does not see {set(declared) - seen}"


# A parameters-cell comment names the default a profile gives: "None: profile's (3)" (the standard profile's) or
# "None: profile's (switchback: 3)" (that profile's); the value first, as a Python literal, prose may follow.
_DEFAULT = re.compile(r"^(\w+)\s*(?::[^=#]+)?=\s*None\s*#.*None: (?:the )?profile's \((?:(\w+):\s*)?"
                      r"(\[[^\]]*\]|\"[^\"]*\"|-?\d+(?:\.\d+)?|True|False)(?=$|[):;,]| as )", re.M)


def test_the_defaults_a_parameters_cell_names_are_the_profiles():
    """Each parameter is declared in the notebook, in define() and in PROFILES (issue 24): what the notebook tells
    its reader a profile sets must be what that profile sets (notebook 04 said blocks 4 where it set 2)."""
    import ast
    import dataclasses

    import nbformat

    from logbench.measure import design

    # a control a profile leaves out takes the Study's default (design.control_fields)
    study_default = {f.name: f.default for f in dataclasses.fields(design.Study) if f.name in design.CONTROL_FIELDS}
    wrong, checked = [], 0
    for spec in studies.specs():
        profiles = studies.module(spec.name).PROFILES
        nb = nbformat.read(paths.NOTEBOOKS / spec.notebook, as_version=4)
        cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
        for m in _DEFAULT.finditer(cell.source):
            name, profile, said = m.group(1), m.group(2) or "standard", ast.literal_eval(m.group(3))
            if profile not in profiles:
                continue  # prose such as "(post000: True, else False)": a profile's name is not the only key
            checked += 1
            has = profiles[profile].get(name, study_default.get(name))
            if has != said:
                wrong.append(f"{spec.notebook}: {name} says {profile} {said!r}, the profile sets {has!r}")
    assert checked >= 20 and not wrong, "\n".join(wrong)
