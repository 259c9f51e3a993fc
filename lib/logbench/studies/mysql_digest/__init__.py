"""Study 09, MariaDB's full slow log digested by pt-query-digest: a package (issue 24), the module moved as it was.

``study`` is the former ``studies/mysql_digest.py``, ``digest`` the former ``logbench/digest.py`` (pt-query-digest
and the ebook's rule: this study's tool alone); everything the module had is re-exported here until the split.
"""

from .study import *  # noqa: F401,F403
from .study import SPEC  # noqa: F401  (the registry looks for it)
