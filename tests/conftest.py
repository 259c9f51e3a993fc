import os

import pytest

needs_root = pytest.mark.skipif(
    os.geteuid() != 0,
    reason="needs root: the server gets a private /dev/log (mount namespace) and remote syslog a network namespace",
)
