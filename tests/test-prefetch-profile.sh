#!/bin/bash
# `seeklessctl prefetch NAME` against a real daemon, on a loop-mounted ext4 marked rotational: a recorded
# launch profile whose files left the page cache is read back into it (every page of every profile file,
# counted by mincore independently of the daemon's figures), with one row for the filesystem in text and
# JSON; a file replaced (a new inode under its name) and one truncated since recording are skipped and
# counted as stale, the rest prefetched; PrefetchMaxMiB= stops it at exactly that many bytes ("cap");
# the memory floor, the off file in the run directory and Prefetch=no each refuse it (PrefetchOff, and the
# reason); an unknown profile is NoSuchProfile, an unprivileged caller is denied.
. "$(dirname "$0")/lib.sh"

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

pages() { "$PAGE_TOUCH" "cached:$1"; }
size_pages() { echo $(( ($(stat -c %s "$1") + 4095) / 4096 )); }
drop_all() {
        # shellcheck disable=SC2046
        "$PAGE_TOUCH" $(printf 'drop:%s ' "${files[@]}")
        for f in "${files[@]}"; do [ "$(pages "$f")" = 0 ] || fail "$f still cached after the drop"; done
}

# --- cold, then prefetched: every page of every profile file cached
drop_all
ctl --json=short prefetch "$P" > "$TMP/pf.json" || fail "prefetch failed: $(cat "$TMP/pf.json")"
jq -e --arg m "$MNT" '.filesystems | length == 1 and .[0].mount == $m and .[0].state == "done" and
        .[0].stale_files == 0 and .[0].asked_bytes > 0 and .[0].calls > 0' "$TMP/pf.json" >/dev/null ||
        fail "reply: $(cat "$TMP/pf.json")"
for f in "${files[@]}"; do
        [ "$(pages "$f")" = "$(size_pages "$f")" ] || fail "$f: $(pages "$f") of $(size_pages "$f") pages cached"
done
grep -q "Prefetch of $P on $MNT: " "$DAEMON_LOG" || fail "no log line"
pass "prefetch: all ${#files[@]} profile files cached again ($(jq .filesystems[0].asked_bytes "$TMP/pf.json") bytes asked)"

ctl prefetch "$P" > "$TMP/pf.txt" || fail "prefetch (text) failed"
grep -q "^MOUNT  *STATE  *ASKED  *METADATA  *CACHED  *CALLS  *STALE" "$TMP/pf.txt" &&
        grep -q "^$MNT  *done " "$TMP/pf.txt" || fail "text: $(cat "$TMP/pf.txt")"
jq -e '.filesystems[0].asked_bytes == 0' < <(ctl --json=short prefetch "$P") >/dev/null ||
        fail "a second prefetch asked for cached pages again"
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
for f in "${files[@]}"; do
        [ "$(pages "$f")" = "$(size_pages "$f")" ] || fail "$f: $(pages "$f") of $(size_pages "$f") pages cached"
done
[ "$(pages "$replaced")" = 0 ] && [ "$(pages "$truncated")" = 0 ] || fail "a stale file was read"
pass "a replaced and a truncated file skipped as stale, the other $((${#files[@]})) prefetched"

# --- the cap
config "PrefetchMaxMiB=1"
reload
drop_all
ctl --json=short prefetch "$P" > "$TMP/pf.json" || fail "prefetch with the cap failed"
jq -e '.filesystems[0].state == "cap" and .filesystems[0].asked_bytes == 1048576' "$TMP/pf.json" >/dev/null ||
        fail "cap: $(cat "$TMP/pf.json")"
total=0
for f in "${files[@]}"; do total=$((total + $(pages "$f"))); done
[ "$total" = 256 ] || fail "cap: $total pages cached, not 256"
pass "PrefetchMaxMiB=1: stopped at 1 MiB (256 pages cached)"

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
