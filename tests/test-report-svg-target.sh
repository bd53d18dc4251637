#!/bin/bash
# `seeklessctl report NAME --svg=FILE` never replaces what FILE is: a device node, a FIFO and a symbolic link
# stay what they are (written into, like a shell redirection), a regular file or a new path is written whole
# and renamed into place, a regular file's owner and permission bits kept. Device nodes and the stdout link are copies in the test's directory: an old
# seeklessctl replaced /dev/full itself.
. "$(dirname "$0")/lib.sh"

setup_image 256M
start_recording --filesystem="$MNT" </dev/null
setup_aged_profile 3 8 64

D=$TMP/targets
mkdir "$D"
mknod "$D/null" c 1 3
mknod "$D/full" c 1 7
mkfifo "$D/fifo"
ln -s /proc/self/fd/1 "$D/stdout"
echo not-a-picture > "$D/file"
ln -s file "$D/link"
kind() { stat -c %F "$1"; }

ctl report "$P" --svg="$D/null" >/dev/null || fail "report --svg into a copy of /dev/null failed"
[ "$(kind "$D/null")" = "character special file" ] || fail "null became a $(kind "$D/null")"
pass "--svg=<character device>: written into, still a device"

rc=0; ctl report "$P" --svg="$D/full" >/dev/null 2>"$TMP/full.err" || rc=$?
[ "$rc" != 0 ] || fail "report --svg into a copy of /dev/full succeeded"
grep -q "No space left on device" "$TMP/full.err" || fail "no clear error for /dev/full: $(cat "$TMP/full.err")"
[ "$(kind "$D/full")" = "character special file" ] || fail "full became a $(kind "$D/full")"
pass "--svg=<a copy of /dev/full>: '$(head -n 1 "$TMP/full.err")', still a device"

cat "$D/fifo" > "$TMP/from-fifo" &
reader=$!
ctl report "$P" --svg="$D/fifo" >/dev/null || fail "report --svg into a FIFO failed"
wait "$reader"
grep -q "<svg" "$TMP/from-fifo" || fail "nothing came out of the FIFO"
[ "$(kind "$D/fifo")" = fifo ] || fail "the FIFO became a $(kind "$D/fifo")"
pass "--svg=<FIFO>: the reader got the picture, still a FIFO"

ctl report "$P" --svg="$D/stdout" | cat > "$TMP/stdout.out" || fail "report --svg into stdout failed"
grep -q "<svg" "$TMP/stdout.out" || fail "no picture on stdout"
[ "$(kind "$D/stdout")" = "symbolic link" ] || fail "the stdout link became a $(kind "$D/stdout")"
pass "--svg=<link to /proc/self/fd/1, a pipe>: the picture on stdout, the link kept"

ino=$(stat -c %i "$D/file")
ctl report "$P" --svg="$D/link" >/dev/null || fail "report --svg through a symlink failed"
[ "$(kind "$D/link")" = "symbolic link" ] || fail "the link became a $(kind "$D/link")"
grep -q "<svg" "$D/file" && ! grep -q not-a-picture "$D/file" || fail "the link's target was not rewritten"
[ "$(stat -c %i "$D/file")" = "$ino" ] || fail "the link's target was replaced, not written into"
pass "--svg=<symlink to a file>: the link kept, its target written in place"

# a private file of another user's: its owner and mode stay (set-id bits are not carried to a picture)
chown 65534:65534 "$D/file"
chmod 6600 "$D/file"
ctl report "$P" --svg="$D/file" >/dev/null || fail "report --svg over a regular file failed"
[ "$(stat -c %i "$D/file")" != "$ino" ] || fail "a regular file was rewritten in place, not replaced whole"
grep -q "</svg>" "$D/file" || fail "the replaced file is not a whole picture"
[ "$(stat -c '%a %u %g' "$D/file")" = "600 65534 65534" ] ||
        fail "mode 6600, owner 65534:65534 became $(stat -c '%a %u:%g' "$D/file")"
(umask 027; ctl report "$P" --svg="$D/new.svg" >/dev/null) && grep -q "</svg>" "$D/new.svg" || fail "a new file was not written"
[ "$(stat -c '%a %u' "$D/new.svg")" = "640 0" ] || fail "a new file under umask 027: $(stat -c '%a %u' "$D/new.svg")"
# an owner that cannot be kept (root without CAP_CHOWN, as on NFS with root_squash): refused, untouched
echo keep > "$D/theirs"; chown 65534:65534 "$D/theirs"; chmod 600 "$D/theirs"
rc=0; setpriv --bounding-set=-chown -- "$SEEKLESSCTL" report "$P" --svg="$D/theirs" >/dev/null 2>"$TMP/chown.err" || rc=$?
[ "$rc" != 0 ] || fail "replaced a file whose owner it could not keep"
grep -q "owner of the old one" "$TMP/chown.err" || fail "no clear error: $(cat "$TMP/chown.err")"
[ "$(cat "$D/theirs")" = keep ] && [ "$(stat -c '%a %u %g' "$D/theirs")" = "600 65534 65534" ] ||
        fail "the file was touched: $(stat -c '%a %u:%g' "$D/theirs")"
[ -z "$(find "$D" -name '*.??????')" ] || fail "temporary files left: $(ls "$D")"
pass "--svg=<regular file or new path>: replaced whole by rename (owner and mode kept: 600 65534:65534), a new one 0666 less the umask, one whose owner cannot be kept left as it was: '$(head -n 1 "$TMP/chown.err")', no temporary file left"
