#!/bin/bash
# MaxLaunchesPerBoot= caps the launches recorded per executable per boot (also beyond what KeepLaunches=
# keeps), MinLaunchFiles= drops launches that read too little, and a file deleted since it was recorded
# drops out of the profile at the next merge.
. "$(dirname "$0")/lib.sh"

setup_image
start_recording --filesystem="$MNT" <<EOC
LaunchWindowSec=1
MaxLaunchesPerBoot=3
KeepLaunches=2
MinLaunchFiles=3
EOC
mkdir -p "$MNT/bin" "$MNT/d"
cp "$OPEN_FILES" "$MNT/bin/prog"; cp "$OPEN_FILES" "$MNT/bin/small"
for f in a b c; do echo "$f" > "$MNT/d/$f"; done
P=$MNT/bin/prog
no_launch_open() {
        [ "$(busctl --system get-property org.seekless.Seekless1 /org/seekless/Seekless1 \
                org.seekless.Seekless1.Manager ActiveLaunches)" = "u 0" ]
}
recorded_launches() {
        grep -c "Recorded app session of $1:" "$DAEMON_LOG" || true
}

# 2 files with the executable: under MinLaunchFiles=3
"$MNT/bin/small" "$MNT/d/a"
wait_until 30 no_launch_open || fail "launch window did not close"
sleep 0.5
has_profile "$MNT/bin/small" && fail "a launch under MinLaunchFiles= was stored"
grep -q "fewer than MinLaunchFiles=3" "$DAEMON_LOG" || fail "no log line for the dropped launch"
pass "MinLaunchFiles=: a launch reading too little is dropped"

for i in 1 2 3 4 5; do
        "$P" "$MNT/d/a" "$MNT/d/b" "$MNT/d/c"
        wait_until 30 no_launch_open || fail "launch window did not close"
done
sleep 0.5
[ "$(recorded_launches "$P")" = 3 ] || fail "MaxLaunchesPerBoot=3: $(recorded_launches "$P") launches recorded"
ctl --json=short profiles | jq -e --arg n "$P" '.[] | select(.name == $n) | .sessions == 2' >/dev/null ||
        fail "KeepLaunches=2 not applied: $(ctl --json=short profiles)"
pass "MaxLaunchesPerBoot=3 (5 launches, 3 recorded) and KeepLaunches=2 (2 kept)"

# a vanished file drops out at the next merge (a new boot id lets the program be recorded again)
stop_daemon
rm "$MNT/d/b"
start_daemon --filesystem="$MNT" --boot-id=0123456789abcdef0123456789abcdef
wait_until 30 boot_recording_over || fail "boot window did not close"
"$P" "$MNT/d/a" "$MNT/d/c"
wait_until 30 no_launch_open || fail "launch window did not close"
sleep 0.5
paths=$(profile_paths "$P")
grep -q "/d/b$" <<<"$paths" && fail "deleted file still in the profile: $paths"
grep -q "/d/a$" <<<"$paths" && grep -q "/d/c$" <<<"$paths" || fail "profile lost live files: $paths"
pass "a deleted file dropped out of the profile"
stop_daemon

# Dentries evicted between the reads and the end of the launch window: the kernel can no longer name the
# files from their handles then, so seeklessd must have named them shortly after the reads.
write_config <<EOC
[Record]
BootWindowSec=1
LaunchWindowSec=4
EOC
mkdir -p "$MNT/e"
for f in x y z; do echo "$f" > "$MNT/e/$f"; done
cp "$OPEN_FILES" "$MNT/bin/evict"
sync
start_daemon --filesystem="$MNT" --boot-id=fedcba9876543210fedcba9876543210
wait_until 30 boot_recording_over || fail "boot window did not close"
"$MNT/bin/evict" "$MNT/e/x" "$MNT/e/y" "$MNT/e/z"
sleep 2
drop_all_caches 2      # dentries and inodes
wait_until 30 has_profile "$MNT/bin/evict" || fail "launch not recorded"
got=$(profile_paths "$MNT/bin/evict" | tr '\n' ' ')
[ "$got" = "$MNT/bin/evict $MNT/e/x $MNT/e/y $MNT/e/z " ] || fail "after dentry eviction the profile is [$got]"
pass "files whose dentries were evicted before the session ended keep their names"
stop_daemon
