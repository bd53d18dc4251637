#!/bin/bash
# VM smoke test: build (or refresh) the test VM, boot it once under QEMU with a real systemd PID 1 and check
# that seeklessd.service is active after the boot. Prints the guest's report (smoke-run.sh) and the console.
#   usage: test-vm-smoke.sh [WORK_DIR]     (default /var/tmp/seekless-vm; exits 77 = skip without root/qemu)
#   env:   VM_NO_BUILD=1 reuses WORK_DIR/disk.img as it is; see vm-lib.sh for VM_* boot settings
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
W=${1:-/var/tmp/seekless-vm}
. "$HERE/vm-lib.sh"
vm_skip_unless_able
vm_image "$W"
mkdir "$VM_TMP/data"
install -m755 "$HERE/smoke-run.sh" "$VM_TMP/data/run.sh"
vm_data_disk "$VM_TMP/data" "$VM_TMP/data.img"
LOG=$VM_TMP/console.log
rc=0
VM_TIMEOUT=${VM_TIMEOUT:-180} vm_boot "$W" "$VM_TMP/data.img" "$LOG" || rc=$?
echo "---- serial console ----"
cat "$LOG"
echo "---- guest report (run.sh) ----"
vm_out "$VM_TMP/data.img" out.log || true
echo "----"
[ "$rc" = 0 ] || { echo "FAIL: qemu exited $rc (124 = the guest did not power off in time)"; exit 1; }
guest_rc=$(vm_out "$VM_TMP/data.img" rc) || { echo "FAIL: run.sh did not run in the guest"; exit 1; }
[ "$guest_rc" = 0 ] || { echo "FAIL: run.sh exited $guest_rc"; exit 1; }
active=$(vm_out "$VM_TMP/data.img" active)
[ "$active" = active ] || { echo "FAIL: seeklessd.service is '$active' after the boot"; exit 1; }
echo "ok: seeklessd.service is active after a real systemd boot"
failed=$(vm_out "$VM_TMP/data.img" failed)
[ -z "$failed" ] || { echo "FAIL: failed units: $failed"; exit 1; }
echo "ok: no failed units"
verify=$(vm_out "$VM_TMP/data.img" verify)
[ "$verify" = 0 ] || { echo "FAIL: systemd-analyze verify (--man=no; the guest has no man pages): $verify"; exit 1; }
echo "ok: systemd-analyze verify is clean"
echo "systemd-analyze security seeklessd.service: exposure $(vm_out "$VM_TMP/data.img" exposure)"
