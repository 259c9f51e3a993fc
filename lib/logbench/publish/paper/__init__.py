"""The paper from the processed data and the findings: ``generated/`` and the PDF.

- :mod:`.numbers` — every in-text number with its provenance (:class:`Numbers`, :func:`resolve`,
  :func:`render`) and :func:`generate`, which writes ``generated/`` (``numbers.json`` and the tables) one
  section at a time;
- :mod:`.per_study`, :mod:`.costs`, :mod:`.sections` — the sections (each fills its keys of ``numbers.json``);
- :mod:`.tables` — tables as display strings, and how a section files a table or a figure;
- :mod:`.text` — the one formatter of an estimate with its CI, and the findings notebook's sentences;
- :mod:`.build` — :func:`build` (``generated/`` and the PDF) and :func:`compile_pdf` (typst).

The studies and findings the paper is built from are :mod:`logbench.publish.findings`.
"""

from .build import PAPER_SOURCE, PDF_NAME, build, compile_pdf
from .numbers import CONSTANTS, Numbers, generate, render, resolve
from .sections import INSTRUMENT_FINDINGS, designs_section, digest_section

__all__ = ["CONSTANTS", "INSTRUMENT_FINDINGS", "Numbers", "PAPER_SOURCE", "PDF_NAME", "build",
           "compile_pdf", "designs_section", "digest_section", "generate", "render", "resolve"]
