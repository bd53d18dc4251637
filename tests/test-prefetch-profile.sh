#!/bin/bash
# `seeklessctl prefetch NAME` against a real daemon, on a loop-mounted ext4 marked rotational: a recorded
# launch profile whose files left the page cache is read back into it (every page of every profile file,
# counted independently of the daemon's figures, as the page-cache insertions a tracefs instance of the
# test's own sees: lib.sh's inserted), with one row for the filesystem in text and
# JSON; a file replaced (a new inode under its name) and one truncated since recording are skipped and
# counted as stale, the rest prefetched; PrefetchMaxMiB= stops it at exactly that many bytes ("cap");
# the memory floor, the off file in the run directory and Prefetch=no each refuse it (PrefetchOff, and the
# reason); an unknown profile is NoSuchProfile, an unprivileged caller is denied.
. "$(dirname "$0")/lib.sh"
# counts what the prefetch cached: no drop of every cache by a test beside meanwhile (tests/lib-core.sh)
caches_kept

setup_image
start_bus
config() {      # [Prefetch] lines...
        write_config <<EOC
[Record]
BootWindowSec=1
LaunchWindowSec=2
[Prefetch]
$(printf '%s\n' "$@")
EOC
}
reload() {
        local n
        n=$(grep -c "Configuration reloaded" "$DAEMON_LOG" || true)
        kill -HUP "$DAEMON_PID"
        wait_until 10 eval '[ "$(grep -c "Configuration reloaded" "$DAEMON_LOG")" -gt '"$n"' ]' ||
                fail "the configuration was not reloaded"
}
config
start_daemon --filesystem="$MNT"
wait_until 30 boot_recording_over || fail "boot window did not close"
setup_aged_profile 11 20 512
mapfile -t files < <(echo "$P"; echo "$PROFILE_FILES")
# the pages of each file the profile holds (the files whole; with the BPF recorder, of the program the
# part it used): "path pages" lines
ctl --json=short show "$P" | jq -r '.files[] | "\(.path) \((([.ranges[]? | .length] | add) // .size) / 4096 | ceil)"' \
        > "$TMP/want"

pages() { "$PAGE_TOUCH" "cached:$1"; }
want() { awk -v f="$1" '$1 == f { print $2 }' "$TMP/want"; }
# What the prefetch read is counted as the pages it inserted into the page cache since the drop (lib.sh's
# inserts_start, a tracefs instance of the test's own): a page read may be evicted again within seconds by
# the machine's proactive reclaim before mincore() counts it (doc/kernel.md §8). mincore()'s count is said
# beside it.
all_read() { local f; for f in "$@"; do [ "$(inserted "$f")" -ge "$(want "$f")" ] || return 1; done; }
wait_read() {           # FILE...: as many pages of each read as the profile holds, or fail naming one
        local f
        wait_until 10 all_read "$@" && return 0
        for f in "$@"; do
                [ "$(inserted "$f")" -ge "$(want "$f")" ] ||
                        fail "$f: $(inserted "$f") of the profile's $(want "$f") pages read, $(pages "$f") cached; $("$PAGE_TOUCH" "missing:$f")"
        done
}
drop_all() {            # the files' pages dropped, and the count of insertions started again
        # shellcheck disable=SC2046
        "$PAGE_TOUCH" $(printf 'drop:%s ' "${files[@]}")
        for f in "${files[@]}"; do [ "$(pages "$f")" = 0 ] || fail "$f still cached after the drop"; done
        inserts_start
}
# the files' pages cached (read where they are not) and held there, mapped and locked, until unlock: no
# reclaim takes them meanwhile
all_cached() { local f; for f in "${files[@]}"; do [ "$(pages "$f")" -ge "$(want "$f")" ] || return 1; done; }
lock_all() {
        local f args=()
        for f in "${files[@]}"; do args+=("lock:$f:0:$(stat -c %s "$f")"); done
        "$PAGE_TOUCH" "${args[@]}" sleep:600000 &
        EXTRA_PIDS+=($!)
        wait_until 30 all_cached || fail "the files' pages not locked in the page cache"
}

# --- cold, then prefetched: every page of every profile file cached
drop_all
ctl --json=short prefetch "$P" > "$TMP/pf.json" || fail "prefetch failed: $(cat "$TMP/pf.json")"
jq -e --arg m "$MNT" '.filesystems | length == 1 and .[0].mount == $m and .[0].state == "done" and
        .[0].stale_files == 0 and .[0].asked_bytes > 0 and .[0].calls > 0' "$TMP/pf.json" >/dev/null ||
        fail "reply: $(cat "$TMP/pf.json")"
