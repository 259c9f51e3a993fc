import os

import pytest

needs_root = pytest.mark.skipif(
    os.geteuid() != 0,
    reason="needs root: the server gets a private /dev/log (mount namespace) and remote syslog a network namespace",
)


@pytest.fixture
def docker_engine():
    """A Docker engine for the container backend: skip without one, except in CI, where it must run."""
    from logbench.servers.containers import engine_answers

    if not engine_answers():
        reason = "no Docker engine answers; `bash scripts/setup.sh --docker` installs and starts one"
        if os.environ.get("CI"):
            pytest.fail("CI must run the container tests: " + reason)
        pytest.skip(reason)


def pytest_configure(config):
    # Registered here, not in pyproject.toml: a change there re-installs every .venv at the next set-up.
    config.addinivalue_line(
        "markers", "fresh_machine: the README's commands in a clean Debian container (minutes; -m 'not fresh_machine')")
