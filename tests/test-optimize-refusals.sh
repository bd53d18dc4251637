#!/bin/bash
# What the relocation must refuse or survive:
#  - the daemon runs with exactly the unit's CapabilityBoundingSet= and still moves files owned by another
#    user (read-write open, read lease, O_NOATIME need more than fanotify does);
#  - mostly sparse files are skipped (the donor would claim their full size); a file with a few holes (a
#    library as mkfs.ext4 -d or cp --sparse leave it) is moved: same bytes, the holes stay holes, its data
#    lies back to back across them (FIEMAP), and a second optimize leaves it there (in place);
#  - a process opening profile files for writing in a tight loop while plans probe them with read leases
#    must not kill the daemon (a lease break sends SIGIO, whose default action kills);
#  - an ext4 filesystem without a journal is refused (nothing orders the swap after the data write there).
. "$(dirname "$0")/lib.sh"

# the logical block ranges that have data ("START-END ..."), adjacent extents merged: holes are the gaps
mapped_ranges() {
        file_extents "$1" | awk '{ if (NR > 1 && $1 == e + 1) { e = $1 + $3 - 1; next }
                                 if (NR > 1) printf "%d-%d ", s, e; s = $1; e = $1 + $3 - 1 }
                               END { if (NR) printf "%d-%d", s, e }'
}

caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$SOURCE_ROOT/units/seeklessd.service.in" |
        tr 'A-Z' 'a-z' | sed 's/cap_/+/g; s/ /,/g')
[ -n "$caps" ] || fail "no CapabilityBoundingSet= in the unit"
DAEMON_WRAPPER="setpriv --bounding-set -all,$caps --"

