# SPDX-License-Identifier: GPL-2.0-or-later
# Shared harness for the integration tests (sourced). Real parts only: a loop-mounted ext4 image, a private
# system-like dbus-daemon with the project's own bus policy, the real seeklessd and seeklessctl.
# Everything a test starts or attaches is torn down on any exit (trap), by name and by pid.
#
#   setup_image [SIZE]      -> $IMG $LOOP $MNT    (ext4, 4 KiB blocks)
#   start_bus               -> $BUS_PID, exports DBUS_SYSTEM_BUS_ADDRESS
#   write_config <<EOF ...  -> $CONF
#   start_daemon [ARGS...]  -> $DAEMON_PID (waits until the bus name is owned)
#   start_recording [ARGS...] <<EOF ...  the bus, the daemon with short windows, the boot window over
#   stop_daemon             (SIGTERM, waits; fails the test if it exits non-zero)
#   ctl ARGS...             runs seeklessctl
#   fail MSG / pass MSG
# On tests/lib-core.sh (waiting, figures, images, JSON lines), which the benchmarks share.

set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/lib-core.sh"
. "$(dirname "${BASH_SOURCE[0]}")/private-bus.sh"
. "$(dirname "${BASH_SOURCE[0]}")/scratch.sh"

: "${SEEKLESSD:?run through meson test}" "${SEEKLESSCTL:?}" "${SOURCE_ROOT:?}"

if [ "$(id -u)" != 0 ]; then
        echo "SKIP: needs root (fanotify, loop devices)"
        exit 77
fi

TEST_NAME=$(basename "$0" .sh)
TMP=$(mktemp -d "$(scratch_root)/seekless-$TEST_NAME.XXXXXX")
scratch_claim "$TMP"
scratch_guard "$TMP"
LOOP= MNT= IMG= BUS_PID= DAEMON_PID= CONF= SIGNALLED=
DAEMON_LOG=$TMP/daemon.log
STATE=$TMP/state
RUN_DIR=$TMP/run          # the boot collector's directory (never the host's /run/seekless)
EXTRA_PIDS=()
EXTRA_MOUNTS=() EXTRA_LOOPS=()   # more images a test made itself: unmounted before $MNT, detached after
EXTRA_INSTANCES=()              # tracefs instances the harness made (inserts_start): removed before unmounts
INSERTS=

cleanup() {
        local rc=$?
        set +e
        # what a test set up beyond these (a tracefs instance of its own): its test_cleanup, first
        if declare -F test_cleanup >/dev/null; then test_cleanup; fi
        for i in "${EXTRA_INSTANCES[@]}"; do echo 0 > "$i/tracing_on"; rmdir "$i"; done 2>/dev/null
        if [ -n "$SIGNALLED" ]; then
                # meson's timeout: SIGKILL follows SIGTERM within half a second, so no waiting here
                for p in "${EXTRA_PIDS[@]}" $DAEMON_PID $BUS_PID; do kill -KILL "$p" 2>/dev/null; done
                for m in "${EXTRA_MOUNTS[@]}" $MNT; do umount -l "$m" 2>/dev/null; done
                # busy: detached once the unmount completes
                for l in $LOOP "${EXTRA_LOOPS[@]}"; do losetup -d "$l" 2>/dev/null; done
                rm -rf "$TMP"
                exit "$rc"
        fi
        stop_extra_pids
        if [ -n "$DAEMON_PID" ] && kill -0 "$DAEMON_PID" 2>/dev/null; then
                kill -TERM "$DAEMON_PID"; wait_pid_gone "$DAEMON_PID" 20 || kill -KILL "$DAEMON_PID"
        fi
        if [ "$rc" != 0 ] && [ -s "$DAEMON_LOG" ]; then
                echo "---- seeklessd log ($DAEMON_LOG) ----"; tail -n 60 "$DAEMON_LOG"; echo "----"
        fi
        [ -n "$BUS_PID" ] && kill "$BUS_PID" 2>/dev/null
        for m in "${EXTRA_MOUNTS[@]}" $MNT; do
                mountpoint -q "$m" 2>/dev/null || continue
                umount "$m" 2>/dev/null || { sleep 1; umount -l "$m"; }
        done
        for l in $LOOP "${EXTRA_LOOPS[@]}"; do losetup -d "$l" 2>/dev/null; done
        rm -rf "$TMP"
        exit "$rc"
}
trap cleanup EXIT
trap 'SIGNALLED=1; exit 130' INT TERM HUP PIPE

