"""The typst build: ``generated/`` (:func:`logbench.publish.paper.numbers.generate`) and the PDF compiled from
``paper/logbench.typ`` with the ``typst`` package."""

from __future__ import annotations

import shutil
from pathlib import Path

from ...base import paths
from . import layout
from .numbers import generate
from .tables import FIGURES

PAPER_SOURCE = "logbench.typ"
PDF_NAME = "logbench.pdf"


def build(processed_dir: Path | str = paths.PROCESSED, figures_dir: Path | str | None = None,
          build_dir: Path | str = paths.PAPER, pdf: Path | str | None = None) -> Path:
    """Generate the data files and compile the paper; returns the PDF's path. Raises
    :class:`.layout.PaperLayoutError` (after writing it) when the PDF's main text is longer than
    :data:`.layout.MAIN_PAGES_MAX` pages or text is set below :data:`.layout.MIN_TEXT_PT` (poppler installed).

    Building elsewhere than ``paper/`` copies the typst source and the figures there first, so a
    test can build from a temporary processed directory without touching tracked files.
    """
    build_dir = Path(build_dir)
    figures_dir = Path(figures_dir) if figures_dir is not None else paths.FIGURES
    build_dir.mkdir(parents=True, exist_ok=True)
    if build_dir.resolve() != paths.PAPER.resolve():
        shutil.copy2(paths.PAPER / PAPER_SOURCE, build_dir / PAPER_SOURCE)
    target_figures = build_dir / FIGURES
    if figures_dir.exists() and figures_dir.resolve() != target_figures.resolve():
        target_figures.mkdir(parents=True, exist_ok=True)
        for f in sorted(figures_dir.glob("*.png")):
            shutil.copy2(f, target_figures / f.name)
    generate(processed_dir, target_figures if target_figures.exists() else figures_dir, build_dir)
    built = compile_pdf(build_dir, pdf)
    # the main text's length and the type sizes, read off the PDF (issue 42); the PDF stays written to be looked at
    if layout.available():
        layout.check(built)
    return built


def compile_pdf(build_dir: Path | str = paths.PAPER, pdf: Path | str | None = None) -> Path:
    """Compile ``logbench.typ`` with the typst package: embedded fonts only, no creation date (reproducible bytes)."""
    import typst

    build_dir = Path(build_dir)
    pdf = Path(pdf) if pdf is not None else build_dir / PDF_NAME
    data = typst.compile(str(build_dir / PAPER_SOURCE), root=str(build_dir), ignore_system_fonts=True)
    pdf.write_bytes(data)
    return pdf
