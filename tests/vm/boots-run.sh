#!/bin/bash
# Guest side of test-vm-boots.sh (run.sh on the data disk; runs in /mnt/vmtest after each boot, keeps its own
# boot counter and state there). Four boots of a real systemd system with seekless installed from the
# package layout:
#   boot 1: seeklessd started before dbus.service, recording with BPF (the default, Recorder=auto), the
#           boot profile is recorded (systemd's StartupFinished ends the window) and opens with what the
#           boot collector (generator) saw, unit files included, and holds metadata of /, the collector has
#           stopped, no failed units; then the profile's files are checksummed and scattered on disk in
#           place (scatter: MOVE_EXT into fragmented donors), a test config with short idle thresholds is
#           dropped in, reboot.
#   boot 2: the boot profile, metadata included, is prefetched as seeklessd starts, queued before
#           sysinit.target; the idle policy starts a run by itself and it finishes; running executables
#           are skipped and queued for the early-boot pass; a file of the profile is replaced by a copy;
#           reboot.
#   boot 3: the prefetch skips the replaced file as stale; the hot ranges of the files the run moved lie
#           back to back in the order it laid them out (GetProfileRanges; filefrag, independent of the
#           daemon), every checksum matches, the daemon's state survived, a file skipped as a running
#           executable was moved by seekless-early.service, no failed units; then, seeklessd stopped, its
#           database is overwritten with random bytes; reboot.
#   boot 4: no failed units, seeklessd runs, the corrupt database moved aside, seeklessctl answers.
# Prints "ok: ..." per check; the first failure prints "FAIL: ..." and exits 1 (the VM then powers off).
set -uo pipefail
cd "$(dirname "$0")"
PATH=/usr/sbin:/usr/bin:/sbin:/bin
n=$(( $(cat bootcount 2>/dev/null || echo 0) + 1 ))
echo "$n" > bootcount
echo "== boot $n ($(cut -d' ' -f1 /proc/uptime) s since boot)"

# the FAIL line comes last, so that it sits next to the host's summary in a log cut short
fail() { journalctl -b --no-pager -u seeklessd -u seekless-early | tail -n 40; echo "FAIL (boot $n): $*"; exit 1; }
ok() { echo "ok: $*"; }
wait_for() {            # SECONDS CMD...
        local i
        for ((i = 0; i < $1; i += 2)); do "${@:2}" && return 0; sleep 2; done
        return 1
}
journal() { journalctl -b --no-pager -o cat -u "$1"; }
boot_stored_this_boot() { journal seeklessd | grep -q "Recorded boot session"; }
no_failed_units() {
        local f
        f=$(systemctl --failed --no-legend --plain)
        [ -z "$f" ] || fail "failed units: $f"
        ok "no failed units"
}
# files of the boot profile on the root filesystem, in read order (the data disk is not ours to judge)
root_profile() { seeklessctl --json=short show boot | jq -r '.files[].path' | grep -v '^/mnt/vmtest/'; }
# the boot profile's hot ranges on /, in the order the run lays them out (GetProfileRanges), as
# PATH<TAB>OFFSET<TAB>LENGTH lines (bytes)
root_ranges() {
        busctl --json=short call org.seekless.Seekless1 /org/seekless/Seekless1 org.seekless.Seekless1.Manager \
                GetProfileRanges s boot | jq -r '.data[1] as $f | .data[2][] | [$f[.[0]][0], .[1], .[2]] | @tsv' |
                grep -v '^/mnt/vmtest/'
}
# discontinuities of files read whole in the given order (filefrag -v, 4 KiB blocks)
discontinuities() {
        local f i=0
        # FILE LOGICAL PHYSICAL LENGTH per extent. Inside a file, a physical jump as long as the logical one
        # is a hole (the data after it at the same base + logical offset): nothing is read there.
        while read -r f; do
                i=$((i + 1))
                filefrag -v "$f" | awk -v f="$i" '/^ *[0-9]+:/ { gsub(/\.\./, " "); gsub(/:/, " "); print f, $2, $4, $6 }'
        done | awk 'NR > 1 && $3 != next_start && !($1 == file && $3 - next_start == $2 - next_logical) { d++ }
                    { file = $1; next_start = $3 + $4; next_logical = $2 + $4 }
                    END { print d + 0 }'
}

