#!/bin/bash
# Entrypoint of logbench/mariadb:<series>, following the official mariadb image's
# docker-entrypoint.sh: same variables (MARIADB_* first, then the MYSQL_* ones),
# same order of events.
#   first start: mariadb-install-db -> temporary server on the unix socket only
#   (--skip-networking: passwords, database, user, time zones, init scripts) ->
#   stop -> "MariaDB init process done. Ready for start up."
#   every start: exec the server as the unprivileged mysql user.
# So "mariadbd: ready for connections." is logged twice on a first start, which is
# what testcontainers' MySqlContainer waits for.
set -Eeo pipefail

mysql_log()  { local type=$1; shift; printf '%s [%s] [Entrypoint]: %s\n' "$(date --rfc-3339=seconds)" "$type" "$*"; }
mysql_note() { mysql_log Note "$@"; }
mysql_warn() { mysql_log Warn "$@" >&2; }
mysql_error() { mysql_log ERROR "$@" >&2; exit 1; }

# file_env, docker_process_init_files, wants_help
. /usr/local/lib/logbench/entrypoint.sh
entrypoint_note() { mysql_note "$@"; }
entrypoint_warn() { mysql_warn "$@"; }
entrypoint_error() { mysql_error "$@"; }
entrypoint_sql() { docker_process_sql ${MARIADB_DATABASE:+--database="$MARIADB_DATABASE"} <"${1:-/dev/stdin}"; }

# MARIADB_X, else MYSQL_X (or its *_FILE forms); MYSQL_NAME may differ from X
mariadb_env() {
  local x=$1 my=${2:-MYSQL_$1} def=${3:-}
  local mv="MARIADB_$x" mvf="MARIADB_${x}_FILE" myf="${my}_FILE"
  if [ -n "${!mv:-}${!mvf:-}" ] || [ -z "${!my:-}${!myf:-}" ]; then
    file_env "$mv" "$def"
  else
    file_env "$my" "$def"
    export "$mv"="${!my}"
  fi
}

# mysql_get_config NAME mariadbd ARGS...: the value the server would use
mysql_get_config() {
  local conf=$1; shift
  "$@" --verbose --help 2>/dev/null \
    | awk -v conf="$conf" '$1 == conf && /^[^ \t]/ { sub(/^[^ \t]+[ \t]+/, ""); print; exit }'
}

docker_setup_env() {
  declare -g DATADIR SOCKET DATABASE_ALREADY_EXISTS
  DATADIR=$(mysql_get_config datadir "$@")
  SOCKET=$(mysql_get_config socket "$@")
  [ -n "$DATADIR" ] || mysql_error "could not read datadir from: $* --verbose --help"
  DATADIR=${DATADIR%/}

  mariadb_env ROOT_HOST MYSQL_ROOT_HOST '%'
  mariadb_env DATABASE
  mariadb_env USER
  mariadb_env PASSWORD
  mariadb_env ROOT_PASSWORD
  mariadb_env ALLOW_EMPTY_ROOT_PASSWORD MYSQL_ALLOW_EMPTY_PASSWORD
  mariadb_env RANDOM_ROOT_PASSWORD
  mariadb_env INITDB_SKIP_TZINFO

  DATABASE_ALREADY_EXISTS=
  if [ -d "$DATADIR/mysql" ]; then DATABASE_ALREADY_EXISTS=true; fi
}

docker_create_db_directories() {
  mkdir -p "$DATADIR"
  if [ -n "$SOCKET" ]; then mkdir -p "$(dirname "$SOCKET")"; fi
  if [ "$(id -u)" = 0 ]; then
    find "$DATADIR" \! -user mysql -exec chown mysql:mysql '{}' +
    if [ -n "$SOCKET" ]; then chown mysql:mysql "$(dirname "$SOCKET")"; fi
  fi
}

