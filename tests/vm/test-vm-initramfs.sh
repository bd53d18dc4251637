#!/bin/bash
# VM acceptance of the initramfs stage (issue 36): a Debian 12 guest with real systemd booted from the
# initramfs update-initramfs made in its image after the package was installed (its trigger; the hook put
# the stage in), the root mounted read-only there as a Debian system's is. Four boots (initramfs-run.sh):
# no database yet, an optimize leaves the programs that run queued; the next boot's first try loses its
# power while the stage has the root read-write, the next try's stage moves the queue before PID 1 runs
# (FIEMAP, checksums, status, its log and the kernel's); seekless.initramfs=no on the command line; a
# corrupt database. Then, from the host, e2fsck -fn of the root disk.
#   usage: test-vm-initramfs.sh [WORK_DIR]   (default $SEEKLESS_VM_WORK_DIR, else /var/tmp/seekless-vm; 77 = skip)
#   env:   VM_NO_BUILD=1 reuses WORK_DIR/disk.img
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
W=${1:-${SEEKLESS_VM_WORK_DIR:-/var/tmp/seekless-vm}}
. "$HERE/vm-lib.sh"
vm_skip_unless_able
vm_image "$W"
[ -s "$W/initrd-guest.img" ] || { echo "FAIL: no $W/initrd-guest.img (build-image.sh)"; exit 1; }
D=$VM_TMP/data
mkdir "$D"
install -m755 "$HERE/initramfs-run.sh" "$D/run.sh"
vm_data_disk "$D" "$VM_TMP/data.img"
LOG=$VM_TMP/console.log
# the power cut: boot 2's first try is killed as soon as the stage says it remounted the root read-write
# (a notice on the console: the guest asked for loglevel=6 for that boot); then the next try boots without it
after_cut() {           # OVERLAY K
        local raw=$VM_TMP/cut.raw empty=$VM_TMP/empty
        qemu-img convert -O raw "$1" "$raw"
        dumpe2fs -h "$raw" 2>/dev/null | grep -q needs_recovery && echo "needs_recovery" > "$VM_TMP/cut-state" ||
                echo "clean" > "$VM_TMP/cut-state"
        rm -f "$raw"
        : > "$empty"
        debugfs -w -R "rm next-append" "$VM_TMP/data.img" >/dev/null 2>&1
        debugfs -w -R "write $empty next-append" "$VM_TMP/data.img" >/dev/null 2>&1
}
VM_INITRD=$W/initrd-guest.img VM_ROOT_MODE=ro VM_APPEND_FILE=next-append \
        VM_CUT_ON='seekless-initramfs: early pass: .* remounted read-write' VM_CUT_DELAY=0 VM_CUT_HOOK=after_cut \
        vm_boots_verdict "$W" "$VM_TMP/data.img" "$LOG" 4 1500
grep -q "vm_boot: power cut 1" "$LOG" || { echo "FAIL: no power cut during the stage's early pass"; exit 1; }
! grep -q "vm_boot: power cut 2" "$LOG" || { echo "FAIL: more than one power cut"; exit 1; }
[ "$(cat "$VM_TMP/cut-state")" = needs_recovery ] ||
        { echo "FAIL: the root was not read-write (needs_recovery) at the cut: $(cat "$VM_TMP/cut-state")"; exit 1; }
echo "ok: one power cut while the stage had the root read-write (needs_recovery on the disk at the cut)"
# the root disk as the last boot left it, checked from the host
raw=$VM_TMP/root.raw
qemu-img convert -O raw "$VM_OVERLAY" "$raw"
e2fsck -fn "$raw" > "$VM_TMP/fsck.out" 2>&1 || { cat "$VM_TMP/fsck.out"; echo "FAIL: e2fsck -fn of the root disk"; exit 1; }
rm -f "$raw"
echo "ok: e2fsck -fn of the root disk: clean"
echo "ok: four boots from the guest's own initramfs: the stage ran, moved PID 1's queued files before it ran after a power cut, was switched off, skipped a corrupt database"
