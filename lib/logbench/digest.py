"""Moved to ``logbench.studies.mysql_digest.digest``: pt-query-digest and the ebook's rows rule, study 09's tool alone (issue 24).

This name stays, as that very module (not a copy), for the imports that still use it.
"""

import sys

from .studies.mysql_digest import digest as _moved

sys.modules[__name__] = _moved
