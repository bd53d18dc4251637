#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Run by hand, when seeklessctl's output code is reworked: the output of status, profiles, sessions, show,
# plan, optimize --dry-run and report (and report --svg's picture), in every mode (text, --no-legend,
# --json, --json=short, --json=pretty, --json=off; plan in a UTF-8 and a C locale), of one or more
# seeklessctl binaries against one real private daemon going through these states: recording the boot;
# profiles recorded (a boot profile, a launch, a program and files named with invalid UTF-8, a newline
# and a backslash, an immutable file that plan skips, a file open for writing that it will retry, two
# filesystems, one on a non-rotational device relocation is off for); an optimization queued for one
# mount point, then for all; after an optimization (report with its "before" figures, plan with the
# layout in place); an optimization running (RateLimitMiBps=1); one filesystem unmounted; both.
#
#   tools/cli-compare.sh BUILD_DIR OUT_DIR LABEL=SEEKLESSCTL [LABEL=SEEKLESSCTL...]
#
# BUILD_DIR provides the daemon and the test helpers. Each command's stdout, stderr and exit status go to
# OUT_DIR/STATE/NNN.LABEL.{out,err,rc} (OUT_DIR/STATE/NNN.cmd says what ran). With two binaries or more,
# every command runs with the first one, each other one, and the first again; when the first's two runs
# agree (the daemon's state did not move in between: the boot window's seconds left, the idle policy's
# timer), each other binary's output must be the same to the byte, else the triple is tried again (up to
# 5 times). Prints what differs and a count; exits 1 if anything differs.
#
#   tools/cli-compare.sh --masked OLD_OUT_DIR NEW_OUT_DIR LABEL_OLD LABEL_NEW
#
# compares two such runs made at different times (two daemons): the same files, with what differs from
# one daemon to the next masked (times, durations, boot IDs, session and run ids, event counts, database
# size, device numbers, the idle policy's state, the layout's physical figures; where that is not enough,
# every number), pictures left out. Needs
# root, like the integration tests.
set -euo pipefail

mask() {
        sed -E \
            -e 's/seekless-cli-compare\.[A-Za-z0-9]{6}/<TMP>/g' \
            -e 's/[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}/<TIME>/g' \
            -e 's/("[a-z_]*_usec": ?)[0-9]+/\1<N>/g' \
            -e 's/[0-9a-f]{32}/<BOOTID>/g' \
            -e 's/("(id|optimization_id|database_bytes|events_received|extents|discontinuities|span|modeled_read_ms|sessions|seen|score)": ?)[0-9.e+-]+/\1<N>/g' \
            -e 's/[0-9]+(\.[0-9]+)?( ?)(B|K|M|G|ms|s|us|min|h|d)\b/<Q>\2/g' \
            -e 's/[0-9]+ (received|s left)/<N> \1/g' \
            -e 's/\(optimization [0-9]+\)/(optimization <N>)/g' \
            -e 's/("device": ?")[0-9]+:[0-9]+"/\1<DEV>"/g' -e 's/\([0-9]+:[0-9]+, /(<DEV>, /g' \
            -e 's/("idle": ?")[^"]*"/\1<IDLE>"/g' -e 's/(Idle policy: ).*/\1<IDLE>/'
}

# Every number masked and runs of spaces squeezed: for the text tables of layout figures, whose widths
# follow the numbers.
mask_numbers() {
        mask | sed -E -e 's/[0-9]+(\.[0-9]+)?/<N>/g' -e 's/ +/ /g'
}

