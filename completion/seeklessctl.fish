# SPDX-License-Identifier: GPL-2.0-or-later
# fish completion for seeklessctl(1): verbs and options.
set -l verbs status profiles show sessions forget plan optimize cancel report prefetch
complete -c seeklessctl -f
complete -c seeklessctl -n "not __fish_seen_subcommand_from $verbs" -a status -d "Show the daemon's state"
complete -c seeklessctl -n "not __fish_seen_subcommand_from $verbs" -a profiles -d 'List recorded profiles'
complete -c seeklessctl -n "not __fish_seen_subcommand_from $verbs" -a show -d "Show a profile's files in read order"
complete -c seeklessctl -n "not __fish_seen_subcommand_from $verbs" -a sessions -d 'List recorded sessions'
complete -c seeklessctl -n "not __fish_seen_subcommand_from $verbs" -a forget -d 'Delete a profile and its sessions'
complete -c seeklessctl -n "not __fish_seen_subcommand_from $verbs" -a plan -d 'Show what an optimization would move'
complete -c seeklessctl -n "not __fish_seen_subcommand_from $verbs" -a optimize -d "Lay profiles' files out contiguously"
complete -c seeklessctl -n "not __fish_seen_subcommand_from $verbs" -a cancel -d 'Stop the running optimization'
complete -c seeklessctl -n "not __fish_seen_subcommand_from $verbs" -a report -d 'Show the layout quality of profiles'
complete -c seeklessctl -n "not __fish_seen_subcommand_from $verbs" -a prefetch -d "Read a profile's files and metadata into memory"
complete -c seeklessctl -s h -l help -d 'Show help'
complete -c seeklessctl -l version -d 'Show package version'
complete -c seeklessctl -l json -x -a 'pretty short off' -d 'JSON output'
complete -c seeklessctl -l no-legend -d 'No headers and footers'
complete -c seeklessctl -s a -l all -n '__fish_seen_subcommand_from forget' -d 'Delete every profile'
complete -c seeklessctl -l dry-run -n '__fish_seen_subcommand_from optimize' -d 'Only show the plan'
complete -c seeklessctl -l no-block -n '__fish_seen_subcommand_from optimize' -d 'Start it and return at once'
complete -c seeklessctl -l when-idle -n '__fish_seen_subcommand_from optimize' -d 'Queue it until the machine is idle'
complete -c seeklessctl -l svg -r -F -n '__fish_seen_subcommand_from report' -d 'Write the layout picture to FILE'