# the same for ranges (PATH<TAB>OFFSET<TAB>LENGTH lines, in order): each range's blocks, its last extent
# to that extent's end (blocks of the file moved with the range: seen, /usr/bin/mkdir, which the boot
# reads whole in three ranges out of file order, 0-16, 28-96 and 16-28 KiB; the planner glues the first
# two, 12 KiB apart, into the whole file and the third lies inside it, so that the file is moved whole and
# its last range ends 17 blocks before the file does); consecutive ranges of one file count as one file,
# so that the gap between two of them moved as one is a hole. The first discontinuities are described on
# stderr.
range_discontinuities() {
        local p o l prev= i=0 replaced=
        [ -s replaced.txt ] && replaced=$(cat replaced.txt)
        while IFS=$'\t' read -r p o l; do
                # one filefrag per file (a few hundred of them take minutes under TCG)
                if [ "$p" != "$prev" ]; then
                        i=$((i + 1)); prev=$p
                        # the file boot 2 replaced after the run: where the run had put it
                        if [ "$p" = "$replaced" ]; then
                                cp replaced-frag.txt frag.txt
                        else
                                filefrag -v "$p" > frag.txt
                        fi
                fi
                awk -v f="$i" -v lo=$((o / 4096)) -v hi=$(((o + l + 4095) / 4096)) -v p="$p" '
                        /^ *[0-9]+:/ { gsub(/\.\./, " "); gsub(/:/, " ");
                                a = $2 > lo ? $2 : lo; b = $2 + $6
                                if (a < hi && a < b) printf "%d\t%d\t%d\t%d\t%s\n", f, a, $4 + a - $2, b - a, p }' frag.txt
        done | awk -F'\t' 'NR > 1 && $3 != next_start && !($1 == file && $3 - next_start == $2 - next_logical) {
                        if (++d <= 10) printf "discontinuity: %s block %d ends at %d, then %s block %d at %d\n",
                                name, next_logical, next_start, $5, $2, $3 > "/dev/stderr" }
                    { file = $1; name = $5; next_start = $3 + $4; next_logical = $2 + $4 }
                    END { print d + 0 }'
}

