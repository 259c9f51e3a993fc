"""Per engine: run one measurement on this server with this configuration (the runner's Bench),
start the stack it needs, and the base study type carrying the engine's shared parameters."""
