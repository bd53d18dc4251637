#!/bin/bash
# The relocation acceptance test: on an aged image, after recording a launch and `seeklessctl optimize`,
# the profile's files read in profile order are back to back (checked with filefrag -v: discontinuities
# at most the donor's runs - 1), every file on the image has its old checksum, e2fsck -fn is clean, and a
# second optimize moves nothing.
. "$(dirname "$0")/lib.sh"

setup_image 1G
start_recording --filesystem="$MNT" <<EOC
LaunchWindowSec=3
[Optimize]
MinFileAgeSec=0
EOC
setup_aged_profile 7 40 1024
checksum_all "$TMP/sums"
mapfile -t order < <(profile_paths "$P")
before=$(discontinuities_of "${order[@]}")
echo "  before: $before discontinuities over ${#order[@]} files"
[ "$before" -gt 10 ] || fail "the aged image is not aged enough ($before discontinuities)"

ctl --json=short plan > "$TMP/plan.json"
jq -e '.files | length > 0' "$TMP/plan.json" >/dev/null || fail "plan moves nothing: $(cat "$TMP/plan.json")"
jq -e --arg p "$P" '.profiles[] | select(.name == $p) | .expected.modeled_read_ms < .now.modeled_read_ms' \
        "$TMP/plan.json" >/dev/null || fail "plan does not expect an improvement"

rc=0
ctl --json=short optimize > "$TMP/opt.json" || rc=$?
[ "$rc" = 0 ] || fail "optimize exited $rc: $(cat "$TMP/opt.json")"
jq -e '.moved_files > 0 and .moved_bytes > 0 and .state == "done"' "$TMP/opt.json" >/dev/null ||
        fail "unexpected optimize result: $(cat "$TMP/opt.json")"
jq -e '.skipped | length == 0' "$TMP/opt.json" >/dev/null || fail "files skipped: $(jq -c .skipped "$TMP/opt.json")"

runs=$(donor_runs_of_last_run)
[ "$runs" = 1 ] || fail "the donor on a fresh 1 GiB image should be one run, was $runs"
after=$(discontinuities_of "${order[@]}")
echo "  after: $after discontinuities (donor in $runs run(s)), moved $(jq .moved_files "$TMP/opt.json") files"
[ "$after" -le $((runs - 1)) ] || fail "after optimize: $after discontinuities, donor had $runs run(s)"
pass "profile files back to back in profile order (filefrag)"

verify_checksums "$TMP/sums"
pass "every file on the image has its old checksum"

ctl --json=short report "$P" > "$TMP/report.json"
jq -e --argjson d "$after" '.[0] | .discontinuities == $d and .before.discontinuities > .discontinuities
        and .modeled_read_ms < .before.modeled_read_ms' "$TMP/report.json" >/dev/null ||
        fail "report disagrees with filefrag: $(cat "$TMP/report.json")"
pass "report: $(jq -c '.[0] | {before: .before.modeled_read_ms, now: .modeled_read_ms}' "$TMP/report.json") ms modeled"

ctl report "$P" --svg "$TMP/layout.svg" >/dev/null || fail "report --svg failed"
grep -q "<svg" "$TMP/layout.svg" || fail "no SVG written"

rc=0
ctl --json=short optimize > "$TMP/opt2.json" || rc=$?
[ "$rc" = 0 ] && jq -e '.moved_files == 0' "$TMP/opt2.json" >/dev/null || fail "second optimize: $(cat "$TMP/opt2.json")"
[ "$(discontinuities_of "${order[@]}")" = "$after" ] || fail "second optimize changed the layout"
pass "second optimize moves nothing"

# A new profile must not make the one already in place be rewritten: a second program reads other files
# (and one of the first profile's, which stays with the first profile); only its own files move.
mkdir -p "$MNT/other"
for i in 1 2 3 4 5 6; do head -c $((i * 40960)) /dev/urandom > "$MNT/other/o$i"; sync; done
cp "$OPEN_FILES" "$MNT/bin/prog2"
sync
checksum_all "$TMP/sums2"
fiemap_of() { local f; for f in "$@"; do filefrag -v "$f" | awk '/^ *[0-9]+:/'; done; }
fiemap_of "${order[@]}" > "$TMP/first.fiemap"
"$MNT/bin/prog2" "$MNT/other/o4" "$MNT/other/o1" "${order[0]}" "$MNT/other/o6" "$MNT/other/o2" "$MNT/other/o5" "$MNT/other/o3"
wait_until 30 has_profile "$MNT/bin/prog2" || fail "second launch not recorded"
rc=0
ctl --json=short optimize > "$TMP/opt3.json" || rc=$?
[ "$rc" = 0 ] || fail "third optimize exited $rc: $(cat "$TMP/opt3.json")"
jq -e '.moved_files == 7' "$TMP/opt3.json" >/dev/null ||
        fail "expected only the new profile's 6 files and its program to move: $(cat "$TMP/opt3.json")"
fiemap_of "${order[@]}" | cmp -s - "$TMP/first.fiemap" || fail "the profile already in place was moved again"
grep -q "files of profiles already in place stay where they are" "$DAEMON_LOG" || fail "not logged"
mapfile -t order2 < <(profile_paths "$MNT/bin/prog2" | grep "/other/")
[ "$(discontinuities_of "${order2[@]}")" -le $(($(donor_runs_of_last_run) - 1)) ] ||
        fail "the new profile's files are not back to back"
verify_checksums "$TMP/sums2"
pass "a new profile moves only its own files; the one in place keeps every extent"

stop_daemon
fsck_clean
pass "e2fsck -fn clean"
