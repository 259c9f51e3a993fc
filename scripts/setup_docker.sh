#!/bin/bash
# Make a Docker engine answer and build logbench's local images (no registry needed).
#
#   sudo scripts/setup_docker.sh            # idempotent; seconds when nothing changed
#   scripts/setup_docker.sh --rebuild       # rebuild all images (debootstrap tarball stays cached)
#   scripts/setup_docker.sh --refresh-base  # also re-run debootstrap
#   scripts/setup_docker.sh --engine-only   # only make sure an engine answers
#   scripts/setup_docker.sh --check         # change nothing; exit 1 unless the engine answers
#                                           # and every image matches its definition
#   scripts/setup_docker.sh --image logbench/postgres:13   # only this one (and its base; repeatable)
#   scripts/setup_docker.sh --all-versions  # also build every server version of docker/servers.tsv
#
# 1. Engine: if `docker info` answers, it is used as it is. Otherwise Debian's
#    docker.io is installed (if missing) and dockerd is started in the background
#    (these machines have no systemd), log in $LOGBENCH_DOCKERD_LOG.
# 2. Images, each labelled org.logbench.definition=<hash of its definition under
#    docker/>; an image is (re)built only when missing or when that hash changed:
#      logbench/debian:bookworm  imported from a debootstrap --variant=minbase rootfs
#                                (the debootstrap tarball is cached in $LOGBENCH_CACHE_DIR)
#      logbench/postgres:15      Debian's postgresql-15, official-image-compatible entrypoint
#      logbench/mariadb:10.11    Debian's mariadb-server, official-image-compatible entrypoint
#      logbench/rsyslog:8        Debian's rsyslog in the foreground, a syslog host/sidecar
#    The server images and their pinned package versions are the lines of docker/servers.tsv; those not
#    marked default (postgres 13/17 from bullseye/trixie, mariadb 10.5/11.8) are built only when asked
#    for (--image, --all-versions, or a study's `versions` on first use), each FROM logbench/debian:<its
#    suite>, and kept current by every later run once they exist.
# Needs root (apt-get, dockerd, debootstrap).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
docker_dir="$here/docker"
cache_dir=${LOGBENCH_CACHE_DIR:-/var/cache/logbench}
dockerd_log=${LOGBENCH_DOCKERD_LOG:-/var/log/logbench-dockerd.log}
engine_wait=${LOGBENCH_DOCKERD_WAIT:-60}
variant=minbase
label=org.logbench.definition
# the CLI may be newer than Debian's engine and lack buildx: use the classic builder
export DOCKER_BUILDKIT=0

rebuild=0 refresh_base=0 engine_only=0 check=0 all_versions=0
asked=()
prev=
for a in "$@"; do
  if [ "$prev" = --image ]; then asked+=("$a"); prev=; continue; fi
  case "$a" in
    --image) prev=--image ;;
    --image=*) asked+=("${a#--image=}") ;;
    --all-versions) all_versions=1 ;;
    --rebuild) rebuild=1 ;;
    --refresh-base) rebuild=1 refresh_base=1 ;;
    --engine-only) engine_only=1 ;;
    --check) check=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    *) echo "setup_docker: unknown argument: $a" >&2; exit 2 ;;
  esac
done
[ -z "$prev" ] || { echo "setup_docker: --image needs an image name (e.g. logbench/postgres:13)" >&2; exit 2; }

t_all=$(date +%s.%N)
say() { printf 'setup_docker: %s\n' "$*"; }
die() { printf 'setup_docker: ERROR: %s\n' "$*" >&2; exit 1; }
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f s", b - a }'; }
engine_answers() { timeout 20 docker info >/dev/null 2>&1; }

apt_updated=0
apt_install() {  # apt_install PKG... (only what is missing)
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  [ "$(id -u)" -eq 0 ] || die "need root to install ${missing[*]}"
  if [ $apt_updated -eq 0 ]; then
    apt-get update -q >/dev/null || die "apt-get update failed"
    apt_updated=1
  fi
  say "installing ${missing[*]}"
  local log; log=$(mktemp)
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >"$log" 2>&1; then
    tail -n 20 "$log" >&2
    rm -f "$log"
    die "apt-get install ${missing[*]} failed"
  fi
  rm -f "$log"
}

