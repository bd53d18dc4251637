#!/bin/bash
# The metadata half of a prefetch, against a real daemon on a loop-mounted ext4 marked rotational: a boot
# that stats, lists and reads 48 files in 6 directories of a freshly mounted (cold) filesystem is recorded
# with the filesystem's own blocks it read (inode tables, directories); the filesystem is then unmounted
# and mounted again, which empties its inode, dentry and block-device caches. With a daemon started again
# in the same boot (which neither records nor prefetches it), `stat` of every profile file and a listing of
# their directories read blocks (the contrast: the check can fail); in the next boot, after the boot
# profile's prefetch as the daemon starts, they read none at all: no read of the device in the test's own
# trace (block_bio_queue); the log counts the metadata asked.
. "$(dirname "$0")/lib.sh"
# counts what the prefetch cached: no drop of every cache by a test beside meanwhile (tests/lib-core.sh)
caches_kept

setup_image
dirs=()
files=()
for d in 1 2 3 4 5 6; do
        mkdir "$MNT/dir$d"
        dirs+=("$MNT/dir$d")
        for f in $(seq 1 8); do
                head -c $((4 * 4096)) /dev/urandom > "$MNT/dir$d/f$f"
                files+=("$MNT/dir$d/f$f")
        done
done
sync
start_bus
write_config <<EOC
[Record]
BootWindowSec=6
LaunchWindowSec=2
[Prefetch]
PrefetchMinAvailableMiB=0
PrefetchMaxMemoryPressure=100
EOC

cold() {        # the filesystem unmounted (no daemon holds it) and mounted again: nothing of it cached
        umount "$MNT" || fail "cannot unmount $MNT"
        mount -t ext4 "$LOOP" "$MNT" || fail "cannot mount $MNT again"
}
look() { stat "${files[@]}" > /dev/null && ls -l "${dirs[@]}" > /dev/null; }

# the test's own tracefs instance: bios queued on the image's device
test_tracefs
KDEV=$(( $(stat -c '%t' "$LOOP" | sed 's/^/0x/') << 20 | $(stat -c '%T' "$LOOP" | sed 's/^/0x/') ))
INST=$TEST_TRACEFS/instances/seekless-test-$$
test_cleanup() { [ -d "$INST" ] && { echo 0 > "$INST/tracing_on"; rmdir "$INST"; }; }
mkdir "$INST" || fail "cannot create a tracefs instance"
echo "dev == $KDEV" > "$INST/events/block/block_bio_queue/filter"
echo 1 > "$INST/events/block/block_bio_queue/enable"
traced_reads() {        # COMMAND...: the reads of the device while it ran
        echo > "$INST/trace"
        "$@" || fail "$* failed"
        awk '/ block_bio_queue: / { for (i = 1; i < NF; i++) if ($i ~ /^[0-9]+,[0-9]+$/) { if ($(i + 1) ~ /R/) n++; break } }
             END { print n + 0 }' "$INST/trace"
}

cold
start_daemon --filesystem="$MNT" --boot-id=11111111111111111111111111111111
look
cat "${files[@]}" > /dev/null
wait_until 60 boot_recording_over || fail "boot window did not close"
wait_until 30 has_profile boot || fail "boot profile not stored"
meta=$(ctl --json=short show boot | jq '[.metadata[]?.length] | add // 0')
[ "${meta:-0}" -gt 0 ] || fail "the boot profile holds no metadata: $(ctl --json=short show boot | head -c 2000)"
stop_daemon
pass "the cold boot recorded its files and $meta bytes of the filesystem's metadata"

cold
start_daemon --filesystem="$MNT" --boot-id=11111111111111111111111111111111
grep -q "is already recorded; not recording it again" "$DAEMON_LOG" || fail "the same boot recorded again"
n=$(traced_reads look)
[ "$n" -gt 0 ] || fail "stat and ls of a cold filesystem read nothing: the check cannot fail"
pass "the same boot again, no prefetch: stat and ls read $n bios"
stop_daemon

cold
start_daemon --filesystem="$MNT" --boot-id=22222222222222222222222222222222
wait_until 30 grep -q "Prefetch of boot on $MNT: " "$DAEMON_LOG" || fail "no prefetch of the boot profile at start"
line=$(grep "Prefetch of boot on $MNT: " "$DAEMON_LOG")
[[ $line =~ \(([0-9]+)\ KiB\ of\ metadata\) ]] && [ "${BASH_REMATCH[1]}" -gt 0 ] || fail "no metadata asked: $line"
n=$(traced_reads look)
[ "$n" = 0 ] || { grep block_bio_queue "$INST/trace" | head -n 20 >&2; fail "after the prefetch, stat and ls read $n bios"; }
pass "after the boot profile's prefetch at start (${line#*: }), stat and ls read nothing"
