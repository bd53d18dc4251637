#!/bin/bash
# seeklessctl status says of each filesystem on a device, in plain words, whether seekless records there,
# relocates there, prefetches there, or neither, and why; --json has the same as fields. Seven loop
# filesystems, one of each kind: ext4 on a rotational device (records, relocates and prefetches), ext4 on a
# non-rotational one (records; does not relocate, does not prefetch: non-rotational), a read-write ext4 on a
# rotational device seen only through a read-only bind mount (records and prefetches; does not relocate:
# mounted read-only; plan and optimize skip its files for that reason instead of failing on them), ext4
# mounted read-only, ext2 (neither), a read-write ext4 not given with --filesystem= (neither), an ext4 with
# the first one's UUID, mounted after it (neither: its files would have the first one's keys). The off file
# in the run directory, then Prefetch=no, turn prefetch off everywhere, and status says why. Remounting the
# one not given read-only changes what status says of it.
. "$(dirname "$0")/lib.sh"

setup_image 64M                                 # $MNT: rotational (lib.sh)
image() {       # NAME MKFS... : a 32 MiB image and its loop device, $LOOPDEV
        truncate -s 32M "$TMP/$1.img"
        "${@:2}" -q -F "$TMP/$1.img" >/dev/null
        LOOPDEV=$(losetup --find --show "$TMP/$1.img")
        EXTRA_LOOPS+=("$LOOPDEV")
        mkdir -p "$TMP/$1"
}
image ssd mkfs.ext4
echo 0 > "/sys/block/${LOOPDEV#/dev/}/queue/rotational"
mount -t ext4 "$LOOPDEV" "$TMP/ssd"; EXTRA_MOUNTS+=("$TMP/ssd")
image robind mkfs.ext4                          # read-write, but only a read-only bind of it stays
echo 1 > "/sys/block/${LOOPDEV#/dev/}/queue/rotational"
mkdir -p "$TMP/rw"
mount -t ext4 "$LOOPDEV" "$TMP/rw"
mkdir "$TMP/rw/d"; head -c 200000 /dev/urandom > "$TMP/rw/d/x"; sync
mount --bind "$TMP/rw" "$TMP/robind"; EXTRA_MOUNTS+=("$TMP/robind")
mount -o remount,bind,ro "$TMP/robind"
umount "$TMP/rw"
image ro mkfs.ext4
mount -t ext4 -o ro "$LOOPDEV" "$TMP/ro"; EXTRA_MOUNTS+=("$TMP/ro")
image ext2 mkfs.ext2
mount -t ext2 "$LOOPDEV" "$TMP/ext2"; EXTRA_MOUNTS+=("$TMP/ext2")
image other mkfs.ext4
mount -t ext4 "$LOOPDEV" "$TMP/other"; EXTRA_MOUNTS+=("$TMP/other")
make_small_launch
# a copy of $MNT's filesystem as far as its UUID goes (what a cloned image or a snapshot has), mounted after it
image twin mkfs.ext4 -U "$(blkid -o value -s UUID "$LOOP")"
mount -t ext4 "$LOOPDEV" "$TMP/twin"; EXTRA_MOUNTS+=("$TMP/twin")
mkdir "$TMP/twin/d"; echo t > "$TMP/twin/d/t"

start_recording --filesystem="$MNT" --filesystem="$TMP/ssd" --filesystem="$TMP/robind" <<EOC
[Optimize]
MinFileAgeSec=0
EOC