# ---------------------------------------------------------------- engine ---
start_engine() {
  local t0; t0=$(date +%s.%N)
  command -v docker >/dev/null 2>&1 || apt_install docker.io
  command -v dockerd >/dev/null 2>&1 || apt_install docker.io
  # docker.io brings iptables, containerd, runc; it pulls none of them as Recommends
  apt_install docker.io iptables
  local i attempt
  # Two attempts: on a machine restarted under it, dockerd's first start once gave up on its own containerd
  # ("timeout waiting for containerd to start", 2026-11-25) and the next start came up in 0.1 s.
  for attempt in 1 2; do
    if pid=$(pidof dockerd 2>/dev/null); then
      say "dockerd (pid $pid) runs but does not answer yet; waiting"
    else
      # a dockerd or containerd that died leaves its pid file behind, and a new one refuses to start
      if [ -f /var/run/docker.pid ] && ! kill -0 "$(cat /var/run/docker.pid)" 2>/dev/null; then
        rm -f /var/run/docker.pid
      fi
      local cpid=/var/run/docker/containerd/containerd.pid
      if [ -f $cpid ] && ! kill -0 "$(cat $cpid)" 2>/dev/null; then
        rm -f $cpid
      fi
      mkdir -p "$(dirname "$dockerd_log")"
      say "starting dockerd (log: $dockerd_log; attempt $attempt)"
      # The engine outlives this script: it must not inherit our descriptors beyond 0-2. A lock held open
      # by whoever ran the set-up (`flock LOCK bash run.sh test`) stayed held by dockerd after the tests
      # ended, and every later `flock LOCK` waited on it (2026-11-28).
      (
        for fd in /proc/$BASHPID/fd/*; do
          fd=${fd##*/}
          [ "$fd" -gt 2 ] && eval "exec $fd>&-"
        done
        exec setsid dockerd >>"$dockerd_log" 2>&1 </dev/null
      ) &
    fi
    for ((i = 0; i < engine_wait * 2; i++)); do
      engine_answers && break
      if ! pidof dockerd >/dev/null 2>&1 && [ $i -gt 4 ]; then break; fi
      sleep 0.5
    done
    engine_answers && break
    say "dockerd did not answer (attempt $attempt); last lines of its log:"
    tail -n 5 "$dockerd_log" >&2 || true
  done
  if ! engine_answers; then
    echo "---- last lines of $dockerd_log ----" >&2
    tail -n 30 "$dockerd_log" >&2 || true
    die "the Docker engine did not answer within ${engine_wait}s"
  fi
  say "engine up in $(since "$t0")"
}

if engine_answers; then
  say "engine answers already"
elif [ $check -eq 1 ]; then
  die "no Docker engine answers (docker info)"
else
  start_engine
fi
say "engine: $(docker info --format 'server {{.ServerVersion}}, storage {{.Driver}}, cgroup {{.CgroupDriver}} v{{.CgroupVersion}}' 2>/dev/null)"
[ $engine_only -eq 1 ] && exit 0

# ---------------------------------------------------------------- images ---
hash_dir() {  # content hash of files (names and bytes), README excluded
  (cd "$docker_dir" && find "$@" -type f ! -name 'README*' ! -name '*~' -print0 | LC_ALL=C sort -z \
     | xargs -0 sha256sum) | sha256sum | cut -c1-16
}
image_hash() { docker image inspect -f "{{ index .Config.Labels \"$label\" }}" "$1" 2>/dev/null || true; }
image_exists() { docker image inspect "$1" >/dev/null 2>&1; }
image_mb() { docker image inspect -f '{{.Size}}' "$1" 2>/dev/null | awk '{ printf "%.0f MB", $1 / 1e6 }'; }
needs_build() {  # needs_build IMAGE HASH
  [ $rebuild -eq 1 ] && return 0
  [ "$(image_hash "$1")" != "$2" ]
}

