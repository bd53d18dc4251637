# SPDX-License-Identifier: GPL-2.0-or-later
# bash completion for seeklessctl(1): verbs, options, profile names (root only) and ext4 mount points.

__seeklessctl_profiles() {
        # Needs root (file paths are private) and a running daemon: seeklessctl never starts it (no bus
        # activation), and a busy daemon costs the completion at most 2 s.
        [ "${EUID:-$(id -u)}" -eq 0 ] || { echo boot; return; }
        timeout 2 "${1:-seeklessctl}" --no-legend profiles 2>/dev/null | awk '{ print $1 }'
}

_seeklessctl() {
        local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
        local verbs='status profiles show sessions forget plan optimize cancel report prefetch'
        local opts='-h --help --version --json= --no-legend -a --all --dry-run --no-block --when-idle --svg='
        local verb='' i w
        for ((i = 1; i < COMP_CWORD; i++)); do
                w=${COMP_WORDS[i]}
                case $w in
                        -*) ;;
                        *) if [[ " $verbs " == *" $w "* ]]; then verb=$w; break; fi ;;
                esac
        done

        # --json=X and --svg=FILE: bash splits at '=' when it is in COMP_WORDBREAKS (the default)
        if [ "$prev" = = ] && [ "$COMP_CWORD" -ge 2 ]; then
                prev=${COMP_WORDS[COMP_CWORD-2]}
        elif [ "$cur" = = ]; then
                cur=''
        fi
        case $prev in
                --json) COMPREPLY=($(compgen -W 'pretty short off' -- "$cur")); return 0 ;;
                --svg) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$cur")); return 0 ;;
        esac
        case $cur in
                --json=*) COMPREPLY=($(compgen -W 'pretty short off' -- "${cur#--json=}")); return 0 ;;
                --svg=*) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "${cur#--svg=}")); return 0 ;;
                -*)
                        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
                        [[ ${COMPREPLY[*]} == *= ]] && compopt -o nospace 2>/dev/null
                        return 0 ;;
        esac

        case $verb in
                '') COMPREPLY=($(compgen -W "$verbs" -- "$cur")) ;;
                show|forget|report|prefetch) COMPREPLY=($(compgen -W "$(__seeklessctl_profiles "${COMP_WORDS[0]}")" -- "$cur")) ;;
                plan|optimize) COMPREPLY=($(compgen -W "$(findmnt -rn -t ext4 -o TARGET 2>/dev/null)" -- "$cur")) ;;
        esac
        return 0
}
complete -F _seeklessctl seeklessctl
