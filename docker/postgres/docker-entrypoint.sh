#!/bin/bash
# Entrypoint of logbench/postgres:<major>, following the official postgres image's
# docker-entrypoint.sh: same variables, same order of events.
#   first start: initdb -> temporary server on the unix socket only (init scripts,
#   POSTGRES_DB) -> stop -> "PostgreSQL init process complete; ready for start up."
#   every start: exec the server as the unprivileged postgres user.
# So "database system is ready to accept connections" is logged twice on a first
# start, the first time by a server that does not listen on TCP.
set -Eeo pipefail

# file_env, docker_process_init_files, wants_help
. /usr/local/lib/logbench/entrypoint.sh
entrypoint_note() { printf '%s\n' "$*"; }
entrypoint_warn() { printf '%s\n' "$*"; }
entrypoint_error() { printf 'error: %s\n' "$*" >&2; exit 1; }
# psql -f for a plain file, as the official image: its errors then name the file and line
entrypoint_sql() { docker_process_sql ${1:+-f "$1"}; }

docker_setup_env() {
  file_env POSTGRES_PASSWORD
  file_env POSTGRES_USER postgres
  file_env POSTGRES_DB "$POSTGRES_USER"
  file_env POSTGRES_INITDB_ARGS
  : "${POSTGRES_HOST_AUTH_METHOD:=}"
  declare -g DATABASE_ALREADY_EXISTS=
  if [ -s "$PGDATA/PG_VERSION" ]; then DATABASE_ALREADY_EXISTS=true; fi
}

docker_create_db_directories() {
  local user; user=$(id -u)
  mkdir -p "$PGDATA"
  chmod 00700 "$PGDATA" || :
  mkdir -p /var/run/postgresql || :
  chmod 03775 /var/run/postgresql || :
  if [ -n "${POSTGRES_INITDB_WALDIR:-}" ]; then
    mkdir -p "$POSTGRES_INITDB_WALDIR"
    if [ "$user" = 0 ]; then find "$POSTGRES_INITDB_WALDIR" \! -user postgres -exec chown postgres '{}' +; fi
    chmod 700 "$POSTGRES_INITDB_WALDIR"
  fi
  if [ "$user" = 0 ]; then
    find "$PGDATA" \! -user postgres -exec chown postgres '{}' +
    find /var/run/postgresql \! -user postgres -exec chown postgres '{}' +
  fi
}

docker_verify_minimum_env() {
  if [ -z "$POSTGRES_PASSWORD" ] && [ "$POSTGRES_HOST_AUTH_METHOD" != trust ]; then
    cat >&2 <<-'EOE'
	Error: Database is uninitialized and superuser password is not specified.
	       You must specify POSTGRES_PASSWORD to a non-empty value for the
	       superuser. For example, "-e POSTGRES_PASSWORD=password" on "docker run".

	       You may also use "POSTGRES_HOST_AUTH_METHOD=trust" to allow all
	       connections without a password. This is *not* recommended.
	EOE
    exit 1
  fi
  if [ "$POSTGRES_HOST_AUTH_METHOD" = trust ]; then
    echo >&2 'WARNING: POSTGRES_HOST_AUTH_METHOD has been set to "trust": no password is needed to connect.'
  fi
}

docker_init_database_dir() {
  if [ -n "${POSTGRES_INITDB_WALDIR:-}" ]; then
    set -- --waldir "$POSTGRES_INITDB_WALDIR" "$@"
  fi
  # --pwfile refuses an empty file, as in the official image
  # shellcheck disable=SC2086
  eval 'initdb --username="$POSTGRES_USER" --pwfile=<(printf "%s\n" "$POSTGRES_PASSWORD") '"$POSTGRES_INITDB_ARGS"' "$@"'
}

pg_setup_hba_conf() {
  if [ "${1:-}" = postgres ]; then shift; fi
  local auth=${POSTGRES_HOST_AUTH_METHOD:-}
  if [ -z "$auth" ]; then
    auth=$(postgres -C password_encryption "$@" 2>/dev/null || echo scram-sha-256)
  fi
  {
    printf '\n'
    if [ "$auth" = trust ]; then
      printf '# warning trust is enabled for all connections\n'
    fi
    printf 'host all all all %s\n' "$auth"
  } >>"$PGDATA/pg_hba.conf"
}

docker_temp_server_start() {
  if [ "$1" = postgres ]; then shift; fi
  # the temporary server listens on the unix socket only: clients (and the
  # readiness probe of testcontainers, psql --host 127.0.0.1) wait for the real one
  set -- "$@" -c listen_addresses='' -p "${PGPORT:-5432}"
  PGUSER="${PGUSER:-$POSTGRES_USER}" \
    pg_ctl -D "$PGDATA" -o "$(printf '%q ' "$@")" -w start
}

docker_temp_server_stop() {
  PGUSER="${PGUSER:-postgres}" pg_ctl -D "$PGDATA" -m fast -w stop
}

docker_process_sql() {
  local query_runner=(psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --no-password --no-psqlrc)
  if [ -n "$POSTGRES_DB" ]; then query_runner+=(--dbname "$POSTGRES_DB"); fi
  PGHOST='' PGHOSTADDR='' "${query_runner[@]}" "$@"
}

# POSTGRES_DB='' on the call: connect to "postgres" while $POSTGRES_DB (expanded by
# this shell, before the call) names the database to create
# shellcheck disable=SC2097,SC2098
docker_setup_db() {
  local exists
  exists=$(POSTGRES_DB='' docker_process_sql --dbname postgres --set db="$POSTGRES_DB" --tuples-only <<-'EOSQL'
	SELECT 1 FROM pg_database WHERE datname = :'db' ;
	EOSQL
  )
  if [ -z "$exists" ]; then
    POSTGRES_DB='' docker_process_sql --dbname postgres --set db="$POSTGRES_DB" <<-'EOSQL'
	CREATE DATABASE :"db" ;
	EOSQL
    printf '\n'
  fi
}

_main() {
  # `docker run IMAGE -c name=value` means `postgres -c name=value`
  if [ "${1:0:1}" = '-' ]; then
    set -- postgres "$@"
  fi

  if [ "$1" = postgres ] && ! wants_help "-? --help --describe-config -V --version" "$@"; then
    docker_setup_env
    docker_create_db_directories
    if [ "$(id -u)" = 0 ]; then
      # drop root: the server refuses to run as root anyway
      exec setpriv --reuid=postgres --regid=postgres --init-groups "${BASH_SOURCE[0]}" "$@"
    fi

    if [ -z "$DATABASE_ALREADY_EXISTS" ]; then
      docker_verify_minimum_env
      ls /docker-entrypoint-initdb.d/ >/dev/null
      docker_init_database_dir
      pg_setup_hba_conf "$@"

      export PGPASSWORD="${PGPASSWORD:-$POSTGRES_PASSWORD}"
      docker_temp_server_start "$@"
      docker_setup_db
      docker_process_init_files /docker-entrypoint-initdb.d/*
      docker_temp_server_stop
      unset PGPASSWORD

      cat <<-'EOM'

	PostgreSQL init process complete; ready for start up.

	EOM
    else
      cat <<-'EOM'

	PostgreSQL Database directory appears to contain a database; Skipping initialization

	EOM
    fi
  fi

  exec "$@"
}

shopt -s nullglob
_main "$@"
