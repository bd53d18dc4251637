#!/bin/bash
# Make a copy of the base rootfs bootable headless for tests: fstab, hostname, fixed machine-id, passwordless
# root on the serial console, the test harness (guest/vmtest-harness{,.service}, enabled), and no apt
# package lists: the guest has no network, apt installs a local .deb from dpkg's status alone (and does
# not spend emulated seconds reading the archive's index on every run).
#   usage: prep-rootfs.sh ROOTFS
set -euo pipefail
R=${1:?usage: prep-rootfs.sh ROOTFS}
HERE=$(cd "$(dirname "$0")" && pwd)
echo '/dev/vda / ext4 rw,errors=remount-ro 0 1' >"$R/etc/fstab"
echo seekless-vm >"$R/etc/hostname"
printf '127.0.0.1 localhost\n127.0.1.1 seekless-vm\n' >"$R/etc/hosts"
echo 0123456789abcdef0123456789abcdef >"$R/etc/machine-id"     # fixed: reproducible journals and paths
sed -i 's/^root:[^:]*:/root::/' "$R/etc/shadow"
find "$R/var/lib/apt/lists" -maxdepth 1 -type f -delete
# the guest's apt operations do not rebuild its initramfs (vm-lifecycle makes five, each a rebuild of
# many emulated seconds); install-guest.sh turns it back on for the package's own install, whose
# initramfs test-vm-initramfs.sh boots
sed -i 's/^update_initramfs=.*/update_initramfs=no/' "$R/etc/initramfs-tools/update-initramfs.conf"
install -D -m755 "$HERE/guest/vmtest-harness" "$R/usr/local/sbin/vmtest-harness"
install -D -m644 "$HERE/guest/vmtest-harness.service" "$R/etc/systemd/system/vmtest-harness.service"
mkdir -p "$R/etc/systemd/system/multi-user.target.wants"
ln -sfn /etc/systemd/system/vmtest-harness.service \
        "$R/etc/systemd/system/multi-user.target.wants/vmtest-harness.service"
