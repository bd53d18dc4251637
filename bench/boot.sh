#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Aged-boot benchmark: boot I/O of a real Debian 12 guest (systemd, seekless installed packager-style and
# running in every configuration) under QEMU, traced in the guest with tracefs block:block_rq_issue from the
# kernel's start to systemd's StartupFinished, costed with the daemon's rotational-disk model. See
# bench/README.md, section "Boot I/O (bench/boot.sh)".
#
#   sudo bench/boot.sh [WORK_DIR]           (default /var/tmp/seekless-vm; 14 boots under TCG, about 20 minutes)
#
# Configurations, each measured over REPS boots of the same kind (a cold guest: every boot is a new kernel):
#   fresh     the image as built (files laid out by mkfs.ext4 -d); boots 2.. (boot 1 creates the database)
#   aged      the boot profile's files (as recorded by then) aged in place by tests/helpers/scatter.c (SEED)
#   seekless  from the aged image: seeklessctl optimize, reboot(s) until seekless-early.service has moved the
#             running executables the run had to skip, then measured
#   e4defrag  from the same aged image: e4defrag of the boot profile's files, reboot, measured
# Three QEMU runs: the base image (first boot, fresh, aging, one aged boot), then the aged root disk (converted
# to a raw image) booted twice more, once per branch; the first boot of each branch is measured as aged too.
# The guest side is bench/boot-guest.sh. Prints one table with the four configurations side by side and the
# verdicts (aged+seekless <= 0.5 x aged, and <= fresh, on modeled boot I/O time); exits 0 whatever the
# verdicts, 1 if something broke (a boot failed, the trace lost events, ...), 77 without root or tools.
#
# Knobs (environment): REPS=3 SEED=1 VM_NO_BUILD=1 (reuse WORK_DIR/disk.img as it is) VM_KEEP=1 (keep the
# scratch directory: data disks with every trace, console logs, the aged image) VM_TIMEOUT (per QEMU run,
# default 1500 s); vm-lib's VM_MEM, VM_SMP, VM_ACCEL, VM_CONSOLE=1. BOOT_RESULTS=DIR analyses the results
# directory of an earlier run kept with VM_KEEP=1 (DIR = .../res) without booting anything.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
W=${1:-/var/tmp/seekless-vm}
REPS=${REPS:-3}
SEED=${SEED:-1}
[ "$(id -u)" = 0 ] || { echo "SKIP: bench/boot.sh needs root (debootstrap, chroot for the image): sudo $0"; exit 77; }
for t in qemu-system-x86_64 qemu-img debootstrap mkfs.ext4 debugfs cc jq meson ninja; do
        command -v "$t" >/dev/null || { echo "SKIP: $t not installed"; exit 77; }
done
[[ $REPS =~ ^[1-9][0-9]*$ ]] || { echo "REPS must be a positive integer" >&2; exit 1; }
. "$SRC/tests/vm/vm-lib.sh"
. "$SRC/tests/lib-core.sh"      # log, die, ratio

T0=$EPOCHREALTIME
anomaly() { echo "ANOMALY: $*" | tee -a "$VM_TMP/anomalies" >&2; }
touch "$VM_TMP/anomalies"

B=$VM_TMP/bin
mkdir -p "$B"
cc -O2 -Wall -std=gnu11 -I "$SRC" -I "$SRC/daemon" -o "$B/trace-cost" "$SRC/bench/trace-cost.c" \
        "$SRC/daemon/plan/layout.c" -lm || die "cannot compile bench/trace-cost.c"
cc -O2 -Wall -std=gnu11 -I "$SRC" -I "$SRC/daemon" -o "$B/boot-cost" "$SRC/bench/boot-cost.c" \
        "$SRC/daemon/plan/layout.c" -lm || die "cannot compile bench/boot-cost.c"
cc -O2 -Wall -std=gnu11 -D_GNU_SOURCE -o "$B/scatter" "$SRC/tests/helpers/scatter.c" || die "cannot compile tests/helpers/scatter.c"

if [ -n "${BOOT_RESULTS:-}" ]; then
        # analysis only, of the results directory of an earlier run kept with VM_KEEP=1
        RES=$(realpath "$BOOT_RESULTS")
        [ -s "$RES/meta" ] || die "$RES/meta missing: not a results directory of bench/boot.sh"
        . "$RES/meta"
        log "analysing $RES (run of $RUN_DATE)"
