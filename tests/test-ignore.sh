#!/bin/bash
# While only the boot session records, files it already has stop raising events (evictable inode ignore
# marks); a program launched during the boot window must still see its reads of those files (the exec
# thread drops the ignore marks before allowing the exec).
. "$(dirname "$0")/lib.sh"

setup_image
mkdir -p "$MNT/bin" "$MNT/d"
cp "$OPEN_FILES" "$MNT/bin/prog"
for f in a b c; do echo "$f" > "$MNT/d/$f"; done
sync
start_bus
write_config <<EOC
[Record]
BootWindowSec=40
LaunchWindowSec=2
EOC
start_daemon --filesystem="$MNT"
events() {
        busctl --system get-property org.seekless.Seekless1 /org/seekless/Seekless1 \
                org.seekless.Seekless1.Manager EventsReceived | awk '{print $2}'
}

# The ignore marks are evictable: they go with the inode when the kernel evicts it from its cache (a
# drop_caches by another suite on the machine did). Held open (an open raises no recorded event), the
# inodes stay in memory, so what is checked is the marks themselves.
exec 7<"$MNT/d/a" 8<"$MNT/d/b" 9<"$MNT/d/c"
cat "$MNT"/d/* > /dev/null
sleep 2                          # the daemon names new files and marks them at idle priority
e1=$(events)
for _ in 1 2 3 4 5; do cat "$MNT"/d/* > /dev/null; done
sleep 1
e2=$(events)
exec 7<&- 8<&- 9<&-
[ "$e2" = "$e1" ] || fail "repeat reads of files the boot session has raised $((e2 - e1)) events"
pass "repeat reads during the boot window raise no events"

"$MNT/bin/prog" "$MNT/d/c" "$MNT/d/a" "$MNT/d/b"
wait_until 30 has_profile "$MNT/bin/prog" || fail "launch during the boot window not recorded"
got=$(profile_paths "$MNT/bin/prog" | tr '\n' ' ')
[ "$got" = "$MNT/bin/prog $MNT/d/c $MNT/d/a $MNT/d/b " ] || fail "the launch missed ignored files: [$got]"
pass "a launch during the boot window still sees reads of files the boot session ignores"
stop_daemon
