#!/bin/sh
# Runs inside `unshare --mount --propagation private`: gives the server a /dev of
# its own whose `log` points at the study's private syslog socket, so syslog(3)
# from the server never reaches the host's /dev/log or the host's syslog daemon.
# Usage: private_dev.sh NEWDEV SOCKET UID GID -- COMMAND...
set -eu
newdev=$1 sock=$2 uid=$3 gid=$4
shift 4
[ "$1" = "--" ] && shift
mount -t tmpfs -o mode=0755,size=64k logbench-dev "$newdev"
for n in null zero full random urandom tty; do
    if [ -e "/dev/$n" ]; then
        : > "$newdev/$n"
        mount --bind "/dev/$n" "$newdev/$n"
    fi
done
mkdir "$newdev/shm"
mount --rbind /dev/shm "$newdev/shm"
ln -s /proc/self/fd "$newdev/fd"
ln -s /proc/self/fd/0 "$newdev/stdin"
ln -s /proc/self/fd/1 "$newdev/stdout"
ln -s /proc/self/fd/2 "$newdev/stderr"
ln -s "$sock" "$newdev/log"
mount --move "$newdev" /dev
# The parent-death signal set before exec does not survive setpriv's change of
# credentials, so setpriv sets it again.
exec setpriv --reuid="$uid" --regid="$gid" --clear-groups --pdeathsig SIGQUIT -- "$@"
