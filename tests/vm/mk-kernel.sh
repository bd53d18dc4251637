#!/bin/bash
# Fetch the Debian kernel + busybox-static with apt-get download (nothing is installed on the host) and make
# WORK_DIR/kernel/{vmlinux,initrd.img}: the uncompressed PVH-bootable vmlinux cut out of the bzImage (skips
# the xz decompressor under TCG) and a hand-made busybox initramfs with only the modules the boot needs.
# Cached: skipped while WORK_DIR/kernel/.done matches the kernel package and this script + initrd-init.
#   usage: mk-kernel.sh WORK_DIR      (KPKG=linux-image-6.1.0-NN-amd64 pins the kernel)
set -euo pipefail
W=${1:?usage: mk-kernel.sh WORK_DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
K=$W/kernel
KPKG=${KPKG:-$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/ { print $2; exit }')}
[ -n "$KPKG" ] || { echo "mk-kernel.sh: cannot resolve linux-image-amd64 (apt-get update?)" >&2; exit 1; }
KV=${KPKG#linux-image-}
STAMP="$KPKG $(cat "$0" "$HERE/initrd-init" | md5sum | cut -d' ' -f1)"
if [ -e "$K/.done" ] && [ "$(cat "$K/.done")" = "$STAMP" ]; then
        echo "kernel: cached ($KV)"
        exit 0
fi
rm -rf "$K" && mkdir -p "$K/pkgs"
cd "$K/pkgs"
chown _apt "$K/pkgs" 2>/dev/null || true     # apt downloads as _apt (else: "Download is performed unsandboxed")
apt-get download "$KPKG" busybox-static >/dev/null
dpkg -x "$KPKG"_*.deb x
dpkg -x busybox-static_*.deb bb
BB=$PWD/bb/bin/busybox          # the host has no kmod or cpio: busybox supplies depmod and cpio
"$BB" depmod -b x "$KV"         # the .deb ships no modules.dep (its postinst makes it)
cd "$K"
# uncompressed ELF vmlinux from the bzImage's xz payload (two steps: tail | xz trips pipefail on SIGPIPE)
off=$(LC_ALL=C grep -aobUP '\xfd7zXZ\x00' "pkgs/x/boot/vmlinuz-$KV" | head -n 1 | cut -d: -f1)
tail -c +$((off + 1)) "pkgs/x/boot/vmlinuz-$KV" >vmlinux.xz
xz -dc --single-stream vmlinux.xz >vmlinux
rm vmlinux.xz
# initramfs: busybox + virtio disk/rng, ext4, 9p, autofs4 modules with their dependencies
M=pkgs/x/lib/modules/$KV
I=initrd
mkdir -p $I/{bin,dev,proc,sys,newroot} "$I/lib/modules/$KV"
cp "$BB" $I/bin/busybox
for m in virtio virtio_ring virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci virtio_blk virtio_rng \
         crc16 mbcache jbd2 crc32c_generic ext4 netfs fscache 9pnet 9pnet_virtio 9p autofs4; do
        f=$(grep -E "(^|/)${m//_/[-_]}\.ko(\.xz)?:" "$M/modules.dep" | cut -d: -f1 || true)
        [ -n "$f" ] || { echo "mk-kernel.sh: module $m not in $KV" >&2; exit 1; }
        install -D -m644 "$M/$f" "$I/lib/modules/$KV/$f"
done
cp "$M"/modules.builtin* "$I/lib/modules/$KV/"
"$BB" depmod -b "$I" "$KV"
install -m755 "$HERE/initrd-init" $I/init
(cd $I && find . | "$BB" cpio -o -H newc 2>/dev/null | gzip -1 >../initrd.img)
rm -rf pkgs $I                  # ~400 MB of unpacked modules and the .debs are not needed any more
echo "$KV" >version
echo "$STAMP" >.done
echo "kernel: $KV (vmlinux $(du -h --apparent-size vmlinux | cut -f1), initrd $(du -h initrd.img | cut -f1))"
