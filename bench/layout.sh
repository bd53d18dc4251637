#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Relocation (layout) benchmark for seeklessd. See bench/README.md, section "Layout".
#
#   sudo bench/layout.sh [BUILD_DIR]        (default: build/)
#
# One run, side by side, from the SAME aged bytes (one aged 1 GiB image built by tools/age-image.sh with a
# seed, then byte-copied per variant):
#   A aged        the image unchanged;
#   B seekless    seeklessd (state recorded on the aged image) + Optimize on a copy; timed -> relocation MiB/s;
#   C e4defrag    `e4defrag FILE...` on the profile's files on a copy;
#   D fresh copy  a new filesystem; the profile's files copied first, in profile order, then everything else;
#   E sequential  the profile's bytes / 150 MB/s (arithmetic).
# For A-D: static layout quality of the profile's files in profile order (layoutq: FIEMAP + the daemon's
# model) and a cold-cache run of the real workload with the loop device's block:block_rq_issue events
# traced (trace-cost: request count and the model applied to the request trace). Plus cp throughput of
# the same files on a copy of the aged image, cold cache, including sync.
# Prints PASS/FAIL against the targets; exits 0 whatever the verdicts, 1 if something broke, 77 if not root.
#
# Knobs (environment): SEED=7 NFILES=60 MAXKIB=1024 IMGSIZE=1G REPS=5 (relocations and cp runs); KEEP=1 keeps the scratch directory (images,
# traces, daemon log) after the run (everything else is still stopped, unmounted and detached).

set -euo pipefail

SEED=${SEED:-7}
NFILES=${NFILES:-60}
MAXKIB=${MAXKIB:-1024}
IMGSIZE=${IMGSIZE:-1G}
KEEP=${KEEP:-0}
REPS=${REPS:-5}
TRANSFER_BPS=150000000          # the model's (and the sequential limit's) 150 MB/s

. "$(dirname "$0")/lib.sh"
bench_init layout cc mkfs.ext4 e2fsck losetup dbus-daemon busctl jq e4defrag filefrag -- "$@"
bench_binaries daemon/seeklessd cli/seeklessctl tests/open-files
OPEN_FILES=${BIN[open-files]}

mkimg() { make_ext4_image "$1" "$IMGSIZE"; }

# ---------------------------------------------------------------------------------------------- setup
log "seekless layout benchmark: $(date -u '+%Y-%m-%d %H:%M UTC'), kernel $(uname -r), $(nproc) CPU(s)"
log "build: $BUILD; scratch: $TMP; seed $SEED, $NFILES files of 4-$MAXKIB KiB, ${IMGSIZE} images"
log "$(bench_source); seeklessd binary sha256 $(sha256sum "$SEEKLESSD" | cut -c1-12)"
bench_cc layoutq bench/layoutq.c daemon/plan/layout.c daemon/fs/fiemap.c
bench_cc trace-cost bench/trace-cost.c daemon/plan/layout.c

trace_setup 16384
start_bus
printf '[Record]\nRecorder='"${RECORDER:-fanotify}"'\nBootWindowSec=1\nLaunchWindowSec=3\n[Optimize]\nMinFileAgeSec=0\n' > "$TMP/seekless.conf"

# ------------------------------------------------------------------------- the aged image + profile
MNT=$TMP/mnt
mkimg "$TMP/aged.img"
attach "$TMP/aged.img"; LOOP=$ATTACHED
do_mount "$LOOP" "$MNT"
log "aging $MNT ($LOOP) with tools/age-image.sh $MNT $SEED $NFILES $MAXKIB"
t0=$(now)
bash "$SRC/tools/age-image.sh" "$MNT" "$SEED" "$NFILES" "$MAXKIB" | sed 's/^/  /'
log "  aged in $(elapsed "$t0" "$(now)") s"
mkdir -p "$MNT/bin"
cp "$OPEN_FILES" "$MNT/bin/prog"
sync