else
RES=$VM_TMP/res
mkdir -p "$RES"
RUN_DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
log "seekless boot I/O benchmark: $RUN_DATE, host kernel $(uname -r), $(nproc) CPU(s); REPS=$REPS SEED=$SEED; scratch $VM_TMP"
DESCRIBE=$(git -C "$SRC" describe --always --dirty 2>/dev/null || echo '(not a git tree)')
# what goes into the image's binaries and units; uncommitted changes elsewhere (docs, tests) do not
BIN_SRC=$(git -C "$SRC" status --porcelain -- daemon cli common units dbus meson.build meson_options.txt 2>/dev/null |
        awk '{ printf "%s%s", (NR > 1 ? " " : ""), $2 }')
DESCRIBE+=" (${BIN_SRC:+uncommitted in the installed sources: }${BIN_SRC:-installed sources as committed})"
log "source $DESCRIBE"
if [ "${VM_NO_BUILD:-0}" != 1 ] || [ ! -e "$W/disk.img" ]; then
        log "building the VM image from $SRC (tests/vm/build-image.sh; waits if another build holds the lock)"
        "$SRC/tests/vm/build-image.sh" "$SRC" "$W" | sed 's/^/  /'
fi
# A private copy of the image and kernel, taken under build-image.sh's lock: others may rebuild WORK_DIR
# while this runs, and the qcow2 overlays (and the aged image made from one) refer to their base by path.
BW=$VM_TMP/base-work
mkdir -p "$BW/kernel"
exec {BUILD_LOCK}>"$W/.lock"
flock "$BUILD_LOCK"
[ -e "$W/disk.img" ] || die "$W/disk.img missing"
cp --sparse=always "$W/disk.img" "$BW/disk.img"
cp "$W/kernel/vmlinux" "$W/kernel/initrd.img" "$W/kernel/version" "$BW/kernel/"
IMG_ID="disk.img built $(date -u -r "$W/disk.img" '+%Y-%m-%d %H:%M:%S UTC'), guest kernel $(cat "$W/kernel/version")"
for deb in "$W"/pkg/seekless_*.deb; do
        [ -f "$deb" ] && IMG_ID+=", $(basename "$deb") sha256 $(sha256sum "$deb" | cut -c1-12)"
done
exec {BUILD_LOCK}>&-
log "image (private copy): $IMG_ID"
declare -p RUN_DATE DESCRIBE IMG_ID REPS SEED > "$RES/meta"

# every event since the kernel started, timestamps on CLOCK_MONOTONIC (systemd's *TimestampMonotonic clock)
export VM_APPEND="${VM_APPEND:-} trace_event=block:block_rq_issue trace_buf_size=8M trace_clock=mono"

run_vm() {              # NAME MODE WORK_DIR: one QEMU run of boot-guest.sh in MODE; results -> $RES/NAME
        local name=$1 mode=$2 w=$3 d=$VM_TMP/$1 img=$VM_TMP/$1.img log=$VM_TMP/$1.console rc=0 grc boots f
        mkdir -p "$d"
        install -m755 "$SRC/bench/boot-guest.sh" "$d/run.sh"
        install -m755 "$B/scatter" "$d/scatter"
        printf 'MODE=%s\nREPS=%s\nSEED=%s\n' "$mode" "$REPS" "$SEED" > "$d/params"
        vm_data_disk "$d" "$img" 256M
        log "QEMU run '$name' (MODE=$mode) from $w/disk.img"
        VM_TIMEOUT=${VM_TIMEOUT:-1500} vm_boot "$w" "$img" "$log" || rc=$?
        sed -n 's/^ *\([0-9.]*\) GUEST: /  [+\1 s] /p' "$log"
        tail -n1 "$log" | sed 's/^/  /'
        if [ "$rc" != 0 ]; then
                echo "---- serial console (last 40 lines) ----"; tail -n 40 "$log"
                die "qemu exited $rc in run '$name' (124 = the guest did not power off in time)"
        fi
        grc=$(vm_out "$img" rc) || die "run '$name': run.sh never ran in the guest"
        boots=$(vm_out "$img" bootcount)
        [ "$grc" = 0 ] || die "run '$name': the guest script failed in boot $boots (exit $grc)"
        mkdir -p "$RES/$name"
        cp "$log" "$RES/$name/console.log"
        debugfs -R "rdump /m $RES/$name" "$img" >/dev/null 2>&1 || die "cannot read the results of run '$name'"
        for f in labels scattered.txt scatter.log optimized-profile.txt plan.json optimize.json optimize.log \
                e4defrag-list.txt e4defrag.log; do
                vm_out "$img" "$f" > "$RES/$name/$f" 2>/dev/null || rm -f "$RES/$name/$f"
        done
        log "  run '$name': $boots boots: $(tr '\n' ' ' < "$RES/$name/labels")"
}

