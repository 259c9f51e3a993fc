#!/bin/sh
# The exact server version of docker/servers.tsv in a server image (run by the Dockerfiles of logbench/postgres
# and logbench/mariadb at build time):
#   server-packages.sh pin VERSION            apt-get update, then pin every package the archive has at exactly
#                                             VERSION (all those built from the server's source: server, client,
#                                             libraries) to it, not the suite's newest (a security update moves it)
#   server-packages.sh check PACKAGE VERSION  after the install: PACKAGE is at VERSION (else the archive no longer
#                                             has it), recorded in /etc/logbench-server-version
set -eu
pins=/etc/apt/preferences.d/logbench-server
case "${1:-}" in
  pin)
    version=$2
    test -n "$version"
    apt-get update
    # apt takes a version pin per package name only ('Package: *' with 'Pin: version' is ignored with a
    # warning): one for every package the archive has at exactly that version
    awk -v v="$version" '/^Package: /{p = $2} /^Version: /{if ($2 == v) print p}' /var/lib/apt/lists/*_Packages \
      | sort -u | while read -r p; do printf 'Package: %s\nPin: version %s\nPin-Priority: 1001\n\n' "$p" "$version"; done \
      >"$pins"
    if [ ! -s "$pins" ]; then
      echo "no package at version $version in the archive: change docker/servers.tsv" >&2; exit 1
    fi ;;
  check)
    package=$2 version=$3
    have=$(dpkg-query -W -f '${Version}' "$package")
    if [ "$have" != "$version" ]; then
      echo "$package $version is not in the archive (apt installed $have): change docker/servers.tsv" >&2; exit 1
    fi
    printf '%s\n' "$version" >/etc/logbench-server-version ;;
  *)
    echo "usage: server-packages.sh pin VERSION | check PACKAGE VERSION" >&2; exit 2 ;;
esac
