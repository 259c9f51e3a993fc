"""What one logged line costs: time per transaction regressed on the statement records logged per transaction.

Every measured run contributes one observation: the time per transaction
``us_per_tx = 1e6 / tps`` (µs of wall time per transaction, the inverse of
throughput), the log records the workload's statements caused per transaction,
split by **destination family** (:data:`FAMILIES`: a file, the local syslog, a
remote syslog, a table, or formatted and discarded), and the log bytes per
transaction (kB = 1000 bytes). Each (study, cell, clients) group gets its own
intercept — the baseline cost of a transaction without logging there (a cell is
a study's regime × workload × backend, where it has them) — so the slopes are
what logging adds.

* ``main``:        us_per_tx ~ 0 + C(baseline) + lines_<family> ... + kb_per_tx
  — the cost of a line per destination family, averaged over concurrency levels;
* ``per_clients``: us_per_tx ~ 0 + C(baseline) + C(clients):lines_<family> ... + kb_per_tx
  — the cost of a line per family at each concurrency level on its own. The
  levels are not forced onto a line: on a small machine the cost steps up where
  the clients saturate the cores, it does not grow by a constant per client.

**What enters.** Only the records the workload's statements caused: the records
the configuration declares (``log_records_expected``), less any tracer records a
study injected (``tracer_sent``); records received beyond that (tracers,
start-up queries) never enter the regressor, because a count that grows when
the run is slow makes the regressor a function of the outcome. Studies that
vary something other than what is logged are left out by name (the
``not_line_cost`` the findings pass: ``StudySpec.not_line_cost`` and the version
sweeps, ``findings.NOT_LINE_COST``), as are
A/A control rows (``<baseline>_again``: the baseline again, the study's
resolution, not a logging configuration).

**Never pooled across environments, regimes or workloads.** One fit per
(engine, ``env_id``, regime, workload): runs from different machines or
backends are compared side by side, never averaged; a database larger than its
memory (``io_bound``) is fitted apart from a cached one (an IO-bound
transaction's time is dominated by reads, and its noise would set a shared
slope), and MariaDB's sysbench workloads each get their own fit (a read-write
transaction logs several statements of other shapes than a point select).

**The cost of a typical line.** With a kB term in the model, the bare line
coefficient is the cost of a line of zero bytes, an extrapolation that can come
out negative. What a DBA pays is a line of the size the family's records have:
``line + kB × bytes / 1000``, with its CI from the coefficients' covariance
(statsmodels' ``t_test`` of that linear combination), reported per family as
``typical_<family>`` with the bytes it was taken at.

**Weights and errors.** Weighted least squares with weight 1 / (the pooled
within-configuration variance of ``us_per_tx`` in the run's baseline group —
study, cell and clients): groups differ in spread by three orders of magnitude,
and unweighted OLS lets the noisiest groups set the slopes. The variance is
pooled over the group's configurations because a weight estimated from one
configuration's 3–5 repeats is itself so noisy that the intervals come out too
narrow (feasible WLS with per-configuration weights covered a known cost in 15
of 20 synthetic replications). HC3 standard errors
always (no pretest). Cook's distance from the weighted fit flags influential
runs, and the main model is refitted without them (a sensitivity check).

:func:`typical_record_bytes` is the size of a typical logged line, at which the physical floor beside it is read
(one ``write()``, timed by study 11: ``studies.record_cost.calibration``).

The package, one concern a module: :mod:`.observations` (the runs as the fit's rows: families, cells,
weights), :mod:`.model` (the fits), :mod:`.tables` (coefficients, diagnostics, influential runs, residuals)
and :mod:`.synthetic` (runs with a known cost); :mod:`.per_record` is the fit in records (throughput against the
log rate, a record's machine µs beside study 11's counted figure, issue 42). Callers import from the package.
"""

from __future__ import annotations

from ...base.settings import is_aa  # noqa: F401  (callers and tests reach it through here)
from ...base.stats import CONFIDENCE  # noqa: F401
from .model import (  # noqa: F401
    COOKS_FACTOR, COOKS_RULE, COV_TYPE, MODELS, VARY_MIN, WEIGHTS, WITHOUT_INFLUENTIAL, Fit, Model, _cooks_distance,
    _fit, _rank_ok, _varies, fit, fit_all, fit_key, formulas)
from .observations import (  # noqa: F401
    BYTES_PER_KB, CACHED, CELL_COLUMNS, DESTINATION_FAMILY, DISCARDED, FAMILIES, FAMILY_LABELS, FIT_COLUMNS,
    IO_BOUND, IO_REGIMES, PREPARED_COLUMNS, _destinations, _family_shares, _observations, _weights,
    destination_family, family_term, fit_regime, prepare, text_column, typical_record_bytes)
from . import per_record  # noqa: F401
from .per_record import record_costs  # noqa: F401
from .synthetic import synthetic_runs  # noqa: F401
from .tables import (  # noqa: F401
    COEFFICIENT_COLUMNS, DIAGNOSTIC_COLUMNS, TERM_UNITS, TYPICAL, _family_of, _term_label, coefficients,
    diagnostics, family_bytes, influential_runs, residuals, typical_lines, typical_term)