wait_read "${files[@]}"
grep -q "Prefetch of $P on $MNT: " "$DAEMON_LOG" || fail "no log line"
pass "prefetch: all ${#files[@]} profile files' hot pages read again ($(jq .filesystems[0].asked_bytes "$TMP/pf.json") bytes asked)"

lock_all
ctl prefetch "$P" > "$TMP/pf.txt" || fail "prefetch (text) failed"
grep -q "^MOUNT  *STATE  *ASKED  *METADATA  *CACHED  *CALLS  *STALE" "$TMP/pf.txt" &&
        grep -q "^$MNT  *done " "$TMP/pf.txt" || fail "text: $(cat "$TMP/pf.txt")"
jq -e '.filesystems[0].asked_bytes == 0' < <(ctl --json=short prefetch "$P") >/dev/null ||
        fail "a second prefetch asked for cached pages again"
stop_extra_pids
pass "text output; a second prefetch finds everything cached and asks for nothing"

# --- stale: one file replaced, one truncated since recording
replaced=${files[3]} truncated=${files[5]}
cp "$replaced" "$TMP/copy" && mv "$TMP/copy" "$replaced"
truncate -s 4096 "$truncated"
mapfile -t files < <(echo "$P"; echo "$PROFILE_FILES" | grep -v -x -e "$replaced" -e "$truncated")
drop_all
"$PAGE_TOUCH" "drop:$replaced" "drop:$truncated"
ctl --json=short prefetch "$P" > "$TMP/pf.json" || fail "prefetch with stale files failed"
jq -e '.filesystems[0].state == "done" and .filesystems[0].stale_files == 2' "$TMP/pf.json" >/dev/null ||
        fail "stale: $(cat "$TMP/pf.json")"
wait_read "${files[@]}"
[ "$(inserted "$replaced" "$truncated")" = 0 ] || fail "a stale file was read"
pass "a replaced and a truncated file skipped as stale, the other $((${#files[@]})) prefetched"

# --- the cap
config "PrefetchMaxMiB=1"
reload
drop_all
ctl --json=short prefetch "$P" > "$TMP/pf.json" || fail "prefetch with the cap failed"
jq -e '.filesystems[0].state == "cap" and .filesystems[0].asked_bytes == 1048576' "$TMP/pf.json" >/dev/null ||
        fail "cap: $(cat "$TMP/pf.json")"
wait_until 10 eval '[ "$(inserted "${files[@]}")" -ge 256 ]' || true
total=$(inserted "${files[@]}")
[ "$total" = 256 ] || fail "cap: $total pages read, not 256"
pass "PrefetchMaxMiB=1: stopped at 1 MiB (256 pages read)"

# --- refusals: the memory floor, the off file, Prefetch=no; no such profile; not root
refused() {     # WHAT PATTERN
        if ctl prefetch "$P" > "$TMP/out" 2> "$TMP/err"; then fail "$1: prefetch not refused"; fi
        grep -q "$2" "$TMP/err" || fail "$1: $(cat "$TMP/err")"
}
config "PrefetchMinAvailableMiB=1048576"
reload
refused "floor" "Prefetch is off: low memory: .* MiB available, PrefetchMinAvailableMiB=1048576"
config
reload
mkdir -p "$RUN_DIR" && touch "$RUN_DIR/no-prefetch"
refused "off file" "Prefetch is off: off for this boot ($RUN_DIR/no-prefetch)"
rm "$RUN_DIR/no-prefetch"
config "Prefetch=no"
reload
refused "Prefetch=no" "Prefetch is off: Prefetch=no"
config
reload
ctl prefetch "$P" > /dev/null || fail "prefetch refused after it was switched on again"
if ctl prefetch /no/such/program 2> "$TMP/err"; then fail "unknown profile not refused"; fi
grep -q "No profile named '/no/such/program'" "$TMP/err" || fail "unknown profile: $(cat "$TMP/err")"
if as_nobody "$SEEKLESSCTL" prefetch "$P" 2> "$TMP/err"; then fail "nobody may prefetch"; fi
grep -qi "root\|denied" "$TMP/err" || fail "nobody: $(cat "$TMP/err")"
pass "refused below the memory floor, with the off file and with Prefetch=no; NoSuchProfile; root only"
stop_daemon
