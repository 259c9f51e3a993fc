"""Issue 42, "a paper people read": the main text's length and the type sizes read off the built PDF
(logbench.publish.paper.layout), the per-post scoreboard (logbench.publish.paper.scoreboard), and no sentence of the main text
printed twice. The PDFs are real: the committed paper, and small documents compiled by typst here."""

from __future__ import annotations

import collections
import re
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from logbench.analyze import claims
from logbench.base import paths
from logbench.publish.paper import layout, scoreboard

needs_poppler = pytest.mark.skipif(not layout.available(),
                                   reason="pdfinfo/pdftohtml (poppler-utils, scripts/apt-packages.txt) not installed")
COMMITTED = paths.PAPER / "logbench.pdf"


def compile_typst(tmp_path: Path, body: str) -> Path:
    import typst

    src = tmp_path / "doc.typ"
    src.write_text('#set text(font: "Libertinus Serif", size: 10.5pt)\n#set heading(numbering: "1.1")\n' + body)
    pdf = tmp_path / "doc.pdf"
    pdf.write_bytes(typst.compile(str(src), ignore_system_fonts=True))
    return pdf


@needs_poppler
def test_the_committed_papers_main_text_fits_and_no_text_is_small():
    pages = layout.main_text_pages(COMMITTED)
    assert 5 <= pages <= layout.MAIN_PAGES_MAX, pages
    assert layout.small_text(COMMITTED) == []
    # the reading is of the real type: the tables' 8 pt and the body's 10.5 pt are among the sizes found
    sizes = {s for f, s in layout.font_sizes(COMMITTED) if f == "LibertinusSerif"}
    assert 8.0 in sizes and any(abs(s - 10.5) < 0.2 for s in sizes), sorted(sizes)


@needs_poppler
def test_the_check_catches_a_long_main_text_and_small_type(tmp_path):
    main = "= Main <sec-main>\nSee @app-rest.\n" + "Body.\n#pagebreak()\n" * 21
    pdf = compile_typst(tmp_path, main + "#table(columns: 1, text(size: 7.6pt)[small])\n#pagebreak()\n"
                                         "= Appendix <app-rest>\nMore.\n")
    assert layout.main_text_pages(pdf) == 22
    assert layout.small_text(pdf) == [("LibertinusSerif", pytest.approx(7.67, abs=0.01))]
    with pytest.raises(layout.PaperLayoutError, match=r"22 pages, more than MAIN_PAGES_MAX = 20.*below MIN_TEXT_PT"):
        layout.check(pdf)


@needs_poppler
def test_a_short_paper_in_8_pt_tables_passes(tmp_path):
    pdf = compile_typst(tmp_path, "= Main <sec-main>\nSee @app-rest.\n#table(columns: 1, text(size: 8pt)[cell])\n"
                                  "#pagebreak()\n= Appendix <app-rest>\nMore.\n")
    assert layout.main_text_pages(pdf) == 1
    layout.check(pdf)


@needs_poppler
def test_without_an_appendix_heading_the_length_cannot_be_checked(tmp_path):
    pdf = compile_typst(tmp_path, "= Main <sec-main>\nSee @sec-main.\n")
    with pytest.raises(layout.PaperLayoutError, match="no appendix heading"):
        layout.main_text_pages(pdf)


def sentences(text: str, words: int = 8) -> list[str]:
    text = re.sub(r"-\n(?=[a-z])", "", text.replace("\u00ad", ""))
    text = re.sub(r"\s+", " ", text)
    return [s.strip() for s in re.split(r"(?<=[.;!?])\s+", text) if len(s.split()) >= words]


@needs_poppler
def test_no_sentence_of_the_main_text_is_printed_twice():
    last = layout.main_text_pages(COMMITTED)
    text = subprocess.run(["pdftotext", "-enc", "UTF-8", "-f", "1", "-l", str(last), str(COMMITTED), "-"],
                          capture_output=True, text=True, check=True).stdout
    twice = {s: k for s, k in collections.Counter(sentences(text)).items() if k > 1}
    assert not twice, twice


def claim(cid, post, verdict, why="", claimed="[0.9, 1]", ours="0.95 [0.9, 1.0]"):
    return {"claim_id": cid, "post": post, "claim": f"what {cid} says", "published": "0.95", "claimed": claimed,
            "ours": ours, "verdict": verdict, "why": why, "study": "s"}


def test_the_scoreboard_reads_each_verdict_in_one_line():
    why56 = "needs 56 simultaneously runnable processes; this machine has 2 cores"
    board = scoreboard.scoreboard(pd.DataFrame([
        claim("000-a", "000", claims.CONFIRMED),
        claim("000-b", "000", claims.CONSISTENT),
        claim("000-c", "000", claims.REFUTED),
        claim("000-d", "000", claims.INCONCLUSIVE, ours="2 cases, 0.8 to 0.9; decisive: x @ 2: 0.8 [0.7, 0.9]"),
        claim("001-a", "001; 002", claims.NOT_COMPARABLE, why="not comparable: the post's records were longer"),
        claim("003-a", "003", claims.NOT_REPRODUCIBLE, why=why56),
        claim("003-b", "003", claims.NOT_REPRODUCIBLE, why=why56),
        claim("003-c", "003", claims.INCONCLUSIVE),
        claim("003-d", "003", claims.INCONCLUSIVE),
    ]))
    assert list(board) == ["000", "001", "003"]  # a reprinted claim is listed under its first post only
    b0 = board["000"].set_index("claim")
    assert list(b0["reads"]) == ["agrees", "agrees", "disagrees", "cannot tell here"]
    assert "inside the post's range [0.9, 1]" in b0.loc["000-a", "why, in one line"]
    assert "wider than that margin" in b0.loc["000-b", "why, in one line"]
    assert b0.loc["000-d", "ours"] == "x @ 2: 0.8 [0.7, 0.9]"  # the decisive case only
    assert board["001"]["why, in one line"].iloc[0] == "not comparable: the post's records were longer"
    # withheld for the same reason: one line; the rule's generic reason stays one line per claim
    b3 = board["003"]
    assert list(b3["claim"]) == ["003-a; 003-b", "003-c", "003-d"]
    assert b3["why, in one line"].iloc[0] == f"not reproducible here: {why56}"
    assert all(len(r) <= scoreboard.REASON_CHARS + len(claims.NOT_REPRODUCIBLE) + 4 for r in b3["why, in one line"])


def test_an_unknown_verdict_is_refused_by_name():
    with pytest.raises(ValueError, match=r"claim 000-a: verdict 'maybe' is not one of"):
        scoreboard.scoreboard(pd.DataFrame([claim("000-a", "000", "maybe")]))


def test_the_committed_scoreboard_lists_every_claim_once():
    found = paths.PROCESSED / "findings_claims.csv"
    if not found.exists():
        pytest.skip("no committed claims: run `make findings`")
    cl = pd.read_csv(found, dtype=str, keep_default_na=False)
    listed = [c for b in scoreboard.scoreboard(cl).values() for cell in b["claim"] for c in cell.split("; ")]
    assert sorted(listed) == sorted(cl["claim_id"]) and len(listed) == len(set(listed))