fail() { echo "FAIL: $*" >&2; exit 1; }

# The test's background processes (EXTRA_PIDS) stopped and waited for: a killed process that has not exited
# yet still holds its files, and an unmount right after the kill finds the filesystem busy.
stop_extra_pids() {
        local p
        for p in "${EXTRA_PIDS[@]}"; do
                kill "$p" 2>/dev/null
                wait_pid_gone "$p" 10 || kill -KILL "$p" 2>/dev/null
                wait "$p" 2>/dev/null || true   # reaped, if it is a child of ours
        done
        EXTRA_PIDS=()
}
pass() { echo "ok: $*"; }

setup_image() {    # [SIZE [extra mkfs.ext4 options...]]
        local size=${1:-256M}
        shift || true
        IMG=$TMP/fs.img
        MNT=$TMP/mnt
        make_ext4_image "$IMG" "$size" "$@"
        LOOP=$(losetup --find --show "$IMG")
        # a loop device takes "rotational" from what backs it (0 for an image in /dev/shm or on an SSD);
        # the tests model the rotational disk seekless is for, wherever the image lives
        echo 1 > "/sys/block/${LOOP#/dev/}/queue/rotational"
        mkdir -p "$MNT"
        mount -t ext4 "$LOOP" "$MNT"
}

start_bus() {
        chmod 755 "$TMP"
        start_private_bus "$TMP/bus" "$SOURCE_ROOT"
}

# SEEKLESS_TEST_RECORDER=bpf (or fanotify, auto): the recorder every test runs with that does not name one
# ([Record] Recorder=), to run the recording tests against each (tests/README.md).
write_config() {
        CONF=$TMP/seekless.conf
        cat > "$CONF"
        if [ -n "${SEEKLESS_TEST_RECORDER:-}" ] && ! grep -q '^Recorder=' "$CONF"; then
                printf '[Record]\nRecorder=%s\n' "$SEEKLESS_TEST_RECORDER" >> "$CONF"
        fi
}

# The page-cache tracepoint the daemon records pages with (doc/page-recording.md): the system's tracefs, or,
# where none is mounted (no systemd, no one mounted it), the kernel's tracefs mounted for the test (the same
# one, seen at a second place; unmounted at exit). A test's own --tracefs= comes later and wins.
test_tracefs() {
        [ -z "${TEST_TRACEFS:-}" ] || return 0
        if [ -e /sys/kernel/tracing/events/filemap ]; then
                TEST_TRACEFS=/sys/kernel/tracing
        elif mkdir -p "$TMP/tracefs" && mount -t tracefs nodev "$TMP/tracefs" 2>/dev/null; then
                EXTRA_MOUNTS+=("$TMP/tracefs")
                TEST_TRACEFS=$TMP/tracefs
        else
                TEST_TRACEFS=/sys/kernel/tracing      # none: the daemon records whole files and says so
        fi
}

