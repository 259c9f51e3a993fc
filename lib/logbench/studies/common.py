"""The skeleton every study shares, as one import: a study module, a notebook or the suite says
``from logbench.studies import common`` and ``common.<name>``; the code lives in one module per concern.

A study module keeps what is its own (configurations, profiles, checks, summaries, findings)
and hands the rest to these:

- :mod:`.spec` — :class:`StudySpec`, what the registry, the report, the tests and the workflow (``Snakefile``)
  know of it (and :class:`DigestPaper`, a digest study's part of the paper);
- :mod:`.output` — where its files go: :func:`stem`, :func:`output_path`, :func:`processed_path` (the one place
  that decides whether a run may write data/processed), :func:`load_processed`;
- :mod:`.parameters` — :func:`study_fields`: the parameters every study has (clients, repeats, duration,
  warm-up, seed, output paths, noise controls), resolved against its profile and checked;
- :mod:`.declaration` — :func:`declare`, the decorator of its define(): its parameters declared once (define()'s
  typed signature and its HELP), its PROFILES checked by it at import, its notebook's parameters cell generated
  from it, and what the notebook passes to define() picked by it (``define.declaration.given(globals())``);
- :mod:`.running` — :func:`run_study`: resolve the study (backend 'auto', images) -> interrupt handling -> start
  the stack -> environment -> write the study -> execute -> write the processed files;
- :mod:`.variants` — a schedule over several servers: :func:`sweep_default` (what every swept server can run,
  the rest said), :func:`split_variant`, :func:`variant_differences`, ...;
- :mod:`.summaries` — :func:`summary_per_variant`, :func:`switchback_summary`, :func:`measured_columns`;
- :mod:`.texts` — :func:`environment_table`, :func:`ci`, :func:`per_variant_text`, :func:`resolution_note`;
- :mod:`.beside` — :func:`beside_reference`: this run's ratios beside the committed reference machine's (one
  cell per notebook);
- :mod:`.sections` (imported by the notebooks as it is, not re-exported) — :func:`~.sections.section`: a report
  section shown only where it applies to the run; :func:`~.sections.planned_section`.
"""

from __future__ import annotations

from .beside import ENVIRONMENT_ROWS, Beside, beside_reference, environment_beside, value_cells
from .declaration import declare
from .output import load_processed, output_path, processed_path, stem
from .parameters import SHARED, profile_lookup, study_fields, with_baseline, without_block_layout
from .running import (StudyResult, _environments, cores_of, env_label, execute_all, first_environment, run_study,
                      switches_of)
from .spec import DigestPaper, StudySpec
from .summaries import measured_columns, summary_per_variant, switchback_summary
from .texts import ci, environment_table, per_variant_text, resolution_note
from .variants import (configuration_order, server_versions, split_variant, sweep_default, variant_differences,
                       variant_keys, version_key, with_server_version, with_variant)

__all__ = [
    "ENVIRONMENT_ROWS", "SHARED", "Beside", "DigestPaper", "StudyResult", "StudySpec", "beside_reference", "ci",
    "configuration_order", "cores_of", "declare", "env_label", "environment_beside", "environment_table", "execute_all",
    "load_processed", "measured_columns", "output_path", "per_variant_text", "processed_path", "profile_lookup",
    "resolution_note", "run_study", "split_variant", "stem", "study_fields", "summary_per_variant",
    "sweep_default", "switchback_summary", "switches_of", "value_cells", "variant_differences", "variant_keys",
    "version_key", "with_baseline", "with_server_version", "with_variant", "first_environment", "server_versions",
]
# _environments (an environment record's servers by label) is used by logbench.publish.answer too.
