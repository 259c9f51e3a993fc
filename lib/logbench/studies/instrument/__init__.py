"""Study 00, the instrument: a package (issue 24), the module moved as it was.

``study`` is the former ``studies/instrument.py``, ``design_comparison`` the former ``studies/design_comparison.py`` (notebook
00's third part, no other study's); everything the module had is re-exported here until the split.
"""

from .study import *  # noqa: F401,F403
from .study import SPEC  # noqa: F401  (the registry looks for it)
