#!/bin/bash
# Issue 20's acceptance on a real program: Python starts from a root of its own on the test image (its
# binary, the libraries it links and loads, /etc/ld.so.cache made by ldconfig, the C.UTF-8 locale, the
# gconv cache and the standard library), cold (the filesystem freshly mounted), under `strace -f`. Every
# regular file strace shows the launch reading (read, pread64, readv, preadv with a result > 0) or mapping
# (mmap of a file) must be in the launch profile: files read only through a mapping (ld.so.cache, the
# locale) included. The profile may hold more (the interpreter the kernel maps at exec, pages read ahead).
. "$(dirname "$0")/lib.sh"

command -v strace >/dev/null || { echo "SKIP: no strace"; exit 77; }
PYBIN=$(readlink -f /usr/bin/python3)   # Debian's, whatever else PATH has
[ -x "$PYBIN" ] || { echo "SKIP: no python3"; exit 77; }
PYVER=$("$PYBIN" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
LOCALE_DIR=/usr/lib/locale/C.utf8
[ -d "$LOCALE_DIR" ] || { echo "SKIP: no $LOCALE_DIR"; exit 77; }

setup_image 512M

# ---- the root on the image ----
copy_in() {             # PATH...: each file (and the chain of symbolic links to it) at the same path
        local f t
        for f in "$@"; do
                while :; do
                        mkdir -p "$MNT$(dirname "$f")"
                        cp -a "$f" "$MNT$f"
                        [ -L "$f" ] || break
                        t=$(readlink "$f")
                        case $t in /*) f=$t ;; *) f=$(dirname "$f")/$t ;; esac
                done
        done
}
libs_of() { ldd "$@" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// && $1 !~ /:$/ { print $1 }' | sort -u; }
mkdir -p "$MNT/usr/bin" "$MNT/usr/lib" "$MNT/etc" "$MNT/tmp"
cp "$PYBIN" "$MNT/usr/bin/python3"
cp -a "/usr/lib/python$PYVER" "$MNT/usr/lib/"
rm -rf "$MNT/usr/lib/python$PYVER/test" "$MNT/usr/lib/python$PYVER/site-packages" "$MNT/usr/lib/python$PYVER/dist-packages"
mapfile -t libs < <(libs_of "$PYBIN" "/usr/lib/python$PYVER"/lib-dynload/*.so)
copy_in "${libs[@]}" /lib64/ld-linux-x86-64.so.2
mkdir -p "$MNT/usr/lib/locale" "$MNT/usr/lib/x86_64-linux-gnu/gconv"
cp -a "$LOCALE_DIR" "$MNT/usr/lib/locale/"
cp /usr/lib/x86_64-linux-gnu/gconv/gconv-modules.cache "$MNT/usr/lib/x86_64-linux-gnu/gconv/" 2>/dev/null || true
# the merged /usr of Debian: /lib and /lib64 are links into /usr on the host; on the image the copies above
# sit at the paths ldd printed, and ldconfig builds the image's own cache from them
printf '/lib/x86_64-linux-gnu\n/usr/lib/x86_64-linux-gnu\n' > "$MNT/etc/ld.so.conf"
ldconfig -r "$MNT" || fail "ldconfig -r $MNT"
[ -s "$MNT/etc/ld.so.cache" ] || fail "no ld.so.cache on the image"
chroot "$MNT" /usr/bin/python3 -c 'pass' || fail "python3 does not start in its root on the image"
echo "image: $(du -sh "$MNT" | cut -f1), ${#libs[@]} libraries"

# cold: every page of the image read from the device again
sync
umount "$MNT"
mount -t ext4 "$LOOP" "$MNT"

start_recording --filesystem="$MNT" <<EOC
LaunchWindowSec=10
EOC

PROG=$MNT/usr/bin/python3
env -i LC_ALL=C.UTF-8 PATH=/usr/sbin:/usr/bin:/sbin:/bin strace -f -qq -y -o "$TMP/strace.out" \
        -e trace=read,pread64,readv,preadv,mmap \
        chroot "$MNT" /usr/bin/python3 -c 'import json, email.parser, http.client, sqlite3, decimal; print("hello")' \
        > "$TMP/py.out" || fail "the launch failed: $(cat "$TMP/py.out")"
grep -qx hello "$TMP/py.out" || fail "python did not say hello"
wait_until 60 has_profile "$PROG" || fail "the launch of $PROG was not recorded"

# strace's -y names each fd's file as the tracer sees it (outside the chroot): keep the image's files
sed -n -E 's/^[0-9]+ +(read|pread64|readv|preadv)\([0-9]+<([^>]*)>.* = [1-9][0-9]*$/\2/p;
           s/^[0-9]+ +mmap\([^,]*, [^,]*, [^,]*, [^,]*, [0-9]+<([^>]*)>.*/\1/p' "$TMP/strace.out" |
        grep "^$MNT/" | LC_ALL=C sort -u | while IFS= read -r f; do [ -f "$f" ] && echo "$f"; done > "$TMP/strace.set"
n_strace=$(wc -l < "$TMP/strace.set")
[ "$n_strace" -gt 50 ] || fail "strace saw only $n_strace files read or mapped: the trace parse is broken"
for f in etc/ld.so.cache usr/lib/locale/C.utf8/LC_CTYPE; do
        grep -qx "$MNT/$f" "$TMP/strace.set" || fail "strace did not see /$f read or mapped (the test's premise)"
done

profile_paths "$PROG" | LC_ALL=C sort -u > "$TMP/profile.set"
missing=$(comm -23 "$TMP/strace.set" "$TMP/profile.set")
if [ -n "$missing" ]; then
        echo "files strace saw read or mapped that the profile lacks ($(wc -l <<<"$missing") of $n_strace):"
        sed "s|^$MNT||; s/^/  /" <<<"$missing"
        fail "the launch profile lacks files the launch read or mapped"
fi
pass "all $n_strace files strace saw Python read or map are in its profile ($(wc -l < "$TMP/profile.set") files), ld.so.cache and LC_CTYPE included"
stop_daemon
