#!/bin/bash
# Issue 20's acceptance for relocation, end to end through the daemon: a launch is recorded with page
# events and optimize moves what it read, no more. The program (tests/helpers/page-touch.c) maps a scattered
# 100 MiB file with MADV_RANDOM and touches pages 1000-1999, then reads two small files interleaved with
# readahead off (POSIX_FADV_RANDOM): A 0-40 KiB, B 0-40 KiB, A 40-80 KiB. The profile holds exactly those
# ranges in that order (seeklessctl show --json); optimize moves only pages 1000-1999 of the big file, into
# one run (FIEMAP by filefrag), every other block of it stays where it was, although the file is larger
# than MaxFileMiB= and than the hot set (its hot part counts); A 0-40K, B 0-40K, A 40-80K land in that
# order back to back. Checksums intact, a second optimize moves nothing, report counts files not ranges,
# e2fsck clean.
. "$(dirname "$0")/lib.sh"

setup_image 512M
start_bus
write_config <<EOC
[Record]
BootWindowSec=1
LaunchWindowSec=2
[Optimize]
MinFileAgeSec=0
MaxFileMiB=64
EOC
start_daemon --filesystem="$MNT"
wait_until 30 boot_recording_over || fail "boot window did not close"


# the files, then scattered in place (tests/helpers/scatter.c: a few blocks here, a few there)
mkdir -p "$MNT/data" "$MNT/bin" "$MNT/fill"
BIG=$MNT/data/big A=$MNT/data/a B=$MNT/data/b
dd if=/dev/urandom of="$BIG" bs=1M count=100 status=none
dd if=/dev/urandom of="$A" bs=4K count=20 status=none
dd if=/dev/urandom of="$B" bs=4K count=10 status=none
printf '%s\n' "$A" "$B" "$BIG" | "$SCATTER" "$MNT/fill" 7 | tail -n 1 | sed 's/^/  /'
cp "$PAGE_TOUCH" "$MNT/bin/prog"
P=$MNT/bin/prog
sync
# cold: the program drops the files' pages first (the page events see only what has to be read)
"$P" "drop:$A" "drop:$B" "drop:$BIG" "random:$BIG:1000:1000" \
        "fadv:$A:0:40960" "fadv:$B:0:40960" "fadv:$A:40960:40960" || fail "the program failed"
wait_until 30 has_profile "$P" || fail "launch not recorded"

