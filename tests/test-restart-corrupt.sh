#!/bin/bash
# Restarting keeps profiles; a corrupt database is moved aside with a logged error and a fresh one is
# created; a database from a newer seekless is refused with a clear message and left untouched.
. "$(dirname "$0")/lib.sh"

setup_image
start_bus
write_config <<EOC
[Record]
BootWindowSec=2
LaunchWindowSec=2
EOC
mkdir -p "$MNT/bin" "$MNT/data"
cp "$OPEN_FILES" "$MNT/bin/prog"
echo one > "$MNT/data/one"; echo two > "$MNT/data/two"
P=$MNT/bin/prog

start_daemon --filesystem="$MNT"
wait_until 30 boot_recording_over || fail "boot window did not close"
"$P" "$MNT/data/one" "$MNT/data/two"
wait_until 30 has_profile "$P" || fail "launch not recorded"
before=$(ctl --json=short show "$P")
stop_daemon

start_daemon --filesystem="$MNT"
[ "$(ctl --json=short show "$P")" = "$before" ] || fail "profile changed across restart"
pass "profile survives a restart"

# With every dentry dropped, a new launch reading only one file re-merges the profile, which resolves the
# other file from its handle alone: its stored path must survive (the kernel can't name a disconnected
# dentry and shows "/").
drop_all_caches
"$P" "$MNT/data/one"
sessions2() { ctl --json=short profiles | jq -e --arg n "$P" 'any(.[]; .name == $n and .sessions == 2)'; }
wait_until 30 sessions2 || fail "second launch not recorded"
ctl --json=short show "$P" | jq -e --arg t "$MNT/data/two" 'any(.files[]; .path == $t)' >/dev/null ||
        fail "path of an uncached file was lost: $(ctl --json=short show "$P")"
pass "uncached files keep their paths across a merge"
before=$(ctl --json=short show "$P")
stop_daemon

# corrupt the database
head -c 65536 /dev/urandom > "$STATE/seekless.db"
rm -f "$STATE/seekless.db-wal" "$STATE/seekless.db-shm"
start_daemon --filesystem="$MNT"
grep -q "is corrupt or not seekless's; moving it aside" "$DAEMON_LOG" || fail "no error logged for the corrupt database"
ls "$STATE"/seekless.db.corrupt-* >/dev/null || fail "corrupt database was not kept aside"
[ "$(ctl --json=short profiles)" = "[]" ] || fail "fresh database is not empty"
"$P" "$MNT/data/two" "$MNT/data/one"
wait_until 30 has_profile "$P" || fail "fresh database does not record"
pass "corrupt database moved aside, fresh one works"
stop_daemon

# valid SQLite files seekless did not write: each moved aside the same way (the code before failed with
# "Input/output error", a restart loop under systemd, or indexed migrations[-1])
for sql in "PRAGMA user_version = -2000000000;" "CREATE TABLE photos (id INTEGER, data BLOB);"; do
        rm -f "$STATE"/seekless.db*
        sqlite3 "$STATE/seekless.db" "$sql"
        : > "$DAEMON_LOG"
        start_daemon --filesystem="$MNT"
        grep -q "is corrupt or not seekless's; moving it aside" "$DAEMON_LOG" ||
                fail "'$sql': not moved aside: $(cat "$DAEMON_LOG")"
        aside=$(ls "$STATE"/seekless.db.corrupt-* | head -n 1)
        [ -n "$aside" ] && [ "$(ctl --json=short profiles)" = "[]" ] || fail "'$sql': no fresh database"
        stop_daemon
        pass "a database made with '$sql' moved aside, a fresh one used"
done

# a read-only state directory: a clear message, not "No such file or directory"
RO=$TMP/ro-state
mkdir "$RO"
mount -t tmpfs -o ro,size=1M tmpfs "$RO"
EXTRA_MOUNTS+=("$RO")
rc=0
"$SEEKLESSD" --config="$CONF" --state-dir="$RO" --filesystem="$MNT" >"$TMP/ro.log" 2>&1 || rc=$?
[ "$rc" != 0 ] || fail "seeklessd started on a read-only state directory"
grep -q "State directory $RO is not writable: Read-only file system" "$TMP/ro.log" ||
        fail "unclear message for a read-only state directory: $(cat "$TMP/ro.log")"
pass "read-only state directory: '$(grep "not writable" "$TMP/ro.log")'"

# a state directory others may write into, or someone else's: refused, nothing created in it
for how in "chmod 0777" "chown 65534"; do
        BAD=$TMP/bad-state
        rm -rf "$BAD"; mkdir -m 0700 "$BAD"; $how "$BAD"
        rc=0
        "$SEEKLESSD" --config="$CONF" --state-dir="$BAD" --filesystem="$MNT" \
                >"$TMP/bad.log" 2>&1 || rc=$?
        [ "$rc" != 0 ] || fail "seeklessd started on a state directory after $how"
        grep -q "State directory $BAD .*: refusing to use it" "$TMP/bad.log" || fail "$how: $(cat "$TMP/bad.log")"
        [ -z "$(ls -A "$BAD")" ] || fail "$how: something was created: $(ls -A "$BAD")"
        pass "state directory after $how refused: '$(tail -n 1 "$TMP/bad.log")'"
done

# a database from the future
sqlite3 "$STATE/seekless.db" 'PRAGMA user_version = 9999;'
sum=$(sha256sum "$STATE/seekless.db")
rc=0
"$SEEKLESSD" --config="$CONF" --state-dir="$STATE" --filesystem="$MNT" >"$TMP/newer.log" 2>&1 || rc=$?
[ "$rc" != 0 ] || fail "seeklessd accepted a newer database"
grep -q "newer version of seekless" "$TMP/newer.log" || fail "no clear message: $(cat "$TMP/newer.log")"
[ "$(sha256sum "$STATE/seekless.db")" = "$sum" ] || fail "newer database was modified"
pass "newer database refused and untouched"