host_sources() {  # the host's Debian apt sources, for the images' apt
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    echo /etc/apt/sources.list.d/debian.sources
  elif [ -s /etc/apt/sources.list ] && grep -q '^deb ' /etc/apt/sources.list; then
    echo /etc/apt/sources.list
  else
    die "no Debian apt sources found on the host (/etc/apt/sources.list.d/debian.sources or /etc/apt/sources.list)"
  fi
}
host_mirror() {  # first Debian (non-security) mirror URI of the host
  local f; f=$(host_sources)
  local uri
  if [[ $f == *.sources ]]; then
    uri=$(awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i !~ /security/) { print $i; exit } }' "$f")
  else
    uri=$(awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^(https?|file):/ && $i !~ /security/) { print $i; exit } }' "$f")
  fi
  [ -n "$uri" ] || die "could not find a Debian mirror in $f"
  echo "$uri"
}
host_codename() { . /etc/os-release && echo "${VERSION_CODENAME:?no VERSION_CODENAME in /etc/os-release}"; }
suite_sources() {  # suite_sources SUITE OUT: the host's sources with its release's codename replaced by SUITE
  local f; f=$(host_sources)
  local out=$2.${f##*.}
  # bookworm, bookworm-updates, bookworm-security -> SUITE, SUITE-updates, SUITE-security (same mirrors)
  sed -E "s/\b$(host_codename)(-updates|-security)?\b/$1\1/g" "$f" >"$out"
  echo "$out"
}

arch=$(dpkg --print-architecture)
manifest="$docker_dir/servers.tsv"
[ -s "$manifest" ] || die "$manifest is missing"
# Server images: tag -> "kind version suite debian_version default", from docker/servers.tsv.
declare -A server_line=()
server_tags=()
while IFS=$'\t' read -r kind version suite debver default; do
  case "$kind" in ''|'#'*) continue ;; esac
  server_line["logbench/$kind:$version"]="$kind $version $suite $debver $default"
  server_tags+=("logbench/$kind:$version")
done <"$manifest"
rsyslog_tag=logbench/rsyslog:8

for tag in "${asked[@]}"; do
  [ -n "${server_line[$tag]:-}" ] || [ "$tag" = "$rsyslog_tag" ] \
    || die "no image $tag in $manifest; allowed: ${server_tags[*]} $rsyslog_tag"
done

