#!/usr/bin/env python3
"""Floods a Lyre sender's RTCP port with forged and malformed RTCP, from a port of its own: generic NACKs
(RFC 4585) asking for every sequence number under random SSRCs, truncated and wrong-version packets, and
junk. A sender must answer none of it (streaming.md 4.1: NACKs only from its receiver's RTCP address).

Usage: nack-flood.py HOST PORT [--count N]; prints {"sent": N} as JSON."""
import argparse
import json
import random
import socket
import struct


def nack(ssrc_sender, ssrc_media, first):
    pairs = b"".join(struct.pack("!HH", (first + 17 * i) & 0xFFFF, 0xFFFF) for i in range(64))
    return struct.pack("!BBHII", 0x81, 205, 2 + 64, ssrc_sender, ssrc_media) + pairs


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("host")
    parser.add_argument("port", type=int)
    parser.add_argument("--count", type=int, default=5000)
    args = parser.parse_args()
    rng = random.Random(4585)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sent = 0
    for i in range(args.count):
        kind = i % 4
        if kind == 0:
            data = nack(rng.getrandbits(32), rng.getrandbits(32), rng.getrandbits(16))
        elif kind == 1:
            data = nack(1, 2, 0)[: rng.randrange(1, 20)]  # truncated
        elif kind == 2:
            data = bytes([0x41, 205]) + nack(1, 2, 0)[2:]  # wrong version
        else:
            data = bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 300)))
        sock.sendto(data, (args.host, args.port))
        sent += 1
    print(json.dumps({"sent": sent}))


if __name__ == "__main__":
    main()
