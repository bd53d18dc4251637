# SPDX-License-Identifier: GPL-2.0-or-later
# A CPU and I/O load on the machine, for runs that must hold while it is busy (sourced; tests/flake-hunt.sh).
#
#   load_start DIR [CPUS]   -> LOAD_PIDS: one busy loop per CPU (default: all of them), at the priority of
#                              anyone else; and, in DIR, which must be on a disk (not a tmpfs: the I/O must
#                              reach a device, and its dirty pages count against the machine's dirty limits):
#                              a writer of a 256 MiB file in buffered writes synced at its end, a writer
#                              of 4 KiB blocks each synced at once (what a database's commits do: a journal
#                              commit each), and a reader of another 256 MiB file with O_DIRECT (from the
#                              device every time, the page cache does not absorb it)
#   load_stop               stops them (SIGTERM by pid; each I/O loop stops its dd and waits for it) and waits
#                           until they are gone
#   pid_gone_within SECS PID...   polls until the processes are gone; fails if one is still there after SECS
#
# Every process of the load names DIR on its command line, so that scratch.sh's guardian of DIR stops them
# (by pid) when the caller was killed without a chance to call load_stop.
LOAD_PIDS=()

# Each loop runs its dd in the background and waits for it, so that SIGTERM is handled at once (bash runs a
# trap only once the foreground command is done), and stops that dd before it exits (polled, see below).
_LOAD_LOOP='trap '\''kill $c 2>/dev/null; while kill -0 $c 2>/dev/null; do sleep 0.1; done; exit 0'\'' TERM
d=${1%/}; shift
while :; do
        eval "exec $*" & c=$!
        wait $c
done'

load_start() {          # DIR [CPUS]
        local d=$1 n=${2:-$(nproc)} i
        dd if=/dev/zero of="$d/read" bs=1M count=256 conv=fsync status=none
        for ((i = 0; i < n; i++)); do
                bash -c 'while :; do :; done' load-cpu "$d/" &
                LOAD_PIDS+=($!)
        done
        bash -c "$_LOAD_LOOP" load-write "$d/" \
                'dd if=/dev/zero of="$d/write" bs=1M count=256 conv=fsync status=none' &
        LOAD_PIDS+=($!)
        bash -c "$_LOAD_LOOP" load-sync "$d/" 'dd if=/dev/zero of="$d/sync" bs=4k count=64 \
                seek=$((RANDOM % 4096)) oflag=sync conv=notrunc status=none' &
        LOAD_PIDS+=($!)
        bash -c "$_LOAD_LOOP" load-read "$d/" \
                'dd if="$d/read" of=/dev/null bs=1M iflag=direct status=none' &
        LOAD_PIDS+=($!)
}

# Polls rather than waits: called from a trap that interrupted a `wait`, bash 5.2's `wait PID` may never
# return for a child reaped in the meantime.
pid_gone_within() {     # SECS PID...
        local t=$1 p i
        shift
        for p in "$@"; do
                for ((i = 0; i < t * 10; i++)); do
                        kill -0 "$p" 2>/dev/null || continue 2
                        sleep 0.1
                done
                return 1
        done
}

load_stop() {
        [ ${#LOAD_PIDS[@]} -gt 0 ] || return 0
        kill -TERM "${LOAD_PIDS[@]}" 2>/dev/null
        pid_gone_within 60 "${LOAD_PIDS[@]}" || kill -KILL "${LOAD_PIDS[@]}" 2>/dev/null
        LOAD_PIDS=()
}
