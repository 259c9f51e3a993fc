"""``python -m logbench.studies --list`` (name, engine, post, notebook per study), ``--committed``
(per committed run: its notebook, the papermill arguments, and where its executed notebook is kept,
tab-separated; a study's ``extra_committed`` runs follow its main run, the studies on a user's server's runs on a
handed server come last; the workflow, ``workflow/Snakefile`` through ``logbench.jobs``, runs the same list), ``--usage`` (per study: its notebook, title and own
parameters, for ``bash run.sh``'s usage text) or ``--write-cells`` (every study notebook's parameters cell
generated from its study's declaration: ``logbench.studies.declaration.parameters_cell``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from . import module, specs

# Parameters every study notebook has besides SHARED: named once in the usage text, not per study.
COMMON_PARAMETERS = ("profile", "backend", "image", "output_dir", "processed_dir", "publish", "seed", "recorded")


def own_parameters(name: str) -> list[str]:
    """The parameters study ``name``'s notebook offers that are its own (its declaration's, ``define.declaration``,
    not shared by every study), in its declaration's order, which its generated parameters cell follows."""
    own = set(module(name).define.declaration.own()) - set(COMMON_PARAMETERS)
    return [n for n in module(name).define.declaration.offered() if n in own]


def write_cells() -> list[str]:
    """Rewrite every study notebook's parameters cell from its declaration; returns the notebooks changed."""
    from ..base import paths
    from . import user_server_specs
    from .declaration import parameters_cell, write_cell

    return [s.notebook for s in (*specs(), *user_server_specs())
            if write_cell(paths.NOTEBOOKS / s.notebook, parameters_cell(module(s.name).define, s))]


def usage() -> str:
    """One line per study: the number to pass to ``bash run.sh study``, notebook, title, its own parameters."""
    lines = []
    for s in specs():
        lines.append(f"  {s.notebook[:2]}  {s.notebook:<28} {s.title}")
        lines.append("      -p " + ", ".join(own_parameters(s.name)))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m logbench.studies", description=__doc__)
    group = ap.add_mutually_exclusive_group(required=True)
    group.add_argument("--list", action="store_true", help="one line per study: name, engine, post, notebook, title")
    group.add_argument("--committed", action="store_true",
                       help="one line per committed run: notebook <TAB> papermill -p arguments <TAB> kept as")
    group.add_argument("--usage", action="store_true",
                       help="per study: number, notebook, title, and its own papermill parameters")
    group.add_argument("--write-cells", action="store_true",
                       help="rewrite every study notebook's parameters cell from its study's declaration")
    args = ap.parse_args(argv)
    if args.write_cells:
        print("\n".join(f"rewrote {nb}" for nb in write_cells()) or "every parameters cell is as declared")
        return
    if args.usage:
        print(usage())
        return
    from . import ON_USER_SERVERS, user_server_specs

    for s in specs():
        if args.list:
            print("\t".join((s.name, s.engine, s.post_id, s.notebook, s.title)))
            continue
        runs = [(s.committed, f"notebooks/{s.notebook}")]
        runs += [(p, f"notebooks/runs/{Path(s.notebook).stem}.{p.get('profile', 'standard')}.ipynb")
                 for p in s.extra_committed]
        for params, kept in runs:
            print(s.notebook + "\t" + " ".join(f"-p {k} {v}" for k, v in params.items()) + "\t" + kept)
    if args.committed:
        # a study on a user's server: its committed run on a throwaway server of its engine, whose connection
        # string replaces the server parameter (python -m logbench.servers.handed ENGINE -- papermill ...)
        for s in user_server_specs():
            if s.name in ON_USER_SERVERS and s.committed:
                print(s.notebook + "\t" + " ".join(f"-p {k} {v!r}" if k == "server" else f"-p {k} {v}"
                                                   for k, v in s.committed.items())
                      + f"\tnotebooks/{s.notebook} (on a handed {s.engine} server)")


if __name__ == "__main__":
    main()
