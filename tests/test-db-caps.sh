#!/bin/bash
# Any user can make seeklessd record: MaxProfiles=, MaxProfilesPerUser= and MaxSessionFiles= bound what
# that costs. A program root launches keeps its (system) profile however many programs unprivileged users
# launch under other names; each user keeps at most MaxProfilesPerUser= profiles, all together at most
# MaxProfiles=, and the database stops growing. A launch that reads more than MaxSessionFiles= files is
# stored incomplete, with that many.
. "$(dirname "$0")/lib.sh"

setup_image
start_recording --filesystem="$MNT" <<EOC
LaunchWindowSec=1
MaxProfiles=6
MaxProfilesPerUser=3
MaxSessionFiles=5
EOC
make_small_launch
cp "$OPEN_FILES" "$MNT/bin/big"
for f in 1 2 3 4 5 6 7 8; do echo "$f" > "$MNT/d/big$f"; done
DB=$STATE/seekless.db

no_launch_open() {
        [ "$(busctl --system get-property org.seekless.Seekless1 /org/seekless/Seekless1 \
                org.seekless.Seekless1.Manager ActiveLaunches)" = "u 0" ]
}
count_profiles() {    # [NAME_PREFIX]: app profiles (whose name starts with it)
        ctl --json=short profiles |
                jq --arg p "${1:-}" '[.[] | select(.kind == "app" and (.name | startswith($p)))] | length'
}
stored_files() {
        busctl --system get-property org.seekless.Seekless1 /org/seekless/Seekless1 \
                org.seekless.Seekless1.Manager Files | awk '{print $2}'
}
# USER DIR N: N copies of the program, DIR/p1..pN, each reading four files of its own (long names, so
# that a store growing with them would show), launched by USER (a uid; 0 = root) one after the other
flood() {
        local uid=$1 dir=$MNT/$2 n=$3 i f
        mkdir -p "$dir"
        for ((i = 1; i <= n; i++)); do
                cp "$OPEN_FILES" "$dir/p$i"
                for f in 1 2 3 4; do echo "$i.$f" > "$dir/data-$i-$f-$(printf '%0200d' 0)"; done
        done
        chmod -R a+rX "$dir"
        for ((i = 1; i <= n; i++)); do
                setpriv --reuid="$uid" --regid="$uid" --clear-groups -- "$dir/p$i" "$dir"/data-"$i"-* ||
                        fail "$dir/p$i failed"
        done
        wait_until 30 no_launch_open || fail "launch windows did not close"
        sleep 0.5
}

# root's launches: system profiles; one reads 8 files besides its program
"$MNT/bin/prog" "$MNT/d/x" "$MNT/d/y"
"$MNT/bin/big" "$MNT"/d/big?
wait_until 30 has_profile "$MNT/bin/big" || fail "root's launches not recorded"
wait_until 30 has_profile "$MNT/bin/prog" || fail "root's launch of prog not recorded"
ctl --json=short sessions | jq -e --arg n "$MNT/bin/big" \
        '[.[] | select(.profile == $n)] | length == 1 and .[0].files == 5 and (.[0].complete | not)' >/dev/null ||
        fail "MaxSessionFiles=5: $(ctl --json=short sessions)"
[ "$(grep -c "session of $MNT/bin/big reached MaxSessionFiles=5" "$DAEMON_LOG")" = 1 ] ||
        fail "no single log line for the full session"
pass "MaxSessionFiles=5: a launch reading 9 files is stored incomplete with 5, logged once"

# nobody (65534) floods: 12 programs, at most 3 profiles (which 3 depends on the order the launch windows,
# all open at once, close in)
flood 65534 nobody 12
[ "$(count_profiles "$MNT/nobody/")" = 3 ] || fail "MaxProfilesPerUser=3: nobody has $(count_profiles "$MNT/nobody/")"
[ "$(grep -c "Evicted profile $MNT/nobody/p[0-9]*, the least recently updated of uid 65534's (MaxProfilesPerUser=3)" \
        "$DAEMON_LOG")" = 9 ] || fail "not one log line per evicted profile"
has_profile "$MNT/bin/prog" && has_profile "$MNT/bin/big" || fail "a user's flood evicted a system profile"
pass "MaxProfilesPerUser=3: nobody's 12 programs left 3 profiles, the system's intact"

stop_daemon
size1=$(stat -c %s "$DB")
start_daemon --filesystem="$MNT" --boot-id=0123456789abcdef0123456789abcdef
wait_until 30 boot_recording_over || fail "boot window did not close"

# a second user (4242) floods: the total is over MaxProfiles=6, users' profiles go, the system's stay
flood 4242 other 12
[ "$(count_profiles "$MNT/other/")" = 3 ] || fail "MaxProfilesPerUser=3: uid 4242 has $(count_profiles "$MNT/other/")"
[ "$(count_profiles)" = 6 ] || fail "MaxProfiles=6: $(count_profiles) app profiles: $(ctl --json=short profiles)"
has_profile "$MNT/bin/prog" && has_profile "$MNT/bin/big" || fail "users' floods evicted a system profile"
[ "$(count_profiles "$MNT/nobody/")" = 1 ] || fail "nobody's least recently updated profiles were not the ones to go"
grep -q "Evicted profile $MNT/nobody/p[0-9]*, the least recently updated user profile (uid 65534, MaxProfiles=6)" \
        "$DAEMON_LOG" || fail "no log line for the MaxProfiles= eviction"
# at most 5 files for each of the 6 app profiles' one session and the boot's
[ "$(stored_files)" -le 35 ] || fail "$(stored_files) files stored"

# nobody again, twice as many programs: the store does not grow
flood 65534 more 24
[ "$(count_profiles)" = 6 ] || fail "MaxProfiles=6: $(count_profiles) app profiles"
stop_daemon
size2=$(stat -c %s "$DB")
echo "  database: $size1 bytes after 12 launches by one user, $size2 after 36 more by two"
[ "$size2" -le $((size1 + 16384)) ] || fail "the database grew from $size1 to $size2 bytes"
pass "MaxProfiles=6: 2 system and 4 users' profiles after 48 users' programs, the database bounded"