start_seekless "$TMP/seekless.conf" "$TMP/state" "$MNT"
# the files in a seeded random order (as tests/lib.sh setup_aged_profile)
mapfile -t READ_ORDER < <(ls "$MNT"/aged/f* | awk -v s="$SEED" 'BEGIN { srand(s) } { print rand() "\t" $0 }' | sort | cut -f2)
"$MNT/bin/prog" "${READ_ORDER[@]}" || die "the program failed on the aged image"
wait_until 30 has_profile "$MNT/bin/prog" || die "launch not recorded"
"$SEEKLESSCTL" --json=short show "$MNT/bin/prog" > "$TMP/profile.json"
jq -r '.files[].path' "$TMP/profile.json" | sed "s|^$MNT/||" > "$TMP/profile.txt"
mapfile -t PROFILE < "$TMP/profile.txt"
log "profile: ${#PROFILE[@]} files (first: ${PROFILE[0]}), recorded from ${#READ_ORDER[@]} reads"
[ "${#PROFILE[@]}" -ge 2 ] || die "profile too short"
# the workload's arguments: the profile's files minus the program itself (its exec reads it)
ARGS=()
for p in "${PROFILE[@]}"; do [ "$p" = bin/prog ] || ARGS+=("$p"); done
recorded=$(printf '%s\n' "${READ_ORDER[@]#"$MNT/"}"); replayed=$(printf '%s\n' "${ARGS[@]}")
[ "$recorded" = "$replayed" ] || echo "ANOMALY: the profile order differs from the order the files were read" >&2
stop_seekless
do_umount "$MNT"
detach "$LOOP"

log "copying the aged image (cp --sparse=always) for the variants"
cp --sparse=always "$TMP/aged.img" "$TMP/e4defrag.img"
attach "$TMP/aged.img"; SLOOP=$ATTACHED
do_mount "$SLOOP" "$TMP/src0" ro

