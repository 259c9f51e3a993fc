"""A pgbench workload derived from a captured statement log: from "what my server runs" to "what logging it costs".

``python -m logbench workload-from-log LOG [--top N] [--out DIR]`` reads a PostgreSQL statement log (what
``logbench-full-statement-log`` captured: csvlog, jsonlog, or stderr's file with a ``log_line_prefix`` pgBadger
parses), and writes one pgbench script per normalized statement, for the N statements with the largest share of
the logged executions, and a manifest. The own-server study (study 12) runs them as a user's scripts
(``-p scripts '["stmt_01.sql@6219", ...]'``).

Nothing here parses a log line: pgBadger (:mod:`.pgbadger`) does, twice. Its JSON report gives the normalized
statements and their counts (its normalization: constants, bind parameters and IN lists replaced, case and
whitespace folded); its ``--dump-all-queries`` gives every execution with its bind values in place. Each
execution is recognised by the pattern its normalized form makes (the text between the ``?`` literal, each ``?``
one constant), which yields the constants the log showed.

**The parameters**, per statement:

- every constant position an integer in every execution (unquoted, or a bind value ``'123'``, which is all a log
  says of a bound integer): ``\\set pN random(min, max)`` over the range the log showed, and ``:pN`` in its
  place. Uniform over the range, not the observed values' own distribution: the observed values are only a
  sample of the keys a server's workload touches, and a range reaches the rows between them as the real load
  would, where replaying a list would keep the replay on the handful of rows the window happened to log.
- anything else (a string, a decimal, a NULL, an IN list, a constant next to a ``.``): the statement is replayed as
  logged, one of up to ``variants`` executions drawn (seeded) from the log, with ``\\if`` branches on
  ``random(1, K)``: its constants keep their types and their combinations, which a pgbench variable (a number)
  could not carry into a string or a date column.
- no constant: the statement itself.

**The weights**: pgbench's ``-f file@weight`` takes a whole number, so a script's weight is its statement's share
of all logged executions in units of 1/10 000 (at least 1); pgbench picks a script per transaction in proportion,
and each script is one statement, so the replay's statement mix is the shares renormalized over the N chosen.

**Writing statements** are left out unless ``writes=True``: a statement is kept by default only when its
normalized form is a SELECT (or WITH, TABLE, VALUES) that neither writes, locks nor calls a function known to have
a side effect (``nextval``, advisory locks, ``set_config``, ...). A function of the user's own with a side
effect cannot be seen from the text: the scripts are for a copy (staging), as the own-server study says. With
writes the manifest says so, and such scripts belong only in a database the study created and will drop.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from ..servers.capture_pg import PREFIX
from ..base.errors import ParameterError, ToolError
from . import pgbadger

PROG = "python -m logbench workload-from-log"
# pgbench's weights are whole numbers: a share in this many parts.
WEIGHT_UNITS = 10_000
# A file's destination by its name, as PostgreSQL names its log files (csvlog .csv, jsonlog .json).
_BY_SUFFIX = {".csv": "csvlog", ".json": "jsonlog"}
# The variable that picks one of a statement's logged executions (a name no user script of one statement has).
PICK = "logbench_pick"

# One constant as it appears in a logged execution, where pgBadger's normalized form has "?": a string (with its
# doubled quotes), an integer (a decimal is two, around its "."), a hex number, NULL ("= null" -> "= ?"), or a
# placeholder whose value the log did not give.
_CONSTANT = r"(?:[eE]?'(?:[^']|'')*'|-?\d+|0x[0-9a-fA-F]+|null|\$\d+)"
_INTEGER = re.compile(r"'?(-?\d+)'?")
_INT64 = 2**63 - 1

# An operator with no operand after it: pgBadger put an empty string where a bind value was, as pgBadger 12 does
# for PostgreSQL 17's detail line "Parameters: $1 = ..." (capitalized since 17; it reads "parameters:").
_LOST_VALUE = re.compile(r"(=|<>|!=|<|>|\blike|\bin)\s*(;|\)|,|\band\b|\bor\b|\blimit\b|$)")
_READ_START = re.compile(r"^\(*\s*(select|with|table|values)\b")
# Written, locked or with a side effect, as far as the normalized text shows (string literals are already "?"
# there, so a word inside one cannot trip this).
_SIDE_EFFECT = re.compile(
    r"\b(insert|update|delete|merge|truncate|copy|create|alter|drop|grant|revoke|lock|vacuum|analyze|cluster"
    r"|reindex|refresh|call|notify|into|nextval|setval|set_config|pg_notify|pg_advisory\w*|pg_try_advisory\w*"
    r"|pg_terminate_backend|pg_cancel_backend|pg_reload_conf|pg_rotate_logfile|pg_switch_wal|lo_\w+|dblink\w*"
    r"|txid_current|pg_current_xact_id|pg_sleep\w*)\b"
    r"|\bfor\s+(update|share|no\s+key\s+update|key\s+share)\b")


def read_only(normalized: str) -> bool:
    """Whether a normalized statement only reads: a SELECT-like start and nothing that writes or locks."""
    q = normalized.strip().lower()
    return bool(_READ_START.match(q)) and not _SIDE_EFFECT.search(q)


@dataclass(frozen=True)
class Pattern:
    """What a normalized statement matches: ``regex`` over one logged execution, and the kind of each group
    ('constant' for a "?", 'list' for an "in (...)")."""

    regex: re.Pattern
    kinds: tuple[str, ...]
    # positions of constants glued to "." or a letter ("1.5" normalizes to "?.?"): not integers of their own
    glued: frozenset[int]


def pattern(normalized: str) -> Pattern:
    body = normalized.strip()
    body = body[:-1].rstrip() if body.endswith(";") else body
    parts = re.split(r"(\?|\bin \(\.\.\.\))", body)
    regex, kinds, glued = [r"\s*"], [], set()
    for i, part in enumerate(parts):
        if part == "?":
            before, after = parts[i - 1][-1:], parts[i + 1][:1] if i + 1 < len(parts) else ""
            if re.match(r"[.\w]", before) or re.match(r"[.\w]", after):
                glued.add(len(kinds))
            regex.append(f"({_CONSTANT})")
            kinds.append("constant")
        elif part.startswith("in ("):
            regex.append(r"(in\s*\((?:[^()']|'(?:[^']|'')*')*\))")
            kinds.append("list")
        else:
            # pgBadger folded every run of whitespace to one space and dropped it before ";"
            regex.append(r"\s+".join(re.escape(word) for word in part.split(" ")))
    regex.append(r"\s*;?\s*")
    return Pattern(re.compile("".join(regex), re.IGNORECASE | re.DOTALL), tuple(kinds), frozenset(glued))


@dataclass(frozen=True)
class Parameter:
    name: str
    low: int
    high: int


@dataclass(frozen=True)
class DerivedScript:
    """One normalized statement as a pgbench script."""

    rank: int
    file: str
    normalized: str  # pgBadger's normalized form
    count: int  # its executions in the log (pgBadger's count)
    share: float  # of all logged executions
    weight: int  # pgbench's @weight: the share in WEIGHT_UNITS
    replay_share: float  # its expected share of the replay's statements (weights renormalized over the chosen)
    read_only: bool
    databases: tuple[str, ...]
    parameters: str  # 'range', 'sampled' or 'none'
    ranges: tuple[Parameter, ...]  # the \set ranges (parameters 'range')
    variants: int  # logged executions it draws from (parameters 'sampled')
    matched: int  # executions whose constants were read (of count)
    simple_only: bool  # a logged literal has ":name" in it, which -M extended/prepared would take for a variable
    text: str = field(repr=False)

    def argument(self) -> str:
        """pgbench's ``-f`` argument (relative to the manifest's directory)."""
        return f"{self.file}@{self.weight}"


def _statements(report: dict) -> list[dict]:
    """pgBadger's normalized statements, their databases summed: normalized, count, databases, a sample."""
    rows: dict[str, dict] = {}
    for db, queries in report["normalyzed_info"].items():
        for query, info in queries.items():
            r = rows.setdefault(query, {"normalized": query, "count": 0, "databases": [], "sample": None})
            r["count"] += int(info["count"])
            r["databases"].append(db)
            if r["sample"] is None and info.get("samples"):
                r["sample"] = next(iter(info["samples"].values()))["query"]
    return sorted(rows.values(), key=lambda r: (-r["count"], r["normalized"]))