run_vm base base "$BW"
# the aged root disk, as the base run left it (its last boot was an aged one), becomes the base of both branches
AW=$VM_TMP/aged-work
mkdir -p "$AW"
ln -s "$BW/kernel" "$AW/kernel"
qemu-img convert -O raw "$VM_OVERLAY" "$AW/disk.img"
log "aged root disk: $AW/disk.img ($(du -h "$AW/disk.img" | cut -f1) allocated)"
run_vm seekless seekless "$AW"
run_vm e4defrag e4defrag "$AW"
RUN_SECS=$(awk -v a="$T0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }')
declare -p RUN_SECS >> "$RES/meta"
fi

# --------------------------------------------------------------------------------------------- analysis
kv() { sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" <<< "$2"; }   # KEY "k=v ...": boot-cost's total line
declare -A R=()         # R[label,key]
LABELS=()
analyze() {             # RUN LABEL
        local d=$RES/$1/m/$2 fin dev maj min sectors bs t b over ew clk mark e
        fin=$(sed -n 's/^FinishTimestampMonotonic=//p' "$d/manager.txt")
        [[ $fin =~ ^[0-9]+$ ]] && [ "$fin" -gt 0 ] || die "$2: no FinishTimestampMonotonic ($fin)"
        dev=$(sed -n 1p "$d/vda.txt") sectors=$(sed -n 2p "$d/vda.txt") bs=$(cat "$d/fs_block_size")
        maj=${dev%:*} min=${dev#*:}
        # the buffer must hold every event since boot: no overruns or drops, nothing lost
        over=$(awk '/^(overrun|commit overrun|dropped events):/ { s += $NF } END { print s + 0 }' "$d/stats.txt")
        ew=$(sed -n 's/^# entries-in-buffer\/entries-written: \([0-9]*\)\/\([0-9]*\).*/\1 \2/p' "$d/trace.txt")
        [ "$over" = 0 ] && [ -n "$ew" ] && [ "${ew% *}" = "${ew#* }" ] ||
                die "$2: the trace buffer lost events (overruns+drops $over, in buffer/written $ew)"
        grep -q '^mono$\|\[mono\]' "$d/tracing.txt" || die "$2: trace clock is not mono: $(head -n1 "$d/tracing.txt")"
        # trace timestamps vs CLOCK_MONOTONIC: the marker was written just before /proc/timer_list was read
        mark=$(sed -n 's/.* \([0-9]*\.[0-9]*\): tracing_mark_write: seekless-bench-clockcheck.*/\1/p' "$d/trace.txt")
        clk=$(cat "$d/clock_now_ns" 2>/dev/null || echo)
        if [ -n "$mark" ] && [ -n "$clk" ]; then
                R[$2,clock]=$(awk -v m="$mark" -v c="$clk" 'BEGIN { printf "%.3f", c / 1e6 - m * 1000 }')
                awk -v x="${R[$2,clock]}" 'BEGIN { exit !(x >= 0 && x < 1000) }' ||
                        anomaly "$2: trace clock vs CLOCK_MONOTONIC: the marker is ${R[$2,clock]} ms off"
        else
                R[$2,clock]=?
                anomaly "$2: no clock check (marker '$mark', timer_list '$clk')"
        fi
        awk -v fin="$fin" 'match($0, / [0-9]+\.[0-9]+: block_rq_issue: /) {
                if (substr($0, RSTART + 1) * 1000000 <= fin) print }' "$d/trace.txt" > "$d/boot-trace.txt"
        t=$("$B/trace-cost" "$maj" "$min" $((sectors * 512)) < "$d/boot-trace.txt")
        [ "$(jq -r .unparsed <<< "$t")" = 0 ] || anomaly "$2: trace-cost could not parse $(jq -r .unparsed <<< "$t") lines"
        R[$2,requests]=$(jq -r .requests <<< "$t") R[$2,bytes]=$(jq -r .bytes <<< "$t") R[$2,ms]=$(printf %.1f "$(jq -r .modeled_ms <<< "$t")")
        R[$2,fin]=$(awk -v f="$fin" 'BEGIN { printf "%.2f", f / 1e6 }')
        R[$2,analyze]=$(sed -n 's/^Startup finished in //p' "$d/analyze.txt")
        R[$2,tcg]=${R[$2,fin]}
        R[$2,window]="cap"
        grep -q '^Boot finished; recording' "$d/seeklessd.log" && R[$2,window]="finish"
        # per-request cost, summed by what the first block of the request belongs to (owners.txt, from the guest)
        "$B/boot-cost" "$maj" "$min" $((sectors * 512)) < "$d/boot-trace.txt" > "$d/per-request.txt"
        b=$(tail -n1 "$d/per-request.txt")
        awk -v a="$(jq -r .modeled_ms <<< "$t")" -v s="$(kv sum_ms "$b")" 'BEGIN { exit !(a - s < 0.2 && s - a < 0.2) }' ||
                die "$2: boot-cost's sum ($b) differs from trace-cost ($t)"
        # per-request lines: TS SECTOR NR RWBS MS COMM. "pre": issued before the first request of a process named
        # seeklessd (seekless-early.service's `seeklessd --early-pass` exec; the recorder, seeklessd.service,
        # starts after that unit), i.e. boot I/O that happened before anything of seekless ran
        awk -F'\t' -v bs="$bs" 'NR == FNR { kind[$1] = $2; path[$1] = $3; next }
                /^total/ { next }
                { split($0, f, " "); blk = int(f[2] * 512 / bs); k = (blk in kind) ? kind[blk] : "unresolved"
                  ms[k] += f[5]; n[k]++; by[k] += f[3] * 512
                  p = (blk in kind) ? k ":" path[blk] : "unresolved"; pms[p] += f[5]; pn[p]++
                  if (f[6] == "seeklessd" && t0 == "") t0 = f[1]
                  if (t0 == "") { pre += f[5]; if (k == "profile") prep += f[5] } }
                END { for (k in ms) printf "kind\t%s\t%.1f\t%d\t%d\n", k, ms[k], n[k], by[k]
                      for (p in pms) printf "path\t%s\t%.1f\t%d\n", p, pms[p], pn[p]
                      printf "pre\t%s\t%.1f\t%.1f\n", (t0 == "" ? "-" : t0), pre, prep }' \
                "$d/owners.txt" <(tr ' ' '\t' < "$d/per-request.txt") > "$d/breakdown.txt"
        read -r _ R[$2,seekless_ts] R[$2,pre_ms] R[$2,pre_profile_ms] < <(grep '^pre' "$d/breakdown.txt")
        R[$2,profile_files]=$(wc -l < "$d/profile.txt")
        R[$2,static]=$(jq -r '.[] | select(.name == "boot") | "\(.modeled_read_ms) \(.extents) \(.discontinuities)"' \
                "$d/report.json" 2>/dev/null || echo "? ? ?")
        e=$(grep -E '^early pass( on|:)' "$d/early.log" | tail -n1)
        [ "$e" = "early pass: nothing queued" ] || anomaly "$2: seekless-early.service in this boot: ${e:-no line}"
        LABELS+=("$2")
}
for run in base seekless e4defrag; do
        [ -s "$RES/$run/labels" ] || continue
        while read -r l; do
                case $l in first-boot | seekless-early-*) ;; *) analyze "$run" "$l" ;; esac
        done < "$RES/$run/labels"
