#!/bin/bash
# Outside recording windows nothing but execs is watched: reads on the filesystem raise no events at all
# (the read marks are gone), after a launch window closes, and also when launch recording is disabled
# (MaxLaunchesPerBoot=0) and an exec happened. The marks the daemon holds then, from the kernel's own list
# (/proc/PID/fdinfo of its fanotify groups): one FAN_OPEN_EXEC_PERM mark on the filesystem with launch
# recording on; none at all with it off.
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
        drop_file_pages "$MNT"/d/*
        before=$(events)
        for _ in 1 2 3; do cat "$MNT"/d/* > /dev/null; drop_file_pages "$MNT"/d/*; done
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
        # the kernel lists each mark of a group as a "fanotify ..." line of its fd's fdinfo (mask in hex)
        marks=$(cat /proc/"$DAEMON_PID"/fdinfo/* 2>/dev/null |
                awk '/^fanotify .* mask:/ { for (i = 1; i <= NF; i++) if ($i ~ /^mask:/) printf "%s ", substr($i, 6) }')
        if [ "$max" = 0 ]; then
                [ -z "$marks" ] || fail "launch recording off, yet marks are held outside windows: masks [$marks]"
        else
                [ "$marks" = "40000 " ] || fail "outside windows: want one FAN_OPEN_EXEC_PERM (40000) mark, masks [$marks]"
        fi
        pass "MaxLaunchesPerBoot=$max: the marks held outside windows: [${marks:-none}]"
        stop_daemon
done