# "MOUNT (MAJ:MIN, FSTYPE): VERDICT"
says() {        # MOUNT FSTYPE VERDICT
        grep -qxF "$(printf '%*s' 13 '')$1 ($(mountpoint -d "$1"), $2): $3" <<<"$status" ||
                grep -qxF "Filesystems: $1 ($(mountpoint -d "$1"), $2): $3" <<<"$status" ||
                fail "status does not say '$1 ($2): $3': $status"
}
status=$(ctl status)
says "$MNT" ext4 "records, relocates and prefetches"
says "$TMP/ssd" ext4 "records; does not relocate: non-rotational device (OptimizeNonRotational=no); does not prefetch: non-rotational (PrefetchNonRotational=no)"
says "$TMP/robind" ext4 "records and prefetches; does not relocate: mounted read-only"
says "$TMP/ro" ext4 "neither: mounted read-only"
says "$TMP/ext2" ext2 "neither: not ext4"
says "$TMP/other" ext4 "neither: not given with --filesystem="
says "$TMP/twin" ext4 "neither: same UUID as a watched filesystem"
grep -qF "Not watching $TMP/twin ($(mountpoint -d "$TMP/twin")): same UUID as $MNT ($(mountpoint -d "$MNT")), which is watched" \
        "$DAEMON_LOG" || fail "no warning of the filesystem with the same UUID: $(grep -i uuid "$DAEMON_LOG")"
# the watched ones first, under the label
[ "$(grep -A2 '^Filesystems: ' <<<"$status" | sed 's/ (.*//; s/^ *//; s/^Filesystems: //' | tr '\n' ' ')" = \
        "$MNT $TMP/ssd $TMP/robind " ] || fail "watched filesystems not first: $status"
