# Host side of the VM tests (sourced by bash scripts using set -euo pipefail). Boots the image made by
# build-image.sh under QEMU; files go in and out through a small ext4 data disk (no loop devices, no mounts).
# Everything started here is removed on exit by vm_cleanup (an EXIT trap set when this file is sourced;
# a script with its own EXIT trap must call vm_cleanup from it).
#
#   vm_skip_unless_able                exit 77 (skip) unless root with qemu, qemu-img, debootstrap, e2fsprogs
#   vm_image WORK_DIR                  build/refresh WORK_DIR/disk.img (build-image.sh; VM_NO_BUILD=1 reuses it)
#   vm_data_disk DIR IMG [SIZE]        ext4 image (label vmdata, no journal) filled from DIR; DIR/run.sh is what
#                                      the guest runs
#   vm_boot WORK_DIR DATA_IMG LOG [QEMU_ARGS...]
#                                      boot WORK_DIR/disk.img through a fresh qcow2 overlay ($VM_OVERLAY) with
#                                      DATA_IMG ("" = none) as /dev/vdb until the guest powers off; serial console
#                                      -> LOG, each line prefixed with host seconds since start. A guest reboot
#                                      restarts QEMU on the same overlay (the root disk keeps its writes);
#                                      VM_TIMEOUT bounds all of them together. Returns QEMU's status
#                                      (0 = guest powered off, 124 = timed out).
#                                      Power cuts (VM_CUT_ON): see below.
#   vm_out DATA_IMG FILE               print /FILE of a data disk (after the VM is off); 1 if it doesn't exist
#   vm_root_out FILE                   print /FILE of the last boot's root disk (overlay + base image)
#
# env: VM_TIMEOUT (s, default 300) VM_ACCEL (kvm|tcg; default kvm only with kvm_intel/kvm_amd loaded)
#      VM_MEM (MiB, 1024) VM_SMP (2) VM_APPEND (extra kernel cmdline) VM_CONSOLE=1 (also echo the console to
#      stderr) VM_KEEP=1 (keep $VM_TMP: overlays, pid files) VM_INITRD (the initramfs, default the busybox
#      one of mk-kernel.sh; WORK_DIR/initrd-guest.img is the guest's own, made by update-initramfs)
#      VM_ROOT_MODE (rw: the busybox initramfs mounts the root read-write; ro for initramfs-tools, as a
#      Debian system boots) VM_APPEND_FILE (a file of the data disk whose words go on the command line of
#      each next QEMU: a scenario's guest writes it before it reboots)
#
# Power cuts: with VM_CUT_ON=ERE, the first console line of each QEMU that matches ERE (bash =~) arms a
# SIGKILL of that QEMU VM_CUT_DELAY seconds later (a list: the k-th cut of the vm_boot takes the k-th word,
# the last word repeats; default 0). Nothing is shut down or flushed: the root disk keeps what QEMU had
# written to the overlay file, and loses what it had not (see the cache mode on the drive below). A new QEMU
# then starts on the same disks, like after a reboot; before it, `$VM_CUT_HOOK OVERLAY K` runs if set (K:
# the cut's number, from 1; it runs in vm_boot's loop, so a shell function may set VM_APPEND for the next QEMU). A line "vm_boot: power cut K: ..." in LOG marks each cut. A QEMU that ends
# before its armed cut is not cut.

VM_TMP=$(mktemp -d "${TMPDIR:-/var/tmp}/seekless-vm-run.XXXXXX")
. "$(dirname "${BASH_SOURCE[0]}")/../scratch.sh" && scratch_claim "$VM_TMP"
# a run killed with its test runner leaves its QEMUs and overlays to the guard (kept with VM_KEEP=1)
[ "${VM_KEEP:-0}" = 1 ] || scratch_guard "$VM_TMP"
VM_OVERLAY=
VM_JOB=
VM_NBOOT=0

