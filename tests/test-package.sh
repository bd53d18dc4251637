#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The Debian package (debian/): dpkg-buildpackage -us -uc -b on a copy of the tracked sources (build-deb.sh,
# which the VM suite's image build has usually run already for the same sources: then its build is reused),
# lintian on the .changes and the .deb without an error or a warning, the .deb ships the files a working
# install needs with the configuration as a conffile, and its maintainer scripts enable both units, restart
# the daemon after an upgrade, stop it on remove and wipe its state on purge. What installing, upgrading,
# removing and purging it does on a real system is the VM suite's vm-lifecycle (tests/vm).
set -euo pipefail
: "${SOURCE_ROOT:?run through meson test}"
fail() { echo "FAIL: $*" >&2; exit 1; }
for c in dpkg-buildpackage dh lintian git; do
        command -v "$c" >/dev/null || { echo "SKIP: no $c (tools/deps.sh installs it)"; exit 77; }
done
git -C "$SOURCE_ROOT" rev-parse --git-dir >/dev/null 2>&1 || { echo "SKIP: $SOURCE_ROOT is not a git checkout"; exit 77; }
. "$SOURCE_ROOT/tests/scratch.sh"
TMP=$(mktemp -d "$(scratch_root)/seekless-package.XXXXXX")
scratch_claim "$TMP"
scratch_guard "$TMP"
trap 'rm -rf "$TMP"' EXIT
t0=$SECONDS

# the build cache the VM suite's image build fills (tests/vm/build-image.sh), else one of our own
W=${SEEKLESS_VM_WORK_DIR:-/var/tmp/seekless-vm}
cache=$W/deb
{ mkdir -p "$cache" && [ -w "$cache" ]; } 2>/dev/null || cache=$TMP/deb-cache
"$SOURCE_ROOT/tools/build-deb.sh" "$SOURCE_ROOT" "$cache" "$TMP" || fail "dpkg-buildpackage -us -uc -b"
version=$(dpkg-parsechangelog -l "$SOURCE_ROOT/debian/changelog" -S Version)
arch=$(dpkg --print-architecture)
deb=$TMP/seekless_${version}_$arch.deb
changes=$TMP/seekless_${version}_$arch.changes
[ -f "$deb" ] && [ -f "$changes" ] || fail "no $(basename "$deb") or $(basename "$changes"): $(ls "$TMP")"
echo "ok: dpkg-buildpackage -us -uc -b made $(basename "$deb") and $(basename "$changes") ($((SECONDS - t0)) s)"

# lintian refuses to be root only in its advice; its tags are what counts
lintian --fail-on error,warning "$changes" "$deb" 2>&1 | grep -v '^running with root privileges' | tee "$TMP/lintian.log" ||
        true
[ "${PIPESTATUS[0]}" = 0 ] && ! grep -q '^[EW]: ' "$TMP/lintian.log" || fail "lintian reports errors or warnings"
echo "ok: lintian: no error, no warning"

dpkg-deb -c "$deb" | awk '{ print $6 }' | sed 's|^\./|/|' > "$TMP/files"
for f in /usr/sbin/seeklessd /usr/bin/seeklessctl /usr/lib/systemd/system-generators/seekless-boot-collector \
         /lib/systemd/system/seeklessd.service /lib/systemd/system/seekless-early.service \
         /usr/share/dbus-1/system.d/org.seekless.Seekless1.conf \
         /usr/share/dbus-1/system-services/org.seekless.Seekless1.service \
         /usr/share/dbus-1/interfaces/org.seekless.Seekless1.xml \
         /etc/seekless/seekless.conf \
         /usr/share/man/man8/seeklessd.8.gz /usr/share/man/man1/seeklessctl.1.gz \
         /usr/share/man/man5/seekless.conf.5.gz /usr/share/man/man8/seekless-boot-collector.8.gz \
         /usr/share/bash-completion/completions/seeklessctl /usr/share/zsh/vendor-completions/_seeklessctl \
         /usr/share/fish/vendor_completions.d/seeklessctl.fish \
         /usr/share/doc/seekless/copyright /usr/libexec/seekless/seekless-initramfs \
         /usr/share/initramfs-tools/hooks/seekless /usr/share/initramfs-tools/scripts/init-bottom/seekless \
         /usr/share/man/man8/seekless-initramfs.8.gz; do
        grep -qx -- "$f" "$TMP/files" || fail "the package lacks $f"