done

CONFIGS=(fresh aged seekless e4defrag)
declare -A TITLE=([fresh]="fresh install" [aged]="aged" [seekless]="aged + seekless" [e4defrag]="aged + e4defrag")
members() { local l; for l in "${LABELS[@]}"; do [[ $l =~ ^$1-[0-9]+$ ]] && echo "$l"; done; return 0; }
stat3() {               # CONFIG KEY: mean min max over the configuration's boots
        local l; for l in $(members "$1"); do echo "${R[$l,$2]}"; done |
                awk '{ s += $1; if (NR == 1 || $1 < lo) lo = $1; if (NR == 1 || $1 > hi) hi = $1 } END { printf "%.1f %.1f %.1f", s / NR, lo, hi }'
}
mean() { set -- $(stat3 "$1" "$2"); echo "$1"; }
kindsum() {             # CONFIG KIND FIELD(3=ms 4=requests 5=bytes): mean over the configuration's boots
        local l; for l in $(members "$1"); do
                awk -F'\t' -v k="$2" -v f="$3" '$1 == "kind" && $2 == k { v = $f } END { print v + 0 }' \
                        "$RES/$(run_of "$l")/m/$l/breakdown.txt"
        done | awk '{ s += $1 } END { printf "%.1f", NR ? s / NR : 0 }'
}
run_of() { local r; for r in base seekless e4defrag; do [ -d "$RES/$r/m/$1" ] && { echo "$r"; return; }; done; }
le() { awk -v a="$1" -v t="$2" 'BEGIN { print (a <= t) ? "PASS" : "FAIL" }'; }
have=()
for c in "${CONFIGS[@]}"; do
        if [ -n "$(members "$c")" ]; then have+=("$c")
        elif [ -z "${BOOT_RESULTS:-}" ]; then die "no measured boot for $c"
        fi
