// libsrtp2 (Debian libsrtp2-dev): SRTP with AEAD_AES_128_GCM for paired sessions' audio (Protocol/pairing.md §6).
#include <srtp2/srtp.h>
