"""How servers with settings start, are reconfigured and stop.

Every server here follows one template (as testcontainers' ``start()`` does):
configure -> launch -> wait until a real client probe answers; each is a context
manager whose exit stops every process it started and removes its directories.
"""
