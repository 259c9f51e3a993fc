#!/usr/bin/env bash
# Set-up's first step (scripts/setup.sh runs it): the Debian packages of scripts/apt-packages.txt, the local
# PostgreSQL and MariaDB at the patch level docker/servers.tsv pins for their images.
#
#   scripts/setup_packages.sh                    # what set-up does
#   scripts/setup_packages.sh --manifest FILE    # another servers.tsv (tests/test_setup_pins.py)
#
# Why the pin: study 03 compares the local server with its container image; the image installs exactly the
# servers.tsv version, and the local packages, left to apt, would take the archive's newest (a security update
# moves it), so the comparison would mix a backend effect with a version effect. Every binary of the server's
# source that set-up installs (the server, its client programs, libpq5 / libmariadb3, ...) goes in as
# `pkg=version`: apt takes the newest of any sibling left unpinned, and a newer sibling drags the others up.
# Only where the source is absent or already at the pin: a machine that has another patch level installed
# keeps it (set-up never downgrades a user's server); one line says which levels and the apt command that
# aligns them, and study 03 says its backends ran different versions. Only on the Debian release the pin is
# for (servers.tsv's suite); another release keeps its own, said in one line. A pin the archive no longer has
# fails set-up, naming servers.tsv.
# Idempotent: with everything present, one dpkg-query, no apt.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
manifest=$here/docker/servers.tsv
while [ $# -gt 0 ]; do
  case "$1" in
    --manifest) manifest=${2:?--manifest needs a file}; shift 2 ;;
    *) echo "setup: unknown argument: $1 (allowed: --manifest FILE)" >&2; exit 2 ;;
  esac
done
say() { printf 'setup: %s\n' "$*"; }
die() { printf 'setup: ERROR: %s\n' "$*" >&2; exit 1; }
sudo_=""
[ "$(id -u)" -eq 0 ] || sudo_="sudo"
show=${manifest#"$here"/}
# apt-cache show pkg=version prints nothing and exits 0 for a version apt does not know; madison lists the archive's
in_archive() { apt-cache madison "$1" 2>/dev/null | awk -F' [|] ' -v v="$2" '$2 == v { f = 1 } END { exit !f }'; }

# The Debian source of each default server image, and its pinned version. The local servers run from these
# sources' binaries (postgresql-15: postgres, pgbench, libpq5; mariadb: mariadbd, my_print_defaults, ...).
declare -A pin=()
codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
[ -s "$manifest" ] || die "$show is missing"
while IFS=$'\t' read -r kind version suite debver default; do
  case "$kind" in ''|'#'*) continue ;; esac
  [ "$default" = yes ] || continue
  case "$kind" in
    postgres) src=postgresql-$version ;;
    mariadb) src=mariadb ;;  # bookworm's and trixie's source name (bullseye's was mariadb-10.5: not a default)
    *) continue ;;
  esac
  if [ "$suite" != "$codename" ]; then
    say "this machine is Debian/Ubuntu '${codename:-unknown}', not $suite: its $src is the release's own, not $show's $debver (study 03 names both versions)"
    continue
  fi
  pin[$src]=$debver
done <"$manifest"

# Installed binaries per pinned source: "pkg version" lines.
declare -A have=()
while IFS=$'\t' read -r status pkg ver src; do
  [[ "$status" == ii* ]] || continue
  src=${src%% *}
  [ -n "${pin[$src]:-}" ] || continue
  have[$src]+="$pkg $ver"$'\n'
done < <(dpkg-query -W -f='${db:Status-Abbrev}\t${Package}\t${Version}\t${source:Package}\n' 2>/dev/null)

# A source installed at another patch level is left as it is, said in one line.
declare -A pinned=()  # the sources this run pins: absent, or every installed binary at the pin
for src in "${!pin[@]}"; do
  want=${pin[$src]}
  others=$(printf '%s' "${have[$src]:-}" | awk -v v="$want" 'NF && $2 != v { print $2 }' | sort -u | paste -sd/)
  if [ -z "$others" ]; then pinned[$src]=1; continue; fi
  align=$(printf '%s' "${have[$src]}" | awk -v v="$want" 'NF { printf " %s=%s", $1, v }')
  down=""
  for v in ${others//\// }; do dpkg --compare-versions "$v" gt "$want" && down=" --allow-downgrades"; done
  fetchable=""
  in_archive "$(printf '%s' "${have[$src]}" | awk 'NF { print $1; exit }')" "$want" \
    || fetchable=" (this machine's apt archive lacks $want: \`apt-get update\` first, or change $show)"
  say "$src $others is installed, $show pins $want: kept (set-up does not change an installed server), so study 03's local and container servers differ in patch level; to align: ${sudo_:+$sudo_ }apt-get install$down$align$fetchable"
done

mapfile -t wanted < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$here/scripts/apt-packages.txt" | tr -d ' ')
missing=()
for p in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  for src in "${!pinned[@]}"; do say "$src at $show's ${pin[$src]}"; done
  say "system packages present"
  exit 0
fi

say "installing ${missing[*]}"
$sudo_ env DEBIAN_FRONTEND=noninteractive apt-get update -qq

# What apt would install, each binary of a pinned source as pkg=version, until that set stops growing (pinning
# one can change which siblings the others pull in).
declare -A spec=()
for p in "${missing[@]}"; do spec[$p]=$p; done
for round in 1 2 3 4; do
  mapfile -t plan < <(apt-get install -s -qq --no-install-recommends "${spec[@]}" 2>/dev/null | awk '$1 == "Inst" { print $2 }')
  [ ${#plan[@]} -gt 0 ] || break
  grew=0
  while IFS=$'\t' read -r pkg src; do
    [ -n "${pinned[$src]:-}" ] || continue
    [ "${spec[$pkg]:-}" = "$pkg=${pin[$src]}" ] && continue
    in_archive "$pkg" "${pin[$src]}" \
      || die "$pkg ${pin[$src]} (the version $show pins for $src) is not in this machine's apt archive: change $show to a version \`apt-cache policy $pkg\` lists"
    spec[$pkg]="$pkg=${pin[$src]}"
    grew=1
  done < <(apt-cache show --no-all-versions "${plan[@]}" 2>/dev/null | awk '
    /^Package: / { p = $2; s = $2 } /^Source: / { s = $2 } /^$/ { if (p != "") print p "\t" s; p = "" }
    END { if (p != "") print p "\t" s }')
  [ $grew -eq 1 ] || break
done

# Debian's postinst scripts would start the host's own PostgreSQL/MariaDB/rsyslog services;
# the suite never uses them, so keep them from starting where we can.
policy=/usr/sbin/policy-rc.d
added_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | $sudo_ tee "$policy" >/dev/null && $sudo_ chmod +x "$policy" && added_policy=1
fi
rc=0
$sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${spec[@]}" >/dev/null || rc=$?
[ "$added_policy" -eq 1 ] && $sudo_ rm -f "$policy"
[ $rc -eq 0 ] || die "apt-get install ${spec[*]} failed (exit $rc)"

# What is installed now, for each source this run pinned: every binary at the pin.
while IFS=$'\t' read -r status pkg ver src; do
  [[ "$status" == ii* ]] || continue
  src=${src%% *}
  [ -n "${pinned[$src]:-}" ] || continue
  [ "$ver" = "${pin[$src]}" ] || die "$pkg is at $ver after the install, not $show's ${pin[$src]}"
done < <(dpkg-query -W -f='${db:Status-Abbrev}\t${Package}\t${Version}\t${source:Package}\n' 2>/dev/null)
for src in "${!pinned[@]}"; do say "$src at $show's ${pin[$src]}"; done
