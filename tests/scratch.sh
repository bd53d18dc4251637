# SPDX-License-Identifier: GPL-2.0-or-later
# Scratch directories of the tests, the demo and the benchmarks (sourced; tests/test-scratch.h is the C side,
# with the same rules and the same owner file).
#
#   scratch_root                 where they go: $SEEKLESS_TEST_SCRATCH; else /dev/shm when it is a tmpfs with
#                                4 GiB free (images in memory: a test's duration does not depend on the disk,
#                                nor on another run writing to it); else /tmp
#   scratch_claim DIR            DIR/.owner := this shell's pid and start time
#   scratch_guard DIR [PID]      when PID (default: this shell) is gone, remove what it left in DIR: a
#                                process of its own session (so the SIGKILL a test runner sends to the
#                                test's process group does not reach it) that waits for PID to exit;
#                                nothing to do when DIR was removed by the test's own cleanup
#   scratch_reap                 remove what killed runs left behind (below); prints a line for each
#
# A killed run (meson's timeout sends SIGTERM and SIGKILL half a second later; a machine's OOM killer; ^C
# twice) can leave its image mounted, its loop device attached and its daemons running, and CI runs on the
# same machine next. scratch_reap looks only at the names this project gives its scratch directories
# (seekless-*.XXXXXX, test-mover.XXXXXX in /tmp, /dev/shm and /var/tmp) and only at those whose owner is
# gone (pid not running, or running with another start time; a directory without an owner file when it
# is more than 10 minutes old; never one kept on purpose, with a .keep file): it kills the processes whose command line names the directory (by pid),
# unmounts what is mounted below it, detaches the loop devices backed by a file in it (by name), and
# removes it. Directories of a run still going, in this clone or another, are left alone.

_SCRATCH_SH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/scratch.sh

scratch_root() {
        local avail
        if [ -n "${SEEKLESS_TEST_SCRATCH:-}" ]; then
                echo "$SEEKLESS_TEST_SCRATCH"
                return
        fi
        if [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ] && [ -w /dev/shm ]; then
                avail=$(df --output=avail -B1 /dev/shm 2>/dev/null | tail -n 1)
                if [ "${avail:-0}" -ge $((4 << 30)) ]; then
                        echo /dev/shm
                        return
                fi
        fi
        echo /tmp
}

_scratch_start_time() {  # PID -> field 22 of /proc/PID/stat, or nothing
        local s
        s=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
        s=${s##*) }
        # shellcheck disable=SC2086
        set -- $s
        echo "${20}"
}

scratch_claim() {        # DIR
        echo "$$ $(_scratch_start_time $$)" > "$1/.owner"
}

scratch_guard() {        # DIR [PID]
        setsid bash -c 'tail --pid="$1" -f /dev/null; [ -d "$2" ] || exit 0; . "$3"; _scratch_reap_dir "$2"' \
                scratch-guard "${2:-$$}" "$1" "$_SCRATCH_SH" </dev/null >/dev/null 2>&1 &
}

_scratch_owner_alive() { # DIR
        local pid start now
        if [ -s "$1/.owner" ]; then
                read -r pid start < "$1/.owner" || return 1
                now=$(_scratch_start_time "$pid")
                [ -n "$now" ] && [ "$now" = "$start" ]
        else
                # just made, not yet claimed; or left by a version that wrote no owner file
                [ -n "$(find "$1" -maxdepth 0 -mmin -10 2>/dev/null)" ]
        fi
}

_scratch_reap_dir() {    # DIR
        local d=$1 p cmd mnt loop back
        # processes started for it (seeklessd --state-dir=DIR/..., dbus-daemon --config-file=DIR/..., qemu)
        for p in /proc/[0-9]*; do
                p=${p#/proc/}
                [ "$p" = $$ ] && continue
                cmd=$(tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null) || continue
                case $cmd in
                *"$d/"*) echo "  kill $p: $cmd"; kill -KILL "$p" 2>/dev/null ;;
                esac
        done
        # mounts below it, deepest first (mountinfo's mount point is field 5, with \040 for a space)
        awk -v d="$d/" '{ m = $5; gsub(/\\040/, " ", m); if (index(m, d) == 1) print m }' /proc/self/mountinfo |
                sort -r | while IFS= read -r mnt; do
                        echo "  umount $mnt"
                        umount "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null
                done
        # loop devices backed by a file in it (detached while busy, the kernel frees them when unused)
        losetup --list --noheadings --raw -O NAME,BACK-FILE 2>/dev/null |
                while read -r loop back; do
                        case $back in
                        "$d/"*) echo "  losetup -d $loop ($back)"; losetup -d "$loop" 2>/dev/null ;;
                        esac
                done
        rm -rf "$d"
}

scratch_reap() {
        local root d
        for root in /tmp /dev/shm /var/tmp ${SEEKLESS_TEST_SCRATCH:+"$SEEKLESS_TEST_SCRATCH"}; do
                for d in "$root"/seekless-*.?????? "$root"/test-mover.??????; do
                        [ -d "$d" ] && [ ! -L "$d" ] && [ ! -e "$d/.keep" ] || continue
                        _scratch_owner_alive "$d" && continue
                        echo "scratch: removing what a killed run left in $d"
                        _scratch_reap_dir "$d"
                done
        done
}
