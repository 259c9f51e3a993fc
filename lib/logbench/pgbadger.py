"""Moved to ``logbench.studies.pg_digest.pgbadger``: pgBadger's digest of a captured log, study 10's tool alone (issue 24).

This name stays, as that very module (not a copy), for the imports that still use it.
"""

import sys

from .studies.pg_digest import pgbadger as _moved

sys.modules[__name__] = _moved
