#!/bin/bash
# A program stored on the test image is exec'ed and opens files on the image in a known order: its profile
# lists exactly the program and those files in that order. Later launches in other orders merge by the rule
# documented in seeklessd(8); a forked child's opens count; an unrelated process's opens don't leak in;
# `forget` removes the profile.
. "$(dirname "$0")/lib.sh"

setup_image
start_bus
write_config <<EOC
[Record]
BootWindowSec=2
LaunchWindowSec=3
MaxLaunchesPerBoot=10
EOC
start_daemon --filesystem="$MNT"
wait_until 30 boot_recording_over || fail "boot window did not close"

mkdir -p "$MNT/bin" "$MNT/data" "$MNT/noise"
cp "$OPEN_FILES" "$MNT/bin/prog"
for f in a b c d; do head -c $((RANDOM * 4 + 1000)) /dev/urandom > "$MNT/data/$f"; done
for f in n1 n2 n3; do echo noise > "$MNT/noise/$f"; done
sync
P=$MNT/bin/prog D=$MNT/data

# An unrelated process keeps opening files on the image while the launch windows are open.
( while :; do cat "$MNT"/noise/* >/dev/null; sleep 0.05; done ) &
EXTRA_PIDS+=($!)

sessions_of() {
        ctl --json=short profiles | jq -e --arg n "$P" --argjson k "$1" 'any(.[]; .name == $n and .sessions == $k)'
}

expect_order() {
        local got want
        got=$(profile_paths "$P" | tr '\n' ' ')
        want="$* "
        [ "$got" = "$want" ] || fail "profile order: got [$got], want [$want]"
}

# Launch 1: a b c d
"$P" "$D/a" "$D/b" "$D/c" "$D/d"
wait_until 30 sessions_of 1 || fail "launch 1 was not recorded"
expect_order "$P" "$D/a" "$D/b" "$D/c" "$D/d"
ctl --json=short profiles | jq -e --arg n "$P" '.[] | select(.name == $n) | .kind == "app" and .files == 5' >/dev/null ||
        fail "profiles entry has wrong kind/files"
ctl --json=short show "$P" | jq -e '.kind == "app" and (.files | all(.size > 0))' >/dev/null || fail "show lacks kind/size"
pass "first launch recorded in exact order, no noise"

# Launch 2: b a c d, opened by a forked child of the program.
"$P" --child "$D/b" "$D/a" "$D/c" "$D/d"
wait_until 30 sessions_of 2 || fail "launch 2 was not recorded"
pass "child's opens attributed to the launch"

# Launch 3: b c a d.
"$P" "$D/b" "$D/c" "$D/a" "$D/d"
wait_until 30 sessions_of 3 || fail "launch 3 was not recorded"

# Expected merge (seeklessd(8), PROFILES; weights 0.8^age: L3=1, L2=0.8, L1=0.64; total 2.44, half 1.22).
# Positions are index/4 over [prog, 4 files]:
#   prog: 0 in all                          -> 0
#   a: L1 .25 (.64)  L2 .50 (.8)  L3 .75 (1) -> cumulative .64, 1.44 >= 1.22 -> .50
#   b: L1 .50 (.64)  L2 .25 (.8)  L3 .25 (1) -> .25 carries 1.8          -> .25
#   c: L1 .75 (.64)  L2 .75 (.8)  L3 .50 (1) -> .50 carries 1 < 1.22     -> .75
#   d: 1 everywhere                          -> 1
# The newest launch alone (b c a d) does not outvote the two before it.
expect_order "$P" "$D/b" "$D/a" "$D/c" "$D/d"
ctl --json=short show "$P" | jq -e '[.files[].score] == [0, 0.25, 0.5, 0.75, 1]' >/dev/null ||
        fail "scores differ from the documented rule: $(ctl --json=short show "$P" | jq -c '[.files[].score]')"
pass "three launches merged per the documented rule"

ctl --json=short show "$P" | jq -e '[.files[].path] | any(test("/noise/")) | not' >/dev/null ||
        fail "unrelated opens leaked into the profile"

ctl forget "$P"
has_profile "$P" && fail "forget left the profile"
out=$(ctl show "$P" 2>&1) && fail "show of a forgotten profile succeeded"
grep -q "No profile named" <<<"$out" || fail "unexpected message: $out"
pass "forget removed the profile"
stop_daemon
