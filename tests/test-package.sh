#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The Debian package (debian/): dpkg-buildpackage -us -uc -b on a copy of the tracked sources, lintian on
# the .changes and the .deb without an error or a warning, the .deb ships the files a working install
# needs with the configuration as a conffile, and its maintainer scripts enable both units, restart the
# daemon after an upgrade, stop it on remove and wipe its state on purge.
# Then, when the VM suite's debootstrapped Debian 12 root is at hand (tests/vm, /var/tmp/seekless-vm), the
# package is installed, reinstalled, removed and purged with dpkg in a chroot on an overlay of that root,
# in a mount namespace of its own: nothing is installed on this machine and no service is started (no
# systemd runs in the chroot, and policy-rc.d forbids it anyway).
set -euo pipefail
: "${SOURCE_ROOT:?run through meson test}"
fail() { echo "FAIL: $*" >&2; exit 1; }
for c in dpkg-buildpackage dh lintian git; do
        command -v "$c" >/dev/null || { echo "SKIP: no $c (tests/deps.sh installs it)"; exit 77; }
done
git -C "$SOURCE_ROOT" rev-parse --git-dir >/dev/null 2>&1 || { echo "SKIP: $SOURCE_ROOT is not a git checkout"; exit 77; }
. "$SOURCE_ROOT/tests/scratch.sh"
TMP=$(mktemp -d "$(scratch_root)/seekless-package.XXXXXX")
scratch_claim "$TMP"
scratch_guard "$TMP"
trap 'rm -rf "$TMP"' EXIT
t0=$SECONDS

# The tracked files as they are in the work tree, and new files not ignored yet (a build directory is)
mkdir "$TMP/seekless"
git -C "$SOURCE_ROOT" ls-files -z --cached --others --exclude-standard |
        (cd "$SOURCE_ROOT" && xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh) |
        tar -C "$SOURCE_ROOT" --null -T - -c | tar -C "$TMP/seekless" -x
# the package's own unit tests run in CI already (suite unit): nocheck
(cd "$TMP/seekless" && DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" dpkg-buildpackage -us -uc -b) \
        > "$TMP/build.log" 2>&1 || { tail -n 40 "$TMP/build.log" >&2; fail "dpkg-buildpackage -us -uc -b"; }
version=$(dpkg-parsechangelog -l "$SOURCE_ROOT/debian/changelog" -S Version)
arch=$(dpkg --print-architecture)
deb=$TMP/seekless_${version}_$arch.deb
changes=$TMP/seekless_${version}_$arch.changes
[ -f "$deb" ] && [ -f "$changes" ] || fail "no $(basename "$deb") or $(basename "$changes"): $(ls "$TMP")"
echo "ok: dpkg-buildpackage -us -uc -b built $(basename "$deb") ($((SECONDS - t0)) s)"

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
         /usr/share/doc/seekless/copyright; do
        grep -qx -- "$f" "$TMP/files" || fail "the package lacks $f"
done
! grep -q '^/usr/local/\|^/var/\|^/run/' "$TMP/files" || fail "the package ships files under /usr/local, /var or /run"
echo "ok: the .deb ships the daemon, CLI, generator, both units, D-Bus files, man pages, completions"

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

# install, upgrade (reinstall), remove, purge in a chroot over the VM suite's base root
W=${SEEKLESS_VM_WORK_DIR:-/var/tmp/seekless-vm}
base=$W/rootfs-base
if [ "$(id -u)" != 0 ] || [ ! -e "$base/.done" ] || ! grep -qw overlay /proc/filesystems ||
   ! command -v unshare >/dev/null; then
        echo "skipped: install/remove/purge (needs root, overlayfs and the VM suite's $base)"
        echo "ok: $((SECONDS - t0)) s"
        exit 0
fi
cp "$deb" "$TMP/seekless.deb"
mkdir -p "$TMP/upper" "$TMP/work" "$TMP/root"
cat > "$TMP/lifecycle.sh" <<'SCRIPT'
set -euo pipefail
T=$1 base=$2
mount -t overlay overlay -o "lowerdir=$base,upperdir=$T/upper,workdir=$T/work" "$T/root"
R=$T/root
printf '#!/bin/sh\nexit 101\n' > "$R/usr/sbin/policy-rc.d" && chmod +x "$R/usr/sbin/policy-rc.d"
[ ! -d "$R/run/systemd/system" ] || { echo "the chroot looks like a running systemd" >&2; exit 1; }
cp "$T/seekless.deb" "$R/tmp/"
inroot() { chroot "$R" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive "$@"; }
fail() { echo "FAIL: $*" >&2; exit 1; }
E=$R/etc/systemd/system
links() {
        for l in sysinit.target.wants/seeklessd.service sysinit.target.wants/seekless-early.service \
                 dbus-org.seekless.Seekless1.service; do
                [ "$1" = present ] && { [ -L "$E/$l" ] || fail "$2: no $l"; }
                [ "$1" = absent ] && { [ ! -L "$E/$l" ] || fail "$2: $l left"; }
        done
        return 0
}
inroot dpkg -i /tmp/seekless.deb
[ -x "$R/usr/sbin/seeklessd" ] && [ -f "$R/etc/seekless/seekless.conf" ] || fail "install: files missing"
links present install
echo "ok: installed in the chroot; both units and the bus alias enabled"
inroot dpkg -i /tmp/seekless.deb
links present upgrade
echo "ok: reinstalled (the upgrade path)"
# what the daemon and an admin leave behind
mkdir -p "$R/var/lib/seekless" "$R/etc/seekless/seekless.conf.d" "$R/run/seekless"
echo db > "$R/var/lib/seekless/seekless.db"
printf '[Idle]\nIdleSec=1min\n' > "$R/etc/seekless/seekless.conf.d/50-local.conf"
touch "$R/run/seekless/boot-collector.exclude"
inroot dpkg -r seekless
[ ! -e "$R/usr/sbin/seeklessd" ] || fail "remove: seeklessd left"
[ -f "$R/var/lib/seekless/seekless.db" ] || fail "remove: the database is gone"
[ -f "$R/etc/seekless/seekless.conf" ] || fail "remove: the conffile is gone"
echo "ok: removed; the database and the configuration stay"
inroot dpkg -P seekless
for d in /var/lib/seekless /etc/seekless /run/seekless; do [ ! -e "$R$d" ] || fail "purge: $d left"; done
links absent purge
inroot dpkg-query -W seekless >/dev/null 2>&1 && fail "purge: still known to dpkg"
echo "ok: purged; /var/lib/seekless, /etc/seekless, /run/seekless and the enablement links are gone"
SCRIPT
exec 9>"$W/.lock"
flock -s -w 120 9 || fail "the VM suite holds $W/.lock"
# a mount namespace of its own: the overlay goes with the process, never into the host's mount table
unshare --mount --propagation private bash "$TMP/lifecycle.sh" "$TMP" "$base" > "$TMP/lifecycle.log" 2>&1 ||
        { cat "$TMP/lifecycle.log" >&2; fail "install/remove/purge in the chroot"; }
grep '^ok:' "$TMP/lifecycle.log"
echo "ok: $((SECONDS - t0)) s"
