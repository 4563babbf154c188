// libsrtp2 (Debian libsrtp2-dev), for the tests only: LyreSRTP (swift-crypto) is checked against it packet by
// packet, both ways (Tests/LyrePairingTests/SRTPTests.swift). Lyre itself does not link it.
#include <srtp2/srtp.h>
