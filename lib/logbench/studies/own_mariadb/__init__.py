"""What logging costs on the user's own MariaDB/MySQL, under their own workload (issue 41, its MariaDB half).

Handed a server as the capture tool takes it (host and port or a socket, a user, an option file; the password in
that file or MYSQL_PWD, never in a file it writes), it refuses before changing anything a server it must not touch
(read-only or a replica, missing privileges — printed as the GRANT statements —, more active sessions than
``max_active``, a script sysbench rejects), asks for ``confirm`` with the load it will run, then switches the arms
by SET GLOBAL (each switch timed) in the block design with the A/A control: slow log at ``long_query_time = 0`` to
FILE or TABLE, general log. ``long_query_time`` is copied into a session when it connects, so each run's load is a
new sysbench process whose connections open after the switch; TABLE output is therefore never switched inside a
load either. Records are counted per statement in the study's own log files where the server runs on this host,
and in ``mysql.slow_log`` through SQL anywhere; a remote server's files are not counted, and the run says so.
Every variable it changed is restored (the capture tool's restore), also on Ctrl-C, SIGTERM and a dropped
connection.

Not in the registry of the suite's studies, like study 12 (``own_server``), and committed as it is (on a throwaway
server the workflow hands it: ``on_user_server.handed_committed``); its analysis is the one they share
(:mod:`logbench.studies.on_user_server`). ``spec`` <- ``analysis`` <- ``study``.
"""

from __future__ import annotations

from .analysis import (prediction_parts, predictions, priced_as, processed_tables, records_per_transaction, summary,
                       switch_delays)
from .spec import ARMS, BASELINE, BUILTIN_DB, NAME, PROFILES, SPEC, OwnMariaDBStudy
from .study import arm_settings, define, load_text, run, start

__all__ = ["ARMS", "BASELINE", "BUILTIN_DB", "NAME", "PROFILES", "SPEC", "OwnMariaDBStudy", "arm_settings", "define",
           "load_text", "prediction_parts", "predictions", "priced_as", "processed_tables", "records_per_transaction",
           "run", "start", "summary", "switch_delays"]
