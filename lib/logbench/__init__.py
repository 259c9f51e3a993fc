"""logbench: what does database logging cost?

The package repeats; the notebooks communicate. One module per concern:
``paths`` and ``errors`` are the ground, ``settings`` the frozen value a study
hands to a server, ``servers`` and ``workloads`` the real parts, ``design`` /
``runner`` / ``records`` the experiment, ``stats`` / ``plots`` / ``reference``
/ ``report`` what is made of it.
"""

__version__ = "0.1.0"