# The pages inserted into the page cache of the image's filesystem, seen from a tracefs instance of the
# test's own: what a prefetch read, counted independently of the daemon and of whatever evicts the pages
# afterwards (a machine of CI's kind pages out file pages nobody used within seconds of their read:
# DAMON's proactive reclaim, doc/kernel.md §8; mincore() would count them gone).
#   inserts_start       (re)start counting, forgetting what was seen
#   inserted FILE...    how many distinct pages of these files were inserted since (each file's inode now)
inserts_start() {
        local kdev
        if [ -z "$INSERTS" ]; then
                test_tracefs
                INSERTS=$TEST_TRACEFS/instances/seekless-inserts-$$
                mkdir "$INSERTS" || fail "cannot create a tracefs instance"
                EXTRA_INSTANCES+=("$INSERTS")
                kdev=$(( $(stat -c '%t' "$LOOP" | sed 's/^/0x/') << 20 | $(stat -c '%T' "$LOOP" | sed 's/^/0x/') ))
                echo 8192 > "$INSERTS/buffer_size_kb"
                echo "s_dev == $kdev" > "$INSERTS/events/filemap/mm_filemap_add_to_page_cache/filter"
                echo 1 > "$INSERTS/events/filemap/mm_filemap_add_to_page_cache/enable"
        fi
        echo 0 > "$INSERTS/tracing_on"
        echo > "$INSERTS/trace"
        echo 1 > "$INSERTS/tracing_on"
}
inserted() {
        [ -n "$INSERTS" ] || fail "inserted before inserts_start"
        awk -v inos="$(stat -c '%i' "$@" | xargs printf '%x ')" '
                BEGIN { n = split(inos, x, " "); for (i = 1; i <= n; i++) f[x[i]] = 1 }
                / mm_filemap_add_to_page_cache: / {
                        match($0, / ino [0-9a-f]+ /); ino = substr($0, RSTART + 5, RLENGTH - 6)
                        if (!(ino in f)) next
                        match($0, / ofs=[0-9]+/); page = substr($0, RSTART + 5, RLENGTH - 5) / 4096
                        match($0, / order=[0-9]+/); order = substr($0, RSTART + 7, RLENGTH - 7)
                        for (i = 0; i < 2 ^ order; i++) if (!((ino " " page + i) in seen)) { seen[ino " " page + i] = 1; n_seen++ } }
                END { print n_seen + 0 }' "$INSERTS/trace"
}

start_daemon() {
        [ -n "$CONF" ] || write_config < /dev/null
        test_tracefs
        ${DAEMON_WRAPPER:-} "$SEEKLESSD" --config="$CONF" --state-dir="$STATE" --run-dir="$RUN_DIR" --log-level=debug \
                --tracefs="$TEST_TRACEFS" "$@" >>"$DAEMON_LOG" 2>&1 &
        DAEMON_PID=$!
        if ! wait_until 20 busctl --system status org.seekless.Seekless1; then
                fail "seeklessd did not appear on the bus"
        fi
}

# The start of most tests: the private bus, seeklessd with short recording windows ([Record]
# BootWindowSec=1, LaunchWindowSec=2) and the boot window over. More configuration comes on stdin (a
# heredoc, or </dev/null for none): it continues [Record] until it names another section, and a key given
# there again wins. The arguments go to seeklessd.
start_recording() {
        start_bus
        write_config < <(printf '[Record]\nBootWindowSec=1\nLaunchWindowSec=2\n'; cat)
        start_daemon "$@"
        wait_until 30 boot_recording_over || fail "boot window did not close"
}

stop_daemon() {
        local rc=0
        kill -TERM "$DAEMON_PID"
        wait "$DAEMON_PID" || rc=$?
        DAEMON_PID=
        [ "$rc" = 0 ] || fail "seeklessd exited with status $rc on SIGTERM"
}

ctl() {
        "$SEEKLESSCTL" "$@"
}

# Runs a command as nobody (the unprivileged caller of the bus policy tests); $TMP must be reachable.
as_nobody() {
        setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"
}

# A program on the image and two small files for it to read: $MNT/bin/prog, $MNT/d/x, $MNT/d/y.
make_small_launch() {
        mkdir -p "$MNT/bin" "$MNT/d"
        cp "$OPEN_FILES" "$MNT/bin/prog"
        echo x > "$MNT/d/x"
        echo y > "$MNT/d/y"
}

# Print the JSON list of paths of a profile, one per line.
profile_paths() {
        ctl --json=short show "$1" | jq -r '.files[].path'
}

has_profile() {
        ctl --json=short profiles | jq -e --arg n "$1" 'any(.[]; .name == $n)' >/dev/null
}

# What records launches' pages: bpf or fanotify (the D-Bus property Recorder).
recorder() {
        busctl --system get-property org.seekless.Seekless1 /org/seekless/Seekless1 \
                org.seekless.Seekless1.Manager Recorder | cut -d'"' -f2
}

# seeklessd built with the BPF recorder (-Dbpf_recorder; meson's SEEKLESS_BPF_RECORDER)
bpf_recorder_built() { [ "${SEEKLESS_BPF_RECORDER:-0}" = 1 ]; }

boot_recording_over() {
        [ "$(busctl --system get-property org.seekless.Seekless1 /org/seekless/Seekless1 \
                org.seekless.Seekless1.Manager BootRecording)" = "b false" ]
}

