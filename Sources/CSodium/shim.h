// libsodium (Debian libsodium-dev): ristretto255's group operations for CPace (Protocol/pairing.md).
#include <sodium.h>
