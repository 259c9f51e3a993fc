"""Study 05: what auditing and timing every statement cost PostgreSQL, and whether the pipe is to blame (post 003).

Post 003 (digoal, 2018) ran pgbench -M prepared -S at 28 and 56 clients with ``log_statement = all``,
``log_duration = on``, both, and both with ``track_io_timing``, logging to csvlog, and blamed the collapse at
56 clients on the kernel mutex of the pipe into the logging collector. Here the same configurations run
over a concurrency sweep reported in clients per core, with ``track_io_timing`` alone and the pipe
hypothesis as configurations of their own: both settings in the collector's stderr format through the
pipe, and the same with ``logging_collector = off``, each backend writing straight into a file the study
names. Every run records the contention evidence of :mod:`logbench.measure.contention` (wchan samples, context
switches of backends and collector, block reads); each cell's first measured run is profiled with perf
during its warm-up; the clock is measured with repeated ``pg_test_timing`` (:mod:`logbench.measure.clock`).

``versions=["13", "17"]`` runs the block design on each PostgreSQL version in its container (issue 23; never local
beside container: the backend moves the numbers), one interleaved schedule, each version with its own baseline and
A/A control, side by side, never pooled. The direct arm cannot run there: in a container the server's stderr is
Docker's log, not a file the study names, so a sweep leaves it out (and refuses it when asked for).

The study is a package (issue 24): ``spec`` (its declarations: configurations, profiles, study type, the post's
ratios, SPEC), ``analysis`` (from recorded runs to tables and findings: the summary with the contention evidence,
the profiles, the clock, track_io_timing's cost, the paper's statements, the notebook's tables beside the post),
``study`` (define / run, the plan's tables). Layered spec <- analysis <- study, no cycle. Its whole package is the
workflow's input for the study (``studies.sources``). What the registry, the notebook and the tests call is
re-exported here, every public name the module had.
"""

from __future__ import annotations

from .analysis import (ALSO, ALSO_WINDOWS, POST_SYMBOLS, beside_post, clock_tables, environment_table, finding_clock,
                       finding_contention, finding_io_timing, finding_pipe, finding_ratios, io_timing_cost,
                       load_processed, paper_findings, post_profiles, processed_tables, profile_beside_post, profiles,
                       summary, top_table)
from .spec import (BASELINE, CONFIGURATIONS, DIRECT, EXPERIMENT, NAME, PIPE, POST, PROFILES, SPEC, AuditTimingStudy,
                   published_ratios)
from .study import configuration_table, define, design_summary, run

__all__ = [
    "ALSO", "ALSO_WINDOWS", "BASELINE", "CONFIGURATIONS", "DIRECT", "EXPERIMENT", "NAME", "PIPE", "POST",
    "POST_SYMBOLS", "PROFILES", "SPEC", "AuditTimingStudy", "beside_post", "clock_tables", "configuration_table",
    "define", "design_summary", "environment_table", "finding_clock", "finding_contention", "finding_io_timing",
    "finding_pipe", "finding_ratios", "io_timing_cost", "load_processed", "paper_findings", "post_profiles",
    "processed_tables", "profile_beside_post", "profiles", "published_ratios", "run", "summary", "top_table",
]
