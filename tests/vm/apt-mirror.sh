#!/bin/bash
# Print the Debian mirror URI the host's apt already uses (for debootstrap): the first URIs:/deb entry that
# serves the plain release suite (e.g. "bookworm", not bookworm-security). Read at run time, never hard-coded.
#   usage: apt-mirror.sh [SUITE]      (default: bookworm)
set -euo pipefail
suite=${1:-bookworm}
m=
shopt -s nullglob
srcs=(/etc/apt/sources.list.d/*.sources)
if [ ${#srcs[@]} -gt 0 ]; then
        # deb822: stanzas separated by blank lines; take URIs: of a "Types: deb" stanza listing $suite.
        m=$(awk -v s="$suite" '
                function flush() { if (deb && has && uri != "" && out == "") out = uri; deb = has = 0; uri = "" }
                FNR == 1 { flush() }
                /^[ \t]*$/ { flush(); next }
                /^Types:/ { for (i = 2; i <= NF; i++) if ($i == "deb") deb = 1 }
                /^URIs:/ { uri = $2 }
                /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == s) has = 1 }
                END { flush(); print out }' "${srcs[@]}")
fi
if [ -z "$m" ]; then
        # one-line format: deb [options] URI SUITE COMPONENTS...
        m=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
                sed -E 's/\[[^]]*\]//' | awk -v s="$suite" '$1 == "deb" && $3 == s { print $2; exit }')
fi
[ -n "$m" ] || { echo "apt-mirror.sh: no 'deb' source for suite $suite in /etc/apt" >&2; exit 1; }
echo "${m%/}"
