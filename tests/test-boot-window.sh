#!/bin/bash
# The boot session captures opens made inside its window (here: no systemd on the private bus, so the
# window is BootWindowSec= from daemon start) and none after it.
. "$(dirname "$0")/lib.sh"

setup_image
mkdir -p "$MNT/in" "$MNT/out"
for f in in1 in2 in3; do echo "$f" > "$MNT/in/$f"; done
for f in out1 out2; do echo "$f" > "$MNT/out/$f"; done
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
want="$MNT/in/in2 $MNT/in/in1 $MNT/in/in3 "
[ "$got" = "$want" ] || fail "boot profile: got [$got], want [$want]"
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