vm_cleanup() {
        local rc=$? p
        set +e
        for p in "$VM_TMP"/qemu.*.pid; do
                [ -s "$p" ] || continue
                p=$(cat "$p")
                kill -0 "$p" 2>/dev/null && { kill "$p"; sleep 0.5; kill -9 "$p" 2>/dev/null; }
        done
        [ -n "$VM_JOB" ] && { kill "$VM_JOB" 2>/dev/null; wait "$VM_JOB" 2>/dev/null; }
        if [ "${VM_KEEP:-0}" = 1 ]; then
                echo "vm-lib: kept $VM_TMP" >&2
                touch "$VM_TMP/.keep"
        else
                rm -rf "$VM_TMP"
        fi
        return "$rc"
}
trap 'vm_cleanup' EXIT
trap 'exit 130' INT TERM HUP

VM_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

vm_skip_unless_able() { # exit 77 (meson's "skipped") without root or the tools
        local t
        [ "$(id -u)" = 0 ] || { echo "SKIP: needs root (debootstrap, chroot)"; exit 77; }
        for t in qemu-system-x86_64 qemu-img debootstrap mkfs.ext4 debugfs; do
                command -v "$t" >/dev/null || { echo "SKIP: $t not installed"; exit 77; }
        done
}

# One test script's VMs at a time on this machine, from its image's build to its exit: two TCG guests on 2
# cores would each take twice as long and run into their timeouts, and a second suite's build of the same
# WORK_DIR/disk.img would rewrite the base image under the first one's running guest (its overlay's backing
# file). Taken at the first build or boot, held until the script exits.
_vm_lock() {
        if [ -z "${VM_LOCK_FD:-}" ]; then
                exec {VM_LOCK_FD}>/var/tmp/seekless-vm-boot.lock
                flock "$VM_LOCK_FD"
        fi
}

vm_image() {            # WORK_DIR: build or refresh WORK_DIR/disk.img from $SOURCE_ROOT (VM_NO_BUILD=1 reuses it)
        _vm_lock
        if [ "${VM_NO_BUILD:-0}" != 1 ] || [ ! -e "$1/disk.img" ]; then
                "$VM_LIB_DIR/build-image.sh" "${SOURCE_ROOT:-$VM_LIB_DIR/../..}" "$1"
        fi
}

vm_data_disk() {        # DIR IMG [SIZE]
        rm -f "$2"
        # without a journal: seeklessd records reads there but never relocates on unjournaled ext4, so the
        # data disk (our scripts and results) is never moved under the harness's feet nor kept busy at umount
        mkfs.ext4 -q -F -L vmdata -O ^has_journal -d "$1" "$2" "${3:-64M}" >/dev/null
}

# TCG with one host thread for all vCPUs: with a thread per vCPU, a vCPU can go on running QEMU's stale
# translation of kernel code that another vCPU patched (a tracepoint switched on or off), which hangs the
# guest (doc/page-recording.md §6)
_vm_accel() {
        case ${VM_ACCEL:-} in
        kvm) echo "-accel kvm -cpu host" ;;
        tcg) echo "-accel tcg,thread=single" ;;
        *)      # /dev/kvm alone is not enough: kvm_pvm (nested PVM) can't run a stock kernel usefully
                if { [ -d /sys/module/kvm_intel ] || [ -d /sys/module/kvm_amd ]; } && [ -w /dev/kvm ]; then
                        echo "-accel kvm -cpu host"
                else
                        echo "-accel tcg,thread=single"
                fi ;;
        esac
}