case $n in
1)
        s=$(systemctl show -P ActiveEnterTimestampMonotonic seeklessd.service)
        d0=$(systemctl show -P InactiveExitTimestampMonotonic dbus.service)
        d=$(systemctl show -P ActiveEnterTimestampMonotonic dbus.service)
        echo "seeklessd active at ${s} us; dbus.service started at ${d0} us, active at ${d} us"
        [ "$s" -gt 0 ] && [ "$s" -lt "$d" ] || fail "seeklessd.service was not up before dbus.service"
        ok "seeklessd.service was ready before dbus.service finished starting"
        journal seeklessd | grep -q "System bus not available yet" &&
                ok "it started without the bus and connected later: $(journal seeklessd | grep -m1 'Connected to the system bus')"
        wait_for 150 boot_stored_this_boot || fail "no boot session stored within 150 s"
        journal seeklessd | grep -q "Boot finished; recording" ||
                fail "the boot window was not ended by systemd's StartupFinished"
        ok "boot window ended by StartupFinished: $(journal seeklessd | grep -m1 'Boot finished; recording')"
        seeklessctl profiles
        root_profile > profile1.txt
        [ -s profile1.txt ] || fail "empty boot profile"
        ok "boot profile: $(wc -l < profile1.txt) files on /"
        # the generator's collector saw PID 1 load its units, seeklessd took its record and stopped it
        took=$(journal seeklessd | grep -m1 'files the boot read before seeklessd started') ||
                fail "seeklessd took nothing from the boot collector"
        grep -qx /usr/lib/systemd/system/sysinit.target profile1.txt ||
                fail "the unit files PID 1 read before any service are not in the boot profile"
        grep -qsx seekless-boot-c /proc/[0-9]*/comm && fail "the boot collector is still running"
        [ ! -e /run/seekless/boot-collector.pid ] && [ ! -e /run/seekless/boot-collector.keys ] ||
                fail "boot collector files left in /run/seekless: $(ls /run/seekless)"
        ok "boot collector: $took; unit files in the profile: $(grep -c '^/usr/lib/systemd/system/' profile1.txt); collector stopped"
        # files the boot's programs only map (no read()): the dynamic linker's cache and the locale
        for f in /etc/ld.so.cache /usr/lib/locale/C.utf8/LC_CTYPE; do
                [ -e "$f" ] || { echo "($f does not exist in this guest)"; continue; }
                grep -qx "$f" profile1.txt || fail "$f (only mapped by the boot's programs) is not in the boot profile"
        done
        # the packaged default, Recorder=auto: BPF, which this kernel's verifier takes under the packaged unit
        journal seeklessd | grep -q "^Recording pages with BPF" ||
                fail "seeklessd does not record with BPF: $(journal seeklessd | grep -m3 -i -E 'BPF|page-cache events')"
        ok "BPF recorder on $(uname -r): $(journal seeklessd | grep -m1 '^Recording pages with BPF'); the boot profile has $(root_ranges | wc -l) hot ranges"
        ok "mapped-only files in the boot profile: /etc/ld.so.cache at $(grep -nx /etc/ld.so.cache profile1.txt | cut -d: -f1) of $(wc -l < profile1.txt)"
        # the filesystem's metadata the boot read (the block device's pages: learned on this kernel)
        md=$(seeklessctl --json=short show boot | jq '[.metadata[] | select(.filesystem == "/") | .length] | add // 0')
        [ "$md" -gt 0 ] || fail "no metadata of / in the boot profile: $(journal seeklessd | grep -m2 'metadata')"
        ok "the boot profile holds $((md / 1024)) KiB of the metadata of /"
        no_failed_units
        echo "rotational: $(cat /sys/block/vda/queue/rotational)"

        xargs -d '\n' sha256sum < profile1.txt > sums.txt || fail "checksumming the profile's files"
        # with their mtime and size: a file its own writer changed since (a journal journalctl read and
        # journald goes on writing) is not seekless's to answer for; moving extents leaves mtime alone
        xargs -d '\n' stat -c '%Y.%y %s %n' < profile1.txt > stamps.txt || fail "stat of the profile's files"
        mkdir -p /var/tmp/scatter
        before=$(discontinuities < profile1.txt)
        ./scatter /var/tmp/scatter 1 < profile1.txt > scatter.log || fail "scatter: $(tail -n1 scatter.log)"
        sync
        echo "aged: $(tail -n1 scatter.log); discontinuities in profile order: $before -> $(discontinuities < profile1.txt)"
        grep ': skipped:' scatter.log | head -n 20

        mkdir -p /etc/seekless/seekless.conf.d
        cp vmtest.conf /etc/seekless/seekless.conf.d/90-vmtest.conf
        [ "$(cat /sys/block/vda/queue/rotational)" = 1 ] ||
                printf '# the virtio disk reports non-rotational here\n[Idle]\nOptimizeNonRotational=yes\n' \
                        >> /etc/seekless/seekless.conf.d/90-vmtest.conf
        touch reboot-requested
        ;;
