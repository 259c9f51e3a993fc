"""Study 10, PostgreSQL's full statement log digested by pgBadger: a package (issue 24), the module moved as it was.

``study`` is the former ``studies/pg_digest.py``, ``pgbadger`` the former ``logbench/pgbadger.py`` (this study's
tool alone); everything the module had is re-exported here until the split.
"""

from .study import *  # noqa: F401,F403
from .study import SPEC  # noqa: F401  (the registry looks for it)