# What this run builds or keeps current. --image: those images only (what a study's first use of a version
# needs, in the least time). Otherwise the default images, every server image with --all-versions, and the
# non-default ones already built (asked for once: kept matching their definition).
wanted=()
if [ ${#asked[@]} -gt 0 ] && [ $all_versions -eq 0 ]; then
  wanted=("${asked[@]}")
else
  for tag in "${server_tags[@]}"; do
    read -r _ _ _ _ default <<<"${server_line[$tag]}"
    if [ "$default" = yes ] || [ $all_versions -eq 1 ] || image_exists "$tag"; then
      wanted+=("$tag")
    fi
  done
  wanted+=("$rsyslog_tag")
fi

suite_of() {  # the Debian suite an image is built FROM
  if [ "$1" = "$rsyslog_tag" ]; then echo bookworm; else read -r _ _ s _ _ <<<"${server_line[$1]}"; echo "$s"; fi
}
base_hash_of() { printf '%s %s %s %s\n' "$1" "$variant" "$arch" "$(hash_dir debian)" | sha256sum | cut -c1-16; }
image_hash_of() {  # the definition hash of an image: its base's, its files (and common/'s), its manifest line
  local tag=$1 suite; suite=$(suite_of "$tag")
  if [ "$tag" = "$rsyslog_tag" ]; then
    # as before servers.tsv: the hash of the base and the directory only, so rsyslog is not rebuilt for it
    printf '%s %s\n' "$(base_hash_of "$suite")" "$(hash_dir rsyslog)" | sha256sum | cut -c1-16
  else
    read -r kind version suite debver _ <<<"${server_line[$tag]}"
    printf '%s %s %s %s %s\n' "$(base_hash_of "$suite")" "$(hash_dir "$kind" common)" "$kind" "$version" "$debver" \
      | sha256sum | cut -c1-16
  fi
}

build_base() {  # build_base SUITE
  local suite=$1 base_tar="$cache_dir/debootstrap-$1-$variant-$arch.tar" base_image=logbench/debian:$1
  apt_install debootstrap
  mkdir -p "$cache_dir"
  work=$(mktemp -d "$cache_dir/rootfs.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  if [ $refresh_base -eq 1 ] || [ ! -s "$base_tar" ]; then
    local t0; t0=$(date +%s.%N)
    local mirror; mirror=$(host_mirror)
    say "debootstrap --variant=$variant $suite (mirror from the host's apt sources)"
    if ! debootstrap --variant="$variant" --arch="$arch" "$suite" "$work/root" "$mirror" >"$work/debootstrap.log" 2>&1; then
      tail -n 20 "$work/debootstrap.log" >&2
      die "debootstrap failed"
    fi
    tar -C "$work/root" --numeric-owner -cf "$base_tar.tmp" . && mv "$base_tar.tmp" "$base_tar"
    say "debootstrap done in $(since "$t0") (cached: $base_tar)"
  else
    say "using cached debootstrap tarball $base_tar"
    mkdir -p "$work/root"
    tar -C "$work/root" --numeric-owner -xpf "$base_tar"
  fi
  local t1; t1=$(date +%s.%N)
  bash "$docker_dir/debian/prepare-rootfs.sh" "$work/root" "$(suite_sources "$suite" "$work/sources")"
  tar -C "$work/root" --numeric-owner -c . | docker import \
      --change "LABEL $label=$(base_hash_of "$suite")" \
      --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      --change 'ENV LANG=C.UTF-8' \
      --change 'CMD ["bash"]' \
      - "$base_image" >/dev/null
  rm -rf "$work"
  trap - EXIT
  say "imported $base_image in $(since "$t1"), $(image_mb "$base_image")"
}

build_image() {  # build_image TAG HASH
  local tag=$1 h=$2 t0; t0=$(date +%s.%N)
  local suite; suite=$(suite_of "$tag")
  local dir ctx args=(--build-arg "BASE=logbench/debian:$suite") what=
  if [ "$tag" = "$rsyslog_tag" ]; then dir=rsyslog ctx=$docker_dir/rsyslog; else
    read -r kind version _ debver _ <<<"${server_line[$tag]}"
    # the context is docker/, so the Dockerfile can copy common/ (the classic builder has no second context)
    dir=$kind ctx=$docker_dir
    # the exact package version, on the image as a label too, so a run records what it ran without starting it
    args+=(--label "org.logbench.server-version=$debver")
    case "$kind" in
      postgres) args+=(--build-arg "PG_MAJOR=$version" --build-arg "PG_VERSION=$debver") ;;
      mariadb) args+=(--build-arg "MARIADB_VERSION=$debver") ;;
    esac
    what=" ($kind $debver from $suite)"
  fi
  local log; log=$(mktemp)
  say "building $tag$what"
  if ! docker build --label "$label=$h" "${args[@]}" -t "$tag" -f "$docker_dir/$dir/Dockerfile" "$ctx" >"$log" 2>&1; then
    tail -n 40 "$log" >&2
    rm -f "$log"
    die "building $tag failed"
  fi
  rm -f "$log"
  say "built $tag in $(since "$t0"), $(image_mb "$tag")"
}

if [ $check -eq 1 ]; then
  stale=0
  declare -A seen=()
  for tag in "${wanted[@]}"; do
    suite=$(suite_of "$tag")
    for pair in "logbench/debian:$suite $(base_hash_of "$suite")" "$tag $(image_hash_of "$tag")"; do
      read -r t h <<<"$pair"
      [ -n "${seen[$t]:-}" ] && continue
      seen[$t]=1
      have=$(image_hash "$t")
      if [ "$have" = "$h" ]; then say "$t is up to date ($h)"; else
        if [ -n "$have" ]; then say "$t is stale (built from $have, definition is $h)"
        else say "$t is missing"; fi
        stale=1
      fi
    done
  done
  exit $stale
fi

declare -A base_rebuilt=()
for tag in "${wanted[@]}"; do
  suite=$(suite_of "$tag")
  if [ -z "${base_rebuilt[$suite]:-}" ]; then
    if needs_build "logbench/debian:$suite" "$(base_hash_of "$suite")"; then
      build_base "$suite"
      base_rebuilt[$suite]=1
    else
      say "logbench/debian:$suite is up to date ($(base_hash_of "$suite"))"
      base_rebuilt[$suite]=0
    fi
  fi
  h=$(image_hash_of "$tag")
  if [ "${base_rebuilt[$suite]}" -eq 1 ] || needs_build "$tag" "$h"; then
    build_image "$tag" "$h"
  else
    say "$tag is up to date ($h)"
  fi
done

# dangling layers of images replaced by a rebuild
docker image prune -f --filter "label=$label" >/dev/null 2>&1 || true
say "done in $(since "$t_all")"
