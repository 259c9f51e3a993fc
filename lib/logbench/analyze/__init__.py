"""Analysing what was measured: regression, claims and their rules, the cost model, anomalies, the posts' reference
numbers, headline and discussion figures, plots. Uses measure/ and the floors under it, never a study."""
