#!/bin/bash
# Launches recorded with BPF ([Record] Recorder=bpf), against a real daemon on a loop-mounted ext4:
# - warm: a program that reads parts of files that were cached whole before it ran gets exactly those
#   parts as its profile's ranges (the tracepoint recorder sees no read of a cached page: it takes such
#   files whole, "partly cached before");
# - prefetched: a cold launch is recorded, then the profile's files leave the page cache, `seeklessctl
#   prefetch` reads them back and the program runs again, five times: the profile keeps the files, their
#   order and their ranges the cold launch gave it;
# - the contrast: with the tracepoint recorder (Recorder=fanotify) the same warm launch does not give those
#   parts (the test fails where the pages used are not taken);
# - the exec thread watched every exec it let through, and no process stays watched after the windows.
# Skips (77) where the daemon says it was built without the BPF recorder.
. "$(dirname "$0")/lib.sh"

setup_image
mkdir -p "$MNT/bin" "$MNT/d"
cp "$PAGE_TOUCH" "$MNT/bin/touch-parts"
for f in a b c; do head -c $((64 * 4096)) /dev/urandom > "$MNT/d/$f"; done
sync

start_recording --filesystem="$MNT" <<EOF
Recorder=bpf
MaxLaunchesPerBoot=20
KeepLaunches=20
[Prefetch]
PrefetchMinAvailableMiB=0
PrefetchMaxMemoryPressure=100
EOF
if grep -q "No BPF page recorder (not built in" "$DAEMON_LOG"; then
        echo "SKIP: seeklessd was built without the BPF recorder (-Dbpf_recorder)"
        exit 77
fi
grep -q "Recording pages with BPF (the boot's and the launches'): pages read from the disk, and pages used that were cached" \
        "$DAEMON_LOG" || fail "the BPF recorder did not start: $(grep -i 'bpf' "$DAEMON_LOG")"
P=$MNT/bin/touch-parts

# pages 0-3 and 40-41 of a, 8-15 of b, all of c (read()), with a, b and c cached whole before
parts=(fadv:$MNT/d/a:0:16384 fadv:$MNT/d/a:163840:8192 fadv:$MNT/d/b:32768:32768 read:$MNT/d/c)
ranges_of() {   # PROFILE FILE -> "offset+length ..." of the file's ranges in the profile
        ctl --json=short show "$1" | jq -r --arg f "$2" '.files[] | select(.path == $f) | [.ranges[] | "\(.offset)+\(.length)"] | join(" ")'
}
sessions() { ctl --json=short profiles | jq --arg n "$P" '[.[] | select(.name == $n) | .sessions][0] // 0'; }
launch() {      # wait for the session of one more launch
        local n
        n=$(sessions)
        "$P" "${parts[@]}" || fail "the program failed"
        wait_until 30 eval '[ "$(sessions)" -gt '"$n"' ]' || fail "launch $((n + 1)) not recorded"
}

# cached whole, and kept so by a process of their own (locked: a drop_caches elsewhere on the machine, by
# another suite, would make them cold)
warm() {
        "$PAGE_TOUCH" lock:"$MNT"/d/a:0:262144 lock:"$MNT"/d/b:0:262144 lock:"$MNT"/d/c:0:262144 sleep:120000 &
        EXTRA_PIDS+=($!)
        for f in a b c; do
                wait_until 30 eval '[ "$("$PAGE_TOUCH" "cached:$MNT/d/'"$f"'")" = 64 ]' ||
                        fail "precondition: $f not cached whole"
        done
}
warm
launch
stop_extra_pids
[ "$(ranges_of "$P" "$MNT/d/a")" = "0+16384 163840+8192" ] || fail "warm a: [$(ranges_of "$P" "$MNT/d/a")]"
[ "$(ranges_of "$P" "$MNT/d/b")" = "32768+32768" ] || fail "warm b: [$(ranges_of "$P" "$MNT/d/b")]"
[ "$(ranges_of "$P" "$MNT/d/c")" = "0+262144" ] || fail "warm c: [$(ranges_of "$P" "$MNT/d/c")]"
grep "The app session of $P holds" "$DAEMON_LOG" | grep -q ", 0 files partly cached before" ||
        fail "a file counted as cached: $(grep "The app session of $P holds" "$DAEMON_LOG")"
pass "a warm launch: the parts of cached files it read, as ranges (a 0+16384 163840+8192, b 32768+32768, c whole)"

# the cold reference: a new profile, of another copy of the program
Q=$MNT/bin/touch-cold
cp "$PAGE_TOUCH" "$Q"
P=$Q
"$PAGE_TOUCH" drop:"$MNT"/d/a drop:"$MNT"/d/b drop:"$MNT"/d/c drop:"$P"
launch
ref=$(ctl --json=short show "$P" | jq -c '[.files[] | {path, ranges}]')
echo "  cold profile: $ref"
for i in 1 2 3 4 5; do
        "$PAGE_TOUCH" drop:"$MNT"/d/a drop:"$MNT"/d/b drop:"$MNT"/d/c drop:"$P"
        ctl --json=short prefetch "$P" > "$TMP/pf.json" || fail "prefetch $i failed: $(cat "$TMP/pf.json")"
        jq -e '.filesystems[0].state == "done" and .filesystems[0].asked_bytes > 0' "$TMP/pf.json" >/dev/null ||
                fail "prefetch $i: $(cat "$TMP/pf.json")"
        launch
        now=$(ctl --json=short show "$P" | jq -c '[.files[] | {path, ranges}]')
        [ "$now" = "$ref" ] || fail "after prefetched launch $i the profile is $now, the cold one was $ref"
done
pass "five prefetched launches left the profile's files, order and ranges as the cold launch gave them"

[ "$(grep -c "Recording launch of $MNT/bin/" "$DAEMON_LOG")" = 7 ] || fail "not 7 launches recorded"
stop_daemon
# every window closed: no process is left watched (the recorder's own count, logged at stop)
grep -q "still running no longer watched" "$DAEMON_LOG" || fail "no launch ended with the BPF recorder"
grep -q "BPF page recorder: 0 process(es) still watched at stop" "$DAEMON_LOG" ||
        fail "processes left watched: $(grep 'still watched at stop' "$DAEMON_LOG")"

# the contrast: the tracepoint recorder, the warm launch of a third copy
R=$MNT/bin/touch-trace
cp "$PAGE_TOUCH" "$R"
P=$R
sed -i "s/^Recorder=bpf$/Recorder=fanotify/" "$CONF"
start_daemon --filesystem="$MNT"
wait_until 30 boot_recording_over || fail "boot window did not close"
warm
launch
stop_extra_pids
[ "$(ranges_of "$P" "$MNT/d/a")" != "0+16384 163840+8192" ] ||
        fail "the tracepoint recorder too gave the warm launch the parts it read"
pass "with Recorder=fanotify the same warm launch gives a [$(ranges_of "$P" "$MNT/d/a")] ($(grep "The app session of $P holds" "$DAEMON_LOG" | grep -o '[0-9]* files\? partly cached before'))"
