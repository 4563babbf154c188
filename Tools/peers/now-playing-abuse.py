#!/usr/bin/env python3
"""Sends bad now-playing input to a Lyre receiver inside a live session, and checks each is refused while
the session's audio keeps flowing (Protocol/now-playing.md).

A plain RTSP session (ANNOUNCE L16, SETUP over UDP, RECORD) streams a tone in a thread. Then, on the
same connection:
  artwork_over_cap     1.5 MiB of PNG                               -> 413
  artwork_not_image    bytes that are no JPEG/PNG                   -> 415
  invalid_utf8         JSON with an invalid UTF-8 title              -> 400
  huge_body            10 MB application/json                        -> 413, connection stays usable
  not_json             text that is not JSON                          -> 400
  missing_rate         JSON without the required keys                -> 400
  unknown_command      remote-commands: play,frobnicate              -> 451
  command_to_receiver  remote-command: nextTrack (only receivers send it) -> 403
  good                 a valid now-playing body                      -> 200
Prints one JSON object: each case's status, and whether the connection and stream survived.

Usage: now-playing-abuse.py HOST PORT [--seconds S]
"""
import argparse
import json
import math
import socket
import struct
import sys
import threading
import time


class RTSP:
    def __init__(self, host, port):
        self.sock = socket.create_connection((host, port), timeout=10)
        self.host, self.port, self.cseq, self.buf = host, port, 0, b""

    def request(self, method, headers=(), body=b""):
        self.cseq += 1
        lines = [f"{method} rtsp://{self.host}:{self.port}/ RTSP/1.0", f"CSeq: {self.cseq}"]
        lines += [f"{k}: {v}" for k, v in headers]
        if body:
            lines.append(f"Content-Length: {len(body)}")
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        return self.response()

    def response(self):
        while b"\r\n\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self.buf += chunk
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode(errors="replace").split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:] if ":" in l)}
        length = int(headers.get("content-length", "0"))
        while len(self.buf) < length:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self.buf += chunk
        self.buf = self.buf[length:]
        return int(lines[0].split()[1]), headers


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("host")
    ap.add_argument("port", type=int)
    ap.add_argument("--seconds", type=float, default=4.0)
    a = ap.parse_args()

    c = RTSP(a.host, a.port)
    sdp = ("v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=abuse\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n"
           "m=audio 0 RTP/AVP 96\r\na=rtpmap:96 L16/48000/2\r\n").encode()
    status, _ = c.request("ANNOUNCE", [("Content-Type", "application/sdp"), ("Lyre-Sender-Name", "abuser")], sdp)
    assert status == 200, f"ANNOUNCE {status}"
    media = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    media.bind((a.host, 0))
    lport = media.getsockname()[1]
    status, h = c.request("SETUP", [("Transport", f"RTP/AVP/UDP;unicast;client_port={lport}-{lport + 1}")])
    assert status == 200, f"SETUP {status}"
    session = h["session"].split(";")[0]
    server_port = int(h["transport"].split("server_port=")[1].split("-")[0])
    status, _ = c.request("RECORD", [("Session", session), ("RTP-Info", "seq=1;rtptime=0")])
    assert status == 200, f"RECORD {status}"

    stop = threading.Event()
    sent = [0]

    def stream():
        seq, ts, start = 1, 0, time.monotonic()
        while not stop.is_set():
            frames = 240
            samples = b"".join(struct.pack(">hh", int(8000 * math.sin(2 * math.pi * 440 * (ts + i) / 48000)),
                                           int(8000 * math.sin(2 * math.pi * 440 * (ts + i) / 48000))) for i in range(frames))
            packet = struct.pack(">BBHII", 0x80, 96, seq & 0xFFFF, ts & 0xFFFFFFFF, 0x1234) + samples
            media.sendto(packet, (a.host, server_port))
            sent[0] += 1
            seq, ts = seq + 1, ts + frames
            delay = start + ts / 48000 - time.monotonic()
            if delay > 0:
                time.sleep(delay)

    t = threading.Thread(target=stream, daemon=True)
    t.start()
    time.sleep(0.5)

    def stats():
        s, _ = c.request("GET_PARAMETER", [("Session", session), ("Content-Type", "text/parameters")], b"stats\r\n")
        return s

    s = [("Session", session)]
    png = b"\x89PNG\r\n\x1a\n"
    results = {}
    cases = [
        ("artwork_over_cap", s + [("Content-Type", "image/png")], png + b"\0" * (1536 * 1024)),
        ("artwork_not_image", s + [("Content-Type", "image/jpeg")], b"GIF89a" + b"\0" * 100),
        ("invalid_utf8", s + [("Content-Type", "application/json")], b'{"title":"\xff\xfe bad","elapsed":0,"rate":1,"anchor":1}'),
        ("huge_body", s + [("Content-Type", "application/json")], b"{" + b" " * (10 * 1000 * 1000) + b"}"),
        ("not_json", s + [("Content-Type", "application/json")], b"title: not json"),
        ("missing_rate", s + [("Content-Type", "application/json")], b'{"title":"x"}'),
        ("unknown_command", s + [("Content-Type", "text/parameters")], b"remote-commands: play,frobnicate\r\n"),
        ("command_to_receiver", s + [("Content-Type", "text/parameters")], b"remote-command: nextTrack\r\n"),
        ("good", s + [("Content-Type", "application/json")],
         json.dumps({"title": "Still here", "elapsed": 1.5, "rate": 1, "anchor": time.monotonic_ns()}).encode()),
    ]
    alive = True
    for name, headers, body in cases:
        try:
            status, h = c.request("SET_PARAMETER", headers, body)
            results[name] = {"status": status, "reason": h.get("lyre-error", "")}
        except (OSError, ConnectionError) as e:
            results[name] = {"status": None, "reason": str(e)}
            alive = False
            break
    try:
        alive = alive and stats() == 200
    except (OSError, ConnectionError):
        alive = False
    before = sent[0]
    time.sleep(max(0.0, a.seconds - 0.5))
    stop.set()
    t.join()
    print(json.dumps({"results": results, "connection_alive": alive, "packets_sent": sent[0],
                      "packets_after_abuse": sent[0] - before, "session": session}))
    try:
        c.request("TEARDOWN", [("Session", session)])
    except (OSError, ConnectionError):
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