def _template(execution: str, match: re.Match, names: dict[int, str]) -> str:
    """``execution`` with constant group i replaced by ``:names[i]``."""
    out, last = [], 0
    for i, name in sorted(names.items()):
        out += [execution[last:match.start(i + 1)], f":{name}"]
        last = match.end(i + 1)
    return "".join(out) + execution[last:]


def _sql(text: str) -> str:
    text = text.strip()
    return text if text.endswith(";") else text + ";"


def _simple_only(text: str) -> bool:
    # pgbench -M extended/prepared turns every ":word" outside "::" into a parameter, also inside a literal
    return bool(re.search(r"(?<!:):[A-Za-z0-9_]", text))


def _script(row: dict, executions: list[tuple[str, re.Match]], pat: Pattern, variants: int,
            rng: np.random.Generator) -> tuple[str, str, tuple[Parameter, ...], int, bool]:
    """(body, parameters kind, ranges, variants drawn, simple only) for one normalized statement."""
    if not executions:
        # none of its executions matched its own normalized form (a comment, a "begin;" pgBadger dropped): the
        # sample pgBadger kept, as logged
        return _sql(row["sample"] or row["normalized"]), "none", (), 0, _simple_only(row["sample"] or "")
    if not pat.kinds:
        return _sql(executions[0][0]), "none", (), 0, False
    integer_positions = all(k == "constant" for k in pat.kinds) and not pat.glued
    values: list[list[int]] = [[] for _ in pat.kinds]
    if integer_positions:
        for _, m in executions:
            for i in range(len(pat.kinds)):
                v = _INTEGER.fullmatch(m.group(i + 1))
                if v is None or abs(int(v.group(1))) > _INT64:
                    integer_positions = False
                    break
                values[i].append(int(v.group(1)))
            if not integer_positions:
                break
    if integer_positions:
        ranges = tuple(Parameter(f"p{i + 1}", min(v), max(v)) for i, v in enumerate(values))
        execution, m = executions[0]
        body = _template(execution, m, {i: p.name for i, p in enumerate(ranges)})
        sets = "".join(f"\\set {p.name} random({p.low}, {p.high})\n" for p in ranges)
        return sets + _sql(body), "range", ranges, 0, False
    k = min(variants, len(executions))
    chosen = sorted(rng.choice(len(executions), size=k, replace=False))
    texts = [_sql(executions[i][0]) for i in chosen]
    if k == 1:
        return texts[0], "sampled", (), 1, _simple_only(texts[0])
    lines = [f"\\set {PICK} random(1, {k})"]
    for j, t in enumerate(texts, 1):
        lines += [f"\\{'if' if j == 1 else 'elif'} :{PICK} = {j}", t]
    lines.append("\\endif")
    return "\n".join(lines), "sampled", (), k, any(map(_simple_only, texts))


