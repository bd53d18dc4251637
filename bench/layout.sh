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

SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
[ -d "$BUILD" ] || BUILD=$SRC/$BUILD
BUILD=$(cd "$BUILD" && pwd)
SEEKLESSD=$BUILD/daemon/seeklessd
SEEKLESSCTL=$BUILD/cli/seeklessctl
OPEN_FILES=$BUILD/tests/open-files

if [ "$(id -u)" != 0 ]; then
        echo "SKIP: bench/layout.sh needs root (fanotify, loop devices, tracefs): sudo $0 ${1:-build}"
        exit 77
fi
for x in "$SEEKLESSD" "$SEEKLESSCTL" "$OPEN_FILES"; do
        [ -x "$x" ] || { echo "ERROR: $x not found; build first (ninja -C build)" >&2; exit 1; }
done
for t in cc mkfs.ext4 e2fsck losetup dbus-daemon busctl jq e4defrag filefrag; do
        command -v "$t" >/dev/null || { echo "ERROR: $t is required" >&2; exit 1; }
done

TMP=$(mktemp -d /tmp/seekless-layout.XXXXXX)
. "$SRC/tests/scratch.sh" && scratch_claim "$TMP"     # a test suite starting meanwhile leaves it alone
LOOPS=() MOUNTS=() BUS_PID= DAEMON_PID= TRACEFS_MOUNTED= TRACE_INST=
TRACEFS=/sys/kernel/tracing

