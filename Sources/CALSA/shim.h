// libasound (Debian libasound2-dev).
#include <alsa/asoundlib.h>
