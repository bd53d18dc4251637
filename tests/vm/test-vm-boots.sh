#!/bin/bash
# VM end-to-end scenario (issue: unattended operation): four boots of a Debian 12 guest with real systemd,
# seekless installed packager-style. Boot 1 records the boot (seeklessd up before dbus.service), then the
# boot profile's files are scattered in place; boot 2 prefetches the boot profile and lets the idle policy
# optimize by itself; boot 3 checks placement with filefrag, checksums, the daemon's state and the
# early-boot pass, and that a replaced file is stale for the prefetch; boot 4 comes up with a corrupt
# database. The checks run in the guest (boots-run.sh); this script builds the image, boots it once (the
# guest reboots itself three times) and prints what the guest said.
#   usage: test-vm-boots.sh [WORK_DIR]   (default $SEEKLESS_VM_WORK_DIR, else /var/tmp/seekless-vm; 77 = skip)
#   env:   VM_NO_BUILD=1 reuses WORK_DIR/disk.img; SCATTER = the scatter helper (set by meson)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
W=${1:-${SEEKLESS_VM_WORK_DIR:-/var/tmp/seekless-vm}}
: "${SCATTER:?run through meson test (SCATTER is the tests/scatter helper)}"
. "$HERE/vm-lib.sh"
vm_skip_unless_able
vm_image "$W"
D=$VM_TMP/data
mkdir "$D"
install -m755 "$HERE/boots-run.sh" "$D/run.sh"
install -m755 "$SCATTER" "$D/scatter"
install -m644 "$HERE/vmtest.conf" "$D/vmtest.conf"
vm_data_disk "$D" "$VM_TMP/data.img"
LOG=$VM_TMP/console.log
vm_boots_verdict "$W" "$VM_TMP/data.img" "$LOG" 4 1500
echo "ok: four real boots: recorded, prefetched, optimized by the idle policy, verified in the guest, a corrupt database survived"
