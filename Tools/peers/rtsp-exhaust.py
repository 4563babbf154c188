#!/usr/bin/env python3
"""Tries to exhaust a Lyre receiver from one host on the LAN, with nothing it could refuse by content alone
(issue 27, streaming.md §2 limits). Each phase runs while a session plays elsewhere; the caller checks the
audio. Phases, in order:

  interleaved  empty interleaved frames at RATE bytes/s for SECONDS, on a connection that holds no session
               (after an OPTIONS); whenever the receiver closes it, on a new one
  hold         N connections each send a SET_PARAMETER head with Content-Length 2 MiB - 1 and all of the body
               but its last byte, and hold it
  getparam     N connections each send a GET_PARAMETER whose 2 MiB - 1 body is `volume` lines, and never read
  tls          N connections each send the first bytes of a TLS ClientHello, and stall
  unread       one connection sends OPTIONS after OPTIONS and reads none of the answers, until the receiver
               closes it (§2: past 256 KiB waiting for a peer, `slow`) or 400 000 were sent

After each phase a fresh connection's `OPTIONS *` must get 200; its time is recorded. At the end the held
connections the receiver closed are counted (closed = it evicted them, or their deadline passed).

Prints one JSON line: {"interleaved_frames", "reconnects", "held", "closed_by_receiver", "options_ms",
"healthy", "rss_kib", and with unread: "unread_sent", "unread_closed"}. Python 3 standard library only.

Usage: rtsp-exhaust.py HOST PORT [--rate 2000000] [--seconds 5] [--connections 200] [--pid PID]
                       [--phases interleaved,hold,getparam,tls,unread]
"""
import argparse
import json
import socket
import time


def options(host, port, cseq=1, timeout=5.0):
    start = time.monotonic()
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(f"OPTIONS * RTSP/1.0\r\nCSeq: {cseq}\r\n\r\n".encode())
            answer = s.recv(4096)
            ok = answer.startswith(b"RTSP/1.0 200")
    except OSError:
        ok = False
    return ok, (time.monotonic() - start) * 1000


def rss(pid):
    if not pid:
        return None
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("host")
    ap.add_argument("port", type=int)
    ap.add_argument("--rate", type=int, default=2_000_000)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--connections", type=int, default=200)
    ap.add_argument("--pid", type=int)
    ap.add_argument("--phases", default="interleaved,hold,getparam,tls,unread")
    a = ap.parse_args()
    phases = set(a.phases.split(","))
    report = {"options_ms": [], "healthy": True, "rss_kib": [], "interleaved_frames": 0, "reconnects": 0, "held": 0}

    def check():
        ok, ms = options(a.host, a.port)
        report["options_ms"].append(round(ms, 3))
        report["healthy"] = report["healthy"] and ok
        report["rss_kib"].append(rss(a.pid))

    kept = []
    if "interleaved" in phases:
        interleaved(a, report)
        check()
    if "hold" in phases:
        kept += hold(a, report)
        check()
    if "getparam" in phases:
        kept += getparam(a)
        check()
    if "tls" in phases:
        kept += tls(a)
        check()
    if "unread" in phases:
        unread(a, report)
        check()
    closed = 0
    for c in kept:
        c.settimeout(0.01)
        try:
            while True:
                data = c.recv(65536)
                if not data:
                    closed += 1
                    break
        except (ConnectionResetError, BrokenPipeError):
            closed += 1
        except OSError:
            pass
        c.close()
    report["closed_by_receiver"] = closed
    check()
    print(json.dumps(report))


def interleaved(a, report):
    """Empty frames at the rate, in 40 KB writes; a new connection (after OPTIONS) whenever one is closed."""
    chunk = b"$\x00\x00\x00" * 10_000
    sent = 0
    s = None
    start = time.monotonic()
    while time.monotonic() - start < a.seconds:
        if s is None:
            try:
                s = socket.create_connection((a.host, a.port), timeout=5)
                s.sendall(b"OPTIONS * RTSP/1.0\r\nCSeq: 1\r\n\r\n")
                s.recv(4096)
            except OSError:
                s = None
                continue
        try:
            s.sendall(chunk)
            sent += len(chunk) // 4
        except OSError:
            s.close()
            s = None
            report["reconnects"] += 1
        ahead = sent * 4 / a.rate - (time.monotonic() - start)
        if ahead > 0:
            time.sleep(ahead)
    if s is not None:
        s.close()
    report["interleaved_frames"] = sent


def hold(a, report):
    """N connections with 2 MiB - 1 declared and all but the last byte of the body sent."""
    length = 2 * 1024 * 1024 - 1
    body = b"a" * (length - 1)
    held = []
    for _ in range(a.connections):
        try:
            c = socket.create_connection((a.host, a.port), timeout=5)
            c.sendall(f"SET_PARAMETER rtsp://{a.host}/ RTSP/1.0\r\nCSeq: 1\r\nContent-Type: text/parameters\r\n"
                      f"Content-Length: {length}\r\n\r\n".encode() + body)
            held.append(c)
        except OSError:
            pass
    report["held"] = len(held)
    return held


def getparam(a):
    """N / 4 GET_PARAMETERs of 2 MiB - 1 of `volume` lines, never read."""
    length = 2 * 1024 * 1024 - 1
    lines = (b"volume\r\n" * (length // 8 + 1))[:length]
    unread = []
    for _ in range(a.connections // 4):
        try:
            c = socket.create_connection((a.host, a.port), timeout=5)
            c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            c.sendall(f"GET_PARAMETER rtsp://{a.host}/ RTSP/1.0\r\nCSeq: 1\r\nContent-Type: text/parameters\r\n"
                      f"Content-Length: {length}\r\n\r\n".encode() + lines)
            unread.append(c)
        except OSError:
            pass
    return unread


def unread(a, report):
    """OPTIONS in batches of 100 on a connection with a 4 KiB receive buffer, none of the answers read."""
    c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    c.settimeout(5)
    c.connect((a.host, a.port))
    sent, closed = 0, False
    while sent < 400_000 and not closed:
        batch = b"".join(f"OPTIONS * RTSP/1.0\r\nCSeq: {sent + i + 1}\r\n\r\n".encode() for i in range(100))
        try:
            c.sendall(batch)
            sent += 100
        except OSError:  # reset or broken pipe: the receiver closed it
            closed = True
    c.close()
    report["unread_sent"] = sent
    report["unread_closed"] = closed


def tls(a):
    """N connections that start a TLS handshake and stall."""
    stalled = []
    for _ in range(a.connections):
        try:
            c = socket.create_connection((a.host, a.port), timeout=5)
            c.sendall(bytes([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xFC, 0x03, 0x03]))
            stalled.append(c)
        except OSError:
            pass
    return stalled


if __name__ == "__main__":
    main()
