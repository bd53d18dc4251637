#!/bin/bash
# A session stored when the daemon stops keeps every file it recorded, even those the kernel can no longer
# name from their handles. 5,000 small files are read cold (their pages dropped first) in an open boot
# window while the daemon is stopped (SIGSTOP: a daemon behind, naming nothing), then the image is
# unmounted and mounted again, which evicts every dentry of it (what memory pressure or another program's
# drop_caches does to files not named yet), and the daemon is asked to stop (SIGTERM) before it runs again:
# the stored boot session must hold all 5,000 files under their paths, and none may be "not stored".
. "$(dirname "$0")/lib.sh"

: "${PAGE_TOUCH:?run through meson test}"
N=5000
setup_image
mkdir -p "$MNT/first"
pad=$(printf '%4096s' '')
for ((i = 0; i < N; i++)); do printf -v f '%s/first/f%06d' "$MNT" "$i"; printf '%s' "${pad:0:1024 + i % 3072}" > "$f"; done
sync
FILES=("$MNT"/first/f*)
[ "${#FILES[@]}" = "$N" ] || fail "made ${#FILES[@]} files, not $N"
"$PAGE_TOUCH" "${FILES[@]/#/drop:}"

start_bus
write_config <<EOC
[Record]
BootWindowSec=600
EOC
start_daemon --filesystem="$MNT" --boot-id=5704a75705704a75705704a75705704a
busctl --system get-property org.seekless.Seekless1 /org/seekless/Seekless1 org.seekless.Seekless1.Manager \
        BootRecording | grep -q true || fail "boot window not open"

kill -STOP "$DAEMON_PID"
"$PAGE_TOUCH" "${FILES[@]/#/read:}" || { kill -CONT "$DAEMON_PID"; fail "reading the files failed"; }
umount "$MNT" || { kill -CONT "$DAEMON_PID"; fail "the image is busy"; }
mount -t ext4 "$LOOP" "$MNT" || { kill -CONT "$DAEMON_PID"; fail "the image could not be mounted again"; }
# asked to stop before it runs again: the reads wait in its queues, nothing is named yet
kill -TERM "$DAEMON_PID"
kill -CONT "$DAEMON_PID"
wait "$DAEMON_PID" || fail "seeklessd exited with status $? on SIGTERM"
DAEMON_PID=
grep -q "Recorded boot session of boot: $N files (incomplete)" "$DAEMON_LOG" ||
        fail "the boot session stored at SIGTERM: $(grep "boot session\|not stored" "$DAEMON_LOG" | head -5)"
grep -q "not stored" "$DAEMON_LOG" && fail "files left out: $(grep -c "not stored" "$DAEMON_LOG") ($(grep -m1 "not stored" "$DAEMON_LOG"))"
pass "the boot session stored at SIGTERM holds all $N files"

# what is in the database, read by the client of a daemon started again
start_daemon --filesystem="$MNT" --boot-id=5704a75705704a75705704a75705704a
ctl --json=short sessions | jq -e --argjson n "$N" '[.[] | select(.profile == "boot")] | length == 1 and .[0].files == $n' >/dev/null ||
        fail "sessions: $(ctl --json=short sessions)"
diff <(printf '%s\n' "${FILES[@]}") <(profile_paths boot | sort) > "$TMP/paths.diff" ||
        fail "the boot profile's paths differ from the files read: $(head -5 "$TMP/paths.diff")"
pass "the database holds the $N files under their paths"
stop_daemon
