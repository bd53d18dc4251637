#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Guest side of bench/boot.sh (copied to the data disk as run.sh; vmtest-harness runs it in /mnt/vmtest after
# every boot). The kernel was started with `trace_event=block:block_rq_issue trace_clock=mono`, so every block
# request since the kernel started is in the trace buffer. Each boot:
#   1. capture, before anything else: a clock check (a trace_marker line vs the kernel's CLOCK_MONOTONIC),
#      tracing off, the whole trace buffer, the per-CPU buffer stats (overruns), the manager's
#      FinishTimestampMonotonic (StartupFinished); the host keeps the events up to that time;
#   2. wait until seeklessd has stored the boot session (journal "Recorded boot session"; BootTailSec= is the
#      default 30 s), doing nothing else, so that the boot profile holds the boot and not this script;
#   3. for a measured boot: the boot profile as it is now, its layout quality (seeklessctl report boot), and
#      who owns the first block of each boot read request (debugfs icheck/ncheck, dumpe2fs) for the breakdown;
#   4. the step of the scenario (params: MODE, REPS, SEED):
#      MODE=base     boot 1 first boot (not measured: first-boot effects; it adds the drop-in
#                    [Optimize] MinFileAgeSec=0, the image's files being minutes old); boots 2..REPS+1 "fresh";
#                    after the last fresh one the boot profile's files are aged with scatter (SEED); next boot "aged"
#      MODE=seekless (from the aged image) boot 1 "aged", then `seeklessctl optimize`; boots whose
#                    seekless-early.service moved files are transitions; then REPS boots "seekless"
#      MODE=e4defrag (from the aged image) boot 1 "aged", then e4defrag of the boot profile's files; then REPS
#                    boots "e4defrag"
# Results go to m/LABEL/ on the data disk. Requests a reboot (reboot-requested) until the mode is done; any
# failure prints "FAIL: ..." and exits 1 (the VM then powers off).
set -uo pipefail
cd "$(dirname "$0")"
PATH=/usr/sbin:/usr/bin:/sbin:/bin
T=/sys/kernel/tracing
n=$(( $(cat bootcount 2>/dev/null || echo 0) + 1 ))
echo "$n" > bootcount
C=cap.$n
mkdir -p "$C" m

# ---- 1. capture (bash builtins and cat only: this still runs inside seeklessd's boot tail)
[ -e "$T/tracing_on" ] || mount -t tracefs nodev "$T"
echo "seekless-bench-clockcheck boot $n" > "$T/trace_marker" 2>/dev/null || echo "no trace_marker" > "$C/notes"
while read -r a b c _; do
        if [ "$a $b" = "now at" ]; then echo "$c" > "$C/clock_now_ns"; break; fi
done < /proc/timer_list
echo 0 > "$T/tracing_on"
cat "$T/trace" > "$C/trace.txt"
for d in "$T"/per_cpu/cpu*; do echo "== ${d##*/}"; cat "$d/stats"; done > "$C/stats.txt"
cat "$T/trace_clock" "$T/buffer_size_kb" /proc/cmdline > "$C/tracing.txt"
cat /sys/block/vda/dev /sys/block/vda/size /sys/block/vda/queue/rotational /sys/block/vda/queue/read_ahead_kb \
        /sys/block/vda/queue/scheduler > "$C/vda.txt"
systemctl show -p FinishTimestampMonotonic -p UserspaceTimestampMonotonic -p KernelTimestamp \
        -p UserspaceTimestamp -p FinishTimestamp > "$C/manager.txt"
. ./params
echo "== boot $n, mode $MODE ($(cut -d' ' -f1 /proc/uptime) s since boot)"

fail() { echo "FAIL (mode $MODE, boot $n): $*"; journalctl -b --no-pager -o cat -u seeklessd -u seekless-early | tail -n 30; exit 1; }
journal() { journalctl -b --no-pager -o cat -u "$1"; }
recorded() { journal seeklessd | grep -q "Recorded boot session"; }

