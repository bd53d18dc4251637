#!/bin/bash
# Install the project's Debian package (tools/build-deb.sh) into ROOTFS the way a user does, with
# `apt-get install ./seekless_*.deb` run in the chroot, then check that its maintainer scripts enabled every
# unit it ships: each [Install] WantedBy=/RequiredBy=/Alias= link exists. apt has no package lists here
# (prep-rootfs.sh), so it can download nothing: what the package needs must already be in the image
# (mk-rootfs-base.sh's PKGS), as the guest, which has no network, needs it too. No service starts (no
# systemd runs in the chroot; policy-rc.d forbids it anyway).
#   usage: install-guest.sh DEB_DIR ROOTFS
set -euo pipefail
usage="usage: install-guest.sh DEB_DIR ROOTFS"
P=${1:?$usage}
R=$(realpath "${2:?$usage}")
debs=("$P"/seekless_*.deb)
[ ${#debs[@]} = 1 ] && [ -f "${debs[0]}" ] || { echo "install-guest.sh: not one seekless_*.deb in $P" >&2; exit 1; }
deb=${debs[0]}
[ ! -d "$R/run/systemd/system" ] || { echo "install-guest.sh: $R looks like a running systemd" >&2; exit 1; }
cp "$deb" "$R/tmp/"
printf '#!/bin/sh\nexit 101\n' > "$R/usr/sbin/policy-rc.d"
chmod +x "$R/usr/sbin/policy-rc.d"
rc=0
# the package's trigger rebuilds the initramfs (prep-rootfs.sh turned that off for the guests' own apt runs)
sed -i 's/^update_initramfs=.*/update_initramfs=yes/' "$R/etc/initramfs-tools/update-initramfs.conf"
# /proc for update-initramfs, which the package's trigger runs at the end
mount -t proc proc "$R/proc"
# from /tmp (the chroot keeps the caller's working directory, which apt would resolve ./ against); no pty
# for dpkg's log: the chroot has no /dev/pts
chroot "$R" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive sh -c 'cd /tmp &&
        apt-get install -y -q -o Dpkg::Use-Pty=0 "./$1"' sh "$(basename "$deb")" > "$R/tmp/apt.log" 2>&1 || rc=$?
umount "$R/proc"
rm -f "$R/usr/sbin/policy-rc.d" "$R/tmp/$(basename "$deb")"
if [ "$rc" != 0 ]; then
        cat "$R/tmp/apt.log" >&2
        echo "install-guest.sh: apt-get install failed in the chroot; a dependency missing from the image goes" \
                "into PKGS in mk-rootfs-base.sh" >&2
        exit 1
fi
grep -E '^(Inst|Setting up|The following NEW)' "$R/tmp/apt.log" | sed 's/^/  apt: /' || true
rm -f "$R/tmp/apt.log"
chroot "$R" apt-get clean
echo "  installed: $(chroot "$R" dpkg-query -W -f '${Package} ${Version} (${db:Status-Abbrev})' seekless)"

# the package's trigger rebuilt the initramfs with its hook: the stage and its libraries are in it
for initrd in "$R"/boot/initrd.img-*; do
        [ -e "$initrd" ] || continue
        chroot "$R" lsinitramfs "/boot/${initrd##*/}" > "$R/tmp/lsinitramfs" ||
                { echo "install-guest.sh: lsinitramfs ${initrd##*/} failed" >&2; exit 1; }
        for f in usr/libexec/seekless/seekless-initramfs scripts/init-bottom/seekless; do
                grep -qx "$f" "$R/tmp/lsinitramfs" ||
                        { echo "install-guest.sh: ${initrd##*/} lacks $f: the trigger did not rebuild it" >&2; exit 1; }
        done
        echo "  ${initrd##*/}: the stage and its init-bottom script in it ($(grep -c 'libsqlite3\|libext2fs' "$R/tmp/lsinitramfs") of its libraries)"
        rm -f "$R/tmp/lsinitramfs"
done

mapfile -t units < <(dpkg-deb -c "$deb" | awk '{ print $6 }' | sed -n 's|^\./\(usr/\)\{0,1\}lib/systemd/system/\([^/]*\.service\)$|\2|p')
[ ${#units[@]} -gt 0 ] || { echo "install-guest.sh: the package ships no units" >&2; exit 1; }
# install_keys UNITFILE KEY: the space-separated values of KEY= in the [Install] section
install_keys() {
        awk -v k="$2" '/^\[/ { sec = $0; next } sec == "[Install]" && index($0, k "=") == 1 {
                sub(/^[^=]*=/, ""); n = split($0, v, /[ \t]+/); for (i = 1; i <= n; i++) if (v[i] != "") print v[i] }' "$1"
}
E=$R/etc/systemd/system
for u in "${units[@]}"; do
        f=$R/lib/systemd/system/$u
        [ -f "$f" ] || f=$R/usr/lib/systemd/system/$u
        links=()
        for t in $(install_keys "$f" WantedBy); do links+=("$t.wants/$u"); done
        for t in $(install_keys "$f" RequiredBy); do links+=("$t.requires/$u"); done
        for a in $(install_keys "$f" Alias); do links+=("$a"); done
        for l in "${links[@]}"; do
                [ -L "$E/$l" ] || { echo "install-guest.sh: the package's postinst did not enable $u: no /etc/systemd/system/$l" >&2; exit 1; }
                echo "  enabled: /etc/systemd/system/$l -> $(readlink "$E/$l")"
        done
done
