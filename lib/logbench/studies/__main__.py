"""``python -m logbench.studies --list`` (name, engine, post, notebook per study) or ``--committed``
(per study: its notebook and the papermill arguments of its committed run, tab-separated)."""

from __future__ import annotations

import argparse

from . import specs


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m logbench.studies", description=__doc__)
    group = ap.add_mutually_exclusive_group(required=True)
    group.add_argument("--list", action="store_true", help="one line per study: name, engine, post, notebook, title")
    group.add_argument("--committed", action="store_true",
                       help="one line per study: notebook <TAB> papermill -p arguments of the committed run")
    args = ap.parse_args(argv)
    for s in specs():
        if args.list:
            print("\t".join((s.name, s.engine, s.post_id, s.notebook, s.title)))
        else:
            print(s.notebook + "\t" + " ".join(f"-p {k} {v}" for k, v in s.committed.items()))


if __name__ == "__main__":
    main()
