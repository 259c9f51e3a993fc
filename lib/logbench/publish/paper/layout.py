"""What the reader gets, checked on the built PDF itself (issue 42): the main text at most
:data:`MAIN_PAGES_MAX` pages, no text set below :data:`MIN_TEXT_PT`.

Both are read from the PDF with poppler (``poppler-utils``, already needed by the paper's tests), not from the
typst source, so a size set by a show rule, a default or a table's own ``set text`` is caught alike:

- the main text ends on the page before the first appendix heading: every appendix heading carries a label
  ``app-…``, typst writes a labelled heading as a PDF named destination, and ``pdfinfo -dests`` lists each with its
  page;
- ``pdftohtml -xml`` lists every font the text is set in with its size, rounded to a whole number at its zoom; at
  :data:`ZOOM` (poppler's largest) that is a sixth of a point, so 7.6 pt reads as 7.67 and fails. Math fonts are
  left out: a formula's sub- and superscripts are set smaller by the formula's own layout, not by a choice of type.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from ...base.errors import LogbenchError

MAIN_PAGES_MAX = 20
MIN_TEXT_PT = 8
APPENDIX_PREFIX = "app-"
TOOLS = ("pdfinfo", "pdftohtml")
# pdftohtml scales sizes by its zoom up to 3 (a larger zoom prints the same sizes)
ZOOM = 3


class PaperLayoutError(LogbenchError):
    """The built paper breaks a layout rule: its message names the rule, the limit and what was found."""


def available() -> bool:
    """Whether poppler's tools that read the PDF are installed."""
    return all(shutil.which(t) for t in TOOLS)


def _run(*argv: str) -> str:
    return subprocess.run(list(argv), capture_output=True, text=True, check=True).stdout


def destinations(pdf: Path | str) -> dict[str, int]:
    """The PDF's named destinations (typst: labelled headings) and their pages."""
    out = {}
    for line in _run("pdfinfo", "-dests", str(pdf)).splitlines()[1:]:
        m = re.match(r'\s*(\d+)\s+\[.*\]\s+"(.+)"\s*$', line)
        if m:
            out[m.group(2)] = int(m.group(1))
    return out


def main_text_pages(pdf: Path | str) -> int:
    """The pages before the first appendix heading (a destination named ``app-…``)."""
    pages = [p for name, p in destinations(pdf).items() if name.startswith(APPENDIX_PREFIX)]
    if not pages:
        raise PaperLayoutError(f"{pdf}: no appendix heading found (a heading labelled <{APPENDIX_PREFIX}…>): "
                               "the main text's length cannot be checked")
    return min(pages) - 1


def font_sizes(pdf: Path | str) -> set[tuple[str, float]]:
    """Every (font family, size in points) the PDF's text is set in, the subset prefix dropped."""
    xml = _run("pdftohtml", "-xml", "-i", "-zoom", str(ZOOM), "-stdout", str(pdf))
    return {(re.sub(r"^[A-Z]{6}\+", "", fam), round(float(size) / ZOOM, 2))
            for size, fam in re.findall(r'<fontspec [^>]*size="([\d.]+)" family="([^"]*)"', xml)}


def small_text(pdf: Path | str, minimum: float = MIN_TEXT_PT) -> list[tuple[str, float]]:
    """The text fonts set below ``minimum`` points (math fonts excepted: see the module's note)."""
    return sorted((f, s) for f, s in font_sizes(pdf) if s < minimum and "Math" not in f)


def problems(pdf: Path | str) -> list[str]:
    """Each layout rule the PDF breaks, as a sentence; empty when it keeps them all."""
    out = []
    pages = main_text_pages(pdf)
    if pages > MAIN_PAGES_MAX:
        out.append(f"the main text runs to {pages} pages, more than MAIN_PAGES_MAX = {MAIN_PAGES_MAX}: move detail "
                   f"to an appendix (a heading labelled <{APPENDIX_PREFIX}…>)")
    small = small_text(pdf)
    if small:
        out.append(f"text is set below MIN_TEXT_PT = {MIN_TEXT_PT} pt: " +
                   ", ".join(f"{f} {s:g} pt" for f, s in small))
    return out


def check(pdf: Path | str) -> None:
    """Raise :class:`PaperLayoutError` naming every rule the PDF breaks."""
    found = problems(pdf)
    if found:
        raise PaperLayoutError(f"{pdf}: " + "; ".join(found))