# ------------------------------------------------------------------ B: seekless, and cp throughput
# REPS relocations, each on its own byte copy with its own copy of the state directory, interleaved with REPS
# timed cp runs of the same files on other byte copies; the medians are compared. Copy 1 of B is measured below.
relocate() {        # REP
        local r=$1 secs files bytes skipped runline l
        cp --sparse=always "$TMP/aged.img" "$TMP/seekless-$r.img"
        cp -a "$TMP/state" "$TMP/state-seekless-$r"
        attach "$TMP/seekless-$r.img"; l=$ATTACHED
        do_mount "$l" "$MNT"
        local logpos; logpos=$(wc -l < "$TMP/daemon.log")
        start_seekless "$TMP/seekless.conf" "$TMP/state-seekless-$r" "$MNT"
        has_profile "$MNT/bin/prog" >/dev/null || die "the copied state has no profile for $MNT/bin/prog"
        [ "$r" = 1 ] && { "$SEEKLESSCTL" --json=short plan > "$TMP/plan.json" 2>&1 || true; }
        cold
        t0=$(now)
        if [ "$CLI_OPT" = 1 ]; then
                "$SEEKLESSCTL" --json=short optimize > "$TMP/opt-$r.json" ||
                        die "seeklessctl optimize failed: $(cat "$TMP/opt-$r.json")"
                t1=$(now)
                files=$(jq -r .moved_files "$TMP/opt-$r.json") bytes=$(jq -r .moved_bytes "$TMP/opt-$r.json")
                skipped=$(jq -c '.skipped' "$TMP/opt-$r.json")
        else
                busctl --system --json=short call org.seekless.Seekless1 /org/seekless/Seekless1 \
                        org.seekless.Seekless1.Manager Optimize as 0 > "$TMP/opt-$r.json" || die "Optimize call failed"
                while optimizing; do sleep 0.02; done
                t1=$(now)
                files=$(jq -r '.data[1]' "$TMP/opt-$r.json") bytes=$(jq -r '.data[2]' "$TMP/opt-$r.json")
                skipped=$(jq -c '.data[3]' "$TMP/opt-$r.json")
        fi
        secs=$(elapsed "$t0" "$t1")
        sleep 0.3
        runline=$(tail -n +"$((logpos + 1))" "$TMP/daemon.log" | grep -o 'Run [0-9]* on .* finished: .*' | tail -n1 || true)
        [ -n "$runline" ] || { runline=$(tail -n +"$((logpos + 1))" "$TMP/daemon.log" | grep -o 'Run [0-9]* on .*donor in.*' | tail -n1 || true);
                echo "ANOMALY: relocation $r: no 'Run N ... finished' line in the daemon log; last run line: ${runline:-none}" >&2; }
        [ "$skipped" = "[]" ] || echo "ANOMALY: relocation $r: optimize skipped files: $skipped" >&2
        result measure relocation variant seekless rep "$r" files "$files" bytes "$bytes" secs "$secs" \
                mibs "$(mibs "$bytes" "$secs")" daemon "$runline"
        log "  relocation $r: $files files, $bytes bytes in $secs s (wall) = $(mibs "$bytes" "$secs") MiB/s; daemon: $runline"
        if [ "$r" = 1 ]; then
                "$SEEKLESSCTL" --json=short report "$MNT/bin/prog" > "$TMP/report.json" 2>&1 || true
                result measure report variant seekless report "$(jq -c '.[0] | {now: .modeled_read_ms, before: .before.modeled_read_ms,
                        discontinuities, before_discontinuities: .before.discontinuities}' "$TMP/report.json" 2>/dev/null ||
                        head -c 300 "$TMP/report.json")"
        fi
        stop_seekless
        do_umount "$MNT"
        e2fsck -fn "$l" > "$TMP/fsck.out" 2>&1 || { cat "$TMP/fsck.out"; die "e2fsck -fn found problems after optimize $r"; }
        detach "$l"
        [ "$r" = 1 ] || rm -f "$TMP/seekless-$r.img"
}
cp_run() {          # REP
        local r=$1 l secs
        cp --sparse=always "$TMP/aged.img" "$TMP/cp-$r.img"
        attach "$TMP/cp-$r.img"; l=$ATTACHED
        do_mount "$l" "$MNT"
        mkdir -p "$MNT/cpdst"
        sync
        cold
        t0=$(now)
        (cd "$MNT" && for p in "${PROFILE[@]}"; do mkdir -p "cpdst/$(dirname "$p")"; cp "$p" "cpdst/$p"; done; sync)
        secs=$(elapsed "$t0" "$(now)")
        result measure cp variant cp rep "$r" bytes "$CP_BYTES" secs "$secs" mibs "$(mibs "$CP_BYTES" "$secs")"
        log "  cp $r: $CP_BYTES bytes in $secs s = $(mibs "$CP_BYTES" "$secs") MiB/s"
        do_umount "$MNT"
        detach "$l"
        rm -f "$TMP/cp-$r.img"
}

CLI_OPT=0
"$SEEKLESSCTL" --help 2>&1 | grep -qw optimize && CLI_OPT=1
if [ "$CLI_OPT" = 1 ]; then
        OPT_HOW="seeklessctl --json optimize (blocks until the run finished)"
else
        OPT_HOW="busctl Optimize + polling Optimizing every 20 ms (seeklessctl has no 'optimize' verb in this build)"
fi
CP_BYTES=0
for p in "${PROFILE[@]}"; do CP_BYTES=$((CP_BYTES + $(stat -c %s "$TMP/src0/$p"))); done
do_umount "$TMP/src0"
detach "$SLOOP"
log "B seekless: $REPS relocations (seeklessd on a byte copy, copied state directory, same mount point)," \
        "interleaved with $REPS timed cp runs of the same files (cold cache, incl. sync)"
for ((r = 1; r <= REPS; r++)); do
        if ((r % 2)); then relocate "$r"; cp_run "$r"; else cp_run "$r"; relocate "$r"; fi
done
mv "$TMP/seekless-1.img" "$TMP/seekless.img"

