#!/bin/bash
# Relocation on a live filesystem while other programs work on the profile's files: a reader checksumming
# a file the whole time, a writer appending to one, and files deleted, truncated, renamed and replaced
# after planning; plus a running executable. Nothing may be corrupted; each file that could not be moved
# has a clear reason. The run is slowed down (RateLimitMiBps=1) so the changes land while it works.
. "$(dirname "$0")/lib.sh"

setup_image 1G
start_recording --filesystem="$MNT" <<EOC
LaunchWindowSec=3
[Optimize]
MinFileAgeSec=0
RateLimitMiBps=1
EOC
cp /bin/sleep "$MNT/bin-sleeper" 2>/dev/null || { mkdir -p "$MNT"; cp /bin/sleep "$MNT/bin-sleeper"; }
setup_aged_profile 11 40 1024
# the sleeper is read in a second launch, so it is part of a profile too
"$P" "$MNT/bin-sleeper" "$MNT/aged/f000"
sessions2() { ctl --json=short profiles | jq -e --arg n "$P" 'any(.[]; .name == $n and .sessions == 2)'; }
wait_until 30 sessions2 || fail "second launch not recorded"

mapfile -t order < <(profile_paths "$P")
n=${#order[@]}
reader=${order[2]}
late=("${order[@]: -8}")     # processed last
writer=${late[0]} deleted=${late[1]} truncated=${late[2]} renamed=${late[3]} replaced=${late[4]}

"$MNT/bin-sleeper" 300 &
EXTRA_PIDS+=($!)
# the fork runs the shell until it has exec'd: a plan before that sees no running executable
sleeper_running() { [ "$(readlink "/proc/${EXTRA_PIDS[-1]}/exe" 2>/dev/null)" = "$MNT/bin-sleeper" ]; }
wait_until 10 sleeper_running || fail "bin-sleeper did not start"
ctl --json=short plan | jq -e 'any(.skipped[]; (.path | endswith("/bin-sleeper")) and (.reason | test("running executable")) and .retry)' \
        >/dev/null || fail "plan does not skip the running executable"
pass "plan skips the running executable, to retry later"

checksum_all "$TMP/sums"
reader_sum=$(sha256sum < "$reader")
( while :; do
        s=$(sha256sum < "$reader")
        [ "$s" = "$reader_sum" ] || { echo "MISMATCH" > "$TMP/reader-mismatch"; }
        # the next read from the disk: this file's pages dropped, not the machine's (other tests run beside)
        dd if="$reader" iflag=nocache count=0 status=none
  done ) &
EXTRA_PIDS+=($!)

ctl --json=short optimize > "$TMP/opt.json" &
opt_pid=$!
wait_until 30 optimizing || fail "optimization did not start"
sleep 2     # let it move the first files (1 MiB/s: the last ones are ~15 s away)

exec 5>>"$writer"; echo "appended while optimizing" >&5      # stays open for writing
rm "$deleted"
head -c 1000 "$truncated" > "$TMP/truncated.expect"; truncate -s 1000 "$truncated"
mv "$renamed" "$renamed.moved"
head -c 5000 /dev/urandom > "$TMP/replacement"; cp "$TMP/replacement" "$replaced.new"; mv "$replaced.new" "$replaced"
cp "$writer" "$TMP/writer.expect.partial"

rc=0; wait "$opt_pid" || rc=$?
exec 5>&-
[ "$rc" = 0 ] || fail "optimize exited $rc: $(cat "$TMP/opt.json")"
kill "${EXTRA_PIDS[-1]}"; wait "${EXTRA_PIDS[-1]}" 2>/dev/null || true; unset 'EXTRA_PIDS[-1]'
[ ! -e "$TMP/reader-mismatch" ] || fail "a reader saw different content during the run"
pass "a reader checksumming during the run saw no change"

reason() { jq -r --arg p "$1" '[.skipped[] | select(.path == $p) | .reason] | first // ""' "$TMP/opt.json"; }
grep -q "gone"                        <<<"$(reason "$deleted")"   || fail "deleted: '$(reason "$deleted")'"
grep -q "changed since plan"          <<<"$(reason "$truncated")" || fail "truncated: '$(reason "$truncated")'"
grep -q "gone or replaced"            <<<"$(reason "$replaced")"  || fail "replaced: '$(reason "$replaced")'"
grep -Eq "open for writing|changed"   <<<"$(reason "$writer")"    || fail "writer: '$(reason "$writer")'"
grep -q "running executable"          <<<"$(reason "$MNT/bin-sleeper")" || fail "sleeper: '$(reason "$MNT/bin-sleeper")'"
pass "skipped with reasons: $(jq -c '[.skipped[] | .reason] | unique' "$TMP/opt.json")"

# every untouched file kept its content; the touched ones hold exactly what was done to them
grep -v -e " ./${deleted#$MNT/}$" -e " ./${truncated#$MNT/}$" -e " ./${renamed#$MNT/}$" \
        -e " ./${replaced#$MNT/}$" -e " ./${writer#$MNT/}$" "$TMP/sums" > "$TMP/sums.untouched"
verify_checksums "$TMP/sums.untouched"
cmp -s "$truncated" "$TMP/truncated.expect" || fail "truncated file differs"
cmp -s "$replaced" "$TMP/replacement" || fail "replaced file differs"
[ "$(sha256sum < "$renamed.moved")" = "$(grep " ./${renamed#$MNT/}$" "$TMP/sums" | cut -d' ' -f1)  -" ] ||
        fail "renamed file differs"
tail -c 26 "$writer" | grep -q "appended while optimizing" || fail "the writer's append is missing"
pass "no corruption: untouched files, truncated, renamed, replaced and appended files all as expected"

stop_daemon
stop_extra_pids
fsck_clean
pass "e2fsck -fn clean"
