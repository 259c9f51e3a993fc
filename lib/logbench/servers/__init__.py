"""How servers with settings start, are reconfigured and stop.

Every server here follows one template (:meth:`process.Managed.start`, as
testcontainers' ``DbContainer.start()`` does): a private work directory ->
configure -> launch -> wait until a real client probe answers (the log daemons
use its launch-and-probe half, :class:`process.Launched`); each is a context
manager whose exit stops every process it started and removes its directories.
"""
