#!/usr/bin/env python3
"""Reads the RTP (or SRTP) a capture holds, and plays an attacker on the same network with it.

Usage: srtp-inject.py PCAP --payloads [--wait N] [--timeout S]
       srtp-inject.py PCAP --replay N --alter N [--wait N] [--timeout S]

The capture is what tcpdump writes (-w, -U: packet by packet), read while it grows. Its Ethernet link type is
what tcpdump gives on lo. The stream is the UDP datagrams that look like RTP with payload type 96 and are
longer than 40 bytes. Its port is the destination port most of them go to.

--wait N waits (at most --timeout seconds) until the capture holds N such datagrams.

--payloads prints {"port": P, "packets": K, "payloads": [HEX, ...], "fec": F, "fec_clear": C, "rtcp": R}, each payload
being what follows the 12-byte header; F counts the FEC packets to that port (payload type 97, one CSRC), and C
those whose first FEC header byte is 0, as every one of Lyre's is in the clear (R, F, P, X and CC recovery all 0:
streaming.md §4.3). Encrypted, about one in 256 is. R maps each port that (S)RTCP went to to the SSRCs it came
under (their header stays clear).

--replay N sends the first N captured datagrams again, unchanged, to 127.0.0.1:P. A receiver that checks must
drop them as replayed. --alter N sends N captured datagrams with their sequence number moved 2000 ahead and one
payload byte flipped. A receiver that checks must drop them as failing authentication. It prints
{"port": P, "replayed": N, "altered": N}.
"""
import argparse, collections, json, socket, struct, sys, time


def read_pcap(path):
    """UDP datagrams in an Ethernet/IPv4 capture: (source port, destination port, payload)."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24:
        return []
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        endian = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        endian = ">"
    else:
        sys.exit(f"srtp-inject: {path} is not a pcap file")
    linktype = struct.unpack(endian + "I", data[20:24])[0]
    if linktype != 1:
        sys.exit(f"srtp-inject: link type {linktype}; capture on lo with tcpdump (Ethernet)")
    out, at = [], 24
    while at + 16 <= len(data):
        _, _, incl, _ = struct.unpack(endian + "IIII", data[at:at + 16])
        frame = data[at + 16:at + 16 + incl]
        at += 16 + incl
        if len(frame) < incl or len(frame) < 14 + 20 + 8 or frame[12:14] != b"\x08\x00":
            continue
        ip = frame[14:]
        ihl = (ip[0] & 0x0F) * 4
        if ip[9] != 17 or len(ip) < ihl + 8:
            continue
        sport, dport, length = struct.unpack("!HHH", ip[ihl:ihl + 6])
        out.append((sport, dport, ip[ihl + 8:ihl + length]))
    return out


def stream(path):
    rtp = [(d, p) for _, d, p in read_pcap(path) if len(p) > 40 and p[0] & 0xC0 == 0x80 and p[1] & 0x7F == 96]
    if not rtp:
        return None, []
    port = collections.Counter(d for d, _ in rtp).most_common(1)[0][0]
    return port, [p for d, p in rtp if d == port]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pcap")
    ap.add_argument("--payloads", action="store_true")
    ap.add_argument("--replay", type=int, default=0)
    ap.add_argument("--alter", type=int, default=0)
    ap.add_argument("--wait", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=10)
    a = ap.parse_args()
    deadline = time.monotonic() + a.timeout
    while True:
        port, packets = stream(a.pcap)
        if len(packets) >= max(a.wait, a.replay, a.alter):
            break
        if time.monotonic() > deadline:
            sys.exit(f"srtp-inject: {len(packets)} RTP datagrams in {a.pcap} after {a.timeout:g} s; wanted {a.wait}")
        time.sleep(0.05)
    if a.payloads:
        datagrams = read_pcap(a.pcap)
        fec = [p for _, d, p in datagrams if d == port and len(p) > 17 and p[0] == 0x81 and p[1] & 0x7F == 97]
        # (S)RTCP, whose first 8 bytes stay clear: each destination port's sender SSRCs.
        rtcp = collections.defaultdict(set)
        for _, d, p in datagrams:
            if len(p) >= 8 and p[0] & 0xC0 == 0x80 and 200 <= p[1] <= 206:
                rtcp[d].add(p[4:8].hex())
        print(json.dumps({"port": port, "packets": len(packets), "payloads": [p[12:].hex() for p in packets],
                          "fec": len(fec), "fec_clear": sum(1 for p in fec if p[16] == 0),
                          "rtcp": {str(d): sorted(v) for d, v in rtcp.items()}}))
        return
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for p in packets[:a.replay]:
        s.sendto(p, ("127.0.0.1", port))
    latest = max(struct.unpack("!H", p[2:4])[0] for p in packets)
    for i, p in enumerate(packets[:a.alter]):
        forged = bytearray(p)
        forged[2:4] = struct.pack("!H", (latest + 2000 + i) & 0xFFFF)
        forged[20] ^= 0x01
        s.sendto(bytes(forged), ("127.0.0.1", port))
    print(json.dumps({"port": port, "replayed": a.replay, "altered": a.alter}))


if __name__ == "__main__":
    main()
