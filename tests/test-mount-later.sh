#!/bin/bash
# Without --filesystem=, seeklessd watches every read-write ext4 filesystem, including ones mounted after
# it started, and a launch from such a filesystem is recorded. Read-only mounts are not watched.
. "$(dirname "$0")/lib.sh"

start_recording </dev/null

setup_image
watched() {
        ctl --json=short status | jq -e --arg m "$MNT" 'any(.filesystems[]; .mount == $m and .fstype == "ext4")'
}
wait_until 20 watched || fail "newly mounted $MNT not picked up: $(ctl --json=short status | jq -c .filesystems)"
pass "filesystem mounted later is watched"

make_small_launch
"$MNT/bin/prog" "$MNT/d/y" "$MNT/d/x"
wait_until 30 has_profile "$MNT/bin/prog" || fail "launch from the new filesystem not recorded"
# The root filesystem is watched too here, so the loader and libc belong to the launch as well.
paths=$(profile_paths "$MNT/bin/prog")
got=$(grep "^$MNT/" <<<"$paths" | tr '\n' ' ')
[ "$got" = "$MNT/bin/prog $MNT/d/y $MNT/d/x " ] || fail "profile: $paths"
[ "$(head -n1 <<<"$paths")" = "$MNT/bin/prog" ] || fail "executable is not first: $paths"
grep -q '/libc\.so' <<<"$paths" || fail "libc (on the root filesystem) missing: $paths"
pass "launch from it recorded, spanning both filesystems"

mount -o remount,ro "$MNT"
gone() { ! watched; }
wait_until 20 gone || fail "read-only filesystem still listed"
pass "remounted read-only: no longer watched"
mount -o remount,rw "$MNT"
stop_daemon
