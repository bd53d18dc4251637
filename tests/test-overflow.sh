#!/bin/bash
# When the kernel's fanotify queue overflows (FAN_Q_OVERFLOW), the sessions open at that moment are marked
# incomplete and the Overflows counter says so; the daemon keeps working. The overflow is produced for
# real: the daemon is stopped (SIGSTOP) while one process reads more distinct files than the queue holds,
# and stays stopped until after the boot window's end.
. "$(dirname "$0")/lib.sh"

setup_image 512M
max=$(cat /proc/sys/fs/fanotify/max_queued_events)
n=$((max + 3000))
mkdir -p "$MNT/many"
(cd "$MNT/many" && for ((i = 0; i < n; i++)); do echo "$i" > "f$i"; done)
sync
start_bus
write_config <<EOC
[Record]
BootWindowSec=8
EOC
# Without page events: a concurrent drop_caches (another test suite on the machine) evicted the files'
# pages before they were read once, and their page events then brought every file the overflow had lost
# back into the session (19,384 of 19,384: no partial profile to see).
start_daemon --filesystem="$MNT" --tracefs="$TMP/no-tracefs"
# Keep the files' dentries in memory while the daemon cannot run: it names a recorded file through the
# file handle fanotify gave it, and a file whose dentry was evicted meanwhile has no name the kernel can
# give but through the directory and name of its read (seeklessd(8), BUGS), which kernels before 5.9 do
# not report; a concurrent drop_caches did that to all of them. Opening a file raises no event the daemon
# records (it records reads).
python3 -c '
import os, resource, signal, sys
resource.setrlimit(resource.RLIMIT_NOFILE, (int(sys.argv[2]) + 100,) * 2)
fds = [os.open(os.path.join(sys.argv[1], f), os.O_RDONLY) for f in os.listdir(sys.argv[1])]
open(sys.argv[3], "w").close()
signal.pause()' "$MNT/many" "$n" "$TMP/pinned" &
EXTRA_PIDS+=($!)
wait_until 60 test -e "$TMP/pinned" || fail "could not hold the files open"

t0=$SECONDS
kill -STOP "$DAEMON_PID"
# one process (cat lives on the root fs, so no exec on the image is blocked) reads every file once
find "$MNT/many" -type f -print0 | xargs -0 -n 100000 cat > /dev/null
# stay stopped past the window's end: reads made inside the window but still queued when it ends must
# count for it (the daemon drains the queue before closing a window)
while [ $((SECONDS - t0)) -le 9 ]; do sleep 0.5; done
kill -CONT "$DAEMON_PID"

wait_until 60 boot_recording_over || fail "boot window did not close"
wait_until 60 has_profile boot || fail "boot session not stored"
over=$(busctl --system get-property org.seekless.Seekless1 /org/seekless/Seekless1 \
        org.seekless.Seekless1.Manager Overflows | awk '{print $2}')
[ "$over" -ge 1 ] || fail "no overflow counted (queue limit $max, $n files read)"
ctl --json=short sessions | jq -e '[.[] | select(.kind == "boot")] | length == 1 and (.[0].complete | not)' >/dev/null ||
        fail "boot session not marked incomplete: $(ctl --json=short sessions)"
files=$(ctl --json=short profiles | jq '.[] | select(.name == "boot") | .files')
[ "$files" -gt 0 ] && [ "$files" -lt "$n" ] || fail "expected a partial boot profile, got $files of $n files"
pass "overflow: $over episode(s), boot session incomplete with $files of $n files"
ctl status >/dev/null || fail "daemon not answering after overflow"
stop_daemon
