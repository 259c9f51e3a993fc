"""A report's section shown only where it applies to its run (issue 39): its heading, its prose and what it shows,
or nothing at all. A block run's report has no switchback sections, a single server's no comparison between
versions, a run without a memory limit no regime table; an executed notebook never shows an empty table under a
heading.

A notebook's cell ends in ``sections.section(heading, text, *parts)``: a :class:`Section` (displayed as its
markdown, then each part) where a part has something to show, else None, which a notebook displays as nothing.

    >>> import pandas as pd
    >>> section("## Switches", "Per arm.", pd.DataFrame()) is None
    True
    >>> section("## Switches", "Per arm.", pd.DataFrame({"arm": ["stderr"]})).markdown()
    '## Switches\\n\\nPer arm.'
    >>> section("## Versions", "Between servers.", "one server", applies=False) is None
    True

:func:`planned_section` is the one section several studies show alike: what the schedule reached beside what the
planner predicted it would reach (issue 40).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd


def shown(part: object) -> bool:
    """Whether ``part`` has something to show: not None, not an empty table (a frame, a series, a Styler's frame),
    not blank text."""
    if part is None:
        return False
    if isinstance(part, (pd.DataFrame, pd.Series)):
        return len(part) > 0
    data = getattr(part, "data", None)  # a pandas Styler
    if isinstance(data, pd.DataFrame):
        return len(data) > 0
    if isinstance(part, str):
        return bool(part.strip())
    return True


@dataclass(frozen=True)
class Section:
    """A heading (markdown, e.g. ``"## …"``; empty: a paragraph of the section above), its prose, and what it shows
    in order: tables, markdown text, figures."""

    heading: str
    text: str
    parts: tuple

    def markdown(self) -> str:
        return "\n\n".join(p for p in (self.heading, self.text) if p)

    def _ipython_display_(self) -> None:
        from IPython.display import Markdown, display

        display(Markdown(self.markdown()))
        for part in self.parts:
            display(Markdown(part) if isinstance(part, str) else part)
            if _is_figure(part):
                # shown once: the inline backend would show a figure still open again when the cell ends
                import matplotlib.pyplot as plt

                plt.close(part)


def _is_figure(part: object) -> bool:
    return type(part).__name__ == "Figure" and type(part).__module__.startswith("matplotlib")


def section(heading: str, text: str, *parts: object, applies: bool | None = None) -> Section | None:
    """The section of ``heading`` and ``text`` with those of ``parts`` that have something to show (:func:`shown`),
    or None where none has; ``applies`` (when given) decides instead, for a section whose parts always say
    something (a sentence that would only say the section does not apply)."""
    kept = tuple(p for p in parts if shown(p))
    if applies is False or not kept:
        _close_figures(parts)
        return None
    return Section(heading, text, kept)


def _close_figures(parts: tuple) -> None:
    # a figure drawn for a section left out is not shown either
    figures = [p for p in parts if _is_figure(p)]
    if figures:
        import matplotlib.pyplot as plt

        for f in figures:
            plt.close(f)


PLANNED_HEADING = "## What this schedule reached and what the planner predicted"
PLANNED_TEXT = (
    "Before the run started, the schedule planner (`logbench.analyze.planning`) predicted from the committed runs of "
    "this design (`noise from`: their per-level noise σ) the half-widths the per-level model would reach on this "
    "schedule: the A/A control's and the median over the logging arms (absolute, half the ratio's 95 % interval). "
    "Beside them, what this run reached, from the same model fitted to its runs.")


def planned_section(result: object) -> Section | None:
    """Per level, the predicted A/A and median half-widths beside the reached ones and one sentence on the goal
    (from the table: :func:`logbench.analyze.planning.goal_text`); None where the run has no prediction."""
    from ..analyze import planning
    from .running import planned

    table = planned(result)
    study = planning.planned_study(result.study)
    if not len(table) or study is None:
        return None
    shown_table = table[["level", "schedule", "noise_from", "pred_aa_hw", "aa_hw", "pred_median_hw",
                         "median_hw"]].rename(columns={
                             "noise_from": "noise from", "pred_aa_hw": "A/A predicted", "aa_hw": "A/A reached",
                             "pred_median_hw": "median predicted", "median_hw": "median reached"}).set_index("level")
    return section(PLANNED_HEADING, PLANNED_TEXT, shown_table.round(3), planning.goal_text(table, study))
