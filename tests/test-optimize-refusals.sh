#!/bin/bash
# What the relocation must refuse or survive:
#  - the daemon runs with exactly the unit's CapabilityBoundingSet= and still moves files owned by another
#    user (read-write open, read lease, O_NOATIME need more than fanotify does);
#  - sparse files are skipped (the donor would claim their full size);
#  - a process opening profile files for writing in a tight loop while plans probe them with read leases
#    must not kill the daemon (a lease break sends SIGIO, whose default action kills);
#  - an ext4 filesystem without a journal is refused (nothing orders the swap after the data write there).
. "$(dirname "$0")/lib.sh"

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

bash "$SOURCE_ROOT/tests/age-image.sh" "$MNT" 3 20 512 | sed 's/^/  /'
chown -R 1000:1000 "$MNT/aged"
chmod 0444 "$MNT"/aged/f00*        # read-only for everyone, owner not root
truncate -s 8M "$MNT/aged/sparse"; echo data >> "$MNT/aged/sparse"
mkdir -p "$MNT/bin"; cp "$OPEN_FILES" "$MNT/bin/prog"; P=$MNT/bin/prog
sync
"$P" "$MNT"/aged/f* "$MNT/aged/sparse"
wait_until 30 has_profile "$P" || fail "launch not recorded"
checksum_all "$TMP/sums"

ctl --json=short plan > "$TMP/plan.json"
jq -e --arg s "$MNT/aged/sparse" 'any(.skipped[]; .path == $s and .reason == "sparse file")' "$TMP/plan.json" >/dev/null ||
        fail "sparse file not skipped: $(jq -c .skipped "$TMP/plan.json")"
pass "sparse file skipped"

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
