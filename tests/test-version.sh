#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# One version: the top entry of debian/changelog is meson's project version (a native package, so no
# Debian revision). Raise both together.
set -euo pipefail
: "${SOURCE_ROOT:?run through meson test}" "${PROJECT_VERSION:?}"
command -v dpkg-parsechangelog >/dev/null || { echo "SKIP: no dpkg-parsechangelog (dpkg-dev)"; exit 77; }
deb=$(dpkg-parsechangelog -l "$SOURCE_ROOT/debian/changelog" -S Version)
[ "$deb" = "$PROJECT_VERSION" ] ||
        { echo "FAIL: debian/changelog is at $deb, meson.build's project() at $PROJECT_VERSION" >&2; exit 1; }
echo "ok: debian/changelog and meson.build both at $deb"
