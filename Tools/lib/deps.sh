# Installs what Lyre's scripts need, on a fresh Debian machine. Sourced by Tools/test, Tools/demo, Tools/bench.
# Safe to re-run: it installs only what is missing.

LYRE_BUILD_PACKAGES=(pkg-config libavahi-client-dev libavahi-core-dev libavahi-common-dev libasound2-dev
  libopus-dev libavformat-dev libavcodec-dev libswresample-dev libavutil-dev libsndfile1-dev libsoxr-dev libdbus-1-dev libpulse-dev libsodium-dev libsrtp2-dev)
LYRE_RUNTIME_PACKAGES=(avahi-daemon avahi-utils dbus iproute2 util-linux python3 procps bc alsa-utils)
# Real peers the streaming tests play with.
LYRE_PEER_PACKAGES=(ffmpeg nftables gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-rtsp playerctl pulseaudio pulseaudio-utils pipewire pipewire-pulse wireplumber libasound2-plugins mpv mpv-mpris tcpdump sudo
  curl chromium
  gdb)  # gdb: a test that times out waiting for a process prints that process's threads' stacks
# The benchmark's reference, Snapcast from Debian; perf, for the share of the sender's CPU that is the kernel's delivery into receivers.
# valgrind: the functions each program runs, for the link order (Tools/bench footprint --order FILE --calls).
LYRE_BENCH_PACKAGES=(snapserver snapclient linux-perf valgrind)

as_root() {
  if [[ $(id -u) -eq 0 ]]; then "$@"
  elif command -v sudo >/dev/null; then sudo "$@"
  else echo "lyre: need root or sudo to run: $*" >&2; return 1
  fi
}

# lyre_install_packages PKG... : apt-get installs the missing ones.
lyre_install_packages() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  (( ${#missing[@]} )) || return 0
  echo "lyre: installing ${missing[*]}" >&2
  # A freshly installed avahi-daemon (or snapserver, which announces through it) must not start on the host:
  # it would announce on every real interface. Tests and demos run their own inside Tools/netns instead.
  local guard=0
  if [[ " ${missing[*]} " =~ \ (avahi-daemon|snapserver|snapclient)\  && ! -e /usr/sbin/policy-rc.d ]]; then
    printf '#!/bin/sh\nexit 101\n' | as_root tee /usr/sbin/policy-rc.d >/dev/null
    as_root chmod +x /usr/sbin/policy-rc.d
    guard=1
  fi
  local status=0
  as_root apt-get update -qq >/dev/null || status=$?
  if (( status == 0 )); then
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
      || status=$?
  fi
  if (( guard )); then
    as_root rm -f /usr/sbin/policy-rc.d
    if command -v systemctl >/dev/null && [[ -d /run/systemd/system ]]; then
      as_root systemctl disable --now avahi-daemon.socket avahi-daemon.service snapserver.service snapclient.service \
        >/dev/null 2>&1 || true
    fi
  fi
  (( status == 0 )) || { echo "lyre: apt-get could not install ${missing[*]}" >&2; return 1; }
}

# lyre_install_python_module MODULE [PIP-NAME]
lyre_install_python_module() {
  local module=$1 package=${2:-$1}
  python3 -c "import $module" 2>/dev/null && return 0
  echo "lyre: installing python module $package" >&2
  python3 -m pip --version >/dev/null 2>&1 || lyre_install_packages python3-pip
  python3 -m pip install --quiet "$package" 2>/dev/null \
    || python3 -m pip install --quiet --break-system-packages "$package" \
    || { echo "lyre: pip could not install $package" >&2; return 1; }
}

lyre_require_swift() {
  command -v swift >/dev/null || {
    echo "lyre: the Swift 6 toolchain is not on PATH; install it (swift.org) and run this again" >&2
    return 1
  }
}

lyre_install_deps() {
  lyre_require_swift
  lyre_install_packages "${LYRE_BUILD_PACKAGES[@]}" "${LYRE_RUNTIME_PACKAGES[@]}"
}