2)
        no_failed_units
        # the boot profile prefetched as seeklessd started: queued as it started (before it told systemd it
        # was ready, which was before sysinit.target), then done
        j=$(journal seeklessd)
        grep -q "Prefetch of the boot profile queued" <<< "$j" ||
                fail "the boot profile's prefetch was not queued: $(grep -i prefetch <<< "$j")"
        s=$(systemctl show -P ActiveEnterTimestampMonotonic seeklessd.service)
        si=$(systemctl show -P ActiveEnterTimestampMonotonic sysinit.target)
        [ "$s" -gt 0 ] && [ "$s" -lt "$si" ] || fail "seeklessd.service ready at $s us, sysinit.target at $si us"
        prefetched() { journal seeklessd | grep -m1 "Prefetch of boot on /: " > prefetch.txt; }
        wait_for 120 prefetched || fail "the boot profile's prefetch on / did not end: $(journal seeklessd | grep -i prefetch)"
        # (the metadata asked is what was not cached yet: boot 1's assertion is the one that counts)
        grep -q "([1-9][0-9]* KiB of metadata)" prefetch.txt || echo "note: no metadata asked, all of it cached already"
        ok "boot profile prefetch queued before seeklessd was ready ($((s / 1000)) ms; sysinit.target $((si / 1000)) ms): $(cat prefetch.txt)"
        wait_for 60 boot_stored_this_boot || fail "boot 2 not recorded"
        root_profile > profile2.txt
        root_ranges > ranges2.txt
        echo "profile now: $(wc -l < profile2.txt) files on /, $(wc -l < ranges2.txt) ranges; discontinuities in order: $(discontinuities < profile2.txt) (files)"
        seeklessctl status | grep -i idle
        wait_for 400 eval 'journal seeklessd | grep -q "Idle: started optimization"' ||
                { seeklessctl status; fail "the idle policy did not start a run within 400 s"; }
        ok "the idle policy started a run by itself: $(journal seeklessd | grep -m1 'Idle: started optimization')"
        wait_for 600 eval 'journal seeklessd | grep -Eq "^Optimization [0-9]+ (done|failed|cancelled)"' ||
                fail "the run did not finish within 600 s"
        journal seeklessd | grep -E "^Optimization [0-9]+ |^Run [0-9]+ on " | tee run.log
        grep -q "^Optimization [0-9]* done" run.log || fail "the run did not complete"
        journal seeklessd | sed -n 's/^\(.*\): not moved: \(.*\)$/\1\t\2/p' > skipped.txt
        echo "not moved: $(wc -l < skipped.txt) files; reasons:"; cut -f2 skipped.txt | sort | uniq -c | sort -rn | head
        grep -P '\trunning executable' skipped.txt | cut -f1 | grep -v '^/mnt/vmtest/' > running.txt
        [ -s running.txt ] || fail "no running executable was skipped: nothing for the early-boot pass to do"
        while read -r f; do filefrag -v "$f" | awk '/^ *[0-9]+:/' > "fiemap.$(echo "$f" | tr / _)"; done < running.txt
        ok "$(wc -l < running.txt) running executables skipped and queued for the early-boot pass"
        no_failed_units
        # boot 3 checks the layout this run made: no idle run there before the checks are done
        printf '[Idle]\nBootQuietSec=3600\n' > /etc/seekless/seekless.conf.d/95-vmtest-quiet.conf
        # a file of the boot profile replaced by a copy (a new inode, as an upgrade does; same contents and
        # mtime), after the run: stale for boot 3's prefetch; its layout check takes the extents the run
        # gave it, kept here
        f=/usr/lib/systemd/system/sysinit.target
        filefrag -v "$f" > replaced-frag.txt || fail "filefrag $f"
        cp -p "$f" "$f.vmtest" && mv "$f.vmtest" "$f" || fail "replacing $f"
        echo "$f" > replaced.txt
        touch reboot-requested
        ;;
