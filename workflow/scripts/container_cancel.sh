#!/bin/bash
# The simulated cluster's cancel command: stop and remove the jobs' containers (their ids, as submitted).
exec docker rm -f "$@" >/dev/null