done
CONFIGS=("${have[@]}")
declare -A MS=()
for c in "${CONFIGS[@]}"; do MS[$c]=$(mean "$c" ms); done
vs() {                  # A B [TARGET]: "A / B ms = x" (+ verdict), or n/a
        [ -n "${MS[$1]:-}" ] && [ -n "${MS[$2]:-}" ] || { echo "n/a"; return; }
        local r; r=$(ratio "${MS[$1]}" "${MS[$2]}")
        echo "${MS[$1]} / ${MS[$2]} ms = ${r}x${3:+  (target <= $3)  $(le "$r" "$3")}"
}

echo
echo "================= seekless boot I/O benchmark ================="
echo "date $RUN_DATE; source $DESCRIBE; $IMG_ID"
echo "guest: Debian 12, $(sed -n 's/.*\[\(.*\)\].*/\1/p;q' "$RES/base/m/fresh-1/tracing.txt") trace clock, root /dev/vda ($(sed -n 1p "$RES/base/m/fresh-1/vda.txt"), $(( $(sed -n 2p "$RES/base/m/fresh-1/vda.txt") / 2048 )) MiB, rotational $(sed -n 3p "$RES/base/m/fresh-1/vda.txt"), read-ahead $(sed -n 4p "$RES/base/m/fresh-1/vda.txt") KiB, scheduler $(sed -n 5p "$RES/base/m/fresh-1/vda.txt" | sed 's/.*\[\(.*\)\].*/\1/'));" \
        "QEMU $(_vm_accel | sed 's/-accel //'), ${VM_SMP:-2} vCPU, ${VM_MEM:-1024} MiB; seeklessd enabled and running in every configuration"
echo "boot I/O = reads of /dev/vda issued from the kernel's start to StartupFinished (FinishTimestampMonotonic);" \
        "model: 7200 rpm disk (daemon/plan/layout.c), 150 MB/s; SEED=$SEED, $REPS boot(s) per configuration"
echo
printf '%-17s %5s %28s %9s %9s %12s %12s %11s\n' configuration boots "modeled boot I/O ms (min-max)" requests "MiB read" \
        "profile ms" "other ms" "TCG boot s"
printf '%-17s %5s %28s %9s %9s %12s %12s %11s\n' ----- ----- ----- ----- ----- ----- ----- -----
for c in "${CONFIGS[@]}"; do
        set -- $(stat3 "$c" ms)
        printf '%-17s %5s %28s %9s %9s %12s %12s %11s\n' "${TITLE[$c]}" "$(members "$c" | wc -l)" \
                "$(printf '%.1f (%.1f-%.1f)' "$1" "$2" "$3")" "$(mean "$c" requests)" \
                "$(awk -v b="$(mean "$c" bytes)" 'BEGIN { printf "%.1f", b / 1048576 }')" \
                "$(kindsum "$c" profile 3)" \
                "$(awk -v a="$1" -v p="$(kindsum "$c" profile 3)" 'BEGIN { printf "%.1f", a - p }')" \
                "$(mean "$c" fin)"