# ---- relocation helpers ----

# An aged image with a recorded launch profile: $P (the program on the image) reads the aged files in a
# seeded random order. Sets $P and $PROFILE_FILES (the files in the order read).
setup_aged_profile() {
        local seed=${1:-7} n=${2:-40} maxkib=${3:-1024}
        bash "$SOURCE_ROOT/tools/age-image.sh" "$MNT" "$seed" "$n" "$maxkib" | sed 's/^/  /'
        mkdir -p "$MNT/bin"
        cp "$OPEN_FILES" "$MNT/bin/prog"
        P=$MNT/bin/prog
        PROFILE_FILES=$(ls "$MNT"/aged/f* | awk -v s="$seed" 'BEGIN{srand(s)} {print rand() "\t" $0}' | sort | cut -f2)
        sync
        # The launch reads the files from the disk: every page of them is in its page events, whatever drops
        # caches meanwhile. Left cached from their writing, what a drop_caches elsewhere on the machine (other
        # tests do that) had evicted was read with events and the rest without: some files' hot ranges were
        # their first part only, and the rest of them stayed where it was.
        # shellcheck disable=SC2086
        "$PAGE_TOUCH" $(printf 'drop:%s ' $PROFILE_FILES)
        # shellcheck disable=SC2086
        "$P" $PROFILE_FILES
        wait_until 30 has_profile "$P" || fail "launch not recorded"
}

# Checksums of every regular file on the image (independent of seekless).
checksum_all() {
        (cd "$MNT" && find . -xdev -type f -not -path './lost+found/*' -print0 | sort -z | xargs -0 sha256sum) > "$1"
}
# Every file of the image out of the page cache (after a sync), and nothing else: the next read of them
# comes from the disk. A drop_caches would evict what other tests beside this one have cached.
drop_image_pages() {
        local files
        mapfile -d '' files < <(find "$MNT" -xdev -type f -not -path "$MNT/lost+found/*" -print0)
        drop_file_pages "${files[@]}"
}
verify_checksums() {
        drop_image_pages
        (cd "$MNT" && sha256sum --quiet -c "$1") || fail "checksums differ after relocation"
}

# FIEMAP extents of one file as "LOGICAL PHYSICAL LENGTH" lines (4 KiB blocks), from filefrag -v.
file_extents() {
        filefrag -v "$1" | awk '$1 ~ /^[0-9]+:$/ { gsub(/[.:]/, " ");
                # fields: ext logical_start logical_end physical_start physical_end length
                print $2, $4, $6 }'
}

# Discontinuities of a list of files read whole in order: times the next extent does not start where the
# previous one ended. Inside a file, a physical jump as long as the logical one is a hole (the data after it
# at the same base + logical offset, as seekless laid files out before it packed data across holes):
# nothing is read there, so it does not count.
discontinuities_of() {
        local f i=0
        for f in "$@"; do
                i=$((i + 1))
                file_extents "$f" | sed "s/^/$i /"
        done | awk 'NR > 1 && $3 != next_start && !($1 == file && $3 - next_start == $2 - next_logical) { d++ }
                    { file = $1; next_start = $3 + $4; next_logical = $2 + $4 }
                    END { print d + 0 }'
}

free_blocks() {
        stat -f -c %f "$MNT"
}

fsck_clean() {
        local i
        # a process stopped just before (a subshell's last child) may still be closing its files: busy for
        # a moment, not for good
        for i in 1 2 3 4 5 6 7 8 9; do
                umount "$MNT" 2>/dev/null && break
                sleep 0.5
        done
        mountpoint -q "$MNT" && umount "$MNT"
        e2fsck -fn "$LOOP" > "$TMP/fsck.out" 2>&1 || { cat "$TMP/fsck.out"; fail "e2fsck -fn found problems"; }
        mount -t ext4 "$LOOP" "$MNT"
}

optimizing() {
        [ "$(busctl --system get-property org.seekless.Seekless1 /org/seekless/Seekless1 \
                org.seekless.Seekless1.Manager Optimizing)" = "b true" ]
}
not_optimizing() { ! optimizing; }

donor_runs_of_last_run() {
        grep -o 'donor in [0-9]* run' "$DAEMON_LOG" | tail -n1 | awk '{print $3}'
}
