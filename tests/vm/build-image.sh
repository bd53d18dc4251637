#!/bin/bash
# Build the seekless test VM in WORK_DIR: a Debian 12 rootfs (cached debootstrap) with the test harness, as a
# 2 GiB ext4 root image made without loop mounts twice: without seekless (WORK_DIR/disk-bare.img) and with
# the project's Debian package installed by apt (WORK_DIR/disk.img; the package, built once per state of
# the sources by tools/build-deb.sh, is kept in WORK_DIR/pkg), and a PVH vmlinux + busybox initramfs
# (cached). Prints the time of each step.
#   usage: build-image.sh [SOURCE_ROOT [WORK_DIR]]   (defaults: this checkout, /var/tmp/seekless-vm)
#   env:   EXTRA_PKGS=a,b (more guest packages)  KPKG=linux-image-... (pin the kernel)  DISK_SIZE=2G
# Needs root, debootstrap, e2fsprogs, dpkg-buildpackage and network to the host's apt mirror (first run only).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
S=$(realpath "${1:-$HERE/../..}")
W=${2:-/var/tmp/seekless-vm}
mkdir -p "$W"
W=$(realpath "$W")
exec 9>"$W/.lock"
flock 9                         # one build per WORK_DIR at a time

usec() { echo "${EPOCHREALTIME//[!0-9]/}"; }
since() { local d=$((($(usec) - $1) / 100000)); echo "$((d / 10)).$((d % 10))s"; }
t_all=$(usec)
step() {                        # step NAME CMD...: run CMD, print how long it took
        local t name=$1
        t=$(usec)
        shift
        "$@"
        printf '== %-14s %7s\n' "$name" "$(since "$t")"
}
R=$W/rootfs
step rootfs-base "$HERE/mk-rootfs-base.sh" "$W"
step kernel      "$HERE/mk-kernel.sh" "$W"
step package     bash -c 'rm -rf "$3" && "$1" "$2" "$4" "$3"' _ "$HERE/../../tools/build-deb.sh" "$S" "$W/pkg" "$W/deb"
step copy-rootfs bash -c 'rm -rf "$1" && cp -a "$2" "$1" && rm -f "$1/.done"' _ "$R" "$W/rootfs-base"
step prep-rootfs "$HERE/prep-rootfs.sh" "$R"
# mkfs.ext4 -d fills the image from the directory (no loop device, no mount); mv keeps running VMs' base intact
mkfs_root() { mkfs.ext4 -q -F -L vmroot -d "$1" "$2.tmp" "${DISK_SIZE:-2G}" >/dev/null && mv "$2.tmp" "$2"; }
step mkfs-bare   mkfs_root "$R" "$W/disk-bare.img"
step install     "$HERE/install-guest.sh" "$W/pkg" "$R"
step mkfs        mkfs_root "$R" "$W/disk.img"
# the initramfs update-initramfs made in it, with the package's hook (booted by test-vm-initramfs.sh)
cp "$R/boot/initrd.img-$(cat "$W/kernel/version")" "$W/initrd-guest.img"
printf '== %-14s %7s\n' total "$(since "$t_all")"
echo "image: $W/disk.img ($(du -h "$W/disk.img" | cut -f1) used), kernel $(cat "$W/kernel/version")"
