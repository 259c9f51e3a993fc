"""``python -m logbench``: see :mod:`logbench.cli`."""

import sys

from .cli import main

sys.exit(main())
