#!/bin/bash
# VM end-to-end scenario (issue: unattended operation): three boots of a Debian 12 guest with real systemd,
# seekless installed packager-style. Boot 1 records the boot (seeklessd up before dbus.service), then the
# boot profile's files are scattered in place; boot 2 lets the idle policy optimize by itself; boot 3 checks
# placement with filefrag, checksums, the daemon's state and the early-boot pass. The checks run in the
# guest (boots-run.sh); this script builds the image, boots it once (the guest reboots itself twice) and
# prints what the guest said.
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
rc=0
VM_TIMEOUT=${VM_TIMEOUT:-1500} vm_boot "$W" "$VM_TMP/data.img" "$LOG" || rc=$?
echo "---- guest (all boots) ----"
sed -n 's/^ *\([0-9.]*\) \(GUEST: \|VMTEST: \)/\1 \2/p' "$LOG"
if [ "$rc" != 0 ]; then
        echo "---- serial console (last 60 lines) ----"; tail -n 60 "$LOG"
        echo "FAIL: qemu exited $rc (124 = the guest did not power off in time)"; exit 1
fi
boots=$(vm_out "$VM_TMP/data.img" bootcount) || { echo "FAIL: run.sh never ran in the guest"; exit 1; }
guest_rc=$(vm_out "$VM_TMP/data.img" rc)
[ "$guest_rc" = 0 ] || {
        echo "FAIL: the guest's checks failed in boot $boots (exit $guest_rc):" \
                "$(sed -n 's/^.*GUEST: \(FAIL.*\)$/\1/p' "$LOG" | head -n 3 | tr -d '\r')"
        exit 1
}
[ "$boots" = 3 ] || { echo "FAIL: expected 3 boots, the guest ran $boots"; exit 1; }
echo "ok: three real boots: recorded, optimized by the idle policy, verified in the guest"
