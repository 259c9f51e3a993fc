"""Study 03 (local vs container) says whether its backends ran the same server, naming both versions: in its
summary, its interaction table, its finding and the paper. Read from the committed run's records (since set-up's pin,
local and container both PostgreSQL 15.18-0+deb12u1) and from the same records with the container's version set to
15.20, what the committed run had before the pin (an image that took the archive's newest)."""

import pandas as pd
import pytest

from logbench.base import paths
from logbench.analyze.claims import StudyData
from logbench.publish.paper import per_study
from logbench.publish.paper.numbers import Numbers
from logbench.studies import backend_comparison as cmp

RUNS = paths.PROCESSED / "backend_comparison_runs.csv"
LOCAL, CONTAINER = "15.18 (Debian 15.18-0+deb12u1)", "15.20 (Debian 15.20-0+deb12u1)"


@pytest.fixture(scope="module")
def committed() -> pd.DataFrame:
    runs = pd.read_csv(RUNS)
    assert dict(runs.groupby("backend")["server_version"].first()) == {"local": LOCAL, "container": LOCAL}
    return runs


def same_server(runs: pd.DataFrame, version: str = LOCAL) -> pd.DataFrame:
    return runs.assign(server_version=version)


def different(runs: pd.DataFrame) -> pd.DataFrame:
    return runs.assign(server_version=runs["server_version"].where(runs["backend"] == "local", CONTAINER))


def test_the_summary_and_the_interaction_name_each_backends_server(committed):
    summary = cmp.summary(committed)
    assert set(summary["server_version"]) == {LOCAL}
    summary = cmp.summary(different(committed))
    assert dict(zip(summary["backend"], summary["server_version"])) == {"local": LOCAL, "container": CONTAINER}
    inter = cmp.interaction(different(committed))
    assert set(inter["local_server"]) == {LOCAL} and set(inter["container_server"]) == {CONTAINER}


def test_the_finding_says_a_version_difference_is_in_the_backend_effect(committed):
    text = cmp.finding(cmp.interaction(different(committed)))
    assert text.endswith(f"The backends ran different server versions, local {LOCAL} and container {CONTAINER}: "
                         "each difference between them is the backend's effect and the version difference's "
                         "together, not the backend's alone.")
    same = cmp.finding(cmp.interaction(same_server(committed)))
    assert same.endswith(f"Both backends ran the same server, {LOCAL}: a difference between them is the backend's.")
    assert "different" not in same
    assert cmp.version_note(LOCAL, "15.18 (Debian 15.18-1.pgdg120+1)") == (
        f"Both backends ran PostgreSQL 15.18, in different builds (local {LOCAL}, container 15.18 (Debian "
        "15.18-1.pgdg120+1)): a difference between them is the backend's and the build's.")


def test_the_paper_names_both_versions_only_where_they_differ(committed, tmp_path):
    def entry_for(runs: pd.DataFrame) -> tuple[dict, Numbers]:
        runs.to_csv(tmp_path / "backend_comparison_runs.csv", index=False)
        nums, entry = Numbers(tmp_path), {}
        study = StudyData(name="backend_comparison", engine="postgresql", baseline="none",
                          runs=runs[~runs["warmup"].astype(bool)])
        per_study.backend_versions(nums, study, "backend_comparison_runs.csv", {"warmup": "False"}, entry)
        return entry, nums

    entry, nums = entry_for(different(committed))
    assert [(b["backend"], nums.get(b["key"])) for b in entry["backend_versions"]] == [
        ("container", CONTAINER), ("local", LOCAL)]
    entry, nums = entry_for(committed)
    assert "backend_versions" not in entry and not nums.items
