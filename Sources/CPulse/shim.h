// libpulse (Debian libpulse-dev): PulseAudio's client library, also served by PipeWire's pipewire-pulse.
#include <pulse/pulseaudio.h>
#include <pulse/simple.h>
#include <pulse/error.h>