docker_verify_minimum_env() {
  if [ -z "$MARIADB_ROOT_PASSWORD" ] && [ -z "$MARIADB_ALLOW_EMPTY_ROOT_PASSWORD" ] && [ -z "$MARIADB_RANDOM_ROOT_PASSWORD" ]; then
    mysql_error $'Database is uninitialized and password option is not specified\n\tYou need to specify one of MARIADB_ROOT_PASSWORD, MARIADB_ROOT_PASSWORD_FILE, MARIADB_ALLOW_EMPTY_ROOT_PASSWORD and MARIADB_RANDOM_ROOT_PASSWORD'
  fi
  if [ "$MARIADB_USER" = root ]; then
    mysql_error 'MARIADB_USER="root", MYSQL_USER="root" cannot be used; use MARIADB_ROOT_PASSWORD / MYSQL_ROOT_PASSWORD for root'
  fi
  if [ -n "$MARIADB_USER" ] && [ -z "$MARIADB_PASSWORD" ]; then
    mysql_warn "MARIADB_USER ($MARIADB_USER) is set but no password: the user is created without one"
  fi
}

docker_init_database_dir() {
  mysql_note "Initializing database files"
  shift  # the server binary; the rest are the server's options, used here too
  mariadb-install-db --datadir="$DATADIR" --rpm --auth-root-authentication-method=normal \
    --skip-test-db --default-time-zone=SYSTEM --enforce-storage-engine= --skip-log-bin \
    --expire-logs-days=0 --loose-innodb_buffer_pool_load_at_startup=0 \
    --loose-innodb_buffer_pool_dump_at_shutdown=0 "$@"
  mysql_note "Database files initialized"
}

ROOT_PASSWORD_SET=
docker_process_sql() {
  local common=(--protocol=socket -uroot -hlocalhost --socket="$SOCKET" --comments)
  if [ -n "$ROOT_PASSWORD_SET" ] && [ -n "$MARIADB_ROOT_PASSWORD" ]; then
    # the process substitution must be on this command line: its fd lives as long as the command
    mariadb --defaults-extra-file=<(printf '[client]\npassword="%s"\n' "${MARIADB_ROOT_PASSWORD//\"/\\\"}") \
      "${common[@]}" "$@"
  else
    mariadb "${common[@]}" "$@"
  fi
}

docker_temp_server_start() {
  "$@" --skip-networking --default-time-zone=SYSTEM --socket="$SOCKET" --loose-wsrep_on=OFF \
    --expire-logs-days=0 --skip-slave-start --loose-innodb_buffer_pool_load_at_startup=0 &
  declare -g MARIADB_PID=$!
  mysql_note "Waiting for server startup"
  local i
  for ((i = 0; i < 300; i++)); do
    if docker_process_sql --database=mysql <<<'SELECT 1' &>/dev/null; then return 0; fi
    kill -0 "$MARIADB_PID" 2>/dev/null || mysql_error "Unable to start server."
    sleep 0.2
  done
  mysql_error "Unable to start server (60 s)."
}

docker_temp_server_stop() {
  kill "$MARIADB_PID"
  wait "$MARIADB_PID" || true
}

