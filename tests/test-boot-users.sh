#!/bin/bash
# The boot session keeps the system's reads first: a user's processes (here nobody's) reading during the boot
# take at most BootUserShare= of its caps, and their files come after the system's (seekless.conf(5)).
# 1. MaxSessionFiles=40, BootUserShare=25: nobody reads 30 small files and a 2 MiB one (page events on);
#    then root reads 20 files. Every file of root's is in the boot profile, before nobody's; nobody's are the
#    first 10 it read (the share), the rest is left out, and said so. Before this share, nobody's files took
#    the session's 40 places and left root's out. (A system process's read making a user's file the
#    system's is test-boot-share's: here, page events taken after the fanotify events of a later read would
#    make the outcome depend on when each was taken.)
# 2. Without page events (whole files), MaxHotSetMiB=4: users' files take 1 MiB of hot bytes at most; of
#    three 400 KiB files nobody reads, the third is left out. That process reads a file as root first, then
#    takes nobody's uid (as cron does for a user's job): what it reads after counts as a user's (the kernel's
#    process events tell the uid change; what /proc said before does not stand).
. "$(dirname "$0")/lib.sh"

: "${PAGE_TOUCH:?run through meson test}"
setup_image
mkdir -p "$MNT/u" "$MNT/r" "$MNT/h"
for i in $(seq -w 1 30); do head -c 4096 /dev/urandom > "$MNT/u/a$i"; done
for i in $(seq -w 1 20); do head -c 4096 /dev/urandom > "$MNT/r/b$i"; done
head -c 2M /dev/urandom > "$MNT/u/big"
for i in 1 2 3; do head -c 400K /dev/urandom > "$MNT/h/h$i"; done
chmod -R a+rX "$MNT"
sync
"$PAGE_TOUCH" $(ls "$MNT"/u/* "$MNT"/r/* | sed 's/^/drop:/')

start_bus
write_config <<EOC
[Record]
BootWindowSec=4
MaxSessionFiles=40
BootUserShare=25
MaxLaunchesPerBoot=0
[Optimize]
MaxHotSetMiB=4
EOC

boot_paths() { ctl --json=short show boot | jq -r '.files[].path'; }
index_of() {    # PATH: its place in the boot profile
        boot_paths | grep -nxF "$1" | cut -d: -f1
}

# ---- 1. files and order, page events on ----
start_daemon --filesystem="$MNT"
as_nobody "$OPEN_FILES" "$MNT"/u/a* "$MNT/u/big" || fail "nobody's reads failed"
"$OPEN_FILES" "$MNT"/r/b* || fail "root's reads failed"
wait_until 30 boot_recording_over || fail "boot window did not close"
wait_until 10 has_profile boot || fail "no boot profile"
boot_paths > "$TMP/boot"
for f in "$MNT"/r/b*; do
        grep -qxF "$f" "$TMP/boot" || fail "root's $f is not in the boot profile: $(tr '\n' ' ' < "$TMP/boot")"
done
users=$(grep -vxF -f <(printf '%s\n' "$MNT"/r/b*) "$TMP/boot")
want=$(printf '%s\n' "$MNT"/u/a0[1-9] "$MNT/u/a10")
[ "$users" = "$want" ] || fail "nobody's files in the boot profile: [$(echo $users)], want [$(echo $want)]"
last_system=$(grep -nxF -f <(printf '%s\n' "$MNT"/r/b*) "$TMP/boot" | tail -n1 | cut -d: -f1)
[ "$last_system" = 20 ] || fail "the system's files are not first: $(tr '\n' ' ' < "$TMP/boot")"
grep -q "The boot session holds 10 files read by users' processes, after the system's (BootUserShare=25%: 10 files, 1 MiB, 16384 metadata ranges); left out: [1-9][0-9]* reads of further files, 0 files over its hot bytes" \
        "$DAEMON_LOG" || fail "the share's log line: $(grep "read by users' processes" "$DAEMON_LOG")"
ctl --json=short sessions | jq -e '[.[] | select(.profile == "boot")] | length == 1 and (.[0].complete | not)' >/dev/null ||
        fail "the boot session is not stored as incomplete: $(ctl --json=short sessions)"
pass "root's 20 files first, nobody's first 10 after them; nobody's 21 others left out"
stop_daemon

# ---- 2. hot bytes, whole files (no page events) ----
mv "$DAEMON_LOG" "$TMP/daemon-1.log"
start_daemon --filesystem="$MNT" --tracefs="$TMP/no-tracefs" --boot-id=b0075e4b0075e4b0075e4b0075e4b007
# shellcheck disable=SC2016
bash -c 'read -r _ < "$1"; sleep 1; exec setpriv --reuid=65534 --regid=65534 --clear-groups -- "${@:2}"' \
        _ "$MNT/r/b02" "$OPEN_FILES" "$MNT"/h/h1 "$MNT"/h/h2 "$MNT"/h/h3 || fail "the reads failed"
"$OPEN_FILES" "$MNT/r/b01" || fail "root's read failed"
wait_until 30 boot_recording_over || fail "boot window did not close"
grep -q "The boot session holds 2 files read by users' processes, after the system's (BootUserShare=25%: 10 files, 1 MiB, 16384 metadata ranges); left out: 0 reads of further files, 1 file over its hot bytes" \
        "$DAEMON_LOG" || fail "the share's log line: $(grep "read by users' processes" "$DAEMON_LOG")"
sqlite3 -cmd ".timeout 5000" "$STATE/seekless.db" "SELECT f.path FROM session_files sf JOIN files f ON f.id = sf.file_id
        WHERE sf.session_id = (SELECT max(id) FROM sessions) ORDER BY sf.position" > "$TMP/session2"
[ "$(tr '\n' ' ' < "$TMP/session2")" = "$MNT/r/b02 $MNT/r/b01 $MNT/h/h1 $MNT/h/h2 " ] ||
        fail "the second boot session's files: $(tr '\n' ' ' < "$TMP/session2")"
pass "whole files: nobody's files within 1 MiB of hot bytes (the third 400 KiB file left out), after root's; read after a setuid: nobody's"
stop_daemon
