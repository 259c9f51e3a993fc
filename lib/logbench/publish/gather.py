"""Results from several machines as one processed set: every row keeps its host and environment, never pooled.

The workflow runs each study once per host label (``hosts:`` in ``workflow/config/<profile>.yaml``), a study
never split across hosts; each run leaves its processed files in a directory of its own
(``results/<profile>/<host>/<stem>/processed/``). :func:`gather` puts the runs of one stem together in
one directory, as the findings and the paper read them:

- each CSV is the hosts' tables one after the other, with a ``host`` column (the workflow's label) and an
  ``env_id`` column where the study's table lacked one (``records.write_processed`` adds it to tables it
  writes; the runs always had it);
- each JSON environment record keeps every host's record under ``hosts`` and, at the top, only the fields on
  which all hosts agree;
- a study's figures (``processed/figures/*.png``, e.g. notebook 00's) are copied as they are from a single
  host, as ``<name>_<host>.png`` from several.

Summaries are concatenated, not recomputed: a ratio and its interval stay those of one environment, and the
findings show a study measured on several environments side by side (``report.ENVIRONMENT_COLUMNS``).

``python -m logbench.publish.gather OUT LABEL=DIR [LABEL=DIR ...]``
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import pandas as pd


def _merged_environment(records: dict[str, dict]) -> dict:
    first = next(iter(records.values()))
    common = {k: v for k, v in first.items() if all(r.get(k) == v for r in records.values())}
    return {**common, "hosts": records}


def gather(out: Path | str, sources: dict[str, Path | str]) -> list[Path]:
    """Merge each host's processed directory (``{label: dir}``) into ``out``; returns the files written."""
    if not sources:
        raise ValueError("gather: no host directories given")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    sources = {label: Path(d) for label, d in sources.items()}
    names = sorted({p.name for d in sources.values() for p in d.iterdir() if p.suffix in (".csv", ".json")})
    written = []
    for name in names:
        present = {label: d / name for label, d in sources.items() if (d / name).exists()}
        if name.endswith(".json"):
            records = {label: json.loads(p.read_text()) for label, p in present.items()}
            (out / name).write_text(json.dumps(_merged_environment(records), indent=2, sort_keys=True,
                                               default=str) + "\n")
        else:
            frames = []
            for label, p in present.items():
                df = pd.read_csv(p)
                frames.append(df.assign(host=label) if "host" not in df.columns else df)
            pd.concat(frames, ignore_index=True).to_csv(out / name, index=False, float_format="%.6g")
        written.append(out / name)
    for label, d in sources.items():
        for fig in sorted((d / "figures").glob("*.png")):
            target = out / "figures" / (fig.name if len(sources) == 1 else f"{fig.stem}_{label}.png")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(fig, target)
            written.append(target)
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m logbench.publish.gather", description=__doc__.splitlines()[0])
    ap.add_argument("out", help="the merged processed directory")
    ap.add_argument("sources", nargs="+", metavar="LABEL=DIR", help="a host's label and its processed directory")
    args = ap.parse_args(argv)
    sources = {}
    for s in args.sources:
        label, sep, d = s.partition("=")
        if not sep or not label:
            ap.error(f"{s!r}: expected LABEL=DIR")
        sources[label] = d
    for p in gather(args.out, sources):
        print(p)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
