# What the entrypoints of logbench/postgres and logbench/mariadb share, as the official images' entrypoints
# do it (sourced, not run; copied into both images by their Dockerfiles). Each entrypoint defines, before
# calling these:
#   entrypoint_note MESSAGE   a progress line (postgres: plain; mariadb: "<date> [Note] [Entrypoint]: ...")
#   entrypoint_warn MESSAGE   a warning line
#   entrypoint_error MESSAGE  an error line, then exit 1
#   entrypoint_sql [FILE]     run the SQL of FILE, else of stdin, in the database the init scripts are for

# file_env VAR [DEFAULT]: VAR or VAR_FILE (docker secrets), not both
file_env() {
  local var=$1 fileVar="${1}_FILE" def=${2:-}
  if [ "${!var:-}" ] && [ "${!fileVar:-}" ]; then
    entrypoint_error "both $var and $fileVar are set (but are exclusive)"
  fi
  local val=$def
  if [ "${!var:-}" ]; then
    val=${!var}
  elif [ "${!fileVar:-}" ]; then
    val=$(<"${!fileVar}")
  fi
  export "$var"="$val"
  unset "$fileVar"
}

# docker_process_init_files FILE...: the files of /docker-entrypoint-initdb.d, in order
docker_process_init_files() {
  local f
  printf '\n'
  for f; do
    case "$f" in
      *.sh)
        if [ -x "$f" ]; then
          entrypoint_note "$0: running $f"; "$f"
        else
          entrypoint_note "$0: sourcing $f"
          # shellcheck disable=SC1090
          . "$f"
        fi ;;
      *.sql)     entrypoint_note "$0: running $f"; entrypoint_sql "$f"; printf '\n' ;;
      *.sql.gz)  entrypoint_note "$0: running $f"; gunzip -c "$f" | entrypoint_sql; printf '\n' ;;
      *.sql.xz)  entrypoint_note "$0: running $f"; xzcat "$f" | entrypoint_sql; printf '\n' ;;
      *.sql.zst) entrypoint_note "$0: running $f"; zstd -dc "$f" | entrypoint_sql; printf '\n' ;;
      *)         entrypoint_warn "$0: ignoring $f" ;;
    esac
    printf '\n'
  done
}

# wants_help "OPTION ..." ARG...: true when an ARG is one of the server's OPTIONs that only print and exit,
# so the entrypoint must not initialise a data directory for them
wants_help() {
  local options=" $1 " arg
  shift
  for arg; do
    if [[ $options == *" $arg "* ]]; then return 0; fi
  done
  return 1
}