def _destination(log: Path, destination: str | None) -> str:
    d = destination or _BY_SUFFIX.get(log.suffix, "stderr")
    if d not in pgbadger.FORMATS:
        raise ParameterError("format", d, sorted(pgbadger.FORMATS))
    return d


def derive(log: str | Path, *, top: int = 10, destination: str | None = None, prefix: str | None = PREFIX,
           writes: bool = False, variants: int = 100, seed: int = 0) -> tuple[list[DerivedScript], dict]:
    """The ``top`` statements of ``log`` by share as pgbench scripts, and what the manifest says of the log.

    ``destination``: the log's format (csvlog, jsonlog, stderr, syslog; default by its name: .csv, .json, else
    stderr); ``prefix``: its log_line_prefix for stderr and syslog (default the capture tool's). ``writes``: keep
    statements that write (only for a database the study created). ``variants``: the most logged executions a
    statement replayed as logged draws from. ParameterError naming the parameter for a missing file, a log without
    statements (or without a read-only one, unless ``writes``), ``top`` or ``variants`` below 1.
    """
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise ParameterError("top", top, "a whole number >= 1 (statements to keep)")
    if isinstance(variants, bool) or not isinstance(variants, int) or variants < 1:
        raise ParameterError("variants", variants, "a whole number >= 1")
    path = Path(log)
    if not path.is_file():
        raise ParameterError("log", str(log), "a PostgreSQL statement log file that exists")
    dest = _destination(path, destination)
    if path.stat().st_size == 0:
        raise ParameterError("log", str(log), "a statement log with logged statements (the file is empty)")
    try:
        report = pgbadger.run([path], dest, prefix=prefix)
    except ToolError as e:
        raise ParameterError("log", str(log), f"a {dest} log pgBadger reads ({e})") from None
    rows = _statements(report)
    total = sum(r["count"] for r in rows)
    if total == 0:
        raise ParameterError("log", str(log), f"a {dest} log with logged statements (pgBadger found none"
                             + (f"; read with log_line_prefix {prefix!r}: a {dest} log needs its own as --prefix"
                                if dest in ("stderr", "syslog") else "")
                             + ")")
    eligible = [r for r in rows if writes or read_only(r["normalized"])]
    if not eligible:
        raise ParameterError("log", str(log), "a log with at least one read-only statement (or writes=True, for a "
                             "database the study created)")
    chosen = eligible[:top]
    lost = [r["normalized"] for r in chosen if _LOST_VALUE.search(r["normalized"])]
    if lost:
        raise ParameterError("log", str(log), f"a log whose bind values pgBadger reads; {pgbadger.tool_version()} "
                             f"lost them in {lost[0]!r} (PostgreSQL 17 and later write 'Parameters:', which it does "
                             "not read): capture a load in the simple protocol, or a pgBadger that reads it")
    patterns = [pattern(r["normalized"]) for r in chosen]
    executions: list[list[tuple[str, re.Match]]] = [[] for _ in chosen]
    for q in pgbadger.all_queries([path], dest, prefix=prefix):
        for i, p in enumerate(patterns):
            m = p.regex.fullmatch(q)
            if m is not None:
                executions[i].append((q, m))
                break
    rng = np.random.default_rng(seed)
    weights = [max(1, round(WEIGHT_UNITS * r["count"] / total)) for r in chosen]
    scripts = []
    for rank, (r, p, ex, w) in enumerate(zip(chosen, patterns, executions, weights), 1):
        body, kind, ranges, k, simple = _script(r, ex, p, variants, rng)
        file = f"stmt_{rank:02d}.sql"
        head = (f"-- {r['count']} of {total} logged statements ({100 * r['count'] / total:.2f} %), weight {w}\n"
                f"-- normalized (pgBadger): {r['normalized']}\n")
        scripts.append(DerivedScript(
            rank=rank, file=file, normalized=r["normalized"], count=r["count"], share=r["count"] / total, weight=w,
            replay_share=w / sum(weights), read_only=read_only(r["normalized"]), databases=tuple(r["databases"]),
            parameters=kind, ranges=ranges, variants=k, matched=len(ex), simple_only=simple, text=head + body + "\n"))
    info = {"log": str(path.resolve()), "format": dest, "prefix": prefix if dest in ("stderr", "syslog") else None,
            "pgbadger": pgbadger.tool_version(), "statements_logged": total, "normalized_statements": len(rows),
            "top": top, "writes": writes, "variants": variants, "seed": seed}
    return scripts, info


