#!/bin/bash
# A launched program's very first reads on a second watched filesystem are recorded: 200 different
# programs on one filesystem, each started alone (after the previous launch's window closed and the read
# marks were taken down again, so that every start is the first exec of a quiet daemon) while a CPU and I/O
# load runs, each reading a file on a second watched filesystem as soon as it runs, then one on its own.
# Every launch's profile must hold the file on the second filesystem: the exec is only allowed once every
# watched filesystem is armed, not just the exec'd file's own (daemon/record/recorder.c). Each also holds
# the file on its own filesystem (else its reads came too late for its window, and the launch proved
# nothing: a failure of the test, not of the recorder).
# LAUNCHES= sets the number of launches (200).
. "$(dirname "$0")/lib.sh"

: "${OPEN_FILES:?run through meson test}"
N=${LAUNCHES:-200}
setup_image 64M
mkdir -p "$MNT/bin" "$MNT/d"
echo own > "$MNT/d/own"
for ((i = 0; i < N; i++)); do cp "$OPEN_FILES" "$MNT/bin/prog$i"; done

SECOND=$TMP/second
truncate -s 32M "$TMP/second.img"
mkfs.ext4 -q -F -b 4096 "$TMP/second.img"
LOOP2=$(losetup --find --show "$TMP/second.img")
EXTRA_LOOPS+=("$LOOP2")
mkdir -p "$SECOND"
mount -t ext4 "$LOOP2" "$SECOND"
EXTRA_MOUNTS+=("$SECOND")
echo conf > "$SECOND/conf"
sync

start_recording --filesystem="$MNT" --filesystem="$SECOND" <<EOC
LaunchWindowSec=0.5
MaxLaunchesPerBoot=1000
MinLaunchFiles=1
EOC

# The load: a busy loop per core, and a writer that syncs, on the machine's own disk (not the images).
load_cpu() { while :; do :; done; }
load_io() { while :; do dd if=/dev/zero of="$TMP/load" bs=1M count=32 conv=fsync status=none; done; }
for ((c = 0; c < $(nproc); c++)); do load_cpu & EXTRA_PIDS+=($!); done
load_io & EXTRA_PIDS+=($!)

# The read marks a quiet daemon holds: none (only the exec permission mark, 40000, stays). Its groups' marks
# are "fanotify ..." lines of their fds' fdinfo, masks in hex.
read_marks() {
        cat /proc/"$DAEMON_PID"/fdinfo/* 2>/dev/null |
                awk '/^fanotify .* mask:/ { for (i = 1; i <= NF; i++) if ($i ~ /^mask:/ && $i != "mask:40000") n++ }
                     END { print n + 0 }'
}
quiet() { [ "$(read_marks)" = 0 ]; }

# Each program runs in the real-time class, so that the load cannot delay its reads past its short window
# (a window closes LaunchWindowSec after the exec, however late the program gets a CPU); it also reads at
# once when the exec is allowed, before anything else the daemon does: the sharpest race.
for ((i = 0; i < N; i++)); do
        wait_until 30 quiet || fail "launch $i: the read marks of the last window are still up"
        chrt -f 10 "$MNT/bin/prog$i" "$SECOND/conf" "$MNT/d/own" || fail "launch $i failed"
done
wait_until 60 quiet || fail "the last window did not close"
for p in "${EXTRA_PIDS[@]}"; do kill "$p" 2>/dev/null; done

# every launch stored; each profile with the file on the second filesystem
stored() { [ "$(grep -c "Recorded app session of $MNT/bin/prog" "$DAEMON_LOG")" -ge "$N" ]; }
wait_until 60 stored || fail "$(grep -c "Recorded app session of $MNT/bin/prog" "$DAEMON_LOG") of $N launches stored"
ctl --json=short profiles | jq -r '.[].name' > "$TMP/profiles"
missed=() late=()
for ((i = 0; i < N; i++)); do
        grep -qxF "$MNT/bin/prog$i" "$TMP/profiles" || fail "no profile of prog$i"
        profile_paths "$MNT/bin/prog$i" > "$TMP/paths"
        if ! grep -qxF "$MNT/d/own" "$TMP/paths"; then
                late+=("$i")
        elif ! grep -qxF "$SECOND/conf" "$TMP/paths"; then
                missed+=("$i")
        fi
done
grep -o "so far [0-9]* exec(s) waited for every filesystem to be armed, [0-9]* of them let go unarmed" "$DAEMON_LOG" |
        tail -n 1 | sed 's/^/  /'
[ "${#missed[@]}" = 0 ] || fail "${#missed[@]} of $N launches missed the file on the second filesystem (launches" \
        "${missed[*]:0:20}); ${#late[@]} recorded neither file"
[ "${#late[@]}" = 0 ] || fail "${#late[@]} of $N launches recorded not even their own filesystem's file (launches" \
        "${late[*]:0:20}): their reads came after their window"
pass "$N of $N launches under load recorded their first read on the second filesystem"
stop_daemon