# ---- 2. wait for the boot session to be stored: first with bash builtins only until the default boot tail
# (BootTailSec=30s after StartupFinished) is over, so that nothing of this script lands in the boot session;
# then poll the journal (that is recorded only if the daemon still records, e.g. when it missed StartupFinished
# and BootWindowSec= ends the session)
exec {SLEEP_FD}<> <(:)
pause() { read -r -t "$1" -u "$SLEEP_FD" _ || :; }
fin=$(sed -n 's/^FinishTimestampMonotonic=//p' "$C/manager.txt")
until_s=$(( ${fin:-0} / 1000000 + 32 ))
while read -r up _ < /proc/uptime; [ "${up%.*}" -lt "$until_s" ]; do pause 1; done
for ((i = 0; i < 400; i++)); do recorded && break; sleep 0.5; done
recorded || fail "no 'Recorded boot session' within 200 s"
echo "boot session stored ($(cut -d' ' -f1 /proc/uptime) s since boot): $(journal seeklessd | grep -m1 'Recorded boot session')"

systemd-analyze > "$C/analyze.txt" 2>&1
journal seeklessd > "$C/seeklessd.log"
journal seekless-early > "$C/early.log"
systemctl is-active seeklessd.service > "$C/seeklessd-active" || fail "seeklessd.service not active"
f=$(systemctl --failed --no-legend --plain)
[ -z "$f" ] || fail "failed units: $f"
grep -Eq "started optimization|^Optimization [0-9]+ " "$C/seeklessd.log" &&
        fail "an optimization ran in this boot: $(grep -E 'started optimization|^Optimization [0-9]+ ' "$C/seeklessd.log" | head -n 3)"

root_profile() { seeklessctl --json=short show boot | jq -r '.files[].path' | grep -v '^/mnt/vmtest/'; }

# ---- 3. what a measured boot read: owners of the first block of each boot read request
owners() {              # DIR
        local d=$1 bs dev fin
        bs=$(stat -f -c %S /)
        echo "$bs" > "$d/fs_block_size"
        dev=$(tr ':' ',' < /sys/block/vda/dev)
        fin=$(sed -n 's/^FinishTimestampMonotonic=//p' "$d/manager.txt")
        root_profile > "$d/profile.txt" || fail "seeklessctl show boot"
        seeklessctl --json=short report boot > "$d/report.json" 2>&1 || true
        awk -v fin="$fin" -v dev="$dev" -v bs="$bs" '
                match($0, / [0-9]+\.[0-9]+: block_rq_issue: /) {
                        ts = substr($0, RSTART + 1) + 0
                        if (ts * 1000000 > fin) next
                        split(substr($0, RSTART + RLENGTH), f, " ")
                        if (f[1] != dev || f[2] !~ /R/) next
                        if (!match($0, /\) [0-9]+ \+ [0-9]+/)) next
                        split(substr($0, RSTART + 2, RLENGTH - 2), g, " ")
                        print int(g[1] * 512 / bs)
                }' "$d/trace.txt" | sort -un > "$d/blocks.txt"
        awk '{ printf "%s%s", (NR % 200 == 1 ? (NR > 1 ? "\nicheck " : "icheck ") : " "), $1 } END { print "" }' \
                "$d/blocks.txt" > "$d/icheck.cmd"
        debugfs -f "$d/icheck.cmd" /dev/vda 2>/dev/null | awk -F'\t' '$1 ~ /^[0-9]+$/ { print $1, $2 }' > "$d/icheck.out"
        awk '$2 ~ /^[0-9]+$/ { print $2 }' "$d/icheck.out" | sort -un |
                awk '{ printf "%s%s", (NR % 200 == 1 ? (NR > 1 ? "\nncheck " : "ncheck ") : " "), $1 } END { print "" }' \
                > "$d/ncheck.cmd"
        debugfs -f "$d/ncheck.cmd" /dev/vda 2>/dev/null | awk -F'\t' '$1 ~ /^[0-9]+$/ && !seen[$1]++ { print $1 "\t" $2 }' \
                > "$d/ncheck.out"
        dumpe2fs /dev/vda 2>/dev/null | sed -n 's/.*Inode table at \([0-9]*\)-\([0-9]*\).*/\1 \2/p' > "$d/itable.txt"
        [ -s "$d/itable.txt" ] || fail "dumpe2fs listed no inode tables"
        # block -> kind path:  profile (a file of the boot profile: data or extent tree), file (another
        # file), dir, journal (inode 8), special (other reserved inode), itable (no owner, in an inode
        # table), meta (no owner: superblock, group descriptors, bitmaps, freed blocks)
        local blk ino path kind
        declare -A name=() inprof=()
        while IFS=$'\t' read -r ino path; do name[$ino]=$path; done < "$d/ncheck.out"
        while IFS= read -r path; do inprof[$path]=1; done < "$d/profile.txt"
        while read -r blk ino; do
                if [[ $ino =~ ^[0-9]+$ ]]; then
                        path=${name[$ino]:-"<inode $ino>"}
                        if [ "$ino" = 8 ]; then kind=journal
                        elif [ "$ino" = 2 ]; then kind=dir path=/
                        elif [ "$ino" -lt 11 ] && [ -z "${name[$ino]:-}" ]; then kind=special
                        elif [ -n "${inprof[$path]:-}" ]; then kind=profile
                        elif [ -d "$path" ]; then kind=dir
                        else kind=file
                        fi
                else
                        path=- kind=meta
                fi
                printf '%s\t%s\t%s\n' "$blk" "$kind" "$path"
        done < "$d/icheck.out" |
                awk -F'\t' -v OFS='\t' 'NR == FNR { lo[NR] = $1; hi[NR] = $2; nt = NR; next }
                        $2 == "meta" { for (i = 1; i <= nt; i++) if (lo[i] <= $1 && $1 <= hi[i]) { $2 = "itable"; break } }
                        { print }' <(tr ' ' '\t' < "$d/itable.txt") - > "$d/owners.txt"
        echo "owners: $(wc -l < "$d/blocks.txt") request start blocks, $(wc -l < "$d/owners.txt") resolved;" \
                "$(cut -f2 "$d/owners.txt" | sort | uniq -c | tr -s ' ' | tr '\n' ';')"
}

