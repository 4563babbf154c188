// libopus (Debian libopus-dev). pkg-config adds -I/usr/include/opus.
#include <opus.h>
