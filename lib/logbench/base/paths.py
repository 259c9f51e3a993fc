"""Every path the suite uses, rooted at the repository.

Nothing else in the package builds a repository path by hand, so a test can
check them all in one place.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
LIB = ROOT / "lib" / "logbench"
NOTEBOOKS = ROOT / "notebooks"
DATA = ROOT / "data"
RAW = DATA / "raw"
REFERENCE = RAW / "reference"
PROCESSED = DATA / "processed"
PAPER = ROOT / "paper"
FIGURES = PAPER / "figures"
# Raw per-run output of non-smoke runs; ignored by git, kept for inspection.
RESULTS = ROOT / "results"
SEEDS = ROOT.parent / "shared" / "seeds"


def scratch_root() -> Path:
    """Where private server directories go: on disk (``/var/tmp``), not tmpfs.

    ``/tmp`` is tmpfs on some distributions; a log written there would not measure
    the disk the post measured. The tmpfs variant is asked for explicitly.
    """
    base = Path("/var/tmp")
    return base if base.is_dir() and os.access(base, os.W_OK) else Path(tempfile.gettempdir())


def tmpfs_root() -> Path:
    """A tmpfs directory for the 'log directory on tmpfs' variant (a comment in post 000)."""
    return Path("/dev/shm")


def stem(name: str, profile: str) -> str:
    """The processed/raw stem of a run: a study's own named profile gets files of its own."""
    return name if profile in ("smoke", "standard", "full") else f"{name}_{profile}"
