"""Study 05: what auditing and timing every statement cost PostgreSQL, and whether the pipe is to blame (post 003).

A package (issue 24): ``study`` (the study as it was one module). Its whole package is the workflow's input for
the study (``studies.sources``). What the registry, the notebook and the tests call is re-exported here, every
public name the module had.
"""

from __future__ import annotations

from .study import (ALSO, ALSO_WINDOWS, BASELINE, CONFIGURATIONS, DIRECT, EXPERIMENT, NAME, PIPE, POST,
                    POST_SYMBOLS, PROFILES, SPEC, AuditTimingStudy, beside_post, clock_tables, configuration_table,
                    define, design_summary, environment_table, finding_clock, finding_contention, finding_io_timing,
                    finding_pipe, finding_ratios, io_timing_cost, load_processed, paper_findings, post_profiles,
                    processed_tables, profile_beside_post, profiles, published_ratios, run, summary, top_table)

__all__ = [
    "ALSO", "ALSO_WINDOWS", "BASELINE", "CONFIGURATIONS", "DIRECT", "EXPERIMENT", "NAME", "PIPE", "POST",
    "POST_SYMBOLS", "PROFILES", "SPEC", "AuditTimingStudy", "beside_post", "clock_tables", "configuration_table",
    "define", "design_summary", "environment_table", "finding_clock", "finding_contention", "finding_io_timing",
    "finding_pipe", "finding_ratios", "io_timing_cost", "load_processed", "paper_findings", "post_profiles",
    "processed_tables", "profile_beside_post", "profiles", "published_ratios", "run", "summary", "top_table",
]
