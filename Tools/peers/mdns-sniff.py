#!/usr/bin/env python3
"""Listens to mDNS on 224.0.0.251:5353 over the loopback interface and prints, as they arrive, the records
about one service instance: one JSON line per packet, {"t" (seconds, monotonic), "records": [{"name", "type",
"ttl", "txt"}]}, where `txt` is the TXT strings (for TXT records). The packets are read by python-zeroconf's
own parser, so nothing here decodes DNS. Run inside the Tools/netns test network.

Usage: mdns-sniff.py INSTANCE SECONDS      (INSTANCE like `Hall._lyre._tcp.local.`)
"""
import json
import socket
import struct
import sys
import time

from zeroconf import DNSIncoming, DNSText

instance = sys.argv[1].lower()
deadline = time.monotonic() + float(sys.argv[2])

sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
if hasattr(socket, "SO_REUSEPORT"):
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
sock.bind(("", 5353))
sock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, struct.pack("4s4s", socket.inet_aton("224.0.0.251"), socket.inet_aton("127.0.0.1")))
print(json.dumps({"listening": True}), flush=True)

while (left := deadline - time.monotonic()) > 0:
    sock.settimeout(left)
    try:
        data, _ = sock.recvfrom(9000)
    except socket.timeout:
        break
    arrived = time.monotonic()
    message = DNSIncoming(data)
    if not message.valid or not message.is_response():
        continue
    records = []
    for record in message.answers():
        if instance not in (record.name.lower(), getattr(record, "alias", "").lower()):
            continue
        entry = {"name": record.name, "type": record.type, "ttl": record.ttl}
        if isinstance(record, DNSText):
            text, strings, i = record.text, [], 0
            while i < len(text):
                strings.append(text[i + 1:i + 1 + text[i]].decode("utf-8", "replace"))
                i += 1 + text[i]
            entry["txt"] = strings
        records.append(entry)
    if records:
        print(json.dumps({"t": round(arrived, 4), "records": records}), flush=True)
