#!/usr/bin/env python3
"""A minimal RTSP receiver that hands a sender's RTP to ffmpeg, to check that what a Lyre sender sends is
standard: ffmpeg decodes it from the SDP the sender announced, and nothing else.

It answers OPTIONS, ANNOUNCE (keeping the SDP), SETUP (server_port = the port ffmpeg listens on), RECORD,
GET/SET_PARAMETER and TEARDOWN. On SETUP it writes the announced SDP with that port on its m= line and
starts `ffmpeg -i SDP OUT.wav`. After TEARDOWN (or the connection closing) it stops ffmpeg with 'q'.
No timing exchange is done, so the sender is played as a plain publisher would be.

Usage: rtsp-sink.py PORT OUT.wav [--media-port 5004]
Prints one JSON line at the end: the SDP it used and ffmpeg's exit status.
"""
import argparse
import json
import re
import socket
import subprocess
import sys
import time


def read_request(conn, buf):
    while b"\r\n\r\n" not in buf:
        chunk = conn.recv(65536)
        if not chunk:
            return None, buf
        buf += chunk
    head, buf = buf.split(b"\r\n\r\n", 1)
    lines = head.decode(errors="replace").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:] if ":" in l)}
    length = int(headers.get("content-length", "0"))
    while len(buf) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return None, buf
        buf += chunk
    body, buf = buf[:length], buf[length:]
    return (lines[0].split(" ")[0], headers, body), buf


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("out")
    ap.add_argument("--media-port", type=int, default=5004)
    a = ap.parse_args()
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", a.port))
    server.listen(1)
    print("listening", flush=True)
    conn, _ = server.accept()
    buf, sdp, ffmpeg, used = b"", "", None, ""
    while True:
        request, buf = read_request(conn, buf)
        if request is None:
            break
        method, headers, body = request
        extra = []
        if method == "ANNOUNCE":
            sdp = body.decode()
        elif method == "SETUP":
            used = re.sub(r"(?m)^m=audio \d+", f"m=audio {a.media_port}", sdp)
            used = re.sub(r"(?m)^c=IN IP4 .*$", "c=IN IP4 127.0.0.1", used)
            path = a.out + ".sdp"
            with open(path, "w") as f:
                f.write(used)
            ffmpeg = subprocess.Popen(["ffmpeg", "-v", "error", "-y", "-protocol_whitelist", "file,udp,rtp", "-c:a", "libopus", "-i", path, a.out],
                                      stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=open(a.out + ".log", "w"))
            time.sleep(1.5)  # ffmpeg reads the SDP and opens its UDP port
            client = re.search(r"client_port=(\d+)", headers.get("transport", ""))
            cp = client.group(1) if client else "0"
            extra = [("Transport", f"RTP/AVP/UDP;unicast;client_port={cp}-{int(cp) + 1};server_port={a.media_port}-{a.media_port + 1}"),
                     ("Session", "1234ABCD")]
        elif method == "OPTIONS":
            extra = [("Public", "OPTIONS, ANNOUNCE, SETUP, RECORD, SET_PARAMETER, GET_PARAMETER, TEARDOWN")]
        lines = ["RTSP/1.0 200 OK", f"CSeq: {headers.get('cseq', '0')}"] + [f"{k}: {v}" for k, v in extra]
        conn.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        if method == "TEARDOWN":
            break
    conn.close()
    status = None
    if ffmpeg:
        time.sleep(0.3)
        try:
            ffmpeg.communicate(b"q", timeout=10)
        except subprocess.TimeoutExpired:
            ffmpeg.kill()
        status = ffmpeg.returncode
    print(json.dumps({"sdp": used, "ffmpeg_status": status}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
