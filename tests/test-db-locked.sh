#!/bin/bash
# A session whose window closes while another process holds the database's write lock is kept in memory and
# stored once the lock is free, never dropped (seeklessd(8), "Database"):
# 1. sqlite3 holds the write lock (BEGIN IMMEDIATE) across a launch: the daemon says the session waits, status
#    answers meanwhile and says so, and the profile appears once the transaction ends;
# 2. the same lock held when the daemon is asked to stop (SIGTERM) with a session waiting, and let go a
#    moment into the stop: the daemon stores the session before it exits (read back from the database by
#    sqlite3 after the exit).
. "$(dirname "$0")/lib.sh"

setup_image
make_small_launch
start_recording --filesystem="$MNT" <<EOC
MaxLaunchesPerBoot=10
EOC
DB=$STATE/seekless.db

# a sqlite3 reading its statements from a FIFO: the test says when the transaction begins and ends
lock_take() {
        rm -f "$TMP/sql"
        mkfifo "$TMP/sql"
        sqlite3 "$DB" < "$TMP/sql" > "$TMP/sqlite3.out" 2>&1 &
        LOCK_PID=$!
        EXTRA_PIDS+=("$LOCK_PID")
        exec 7> "$TMP/sql"
        # waits for the daemon's own write (the boot session's store, say) to end, as the daemon waits
        echo ".timeout 10000" >&7
        echo "BEGIN IMMEDIATE;" >&7
        wait_until 10 locked || fail "sqlite3 did not take the write lock: $(cat "$TMP/sqlite3.out")"
}
lock_release() {
        echo "ROLLBACK;" >&7
        exec 7>&-
        wait "$LOCK_PID" || fail "sqlite3 failed: $(cat "$TMP/sqlite3.out")"
}
locked() {      # another writer is refused at once
        ! sqlite3 -cmd ".timeout 0" "$DB" "BEGIN IMMEDIATE; ROLLBACK;" >/dev/null 2>&1
}
sessions_of() {
        sqlite3 -cmd ".timeout 5000" "$DB" \
                "SELECT count(*) FROM sessions s JOIN profiles p ON p.id = s.profile_id WHERE p.name = '$1'"
}

# ---- 1. a launch while the lock is held ----
lock_take
"$MNT/bin/prog" "$MNT/d/x" "$MNT/d/y"
wait_until 30 grep -q "The database is locked (another process holds its write lock): the app session of $MNT/bin/prog (3 files) is kept in memory" \
        "$DAEMON_LOG" || fail "no word of the session kept: $(grep -i "database\|session" "$DAEMON_LOG" | tail -5)"
grep -q "Failed to store" "$DAEMON_LOG" && fail "the session was dropped: $(grep "Failed to store" "$DAEMON_LOG")"
status=$(timeout 10 "$SEEKLESSCTL" status) || fail "status did not answer while the session waits"
grep -q "1 session waiting for the database (locked)" <<<"$status" || fail "status does not say a session waits: $status"
has_profile "$MNT/bin/prog" && fail "the profile is there while the database is locked"
pass "lock held: the session waits in memory, status says so"
lock_release
wait_until 30 has_profile "$MNT/bin/prog" || fail "the session was not stored after the lock was let go"
[ "$(profile_paths "$MNT/bin/prog" | tr '\n' ' ')" = "$MNT/bin/prog $MNT/d/x $MNT/d/y " ] ||
        fail "the stored profile: $(profile_paths "$MNT/bin/prog" | tr '\n' ' ')"
grep -q "The database is free again: stored the app session of $MNT/bin/prog, kept in memory for [0-9]* s" \
        "$DAEMON_LOG" || fail "no word of the session stored late"
ctl status | grep -q "waiting for the database" && fail "status still says a session waits"
pass "lock let go: the session stored, with its files in order"

# ---- 2. stopped while a session waits ----
lock_take
"$MNT/bin/prog" "$MNT/d/y" "$MNT/d/x"
kept_twice() { [ "$(grep -c "is kept in memory and stored once it is free" "$DAEMON_LOG")" = 2 ]; }
wait_until 30 kept_twice || fail "the second session is not kept"
kill -TERM "$DAEMON_PID"
wait_until 10 grep -q "Waiting up to [0-9]* s for the database to store 1 session kept in memory" "$DAEMON_LOG" ||
        fail "the daemon does not wait for the database at exit: $(tail -5 "$DAEMON_LOG")"
lock_release
wait "$DAEMON_PID" || fail "seeklessd exited with status $? on SIGTERM"
DAEMON_PID=
grep -q "Lost the" "$DAEMON_LOG" && fail "a session was lost: $(grep "Lost the" "$DAEMON_LOG")"
[ "$(sessions_of "$MNT/bin/prog")" = 2 ] || fail "sessions of the launch in the database: $(sessions_of "$MNT/bin/prog")"
pass "stopped with a session waiting, the lock let go during the stop: stored before the exit"
