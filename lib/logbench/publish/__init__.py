"""Publishing: findings (a pure function of data/processed), the per-study models over the committed runs, the
paper, the answer, the report command, several hosts' results gathered. Reads every study (the registry), which
never reads it."""