finish() {              # LABEL MEASURED(0|1): move the capture to m/LABEL
        [ ! -e "m/$1" ] || fail "m/$1 exists already"
        mv "$C" "m/$1"
        echo "$1" >> labels
        [ "$2" = 1 ] && owners "m/$1"
        echo "captured as $1: $(grep -c block_rq_issue "m/$1/trace.txt") events in the buffer; $(sed -n 1p "m/$1/analyze.txt")"
}

early_line() { grep -E "^early pass( on|:)" "$1" | tail -n 1; }

# Every boot of every configuration starts with the same journal history: the file journald opens at boot
# holds only the end of the previous boot, and no archived file lies next to it. What journald reads of the
# active file at boot grows with everything logged into it (13 requests after one boot, 46 after eight in
# the dc22904 run), and at start it reads the beginning of every archived file in the directory (2 requests
# each in the traces; 2 archived files before fresh-2, 7 before seekless-2 in the cb88549 run). The
# configurations come in a fixed order (fresh first, the others after more boots): without this the later
# ones pay for history, not for layout. The archived files are moved (renamed: their blocks stay where
# they are) to /var/log/journal-archive, where journald does not look.
reboot_next() {
        local f

        journalctl --rotate || fail "journalctl --rotate"
        mkdir -p /var/log/journal-archive || fail "mkdir /var/log/journal-archive"
        for f in /var/log/journal/*/*@*.journal /var/log/journal/*/*.journal~; do
                [ -e "$f" ] || continue
                mv "$f" /var/log/journal-archive/ || fail "mv $f /var/log/journal-archive/"
        done
        sync
        touch reboot-requested
}

