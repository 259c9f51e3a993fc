"""``python -m logbench.studies --list`` (name, engine, post, notebook per study) or ``--committed``
(per committed run: its notebook, the papermill arguments, and where its executed notebook is kept,
tab-separated; a study's ``extra_committed`` runs follow its main run). The workflow (``workflow/Snakefile``,
through ``logbench.jobs``) runs the same list."""

from __future__ import annotations

import argparse
from pathlib import Path

from . import specs


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m logbench.studies", description=__doc__)
    group = ap.add_mutually_exclusive_group(required=True)
    group.add_argument("--list", action="store_true", help="one line per study: name, engine, post, notebook, title")
    group.add_argument("--committed", action="store_true",
                       help="one line per committed run: notebook <TAB> papermill -p arguments <TAB> kept as")
    args = ap.parse_args(argv)
    for s in specs():
        if args.list:
            print("\t".join((s.name, s.engine, s.post_id, s.notebook, s.title)))
            continue
        runs = [(s.committed, f"notebooks/{s.notebook}")]
        runs += [(p, f"notebooks/runs/{Path(s.notebook).stem}.{p.get('profile', 'standard')}.ipynb")
                 for p in s.extra_committed]
        for params, kept in runs:
            print(s.notebook + "\t" + " ".join(f"-p {k} {v}" for k, v in params.items()) + "\t" + kept)


if __name__ == "__main__":
    main()
