#!/bin/bash
# Turn a fresh `debootstrap --variant=minbase bookworm` tree into the rootfs of
# logbench/debian:bookworm (what the official debian image does to its tree).
# Usage: prepare-rootfs.sh ROOTFS SOURCES_FILE
#   SOURCES_FILE: the apt sources the image will use (deb822 *.sources or
#   one-line *.list), taken from the host by scripts/setup_docker.sh so that the
#   image reaches the same Debian mirror the host does.
set -euo pipefail
root=${1:?rootfs dir}
sources=${2:?apt sources file}
[ -x "$root/bin/bash" ] || { echo "prepare-rootfs: $root is not a rootfs" >&2; exit 1; }

# apt sources: exactly the host's Debian ones
rm -f "$root/etc/apt/sources.list"
rm -f "$root"/etc/apt/sources.list.d/*
case "$sources" in
  *.sources) install -m 0644 "$sources" "$root/etc/apt/sources.list.d/debian.sources" ;;
  *)         install -m 0644 "$sources" "$root/etc/apt/sources.list" ;;
esac

# no daemons started by package scripts while building images
cat >"$root/usr/sbin/policy-rc.d" <<'EOF'
#!/bin/sh
exit 101
EOF
chmod 0755 "$root/usr/sbin/policy-rc.d"

# keep images small: no docs/man pages/translations, no recommends
mkdir -p "$root/etc/dpkg/dpkg.cfg.d" "$root/etc/apt/apt.conf.d"
cat >"$root/etc/dpkg/dpkg.cfg.d/logbench-nodoc" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
EOF
cat >"$root/etc/apt/apt.conf.d/logbench-docker" <<'EOF'
APT::Install-Recommends "false";
APT::Install-Suggests "false";
Acquire::Languages "none";
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF

# drop what debootstrap downloaded and what a container does not need
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/cache/apt/*.bin \
       "$root"/var/lib/apt/lists/* "$root"/var/log/*.log "$root"/var/log/apt/* \
       "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* \
       "$root"/tmp/* "$root"/var/tmp/*
find "$root/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name locale.alias -exec rm -rf {} + 2>/dev/null || true
mkdir -p "$root/var/lib/apt/lists/partial"

# the container's own files are provided by docker at run time
: >"$root/etc/hostname"
: >"$root/etc/resolv.conf"
rm -f "$root/etc/machine-id" && : >"$root/etc/machine-id"