# ------------------------------------------------------------------------------------- C: e4defrag
log "C e4defrag: e4defrag on the profile's files on a byte copy"
attach "$TMP/e4defrag.img"; LOOP=$ATTACHED
do_mount "$LOOP" "$MNT"
cold
t0=$(now)
(cd "$MNT" && e4defrag "${PROFILE[@]}") > "$TMP/e4defrag.out" 2>&1 || true
sync
E4_SECS=$(elapsed "$t0" "$(now)")
E4_OK=$(grep -c 'Success' "$TMP/e4defrag.out" || true)
log "  e4defrag: $E4_OK of ${#PROFILE[@]} files reported success, in $E4_SECS s (incl. sync)"
[ "$E4_OK" = "${#PROFILE[@]}" ] || { echo "ANOMALY: e4defrag output:" >&2; sed 's/^/  /' "$TMP/e4defrag.out" >&2; }
do_umount "$MNT"
detach "$LOOP"

# ----------------------------------------------------------------------------------- D: fresh copy
log "D fresh copy: new filesystem, the profile's files first in profile order (each synced), then cp -a -n of the rest"
mkimg "$TMP/fresh.img"
attach "$TMP/aged.img"; SLOOP=$ATTACHED
do_mount "$SLOOP" "$TMP/src" ro
attach "$TMP/fresh.img"; LOOP=$ATTACHED
do_mount "$LOOP" "$MNT"
copy_in_order "$TMP/src" "$MNT" "${PROFILE[@]}"
cp -a -n "$TMP/src/." "$MNT/"
sync
[ "$(cd "$TMP/src" && find . -xdev -type f | wc -l)" = "$(cd "$MNT" && find . -xdev -type f | wc -l)" ] ||
        die "the fresh copy does not hold the same number of files"
do_umount "$MNT"
detach "$LOOP"
do_umount "$TMP/src"
detach "$SLOOP"

# ------------------------------------------------------------------- A-D: static + traced cold runs
workload() { (cd "$1" && ./bin/prog "${ARGS[@]}"); }     # DIR
measure() {         # VARIANT IMAGE
        local v=$1 img=$2 l dir=$TMP/m-$1 q t rstart rend wall
        attach "$img"; l=$ATTACHED
        do_mount "$l" "$dir" ro
        q=$(cd "$dir" && "$TMP/layoutq" "${PROFILE[@]}") || die "layoutq failed on $v"
        result_with "$q" measure files variant "$v"
        [ "$v" != aged ] || LOOP_QUEUE="$(cat "/sys/block/${l#/dev/}/queue/read_ahead_kb") KiB read-ahead, max_sectors_kb $(cat "/sys/block/${l#/dev/}/queue/max_sectors_kb"), scheduler $(sed 's/.*\[\(.*\)\].*/\1/' "/sys/block/${l#/dev/}/queue/scheduler")"
        trace_dev "$l"
        cold
        rstart=$(now)
        trace_run "$TMP/trace-$v.txt" workload "$dir" || die "the workload failed on $v"
        rend=$(now)
        trace_undev
        trace_lost "$TMP/trace-$v.txt" "$v"
        t=$("$TMP/trace-cost" $((16#$(stat -c %t "$l"))) $((16#$(stat -c %T "$l"))) "$(jv device_bytes "$q")" < "$TMP/trace-$v.txt")
        wall=$(awk -v a="$rstart" -v b="$rend" 'BEGIN { printf "%.0f", (b - a) * 1000 }')
        result_with "$t" measure trace variant "$v" wall_ms "$wall"
        log "  $v ($l): $q"
        log "  $v cold run: $t; wall $wall ms"
        do_umount "$dir"
        detach "$l"
}
log "measuring: layoutq over the profile in profile order, and the workload cold with block_rq_issue traced"
measure aged "$TMP/aged.img"
measure seekless "$TMP/seekless.img"
measure e4defrag "$TMP/e4defrag.img"
measure fresh "$TMP/fresh.img"

# --------------------------------------------------------------------------------------- summary
result measure run date "$(date -u '+%Y-%m-%d %H:%M UTC')" kernel "$(uname -r)" cpus "$(nproc)" seed "$SEED" \
        nfiles "$NFILES" maxkib "$MAXKIB" imgsize "$IMGSIZE" reps "$REPS" profile_files "${#PROFILE[@]}" \
        cp_bytes "$CP_BYTES" loop_queue "$LOOP_QUEUE" transfer_bps "$TRANSFER_BPS" optimize_how "$OPT_HOW" \
        e4defrag_secs "$E4_SECS"
bench_finish
