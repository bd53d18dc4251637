#!/bin/bash
# Guest side of test-vm-initramfs.sh (run.sh on the data disk, in /mnt/vmtest after each boot). The guest
# boots the initramfs update-initramfs made in its image, with the package's hook in it, its root mounted
# read-only there as a Debian system's is:
#   boot 1: the stage ran (its status, the kernel log) and found no database yet; the boot is recorded; an
#           optimize leaves the programs that run (PID 1's systemd, journald, udevd, ...) queued; their
#           checksums and first blocks are kept; reboot.
#   boot 2: (its first try is cut by the host as the stage remounts the root read-write; the initramfs checks
#           the root at the next try) the stage moved them before PID 1 ran (its status, its log, FIEMAP: each moved file's
#           first block changed, and they lie in the order they were moved), every checksum matches,
#           seeklessctl status shows it, no failed unit; the next boot gets seekless.initramfs=no; reboot.
#   boot 3: the stage was off (status, kernel log), nothing read ahead, no failed unit; then, seeklessd
#           stopped, its database is overwritten with random bytes; reboot.
#   boot 4: the stage skipped the corrupt database, the boot is fine, seeklessd moved it aside and runs.
# Prints "ok: ..." per check; the first failure prints "FAIL: ..." and exits 1 (the VM then powers off).
set -uo pipefail
cd "$(dirname "$0")"
PATH=/usr/sbin:/usr/bin:/sbin:/bin
n=$(( $(cat bootcount 2>/dev/null || echo 0) + 1 ))
echo "$n" > bootcount
echo "== boot $n ($(cut -d' ' -f1 /proc/uptime) s since boot; $(cat /proc/cmdline))"

fail() { dmesg | grep seekless | tail -n 30; echo "FAIL (boot $n): $*"; exit 1; }
ok() { echo "ok: $*"; }
wait_for() {            # SECONDS CMD...
        local i
        for ((i = 0; i < $1; i += 2)); do "${@:2}" && return 0; sleep 2; done
        return 1
}
st() { sed -n "s/^$1=//p" /run/seekless/initramfs.status; }
# the stage's lines in the kernel log, as the journal took them over (journald parses the identifier out)
kmsg() { journalctl -k -b --no-pager -o cat -t seekless-initramfs; }
stage_log() { cat /run/seekless/initramfs.log; }
boot_stored_this_boot() { journalctl -b --no-pager -o cat -u seeklessd | grep -q "Recorded boot session"; }
first_block() { filefrag -v "$1" | awk '/^ *0:/ { sub(/\.\..*/, "", $4); print $4 }'; }
no_failed_units() {
        local f
        f=$(systemctl --failed --no-legend --plain)
        [ -z "$f" ] || fail "failed units: $f"
        ok "no failed units"
}

[ -e /run/seekless/initramfs.status ] || fail "no /run/seekless/initramfs.status: the stage did not run"
echo "status: $(tr '\n' ';' < /run/seekless/initramfs.status)"
kmsg | sed 's/^/  kmsg: /'
stage_log | sed 's/^/  initramfs.log: /'
no_failed_units

case $n in
1)
        [ "$(st OUTCOME)" = skipped ] && st SUMMARY | grep -q "no database" || fail "boot 1: $(st OUTCOME): $(st SUMMARY)"
        kmsg | grep -q "no database" || fail "the kernel log does not say so"
        ok "the stage ran from the guest's own initramfs: '$(st SUMMARY)'"
        wait_for 300 boot_stored_this_boot || fail "boot 1 not recorded"
        seeklessctl --json=short optimize > opt.json || fail "optimize failed: $(cat opt.json)"
        jq -r '.skipped[] | select(.reason | test("running executable")) | .path' opt.json | grep '^/usr/' |
                sort -u > queued.txt
        grep -qx /usr/lib/systemd/systemd queued.txt || fail "PID 1 not queued: $(cat queued.txt)"
        while read -r f; do echo "$(sha256sum < "$f" | cut -d' ' -f1) $f"; done < queued.txt > sums.txt
        while read -r f; do echo "$(first_block "$f") $f"; done < queued.txt > blocks.txt
        ok "the optimize left $(wc -l < queued.txt) running programs queued: $(tr '\n' ' ' < queued.txt)"
        # the stage's notices on the console next boot: the host cuts the power as the root goes read-write
        echo loglevel=6 > next-append
        touch reboot-requested
        ;;
