#!/bin/bash
# --filesystem=PATH pins the filesystem PATH leads to when seeklessd starts. The pinned filesystem is
# mounted inside another ext4 image here; when it is unmounted (lazily, as the hostile-input probe did),
# nothing is watched: not the outer filesystem the mount point now lies on (the code before took the
# path's device anew at each mount rescan, and so watched, recorded and would have relocated the machine's
# root filesystem). When the same filesystem is mounted again, at another mount point, it is watched again.
. "$(dirname "$0")/lib.sh"

setup_image                     # the outer filesystem: $MNT
INNER=$MNT/inner
truncate -s 64M "$TMP/inner.img"
mkfs.ext4 -q -F -b 4096 "$TMP/inner.img"
INNER_LOOP=$(losetup --find --show "$TMP/inner.img")
EXTRA_LOOPS+=("$INNER_LOOP")
mkdir "$INNER"
mount -t ext4 "$INNER_LOOP" "$INNER"
EXTRA_MOUNTS+=("$INNER")
make_small_launch
sync

start_recording --filesystem="$INNER" </dev/null
mounts() { ctl --json=short status | jq -r '.filesystems[].mount'; }
[ "$(mounts)" = "$INNER" ] || fail "not watching $INNER: $(mounts)"

umount -l "$INNER"
none() { [ -z "$(mounts)" ]; }
wait_until 20 none || fail "after the unmount, watching: $(mounts)"
# a launch from the outer filesystem: the code before recorded it
"$MNT/bin/prog" "$MNT/d/y" "$MNT/d/x"
sleep 3
[ -z "$(mounts)" ] || fail "watching $(mounts) after the unmount"
other=$(grep "Watching " "$DAEMON_LOG" | grep -v "Watching $INNER (" || true)
[ -z "$other" ] || fail "the daemon watched another filesystem: $other"
has_profile "$MNT/bin/prog" && fail "a launch on the outer filesystem was recorded"
pass "pinned filesystem unmounted: nothing watched, the launch on the filesystem beneath not recorded"

AGAIN=$TMP/again
mkdir "$AGAIN"
mount -t ext4 "$INNER_LOOP" "$AGAIN"
EXTRA_MOUNTS+=("$AGAIN")
again() { [ "$(mounts)" = "$AGAIN" ]; }
wait_until 20 again || fail "the same filesystem mounted again is not watched: $(mounts)"
grep -q "Watching $AGAIN (" "$DAEMON_LOG" || fail "no 'Watching $AGAIN' in the log"
pass "the same filesystem mounted again (at another mount point) is watched again"
stop_daemon
