"""The real load tools: build the command, run it, parse what it printed into numbers."""
