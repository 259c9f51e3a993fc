"""How long study 11 (record_cost) takes per start, under each counter: the figure its standard profile's duration
follows (starts x seconds per start). Run alone, nothing else on the machine:

    .venv/bin/python benchmarks/record_cost_speed.py [repeats]

Prints, per engine and counter, the seconds per start (mean, min, max, n) over ``repeats`` starts of the baseline
with the standard profile's loads, and what the standard profile's plan then takes. The issue's target for the
standard profile is 15 minutes on this machine; valgrind's own start-up of the server is most of a start's time.
"""

from __future__ import annotations

import sys
import time

import numpy as np
import pandas as pd

from logbench.studies import record_cost as rc


def main(repeats: int = 2) -> None:
    study = rc.define(profile="standard", configurations=["none"], mariadb_configurations=["none"],
                      repeats=repeats, output_dir=f"/tmp/logbench-bench-record-cost-{time.time():.0f}")
    t0 = time.monotonic()
    rc.run(study, progress=False)
    starts = pd.read_json(f"{study.output_dir}/starts.jsonl", lines=True).drop_duplicates("start")
    per = starts.groupby(["engine", "counter"])["seconds"].agg(["mean", "min", "max", "count"])
    print(per.round(2).to_string())
    plan = pd.DataFrame(rc.plan(rc.define(profile="standard")))
    plan["counter"] = np.where(plan["transactions"].isna(), "callgrind", plan["counter"])
    need = sum(per.loc[(e, c), "mean"] for e, c in zip(plan["engine"], plan["counter"]))
    print(f"standard profile: {len(plan)} starts, about {need / 60:.1f} min at these speeds "
          f"(this benchmark: {time.monotonic() - t0:.0f} s)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
