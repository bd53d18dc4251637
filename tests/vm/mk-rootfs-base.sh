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
# initramfs-tools, kmod, linux-base and the kernel (the one mk-kernel.sh boots, from the host's apt sources:
# it may be a security update that debootstrap's suite does not have) give the guest an initramfs made by
# update-initramfs, with the package's hook in it (the initramfs stage, test-vm-initramfs.sh); it is built
# with the modules the VM needs only (MODULES=list) and, as on a machine where initramfs-tools can probe the
# root device (it cannot in a chroot), e2fsck for the root filesystem (FSTYPE=ext4): the initramfs checks
# the root before it mounts it, as a Debian system's does.
PKGS=systemd,systemd-sysv,dbus,udev,e2fsprogs,libsqlite3-0,libcap2,libbpf1,jq,initramfs-tools,kmod,linux-base${EXTRA_PKGS:+,$EXTRA_PKGS}
KPKG=${KPKG:-$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/ { print $2; exit }')}
[ -n "$KPKG" ] || { echo "mk-rootfs-base.sh: cannot resolve linux-image-amd64 (apt-get update?)" >&2; exit 1; }
STAMP="$SUITE $PKGS $KPKG $(md5sum <"$0" | cut -d' ' -f1)"
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
# the kernel, as a user has it: its package's scripts run depmod and update-initramfs
printf 'MODULES=list\nFSTYPE=ext4\n' >"$B.tmp/etc/initramfs-tools/conf.d/vmtest"
printf '%s\n' virtio_pci virtio_blk virtio_rng crc32c_generic ext4 >>"$B.tmp/etc/initramfs-tools/modules"
K=$(mktemp -d "$W/kpkg.XXXXXX")
chown _apt "$K" 2>/dev/null || true     # apt downloads as _apt
(cd "$K" && apt-get download "$KPKG" >/dev/null)
cp "$K"/"$KPKG"_*.deb "$B.tmp/tmp/kernel.deb"
rm -rf "$K"
mount -t proc proc "$B.tmp/proc"
rc=0
chroot "$B.tmp" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin dpkg -i /tmp/kernel.deb >"$W/kernel-install.log" 2>&1 || rc=$?
umount "$B.tmp/proc"
rm -f "$B.tmp/tmp/kernel.deb"
[ "$rc" = 0 ] && [ -e "$B.tmp/boot/initrd.img-${KPKG#linux-image-}" ] ||
        { tail -n 20 "$W/kernel-install.log" >&2; echo "mk-rootfs-base.sh: the kernel did not install" >&2; exit 1; }
rm -f "$B.tmp"/var/cache/apt/archives/*.deb
mv "$B.tmp" "$B"
echo "$STAMP" >"$B/.done"
