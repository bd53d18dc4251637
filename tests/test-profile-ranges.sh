#!/bin/bash
# Profiles of byte ranges, end to end with files recorded whole (what the recorder stores without page
# data): `show` gives each file one range over all of it, as text and as the documented JSON. Then a
# database of the previous schema (4: no ranges) with that profile, as the previous release left it, is
# opened by seeklessd: migrated to one whole range per file in the same order, and the profile still
# optimizes (files back to back by filefrag, old checksums, e2fsck clean).
# OLD_SEEKLESSD=path/to/the/previous/seeklessd records with that daemon instead of taking the tables of
# schema 5 away afterwards (run by hand; see tests/README.md).
. "$(dirname "$0")/lib.sh"

setup_image
start_bus
# the tracepoint's recorder: it takes the program, cached since it was copied, whole (BPF would take the
# pages it used)
write_config <<EOC
[Record]
BootWindowSec=1
LaunchWindowSec=2
Recorder=fanotify
[Optimize]
MinFileAgeSec=0
EOC
SEEKLESSD_NEW=$SEEKLESSD
SEEKLESSD=${OLD_SEEKLESSD:-$SEEKLESSD} start_daemon --filesystem="$MNT"
wait_until 30 boot_recording_over || fail "boot window did not close"
setup_aged_profile 7 20 512
mapfile -t order < <(echo "$P"; echo "$PROFILE_FILES")

db() { sqlite3 -cmd ".timeout 5000" "$STATE/seekless.db" "$@"; }

# A whole-file recording: one range per file, 0 to its size, in JSON and as "whole" in the text.
check_whole() {    # WHAT
        local want got
        ctl --json=short show "$P" > "$TMP/show.json" || fail "$1: show --json failed"
        got=$(jq -r '.files[].path' "$TMP/show.json")
        want=$(printf '%s\n' "${order[@]}")
        [ "$(sort <<<"$got")" = "$(sort <<<"$want")" ] || fail "$1: profile files: $got"
        jq -e '.files | length > 1 and all(.ranges == [{offset: 0, length: .size}] and has("seen") and has("score"))' \
                "$TMP/show.json" >/dev/null || fail "$1: not one whole range per file: $(jq -c '.files[0]' "$TMP/show.json")"
        ctl show "$P" > "$TMP/show.txt" || fail "$1: show failed"
        n=$(jq '.files | length' "$TMP/show.json")
        grep -q ", $n ranges, " "$TMP/show.txt" || fail "$1: legend: $(head -n 1 "$TMP/show.txt")"
        [ "$(grep -c ' whole$' "$TMP/show.txt")" = "$n" ] || fail "$1: text: $(cat "$TMP/show.txt")"
}

if [ -z "${OLD_SEEKLESSD:-}" ]; then
        check_whole "recorded whole"
        jq -r '.files[].path' "$TMP/show.json" > "$TMP/order.before"
        pass "a whole-file recording shows one whole range per file"
        stop_daemon
        # back to schema 4: the tables migrations 4 -> 5 and 6 -> 7 add and the columns of 5 -> 6 and 7 -> 8
        # taken away
        db "DROP TABLE session_ranges; DROP TABLE profile_ranges; ALTER TABLE run_files DROP COLUMN range_offset;
            ALTER TABLE run_files DROP COLUMN range_length; DROP TABLE session_metadata;
            ALTER TABLE sessions DROP COLUMN prefetched; PRAGMA user_version = 4"
else
        stop_daemon
        [ "$(db 'PRAGMA user_version')" = 4 ] || fail "$OLD_SEEKLESSD did not write schema 4"
        db "SELECT f.path FROM profile_files pf JOIN profiles p ON p.id = pf.profile_id JOIN files f ON f.id = pf.file_id
            WHERE p.name = '$P' ORDER BY pf.position" > "$TMP/order.before"
fi
[ "$(db 'SELECT COUNT(*) FROM sqlite_schema WHERE name GLOB "*_ranges*"')" = 0 ] || fail "schema 4 has ranges"

SEEKLESSD=$SEEKLESSD_NEW start_daemon --filesystem="$MNT"
[ "$(db 'PRAGMA user_version')" -gt 4 ] && [ "$(db "SELECT COUNT(*) FROM profile_ranges")" -gt 0 ] ||
        fail "not migrated: user_version $(db 'PRAGMA user_version')"
check_whole "migrated"
jq -r '.files[].path' "$TMP/show.json" | cmp -s - "$TMP/order.before" || fail "migration changed the order"
pass "schema 4 migrated: one whole range per file, the order kept"

checksum_all "$TMP/sums"
mapfile -t order < "$TMP/order.before"
before=$(discontinuities_of "${order[@]}")
rc=0
ctl --json=short optimize > "$TMP/opt.json" || rc=$?
[ "$rc" = 0 ] || fail "optimize exited $rc: $(cat "$TMP/opt.json")"
jq -e '.moved_files > 0 and .state == "done" and (.skipped | length == 0)' "$TMP/opt.json" >/dev/null ||
        fail "unexpected optimize result: $(cat "$TMP/opt.json")"
runs=$(donor_runs_of_last_run)
after=$(discontinuities_of "${order[@]}")
[ "$after" -le $((runs - 1)) ] || fail "after optimize: $after discontinuities, donor had $runs run(s)"
verify_checksums "$TMP/sums"
pass "the migrated profile optimizes: $before -> $after discontinuities, $(jq .moved_files "$TMP/opt.json") files moved"

# Ranges as the daemon serves and seeklessctl shows them, whatever recorded them: the program's ranges set
# in the database (out of offset order, the third past its end), the other files without any.
db "DELETE FROM profile_ranges WHERE profile_id = (SELECT id FROM profiles WHERE name = '$P');
    INSERT INTO profile_ranges SELECT p.id, v.column1, f.id, v.column2, v.column3
    FROM profiles p, files f, (VALUES (0, 8192, 4096), (1, 0, 4096), (2, 16384, 1048576), (3, 12288, 4096)) v
    WHERE p.name = '$P' AND f.path = '$P'"
size=$(stat -c %s "$P")
ctl --json=short show "$P" > "$TMP/show.json" || fail "show --json failed"
jq -e --arg p "$P" --argjson s "$size" '.files[] | select(.path == $p) | .ranges ==
        [{offset: 8192, length: 4096}, {offset: 0, length: 4096}, {offset: 16384, length: ($s - 16384)},
         {offset: 12288, length: 4096}]' "$TMP/show.json" >/dev/null ||
        fail "the program's ranges: $(jq -c --arg p "$P" '.files[] | select(.path == $p)' "$TMP/show.json")"
jq -e --arg p "$P" '[.files[] | select(.path != $p) | .ranges == [{offset: 0, length: .size}]] | all' \
        "$TMP/show.json" >/dev/null || fail "files without stored ranges are not whole"
ctl show "$P" | awk -v p="$P" '$2 == p' > "$TMP/line"
[ "$(wc -l < "$TMP/line")" = 1 ] || fail "no line for the program: $(ctl show "$P")"
grep -qE " 8.0K-12.0K, 0B-4.0K, 16.0K-[0-9.]+K, \+1$" "$TMP/line" || fail "ranges as text: $(cat "$TMP/line")"
pass "ranges served and shown: HOT and RANGES $(awk '{ print $6, $7, $8, $9, $10 }' "$TMP/line")"

stop_daemon
fsck_clean
