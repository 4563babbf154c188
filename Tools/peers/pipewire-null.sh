#!/usr/bin/env bash
# PipeWire for tests, inside Tools/netns: pipewire with its own output, a null sink named "local" (or $1),
# and, started by pipewire itself once it listens, its session manager wireplumber (which links streams to
# sinks: without it nothing plays) and pipewire-pulse, on the test network's session bus. PulseAudio
# clients reach it with PULSE_SERVER=unix:/run/lyre-pw/pulse/native and PULSE_CLIENTCONFIG=/run/lyre-pw/client.conf
# (no autospawn). Runs in the foreground until killed; what pipewire started ends with it.
set -euo pipefail
[[ ${LYRE_NETNS:-} == 1 ]] || { echo "pipewire-null.sh: run inside Tools/netns" >&2; exit 64; }
for tool in pipewire wireplumber pipewire-pulse; do
  command -v "$tool" >/dev/null || { echo "pipewire-null.sh: $tool is missing; run Tools/test, which installs it" >&2; exit 69; }
done
[[ -n ${DBUS_SESSION_BUS_ADDRESS:-} ]] || { echo "pipewire-null.sh: no session bus (wireplumber needs one)" >&2; exit 64; }
# wireplumber watches logind's directories (its bluez monitor follows the seat) and leaves at once when it
# cannot: the test network's /run is its own, so they are made here, empty (no seat: no bluez).
mkdir -p /run/systemd/seats /run/systemd/sessions /run/systemd/users /run/systemd/machines
mkdir -p -m 700 /run/lyre-pw /run/lyre-pw/home /run/lyre-pw/config/pipewire/pipewire.conf.d
export HOME=/run/lyre-pw/home XDG_RUNTIME_DIR=/run/lyre-pw XDG_CONFIG_HOME=/run/lyre-pw/config
printf 'autospawn = no\n' > /run/lyre-pw/client.conf
cat > /run/lyre-pw/config/pipewire/pipewire.conf.d/lyre-test.conf <<CONF
context.objects = [
  { factory = adapter
    args = { factory.name = support.null-audio-sink node.name = "${1:-local}" node.description = "Local output"
             media.class = Audio/Sink audio.position = [ FL FR ] priority.session = 2000 } }
]
context.exec = [
  { path = "$(command -v wireplumber)" }
  { path = "$(command -v pipewire-pulse)" }
]
CONF
exec pipewire
