"""logbench: what does database logging cost?

The package repeats; the notebooks communicate. Its folders are floors, in the order a measurement flows (each
imports only from its own floor or those under it; docs/architecture.md has the map): ``base`` the values
passed down, ``servers`` / ``workloads`` / ``counting`` the real parts, ``measure`` the experiment, ``analyze``
what is made of it, ``studies`` the studies, ``publish`` the findings and the paper; ``cli`` on top.
"""

__version__ = "0.1.0"