docker_sql_escape_string_literal() {
  local newline=$'\n' escaped=${1//\\/\\\\}
  escaped=${escaped//$newline/\\n}
  echo "${escaped//\'/\\\'}"
}

docker_setup_db() {
  if [ -z "$MARIADB_INITDB_SKIP_TZINFO" ]; then
    mysql_note "Loading time zone info into the mysql database"
    mariadb-tzinfo-to-sql --skip-write-binlog /usr/share/zoneinfo 2>/dev/null | docker_process_sql --database=mysql
  fi
  if [ -n "$MARIADB_RANDOM_ROOT_PASSWORD" ]; then
    MARIADB_ROOT_PASSWORD=$(tr -dc '[:alnum:]!#%&()*+,-./:;<=>?@[]^_{|}~' </dev/urandom | head -c 32 || true)
    export MARIADB_ROOT_PASSWORD
    mysql_note "GENERATED ROOT PASSWORD: $MARIADB_ROOT_PASSWORD"
  fi

  local root_pw user_pw
  root_pw=$(docker_sql_escape_string_literal "$MARIADB_ROOT_PASSWORD")
  local root_create=
  if [ -n "$MARIADB_ROOT_HOST" ] && [ "$MARIADB_ROOT_HOST" != localhost ]; then
    root_create="CREATE USER 'root'@'${MARIADB_ROOT_HOST}' IDENTIFIED BY '${root_pw}';
GRANT ALL ON *.* TO 'root'@'${MARIADB_ROOT_HOST}' WITH GRANT OPTION;
GRANT PROXY ON ''@'%' TO 'root'@'${MARIADB_ROOT_HOST}' WITH GRANT OPTION;"
  fi
  local db_create=
  if [ -n "$MARIADB_DATABASE" ]; then
    mysql_note "Creating database ${MARIADB_DATABASE}"
    db_create="CREATE DATABASE IF NOT EXISTS \`${MARIADB_DATABASE//\`/\`\`}\`;"
  fi
  local user_create=
  if [ -n "$MARIADB_USER" ]; then
    mysql_note "Creating user ${MARIADB_USER}"
    user_pw=$(docker_sql_escape_string_literal "$MARIADB_PASSWORD")
    local user; user=$(docker_sql_escape_string_literal "$MARIADB_USER")
    user_create="CREATE USER '${user}'@'%' IDENTIFIED BY '${user_pw}';"
    if [ -n "$MARIADB_DATABASE" ]; then
      mysql_note "Giving user ${MARIADB_USER} access to schema ${MARIADB_DATABASE}"
      user_create+="
GRANT ALL ON \`${MARIADB_DATABASE//\`/\`\`}\`.* TO '${user}'@'%';"
    fi
  fi

  mysql_note "Securing system users (equivalent to running mysql_secure_installation)"
  docker_process_sql --database=mysql --binary-mode <<-EOSQL
	SET @orig_sql_log_bin= @@SESSION.SQL_LOG_BIN;
	SET @@SESSION.SQL_LOG_BIN=0;
	SET @@SESSION.SQL_MODE=REPLACE(@@SESSION.SQL_MODE, 'NO_BACKSLASH_ESCAPES', '');
	DROP USER IF EXISTS root@'127.0.0.1', root@'::1';
	EXECUTE IMMEDIATE CONCAT('DROP USER IF EXISTS root@\'', @@hostname,'\'');
	SET PASSWORD FOR 'root'@'localhost'= PASSWORD('${root_pw}');
	${root_create}
	${db_create}
	${user_create}
	SET @@SESSION.SQL_LOG_BIN=@orig_sql_log_bin;
	EOSQL
  ROOT_PASSWORD_SET=true
}

_main() {
  # `docker run IMAGE --option ...` means `mariadbd --option ...`
  if [ "${1:0:1}" = '-' ]; then
    set -- mariadbd "$@"
  fi

  if { [ "$1" = mariadbd ] || [ "$1" = mysqld ]; } && ! wants_help "-? --help --print-defaults -V --version" "$@"; then
    mysql_note "Entrypoint script for MariaDB Server $(mariadbd --version | awk '{print $3}') started."
    docker_setup_env "$@"
    docker_create_db_directories
    if [ "$(id -u)" = 0 ]; then
      mysql_note "Switching to dedicated user 'mysql'"
      exec setpriv --reuid=mysql --regid=mysql --init-groups "${BASH_SOURCE[0]}" "$@"
    fi

    if [ -z "$DATABASE_ALREADY_EXISTS" ]; then
      docker_verify_minimum_env
      ls /docker-entrypoint-initdb.d/ >/dev/null
      docker_init_database_dir "$@"
      mysql_note "Starting temporary server"
      docker_temp_server_start "$@"
      mysql_note "Temporary server started."
      docker_setup_db
      docker_process_init_files /docker-entrypoint-initdb.d/*
      mysql_note "Stopping temporary server"
      docker_temp_server_stop
      mysql_note "Temporary server stopped"
      echo
      mysql_note "MariaDB init process done. Ready for start up."
      echo
    fi
  fi
  exec "$@"
}

shopt -s nullglob
_main "$@"
