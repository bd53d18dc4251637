#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The emulated rotating disk of the benches, checked against the trace model: an image served by faultfs in
# `spin` mode (every request waits what the layout model's 7200 rpm disk takes for it, one at a time), under
# a loop device (direct I/O off) with the mq-deadline scheduler. A sequential and a random read of the loop
# device, each timed by the wall clock and traced (block:block_rq_issue), then costed by the trace model
# (bench/trace-split.py's, the daemon's plan/layout.c): the device is right when the wall clock and the model
# of its own trace agree. See bench/README.md, "The emulated rotating disk".
#
#   sudo bench/spindisk.sh [BUILD_DIR]        (default: build/; needs libfuse3 and build/tests/faultfs)
#
# Knobs (environment): SIZE=4G SEQ_MIB=64 RANDOM_READS=200 DIR=/dev/shm (the image: fast, so that the model's
# waits are what the reads cost)
set -euo pipefail

SIZE=${SIZE:-4G}
SEQ_MIB=${SEQ_MIB:-64}
RANDOM_READS=${RANDOM_READS:-200}
DIR=${DIR:-/dev/shm}
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
[ -d "$BUILD" ] || BUILD=$SRC/$BUILD
BUILD=$(cd "$BUILD" && pwd)
FAULTFS=$BUILD/tests/faultfs
TRACEFS=/sys/kernel/tracing

if [ "$(id -u)" != 0 ]; then
        echo "SKIP: bench/spindisk.sh needs root (FUSE, loop devices, tracefs): sudo $0 ${1:-build}"
        exit 77
fi
[ -x "$FAULTFS" ] || { echo "ERROR: $FAULTFS not found (libfuse3-dev missing when the build was configured?)" >&2; exit 1; }

TMP=$(mktemp -d "$DIR/seekless-spindisk.XXXXXX")
. "$SRC/tests/scratch.sh" && scratch_claim "$TMP" && scratch_guard "$TMP"
LOOP= FS_PID= TRACE_INST= TRACEFS_MOUNTED=

cleanup() {
        local rc=$?
        set +e
        [ -n "$TRACE_INST" ] && { echo 0 > "$TRACE_INST/tracing_on"; rmdir "$TRACE_INST"; }
        [ -n "$TRACEFS_MOUNTED" ] && umount "$TRACEFS"
        [ -n "$LOOP" ] && losetup -d "$LOOP"
        mountpoint -q "$TMP/fuse" && { umount "$TMP/fuse" || umount -l "$TMP/fuse"; }
        [ -n "$FS_PID" ] && { kill "$FS_PID" 2>/dev/null; wait "$FS_PID" 2>/dev/null; }
        rm -rf "$TMP"
        exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

truncate -s "$SIZE" "$TMP/disk.img"
mkdir "$TMP/fuse"
"$FAULTFS" "$TMP/disk.img" "$TMP/fuse" 2> "$TMP/faultfs.log" &
FS_PID=$!
for _ in $(seq 100); do [ -e "$TMP/fuse/disk" ] && break; sleep 0.1; done
[ -e "$TMP/fuse/disk" ] || { cat "$TMP/faultfs.log" >&2; echo "ERROR: faultfs did not come up" >&2; exit 1; }
LOOP=$(losetup --find --show --direct-io=off "$TMP/fuse/disk")
DEV=${LOOP#/dev/}
SCHED=$(cat "/sys/block/$DEV/queue/scheduler")
echo mq-deadline > "/sys/block/$DEV/queue/scheduler" 2>/dev/null || true
MAJMIN=$(cat "/sys/block/$DEV/dev")
DEVBYTES=$(blockdev --getsize64 "$LOOP")

if [ ! -e "$TRACEFS/instances" ]; then
        mount -t tracefs nodev "$TRACEFS"
        TRACEFS_MOUNTED=1
fi
TRACE_INST=$TRACEFS/instances/seekless-spindisk-$$
mkdir "$TRACE_INST"
echo 16384 > "$TRACE_INST/buffer_size_kb"
echo "dev == $(( (${MAJMIN%:*} << 20) | ${MAJMIN#*:} ))" > "$TRACE_INST/events/block/block_rq_issue/filter"
echo 1 > "$TRACE_INST/events/block/block_rq_issue/enable"

echo "$(date -u '+%F %T') UTC, $(uname -r), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg);" \
        "$SIZE image in $DIR served by faultfs (spin) under $LOOP, scheduler $(cat "/sys/block/$DEV/queue/scheduler" | grep -o '\[[^]]*\]') (was $SCHED)"

# one measurement: NAME COMMAND...: the wall clock, the model of its trace, what faultfs slept
measure() {
        local name=$1 t0 t1
        shift
        # direct reads of the device: no page cache to drop (never the machine's: other work runs beside)
        echo spin > "$TMP/fuse/ctl"
        : > "$TRACE_INST/trace"
        echo 1 > "$TRACE_INST/tracing_on"
        t0=$(date +%s%N)
        "$@"
        t1=$(date +%s%N)
        echo 0 > "$TRACE_INST/tracing_on"
        cp "$TRACE_INST/trace" "$TMP/$name.trace"
        python3 - "$name" "$TMP/$name.trace" "$DEVBYTES" "$(( (t1 - t0) / 1000 ))" "$TMP/fuse/ctl" <<'PY'
import math, re, sys
name, trace, devbytes, wall_us, ctl = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
SETTLE, STROKE, ROT, BPS, SHORT = 1.0, 15.0, 4.17, 150e6, 64 * 1024
def seek_ms(d):
    r = 0 if d == 0 else (1 if d >= devbytes else d / devbytes)
    return SETTLE + STROKE * math.sqrt(r) + ROT
model, prev, reqs, nbytes = 0.0, None, 0, 0
for line in open(trace):
    m = re.search(r"block_rq_issue: \S+ (\S+) \d+ \([^)]*\) (\d+) \+ (\d+)", line)
    if not m or "R" not in m.group(1) and "W" not in m.group(1):
        continue
    off, length = int(m.group(2)) * 512, int(m.group(3)) * 512
    if prev is None:
        model += seek_ms(0)
    elif off != prev:
        model += (off - prev) * 1000 / BPS if off > prev and off - prev <= SHORT else seek_ms(abs(off - prev))
    model += length * 1000 / BPS
    prev, reqs, nbytes = off + length, reqs + 1, nbytes + length
stats = dict(l.split() for l in open(ctl) if len(l.split()) == 2)
wall = wall_us / 1000
print(f"{name:10s} {reqs:6d} requests {nbytes / 1048576:8.1f} MiB   wall {wall:9.1f} ms   model of the trace "
      f"{model:9.1f} ms   faultfs slept {float(stats['spin_ms']):9.1f} ms ({stats['spin_requests']} requests)   "
      f"wall / model {wall / model if model else float('nan'):.3f}")
PY
}

measure sequential dd if="$LOOP" of=/dev/null bs=1M count="$SEQ_MIB" iflag=direct status=none
measure random python3 -c '
import mmap, os, random, sys
dev, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
fd = os.open(dev, os.O_RDONLY | os.O_DIRECT)
buf = mmap.mmap(-1, 4096)
rnd = random.Random(7)
for _ in range(n):
    os.preadv(fd, [buf], rnd.randrange(size // 4096) * 4096)
' "$LOOP" "$RANDOM_READS" "$DEVBYTES"
