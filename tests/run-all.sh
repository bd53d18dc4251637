#!/bin/bash
# The full test suite, as CI runs it: install build/test dependencies, build with warnings as errors, run
# every suite (unit + integration against real fanotify, ext4 on loop devices, SQLite and a private
# dbus-daemon; needs root), then build the unit tests again with AddressSanitizer/UBSan and run them.
#   usage: tests/run-all.sh [BUILD_DIR]     (default: build-ci)
set -euo pipefail
cd "$(dirname "$0")/.."
. tests/deps.sh
install_deps

B=${1:-build-ci}
if [ -d "$B" ]; then
        meson setup --reconfigure "$B" --werror -Dman=enabled >/dev/null
else
        meson setup "$B" --werror -Dman=enabled >/dev/null
fi
ninja -C "$B"
meson test -C "$B" --print-errorlogs --num-processes 1

A=$B-asan
if [ -d "$A" ]; then
        meson setup --reconfigure "$A" --werror -Db_sanitize=address,undefined -Db_lundef=false >/dev/null
else
        meson setup "$A" --werror -Db_sanitize=address,undefined -Db_lundef=false >/dev/null
fi
ninja -C "$A"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
        meson test -C "$A" --suite unit --print-errorlogs
# One closing line over both runs, counted from meson's own JSON logs.
jq -rs '(map(select(.result == "OK")) | length) as $ok
        | (map(select(.result == "SKIP")) | length) as $skip
        | (length - $ok - $skip) as $bad
        | "\($ok) passed, \($bad) failed, \($skip) skipped"' \
        "$B/meson-logs/testlog.json" "$A/meson-logs/testlog.json"
