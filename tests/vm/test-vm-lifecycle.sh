#!/bin/bash
# VM end-to-end scenario (issue: the Debian package in a user's hands): a Debian 12 guest without seekless
# (WORK_DIR/disk-bare.img), real systemd and apt, no network. Boot 1: `apt-get install ./seekless_V.deb`,
# reboot; boot 2: the boot was recorded, the units verify clean (systemd-analyze), then upgrade, remove,
# reinstall and purge, and after the purge the root filesystem's file list is the one of before the
# install. No failed units after any step. The checks run in the guest (lifecycle-run.sh); this script
# builds the image, makes the upgrade and boots it once (the guest reboots itself once).
# The upgrade is the same package repacked with dpkg-deb under version V+test1 (the control file's Version
# only; no second package build): dpkg and apt see a newer version and run the whole upgrade sequence
# with the package's own maintainer scripts (old prerm upgrade, new preinst, unpack over the old files, old
# postrm, new postinst configure, which restarts the daemon), and every file is unpacked anew. What it does
# not change is the programs' content, so the daemon still reports the upstream version V; the guest
# tells the new daemon from the old one by the inode of the executable it runs.
#   usage: test-vm-lifecycle.sh [WORK_DIR]   (default $SEEKLESS_VM_WORK_DIR, else /var/tmp/seekless-vm; 77 = skip)
#   env:   VM_NO_BUILD=1 reuses WORK_DIR's images and package as they are
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
W=${1:-${SEEKLESS_VM_WORK_DIR:-/var/tmp/seekless-vm}}
. "$HERE/vm-lib.sh"
vm_skip_unless_able
vm_image "$W"
D=$VM_TMP/data
mkdir "$D"
# the package the image build made, taken under its lock (another build may replace it)
flock -s "$W/.lock" sh -c 'cp "$1"/seekless_*.deb "$2/"' _ "$W/pkg" "$D"
debs=("$D"/seekless_*.deb)
[ ${#debs[@]} = 1 ] && [ -f "${debs[0]}" ] || { echo "FAIL: not one seekless_*.deb in $W/pkg"; exit 1; }
v=$(dpkg-deb -f "${debs[0]}" Version)
arch=$(dpkg-deb -f "${debs[0]}" Architecture)
nv=$v+test1
dv=${v#*:}
dv=${dv%-*}
dpkg-deb -R "${debs[0]}" "$VM_TMP/repack"
sed -i "s/^Version: .*/Version: $nv/" "$VM_TMP/repack/DEBIAN/control"
dpkg-deb --root-owner-group -b "$VM_TMP/repack" "$D/seekless_${nv}_$arch.deb" >/dev/null
[ "$(dpkg-deb -f "$D/seekless_${nv}_$arch.deb" Version)" = "$nv" ] || { echo "FAIL: repacking as $nv"; exit 1; }
echo "packages: $(cd "$D" && ls seekless_*.deb | tr '\n' ' ')"
echo "$v $nv $dv" > "$D/versions"
install -m755 "$HERE/lifecycle-run.sh" "$D/run.sh"
vm_data_disk "$D" "$VM_TMP/data.img"
# the guest without seekless: a work dir of its own whose disk.img is WORK_DIR/disk-bare.img
B=$VM_TMP/bare
mkdir "$B"
ln -s "$(realpath "$W/disk-bare.img")" "$B/disk.img"
ln -s "$(realpath "$W/kernel")" "$B/kernel"
LOG=$VM_TMP/console.log
vm_boots_verdict "$B" "$VM_TMP/data.img" "$LOG" 2 900
echo "ok: installed, rebooted and recorded, upgraded, removed, reinstalled and purged on a real systemd"
