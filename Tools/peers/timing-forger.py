#!/usr/bin/env python3
"""A third host that tries to move a receiver's clock: it watches lo, and answers every timing request it sees
(streaming.md §5) with a forged reply that claims the sender's clock is SHIFT ms ahead. The reply is sent from
the sender's address and port, through a raw socket, so only a tag the forger cannot make tells it apart.

Usage: timing-forger.py [--shift-ms 50] [--seconds 10] [--mark 76]

- **Where it runs.** As root, inside the test network, where it sees lo's traffic (AF_PACKET).
- **Requests.** A request is a UDP datagram whose payload starts with "LYRT", version 1, kind 1.
- **Forged replies.** Each forged reply carries the request's sequence and t1, as a real reply does. It is 40
  bytes, or 56 when the request carried a 16-byte tag; the forger cannot compute the tag, so it sends random
  bytes in its place.
- **Forged requests.** For each request it also sends the sender one of its own, from the receiver's address
  and port, with the same length: a 56-byte one's tag is random, so a paired sender drops it and counts it
  (pairing.md §6.4, the responder's own count).
- **The mark.** Its packets carry the firewall mark --mark (SO_MARK). A test's nftables rule can then drop the
  real replies and let the forged ones through, so the forger does not have to win a race with the real
  sender.

At the end it prints {"requests": N, "forged": M} (M replies; as many requests).
"""
import argparse, json, os, socket, struct, time

ETH_P_ALL = 0x0003
SO_MARK = 36


def checksum(data):
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    total = (total >> 16) + (total & 0xFFFF)
    total += total >> 16
    return ~total & 0xFFFF


def forge(src_port, dst_port, payload):
    udp = struct.pack("!HHHH", src_port, dst_port, 8 + len(payload), 0) + payload  # UDP checksum 0: none (IPv4)
    header = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0x4000, 64, 17, 0,
                         socket.inet_aton("127.0.0.1"), socket.inet_aton("127.0.0.1"))
    header = header[:10] + struct.pack("!H", checksum(header)) + header[12:]
    return header + udp


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shift-ms", type=float, default=50)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--mark", type=int, default=76)
    a = ap.parse_args()
    sniff = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    sniff.bind(("lo", 0))
    sniff.settimeout(0.2)
    raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    raw.setsockopt(socket.SOL_SOCKET, SO_MARK, a.mark)
    shift = int(a.shift_ms * 1_000_000)
    requests = forged = 0
    mine = set()
    print(json.dumps({"listening": True}), flush=True)
    deadline = time.monotonic() + a.seconds
    while time.monotonic() < deadline:
        try:
            frame, address = sniff.recvfrom(65536)
        except socket.timeout:
            continue
        if address[2] == socket.PACKET_OUTGOING or len(frame) < 14 + 20 + 8 or frame[12:14] != b"\x08\x00":
            continue  # lo shows each packet twice; take the incoming copy
        ip = frame[14:]
        ihl = (ip[0] & 0x0F) * 4
        if ip[9] != 17:
            continue
        sport, dport, length = struct.unpack("!HHH", ip[ihl:ihl + 6])
        payload = ip[ihl + 8:ihl + length]
        if len(payload) not in (40, 56) or payload[:4] != b"LYRT" or payload[4] != 1 or payload[5] != 1:
            continue
        sequence = struct.unpack("!I", payload[8:12])[0]
        if sequence in mine:
            continue  # a request of its own, seen on lo
        requests += 1
        t1 = struct.unpack("!Q", payload[16:24])[0]
        t2 = t1 + shift + 20_000
        reply = b"LYRT" + bytes([1, 2, 0, 0]) + struct.pack("!II", sequence, 0) + struct.pack("!QQQ", t1, t2, t2 + 10_000)
        if len(payload) == 56:
            reply += os.urandom(16)
        raw.sendto(forge(dport, sport, reply), ("127.0.0.1", 0))
        mine.add(sequence + 1_000_000)
        request = payload[:8] + struct.pack("!II", sequence + 1_000_000, 0) + payload[16:40] + os.urandom(len(payload) - 40)
        raw.sendto(forge(sport, dport, request), ("127.0.0.1", 0))
        forged += 1
    print(json.dumps({"requests": requests, "forged": forged}), flush=True)


if __name__ == "__main__":
    main()
