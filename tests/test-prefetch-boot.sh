#!/bin/bash
# The boot profile prefetched as the boot session begins ([Prefetch] PrefetchBoot=), against a real daemon
# on a loop-mounted ext4, with each recorder: a boot reads six files in its window and is recorded; the
# daemon stops, the files leave the page cache; a daemon started for the next boot (a new boot id)
# prefetches them: every page the profile holds is read into the page cache again (the insertions a tracefs
# instance of the test's own sees, independently of the daemon) before anything reads them, and its log
# says so; the next boot session, whose reads find them cached, leaves the profile as the first one did.
#   - Recorder=bpf: the boot reads the files whole; the prefetched boot records the pages it used (the
#     part skipped where the daemon was built without the BPF recorder).
#   - Recorder=fanotify (the tracepoint sees no use of a cached page): the boot reads the first 64 KiB of
#     each 1 MiB file, and only one boot is kept (KeepBoots=1): the prefetched boot keeps the profile's
#     ranges (profile.c) where its reads saw nothing; it would otherwise make every file count whole.
# The second boot also reads a file the profile does not have (so its session has page data of its own). With
# PrefetchBoot=no nothing is read ahead.
. "$(dirname "$0")/lib.sh"
# counts what the prefetch cached: no drop of every cache by a test beside meanwhile (tests/lib-core.sh)
caches_kept

setup_image
mkdir -p "$MNT/etc"
files=()
for f in a b c d e f; do head -c $((256 * 4096)) /dev/urandom > "$MNT/etc/$f"; files+=("$MNT/etc/$f"); done
head -c $((64 * 4096)) /dev/urandom > "$MNT/etc/new"        # read by the second boot only
sync
start_bus
cached() { "$PAGE_TOUCH" "cached:$1"; }
drop() { "$PAGE_TOUCH" $(printf 'drop:%s ' "${files[@]}" "$MNT/etc/new"); }
boot() {        # BOOT-ID: a daemon for that boot
        start_daemon --filesystem="$MNT" --boot-id="$1"
}
boot_ranges() { ctl --json=short show boot | jq -c '[.files[] | select(.path | endswith("/new") | not) | {path, ranges}]'; }
# pages of each file in the profile's ranges, as "path pages" lines
profile_pages() { ctl --json=short show boot | jq -r '.files[] | "\(.path) \((([.ranges[]? | .length] | add) // .size) / 4096 | ceil)"'; }

# every file as many pages read since the drop as $TMP/pages says the profile holds: counted as the pages
# inserted into the page cache (lib.sh's inserted), as the machine's proactive reclaim may evict a page read
# again before mincore() counts it (doc/kernel.md §8)
all_read() {
        local path pages
        while read -r path pages; do [ "$(inserted "$path")" -ge "$pages" ] || return 1; done < "$TMP/pages"
}
boots() {       # RECORDER READ KEEP: two boots, the second prefetched; READ: how each boot reads the files
        local recorder=$1 read=$2 keep=$3 first n path pages id=$4
        [ -z "$DAEMON_PID" ] || stop_daemon
        rm -rf "${STATE:?}"/*
        write_config <<EOC
[Record]
BootWindowSec=8
LaunchWindowSec=2
Recorder=$recorder
KeepBoots=$keep
[Prefetch]
PrefetchMinAvailableMiB=0
PrefetchMaxMemoryPressure=100
EOC
        drop
        boot "${id}1111111111111111111111111111111"
        $read
        wait_until 60 boot_recording_over || fail "$recorder: boot window did not close"
        wait_until 30 has_profile boot || fail "$recorder: boot profile not stored"
        first=$(boot_ranges)
        [ "$(jq length <<< "$first")" = 6 ] || fail "$recorder: the first boot's profile: $first"
        profile_pages > "$TMP/pages"
        stop_daemon
        pass "$recorder: the first boot recorded: $first"

        drop
        for f in "${files[@]}"; do [ "$(cached "$f")" = 0 ] || fail "$f still cached"; done
        inserts_start
        n=$(grep -c "Prefetch of boot on $MNT: " "$DAEMON_LOG" || true)
        boot "${id}2222222222222222222222222222222"
        wait_until 30 eval '[ "$(grep -c "Prefetch of boot on $MNT: " "$DAEMON_LOG")" -gt '"$n"' ]' ||
                fail "$recorder: no prefetch of the boot profile at start"
        wait_until 10 all_read || true
        while read -r path pages; do
                [ "$(inserted "$path")" -ge "$pages" ] ||
                        fail "$recorder: $path: $(inserted "$path") pages read by the prefetch, the profile holds $pages ($("$PAGE_TOUCH" "missing:$path")): $(ctl --json=short show boot | jq -c --arg p "$path" '.files[] | select(.path == $p)'); $(grep -i prefetch "$DAEMON_LOG" | tail -n 5)"
                [ "$(cached "$path")" -ge "$pages" ] ||
                        echo "note: $recorder: $path: $(cached "$path") of the $pages pages read still cached ($("$PAGE_TOUCH" "missing:$path"))"
        done < "$TMP/pages"
        pass "$recorder: at start: $(grep "Prefetch of boot on $MNT: " "$DAEMON_LOG" | tail -n 1)"
        $read
        cat "$MNT/etc/new" > /dev/null        # a file the profile does not have: the session has page data
        wait_until 60 boot_recording_over || fail "$recorder: boot window did not close"
        wait_until 30 eval '[ "$(ctl --json=short sessions | jq -r "[.[] | select(.profile == \"boot\")][0].boot_id")" = '"${id}2222222222222222222222222222222"' ]' ||
                fail "$recorder: the second boot session not stored: $(ctl --json=short sessions)"
        [ "$(boot_ranges)" = "$first" ] || fail "$recorder: after the prefetched boot the profile is $(boot_ranges), it was $first"
        pass "$recorder: the prefetched boot kept the profile as the cold one left it"
}
read_whole() { cat "${files[@]}" > /dev/null; }
read_heads() { local f; for f in "${files[@]}"; do head -c 65536 "$f" > /dev/null; done; }

boots fanotify read_heads 1 a
if bpf_recorder_built; then
        boots bpf read_whole 10 b
else
        echo "SKIP (part): seeklessd was built without the BPF recorder (-Dbpf_recorder)"
fi

sed -i 's/^\[Prefetch\]$/[Prefetch]\nPrefetchBoot=no/' "$CONF"
[ -z "$DAEMON_PID" ] || stop_daemon
drop
inserts_start
n=$(grep -c "Prefetch of boot on" "$DAEMON_LOG" || true)
boot 33333333333333333333333333333333
sleep 2         # what a prefetch would have read by now (the one before took milliseconds)
[ "$(grep -c "Prefetch of boot on" "$DAEMON_LOG")" = "$n" ] || fail "a prefetch with PrefetchBoot=no"
for f in "${files[@]}"; do [ "$(cached "$f")" = 0 ] || fail "$f cached with PrefetchBoot=no"; done
[ "$(inserted "${files[@]}")" = 0 ] || fail "pages read with PrefetchBoot=no"
pass "PrefetchBoot=no: nothing read ahead"