PARAMETERS_RULE = ("integers: \\set pN random(min, max) over the range the log showed; any other constant: the "
                   "statement as logged, one of up to `variants` logged executions drawn with \\if on random(1, K)")
WRITES_NOTE = ("writing statements included: run these scripts only against a database the study created (and "
               "drops), never against one it did not create")
READ_ONLY_NOTE = ("read-only statements only (SELECT without writes, locks or known side effects; a user's own "
                  "function with a side effect cannot be seen from the text)")


def write(scripts: Sequence[DerivedScript], info: dict, out: str | Path) -> Path:
    """The scripts and ``manifest.json`` (statement, share, count, weight, file, parameters) into ``out``."""
    d = Path(out)
    d.mkdir(parents=True, exist_ok=True)
    for s in scripts:
        (d / s.file).write_text(s.text)
    manifest = {**info, "weight_units": WEIGHT_UNITS, "parameters_rule": PARAMETERS_RULE,
                "statements_note": WRITES_NOTE if info["writes"] else READ_ONLY_NOTE,
                "pgbench_scripts": [s.argument() for s in scripts],
                "scripts": [{k: v for k, v in asdict(s).items() if k != "text"} for s in scripts]}
    path = d / "manifest.json"
    path.write_text(json.dumps(manifest, indent=1) + "\n")
    return path


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog=PROG, formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Derive pgbench scripts from a captured PostgreSQL statement log (logbench-full-statement-log): "
        "the top N normalized statements (pgBadger's) by share of the logged executions, one script each with "
        "@weight its share in 1/10000, and manifest.json.",
        epilog="Parameters: " + PARAMETERS_RULE + ".\nOnly read-only statements unless --writes; with --writes, "
        "run the scripts only against a database the study created (and drops), never one it did not create.")
    ap.add_argument("log", help="the captured log file (csvlog .csv, jsonlog .json, or stderr's file)")
    ap.add_argument("--top", type=int, default=10, help="statements to keep, by share (default 10)")
    ap.add_argument("--out", default="workload", help="directory for the scripts and manifest.json")
    ap.add_argument("--format", dest="destination", choices=sorted(pgbadger.FORMATS),
                    help="the log's format (default by its name: .csv csvlog, .json jsonlog, else stderr)")
    ap.add_argument("--prefix", default=PREFIX, help="log_line_prefix of a stderr or syslog log (default the capture "
                    "tool's; the capture prints the one it used in its pgbadger command)")
    ap.add_argument("--writes", action="store_true", help="keep writing statements too (only for a database the "
                    "study created)")
    ap.add_argument("--variants", type=int, default=100, help="most logged executions a statement with non-integer "
                    "constants draws from (default 100)")
    ap.add_argument("--seed", type=int, default=0, help="seed of that draw")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    a = _parser().parse_args(argv)
    try:
        scripts, info = derive(a.log, top=a.top, destination=a.destination, prefix=a.prefix, writes=a.writes,
                               variants=a.variants, seed=a.seed)
    except ParameterError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    manifest = write(scripts, info, a.out)
    print(f"{info['statements_logged']} statements logged, {info['normalized_statements']} normalized; "
          f"the top {len(scripts)} by share:")
    for s in scripts:
        print(f"  {s.file}@{s.weight:<5} {100 * s.share:6.2f} %  {s.count:>8}  {s.parameters:<7}  {s.normalized[:70]}")
    print(f"written: {manifest}\nrun: pgbench -n " + " ".join(f"-f {Path(a.out) / s.argument()}" for s in scripts))
    if a.writes:
        print("note: " + WRITES_NOTE)
    return 0
