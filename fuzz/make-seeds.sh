#!/bin/bash
# Makes the seed inputs of the fuzz targets that come from the real programs, into fuzz/corpus/ (README.md
# here says what each is): a boot collector record, fanotify buffers and seeklessd databases, all recorded
# on a scratch ext4 image through the integration harness (tests/lib.sh: loop device, private bus and
# scratch directory torn down on exit), and the method calls seeklessctl makes. Needs root. The committed
# seeds were made by it; run it again only to refresh them (git diff shows what changed).
#   usage: sudo fuzz/make-seeds.sh [BUILD_DIR]      (default: build; must have been built)
set -euo pipefail
SOURCE_ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=$(cd "${1:-$SOURCE_ROOT/build}" && pwd)
export SOURCE_ROOT SEEKLESSD=$B/daemon/seeklessd SEEKLESSCTL=$B/cli/seeklessctl OPEN_FILES=$B/tests/open-files
BOOT_COLLECTOR=$B/daemon/seekless-boot-collector
ninja -C "$B" fuzz/fanotify-capture >/dev/null
CAPTURE=$B/fuzz/fanotify-capture
C=$SOURCE_ROOT/fuzz/corpus
. "$SOURCE_ROOT/tests/lib.sh"
mkdir -p "$C/boot-record" "$C/fanotify" "$C/db" "$C/bus"

setup_image 64M
mkdir -p "$MNT/units" "$MNT/bin" "$MNT/lib" "$RUN_DIR"
for f in u1 u2 u3; do echo "$f" > "$MNT/units/$f"; done
echo w > "$MNT/units/we ird\\name"
echo n > "$MNT/units/new"$'\n'"line"
for f in a b c d; do head -c $((4096 * (RANDOM % 8 + 1))) /dev/urandom > "$MNT/lib/$f"; done
cp "$OPEN_FILES" "$MNT/bin/prog"
sync

# fanotify: one buffer per reporting mode; the first one again after an overflow event (built: the kernel
# queues one when a group's queue is full, which takes 16384 events), and with the pids of fuzz-fanotify.c's
# launches
"$CAPTURE" fid "$C/fanotify/fid" "$MNT" "$MNT"/units/u1 "$MNT"/lib/a "$MNT/units/we ird\\name" "$MNT"/lib/b
"$CAPTURE" dfid-name "$C/fanotify/dfid-name" "$MNT" "$MNT"/units/u2 "$MNT"/lib/c
"$CAPTURE" pidfd "$C/fanotify/pidfd" "$MNT" "$MNT"/units/u3 "$MNT"/lib/d
python3 - "$C/fanotify/fid" "$C/fanotify/overflow" "$C/fanotify/launch-pids" <<'PY'
import struct, sys
FAN_Q_OVERFLOW = 0x4000
# struct fanotify_event_metadata: event_len, vers, reserved, metadata_len, mask, fd, pid
overflow = struct.pack("=IBBHQii", 24, 3, 0, 24, FAN_Q_OVERFLOW, -1, 0)
buf = open(sys.argv[1], "rb").read()
open(sys.argv[2], "wb").write(overflow + buf)
# the same reads with the pids the fuzz target's launch sessions have: the parent's 100, the child's 101
out, off, pids = bytearray(buf), 0, {}
while off + 24 <= len(out):
    event_len, = struct.unpack_from("=I", out, off)
    pid, = struct.unpack_from("=i", out, off + 20)
    struct.pack_into("=i", out, off + 20, pids.setdefault(pid, 100 + len(pids)))
    off += event_len
open(sys.argv[3], "wb").write(out)
PY

