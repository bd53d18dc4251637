#!/bin/bash
# Line coverage of the daemon's files by the fuzz corpora: builds the replay programs with clang's
# source-based coverage in a build directory of their own, replays each target's seeds, regression inputs
# and CORPUS_ROOT/TARGET (what fuzz/run.sh found), and prints llvm-cov's summary of the files the target
# is about (bench/README.md, "Fuzzing", has the figures of the long run).
#   usage: fuzz/coverage.sh [CORPUS_ROOT [BUILD_DIR]]   (default: build-fuzz/fuzz-corpus, build-fuzz-cov)
set -euo pipefail
cd "$(dirname "$0")/.."
R=${1:-build-fuzz/fuzz-corpus}
B=${2:-build-fuzz-cov}
declare -A FILES=(
        [conf]="daemon/policy/conf.c"
        [boot-record]="daemon/record/boot-collect.c"
        [db]="daemon/store/db.c daemon/store/db-session.c daemon/store/db-profile.c daemon/store/db-run.c daemon/profile/profile.c daemon/profile/rank.c"
        [fanotify]="daemon/record/fid-event.c daemon/record/session.c daemon/record/pidmap.c"
        [bus]="daemon/manager/manager-bus.c common/escape.c"
)
if [ ! -d "$B" ]; then
        CC=clang meson setup "$B" -Dman=disabled -Dc_args="-fprofile-instr-generate -fcoverage-mapping -Wno-format-nonliteral" \
                -Dc_link_args="-fprofile-instr-generate" >/dev/null
fi
ninja -C "$B" $(for t in "${!FILES[@]}"; do echo "fuzz/fuzz-replay-$t"; done) >/dev/null
P=$(mktemp -d "${TMPDIR:-/tmp}/seekless-fuzz-cov.XXXXXX")
trap 'rm -rf "$P"' EXIT
for t in conf boot-record db fanotify bus; do
        LLVM_PROFILE_FILE="$P/$t-%p.profraw" TMPDIR=$P "$B/fuzz/fuzz-replay-$t" fuzz/corpus/"$t" \
                fuzz/regressions/"$t" "$R/$t" > "$P/$t.out" 2>&1 || { tail "$P/$t.out"; exit 1; }
        llvm-profdata merge -sparse "$P/$t"-*.profraw -o "$P/$t.profdata"
        echo "== fuzz-$t: $(tail -n1 "$P/$t.out")"
        llvm-cov report "$B/fuzz/fuzz-replay-$t" -instr-profile="$P/$t.profdata" |
                awk -v files=" ${FILES[$t]} " '{ f = $1; sub(/^(\.\.\/)+/, "", f) } index(files, " " f " ") {
                        printf "  %-32s lines %7s (%d of %d)  branches %7s\n", f, $10, $8 - $9, $8, $13 }'
done