case $MODE in
base)
        if [ "$n" = 1 ]; then
                finish first-boot 0
                # the image was built minutes ago and its files' ctimes say so: without this the default
                # MinFileAgeSec=600 would leave them to a later run. Only optimization runs read it (and
                # none starts by itself: BootQuietSec=600 is longer than any boot here), so every
                # configuration from boot 2 on runs with the same configuration.
                mkdir -p /etc/seekless/seekless.conf.d
                printf '[Optimize]\nMinFileAgeSec=0\n' > /etc/seekless/seekless.conf.d/90-bench.conf
                reboot_next
        elif [ "$n" -le $((REPS + 1)) ]; then
                finish "fresh-$((n - 1))" 1
                if [ "$n" = $((REPS + 1)) ]; then
                        root_profile > scattered.txt || fail "seeklessctl show boot"
                        [ -s scattered.txt ] || fail "empty boot profile"
                        mkdir -p /var/tmp/scatter
                        ./scatter /var/tmp/scatter "$SEED" < scattered.txt > scatter.log || fail "scatter: $(tail -n1 scatter.log)"
                        sync
                        echo "aged the boot profile's $(wc -l < scattered.txt) files on /: $(tail -n1 scatter.log)"
                        grep ': skipped:' scatter.log | sed 's/^/  /'
                fi
                reboot_next
        else
                finish aged-1 1
        fi
        ;;
seekless)
        if [ "$n" = 1 ]; then
                finish aged-2 1
                root_profile > optimized-profile.txt
                seeklessctl --json=short plan > plan.json 2>&1 || fail "seeklessctl plan: $(cat plan.json)"
                t0=$(cut -d' ' -f1 /proc/uptime)
                seeklessctl --json=short optimize > optimize.json 2> optimize.err ||
                        fail "seeklessctl optimize: $(cat optimize.json optimize.err)"
                echo "optimize: $(jq -c '{id, state, moved_files, moved_bytes, skipped: (.skipped | length)}' optimize.json)" \
                        "in $(awk -v a="$t0" -v b="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN { print b - a }') s"
                jq -r '.skipped[] | .reason' optimize.json | sort | uniq -c | sed 's/^/  skipped: /'
                journal seeklessd | grep -E "^(Optimization|Run) [0-9]+ " > optimize.log
                reboot_next
        else
                e=$(early_line "$C/early.log")
                if [ "$e" = "early pass: nothing queued" ]; then
                        k=$(( $(cat seekless-measured 2>/dev/null || echo 0) + 1 ))
                        echo "$k" > seekless-measured
                        finish "seekless-$k" 1
                        [ "$k" -ge "$REPS" ] || reboot_next
                else
                        k=$(( $(cat seekless-transitions 2>/dev/null || echo 0) + 1 ))
                        echo "$k" > seekless-transitions
                        [ "$k" -le 3 ] || fail "the early-boot pass still had work after 3 boots: $e"
                        echo "early-boot pass in this boot: $e"
                        grep -E "^early pass: " "$C/early.log" | sed 's/^/  /' | tail -n 40
                        finish "seekless-early-$k" 0
                        reboot_next
                fi
        fi
        ;;
e4defrag)
        if [ "$n" = 1 ]; then
                finish aged-3 1
                root_profile > e4defrag-list.txt || fail "seeklessctl show boot"
                t0=$(cut -d' ' -f1 /proc/uptime)
                xargs -d '\n' e4defrag < e4defrag-list.txt > e4defrag.log 2>&1
                sync
                echo "e4defrag of $(wc -l < e4defrag-list.txt) files in $(awk -v a="$t0" -v b="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN { print b - a }') s:" \
                        "$(sed -n 's/^ *Success:[[:space:]]*\[\([0-9]*\)\/\([0-9]*\)\]/\1 \2/p' e4defrag.log | awk '{ a += $1; b += $2 } END { print a " of " b }') defragmented"
                reboot_next
        else
                finish "e4defrag-$((n - 1))" 1
                [ "$n" -gt "$REPS" ] || reboot_next
        fi
        ;;
*)
        fail "unknown MODE=$MODE"
        ;;
esac
exit 0