grep -q "^ Relocation:" <<<"$status" && fail "relocation said twice: $status"
pass "status: $(grep -F "$TMP/ssd (" <<<"$status" | sed "s|$TMP|\$TMP|; s/^ *//")"

json=$(ctl --json=short status)
jq -e --arg a "$MNT" --arg b "$TMP/ssd" --arg c "$TMP/robind" --arg dev "$(mountpoint -d "$MNT")" '
        (.filesystems | map({(.mount): .}) | add) as $f
        | $f[$a] == {mount: $a, device: $dev, fstype: "ext4", relocates: true, relocation_off: null,
                     prefetches: true, prefetch_off: null}
        and $f[$b].relocates == false
        and $f[$b].relocation_off == "non-rotational device (OptimizeNonRotational=no)"
        and $f[$b].prefetches == false and $f[$b].prefetch_off == "non-rotational (PrefetchNonRotational=no)"
        and $f[$c].relocates == false and $f[$c].relocation_off == "mounted read-only"
        and $f[$c].prefetches == true and $f[$c].prefetch_off == null
        and (.filesystems | length) == 3
        and ([.relocation_off[].mount] | sort) == ([$b, $c] | sort)
        and .prefetch_off == [{mount: $b, reason: "non-rotational (PrefetchNonRotational=no)"}]' <<<"$json" >/dev/null ||
        fail "status --json filesystems: $(jq -c '.filesystems, .relocation_off, .prefetch_off' <<<"$json")"
jq -e --arg d "$TMP/ro" --arg e "$TMP/ext2" --arg f "$TMP/other" --arg t "$TMP/twin" --arg a "$MNT" '
        (.unwatched | map({(.mount): .}) | add) as $u
        | $u[$d].reason == "mounted read-only" and $u[$d].fstype == "ext4"
        and $u[$e].reason == "not ext4" and $u[$e].fstype == "ext2"
        and $u[$f].reason == "not given with --filesystem=" and ($u[$f].device | test("^[0-9]+:[0-9]+$"))
        and $u[$t].reason == "same UUID as a watched filesystem"
        and ($u[$a] == null)' <<<"$json" >/dev/null ||
        fail "status --json unwatched: $(jq -c .unwatched <<<"$json")"
pass "status --json: filesystems with relocates, relocation_off, prefetches and prefetch_off, unwatched with the reason"

# the off file for this boot, then Prefetch=no: no prefetch anywhere, and why
mkdir -p "$RUN_DIR" && touch "$RUN_DIR/no-prefetch"
status=$(ctl status)
says "$MNT" ext4 "records and relocates; does not prefetch: off for this boot ($RUN_DIR/no-prefetch)"
says "$TMP/robind" ext4 "records; does not relocate: mounted read-only; does not prefetch: off for this boot ($RUN_DIR/no-prefetch)"
jq -e --arg r "off for this boot ($RUN_DIR/no-prefetch)" '(.prefetch_off | length) == 3
        and all(.filesystems[]; .prefetches == false and .prefetch_off == $r)' < <(ctl --json=short status) >/dev/null ||
        fail "status --json with the off file: $(ctl --json=short status | jq -c .filesystems)"
rm "$RUN_DIR/no-prefetch"
cp "$CONF" "$TMP/conf.before"
printf '[Prefetch]\nPrefetch=no\n' >> "$CONF"
n=$(grep -c "Configuration reloaded" "$DAEMON_LOG" || true)
kill -HUP "$DAEMON_PID"
wait_until 10 eval '[ "$(grep -c "Configuration reloaded" "$DAEMON_LOG")" -gt '"$n"' ]' || fail "not reloaded"
status=$(ctl status)
says "$MNT" ext4 "records and relocates; does not prefetch: Prefetch=no"
says "$TMP/robind" ext4 "records; does not relocate: mounted read-only; does not prefetch: Prefetch=no"
cp "$TMP/conf.before" "$CONF"
n=$(grep -c "Configuration reloaded" "$DAEMON_LOG" || true)
kill -HUP "$DAEMON_PID"
wait_until 10 eval '[ "$(grep -c "Configuration reloaded" "$DAEMON_LOG")" -gt '"$n"' ]' || fail "not reloaded"
status=$(ctl status)
says "$MNT" ext4 "records, relocates and prefetches"
pass "the off file and Prefetch=no: status says no prefetch, and why; on again without them"

# Files on the read-only bind are recorded, and skipped by plan and optimize for that reason; the twin's file
# is not recorded (neither under its name nor as the file of $MNT its key would name)
"$MNT/bin/prog" "$MNT/d/x" "$TMP/twin/d/t" "$TMP/robind/d/x"
wait_until 30 has_profile "$MNT/bin/prog" || fail "launch not recorded"
profile_paths "$MNT/bin/prog" | grep -qxF "$TMP/robind/d/x" || fail "the file on the read-only bind not recorded"
[ "$(profile_paths "$MNT/bin/prog" | tr '\n' ' ')" = "$MNT/bin/prog $MNT/d/x $TMP/robind/d/x " ] ||
        fail "the launch's files: $(profile_paths "$MNT/bin/prog" | tr '\n' ' ')"
pass "a filesystem with a watched one's UUID: neither, said in status and the log; its files not recorded"
ctl --json=short plan > "$TMP/plan.json"
jq -e --arg p "$TMP/robind/d/x" 'any(.skipped[]; .path == $p and .reason == "mounted read-only" and .retry == false)
        and all(.files[]; .path != $p)' "$TMP/plan.json" >/dev/null || fail "plan: $(jq -c .skipped "$TMP/plan.json")"
sum=$(sha256sum < "$TMP/robind/d/x")
rc=0
ctl --json=short optimize > "$TMP/opt.json" || rc=$?
[ "$rc" = 0 ] && jq -e --arg p "$TMP/robind/d/x" '(.state == "done" or .state == "nothing to do")
        and any(.skipped[]; .path == $p and .reason == "mounted read-only")' "$TMP/opt.json" >/dev/null ||
        fail "optimize exited $rc: $(cat "$TMP/opt.json")"
[ "$(sha256sum < "$TMP/robind/d/x")" = "$sum" ] || fail "the file on the read-only bind changed"
pass "plan and optimize skip the read-only bind's file: mounted read-only"

# what status says follows the mounts
mount -o remount,ro "$TMP/other"
other_ro() { ctl status | grep -qF "$TMP/other ($(mountpoint -d "$TMP/other"), ext4): neither: mounted read-only"; }
wait_until 20 other_ro || fail "status after remounting read-only: $(ctl status | grep -F "$TMP/other")"
pass "remounted read-only: neither: mounted read-only"
stop_daemon