_vm_stamp() {           # START_USEC [PIDFILE CUT_MARK CUT_DELAY]: prefix each line with the seconds since START;
                        # strip the console's CRs; with PIDFILE, arm the power cut on VM_CUT_ON (see above)
        local t0=$1 line d killer=
        while IFS= read -r line || [ -n "$line" ]; do
                d=$(( (${EPOCHREALTIME//[!0-9]/} - t0) / 10000 ))
                printf '%4d.%02d %s\n' $((d / 100)) $((d % 100)) "${line//$'\r'/}"
                [ "${VM_CONSOLE:-0}" = 1 ] && printf '%4d.%02d %s\n' $((d / 100)) $((d % 100)) "${line//$'\r'/}" >&2
                if [ -n "${2:-}" ] && [ -z "$killer" ] && [[ ${line//$'\r'/} =~ $VM_CUT_ON ]]; then
                        _vm_cut "$t0" "$2" "$3" "$4" </dev/null &
                        killer=$!
                fi
        done
        # QEMU is gone: a cut still waiting for its moment has nothing left to cut
        [ -z "$killer" ] || { kill "$killer" 2>/dev/null; wait "$killer" 2>/dev/null; }
        return 0
}

_vm_cut() {             # START_USEC PIDFILE CUT_MARK DELAY: SIGKILL the QEMU of PIDFILE DELAY seconds from now
        local pid d sp
        pid=$(cat "$2")
        sleep "$4" &
        sp=$!
        trap 'kill "$sp" 2>/dev/null; exit 0' TERM
        wait "$sp"
        kill -0 "$pid" 2>/dev/null || return 0
        d=$(( (${EPOCHREALTIME//[!0-9]/} - $1) / 10000 ))
        printf '%d.%02d %s\n' $((d / 100)) $((d % 100)) "$4" >"$3"
        kill -KILL "$pid"
        printf '%4d.%02d vm_boot: power cut %s: SIGKILL to QEMU (pid %s), %s s after the console line\n' \
                $((d / 100)) $((d % 100)) "${3##*.}" "$pid" "$4"
}

vm_boot() {             # WORK_DIR DATA_IMG LOG [QEMU_ARGS...]
        local w=$1 data=$2 log=$3 base n rc t0 d
        shift 3
        base=$(realpath "$w/disk.img")
        for f in "$base" "$w/kernel/vmlinux" "$w/kernel/initrd.img"; do
                [ -e "$f" ] || { echo "vm_boot: $f missing (run tests/vm/build-image.sh)" >&2; return 1; }
        done
        _vm_lock
        n=$((VM_NBOOT += 1))
        VM_OVERLAY=$VM_TMP/root.$n.qcow2
        qemu-img create -q -f qcow2 -b "$base" -F raw "$VM_OVERLAY"
        # cache=writeback (QEMU's default, named here for the power cuts): the guest sees a volatile write
        # cache and flushes it. On a SIGKILL of QEMU (the host stays up) a write the guest flushed is in the
        # overlay file; one completed but not flushed that allocated a new qcow2 cluster is lost (its
        # mapping lived only in QEMU), one into a cluster allocated before survives. cache=none and
        # cache=unsafe behave alike on a SIGKILL; directsync/writethrough flush every write (nothing lost).
        local drives=(-drive "file=$VM_OVERLAY,if=virtio,format=qcow2,cache=writeback")
        [ -n "$data" ] && drives+=(-drive "file=$data,if=virtio,format=raw")
        t0=${EPOCHREALTIME//[!0-9]/}
        : >"$log"
        # in the background + wait: a signal to this script runs the traps at once instead of after QEMU
        (
                set +e
                local end=$((SECONDS + ${VM_TIMEOUT:-300})) left seen qrc last cuts=0 cut_args=() delays extra
                read -r -a delays <<<"${VM_CUT_DELAY:-0}"
                # A guest reboot starts a new QEMU on the same overlay (-no-reboot makes QEMU exit on it):
                # under TCG, QEMU's own reset after "reboot: Restarting system" can hang until the
                # timeout. The kernel's last "reboot:" line of each QEMU tells a
                # reboot from a power-off; a panic (panic=-1) or a crash has none and ends the boot here.
                while :; do
                        left=$((end - SECONDS))
                        [ "$left" -gt 0 ] || { qrc=124; break; }
                        seen=$(wc -l <"$log")
                        [ -z "${VM_CUT_ON:-}" ] || cut_args=("$VM_TMP/qemu.$n.pid" "$VM_TMP/cut.$n.$((cuts + 1))"
                                "${delays[cuts < ${#delays[@]} ? cuts : ${#delays[@]} - 1]}")
                        # a scenario's next boot may ask for words of its own on the command line (a file
                        # the guest wrote on the data disk)
                        extra=
                        [ -z "${VM_APPEND_FILE:-}" ] || [ -z "$data" ] || extra=$(vm_out "$data" "$VM_APPEND_FILE" 2>/dev/null || true)
                        # shellcheck disable=SC2046
                        timeout -k 10 "$left" qemu-system-x86_64 $(_vm_accel) \
                                -m "${VM_MEM:-1024}" -smp "${VM_SMP:-2}" -no-reboot \
                                -display none -no-user-config -nodefaults -serial stdio -pidfile "$VM_TMP/qemu.$n.pid" \
                                -kernel "$w/kernel/vmlinux" -initrd "${VM_INITRD:-$w/kernel/initrd.img}" \
                                -append "root=/dev/vda ${VM_ROOT_MODE:-rw} console=ttyS0 panic=-1 systemd.getty_auto=0 vmtest.run quiet ${VM_APPEND:-} $extra" \
                                "${drives[@]}" -device virtio-rng-pci "$@" </dev/null 2>&1 |
                                _vm_stamp "$t0" "${cut_args[@]}" >>"$log"
                        qrc=${PIPESTATUS[0]}
                        if [ "$qrc" = 137 ] && [ -n "${VM_CUT_ON:-}" ] && [ -e "$VM_TMP/cut.$n.$((cuts + 1))" ]; then
                                cuts=$((cuts + 1))
                                echo "vm_boot: power cut $cuts: new QEMU on the same root disk" >>"$log"
                                [ -z "${VM_CUT_HOOK:-}" ] || $VM_CUT_HOOK "$VM_OVERLAY" "$cuts"
                                continue
                        fi
                        [ "$qrc" = 0 ] || break
                        last=$(tail -n +$((seen + 1)) "$log" | grep -a 'reboot: ' | tail -n 1)
                        [[ "$last" == *"reboot: Restarting system"* ]] || break
                        echo "vm_boot: the guest rebooted: new QEMU on the same root disk" >>"$log"
                done
                echo "$qrc" >"$VM_TMP/qemu.$n.rc"
        ) &
        VM_JOB=$!
        wait "$VM_JOB" || true
        VM_JOB=
        rc=$(cat "$VM_TMP/qemu.$n.rc" 2>/dev/null || echo 255)
        d=$(( (${EPOCHREALTIME//[!0-9]/} - t0) / 10000 ))
        printf 'vm_boot: qemu exit %s after %d.%02ds\n' "$rc" $((d / 100)) $((d % 100)) >>"$log"
        return "$rc"
}

vm_out() {              # DATA_IMG FILE
        local err
        err=$(debugfs -R "stat /${2#/}" "$1" 2>&1 >/dev/null | grep -v '^debugfs ') || true
        [ -z "$err" ] || { echo "vm_out: /${2#/} not on $1: $err" >&2; return 1; }
        debugfs -R "cat /${2#/}" "$1" 2>/dev/null
}

vm_boots_verdict() {    # WORK_DIR DATA_IMG LOG BOOTS TIMEOUT: boot, print the guest's lines, exit 1 on any failure
        local rc=0 boots guest_rc
        VM_TIMEOUT=${VM_TIMEOUT:-$5} vm_boot "$1" "$2" "$3" || rc=$?
        echo "---- guest (all boots) ----"
        sed -n 's/^ *\([0-9.]*\) \(GUEST: \|VMTEST: \)/\1 \2/p' "$3"
        if [ "$rc" != 0 ]; then
                echo "---- serial console (last 60 lines) ----"; tail -n 60 "$3"
                echo "FAIL: qemu exited $rc (124 = the guest did not power off in time)"; exit 1
        fi
        boots=$(vm_out "$2" bootcount) || { echo "FAIL: run.sh never ran in the guest"; exit 1; }
        guest_rc=$(vm_out "$2" rc)
        # the guest's FAIL line repeated last, so that a log cut short still shows it
        [ "$guest_rc" = 0 ] || {
                echo "FAIL: the guest's checks failed in boot $boots (exit $guest_rc):" \
                        "$(sed -n 's/^.*GUEST: \(FAIL.*\)$/\1/p' "$3" | head -n 3 | tr -d '\r')"
                exit 1
        }
        [ "$boots" = "$4" ] || { echo "FAIL: expected $4 boots, the guest ran $boots"; exit 1; }
}

vm_root_out() {         # FILE   (the root disk of the last vm_boot, after it ended)
        [ -n "$VM_OVERLAY" ] || { echo "vm_root_out: no boot yet" >&2; return 1; }
        local raw=$VM_TMP/root-flat.img rc=0
        qemu-img convert -O raw "$VM_OVERLAY" "$raw"
        vm_out "$raw" "$1" || rc=$?
        rm -f "$raw"
        return "$rc"
}
