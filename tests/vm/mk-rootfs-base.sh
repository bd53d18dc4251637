#!/bin/bash
# Debootstrap the guest's base rootfs once into WORK_DIR/rootfs-base (cached: re-runs skip debootstrap while
# WORK_DIR/rootfs-base/.done matches the suite and package list). Builds copy it; it is never modified.
#   usage: mk-rootfs-base.sh WORK_DIR      (root, debootstrap, network to the host's apt mirror)
set -euo pipefail
W=${1:?usage: mk-rootfs-base.sh WORK_DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
SUITE=bookworm
# seeklessd links libsystemd, libsqlite3, libm, libcap and (the BPF recorder) libbpf; the rest is a systemd
# + dbus boot with e2fsprogs (filefrag, e4defrag for the checks and bench/boot) and jq (the scenarios read
# seeklessctl --json). The package is installed from a local file with no network: what it depends on must
# be here.
PKGS=systemd,systemd-sysv,dbus,udev,e2fsprogs,libsqlite3-0,libcap2,libbpf1,jq${EXTRA_PKGS:+,$EXTRA_PKGS}
STAMP="$SUITE $PKGS"
B=$W/rootfs-base
if [ -e "$B/.done" ] && [ "$(cat "$B/.done")" = "$STAMP" ]; then
        echo "rootfs-base: cached ($B)"
        exit 0
fi
MIRROR=${MIRROR:-$("$HERE/apt-mirror.sh" "$SUITE")}
mkdir -p "$W"
rm -rf "$B" "$B.tmp"
echo "rootfs-base: debootstrap --variant=minbase $SUITE from $MIRROR (log: $W/debootstrap.log)"
if ! debootstrap --variant=minbase --include="$PKGS" "$SUITE" "$B.tmp" "$MIRROR" >"$W/debootstrap.log" 2>&1; then
        tail -n 20 "$W/debootstrap.log" >&2
        exit 1
fi
rm -f "$B.tmp"/var/cache/apt/archives/*.deb
mv "$B.tmp" "$B"
echo "$STAMP" >"$B/.done"
