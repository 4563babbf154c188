#!/usr/bin/env python3
"""A WebSocket client of lyred's API (Protocol/control-api.md), built on websocket-client (PyPI), for the tests.

  webclient.py session URL [--send JSON]... [--seconds S] [--until-reply N]
      Connects, sends each --send message (in order, once the snapshot came), and prints every message the
      receiver sends as one JSON line, then {"closed": CODE} if the receiver closed the connection. Stops after
      S seconds, or once the replies to N commands came.
  webclient.py raw URL --text TEXT | --bytes N | --binary
      Sends one raw frame (TEXT, or N bytes of 'x' as text, or a binary frame) and prints what comes back
      within 3 s, as above.
  webclient.py flood URL N
      Opens N connections at once and prints {"opened": A, "snapshots": S, "refused": R}: how many got the
      snapshot, and how many were closed or refused.
  webclient.py stall HOST PORT
      Sends the start of an HTTP request and never its end; prints {"closedAfter": SECONDS} when the receiver
      closes the connection (at most 60 s).
  webclient.py handshake URL [--origin ORIGIN]
      Prints the HTTP status of the WebSocket handshake (101 when accepted).
  webclient.py slow HOST PORT N
      A client that upgrades and then never reads (a 4 KiB receive buffer), while a second one sends N
      commands that each make an event for every client (`output-delay`, alternating 1 and 2 ms). Prints
      {"dropped": true, "received": bytes, "seconds": s} when the receiver closed the one that does not read.
"""
import argparse
import base64
import json
import os
import socket
import sys
import time

import websocket


def emit(obj):
    print(json.dumps(obj), flush=True)


def receive_all(ws, deadline, replies_wanted=None):
    replies = 0
    while time.monotonic() < deadline:
        ws.settimeout(max(0.05, deadline - time.monotonic()))
        try:
            opcode, data = ws.recv_data(control_frame=True)
        except websocket.WebSocketTimeoutException:
            break
        except (websocket.WebSocketConnectionClosedException, ConnectionError, OSError):
            emit({"closed": None})
            return
        if opcode == websocket.ABNF.OPCODE_CLOSE:
            code = int.from_bytes(data[:2], "big") if len(data) >= 2 else None
            emit({"closed": code})
            return
        if opcode == websocket.ABNF.OPCODE_TEXT:
            message = json.loads(data.decode())
            emit(message)
            if message.get("type") == "reply":
                replies += 1
                if replies_wanted is not None and replies >= replies_wanted:
                    return


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="verb", required=True)
    s = sub.add_parser("session")
    s.add_argument("url")
    s.add_argument("--send", action="append", default=[])
    s.add_argument("--seconds", type=float, default=5)
    s.add_argument("--until-reply", type=int)
    r = sub.add_parser("raw")
    r.add_argument("url")
    r.add_argument("--text")
    r.add_argument("--bytes", type=int)
    r.add_argument("--binary", action="store_true")
    f = sub.add_parser("flood")
    f.add_argument("url")
    f.add_argument("count", type=int)
    w = sub.add_parser("slow")
    w.add_argument("host")
    w.add_argument("port", type=int)
    w.add_argument("count", type=int)
    t = sub.add_parser("stall")
    t.add_argument("host")
    t.add_argument("port", type=int)
    h = sub.add_parser("handshake")
    h.add_argument("url")
    h.add_argument("--origin")
    a = parser.parse_args()

    if a.verb == "session":
        ws = websocket.create_connection(a.url, timeout=5)
        emit(json.loads(ws.recv()))  # the snapshot
        for message in a.send:
            ws.send(message)
        receive_all(ws, time.monotonic() + a.seconds, a.until_reply)
        ws.close()
    elif a.verb == "raw":
        ws = websocket.create_connection(a.url, timeout=5)
        emit(json.loads(ws.recv()))
        if a.binary:
            ws.send_binary(b"\x00\x01")
        elif a.bytes is not None:
            ws.send("x" * a.bytes)
        else:
            ws.send(a.text)
        receive_all(ws, time.monotonic() + 3)
    elif a.verb == "flood":
        sockets, snapshots, refused = [], 0, 0
        for _ in range(a.count):
            try:
                sockets.append(websocket.create_connection(a.url, timeout=10))
            except Exception:
                refused += 1
        for ws in sockets:
            try:
                if json.loads(ws.recv()).get("type") == "snapshot":
                    snapshots += 1
                else:
                    refused += 1
            except Exception:
                refused += 1
        emit({"opened": len(sockets), "snapshots": snapshots, "refused": refused})
        for ws in sockets:
            try:
                ws.close()
            except Exception:
                pass
    elif a.verb == "stall":
        conn = socket.create_connection((a.host, a.port), timeout=60)
        start = time.monotonic()
        conn.sendall(f"GET / HTTP/1.1\r\nHost: {a.host}:{a.port}\r\n".encode())
        try:
            while conn.recv(4096):
                pass
        except OSError:
            pass
        emit({"closedAfter": round(time.monotonic() - start, 3)})
    elif a.verb == "slow":
        slow = socket.socket()
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        slow.connect((a.host, a.port))
        key = base64.b64encode(os.urandom(16)).decode()
        slow.sendall((f"GET /api/ws HTTP/1.1\r\nHost: {a.host}:{a.port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        fast = websocket.create_connection(f"ws://{a.host}:{a.port}/api/ws", timeout=10)
        fast.recv()
        for i in range(a.count):
            fast.send(json.dumps({"id": i, "command": f"output-delay {1 + i % 2}"}))
            while json.loads(fast.recv()).get("type") != "reply":
                pass
        fast.close()
        # Whether the receiver closed the one that does not read. Draining alone to the end of the stream can wait
        # on TCP's zero-window probes, which back off to seconds while the window stays shut. So the client first
        # sends a ping: a socket the receiver has closed answers data with a reset at once (RFC 1122 4.2.2.13),
        # while an open one takes the ping and queues its pong behind the rest.
        dropped, received, start = False, 0, time.monotonic()
        try:
            slow.sendall(b"\x89\x80" + os.urandom(4))  # a masked ping, no payload (RFC 6455 5.5.2)
            slow.settimeout(5)
            while True:
                chunk = slow.recv(65536)
                if not chunk:
                    dropped = True
                    break
                received += len(chunk)
        except socket.timeout:
            dropped = False
        except (ConnectionError, OSError):  # reset, or ENOTCONN once the reset has ended the connection
            dropped = True
        emit({"dropped": dropped, "received": received, "seconds": round(time.monotonic() - start, 3)})
    elif a.verb == "handshake":
        try:
            ws = websocket.create_connection(a.url, timeout=5, origin=a.origin) if a.origin else websocket.create_connection(a.url, timeout=5)
            emit({"status": ws.getstatus()})
            ws.close()
        except websocket.WebSocketBadStatusException as error:
            emit({"status": error.status_code})
        except (ConnectionRefusedError, socket.timeout, OSError) as error:
            emit({"status": None, "error": str(error)})


if __name__ == "__main__":
    sys.exit(main())
