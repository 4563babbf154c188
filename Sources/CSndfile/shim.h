// libsndfile (Debian libsndfile1-dev).
#include <sndfile.h>
