"""The ground floor: the values every floor above passes down (settings, parameters, paths, errors, the environment
record, run records, log sinks and the records they must receive, the estimate and its one format, progress, what a
study started and must stop). Imports nothing of logbench above it."""
