#!/bin/bash
# The relocation acceptance test: on an aged image, after recording a launch and `seeklessctl optimize`,
# the profile's files read in profile order are back to back (checked with filefrag -v: discontinuities
# at most the donor's runs - 1), the layout picture draws before and now on one scale with the hot region
# as tall as filefrag's span and the whole device its real size, every file on the image has its old
# checksum, e2fsck -fn is clean, and a second optimize moves nothing.
. "$(dirname "$0")/lib.sh"

setup_image 1G
# the tracepoint recorder, whatever SEEKLESS_TEST_RECORDER says: the discontinuities are counted over whole
# files, and it records a file partly cached at the launch whole (the warm rule), where BPF records the pages
# used (of the program, warm from its build, the part it runs); test-optimize-ranges counts by ranges
start_recording --filesystem="$MNT" <<EOC
LaunchWindowSec=3
Recorder=fanotify
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
[ "$after" -le $((runs - 1)) ] || { ctl --json=short show "$P" | jq -c ".files[] | [.path, .size, .ranges]" | sed "s|$MNT||" >&2; for f in "${order[@]}"; do filefrag -v "$f" | awk "/^ *[0-9]+:/" | head -3; done >&2; fail "after optimize: $after discontinuities, donor had $runs run(s)"; }
pass "profile files back to back in profile order (filefrag)"

verify_checksums "$TMP/sums"
pass "every file on the image has its old checksum"

ctl --json=short report "$P" > "$TMP/report.json"
jq -e --argjson d "$after" '.[0] | .discontinuities == $d and .before.discontinuities > .discontinuities
        and .modeled_read_ms < .before.modeled_read_ms' "$TMP/report.json" >/dev/null ||
        fail "report disagrees with filefrag: $(cat "$TMP/report.json")"
pass "report: $(jq -c '.[0] | {before: .before.modeled_read_ms, now: .modeled_read_ms}' "$TMP/report.json") ms modeled"

# The picture: both panels on one scale (the same ticks at the same heights), the hot region "now" as tall
# as the span filefrag finds at that scale and shorter than "before", and the whole device its real size.
ctl report "$P" --svg "$TMP/layout.svg" >/dev/null || fail "report --svg failed"
svg_panel() { awk -v id="$1" '/^<g class="panel"/ { on = index($0, "id=\"" id "\"") > 0 } on' "$TMP/layout.svg"; }
svg_attr() { grep -m1 "^$1" | sed -n "s/.* $2=\"\([0-9.]*\)\".*/\1/p"; }
svg_ticks() { sed -n 's/.* y="\([0-9.]*\)" class="tick">\([^<]*\)<.*/\1 \2/p'; }
svg_panel before > "$TMP/before.svg"
svg_panel now > "$TMP/now.svg"
svg_ticks < "$TMP/now.svg" > "$TMP/now.ticks"
[ "$(wc -l < "$TMP/now.ticks")" -ge 2 ] && svg_ticks < "$TMP/before.svg" | cmp -s - "$TMP/now.ticks" ||
        fail "the panels' scales differ: $(svg_ticks < "$TMP/before.svg" | tr '\n' ';') vs $(tr '\n' ';' < "$TMP/now.ticks")"
# pixels per byte from the first two ticks ("512 MiB" at y 300.0)
ppb=$(head -n 2 "$TMP/now.ticks" | awk '{ m = $3 == "GiB" ? 2^30 : $3 == "MiB" ? 2^20 : $3 == "KiB" ? 2^10 : 1
                                           y[NR] = $1; b[NR] = $2 * m } END { print (y[1] - y[2]) / (b[2] - b[1]) }')
span=$(for f in "${order[@]}"; do file_extents "$f"; done |
        awk 'NR == 1 || $2 < lo { lo = $2 } $2 + $3 > hi { hi = $2 + $3 } END { print (hi - lo) * 4096 }')
h_now=$(svg_attr '<rect class="hot"' height < "$TMP/now.svg")
h_before=$(svg_attr '<rect class="hot"' height < "$TMP/before.svg")
awk -v h="$h_now" -v s="$span" -v p="$ppb" 'BEGIN { exit !(h > 0 && (h - s * p)^2 <= (0.02 * h + 0.05)^2) }' ||
        fail "hot region now: $h_now px, filefrag's span $span bytes at $ppb px/byte is $(awk "BEGIN { print $span * $ppb }") px"
awk -v a="$h_now" -v b="$h_before" 'BEGIN { exit !(a * 2 < b) }' ||
        fail "hot region now ($h_now px) not shorter than before ($h_before px)"
device=$(blockdev --getsize64 "$LOOP")
[ "$(grep -c "<title>whole device: 1 GiB ($device bytes)</title>" "$TMP/layout.svg")" = 2 ] ||
        fail "no whole-device strip of $device bytes in each panel: $(grep -o '<title>whole device[^<]*' "$TMP/layout.svg")"
pass "picture: one scale, hot region now $h_now px (filefrag: $span bytes), before $h_before px, device $device bytes"

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

# Data not yet written back has no place on disk (FIEMAP: physical 0, "unknown"): the picture leaves it out
# rather than stretch the hot region down to 0.
head -c 65536 /dev/urandom >> "${order[-1]}"
if filefrag -v "${order[-1]}" | grep -q unknown; then
        ctl report "$P" --svg "$TMP/layout2.svg" >/dev/null || fail "report --svg failed"
        grep -q "<title>hot region: [^(]* ($span bytes)" "$TMP/layout2.svg" ||
                fail "hot region with delayed allocation: $(grep -o '<title>hot region[^<]*' "$TMP/layout2.svg")"
        pass "picture: data not yet on disk left out of the hot region"
else
        echo "  the appended data was already written back: delayed allocation not checked"
fi

stop_daemon
fsck_clean
pass "e2fsck -fn clean"
