#!/usr/bin/env python3
"""A second RTSP connection to a receiver that is playing someone else's session (issue 11).

Opens its own TCP connection, never announces, and sends every request that would change a session: the
volume, now-playing metadata, artwork, the remote-command list, FLUSH, RECORD, SETUP and TEARDOWN, each
without a Session header and with one (a made-up id, or the id given with --session). Reads the volume
with GET_PARAMETER before and after.

Prints one JSON object: {"requests": [{"request": NAME, "session": bool, "status": N, "error": LYRE_ERROR}],
"volume_before": S, "volume_after": S}.

Usage: rtsp-intruder.py HOST PORT [--session ID]
"""
import argparse
import json
import socket

PNG_1x1 = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082")


class Connection:
    def __init__(self, host, port):
        self.sock = socket.create_connection((host, port), timeout=5)
        self.cseq = 0
        self.pending = b""

    def request(self, method, headers=(), body=b""):
        self.cseq += 1
        head = [f"{method} rtsp://{self.host_uri}/ RTSP/1.0", f"CSeq: {self.cseq}"]
        head += [f"{k}: {v}" for k, v in headers]
        if body:
            head.append(f"Content-Length: {len(body)}")
        self.sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        return self.response()

    def response(self):
        while b"\r\n\r\n" not in self.pending:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("the receiver closed the connection")
            self.pending += chunk
        head, self.pending = self.pending.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        while len(self.pending) < length:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("the receiver closed the connection")
            self.pending += chunk
        body, self.pending = self.pending[:length], self.pending[length:]
        return status, headers, body.decode("latin-1")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("host")
    parser.add_argument("port", type=int)
    parser.add_argument("--session", default="1234567890", help="the Session id to send where one is sent")
    args = parser.parse_args()

    conn = Connection(args.host, args.port)
    conn.host_uri = f"{args.host}:{args.port}"

    def volume():
        status, _, body = conn.request("GET_PARAMETER", [("Content-Type", "text/parameters")], b"volume\r\n")
        return body.strip() if status == 200 else f"status {status}"

    text = ("Content-Type", "text/parameters")
    changes = [
        ("volume", "SET_PARAMETER", [text], b"volume: -30.0\r\n"),
        ("metadata", "SET_PARAMETER", [("Content-Type", "application/json")], b'{"title": "Intruder"}'),
        ("artwork", "SET_PARAMETER", [("Content-Type", "image/png")], PNG_1x1),
        ("remote-commands", "SET_PARAMETER", [text], b"remote-commands: play, pause\r\n"),
        ("flush", "FLUSH", [("RTP-Info", "seq=1;rtptime=0")], b""),
        ("record", "RECORD", [("RTP-Info", "seq=1;rtptime=0")], b""),
        ("setup", "SETUP", [("Transport", "RTP/AVP/UDP;unicast;client_port=50000-50001;mode=record")], b""),
        ("teardown", "TEARDOWN", [], b""),
    ]
    before = volume()
    results = []
    for name, method, headers, body in changes:
        for with_session in (False, True):
            extra = [("Session", args.session)] if with_session else []
            status, response_headers, _ = conn.request(method, headers + extra, body)
            results.append({"request": name, "session": with_session, "status": status,
                            "error": response_headers.get("lyre-error", "")})
    print(json.dumps({"requests": results, "volume_before": before, "volume_after": volume()}))


if __name__ == "__main__":
    main()
