#!/bin/bash
# Outside recording windows nothing but execs is watched: reads on the filesystem raise no events at all
# (the read marks are gone), after a launch window closes, and also when launch recording is disabled
# (MaxLaunchesPerBoot=0) and an exec happened.
. "$(dirname "$0")/lib.sh"

setup_image
mkdir -p "$MNT/bin" "$MNT/d"
cp "$OPEN_FILES" "$MNT/bin/prog"
for i in 1 2 3; do echo "$i" > "$MNT/d/$i"; done
start_bus

events() {
        busctl --system get-property org.seekless.Seekless1 /org/seekless/Seekless1 \
                org.seekless.Seekless1.Manager EventsReceived | awk '{print $2}'
}
no_launch_open() {
        [ "$(busctl --system get-property org.seekless.Seekless1 /org/seekless/Seekless1 \
                org.seekless.Seekless1.Manager ActiveLaunches)" = "u 0" ]
}
reads_raise_no_events() {
        local before after
        sync; echo 3 > /proc/sys/vm/drop_caches
        before=$(events)
        for _ in 1 2 3; do cat "$MNT"/d/* > /dev/null; echo 3 > /proc/sys/vm/drop_caches; done
        sleep 1
        after=$(events)
        [ "$before" = "$after" ] || fail "$1: reads outside any window raised $((after - before)) events"
}

for max in 3 0; do
        write_config <<EOC
[Record]
BootWindowSec=1
LaunchWindowSec=1
MaxLaunchesPerBoot=$max
EOC
        rm -rf "$STATE"
        start_daemon --filesystem="$MNT"
        wait_until 30 boot_recording_over || fail "boot window did not close"
        "$MNT/bin/prog" "$MNT/d/1" "$MNT/d/2"
        wait_until 30 no_launch_open || fail "launch window did not close"
        sleep 0.5
        reads_raise_no_events "MaxLaunchesPerBoot=$max"
        pass "MaxLaunchesPerBoot=$max: no events outside windows after an exec"
        stop_daemon
done
