#!/bin/bash
# Make a Docker engine answer and build logbench's local images (no registry needed).
#
#   sudo scripts/setup_docker.sh            # idempotent; seconds when nothing changed
#   scripts/setup_docker.sh --rebuild       # rebuild all images (debootstrap tarball stays cached)
#   scripts/setup_docker.sh --refresh-base  # also re-run debootstrap
#   scripts/setup_docker.sh --engine-only   # only make sure an engine answers
#   scripts/setup_docker.sh --check         # change nothing; exit 1 unless the engine answers
#                                           # and every image matches its definition
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
# Needs root (apt-get, dockerd, debootstrap).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
docker_dir="$here/docker"
cache_dir=${LOGBENCH_CACHE_DIR:-/var/cache/logbench}
dockerd_log=${LOGBENCH_DOCKERD_LOG:-/var/log/logbench-dockerd.log}
engine_wait=${LOGBENCH_DOCKERD_WAIT:-60}
suite=bookworm
variant=minbase
label=org.logbench.definition
# the CLI may be newer than Debian's engine and lack buildx: use the classic builder
export DOCKER_BUILDKIT=0

rebuild=0 refresh_base=0 engine_only=0 check=0
for a in "$@"; do
  case "$a" in
    --rebuild) rebuild=1 ;;
    --refresh-base) rebuild=1 refresh_base=1 ;;
    --engine-only) engine_only=1 ;;
    --check) check=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    *) echo "setup_docker: unknown argument: $a" >&2; exit 2 ;;
  esac
done

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
      setsid dockerd >>"$dockerd_log" 2>&1 </dev/null &
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

arch=$(dpkg --print-architecture)
base_tar="$cache_dir/debootstrap-$suite-$variant-$arch.tar"
base_image=logbench/debian:$suite
# DIR-under-docker/:TAG, built FROM $base_image in this order
images=(postgres:logbench/postgres:15 mariadb:logbench/mariadb:10.11 rsyslog:logbench/rsyslog:8)
base_hash=$(printf '%s %s %s %s\n' "$suite" "$variant" "$arch" "$(hash_dir debian)" | sha256sum | cut -c1-16)

build_base() {
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
  bash "$docker_dir/debian/prepare-rootfs.sh" "$work/root" "$(host_sources)"
  tar -C "$work/root" --numeric-owner -c . | docker import \
      --change "LABEL $label=$base_hash" \
      --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      --change 'ENV LANG=C.UTF-8' \
      --change 'CMD ["bash"]' \
      - "$base_image" >/dev/null
  rm -rf "$work"
  say "imported $base_image in $(since "$t1")"
}

build_image() {  # build_image NAME TAG HASH
  local name=$1 tag=$2 h=$3 t0; t0=$(date +%s.%N)
  local log; log=$(mktemp)
  say "building $tag"
  if ! docker build --label "$label=$h" --build-arg "BASE=$base_image" -t "$tag" "$docker_dir/$name" >"$log" 2>&1; then
    tail -n 40 "$log" >&2
    rm -f "$log"
    die "building $tag failed"
  fi
  rm -f "$log"
  say "built $tag in $(since "$t0")"
}

if [ $check -eq 1 ]; then
  stale=0
  for spec in "debian:$base_image" "${images[@]}"; do
    name=${spec%%:*} tag=${spec#*:}
    if [ "$name" = debian ]; then h=$base_hash; else
      h=$(printf '%s %s\n' "$base_hash" "$(hash_dir "$name")" | sha256sum | cut -c1-16)
    fi
    have=$(image_hash "$tag")
    if [ "$have" = "$h" ]; then say "$tag is up to date ($h)"; else
      if [ -n "$have" ]; then say "$tag is stale (built from $have, definition is $h)"
      else say "$tag is missing"; fi
      stale=1
    fi
  done
  exit $stale
fi

base_rebuilt=0
if needs_build "$base_image" "$base_hash"; then
  build_base
  base_rebuilt=1
else
  say "$base_image is up to date ($base_hash)"
fi

for spec in "${images[@]}"; do
  name=${spec%%:*} tag=${spec#*:}
  h=$(printf '%s %s\n' "$base_hash" "$(hash_dir "$name")" | sha256sum | cut -c1-16)
  if [ $base_rebuilt -eq 1 ] || needs_build "$tag" "$h"; then
    build_image "$name" "$tag" "$h"
  else
    say "$tag is up to date ($h)"
  fi
done

# dangling layers of images replaced by a rebuild
docker image prune -f --filter "label=$label" >/dev/null 2>&1 || true
say "done in $(since "$t_all")"