# the recorded ranges, in the profile's order: every range of the three data files as "NAME:OFFSET+LENGTH"
got=$(ctl --json=short show "$P" | jq -r --arg d "$MNT/data/" '
        [.files[] | select(.path | startswith($d)) | .path as $p | .ranges[] | {p: $p, offset, length}] |
        map("\(.p | ltrimstr($d)):\(.offset)+\(.length)") | join(" ")')
# the files' order gives each file's first range; the ranges' order across files is GetProfileRanges'
order=$(busctl --system --json=short call org.seekless.Seekless1 /org/seekless/Seekless1 \
        org.seekless.Seekless1.Manager GetProfileRanges s "$P" |
        jq -r --arg d "$MNT/data/" '.data[1] as $f | [.data[2][] | ($f[.[0]][0] | ltrimstr($d)) as $n |
                select($n != $f[.[0]][0]) | "\($n):\(.[1])+\(.[2])"] | join(" ")')
[ "$order" = "big:4096000+4096000 a:0+40960 b:0+40960 a:40960+40960" ] ||
        fail "recorded ranges in layout order: [$order] (per file: [$got])"
pass "recorded: $order"

# physical block of each logical block, "LOGICAL PHYSICAL" per line
blocks_of() {
        file_extents "$1" | awk '{ for (i = 0; i < $3; i++) print $1 + i, $2 + i }'
}
blocks_of "$BIG" > "$TMP/big.before"
runs_before=$(awk '$1 >= 1000 && $1 < 2000' "$TMP/big.before" | awk 'NR > 1 && $2 != prev + 1 { r++ } { prev = $2 } END { print r + 1 }')
[ "$runs_before" -gt 4 ] || fail "pages 1000-1999 not scattered: $runs_before run(s)"
checksum_all "$TMP/sums"
for f in "$P" "$A" "$B"; do blocks_of "$f" > "$TMP/$(basename "$f").pre"; done

t0=$(date +%s.%N)
ctl --json=short optimize > "$TMP/opt.json" || fail "optimize failed: $(cat "$TMP/opt.json")"
jq -e '.state == "done"' "$TMP/opt.json" >/dev/null || fail "unexpected optimize result: $(cat "$TMP/opt.json")"
# files, not entries: A's two ranges count once; the files whose blocks changed (the profile's files are
# the program and the three data files, all on the scratch filesystem)
[ "$(ctl --json=short show "$P" | jq '.files | length')" = 4 ] || fail "profile: $(ctl show "$P")"
moved=1         # the big file (checked below)
for f in "$P" "$A" "$B"; do blocks_of "$f" | cmp -s - "$TMP/$(basename "$f").pre" || moved=$((moved + 1)); done
jq -e --argjson n "$moved" '.moved_files == $n' "$TMP/opt.json" >/dev/null ||
        fail "moved_files: $(jq .moved_files "$TMP/opt.json"), but $moved files changed blocks"
echo "  optimize: $(jq -c '{moved_files, moved_bytes}' "$TMP/opt.json") in $(echo "$(date +%s.%N) - $t0" | bc) s"
jq -e --arg b "$BIG" '[.skipped[]? | select(.path == $b)] | length == 0' "$TMP/opt.json" >/dev/null ||
        fail "the big file was skipped: $(cat "$TMP/opt.json")"

blocks_of "$BIG" > "$TMP/big.after"
join "$TMP/big.before" "$TMP/big.after" | awk '($1 < 1000 || $1 >= 2000) && $2 != $3 { n++ } END { exit n > 0 }' ||
        fail "blocks of the big file outside pages 1000-1999 moved"
awk '$1 >= 1000 && $1 < 2000' "$TMP/big.after" | awk 'NR > 1 && $2 != prev + 1 { r++ } { prev = $2 } END { exit r > 0 }' ||
        fail "pages 1000-1999 not in one run after optimize: $(file_extents "$BIG" | head -30)"
[ "$(awk '$1 >= 1000 && $1 < 2000' "$TMP/big.after" | wc -l)" = 1000 ] || fail "pages 1000-1999 lost blocks"
pass "pages 1000-1999 of the 100 MiB file: $runs_before runs -> 1, its other 24600 blocks where they were"

blocks_of "$A" > "$TMP/a"; blocks_of "$B" > "$TMP/b"
a0=$(awk '$1 == 0 { print $2 }' "$TMP/a"); a10=$(awk '$1 == 10 { print $2 }' "$TMP/a")
b0=$(awk '$1 == 0 { print $2 }' "$TMP/b")
awk -v s="$a0" '$1 < 10 && $2 != s + $1 { exit 1 } $1 >= 10 && $2 != s + 10 + $1 { exit 1 }' "$TMP/a" &&
        awk -v s="$((a0 + 10))" '$2 != s + $1 { exit 1 }' "$TMP/b" ||
        fail "A1 B1 A2 not back to back: A at $(tr '\n' ' ' < "$TMP/a"), B at $(tr '\n' ' ' < "$TMP/b")"
pass "A 0-40K at block $a0, B 0-40K at $b0, A 40-80K at $a10: in that order, back to back"
verify_checksums "$TMP/sums"

ctl --json=short optimize > "$TMP/opt2.json" || fail "second optimize failed: $(cat "$TMP/opt2.json")"
jq -e '.moved_files == 0' "$TMP/opt2.json" >/dev/null || fail "second optimize moved: $(cat "$TMP/opt2.json")"
blocks_of "$BIG" | cmp -s - "$TMP/big.after" || fail "second optimize moved the big file"
pass "a second optimize moves nothing"

# the picture's layout (GetLayout, behind report --svg) shows the hot ranges now, not the whole files
bigi=$(ctl --json=short show "$P" | jq --arg b "$BIG" '[.files[].path] | index($b)')
now_big=$(busctl --system --json=short call org.seekless.Seekless1 /org/seekless/Seekless1 \
        org.seekless.Seekless1.Manager GetLayout s "$P" | jq --argjson i "$bigi" '[.data[2][] | select(.[0] == $i) | .[2]] | add')
[ "$now_big" = 4096000 ] || fail "GetLayout's extents of the big file now: $now_big bytes, not its 4096000 hot bytes"
pass "GetLayout: the big file's 4096000 hot bytes, not its 100 MiB"
# and before: where all of A's hot ranges were (two entries of one file), not its first range only
ai=$(ctl --json=short show "$P" | jq --arg a "$A" '[.files[].path] | index($a)')
before_a=$(busctl --system --json=short call org.seekless.Seekless1 /org/seekless/Seekless1 \
        org.seekless.Seekless1.Manager GetLayout s "$P" | jq --argjson i "$ai" '[.data[1][] | select(.[0] == $i) | .[2]] | add')
[ "$before_a" = 81920 ] || fail "GetLayout's extents of A before: $before_a bytes, not its two ranges' 81920"
pass "GetLayout before: both of A's ranges (81920 bytes)"

# the qualities count files, not ranges: A's two ranges make one file
nfiles=$(ctl --json=short show "$P" | jq '.files | length')
nq=$(ctl --json=short report "$P" | jq '.[0].files')
[ "$nq" = "$nfiles" ] || fail "report counts $nq files for a profile of $nfiles"
pass "report: $nq files, as the profile has"

stop_daemon
fsck_clean
pass "e2fsck clean"
