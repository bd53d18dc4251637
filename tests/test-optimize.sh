#!/bin/bash
# The relocation acceptance test: on an aged image, after recording a launch and `seeklessctl optimize`,
# the profile's files read in profile order are back to back (checked with filefrag -v: discontinuities
# at most the donor's runs - 1), every file on the image has its old checksum, e2fsck -fn is clean, and a
# second optimize moves nothing.
. "$(dirname "$0")/lib.sh"

setup_image 1G
start_bus
write_config <<EOC
[Record]
BootWindowSec=1
LaunchWindowSec=3
[Optimize]
MinFileAgeSec=0
EOC
start_daemon --filesystem="$MNT"
wait_until 30 boot_recording_over || fail "boot window did not close"
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

stop_daemon
fsck_clean
pass "e2fsck -fn clean"
