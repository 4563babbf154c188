// libsoxr (Debian libsoxr-dev).
#include <soxr.h>
