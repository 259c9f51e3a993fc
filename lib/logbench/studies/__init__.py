"""One module per study: its configurations, parameters and how a run is assembled."""