if [ "${1:-}" = --masked ]; then
        [ $# = 5 ] || { echo "usage: $0 --masked OLD_OUT_DIR NEW_OUT_DIR LABEL_OLD LABEL_NEW" >&2; exit 2; }
        old=$2 new=$3 lo=$4 ln=$5 n=0 differ=0 numbers=0
        # the pictures are left out: they draw the physical layout, which differs from one image to the next
        while IFS= read -r f; do
                rel=${f#"$old"/}
                g=$new/${rel%."$lo".*}.$ln.${rel##*.}
                n=$((n + 1))
                if [ ! -e "$g" ]; then
                        echo "missing: $g"; differ=$((differ + 1)); continue
                fi
                cmp -s <(mask < "$f") <(mask < "$g") && continue
                if cmp -s <(mask_numbers < "$f") <(mask_numbers < "$g"); then
                        numbers=$((numbers + 1))
                        continue
                fi
                differ=$((differ + 1))
                echo "== differs (masked): $rel ($(cat "${f%."$lo".*}.cmd"))"
                diff <(mask < "$f") <(mask < "$g") | head -n 20 || true
        done < <(find "$old" -name "*.$lo.*" -not -name "*.svg" -type f | sort)
        echo "masked comparison: $n files, $((n - numbers - differ)) alike with times and ids masked," \
             "$numbers more with every number masked, $differ differ"
        [ "$differ" = 0 ]
        exit
fi

[ $# -ge 3 ] || { echo "usage: $0 BUILD_DIR OUT_DIR LABEL=SEEKLESSCTL..." >&2; exit 2; }
BUILD=$(realpath "$1") OUT=$(realpath -m "$2")
shift 2
LABELS=() BINS=()
for a in "$@"; do
        LABELS+=("${a%%=*}")
        BINS+=("$(realpath "${a#*=}")")
done
export SEEKLESSD=$BUILD/daemon/seeklessd SEEKLESSCTL=${BINS[0]} OPEN_FILES=$BUILD/tests/open-files \
        PAGE_TOUCH=$BUILD/tests/page-touch
SOURCE_ROOT=$(cd "$(dirname "$0")/.." && pwd)
export SOURCE_ROOT
mkdir -p "$OUT"
. "$SOURCE_ROOT/tests/lib.sh"

STATE_NAME= IDX=0 N_COMPARED=0 N_DIFFER=0 N_UNSTABLE=0 N_RUNS=0

# run_one LABEL_INDEX N ENV_AND_ARGS...: one binary's run of one command into OUT/STATE/N.LABEL.*
run_one() {
        local i=$1 n=$2 base rc=0
        shift 2
        base=$OUT/$STATE_NAME/$n.${LABELS[$i]}
        rm -f "$TMP/layout.svg"
        env "${CMD_ENV[@]}" "${BINS[$i]}" "$@" > "$base.out" 2> "$base.err" || rc=$?
        echo "$rc" > "$base.rc"
        [ -e "$TMP/layout.svg" ] && mv "$TMP/layout.svg" "$base.svg"
        N_RUNS=$((N_RUNS + 1))
        return 0
}

same() {    # BASE_A BASE_B: stdout, stderr, exit status and picture alike
        local e
        for e in out err rc svg; do
                [ -e "$1.$e" ] || [ -e "$2.$e" ] || continue
                cmp -s "$1.$e" "$2.$e" || return 1
        done
}

# cmd [VAR=VALUE...] -- ARGS...: run one command with every binary (see the top of the file)
cmd() {
        local n try i a b stable
        CMD_ENV=(LANG=C.UTF-8)
        while [ "$1" != -- ]; do CMD_ENV+=("$1"); shift; done
        shift
        IDX=$((IDX + 1))
        n=$(printf %03d "$IDX")
        mkdir -p "$OUT/$STATE_NAME"
        printf '%q ' "${CMD_ENV[@]}" seeklessctl "$@" > "$OUT/$STATE_NAME/$n.cmd"
        if [ "${#BINS[@]}" = 1 ]; then
                run_one 0 "$n" "$@"
                return
        fi
        stable=
        for try in 1 2 3 4 5; do
                run_one 0 "$n" "$@"
                for ((i = 1; i < ${#BINS[@]}; i++)); do run_one "$i" "$n" "$@"; done
                a=$OUT/$STATE_NAME/$n.${LABELS[0]}
                for e in out err rc svg; do [ -e "$a.$e" ] && cp "$a.$e" "$TMP/again.$e"; done
                run_one 0 "$n" "$@"
                if same "$a" "$TMP/again"; then stable=1; break; fi
                rm -f "$TMP"/again.*
        done
        rm -f "$TMP"/again.*
        if [ -z "$stable" ]; then
                N_UNSTABLE=$((N_UNSTABLE + 1))
                echo "unstable (the first binary's two runs differ 5 times): $STATE_NAME/$n $(cat "$OUT/$STATE_NAME/$n.cmd")"
                return
        fi
        for ((i = 1; i < ${#BINS[@]}; i++)); do
                b=$OUT/$STATE_NAME/$n.${LABELS[$i]}
                N_COMPARED=$((N_COMPARED + 1))
                if ! same "$a" "$b"; then
                        N_DIFFER=$((N_DIFFER + 1))
                        echo "== DIFFERS: $STATE_NAME/$n ${LABELS[$i]} vs ${LABELS[0]}: $(cat "$OUT/$STATE_NAME/$n.cmd")"
                        for e in out err rc; do diff "$a.$e" "$b.$e" | head -n 20 || true; done
                fi
        done
}

# every output mode of one command
modes() {
        local m
        for m in "" --no-legend --json --json=short --json=pretty --json=off "--json=pretty --no-legend"; do
                # shellcheck disable=SC2086
                cmd "$@" $m
        done
}

state() {
        STATE_NAME=$1
        echo "-- state $1"
}

every_command() {
        modes -- status
        modes -- profiles
        modes -- sessions
        modes -- show boot
        modes -- show "$MNT/bin/prog"
        modes -- show "$E_PROG"
        modes -- show "$PROG"
        modes -- show /no/such/profile
        modes -- plan
        modes LANG=C -- plan
        modes -- plan "$MNT"
        modes -- plan "$MNT2"
        modes -- plan "$MNT" "$MNT2"
        modes -- optimize --dry-run
        modes -- report
        modes -- report "$MNT/bin/prog"
        modes -- report "$E_PROG"
        modes -- report /no/such/profile
        modes -- report "$MNT/bin/prog" --svg="$TMP/layout.svg"
}

# ---- the daemon and what it records ----
setup_image 512M
MNT2=$TMP/mnt2
truncate -s 64M "$TMP/fs2.img"
mkfs.ext4 -q -F -b 4096 "$TMP/fs2.img"
LOOP2=$(losetup --find --show "$TMP/fs2.img")
EXTRA_LOOPS+=("$LOOP2")
echo 0 > "/sys/block/${LOOP2#/dev/}/queue/rotational"     # relocation is off there
mkdir -p "$MNT2"
mount -t ext4 "$LOOP2" "$MNT2"
EXTRA_MOUNTS+=("$MNT2")
mkdir -p "$MNT/boot" "$MNT2/d"
for f in a b c; do head -c 20000 /dev/urandom > "$MNT/boot/$f"; done
for f in p q; do head -c 30000 /dev/urandom > "$MNT2/d/$f"; done
sync

config() {      # RATE_LIMIT
        write_config <<EOC
[Record]
BootWindowSec=20
LaunchWindowSec=2
[Optimize]
MinFileAgeSec=0
RateLimitMiBps=$1
[Idle]
BootQuietSec=1d
EOC
}
config 0
start_bus
start_daemon --filesystem="$MNT" --filesystem="$MNT2"
cat "$MNT/boot/b" "$MNT/boot/a" "$MNT/boot/c" "$MNT2/d/q" > /dev/null
E_PROG="$MNT/bin/prog\\xff" PROG=$MNT/bin/prog$'\xff'
state 0-boot
modes -- status
modes -- profiles
modes -- report
modes -- plan
modes -- show boot
boot_recording_over && fail "the boot window closed before the commands of state 0 ended: make it longer"
wait_until 60 boot_recording_over || fail "boot window did not close"
wait_until 30 has_profile boot || fail "no boot profile"

setup_aged_profile 7 30 512
"$P" "$MNT2/d/p" "$MNT2/d/q" "${PROFILE_FILES%%$'\n'*}" > /dev/null
cp "$OPEN_FILES" "$PROG"
hostile=("$MNT/d/new"$'\n'"line" "$MNT/d/back\\slash" "$MNT/d/bad"$'\xfe' "$MNT/d/文字" "$MNT/d/imm"$'\xfd'
         "$MNT/d/held")
mkdir -p "$MNT/d"
for round in 1 2 3 4; do
        for f in "${hostile[@]}"; do head -c 32768 /dev/urandom >> "$f"; done
        sync
done
"$PROG" "${hostile[@]}"
wait_until 30 has_profile "$E_PROG" || fail "no profile $E_PROG"
chattr +i "$MNT/d/imm"$'\xfd'
exec {held}>>"$MNT/d/held"          # open for writing: plan will retry it
sleep 1

state 1-recorded
every_command

state 2-queued
ctl optimize --when-idle "$MNT" > /dev/null
modes -- status
ctl optimize --when-idle > /dev/null
modes -- status
ctl cancel > /dev/null

exec {held}>&-
chattr -i "$MNT/d/imm"$'\xfd'
ctl optimize > /dev/null || fail "optimize failed"
state 3-optimized
every_command

# a new profile to move, slowly: 16 MiB at 1 MiB/s outlasts the commands of state 4 (a few seconds)
mkdir -p "$MNT/other"
for i in 1 2 3 4 5 6 7 8; do head -c 2097152 /dev/urandom > "$MNT/other/o$i"; sync; done
cp "$OPEN_FILES" "$MNT/bin/prog2"
"$MNT/bin/prog2" "$MNT/other/o4" "$MNT/other/o1" "$MNT/other/o6" "$MNT/other/o2" "$MNT/other/o5" "$MNT/other/o3" \
        "$MNT/other/o8" "$MNT/other/o7"
wait_until 30 has_profile "$MNT/bin/prog2" || fail "second launch not recorded"
stop_daemon
config 1
start_daemon --filesystem="$MNT" --filesystem="$MNT2"
ctl optimize --no-block > /dev/null || fail "optimize --no-block"
optimizing || fail "no optimization running"
state 4-running
modes -- status
modes -- plan
modes -- report
optimizing || fail "the optimization ended before the commands of state 4 did: make it longer"
ctl cancel > /dev/null
wait_until 30 not_optimizing || fail "the run did not stop"

# the rest moved at full speed, so that what follows does not depend on how far the slow run came
stop_daemon
config 0
start_daemon --filesystem="$MNT" --filesystem="$MNT2"
ctl optimize > /dev/null || fail "optimize failed"
umount "$MNT2"
EXTRA_MOUNTS=()
no_fs2() { ! ctl --json=short status | grep -qF "\"$MNT2\""; }
wait_until 30 no_fs2 || fail "$MNT2 still watched"
state 5-one-fs
modes -- status
modes -- plan

umount "$MNT"
no_fs() { ctl --json=short status | grep -qF '"filesystems":[]'; }
wait_until 30 no_fs || fail "$MNT still watched"
state 6-none
modes -- status
modes -- plan

stop_daemon
echo "$N_RUNS runs of seeklessctl, $IDX commands; compared $N_COMPARED, differ $N_DIFFER, unstable $N_UNSTABLE"
[ "$N_DIFFER" = 0 ] && [ "$N_UNSTABLE" = 0 ]