# the boot collector's record: the reads it saw, each with its path (a blank, a backslash, a newline)
"$BOOT_COLLECTOR" --run-dir="$RUN_DIR" --watch="$MNT" --timeout=60 || fail "collector did not start"
pid=$(cat "$RUN_DIR/boot-collector.pid")
EXTRA_PIDS+=("$pid")
cat "$MNT/units/u2" "$MNT/units/we ird\\name" "$MNT/units/new"$'\n'"line" "$MNT/units/u1" > /dev/null
kill -TERM "$pid"
wait_pid_gone "$pid" 10 || fail "collector did not stop"
[ -s "$RUN_DIR/boot-collector.keys" ] || fail "collector wrote no record"
cp "$RUN_DIR/boot-collector.keys" "$C/boot-record/collector"

# the database: the collector's record opens the boot session; two launches of a program; an optimization
# (runs, checkpoints, quality snapshots, extents before)
start_bus
write_config <<EOC
[Record]
BootWindowSec=2
LaunchWindowSec=2
[Optimize]
MinFileAgeSec=0
EOC
start_daemon --filesystem="$MNT" --boot-id=0123456789abcdef0123456789abcdef
wait_until 30 boot_recording_over || fail "boot window did not close"
"$MNT/bin/prog" "$MNT"/lib/a "$MNT"/lib/b "$MNT"/lib/c
wait_until 30 has_profile "$MNT/bin/prog" || fail "launch 1 not recorded"
sleep 3
"$MNT/bin/prog" "$MNT"/lib/c "$MNT"/lib/a "$MNT"/lib/d
wait_until 30 bash -c "'$SEEKLESSCTL' --json=short profiles | jq -e 'any(.[]; .sessions == 2)'" ||
        fail "launch 2 not recorded"
ctl --json=short optimize > "$TMP/opt.json" || fail "optimize failed: $(cat "$TMP/opt.json")"
stop_daemon
db=$STATE/seekless.db
echo "database: $(stat -c %s "$db") bytes"
# the same rows in pages of 512 bytes instead of 4096 (VACUUM): eight times fewer bytes for the fuzzer
sqlite3 "$db" "PRAGMA journal_mode = DELETE; PRAGMA page_size = 512; VACUUM;" >/dev/null
cp "$db" "$C/db/recorded"
# as a kill -9 in the middle of the run leaves it: the run still running, its last file pending
cp "$db" "$TMP/interrupted.db"
sqlite3 "$TMP/interrupted.db" "UPDATE runs SET state = 'running', finished = 0;
        UPDATE run_files SET state = 'pending', bytes = 0 WHERE position = (SELECT MAX(position) FROM run_files);
        VACUUM;"
cp "$TMP/interrupted.db" "$C/db/interrupted"
ls -l "$C/db"

# the calls seeklessctl makes (its verbs; names escaped as on the bus), one input per session of use
printf 'ListProfiles\nListSessions\nGetProfile\tboot\nGetProfile\t/usr/bin/prog\nReport\t\nGetLayout\tboot\nGet\torg.seekless.Seekless1.Manager\tStatus\nGetAll\torg.seekless.Seekless1.Manager\n' > "$C/bus/show"
printf 'Plan\nPlan\t$MNT\nOptimize\t/mnt/\nOptimize\t$MNT/\nOptimizeWhenIdle\t$MNT\nCancelQueued\nCancel\nGetRunSkipped\t1\nGetRunSkipped\t18446744073709551615\n' > "$C/bus/optimize"
printf 'GetProfile\t/usr/bin/weird\\\\name\\x0a\nForgetProfile\t/usr/bin/weird\\\\name\\x0a\nForgetProfile\t/nonexistent\nGetProfile\t/bad\\escape\nReport\t/usr/bin/prog\nForgetAll\nListProfiles\n' > "$C/bus/forget"
printf 'Plan\t/a/../b\nPlan\trelative\nPlan\t/x//y/\t/x/y\nGetProfile:as\tboot\nGetRunSkipped:s\t1\nIntrospect\nGet\torg.seekless.Seekless1.Manager\tNoSuchProperty\n' > "$C/bus/bad-arguments"
pass "seeds written to $C"