3)
        no_failed_units
        systemctl is-active -q seeklessd.service || fail "seeklessd.service not active"
        prefetched() { journal seeklessd | grep -m1 "Prefetch of boot on /: " > prefetch3.txt; }
        wait_for 120 prefetched || fail "the boot profile's prefetch on / did not end: $(journal seeklessd | grep -i prefetch)"
        grep -q " [1-9][0-9]* stale files\?, " prefetch3.txt || fail "the replaced file was not skipped as stale: $(cat prefetch3.txt)"
        ok "a stale boot profile prefetched, stale files skipped (replaced in boot 2: $(cat replaced.txt)): $(cat prefetch3.txt)"
        # the state survived two reboots: three boot sessions (the third may still be recording)
        wait_for 60 boot_stored_this_boot || fail "boot 3 not recorded"
        sessions=$(seeklessctl --json=short sessions | jq '[.[] | select(.kind == "boot")] | length')
        [ "$sessions" -ge 3 ] || fail "expected 3 boot sessions in the database, found $sessions"
        ok "database kept every boot: $sessions boot sessions"

        sync; echo 3 > /proc/sys/vm/drop_caches
        # the files whose mtime and size are those of boot 1 must have their contents of boot 1
        xargs -d '\n' stat -c '%Y.%y %s %n' < profile1.txt 2>/dev/null | LC_ALL=C sort > stamps3.txt
        LC_ALL=C sort stamps.txt | comm -12 - stamps3.txt | cut -d' ' -f5- > unchanged.txt
        grep -Fxf unchanged.txt <(cut -c67- sums.txt) > /dev/null || fail "no file of the first boot profile is unchanged"
        awk 'NR == FNR { keep[$0] = 1; next } keep[substr($0, 67)]' unchanged.txt sums.txt > sums-unchanged.txt
        sha256sum --quiet -c sums-unchanged.txt || fail "checksums differ"
        ok "all $(wc -l < sums-unchanged.txt) files of the first boot profile that their writers left alone have their original contents ($(( $(wc -l < sums.txt) - $(wc -l < sums-unchanged.txt) )) changed by their writers: $(comm -23 <(cut -c67- sums.txt | LC_ALL=C sort) <(LC_ALL=C sort unchanged.txt) | tr '\n' ' '))"

        journal seekless-early | grep "early pass" | tail -n 20
        moved_early=0
        while read -r f; do
                if journal seekless-early | grep -qF "early pass: $f: moved"; then
                        now=$(filefrag -v "$f" | awk '/^ *[0-9]+:/')
                        [ "$now" != "$(cat "fiemap.$(echo "$f" | tr / _)")" ] ||
                                fail "$f: the early pass says moved but its extents are unchanged"
                        moved_early=$((moved_early + 1))
                        echo "early pass moved $f (running executable in boot 2); extents now: $(echo "$now" | wc -l)"
                fi
        done < running.txt
        [ "$moved_early" -gt 0 ] || fail "the early-boot pass moved none of the running executables skipped in boot 2"
        ok "$moved_early of $(wc -l < running.txt) files skipped as running executables were moved by the early-boot pass"

        # Independent check of the live run: the hot ranges of the files it moved, in the order it laid
        # them out, lie back to back (no discontinuity beyond the donor's own runs).
        cut -f1 skipped.txt > not-moved.txt
        grep -vxF -f not-moved.txt profile2.txt > moved.txt || true
        awk -F'\t' 'NR == FNR { skip[$0] = 1; next } !($1 in skip)' not-moved.txt ranges2.txt > moved-ranges.txt
        runs=$(sed -n 's/.*donor in \([0-9]*\) run.*/\1/p' run.log | head -n1)
        dm=$(range_discontinuities < moved-ranges.txt)
        echo "live run: $(wc -l < moved.txt) files moved ($(wc -l < moved-ranges.txt) ranges), donor in ${runs:-?} run(s), discontinuities among their ranges in order: $dm"
        echo "whole root profile: discontinuities in order now $(discontinuities < profile2.txt) (whole files)"
        [ -s moved.txt ] || fail "the run moved nothing"
        [ "$dm" -le $(( ${runs:-1} - 1 )) ] || fail "moved ranges are not contiguous in layout order ($dm discontinuities)"
        ok "the hot ranges of the boot profile's files the run moved are contiguous in layout order (filefrag)"
        seeklessctl report boot
        # the database made unreadable while seeklessd is stopped: boot 4 must still come up clean
        systemctl stop seeklessd.service || fail "stopping seeklessd.service"
        head -c 65536 /dev/urandom > /var/lib/seekless/seekless.db || fail "overwriting the database"
        rm -f /var/lib/seekless/seekless.db-wal /var/lib/seekless/seekless.db-shm
        touch reboot-requested
        ;;
4)
        no_failed_units
        systemctl is-active -q seeklessd.service || fail "seeklessd.service not active"
        journal seeklessd | grep -q "is corrupt or not seekless's; moving it aside" ||
                fail "no word of the corrupt database: $(journal seeklessd | head -n 5)"
        ls /var/lib/seekless/seekless.db.corrupt-* > /dev/null || fail "the corrupt database was not kept aside"
        seeklessctl status > /dev/null || fail "seeklessctl status failed"
        ok "a boot with a corrupt database: no failed units, the database moved aside, the daemon answers"
        ;;
*)
        echo "nothing to do in boot $n"
        ;;
esac
exit 0
