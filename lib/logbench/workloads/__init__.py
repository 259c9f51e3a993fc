"""The real load tools: build the command, run it, parse what it printed into numbers; a study's load as a
value (workload.Workload: script or built-in, protocol, records per transaction)."""