setup_image 1G
start_bus
write_config <<EOC
[Record]
BootWindowSec=1
LaunchWindowSec=3
[Optimize]
MinFileAgeSec=0
EOC
start_daemon --filesystem="$MNT"
# the daemon really runs with the restricted set: CAP_SYS_ADMIN (21) in, CAP_CHOWN (0) and CAP_SYS_BOOT (22) out
capbnd=$((16#$(awk '/^CapBnd:/ {print $2}' /proc/"$DAEMON_PID"/status)))
(( (capbnd >> 21) & 1 )) && ! (( capbnd & 1 )) && ! (( (capbnd >> 22) & 1 )) ||
        fail "seeklessd does not run with the unit's bounding set (CapBnd $(printf %x $capbnd))"
wait_until 30 boot_recording_over || fail "boot window did not close"

bash "$SOURCE_ROOT/tools/age-image.sh" "$MNT" 3 20 512 | sed 's/^/  /'
chown -R 1000:1000 "$MNT/aged"
chmod 0444 "$MNT"/aged/f00*        # read-only for everyone, owner not root
truncate -s 8M "$MNT/aged/sparse"; echo data >> "$MNT/aged/sparse"
# 1 MiB written in 64 KiB pieces interleaved with a filler (fragmented), then 4 KiB holes punched at 5 places
for i in $(seq 0 15); do
        head -c 65536 /dev/urandom | dd of="$MNT/aged/holes" bs=64k seek="$i" conv=notrunc,fsync status=none
        head -c 65536 /dev/urandom >> "$MNT/aged/filler"; sync "$MNT/aged/filler"
done
for off in 8 100 101 130 255; do fallocate -p -o $((off * 4096)) -l 4096 "$MNT/aged/holes"; done
rm "$MNT/aged/filler"
holes_before=$(mapped_ranges "$MNT/aged/holes")
phys_before=$(file_extents "$MNT/aged/holes" | tr '\n' ' ')
mkdir -p "$MNT/bin"; cp "$OPEN_FILES" "$MNT/bin/prog"; P=$MNT/bin/prog
sync
# The launch reads its files from the disk, every page of them in its page events, whatever else drops
# caches meanwhile. Left cached from their writing, the file with holes had only its holes read (pages
# entering the cache); the daemon takes such a file whole by what of it is still cached at the end of the
# window, and a drop_caches elsewhere on the machine (other tests do that) in between, or in the middle of
# the read, left its profile with the holes alone or a part of the file: not planned, or moved in part.
"$PAGE_TOUCH" $(printf 'drop:%s ' "$MNT"/aged/*)
"$P" "$MNT"/aged/f* "$MNT/aged/sparse" "$MNT/aged/holes"
wait_until 30 has_profile "$P" || fail "launch not recorded"
checksum_all "$TMP/sums"

ctl --json=short plan > "$TMP/plan.json"
jq -e --arg s "$MNT/aged/sparse" 'any(.skipped[]; .path == $s and (.reason | startswith("sparse file")))' "$TMP/plan.json" >/dev/null ||
        fail "mostly sparse file not skipped: $(jq -c .skipped "$TMP/plan.json")"
jq -e --arg s "$MNT/aged/holes" 'any(.files[]; .path == $s)' "$TMP/plan.json" >/dev/null ||
        fail "file with a few holes not planned: $(jq -c --arg s "$MNT/aged/holes" '.skipped[] | select(.path == $s)' "$TMP/plan.json")"
pass "mostly sparse file skipped, a file with 5 holes of 4 KiB planned"

# a writer hammering opens-for-write on profile files while plans take read leases on them
victims=("$MNT"/aged/f01*)
( while :; do for v in "${victims[@]}"; do : >> "$v"; done; done ) 2>/dev/null &
EXTRA_PIDS+=($!)
for _ in $(seq 30); do ctl --json=short plan > /dev/null || true; done
kill "${EXTRA_PIDS[-1]}"; wait "${EXTRA_PIDS[-1]}" 2>/dev/null || true; unset 'EXTRA_PIDS[-1]'
kill -0 "$DAEMON_PID" 2>/dev/null || fail "seeklessd died while a writer raced its lease probes"
ctl status > /dev/null || fail "seeklessd does not answer after the lease race"
pass "survived a writer racing 30 plans' lease probes"

rc=0; ctl --json=short optimize > "$TMP/opt.json" || rc=$?
[ "$rc" = 0 ] || fail "optimize exited $rc: $(cat "$TMP/opt.json")"
moved=$(jq .moved_files "$TMP/opt.json")
[ "$moved" -ge 20 ] || fail "with the unit's capabilities only $moved files moved: $(jq -c .skipped "$TMP/opt.json")"
jq -e 'all(.skipped[]; .reason | test("cannot|Permission") | not)' "$TMP/opt.json" >/dev/null ||
        fail "permission problems: $(jq -c .skipped "$TMP/opt.json")"
verify_checksums "$TMP/sums"
pass "with the unit's capabilities ($caps): $moved files of uid 1000 moved, data intact"

# the file with holes: moved (its extents changed), the same logical ranges are mapped (holes stay holes),
# and every extent starts where the previous one ends on disk (the holes take no room: one physical run)
jq -e --arg s "$MNT/aged/holes" 'all(.skipped[]; .path != $s)' "$TMP/opt.json" >/dev/null ||
        fail "file with holes not moved: $(jq -c .skipped "$TMP/opt.json")"
holes_after=$(mapped_ranges "$MNT/aged/holes")
phys_after=$(file_extents "$MNT/aged/holes" | tr '\n' ' ')
echo "  extents before (logical physical length): $phys_before"
echo "  extents after  (logical physical length): $phys_after"
[ "$holes_after" = "$holes_before" ] ||
        fail "the mapped logical ranges changed: before $holes_before, after $holes_after"
[ "$phys_after" != "$phys_before" ] || fail "the file with holes did not move"
file_extents "$MNT/aged/holes" | awk 'NR > 1 && $2 != end { bad = 1 } { end = $2 + $3 } END { exit bad }' ||
        fail "the data of the file with holes is not back to back on disk: $phys_after"
pass "file with 5 holes moved: holes kept, data back to back across them, checksums intact"
rc=0; ctl --json=short optimize > "$TMP/opt2.json" || rc=$?
[ "$rc" = 0 ] || fail "second optimize exited $rc: $(cat "$TMP/opt2.json")"
[ "$(file_extents "$MNT/aged/holes" | tr '\n' ' ')" = "$phys_after" ] ||
        fail "the second optimize moved the file with holes again: $(file_extents "$MNT/aged/holes" | tr '\n' ' ')"
verify_checksums "$TMP/sums"
pass "a second optimize leaves the packed file with holes in place ($(jq .moved_files "$TMP/opt2.json") files moved)"
stop_daemon
fsck_clean

# --- no journal ---
umount "$MNT"; losetup -d "$LOOP"; LOOP=; rm -f "$IMG"
DAEMON_WRAPPER=
setup_image 512M -O ^has_journal
rm -rf "$STATE"
start_daemon --filesystem="$MNT"
wait_until 30 boot_recording_over || fail "boot window did not close"
mkdir -p "$MNT/bin" "$MNT/d"; cp "$OPEN_FILES" "$MNT/bin/prog"
for i in 1 2 3; do head -c 100000 /dev/urandom > "$MNT/d/$i"; done; sync
"$MNT/bin/prog" "$MNT"/d/*
wait_until 30 has_profile "$MNT/bin/prog" || fail "launch not recorded on the unjournaled filesystem"
ctl --json=short plan | jq -e '(.files | length == 0) and all(.skipped[]; .reason | test("no journal"))' >/dev/null ||
        fail "unjournaled filesystem not refused: $(ctl --json=short plan)"
rc=0; ctl --json=short optimize > "$TMP/nj.json" || rc=$?
jq -e '.moved_files == 0' "$TMP/nj.json" >/dev/null || fail "moved on an unjournaled filesystem"
pass "unjournaled ext4 refused: $(jq -r '.skipped[0].reason' "$TMP/nj.json")"
stop_daemon
fsck_clean
