#!/bin/bash
# The boot session captures opens made inside its window (here: no systemd on the private bus, so the
# window is BootWindowSec= from daemon start) and none after it. What processes started before the daemon
# still map (their program, their libraries) opens the session, before the first read the daemon saw;
# files they only read, and mapped files on other filesystems, are not in it.
. "$(dirname "$0")/lib.sh"

setup_image
mkdir -p "$MNT/in" "$MNT/out"
for f in in1 in2 in3; do echo "$f" > "$MNT/in/$f"; done
for f in out1 out2; do echo "$f" > "$MNT/out/$f"; done
# A process started before the daemon, running from the image with a library from the image preloaded
mkdir -p "$MNT/early"
cp /bin/sleep "$MNT/early/sleeper"
cp "$(ldd /bin/sleep | awk '/libc\.so/ {print $3}' | sed 's/libc\.so\.6/libm.so.6/')" "$MNT/early/libearly.so"
cat "$MNT/out/out1" > /dev/null      # read but not mapped: nothing can tell it was read
LD_PRELOAD=$MNT/early/libearly.so "$MNT/early/sleeper" 300 &
EXTRA_PIDS+=($!)
wait_until 10 grep -q libearly.so /proc/"${EXTRA_PIDS[-1]}"/maps || fail "the early process did not map its library"
start_bus
write_config <<EOC
[Record]
BootWindowSec=6
EOC
# The database lives on the watched filesystem: the daemon's own reads and writes must never show up.
STATE=$MNT/state
start_daemon --filesystem="$MNT"
busctl --system get-property org.seekless.Seekless1 /org/seekless/Seekless1 org.seekless.Seekless1.Manager \
        BootRecording | grep -q true || fail "boot session not open right after start"
cat "$MNT/in/in2" "$MNT/in/in1" "$MNT/in/in3" >/dev/null
ctl profiles >/dev/null; ctl sessions >/dev/null    # make the daemon read its database inside the window

wait_until 60 boot_recording_over || fail "boot window did not close"
wait_until 30 has_profile boot || fail "boot profile not stored"
cat "$MNT/out/out1" "$MNT/out/out2" >/dev/null
# stopping flushes anything still open: if the daemon were still recording the boot, out* would show up
stop_daemon
start_daemon --filesystem="$MNT"

got=$(profile_paths boot | tr '\n' ' ')
# the early process's files first (their order is that of its address space), then the reads in order
want1="$MNT/early/sleeper $MNT/early/libearly.so $MNT/in/in2 $MNT/in/in1 $MNT/in/in3 "
want2="$MNT/early/libearly.so $MNT/early/sleeper $MNT/in/in2 $MNT/in/in1 $MNT/in/in3 "
[ "$got" = "$want1" ] || [ "$got" = "$want2" ] || fail "boot profile: got [$got], want [$want1]"
grep -q "Boot session adds 2 files mapped by processes started before seeklessd" "$DAEMON_LOG" ||
        fail "the daemon did not say what it took from running processes"
pass "the boot session opens with the files a process started before the daemon maps"
ctl --json=short sessions | jq -e '[.[] | select(.kind == "boot")] | length == 1 and .[0].complete' >/dev/null ||
        fail "expected exactly one complete boot session: $(ctl --json=short sessions)"
ctl --json=short profiles | jq -e '.[] | select(.name == "boot") | .kind == "boot" and .sessions == 1' >/dev/null ||
        fail "boot profile entry wrong"
pass "boot session holds the in-window reads in order, nothing after the window, none of the daemon's own"
# the restart within the same boot did not open a second boot session
busctl --system get-property org.seekless.Seekless1 /org/seekless/Seekless1 org.seekless.Seekless1.Manager \
        BootRecording | grep -q false || fail "a second boot session was opened in the same boot"
pass "same boot is not recorded twice"
stop_daemon
