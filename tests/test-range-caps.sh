#!/bin/bash
# What a user's page ranges cost the root-owned database, and that it is given back. nobody launches a
# program of its own that reads a file every other page (10,000 pages: one range, the pages between joined),
# then 5 sparse files 4,096 pages each, 32 pages apart (ranges that cannot join): the session keeps
# 16,384 ranges (a launch's cap), says so once and is stored incomplete. After `seeklessctl forget` of that
# profile, the database file and its WAL shrink back to within 10 % of their size before the launch (free
# pages handed back at idle, the WAL truncated).
. "$(dirname "$0")/lib.sh"

: "${PAGE_TOUCH:?run through meson test}"
setup_image
test_tracefs
[ -e "$TEST_TRACEFS/events/filemap/mm_filemap_add_to_page_cache" ] || { echo "SKIP: no page-cache tracepoint"; exit 77; }

chmod 755 "$TMP"
mkdir -m 1777 "$MNT/pub"
P=$MNT/pub/reader
install -o 65534 -g 65534 -m 755 "$PAGE_TOUCH" "$P"
as_nobody truncate -s $((10000 * 4096)) "$MNT/pub/even"
# A pause after each file: the reader inserts pages faster than a daemon built with sanitizers takes
# their events, and each file's events fit in the recorders' buffers (1 MiB per CPU) on their own.
steps=(strided:"$MNT/pub/even":5000:2 sleep:1000)
for i in $(seq 1 5); do
        as_nobody truncate -s $((4096 * 32 * 4096)) "$MNT/pub/f$i"
        steps+=(strided:"$MNT/pub/f$i":4096:32 sleep:1000)
done
start_recording --filesystem="$MNT" <<EOC
LaunchWindowSec=20
EOC
DB=$STATE/seekless.db
db_bytes() { cat "$DB" "$DB-wal" 2>/dev/null | wc -c; }

before=$(db_bytes)
as_nobody "$P" "${steps[@]}" || fail "the reader failed"
wait_until 60 has_profile "$P" || fail "the launch was not recorded"
with=$(db_bytes)
grep -q "^Page range [0-9]* of $P: $MNT/pub/even pages 0-9998 at " "$DAEMON_LOG" ||
        fail "every other page is not one range: $(grep "of $P: $MNT/pub/even" "$DAEMON_LOG" | head -3)"
grep -q "^The app session of $P holds 16384 page ranges (0 page events lost," "$DAEMON_LOG" ||
        fail "not capped at 16384 ranges: $(grep "session of $P holds" "$DAEMON_LOG")"
[ "$(grep -c "^The app session of $P reached its limit of page ranges (16384, 4096 of one file): [1-9][0-9]* pages of later ranges left out, stored as incomplete$" \
        "$DAEMON_LOG")" = 1 ] || fail "the cap not logged once: $(grep "reached its limit" "$DAEMON_LOG")"
ctl --json=short sessions | jq -e --arg n "$P" '[.[] | select(.profile == $n)] | length == 1 and (.[0].complete | not)' \
        > /dev/null || fail "not stored as incomplete: $(ctl --json=short sessions)"
pass "every other page of a file: one range; 16384 ranges kept of 5 x 4096, the session incomplete, logged once" \
        "($(grep -o "took [0-9]* page-cache events" "$DAEMON_LOG" | tail -1), none lost)"

ctl forget "$P"
small() { [ "$(db_bytes)" -le $((before + before / 10)) ]; }
wait_until 30 small || fail "the database stays at $(db_bytes) bytes after forget (before: $before, with the session: $with)"
grep -q "^Handed [0-9]* KiB of free database pages back to the filesystem$" "$DAEMON_LOG" || fail "not logged"
pass "database with its WAL: $before bytes before, $with with the session, $(db_bytes) after forget"
