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
. "$(dirname "$0")/lib.sh"
BENCH_SCRATCH=$DIR bench_init spindisk losetup blockdev python3 jq -- "$@"
bench_binaries tests/faultfs    # none without libfuse3-dev when the build was configured
LOOP= FS_PID= SCHED_WAS=

# the loop device over faultfs's file first (its scheduler as it was: a loop device keeps it when detached),
# then faultfs (bench/lib.sh's order would unmount first)
cleanup_hook() {
        [ -z "$SCHED_WAS" ] || echo "$SCHED_WAS" > "/sys/block/${LOOP#/dev/}/queue/scheduler"
        [ -z "$LOOP" ] || { losetup -d "$LOOP"; forget CORE_LOOPS "$LOOP"; }
        mountpoint -q "$TMP/fuse" && { umount "$TMP/fuse" || umount -l "$TMP/fuse"; }
        [ -z "$FS_PID" ] || { kill "$FS_PID" 2>/dev/null; wait "$FS_PID" 2>/dev/null; }
}

truncate -s "$SIZE" "$TMP/disk.img"
mkdir "$TMP/fuse"
"${BIN[faultfs]}" "$TMP/disk.img" "$TMP/fuse" 2> "$TMP/faultfs.log" &
FS_PID=$!
for _ in $(seq 100); do [ -e "$TMP/fuse/disk" ] && break; sleep 0.1; done
[ -e "$TMP/fuse/disk" ] || { cat "$TMP/faultfs.log" >&2; die "faultfs did not come up"; }
attach "$TMP/fuse/disk"; LOOP=$ATTACHED
losetup --direct-io=off "$LOOP"
DEV=${LOOP#/dev/}
SCHED=$(cat "/sys/block/$DEV/queue/scheduler")
SCHED_WAS=$(sed 's/.*\[\(.*\)\].*/\1/' <<< "$SCHED")
echo mq-deadline > "/sys/block/$DEV/queue/scheduler" 2>/dev/null || true
DEVBYTES=$(blockdev --getsize64 "$LOOP")

trace_setup 16384
trace_dev "$LOOP"

echo "$(date -u '+%F %T') UTC, $(uname -r), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg);" \
        "$SIZE image in $DIR served by faultfs (spin) under $LOOP, scheduler $(cat "/sys/block/$DEV/queue/scheduler" | grep -o '\[[^]]*\]') (was $SCHED)"

timed() { T0=$(date +%s%N); "$@"; T1=$(date +%s%N); }    # CMD... -> T0, T1 (ns)
# one measurement: NAME COMMAND...: the wall clock, the model of its trace, what faultfs slept
measure() {
        local name=$1
        shift
        # direct reads of the device: no page cache to drop (never the machine's: other work runs beside)
        echo spin > "$TMP/fuse/ctl"
        trace_run "$TMP/$name.trace" timed "$@"
        result_with "$(python3 - "$TMP/$name.trace" "$DEVBYTES" "$(( (T1 - T0) / 1000 ))" "$TMP/fuse/ctl" <<'PY'
import json, math, re, sys
trace, devbytes, wall_us, ctl = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
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
print(json.dumps({"requests": reqs, "bytes": nbytes, "wall_ms": wall_us / 1000, "model_ms": round(model, 3),
                  "slept_ms": float(stats["spin_ms"]), "slept_requests": int(stats["spin_requests"])}))
PY
)" measure disk variant "$name"
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
bench_finish