done
echo
echo "aged + seekless / aged:           $(vs seekless aged 0.50)"
echo "aged + seekless / fresh install:  $(vs seekless fresh 1.00)"
echo "also: aged / fresh: $(vs aged fresh); aged + e4defrag / aged: $(vs e4defrag aged);" \
        "aged + seekless / aged + e4defrag: $(vs seekless e4defrag)"
echo "(means over the boots; 'profile ms' = the part of the modeled time spent on requests whose first block belongs"
echo " to a file of the boot profile (data or extent tree), 'other ms' = the rest; TCG boot s = StartupFinished in the"
echo " guest (systemd-analyze's total) under emulation, context only: it measures QEMU's TCG, not a disk)"
echo
echo "issued before anything of seekless ran (before the first request of a seeklessd process: the early pass, which"
echo "seeklessd.service, the recorder, starts after), so not seen by the recorder as it happened (mean per boot):"
for c in "${CONFIGS[@]}"; do
        printf '  %-17s %7s of %7s ms (%s %%; profile files %s ms of %s); first seeklessd request at %s s, StartupFinished at %s s\n' \
                "${TITLE[$c]}" "$(mean "$c" pre_ms)" "${MS[$c]}" "$(awk -v a="$(mean "$c" pre_ms)" -v b="${MS[$c]}" 'BEGIN { printf "%.0f", 100 * a / b }')" \
                "$(mean "$c" pre_profile_ms)" "$(kindsum "$c" profile 3)" "$(mean "$c" seekless_ts)" "$(mean "$c" fin)"
done
echo
echo "where the modeled time goes (mean ms / requests / MiB per boot, by the owner of each request's first block):"
KINDS=(profile file dir itable journal meta special unresolved)
printf '%-17s' ""; for k in "${KINDS[@]}"; do printf ' %19s' "$k"; done; echo
for c in "${CONFIGS[@]}"; do
        printf '%-17s' "${TITLE[$c]}"
        for k in "${KINDS[@]}"; do
                printf ' %19s' "$(kindsum "$c" "$k" 3)/$(kindsum "$c" "$k" 4 | cut -d. -f1)/$(awk -v b="$(kindsum "$c" "$k" 5)" 'BEGIN { printf "%.1f", b / 1048576 }')"
        done
        echo
done
echo "  profile = files of the boot profile as stored in that boot; file = other files; dir = directories;"
echo "  itable = inode tables; journal = the ext4 journal; meta = other blocks without an owner (superblock, group"
echo "  descriptors, bitmaps, blocks freed since); unresolved = request start not looked up"
echo
echo "the largest single contributors (mean ms and requests per boot; kind:owner of each request's first block; the"
echo "20 owners with the highest cost in any configuration):"
printf '  %-66s' "owner"; for c in "${CONFIGS[@]}"; do printf ' %16s' "${TITLE[$c]}"; done; echo
for c in "${CONFIGS[@]}"; do
        nb=$(members "$c" | wc -l)
        for l in $(members "$c"); do
                awk -F'\t' -v c="$c" -v nb="$nb" '$1 == "path" { print c "\t" $2 "\t" $3 / nb "\t" $4 / nb }' \
                        "$RES/$(run_of "$l")/m/$l/breakdown.txt"
        done
done | awk -F'\t' -v cs="${CONFIGS[*]}" '
        { ms[$2 SUBSEP $1] += $3; rq[$2 SUBSEP $1] += $4; if (ms[$2 SUBSEP $1] > top[$2]) top[$2] = ms[$2 SUBSEP $1] }
        END { nc = split(cs, c, " ")
              for (k in top) { line = sprintf("  %-66s", length(k) > 66 ? "..." substr(k, length(k) - 62) : k)
                               for (i = 1; i <= nc; i++) line = line sprintf(" %9.1f (%4.0f)", ms[k SUBSEP c[i]], rq[k SUBSEP c[i]])
                               printf "%012.1f\t%s\n", top[k], line } }' | sort -r | awk -F'\t' 'NR <= 20 { print $2 }'
