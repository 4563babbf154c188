#!/usr/bin/env bash
# A PulseAudio sound server for tests, inside Tools/netns: one null sink named "lyre", or $1 (its monitor
# source "lyre.monitor" records what it plays), clients without a cookie on unix:/run/lyre-pulse/native.
# Clients use PULSE_SERVER=unix:/run/lyre-pulse/native and PULSE_CLIENTCONFIG=/run/lyre-pulse/client.conf
# (no autospawn: a client that comes too early fails instead of starting a server of its own); ALSA's
# "pulse" PCM and control (libasound2-plugins) reach it the same way. Runs in the foreground until killed.
set -euo pipefail
[[ ${LYRE_NETNS:-} == 1 ]] || { echo "pulse-null.sh: run inside Tools/netns" >&2; exit 64; }
command -v pulseaudio >/dev/null || { echo "pulse-null.sh: pulseaudio is missing; run Tools/test, which installs it" >&2; exit 69; }
mkdir -p -m 700 /run/lyre-pulse/home /run/lyre-pulse/xdg
export HOME=/run/lyre-pulse/home XDG_RUNTIME_DIR=/run/lyre-pulse/xdg
printf 'autospawn = no\n' > /run/lyre-pulse/client.conf
exec pulseaudio -n --daemonize=no --exit-idle-time=-1 --use-pid-file=no --log-target=stderr \
  -L "module-null-sink sink_name=${1:-lyre}" \
  -L "module-native-protocol-unix socket=/run/lyre-pulse/native auth-anonymous=1"
