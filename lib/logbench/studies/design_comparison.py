"""Moved to ``logbench.studies.instrument.design_comparison``: notebook 00's third part, study 00's alone (issue 24).

This name stays, as that very module (not a copy), for the imports that still use it.
"""

import sys

from .instrument import design_comparison as _moved

sys.modules[__name__] = _moved