2)
        # the boot after the power cut (test-vm-initramfs.sh cut the first try of this boot as the stage
        # remounted the root read-write): the initramfs checked the root, the stage ran its pass again
        [ "$(st EARLY_OUTCOME)" = moved ] || fail "early pass: $(st EARLY_OUTCOME): $(st EARLY_SUMMARY)"
        if stage_log | grep -q "earlier pass(es) did not finish"; then
                ok "the pass the power cut stopped was taken over: '$(stage_log | grep -o 'early pass: [0-9]* earlier pass.*' | head -n 1)'"
        else
                ok "the power cut came before the pass recorded its run: its queue was whole"
        fi
        stage_log | grep -q "early pass: /usr/lib/systemd/systemd: moved" || fail "PID 1's program not moved"
        moved=0 prev=-1 order=ascending
        # the stage's log has them in the order they were moved: one donor, laid out in that order
        while read -r f; do
                was=$(awk -v f="$f" '$2 == f { print $1 }' blocks.txt)
                now=$(first_block "$f")
                [ "$now" != "$was" ] || fail "$f: the stage says moved, its first block is still $was"
                [ "$now" -gt "$prev" ] || order="not ascending ($f at $now after $prev)"
                prev=$now
                moved=$((moved + 1))
        done < <(stage_log | sed -n 's/.*early pass: \(\/[^:]*\): moved.*/\1/p' | awk '!seen[$0]++')   # a line per hot range
        [ "$moved" = "$(st EARLY_MOVED)" ] || fail "the log names $moved moved files, the status $(st EARLY_MOVED)"
        [ "$order" = ascending ] || fail "the moved files are $order"
        ok "the stage moved $moved of $(wc -l < queued.txt) queued files before PID 1 ran, in ascending order on the disk: '$(st EARLY_SUMMARY)'"
        sync; echo 3 > /proc/sys/vm/drop_caches
        while read -r sum f; do
                [ "$(sha256sum < "$f" | cut -d' ' -f1)" = "$sum" ] || fail "$f: content changed"
        done < sums.txt
        ok "every queued file's content unchanged"
        seeklessctl status > status.txt || fail "seeklessctl status"
        grep -q "Early pass: moved" status.txt || fail "seeklessctl status: $(cat status.txt)"
        ok "seeklessctl status: $(grep -E 'Initramfs:|Early pass:' status.txt | sed 's/^ *//' | tr '\n' ' ')"
        findmnt -no OPTIONS / | grep -q "^rw" || fail "root: $(findmnt -no OPTIONS /)"
        echo seekless.initramfs=no > next-append
        touch reboot-requested
        ;;
3)
        [ "$(st OUTCOME)" = off ] && [ "$(st PREFETCH_BYTES)" = 0 ] || fail "not off: $(st OUTCOME): $(st SUMMARY)"
        kmsg | grep -q "switched off on the kernel command line" || fail "the kernel log does not say so"
        ok "seekless.initramfs=no: '$(st SUMMARY)'"
        systemctl stop seeklessd
        head -c 65536 /dev/urandom > /var/lib/seekless/seekless.db
        rm -f /var/lib/seekless/seekless.db-wal /var/lib/seekless/seekless.db-shm
        sync
        : > next-append
        touch reboot-requested
        ;;
4)
        [ "$(st OUTCOME)" = skipped ] && st SUMMARY | grep -q corrupt || fail "corrupt: $(st OUTCOME): $(st SUMMARY)"
        ok "a corrupt database: '$(st SUMMARY)'"
        wait_for 60 systemctl is-active -q seeklessd || fail "seeklessd not running"
        ls /var/lib/seekless/seekless.db.corrupt-* >/dev/null 2>&1 || fail "the corrupt database was not moved aside"
        ok "seeklessd runs, the corrupt database moved aside"
        ;;
esac
