"""Study 12: what logging costs on the user's own PostgreSQL, under their own workload (issue 41).

Every other study starts its own server and runs the suite's loads; a DBA deciding whether to turn on
``log_min_duration_statement = 0`` has a server already. This study is handed one (a libpq connection string or
the PG* variables, as psql takes them; the password from PGPASSWORD or ~/.pgpass, never in a file it writes),
refuses before changing anything a server it must not touch (a standby, missing grants — printed as the GRANT
statements —, more active sessions than ``max_active``, a setting that needs a restart, a script pgbench rejects),
asks for ``confirm`` with the load it will run, then switches the arms by ALTER SYSTEM + reload (each switch
timed) in the block design with the A/A control, counts each run's records in the log file the server writes
(on its host: the file; elsewhere through ``pg_read_binary_file`` where granted; else it says it could not), and
restores every setting it changed, also on Ctrl-C, SIGTERM and a dropped connection.

It is not in the registry of the suite's studies (``logbench.studies.specs``): it has no post, no smoke run the
workflow could do without a user's server, and nothing the findings or the paper read;
:func:`logbench.studies.user_server_specs` names it for the answer. Its committed run (its notebook's outputs) is
made on a throwaway server the workflow hands it as a DBA would (``on_user_server.handed_committed``,
``logbench.servers.handed``). ``spec`` <- ``analysis`` <- ``study``.
"""

from __future__ import annotations

from .analysis import (prediction_parts, predictions, priced_as, processed_tables, records_per_transaction, summary,
                       switch_delays)
from .spec import ARMS, BASELINE, BUILTIN_DB, NAME, PROFILES, SPEC, OwnServerStudy
from .study import arm_settings, define, load_text, records_of, run, start

__all__ = ["ARMS", "BASELINE", "BUILTIN_DB", "NAME", "PROFILES", "SPEC", "OwnServerStudy", "arm_settings", "define",
           "load_text", "prediction_parts", "predictions", "priced_as", "processed_tables", "records_of",
           "records_per_transaction", "run", "start", "summary", "switch_delays"]