done
! grep -q '^/usr/local/\|^/var/\|^/run/' "$TMP/files" || fail "the package ships files under /usr/local, /var or /run"
echo "ok: the .deb ships the daemon, CLI, generator, initramfs stage and hook, both units, D-Bus files, man pages, completions"

dpkg-deb -e "$deb" "$TMP/control"
grep -qx /etc/seekless/seekless.conf "$TMP/control/conffiles" || fail "seekless.conf is not a conffile"
depends=$(dpkg-deb -f "$deb" Depends)
for lib in libc6 libsystemd0 libsqlite3-0 libext2fs2; do
        [[ $depends == *"$lib "* ]] || fail "Depends: $depends lacks $lib"
done
[ "$(dpkg-deb -f "$deb" Architecture)" = "$arch" ] || fail "Architecture"
cmp -s "$SOURCE_ROOT/conf/seekless.conf" <(dpkg-deb --fsys-tarfile "$deb" | tar -xO ./etc/seekless/seekless.conf) ||
        fail "the shipped seekless.conf differs from conf/seekless.conf"
for u in seeklessd.service seekless-early.service; do
        grep -q "deb-systemd-helper enable '$u'" "$TMP/control/postinst" || fail "postinst does not enable $u"
done
# seeklessd: started on install, restarted once the new files are unpacked (postinst, not prerm) on upgrade
grep -q "_dh_action=restart" "$TMP/control/postinst" && grep -q "deb-systemd-invoke \$_dh_action 'seeklessd.service'" \
        "$TMP/control/postinst" || fail "postinst does not (re)start seeklessd.service"
! grep -q "seekless-early.service.*start\|invoke.*seekless-early" "$TMP/control/postinst" ||
        fail "postinst starts the early-boot pass"
grep -q "\"\$1\" = remove .*deb-systemd-invoke stop 'seeklessd.service'\|deb-systemd-invoke stop 'seeklessd.service'" \
        "$TMP/control/prerm" || fail "prerm does not stop seeklessd on remove"
echo "ok: conffile, Depends ($depends), postinst enables both units and (re)starts seeklessd, prerm stops it"

# the initramfs is rebuilt when the package (and so its hook) comes or goes: the trigger
grep -qx "activate-noawait update-initramfs" "$TMP/control/triggers" 2>/dev/null ||
        fail "no update-initramfs trigger: $(cat "$TMP/control/triggers" 2>/dev/null)"
# the hook and the script: valid sh, their prereqs answered, the stage's path the one the package ships
dpkg-deb -x "$deb" "$TMP/root"
for f in hooks/seekless scripts/init-bottom/seekless; do
        p=$TMP/root/usr/share/initramfs-tools/$f
        [ -x "$p" ] && sh -n "$p" || fail "$f: not an executable sh script"
        [ -z "$(sh "$p" prereqs)" ] || fail "$f prereqs: $(sh "$p" prereqs)"
        grep -q "/usr/libexec/seekless/seekless-initramfs" "$p" || fail "$f does not name the shipped stage"
done
# what copy_exec takes into the image with it: libc, SQLite, libext2fs (and its libcom_err) only
needed=$(readelf -d "$TMP/root/usr/libexec/seekless/seekless-initramfs" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | xargs)
for lib in $needed; do
        case $lib in libc.so.*|libsqlite3.so.*|libext2fs.so.*|libcom_err.so.*) ;; *) fail "the stage needs $lib" ;; esac
done
echo "ok: the update-initramfs trigger; the hook and init-bottom script; the stage needs $needed"

echo "ok: $((SECONDS - t0)) s"
