"""Study 06: rotating a busy slow log (post 002, 'Rotating MySQL slow logs safely', Peter Boros).

Under a steady sysbench load with every statement logged (``long_query_time = 0``)
the slow log is rotated once, half-way through each run, by one method:

- ``none`` — no rotation: the baseline, analysed at the same instant (a placebo);
- ``copytruncate`` — logrotate's copytruncate: copy the file, then truncate it in place;
- ``rename_flush`` — rename the file, then ``FLUSH SLOW LOGS`` (the ebook's advice);
- ``rename_flush_disabled`` — the same with the slow log switched off around the
  flush (``SET GLOBAL slow_query_log = OFF``, pause, flush, pause, on), as the ebook
  recommends to keep the flush from waiting on a full log buffer;
- ``ebook_long_query_time`` — the ebook's literal postrotate script, which "disables"
  the log by ``SET GLOBAL long_query_time = 2000``; sessions copy long_query_time
  when they connect, so the load's open sessions keep logging (this measures that).

What is measured per run: sysbench's per-second throughput (``--report-interval=1``)
around the rotation — the dip (worst second against the seconds before) and the
deficit (transaction-seconds lost, summed over the rotation window) — the time the
rotation itself took, and every record: a *tracer* session sends numbered
statements (``SELECT 'lbseq:N'``) at a fixed rate throughout, so each one's
presence in the old and new file shows exactly which records were lost or
duplicated, and its latency shows any stall at sub-second resolution. The slow log
is padded to ``log_size_mb`` before each run, so the file rotated has a
production-like size (the ebook rotates at 1 GB).

The study is a package (issue 24): ``spec`` (its declarations), ``rotation`` (the rotation methods), ``tracer``
(the tracer session, the sink across the two files, the census), ``bench`` (the runner's bench: one run with its
rotation and its own numbers), ``analysis`` (from recorded runs to tables, figure and finding), ``study``
(define / run and the plan's tables). Layered spec <- rotation <- tracer <- bench <- analysis <- study, no cycle.
Its whole package is the workflow's input for the study (``studies.sources``). What the registry, the notebook
and the tests call is re-exported here.
"""

from __future__ import annotations

from .analysis import environment_table, expand, finding, processed_tables, summary, timeline, timeline_figure
from .bench import RotationBench, RotationNumbers, throughput_effect
from .rotation import rotate, rotated_path
from .spec import BACKENDS, BASE, BASELINE, METHODS, NAME, POST, PROFILES, SETTLE_S, SPEC, WORKLOADS, LogRotationStudy
from .study import define, design_summary, method_table, run
from .tracer import TRACER_MARK, RotationSink, Tracer, tracer_census

__all__ = [
    "BACKENDS", "BASE", "BASELINE", "LogRotationStudy", "METHODS", "NAME", "POST", "PROFILES", "RotationBench",
    "RotationNumbers", "RotationSink", "SETTLE_S", "SPEC", "TRACER_MARK", "Tracer", "WORKLOADS", "define",
    "design_summary", "environment_table", "expand", "finding", "method_table", "processed_tables", "rotate",
    "rotated_path", "run", "summary", "throughput_effect", "timeline", "timeline_figure", "tracer_census",
]