cleanup() {
        local rc=$? i
        set +e
        if [ -n "$DAEMON_PID" ] && kill -0 "$DAEMON_PID" 2>/dev/null; then
                kill -TERM "$DAEMON_PID"
                for _ in $(seq 100); do kill -0 "$DAEMON_PID" 2>/dev/null || break; sleep 0.1; done
                kill -KILL "$DAEMON_PID" 2>/dev/null
                wait "$DAEMON_PID" 2>/dev/null
        fi
        [ -n "$BUS_PID" ] && kill "$BUS_PID" 2>/dev/null
        if [ -n "$TRACE_INST" ] && [ -d "$TRACE_INST" ]; then
                echo 0 > "$TRACE_INST/tracing_on"
                echo 0 > "$TRACE_INST/events/block/block_rq_issue/enable"
                echo 0 > "$TRACE_INST/events/block/block_rq_issue/filter"
                rmdir "$TRACE_INST"
        fi
        for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
                if mountpoint -q "${MOUNTS[i]}"; then
                        umount "${MOUNTS[i]}" 2>/dev/null || { sleep 1; umount -l "${MOUNTS[i]}"; }
                fi
        done
        for ((i = ${#LOOPS[@]} - 1; i >= 0; i--)); do
                losetup -d "${LOOPS[i]}" 2>/dev/null
        done
        [ -n "$TRACEFS_MOUNTED" ] && umount "$TRACEFS"
        if [ "$KEEP" = 1 ]; then echo "KEEP=1: scratch directory kept: $TMP" >&2; touch "$TMP/.keep"; else rm -rf "$TMP"; fi
        exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log() { printf '[%(%H:%M:%S)T] %s\n' -1 "$*"; }
die() { echo "ERROR: $*" >&2; [ -s "$TMP/daemon.log" ] && { echo "---- daemon log ----" >&2; tail -n 30 "$TMP/daemon.log" >&2; }; exit 1; }

wait_until() {      # SECONDS CMD...
        local t=$1 i; shift
        for ((i = 0; i < t * 10; i++)); do
                "$@" >/dev/null 2>&1 && return 0
                sleep 0.1
        done
        return 1
}
now() { echo "$EPOCHREALTIME"; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
random_boot_id() { od -An -N16 -tx1 /dev/urandom | tr -d ' \n'; }
cold() { sync; echo 3 > /proc/sys/vm/drop_caches; }
kv() { sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" <<< "$2"; }   # KEY "k=v k=v" -> v
mibs() { awk -v b="$1" -v s="$2" 'BEGIN { printf "%.1f", b / 1048576 / s }'; }

# attach IMG -> $ATTACHED, the loop device, remembered for cleanup until detached (not in a subshell: the
# list must live in this shell); mount LOOP DIR [OPTS], remembered until unmounted
attach() { ATTACHED=$(losetup --find --show "$1") || die "losetup $1"; LOOPS+=("$ATTACHED"); }
forget() {          # ARRAY-NAME VALUE: drop VALUE from the array
        local -n arr=$1
        local keep=() x
        for x in "${arr[@]}"; do [ "$x" = "$2" ] || keep+=("$x"); done
        arr=("${keep[@]+"${keep[@]}"}")
}
detach() { losetup -d "$1" || die "losetup -d $1"; forget LOOPS "$1"; }
do_mount() { mkdir -p "$2"; mount -t ext4 ${3:+-o "$3"} "$1" "$2" || die "mount $1 $2"; MOUNTS+=("$2"); }
do_umount() { umount "$1" || die "umount $1"; forget MOUNTS "$1"; }
mkimg() { truncate -s "$IMGSIZE" "$1"; mkfs.ext4 -q -F -b 4096 -E lazy_itable_init=0,lazy_journal_init=0 "$1"; }

prop() {
        busctl --system get-property org.seekless.Seekless1 /org/seekless/Seekless1 \
                org.seekless.Seekless1.Manager "$1" | cut -d' ' -f2-
}
boot_over() { [ "$(prop BootRecording)" = false ]; }
optimizing() { [ "$(prop Optimizing)" = true ]; }
has_profile() { "$SEEKLESSCTL" --json=short profiles | jq -e --arg n "$1" 'any(.[]; .name == $n)'; }

start_daemon() {    # STATE_DIR MOUNT
        "$SEEKLESSD" --config="$TMP/seekless.conf" --state-dir="$1" --boot-id="$(random_boot_id)" \
                --filesystem="$2" --log-level=info >>"$TMP/daemon.log" 2>&1 &
        DAEMON_PID=$!
        wait_until 20 busctl --system status org.seekless.Seekless1 || die "seeklessd did not appear on the bus"
        wait_until 30 boot_over || die "boot window did not close"
}
stop_daemon() {
        local rc=0
        kill -TERM "$DAEMON_PID"
        wait "$DAEMON_PID" || rc=$?
        DAEMON_PID=
        [ "$rc" = 0 ] || die "seeklessd exited with status $rc on SIGTERM"
}

# ---------------------------------------------------------------------------------------------- setup
log "seekless layout benchmark: $(date -u '+%Y-%m-%d %H:%M UTC'), kernel $(uname -r), $(nproc) CPU(s)"
log "build: $BUILD; scratch: $TMP; seed $SEED, $NFILES files of 4-$MAXKIB KiB, ${IMGSIZE} images"
mkdir -p "$TMP/bin"
cp "$SEEKLESSD" "$SEEKLESSCTL" "$OPEN_FILES" "$TMP/bin/"
SEEKLESSD=$TMP/bin/seeklessd SEEKLESSCTL=$TMP/bin/seeklessctl OPEN_FILES=$TMP/bin/open-files
log "source $(git -C "$SRC" describe --always --dirty 2>/dev/null || echo '(not a git tree)');" \
        "seeklessd binary sha256 $(sha256sum "$SEEKLESSD" | cut -c1-12)"
cc -O2 -Wall -std=gnu11 -I "$SRC" -I "$SRC/daemon" -o "$TMP/layoutq" "$SRC/bench/layoutq.c" \
        "$SRC/daemon/plan/layout.c" "$SRC/daemon/fs/fiemap.c" -lm || die "cannot compile bench/layoutq.c"
cc -O2 -Wall -std=gnu11 -I "$SRC" -I "$SRC/daemon" -o "$TMP/trace-cost" "$SRC/bench/trace-cost.c" \
        "$SRC/daemon/plan/layout.c" -lm || die "cannot compile bench/trace-cost.c"

# tracefs: a private instance (own buffer, own event enable and filter), so global tracing is untouched
if [ ! -e "$TRACEFS/instances" ]; then
        mount -t tracefs nodev "$TRACEFS" || die "cannot mount tracefs at $TRACEFS"
        TRACEFS_MOUNTED=1
fi
TRACE_INST=$TRACEFS/instances/seekless-layout-$$
mkdir "$TRACE_INST" || { TRACE_INST=; die "cannot create a tracefs instance"; }
echo 0 > "$TRACE_INST/tracing_on"
echo 16384 > "$TRACE_INST/buffer_size_kb"

# private system-like bus with the project's policy
. "$SRC/tests/private-bus.sh"
start_private_bus "$TMP/bus" "$SRC"
printf '[Record]\nBootWindowSec=1\nLaunchWindowSec=3\n[Optimize]\nMinFileAgeSec=0\n' > "$TMP/seekless.conf"

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

start_daemon "$TMP/state" "$MNT"
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
stop_daemon
do_umount "$MNT"
detach "$LOOP"

log "copying the aged image (cp --sparse=always) for the variants"
cp --sparse=always "$TMP/aged.img" "$TMP/e4defrag.img"
attach "$TMP/aged.img"; SLOOP=$ATTACHED
do_mount "$SLOOP" "$TMP/src0" ro

declare -A RES=()   # RES[variant,key]

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
        start_daemon "$TMP/state-seekless-$r" "$MNT"
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
        REL_SECS+=("$secs") REL_BYTES+=("$bytes") REL_FILES+=("$files") REL_LINES+=("$runline")
        REL_RATE+=("$(mibs "$bytes" "$secs")")
        log "  relocation $r: $files files, $bytes bytes in $secs s (wall) = ${REL_RATE[-1]} MiB/s; daemon: $runline"
        [ "$r" = 1 ] && { "$SEEKLESSCTL" --json=short report "$MNT/bin/prog" > "$TMP/report.json" 2>&1 || true; }
        stop_daemon
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
        CP_SECS+=("$secs") CP_RATE+=("$(mibs "$CP_BYTES" "$secs")")
        log "  cp $r: $CP_BYTES bytes in $secs s = ${CP_RATE[-1]} MiB/s"
        do_umount "$MNT"
        detach "$l"
        rm -f "$TMP/cp-$r.img"
}
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

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
REL_SECS=() REL_BYTES=() REL_FILES=() REL_LINES=() REL_RATE=() CP_SECS=() CP_RATE=()
log "B seekless: $REPS relocations (seeklessd on a byte copy, copied state directory, same mount point)," \
        "interleaved with $REPS timed cp runs of the same files (cold cache, incl. sync)"
for ((r = 1; r <= REPS; r++)); do
        if ((r % 2)); then relocate "$r"; cp_run "$r"; else cp_run "$r"; relocate "$r"; fi
done
REL_MIBS=$(printf '%s\n' "${REL_RATE[@]}" | median)
CP_MIBS=$(printf '%s\n' "${CP_RATE[@]}" | median)
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
for p in "${PROFILE[@]}"; do
        mkdir -p "$MNT/$(dirname "$p")"
        cp -p "$TMP/src/$p" "$MNT/$p"
        sync "$MNT/$p"          # allocate now, in this order (delayed allocation would pick the order at writeback)
done
cp -a -n "$TMP/src/." "$MNT/"
sync
[ "$(cd "$TMP/src" && find . -xdev -type f | wc -l)" = "$(cd "$MNT" && find . -xdev -type f | wc -l)" ] ||
        die "the fresh copy does not hold the same number of files"
do_umount "$MNT"
detach "$LOOP"
do_umount "$TMP/src"
detach "$SLOOP"

# ------------------------------------------------------------------- A-D: static + traced cold runs
measure() {         # VARIANT IMAGE
        local v=$1 img=$2 l dir=$TMP/m-$1 maj min dev q t rstart rend lost
        attach "$img"; l=$ATTACHED
        do_mount "$l" "$dir" ro
        q=$(cd "$dir" && "$TMP/layoutq" "${PROFILE[@]}") || die "layoutq failed on $v"
        maj=$((16#$(stat -c %t "$l"))) min=$((16#$(stat -c %T "$l")))
        RES[$v,static]=$q
        RES[$v,ra]="$(cat "/sys/block/${l#/dev/}/queue/read_ahead_kb") KiB read-ahead, max_sectors_kb $(cat "/sys/block/${l#/dev/}/queue/max_sectors_kb"), scheduler $(sed 's/.*\[\(.*\)\].*/\1/' "/sys/block/${l#/dev/}/queue/scheduler")"
        dev=$(kv device_bytes "$q")

        echo "dev == $(((maj << 20) | min))" > "$TRACE_INST/events/block/block_rq_issue/filter"
        echo 1 > "$TRACE_INST/events/block/block_rq_issue/enable"
        cold
        echo > "$TRACE_INST/trace"
        echo 1 > "$TRACE_INST/tracing_on"
        rstart=$(now)
        (cd "$dir" && ./bin/prog "${ARGS[@]}") || die "the workload failed on $v"
        rend=$(now)
        echo 0 > "$TRACE_INST/tracing_on"
        echo 0 > "$TRACE_INST/events/block/block_rq_issue/enable"
        echo 0 > "$TRACE_INST/events/block/block_rq_issue/filter"
        cat "$TRACE_INST/trace" > "$TMP/trace-$v.txt"
        lost=$(sed -n 's/^# entries-in-buffer\/entries-written: \([0-9]*\)\/\([0-9]*\).*/\1 \2/p' "$TMP/trace-$v.txt")
        [ "${lost% *}" = "${lost#* }" ] || echo "ANOMALY: $v: trace buffer lost events (in buffer/written: $lost)" >&2
        t=$("$TMP/trace-cost" "$maj" "$min" "$dev" < "$TMP/trace-$v.txt")
        RES[$v,trace]=$t
        RES[$v,wall]=$(awk -v a="$rstart" -v b="$rend" 'BEGIN { printf "%.0f", (b - a) * 1000 }')
        log "  $v ($l $maj:$min): $q"
        log "  $v cold run: $t; wall ${RES[$v,wall]} ms"
        do_umount "$dir"
        detach "$l"
}
log "measuring: layoutq over the profile in profile order, and the workload cold with block_rq_issue traced"
measure aged "$TMP/aged.img"
measure seekless "$TMP/seekless.img"
measure e4defrag "$TMP/e4defrag.img"
measure fresh "$TMP/fresh.img"

# --------------------------------------------------------------------------------------- summary
SEQ_BYTES=$(kv bytes "${RES[aged,static]}")
SEQ_MS=$(awk -v b="$SEQ_BYTES" -v r="$TRANSFER_BPS" 'BEGIN { printf "%.1f", b * 1000 / r }')
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
le() { awk -v a="$1" -v t="$2" 'BEGIN { print (a <= t) ? "PASS" : "FAIL" }'; }
ge() { awk -v a="$1" -v t="$2" 'BEGIN { print (a >= t) ? "PASS" : "FAIL" }'; }
st() { kv "$2" "${RES[$1,static]}"; }
trs() { kv "$2" "${RES[$1,trace]}"; }

echo
echo "================= seekless layout benchmark ================="
echo "date $(date -u '+%Y-%m-%d %H:%M UTC'); kernel $(uname -r); $(nproc) CPU(s); seed $SEED, $NFILES files of 4-$MAXKIB KiB"
echo "profile: ${#PROFILE[@]} files (program + files in recorded order), $CP_BYTES bytes; $IMGSIZE images"
echo "loop queue: ${RES[aged,ra]} (defaults, not changed)"
echo
printf '%-18s %8s %8s %9s %12s %9s %12s %10s %9s\n' variant extents discont "span MiB" "modeled ms" requests "trace ms" "trace MiB" "wall ms"
for v in aged seekless e4defrag fresh; do
        printf '%-18s %8s %8s %9s %12s %9s %12s %10s %9s\n' "$v" "$(st $v extents)" "$(st $v discontinuities)" \
                "$(awk -v s="$(st $v span)" 'BEGIN { printf "%.1f", s / 1048576 }')" "$(st $v modeled_ms)" \
                "$(trs $v requests)" "$(trs $v modeled_ms)" \
                "$(awk -v s="$(trs $v bytes)" 'BEGIN { printf "%.1f", s / 1048576 }')" "${RES[$v,wall]}"
done
printf '%-18s %8s %8s %9s %12s %9s %12s %10s %9s\n' "sequential limit" - - - "$SEQ_MS" - "$SEQ_MS" - -
echo
B_F_W=$(ratio "$(st seekless modeled_ms)" "$(st fresh modeled_ms)")
B_F_T=$(ratio "$(trs seekless modeled_ms)" "$(trs fresh modeled_ms)")
A_B_W=$(ratio "$(st aged modeled_ms)" "$(st seekless modeled_ms)")
A_B_T=$(ratio "$(trs aged modeled_ms)" "$(trs seekless modeled_ms)")
R_CP=$(ratio "$REL_MIBS" "$CP_MIBS")
echo "seekless / fresh copy, modeled time (target <= 1.25):  whole-file ${B_F_W}x $(le "$B_F_W" 1.25);  trace ${B_F_T}x $(le "$B_F_T" 1.25)"
echo "aged / seekless, modeled time (target >= 3):           whole-file ${A_B_W}x $(ge "$A_B_W" 3);  trace ${A_B_T}x $(ge "$A_B_T" 3)"
echo "relocation (median of $REPS) $REL_MIBS MiB/s vs cp (median of $REPS) $CP_MIBS MiB/s: ${R_CP} (target >= 0.40) $(ge "$R_CP" 0.40)"
echo "  relocation runs: ${REL_FILES[*]} files; ${REL_BYTES[*]} bytes; ${REL_SECS[*]} s wall; ${REL_RATE[*]} MiB/s"
echo "  cp runs: $CP_BYTES bytes each; ${CP_SECS[*]} s incl. sync; ${CP_RATE[*]} MiB/s"
echo "also: seekless / sequential limit whole-file $(ratio "$(st seekless modeled_ms)" "$SEQ_MS")x;" \
        "e4defrag / seekless whole-file $(ratio "$(st e4defrag modeled_ms)" "$(st seekless modeled_ms)")x," \
        "trace $(ratio "$(trs e4defrag modeled_ms)" "$(trs seekless modeled_ms)")x; e4defrag took $E4_SECS s"
echo "wall ms: elapsed time of the traced cold run (loop device over a file in /tmp on a VM disk): information only, not the model"
echo "optimize driven by: $OPT_HOW"
for ((r = 0; r < REPS; r++)); do echo "daemon, relocation $((r + 1)): ${REL_LINES[r]}"; done
echo "daemon's own report after relocation 1: $(jq -c '.[0] | {now: .modeled_read_ms, before: .before.modeled_read_ms, discontinuities, before_discontinuities: .before.discontinuities}' "$TMP/report.json" 2>/dev/null || head -c 300 "$TMP/report.json")"
echo "raw layoutq:"
for v in aged seekless e4defrag fresh; do echo "  $v: ${RES[$v,static]}"; done
echo "raw trace-cost:"
for v in aged seekless e4defrag fresh; do echo "  $v: ${RES[$v,trace]}"; done
echo "============================================================="
exit 0
