# A tool's --help (or -h) as its first argument: the "# Usage:" block of the tool's own header comment, up to
# the first line that is only "#", and nothing else: nothing is installed, built or started.
# Usage: source Tools/lib/help.sh; lyre_help "$0" "${1:-}"
lyre_help() {
  [[ $2 == -h || $2 == --help ]] || return 0
  sed -n '/^# Usage: /,/^#$/{/^#$/d; /^[^#]/q; s/^# Usage: /usage: /; s/^# \{0,1\}//; p}' "$1"
  exit 0
}