echo
echo "per boot: label, modeled ms, requests, MiB, StartupFinished s (guest, TCG), boot profile files, the profile's"
echo "  whole-file model (seeklessctl report boot: modeled ms, extents, discontinuities), how seeklessd's boot session"
echo "  ended (finish = StartupFinished + BootTailSec, cap = BootWindowSec), trace clock offset ms (marker vs CLOCK_MONOTONIC"
echo "  read right after it; an upper bound), systemd-analyze:"
for l in "${LABELS[@]}"; do
        printf '  %-11s %9s %6s %6s %7s %5s  [%s]  %-6s %6s  %s\n' "$l" "${R[$l,ms]}" "${R[$l,requests]}" \
                "$(awk -v b="${R[$l,bytes]}" 'BEGIN { printf "%.1f", b / 1048576 }')" "${R[$l,fin]}" \
                "${R[$l,profile_files]}" "$(awk '{ printf "%.1f %d %d", $1, $2, $3 }' <<< "${R[$l,static]}")" \
                "${R[$l,window]}" "${R[$l,clock]}" "${R[$l,analyze]}"
done
echo
echo "aging (after boot $((REPS + 1)), scatter SEED=$SEED): $(sed -n 's/^scatter: //p' "$RES/base/scatter.log") of the boot profile;" \
        "not: $(sed -n 's/^\(.*\): skipped: \(.*\)/\1 (\2)/p' "$RES/base/scatter.log" | tr '\n' ' ')"
[ -s "$RES/seekless/optimize.json" ] && echo "seekless: seeklessctl optimize (all profiles; [Optimize] MinFileAgeSec=0 from boot 2 on in every configuration):" \
        "$(jq -c '{state, moved_files, moved_bytes, skipped: ([.skipped[].reason] | group_by(.) | map({(.[0]): length}) | add)}' "$RES/seekless/optimize.json")"
[ -s "$RES/seekless/optimize.json" ] && echo "  not moved on /: $(jq -r '[.skipped[] | select(.path | startswith("/mnt/vmtest/") | not) | "\(.path) (\(.reason))"] | unique | join(", ")' "$RES/seekless/optimize.json")"
grep -sh . "$RES/seekless/optimize.log" | awk 'NR <= 5 { print "  daemon: " $0 }'
for l in $(grep -s '^seekless-early-' "$RES/seekless/labels"); do
        grep -E '^early pass on' "$RES/seekless/m/$l/early.log" | sed "s|^|  $l (not measured): |"
done
[ -s "$RES/e4defrag/e4defrag.log" ] && echo "e4defrag: $(wc -l < "$RES/e4defrag/e4defrag-list.txt") files of the boot profile," \
        "$(sed -n 's/^ *Success:[[:space:]]*\[\([0-9]*\)\/\([0-9]*\)\]/\1 \2/p' "$RES/e4defrag/e4defrag.log" | awk '{ a += $1; b += $2 } END { print a " of " b }') defragmented;" \
        "not: $(awk '/^ext4 defragmentation for / { f = $4 } /^ *Success:.*\[0\/1\]/ { printf "%s ", f }' "$RES/e4defrag/e4defrag.log")"
[ -s "$RES/e4defrag/e4defrag-list.txt" ] && [ -s "$RES/seekless/optimized-profile.txt" ] && echo "profile lists: aged $(wc -l < "$RES/base/scattered.txt"), optimized $(wc -l < "$RES/seekless/optimized-profile.txt")," \
        "e4defragged $(wc -l < "$RES/e4defrag/e4defrag-list.txt"); optimized but not aged: $(grep -cvxF -f "$RES/base/scattered.txt" "$RES/seekless/optimized-profile.txt" || true)," \
        "e4defragged files = the optimized boot profile's files: $(cmp -s <(sort "$RES/seekless/optimized-profile.txt") <(sort "$RES/e4defrag/e4defrag-list.txt") && echo yes || echo no)"
if [ -s "$VM_TMP/anomalies" ]; then echo "anomalies:"; sed 's/^/  /' "$VM_TMP/anomalies"; else echo "anomalies: none"; fi
echo "whole run (image build and all boots): ${RUN_SECS:-?} s${BOOT_RESULTS:+; this output: analysis of its kept results}"
echo "==============================================================="
[ "${VM_KEEP:-0}" = 1 ] && echo "results kept in $RES"
exit 0
