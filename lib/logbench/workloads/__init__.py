"""The real load tools: build the command, run it, parse what it printed into numbers; a study's load as a
value (workload.Workload: script or built-in, protocol, timed or counted, records per transaction; workload.Import:
pgbench -i step by step), and the sessions a configuration holds open beside it (sessions)."""
