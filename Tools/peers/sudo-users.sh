#!/usr/bin/env bash
# The Quick start's "or through sudo", checked as a user who is not root: in a mount namespace of its own
# (nothing of this machine's users or sudo rights changes), two users are added for the run, "lyre-sudoer"
# (sudo rights without a password, as after one was typed) and "lyre-plain" (none), and each runs the scripts'
# privileged steps from a copy of Tools/netns and Tools/lib (deps.sh, and help.sh, which netns reads) (a checkout's own directory may be closed
# to other users). Prints one "CHECK: status N: OUTPUT" line per check for the test to read. Run as root, inside Tools/netns.
set -euo pipefail
[[ $(id -u) -eq 0 ]] || { echo "sudo-users.sh: run as root" >&2; exit 64; }
command -v sudo >/dev/null || { echo "sudo-users.sh: sudo is missing; run Tools/test, which installs it" >&2; exit 69; }
here=$(cd "$(dirname "$0")/.." && pwd)
exec unshare --mount --propagation private bash -s "$here" <<'INSIDE'
set -euo pipefail
here=$1
work=$(mktemp -d /tmp/lyre-sudo.XXXXXX)
# /tmp is the machine's own: the copies go with the run (the mounts of them end with this namespace).
trap 'rm -rf "$work" || true' EXIT
chmod 755 "$work"
for f in passwd group shadow; do cp "/etc/$f" "$work/$f"; done
echo "lyre-sudoer:x:64711:64711::$work/sudoer:/bin/bash" >> "$work/passwd"
echo "lyre-plain:x:64712:64712::$work/plain:/bin/bash" >> "$work/passwd"
printf 'lyre-sudoer:x:64711:\nlyre-plain:x:64712:\n' >> "$work/group"
printf 'lyre-sudoer:*:20000:0:99999:7:::\nlyre-plain:*:20000:0:99999:7:::\n' >> "$work/shadow"
for f in passwd group shadow; do mount --bind "$work/$f" "/etc/$f"; done
mount -t tmpfs -o mode=755 lyre-sudoers /etc/sudoers.d
echo 'lyre-sudoer ALL=(ALL:ALL) NOPASSWD: ALL' > /etc/sudoers.d/lyre-test
chmod 440 /etc/sudoers.d/lyre-test
mkdir -p "$work/tools/lib" "$work/sudoer" "$work/plain"
cp "$here/netns" "$here/avahi-ctl" "$work/tools/"
cp "$here/lib/deps.sh" "$here/lib/help.sh" "$work/tools/lib/"
chown lyre-sudoer: "$work/sudoer"; chown lyre-plain: "$work/plain"
chmod -R a+rX "$work/tools"

as() { local user=$1; shift; runuser -u "$user" -- env -i PATH="$PATH" HOME="$work/${user#lyre-}" "$@" </dev/null; }

# Each check prints its output on one line, with its exit status.
check() {
  local label=$1 out status; shift
  out=$("$@" 2>&1) && status=0 || status=$?
  echo "$label: status $status: ${out//$'\n'/ | }"
}
root_id='source '"$work"'/tools/lib/deps.sh; as_root id -u'
# Tools/netns through sudo: root inside, and a network with loopback only.
check "NETNS sudoer" as lyre-sudoer "$work/tools/netns" --no-avahi -- sh -c 'echo "uid=$(id -u) links=$(ip -o link | wc -l)"'
check "NETNS plain" as lyre-plain "$work/tools/netns" --no-avahi -- true
# deps.sh's as_root, which installs what is missing: through sudo for the user with rights; without them,
# sudo asks for a password it cannot read, and the step fails (no hang); without sudo, one line says why.
check "AS_ROOT sudoer" as lyre-sudoer bash -c "$root_id"
check "AS_ROOT plain" as lyre-plain bash -c "$root_id"
mkdir "$work/bin"; ln -s "$(command -v id)" "$work/bin/id"
check "AS_ROOT nosudo" as lyre-plain "$(command -v bash)" -c "PATH=$work/bin; $root_id"
INSIDE
